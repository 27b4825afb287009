#!/usr/bin/python3
"""Train the encoder-decoder Transformer shipped in models/dates-transformer.

Task (synthetic, character level): a date written in words -> its ISO form, e.g.
  "the third of march, nineteen ninety-nine" -> "1999-03-03"
  "mar 3, 2024" / "3rd of march 1999" / "march third, two thousand and five" -> ...
Years 1900-2099, eight surface forms, several ways to say a year in words.

The model is the one of the seed-transformer sets' README.md (tools/refs/make_seed_transformer.py):
stock nn.Transformer (batch_first, post-LN, ReLU), embeddings scaled by sqrt(d_model),
sinusoidal positions computed in float64 then rounded to float32, a generator Linear.
Output directory (same layout as seed-transformer-tiny):

  config.json, model.safetensors (F32, PyTorch state_dict names)
  src_vocab.json, tgt_vocab.json  {"type": "char", "tokens": [...], "pad": 0, "bos": 1, "eos": 2, "unk": 3}
  expected.json                   held-out accuracy + 6 cases with greedy outputs
  expected_<k>.encoder_out.f32    float32 LE [T_src, d_model] (after the final encoder norm)
  expected_<k>.logprobs.f32       float32 LE [len(greedy)-1, tgt_vocab], teacher-forced on greedy

Sources are the characters followed by eos (no bos); targets are bos, characters, eos.
1500 dates are held out entirely (never trained on, in any form); the held-out set is
one random form of each. Run from the repository root:
  /usr/bin/python3 tools/train_seq2seq.py        (900 steps, 7-11 minutes on one thread)
"""

import argparse
import datetime
import json
import math
import os
import random
import sys
import time

# the BLAS thread pool is sized when the library loads: cap it before importing torch
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_gpt import (SPECIALS, PAD, BOS, EOS, UNK, char_vocab_json, first_argmax,  # noqa: E402
                       json_dump, read_safetensors, top2_margin, write_safetensors)

# ---------------------------------------------------------------------------
# the task: dates in words
# ---------------------------------------------------------------------------

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
ORD_ONES = ["zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
            "ninth", "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth",
            "sixteenth", "seventeenth", "eighteenth", "nineteenth"]
ORD_TENS = {20: "twentieth", 30: "thirtieth"}
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]
MONTH_ABBR = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
N_FORMS = 8


def words_0_99(n):
    if n < 20:
        return ONES[n]
    t, o = divmod(n, 10)
    return TENS[t] if o == 0 else TENS[t] + "-" + ONES[o]


def ordinal_words(n):
    if n < 20:
        return ORD_ONES[n]
    t, o = divmod(n, 10)
    return ORD_TENS[n] if o == 0 else TENS[t] + "-" + ORD_ONES[o]


def ordinal_suffix(n):
    if 11 <= n % 100 <= 13:
        return "%dth" % n
    return "%d%s" % (n, {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th"))


def year_words(y, rng):
    hi, lo = divmod(y, 100)
    if y < 2000:
        if lo == 0:
            return "nineteen hundred"
        if lo < 10:
            return "nineteen oh " + ONES[lo]
        return "nineteen " + words_0_99(lo)
    if lo == 0:
        return "two thousand"
    ways = ["two thousand and " + words_0_99(lo), "two thousand " + words_0_99(lo)]
    if lo >= 10:
        ways.append("twenty " + words_0_99(lo))
    else:
        ways.append("twenty oh " + ONES[lo])
    return rng.choice(ways)


def date_text(date, form, rng):
    d, m, y = date.day, date.month - 1, date.year
    if form == 0:
        return "the %s of %s, %s" % (ordinal_words(d), MONTHS[m], year_words(y, rng))
    if form == 1:
        return "%s %s %d" % (MONTHS[m], ordinal_suffix(d), y)
    if form == 2:
        return "%d %s %d" % (d, MONTHS[m], y)
    if form == 3:
        return "%s %s, %s" % (MONTHS[m], ordinal_words(d), year_words(y, rng))
    if form == 4:
        return "%s %d, %d" % (MONTH_ABBR[m], d, y)
    if form == 5:
        return "%s of %s %d" % (ordinal_suffix(d), MONTHS[m], y)
    if form == 6:
        return "%s %s %d" % (ordinal_words(d), MONTHS[m], y)
    if form == 7:
        return "%s %d, %s" % (MONTHS[m], d, year_words(y, rng))
    raise ValueError(form)


def all_dates():
    d, end, out = datetime.date(1900, 1, 1), datetime.date(2099, 12, 31), []
    while d <= end:
        out.append(d)
        d += datetime.timedelta(days=1)
    return out


SRC_CHARS = sorted(set("abcdefghijklmnopqrstuvwxyz0123456789 ,-"))
TGT_CHARS = sorted(set("0123456789-"))

# ---------------------------------------------------------------------------
# the model (exactly the seed-transformer definition)
# ---------------------------------------------------------------------------


def sinusoidal_pe(max_len, d):
    pos = np.arange(max_len, dtype=np.float64)[:, None]
    i2 = np.arange(0, d, 2, dtype=np.float64)[None, :]
    ang = pos / np.power(10000.0, i2 / d)
    pe = np.zeros((max_len, d), dtype=np.float64)
    pe[:, 0::2] = np.sin(ang)
    pe[:, 1::2] = np.cos(ang)
    return torch.from_numpy(pe.astype(np.float32))


class Seq2Seq(nn.Module):
    def __init__(self, cfg, dropout=0.0):
        super().__init__()
        d = cfg["d_model"]
        self.src_embed = nn.Embedding(cfg["src_vocab_size"], d)
        self.tgt_embed = nn.Embedding(cfg["tgt_vocab_size"], d)
        self.transformer = nn.Transformer(
            d_model=d, nhead=cfg["nhead"], num_encoder_layers=cfg["num_encoder_layers"],
            num_decoder_layers=cfg["num_decoder_layers"], dim_feedforward=cfg["dim_feedforward"],
            dropout=dropout, activation=cfg["activation"], layer_norm_eps=cfg["layer_norm_eps"],
            batch_first=True, norm_first=False)
        self.generator = nn.Linear(d, cfg["tgt_vocab_size"])
        self.scale = math.sqrt(d)
        self.register_buffer("pe", sinusoidal_pe(cfg["max_len"], d), persistent=False)
        # embeddings ~ N(0, d^-1/2) so that emb * sqrt(d) has unit scale, like the PE
        nn.init.normal_(self.src_embed.weight, 0.0, d ** -0.5)
        nn.init.normal_(self.tgt_embed.weight, 0.0, d ** -0.5)

    def embed(self, table, ids):
        return table(ids) * self.scale + self.pe[: ids.shape[1]]

    def encode(self, src, src_pad=None):
        return self.transformer.encoder(self.embed(self.src_embed, src), src_key_padding_mask=src_pad)

    def decode_logprobs(self, ys, memory, src_pad=None):
        T = ys.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        out = self.transformer.decoder(self.embed(self.tgt_embed, ys), memory, tgt_mask=causal,
                                       memory_key_padding_mask=src_pad)
        return F.log_softmax(self.generator(out), dim=-1)

    def forward(self, src, src_pad, tgt_in):
        T = tgt_in.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        out = self.transformer(self.embed(self.src_embed, src), self.embed(self.tgt_embed, tgt_in),
                               tgt_mask=causal, src_key_padding_mask=src_pad,
                               memory_key_padding_mask=src_pad)
        return self.generator(out)


# ---------------------------------------------------------------------------
# batches and decoding
# ---------------------------------------------------------------------------

def encode_src(text, stoi):
    return [stoi.get(c, UNK) for c in text] + [EOS]


def encode_tgt(text, stoi):
    return [BOS] + [stoi[c] for c in text] + [EOS]


def pad_batch(seqs):
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
    lengths = torch.tensor([len(s) for s in seqs])
    return ids, torch.arange(T)[None, :] >= lengths[:, None]  # True = padding


@torch.no_grad()
def greedy_batch(model, src_ids, src_pad, max_steps):
    """Batched greedy decode for the accuracy count: full decoder re-run per step."""
    memory = model.encode(src_ids, src_pad)
    ys = torch.full((src_ids.shape[0], 1), BOS, dtype=torch.long)
    for _ in range(max_steps):
        lp = model.decode_logprobs(ys, memory, src_pad)[:, -1]
        ys = torch.cat([ys, lp.argmax(-1, keepdim=True)], 1)
    return ys


def strip_decoded(row, tgt_tokens):
    out = []
    for t in row[1:]:
        if t == EOS:
            return "".join(out)
        out.append(tgt_tokens[t] if t >= len(SPECIALS) else "?")
    return None  # no eos


def accuracy(model, examples, src_stoi, tgt_tokens, bs=250):
    model.eval()
    ok, by_form = 0, [[0, 0] for _ in range(N_FORMS)]
    for i in range(0, len(examples), bs):
        chunk = examples[i: i + bs]
        src, pad = pad_batch([encode_src(s, src_stoi) for s, _, _ in chunk])
        ys = greedy_batch(model, src, pad, 11).tolist()
        for (s, t, f), row in zip(chunk, ys):
            hit = strip_decoded(row, tgt_tokens) == t
            ok += hit
            by_form[f][0] += hit
            by_form[f][1] += 1
    model.train()
    return ok / len(examples), [a / max(1, n) for a, n in by_form]


def greedy_reference(model, src, max_steps):
    """The README's greedy decode for one row: no padding, full decoder each step, float32,
    autograd left on (as for the seed fixtures: PyTorch's inference fast path stays off)."""
    memory = model.encode(torch.tensor([src]))
    ys, margins, lps = [BOS], [], []
    for _ in range(max_steps):
        lp = model.decode_logprobs(torch.tensor([ys]), memory)[0, -1].detach().numpy()
        t = first_argmax(lp)
        margins.append(top2_margin(lp))
        lps.append(float(lp[t]))
        ys.append(t)
        if t == EOS:
            break
    return ys, margins, lps, memory[0].detach().numpy()


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="models/dates-transformer")
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--nhead", type=int, default=4)
    ap.add_argument("--layers", type=int, default=3, help="encoder layers = decoder layers")
    ap.add_argument("--ff", type=int, default=256)
    ap.add_argument("--steps", type=int, default=900)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--chunks", type=int, default=4, help="length-sorted chunks per batch")
    ap.add_argument("--eval-every", type=int, default=150)
    ap.add_argument("--n-heldout", type=int, default=1500)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=4321)
    ap.add_argument("--time-limit-min", type=float, default=25.0)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)

    src_tokens, tgt_tokens = SPECIALS + SRC_CHARS, SPECIALS + TGT_CHARS
    src_stoi = {c: i for i, c in enumerate(src_tokens) if i >= len(SPECIALS)}
    tgt_stoi = {c: i for i, c in enumerate(tgt_tokens) if i >= len(SPECIALS)}

    dates = all_dates()
    rng.shuffle(dates)
    held_dates, train_dates = dates[: args.n_heldout], dates[args.n_heldout:]
    heldout = []
    for k, d in enumerate(held_dates):
        f = k % N_FORMS
        heldout.append((date_text(d, f, rng), d.isoformat(), f))
    max_src = max(len(date_text(d, f, random.Random(0))) for d in dates[:2000] for f in range(N_FORMS))
    print("dates: %d train, %d held out; longest source about %d chars"
          % (len(train_dates), len(held_dates), max_src), flush=True)

    cfg = {
        "architecture": "transformer",
        "d_model": args.d_model,
        "nhead": args.nhead,
        "num_encoder_layers": args.layers,
        "num_decoder_layers": args.layers,
        "dim_feedforward": args.ff,
        "activation": "relu",
        "layer_norm_eps": 1e-5,
        "norm_first": False,
        "src_vocab_size": len(src_tokens),
        "tgt_vocab_size": len(tgt_tokens),
        "max_len": 128,
        "positional_encoding": "sinusoidal",
        "embedding_scale": math.sqrt(args.d_model),
        "pad_id": PAD,
        "bos_id": BOS,
        "eos_id": EOS,
    }
    model = Seq2Seq(cfg, dropout=args.dropout)
    n_params = sum(p.numel() for p in model.parameters())
    print("params %d (%.2f MB as F32)" % (n_params, n_params * 4 / 1e6), flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.01)

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        p = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * p)))

    log, stopped_early, step = [], False, 0
    t_train = time.time()
    model.train()
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        batch = [rng.choice(train_dates) for _ in range(args.batch)]
        pairs = [(encode_src(date_text(d, rng.randrange(N_FORMS), rng), src_stoi),
                  encode_tgt(d.isoformat(), tgt_stoi)) for d in batch]
        # sources range from 13 to ~60 chars: sorting by length and running the batch in
        # chunks (gradients accumulated) gives the full batch's gradient with less padding
        pairs.sort(key=lambda p: len(p[0]))
        opt.zero_grad(set_to_none=True)
        loss_sum = 0.0
        per = math.ceil(len(pairs) / args.chunks)
        for c in range(0, len(pairs), per):
            part = pairs[c: c + per]
            src, pad = pad_batch([p[0] for p in part])
            tgt = torch.tensor([p[1] for p in part])  # every target is bos + 10 chars + eos
            logits = model(src, pad, tgt[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1),
                                   reduction="sum") / tgt[:, 1:].numel() * (len(part) / len(pairs))
            loss.backward()
            loss_sum += loss.item()
        loss = torch.tensor(loss_sum)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0:
            print("step %5d  loss %.4f  lr %.2e  %.0fs" % (step, loss.item(), lr_at(step), time.time() - t_train),
                  flush=True)
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            acc, _ = accuracy(model, heldout[:500], src_stoi, tgt_tokens)
            log.append({"step": step + 1, "loss": round(loss.item(), 5), "heldout500_acc": acc})
            print("eval step %d: held-out exact match (first 500) %.4f" % (step + 1, acc), flush=True)
        if time.time() - t_start > args.time_limit_min * 60:
            stopped_early = True
            print("time limit reached after %d steps: stopping early (result not reproducible)" % (step + 1))
            break
    train_minutes = (time.time() - t_train) / 60
    model.eval()

    # ---- export (F32, PyTorch state_dict names; the PE buffer is not stored) ----
    sd = model.state_dict()
    st_path = os.path.join(args.out, "model.safetensors")
    write_safetensors(st_path, [(n, t.numpy().astype(np.float32)) for n, t in sd.items()])
    json_dump(os.path.join(args.out, "config.json"), cfg)
    json_dump(os.path.join(args.out, "src_vocab.json"), char_vocab_json(src_tokens))
    json_dump(os.path.join(args.out, "tgt_vocab.json"), char_vocab_json(tgt_tokens))

    # ---- reload from the file into a fresh model (dropout 0), check it is bit-identical ----
    loaded = read_safetensors(st_path)
    ref = Seq2Seq(cfg, dropout=0.0)
    ref.load_state_dict({n: torch.from_numpy(a.copy()) for n, a in loaded.items()})
    ref.eval()
    assert all(torch.equal(sd[n], ref.state_dict()[n]) for n in sd)

    acc, acc_forms = accuracy(ref, heldout, src_stoi, tgt_tokens)
    print("held-out exact match: %.4f on %d examples (per form: %s)"
          % (acc, len(heldout), " ".join("%.3f" % a for a in acc_forms)), flush=True)

    # ---- expected cases: one held-out example per form, margin >= 5e-3 ----
    ref64 = Seq2Seq(cfg, dropout=0.0).double()
    ref64.load_state_dict({n: torch.from_numpy(a.astype(np.float64)) for n, a in loaded.items()})
    ref64.eval()
    cases, want_forms = [], [0, 1, 2, 3, 4, 7]
    for f in want_forms:
        for s, t, ff in heldout[len(heldout) // 2:]:
            if ff != f:
                continue
            src = encode_src(s, src_stoi)
            ys, margins, lps, memory = greedy_reference(ref, src, 20)
            if strip_decoded(ys, tgt_tokens) != t or min(margins) < 5e-3:
                continue
            ys64, _, _, _ = greedy_reference(ref64, src, 20)
            if ys64 != ys:
                continue
            k = len(cases)
            mem_ref = ref.encode(torch.tensor([src]))[0].detach().numpy()
            lp_tf = ref.decode_logprobs(torch.tensor([ys[:-1]]), ref.encode(torch.tensor([src])))[0].detach().numpy()
            lp64 = ref64.decode_logprobs(torch.tensor([ys[:-1]]), ref64.encode(torch.tensor([src])))[0].detach().numpy()
            assert [first_argmax(r) for r in lp_tf] == ys[1:]
            enc_file, lp_file = "expected_%d.encoder_out.f32" % k, "expected_%d.logprobs.f32" % k
            mem_ref.astype("<f4").tofile(os.path.join(args.out, enc_file))
            lp_tf.astype("<f4").tofile(os.path.join(args.out, lp_file))
            cases.append({
                "source": s,
                "src_tokens": src,
                "target": t,
                "greedy": ys,
                "decoded": strip_decoded(ys, tgt_tokens),
                "greedy_logprobs": lps,
                "greedy_margins": [round(m, 6) for m in margins],
                "greedy_min_margin": min(margins),
                "encoder_out": enc_file,
                "encoder_out_shape": list(mem_ref.shape),
                "logprobs": lp_file,
                "logprobs_shape": list(lp_tf.shape),
                "logprobs_max_abs_diff_vs_float64": float(np.abs(lp_tf - lp64).max()),
            })
            break
    if len(cases) != len(want_forms):
        raise SystemExit("could not find held-out cases for every form with margin >= 5e-3")

    expected = {
        "description": "PyTorch 1.13 float32, weights as stored (F32). src_tokens = char ids + eos. "
                       "greedy: the seed-transformer README's decode (one row, no padding, full decoder "
                       "each step, argmax over the whole tgt vocab with ties -> lowest id, stop after "
                       "eos, max 20 steps); it starts with bos. encoder_out: float32 LE [T_src, d_model] "
                       "after the final encoder norm. logprobs: float32 LE [len(greedy)-1, tgt_vocab], "
                       "log_softmax of the decoder fed greedy[:-1]; row i predicts greedy[i+1].",
        "heldout_exact_match": acc,
        "heldout_examples": len(heldout),
        "heldout_exact_match_per_form": acc_forms,
        "heldout_note": "%d dates never seen in training (in any form), one random surface form each"
                        % len(heldout),
        "greedy_max_steps": 20,
        "cases": cases,
        "training": {"steps": step + 1, "batch": args.batch, "lr": args.lr, "dropout": args.dropout,
                     "seed": args.seed, "threads": args.threads, "stopped_early": stopped_early,
                     "train_minutes": round(train_minutes, 1), "log": log},
    }
    json_dump(os.path.join(args.out, "expected.json"), expected)
    for c in cases:
        print("%-50r -> %s (min margin %.3f)" % (c["source"], c["decoded"], c["greedy_min_margin"]))
    print("final: held-out exact match %.4f (%d examples), last train loss %.4f, %d steps, %.1f min train, "
          "%.1f min total" % (acc, len(heldout), log[-1]["loss"], step + 1, train_minutes,
                              (time.time() - t_start) / 60))
    return 0


if __name__ == "__main__":
    sys.exit(main())
