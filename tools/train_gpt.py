#!/usr/bin/python3
"""Train the character-level GPT shipped in models/kjv-gpt (King James Bible text).

The model is GPT-2 exactly (pre-LayerNorm, learned absolute positions, GELU tanh
"gelu_new", biases everywhere, output tied to wte) and is written as a Hugging Face
GPT-2 checkpoint directory:

  config.json         HF GPT-2 style, plus "add_bos_token": true and "tokenizer"
  model.safetensors   F16, HF names without the "transformer." prefix, Conv1D layout [in, out]
  char_vocab.json     {"type": "char", "tokens": [...], "pad": 0, "bos": 1, "eos": 2, "unk": 3}
  expected.json       prompts, their ids, greedy continuations, logits and margins
  expected_<k>.logits.f32   teacher-forced logits, float32 LE [n_prompt + n_greedy - 1, vocab]
  SAMPLE.txt          300 characters sampled at temperature 0.8

Every expected value is computed in float32 from the f16-rounded weights read back from
model.safetensors, i.e. from exactly what an engine loads.

Text: the Debian package bible-kjv (program `bible`, data from bible-kjv-text). Verse
numbers and chapter headers are stripped; one verse per line. Each training window
starts at a verse start and is prefixed with BOS, so a prompt is [BOS] + characters.

Needs Debian's python3-torch and python3-numpy. Run from the repository root:
  /usr/bin/python3 tools/train_gpt.py            (1900 steps, 20-25 minutes on one thread)
"""

import argparse
import json
import math
import os
import struct
import subprocess
import sys
import time

# the BLAS thread pool is sized when the library loads: cap it before importing torch
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
PAD, BOS, EOS, UNK = 0, 1, 2, 3

# ---------------------------------------------------------------------------
# safetensors: a small writer and an independent reader (no pip package)
# ---------------------------------------------------------------------------

_ST_DTYPES = {np.dtype("float32"): "F32", np.dtype("float16"): "F16"}
_ST_NP = {"F32": np.float32, "F16": np.float16}


def write_safetensors(path, tensors):
    """tensors: list of (name, numpy array). Writes them in that order, C order, LE."""
    header = {"__metadata__": {"format": "pt"}}
    blobs = []
    offset = 0
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr)
        if arr.dtype not in _ST_DTYPES:
            raise ValueError("unsupported dtype %s for %s" % (arr.dtype, name))
        data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _ST_DTYPES[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    # pad with spaces so that the data section starts on an 8-byte boundary
    hjson += b" " * ((8 - (8 + len(hjson)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Returns {name: numpy array in the stored dtype}, checking offsets are contiguous."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    if (8 + n) % 8 != 0:
        raise ValueError("header not padded to 8 bytes")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    out = {}
    end_max = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        dt = np.dtype(_ST_NP[info["dtype"]]).newbyteorder("<")
        arr = np.frombuffer(data[b:e], dtype=dt).reshape(info["shape"])
        out[name] = arr.astype(arr.dtype.newbyteorder("="))
        end_max = max(end_max, e)
    if end_max != len(data):
        raise ValueError("data section has %d bytes, tensors use %d" % (len(data), end_max))
    return out


def char_vocab_json(tokens):
    return {"type": "char", "tokens": tokens, "pad": PAD, "bos": BOS, "eos": EOS, "unk": UNK}


def json_dump(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)
        f.write("\n")


# ---------------------------------------------------------------------------
# the text
# ---------------------------------------------------------------------------

def load_kjv(text_path=None):
    """Returns the list of verses (strings without the reference prefix)."""
    if text_path:
        with open(text_path, encoding="utf-8") as f:
            raw = f.read()
    else:
        raw = subprocess.run(["bible", "-m", "8192", "-l", "100000", "gen1:1-rev22:21"],
                             check=True, stdout=subprocess.PIPE).stdout.decode("utf-8")
    verses = []
    for line in raw.split("\n"):
        # verse lines are "  <n> text"; chapter headers ("Genesis 1") have no indent
        s = line.lstrip(" ")
        if s is line or not s:
            continue
        num, _, text = s.partition(" ")
        if not num.isdigit():
            raise ValueError("unexpected line in KJV text: %r" % line)
        verses.append(text.strip())
    if len(verses) != 31102:
        raise ValueError("expected 31102 verses, found %d" % len(verses))
    return verses


# ---------------------------------------------------------------------------
# the model: GPT-2, parameter names = HF GPT-2 names without "transformer."
# ---------------------------------------------------------------------------

class Conv1D(nn.Module):
    """HF GPT-2 Conv1D: weight [in, out], y = x @ W + b."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(
            *x.shape[:-1], self.weight.shape[1])


class Attention(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = Conv1D(d, 3 * d)   # output columns: Q [0,d) | K [d,2d) | V [2d,3d)
        self.c_proj = Conv1D(d, d)

    def forward(self, x, mask_add):
        B, T, d = x.shape
        H = self.n_head
        hd = d // H
        qkv = self.c_attn(x).view(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)  # [3, B, H, T, hd]
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(hd)) + mask_add[:T, :T]
        att = att.softmax(dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, d)  # heads concatenated in order
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc = Conv1D(d, 4 * d)
        self.c_proj = Conv1D(4 * d, d)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))  # gelu_new


class Block(nn.Module):
    def __init__(self, d, n_head, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.attn = Attention(d, n_head)
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.mlp = MLP(d)

    def forward(self, x, mask_add):
        x = x + self.attn(self.ln_1(x), mask_add)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, n_ctx, d, n_layer, n_head, eps=1e-5):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(n_ctx, d)
        self.h = nn.ModuleList([Block(d, n_head, eps) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d, eps=eps)
        mask = torch.triu(torch.full((n_ctx, n_ctx), float("-inf")), diagonal=1)
        self.register_buffer("mask_add", mask, persistent=False)
        # GPT-2 init: N(0, 0.02), residual projections scaled by 1/sqrt(2 * n_layer)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif ".ln_" in name or name.startswith("ln_f"):
                nn.init.ones_(p)
            elif name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer))
            else:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, ids):
        T = ids.shape[1]
        x = self.wte(ids) + self.wpe.weight[:T]
        mask_add = self.mask_add.to(x.dtype)
        for blk in self.h:
            x = blk(x, mask_add)
        return self.ln_f(x) @ self.wte.weight.t()  # tied output


def gelu_new_reference(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------

class Corpus:
    """Concatenated verses ("verse\\n"...) as ids, plus the offsets where verses start."""

    def __init__(self, verses, stoi):
        text = "".join(v + "\n" for v in verses)
        self.ids = torch.tensor([stoi.get(c, UNK) for c in text], dtype=torch.long)
        starts, pos = [], 0
        for v in verses:
            starts.append(pos)
            pos += len(v) + 1
        self.starts = torch.tensor(starts, dtype=torch.long)

    def windows(self, n_ctx, starts):
        """[BOS] + text[s : s+n_ctx-1] as input, text[s : s+n_ctx] as target."""
        idx = starts[:, None] + torch.arange(n_ctx)[None, :]
        tgt = self.ids[idx]
        inp = torch.cat([torch.full((len(starts), 1), BOS, dtype=torch.long), tgt[:, :-1]], 1)
        return inp, tgt

    def valid_starts(self, n_ctx):
        return self.starts[self.starts + n_ctx <= len(self.ids)]


def split_verses(verses, block=500, period=20, phase=7):
    """Every 20th block of 500 consecutive verses is held out (5%), spread over the Bible."""
    train, val = [], []
    for i, v in enumerate(verses):
        (val if (i // block) % period == phase else train).append(v)
    return train, val


@torch.no_grad()
def mean_loss(model, inp, tgt, bs=32):
    model.eval()
    tot, n = 0.0, 0
    for i in range(0, len(inp), bs):
        logits = model(inp[i:i + bs])
        tot += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[i:i + bs].reshape(-1),
                               reduction="sum").item()
        n += tgt[i:i + bs].numel()
    model.train()
    return tot / n


# ---------------------------------------------------------------------------
# expected outputs
# ---------------------------------------------------------------------------

def first_argmax(row):
    """argmax with ties going to the lowest id; row is a 1-D numpy array."""
    return int(np.flatnonzero(row == row.max())[0])


def top2_margin(row):
    s = np.sort(row)
    return float(s[-1] - s[-2])


@torch.no_grad()
def greedy(model, ids, n_new):
    """Full forward pass over the whole sequence at every step (no cache)."""
    seq = list(ids)
    toks, margins = [], []
    for _ in range(n_new):
        row = model(torch.tensor([seq]))[0, -1].numpy()
        t = first_argmax(row)
        toks.append(t)
        margins.append(top2_margin(row))
        seq.append(t)
    return toks, margins


@torch.no_grad()
def sample(model, n_ctx, n_chars, temperature, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_chars):
        # BOS stays at position 0 (as in training); keep the most recent n_ctx-1 chars
        ctx = [BOS] + out[-(n_ctx - 1):]
        logits = model(torch.tensor([ctx]))[0, -1].double()
        probs = torch.softmax(logits / temperature, dim=-1)
        out.append(int(torch.multinomial(probs, 1, generator=g)))
    return out


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="models/kjv-gpt")
    ap.add_argument("--text", default=None, help="output of `bible -l 100000 gen1:1-rev22:21` (default: run it)")
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=192)
    ap.add_argument("--n-head", type=int, default=6)
    ap.add_argument("--n-ctx", type=int, default=256)
    ap.add_argument("--steps", type=int, default=1900)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--time-limit-min", type=float, default=25.0,
                    help="stop training early (and say so) if this wall time is reached")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)

    verses = load_kjv(args.text)
    chars = sorted(set("".join(verses) + "\n"))
    tokens = SPECIALS + chars
    stoi = {c: i for i, c in enumerate(tokens) if i >= len(SPECIALS)}
    V = len(tokens)
    train_v, val_v = split_verses(verses)
    train, val = Corpus(train_v, stoi), Corpus(val_v, stoi)
    tr_starts, va_starts = train.valid_starts(args.n_ctx), val.valid_starts(args.n_ctx)
    print("verses %d (train %d, val %d), chars train %d val %d, vocab %d"
          % (len(verses), len(train_v), len(val_v), len(train.ids), len(val.ids), V), flush=True)

    model = GPT(V, args.n_ctx, args.n_embd, args.n_layer, args.n_head)
    n_params = sum(p.numel() for p in model.parameters())
    print("params %d (%.2f MB as F16)" % (n_params, n_params * 2 / 1e6), flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.98), eps=1e-8)

    g = torch.Generator().manual_seed(args.seed + 1)
    ev_tr = train.windows(args.n_ctx, tr_starts[torch.randperm(len(tr_starts), generator=g)[:96]])
    ev_va = val.windows(args.n_ctx, va_starts[torch.randperm(len(va_starts), generator=g)[:96]])

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        p = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * p)))

    log = []
    stopped_early = False
    t_train = time.time()
    step = 0
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        sel = tr_starts[torch.randint(len(tr_starts), (args.batch,), generator=g)]
        inp, tgt = train.windows(args.n_ctx, sel)
        logits = model(inp)
        loss = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0:
            print("step %5d  loss %.4f  lr %.2e  %.0fs" % (step, loss.item(), lr_at(step), time.time() - t_train),
                  flush=True)
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            lt, lv = mean_loss(model, *ev_tr), mean_loss(model, *ev_va)
            log.append({"step": step + 1, "train": round(lt, 4), "val": round(lv, 4)})
            print("eval step %d: train %.4f val %.4f nats/char" % (step + 1, lt, lv), flush=True)
        if time.time() - t_start > args.time_limit_min * 60:
            stopped_early = True
            print("time limit reached after %d steps: stopping early (result not reproducible)" % (step + 1))
            break
    train_minutes = (time.time() - t_train) / 60
    steps_done = step + 1

    # ---- export: F16 weights in HF GPT-2 names, Conv1D layout [in, out], no lm_head ----
    sd = model.state_dict()
    names = ["wte.weight", "wpe.weight"]
    for L in range(args.n_layer):
        for sub in ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                    "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                    "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"]:
            names.append("h.%d.%s" % (L, sub))
    names += ["ln_f.weight", "ln_f.bias"]
    assert sorted(names) == sorted(sd.keys()), set(names) ^ set(sd.keys())
    st_path = os.path.join(args.out, "model.safetensors")
    write_safetensors(st_path, [(n, sd[n].numpy().astype(np.float16)) for n in names])

    config = {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "activation_function": "gelu_new",
        "vocab_size": V,
        "n_positions": args.n_ctx,
        "n_ctx": args.n_ctx,
        "n_embd": args.n_embd,
        "n_layer": args.n_layer,
        "n_head": args.n_head,
        "n_inner": None,
        "layer_norm_epsilon": 1e-5,
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "pad_token_id": PAD,
        "add_bos_token": True,
        "tokenizer": "char_vocab.json",
        "scale_attn_weights": True,
        "tie_word_embeddings": True,
        "attn_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "resid_pdrop": 0.0,
        "initializer_range": 0.02,
        "torch_dtype": "float16",
    }
    json_dump(os.path.join(args.out, "config.json"), config)
    json_dump(os.path.join(args.out, "char_vocab.json"), char_vocab_json(tokens))

    # ---- reload what an engine loads: the f16 values, converted to float32 ----
    loaded = read_safetensors(st_path)
    assert all(loaded[n].dtype == np.float16 for n in names)
    m32 = GPT(V, args.n_ctx, args.n_embd, args.n_layer, args.n_head)
    m32.load_state_dict({n: torch.from_numpy(loaded[n].astype(np.float32)) for n in names})
    m32.eval()
    m64 = GPT(V, args.n_ctx, args.n_embd, args.n_layer, args.n_head).double()
    m64.load_state_dict({n: torch.from_numpy(loaded[n].astype(np.float64)) for n in names})
    m64.eval()

    with torch.no_grad():
        xs = torch.linspace(-12, 12, 20001)
        gelu_err = (F.gelu(xs, approximate="tanh") - gelu_new_reference(xs)).abs().max().item()
    val_loss_f16 = mean_loss(m32, *ev_va)
    train_loss_f16 = mean_loss(m32, *ev_tr)

    candidates = ["In the beginning", "And the LORD said unto Moses,", "Blessed are the", "The",
                  "And it came to pass", "For God so loved", "Jesus wept.", "And he said"]
    cases, k = [], 0
    n_new = 48
    for prompt in candidates:
        if len(cases) == 4:
            break
        ids = [BOS] + [stoi.get(c, UNK) for c in prompt]
        toks, margins = greedy(m32, ids, n_new)
        toks64, _ = greedy(m64, ids, n_new)
        if min(margins) < 1e-3 or toks64 != toks:
            print("prompt %r skipped: min margin %.2e, f64 agrees %s" % (prompt, min(margins), toks64 == toks))
            continue
        with torch.no_grad():
            full = torch.tensor([ids + toks[:-1]])
            logits = m32(full)[0].numpy()                  # [n + n_new - 1, V]
            logits64 = m64(full.clone())[0].numpy()
        assert [first_argmax(r) for r in logits[len(ids) - 1:]] == toks
        fname = "expected_%d.logits.f32" % k
        logits.astype("<f4").tofile(os.path.join(args.out, fname))
        last = logits[len(ids) - 1]
        cases.append({
            "prompt": prompt,
            "add_bos": True,
            "tokens": ids,
            "greedy_tokens": toks,
            "greedy_text": "".join(tokens[t] for t in toks),
            "prompt_last_logits_first8": [float(v) for v in last[:8]],
            "prompt_last_logits": [float(v) for v in last],
            "greedy_margins": [round(m, 6) for m in margins],
            "greedy_min_margin": min(margins),
            "logits_file": fname,
            "logits_shape": list(logits.shape),
            "logits_max_abs_diff_vs_float64": float(np.abs(logits - logits64).max()),
        })
        k += 1
    if len(cases) < 4:
        raise SystemExit("fewer than 4 prompts with a greedy margin >= 1e-3")

    expected = {
        "description": "PyTorch float32 on the f16-rounded weights of model.safetensors. tokens = [bos] + "
                       "char ids of prompt. greedy_tokens[i] = argmax (ties -> lowest id) of the logits "
                       "at the last position, re-running the full sequence each step; 48 steps, no stop "
                       "at eos. logits_file: float32 LE row-major [len(tokens)+47, vocab]: the logits of "
                       "the teacher-forced sequence tokens + greedy_tokens[:47]; row len(tokens)-1+i "
                       "predicts greedy_tokens[i]. prompt_last_logits = row len(tokens)-1.",
        "n_vocab": V,
        "n_greedy": n_new,
        "cases": cases,
        "training": {
            "steps": steps_done, "batch": args.batch, "n_ctx": args.n_ctx, "lr": args.lr,
            "seed": args.seed, "threads": args.threads, "stopped_early": stopped_early,
            "train_minutes": round(train_minutes, 1),
            "final_train_loss": log[-1]["train"] if log else None,
            "final_val_loss": log[-1]["val"] if log else None,
            "train_loss_f16_weights": round(train_loss_f16, 4),
            "val_loss_f16_weights": round(val_loss_f16, 4),
            "loss_unit": "nats/char, 96 windows of 256 chars each",
            "log": log,
        },
        "checks": {"gelu_tanh_vs_formula_max_abs": gelu_err},
    }
    json_dump(os.path.join(args.out, "expected.json"), expected)

    sample_ids = sample(m32, args.n_ctx, 300, 0.8, args.seed)
    text = "".join(tokens[t] for t in sample_ids)
    with open(os.path.join(args.out, "SAMPLE.txt"), "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print("----- sample (T=0.8, 300 chars) -----\n%s\n-----" % text)
    for c in cases:
        print("%r -> %r (min margin %.4f)" % (c["prompt"], c["greedy_text"], c["greedy_min_margin"]))
    print("final: train %.4f val %.4f nats/char (f16 weights: train %.4f val %.4f), %d steps, %.1f min"
          % (log[-1]["train"], log[-1]["val"], train_loss_f16, val_loss_f16, steps_done, train_minutes))
    print("total %.1f min" % ((time.time() - t_start) / 60))
    return 0


if __name__ == "__main__":
    sys.exit(main())
