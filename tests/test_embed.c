/* Embeddings on tiny random encoder-only models (tests/data/embed, tools/make_embed_tiny.py), on
 * the CPU backend and the Vulkan device, against independent references:
 *   - tiny-bert (a sentence-transformers directory: CLS pooling, no Normalize, max_seq_length
 *     24): vectors and token ids against sentence-transformers, truncation, per-token vectors,
 *     batches equal singles;
 *   - the bert GGUF vkf_model_quantize writes from it (checksum = the file llama.cpp read)
 *     against llama.cpp's llama-embedding, with the pooling the file carries;
 *   - tiny-nomic.gguf (nomic-bert: rotary, fused qkv, SwiGLU) against llama-embedding;
 *   - refusals: a decoder-only model, bad ids, empty inputs, bad parameters, sentence-
 *     transformers modules the engine does not reproduce;
 *   - `vkformer embed` -o json / jsonl / npy give the library's vectors. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define DATA VKF_SOURCE_DIR "/tests/data/embed"
/* f32 math in another order than torch / ggml: cosines agree to ~1e-7; a wrong pooling row,
 * norm or position gives < 0.99 on these random models */
#define COS_MIN 0.9999

static cJSON *fx;

static const char *text(int i) {
    return cJSON_GetArrayItem(cJSON_GetObjectItem(fx, "texts"), i)->valuestring;
}
static int n_texts(void) { return cJSON_GetArraySize(cJSON_GetObjectItem(fx, "texts")); }

static double cosine(const float *a, const cJSON *ref, int n, double *ratio) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) {
        double b = cJSON_GetArrayItem(ref, i)->valuedouble;
        ab += a[i] * b, aa += (double)a[i] * a[i], bb += b * b;
    }
    if (ratio) *ratio = bb > 0 ? sqrt(aa / bb) : 0;
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

/* every vector against ref (entries null: no reference); scale: the norms must agree too */
static void check(const vkf_embeddings *e, const cJSON *ref, int scale, const char *what) {
    double worst = 2, worst_ratio = 0;
    for (int i = 0; i < e->n_inputs; i++) {
        const cJSON *r = cJSON_GetArrayItem(ref, i);
        if (!cJSON_IsArray(r)) continue;
        double ratio;
        double c = cosine(e->data + (size_t)e->first[i] * e->dim, r, e->dim, &ratio);
        if (c < worst) worst = c;
        if (fabs(ratio - 1) > worst_ratio) worst_ratio = fabs(ratio - 1);
    }
    VKT_CHECK(worst >= COS_MIN, "%s: worst cosine %.9f", what, worst);
    /* the reference's norms to 1e-5 relative (7 printed digits, f32 sums) */
    if (scale) VKT_CHECK(worst_ratio < 1e-5, "%s: norms differ by %g relative", what, worst_ratio);
    fprintf(stderr, "%s: worst cosine %.9f, norm ratio within %.2g\n", what, worst, worst_ratio);
}

static vkf_embeddings *embed_texts(vkf_session *s, int n, const vkf_embed_params *p) {
    const char *t[64];
    for (int i = 0; i < n; i++)
        t[i] = text(i);
    vkf_embeddings *e = NULL;
    VKT_OK(vkf_embed(s, t, n, p, &e));
    return e;
}

static void test_tiny_bert(vkf_context *ctx, const char *backend, void *user) {
    (void)user;
    vkf_model_params mp = {.path = DATA "/tiny-bert"};
    vkf_model *m = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    if (!m) return;
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    VKT_CHECK(d.encoder_only && d.pooling == VKF_POOLING_CLS && !d.normalize && d.n_embd_max == 24,
              "%s: describe: pooling %d normalize %d max %d", backend, d.pooling, d.normalize,
              d.n_embd_max);
    /* token ids, truncated as sentence-transformers truncates */
    const cJSON *ids = cJSON_GetObjectItem(fx, "ids");
    int bad = 0;
    for (int i = 0; i < n_texts(); i++) {
        int32_t buf[256], n = 0;
        VKT_OK(vkf_model_tokenize(m, text(i), VKF_TOKENIZE_ADD_SPECIAL, buf, 256, &n));
        if (n > 24) buf[23] = buf[n - 1], n = 24;
        const cJSON *r = cJSON_GetArrayItem(ids, i);
        int same = cJSON_GetArraySize(r) == n;
        for (int k = 0; same && k < n; k++)
            same = cJSON_GetArrayItem(r, k)->valueint == buf[k];
        bad += !same;
    }
    VKT_CHECK(bad == 0, "%s: %d texts tokenize differently from sentence-transformers", backend,
              bad);
    vkf_session *s = NULL;
    VKT_OK(vkf_session_create(m, NULL, &s));
    char what[96];
    vkf_embeddings *e = embed_texts(s, n_texts(), NULL);
    if (e) {
        snprintf(what, sizeof what, "%s: tiny-bert vs sentence-transformers", backend);
        check(e, cJSON_GetObjectItem(fx, "embedding"), 1, what);
        int last = n_texts() - 1;
        VKT_CHECK(e->n_tokens[last] == 24 && e->truncated[last] == 18 && e->n_truncated == 1 &&
                      !e->normalized && e->pooling == VKF_POOLING_CLS,
                  "%s: last input %d tokens, %d cut, %d inputs cut", backend, e->n_tokens[last],
                  e->truncated[last], e->n_truncated);
        /* batches equal singles: the CPU bit for bit (independent rows, masked keys add exact
         * zeros); Vulkan within 1e-5 of the largest component (f32 sums whose order may follow
         * the rows) */
        double worst = 0, big = 0;
        for (int i = 0; i < n_texts(); i++) {
            const char *t[1] = {text(i)};
            vkf_embeddings *one = NULL;
            VKT_OK(vkf_embed(s, t, 1, NULL, &one));
            for (int c = 0; one && c < e->dim; c++) {
                double a = e->data[(size_t)i * e->dim + c];
                if (fabs(one->data[c] - a) > worst) worst = fabs(one->data[c] - a);
                if (fabs(a) > big) big = fabs(a);
            }
            vkf_embeddings_free(one);
        }
        int cpu = !strcmp(backend, "cpu");
        VKT_CHECK(cpu ? worst == 0 : worst <= 1e-5 * big, "%s: batched vs alone: %g (largest %g)",
                  backend, worst, big);
    }
    vkf_embeddings_free(e);
    /* per-token vectors (pooling none) */
    vkf_embed_params none = {.pooling = VKF_POOLING_NONE};
    e = embed_texts(s, 2, &none);
    if (e) {
        const cJSON *toks = cJSON_GetObjectItem(fx, "tokens");
        int rows = cJSON_GetArraySize(cJSON_GetArrayItem(toks, 0)) +
                   cJSON_GetArraySize(cJSON_GetArrayItem(toks, 1));
        VKT_CHECK(e->n_vectors == rows && e->first[1] == e->n_tokens[0], "%s: %d token vectors",
                  backend, e->n_vectors);
        double worst = 2;
        for (int i = 0; i < 2; i++)
            for (int r = 0; r < e->n_tokens[i]; r++) {
                double c = cosine(e->data + (size_t)(e->first[i] + r) * e->dim,
                                  cJSON_GetArrayItem(cJSON_GetArrayItem(toks, i), r), e->dim, NULL);
                if (c < worst) worst = c;
            }
        VKT_CHECK(worst >= COS_MIN, "%s: per-token vectors: worst cosine %.9f", backend, worst);
    }
    vkf_embeddings_free(e);
    /* normalization on request: unit vectors */
    vkf_embed_params on = {.normalize = VKF_NORMALIZE_ON};
    e = embed_texts(s, 3, &on);
    for (int i = 0; e && i < 3; i++) {
        double ss = 0;
        for (int c = 0; c < e->dim; c++)
            ss += (double)e->data[i * e->dim + c] * e->data[i * e->dim + c];
        VKT_CHECK(fabs(ss - 1) < 1e-6, "%s: normalized vector %d has norm^2 %g", backend, i, ss);
    }
    vkf_embeddings_free(e);
    vkf_session_free(s);
    vkf_model_free(m);
}

static uint64_t fnv1a(const char *path) {
    size_t n = 0;
    unsigned char *b = vkt_read_file(path, &n);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; b && i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    free(b);
    return h;
}

/* GGUFs against llama.cpp (texts but the truncated last one: llama-embedding refuses it) */
static void test_gguf(vkf_context *ctx, const char *backend, const char *path, const char *key,
                      int pooling) {
    vkf_model_params mp = {.path = path};
    vkf_model *m = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    if (!m) return;
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    VKT_CHECK(d.encoder_only && d.pooling == pooling && d.normalize, "%s: pooling %d normalize %d",
              path, d.pooling, d.normalize);
    vkf_session *s = NULL;
    VKT_OK(vkf_session_create(m, NULL, &s));
    vkf_embeddings *e = embed_texts(s, n_texts() - 1, NULL);
    if (e) {
        char what[160];
        const char *base = strrchr(path, '/');
        snprintf(what, sizeof what, "%s: %s vs llama-embedding", backend, base ? base + 1 : path);
        check(e, cJSON_GetObjectItem(fx, key), 1, what);
    }
    vkf_embeddings_free(e);
    vkf_session_free(s);
    vkf_model_free(m);
}

static void test_ggufs(vkf_context *ctx, const char *backend, void *user) {
    const char *bert = user;
    test_gguf(ctx, backend, bert, "bert_gguf_llama_cpp", VKF_POOLING_CLS);
    test_gguf(ctx, backend, DATA "/tiny-nomic.gguf", "nomic_llama_cpp", VKF_POOLING_MEAN);
}

/* a copy of tiny-bert whose modules.json / pooling config is replaced */
static void refuse_dir(vkf_context *ctx, const char *modules, const char *pooling,
                       const char *expect) {
    const char *dir = "embed-refuse";
    char p[512], q[512];
    mkdir(dir, 0755);
    static const char *const files[] = {"config.json", "model.safetensors", "tokenizer.json",
                                        "vocab.txt", "tokenizer_config.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        snprintf(q, sizeof q, "%s/tiny-bert/%s", DATA, files[i]);
        unlink(p);
        VKT_CHECK(symlink(q, p) == 0, "symlink %s", p);
    }
    snprintf(p, sizeof p, "%s/modules.json", dir);
    vkt_write_file(p, modules);
    snprintf(p, sizeof p, "%s/P", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/P/config.json", dir);
    vkt_write_file(p, pooling);
    vkf_model_params mp = {.path = dir};
    vkf_model *m = NULL;
    vkf_status st = vkf_model_load(ctx, &mp, &m);
    VKT_CHECK(st == VKF_ERROR_UNSUPPORTED && strstr(vkf_last_error(), expect),
              "expected UNSUPPORTED naming \"%s\", got %s: %s", expect, vkf_status_name(st),
              vkf_last_error());
    vkf_model_free(m);
}

static void test_refusals(vkf_context *ctx) {
    const char *tf = "{\"idx\":0,\"name\":\"0\",\"path\":\"\",\"type\":"
                     "\"sentence_transformers.models.Transformer\"}";
    char mods[512];
    snprintf(mods, sizeof mods,
             "[%s,{\"idx\":1,\"name\":\"1\",\"path\":\"P\",\"type\":"
             "\"sentence_transformers.models.Pooling\"},{\"idx\":2,\"name\":\"2\",\"path\":\"D\","
             "\"type\":\"sentence_transformers.models.Dense\"}]",
             tf);
    refuse_dir(ctx, mods, "{\"pooling_mode_mean_tokens\": true}", "models.Dense");
    snprintf(mods, sizeof mods,
             "[%s,{\"idx\":1,\"name\":\"1\",\"path\":\"P\",\"type\":"
             "\"sentence_transformers.models.Pooling\"}]",
             tf);
    refuse_dir(ctx, mods, "{\"pooling_mode_max_tokens\": true}", "pooling_mode_max_tokens");

    vkf_model_params mp = {.path = DATA "/tiny-bert"};
    vkf_model *m = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    vkf_session *s = NULL;
    if (m) VKT_OK(vkf_session_create(m, NULL, &s));
    if (s) {
        vkf_embeddings *e = NULL;
        int32_t good[3] = {2, 60, 3}, badid[3] = {2, 150, 3};
        const int32_t *in[2] = {good, badid};
        int32_t lens[2] = {3, 3};
        vkf_status st = vkf_embed_tokens(s, in, lens, 2, NULL, &e);
        VKT_CHECK(st == VKF_ERROR_TOKEN && strstr(vkf_last_error(), "input 1") && !e,
                  "bad id: %s: %s", vkf_status_name(st), vkf_last_error());
        lens[1] = 0;
        st = vkf_embed_tokens(s, in, lens, 2, NULL, &e);
        VKT_CHECK(st == VKF_ERROR_INVALID_ARGUMENT && strstr(vkf_last_error(), "input 1 is empty"),
                  "empty ids: %s: %s", vkf_status_name(st), vkf_last_error());
        vkf_embed_params bad = {.pooling = (vkf_pooling)9};
        const char *t[1] = {"hello"};
        st = vkf_embed(s, t, 1, &bad, &e);
        VKT_CHECK(st == VKF_ERROR_INVALID_ARGUMENT, "pooling 9: %s", vkf_status_name(st));
        /* token ids as given: the same vector as the text whose ids they are */
        int32_t hello[3], n = 0;
        VKT_OK(vkf_model_tokenize(m, "hello", VKF_TOKENIZE_ADD_SPECIAL, hello, 3, &n));
        const int32_t *hi[1] = {hello};
        vkf_embeddings *a = NULL, *b = NULL;
        VKT_OK(vkf_embed_tokens(s, hi, &n, 1, NULL, &a));
        VKT_OK(vkf_embed(s, t, 1, NULL, &b));
        VKT_CHECK(a && b && !memcmp(a->data, b->data, (size_t)a->dim * sizeof(float)),
                  "token ids and text give different vectors");
        vkf_embeddings_free(a);
        vkf_embeddings_free(b);
        /* a decoder session refuses vkf_session_eval on an encoder model */
        float logits[4];
        st = vkf_session_eval(s, good, 3, logits);
        VKT_CHECK(st == VKF_ERROR_INVALID_ARGUMENT && strstr(vkf_last_error(), "vkf_embed"),
                  "eval on an encoder: %s: %s", vkf_status_name(st), vkf_last_error());
    }
    vkf_session_free(s);
    vkf_model_free(m);
    /* a decoder-only model has no embeddings here */
    vkf_model_params kp = {.path = VKF_SOURCE_DIR "/models/kjv-gpt"};
    VKT_OK(vkf_model_load(ctx, &kp, &m));
    s = NULL;
    if (m) VKT_OK(vkf_session_create(m, NULL, &s));
    if (s) {
        const char *t[1] = {"In the beginning"};
        vkf_embeddings *e = NULL;
        vkf_status st = vkf_embed(s, t, 1, NULL, &e);
        VKT_CHECK(st == VKF_ERROR_INVALID_ARGUMENT && strstr(vkf_last_error(), "encoder-only"),
                  "embed on gpt2: %s: %s", vkf_status_name(st), vkf_last_error());
    }
    vkf_session_free(s);
    vkf_model_free(m);
}

/* vkformer embed's three output formats carry the library's vectors */
static void test_cli(vkf_context *cpu) {
    vkt_write_file("embed-in.txt", "hello\nthe man is eating food.\n");
    char *argv[] = {"./vkformer", "embed",        "--cpu", "-m",  DATA "/tiny-bert",
                    "-f",         "embed-in.txt", "-o",    "npy", NULL};
    VKT_CHECK(vkt_run(argv, "embed-out.npy", "embed-err.txt") == 0, "vkformer embed -o npy");
    size_t n = 0;
    unsigned char *b = vkt_read_file("embed-out.npy", &n);
    vkf_model_params mp = {.path = DATA "/tiny-bert"};
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    VKT_OK(vkf_model_load(cpu, &mp, &m));
    if (m) VKT_OK(vkf_session_create(m, NULL, &s));
    const char *t[2] = {"hello", "the man is eating food."};
    vkf_embeddings *e = NULL;
    if (s) VKT_OK(vkf_embed(s, t, 2, NULL, &e));
    if (b && e && n > 10) {
        size_t hl = (size_t)b[8] | (size_t)b[9] << 8;
        VKT_CHECK(!memcmp(b, "\x93NUMPY\x01\x00", 8) && (10 + hl) % 64 == 0 &&
                      strstr((char *)b + 10, "'shape': (2, 32)") && n == 10 + hl + 2 * 32 * 4 &&
                      !memcmp(b + 10 + hl, e->data, 2 * 32 * 4),
                  "npy: header or data differ (%zu bytes)", n);
    }
    free(b);
    argv[8] = "json";
    VKT_CHECK(vkt_run(argv, "embed-out.json", "embed-err.txt") == 0, "vkformer embed -o json");
    char *j = vkt_read_file("embed-out.json", &n);
    cJSON *o = j ? cJSON_ParseWithLength(j, n) : NULL;
    const cJSON *data = cJSON_GetObjectItem(o, "data");
    int same = cJSON_GetArraySize(data) == 2 && e;
    for (int i = 0; same && i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItem(cJSON_GetArrayItem(data, i), "embedding");
        for (int c = 0; same && c < 32; c++) /* %.9g round-trips a float exactly */
            same = (float)cJSON_GetArrayItem(v, c)->valuedouble == e->data[i * 32 + c];
    }
    VKT_CHECK(same &&
                  cJSON_GetObjectItem(cJSON_GetObjectItem(o, "usage"), "prompt_tokens")->valueint ==
                      e->n_tokens[0] + e->n_tokens[1],
              "json output differs from the library's vectors");
    cJSON_Delete(o);
    free(j);
    vkf_embeddings_free(e);
    vkf_session_free(s);
    vkf_model_free(m);
}

int main(void) {
    size_t n;
    char *j = vkt_read_file(DATA "/tiny.json", &n);
    fx = j ? cJSON_ParseWithLength(j, n) : NULL;
    free(j);
    VKT_CHECK(fx != NULL, "cannot read %s/tiny.json", DATA);
    if (!fx) return vkt_finish();
    /* the bert GGUF as vkf_model_quantize writes it: the very file llama.cpp embedded */
    const char *bert = "tiny-bert-f32.gguf";
    vkf_quantize_params qp = {.input = DATA "/tiny-bert", .output = bert, .type = "F32"};
    VKT_OK(vkf_model_quantize(&qp, NULL));
    char sum[32];
    snprintf(sum, sizeof sum, "%016llx", (unsigned long long)fnv1a(bert));
    VKT_CHECK(!strcmp(sum, cJSON_GetObjectItem(fx, "bert_gguf_fnv1a64")->valuestring),
              "%s: checksum %s, llama.cpp embedded %s", bert, sum,
              cJSON_GetObjectItem(fx, "bert_gguf_fnv1a64")->valuestring);
    vkt_for_each_backend(test_tiny_bert, NULL);
    vkt_for_each_backend(test_ggufs, (void *)bert);
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_context *cpu = NULL;
    VKT_OK(vkf_context_create(&cp, &cpu));
    if (cpu) {
        test_refusals(cpu);
        test_cli(cpu);
    }
    vkf_context_free(cpu);
    cJSON_Delete(fx);
    return vkt_finish();
}
