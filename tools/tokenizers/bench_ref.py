#!/usr/bin/env python3
"""Single-thread encode speed of python3-sentencepiece on the 1 MiB text (spm_bpe,
spm_unigram): the reference numbers of bench/RESULTS.md. The library encodes one string on one
thread.

Usage: /usr/bin/python3 tools/tokenizers/bench_ref.py DATA_DIR BIG_TXT"""
import os
import sys
import time

import sentencepiece as spm


def main():
    data, big_path = sys.argv[1], sys.argv[2]
    with open(big_path, encoding="utf-8") as f:
        big = f.read()
    n = len(big.encode("utf-8"))
    for kind in ("spm_bpe", "spm_unigram"):
        sp = spm.SentencePieceProcessor(model_file=os.path.join(data, kind, "tokenizer.model"))
        sp.encode(big)
        best = min(timeit(sp, big) for _ in range(3))
        print("%-16s%8.2f MB/s" % (kind, n / 1e6 / best))


def timeit(sp, text):
    t0 = time.perf_counter()
    sp.encode(text)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
