#!/usr/bin/env bash
# The aarch64 pass (./setup.sh arm64, run by CI after ./setup.sh test; tests/README.md, "ARM64"):
# the cross-built engine under qemu-aarch64 (user-mode emulation, the multiarch root as its prefix).
#   tests/arm64.sh ARM64_BUILD X86_BUILD   runs the checks below; exit 1 when any fails
#                                           (X86_BUILD: an x86 build with the CLI built)
#   tests/arm64.sh --targets                the test programs it runs (setup.sh builds them)
# Each check prints "arm64: NAME ok|FAILED (S s)", its output in ARM64_BUILD/arm64-logs/NAME.log.
#
# The CPU backend only, but for the device check: Debian 12's arm64 lavapipe (Mesa 22.3.6, LLVM
# 15) aborts compiling any kernel that converts half floats (unpackHalf2x16: F16 weights, the KV
# cache, the K-quants' scales), "LLVM ERROR: Cannot select: v4f32 = fp_extend v4i16" in LLVM's
# aarch64 instruction selection, so the Vulkan path (the op harness among it) cannot run on it.
set -uo pipefail
tests=(test_models_gpt2 test_models_llama test_tokenizer test_tokenizer_regex)
if [ "${1:-}" = --targets ]; then
    echo vkformer_cli "${tests[@]}"
    exit 0
fi
if [ $# -ne 2 ]; then
    echo "usage: tests/arm64.sh ARM64_BUILD X86_BUILD | --targets" >&2
    exit 2
fi
abuild="$(cd "$1" && pwd)" xbuild="$(cd "$2" && pwd)"
src="$(cd "$(dirname "$0")/.." && pwd)"
qemu="$(command -v qemu-aarch64-static || command -v qemu-aarch64)" || {
    echo "arm64: no qemu-aarch64-static (Debian: qemu-user-static)" >&2
    exit 1
}
# lavapipe's arm64 ICD file, where ./setup.sh arm64 moves it (out of the x86 loader's sight)
icd=/usr/share/vulkan/icd.d-arm64/lvp_icd.aarch64.json
[ -f "$icd" ] || icd=/usr/share/vulkan/icd.d/lvp_icd.aarch64.json
[ -f "$icd" ] || {
    echo "arm64: no lvp_icd.aarch64.json (Debian: mesa-vulkan-drivers:arm64; ./setup.sh arm64)" >&2
    exit 1
}
file "$abuild/vkformer" | grep -q "ARM aarch64" || {
    echo "arm64: $abuild/vkformer is not an aarch64 program: $(file -b "$abuild/vkformer")" >&2
    exit 1
}
# the C tests on the CPU backend: no Vulkan device (an ICD file that does not exist), which
# VKF_TEST_NO_VULKAN=1 allows (their Vulkan half prints "SKIP (device)")
export VK_ICD_FILENAMES=/nonexistent/no-vulkan-here.json VKF_TEST_NO_VULKAN=1 VKF_VALIDATE=0
export VKF_CACHE_DIR="$abuild/test-cache" GALLIVM_PERF="${GALLIVM_PERF:-nopt}"
# the Python of tests/requirements.txt (./setup.sh makes it in the x86 build tree) and the
# reference fixtures (tools/refs/make_all.py; setup.sh exports the directory)
py="${VKF_PYTHON:-$xbuild/pyenv/bin/python}"
: "${VKF_FIXTURES:=$("$py" "$src/tools/refs/make_all.py" --print-dir)}"
status=0
t_all=$SECONDS
log="$abuild/arm64-logs"
mkdir -p "$log"
run() { # NAME COMMAND...: runs it, its output in $log/NAME.log (its end shown when it fails)
    local name=$1 t0=$SECONDS
    shift
    if (cd "$abuild" && "$@") >"$log/$name.log" 2>&1; then
        echo "arm64: $name ok ($((SECONDS - t0)) s)"
    else
        echo "arm64: $name FAILED ($((SECONDS - t0)) s), its output:"
        tail -n 60 "$log/$name.log"
        status=1
    fi
}
a64() { "$qemu" "$abuild/vkformer" "$@"; }

# the arm64 Vulkan loader finds arm64 lavapipe (the device a phone or a Pi would be in its place)
lavapipe() { VK_ICD_FILENAMES=$icd a64 devices | tee /dev/stderr | grep -q "type: cpu"; }
run vulkan_devices lavapipe

# the model tests against the llama.cpp fixtures (GPT-2; llama f32, f16, q8_0, q4_0), the
# tokenizers against llama.cpp's ids, the pre-tokenizer regex engine. Not test_models_seed (the
# encoder-decoder against PyTorch: 863 s emulated on a loaded machine, its base model being most
# of it): verify_dates-transformer below checks that architecture against PyTorch
for t in "${tests[@]}"; do
    run "$t" "$qemu" "$abuild/tests/$t"
done
# the shipped models against their expected.json (PyTorch: logits within bounds, greedy ids)
for m in kjv-gpt dates-transformer; do
    run "verify_$m" a64 verify "$src/models/$m" --cpu
done

# greedy output equal to x86's, token for token: the shipped models' vocabularies are one
# character a token (kjv-gpt's char_vocab.json, dates-transformer's src/tgt_vocab.json), so equal
# text is equal ids. The x86 CLI runs natively; 200 tokens of kjv-gpt, past the reference's 48.
same() { # NAME X86_TEXT AARCH64_TEXT
    if [ "$2" != "$3" ]; then
        printf '%s differs:\nx86-64:  %q\naarch64: %q\n' "$1" "$2" "$3"
        return 1
    fi
    printf '%s: %d characters equal: %s\n' "$1" "${#3}" "$3"
}
greedy_equal() {
    local args=(generate -m "$src/models/kjv-gpt" -p "And God said" -n 200 --temp 0 --no-display-prompt --cpu)
    local x a
    x="$("$xbuild/vkformer" "${args[@]}")" || return 1
    a="$(a64 "${args[@]}")" || return 1
    same "kjv-gpt greedy" "$x" "$a"
}
translate_equal() {
    local x a s
    for s in "the seventh of january, nineteen oh five" "the third of march, nineteen ninety-nine"; do
        local args=(translate -m "$src/models/dates-transformer" -s "$s" --cpu)
        x="$("$xbuild/vkformer" "${args[@]}")" || return 1
        a="$(a64 "${args[@]}")" || return 1
        same "dates-transformer '$s'" "$x" "$a" || return 1
    done
}
run greedy_equals_x86 greedy_equal
run translate_equals_x86 translate_equal

# the ggml-activations mode reproduces llama.cpp's x86-64 summation orders: an aarch64 build
# refuses it by name (exit 1, the reason on stderr), never approximates
ggml_refused() {
    local out rc
    out="$(a64 verify "$VKF_FIXTURES/llama-tiny" --ggml-activations 2>&1)"
    rc=$?
    echo "exit $rc: $out"
    [ $rc -eq 1 ] && grep -q "ggml_activations avx2 reproduces llama.cpp's x86-64" <<<"$out" &&
        grep -q "this build is for aarch64" <<<"$out"
}
run ggml_activations_refused ggml_refused

# the arm64 Debian packages: cpack -G DEB of this build (tests/arm64_package.sh)
run package_deb_arm64 "$src/tests/arm64_package.sh" "$abuild"

# serve: the OpenAI client on this machine's Python against the aarch64 server
cat >"$abuild/vkformer-qemu" <<EOF
#!/bin/sh
exec "$qemu" "$abuild/vkformer" "\$@"
EOF
chmod +x "$abuild/vkformer-qemu"
run serve_openai "$py" "$src/tests/arm64_serve.py" "$abuild/vkformer-qemu" "$src"

echo "arm64: $((SECONDS - t_all)) s in all"
exit $status
