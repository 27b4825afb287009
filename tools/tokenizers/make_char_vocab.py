#!/usr/bin/env python3
"""Writes tests/data/tokenizers/char/char_vocab.json: <pad> <bos> <eos> <unk>, then every
distinct character of the first 2000 KJV verses in code point order (see kjv.py).

Usage: python3 tools/tokenizers/make_char_vocab.py [repository root]"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kjv import kjv_verses  # noqa: E402


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    chars = sorted(set("\n".join(kjv_verses()[:2000]) + "\n"))
    vocab = {"type": "char", "tokens": ["<pad>", "<bos>", "<eos>", "<unk>"] + chars,
             "pad": 0, "bos": 1, "eos": 2, "unk": 3, "add_bos": False, "add_eos": False}
    out = os.path.join(root, "tests", "data", "tokenizers", "char")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "char_vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
        f.write("\n")
    print("char: %d tokens" % len(vocab["tokens"]))


if __name__ == "__main__":
    main()
