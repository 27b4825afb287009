#!/usr/bin/env python3
"""Writes a random-weight GGUF in the shapes of a real model, for benchmarks at real sizes.

    /usr/bin/python3 tools/make_bench_model.py --shape llama3-8b --type q4_0 -o /tmp/l8-q4_0.gguf
    /usr/bin/python3 tools/make_bench_model.py --list

Needs only NumPy (Debian's python3-numpy). The files are generated on demand and never
committed (an 8B Q4_0 file is 4.66 GB). Types written directly: f32, f16, q8_0, q4_0 and q4_k_m,
with llama-quantize's choice per tensor (output.weight Q6_K unless the file is Q8_0; in Q4_K_M,
attn_v and ffn_down Q6_K in half the layers), so a file has the size and mix of a user's
download; other types: write f16 here, then `vkformer quantize IN OUT TYPE`.

Weights are random but scaled like a trained model's, so activations stay in a realistic range
through any depth: token_embd has standard deviation 1, the attention and FFN projections and
the output 1/sqrt(d_in), mean 0 (each layer keeps its input's scale); norm weights ~ 1 +
N(0, 0.1^2); biases ~ N(0, 0.02^2). The quantized types are random blocks, never quantized
floats (see "weight blocks" below): an 8B Q4_0 file is random bits, a table gather and a write,
made 32 MiB at a time by a thread pool and streamed to the file (memory stays ~300 MB). Speed
depends only on the shapes and types, not on the values.

The vocabulary is a synthetic SentencePiece-style one of the model's size (<unk>, <s>, </s>, the
256 byte tokens, then pieces "▁t<i>"), so every shape loads with the llama tokenizer whatever
the real model uses; the LM head and embedding have the real vocabulary's size, which is what
the benchmark measures. With --vocab FILE.gguf the tokenizer keys of that file are copied
instead (its size then sets n_vocab).
"""
import argparse
import concurrent.futures
import math
import os
import struct
import sys

import numpy as np

# name: (arch, n_layer, d_model, n_head, n_kv_head, n_ff, n_vocab, n_ctx, rope_base, extras)
SHAPES = {
    "tinyllama-1.1b": ("llama", 22, 2048, 32, 4, 5632, 32000, 2048, 10000.0, {}),
    # Llama-3-8B (no rope scaling; the 3.1 models add it)
    "llama3-8b": ("llama", 32, 4096, 32, 8, 14336, 128256, 8192, 500000.0, {}),
    "llama-3.2-1b": ("llama", 16, 2048, 32, 8, 8192, 128256, 131072, 500000.0,
                     {"tied": True, "llama3_rope": (32.0, 1.0, 4.0, 8192)}),
    "qwen2.5-0.5b": ("qwen2", 24, 896, 14, 2, 4864, 151936, 32768, 1000000.0,
                     {"tied": True, "qkv_bias": True}),
    # head_dim 128 (not d_model / heads), per-head q/k norms
    "qwen3-0.6b": ("qwen3", 28, 1024, 16, 8, 3072, 151936, 40960, 1000000.0,
                   {"tied": True, "head_dim": 128, "qk_norm": True}),
    # head_dim 256 (not d_model / heads), per-head q/k norms, post-norms, GeGLU, five
    # sliding-window layers (512 keys, rope base 10000) per global one
    "gemma-3-1b": ("gemma3", 26, 1152, 4, 1, 6912, 262144, 32768, 1000000.0,
                   {"tied": True, "head_dim": 256, "qk_norm": True, "post_norms": True,
                    "swa": (512, 10000.0)}),
    # mixture of experts: Qwen3-30B-A3B's layer shapes (d 2048, 32/4 heads of 128, 128 experts of
    # FFN 768, 8 used) with 4 of its 48 layers (a Q4_0 file ~1.7 GB); the same with 64 experts
    # (the same active size, half the experts: decode time should follow the active size)
    "qwen3-30b-a3b-4l": ("qwen3moe", 4, 2048, 32, 4, 6144, 151936, 40960, 1000000.0,
                         {"head_dim": 128, "qk_norm": True, "moe": (128, 8, 768)}),
    "qwen3-30b-a3b-4l-e64": ("qwen3moe", 4, 2048, 32, 4, 6144, 151936, 40960, 1000000.0,
                             {"head_dim": 128, "qk_norm": True, "moe": (64, 8, 768)}),
    # a small shape for testing this tool and quick runs
    "tiny-256": ("llama", 4, 256, 8, 4, 768, 512, 512, 10000.0, {}),
}

GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL, GGUF_STR, GGUF_ARR, GGUF_U64 = 4, 5, 6, 7, 8, 9, 10
ALIGN = 32


def kv_bytes(key, vtype, value):
    out = bytearray(struct.pack("<Q", len(key.encode())) + key.encode() + struct.pack("<I", vtype))
    out += val_bytes(vtype, value)
    return bytes(out)


def val_bytes(vtype, value):
    if vtype == GGUF_U32:
        return struct.pack("<I", value)
    if vtype == GGUF_I32:
        return struct.pack("<i", value)
    if vtype == GGUF_F32:
        return struct.pack("<f", value)
    if vtype == GGUF_BOOL:
        return struct.pack("<B", 1 if value else 0)
    if vtype == GGUF_U64:
        return struct.pack("<Q", value)
    if vtype == GGUF_STR:
        b = value.encode()
        return struct.pack("<Q", len(b)) + b
    if vtype == GGUF_ARR:
        etype, items = value
        out = bytearray(struct.pack("<IQ", etype, len(items)))
        if etype == GGUF_F32:
            out += np.asarray(items, dtype="<f4").tobytes()
        elif etype == GGUF_I32:
            out += np.asarray(items, dtype="<i4").tobytes()
        else:
            for it in items:
                out += val_bytes(etype, it)
        return bytes(out)
    raise ValueError(vtype)


# ---------------------------------------------------------------- weight blocks, written directly
#
# Quantized weights are random blocks, never quantized floats: the quants are random bits, and
# each block's scale is drawn so that the weights it decodes to have mean 0 and the standard
# deviation sigma that a trained model's layer has (1/sqrt(d_in) for a projection, 1 for the
# embedding), which keeps every layer's output at the scale of its input, so activations stay
# finite through any number of layers (checked: tests/tools/test_make_bench_model.py decodes
# the blocks with llama.cpp's gguf-py; the 8B shape generates finite logits). How each type
# gets there:
#   Q4_0  w = d (q - 8), q uniform in 0..15: E[(q-8)^2] = 21.5, mean -0.5 d, so d has a random
#         sign (as in ggml's own Q4_0, where d's sign is that of the block's largest weight),
#         which makes the mean 0 over blocks.
#   Q8_0  w = d q, q uniform in -127..127 (-128, which ggml never writes, becomes 0: mean 0),
#         E[q^2] = 2 (1^2 + ... + 127^2) / 256 = 5397.5.
#   Q4_K  w = d sc_j q - dmin m_j per 32-element sub-block j, q uniform in 0..15 (E 7.5, variance
#         21.25), sc_j uniform in 32..63, dmin = 8 d and m_j = round(15 sc_j / 16), so that
#         dmin m_j cancels d sc_j 7.5 to within 4 d: each sub-block is centred as a quantized
#         trained one is.
#   Q6_K  w = d sc_j (q - 32) per 16-element sub-block, q uniform in 0..63 (E[(q-32)^2] = 341.5),
#         sc_j = +-(64..127) with a random sign.
# d itself varies from block to block by a log-normal factor (sd 0.2 in log space, mean square 1)
# as the largest weight of a trained block does. The scales (and Q4_K's/Q6_K's 16- and 18-byte
# block headers) come from a table of 65,536 draws per tensor, indexed by two random bytes of
# each block: one gather per block instead of a float pass, so an 8B file is random bits, a
# gather and a write.

# bytes per block and elements per block of each tensor type
BLOCK = {"f32": (1, 4), "f16": (1, 2), "q4_0": (32, 18), "q8_0": (32, 34), "q4_k": (256, 144),
         "q6_k": (256, 210)}
GGML = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 8, "q4_k": 12, "q6_k": 14}
# the --type values: the file type (llama_ftype, general.file_type) and the type of its weights
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "q4_k_m": 15}
BASE_TYPE = {"f32": "f32", "f16": "f16", "q4_0": "q4_0", "q8_0": "q8_0", "q4_k_m": "q4_k"}
CHUNK_BYTES = 32 << 20  # blocks are generated and written 32 MiB at a time
JITTER = 0.2  # sd of log(d) between blocks


def use_more_bits(i, n):
    """llama-quantize's layers that get more bits in the _M mixes."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def weight_type(ftype, name, n_layer, tied):
    """The type llama-quantize gives this 2-D weight in a file of type ftype (its rules for dense
    llama-family models: src/quantize/quantize.c follows the same ones), so a file here has the
    size and mix of a user's download: output.weight (or the tied embedding) Q6_K unless the file
    is Q8_0; in Q4_K_M, attn_v and ffn_down (ffn_down_exps) Q6_K in use_more_bits layers."""
    base = BASE_TYPE[ftype]
    if base in ("f32", "f16"):
        return base
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        return base if base == "q8_0" else "q6_k"
    if ftype == "q4_k_m" and (name.endswith("attn_v.weight") or name.endswith("ffn_down.weight") or
                              name.endswith("ffn_down_exps.weight")):
        if use_more_bits(int(name.split(".")[1]), n_layer):
            return "q6_k"
    return base


def tensor_bytes(shape, wtype):
    elems, nb = BLOCK[wtype]
    return int(np.prod(shape)) // elems * nb


def jitter(rng, n):
    """Log-normal factors with mean square 1."""
    return np.exp(JITTER * rng.standard_normal(n) - JITTER * JITTER)


def random_bits(rng, nbytes):
    """nbytes random bytes as a writable uint8 array (the bit generator's raw output)."""
    return rng.bit_generator.random_raw((nbytes + 7) // 8).view(np.uint8)[:nbytes]


def scale_table(wtype, sigma, rng):
    """65,536 block headers for this tensor, as a (65536, h) uint8 array, and the byte offset
    in the block where they go (see the comment above for the arithmetic)."""
    n = 65536
    j = jitter(rng, n)
    sign = np.where(rng.bit_generator.random_raw(n) & 1, 1.0, -1.0)
    if wtype == "q4_0":
        d = sign * j * sigma / math.sqrt(21.5)
        return d.astype("<f2").view(np.uint8).reshape(n, 2), 0
    if wtype == "q8_0":
        d = j * sigma / math.sqrt(5397.5)
        return d.astype("<f2").view(np.uint8).reshape(n, 2), 0
    if wtype == "q4_k":
        sc = 32 + (rng.bit_generator.random_raw(n * 8) % 32).reshape(n, 8).astype(np.int64)
        m = np.rint(sc * 15 / 16).astype(np.int64)
        # E[w^2] per sub-block: (d sc)^2 21.25 + (d (7.5 sc - 8 m))^2
        ms = (sc * sc * 21.25 + (7.5 * sc - 8 * m) ** 2).mean(axis=1)
        d = (j * sigma / np.sqrt(ms)).astype("<f2")
        dmin = (d.astype(np.float32) * 8).astype("<f2")
        h = np.zeros((n, 16), dtype=np.uint8)
        h[:, 0:2] = d.view(np.uint8).reshape(n, 2)
        h[:, 2:4] = dmin.view(np.uint8).reshape(n, 2)
        s = h[:, 4:16]
        s[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
        s[:, 4:8] = m[:, 0:4] | ((m[:, 4:8] >> 4) << 6)
        s[:, 8:12] = (sc[:, 4:8] & 0xF) | ((m[:, 4:8] & 0xF) << 4)
        return h, 0
    if wtype == "q6_k":
        mag = 64 + (rng.bit_generator.random_raw(n * 16) % 64).reshape(n, 16).astype(np.int64)
        sgn = np.where(rng.bit_generator.random_raw(n * 16).reshape(n, 16) & 1, 1, -1)
        sc = (mag * sgn).astype(np.int8)
        ms = (mag * mag).mean(axis=1) * 341.5
        d = (j * sigma / np.sqrt(ms)).astype("<f2")
        h = np.zeros((n, 18), dtype=np.uint8)
        h[:, 0:16] = sc.view(np.uint8)
        h[:, 16:18] = d.view(np.uint8).reshape(n, 2)
        return h, 192  # scales[16] at 192, d at 208
    raise ValueError(wtype)


_TABLES = {}


def make_chunk(wtype, k, sigma, table, at, seed):
    """k blocks of the tensor from their own generator (so that chunks can be made in parallel
    and the file still depends only on --seed)."""
    rng = np.random.Generator(np.random.SFC64(seed))
    elems, nb = BLOCK[wtype]
    if wtype in ("f32", "f16"):
        x = rng.standard_normal(k, dtype=np.float32) * np.float32(sigma)
        return x.astype("<f4" if wtype == "f32" else "<f2").view(np.uint8)
    b = random_bits(rng, k * nb).reshape(k, nb)
    # two random bytes of the header's place pick the header (a gather per block)
    idx = b[:, at].astype(np.uint16) | (b[:, at + 1].astype(np.uint16) << 8)
    b[:, at:at + table.shape[1]] = table[idx]
    if wtype == "q8_0":  # ggml's Q8_0 never holds -128 (|x| / d rounds to at most 127): 0 instead
        q = b[:, 2:].view(np.int8)
        q[q == -128] = 0
    return b.reshape(-1)


def weight_chunks(wtype, n_elems, sigma, rng, pool, seed):
    """The tensor's data, in order, as uint8 arrays of at most CHUNK_BYTES: random blocks
    (quantized types) or N(0, sigma^2) values (f32, f16), made by the thread pool (NumPy
    releases the GIL in the generators and the gathers) a few chunks ahead of the writer."""
    elems, nb = BLOCK[wtype]
    n_blocks = n_elems // elems
    per = max(1, CHUNK_BYTES // nb)
    table, at = None, 0
    if wtype not in ("f32", "f16"):
        key = (wtype, sigma)
        if key not in _TABLES:  # one table per type and scale: the layers' q/k/v/o/ffn share them
            _TABLES[key] = scale_table(wtype, sigma, rng)
        table, at = _TABLES[key]
    starts = list(range(0, n_blocks, per))
    ahead = 2 * pool._max_workers
    futs = []
    for c, i in enumerate(starts):
        futs.append(pool.submit(make_chunk, wtype, min(per, n_blocks - i), sigma, table, at, seed + [c]))
        if len(futs) > ahead:
            yield futs.pop(0).result()
    for fu in futs:
        yield fu.result()


def llama3_factors(head_dim, base, factor, low, high, orig_ctx):
    """The llama3 rope scaling as frequency divisors (what convert_hf_to_gguf stores in
    rope_freqs.weight)."""
    out = []
    low_wl, high_wl = orig_ctx / low, orig_ctx / high
    for i in range(0, head_dim, 2):
        freq = 1.0 / base ** (i / head_dim)
        wl = 2 * math.pi / freq
        if wl < high_wl:
            out.append(1.0)
        elif wl > low_wl:
            out.append(factor)
        else:
            smooth = (orig_ctx / wl - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype=np.float32)


def synthetic_vocab(n_vocab):
    toks, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [2, 3, 3]
    for b in range(256):
        toks.append("<0x%02X>" % b)
        scores.append(0.0)
        types.append(6)
    i = 0
    while len(toks) < n_vocab:
        toks.append("\u2581t%d" % i)
        scores.append(-float(i))
        types.append(1)
        i += 1
    return [
        ("tokenizer.ggml.model", GGUF_STR, "llama"),
        ("tokenizer.ggml.tokens", GGUF_ARR, (GGUF_STR, toks)),
        ("tokenizer.ggml.scores", GGUF_ARR, (GGUF_F32, scores)),
        ("tokenizer.ggml.token_type", GGUF_ARR, (GGUF_I32, types)),
        ("tokenizer.ggml.bos_token_id", GGUF_U32, 1),
        ("tokenizer.ggml.eos_token_id", GGUF_U32, 2),
        ("tokenizer.ggml.unknown_token_id", GGUF_U32, 0),
        ("tokenizer.ggml.add_bos_token", GGUF_BOOL, True),
    ]


def copied_vocab(path):
    """The tokenizer.* keys of another GGUF, as raw bytes, and its vocabulary size."""
    data = open(path, "rb").read()
    if data[:4] != b"GGUF":
        sys.exit("%s: not a GGUF file" % path)
    pos = 8
    n_tensors, n_kv = struct.unpack_from("<QQ", data, pos)
    pos += 16
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip(vt, p):
        if vt in sizes:
            return p + sizes[vt]
        if vt == GGUF_STR:
            (n,) = struct.unpack_from("<Q", data, p)
            return p + 8 + n
        et, n = struct.unpack_from("<IQ", data, p)
        p += 12
        for _ in range(n):
            p = skip(et, p)
        return p

    keys, n_vocab = [], 0
    for _ in range(n_kv):
        start = pos
        (kl,) = struct.unpack_from("<Q", data, pos)
        key = data[pos + 8:pos + 8 + kl].decode()
        pos += 8 + kl
        (vt,) = struct.unpack_from("<I", data, pos)
        end = skip(vt, pos + 4)
        if key.startswith("tokenizer."):
            keys.append(data[start:end])
            if key == "tokenizer.ggml.tokens":
                n_vocab = struct.unpack_from("<Q", data, pos + 8)[0]
        pos = end
    return keys, n_vocab


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="tinyllama-1.1b", help="one of --list")
    ap.add_argument("--type", default="f16", choices=sorted(FILE_TYPE),
                    help="file type: the 2-D weights' type, or llama-quantize's mix (q4_k_m)")
    ap.add_argument("--vocab", help="copy the tokenizer of this GGUF (sets n_vocab)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--list", action="store_true", help="list the shapes and exit")
    ap.add_argument("-o", "--output", help="output .gguf")
    a = ap.parse_args()
    if a.list:
        for k, v in SHAPES.items():
            print("%-16s arch %-6s layers %2d d_model %4d heads %2d/%d ffn %5d vocab %6d" % ((k,) + v[:7]))
        return
    if a.shape not in SHAPES or not a.output:
        ap.error("--shape must be one of %s and -o is required" % ", ".join(SHAPES))
    arch, n_layer, d, n_head, n_kv, n_ff, n_vocab, n_ctx, rope_base, extra = SHAPES[a.shape]
    vocab_keys = None
    if a.vocab:
        vocab_keys, n_vocab = copied_vocab(a.vocab)
    hd = extra.get("head_dim", d // n_head)
    rng = np.random.Generator(np.random.SFC64(a.seed))

    # (name, shape as ggml ne [in, out], kind): kind picks the initialisation and the type
    tensors = [("token_embd.weight", (d, n_vocab), "embd")]
    if "llama3_rope" in extra:
        tensors.append(("rope_freqs.weight", (hd // 2,), "rope"))
    for i in range(n_layer):
        p = "blk.%d." % i
        tensors += [(p + "attn_norm.weight", (d,), "norm"),
                    (p + "attn_q.weight", (d, n_head * hd), "w"),
                    (p + "attn_k.weight", (d, n_kv * hd), "w"),
                    (p + "attn_v.weight", (d, n_kv * hd), "w")]
        if extra.get("qkv_bias"):
            tensors += [(p + "attn_q.bias", (n_head * hd,), "bias"),
                        (p + "attn_k.bias", (n_kv * hd,), "bias"),
                        (p + "attn_v.bias", (n_kv * hd,), "bias")]
        if extra.get("qk_norm"):
            tensors += [(p + "attn_q_norm.weight", (hd,), "norm"),
                        (p + "attn_k_norm.weight", (hd,), "norm")]
        tensors += [(p + "attn_output.weight", (n_head * hd, d), "w")]
        if extra.get("post_norms"):
            tensors += [(p + "post_attention_norm.weight", (d,), "norm")]
        if "moe" in extra:  # the router stays F32 (llama-quantize never quantizes it)
            n_exp, _, n_ffe = extra["moe"]
            tensors += [(p + "ffn_norm.weight", (d,), "norm"),
                        (p + "ffn_gate_inp.weight", (d, n_exp), "router"),
                        (p + "ffn_gate_exps.weight", (d, n_ffe, n_exp), "w"),
                        (p + "ffn_up_exps.weight", (d, n_ffe, n_exp), "w"),
                        (p + "ffn_down_exps.weight", (n_ffe, d, n_exp), "w")]
        else:
            tensors += [(p + "ffn_norm.weight", (d,), "norm"),
                        (p + "ffn_gate.weight", (d, n_ff), "w"),
                        (p + "ffn_up.weight", (d, n_ff), "w"),
                        (p + "ffn_down.weight", (n_ff, d), "w")]
        if extra.get("post_norms"):
            tensors += [(p + "post_ffw_norm.weight", (d,), "norm")]
    tensors.append(("output_norm.weight", (d,), "norm"))
    if not extra.get("tied"):
        tensors.append(("output.weight", (d, n_vocab), "w"))

    def ttype(name, kind):
        if kind in ("w", "embd"):
            return weight_type(a.type, name, n_layer, bool(extra.get("tied")))
        return "f32"

    kvs = [("general.architecture", GGUF_STR, arch),
           ("general.name", GGUF_STR, "vkformer bench %s %s (random weights)" % (a.shape, a.type)),
           ("general.alignment", GGUF_U32, ALIGN),
           ("general.file_type", GGUF_U32, FILE_TYPE[a.type]),
           (arch + ".context_length", GGUF_U32, n_ctx),
           (arch + ".embedding_length", GGUF_U32, d),
           (arch + ".block_count", GGUF_U32, n_layer),
           (arch + ".feed_forward_length", GGUF_U32, n_ff),
           (arch + ".attention.head_count", GGUF_U32, n_head),
           (arch + ".attention.head_count_kv", GGUF_U32, n_kv),
           (arch + ".rope.freq_base", GGUF_F32, rope_base),
           (arch + ".rope.dimension_count", GGUF_U32, hd),
           (arch + ".attention.layer_norm_rms_epsilon", GGUF_F32, 1e-5 if arch == "llama" else 1e-6)]
    if "head_dim" in extra:
        kvs += [(arch + ".attention.key_length", GGUF_U32, hd),
                (arch + ".attention.value_length", GGUF_U32, hd)]
    if "moe" in extra:
        kvs += [(arch + ".expert_count", GGUF_U32, extra["moe"][0]),
                (arch + ".expert_used_count", GGUF_U32, extra["moe"][1]),
                (arch + ".expert_feed_forward_length", GGUF_U32, extra["moe"][2])]
    if "swa" in extra:
        kvs += [(arch + ".attention.sliding_window", GGUF_U32, extra["swa"][0]),
                (arch + ".rope.freq_base_swa", GGUF_F32, extra["swa"][1])]
    # llama3 rope scaling: as llama.cpp's converter writes it, the factors in rope_freqs.weight
    # and no rope.scaling.* keys ("llama3" is not a GGUF scaling type: loaders refuse it)
    header_kv = b"".join(kv_bytes(*k) for k in kvs)
    n_kv_total = len(kvs)
    if vocab_keys is not None:
        header_kv += b"".join(vocab_keys)
        n_kv_total += len(vocab_keys)
    else:
        vk = synthetic_vocab(n_vocab)
        header_kv += b"".join(kv_bytes(*k) for k in vk)
        n_kv_total += len(vk)

    for name, shape, kind in tensors:
        t = ttype(name, kind)
        if shape[0] % BLOCK[t][0]:
            sys.exit("%s: %s rows of %d are not whole %s blocks of %d (llama-quantize would fall back "
                     "to another type there; use q4_0, q8_0 or f16 for this shape)"
                     % (a.shape, name, shape[0], t.upper(), BLOCK[t][0]))

    infos, offset = bytearray(), 0
    offsets = []
    for name, shape, kind in tensors:
        nb = name.encode()
        offsets.append(offset)
        infos += struct.pack("<Q", len(nb)) + nb + struct.pack("<I", len(shape))
        infos += b"".join(struct.pack("<Q", s) for s in shape)
        infos += struct.pack("<IQ", GGML[ttype(name, kind)], offset)
        offset += (tensor_bytes(shape, ttype(name, kind)) + ALIGN - 1) // ALIGN * ALIGN
    total = offset

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1)
    with open(a.output, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), n_kv_total))
        f.write(header_kv)
        f.write(infos)
        f.write(b"\0" * ((-f.tell()) % ALIGN))
        data_start = f.tell()
        for i, (name, shape, kind) in enumerate(tensors):
            n = int(np.prod(shape))
            assert f.tell() - data_start == offsets[i]
            if kind in ("w", "embd"):
                # N(0, 1) embeddings, N(0, 1/d_in) projections: each layer keeps its input's scale
                sigma = 1.0 if kind == "embd" else 1.0 / math.sqrt(shape[0])
                nbytes = 0
                for chunk in weight_chunks(ttype(name, kind), n, sigma, rng, pool, [a.seed, i]):
                    f.write(chunk)
                    nbytes += chunk.size
            else:
                if kind == "norm":
                    x = 1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)
                elif kind == "bias":
                    x = 0.02 * rng.standard_normal(n, dtype=np.float32)
                elif kind == "router":  # N(0, 1/d), as a projection
                    x = rng.standard_normal(n, dtype=np.float32) / np.float32(math.sqrt(shape[0]))
                else:  # rope factors
                    f_, lo, hi, orig = extra["llama3_rope"]
                    x = llama3_factors(hd, rope_base, f_, lo, hi, orig)
                f.write(x.astype("<f4").tobytes())
                nbytes = n * 4
            f.write(b"\0" * ((-nbytes) % ALIGN))
            if sys.stderr.isatty():
                sys.stderr.write("\r%s: %d/%d tensors, %.0f%%" % (a.output, i + 1, len(tensors),
                                 100.0 * (f.tell() - data_start) / total))
    n_params = sum(int(np.prod(s)) for _, s, _ in tensors)
    sys.stderr.write("\n%s: %s %s, %.3f B parameters, %.2f GB\n" % (a.output, a.shape, a.type, n_params / 1e9,
                                                                   (data_start + total) / 1e9))


if __name__ == "__main__":
    main()
