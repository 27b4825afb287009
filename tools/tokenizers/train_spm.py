#!/usr/bin/env python3
"""Trains the two small SentencePiece models of the tokenizer tests with Debian's
python3-sentencepiece on the King James Bible (see kjv.py):

  tests/data/tokenizers/spm_bpe/tokenizer.model      model_type=bpe, vocab 1000, byte_fallback
  tests/data/tokenizers/spm_unigram/tokenizer.model  model_type=unigram, vocab 1000, user-defined <mask>

Both keep the default normalization (nmt_nfkc with its precompiled charsmap), dummy prefix
and extra-whitespace removal: what models people download have.

Usage: /usr/bin/python3 tools/tokenizers/train_spm.py [repository root]"""
import os
import sys
import tempfile

import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kjv import write_training_text  # noqa: E402


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    out = os.path.join(root, "tests", "data", "tokenizers")
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "kjv.txt")
        write_training_text(text)
        common = dict(input=text, vocab_size=1000, num_threads=1, character_coverage=1.0,
                      input_sentence_size=0, shuffle_input_sentence=False, minloglevel=2)
        spm.SentencePieceTrainer.train(model_prefix=os.path.join(tmp, "spm_bpe"),
                                       model_type="bpe", byte_fallback=True, **common)
        spm.SentencePieceTrainer.train(model_prefix=os.path.join(tmp, "spm_unigram"),
                                       model_type="unigram", user_defined_symbols=["<mask>"],
                                       **common)
        for name in ("spm_bpe", "spm_unigram"):
            with open(os.path.join(tmp, name + ".model"), "rb") as f:
                data = f.read()
            os.makedirs(os.path.join(out, name), exist_ok=True)
            with open(os.path.join(out, name, "tokenizer.model"), "wb") as f:
                f.write(data)
            print("%s.model: %d bytes" % (name, len(data)))


if __name__ == "__main__":
    main()
