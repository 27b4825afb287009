#!/usr/bin/env bash
# Prepares .gpu/ (git-ignored) for bench/gpu-check.sh on a lent GPU machine, which is bare and
# offline: no Vulkan loader, no glslang, no package registry, and ../shared does not travel.
#
#   bench/gpu-pack.sh            # here, on the development machine (Debian, network to apt)
#   then, with the device tool:  run  command="bench/gpu-check.sh all"  carry=[".gpu"]
#   bench/gpu-pack.sh --no-peer  # the same without llama.cpp's llama-bench: its 10+ MB go to
#                                  fixtures instead, for the tests and quick parts (the peer
#                                  part then has nothing to run and says so)
#
# .gpu/ holds:
#   bin/vkformer   the CLI built here (Release; glslang, SPIRV-Tools and volk are linked in
#                  statically, so it needs only libc, libstdc++, libcjson and the Vulkan loader)
#   lib.tar.xz     the shared libraries it links beyond libc/libstdc++ (libmicrohttpd, libcurl,
#                  libarchive and theirs: GnuTLS, ICU, ...; 52 MB as files, 15 MB compressed),
#                  which gpu-check.sh unpacks to /tmp/vkf-lib there
#   debs/          libcjson1, libvulkan1 (the loader) and vulkan-validationlayers, as .debs that
#                  gpu-check.sh unpacks there (dpkg -x)
#   peer/          llama.cpp's Vulkan llama-bench (xz), its libgomp and the binary's sha256
#   fixtures/      a subset of ../shared/fixtures that fits the device tool's 64 MiB (working
#                  tree included); each cases.json is filtered to the models that were packed
#   MANIFEST       what was packed, with sizes and the git revision
# The 1.1B benchmark models are not packed: gpu-check.sh generates them there with
# tools/make_bench_model.py (NumPy is on the lent machines).
set -euo pipefail
cd "$(dirname "$0")/.."
with_peer=1
case "${1:-}" in
--no-peer) with_peer=0 ;;
"") ;;
*) echo "usage: bench/gpu-pack.sh [--no-peer]" >&2; exit 2 ;;
esac
out=.gpu
fixtures="${VKF_FIXTURES:-../shared/fixtures}"
budget_mb="${VKF_GPU_PACK_MB:-60}" # the device tool carries 64 MiB, tree included

rm -rf "$out"
mkdir -p "$out/bin" "$out/debs" "$out/fixtures"

# ---- the binary
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DVKF_BUILD_TESTS=OFF >/dev/null
cmake --build build-gpu -j"$(nproc)" --target vkformer_cli >&2
strip -o "$out/bin/vkformer" build-gpu/vkformer

# ---- the shared libraries it needs there: the server's libmicrohttpd and what it links (GnuTLS
# and its helpers) are copied as files into lib/, which gpu-check.sh puts on the binary's library
# path only (the machine's own programs keep their libraries); the loader and glvnd as .debs
mkdir -p "$out/lib"
ldd build-gpu/vkformer | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
    libc.so.* | libm.so.* | libstdc++.so.* | libgcc_s.so.* | ld-linux*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
    esac
done
# compressed: as files they would take most of the 64 MiB the device tool carries
tar -C "$out" -cf - lib | xz -T0 -6 >"$out/lib.tar.xz"
rm -rf "$out/lib"
(cd "$out/debs" && apt-get download libcjson1 libvulkan1 vulkan-validationlayers \
    libglvnd0 libglx0 libegl1 libgl1 libopengl0 libgles2 >/dev/null) # the NVIDIA ICD needs glvnd

# ---- llama.cpp's Vulkan llama-bench, for `gpu-check.sh peer` (../shared/peers/llama.cpp-vulkan:
# xz-compressed, its libgomp beside it); the sha256 of the unpacked binary from its README
peer="${VKF_PEER_DIR:-../shared/peers/llama.cpp-vulkan}"
if [ "$with_peer" = 1 ]; then
    mkdir -p "$out/peer"
    cp "$peer/llama-bench.xz" "$peer/libgomp.so.1" "$out/peer/"
    grep -o 'unpacked binary: [0-9a-f]\{64\}' "$peer/README.md" | awk '{print $3}' >"$out/peer/llama-bench.sha256"
    [ -s "$out/peer/llama-bench.sha256" ] || { echo "gpu-pack: no sha256 in $peer/README.md" >&2; exit 1; }
fi

# ---- fixtures: smallest models first, until the budget is spent
tree_kb=$(git ls-files -z | xargs -0 du -ck 2>/dev/null | tail -1 | cut -f1)
used_kb=$(( tree_kb + $(du -sk "$out" | cut -f1) ))
/usr/bin/python3 - "$fixtures" "$out/fixtures" "$(( budget_mb * 1024 - used_kb ))" <<'PY'
import json, os, shutil, sys
src, dst, budget_kb = sys.argv[1], sys.argv[2], int(sys.argv[3])
# the smallest models of every directory first, so that each directory is represented; the f32
# files are the largest, so they come last
wanted = ["seed-transformer-tiny", "llama-tiny", "llama-kq", "arch"]
def size(path): return os.path.getsize(path) // 1024 + 1
cands, all_cases, n_models = [], {}, {}
for d in wanted:
    sd = os.path.join(src, d)
    if not os.path.isdir(sd):
        print("gpu-pack: %s missing, skipped" % sd, file=sys.stderr); continue
    cases = json.load(open(os.path.join(sd, "cases.json")))
    if not isinstance(cases, list) or not cases or "model" not in cases[0]:
        # seed-transformer layout: the whole directory is one model
        cands.append((sum(size(os.path.join(sd, f)) for f in os.listdir(sd)), d, None, None))
        continue
    all_cases[d] = cases
    models = sorted({c["model"] for c in cases})
    n_models[d] = len(models)
    for m in models:
        files = [m] + [c[k] for c in cases if c["model"] == m for k in ("prompt_logits", "greedy_logits")]
        cands.append((sum(size(os.path.join(sd, f)) for f in files), d, m, files))
keep = {}
for need, d, m, files in sorted(cands, key=lambda c: c[0]):
    if need > budget_kb: continue
    sd = os.path.join(src, d)
    if m is None:
        shutil.copytree(sd, os.path.join(dst, d))
    else:
        os.makedirs(os.path.join(dst, d), exist_ok=True)
        for f in files: shutil.copy2(os.path.join(sd, f), os.path.join(dst, d, f))
        keep.setdefault(d, []).append(m)
    budget_kb -= need
for d, ms in keep.items():
    json.dump([c for c in all_cases[d] if c["model"] in ms], open(os.path.join(dst, d, "cases.json"), "w"), indent=1)
    if os.path.exists(os.path.join(src, d, "README.md")): shutil.copy2(os.path.join(src, d, "README.md"), os.path.join(dst, d))
for d in n_models:
    print("gpu-pack: %s: %d of %d models" % (d, len(keep.get(d, [])), n_models[d]), file=sys.stderr)
PY

{
    echo "packed $(date -u +%FT%TZ) at $(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty')"
    echo "tree (tracked files): ${tree_kb} KiB"
    du -sk "$out"/* | sed 's/^/  /'
    (cd "$out" && find fixtures -name '*.gguf' -o -name 'model.safetensors' | sort | sed 's/^/  /')
} > "$out/MANIFEST"
cat "$out/MANIFEST" >&2
total=$(( tree_kb + $(du -sk "$out" | cut -f1) ))
echo "gpu-pack: .gpu + tree = $(( total / 1024 )) MiB of the 64 MiB the device tool carries" >&2
