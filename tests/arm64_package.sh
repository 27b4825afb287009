#!/usr/bin/env bash
# The arm64 Debian packages (tests/arm64.sh; cmake/packaging.cmake): `cpack -G DEB` of the aarch64
# cross build. Checked: the three packages are written with Architecture: arm64; each holds the
# files it should (the CLI, its manual page and completion; libvkformer.so.0; the headers, static
# library, .pc files and CMake package), every ELF file in them is an aarch64 one, and every
# library those files link belongs to a package named in their Depends (dpkg-shlibdeps on the
# arm64 libraries of Debian's multiarch, in its aarch64-linux-gnu directories). Not checked
# here: installing and running them (tests/package_deb.sh does that for amd64, in a root of this
# machine; an arm64 install needs an arm64 root).
#   tests/arm64_package.sh ARM64_BUILD
set -euo pipefail
build="$(cd "$1" && pwd)"
fail() { echo "arm64_package: $*" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$build" && cpack -G DEB -B "$tmp/debs" >"$tmp/cpack.log" 2>&1) || {
    cat "$tmp/cpack.log" >&2
    fail "cpack -G DEB failed"
}
for p in vkformer libvkformer0 libvkformer-dev; do
    deb="$(ls "$tmp"/debs/${p}_*_arm64.deb 2>/dev/null)" || fail "no ${p}_*_arm64.deb: cpack wrote $(ls "$tmp/debs")"
    arch="$(dpkg-deb -f "$deb" Architecture)"
    [ "$arch" = arm64 ] || fail "$p: Architecture: $arch"
    files="$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')"
    case $p in
    vkformer) want=(/usr/bin/vkformer /usr/share/man/man1/vkformer.1.gz /usr/share/bash-completion/completions/vkformer) ;;
    libvkformer0) want=("/usr/lib/libvkformer.so.0") ;;
    libvkformer-dev) want=(/usr/include/vkformer.h /usr/lib/libvkformer.a /usr/lib/libvkformer.so
                           /usr/lib/pkgconfig/vkformer.pc /usr/lib/cmake/vkformer/vkformerConfig.cmake) ;;
    esac
    for f in "${want[@]}"; do
        grep -qx "$f" <<<"$files" || fail "$p: $f is not in the package; it holds:
$files"
    done
    echo "arm64_package: $(basename "$deb"): Architecture: arm64, ${#want[@]} files checked"
    echo "  Depends: $(dpkg-deb -f "$deb" Depends)"
done

# every ELF file aarch64; every library it links in Depends (libc6's loader aside, as package_deb)
for deb in "$tmp"/debs/*.deb; do
    x="$tmp/x/$(basename "$deb")"
    mkdir -p "$x"
    dpkg-deb -x "$deb" "$x"
    names="$(dpkg-deb -f "$deb" Depends | tr ',|' '\n\n' | sed 's/^ *//; s/[ :].*//')"
    while IFS= read -r f; do
        file -b "$f" | grep -q "ARM aarch64" || fail "$(basename "$deb"): ${f#"$x"} is $(file -b "$f")"
        for so in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            path=""
            for d in /lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu; do
                [ -e "$d/$so" ] && path="$d/$so" && break
            done
            [ -n "$path" ] || fail "$(basename "$deb"): ${f#"$x"} needs $so, which has no arm64 build here"
            pkg="$( (dpkg -S "$path" || dpkg -S "$(readlink -f "$path")") 2>/dev/null |
                grep -v '^diversion' | head -1 | cut -d: -f1 || true)"
            [ -n "$pkg" ] || fail "$so ($path) belongs to no Debian package here"
            grep -qx "$pkg" <<<"$names" || fail "$(basename "$deb"): ${f#"$x"} needs $so ($pkg), not in Depends"
        done
    done < <(find "$x" -type f -exec sh -c '[ "$(head -c4 "$1" | tail -c3)" = ELF ]' _ {} \; -print)
done
echo "arm64_package: every linked library in Depends"
