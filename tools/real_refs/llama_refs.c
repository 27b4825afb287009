/* llama_refs: llama.cpp's reference for one prompt on one GGUF, for tools/make_real_refs.py.
 *
 *   llama_refs MODEL.gguf PROMPT_FILE N_GREEDY OUT.bin OUT.json
 *   llama_refs --tokenize MODEL.gguf TEXTS_FILE OUT.json
 *
 * Settings of the reference sets (tools/refs/common.py, RUN_TEXT): CPU backend, 1 thread, F32 KV
 * cache, flash attention off. Tokens from llama_tokenize(add_special = true, parse_special =
 * false). The prompt goes through one llama_decode with the logits of every position; then N_GREEDY
 * greedy steps of one token each (the argmax of the previous row; the first from the prompt's last
 * row), each step's logits appended. OUT.bin: float32 rows [n_prompt + N_GREEDY][n_vocab];
 * OUT.json: tokens, greedy tokens and n_vocab.
 *
 * --tokenize: TEXTS_FILE holds texts separated by NUL bytes; OUT.json a list with, for each,
 * llama_tokenize(add_special = true, parse_special = true) ("special") and (false, false)
 * ("plain").
 *
 * Build against llama.cpp at commit 0c1e570 (the version llama-cpp-python 0.3.36 vendors):
 *   cc -O2 llama_refs.c -I$LLAMA/include -I$LLAMA/ggml/include -L$BUILD/bin -lllama -o llama_refs
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

static void json_ids(FILE *js, const llama_token *t, int n) {
    fputc('[', js);
    for (int i = 0; i < n; i++)
        fprintf(js, "%s%d", i ? ", " : "", t[i]);
    fputc(']', js);
}

static int tokenize_mode(const char *model_path, const char *texts_path, const char *out_path) {
    FILE *f = fopen(texts_path, "rb");
    if (!f) {
        perror(texts_path);
        return 1;
    }
    static char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(model_path, mp);
    if (!model) {
        fprintf(stderr, "%s: cannot load\n", model_path);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    FILE *js = fopen(out_path, "w");
    if (!js) {
        perror(out_path);
        return 1;
    }
    static llama_token ids[1 << 18];
    fputc('[', js);
    int k = 0;
    for (size_t at = 0; at < len; k++) {
        const char *text = buf + at;
        size_t tl = strlen(text);
        fprintf(js, "%s{\"special\": ", k ? ",\n " : "");
        int n = llama_tokenize(vocab, text, (int32_t)tl, ids, 1 << 18, true, true);
        json_ids(js, ids, n < 0 ? 0 : n);
        fprintf(js, ", \"plain\": ");
        n = llama_tokenize(vocab, text, (int32_t)tl, ids, 1 << 18, false, false);
        json_ids(js, ids, n < 0 ? 0 : n);
        fputc('}', js);
        at += tl + 1;
    }
    fprintf(js, "]\n");
    fclose(js);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "--tokenize"))
        return tokenize_mode(argv[2], argv[3], argv[4]);
    if (argc != 6) {
        fprintf(stderr, "usage: llama_refs MODEL.gguf PROMPT_FILE N_GREEDY OUT.bin OUT.json\n");
        return 2;
    }
    const char *model_path = argv[1];
    int n_greedy = atoi(argv[3]);
    FILE *pf = fopen(argv[2], "rb");
    if (!pf) {
        perror(argv[2]);
        return 1;
    }
    static char prompt[1 << 20];
    size_t plen = fread(prompt, 1, sizeof prompt - 1, pf);
    fclose(pf);
    prompt[plen] = 0;

    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(model_path, mp);
    if (!model) {
        fprintf(stderr, "%s: cannot load\n", model_path);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_vocab = llama_vocab_n_tokens(vocab);

    int cap = (int)plen + 16;
    llama_token *tokens = malloc((size_t)cap * sizeof *tokens);
    int n = llama_tokenize(vocab, prompt, (int32_t)plen, tokens, cap, true, false);
    if (n < 0) {
        fprintf(stderr, "tokenize failed (%d)\n", n);
        return 1;
    }

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    while ((int)cp.n_ctx < n + n_greedy + 1)
        cp.n_ctx *= 2;
    cp.n_batch = cp.n_ctx;
    cp.n_ubatch = cp.n_ctx;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot create a context\n");
        return 1;
    }

    FILE *out = fopen(argv[4], "wb");
    if (!out) {
        perror(argv[4]);
        return 1;
    }
    struct llama_batch batch = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        batch.token[i] = tokens[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    if (llama_decode(ctx, batch)) {
        fprintf(stderr, "decode of the prompt failed\n");
        return 1;
    }
    for (int i = 0; i < n; i++)
        fwrite(llama_get_logits_ith(ctx, i), sizeof(float), (size_t)n_vocab, out);
    llama_token *greedy = malloc((size_t)(n_greedy + 1) * sizeof *greedy);
    llama_token next = argmax(llama_get_logits_ith(ctx, n - 1), n_vocab);
    for (int g = 0; g < n_greedy; g++) {
        greedy[g] = next;
        batch.token[0] = next;
        batch.pos[0] = n + g;
        batch.n_seq_id[0] = 1;
        batch.seq_id[0][0] = 0;
        batch.logits[0] = 1;
        batch.n_tokens = 1;
        if (llama_decode(ctx, batch)) {
            fprintf(stderr, "decode of greedy step %d failed\n", g);
            return 1;
        }
        const float *row = llama_get_logits_ith(ctx, 0);
        fwrite(row, sizeof(float), (size_t)n_vocab, out);
        next = argmax(row, n_vocab);
    }
    fclose(out);

    FILE *js = fopen(argv[5], "w");
    if (!js) {
        perror(argv[5]);
        return 1;
    }
    fprintf(js, "{\"n_vocab\": %d, \"tokens\": [", n_vocab);
    for (int i = 0; i < n; i++)
        fprintf(js, "%s%d", i ? ", " : "", tokens[i]);
    fprintf(js, "], \"greedy_tokens\": [");
    for (int g = 0; g < n_greedy; g++)
        fprintf(js, "%s%d", g ? ", " : "", greedy[g]);
    fprintf(js, "]}\n");
    fclose(js);

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(tokens);
    free(greedy);
    return 0;
}
