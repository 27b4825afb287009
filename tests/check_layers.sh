#!/usr/bin/env bash
# docs/DESIGN.md, 'Layers', as include arrows: every arrow points down. Fails naming each include (or
# call) that points up. Usage: check_layers.sh SRC
#
# The front ends are clients of the public API. The commands (src/cli), the server (src/serve)
# and what they share (src/frontend: the flag parser, the UTF-8 helper) include vkformer.h,
# system headers and front-end headers, never a header of the library's inside (backend/,
# graph/, io/, model/, core/, ...) nor a Vulkan, volk or glslang header:
#   src/frontend  frontend/
#   src/serve     serve/ frontend/
#   src/cli       cli/ serve/ frontend/ bench.h (`vkformer bench` runs the benchmarks' library)
# The benchmarks (bench/) time kernels and may reach below the public API, but never into the
# commands or the server (cli/, serve/): they share the front ends' helpers through frontend/.
#
# The library's rooms, each above the ones it may include (vkformer.h everywhere), highest first:
#   generate    sampling, generation, embeddings, chat, verify
#   quantize    llama-quantize's rules (reads the architecture descriptors)
#   model       the model, its loaders, graph builders and sessions
#   runtime     the context: the backend it picks and owns
#   structured  grammars and tool calls, on a vocabulary given as data (knows no model)
#   template, tokenizer, backend, graph, io, tables, core
# A room below model also calls no vkf_model_* / vkf_session_* / vkf_sampler_* function and
# names no vkf_model or vkf_session (they are reachable through vkformer.h, so includes alone
# would not show such a call).
set -euo pipefail
shopt -s nullglob
cd "$1"
bad=0
n=0

# the rooms, lowest first: each may include itself and the rooms before it
rooms=(core tables io graph backend tokenizer template structured runtime model quantize generate)
declare -A below=()
for ((i = 0; i < ${#rooms[@]}; i++)); do below[${rooms[i]}]="${rooms[*]:0:i+1}"; done
no_model_calls="core tables io graph backend tokenizer template structured runtime"

includes() { grep -n '^[[:space:]]*#[[:space:]]*include' "$1" || true; }

# ------------------------------------------------------------------ front ends
front_end() { # FILE ALLOWED-PATTERN WHY
    local f=$1 ok=$2 why=$3 line inc
    n=$((n + 1))
    while IFS= read -r line; do
        inc="${line#*:}"
        if [[ "$inc" =~ \"([^\"]+)\" ]]; then
            [[ "${BASH_REMATCH[1]}" =~ $ok ]] && continue
        elif [[ ! "$inc" =~ \<(vulkan/|volk\.h|glslang/) ]]; then
            continue
        fi
        echo "layers: $f:${line%%:*}: $inc ($why)"
        bad=$((bad + 1))
    done < <(includes "$f")
}
for f in src/frontend/*.[ch]; do
    front_end "$f" '^(vkformer\.h|frontend/)' "src/frontend uses vkformer.h only"
done
for f in src/serve/*.[ch]; do
    front_end "$f" '^(vkformer\.h|serve/|frontend/)' \
        "the server uses vkformer.h and src/frontend, not the commands' headers"
done
for f in src/cli/*.[ch]; do
    front_end "$f" '^(vkformer\.h|cli/|serve/|frontend/|bench\.h)' \
        "the commands use vkformer.h, src/frontend, the server and bench.h"
done
for f in bench/*.[ch]; do
    n=$((n + 1))
    while IFS= read -r line; do
        inc="${line#*:}"
        case "$inc" in
        *'"cli/'* | *'"serve/'*)
            echo "layers: $f:${line%%:*}: $inc (the benchmarks are below the commands and the" \
                "server: shared helpers live in src/frontend)"
            bad=$((bad + 1))
            ;;
        esac
    done < <(includes "$f")
done

# ------------------------------------------------------------------ the library's rooms
for room in "${!below[@]}"; do
    [ -d "src/$room" ] || {
        echo "layers: src/$room: no such room (update tests/check_layers.sh)"
        bad=$((bad + 1))
        continue
    }
    while IFS= read -r f; do
        n=$((n + 1))
        while IFS= read -r line; do
            inc="${line#*:}"
            [[ "$inc" =~ \"([a-z_]+)/ ]] || continue
            to="${BASH_REMATCH[1]}"
            [[ " ${below[$room]} " == *" $to "* ]] && continue
            echo "layers: $f:${line%%:*}: $inc (src/$room may include ${below[$room]// /, })"
            bad=$((bad + 1))
        done < <(includes "$f")
        if [[ " $no_model_calls " == *" $room "* ]]; then
            while IFS= read -r line; do
                echo "layers: $f:${line%%:*}: ${line#*:} (src/$room is below the model: what it" \
                    "needs of one comes as data or a callback)"
                bad=$((bad + 1))
            done < <(grep -nE '\bvkf_(model|session|sampler)(_[a-z0-9_]+[[:space:]]*\(|\b)' "$f" ||
                true)
        fi
    done < <(find "src/$room" -name '*.[ch]' | sort)
done
for d in src/*/; do
    d="${d%/}"
    d="${d#src/}"
    case "$d" in cli | serve | frontend) continue ;; esac
    [ -n "${below[$d]:-}" ] || {
        echo "layers: src/$d: a room tests/check_layers.sh does not place (add it to 'below')"
        bad=$((bad + 1))
    }
done

echo "$n files checked, $bad arrows pointing up"
[ "$bad" -eq 0 ]
