#!/usr/bin/env bash
# The installed package (issue 28.5): what `./setup.sh run` builds is all `cmake --install` needs
# (checked against CMake's own view of the targets, its file API); the build installs into a
# temporary prefix (not /usr/local), and examples/hello and examples/simple build against it
# three ways: find_package(vkformer), pkg-config (the shared library, no --define-variable: the
# .pc file names the prefix it was installed to) and pkg-config --static (libvkformer.a: the binary needs no
# libvkformer.so); then they run. examples/simple generates with models/kjv-gpt on the CPU
# fallback or a device.
set -euo pipefail
build="$1"; src="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fail() { echo "install: $*" >&2; exit 1; }

# ---- ./setup.sh run's targets cover the install rules: every installed target is one of them or
# something they depend on (CMake's file API; the build writes the query, the next configure
# answers it)
run_targets="$(sed -n 's/^run_targets=(\(.*\))$/\1/p' "$src/setup.sh")"
[ -n "$run_targets" ] || fail "setup.sh names no run_targets"
reply="$build/.cmake/api/v1/reply"
ls "$reply"/index-*.json >/dev/null 2>&1 || cmake "$build" >/dev/null
python3 - "$reply" $run_targets <<'EOF' || exit 1
import glob, json, os, sys
reply, run = sys.argv[1], sys.argv[2:]
index = json.load(open(sorted(glob.glob(os.path.join(reply, "index-*.json")))[-1]))
cm = next(o for o in index["objects"] if o["kind"] == "codemodel")
model = json.load(open(os.path.join(reply, cm["jsonFile"])))
targets = {}
for t in model["configurations"][0]["targets"]:
    targets[t["id"]] = json.load(open(os.path.join(reply, t["jsonFile"])))
by_name = {t["name"]: t for t in targets.values()}
missing = [n for n in run if n not in by_name]
if missing:
    sys.exit("install: setup.sh's run_targets %s are not targets" % missing)
built, todo = set(), [by_name[n]["id"] for n in run]
while todo:
    i = todo.pop()
    if i in built:
        continue
    built.add(i)
    todo += [d["id"] for d in targets[i].get("dependencies", [])]
installed = sorted(t["name"] for t in targets.values() if "install" in t)
left = [n for n in installed if by_name[n]["id"] not in built]
if not installed or left:
    sys.exit("install: cmake --install needs %s, which ./setup.sh run (%s) does not build"
             % (left or "nothing?", " ".join(run)))
print("install: ./setup.sh run builds every installed target (%s)" % ", ".join(installed))
EOF

prefix="$tmp/prefix"
# the prefix spelled with "//", "/./" and a trailing slash: the .pc files name it normalized
cmake --install "$build" --prefix "$tmp//./prefix/" >/dev/null
pcfile="$(find "$prefix" -name vkformer.pc)"
pcdir="$(dirname "$pcfile")"
libdir="$(dirname "$pcdir")"
export PKG_CONFIG_PATH="$pcdir"
# the .pc file names the prefix it was installed to (--prefix), not the configured one
[ "$(pkg-config --variable=libdir vkformer)" -ef "$libdir" ] || fail "libdir $(pkg-config --variable=libdir vkformer) is not $libdir"
grep -qx "prefix=$prefix" "$pcfile" || fail "vkformer.pc does not name prefix=$prefix: $(grep '^prefix=' "$pcfile")"
grep -q '/usr/local' "$pcfile" && fail "vkformer.pc names /usr/local"
# every path in the flags is plain and absolute (no "//", "/./", "/../"), also when
# PKG_CONFIG_PATH ends with a slash (the rpath is no -L that pkg-config cleans up itself)
for pcp in "$pcdir" "$pcdir/"; do
    flags="$(PKG_CONFIG_PATH="$pcp" pkg-config --cflags --libs vkformer) $(PKG_CONFIG_PATH="$pcp" pkg-config --static --cflags --libs vkformer)"
    case "$flags" in *//*|*/./*|*/../*) fail "pkg-config flags not normalized (PKG_CONFIG_PATH=$pcp): $flags" ;; esac
    case "$flags" in *"-Wl,-rpath,$libdir "*) ;; *) fail "no -rpath to $libdir (PKG_CONFIG_PATH=$pcp): $flags" ;; esac
done
needs_so() { readelf -d "$1" | grep 'NEEDED' | grep -q 'libvkformer\.so'; }
for ex in hello simple; do
    cmake -S "$src/examples/$ex" -B "$tmp/$ex" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
    cmake --build "$tmp/$ex" >/dev/null
    # shellcheck disable=SC2046
    cc -o "$tmp/${ex}_pc" "$src/examples/$ex/main.c" $(pkg-config --cflags --libs vkformer)
    needs_so "$tmp/${ex}_pc" || fail "${ex}_pc (pkg-config --libs) does not link libvkformer.so"
    # static: pkg-config --static alone, as README says (libvkformer.a and what it needs)
    # shellcheck disable=SC2046
    cc -o "$tmp/${ex}_static" "$src/examples/$ex/main.c" $(pkg-config --cflags --static --libs vkformer)
    if needs_so "$tmp/${ex}_static" || ldd "$tmp/${ex}_static" | grep -q libvkformer; then
        fail "${ex}_static (pkg-config --static --libs) links libvkformer.so: $(readelf -d "$tmp/${ex}_static" | grep NEEDED)"
    fi
done
# the static binaries run without the shared library anywhere they could find it; the others
# find it in the prefix without LD_LIBRARY_PATH (pkg-config's -rpath, CMake's build RPATH)
unset LD_LIBRARY_PATH
"$tmp/hello_static" | grep -q "context on cpu" || fail "hello_static"
"$tmp/hello/hello" | grep -q "context on cpu" || fail "hello (find_package) does not run"
"$tmp/hello_pc" | grep -q "context on cpu" ||
    fail "hello_pc (pkg-config --libs) does not run without LD_LIBRARY_PATH: $("$tmp/hello_pc" 2>&1 | head -1)"
# simple: the prompt, then streamed text, on stdout; timings on stderr
for exe in "$tmp/simple/simple" "$tmp/simple_pc" "$tmp/simple_static"; do
    "$exe" "$src/models/kjv-gpt" "And God said" >"$tmp/out" 2>"$tmp/err"
    grep -q "^And God said" "$tmp/out" || fail "$exe printed: $(cat "$tmp/out")"
    [ "$(wc -c <"$tmp/out")" -gt 30 ] || fail "$exe generated nothing"
    grep -q "generated [0-9]* tokens" "$tmp/err" || fail "$exe: no timings: $(cat "$tmp/err")"
done
echo "installed package: find_package, pkg-config and pkg-config --static builds of examples/hello and examples/simple run (the static ones without libvkformer.so)"
