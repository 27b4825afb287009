"""What the llama.cpp reference generators (tools/refs/make_<set>.py) share: the pinned gguf-py,
the tiny 512-token SentencePiece-style vocabulary, GGUF writing, and the cases (llama.cpp's
logits for each prompt, cases.json, the README's provenance lines).

Every generator is deterministic: weights from numpy's default_rng with a fixed seed, GGUFs by the
pinned gguf-py (keys and tensors in a fixed order), logits by the pinned llama.cpp build
(tools/refs/llama_cpp_build.py), each case run twice and required byte-identical.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_cpp_build  # noqa: E402
import pins  # noqa: E402

ISA = "avx2"

PROMPTS = {
    "fox": "The quick brown fox jumps over the lazy dog.",
    "genesis": "In the beginning God created the heaven and the earth.",
    "mixed": "Vulkan 1.3 runs on AMD, Intel & NVIDIA \u2014 42 tokens/s!",
}

# The llama.cpp settings of every reference (README text and cases.json)
RUN_TEXT = ("CPU backend only, 1 thread, F32 K and V cache, flash attention off, swa_full; the prompt in "
            "one llama_decode with the logits of every position, then 24 greedy steps of one token each "
            "(argmax, lowest id on ties); tokens from llama_tokenize(add_special = true, parse_special = "
            "true)")


def gguf():
    """The pinned llama.cpp tree's gguf-py (one pin rules: not a separately installed gguf)."""
    path = os.path.join(pins.llama_cpp_tree(), "gguf-py")
    if path not in sys.path:
        sys.path.insert(0, path)
    import gguf as g

    if not os.path.abspath(g.__file__).startswith(path):
        raise SystemExit(f"refs: gguf was imported from {g.__file__}, not from the pin's {path}")
    return g


def tiny_vocab():
    """The 512-token SentencePiece-style vocabulary: 0 <unk>, 1 <s>, 2 </s>, 3..258 the byte tokens
    <0x00>..<0xFF>, then pieces scored -1, -2, ... in this order: the space mark, letters, digits,
    punctuation, space-prefixed letters, 50 frequent English bigrams, 10 space-prefixed words, 6
    trigrams, then the remaining two-letter lowercase pairs in alphabetical order up to 512.
    Returns (tokens, scores, token types)."""
    toks, scores, types = ["<unk>", "<s>", "</s>"], [0.0] * 3, [2, 3, 3]  # UNKNOWN, CONTROL
    for b in range(256):
        toks.append(f"<0x{b:02X}>")
        scores.append(0.0)
        types.append(6)  # BYTE
    lower = "abcdefghijklmnopqrstuvwxyz"
    letters = lower + lower.upper()
    pieces = ["\u2581"] + list(letters) + list("0123456789") + list(".,;:!?'\"()-_/[]{}<>=+*&%$#@")
    pieces += ["\u2581" + c for c in letters]
    pieces += ("th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io "
               "le ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur").split()
    pieces += ["\u2581" + w for w in "th the an and in of to is it he".split()]
    pieces += "the and ing ion ent her".split()
    have = set(pieces)
    for a in lower:
        for b in lower:
            if len(toks) + len(pieces) >= 512:
                break
            if a + b not in have:
                pieces.append(a + b)
                have.add(a + b)
    for i, p in enumerate(pieces):
        toks.append(p)
        scores.append(-1.0 - i)
        types.append(1)  # NORMAL
    assert len(toks) == 512 and len(set(toks)) == 512
    return toks, scores, types


_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def read_gguf_kv(path):
    """The metadata of a GGUF as {key: value} (arrays as lists). A plain reader: gguf-py's
    GGUFReader builds one numpy view per array element and takes minutes on a 50k-token
    vocabulary."""
    import struct

    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"GGUF":
        raise SystemExit(f"refs: {path}: not a GGUF file")
    pos = 24
    n_kv = struct.unpack_from("<Q", data, 16)[0]

    def string():
        nonlocal pos
        n = struct.unpack_from("<Q", data, pos)[0]
        pos += 8 + n
        return data[pos - n:pos].decode("utf-8")

    def value(t):
        nonlocal pos
        if t == 8:
            return string()
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, pos)
            pos += 12
            return [value(et) for _ in range(n)]
        fmt = _SCALAR[t]
        v = struct.unpack_from(fmt, data, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    out = {}
    for _ in range(n_kv):
        k = string()
        t = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        out[k] = value(t)
    return out


def add_tiny_tokenizer(w, space_prefix=None):
    """The tiny vocabulary's tokenizer.ggml.* keys (space_prefix False: Gemma's converter's
    add_space_prefix = false)."""
    toks, scores, types = tiny_vocab()
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(toks)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    if space_prefix is not None:
        w.add_add_space_prefix(space_prefix)


def write_gguf(path, arch, fill, tensors, raw_types=None):
    """Writes a GGUF: general.architecture, then fill(w) adds the keys, then the tensors in dict
    order (numpy arrays in ggml order reversed, i.e. [out, in]; raw_types maps a name to the
    GGMLQuantizationType of its already-quantized bytes)."""
    g = gguf()
    w = g.GGUFWriter(path, arch)
    fill(w)
    for name, a in tensors.items():
        if raw_types and name in raw_types:
            w.add_tensor(name, a, raw_dtype=raw_types[name])
        else:
            w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def run_case(model_path, text, n_ctx, n_greedy=24):
    """llama.cpp's tokens, logits rows (prompt then greedy) and greedy tokens for one prompt, run
    twice (the second teacher-forced with the first's greedy tokens) and required byte-identical."""
    ref = llama_cpp_build.runner(ISA)
    toks = ref.tokenize(model_path, text)
    lg, greedy = ref.logits(model_path, toks, n_greedy=n_greedy, n_ctx=n_ctx)
    again, _ = ref.logits(model_path, toks, greedy=greedy, n_ctx=n_ctx)
    if not np.array_equal(lg, again):
        raise SystemExit(f"refs: {model_path}: llama.cpp's logits differ between two runs")
    return toks, lg, greedy


def case_fields():
    """The provenance every case carries: the llama.cpp version and the ISA path of its logits
    (src/model/verify.c reads "ggml_isa" to choose the ggml-activation mode's target)."""
    return {"llama_cpp": llama_cpp_build.version(), "ggml_isa": ISA}


def write_case(out, stem, pid, text, n_ctx, add_bos=True, extra=None):
    """Runs one prompt on out/stem.gguf, writes stem.pid.{prompt,greedy}.f32 and returns the case
    (the fields the suite reads: name, model, prompt, add_bos, tokens, n_vocab, prompt_logits,
    greedy_tokens, greedy_logits; plus case_fields()) and the logits rows."""
    model = stem + ".gguf"
    toks, lg, greedy = run_case(os.path.join(out, model), text, n_ctx)
    n = len(toks)
    lg[:n].astype("<f4").tofile(os.path.join(out, f"{stem}.{pid}.prompt.f32"))
    lg[n:].astype("<f4").tofile(os.path.join(out, f"{stem}.{pid}.greedy.f32"))
    case = dict(name=f"{stem}/{pid}", model=model)
    case.update(extra or {})
    case.update(prompt=text, add_bos=add_bos,
                tokens=toks, n_vocab=int(lg.shape[1]), prompt_logits=f"{stem}.{pid}.prompt.f32",
                greedy_tokens=greedy, greedy_logits=f"{stem}.{pid}.greedy.f32")
    case.update(case_fields())
    return case, lg


def write_cases(out, cases):
    with open(os.path.join(out, "cases.json"), "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]\n")


def min_gap(rows):
    """The smallest top-1/top-2 gap over rows (what decides greedy tokens)."""
    top2 = np.sort(rows, axis=1)[:, -2:]
    return float((top2[:, 1] - top2[:, 0]).min())


def provenance(generator):
    """The README's lines naming the generator command, the pin and the versions."""
    v, f, sha, _ = pins.PINS[llama_cpp_build.PIN]
    gv = _gguf_py_version()
    return (f"Generated by `python3 tools/refs/{generator} --out DIR` (deterministic: a re-run writes the same "
            f"bytes).\n\n"
            f"- llama.cpp {llama_cpp_build.version()}: the sdist `{f}` (sha256 `{sha}`), pinned in "
            f"tools/refs/pins.py, built by tools/refs/llama_cpp_build.py for the ISA path `{ISA}` "
            f"(x86-64 SSE4.2, AVX, AVX2, BMI2, FMA, F16C; no AVX-512, no AMX), CPU backend only.\n"
            f"- GGUFs written by that tree's gguf-py ({gv}); numpy {np.__version__}.\n"
            f"- Logits: {RUN_TEXT}. Each case ran twice; the logits were byte-identical.\n"
            f"- Every case in cases.json names `\"llama_cpp\": \"{llama_cpp_build.version()}\"` and "
            f"`\"ggml_isa\": \"{ISA}\"`.\n")


def _gguf_py_version():
    path = os.path.join(pins.llama_cpp_tree(), "gguf-py", "pyproject.toml")
    try:
        for line in open(path):
            if line.startswith("version"):
                return "gguf " + line.split("=")[1].strip().strip('"')
    except OSError:
        pass
    return "gguf (version unknown)"


def out_dir(doc):
    """The --out directory of a generator's command line (made if missing)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    return out


def add_llama_hparams(w, name, ctx, d, n_layer, ff, n_head, n_head_kv, head_dim, n_vocab, file_type):
    """The llama architecture's keys of the tiny llama models (llama-tiny, llama-kq), in one order."""
    w.add_name(name)
    w.add_context_length(ctx)
    w.add_embedding_length(d)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(file_type)
    add_tiny_tokenizer(w)
