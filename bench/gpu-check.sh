#!/usr/bin/env bash
# The GPU checklist, in one call on a lent GPU machine (see bench/gpu-pack.sh, which prepares
# the .gpu/ folder this reads; carry it):
#
#   bench/gpu-check.sh [all|tests|bench|peer|quick|profile|coopmat|archs|steps FILE] (default all;
#                                              tests and bench each fit one 10-minute call;
#                                              quick: selftest, llama-tiny, kernels and one 1.1B
#                                              Q4_0 bench; profile: the per-op profile of 1.1B
#                                              Q4_0 decode and prefill, and decode at depth under
#                                              the attention knobs; coopmat: the cooperative-
#                                              matrix prefill matmul (selftest, then matmul
#                                              shapes and pp512 with and without it); archs: the
#                                              other architectures at real sizes (Qwen2.5-0.5B,
#                                              qwen3-0.6b, gemma-3-1b, Qwen3-30B-A3B-shaped
#                                              MoE with 128 and 64 experts): speed, per-op profile,
#                                              decode at depth with head_dim 128 and 256)
#
#   tests: devices, selftest (every op vs the CPU reference) with the validation layer, the same
#          in the small-device profile, verify on every packed fixture on the GPU with
#          validation, and once on the CPU reference
#   bench: bench --kernels (probes, matmul, matvec per weight type), then vkformer bench on
#          random-weight TinyLlama-1.1B-shaped models (F16, Q8_0, Q4_0; generated here with
#          tools/make_bench_model.py) at -p 64,512 -n 16,128 and a depth sweep
#   peer:  vkformer beside llama.cpp's Vulkan llama-bench (packed in .gpu/peer) on the same
#          random-weight files, TinyLlama-1.1B and Llama-3-8B shapes in Q4_0, Q8_0 and Q4_K_M,
#          -p 512 -n 128 -r 3 each, plus the copy/FMA probes: $OUT/results/DEVICE-DATE.json
#          (the shape `vkformer bench --compare` reads; the lead copies it to bench/results/).
#          About 5 of the 8 minutes a call may take on an H100 (bench/README.md has the budget).
#          Overrides for a slow device (lavapipe, where the peer needs GGML_VK_VISIBLE_DEVICES=0):
#          VKF_PEER_SHAPES="tinyllama-1.1b" VKF_PEER_TYPES="q4_0" VKF_PEER_P=64 VKF_PEER_N=16
#          VKF_PEER_R=1 VKF_PEER_PROBE_ARGS=--quick (fewer probe repetitions); VKF_PEER_TIMEOUT (seconds per engine and model, default 150) and
#          VKF_PEER_BUDGET (seconds after which no new model starts, default 420)
#
# Everything goes under $OUT (the device tool's folder that comes back; /tmp/gpu-check when
# unset): summary.txt (one line per step with its exit status), gpu-check.log (every step's
# output), and the device/driver report. The exit status is non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
part="${1:-all}"
OUT="${OUT:-/tmp/gpu-check}"
mkdir -p "$OUT"
summary="$OUT/summary.txt"
log="$OUT/gpu-check.log"
[ -x .gpu/bin/vkformer ] || { echo "gpu-check: .gpu/bin/vkformer missing: run bench/gpu-pack.sh here and carry .gpu" >&2; exit 2; }
# the binary runs with /tmp/vkf-lib (.gpu/lib.tar.xz: libmicrohttpd, libcurl, libarchive and
# the libraries they link) on its library path; the machine's own programs (python3 for the
# bench models) keep theirs
V=/tmp/vkf-run
printf '#!/bin/sh\nLD_LIBRARY_PATH="/tmp/vkf-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s/.gpu/bin/vkformer" "$@"\n' \
    "$PWD" >"$V"
chmod +x "$V"

# ---- the loader, libcjson and the validation layer from the packed .debs
# (the NVIDIA driver's ICD links glvnd's libGLX/libGLdispatch, which a bare machine lacks)
for f in .gpu/debs/*.deb; do
    case "$f" in *vulkan-validationlayers*) continue ;; esac
    # a machine that has the package at this version (the development machine) keeps its own
    pkg=$(dpkg-deb -f "$f" Package 2>/dev/null) ver=$(dpkg-deb -f "$f" Version 2>/dev/null)
    [ -n "$pkg" ] && [ "$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null)" = "$ver" ] && continue
    dpkg -x "$f" / 2>/dev/null
done
ldconfig 2>/dev/null || true
mkdir -p /tmp/vkf-root
dpkg -x .gpu/debs/vulkan-validationlayers_*.deb /tmp/vkf-root
export LD_LIBRARY_PATH="/tmp/vkf-root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VK_LAYER_PATH=/tmp/vkf-root/usr/share/vulkan/explicit_layer.d
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
export VKF_CACHE_DIR=/tmp/vkf-cache
# the first python3 with NumPy (tools/make_bench_model.py): the lent machines' own, or Debian's
# where a version manager's python3 comes first on PATH (the development machine)
PY=python3
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import numpy' 2>/dev/null; then PY="$p"; break; fi
done
# the libraries, with Python's tarfile (a bare machine may have no xz)
rm -rf /tmp/vkf-lib /tmp/vkf-lib.x
"$PY" -c 'import sys, tarfile
tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .gpu/lib.tar.xz /tmp/vkf-lib.x && mv /tmp/vkf-lib.x/lib /tmp/vkf-lib

failed=0
step() { # step NAME COMMAND...: runs it, appends its output to the log and one line to the summary
    local name="$1"; shift
    local t0=$SECONDS
    { echo; echo "===== $name: $*"; } >>"$log"
    "$@" >>"$log" 2>&1
    local rc=$?
    printf '%-28s rc %-3d %4ds  %s\n' "$name" "$rc" $((SECONDS - t0)) "$*" | tee -a "$summary"
    [ $rc -eq 0 ] || failed=1
    return 0
}

{
    echo "gpu-check $part at $(date -u +%FT%TZ)"
    cat .gpu/MANIFEST 2>/dev/null | head -1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>/dev/null
} | tee -a "$summary"
step devices "$V" devices
# Without a Vulkan device every later step would fall back to the CPU and crawl: stop here.
if ! "$V" devices 2>/dev/null | grep -q .; then
    echo "gpu-check: no Vulkan device (see devices in $log)" | tee -a "$summary"
    exit 1
fi

if [ "$part" = all ] || [ "$part" = tests ]; then
    step selftest "$V" selftest --validate
    step selftest_mobile env VKF_DEVICE_PROFILE=mobile "$V" selftest --validate
    for d in .gpu/fixtures/*/; do
        step "verify_$(basename "$d")" "$V" verify "$d" --validate
    done
    step verify_cpu_llama-tiny "$V" verify .gpu/fixtures/llama-tiny --cpu
fi

if [ "$part" = profile ]; then # where decode's time goes on this GPU, and the knobs that move it
    m=/tmp/vkf-bench-tinyllama-q4_0.gguf
    [ -f "$m" ] || step make_model_q4_0 "$PY" tools/make_bench_model.py --shape tinyllama-1.1b --type q4_0 -o "$m"
    step profile_pp512_tg32 "$V" bench -m "$m" -p 512 -n 32 -r 1 --profile --backends vulkan
    step profile_tg16_d2048 "$V" bench -m "$m" -p 0 -n 16 -d 2048 -r 1 --profile --backends vulkan
    for wg in 128 256 512; do
        step "attn_wg$wg" env VKF_ATTN_WG=$wg "$V" bench -m "$m" -p 512 -n 32 -d 128,2048 -r 1 --backends vulkan
        step "attn_subgroups_wg$wg" env VKF_NO_KEYLANES=1 VKF_ATTN_WG=$wg "$V" bench -m "$m" -p 0 -n 32 -d 128,2048 -r 1 --backends vulkan
    done
    step attn_old env VKF_NO_TEXEL_ATTENTION=1 "$V" bench -m "$m" -p 512 -n 32 -d 128,2048 -r 1 --backends vulkan
    for sp in 4 8 16; do
        step "attn_split$sp" env VKF_ATTN_SPLIT=$sp "$V" bench -m "$m" -p 0 -n 32 -d 128,2048 -r 1 --backends vulkan
    done
fi

if [ "$part" = coopmat ]; then # the cooperative-matrix prefill matmul against the tiled kernel
    # no spelling runs by default before it has passed here (vk_device.c): VKF_COOPMAT=1
    "$V" devices 2>&1 | grep -i -E "coopmat|cooperative" | tee -a "$summary"
    VKF_COOPMAT=1 "$V" devices 2>&1 | grep -i -E "prefill matmul" | tee -a "$summary"
    step selftest env VKF_COOPMAT=1 "$V" selftest --validate
    step verify_llama-tiny env VKF_COOPMAT=1 "$V" verify .gpu/fixtures/llama-tiny --validate
    for sh in 4096x4096x4096 512x2048x2048 512x5632x2048 512x2048x5632; do
        step "mm_coop_$sh" env VKF_COOPMAT=1 "$V" bench --kernels --only matmul --shape "$sh" --dtypes F16,F32,Q8_0,Q4_0,Q4_K,Q6_K
        step "mm_tiled_$sh" "$V" bench --kernels --only matmul --shape "$sh" --dtypes F16,F32,Q8_0,Q4_0,Q4_K,Q6_K
    done
    for t in q4_0 f16; do
        m="/tmp/vkf-bench-tinyllama-$t.gguf"
        [ -f "$m" ] || step "make_model_$t" "$PY" tools/make_bench_model.py --shape tinyllama-1.1b --type "$t" -o "$m"
        step "pp512_coop_$t" env VKF_COOPMAT=1 "$V" bench -m "$m" -p 512 -n 0 -r 2 --backends vulkan
        step "pp512_tiled_$t" "$V" bench -m "$m" -p 512 -n 0 -r 2 --backends vulkan
    done
    # VKF_COOPMAT=1 takes VK_KHR_cooperative_matrix where the device has it (AMD RDNA3+, Intel
    # Arc, recent NVIDIA drivers: the NV GLSL with its SPIR-V rewritten into the KHR form,
    # src/backend/vulkan/spv_coopmat_khr.c), so the steps above ran the KHR form there; where
    # the device has both extensions, the NV form too (VKF_COOPMAT=nv)
    if "$V" devices 2>&1 | grep -q "cooperative matrix KHR and NV"; then
        VKF_COOPMAT=nv "$V" devices 2>&1 | grep -i -E "prefill matmul" | tee -a "$summary"
        step selftest_nv env VKF_COOPMAT=nv "$V" selftest --validate
        step verify_llama-tiny_nv env VKF_COOPMAT=nv "$V" verify .gpu/fixtures/llama-tiny --validate
        step mm_coop_nv_4096x4096x4096 env VKF_COOPMAT=nv "$V" bench --kernels --only matmul --shape 4096x4096x4096 --dtypes F16,Q4_0,Q4_K
        step pp512_coop_nv_q4_0 env VKF_COOPMAT=nv "$V" bench -m /tmp/vkf-bench-tinyllama-q4_0.gguf -p 512 -n 0 -r 2 --backends vulkan
    fi
fi

if [ "$part" = archs ]; then # the fused layers of qwen2, qwen3 and gemma3 at real sizes
    for sh in qwen2.5-0.5b:q8_0 qwen3-0.6b:q8_0 gemma-3-1b:q4_0; do
        m="/tmp/vkf-bench-${sh%%:*}-${sh##*:}.gguf"
        [ -f "$m" ] || step "make_model_${sh%%:*}" "$PY" tools/make_bench_model.py --shape "${sh%%:*}" --type "${sh##*:}" -o "$m"
        step "bench_${sh%%:*}" "$V" bench -m "$m" -p 512 -n 128 -r 2 --backends vulkan
        step "profile_${sh%%:*}" "$V" bench -m "$m" -p 0 -n 32 -r 1 --profile --backends vulkan
    done
    # decode at depth: heads of 128 (qwen3) under both decode attention layouts, 256 (gemma)
    m=/tmp/vkf-bench-qwen3-0.6b-q8_0.gguf
    step depth_qwen3 "$V" bench -m "$m" -p 0 -n 32 -d 128,2048 -r 1 --backends vulkan
    step depth_qwen3_keylanes env VKF_ATTN_KEYLANES=1 "$V" bench -m "$m" -p 0 -n 32 -d 128,2048 -r 1 --backends vulkan
    step depth_gemma3 "$V" bench -m /tmp/vkf-bench-gemma-3-1b-q4_0.gguf -p 0 -n 32 -d 128,2048 -r 1 --backends vulkan
    # mixture of experts (Qwen3-30B-A3B's layers, 4 of 48): 128 and 64 experts of the same active
    # size, whose decode times should match (mul_mat_id reads only the chosen experts' rows)
    for sh in qwen3-30b-a3b-4l qwen3-30b-a3b-4l-e64; do
        m="/tmp/vkf-bench-$sh-q4_0.gguf"
        [ -f "$m" ] || step "make_model_$sh" "$PY" tools/make_bench_model.py --shape "$sh" --type q4_0 -o "$m"
        step "bench_$sh" "$V" bench -m "$m" -p 512 -n 128 -r 2 --backends vulkan
    done
fi

if [ "$part" = steps ]; then # experiments: one step per line of the file "$2" (see bench/README.md)
    m=/tmp/vkf-bench-tinyllama-q4_0.gguf
    [ -f "$m" ] || step make_model_q4_0 "$PY" tools/make_bench_model.py --shape tinyllama-1.1b --type q4_0 -o "$m"
    # each line: NAME [VAR=VALUE ...] vkformer-arguments; $m is the 1.1B Q4_0 model
    while read -r name rest; do
        case "$name" in '' | '#'*) continue ;; esac
        eval "set -- $rest"
        envs=()
        while [ $# -gt 0 ] && [[ "$1" == *=* ]]; do envs+=("$1"); shift; done
        step "$name" env "${envs[@]}" "$V" "$@"
    done <"$2"
fi

if [ "$part" = quick ]; then # the checklist's core in one short call
    step selftest "$V" selftest --validate
    step verify_llama-tiny "$V" verify .gpu/fixtures/llama-tiny --validate
    step bench_kernels "$V" bench --kernels
    m=/tmp/vkf-bench-tinyllama-q4_0.gguf
    [ -f "$m" ] || step make_model_q4_0 "$PY" tools/make_bench_model.py --shape tinyllama-1.1b --type q4_0 -o "$m"
    step bench_tinyllama_q4_0 "$V" bench -m "$m" -p 512 -n 128 -r 2 --backends vulkan
fi

if { [ "$part" = all ] || [ "$part" = peer ]; } && [ ! -f .gpu/peer/llama-bench.xz ]; then
    echo "peer: llama-bench was not packed (bench/gpu-pack.sh --no-peer): the peer part is skipped" | tee -a "$summary"
    [ "$part" = peer ] && failed=1
elif [ "$part" = all ] || [ "$part" = peer ]; then # vkformer and llama.cpp's Vulkan backend, same files
    P=/tmp/vkf-peer
    mkdir -p "$P" "$OUT/peer" "$OUT/results"
    raw="$OUT/peer"
    # llama-bench travels xz-compressed; Python's lzma unpacks it (a bare machine may lack xz)
    [ -x "$P/llama-bench" ] || "$PY" -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[2], "wb") as o: shutil.copyfileobj(i, o)' \
        .gpu/peer/llama-bench.xz "$P/llama-bench"
    chmod +x "$P/llama-bench"
    want=$(cat .gpu/peer/llama-bench.sha256 2>/dev/null)
    if [ "$(sha256sum "$P/llama-bench" | cut -d' ' -f1)" != "$want" ]; then
        echo "gpu-check: $P/llama-bench does not match .gpu/peer/llama-bench.sha256" | tee -a "$summary"
        failed=1
    fi
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s/.gpu/peer${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s/llama-bench" "$@"\n' \
        "$PWD" "$P" >"$P/run"
    chmod +x "$P/run"
    pp="${VKF_PEER_P:-512}" tg="${VKF_PEER_N:-128}" reps="${VKF_PEER_R:-3}" tmo="${VKF_PEER_TIMEOUT:-150}"
    # the part stops starting runs after VKF_PEER_BUDGET seconds (default 420: a call is 10
    # minutes, the machine's start is in them), so a slow or hung run cannot cost the results
    t_end=$((SECONDS + ${VKF_PEER_BUDGET:-420}))
    # the probes first: copy bandwidth and FMA rate of this device, the table's yardsticks
    # (--only names no kernel family here, so only the probes run)
    # (twice if need be: lavapipe has crashed in them on a loaded machine, 2026-11-28)
    for try in 1 2; do
        step "peer_probes_$try" sh -c "'$V' bench --kernels --only probes ${VKF_PEER_PROBE_ARGS:-} -o json >'$raw/probes.json'"
        [ -s "$raw/probes.json" ] && break
    done
    for shape in ${VKF_PEER_SHAPES:-tinyllama-1.1b llama3-8b}; do
        for t in ${VKF_PEER_TYPES:-q4_0 q8_0 q4_k_m}; do
            T=$(echo "$t" | tr a-z A-Z)
            if [ $SECONDS -ge $t_end ]; then
                echo "peer: VKF_PEER_BUDGET spent: $shape $T and what follows not run" | tee -a "$summary"
                failed=1
                break 2
            fi
            m="/tmp/vkf-peer-$shape-$t.gguf"
            [ -f "$m" ] || step "peer_make_${shape}_$t" "$PY" tools/make_bench_model.py --shape "$shape" --type "$t" -o "$m"
            step "peer_vkformer_${shape}_$t" timeout "$tmo" sh -c "'$V' bench -m '$m' -p $pp -n $tg -r $reps -o json --backends vulkan >'$raw/${shape}__${T}__vkformer.json'"
            step "peer_llama.cpp_${shape}_$t" timeout "$tmo" sh -c "'$P/run' -m '$m' -p $pp -n $tg -r $reps -o json >'$raw/${shape}__${T}__llama.cpp.json'"
            case "$shape" in *8b) rm -f "$m" ;; esac # 4.7-8.5 GB each: the disk is 64 GiB
        done
    done
    step peer_results "$PY" bench/peer_results.py "$raw" "$OUT/results"
    for f in "$OUT"/results/*.json; do
        [ -f "$f" ] && "$V" bench --compare "$OUT/results" --svg "$OUT/results/compare.svg" | tee -a "$summary"
        break
    done
fi

if [ "$part" = all ] || [ "$part" = bench ]; then
    step bench_kernels "$V" bench --kernels
    for t in f16 q8_0 q4_0; do
        m="/tmp/vkf-bench-tinyllama-$t.gguf"
        [ -f "$m" ] || step "make_model_$t" "$PY" tools/make_bench_model.py --shape tinyllama-1.1b --type "$t" -o "$m"
        step "bench_tinyllama_$t" "$V" bench -m "$m" -p 64,512 -n 16,128 -r 3 --backends vulkan
    done
    step bench_depth_q4_0 "$V" bench -m /tmp/vkf-bench-tinyllama-q4_0.gguf -p 0 -n 32 -d 128,512,2048 -r 2 --backends vulkan
    # Q4_K_M (the users' download) is made from the F16 model by vkformer's own quantizer
    m=/tmp/vkf-bench-tinyllama-q4_k_m.gguf
    [ -f "$m" ] || step make_model_q4_k_m "$V" quantize /tmp/vkf-bench-tinyllama-f16.gguf "$m" Q4_K_M
    step bench_tinyllama_q4_k_m "$V" bench -m "$m" -p 64,512 -n 16,128 -r 3 --backends vulkan
fi

(cd "$OUT" && tar czf logs.tar.gz gpu-check.log summary.txt 2>/dev/null)
echo "gpu-check: $([ $failed = 0 ] && echo all steps passed || echo SOME STEPS FAILED); see $summary" | tee -a "$summary"
exit $failed
