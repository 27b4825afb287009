#!/usr/bin/env python3
"""Writes a random-weight GGUF in the shapes of a real model, for benchmarks at real sizes.

    /usr/bin/python3 tools/make_bench_model.py --shape tinyllama-1.1b --type q8_0 -o /tmp/tl-q8_0.gguf
    /usr/bin/python3 tools/make_bench_model.py --list

Needs only NumPy (Debian's python3-numpy). The files are generated on demand and never
committed (a 1.1B F16 file is 2.2 GB). Other weight types: write F16 here, then
`vkformer quantize IN OUT TYPE`.

Weights are random but shaped like a trained model's, so activations stay in a realistic range
(the same scheme as the shared fixtures' generators): token_embd ~ N(0, 1); the attention and
FFN input projections and the output ~ N(0, 1/d_in); norm weights ~ 1 + N(0, 0.1^2); biases
~ N(0, 0.02^2). Speed depends only on the shapes and types, not on the values.

The vocabulary is a synthetic SentencePiece-style one of the model's size (<unk>, <s>, </s>, the
256 byte tokens, then pieces "▁t<i>"), so every shape loads with the llama tokenizer whatever
the real model uses; the LM head and embedding have the real vocabulary's size, which is what
the benchmark measures. With --vocab FILE.gguf the tokenizer keys of that file are copied
instead (its size then sets n_vocab).
"""
import argparse
import math
import struct
import sys

import numpy as np

# name: (arch, n_layer, d_model, n_head, n_kv_head, n_ff, n_vocab, n_ctx, rope_base, extras)
SHAPES = {
    "tinyllama-1.1b": ("llama", 22, 2048, 32, 4, 5632, 32000, 2048, 10000.0, {}),
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
    # a small shape for testing this tool and quick runs
    "tiny-256": ("llama", 4, 256, 8, 4, 768, 512, 512, 10000.0, {}),
}

GGML = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 8}
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7}
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


def round_away(x):
    """C's roundf (half away from zero), as ggml's reference quantizers use."""
    return np.trunc(x + np.copysign(np.float32(0.5), x))


def quant_q8_0(x):
    b = x.reshape(-1, 32)
    amax = np.abs(b).max(axis=1)
    d = amax / 127.0
    inv = np.where(d > 0, 1.0 / np.where(d > 0, d, 1), 0).astype(np.float32)
    q = round_away(b * inv[:, None]).astype(np.int8)
    out = np.empty((b.shape[0], 34), dtype=np.uint8)
    out[:, 0:2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def quant_q4_0(x):
    b = x.reshape(-1, 32)
    idx = np.abs(b).argmax(axis=1)
    mx = b[np.arange(b.shape[0]), idx]
    d = mx / -8.0
    inv = np.where(d != 0, 1.0 / np.where(d != 0, d, 1), 0).astype(np.float32)
    q = np.minimum(15, (b * inv[:, None] + 8.5).astype(np.int8)).astype(np.uint8)
    out = np.empty((b.shape[0], 18), dtype=np.uint8)
    out[:, 0:2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def tensor_bytes(shape, wtype):
    n = int(np.prod(shape))
    if wtype == "f32":
        return n * 4
    if wtype == "f16":
        return n * 2
    if wtype == "q8_0":
        return n // 32 * 34
    if wtype == "q4_0":
        return n // 32 * 18
    raise ValueError(wtype)


def encode(x, wtype):
    if wtype == "f32":
        return x.astype("<f4").tobytes()
    if wtype == "f16":
        return x.astype("<f2").tobytes()
    if wtype == "q8_0":
        return quant_q8_0(x)
    return quant_q4_0(x)


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
    ap.add_argument("--type", default="f16", choices=sorted(GGML), help="type of the 2-D weights")
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
    rng = np.random.default_rng(a.seed)

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
        tensors += [(p + "ffn_norm.weight", (d,), "norm"),
                    (p + "ffn_gate.weight", (d, n_ff), "w"),
                    (p + "ffn_up.weight", (d, n_ff), "w"),
                    (p + "ffn_down.weight", (n_ff, d), "w")]
        if extra.get("post_norms"):
            tensors += [(p + "post_ffw_norm.weight", (d,), "norm")]
    tensors.append(("output_norm.weight", (d,), "norm"))
    if not extra.get("tied"):
        tensors.append(("output.weight", (d, n_vocab), "w"))

    def ttype(kind):
        return a.type if kind in ("w", "embd") else "f32"

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

    infos, offset = bytearray(), 0
    offsets = []
    for name, shape, kind in tensors:
        nb = name.encode()
        offsets.append(offset)
        infos += struct.pack("<Q", len(nb)) + nb + struct.pack("<I", len(shape))
        infos += b"".join(struct.pack("<Q", s) for s in shape)
        infos += struct.pack("<IQ", GGML[ttype(kind)], offset)
        offset += (tensor_bytes(shape, ttype(kind)) + ALIGN - 1) // ALIGN * ALIGN
    total = offset

    with open(a.output, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), n_kv_total))
        f.write(header_kv)
        f.write(infos)
        f.write(b"\0" * ((-f.tell()) % ALIGN))
        data_start = f.tell()
        for i, (name, shape, kind) in enumerate(tensors):
            n = int(np.prod(shape))
            if kind == "embd":
                x = rng.standard_normal(n, dtype=np.float32)
            elif kind == "w":
                x = rng.standard_normal(n, dtype=np.float32) * np.float32(1.0 / math.sqrt(shape[0]))
            elif kind == "norm":
                x = 1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)
            elif kind == "bias":
                x = 0.02 * rng.standard_normal(n, dtype=np.float32)
            else:  # rope factors
                f_, lo, hi, orig = extra["llama3_rope"]
                x = llama3_factors(hd, rope_base, f_, lo, hi, orig)
            assert f.tell() - data_start == offsets[i]
            b = encode(x.astype(np.float32), ttype(kind))
            f.write(b)
            f.write(b"\0" * ((-len(b)) % ALIGN))
            if sys.stderr.isatty():
                sys.stderr.write("\r%s: %d/%d tensors, %.0f%%" % (a.output, i + 1, len(tensors),
                                 100.0 * (f.tell() - data_start) / total))
    n_params = sum(int(np.prod(s)) for _, s, _ in tensors)
    sys.stderr.write("\n%s: %s %s, %.3f B parameters, %.2f GB\n" % (a.output, a.shape, a.type, n_params / 1e9,
                                                                   (data_start + total) / 1e9))


if __name__ == "__main__":
    main()
