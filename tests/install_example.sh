#!/usr/bin/env bash
# Installs the build into a temporary prefix (not /usr/local) and builds examples/hello and
# examples/simple against it three ways: find_package(vkformer), pkg-config (shared library,
# no --define-variable: the .pc file is relocatable) and pkg-config --static (libvkformer.a);
# then runs them. examples/simple generates with models/kjv-gpt on the CPU fallback or a device.
set -euo pipefail
build="$1"; src="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
pcfile="$(find "$prefix" -name vkformer.pc)"
pcdir="$(dirname "$pcfile")"
libdir="$(dirname "$pcdir")"
export PKG_CONFIG_PATH="$pcdir"
# the .pc file names the prefix it is in, wherever that is
[ "$(pkg-config --variable=libdir vkformer)" -ef "$libdir" ] || { echo "install: libdir $(pkg-config --variable=libdir vkformer) is not $libdir" >&2; exit 1; }
grep -q '/usr/local' "$pcfile" && { echo "install: vkformer.pc names /usr/local" >&2; exit 1; }
for ex in hello simple; do
    cmake -S "$src/examples/$ex" -B "$tmp/$ex" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
    cmake --build "$tmp/$ex" >/dev/null
    # shellcheck disable=SC2046
    cc -o "$tmp/${ex}_pc" "$src/examples/$ex/main.c" $(pkg-config --cflags --libs vkformer)
    # static: libvkformer.a and its Requires.private / Libs.private
    static_libs="$(pkg-config --static --libs vkformer | sed "s#-lvkformer#$libdir/libvkformer.a#")"
    # shellcheck disable=SC2086
    cc -o "$tmp/${ex}_static" "$src/examples/$ex/main.c" $(pkg-config --cflags vkformer) $static_libs
    if ldd "$tmp/${ex}_static" | grep -q libvkformer; then echo "install: ${ex}_static links libvkformer.so" >&2; exit 1; fi
done
export LD_LIBRARY_PATH="$libdir"
"$tmp/hello/hello" | grep -q "context on cpu"
"$tmp/hello_pc" | grep -q "context on cpu"
"$tmp/hello_static" | grep -q "context on cpu"
# simple: the prompt, then streamed text, on stdout; timings on stderr
for exe in "$tmp/simple/simple" "$tmp/simple_pc" "$tmp/simple_static"; do
    "$exe" "$src/models/kjv-gpt" "And God said" >"$tmp/out" 2>"$tmp/err"
    grep -q "^And God said" "$tmp/out" || { echo "install: $exe printed: $(cat "$tmp/out")" >&2; exit 1; }
    [ "$(wc -c <"$tmp/out")" -gt 30 ] || { echo "install: $exe generated nothing" >&2; exit 1; }
    grep -q "generated [0-9]* tokens" "$tmp/err" || { echo "install: $exe: no timings: $(cat "$tmp/err")" >&2; exit 1; }
done
echo "installed package: find_package, pkg-config and pkg-config --static builds of examples/hello and examples/simple run"
