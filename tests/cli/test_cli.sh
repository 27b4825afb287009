#!/usr/bin/env bash
# The CLI as users meet it (issue 15): help and --version for every command, one option parser
# (one-line usage errors, exit 2, the flag named), strict numbers, llama-cli's flags, stdout
# discipline, timings, Ctrl-C, path and size mistakes, tokenize/generate agreement.
#   tests/cli/test_cli.sh BUILD_DIR SOURCE_DIR FIXTURES_DIR
# References (never this code's own output): models/kjv-gpt/expected.json (PyTorch greedy tokens,
# decoded with models/kjv-gpt/char_vocab.json into the strings below), the model's HF config
# (parameter count), tests/data/tokenizers/spm_unigram/expected.json (python3-sentencepiece).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_fixtures llama-tiny arch gpt2-tiny
# usage_error WANT_SUBSTRING CMD ARGS...: exit 2, nothing on stdout, one line "vkformer: CMD: ..."
# on stderr that contains WANT_SUBSTRING (the flag and the reason)
usage_error() {
    local want="$1" cmd="$2"; shift 2
    checks=$((checks + 1))
    run "$@"
    local lines; lines=$(wc -l <"$tmp/err")
    [ "$rc" = 2 ] || fail "'$*': exit $rc, expected 2 (stderr: $err)"
    [ -z "$out" ] || fail "'$*': stdout not empty: $out"
    [ "$lines" = 1 ] || fail "'$*': $lines lines on stderr, expected one: $err"
    case "$err" in "vkformer: $cmd: "*) ;; *) fail "'$*': stderr lacks the prefix 'vkformer: $cmd: ': $err" ;; esac
    case "$err" in *"$want"*) ;; *) fail "'$*': stderr lacks '$want': $err" ;; esac
    case "$err" in *"vkformer: $cmd: vkformer"*) fail "'$*': doubled prefix: $err" ;; esac
}
# runtime_error WANT CMD ARGS...: exit 1, nothing on stdout, stderr "vkformer: CMD: ...WANT..."
runtime_error() {
    local want="$1" cmd="$2"; shift 2
    checks=$((checks + 1))
    run "$@"
    [ "$rc" = 1 ] || fail "'$*': exit $rc, expected 1 (stderr: $err)"
    [ -z "$out" ] || fail "'$*': stdout not empty: $out"
    case "$err" in *"vkformer: $cmd: "*"$want"*) ;; *) fail "'$*': stderr lacks 'vkformer: $cmd: ...$want': $err" ;; esac
    case "$err" in *"vkformer: $cmd: vkformer"*) fail "'$*': doubled prefix: $err" ;; esac
}

# ------------------------------------------------------------------ help and version
run --help; eq "$rc" 0 "--help"; has "commands:" "$out" "--help"
run; eq "$rc" 2 "no command"
for c in devices selftest generate translate info bench tune verify tokenize detokenize template quantize embed perplexity; do
    for form in "$c --help" "$c -h" "help $c"; do
        run $form
        eq "$rc" 0 "$form"; has "usage: vkformer $c" "$out" "$form"; eq "$err" "" "$form: stderr"
    done
done
for m in --kernels --startup --plot --tokenizer --embedding; do
    run bench $m --help; eq "$rc" 0 "bench $m --help"; has "usage: vkformer bench $m" "$out" "bench $m --help"
done
run --version
eq "$rc" 0 "--version"; has "vkformer 0.1.0 (git " "$out" "--version"; has "Vulkan loader" "$out" "--version"
has "glslang" "$out" "--version"
# the revision of the configure step (a commit re-runs it at the next build)
checks=$((checks + 1)); echo "$out" | grep -Eq '^vkformer 0\.1\.0 \(git ([0-9a-f]{12}|unknown)\)$' || fail "--version: $out"
usage_error "unknown command 'nosuch'" help help nosuch

# ------------------------------------------------------------------ one parser, one message
usage_error "or -hf NAME (a model of vkformer's registry: vkformer pull --list) is required" generate generate
usage_error "-m needs a value" generate generate -m
usage_error "-m needs a value" generate generate -m --temp 1        # the value is another flag
usage_error "-n needs a value" generate generate -m "$kjv" -n
usage_error "--n-predict needs a value" generate generate --n-predict
usage_error "-n: -3 is out of range [-2," generate generate -m "$kjv" -n -3
usage_error "-n: expected an integer" generate generate -m "$kjv" -n 1e12
usage_error "-n: expected an integer" generate generate -m "$kjv" -n 2.7
usage_error "--top-k: expected an integer" generate generate -m "$kjv" --top-k 1e10
usage_error "--temp: expected a finite number, got 'nan'" generate generate -m "$kjv" --temp nan
usage_error "--top-p: 1.5 is out of range" generate generate -m "$kjv" --top-p 1.5
usage_error "--n-predict: expected an integer, got 'abc'" generate generate -m "$kjv" --n-predict=abc
usage_error "--seed: expected an integer" generate generate -m "$kjv" --seed=x
usage_error "--cpu takes no value" generate generate -m "$kjv" --cpu=1
usage_error "unknown option '--bogus'" generate generate -m "$kjv" --bogus
usage_error "unknown option '-d'" generate generate -m "$kjv" -d 0      # -d is bench's depth; -dev the device
usage_error "-p and -f" generate generate -m "$kjv" -p a -f b
usage_error "-ngl 0 (the CPU) and -dev 0" generate generate -m "$kjv" -ngl 0 -dev 0
usage_error "--beam: expected an integer, got 'abc'" translate translate -m x -s y --beam abc
usage_error "--max-len: -1 is out of range" translate translate -m x -s y --max-len -1
usage_error "--ids: expected token ids" translate translate --cpu -m "$src/models/dates-transformer" --ids "3 x 4"
usage_error "--model PATH (or -hf NAME) is required" info info
usage_error "FIXTURE_DIR is required" verify verify
usage_error "-r: 0 is out of range [1, 64]" bench bench -m x -r 0
usage_error "-d: expected a comma list" bench bench -m x -d abc
usage_error "-o: expected md, json or csv" "bench --kernels" bench --kernels -o xml
usage_error "bad --shape '1x2' (expected MxNxK)" "bench --kernels" bench --kernels --shape 1x2
usage_error "HEADS a multiple of KV_HEADS" "bench --kernels" bench --kernels --attn 1x2048x16x3x64
usage_error "bad --attn '1x64x8x8x64xq8'" "bench --kernels" bench --kernels --attn 1x64x8x8x64xq8
usage_error "unknown option '--json'" selftest selftest --json
usage_error "--reps: 0 is out of range" "bench --tokenizer" bench --tokenizer --reps 0
usage_error "-r: 99 is out of range [1, 64]" "bench --startup" bench --startup -m x -r 99
usage_error "--plot needs a value" "bench --plot" bench -m x --plot
usage_error "-dev needs a value" tune tune -dev
usage_error "unknown option '-x'" devices devices -x
usage_error "--ids: expected token ids" detokenize detokenize -m "$kjv" --ids 1,x
usage_error "exactly one of -p TEXT and -f FILE" tokenize tokenize -m "$kjv"
usage_error "exactly one of -p TEXT and -f FILE" embed embed -m "$kjv"
usage_error "-o: expected json, jsonl or npy" embed embed -m x -p a -o xml
usage_error "--pooling: expected none, mean, cls, last or rank" embed embed -m x -p a --pooling max
usage_error "IN OUT.gguf TYPE is required" quantize quantize in.gguf
usage_error "unexpected argument 'extra'" quantize quantize in.gguf out.gguf Q4_0 extra
usage_error "--messages FILE.json is required" template template -t x.jinja
usage_error "exactly one of -m MODEL and -t TEMPLATE_FILE" template template --messages m.json
# llama.cpp flags that wait for other work: refused with "yet", never ignored
# --ignore-eos: the greedy continuation of "The" reaches an end-of-generation token before 400
# tokens on one of the arch models (which one depends on their random weights: the first that
# does, seen with -v); with --ignore-eos all 400 are generated
eog=""
for a in llama3 qwen2 qwen3 gemma2 gemma3 phi3; do
    run generate -m "$fx/arch/$a-f32.gguf" -p "The" -n 400 --temp 0 -v
    eq "$rc" 0 "generate $a greedy"
    case "$err" in *"end of sequence"*) eog="$fx/arch/$a-f32.gguf"; break ;; esac
done
[ -n "$eog" ] || fail "no arch model's greedy continuation of 'The' stops at EOG within 400 tokens"
run generate -m "${eog:-$fx/arch/phi3-f32.gguf}" -p "The" -n 400 --temp 0 -v --ignore-eos
eq "$rc" 0 "generate --ignore-eos"; has "/   400 runs" "$err" "generate --ignore-eos runs to -n"
case "$err" in *"end of sequence"*) fail "generate --ignore-eos stopped at EOG" ;; esac
# -sys means conversation mode (llama-cli): the chat command, one message per stdin line
printf 'hello\n' | "$V" generate -m "$kjv" -sys "Be brief" -n 8 --temp 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
eq "$rc" 0 "generate -sys"; has "using ChatML" "$(cat "$tmp/err")" "generate -sys is chat"
# the timings never go negative (pipelines compiled in the first decoding steps are reported apart)
case "$err" in *"time =     -"*) fail "negative time in the timings: $err" ;; esac
# the KV cache types: llama.cpp's names, the flag and the accepted values said for a bad one
usage_error "--cache-type-k: expected f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0 or q5_1" generate generate -m "$kjv" --cache-type-k q8
usage_error "-ctv: expected f32, f16" chat chat -m "$kjv" -ctv Q4_K
usage_error "-ctk: expected f32, f16" serve serve -m "$kjv" -ctk int8
# a pair the device cannot use is refused by name, never widened (the Vulkan kernels read K and V
# in one type, each of them); the CPU backend runs them all
runtime_error "K cache type Q8_0 and V cache type Q4_0" generate generate -m "$llama" -ctk q8_0 -ctv q4_0 -p x -n 1
runtime_error "K cache type F16 and V cache type F32" generate generate -m "$llama" -ctv f32 -p x -n 1
run generate -m "$llama" --cpu -ctk q8_0 -ctv q4_0 -p x -n 2 -v
eq "$rc" 0 "generate --cpu -ctk q8_0 -ctv q4_0"
# 4 layers x 512 tokens (llama-tiny's context) x 4 blocks of 32 a row: (34 (q8_0) + 18 (q4_0)) x
# 8192 bytes = 0.41 MiB
has "KV cache 0.4 MiB (K Q8_0, V Q4_0)" "$err" "the memory line counts the quantized cache"
for f in "--mlock" "--mirostat 2" "-i" "-fa off"; do
    usage_error "${f%% *}: " generate generate -m "$kjv" $f
    has "not supported by vkformer" "$err" "generate $f"
done
# the layer split's flags are taken (tests/test_split.c); values that do not fit the device list
# are refused by the library, naming the flag
run generate -m "$kjv" -n 1 --tensor-split 1,1
[ "$rc" -ne 0 ] || fail "--tensor-split 1,1 on one device: exit 0"
has "tensor split (-ts) has 2 proportions for 1 device" "$err" "--tensor-split 1,1 on one device: why"
run generate -m "$kjv" -n 1 -mg 1
[ "$rc" -ne 0 ] || fail "-mg 1 on one device: exit 0"
has "main device (-mg) 1" "$err" "-mg 1 on one device: why"

# ------------------------------------------------------------------ generate: stdout, flags
# greedy continuations from models/kjv-gpt/expected.json (PyTorch)
ref0=" of the LORD hat"        # "In the beginning" + greedy_tokens[0:16]
run generate --cpu -m "$kjv" -p "In the beginning" -n 16 --temp 0
eq "$rc" 0 "greedy"; eq "$out" "In the beginning$ref0" "greedy stdout (PyTorch reference)"
has "17 prompt tokens" "$err" "generate: BOS + 16 characters (expected.json tokens)"
has "seed " "$err" "seed on stderr"
for t in "load time" "prompt eval time" "/    17 tokens" "ms per token" "tokens per second" "eval time" "/    16 runs" "total time"; do
    has "$t" "$err" "timings"
done
case "$err" in *$'\r'*|*"loading the model"*) fail "a progress bar on stderr that is not a terminal" ;; esac
if command -v script >/dev/null; then # a terminal: the load progress bar shows
    checks=$((checks + 1))
    script -qec "'$V' generate --cpu -m '$llama' -p hi -n 1" /dev/null >"$tmp/tty" 2>&1 </dev/null
    grep -q "loading the model \[" "$tmp/tty" || fail "no progress bar on a terminal: $(head -c 300 "$tmp/tty")"
    if "$V" devices 2>/dev/null | grep -q .; then # shader compilation on a cold cache: a counter
        checks=$((checks + 1))
        script -qec "VKF_CACHE_DIR='$tmp/cold' '$V' generate -m '$kjv' -p hi -n 1" /dev/null >"$tmp/tty" 2>&1 </dev/null
        grep -aq "compiling shaders" "$tmp/tty" || fail "no shader compilation progress on a terminal"
        checks=$((checks + 1))
        VKF_CACHE_DIR="$tmp/cold2" "$V" generate -m "$kjv" -p hi -n 1 2>"$tmp/err" >/dev/null
        grep -aq "compiling shaders" "$tmp/err" && fail "shader compilation progress on stderr that is not a terminal"
    fi
fi
# the sampler's penalties reach generate: greedy " of the LORD hat" repeats 'h', 'e', 't' and
# spaces; a repeat penalty of 100 over the whole window forbids every character already seen
run generate --cpu -m "$kjv" -p "In the beginning" -n 16 --temp 0 --no-display-prompt --repeat-penalty 100 --repeat-last-n -1
eq "$rc" 0 "--repeat-penalty"
[ "$out" != "$ref0" ] || fail "--repeat-penalty 100 left the greedy text unchanged"
run generate --cpu -m "$kjv" -p "In the beginning" -n 16 --temp 0 --no-display-prompt --min-p 0.5 --presence-penalty 0 --frequency-penalty 0 --typical 1
eq "$out" "$ref0" "greedy ignores min-p / neutral penalties"
run tokenize -m "$kjv" -p "In the beginning"
eq "$out" "1 24 54 5 60 48 45 5 42 45 47 49 54 54 49 54 47" "tokenize = expected.json tokens (= generate's 17)"
run generate --cpu -m "$kjv" -p "In the beginning" -n 16 --temp 0 --no-display-prompt
eq "$out" "$ref0" "--no-display-prompt"
printf 'In the beginning' >"$tmp/prompt.txt"
run generate --cpu -m "$kjv" -f "$tmp/prompt.txt" -n 16 --temp 0
eq "$out" "In the beginning$ref0" "-f FILE"
checks=$((checks + 1))
out="$(printf 'In the beginning' | "$V" generate --cpu -m "$kjv" -f - -n 16 --temp 0 2>/dev/null)"
eq "$out" "In the beginning$ref0" "-f - (stdin)"
run generate --cpu -m "$kjv" --file="$tmp/prompt.txt" -n 16 --temp 0 -b 4 -ub 5
eq "$out" "In the beginning$ref0" "-b 4: the prompt in chunks gives the same greedy text"
has "/    17 tokens" "$err" "-b 4 timings count every prompt token"
run generate --cpu -m "$kjv" -p "In the beginning" -n 40 --temp 0 -r LORD
eq "$out" "In the beginning of the LORD" "-r LORD stops after the reverse prompt"
run generate --cpu -m "$kjv" -p 'a\nb' -e -n 0
eq "$out" "$(printf 'a\nb')" "-e turns \\n into a newline"
run generate --cpu -m "$kjv" -p "The" -n 8 -s 42
o42="$out"; has "seed 42" "$err" "-s 42 on stderr"
run generate --cpu -m "$kjv" -p "The" -n 8 --seed 42
eq "$out" "$o42" "the same seed gives the same text"
run generate --cpu -m "$kjv" -p "The" -n 1 -s -1
has "(random)" "$err" "-s -1 is random"
s1="$(sed -n 's/.*seed \([0-9]*\) (random).*/\1/p' "$tmp/err")"
run generate --cpu -m "$kjv" -p "The" -n 1
s2="$(sed -n 's/.*seed \([0-9]*\) (random).*/\1/p' "$tmp/err")"
checks=$((checks + 1)); [ -n "$s1" ] && [ "$s1" != "$s2" ] || fail "two runs drew the same random seed ($s1, $s2)"
run generate -m "$kjv" -p "In the beginning" -n 16 --temp 0 -ngl 0 -t 4 -fa on -no-cnv
eq "$rc" 0 "-ngl 0 -t 4 -fa on"; has "on cpu" "$err" "-ngl 0 is the CPU"; has "-t 4: the CPU backend runs on one thread" "$err" "-t note"
eq "$out" "In the beginning$ref0" "-ngl 0 output"
if "$V" devices 2>/dev/null | grep -q .; then # on a Vulkan device: pipeline compilation apart
    run generate -dev 0 -m "$kjv" -p "In the beginning" -n 16 --temp 0
    eq "$out" "In the beginning$ref0" "-dev 0 output"; has "pipeline compile" "$err" "compilation reported apart"
fi
run generate --list-devices
eq "$rc" 0 "--list-devices"; has "device" "$out" "--list-devices"
run generate --cpu -m "$kjv" -p "In the beginning" -n -1 --temp 0
eq "$rc" 0 "-n -1"; has "/   239 runs" "$err" "-n -1 runs to the end of the context (256 = n_ctx in config.json, 17 prompt tokens)"
checks=$((checks + 1))
"$V" generate --cpu -m "$kjv" -p "In" -n 4 >/dev/full 2>"$tmp/err"; rc=$?
[ "$rc" = 1 ] || fail "> /dev/full: exit $rc, expected 1"
has "writing to stdout" "$(cat "$tmp/err")" "> /dev/full"
checks=$((checks + 1))
"$V" devices >/dev/full 2>/dev/null && fail "devices > /dev/full: exit 0"

# ------------------------------------------------------------------ Ctrl-C
# llama-tiny with a long context generates for a long time: the first SIGINT stops it and
# prints the timings (exit 130); a second one exits at once. --ignore-eos: with the random seed
# an early end-of-generation token once ended the run before the signal (exit 0, CI flake).
"$V" generate --cpu -m "$llama" -c 8192 -n -1 --ignore-eos -p "Once" >"$tmp/sig.out" 2>"$tmp/sig.err" &
pid=$!
for _ in $(seq 1 300); do [ -s "$tmp/sig.out" ] && break; sleep 0.1; done
kill -INT "$pid"; wait "$pid"; rc=$?
checks=$((checks + 1))
[ "$rc" = 130 ] || fail "SIGINT: exit $rc, expected 130"
has "interrupted" "$(cat "$tmp/sig.err")" "SIGINT"; has "eval time" "$(cat "$tmp/sig.err")" "SIGINT prints the timings"
"$V" generate --cpu -m "$llama" -c 8192 -n -1 --ignore-eos -p "Once" >"$tmp/sig.out" 2>"$tmp/sig.err" &
pid=$!
for _ in $(seq 1 300); do [ -s "$tmp/sig.out" ] && break; sleep 0.1; done
kill -INT "$pid"; kill -INT "$pid"; wait "$pid"; rc=$?
eq "$rc" 130 "two SIGINTs"
# Ctrl-C in a long prompt (issue 28.4): the prompt is evaluated in passes (by default 64 tokens on
# CPU devices such as lavapipe, 512 on GPUs, where 2000 tokens take well under a second) and the
# first SIGINT stops it between two passes: exit 130 at once, with the timings of the tokens
# evaluated, a whole number of passes short of the prompt's 2000
{ for i in $(seq 1 74); do [ "$i" = 1 ] || printf ' '; printf 'the quick brown fox jumps over the lazy dog'; done; echo; } >"$tmp/long.txt"
"$V" generate -m "$llama" -c 2048 -f "$tmp/long.txt" -n 4 --temp 0 >"$tmp/sig.out" 2>"$tmp/sig.err" &
pid=$!
for _ in $(seq 1 600); do grep -q "prompt tokens" "$tmp/sig.err" 2>/dev/null || ! kill -0 "$pid" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
t0=$(date +%s%N); kill -INT "$pid"; wait "$pid"; rc=$?; t1=$(date +%s%N)
eq "$rc" 130 "SIGINT in the prompt: exit"
n_eval="$(sed -n 's|^timings: prompt eval time = *\([0-9.]*\) ms / *\([0-9]*\) tokens.*|\2|p' "$tmp/sig.err")"
p_ms="$(sed -n 's|^timings: prompt eval time = *\([0-9]*\).* ms / .*|\1|p' "$tmp/sig.err")"
checks=$((checks + 1))
if [ "${n_eval:-0}" = 2000 ] && [ "${p_ms:-0}" -lt 500 ]; then
    echo "test_cli: the device evaluated the 2000-token prompt in ${p_ms} ms, before the signal" >&2
elif ! grep -q "interrupted in the prompt, after $n_eval of its 2000 tokens" "$tmp/sig.err" ||
    [ $((n_eval % 64)) != 0 ] || [ "$n_eval" -ge 2000 ]; then
    fail "SIGINT in the prompt: $(cat "$tmp/sig.err")"
fi
# at once: one pass of 64 tokens takes well under a second on lavapipe; 10 s allows for a loaded
# machine (the whole prompt took ~8 s there with every core busy)
checks=$((checks + 1))
[ $(((t1 - t0) / 1000000)) -lt 10000 ] || fail "SIGINT in the prompt: exit $(((t1 - t0) / 1000000)) ms after the signal"

# an interrupted tune keeps the classes it measured (saved after each one)
mkdir "$tmp/tune-cache"
VKF_CACHE_DIR="$tmp/tune-cache" "$V" tune --quick >"$tmp/tune.out" 2>"$tmp/tune.err" &
pid=$!
for _ in $(seq 1 600); do grep -q "M=1 " "$tmp/tune.out" 2>/dev/null && break; sleep 0.1; done
kill -INT "$pid"; wait "$pid"; rc=$?
eq "$rc" 130 "interrupted tune exit"; has "interrupted" "$(cat "$tmp/tune.err")" "interrupted tune says so"
measured=$(grep -c " M=" "$tmp/tune.out")
saved=$(cat "$tmp"/tune-cache/tune_*.json 2>/dev/null | grep -c '"mclass"')
checks=$((checks + 1))
[ "$measured" -ge 1 ] && [ "$saved" -ge "$measured" ] || fail "interrupted tune: $measured classes printed, $saved saved"

# ------------------------------------------------------------------ errors users meet
runtime_error "nonexistent" generate generate --cpu -m "$tmp/nonexistent" -p x
runtime_error "pass the directory $kjv" info info -m "$kjv/model.safetensors"
runtime_error "pass the directory $kjv" generate generate -m "$kjv/model.safetensors" -p x
mkdir "$tmp/ggufs"; ln -s "$llama" "$tmp/ggufs/a.gguf"; ln -s "$fx/gpt2-tiny/gpt2-tiny-f32.gguf" "$tmp/ggufs/b.gguf"
runtime_error "2 GGUF files" info info -m "$tmp/ggufs"
has "$tmp/ggufs/a.gguf" "$err" "gguf folder lists a.gguf"; has "$tmp/ggufs/b.gguf" "$err" "gguf folder lists b.gguf"
runtime_error "-f $tmp: is a directory" generate generate -m "$kjv" -f "$tmp"
runtime_error "no such directory" verify verify "$tmp/no-such-fixtures"
# a tokenizer larger than the model's vocabulary: both sizes named
runtime_error "67" generate generate --cpu -m "$kjv" --tokenizer "$src/tests/data/tokenizers/gpt2_files" -p x
has "tokens but the model's vocabulary only 67" "$err" "vocabulary sizes"
# -c that the device cannot hold, refused before anything is allocated: KV = 2 (K, V) x 4 layers
# x 4 kv heads x 32 dims x 2 bytes (F16, the default on Vulkan devices) = 2048 bytes per token
# (llama-tiny's GGUF metadata), 3.81 GiB at -c 2000000, on a device of 1 GiB
# (VKF_MAX_DEVICE_MEMORY: lavapipe's own heap is the host's memory); --cache-type f32 doubles it, and
# -c 1000000 then needs as much
export VKF_MAX_DEVICE_MEMORY=1073741824
runtime_error "KV cache for n_ctx 2000000 (-c) x 1 sequence (F16) needs 3.81 GiB" generate generate -m "$llama" -c 2000000 -p x
has "lower n_ctx (-c)" "$err" "-c too large"; has "the device has" "$err" "-c too large: the device's memory"
runtime_error "KV cache for n_ctx 1000000 (-c) x 1 sequence (F32) needs 3.81 GiB" generate generate -m "$llama" -c 1000000 --cache-type f32 -p x
unset VKF_MAX_DEVICE_MEMORY
# the host: -c 16777216 needs 64 GiB of KV cache (F32 on the CPU backend: 4096 bytes per token); refused from
# the GGUF's metadata before the model loads (no 8 GiB of position tables first)
avail_kb="$(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo)"
if [ -n "$avail_kb" ] && [ "$avail_kb" -lt 60000000 ]; then
    runtime_error "KV cache for n_ctx 16777216 (-c) x 1 sequence (F32) needs 64.00 GiB" generate generate --cpu -m "$llama" -c 16777216 -p x
    has "the host has" "$err" "-c past the host's memory"
fi
# the device's own memory (no cap): 32 GiB of F16 KV cache at -c 16777216 exceeds any device
# this runs on; on unified memory (lavapipe) the check is against what the host has available
if [ -n "$avail_kb" ] && [ "$avail_kb" -lt 30000000 ]; then
    runtime_error "KV cache for n_ctx 16777216 (-c) x 1 sequence (F16) needs 32.00 GiB" generate generate -m "$llama" -c 16777216 -p x
    has "the device has" "$err" "-c past the device's memory"
fi
run tokenize -m "$kjv" -p "Zebra€"
eq "$rc" 0 "char warning exit"; has "warning: characters outside the model's character vocabulary" "$err" "unknown chars"
has "'€'" "$err" "the unknown character is named"
# a bare SentencePiece .model: no BOS by default (python3-sentencepiece's encode: ids_plain)
run tokenize --tokenizer "$src/tests/data/tokenizers/spm_unigram/tokenizer.model" -p "In the beginning God created the heaven and the earth."
eq "$out" "25 31 5 896 57 83 77 151 16 5 265 6 5 205 10" "spm .model without BOS"

# sharded safetensors (model.safetensors.index.json), split by tests/cli/shard_safetensors.c
mkdir "$tmp/sharded"; cp "$kjv/config.json" "$kjv/char_vocab.json" "$tmp/sharded/"
checks=$((checks + 1))
"$build/tests/shard_safetensors" "$kjv/model.safetensors" "$tmp/sharded" || fail "shard_safetensors"
run generate --cpu -m "$tmp/sharded" -p "In the beginning" -n 16 --temp 0
eq "$rc" 0 "sharded: exit ($err)"; eq "$out" "In the beginning$ref0" "sharded safetensors give the reference text"
run info -m "$tmp/sharded" --json
has '"n_params":1841856' "$out" "sharded: every tensor"
sed -i 's/model-00002-of-00002/model-00003-of-00002/' "$tmp/sharded/model.safetensors.index.json"
runtime_error "model-00003-of-00002.safetensors" generate generate --cpu -m "$tmp/sharded" -p x

# ------------------------------------------------------------------ info --json
run info -m "$llama" --json
eq "$rc" 0 "info --json"; eq "$(wc -l <"$tmp/out")" 1 "info --json is one document (one line)"
has '"llama.block_count":4' "$out" "GGUF metadata numbers are numbers"
has '"general.architecture":"llama"' "$out" "GGUF strings"
has '"tokenizer.ggml.tokens":{"type":"string","count":512' "$out" "arrays summarised"
cp "$llama" "$tmp/model.bin"
run info -m "$tmp/model.bin" --json
has '"llama.block_count":4' "$out" "info --json on a GGUF named .bin"
# GPT-2 from its HF config (n_embd 192, 4 layers, 67 tokens, 256 positions), tied LM head counted
# once: 67*192 + 256*192 + 4*(2*192 + 192*576+576 + 192*192+192 + 2*192 + 192*768+768 + 768*192+192) + 2*192
run info -m "$kjv" --json
has '"n_params":1841856' "$out" "kjv-gpt parameters (tied output once)"

# ------------------------------------------------------------------ ./setup.sh run
# nothing to rebuild: no build log; the flags go to generate
checks=$((checks + 1))
(cd "$src" && BUILD_DIR="$build" ./setup.sh run -p "In the beginning" -n 16 --temp 0 --cpu >"$tmp/out" 2>"$tmp/err"); rc=$?
eq "$rc" 0 "setup.sh run"; eq "$(cat "$tmp/out")" "In the beginning$ref0" "setup.sh run passes -p -n --temp through"
case "$(cat "$tmp/err")" in *Building*|*Linking*|*"Built target"*) fail "setup.sh run printed the build log" ;; esac

finish test_cli
