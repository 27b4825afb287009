#!/usr/bin/env python3
"""Tiny random encoder-only models and their references, for tests/test_embed.c (no network):

  tests/data/embed/tiny-bert/       a sentence-transformers directory: BertModel (d 32, 2 layers,
                                    4 heads, FFN 48, 64 positions, random weights, seed 0),
                                    a 150-token WordPiece vocabulary (vocab.txt + tokenizer.json),
                                    CLS pooling, no Normalize, max_seq_length 24
  tests/data/embed/tiny-nomic.gguf  a nomic-bert GGUF with random weights (d 32, 2 layers, 4 heads,
                                    SwiGLU 48, rotary base 1000, mean pooling), the same vocabulary
  tests/data/embed/tiny.json        texts; sentence-transformers' token ids and vectors for
                                    tiny-bert; per-token vectors; llama.cpp's llama-embedding
                                    vectors for tiny-nomic.gguf and for the bert GGUF that
                                    `vkformer quantize tiny-bert OUT F32` writes (checksum kept)

Needs sentence-transformers, torch and gguf (outside the repository, as for
tools/make_embed_fixtures.py) and llama.cpp's llama-embedding.
usage: make_embed_tiny.py --llama-embedding BIN --vkformer build/vkformer
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "embed")
TEXTS = [
    "the man is eating food.",
    "a dog ran home!",
    "food, food and more food?",
    "hello",
    "",
    "the quick brown fox jumps over the lazy dog near the river bank today",
    "xyz qqq 12 34",
    "Éat THE Food",
    # longer than max_seq_length 24: truncated
    " ".join(["the man is eating food"] * 8),
]
WORDS = ("the a man dog is was eat eating food ran run home and more hello quick brown fox jumps "
         "over lazy near river bank today more on in of to it at by yes no").split()


def vocab():
    v = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    v += list(".,!?'-")
    v += [str(d) for d in range(10)] + ["##" + str(d) for d in range(10)]
    v += [chr(c) for c in range(ord("a"), ord("z") + 1)]
    v += ["##" + chr(c) for c in range(ord("a"), ord("z") + 1)]
    for w in WORDS:
        if w not in v:
            v.append(w)
    v += ["##ing", "##ed"]
    while len(v) < 150:
        v.append("[unused%d]" % (len(v) - 140))
    return v


def fnv(path):
    h = 0xcbf29ce484222325
    with open(path, "rb") as f:
        for b in f.read():
            h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def llama_vectors(bin_, gguf_path, texts, pooling):
    out = []
    for t in texts:
        if not t.strip():
            out.append(None)  # llama-embedding skips an empty prompt
            continue
        for _ in range(20):  # its logger thread may not flush stdout before exit: retry
            p = subprocess.run([bin_, "-m", gguf_path, "-p", t, "--pooling", pooling,
                                "--embd-normalize", "2", "--embd-output-format", "json", "-t",
                                "1"], capture_output=True, text=True, check=True)
            if "}" in p.stdout:
                break
        j = json.loads(p.stdout[p.stdout.index("{"):])
        out.append([float("%.7g" % x) for x in j["data"][0]["embedding"]])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-embedding", required=True)
    ap.add_argument("--vkformer", required=True)
    a = ap.parse_args()
    import numpy as np
    import torch
    import gguf
    from transformers import BertConfig, BertModel, BertTokenizerFast
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    torch.set_num_threads(1)
    d = os.path.join(OUT, "tiny-bert")
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    voc = vocab()
    with open(os.path.join(d, "vocab.txt"), "w") as f:
        f.write("\n".join(voc) + "\n")
    tok = BertTokenizerFast(os.path.join(d, "vocab.txt"), do_lower_case=True)
    tok.save_pretrained(d)
    cfg = BertConfig(vocab_size=len(voc), hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=48, max_position_embeddings=64,
                     type_vocab_size=2, layer_norm_eps=1e-12, hidden_act="gelu")
    model = BertModel(cfg, add_pooling_layer=False)
    with torch.no_grad():  # larger than the 0.02 init, so the layers matter
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    model.save_pretrained(d, safe_serialization=True)
    json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling"}],
              open(os.path.join(d, "modules.json"), "w"), indent=2)
    json.dump({"word_embedding_dimension": 32, "pooling_mode_cls_token": True,
               "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": False,
               "pooling_mode_mean_sqrt_len_tokens": False},
              open(os.path.join(d, "1_Pooling", "config.json"), "w"), indent=2)
    json.dump({"max_seq_length": 24, "do_lower_case": False},
              open(os.path.join(d, "sentence_bert_config.json"), "w"), indent=2)

    st = SentenceTransformer(d, device="cpu")
    emb = st.encode(TEXTS, convert_to_numpy=True)
    ids = [st.tokenize([t])["input_ids"][0].tolist() for t in TEXTS]
    toks = st.encode(TEXTS[:2], output_value="token_embeddings", convert_to_numpy=False)

    def r(v):
        return [float("%.7g" % x) for x in v]

    # nomic-bert: random weights straight into a GGUF (llama.cpp's names and keys)
    rng = np.random.default_rng(0)
    ng = os.path.join(OUT, "tiny-nomic.gguf")
    w = gguf.GGUFWriter(ng, "nomic-bert")
    w.add_context_length(64)
    w.add_embedding_length(32)
    w.add_feed_forward_length(48)
    w.add_block_count(2)
    w.add_head_count(4)
    w.add_layer_norm_eps(1e-12)
    w.add_causal_attention(False)
    w.add_rope_freq_base(1000.0)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_file_type(0)
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("bert-bge")
    ctl = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    w.add_token_list([t if t in ctl else (t[2:] if t.startswith("##") else "\u2581" + t) for t in voc])
    w.add_token_types([3 if t in ctl else 1 for t in voc])
    w.add_token_type_count(2)
    for key, tid in (("unknown", 1), ("seperator", 3), ("padding", 0), ("cls", 2), ("mask", 4)):
        w.add_uint32("tokenizer.ggml.%s_token_id" % key, tid)

    def t(name, *shape, scale=0.3, mean=0.0):
        w.add_tensor(name, (mean + scale * rng.standard_normal(shape)).astype(np.float32))
    t("token_embd.weight", len(voc), 32)
    t("token_types.weight", 2, 32)
    t("token_embd_norm.weight", 32, mean=1.0, scale=0.1)
    t("token_embd_norm.bias", 32, scale=0.1)
    for i in range(2):
        t("blk.%d.attn_qkv.weight" % i, 96, 32)
        t("blk.%d.attn_output.weight" % i, 32, 32)
        t("blk.%d.attn_output_norm.weight" % i, 32, mean=1.0, scale=0.1)
        t("blk.%d.attn_output_norm.bias" % i, 32, scale=0.1)
        t("blk.%d.ffn_up.weight" % i, 48, 32)
        t("blk.%d.ffn_gate.weight" % i, 48, 32)
        t("blk.%d.ffn_down.weight" % i, 32, 48)
        t("blk.%d.layer_output_norm.weight" % i, 32, mean=1.0, scale=0.1)
        t("blk.%d.layer_output_norm.bias" % i, 32, scale=0.1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    with tempfile.TemporaryDirectory() as tmp:
        bg = os.path.join(tmp, "tiny-bert-f32.gguf")
        subprocess.run([a.vkformer, "quantize", d, bg, "F32"], check=True,
                       capture_output=True)
        bert_sum = fnv(bg)
        bert_llama = llama_vectors(a.llama_embedding, bg, TEXTS[:-1], "cls")
    out = {
        "reference": "sentence-transformers, torch %s; llama.cpp llama-embedding" % torch.__version__,
        "texts": TEXTS,
        "ids": ids,
        "embedding": [r(v) for v in emb],
        "tokens": [[r(v) for v in x.numpy()] for x in toks],
        "bert_gguf_fnv1a64": bert_sum,
        "bert_gguf_llama_cpp": bert_llama,
        "nomic_llama_cpp": llama_vectors(a.llama_embedding, ng, TEXTS[:-1], "mean"),
    }
    with open(os.path.join(OUT, "tiny.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %s, %s, tiny.json" % (d, ng), file=sys.stderr)


if __name__ == "__main__":
    main()
