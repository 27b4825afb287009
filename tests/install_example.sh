#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds examples/hello against it with
# find_package(vkformer) and with pkg-config, then runs both.
set -euo pipefail
build="$1"; src="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/examples/hello" -B "$tmp/hello" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/hello" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib/x86_64-linux-gnu" "$tmp/hello/hello"
pcdir=$(dirname "$(find "$tmp/prefix" -name vkformer.pc)")
cc -o "$tmp/hello_pc" "$src/examples/hello/main.c" $(PKG_CONFIG_PATH="$pcdir" pkg-config --define-variable=prefix="$tmp/prefix" --cflags --libs vkformer)
LD_LIBRARY_PATH="$(dirname "$pcdir")" "$tmp/hello_pc" | grep -q "context on cpu"
echo "installed package: find_package and pkg-config builds run"
