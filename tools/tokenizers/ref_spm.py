#!/usr/bin/env python3
"""Records Debian's python3-sentencepiece ids and decodes for the test corpus and the 1 MiB text
(spm_bpe, spm_unigram), and the character-level reference (char: one id per code point looked
up in char_vocab.json, unk for the others; decode joins the tokens, skips control tokens and
renders unk as U+FFFD, the rule documented in src/tokenizer/tokenizer.h).

Writes DATA_DIR/<kind>/expected.json in the format of ref_hf.js: "ids" are encoded with
add_bos=True (what encode(add_special = 1) does for a .model file), "ids_plain" without.

Usage: /usr/bin/python3 tools/tokenizers/ref_spm.py DATA_DIR BIG_TXT"""
import json
import os
import struct
import sys

import sentencepiece as spm


INVALID = b"ok \xff\xfe then \xc3 and \xe2\x82 end \x80 \xf0\x9f\x98"


def fnv1a64(ids):
    h = 0xCBF29CE484222325
    for b in struct.pack("<%di" % len(ids), *ids):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def write(path, out, corpus_ids):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(out, separators=(",", ":")).replace("],[", "],\n[") + "\n")


def main():
    data, big_path = sys.argv[1], sys.argv[2]
    with open(os.path.join(data, "corpus.json"), encoding="utf-8") as f:
        corpus = json.load(f)
    with open(big_path, encoding="utf-8") as f:
        big = f.read()
    for kind in ("spm_bpe", "spm_unigram"):
        sp = spm.SentencePieceProcessor(model_file=os.path.join(data, kind, "tokenizer.model"))
        out = {"reference": "python3-sentencepiece " + spm.__version__, "ids": [], "ids_plain": [],
               "decoded": []}
        for s in corpus:
            out["ids"].append(sp.encode(s, add_bos=True))
            plain = sp.encode(s)
            out["ids_plain"].append(plain)
            out["decoded"].append(sp.decode(plain))
        # invalid UTF-8: the library takes bytes too (each invalid byte becomes U+FFFD)
        out["invalid"] = {"hex": INVALID.hex(), "ids": sp.encode(INVALID),
                          "decoded": sp.decode(sp.encode(INVALID))}
        b = sp.encode(big)
        out["big"] = {"bytes": len(big.encode("utf-8")), "n_ids": len(b), "fnv1a64": fnv1a64(b)}
        write(os.path.join(data, kind, "expected.json"), out, None)
        print("%s: %d corpus ids, 1 MiB text: %d ids" % (kind, sum(map(len, out["ids"])), len(b)))

    # char: the vocabulary is every character of seed.txt plus four specials
    with open(os.path.join(data, "char", "char_vocab.json"), encoding="utf-8") as f:
        cv = json.load(f)
    toks = cv["tokens"]
    specials = {cv.get(k, -1) for k in ("bos", "eos", "pad", "unk")} - {-1}
    index = {t: i for i, t in enumerate(toks) if i not in specials}
    unk = cv["unk"]
    # the named specials are cut out of the text first, longest first (src/tokenizer/tokenizer.h)
    names = sorted(((toks[i], i) for i in specials), key=lambda p: (-len(p[0]), p[1]))

    def encode_char(s):
        for name, i in names:
            if name in s:
                parts = s.split(name)
                out = encode_char(parts[0])
                for p in parts[1:]:
                    out += [i] + encode_char(p)
                return out
        return [index.get(c, unk) for c in s]

    out = {"reference": "tools/tokenizers/ref_spm.py (one id per code point)", "ids": [],
           "ids_plain": [], "decoded": []}
    for s in corpus:
        ids = encode_char(s)
        out["ids"].append(ids)
        out["ids_plain"].append(ids)
        out["decoded"].append("".join("\ufffd" if i == unk else toks[i] for i in ids
                                      if i == unk or i not in specials))
    b = encode_char(big)
    out["big"] = {"bytes": len(big.encode("utf-8")), "n_ids": len(b), "fnv1a64": fnv1a64(b)}
    write(os.path.join(data, "char", "expected.json"), out, None)
    print("char: %d corpus ids, 1 MiB text: %d ids" % (sum(map(len, out["ids"])), len(b)))


if __name__ == "__main__":
    main()
