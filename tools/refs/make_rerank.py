#!/usr/bin/env python3
"""Writes the rerank reference set: a tiny random-weight BERT cross-encoder (llama.cpp's
pooling_type 4 = rank, the classifier head cls / cls.output) as a GGUF, and llama.cpp's
relevance scores of query-document pairs.

    python3 tools/refs/make_rerank.py --out DIR

Model: bert, 2 layers, d_model 32, 2 heads, FFN 64, 64 positions, 2 token types, LayerNorm eps
1e-12, the WordPiece vocabulary of BGE small (llama.cpp's models/ggml-vocab-bert-bge.gguf, 30522
tokens, copied with its tokenizer keys); weights seed 4321: embeddings N(0, 1), matrices
N(0, 1/in), biases N(0, 0.1^2), norms 1 + N(0, 0.1^2); cls.weight [32, 32] + bias (the pooler's
dense layer, tanh after it), cls.output.weight [1, 32] + bias (one score). The same weights
as a Hugging Face BertForSequenceClassification directory (write_hf), whose head is the same
math (BertPooler dense + tanh, classifier).

A second model, xlmr-rerank-tiny.gguf: an XLM-RoBERTa cross-encoder as llama.cpp's converter
writes XLMRobertaForSequenceClassification (arch bert, one token type, 128 positions, LayerNorm
eps 1e-5, the same block and head weights), its vocabulary the t5 (UGM) GGUF of
tests/data/tokenizers/t5_gguf realigned as the converter does (<s> <pad> </s> <unk>, pieces one
id later), sep = </s>, add_bos / add_eos / add_sep on; its scores in rerank-xlmr.json.

Scores: the pinned libllama (tools/refs/llama_cpp_build.py, ctypes): a context with embeddings
on, pooling_type RANK, flash attention off, one thread; each pair as llama-server's format_prompt_rerank builds it
for a model without a rerank template ([BOS if add_bos] query [EOS if add_eos] [SEP if add_sep]
document [EOS if add_eos], texts tokenized with llama_tokenize(add_special = false,
parse_special = false)); one llama_decode per pair, llama_get_embeddings_seq's first float.
Standard library, numpy and the pin's gguf-py.
"""
import ctypes
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import llama_cpp_build  # noqa: E402
import pins  # noqa: E402

SEED = 4321
L, D, H, FF, CTX, NT = 2, 32, 2, 64, 64, 2
MODEL = "bert-rerank-tiny.gguf"
HF_DIR = "bert-rerank-tiny-hf"
VOCAB = "ggml-vocab-bert-bge.gguf"
QUERIES = [
    ("what is the capital of france?",
     ["Paris is the capital and largest city of France.",
      "The Eiffel Tower is in Paris.",
      "Berlin is the capital of Germany.",
      "bananas are yellow",
      ""]),
    ("How do GPUs run transformers?",
     ["Vulkan compute shaders multiply matrices on the GPU.",
      "A transformer is a neural network built from attention layers and MLPs; inference on a "
      "GPU runs each layer as a few kernels over the whole batch of tokens at once.",
      "[CLS] [SEP] special-token text stays text"]),
]


def weights(n_vocab):
    rng = np.random.default_rng(SEED)
    mat = lambda o, i: (rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32)  # noqa: E731
    vec = lambda n: (0.1 * rng.standard_normal(n)).astype(np.float32)  # noqa: E731
    norm = lambda n: (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)  # noqa: E731
    t = {"token_embd.weight": rng.standard_normal((n_vocab, D)).astype(np.float32),
         "token_types.weight": rng.standard_normal((NT, D)).astype(np.float32),
         "position_embd.weight": rng.standard_normal((CTX, D)).astype(np.float32),
         "token_embd_norm.weight": norm(D), "token_embd_norm.bias": vec(D)}
    for il in range(L):
        p = f"blk.{il}."
        for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
            t[p + n + ".weight"] = mat(D, D)
            t[p + n + ".bias"] = vec(D)
        t[p + "attn_output_norm.weight"], t[p + "attn_output_norm.bias"] = norm(D), vec(D)
        t[p + "ffn_up.weight"], t[p + "ffn_up.bias"] = mat(FF, D), vec(FF)
        t[p + "ffn_down.weight"], t[p + "ffn_down.bias"] = mat(D, FF), vec(D)
        t[p + "layer_output_norm.weight"], t[p + "layer_output_norm.bias"] = norm(D), vec(D)
    t["cls.weight"], t["cls.bias"] = mat(D, D), vec(D)
    t["cls.output.weight"], t["cls.output.bias"] = mat(1, D), vec(1)
    return t


def write_model(path, kv):
    def fill(w):
        w.add_name("bert-rerank-tiny")
        w.add_context_length(CTX)
        w.add_embedding_length(D)
        w.add_block_count(L)
        w.add_feed_forward_length(FF)
        w.add_head_count(H)
        w.add_layer_norm_eps(1e-12)
        w.add_causal_attention(False)
        w.add_uint32("bert.pooling_type", 4)  # LLAMA_POOLING_TYPE_RANK
        w.add_file_type(0)
        w.add_token_type_count(NT)
        w.add_tokenizer_model("bert")
        w.add_tokenizer_pre(kv["tokenizer.ggml.pre"])
        w.add_token_list(kv["tokenizer.ggml.tokens"])
        w.add_token_types(kv["tokenizer.ggml.token_type"])
        w.add_unk_token_id(kv["tokenizer.ggml.unknown_token_id"])
        w.add_sep_token_id(kv["tokenizer.ggml.seperator_token_id"])
        w.add_pad_token_id(kv["tokenizer.ggml.padding_token_id"])
        w.add_uint32("tokenizer.ggml.cls_token_id", kv["tokenizer.ggml.cls_token_id"])
        w.add_uint32("tokenizer.ggml.mask_token_id", kv["tokenizer.ggml.mask_token_id"])
    common.write_gguf(path, "bert", fill, weights(len(kv["tokenizer.ggml.tokens"])))


XLMR_MODEL = "xlmr-rerank-tiny.gguf"
XLMR_VOCAB = "tests/data/tokenizers/t5_gguf/vocab.gguf"  # SentencePiece Unigram as a t5 GGUF
XLMR_CTX = 128  # positions after the converter drops the first padding_idx + 1 = 2 rows


def xlmr_vocab(kv):
    """XLM-RoBERTa's layout of a SentencePiece vocabulary, as llama.cpp's converter
    (conversion/bert.py, _xlmroberta_set_vocab) realigns it: <s> <pad> </s> <unk> first, the
    pieces from SentencePiece id 3 on one id later (fairseq's offset)."""
    return (["<s>", "<pad>", "</s>", "<unk>"] + kv["tokenizer.ggml.tokens"][3:],
            [0.0] * 4 + kv["tokenizer.ggml.scores"][3:],
            [3, 3, 3, 2] + kv["tokenizer.ggml.token_type"][3:])


def write_xlmr(path, kv):
    """A tiny XLM-RoBERTa cross-encoder as llama.cpp's converter writes
    XLMRobertaForSequenceClassification (bge-reranker-v2-m3): arch bert, one token type, a t5
    (UGM) vocabulary with its charsmap, ids <s> 0 / <pad> 1 / </s> 2 / <unk> 3, sep = </s>,
    add_bos / add_eos / add_sep on (gguf-py's RobertaProcessing), pooling rank, the same
    weights as the BERT model but for the vocabulary's, token types' and positions' rows."""
    toks, scores, types = xlmr_vocab(kv)

    def fill(w):
        w.add_name("xlmr-rerank-tiny")
        w.add_context_length(XLMR_CTX)
        w.add_embedding_length(D)
        w.add_block_count(L)
        w.add_feed_forward_length(FF)
        w.add_head_count(H)
        w.add_layer_norm_eps(1e-5)
        w.add_causal_attention(False)
        w.add_uint32("bert.pooling_type", 4)  # LLAMA_POOLING_TYPE_RANK
        w.add_file_type(0)
        w.add_tokenizer_model("t5")
        w.add_tokenizer_pre("default")
        w.add_token_list(toks)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_add_space_prefix(kv["tokenizer.ggml.add_space_prefix"])
        w.add_token_type_count(1)
        w.add_remove_extra_whitespaces(kv["tokenizer.ggml.remove_extra_whitespaces"])
        w.add_precompiled_charsmap(bytes(kv["tokenizer.ggml.precompiled_charsmap"]))
        w.add_bos_token_id(0)
        w.add_eos_token_id(2)
        w.add_unk_token_id(3)
        w.add_sep_token_id(2)
        w.add_pad_token_id(1)
        w.add_uint32("tokenizer.ggml.cls_token_id", 0)
        w.add_bool("tokenizer.ggml.add_bos_token", True)
        w.add_bool("tokenizer.ggml.add_eos_token", True)
        w.add_bool("tokenizer.ggml.add_sep_token", True)
    t = weights(len(toks))
    t["token_types.weight"] = t["token_types.weight"][:1]
    t["position_embd.weight"] = np.random.default_rng(SEED + 1).standard_normal(
        (XLMR_CTX, D)).astype(np.float32)  # the pieces are short: the long pair takes ~100
    common.write_gguf(path, "bert", fill, t)


def hf_name(n):
    """Hugging Face BertForSequenceClassification's name of a GGUF tensor of this model."""
    fixed = {"token_embd.weight": "bert.embeddings.word_embeddings.weight",
             "token_types.weight": "bert.embeddings.token_type_embeddings.weight",
             "position_embd.weight": "bert.embeddings.position_embeddings.weight",
             "token_embd_norm.weight": "bert.embeddings.LayerNorm.weight",
             "token_embd_norm.bias": "bert.embeddings.LayerNorm.bias",
             "cls.weight": "bert.pooler.dense.weight", "cls.bias": "bert.pooler.dense.bias",
             "cls.output.weight": "classifier.weight", "cls.output.bias": "classifier.bias"}
    if n in fixed:
        return fixed[n]
    _, il, rest = n.split(".", 2)
    part = {"attn_q": "attention.self.query", "attn_k": "attention.self.key",
            "attn_v": "attention.self.value", "attn_output": "attention.output.dense",
            "attn_output_norm": "attention.output.LayerNorm", "ffn_up": "intermediate.dense",
            "ffn_down": "output.dense", "layer_output_norm": "output.LayerNorm"}
    base, kind = rest.rsplit(".", 1)
    return f"bert.encoder.layer.{il}.{part[base]}.{kind}"


def write_hf(out, kv):
    """The same model as a Hugging Face BertForSequenceClassification directory: config.json,
    model.safetensors (F32, HF's names: the GGUF's cls is BertPooler's dense layer, cls.output
    the classifier), vocab.txt (the GGUF's WordPiece pieces back in HF's spelling: llama.cpp's
    converter writes a word start as U+2581 + piece and a continuation "##piece" as piece;
    control tokens as they are) and tokenizer_config.json (uncased)."""
    os.makedirs(out, exist_ok=True)
    toks, types = kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.token_type"]
    vocab = [t if ty == 3 else (t[1:] if t.startswith("\u2581") else "##" + t)
             for t, ty in zip(toks, types)]
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer",
                   "model_max_length": CTX}, f, indent=1)
    cfg = {"architectures": ["BertForSequenceClassification"], "model_type": "bert",
           "hidden_size": D, "num_hidden_layers": L, "num_attention_heads": H,
           "intermediate_size": FF, "max_position_embeddings": CTX, "type_vocab_size": NT,
           "vocab_size": len(toks), "layer_norm_eps": 1e-12, "hidden_act": "gelu",
           "pad_token_id": 0, "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    t = {hf_name(k): v for k, v in weights(len(toks)).items()}
    header, blobs, off = {}, [], 0
    for k in sorted(t):
        b = np.ascontiguousarray(t[k], dtype="<f4").tobytes()
        header[k] = {"dtype": "F32", "shape": list(t[k].shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def scores(path, queries, ctx=CTX):
    ref = llama_cpp_build.runner(common.ISA)
    ref._quiet()
    Lc = ref.L
    mp = Lc.llama_model_default_params()
    m = Lc.llama_model_load_from_file(path.encode(), mp)
    if not m:
        raise SystemExit(f"make_rerank: llama.cpp cannot load {path}")
    v = Lc.llama_model_get_vocab(m)
    cp = Lc.llama_context_default_params()
    cp.n_ctx = ctx
    cp.n_batch = cp.n_ubatch = ctx
    cp.n_threads = cp.n_threads_batch = 1
    cp.embeddings = True
    cp.pooling_type = 4  # LLAMA_POOLING_TYPE_RANK
    cp.flash_attn_type = 0  # disabled, as every reference here (auto converts K and V to F16)
    c = Lc.llama_init_from_model(m, cp)
    if not c:
        raise SystemExit("make_rerank: llama.cpp cannot make a context")

    def tok(text):
        data = text.encode()
        buf = (Lc.llama_token * (len(data) + 8))()
        n = Lc.llama_tokenize(v, data, len(data), buf, len(buf), False, False)
        assert n >= 0
        return [buf[i] for i in range(n)]

    eos = Lc.llama_vocab_eos(v)
    if eos == -1:
        eos = Lc.llama_vocab_sep(v)
    out = []
    for q, docs in queries:
        rows = []
        for d in docs:  # format_prompt_rerank, no rerank template
            t = []
            if Lc.llama_vocab_get_add_bos(v):
                t.append(Lc.llama_vocab_bos(v))
            t += tok(q)
            if Lc.llama_vocab_get_add_eos(v):
                t.append(eos)
            if Lc.llama_vocab_get_add_sep(v):
                t.append(Lc.llama_vocab_sep(v))
            t += tok(d)
            if Lc.llama_vocab_get_add_eos(v):
                t.append(eos)
            Lc.llama_memory_clear(Lc.llama_get_memory(c), True)
            b = Lc.llama_batch_init(len(t), 0, 1)
            for i, x in enumerate(t):
                b.token[i], b.pos[i], b.n_seq_id[i] = x, i, 1
                b.seq_id[i][0] = 0
                b.logits[i] = 1
            b.n_tokens = len(t)
            if Lc.llama_decode(c, b) != 0:
                raise SystemExit("make_rerank: llama_decode failed")
            e = Lc.llama_get_embeddings_seq(c, 0)
            rows.append(dict(document=d, tokens=t, score=float(ctypes.cast(e, ctypes.POINTER(ctypes.c_float))[0])))
            Lc.llama_batch_free(b)
        out.append(dict(query=q, results=rows))
    n_cls = Lc.llama_model_n_cls_out(m)
    Lc.llama_free(c)
    Lc.llama_model_free(m)
    return out, n_cls


def main():
    out = common.out_dir(__doc__)
    src = os.path.join(pins.llama_cpp_tree(), "models", VOCAB)
    kv = common.read_gguf_kv(src)
    path = os.path.join(out, MODEL)
    write_model(path, kv)
    write_hf(os.path.join(out, HF_DIR), kv)
    res, n_cls = scores(path, QUERIES)
    again, _ = scores(path, QUERIES)
    if res != again:
        raise SystemExit("make_rerank: llama.cpp's scores differ between two runs")
    with open(os.path.join(out, "rerank.json"), "w") as fh:
        json.dump(dict(model=MODEL, hf_dir=HF_DIR, n_cls_out=n_cls, llama_cpp=llama_cpp_build.version(),
                       ggml_isa=common.ISA, queries=res), fh, ensure_ascii=False, indent=1)
    with open(os.path.join(out, "README.md"), "w") as fh:
        fh.write("# rerank: a tiny BERT cross-encoder and llama.cpp's scores\n\n")
        fh.write(common.provenance("make_rerank.py").split("\n- Logits")[0] + "\n\n")
        fh.write(__doc__.split("\n\n", 2)[2].split("Standard library")[0])
        fh.write("\nrerank.json: per query, each document's tokens (llama-server's pair) and "
                 "score (llama.cpp's rank pooling, one float: n_cls_out = %d); each run twice "
                 "and required identical.\n\n| query | document | tokens | score |\n|---|---|---|---|\n" % n_cls)
        for q in res:
            for r in q["results"]:
                fh.write(f"| {q['query'][:24]} | {r['document'][:32]} | {len(r['tokens'])} | {r['score']:.6f} |\n")
    # the XLM-RoBERTa cross-encoder (t5 / UGM vocabulary): rerank-xlmr.json, the same layout
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    xkv = common.read_gguf_kv(os.path.join(repo, XLMR_VOCAB))
    xpath = os.path.join(out, XLMR_MODEL)
    write_xlmr(xpath, xkv)
    xres, xn = scores(xpath, QUERIES, XLMR_CTX)
    if xres != scores(xpath, QUERIES, XLMR_CTX)[0]:
        raise SystemExit("make_rerank: llama.cpp's XLM-R scores differ between two runs")
    with open(os.path.join(out, "rerank-xlmr.json"), "w") as fh:
        json.dump(dict(model=XLMR_MODEL, n_cls_out=xn, llama_cpp=llama_cpp_build.version(),
                       ggml_isa=common.ISA, queries=xres), fh, ensure_ascii=False, indent=1)
    print(f"make_rerank: {sum(len(q['results']) for q in res)} pairs -> {out}")


if __name__ == "__main__":
    main()
