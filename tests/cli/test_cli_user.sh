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
build="$1"; src="$2"; fx="$3"
V="${VKF_CLI:-$build/vkformer}"
kjv="$src/models/kjv-gpt"
llama="$fx/llama-tiny/llama-tiny-f32.gguf"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
export VKF_CACHE_DIR="${VKF_CACHE_DIR:-$build/test-cache}"
fails=0; checks=0

fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
run() {
    "$V" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    out="$(cat "$tmp/out")"; err="$(cat "$tmp/err")"
}
has() { checks=$((checks + 1)); case "$2" in *"$1"*) ;; *) fail "$3: lacks '$1' in: $2" ;; esac; }
hasnt() { checks=$((checks + 1)); case "$2" in *"$1"*) fail "$3: has '$1' in: $2" ;; esac; }
eq() { checks=$((checks + 1)); [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"; }

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
# /dev/stdout (a pipe): the file goes through, and the summary does not follow it
checks=$((checks + 1))
"$V" quantize "$llama" /dev/stdout Q8_0 2>/dev/null | cmp -s - "$q/ref.gguf" || fail "quantize to /dev/stdout: other bytes"
# /dev/full: ENOSPC is an error naming the path, and /dev/full stays a device. Only when the
# FIFO above was written through: a build that renames over devices must not reach /dev/full.
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

echo "test_cli_user: $checks checks, $fails failed"
[ "$fails" = 0 ]
