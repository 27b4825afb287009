#!/usr/bin/env bash
# The Debian packages (issue 44.4; cmake/packaging.cmake): `cpack -G DEB` of this build, installed
# with dpkg itself into a root of their own, used, and removed again.
#
# The root: a copy-on-write view of this machine (overlayfs over /, its writes on a tmpfs) in a
# mount namespace of this test, entered with chroot. So dpkg -i checks the packages' Depends
# against the packages really installed, runs their maintainer scripts (ldconfig), and puts the
# files in /usr, where the programs, man, pkg-config and CMake find them as on a user's machine;
# nothing reaches the machine itself. The build tree and the source tree are hidden there (an
# empty tmpfs over each): the installed files alone have to do the work. Then dpkg -P, and what the
# packages wrote is read off the overlay's upper layer: nothing may be left but dpkg's own
# records and the caches its triggers refresh (ldconfig's, man-db's). (dpkg -x into a directory would check none of this: no
# dependencies, no scripts, no search paths, no removal.) It needs mount namespaces: root, as CI
# runs (./setup.sh installs Debian packages), or an unprivileged user namespace where the kernel
# lets one mount an overlay of /.
#
# In the root: the CLI package alone (its Depends met, no libvkformer0) runs `vkformer generate`
# on models/kjv-gpt, man finds its page (every command's help, as the program prints it, without
# groff warnings) and the bash completion completes; then libvkformer0 and libvkformer-dev, and
# examples/hello and examples/simple build against /usr three ways (find_package, pkg-config,
# pkg-config --static) and run. Every library the programs and libvkformer.so.0 link is in their
# package's Depends (dpkg-shlibdeps).
set -euo pipefail
build="$(cd "$1" && pwd)"; src="$(cd "$2" && pwd)"
fail() { echo "package_deb: $*" >&2; exit 1; }

if [ "${VKF_PKG_INSIDE:-}" != 1 ]; then
    tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
    t0=$SECONDS
    (cd "$build" && cpack -G DEB -B "$tmp/debs" >"$tmp/cpack.log" 2>&1) || {
        cat "$tmp/cpack.log" >&2; fail "cpack -G DEB failed"; }
    rm -rf "$tmp/debs/_CPack_Packages"
    ls "$tmp"/debs/vkformer_*.deb "$tmp"/debs/libvkformer0_*.deb "$tmp"/debs/libvkformer-dev_*.deb >/dev/null ||
        fail "cpack wrote $(ls "$tmp/debs")"
    echo "package_deb: cpack -G DEB: $(cd "$tmp/debs" && ls *.deb | tr '\n' ' ')($((SECONDS - t0)) s)"

    # Depends: every NEEDED library of the packaged ELF files belongs to a package named in
    # Depends (libc6's loader aside)
    ldconfig -p >"$tmp/ldconfig" # once, and read whole (an early exit of its reader would fail the pipe)
    for deb in "$tmp"/debs/*.deb; do
        x="$tmp/x/$(basename "$deb")"; mkdir -p "$x"; dpkg-deb -x "$deb" "$x"
        depends="$(dpkg-deb -f "$deb" Depends)"
        names="$(echo "$depends" | tr ',|' '\n\n' | sed 's/^ *//; s/ .*//')" # package names
        while IFS= read -r f; do
            for so in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
                path="$(awk -v so="$so" '$1 == so && /x86-64|AArch64/ && !p {print $NF; p = 1}' "$tmp/ldconfig")"
                [ -n "$path" ] || fail "$(basename "$deb"): $f needs $so, which this machine does not have"
                # (the path ldconfig names, else the file it links to: /lib is /usr/lib's link)
                pkg="$( (dpkg -S "$path" || dpkg -S "$(readlink -f "$path")") 2>/dev/null |
                    grep -v '^diversion' | head -1 | cut -d: -f1 || true)"
                [ -n "$pkg" ] || fail "$so ($path) belongs to no Debian package here"
                grep -qx "$pkg" <<<"$names" ||
                    fail "$(basename "$deb"): ${f#"$x"} needs $so ($pkg), not in Depends: $depends"
            done
        done < <(find "$x" -type f -exec sh -c '[ "$(head -c4 "$1" | tail -c3)" = ELF ]' _ {} \; -print)
    done
    rm -rf "$tmp/x"

    if [ "$(id -u)" -eq 0 ]; then ns=(unshare --mount --propagation private);
    else ns=(unshare --user --map-root-user --mount --propagation private); fi
    "${ns[@]}" true 2>/dev/null || fail "cannot make a mount namespace (${ns[*]}): run as root, as CI does"
    VKF_PKG_INSIDE=1 VKF_PKG_TMP="$tmp" "${ns[@]}" "$0" "$build" "$src"
    exit $?
fi

# ---- in the mount namespace: the root
tmp="$VKF_PKG_TMP"; w="$tmp/w"; root="$w/root"
mkdir -p "$w"
mount -t tmpfs tmpfs "$w"
mkdir -p "$w/upper" "$w/work" "$root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$w/upper,workdir=$w/work" "$root" 2>"$tmp/mount.err" ||
    fail "cannot mount an overlay of / ($(cat "$tmp/mount.err")): run as root, as CI does"
for d in proc sys dev; do mount --rbind "/$d" "$root/$d"; done
mount -t tmpfs tmpfs "$root/tmp" # the work area, not the overlay's: what it holds is no package's
# out of reach (a tree under /tmp is gone with the tmpfs above already: its mount point is made
# in that tmpfs, so the mount hides nothing and cannot fail)
for d in "$build" "$src"; do mkdir -p "$root$d" && mount -t tmpfs tmpfs "$root$d"; done
mkdir -p "$root/tmp/work/debs" "$root/tmp/work/models" "$root/tmp/work/cache"
cp "$tmp"/debs/*.deb "$root/tmp/work/debs/"
cp -r "$src/models/kjv-gpt" "$root/tmp/work/models/"
cp -r "$src/examples" "$root/tmp/work/"
cat >"$root/tmp/work/inside.sh" <<'EOF'
set -euo pipefail
fail() { echo "package_deb: $*" >&2; exit 1; }
cd /tmp/work
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp/work
export XDG_CACHE_HOME=/tmp/work/cache
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH VKFORMER_LIBRARY
dpkg -s vkformer >/dev/null 2>&1 && fail "vkformer is installed on this machine already"
stage() { echo "package_deb: $1 (${SECONDS} s)"; }

# the CLI alone (its manual page even where dpkg's configuration leaves manual pages out, as
# Debian's slim container images do: path-exclude=/usr/share/man/*)
dpkg --path-include='/usr/share/man/man1/vkformer.1.gz' -i debs/vkformer_*.deb >dpkg.log 2>&1 || {
    cat dpkg.log >&2; fail "dpkg -i vkformer"; }
[ "$(command -v vkformer)" = /usr/bin/vkformer ] || fail "vkformer is $(command -v vkformer)"
vkformer generate -m models/kjv-gpt -p "And God said" -n 40 --temp 0 >out 2>err ||
    fail "vkformer generate: $(cat err)"
grep -q "^And God said" out && [ "$(wc -c <out)" -gt 40 ] || fail "vkformer generate printed: $(cat out)"
# the manual page: man finds it, groff has nothing to say, and it holds each command's help
MANWIDTH=200 man vkformer >man.txt 2>man.err || fail "man vkformer: $(cat man.err)"
zcat /usr/share/man/man1/vkformer.1.gz | preconv | groff -man -Tutf8 -ww -z 2>groff.err
[ ! -s groff.err ] || fail "groff warns about vkformer.1: $(head -3 groff.err)"
python3 - <<'PY' || exit 1
import gzip, re, subprocess, sys
page = gzip.open("/usr/share/man/man1/vkformer.1.gz", "rt").read()
def text(roff):  # the .nf blocks' text as the program printed it
    roff = re.sub(r"(?m)^\\&", "", roff)
    return roff.replace("\\-", "-").replace("\\e", "\\")
top = subprocess.run(["vkformer", "--help"], capture_output=True, text=True, check=True).stdout
cmds = re.findall(r"(?m)^  ([a-z]+) ", top.split("\ncommands:\n")[1].split("\n\n")[0])
assert len(cmds) > 10, cmds
for c in cmds:
    help_ = subprocess.run(["vkformer", "help", c], capture_output=True, text=True, check=True).stdout
    m = re.search(r"(?ms)^\.SS %s\n.*?^\.nf\n(.*?)^\.fi\n" % c, page)
    if not m or text(m.group(1)) != help_:
        sys.exit("package_deb: vkformer.1's section %s is not `vkformer help %s`" % (c, c))
print("package_deb: vkformer.1 holds the help of %d commands" % len(cmds))
PY
grep -q "OpenAI-compatible HTTP server" man.txt || fail "man vkformer does not render the commands"
# bash completion (bash-completion's directory: loaded on demand where that package is installed)
got="$(bash -c '. /usr/share/bash-completion/completions/vkformer
    COMP_WORDS=(vkformer gen); COMP_CWORD=1; _vkformer; echo "${COMPREPLY[*]}"
    COMP_WORDS=(vkformer generate --top-); COMP_CWORD=2; _vkformer; echo "${COMPREPLY[*]}"')"
[ "$got" = "$(printf 'generate\n--top-k --top-p')" ] || fail "bash completion: $got"
stage "vkformer installed alone: generate, man, completion"

# the library and its development files
dpkg -i debs/libvkformer0_*.deb debs/libvkformer-dev_*.deb >dpkg.log 2>&1 || {
    cat dpkg.log >&2; fail "dpkg -i libvkformer0 libvkformer-dev"; }
pc="$(pkg-config --variable=pcfiledir vkformer)"
[ "$pc" = /usr/lib/pkgconfig ] || [ "$pc" = "/usr/lib/$(gcc -print-multiarch)/pkgconfig" ] ||
    fail "pkg-config finds vkformer.pc in $pc, not the package's"
stage "libvkformer0 and libvkformer-dev installed"
cfg="$(dirname "$(dpkg -L libvkformer-dev | grep '/vkformerConfig.cmake$')")"
for ex in hello simple; do
    cmake -S "examples/$ex" -B "b_$ex" -Dvkformer_DIR="$cfg" >cmake.log 2>&1 &&
        cmake --build "b_$ex" >>cmake.log 2>&1 || { cat cmake.log >&2; fail "examples/$ex (find_package)"; }
    # shellcheck disable=SC2046
    cc -o "${ex}_pc" "examples/$ex/main.c" $(pkg-config --cflags --libs vkformer) || fail "${ex}_pc"
    # shellcheck disable=SC2046
    cc -o "${ex}_static" "examples/$ex/main.c" $(pkg-config --cflags --static --libs vkformer) || fail "${ex}_static"
done
# (/lib is /usr/lib on a merged-/usr system: ldconfig may name either)
stage "examples built"
ldd b_simple/simple >ldd.txt
grep -Eq "libvkformer\.so\.0 => (/usr)?/lib/" ldd.txt || fail "simple links $(grep vkformer ldd.txt)"
ldd simple_static >ldd.txt
grep -q libvkformer ldd.txt && fail "simple_static links libvkformer.so"
for exe in b_hello/hello hello_pc hello_static; do
    "./$exe" >out 2>err || fail "$exe: $(cat err)"
    grep -q "context on cpu" out || fail "$exe printed: $(cat out)"
done
for exe in b_simple/simple simple_pc simple_static; do
    "./$exe" models/kjv-gpt "And God said" >out 2>err || fail "$exe: $(cat err)"
    grep -q "^And God said" out && [ "$(wc -c <out)" -gt 30 ] || fail "$exe printed: $(cat out)"
done

stage "examples ran"
# removal
dpkg -P vkformer libvkformer-dev libvkformer0 >dpkg.log 2>&1 || { cat dpkg.log >&2; fail "dpkg -P"; }
[ ! -e /usr/bin/vkformer ] || fail "dpkg -P left /usr/bin/vkformer"
echo "package_deb: installed (dpkg -i), ran vkformer generate, man, the completion and the examples (find_package, pkg-config, --static), removed (dpkg -P)"
EOF
chroot "$root" /bin/bash /tmp/work/inside.sh
# what the packages left: the upper layer holds every file written under / (the work area is a
# tmpfs of its own); directories the machine has already are the overlay's copies, not leftovers
left="$(cd "$w/upper" && find . -mindepth 1 \( -type d -exec test -d "/{}" \; -o -print \) |
    grep -v -e '^\./var/lib/dpkg/' -e '^\./var/log/dpkg\.log$' -e '^\./etc/ld\.so\.cache$' \
        -e '^\./var/cache/ldconfig\(/\|$\)' -e '^\./var/cache/man/' -e '^\./var/lib/dpkg$' || true)"
[ -z "$left" ] || fail "after dpkg -P, the packages left: $(echo "$left" | head -20 | tr '\n' ' ')"
echo "package_deb: nothing left after removal but dpkg's records and the ldconfig and man-db caches"
