#!/bin/sh
# Regenerates everything under tests/data/tokenizers/: the corpus and seed text, the trained
# tokenizers (SentencePiece with python3-sentencepiece, tokenizer.json with the npm `tokenizers`
# package) and the reference ids (expected.json per kind).
#
# Needs: bible-kjv (Debian), python3-sentencepiece (Debian, /usr/bin/python3), node + the npm
# package `tokenizers` installed OUTSIDE the repository:
#     mkdir -p /tmp/tokref && cd /tmp/tokref && npm install tokenizers
# Usage: sh tools/tokenizers/make_data.sh [TOKREF=/tmp/tokref/node_modules/tokenizers]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data="$root/tests/data/tokenizers"
export TOKREF="${TOKREF:-/tmp/tokref/node_modules/tokenizers}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

/usr/bin/python3 "$here/make_corpus.py" "$root"
/usr/bin/python3 "$here/make_char_vocab.py" "$root"
/usr/bin/python3 "$here/train_spm.py" "$root"
/usr/bin/python3 -c "import sys; sys.path.insert(0, '$here'); import kjv; kjv.write_training_text('$tmp/kjv.txt')"
node "$here/train_hf.js" "$tmp/kjv.txt" "$data"
/usr/bin/python3 "$here/big_text.py" "$data/seed.txt" "$tmp/big.txt"
node "$here/ref_hf.js" "$data" "$tmp/big.txt"
/usr/bin/python3 "$here/ref_spm.py" "$data" "$tmp/big.txt"
du -sh "$data"
