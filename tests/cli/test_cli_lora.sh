#!/usr/bin/env bash
# LoRA adapters from the CLI (generate; chat shares the flags through cli/gen_opts.c): --lora,
# --lora-scaled FNAME:SCALE, several at once, --lora-merge, --lora-init-without-apply, on the lora
# set (tools/refs/make_lora.py). Greedy text through an adapter equals the text of the model the
# adapter was merged into offline (numpy), differs from the base's, and a PEFT directory gives the
# GGUF adapter's text; mistakes exit 2 (usage) or 1 (another base model), naming what is wrong.
#   tests/cli/test_cli_lora.sh BUILD_DIR SOURCE_DIR FIXTURES_DIR
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_fixtures lora
L="$fx/lora"
gen() { run generate --cpu -m "$1" -p "The quick brown fox" --temp 0 -n 12 "${@:2}"; }

gen "$L/llama-tiny-f32.gguf"; eq "$rc" 0 "base"; base="$out"
gen "$L/llama-tiny-f32-merged-a.gguf"; eq "$rc" 0 "offline merge"; merged="$out"
[ "$base" != "$merged" ] || fail "the adapter changes nothing: the checks below would prove nothing"
gen "$L/llama-tiny-f32.gguf" --lora "$L/lora-a-f32.gguf"; eq "$rc" 0 "--lora"
eq "$out" "$merged" "--lora gives the offline merge's text"
gen "$L/llama-tiny-f32.gguf" --lora "$L/peft-a"; eq "$rc" 0 "--lora PEFT"
eq "$out" "$merged" "--lora with the PEFT directory"
gen "$L/llama-tiny-f32.gguf" --lora-scaled "$L/lora-a-f32.gguf:1.0"; eq "$out" "$merged" "--lora-scaled F:1.0"
gen "$L/llama-tiny-f32.gguf" --lora-scaled "$L/lora-a-f32.gguf:0"; eq "$out" "$base" "--lora-scaled F:0 is the base"
gen "$L/llama-tiny-f32.gguf" --lora "$L/lora-a-f32.gguf" --lora-merge; eq "$rc" 0 "--lora-merge"
eq "$out" "$merged" "--lora-merge gives the offline merge's text"
gen "$L/llama-tiny-f32.gguf" --lora "$L/lora-a-f32.gguf" --lora-init-without-apply
eq "$out" "$base" "--lora-init-without-apply leaves the base"
# two at once, repeated flags and a comma list alike
gen "$L/llama-tiny-f32.gguf" --lora-scaled "$L/lora-a-f32.gguf:0.5" --lora-scaled "$L/lora-b-f16.gguf:1"
eq "$rc" 0 "two adapters"; two="$out"
gen "$L/llama-tiny-f32.gguf" --lora-scaled "$L/lora-a-f32.gguf:0.5,$L/lora-b-f16.gguf:1"
eq "$out" "$two" "a comma list is the same set"
[ "$two" != "$base" ] && [ "$two" != "$merged" ] || fail "two adapters: the text of one or none"

# mistakes
run generate -m "$L/llama-tiny-f32.gguf" --lora-scaled "$L/lora-a-f32.gguf"
eq "$rc" 2 "--lora-scaled without :SCALE"; has "--lora-scaled" "$err" "names the flag"; has "FNAME:SCALE" "$err" "says the form"
run generate -m "$L/llama-tiny-f32.gguf" --lora-scaled "$L/lora-a-f32.gguf:nan"
eq "$rc" 2 "a scale that is not finite"; has "finite" "$err" "says why"
run generate --cpu -m "$L/llama-tiny-f32.gguf" -p x -n 1 --lora "$L/lora-other-base.gguf"
eq "$rc" 1 "another base's adapter"; has "blk.0.attn_q.weight" "$err" "names the tensor"; has "[8, 128]" "$err" "names its shape"
run generate --cpu -m "$L/llama-tiny-f32.gguf" -p x -n 1 --lora "$tmp/missing.gguf"
eq "$rc" 1 "a missing adapter"; has "$tmp/missing.gguf" "$err" "names the path"
finish test_cli_lora
