#!/usr/bin/env python3
"""vkformer perplexity against llama-perplexity's procedure run on the pinned llama.cpp.

Usage: test_perplexity.py CLI SOURCE_DIR FIXTURES_DIR

- PPL and its error on three tiny f32 models of the reference sets (llama-tiny: BOS added;
  gpt2-tiny: no BOS; arch/gemma3: BOS, sliding window) on the committed text
  bench/data/kjv-genesis.txt, against tools/perplexity_ref.py (libllama's logits, numpy's
  log-softmax): the token count, chunk count, scored count and BOS agree exactly, the running
  value after each chunk and the final PPL within the bound below. The text report prints the
  same numbers as --json.
- --kl-divergence-base writes llama-perplexity's file format: this test parses it from that
  layout (header, tokens = llama.cpp's tokens, one row of nv uint16 per scored position) and
  decodes the rows to llama.cpp's log-softmax within the format's quantization step.
- A run against its own base: KL divergence 0 (within the format's quantization, bound below),
  same top token 100 %, PPL(Q) = PPL(base); a file without the model record (as
  llama-perplexity writes it) is read with a notice.
- Ctrl-C: exit 130, no base file left. Bad input, each a clear error, exit 1 and no file left
  behind: a text shorter than two chunks (the counts named), a base file from another model
  (named) or context size, a truncated or foreign file, a directory, unreadable -f, a -f that is
  not the base run's text.
"""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

CLI, SRC, FIX = sys.argv[1:4]
TEXT = os.path.join(SRC, "bench", "data", "kjv-genesis.txt")
sys.path.insert(0, os.path.join(SRC, "tools"))
import perplexity_ref  # noqa: E402

FAILS = []

# Both engines compute these f32 models' logits on the CPU in f32; they differ by ~1e-5..1e-4
# (summation order; gemma3's GELU comes from vkformer's f16 table), so the mean negative
# log-likelihood, an average of log-softmax values, differs by about as much. 1e-3 in ln PPL
# leaves room for that and is far below what a wrong scored row or a missing BOS changes
# (O(0.1) on these random models: each token's NLL differs by O(1)).
LN_PPL_BOUND = 1e-3
# the format stores log-probs as uint16 steps of scale = (max - min_logit) / 65535 <= 16/65535
# (min_logit >= max - 16): each is off by at most half a step, 1.23e-4, so a run's KL
# divergence against its own base is bounded by that (the base's p sums to 1 within the same
# step); 2.5e-4 also covers float rounding
KLD_SELF_BOUND = 2.5e-4


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


def run(*args, stdin=None):
    r = subprocess.run([CLI, "perplexity", *args], capture_output=True, text=True, input=stdin)
    return r.returncode, r.stdout, r.stderr


def ppl_json(model, *extra):
    rc, out, err = run("-m", model, "-f", TEXT, "--cpu", "--json", *extra)
    check(rc == 0, f"perplexity {model} {extra}: exit {rc}: {err}")
    return json.loads(out) if rc == 0 else None


def check_against_llama_cpp(model, n_ctx, n_chunks):
    name = os.path.basename(model)
    with open(TEXT, encoding="utf-8") as f:
        ref = perplexity_ref.perplexity(model, f.read(), n_ctx, n_chunks)
    got = ppl_json(model, "-c", str(n_ctx), "--chunks", str(n_chunks))
    if not got:
        return
    for k in ("n_tokens", "n_chunks", "n_scored", "add_bos"):
        check(got[k] == ref[k], f"{name}: {k} {got[k]}, llama.cpp {ref[k]}")
    d = abs(np.log(got["ppl"]) - np.log(ref["ppl"]))
    check(d < LN_PPL_BOUND, f"{name}: PPL {got['ppl']}, llama.cpp {ref['ppl']} (ln diff {d:.2e})")
    check(abs(got["ppl_error"] / ref["ppl_error"] - 1) < 1e-2,
          f"{name}: error {got['ppl_error']}, llama.cpp {ref['ppl_error']}")
    for i, (a, b) in enumerate(zip(got["chunks"], ref["chunks"])):
        check(abs(np.log(a / b)) < LN_PPL_BOUND, f"{name}: chunk {i + 1}: {a}, llama.cpp {b}")
    print(f"{name}: PPL {got['ppl']:.4f} +/- {got['ppl_error']:.4f}, llama.cpp "
          f"{ref['ppl']:.4f} +/- {ref['ppl_error']:.4f} (BOS {got['add_bos']})", flush=True)
    return ref


def read_base(path):
    with open(path, "rb") as f:
        data = f.read()
    check(data[:8] == b"_logits_", f"{path}: magic {data[:8]!r}")
    n_ctx, n_vocab, n_chunk = struct.unpack_from("<3i", data, 8)
    toks = np.frombuffer(data, dtype="<i4", count=n_chunk * n_ctx, offset=20)
    nv = 2 * ((n_vocab + 1) // 2) + 4
    n_rows = n_chunk * (n_ctx - 1 - n_ctx // 2)
    at = 20 + 4 * n_chunk * n_ctx
    rows = np.frombuffer(data, dtype="<u2", count=n_rows * nv, offset=at).reshape(n_rows, nv)
    return n_ctx, n_vocab, n_chunk, toks, rows, data[at + 2 * n_rows * nv:]


def main():
    llama = os.path.join(FIX, "llama-tiny", "llama-tiny-f32.gguf")
    gpt2 = os.path.join(FIX, "gpt2-tiny", "gpt2-tiny-f32.gguf")
    gemma = os.path.join(FIX, "arch", "gemma3-f32.gguf")
    ref = check_against_llama_cpp(llama, 64, 6)
    check_against_llama_cpp(gpt2, 64, 4)
    check_against_llama_cpp(gemma, 48, 4)

    # ---- the text report: llama-perplexity's lines, the same numbers as --json
    rc, out, err = run("-m", llama, "-f", TEXT, "--cpu", "-c", "64", "--chunks", "6", "-b", "16")
    check(rc == 0, f"text report: exit {rc}: {err}")
    m = re.fullmatch(r"((?:\[\d+\]\d+\.\d{4},){6})\nFinal estimate: PPL = (\d+\.\d{4}) \+/- "
                     r"(\d+\.\d{5})\n", out)
    check(m is not None, f"text report: {out!r}")
    if m and ref:
        vals = [float(v) for v in re.findall(r"\[\d+\](\d+\.\d{4}),", m.group(1))]
        check(all(abs(np.log(a / b)) < LN_PPL_BOUND for a, b in zip(vals, ref["chunks"])),
              f"text report (-b 16): running values {vals}, llama.cpp {ref['chunks']}")
        check(abs(np.log(float(m.group(2)) / ref["ppl"])) < LN_PPL_BOUND,
              f"text report: final {m.group(2)}, llama.cpp {ref['ppl']}")
    check("6 chunks of 64 (31 scored each)" in err, f"counts on stderr: {err}")
    check("perplexity [" not in err, "a progress bar on stderr that is not a terminal")

    # ---- on a terminal: the progress bar on stderr, cleared; stdout stays the report
    master, slave = os.openpty()
    p = subprocess.Popen([CLI, "perplexity", "-m", llama, "-f", TEXT, "--cpu", "-c", "64",
                          "--chunks", "3", "-b", "8"], stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    tty = b""
    while True:
        try:
            b = os.read(master, 4096)
        except OSError:  # EIO: the other side closed
            break
        if not b:
            break
        tty += b
    out = p.stdout.read().decode()
    p.wait()
    os.close(master)
    tty = tty.decode(errors="replace")
    check(p.returncode == 0 and re.search(r"perplexity \[[#.]{30}\] +\d+% \d+/192 tokens", tty)
          and "\r\x1b[K" in tty, f"progress on a terminal: {tty!r}")
    check(out.startswith("[1]") and "\x1b" not in out, f"stdout beside a terminal: {out!r}")

    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base.kld")
        # ---- the base file: llama-perplexity's layout, llama.cpp's tokens and log-probs
        got = ppl_json(llama, "-c", "64", "--chunks", "6", "--kl-divergence-base", base)
        check(os.path.isfile(base), "the base file was not written")
        if not os.path.isfile(base):
            return
        n_ctx, n_vocab, n_chunk, toks, rows, tail = read_base(base)
        check((n_ctx, n_vocab, n_chunk) == (64, 512, 6), f"header {n_ctx, n_vocab, n_chunk}")
        check(ref is not None and list(toks) == ref["tokens"][:n_chunk * n_ctx],
              "the base file's tokens are not llama.cpp's tokenization of the text")
        check(tail.startswith(b"_vkfmeta") and b"architecture=llama" in tail,
              f"the model record after the rows: {tail[:80]!r}")
        if ref is not None:
            lr = perplexity_ref.llama_cpp_build.runner("avx2")
            max_err = 0.0
            for c in range(n_chunk):
                chunk = list(ref["tokens"][c * n_ctx:(c + 1) * n_ctx])
                chunk[0] = perplexity_ref.add_bos(lr, llama)[1]
                lg, _ = lr.logits(llama, chunk, n_greedy=0, n_ctx=n_ctx)
                lg = lg[n_ctx // 2:n_ctx - 1].astype(np.float64)
                lsm = lg - lg.max(1, keepdims=True)
                lsm -= np.log(np.exp(lsm).sum(1, keepdims=True))
                r = rows[c * (n_ctx - 1 - n_ctx // 2):(c + 1) * (n_ctx - 1 - n_ctx // 2)]
                hdr = r[:, :4].copy().view("<f4")  # scale, min_log_prob per row
                dec = hdr[:, 1:2] + hdr[:, 0:1] * r[:, 4:4 + n_vocab]
                above = lsm > hdr[:, 1:2] + hdr[:, 0:1]  # entries not floored at the minimum
                max_err = max(max_err, float(np.abs(dec - lsm)[above].max()))
            # half a quantization step (<= 1.23e-4) plus the engines' logit difference (1e-4)
            check(max_err < 3e-4, f"decoded base rows vs llama.cpp's log-softmax: {max_err:.2e}")

        # ---- a run against its own base
        rc, out, err = run("-m", llama, "--cpu", "--json", "--kl-divergence",
                           "--kl-divergence-base", base)
        check(rc == 0, f"--kl-divergence: exit {rc}: {err}")
        if rc == 0:
            k = json.loads(out)
            check(abs(k["kld"]["mean"]) < KLD_SELF_BOUND and abs(k["kld"]["max"]) < KLD_SELF_BOUND
                  and abs(k["kld"]["min"]) < KLD_SELF_BOUND, f"self KL divergence: {k['kld']}")
            check(k["same_top_p"] == 1.0, f"self same top p: {k['same_top_p']}")
            check(k["n_scored"] == 6 * 31, f"self: {k['n_scored']} scored")
            check(abs(np.log(k["ppl"] / got["ppl"])) < 1e-6, f"PPL(Q) {k['ppl']} vs {got['ppl']}")
            check(abs(k["ln_ppl_ratio"]) < KLD_SELF_BOUND, f"ln ratio {k['ln_ppl_ratio']}")
        # the text report: llama-perplexity's table and sections
        rc, out, err = run("-m", llama, "--cpu", "-f", TEXT, "--kl-divergence",
                           "--kl-divergence-base", base)
        check(rc == 0 and "Same top p: 100.000" in out and "Mean    KLD:" in out
              and "Maximum KLD:" in out and "99.9%   KLD:" in out, f"KL text report: {out}{err}")
        # a file as llama-perplexity writes it (no record): read, with a notice
        with open(base, "rb") as f:
            data = f.read()
        plain = os.path.join(tmp, "plain.kld")
        with open(plain, "wb") as f:
            f.write(data[:len(data) - len(tail)])
        rc, out, err = run("-m", llama, "--cpu", "--json", "--kl-divergence",
                           "--kl-divergence-base", plain)
        check(rc == 0 and "no model record" in err and json.loads(out)["same_top_p"] == 1.0,
              f"a file without the record: exit {rc}: {err}")

        # ---- bad input
        def refused(args, want, what):
            rc, out, err = run(*args)
            check(rc == 1 and re.search(want, err) is not None,
                  f"{what}: exit {rc}, stderr {err!r} (expected /{want}/)")

        short = os.path.join(tmp, "short.txt")
        with open(short, "w") as f:
            f.write("In the beginning God created the heaven and the earth.\n")
        nofile = os.path.join(tmp, "never.kld")
        refused(["-m", llama, "--cpu", "-f", short, "-c", "64", "--kl-divergence-base", nofile],
                r"tokenizes to only \d+ tokens; a context of 64 needs at least 128", "short text")
        check(not os.listdir(tmp).count("never.kld") and
              not any(n.startswith("never.kld.tmp") for n in os.listdir(tmp)),
              f"a failed base run left a file: {os.listdir(tmp)}")
        refused(["-m", gpt2, "--cpu", "--kl-divergence", "--kl-divergence-base", base],
                r"base\.kld was made by another model \(llama-tiny-f32\.gguf\)", "another model")
        refused(["-m", gemma, "--cpu", "--kl-divergence", "--kl-divergence-base", base],
                r"another model", "another model (gemma3)")
        refused(["-m", llama, "--cpu", "-c", "32", "--kl-divergence", "--kl-divergence-base",
                 base], r"made with a context of 64 tokens, -c asks for 32", "context size")
        trunc = os.path.join(tmp, "trunc.kld")
        with open(trunc, "wb") as f:
            f.write(data[:len(data) // 2])
        refused(["-m", llama, "--cpu", "--kl-divergence", "--kl-divergence-base", trunc],
                r"trunc\.kld: truncated", "truncated base file")
        refused(["-m", llama, "--cpu", "--kl-divergence", "--kl-divergence-base", TEXT],
                r"not a file of log-probabilities", "a text as the base file")
        refused(["-m", llama, "--cpu", "--kl-divergence", "--kl-divergence-base", tmp],
                r"is a directory", "a directory as the base file")
        refused(["-m", llama, "--cpu", "--kl-divergence", "--kl-divergence-base", nofile],
                r"never\.kld: No such file", "a missing base file")
        refused(["-m", llama, "--cpu", "-f", os.path.join(tmp, "nope.txt")],
                r"-f .*nope\.txt: No such file", "a missing text")
        other = os.path.join(tmp, "other.txt")
        with open(other, "w") as f:
            f.write("And it came to pass. " * 400)
        refused(["-m", llama, "--cpu", "-f", other, "--kl-divergence", "--kl-divergence-base",
                 base], r"is not the text of the base run", "another text in KL mode")
        refused(["-m", llama, "--cpu", "-f", TEXT, "--kl-divergence-base",
                 os.path.join(tmp, "no", "dir.kld"), "-c", "64", "--chunks", "2"],
                r"dir\.kld: No such file", "an unwritable base path")
        # Ctrl-C: exit 130, said so, the base file not left half-written (24 chunks of 512 take
        # several seconds; the handler is in place before the model loads)
        intr = os.path.join(tmp, "intr.kld")
        p = subprocess.Popen([CLI, "perplexity", "-m", llama, "-f", TEXT, "--cpu", "-c", "512",
                              "--kl-divergence-base", intr], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate()
        check(p.returncode == 130 and "interrupted at chunk" in err,
              f"Ctrl-C: exit {p.returncode}, stderr {err!r}")
        check(not [n for n in os.listdir(tmp) if n.startswith("intr.kld")],
              f"Ctrl-C left a base file: {os.listdir(tmp)}")
        rc, out, err = run("-m", llama, "--kl-divergence")
        check(rc == 2 and "--kl-divergence-base" in err, f"--kl-divergence alone: {rc} {err}")
        rc, out, err = run("--help")
        check(rc == 0 and "--kl-divergence-base" in out, "perplexity --help")

    if FAILS:
        print(f"{len(FAILS)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
