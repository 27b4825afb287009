/* all-MiniLM-L6-v2 (the real model, fetched once per machine by tests/real/fetch_model.sh; label
 * "real", skipped when it cannot be had) against sentence-transformers and llama.cpp
 * (tests/data/embed/all-minilm-l6-v2.json, tools/make_embed_fixtures.py):
 *   - the HF directory on the Vulkan device: every text's vector (batched), cosine >= 0.9999
 *     with sentence-transformers'; the token ids equal its tokenizer's (truncation included),
 *     from tokenizer.json and from vocab.txt alone; per-token vectors (pooling none), and the
 *     first / last rows as CLS / last pooling;
 *   - batches equal singles: each text alone gives its batched vector (the CPU backend: bit for
 *     bit; Vulkan: within 1e-5, the kernels' f32 summation order may change with the rows);
 *   - the GGUF form written by vkf_model_quantize (F16 and Q8_0, llama.cpp's rules): the same
 *     bound against sentence-transformers for F16, llama-embedding's vectors on the very same
 *     file (its checksum is in the fixture), and a looser bound for Q8_0. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* sentence-transformers runs torch in f32: the same math in another summation order agrees to
 * ~1e-7 relative; 0.9999 leaves three orders of magnitude for kernel differences while a wrong
 * pooling, a missing norm or a wrong token gives < 0.99 */
#define COS_F32 0.9999
/* F16 weights: relative rounding 2^-11 per weight, averaged over 384-1536-wide dots: measured
 * 0.99999+; the bound 0.9999 */
#define COS_F16 0.9999
/* Q8_0: 8-bit weights (relative error ~1/254 per block); measured 0.99956 on these texts */
#define COS_Q8 0.999
/* llama.cpp's CPU backend quantizes the activations to Q8_0 as well for Q8_0 weights (we keep
 * them f32): measured 0.9993 on these texts */
#define COS_Q8_LLAMA 0.998

static cJSON *fx;
static char model_dir[1024];

static double cosine(const float *a, const double *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) {
        ab += a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += b[i] * b[i];
    }
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
}

static double *jvec(const cJSON *a, int *n) {
    *n = cJSON_GetArraySize(a);
    double *v = malloc((size_t)(*n + 1) * sizeof *v);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) v[i++] = e->valuedouble;
    return v;
}

static int n_texts(void) { return cJSON_GetArraySize(cJSON_GetObjectItem(fx, "texts")); }
static const char *text(int i) {
    return cJSON_GetArrayItem(cJSON_GetObjectItem(fx, "texts"), i)->valuestring;
}

/* every text's vector against sentence-transformers' */
static void check_vectors(const vkf_embeddings *e, const cJSON *ref, double bound,
                          const char *what) {
    double worst = 2;
    int wi = -1, checked = 0;
    for (int i = 0; i < e->n_inputs; i++) {
        const cJSON *r = cJSON_GetArrayItem(ref, i);
        if (!cJSON_IsArray(r)) continue; /* llama.cpp: no vector for that text */
        int n;
        double *v = jvec(r, &n);
        VKT_CHECK(n == e->dim, "%s: reference has %d dims, ours %d", what, n, e->dim);
        double c = cosine(e->data + (size_t)e->first[i] * e->dim, v, n < e->dim ? n : e->dim);
        if (c < worst) worst = c, wi = i;
        checked++;
        free(v);
    }
    VKT_CHECK(worst >= bound, "%s: cosine %.9f on text %d (\"%.40s\") < %g", what, worst, wi,
              wi >= 0 ? text(wi) : "", bound);
    fprintf(stderr, "%s: %d texts, worst cosine %.9f (text %d)\n", what, checked, worst, wi);
}

static vkf_embeddings *embed_all(vkf_session *s, int pooling, int normalize) {
    int n = n_texts();
    const char **t = malloc((size_t)n * sizeof *t);
    for (int i = 0; i < n; i++)
        t[i] = text(i);
    vkf_embed_params ep = {.pooling = pooling, .normalize = normalize};
    vkf_embeddings *e = NULL;
    VKT_OK(vkf_embed(s, t, n, &ep, &e));
    free(t);
    return e;
}

/* token ids: ours (the model's tokenizer, with specials, then sentence-transformers' truncation
 * rule: the first max-1 ids and [SEP]) against the fixture's */
static void check_ids(vkf_model *m, const char *what) {
    const cJSON *ids = cJSON_GetObjectItem(fx, "ids");
    int max = cJSON_GetObjectItem(fx, "max_seq_length")->valueint, bad = 0;
    for (int i = 0; i < n_texts(); i++) {
        int32_t buf[4096], n = 0;
        VKT_OK(vkf_model_tokenize(m, text(i), VKF_TOKENIZE_ADD_SPECIAL, buf, 4096, &n));
        if (n > max) buf[max - 1] = buf[n - 1], n = max;
        int rn;
        double *r = jvec(cJSON_GetArrayItem(ids, i), &rn);
        int same = rn == n;
        for (int k = 0; same && k < n; k++)
            same = (int32_t)r[k] == buf[k];
        if (!same && bad++ < 3)
            fprintf(stderr, "%s: text %d (\"%.40s\"): %d ids, reference %d\n", what, i, text(i), n,
                    rn);
        free(r);
    }
    VKT_CHECK(bad == 0, "%s: %d texts tokenize differently from sentence-transformers", what, bad);
}

static vkf_model *load(vkf_context *ctx, const char *path) {
    vkf_model_params mp = {.path = path};
    vkf_model *m = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    return m;
}

/* the HF directory: vectors, ids, tokens, pooling modes */
static void test_hf(vkf_context *ctx) {
    vkf_model *m = load(ctx, model_dir);
    if (!m) return;
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    VKT_CHECK(d.encoder_only && d.pooling == VKF_POOLING_MEAN && d.normalize &&
                  d.n_embd_max == 256 && d.d_model == 384,
              "describe: encoder_only %d pooling %d normalize %d max %d d %d", d.encoder_only,
              d.pooling, d.normalize, d.n_embd_max, d.d_model);
    check_ids(m, "tokenizer.json");
    vkf_session *s = NULL;
    VKT_OK(vkf_session_create(m, NULL, &s));
    vkf_embeddings *e = embed_all(s, 0, 0);
    if (e) {
        check_vectors(e, cJSON_GetObjectItem(fx, "embedding"), COS_F32, "HF dir, Vulkan");
        int last = e->n_inputs - 1;
        VKT_CHECK(e->truncated[last] > 0 && e->n_tokens[last] == 256 && e->n_truncated == 1,
                  "truncation: last text cut by %d to %d tokens (%d inputs cut)",
                  e->truncated[last], e->n_tokens[last], e->n_truncated);
        const cJSON *ids = cJSON_GetObjectItem(fx, "ids");
        int bad = 0;
        for (int i = 0; i < e->n_inputs; i++)
            bad += e->n_tokens[i] != cJSON_GetArraySize(cJSON_GetArrayItem(ids, i));
        VKT_CHECK(bad == 0, "%d inputs embedded with another token count than the reference", bad);
    }
    vkf_embeddings_free(e);

    /* per-token vectors, and CLS / last pooling as their first / last rows (unnormalized) */
    const cJSON *tok;
    cJSON_ArrayForEach(tok, cJSON_GetObjectItem(fx, "tokens")) {
        int ti = cJSON_GetObjectItem(tok, "text")->valueint;
        const char *t[1] = {text(ti)};
        const cJSON *rows = cJSON_GetObjectItem(tok, "vectors");
        int nr = cJSON_GetArraySize(rows);
        static const int modes[3] = {VKF_POOLING_NONE, VKF_POOLING_CLS, VKF_POOLING_LAST};
        for (int k = 0; k < 3; k++) {
            vkf_embed_params ep = {.pooling = modes[k], .normalize = VKF_NORMALIZE_OFF};
            vkf_embeddings *te = NULL;
            VKT_OK(vkf_embed(s, t, 1, &ep, &te));
            if (!te) continue;
            int nv = modes[k] == VKF_POOLING_NONE ? nr : 1;
            VKT_CHECK(te->n_vectors == nv, "pooling %s: %d vectors, expected %d",
                      vkf_pooling_name(modes[k]), te->n_vectors, nv);
            double worst = 2;
            for (int r = 0; r < nv && r < te->n_vectors; r++) {
                int rr = modes[k] == VKF_POOLING_LAST ? nr - 1 : r;
                int n;
                double *v = jvec(cJSON_GetArrayItem(rows, rr), &n);
                double c = cosine(te->data + (size_t)r * te->dim, v, n);
                if (c < worst) worst = c;
                free(v);
            }
            VKT_CHECK(worst >= COS_F32, "text %d pooling %s: worst cosine %.9f", ti,
                      vkf_pooling_name(modes[k]), worst);
            vkf_embeddings_free(te);
        }
    }
    vkf_session_free(s);
    vkf_model_free(m);
}

/* vocab.txt alone (no tokenizer.json): transformers' BertTokenizer conversion */
static void test_vocab_txt(vkf_context *ctx) {
    char dir[1200], src[1200], dst[1300];
    snprintf(dir, sizeof dir, "%s/embed-vocab-txt", getenv("VKT_TMP") ? getenv("VKT_TMP") : ".");
    mkdir(dir, 0755);
    static const char *const files[] = {"config.json",  "model.safetensors",
                                        "vocab.txt",    "tokenizer_config.json",
                                        "modules.json", "sentence_bert_config.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(src, sizeof src, "%s/%s", model_dir, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        unlink(dst);
        VKT_CHECK(symlink(src, dst) == 0, "symlink %s", dst);
    }
    snprintf(dst, sizeof dst, "%s/1_Pooling", dir);
    snprintf(src, sizeof src, "%s/1_Pooling", model_dir);
    unlink(dst);
    VKT_CHECK(symlink(src, dst) == 0, "symlink %s", dst);
    vkf_model *m = load(ctx, dir);
    if (!m) return;
    check_ids(m, "vocab.txt");
    vkf_model_free(m);
}

/* each text alone gives its batched vector */
static void test_batch_vs_single(vkf_context *ctx, const char *backend, int n_check, double tol) {
    vkf_model *m = load(ctx, model_dir);
    if (!m) return;
    vkf_session *s = NULL;
    VKT_OK(vkf_session_create(m, NULL, &s));
    const char *t[64];
    int n = n_check < n_texts() ? n_check : n_texts();
    for (int i = 0; i < n; i++)
        t[i] = text(i);
    vkf_embeddings *all = NULL;
    VKT_OK(vkf_embed(s, t, n, NULL, &all));
    double worst = 0;
    for (int i = 0; all && i < n; i++) {
        vkf_embeddings *one = NULL;
        VKT_OK(vkf_embed(s, &t[i], 1, NULL, &one));
        for (int c = 0; one && c < all->dim; c++) {
            double dd = fabs(one->data[c] - all->data[(size_t)i * all->dim + c]);
            if (dd > worst) worst = dd;
        }
        vkf_embeddings_free(one);
    }
    VKT_CHECK(worst <= tol, "%s: batched vs alone: max |diff| %g > %g", backend, worst, tol);
    fprintf(stderr, "%s: %d texts batched vs alone: max |diff| %g\n", backend, n, worst);
    vkf_embeddings_free(all);
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

/* the GGUF form: written here by the quantizer, compared with sentence-transformers and with
 * llama.cpp's llama-embedding on the same file */
static void test_gguf(vkf_context *ctx, const char *type, double bound, double bound_llama) {
    char out[1200];
    snprintf(out, sizeof out, "%s/minilm-%s.gguf", getenv("VKT_TMP") ? getenv("VKT_TMP") : ".",
             type);
    vkf_quantize_params qp = {.input = model_dir, .output = out, .type = type};
    VKT_OK(vkf_model_quantize(&qp, NULL));
    const cJSON *lc = cJSON_GetObjectItem(cJSON_GetObjectItem(fx, "llama_cpp"), type);
    const cJSON *sum = cJSON_GetObjectItem(cJSON_GetObjectItem(fx, "gguf_fnv1a64"), type);
    if (cJSON_IsString(sum)) {
        char got[32];
        snprintf(got, sizeof got, "%016llx", (unsigned long long)fnv1a(out));
        VKT_CHECK(!strcmp(got, sum->valuestring),
                  "%s: checksum %s, the file llama.cpp embedded was %s", out, got,
                  sum->valuestring);
    }
    vkf_model *m = load(ctx, out);
    if (!m) return;
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    VKT_CHECK(d.encoder_only && d.pooling == VKF_POOLING_MEAN && d.normalize,
              "GGUF describe: encoder_only %d pooling %d normalize %d", d.encoder_only, d.pooling,
              d.normalize);
    check_ids(m, type);
    /* a GGUF keeps no max_seq_length (llama.cpp's converter writes the 512 positions): the
     * session's context gives sentence-transformers' 256 */
    vkf_session_params sp = {.n_ctx = cJSON_GetObjectItem(fx, "max_seq_length")->valueint};
    vkf_session *s = NULL;
    VKT_OK(vkf_session_create(m, &sp, &s));
    vkf_embeddings *e = embed_all(s, 0, 0);
    if (e) {
        char what[64];
        snprintf(what, sizeof what, "GGUF %s vs sentence-transformers", type);
        check_vectors(e, cJSON_GetObjectItem(fx, "embedding"), bound, what);
        if (lc) {
            snprintf(what, sizeof what, "GGUF %s vs llama-embedding", type);
            check_vectors(e, lc, bound_llama, what);
        }
    }
    vkf_embeddings_free(e);
    vkf_session_free(s);
    vkf_model_free(m);
}

int main(void) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s/tests/real/fetch_model.sh all-minilm-l6-v2", VKF_SOURCE_DIR);
    FILE *p = popen(cmd, "r");
    if (!p || !fgets(model_dir, sizeof model_dir, p)) {
        int st = p ? pclose(p) : -1;
        fprintf(stderr, "all-MiniLM-L6-v2 not available (fetch_model.sh: %d): skipped\n", st);
        return 77;
    }
    int st = pclose(p);
    model_dir[strcspn(model_dir, "\n")] = 0;
    if (st != 0) {
        fprintf(stderr, "fetch_model.sh failed (%d)\n", st);
        return WEXITSTATUS(st) == 77 ? 77 : 1;
    }
    size_t n;
    char *j = vkt_read_file(VKF_SOURCE_DIR "/tests/data/embed/all-minilm-l6-v2.json", &n);
    fx = j ? cJSON_ParseWithLength(j, n) : NULL;
    free(j);
    VKT_CHECK(fx != NULL, "cannot read tests/data/embed/all-minilm-l6-v2.json");
    if (!fx) return vkt_finish();

    vkf_context *cpu = NULL, *vk = NULL;
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    VKT_OK(vkf_context_create(&cp, &cpu));
    vkf_context_params vp = {.backend = VKF_BACKEND_VULKAN};
    VKT_OK(vkf_context_create(&vp, &vk));
    if (vk) {
        test_hf(vk);
        test_batch_vs_single(vk, "vulkan", 6, 1e-5);
        test_gguf(vk, "F16", COS_F16, COS_F16);
        test_gguf(vk, "Q8_0", COS_Q8, COS_Q8_LLAMA);
    }
    if (cpu) {
        test_vocab_txt(cpu);
        /* the reference backend: rows are independent, masked keys add exact zeros */
        test_batch_vs_single(cpu, "cpu", 4, 0.0);
    }
    vkf_context_free(vk);
    vkf_context_free(cpu);
    cJSON_Delete(fx);
    return vkt_finish();
}
