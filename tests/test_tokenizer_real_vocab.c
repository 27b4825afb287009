/* Real vocabularies against llama.cpp, id for id: every vocab-only GGUF of the real-vocab set
 * (tools/refs/make_real_vocab.py: GPT-2, Llama-2 SPM, Phi-3, Falcon, DeepSeek LLM, StarCoder2,
 * BGE WordPiece, Llama-3, Qwen1.5, Command-R, Refact, MPT, DeepSeek Coder, as llama.cpp 0c1e570
 * ships them) with llama.cpp's own test inputs (.inp) and ids (.out, made by
 * llama.cpp's test-tokenizer-0 with add_special = false, parse_special = false; see the README
 * there). Every input must give exactly the ids of its line.
 *
 * Then decode(encode(text)) == text where llama.cpp's test requires it too: byte-level BPE
 * vocabularies (every byte is representable) and the SentencePiece ones (the prefix space that
 * encode adds is dropped by decode). WordPiece lower-cases and strips accents: no round trip.
 *
 * Then the pre-tokenizer regex engine on long runs (1 MiB of spaces, of digits, of letters
 * without spaces) through the Llama-3 vocabulary: the run must come back through decode whole.
 * The engine is a Pike VM (no backtracking), so this finishes in well under a second; the
 * ctest timeout catches a regression to super-linear behaviour. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

typedef struct vocab_case {
    const char *file;
    const char *kind; /* vkf_tokenizer_kind() */
    int roundtrip;
} vocab_case;

static const vocab_case k_vocabs[] = {
    {"ggml-vocab-gpt-2.gguf", "gpt2", 1},          {"ggml-vocab-llama-spm.gguf", "llama", 1},
    {"ggml-vocab-phi-3.gguf", "llama", 1},         {"ggml-vocab-falcon.gguf", "gpt2", 1},
    {"ggml-vocab-deepseek-llm.gguf", "gpt2", 1},   {"ggml-vocab-starcoder.gguf", "gpt2", 1},
    {"ggml-vocab-bert-bge.gguf", "bert", 0},       {"ggml-vocab-llama-bpe.gguf", "gpt2", 1},
    {"ggml-vocab-qwen2.gguf", "gpt2", 1},          {"ggml-vocab-command-r.gguf", "gpt2", 1},
    {"ggml-vocab-refact.gguf", "gpt2", 1},         {"ggml-vocab-mpt.gguf", "gpt2", 1},
    {"ggml-vocab-deepseek-coder.gguf", "gpt2", 1},
};

static const char k_sep[] = "\n__ggml_vocab_test__\n";

static size_t g_total_inputs, g_total_ids;

static void test_vocab(const vocab_case *vc) {
    char path[1024], inp_path[1100], out_path[1100];
    snprintf(path, sizeof path, "%s", vkt_fixture("real-vocab"));
    size_t dl = strlen(path);
    snprintf(path + dl, sizeof path - dl, "/%s", vc->file);
    snprintf(inp_path, sizeof inp_path, "%s.inp", path);
    snprintf(out_path, sizeof out_path, "%s.out", path);
    size_t ni = 0, no = 0;
    char *inp = vkt_read_file(inp_path, &ni), *outs = vkt_read_file(out_path, &no);
    vkf_tokenizer *t = NULL;
    VKT_CHECK(inp && outs, "%s: cannot read the .inp / .out files", vc->file);
    if (inp && outs) VKT_OK(vkf_tokenizer_open_auto(path, &t));
    if (!t) goto done;
    VKT_CHECK(strcmp(vkf_tokenizer_kind(t), vc->kind) == 0, "%s: kind %s, expected %s", vc->file,
              vkf_tokenizer_kind(t), vc->kind);
    size_t n_inputs = 0, n_ids = 0, n_bad = 0;
    char *ip = inp, *op = outs;
    for (;;) {
        char *sep = strstr(ip, k_sep);
        if (!sep) break;
        size_t len = (size_t)(sep - ip);
        char *eol = strchr(op, '\n');
        if (!eol) eol = op + strlen(op);
        /* the expected ids of this input */
        int32_t want[1024];
        size_t nw = 0;
        for (char *q = op; q < eol && nw < 1024;) {
            char *end;
            long v = strtol(q, &end, 10);
            if (end == q) break;
            want[nw++] = (int32_t)v;
            q = end;
        }
        int32_t *ids = NULL;
        size_t n = 0;
        vkf_status s = vkf_tokenizer_encode_ex(t, ip, len, 0, 0, &ids, &n);
        int same = s == VKF_OK && n == nw && memcmp(ids, want, n * sizeof *ids) == 0;
        if (!same && n_bad++ < 3)
            VKT_CHECK(same, "%s: input %zu \"%.*s\": %zu ids, expected %zu (%s)", vc->file,
                      n_inputs, (int)(len > 60 ? 60 : len), ip, n, nw,
                      s == VKF_OK ? "different ids" : vkf_last_error());
        if (same && vc->roundtrip) {
            char *text = NULL;
            size_t tl = 0;
            VKT_OK(vkf_tokenizer_decode_ex(t, ids, n, 0, &text, &tl));
            VKT_CHECK(text && tl == len && memcmp(text, ip, len) == 0,
                      "%s: input %zu \"%.*s\": decode gives \"%.*s\"", vc->file, n_inputs,
                      (int)(len > 60 ? 60 : len), ip, (int)(tl > 60 ? 60 : tl), text ? text : "");
            free(text);
        }
        n_ids += nw;
        n_inputs++;
        free(ids);
        ip = sep + sizeof k_sep - 1;
        op = *eol ? eol + 1 : eol;
    }
    /* end of generation: eos, and the end-of-turn spellings llama.cpp's vocabulary collects */
    VKT_CHECK(vkf_tokenizer_eos(t) < 0 || vkf_tokenizer_is_eog(t, vkf_tokenizer_eos(t)),
              "%s: eos %d is not an end-of-generation token", vc->file, vkf_tokenizer_eos(t));
    static const char *const eot_names[] = {"<|eot_id|>", "<|end_of_text|>", "<|eom_id|>",
                                            "<|endoftext|>", "<|end|>"};
    for (size_t k = 0; k < sizeof eot_names / sizeof eot_names[0]; k++) {
        int32_t id = vkf_tokenizer_find(t, eot_names[k], strlen(eot_names[k]));
        VKT_CHECK(id < 0 || vkf_tokenizer_is_eog(t, id), "%s: %s (%d) is not end of generation",
                  vc->file, eot_names[k], id);
    }
    VKT_CHECK(n_bad == 0, "%s: %zu of %zu inputs differ from llama.cpp", vc->file, n_bad, n_inputs);
    VKT_CHECK(n_inputs >= 40, "%s: only %zu inputs read", vc->file, n_inputs);
    printf("%-30s %zu inputs, %zu ids exact\n", vc->file, n_inputs - n_bad, n_ids);
    g_total_inputs += n_inputs;
    g_total_ids += n_ids;
done:
    vkf_tokenizer_free(t);
    free(inp);
    free(outs);
}

/* Llama-3: 128001 <|end_of_text|> (eos) and 128009 <|eot_id|> end generation, nothing else
 * (the ids of Meta's tokenizer; Llama-3.0 has no <|eom_id|>). */
static void test_llama3_eog(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/ggml-vocab-llama-bpe.gguf", vkt_fixture("real-vocab"));
    vkf_tokenizer *t = NULL;
    VKT_OK(vkf_tokenizer_open_auto(path, &t));
    if (!t) return;
    VKT_CHECK(vkf_tokenizer_is_eog(t, 128001) && vkf_tokenizer_eog(t, NULL) == 2 &&
                  vkf_tokenizer_is_eog(t, 128009) && !vkf_tokenizer_is_eog(t, 9906),
              "llama-bpe: end-of-generation set of %zu ids is wrong", vkf_tokenizer_eog(t, NULL));
    vkf_tokenizer_free(t);
}

/* 1 MiB runs through the Llama-3 pre-tokenizer: every byte comes back. */
static void test_long_runs(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/ggml-vocab-llama-bpe.gguf", vkt_fixture("real-vocab"));
    vkf_tokenizer *t = NULL;
    VKT_OK(vkf_tokenizer_open_auto(path, &t));
    if (!t) return;
    const size_t n = 1 << 20;
    char *buf = malloc(n);
    const char fills[] = {' ', '7', 'x', '\n'};
    for (size_t k = 0; buf && k < sizeof fills; k++) {
        memset(buf, fills[k], n);
        int32_t *ids = NULL;
        size_t ni = 0;
        VKT_OK(vkf_tokenizer_encode_ex(t, buf, n, 0, 0, &ids, &ni));
        char *text = NULL;
        size_t tl = 0;
        if (ids) VKT_OK(vkf_tokenizer_decode_ex(t, ids, ni, 0, &text, &tl));
        VKT_CHECK(text && tl == n && memcmp(text, buf, n) == 0,
                  "1 MiB run of 0x%02x: decode(encode) differs (%zu bytes back)", fills[k], tl);
        /* digits: \p{N}{1,3} cuts the run into 3-digit words, one token each */
        if (fills[k] == '7') VKT_CHECK(ni == (n + 2) / 3, "1 MiB of digits: %zu ids", ni);
        free(ids);
        free(text);
    }
    free(buf);
    vkf_tokenizer_free(t);
}

int main(void) {
    if (!vkt_need_fixtures("real-vocab")) return vkt_finish();
    for (size_t i = 0; i < sizeof k_vocabs / sizeof k_vocabs[0]; i++)
        test_vocab(&k_vocabs[i]);
    printf("total: %zu inputs, %zu ids\n", g_total_inputs, g_total_ids);
    test_llama3_eog();
    test_long_runs();
    return vkt_finish();
}
