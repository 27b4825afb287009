#!/usr/bin/env bash
# vkformer set-up: installs the Debian packages it needs (when missing), configures, builds, and
# then runs one of:
#   ./setup.sh run    the main job: generate text with the model shipped in models/ on the
#                     default device (first discrete GPU, else integrated, else lavapipe)
#   ./setup.sh test   the test suite (op harness on Vulkan vs CPU, models vs fixtures, ...)
#   ./setup.sh build  set up and build only
# Environment: BUILD_DIR (default build), VKF_WERROR=ON|OFF (default ON for test).
set -euo pipefail
cd "$(dirname "$0")"
mode="${1:-run}"
shift || true

packages=(cmake make gcc g++ pkg-config libvulkan-dev libvulkan-volk-dev glslang-dev glslang-tools
          spirv-tools mesa-vulkan-drivers vulkan-validationlayers libcjson-dev)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "setup: installing ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    else
        echo "setup: missing Debian packages; run as root:" >&2
        echo "  sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
fi

build="${BUILD_DIR:-build}"
werror="${VKF_WERROR:-ON}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKF_WERROR="$werror" >/dev/null
cmake --build "$build" -j"$(nproc)" >&2

case "$mode" in
build) ;;
run)
    if [ -d models/kjv-gpt ]; then
        exec "$build/vkformer" generate -m models/kjv-gpt -p "${*:-And God said}" -n 200 --temp 0.8 --seed 42
    else
        "$build/vkformer" devices
        exec "$build/vkformer" selftest --quick
    fi
    ;;
test)
    exec ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
    ;;
*)
    echo "usage: ./setup.sh [run|test|build]" >&2
    exit 2
    ;;
esac
