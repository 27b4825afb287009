#!/usr/bin/env bash
# What a new user trips on (issue 28): a quantizer that must never destroy what OUT points at,
# write errors that must not exit 0, llama.cpp's habits (-fa alone, numeric quantize types,
# -ngl in bench and chat, refused flags named), chat taking generate's flags, small things
# (plurals, doubled prefixes, stop reasons, an exact stdout), info on a vocab-only GGUF, and
# the README's statements against the program.
#   tests/cli/test_cli_user.sh BUILD_DIR SOURCE_DIR FIXTURES_DIR
# References: llama-quantize's type ids (llama.cpp's llama_ftype: 15 = Q4_K_M, 7 = Q8_0), the
# bytes of a file written to a regular path (the same command, compared byte for byte), the
# greedy text of models/kjv-gpt (PyTorch, models/kjv-gpt/expected.json), the fixture's GGUF
# metadata as llama.cpp's gguf-py reads it (real-vocab/README.md).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_fixtures llama-tiny gpt2-tiny real-vocab
V="${VKF_CLI:-$V}" # another build's CLI against these checks

# ------------------------------------------------------------------ quantize never destroys OUT
q="$tmp/q"; mkdir "$q"
"$V" quantize "$llama" "$q/ref.gguf" Q8_0 -q || fail "quantize to a regular file"
# a FIFO: written through (a reader gets the very bytes of the regular file), the FIFO stays
mkfifo "$q/fifo"
timeout 60 cat "$q/fifo" >"$q/from-fifo" & # (a FIFO renamed over leaves the reader waiting)
reader=$!
run quantize "$llama" "$q/fifo" Q8_0 -q
[ -p "$q/fifo" ] || kill "$reader" 2>/dev/null
wait "$reader"
eq "$rc" 0 "quantize into a FIFO"
checks=$((checks + 1)); [ -p "$q/fifo" ] || fail "quantize replaced the FIFO with a regular file"
checks=$((checks + 1)); cmp -s "$q/ref.gguf" "$q/from-fifo" || fail "the FIFO's reader got other bytes than the file"
fifo_safe=0; [ -p "$q/fifo" ] && fifo_safe=1
# a symbolic link: followed, the link stays a link and its target gets the file
printf 'old' >"$q/target.gguf"; ln -s target.gguf "$q/link.gguf"
run quantize "$llama" "$q/link.gguf" Q8_0 -q
eq "$rc" 0 "quantize through a symlink"
checks=$((checks + 1)); [ -L "$q/link.gguf" ] || fail "quantize replaced the symlink with a regular file"
checks=$((checks + 1)); cmp -s "$q/ref.gguf" "$q/target.gguf" || fail "the symlink's target was not written"
# a dangling link: the file it names is created
ln -s made.gguf "$q/dangling.gguf"
run quantize "$llama" "$q/dangling.gguf" Q8_0 -q
checks=$((checks + 1)); [ -L "$q/dangling.gguf" ] && cmp -s "$q/ref.gguf" "$q/made.gguf" || fail "a dangling link: its target not created"
# /dev/stdout and /dev/full only when the FIFO above was written through: a build that renames
# over what OUT names (as root) would replace the machine's /dev/stdout link or /dev/full device.
# /dev/stdout (a pipe): the file goes through, and the summary does not follow it
if [ "$fifo_safe" = 1 ] && [ -L /dev/stdout ]; then
    checks=$((checks + 1))
    "$V" quantize "$llama" /dev/stdout Q8_0 2>/dev/null | cmp -s - "$q/ref.gguf" || fail "quantize to /dev/stdout: other bytes"
    checks=$((checks + 1)); [ -L /dev/stdout ] || fail "quantize replaced /dev/stdout"
fi
# /dev/full: ENOSPC is an error naming the path, and /dev/full stays a device
if [ "$fifo_safe" = 1 ] && [ -c /dev/full ]; then
    run quantize "$llama" /dev/full Q8_0
    eq "$rc" 1 "quantize to /dev/full: exit"
    has "/dev/full: write failed: No space left on device" "$err" "quantize to /dev/full"
    checks=$((checks + 1)); [ -c /dev/full ] || fail "quantize replaced /dev/full"
fi
# a write error on a regular file (the file size limit: EFBIG) names the file, and the old file
# is left whole (the new one was going to OUT.part)
cp "$q/ref.gguf" "$q/keep.gguf"
(trap '' XFSZ; ulimit -f 1024; "$V" quantize "$llama" "$q/keep.gguf" F32 >"$tmp/out" 2>"$tmp/err"); rc=$?
eq "$rc" 1 "quantize past the file size limit: exit"
has "keep.gguf.part: write failed: File too large" "$(cat "$tmp/err")" "quantize past the file size limit"
checks=$((checks + 1)); cmp -s "$q/ref.gguf" "$q/keep.gguf" || fail "a failed quantize damaged the old file"
checks=$((checks + 1)); [ ! -e "$q/keep.gguf.part" ] || fail "a failed quantize left keep.gguf.part"
# a directory is refused by name
run quantize "$llama" "$q" Q8_0
eq "$rc" 1 "quantize to a directory"; has "is a directory" "$err" "quantize to a directory"

# llama-quantize's numeric type ids (llama_ftype): 15 = Q4_K_M, 7 = Q8_0
run quantize "$llama" "$q/n15.gguf" 15 -q; eq "$rc" 0 "quantize ... 15"
"$V" quantize "$llama" "$q/q4km.gguf" Q4_K_M -q
checks=$((checks + 1)); cmp -s "$q/n15.gguf" "$q/q4km.gguf" || fail "quantize 15 is not Q4_K_M"
run quantize "$llama" "$q/n7.gguf" 7 -q
checks=$((checks + 1)); cmp -s "$q/n7.gguf" "$q/ref.gguf" || fail "quantize 7 is not Q8_0"
run quantize "$llama" "$q/bad.gguf" 99
eq "$rc" 1 "quantize 99"; has "unknown type '99'" "$err" "quantize 99"
hasnt "quantize: quantize:" "$err" "quantize: doubled prefix"
# an HF directory whose tokenizer is not carried: a note says how to run the result
run quantize "$src/tests/data/arch-hf/qwen2" "$q/qwen2.gguf" Q8_0
eq "$rc" 0 "quantize an HF directory"; has "has no tokenizer" "$err" "quantize: the output's tokenizer"
has "--tokenizer" "$err" "quantize: how to run it"

# ------------------------------------------------------------------ write failures exit non-zero
for cmd in "--help" "--version" "help generate" "generate --help" "bench --help" "devices" \
    "bench -m $llama -p 4 -n 2 -r 1 --cpu" "translate --cpu -m $src/models/dates-transformer -s one" \
    "tokenize -m $kjv -p hi" "info -m $llama"; do
    checks=$((checks + 1))
    # shellcheck disable=SC2086
    "$V" $cmd >/dev/full 2>"$tmp/err"; rc=$?
    [ "$rc" != 0 ] || fail "'$cmd' > /dev/full: exit 0"
    grep -q "writing to stdout: No space left on device" "$tmp/err" || fail "'$cmd' > /dev/full: no message: $(cat "$tmp/err")"
done
printf '[{"role": "user", "content": "hi"}]' >"$tmp/msgs.json"
checks=$((checks + 1))
"$V" template -m "$fx/real-vocab/ggml-vocab-llama-bpe.gguf" --messages "$tmp/msgs.json" >/dev/full 2>"$tmp/err"; rc=$?
[ "$rc" = 1 ] && grep -q "vkformer: template: writing to stdout: No space left on device" "$tmp/err" ||
    fail "template > /dev/full: exit $rc, stderr: $(cat "$tmp/err")"

# quantize to a wider type than the input's says "larger" (Q4_0 -> Q8_0: 4.5 -> 8.5 bits a
# weight), never "0.6x smaller"
run quantize "$fx/llama-tiny/llama-tiny-q4_0.gguf" "$q/wider.gguf" Q8_0 --allow-requantize
eq "$rc" 0 "quantize Q4_0 -> Q8_0: exit ($err)"
has "x larger)" "$out" "quantize to a wider type: larger"
hasnt "x smaller)" "$out" "quantize to a wider type: not smaller"
# the refused flags' names are listed whole in --help (a long list was cut at 96 characters)
run generate --help
has "--dry-multiplier" "$out" "generate --help: the refused --dry-multiplier"

# ------------------------------------------------------------------ one sampling default
# llama.cpp's min-p 0.05 in generate as in chat, serve and Python; -v prints it
run generate --cpu -m "$kjv" -p "In the beginning" -n 24 -s 5 -v
has "min-p 0.05," "$err" "generate -v: the min-p default"
gen_default="$out"
run generate --cpu -m "$kjv" -p "In the beginning" -n 24 -s 5 --min-p 0.05
eq "$out" "$gen_default" "generate's default sampling is --min-p 0.05"
run chat --help
has "(default 0.05; 0 = off)" "$out" "chat --help: the min-p default"
run generate --help
has "(default 0.05; 0 = off)" "$out" "generate --help: the min-p default"

# ------------------------------------------------------------------ -hf NAME, said where -m is
# main() turns -hf NAME into -m PATH for every command: each option list names it beside -m
for c in generate chat serve info embed tokenize detokenize translate template bench; do
    run $c --help
    has "-hf, --hf-repo NAME" "$out" "$c --help: -hf beside -m"
done
run generate -p x
eq "$rc" 2 "generate without a model: exit"
has "or -hf NAME" "$err" "generate without a model names -hf"
run chat -p x
has "or -hf NAME" "$err" "chat without a model names -hf"
run info
has "(or -hf NAME) is required" "$err" "info without a model names -hf"

# ------------------------------------------------------------------ chat takes generate's flags
# the greedy answer of models/kjv-gpt to one message, with no further flags: the reference the
# flags that change nothing (or only where and how it runs) must give again
ans() { sed -n '1p' "$tmp/out"; }
printf 'In the beginning\n' | "$V" chat --cpu -m "$kjv" -n 24 --temp 0 >"$tmp/out" 2>"$tmp/err"
ref_ans="$(ans)"
checks=$((checks + 1)); [ -n "$ref_ans" ] || fail "chat: no answer: $(cat "$tmp/err")"
printf 'In the beginning\n' | "$V" generate -m "$kjv" -cnv -ngl 0 -t 2 -fa --no-mmap -ctk f32 -ctv f32 \
    --ignore-eos -v -e -b 4 -ub 8 --typical 1 --presence-penalty 0 --frequency-penalty 0 \
    --repeat-penalty 1 --min-p 0.05 --tokenizer "$kjv" -c 256 -s 7 -n 24 --temp 0 >"$tmp/out" 2>"$tmp/err"
rc=$?; err="$(cat "$tmp/err")"
eq "$rc" 0 "generate -cnv with generate's flags: exit ($err)"
eq "$(ans)" "$ref_ans" "generate -cnv with neutral flags: the same greedy answer"
has "on cpu" "$err" "chat -ngl 0 is the CPU backend (-v)"
has "-t 2: the CPU backend runs on one thread" "$err" "chat -t note"
has "[answer stopped: -n limit: 24 tokens]" "$err" "chat -v: the stop reason"
# -p is the first user message (llama-cli -cnv -p), then stdin
"$V" chat --cpu -m "$kjv" -p "In the beginning" -n 24 --temp 0 </dev/null >"$tmp/out" 2>"$tmp/err"
eq "$(ans)" "$ref_ans" "chat -p: the first message"
# -r ends the answer at the reverse prompt (the answer contains 'the' at its start)
printf 'In the beginning\n' | "$V" chat --cpu -m "$kjv" -n 24 --temp 0 -r "the" -v >"$tmp/out" 2>"$tmp/err"
want="${ref_ans%%the*}the"
eq "$(ans)" "$want" "chat -r: the answer ends at the reverse prompt"
has "[answer stopped: reverse prompt (-r) reached]" "$(cat "$tmp/err")" "chat -r stop reason"
# -e processes escapes in the messages: a tab-escaped message is the tab message
printf 'In\\tthe\n' | "$V" chat --cpu -m "$kjv" -n 8 --temp 0 -e >"$tmp/out" 2>/dev/null
e_ans="$(ans)"
printf 'In\tthe\n' | "$V" chat --cpu -m "$kjv" -n 8 --temp 0 >"$tmp/out" 2>/dev/null
eq "$e_ans" "$(ans)" "chat -e: \\t in a message is a tab"
# a flag of generate's that means nothing in a chat is refused by name, with the reason
run chat -m "$kjv" --no-display-prompt
eq "$rc" 2 "chat --no-display-prompt: exit"; has "a chat prints only the answers" "$err" "chat --no-display-prompt"
# one table: every option generate --help lists, chat --help lists too (or refuses with a reason)
"$V" generate --help >"$tmp/gh"; "$V" chat --help >"$tmp/ch"
for flag in $(grep -oE '^  (-[a-z-]+)' "$tmp/gh" | tr -d ' ' | sort -u); do
    checks=$((checks + 1)); grep -qE -- "(^|[ ,])$flag([ ,]|$)" "$tmp/ch" || fail "chat --help lacks generate's $flag"
done

# ------------------------------------------------------------------ llama.cpp habits
ref0=" of the LORD hat" # "In the beginning" + greedy tokens (models/kjv-gpt/expected.json, PyTorch)
run generate --cpu -m "$kjv" -p "In the beginning" -n 16 --temp 0 -fa
eq "$rc" 0 "-fa alone"; eq "$out" "In the beginning$ref0" "-fa alone: output"
run generate --cpu -m "$kjv" -p "In the beginning" -n 16 --temp 0 -fa auto --flash-attn=on
eq "$rc" 0 "-fa auto --flash-attn=on"
for f in "-hff model.gguf" "-co" "--color"; do
    run generate -m "$kjv" $f
    eq "$rc" 2 "generate $f: exit"; has "not supported by vkformer (" "$err" "generate $f: refused with a reason"
done
# llama.cpp's habits: harmless flags accepted, the rest implemented or refused with the reason
run generate --cpu -m "$kjv" -p "In the beginning" -n 8 --temp 0 --no-warmup --log-disable --simple-io
eq "$rc" 0 "--no-warmup --log-disable --simple-io: accepted ($err)"
greedy8="$out"
run generate --cpu -m "$kjv" -p "In the beginning" -n 8 --temp -1
eq "$out" "$greedy8" "--temp < 0 samples greedily (llama.cpp)"
run generate --cpu -m "$kjv" -p "In the beginning" -n 4 --verbose-prompt
has "prompt tokens:" "$err" "--verbose-prompt: the prompt's tokens"
run generate --cpu -m "$kjv" -p "In the beginning" -n -2 -c 32 --temp 0 -v
eq "$rc" 0 "-n -2: exit"
has "n_predict 15" "$err" "-n -2 runs until the context is full (32 - 17 prompt tokens)"
for f in "--samplers top_k;top_p" "--min-keep 1" "--dynatemp-range 0.5" "-dkvc"; do
    run generate -m "$kjv" -p x $f
    eq "$rc" 2 "generate $f: exit"; has "not supported by vkformer (" "$err" "generate $f: refused with a reason"
done
run bench -m "$kjv" -pg 64,16
eq "$rc" 2 "bench -pg: exit"; has "not supported by vkformer (" "$err" "bench -pg: refused with a reason"
run generate -m "$kjv" -hf smollm2-135m -p x
eq "$rc" 2 "-m and -hf together: exit"
has "both name the model" "$err" "-m and -hf together: why"
# -hf takes the names of vkformer's registry (vkformer pull --list); another repository is refused
run generate -hf ggml-org/gemma-3-1b-it-GGUF -p x
eq "$rc" 2 "-hf of a repository outside the registry: exit"
has "no model named 'ggml-org/gemma-3-1b-it-GGUF' in vkformer's registry; known: smollm2-135m" "$err" "-hf: why, and the known names"
if "$V" devices 2>/dev/null | grep -q .; then
    run generate -m "$kjv" -p "In" -n 1 -t 4
    has "-t 4: the Vulkan device needs no CPU threads" "$err" "-t on a Vulkan device: a note"
fi
run bench -m "$llama" -p 4 -n 2 -r 1 -ngl 0 -fa
eq "$rc" 0 "bench -ngl 0 -fa"; has "| CPU |" "$out" "bench -ngl 0 is the CPU backend"
run bench -m "$llama" -p 4 -n 2 -r 1 -ngl 99 -o csv
eq "$rc" 0 "bench -ngl 99 ($err)"
# bench names a GGUF's type by its general.file_type, as llama-bench (llama.cpp's
# llama_ftype_name: 15 is "Q4_K - Medium"), not by the type of its first matrices (a Q4_K_M file
# keeps some in Q6_K, and in Q5_0 where rows are not a multiple of 256)
run quantize "$llama" "$tmp/q4km.gguf" Q4_K_M
eq "$rc" 0 "quantize Q4_K_M ($err)"
run bench -m "$tmp/q4km.gguf" -p 4 -n 0 -r 1 --cpu
has "| llama Q4_K - Medium |" "$out" "bench labels a Q4_K_M file by general.file_type"
has "llama Q4_K - Medium (matrices Q4_K)" "$err" "bench's model line: the file type and the matrices'"

# ------------------------------------------------------------------ small things a user sees
# stdout is exactly the prompt and the generated text: no newline added
"$V" generate --cpu -m "$kjv" -p "In the beginning" -n 16 --temp 0 >"$tmp/exact" 2>/dev/null
printf 'In the beginning%s' "$ref0" >"$tmp/want"
checks=$((checks + 1)); cmp -s "$tmp/exact" "$tmp/want" || fail "generate's stdout is not exactly the text: $(od -c "$tmp/exact" | tail -3)"
# -v: a stop reason for every stop (the -n limit here; EOG, reverse prompt and Ctrl-C in test_cli)
run generate --cpu -m "$kjv" -p "In the beginning" -n 16 --temp 0 -v
has "stopped: -n limit: 16 tokens generated" "$err" "generate -v: -n limit"
run generate --cpu -m "$kjv" -p "In the beginning" -n 40 --temp 0 -v -r LORD
has "stopped: reverse prompt (-r) reached" "$err" "generate -v: reverse prompt"
# plurals: a 17-token prompt in a 17-token context leaves room for one token
run generate --cpu -m "$kjv" -p "In the beginning" -n 40 --temp 0 -c 17
has "stopped after 1 token;" "$err" "after 1 token"; hasnt " 1 tokens" "$err" "after 1 token"
run generate --cpu -m "$kjv" -n 1 --temp 0
has " 1 prompt token," "$err" "1 prompt token"
printf '/save %s\n' "$tmp/one.json" | "$V" chat --cpu -m "$kjv" -sys "Be brief" >/dev/null 2>"$tmp/err"
has "[saved 1 message to" "$(cat "$tmp/err")" "chat: saved 1 message"

# info is the gguf-dump replacement: a vocabulary-only GGUF (llama.cpp's ggml-vocab-llama-bpe,
# Llama-3's tokenizer: 128256 tokens, BOS 128000 <|begin_of_text|>, 280147 merges) shows what is there
voc="$fx/real-vocab/ggml-vocab-llama-bpe.gguf"
run info -m "$voc"
eq "$rc" 0 "info on a vocab-only GGUF ($err)"
has "128256 tokens, BOS 128000 '<|begin_of_text|>'" "$out" "info vocab-only: the tokenizer"
has "tokenizer.ggml.merges                    [string x 280147]" "$out" "info vocab-only: the metadata"
has "none (a vocabulary only)" "$out" "info vocab-only: no tensors"
run info -m "$voc" --json
eq "$rc" 0 "info --json on a vocab-only GGUF"
has '"vocab_only":true' "$out" "info --json vocab-only"; has '"n_vocab":128256' "$out" "info --json vocab-only tokenizer"
# tokenize -m DIR with several GGUFs refuses as generate does, naming them
mkdir "$tmp/ggufs"; ln -s "$llama" "$tmp/ggufs/a.gguf"; ln -s "$fx/gpt2-tiny/gpt2-tiny-f32.gguf" "$tmp/ggufs/b.gguf"
run tokenize -m "$tmp/ggufs" -p hi
eq "$rc" 1 "tokenize -m DIR of 2 GGUFs: exit"
has "2 GGUF files: pass one of them" "$err" "tokenize -m DIR of 2 GGUFs"; has "$tmp/ggufs/b.gguf" "$err" "tokenize lists b.gguf"
# the CLI names its flag, not the library's field
run generate -m "$q/qwen2.gguf" -p hi -n 1
eq "$rc" 1 "generate without a tokenizer"; has "pass one with --tokenizer PATH" "$err" "the flag"
hasnt "vkf_model_params" "$err" "no library jargon in the CLI"
# a prompt longer than learned positions: -c cannot help, and the message does not say it can
run generate --cpu -m "$kjv" -p "$(printf 'a%.0s' $(seq 300))" -n 1
has "learned positions end there" "$err" "learned positions: no 'raise -c'"; hasnt "raise -c" "$err" "learned positions"
# the timings account for one-time costs: compilation and recording apart, the first run of new
# pipelines named; the parts never exceed the total
if "$V" devices 2>/dev/null | grep -q .; then
    VKF_CACHE_DIR="$tmp/cold" "$V" generate -m "$kjv" -p "And God said" -n 8 >/dev/null 2>"$tmp/err"
    err="$(cat "$tmp/err")"
    has "timings: graph recording" "$err" "timings: recording apart"
    has "ran new pipelines for the first time" "$err" "timings: first dispatch named"
    checks=$((checks + 1))
    awk '/load time/ {l=$5} /pipeline compile/ {c=$5} /graph recording/ {r=$5} /prompt eval time/ {p=$6}
         /       eval time/ {e=$5} /total time/ {t=$5}
         END {exit !(l + c + r + p + e <= t * 1.001 + 1)}' "$tmp/err" || fail "timings: the parts exceed the total: $err"
fi

finish test_cli_user
