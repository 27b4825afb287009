#!/usr/bin/env python3
"""Writes tests/data/tokenizers/t5_gguf/vocab.gguf: the SentencePiece Unigram model of
tests/data/tokenizers/spm_unigram/tokenizer.model as a vocab-only GGUF with
tokenizer.ggml.model = "t5", as llama.cpp's converter writes T5 vocabularies (tokens, scores,
token types, the normalizer's precompiled charsmap, add_space_prefix, remove_extra_whitespaces,
the special ids). The .model is read with a small protobuf reader (standard library only).

The test compares this GGUF's ids with the sentencepiece library's ids of spm_unigram
(expected.json): llama.cpp's UGM tokenizer reproduces sentencepiece's Unigram encoding.

Usage: python3 tools/tokenizers/make_t5_gguf.py [repository root]
"""
import os
import struct
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
data = os.path.join(root, "tests", "data", "tokenizers")


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        elif w == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % w)
        yield f, w, v


model = open(os.path.join(data, "spm_unigram", "tokenizer.model"), "rb").read()
pieces, norm, trainer = [], {}, {}
for f, w, v in fields(model):
    if f == 1:
        p = {"piece": b"", "score": 0.0, "type": 1}
        for f2, w2, v2 in fields(v):
            if f2 == 1:
                p["piece"] = bytes(v2)
            elif f2 == 2:
                p["score"] = struct.unpack("<f", v2)[0]
            elif f2 == 3:
                p["type"] = v2
        pieces.append(p)
    elif f == 2:
        trainer = {f2: v2 for f2, w2, v2 in fields(v) if w2 == 0}
    elif f == 3:
        norm = {f2: v2 for f2, w2, v2 in fields(v)}

U8, U32, I32, F32, BOOL, STR, ARR = 0, 4, 5, 6, 7, 8, 9


def s(x):
    x = x.encode() if isinstance(x, str) else x
    return struct.pack("<Q", len(x)) + x


def kv(key, t, payload):
    return s(key) + struct.pack("<I", t) + payload


def i32(v):  # trainer ids are int32 varints (-1 is sign-extended to 64 bits)
    return v - (1 << 64) if v >= 1 << 63 else v


kvs = [
    kv("general.architecture", STR, s("t5")),
    kv("general.name", STR, s("spm_unigram as t5")),
    kv("tokenizer.ggml.model", STR, s("t5")),
    kv("tokenizer.ggml.tokens", ARR, struct.pack("<IQ", STR, len(pieces)) + b"".join(s(p["piece"]) for p in pieces)),
    kv("tokenizer.ggml.scores", ARR, struct.pack("<IQ", F32, len(pieces)) + b"".join(struct.pack("<f", p["score"]) for p in pieces)),
    kv("tokenizer.ggml.token_type", ARR, struct.pack("<IQ", I32, len(pieces)) + b"".join(struct.pack("<i", p["type"]) for p in pieces)),
    kv("tokenizer.ggml.add_space_prefix", BOOL, struct.pack("<B", norm.get(3, 1))),
    kv("tokenizer.ggml.remove_extra_whitespaces", BOOL, struct.pack("<B", norm.get(4, 1))),
]
cmap = bytes(norm.get(2, b""))
if cmap:
    kvs.append(kv("tokenizer.ggml.precompiled_charsmap", ARR, struct.pack("<IQ", U8, len(cmap)) + cmap))
for field, key, default in ((40, "unknown", 0), (41, "bos", 1), (42, "eos", 2), (43, "padding", -1)):
    v = i32(trainer.get(field, default))
    if v >= 0:
        kvs.append(kv("tokenizer.ggml.%s_token_id" % key, U32, struct.pack("<I", v)))
out_dir = os.path.join(data, "t5_gguf")
os.makedirs(out_dir, exist_ok=True)
with open(os.path.join(out_dir, "vocab.gguf"), "wb") as f:
    f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))
print("%d pieces, charsmap %d bytes" % (len(pieces), len(cmap)))
