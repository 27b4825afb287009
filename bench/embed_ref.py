#!/usr/bin/env python3
"""Embeddings per second of the references on the same CPU and the same sentences as
`vkformer bench --embedding` (which writes them with --sentences FILE):

  sentence-transformers  SentenceTransformer(MODEL_DIR).encode(sentences[:B]) with its default
                         batch_size 32 and torch's default threads (every CPU)
  llama.cpp              llama-embedding -m GGUF -f FILE (the first B lines), mean pooling,
                         L2 normalization, -t THREADS; its own "prompt eval time" (llama_perf,
                         --perf) is the time, so loading the model is not counted

Each size runs once untimed, then -r times; prints a markdown table (mean ± sample sd).
Needs sentence-transformers + torch outside the repository (tools/make_embed_fixtures.py says
how) and llama.cpp's examples/embedding.

usage: embed_ref.py --sentences FILE [--model-dir DIR] [--llama-embedding BIN --gguf FILE]
                    [-b 1,32,256] [-r 5] [-t THREADS]"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time


def row(name, b, tok, xs):
    m = statistics.mean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    print("| %s | %d | %.1f | %.2f ± %.2f | %.0f |" % (name, b, tok, m, sd, m * tok))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentences", required=True)
    ap.add_argument("--model-dir")
    ap.add_argument("--llama-embedding")
    ap.add_argument("--gguf")
    ap.add_argument("-b", default="1,32,256")
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("-t", type=int, default=os.cpu_count())
    a = ap.parse_args()
    sizes = [int(x) for x in a.b.split(",")]
    tok_st = {}  # tokens per sentence by sentence-transformers' tokenizer (same WordPiece)
    sent = [l.rstrip("\n") for l in open(a.sentences)]
    print("<!-- %s, load %.2f on %d CPUs -->" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                                 os.getloadavg()[0], os.cpu_count()))
    print("| reference | sentences | tokens | embeddings/s | tokens/s |\n|---|---:|---:|---:|---:|")
    if a.model_dir:
        import torch
        from sentence_transformers import SentenceTransformer
        m = SentenceTransformer(a.model_dir, device="cpu")
        name = "sentence-transformers (torch %s, %d threads)" % (torch.__version__,
                                                                 torch.get_num_threads())
        for b in sizes:
            tok = tok_st[b] = float(m.tokenize(sent[:b])["attention_mask"].sum()) / b
            m.encode(sent[:b])
            xs = []
            for _ in range(a.r):
                t0 = time.perf_counter()
                m.encode(sent[:b])
                xs.append(b / (time.perf_counter() - t0))
            row(name, b, tok, xs)
    if a.llama_embedding:
        for b in sizes:
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
                f.write("\n".join(sent[:b]) + "\n")
            xs, tok = [], 0
            for r in range(a.r + 1):
                t0 = time.perf_counter()
                p = subprocess.run([a.llama_embedding, "-m", a.gguf, "-f", f.name, "--pooling",
                                    "mean", "--embd-normalize", "2", "-t", str(a.t), "-b", "16384",
                                    "-ub", "16384", "-c", "16384", "--perf", "-lv", "4",
                                    "--embd-output-format", "array"],
                                   capture_output=True, text=True, check=True)
                wall = time.perf_counter() - t0
                mt = re.search(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens", p.stderr)
                ml = re.search(r"load time =\s*([\d.]+) ms", p.stderr)
                if not mt or not ml:
                    raise SystemExit("no llama_perf times in llama-embedding's output:\n" +
                                     p.stderr[-2000:])
                # its prompt eval time counts one batch only when the inputs take several:
                # the process's wall time less its model load time instead
                ms = max(float(mt.group(1)), wall * 1e3 - float(ml.group(1)))
                if r:  # the first run is the warm-up
                    xs.append(b * 1e3 / ms)
                tok = int(mt.group(2)) / b  # (a lower bound when it counted one batch only)
            os.unlink(f.name)
            row("llama.cpp llama-embedding (CPU, %d threads)" % a.t, b, tok_st.get(b, tok), xs)


if __name__ == "__main__":
    main()
