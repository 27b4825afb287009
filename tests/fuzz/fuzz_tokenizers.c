/* libFuzzer entry: the input is text for every tokenizer kind of tests/data/tokenizers and for
 * GGUF vocabularies with regex pre-tokenizers, WordPiece and Unigram (loaded once). Each kind
 * encodes it (special-token parsing on or off from the first byte) and decodes the ids; the
 * byte-level and byte-fallback kinds must give the input back exactly (see
 * src/tokenizer/tokenizer.h); the input read as int32 ids must decode or fail cleanly.
 *
 * Build: cmake -DVKF_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ ...
 * Run:   ./fuzz_tokenizers -max_total_time=180 CORPUS_DIR */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_KINDS 16
#define N_DATA 12 /* k_dirs below this are tests/data/tokenizers kinds, from it fixtures */
/* tests/data/tokenizers kinds, then GGUF vocabularies: t5_gguf here, and the real-vocab
 * fixtures (Llama-3 with its regex pre-tokenizer, DeepSeek LLM, Falcon, BGE WordPiece) under
 * VKF_FIXTURES (tests/robust/run_fuzz.sh sets it: the sets of tools/refs/make_all.py; a file
 * missing there is a failure; without VKF_FIXTURES the target runs on tests/data alone) */
static const char *const k_dirs[N_KINDS] = {
    "gpt2_files",
    "bpe_bytelevel",
    "bpe_llama",
    "bpe_metaspace",
    "wordpiece",
    "wordpiece_cased",
    "unigram",
    "wordlevel",
    "spm_bpe",
    "spm_unigram",
    "char",
    "t5_gguf",
    "real-vocab/ggml-vocab-llama-bpe.gguf",
    "real-vocab/ggml-vocab-deepseek-llm.gguf",
    "real-vocab/ggml-vocab-falcon.gguf",
    "real-vocab/ggml-vocab-bert-bge.gguf",
};
/* decode(encode(x)) == x for every byte string x (parse_special off; bpe_bytelevel adds a
 * leading space when x does not start with one; the Llama-3 GGUF gives the bytes back. Not
 * DeepSeek: its user-defined token 100002 is spelled "ø", the stand-in of byte 0xF8, and wins
 * the lookup as in llama.cpp, so 0xF8 decodes as "ø"; nor Falcon: it lacks tokens for some
 * control bytes, which are dropped as llama.cpp does) */
static const int k_exact[N_KINDS] = {1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
static vkf_tokenizer *g_tok[N_KINDS];
static int g_loaded;

static void load(void) {
    if (g_loaded) return;
    g_loaded = 1;
    const char *fixtures = getenv("VKF_FIXTURES");
    for (int k = 0; k < N_KINDS; k++) {
        char p[4096];
        if (k < N_DATA) {
            snprintf(p, sizeof p, "%s/tests/data/tokenizers/%s", VKF_SOURCE_DIR, k_dirs[k]);
        } else if (fixtures && *fixtures) {
            snprintf(p, sizeof p, "%s/%s", fixtures, k_dirs[k]);
        } else {
            continue; /* no reference sets named: tests/data's kinds only */
        }
        if (vkf_tokenizer_open_auto(p, &g_tok[k]) != VKF_OK) {
            fprintf(stderr, "fuzz_tokenizers: %s\n", vkf_last_error());
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    load();
    const char *text = (const char *)data;
    int parse = size && (data[0] & 1);
    for (int k = 0; k < N_KINDS; k++) {
        vkf_tokenizer *t = g_tok[k];
        if (!t) continue;
        int32_t *ids = NULL;
        size_t n = 0;
        if (vkf_tokenizer_encode_ex(t, text, size, 1, parse, &ids, &n) != VKF_OK) abort();
        for (size_t i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= vkf_tokenizer_n_vocab(t)) abort();
        char *out = NULL;
        size_t len = 0;
        if (vkf_tokenizer_decode(t, ids, n, &out, &len) != VKF_OK) abort();
        free(out);
        free(ids);
        if (k_exact[k]) {
            if (vkf_tokenizer_encode_ex(t, text, size, 0, 0, &ids, &n) != VKF_OK) abort();
            if (vkf_tokenizer_decode(t, ids, n, &out, &len) != VKF_OK) abort();
            size_t skip = k_exact[k] == 2 && size && data[0] != ' ';
            if (len != size + skip || memcmp(out + skip, data, size) != 0) abort();
            free(out);
            free(ids);
        }
        /* the bytes as ids: in range -> decodes, out of range -> VKF_ERROR_TOKEN */
        size_t m = size / 4;
        int32_t *raw = malloc((m ? m : 1) * sizeof *raw);
        if (!raw) abort();
        memcpy(raw, data, m * 4);
        int in_range = 1;
        for (size_t i = 0; i < m; i++)
            in_range &= raw[i] >= 0 && raw[i] < vkf_tokenizer_n_vocab(t);
        vkf_status s =
            vkf_tokenizer_decode_ex(t, raw, m, size & 2 ? VKF_DECODE_SPECIAL : 0, &out, &len);
        if (in_range ? s != VKF_OK : s != VKF_ERROR_TOKEN) abort();
        if (s == VKF_OK) free(out);
        free(raw);
    }
    return 0;
}
