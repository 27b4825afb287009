#!/usr/bin/env bash
# docs/DESIGN.md, 'Layers', for the front ends: the commands (src/cli) and the server (src/serve)
# are clients of the public API. Each of their files may include vkformer.h, the front ends' own
# headers (cli/, serve/), bench.h (the benchmarks' entry points) and system headers, but no header
# of the library's inside (backend/, graph/, io/, model/, core/, ...) and no Vulkan, volk or glslang
# header. Fails naming each include that breaks this. Usage: check_layers.sh SRC
set -euo pipefail
cd "$1"
bad=0
n=0
for f in src/cli/*.[ch] src/serve/*.[ch]; do
    n=$((n + 1))
    while IFS= read -r line; do
        inc="${line#*:}"
        case "$inc" in
        *'"vkformer.h"'* | *'"cli/'* | *'"serve/'* | *'"bench.h"'*) ;;
        *'<vulkan/'* | *'<volk.h>'* | *'<glslang/'* | *'"'*)
            echo "layers: $f:${line%%:*}: $inc (the front ends use vkformer.h only)"
            bad=$((bad + 1))
            ;;
        esac
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include' "$f" || true)
done
echo "$n front-end files checked, $bad includes below the public API"
[ "$bad" -eq 0 ]
