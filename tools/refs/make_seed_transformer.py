#!/usr/bin/env python3
"""Writes the seed-transformer reference sets (seed-transformer-tiny and seed-transformer-base):
random-weight encoder-decoder Transformers ("Attention Is All You Need": post-LayerNorm,
sinusoidal positions, ReLU FFN, PyTorch nn.Transformer's tensor names) and their reference
outputs, computed by a float64 numpy implementation of the model's definition (the sets' README).

    python3 tools/refs/make_seed_transformer.py --out DIR    # writes DIR/seed-transformer-{tiny,base}/

Needs numpy only (tests/requirements.txt pins it; the weights and tokens come from
numpy.random.Generator(PCG64) with fixed seeds, so the same numpy writes the same bytes).
No PyTorch: the model is small enough that a float64 evaluation is the better reference.
"""
import argparse
import json
import math
import os
import shutil
import struct
import sys
import time

# one BLAS thread: several times faster for these small float64 products on a shared 2-core machine
# (threads spin against other jobs: base 27 s instead of 200-470 s), and the float32 self-checks in
# cases.json do not depend on the core count (the float64 reference does not either)
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import numpy as np  # noqa: E402

# name -> (seed, config, f16 weights, cases: (src lengths, tgt lengths) per case)
SETS = {
    "seed-transformer-tiny": (
        1001,
        dict(d_model=64, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=128,
             src_vocab_size=97, tgt_vocab_size=89, max_len=128),
        False,
        [([11, 5, 17], [8, 13, 3]),  # batch 3: unsorted, differing lengths
         ([16], [10]),  # batch 1: no padding
         ([1, 128], [128, 1])],  # extremes: src = just eos with tgt max_len; src max_len, tgt = bos
    ),
    "seed-transformer-base": (
        2002,
        dict(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
             src_vocab_size=1000, tgt_vocab_size=1000, max_len=256),
        True,
        [([40, 34], [30, 25])],
    ),
}
PAD, BOS, EOS = 0, 1, 2
GREEDY_STEPS = 20
MIN_MARGIN = 5e-3  # top-1 minus top-2 log-prob at every greedy step: float32 noise cannot flip it
MAX_DRAWS = 200


# ------------------------------------------------------------------ weights


def make_weights(cfg, seed, f16):
    """The state dict in PyTorch's order: nn.Transformer's init (xavier-uniform matrices) and the
    changes of the README (N(0, 1/d) embeddings, Q/K x2, generator x3, 1-D tensors drawn per layer)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    d, ff = cfg["d_model"], cfg["dim_feedforward"]
    w = {}

    def xavier(out_f, in_f):
        a = math.sqrt(6.0 / (in_f + out_f))
        return rng.uniform(-a, a, (out_f, in_f))

    def ln(prefix):
        w[prefix + ".weight"] = 1.0 + 0.1 * rng.standard_normal(d)
        w[prefix + ".bias"] = 0.1 * rng.standard_normal(d)

    def attn(prefix):
        m = xavier(3 * d, d)
        m[: 2 * d] *= 2.0  # sharper attention: Q and K row blocks doubled
        w[prefix + ".in_proj_weight"] = m
        w[prefix + ".in_proj_bias"] = 0.05 * rng.standard_normal(3 * d)
        w[prefix + ".out_proj.weight"] = xavier(d, d)
        w[prefix + ".out_proj.bias"] = 0.05 * rng.standard_normal(d)

    def ffn(prefix):
        w[prefix + ".linear1.weight"] = xavier(ff, d)
        w[prefix + ".linear1.bias"] = rng.uniform(-1, 1, ff) / math.sqrt(d)
        w[prefix + ".linear2.weight"] = xavier(d, ff)
        w[prefix + ".linear2.bias"] = rng.uniform(-1, 1, d) / math.sqrt(ff)

    w["src_embed.weight"] = rng.standard_normal((cfg["src_vocab_size"], d)) / math.sqrt(d)
    w["tgt_embed.weight"] = rng.standard_normal((cfg["tgt_vocab_size"], d)) / math.sqrt(d)
    for i in range(cfg["num_encoder_layers"]):
        p = f"transformer.encoder.layers.{i}"
        attn(p + ".self_attn")
        ffn(p)
        ln(p + ".norm1")
        ln(p + ".norm2")
    ln("transformer.encoder.norm")
    for i in range(cfg["num_decoder_layers"]):
        p = f"transformer.decoder.layers.{i}"
        attn(p + ".self_attn")
        attn(p + ".multihead_attn")
        ffn(p)
        ln(p + ".norm1")
        ln(p + ".norm2")
        ln(p + ".norm3")
    ln("transformer.decoder.norm")
    tv = cfg["tgt_vocab_size"]
    w["generator.weight"] = 3.0 * rng.uniform(-1, 1, (tv, d)) / math.sqrt(d)  # peakier output
    w["generator.bias"] = rng.uniform(-1, 1, tv) / math.sqrt(d)
    dt = np.float16 if f16 else np.float32
    return {k: v.astype(dt) for k, v in w.items()}


def write_safetensors(path, tensors):
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for k, v in tensors.items():
        n = v.nbytes
        header[k] = {"dtype": "F16" if v.dtype == np.float16 else "F32", "shape": list(v.shape),
                     "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)  # the data section starts 8-aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for v in tensors.values():
            f.write(np.ascontiguousarray(v).astype(v.dtype.newbyteorder("<")).tobytes())


def read_safetensors(path):
    """An independent re-read of what was written (the reference is computed from these values)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for k, meta in header.items():
        if k == "__metadata__":
            continue
        b, e = meta["data_offsets"]
        dt = {"F32": "<f4", "F16": "<f2"}[meta["dtype"]]
        out[k] = np.frombuffer(data, dt, offset=8 + n + b, count=(e - b) // np.dtype(dt).itemsize).reshape(
            meta["shape"])
    return out


# ------------------------------------------------------------------ the model (any float dtype)


class Model:
    def __init__(self, cfg, weights, dtype):
        self.cfg, self.dt = cfg, dtype
        self.w = {k: v.astype(dtype) for k, v in weights.items()}
        d, L = cfg["d_model"], cfg["max_len"]
        pos = np.arange(L, dtype=np.float64)[:, None]
        ang = pos / np.power(10000.0, np.arange(0, d, 2, dtype=np.float64) / d)
        pe = np.zeros((L, d))
        pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
        self.pe = pe.astype(np.float32).astype(dtype)  # the table is float64 rounded to float32
        self.scale = dtype(np.float32(math.sqrt(d)))

    def ln(self, x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)  # biased
        return (x - mu) / np.sqrt(var + self.dt(self.cfg["layer_norm_eps"])) * self.w[p + ".weight"] + self.w[
            p + ".bias"]

    def mha(self, xq, xkv, p, masked):
        """masked [B, Tq, Tk]: True = may not attend."""
        d, h = self.cfg["d_model"], self.cfg["nhead"]
        hd = d // h
        W, b = self.w[p + ".in_proj_weight"], self.w[p + ".in_proj_bias"]
        B, Tq, Tk = xq.shape[0], xq.shape[1], xkv.shape[1]
        q = (xq @ W[:d].T + b[:d]).reshape(B, Tq, h, hd).transpose(0, 2, 1, 3)
        k = (xkv @ W[d:2 * d].T + b[d:2 * d]).reshape(B, Tk, h, hd).transpose(0, 2, 1, 3)
        v = (xkv @ W[2 * d:].T + b[2 * d:]).reshape(B, Tk, h, hd).transpose(0, 2, 1, 3)
        s = (q @ k.transpose(0, 1, 3, 2)) / self.dt(math.sqrt(hd))
        s = np.where(masked[:, None], -np.inf, s)
        s = np.exp(s - s.max(-1, keepdims=True))
        a = s / s.sum(-1, keepdims=True)
        o = (a @ v).transpose(0, 2, 1, 3).reshape(B, Tq, d)
        return o @ self.w[p + ".out_proj.weight"].T + self.w[p + ".out_proj.bias"]

    def ffn(self, x, p):
        hdn = np.maximum(x @ self.w[p + ".linear1.weight"].T + self.w[p + ".linear1.bias"], 0)
        return hdn @ self.w[p + ".linear2.weight"].T + self.w[p + ".linear2.bias"]

    def embed(self, table, tokens):
        return self.w[table][tokens] * self.scale + self.pe[: tokens.shape[1]]

    def encode(self, src, slen):
        B, T = src.shape
        kpad = np.arange(T)[None, :] >= np.asarray(slen)[:, None]  # [B, T]
        x = self.embed("src_embed.weight", src)
        m = np.broadcast_to(kpad[:, None, :], (B, T, T))
        for i in range(self.cfg["num_encoder_layers"]):
            p = f"transformer.encoder.layers.{i}"
            x = self.ln(x + self.mha(x, x, p + ".self_attn", m), p + ".norm1")
            x = self.ln(x + self.ffn(x, p), p + ".norm2")
        return self.ln(x, "transformer.encoder.norm"), kpad

    def decode(self, tgt, tlen, memory, kpad):
        B, T = tgt.shape
        tpad = np.arange(T)[None, :] >= np.asarray(tlen)[:, None]
        causal = np.arange(T)[None, :] > np.arange(T)[:, None]  # [Tq, Tk]
        m_self = causal[None] | tpad[:, None, :]
        m_cross = np.broadcast_to(kpad[:, None, :], (B, T, kpad.shape[1]))
        x = self.embed("tgt_embed.weight", tgt)
        for i in range(self.cfg["num_decoder_layers"]):
            p = f"transformer.decoder.layers.{i}"
            x = self.ln(x + self.mha(x, x, p + ".self_attn", m_self), p + ".norm1")
            x = self.ln(x + self.mha(x, memory, p + ".multihead_attn", m_cross), p + ".norm2")
            x = self.ln(x + self.ffn(x, p), p + ".norm3")
        y = self.ln(x, "transformer.decoder.norm")
        z = y @ self.w["generator.weight"].T + self.w["generator.bias"]
        z = z - z.max(-1, keepdims=True)
        return z - np.log(np.exp(z).sum(-1, keepdims=True))

    def greedy(self, src_row):
        """One row alone, no padding, the full decoder re-run every step; stops after eos."""
        src = np.asarray(src_row)[None]
        memory, kpad = self.encode(src, [src.shape[1]])
        ys, lps, margin = [BOS], [], math.inf
        for _ in range(GREEDY_STEPS):
            lp = self.decode(np.asarray(ys)[None], [len(ys)], memory, kpad)[0, -1]
            order = np.argsort(-lp, kind="stable")  # ties to the lowest id
            nxt = int(order[0])
            margin = min(margin, float(lp[order[0]] - lp[order[1]]))
            ys.append(nxt)
            lps.append(float(lp[nxt]))
            if nxt == EOS:
                break
        return ys, lps, margin


# ------------------------------------------------------------------ cases


def pad_rows(rows, T):
    return np.array([r + [PAD] * (T - len(r)) for r in rows], dtype=np.int64)


def draw_case(rng, cfg, slens, tlens):
    sv, tv = cfg["src_vocab_size"], cfg["tgt_vocab_size"]
    src = [[int(t) for t in rng.integers(3, sv, n - 1)] + [EOS] for n in slens]
    tgt = [[BOS] + [int(t) for t in rng.integers(3, tv, n - 1)] for n in tlens]
    return src, tgt


def make_cases(name, cfg, model64, model32, seed, case_specs, outdir):
    rng = np.random.Generator(np.random.PCG64(seed + 7))
    cases = []
    for ci, (slens, tlens) in enumerate(case_specs):
        for draw in range(MAX_DRAWS):
            src, tgt = draw_case(rng, cfg, slens, tlens)
            greedy = [model64.greedy(r) for r in src]
            ok = all(g[2] >= MIN_MARGIN for g in greedy)
            if name.endswith("tiny") and ci == 0:  # the stop at eos is covered
                ok = ok and any(g[0][-1] == EOS for g in greedy)
            if ok:
                break
        else:
            raise SystemExit(f"make_seed_transformer: {name} case {ci}: no tokens with greedy margins "
                             f">= {MIN_MARGIN} in {MAX_DRAWS} draws")
        B, Ts, Tt = len(src), max(slens), max(tlens)
        S, T = pad_rows(src, Ts), pad_rows(tgt, Tt)
        mem, kpad = model64.encode(S, slens)
        lp = model64.decode(T, tlens, mem, kpad)
        # self-checks at valid positions: float32 evaluation, each row alone vs the batch
        mem32, kpad32 = model32.encode(S, slens)
        lp32 = model32.decode(T, tlens, mem32, kpad32)
        e32 = l32 = alone = 0.0
        for b in range(B):
            e32 = max(e32, float(np.abs(mem32[b, : slens[b]] - mem[b, : slens[b]]).max()))
            l32 = max(l32, float(np.abs(lp32[b, : tlens[b]] - lp[b, : tlens[b]]).max()))
            m1, k1 = model64.encode(S[b:b + 1, : slens[b]], [slens[b]])
            l1 = model64.decode(T[b:b + 1, : tlens[b]], [tlens[b]], m1, k1)
            alone = max(alone, float(np.abs(m1[0] - mem[b, : slens[b]]).max()),
                        float(np.abs(l1[0] - lp[b, : tlens[b]]).max()))
        enc_file, lp_file = f"case{ci}.encoder_out.f32", f"case{ci}.logprobs.f32"
        mem.astype("<f4").tofile(os.path.join(outdir, enc_file))
        lp.astype("<f4").tofile(os.path.join(outdir, lp_file))
        cases.append({
            "name": f"case{ci}-b{B}", "batch": B,
            "src_tokens": S.tolist(), "src_lengths": slens,
            "tgt_tokens": T.tolist(), "tgt_lengths": tlens,
            "encoder_out": enc_file, "encoder_out_shape": [B, Ts, cfg["d_model"]],
            "logprobs": lp_file, "logprobs_shape": [B, Tt, cfg["tgt_vocab_size"]],
            "greedy": [g[0] for g in greedy], "greedy_max_steps": GREEDY_STEPS,
            "greedy_logprobs": [[round(x, 6) for x in g[1]] for g in greedy],
            "greedy_min_margin": [round(g[2], 6) for g in greedy],
            "checks": {"token_draws": draw + 1,
                       "encoder_out_maxdiff_float32_vs_float64": e32,
                       "logprobs_maxdiff_float32_vs_float64": l32,
                       "maxdiff_row_alone_vs_batched": alone},
        })
    return cases


def make_set(out, name):
    seed, dims, f16, specs = SETS[name]
    t0 = time.time()
    d = dims["d_model"]
    cfg = {"architecture": "transformer", "d_model": d, "nhead": dims["nhead"],
           "num_encoder_layers": dims["num_encoder_layers"], "num_decoder_layers": dims["num_decoder_layers"],
           "dim_feedforward": dims["dim_feedforward"], "activation": "relu", "layer_norm_eps": 1e-05,
           "norm_first": False, "src_vocab_size": dims["src_vocab_size"], "tgt_vocab_size": dims["tgt_vocab_size"],
           "max_len": dims["max_len"], "positional_encoding": "sinusoidal", "embedding_scale": math.sqrt(d),
           "pad_id": PAD, "bos_id": BOS, "eos_id": EOS}
    dest = os.path.join(out, name)
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    st = os.path.join(tmp, "model.safetensors")
    write_safetensors(st, make_weights(cfg, seed, f16))
    weights = read_safetensors(st)
    cases = make_cases(name, cfg, Model(cfg, weights, np.float64), Model(cfg, weights, np.float32), seed, specs,
                       tmp)
    with open(os.path.join(tmp, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")
    n_params = sum(v.size for v in weights.values())
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    secs = time.time() - t0
    print(f"make_seed_transformer: {name}: {n_params} parameters ({'F16' if f16 else 'F32'}), {len(cases)} "
          f"cases, {secs:.1f} s -> {dest}", file=sys.stderr)
    return n_params, cases


README = """# seed-transformer sets: the encoder-decoder Transformer, random weights, float64 reference

Generated by `python3 tools/refs/make_seed_transformer.py --out DIR` (writes
`DIR/seed-transformer-tiny/` and `DIR/seed-transformer-base/`, and this file as
`DIR/seed-transformer-README.md` and as `README.md` in each set); do not edit by hand. Sources: numpy {numpy} only
(`numpy.random.Generator(PCG64)` with the seeds below, so the same numpy version writes the same bytes);
no PyTorch.

The model is the original encoder-decoder Transformer ("Attention Is All You Need": post-LayerNorm,
sinusoidal positions, ReLU FFN) with PyTorch `nn.Transformer`'s tensor names and semantics
(`batch_first=True, norm_first=False, dropout=0`), plus embeddings and a generator Linear.

| set | seed | d_model | nhead | enc+dec layers | ff | act | eps | vocab src/tgt | max_len | weights | cases |
|---|---|---|---|---|---|---|---|---|---|---|---|
{rows}

Don't hard-code these shapes: the engine reads every `config.json` field.

## Files in each set

- `config.json`: `{{"architecture": "transformer", "d_model", "nhead", "num_encoder_layers",
  "num_decoder_layers", "dim_feedforward", "activation": "relu"|"gelu", "layer_norm_eps",
  "norm_first": false, "src_vocab_size", "tgt_vocab_size", "max_len", "positional_encoding":
  "sinusoidal", "embedding_scale": sqrt(d_model), "pad_id": 0, "bos_id": 1, "eos_id": 2}}`.
- `model.safetensors`: standard safetensors (8-byte little-endian header length N, a compact JSON
  header padded with spaces so that 8+N is a multiple of 8, with a `"__metadata__": {{"format": "pt"}}`
  entry; then the data, C order, little-endian). Tiny is all F32, base all F16. Names are PyTorch's
  `state_dict` names, in its order: `src_embed.weight [src_vocab, d]`, `tgt_embed.weight`,
  `transformer.encoder.layers.L.{{self_attn.in_proj_weight [3d, d], self_attn.in_proj_bias,
  self_attn.out_proj.weight, self_attn.out_proj.bias, linear1.weight [ff, d], linear1.bias,
  linear2.weight [d, ff], linear2.bias, norm1.*, norm2.*}}`, `transformer.encoder.norm.*`,
  `transformer.decoder.layers.L.{{self_attn.*, multihead_attn.* (cross-attention), linear1.*,
  linear2.*, norm1.*, norm2.*, norm3.*}}`, `transformer.decoder.norm.*`,
  `generator.weight [tgt_vocab, d]`, `generator.bias`. Every Linear-style weight is `[out, in]`
  (`y = x·Wᵀ + b`); the rows of `in_proj_weight` are Q `[0, d)`, K `[d, 2d)`, V `[2d, 3d)`.
- `cases.json`: one object per case: `name`, `batch` B, `src_tokens` (B rows right-padded with
  0), `src_lengths`, `tgt_tokens` (each row starts with bos, right-padded), `tgt_lengths`,
  `encoder_out` / `encoder_out_shape` (file of `[B, T_src, d_model]`: the encoder output after the
  final encoder LayerNorm), `logprobs` / `logprobs_shape` (file of `[B, T_tgt, tgt_vocab]`:
  `log_softmax(generator(decoder_out))`; position t is the distribution of the token after
  `tgt_tokens[b][0..t]`), `greedy` (per source row: bos, then up to `greedy_max_steps` = 20 argmax
  tokens, ending at eos if one was produced), and for information `greedy_logprobs`,
  `greedy_min_margin` (smallest top-1 minus top-2 log-prob over the steps; all >= 5e-3) and
  `checks` (below).
- `case<k>.encoder_out.f32`, `case<k>.logprobs.f32`: raw little-endian float32, C order.

Padded positions (`encoder_out[b, j]` with `j >= src_lengths[b]`, `logprobs[b, t]` with
`t >= tgt_lengths[b]`) are not meaningful: a comparison ignores them.

## Exact model definition

`d = d_model`, `hd = d / nhead`, `LN` is LayerNorm with biased variance and `eps = layer_norm_eps`.

- Positional encoding: `PE[pos, 2i] = sin(pos / 10000^(2i/d))`, `PE[pos, 2i+1] = cos(...)`, computed in
  float64 and rounded to float32.
- Embedding: `x[t] = E[token_t] * float32(sqrt(d)) + PE[t]`, for source and target alike.
- Attention: `Q = xq·Wqᵀ+bq`, `K`, `V` likewise from `xkv`; per head `softmax(Q_k K_kᵀ / sqrt(hd))
  V_k` with masked scores at −inf; heads concatenated, then `O·W_outᵀ + b_out`.
- Encoder layer: `x = LN1(x + MHA(x, x, src key padding))`, `x = LN2(x + linear2(relu(linear1(x))))`;
  after the last layer `memory = LN(transformer.encoder.norm)(x)` (= `encoder_out`).
- Decoder layer: `x = LN1(x + MHA(x, x, causal ∪ tgt key padding))`,
  `x = LN2(x + MHA(x, memory, src key padding))`, `x = LN3(x + FF(x))`; then
  `y = LN(transformer.decoder.norm)(x)`, `logprobs = log_softmax(y·generatorᵀ + bias)`.
- Masks: key padding `j >= length`, causal `j > i`, OR-ed; queries are never masked.
- Greedy (`greedy`): each row alone, without padding: `memory = encoder(src[:len])`; `ys = [bos]`;
  up to 20 times run the full decoder on `ys`, append the argmax of the last position over the whole
  target vocabulary (ties to the lowest id; nothing suppressed), stop after appending eos.

## How the sets are generated

- Weights, in state-dict order from one `Generator(PCG64(seed))`: every matrix xavier-uniform
  (`U(±sqrt(6/(fan_in+fan_out)))`, as `nn.Transformer` initialises), the Q and K row blocks of every
  `in_proj_weight` ×2 (sharper attention); embeddings `N(0, 1/d)` (so `E·sqrt(d)` has unit scale);
  LayerNorm gamma `1 + 0.1·N(0,1)`, beta `0.1·N(0,1)`; attention in/out biases `0.05·N(0,1)`; FFN
  biases `U(±1/sqrt(fan_in))`; `generator.weight` `3·U(±1/sqrt(d))` (peakier output),
  `generator.bias` `U(±1/sqrt(d))`. Every 1-D tensor is drawn per layer. Base's values are rounded
  to F16 as stored.
- The reference is a float64 numpy evaluation of the definition above on the values read back
  from `model.safetensors` (F16 converted exactly), stored as float32.
- Tokens from `Generator(PCG64(seed + 7))`: source rows are random tokens from `[3, src_vocab)` ending in
  eos, target rows bos followed by random tokens from `[3, tgt_vocab)`. A case is re-drawn until
  every greedy step of every row has a top-1/top-2 margin >= 5e-3 (and, for tiny case0, until a row
  ends in eos); `checks.token_draws` counts the draws. An engine must not treat these patterns
  specially; padding is defined by the lengths only.
- `checks`, at valid positions: `encoder_out_maxdiff_float32_vs_float64` and
  `logprobs_maxdiff_float32_vs_float64` (the same numpy code in float32: the size of float32
  rounding), `maxdiff_row_alone_vs_batched` (each row computed alone without padding vs the padded
  batch, float64).
- Tiny's cases: case0 batch 3 with unsorted, differing src and tgt lengths (src 11/5/17, tgt
  8/13/3); case1 batch 1 without padding; case2 batch 2 with extreme rows (src length 1 = just eos
  with tgt length 128 = max_len; src length 128 with tgt length 1 = just bos). Base: batch 2,
  src 40/34, tgt 30/25.

## Comparing and tolerances

Compare valid positions only, with absolute differences. The float32 evaluation differs from the
stored float64 reference by at most {f32max:.1e} (`checks`), so a careful float32 engine meets
2e-5 on `encoder_out` and `logprobs`; `greedy` must match exactly (margins >= 5e-3).
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory that receives the seed-transformer sets")
    ap.add_argument("--only", choices=sorted(SETS), help="write one set only")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows, f32max = [], 0.0
    for name in SETS:
        if args.only and name != args.only:
            continue
        n_params, cases = make_set(args.out, name)
        seed, dims, f16, specs = SETS[name]
        size = os.path.getsize(os.path.join(args.out, name, "model.safetensors")) / 1e6
        f32max = max([f32max] + [max(c["checks"]["encoder_out_maxdiff_float32_vs_float64"],
                                     c["checks"]["logprobs_maxdiff_float32_vs_float64"]) for c in cases])
        rows.append(f"| `{name}/` | {seed} | {dims['d_model']} | {dims['nhead']} | {dims['num_encoder_layers']}+"
                    f"{dims['num_decoder_layers']} | {dims['dim_feedforward']} | relu | 1e-5 | "
                    f"{dims['src_vocab_size']}/{dims['tgt_vocab_size']} | {dims['max_len']} | "
                    f"{'F16' if f16 else 'F32'}, {size:.2f} MB ({n_params / 1e6:.2f} M params) | "
                    f"{len(cases)} (batch {', '.join(str(c['batch']) for c in cases)}) |")
    # a README.md in each set written, and with both sets the shared layout's seed-transformer-README.md
    text = README.format(numpy=np.__version__, rows="\n".join(rows), f32max=f32max)
    made = [args.only] if args.only else list(SETS)
    extra = [] if args.only else [os.path.join(args.out, "seed-transformer-README.md")]
    for path in extra + [os.path.join(args.out, name, "README.md") for name in made]:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
