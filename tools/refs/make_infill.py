#!/usr/bin/env python3
"""Writes the infill reference set: llama.cpp's fill-in-the-middle tokens of real vocabularies
and the prompts llama-server's /infill builds from its fields.

    python3 tools/refs/make_infill.py --out DIR

For each vocabulary (vocabulary-only GGUFs of the pinned llama.cpp tree's models/, plus one
written here), the pinned libllama (tools/refs/llama_cpp_build.py, ctypes) gives the FIM ids
(llama_vocab_fim_pre/suf/mid/pad/rep/sep: the GGUF keys, else llama.cpp's detection by token
text), whether it adds BOS, and the tokens of every text (llama_tokenize). The expected prompt of
each case is assembled from those in the order of llama-server's format_prompt_infill
(tools/server/server-common.cpp of the pinned tree), written out below step by step; nothing of
vkformer runs here. Standard library, numpy and the pin's gguf-py.
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import llama_cpp_build  # noqa: E402
import make_llama_tiny  # noqa: E402
import numpy as np  # noqa: E402
import pins  # noqa: E402

# copied unchanged from the pinned tree's models/ (make_real_vocab.py checks their sha256)
VOCABS = ("deepseek-coder", "refact", "starcoder", "llama-spm", "bert-bge")
# written here: starcoder's vocabulary with explicit tokenizer.ggml.fim_*_token_id keys, the
# repo and file-separator ones included (llama.cpp's text detection finds neither "<repo_name>"
# nor "<file_sep>"), so the repo-level pattern of format_prompt_infill is exercised
KEYED = "ggml-vocab-starcoder-fimkeys.gguf"
KEYED_IDS = {"fim_pre": 1, "fim_suf": 3, "fim_mid": 2, "fim_pad": 4, "fim_rep": 5, "fim_sep": 6}

PREFIX = "def add(a, b):\n    "
SUFFIX = "\n    return c\n\nprint(add(1, 2))\n"
EXTRA = [{"filename": "utils.py", "text": "def sub(a, b):\n    return a - b\n"},
         {"text": "X = 1  # no filename: llama-server's \"tmp\"\n"}]
LONG_PREFIX = "".join(f"x{i} = {i} * {i}\n" for i in range(40))
LONG_SUFFIX = "".join(f"y{i} = x{i} + 1\n" for i in range(40))
# fields, llama-server's n_batch / n_predict / slot n_ctx / --spm-infill
CASES = [
    dict(name="plain", input_prefix=PREFIX, input_suffix=SUFFIX, input_extra=[], prompt="",
         n_batch=2048, n_predict=-1, n_ctx=4096, spm=False),
    dict(name="extra", input_prefix=PREFIX, input_suffix=SUFFIX, input_extra=EXTRA, prompt="c = ",
         n_batch=2048, n_predict=-1, n_ctx=4096, spm=False),
    dict(name="spm", input_prefix=PREFIX, input_suffix=SUFFIX, input_extra=EXTRA[:1], prompt="",
         n_batch=2048, n_predict=-1, n_ctx=4096, spm=True),
    # n_batch 64: the prefix keeps its last 48 tokens, the suffix its first 16 - 2 - |prompt|;
    # n_ctx 100, n_predict 10: the extra context keeps its last 100 - 64 - 20 = 16 tokens
    dict(name="cut", input_prefix=LONG_PREFIX, input_suffix=LONG_SUFFIX, input_extra=EXTRA,
         prompt="z = ", n_batch=64, n_predict=10, n_ctx=100, spm=False),
    # the prompt's control-token text becomes the token (llama-server: parse_special true),
    # the prefix's stays text (tokenize_mixed(..., false, false))
    dict(name="special", input_prefix="a = '<fim_prefix><|endoftext|>'\n", input_suffix="",
         input_extra=[], prompt="<|endoftext|>b", n_batch=2048, n_predict=-1, n_ctx=4096, spm=False),
]


# a generating model with FIM tokens for the server's /infill: llama-tiny's weights (seed 1234)
# and vocabulary, with tokenizer.ggml.fim_pre/suf/mid_token_id naming three of its byte tokens
# (<0x00>, <0x01>, <0x02>: no text of the cases holds those bytes); no repo / file tokens
TINY = "llama-tiny-fim.gguf"
TINY_IDS = {"fim_pre": 3, "fim_suf": 4, "fim_mid": 5}
TINY_CASE = dict(name="serve", input_prefix="The quick brown ", input_suffix=" over the lazy dog.",
                 input_extra=[{"filename": "a.txt", "text": "In the beginning"}], prompt="fox",
                 n_batch=2048, n_predict=-1, n_ctx=512, spm=False)
N_GREEDY = 8


def write_tiny(dst):
    def fill(w):
        make_llama_tiny.fill(0)(w)
        for k, v in TINY_IDS.items():
            w.add_uint32(f"tokenizer.ggml.{k}_token_id", v)
    common.write_gguf(dst, "llama", fill, make_llama_tiny.weights())


def write_keyed(src, dst):
    """src's vocabulary with the FIM keys of KEYED_IDS, through the pin's gguf-py."""
    g = common.gguf()
    kv = common.read_gguf_kv(src)
    w = g.GGUFWriter(dst, "starcoder2")
    w.add_name("starcoder-fimkeys")
    for k in ("block_count", "context_length", "embedding_length", "feed_forward_length",
              "attention.head_count", "attention.head_count_kv"):
        w.add_uint32(f"starcoder2.{k}", kv[f"starcoder2.{k}"])
    w.add_float32("starcoder2.rope.freq_base", kv["starcoder2.rope.freq_base"])
    w.add_float32("starcoder2.attention.layer_norm_epsilon",
                  kv["starcoder2.attention.layer_norm_epsilon"])
    w.add_tokenizer_model(kv["tokenizer.ggml.model"])
    w.add_tokenizer_pre(kv["tokenizer.ggml.pre"])
    w.add_token_list(kv["tokenizer.ggml.tokens"])
    w.add_token_types(kv["tokenizer.ggml.token_type"])
    w.add_token_merges(kv["tokenizer.ggml.merges"])
    w.add_bos_token_id(kv["tokenizer.ggml.bos_token_id"])
    w.add_eos_token_id(kv["tokenizer.ggml.eos_token_id"])
    w.add_unk_token_id(kv["tokenizer.ggml.unknown_token_id"])
    for k, v in KEYED_IDS.items():
        w.add_uint32(f"tokenizer.ggml.{k}_token_id", v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


class Vocab:
    def __init__(self, path):
        ref = llama_cpp_build.runner(common.ISA)
        ref._quiet()
        L = self.L = ref.L
        mp = L.llama_model_default_params()
        mp.vocab_only = True
        self.m = L.llama_model_load_from_file(path.encode(), mp)
        if not self.m:
            raise SystemExit(f"make_infill: llama.cpp cannot load {path}")
        v = self.v = L.llama_model_get_vocab(self.m)
        self.fim = dict(pre=L.llama_vocab_fim_pre(v), suf=L.llama_vocab_fim_suf(v),
                        mid=L.llama_vocab_fim_mid(v), pad=L.llama_vocab_fim_pad(v),
                        rep=L.llama_vocab_fim_rep(v), sep=L.llama_vocab_fim_sep(v))
        self.add_bos = bool(L.llama_vocab_get_add_bos(v))
        self.bos = L.llama_vocab_bos(v)

    def tok(self, text, parse_special=False):
        """common_tokenize(vocab, text, add_special = false, parse_special)"""
        data = text.encode()
        buf = (self.L.llama_token * (len(data) + 8))()
        n = self.L.llama_tokenize(self.v, data, len(data), buf, len(buf), False, parse_special)
        assert n >= 0
        return [buf[i] for i in range(n)]

    def free(self):
        self.L.llama_model_free(self.m)


def infill(vc, c):
    """format_prompt_infill of the pinned tree, step for step."""
    NULL = -1
    fim = vc.fim
    extra = []
    tokens_prefix = vc.tok(c["input_prefix"])
    tokens_suffix = vc.tok(c["input_suffix"])
    tokens_prompt = vc.tok(c["prompt"], parse_special=True)  # tokenize_input_prompts(..., false, true)
    if fim["rep"] != NULL:
        extra += [fim["rep"]] + vc.tok("myproject\n")
    for chunk in c["input_extra"]:
        text, filename = chunk.get("text", ""), chunk.get("filename", "tmp")
        if fim["sep"] != NULL:
            extra += [fim["sep"]] + vc.tok(filename + "\n")
        else:
            extra += vc.tok("\n\n--- snippet ---\n\n")
        extra += vc.tok(text)
    if fim["sep"] != NULL:
        extra += [fim["sep"]] + vc.tok("filename\n")
    n_batch, n_predict, n_ctx = c["n_batch"], c["n_predict"], c["n_ctx"]
    n_prefix_take = min(len(tokens_prefix), 3 * (n_batch // 4))
    n_suffix_take = min(len(tokens_suffix), max(0, (n_batch // 4) - (2 + len(tokens_prompt))))
    n_extra_take = min(max(0, n_ctx - n_batch - 2 * n_predict), len(extra))
    tokens_prefix = tokens_prefix[len(tokens_prefix) - n_prefix_take:]
    tokens_suffix = tokens_suffix[:n_suffix_take]
    tokens_prefix = [fim["pre"]] + tokens_prefix + tokens_prompt
    tokens_suffix = [fim["suf"]] + tokens_suffix
    inp, end = (tokens_suffix, tokens_prefix) if c["spm"] else (tokens_prefix, tokens_suffix)
    if vc.add_bos:
        inp = [vc.bos] + inp
    inp = extra[len(extra) - n_extra_take:] + inp
    return inp + end + [fim["mid"]], n_prefix_take, n_suffix_take, n_extra_take


def main():
    out = common.out_dir(__doc__)
    models = os.path.join(pins.llama_cpp_tree(), "models")
    files = [f"ggml-vocab-{v}.gguf" for v in VOCABS]
    for f in files:
        shutil.copyfile(os.path.join(models, f), os.path.join(out, f))
    write_keyed(os.path.join(models, "ggml-vocab-starcoder.gguf"), os.path.join(out, KEYED))
    files.append(KEYED)
    write_tiny(os.path.join(out, TINY))
    vocabs, rows = [], []
    for f in files:
        vc = Vocab(os.path.join(out, f))
        entry = dict(vocab=f, fim=vc.fim, add_bos=vc.add_bos, bos=vc.bos)
        ok = all(vc.fim[k] != -1 for k in ("pre", "suf", "mid"))
        if ok:
            entry["cases"] = []
            for c in CASES:
                toks, npre, nsuf, nex = infill(vc, c)
                entry["cases"].append(dict(c, tokens=toks))
                rows.append(f"| `{f}` | {c['name']} | {len(toks)} | {npre} / {nsuf} / {nex} |")
        vocabs.append(entry)
        vc.free()
    # the server's case: the prompt, then llama.cpp's greedy continuation of it (argmax, lowest id
    # on ties; F32 K and V cache, one thread), run twice and required identical
    vc = Vocab(os.path.join(out, TINY))
    toks = infill(vc, TINY_CASE)[0]
    spm_toks = infill(vc, dict(TINY_CASE, spm=True))[0]  # llama-server --spm-infill
    vc.free()
    ref = llama_cpp_build.runner(common.ISA)
    lg, greedy = ref.logits(os.path.join(out, TINY), toks, n_greedy=N_GREEDY, n_ctx=512)
    again, _ = ref.logits(os.path.join(out, TINY), toks, greedy=greedy, n_ctx=512)
    if not np.array_equal(lg, again):
        raise SystemExit("make_infill: llama.cpp's logits differ between two runs")
    gap = common.min_gap(lg[len(toks) - 1:-1])
    serve = dict(TINY_CASE, model=TINY, tokens=toks, greedy_tokens=greedy, min_gap=gap,
                 spm_tokens=spm_toks)
    with open(os.path.join(out, "infill.json"), "w") as fh:
        json.dump(dict(llama_cpp=llama_cpp_build.version(), vocabs=vocabs, serve=serve), fh,
                  ensure_ascii=False, indent=1)
    with open(os.path.join(out, "README.md"), "w") as fh:
        fh.write("# infill: llama-server's fill-in-the-middle prompts\n\n")
        fh.write(common.provenance("make_infill.py").split("\n- Logits")[0] + "\n\n")
        fh.write("infill.json: per vocabulary, llama.cpp's FIM ids (`llama_vocab_fim_*`, -1 none), "
                 "add_bos and bos, and for those with prefix, suffix and middle tokens the cases: "
                 "llama-server's /infill fields, its n_batch, n_predict, slot n_ctx, --spm-infill, "
                 "and the prompt tokens of format_prompt_infill (assembled from llama_tokenize in "
                 "its order). A vocabulary without them must be refused (llama-server: 'Infill is "
                 "not supported by this model').\n\n"
                 f"`{KEYED}`: `ggml-vocab-starcoder.gguf`'s tokenizer with the keys "
                 f"{', '.join(f'tokenizer.ggml.{k}_token_id = {v}' for k, v in KEYED_IDS.items())}.\n\n"
                 "| vocabulary | case | tokens | prefix / suffix / extra tokens kept |\n|---|---|---|---|\n")
        fh.write("\n".join(rows) + "\n")
        fh.write(f"\n`{TINY}`: llama-tiny (tools/refs/make_llama_tiny.py, F32) with "
                 f"{', '.join(f'tokenizer.ggml.{k}_token_id = {v}' for k, v in TINY_IDS.items())}; "
                 f"infill.json's `serve`: one /infill request, its prompt tokens and llama.cpp's "
                 f"{N_GREEDY} greedy tokens after it (smallest top-1/top-2 logit gap {gap:.4f}).\n")
    print(f"make_infill: {len(files)} vocabularies, {len(rows)} cases -> {out}")


if __name__ == "__main__":
    main()
