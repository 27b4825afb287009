# Shared by the CLI test scripts (tests/cli/test_cli*.sh), sourced after `set -uo pipefail`:
#   . "$(dirname "$0")/lib.sh"
# Reads the script's arguments BUILD_DIR SOURCE_DIR FIXTURES_DIR into $build, $src, $fx; sets
# $V (the CLI of this build), $kjv and $llama (the models most checks run), $tmp (a scratch
# folder removed on exit), the shader cache, and the counters $checks and $fails.
build="$1"; src="$2"; fx="$3"
V="$build/vkformer"
kjv="$src/models/kjv-gpt"
llama="$fx/llama-tiny/llama-tiny-f32.gguf"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
export VKF_CACHE_DIR="${VKF_CACHE_DIR:-$build/test-cache}"
fails=0; checks=0

fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# run ARGS...: runs the CLI, sets $rc, $out (stdout), $err (stderr)
run() {
    "$V" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    out="$(cat "$tmp/out")"; err="$(cat "$tmp/err")"
}
# has / hasnt NEEDLE HAYSTACK WHAT; eq GOT EXPECTED WHAT: one check each
has() { checks=$((checks + 1)); case "$2" in *"$1"*) ;; *) fail "$3: lacks '$1' in: $2" ;; esac; }
hasnt() { checks=$((checks + 1)); case "$2" in *"$1"*) fail "$3: has '$1' in: $2" ;; esac; }
eq() { checks=$((checks + 1)); [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"; }
# need_fixtures SET...: every reference set the script reads is there, else the script fails
# here naming each missing path (no check runs on absent data)
need_fixtures() {
    local s missing=0
    for s in "$@"; do
        if [ ! -d "$fx/$s" ]; then
            echo "FAIL: reference data missing: $fx/$s (VKF_FIXTURES; ./setup.sh test makes the sets with tools/refs/make_all.py)" >&2
            missing=1
        fi
    done
    [ "$missing" = 0 ] || exit 1
}
# finish NAME: the summary line; succeeds only when no check failed (the script's last command)
finish() {
    echo "$1: $checks checks, $fails failed"
    [ "$fails" = 0 ]
}
