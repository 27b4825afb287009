#!/usr/bin/env bash
# Runs every libFuzzer target of a -DVKF_FUZZ=ON build for a bounded time on its seed corpus.
#   tests/robust/run_fuzz.sh BUILD_DIR SECONDS_EACH [WORK_DIR]
# Seeds: tests/fuzz/corpus/<kind>/ (small files written by make_seeds.py), the small config.json
# files of models/ and the reference fixtures, and the tokenizer files of tests/data/tokenizers, all
# read-only; new inputs go to WORK_DIR/<target>/ (default: BUILD_DIR/fuzz-work). A crash leaves
# its input in WORK_DIR/artifacts/ and makes this script fail. Regressions: every file of
# tests/fuzz/regressions/<target>/ (copy a crash input there once fixed) is run through its
# target first, on every run.
set -euo pipefail
build="$1"
secs="${2:-20}"
src="$(cd "$(dirname "$0")/../.." && pwd)"
work="${3:-$build/fuzz-work}"
corpus="$src/tests/fuzz/corpus"
# the reference sets (VKF_FIXTURES, else tools/refs/make_all.py's directory), for the seeds and
# fuzz_tokenizers' real vocabularies
fixtures="${VKF_FIXTURES:-$(python3 "$src/tools/refs/make_all.py" --print-dir)}"
export VKF_FIXTURES="$fixtures"
mkdir -p "$work/artifacts"

join() { local IFS=,; echo "$*"; }
seeds_for() {
    case "$1" in
    fuzz_gguf) echo "$corpus/gguf" ;;
    fuzz_safetensors) echo "$corpus/safetensors" ;;
    fuzz_tokenizers) echo "$corpus/tokenizers" ;;
    fuzz_regex) echo "$corpus/regex" ;;
    fuzz_grammar) echo "$corpus/grammar" ;;
    fuzz_json_schema) echo "$corpus/json_schema" ;;
    fuzz_tool_calls) echo "$corpus/tool_calls" ;;
    *) ;;
    esac
}
seed_files_for() {
    local f=()
    case "$1" in
    fuzz_json_config)
        for p in "$src"/models/*/config.json "$fixtures"/*/config.json "$fixtures"/*/hf/config.json \
                 "$src"/tests/data/tokenizers/*/tokenizer_config.json; do
            [ -f "$p" ] && f+=("$p")
        done ;;
    fuzz_jinja)
        for p in "$fixtures"/chat-templates/templates/*.jinja; do
            [ -f "$p" ] && f+=("$p")
        done ;;
    fuzz_tokenizer_files)
        for p in "$src"/tests/data/tokenizers/*/tokenizer.json "$src"/tests/data/tokenizers/*/tokenizer.model; do
            [ -f "$p" ] && f+=("$p")
        done ;;
    *) ;;
    esac
    [ ${#f[@]} -gt 0 ] && join "${f[@]}"
    return 0
}

# one target: its regressions, then SECONDS of fuzzing; the summary goes to its .summary file
run_one() {
    local exe="$1" name st=0
    name="$(basename "$exe")"
    mkdir -p "$work/$name"
    local args=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
                -artifact_prefix="$work/artifacts/$name-")
    local sf sd dirs log reg
    sf="$(seed_files_for "$name")"
    [ -n "$sf" ] && args+=(-seed_inputs="$sf")
    [ "$name" = fuzz_tokenizer_files ] && args+=(-max_len=65536)
    dirs=("$work/$name")
    sd="$(seeds_for "$name")"
    [ -n "$sd" ] && [ -d "$sd" ] && dirs+=("$sd")
    log="$work/$name.log"
    reg="$src/tests/fuzz/regressions/$name"
    if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
        if ! "$exe" "$reg"/* >"$work/$name.regressions.log" 2>&1; then
            echo "fuzz: $name: a regression input fails again (see $work/$name.regressions.log)"
            st=1
        fi
    fi
    # the library under test finds tests/data through VKF_SOURCE_DIR (compiled in)
    if ! ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" "$exe" "${args[@]}" "${dirs[@]}" >"$log" 2>&1; then
        echo "fuzz: $name FAILED (see $log; inputs in $work/artifacts)"
        tail -40 "$log"
        st=1
    fi
    grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+.*DONE" "$log" | sed "s/^/  $name: /" || true
    return $st
}

# the targets run side by side, one per CPU (FUZZ_JOBS): each is single-threaded
jobs_max="${FUZZ_JOBS:-$(nproc)}"
names=()
for exe in "$build"/tests/fuzz_*; do
    [ -x "$exe" ] || continue
    name="$(basename "$exe")"
    echo "fuzz: $name for ${secs}s" >&2
    rm -f "$work/$name.rc"
    (if run_one "$exe" >"$work/$name.summary" 2>&1; then echo 0; else echo 1; fi >"$work/$name.rc") &
    names+=("$name")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
done
wait
status=0
for name in "${names[@]}"; do
    cat "$work/$name.summary" >&2
    [ "$(cat "$work/$name.rc" 2>/dev/null)" = 0 ] || status=1
done
exit $status
