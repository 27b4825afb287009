/* Threads: two sessions on one loaded model, driven from two threads at once, give exactly the
 * outputs they give one after the other, on the CPU and on the Vulkan device (vkformer.h,
 * "Thread safety"). Each round starts both threads at a barrier; four workloads per model:
 *   greedy generation (kjv-gpt: must also equal PyTorch's greedy tokens from expected.json),
 *   seeded sampling, teacher-forced logits of a whole prompt, and tokenization in a loop
 *   (gpt2-tiny's byte-level BPE keeps a pre-token cache: the model serializes encode).
 * A third thread loads and frees a second model on the same context meanwhile.
 * Tokenizer loading: four threads load a byte-level tokenizer.json at once (the byte tables the
 * loader fills are shared by every tokenizer: filled once, under pthread_once) and each must
 * tokenize as a tokenizer loaded alone does. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "robust/robust_util.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "vkformer.h"

#define MAX_OUT 256

typedef struct job {
    vkf_model *m;
    int kind; /* 0 greedy, 1 sampled, 2 logits, 3 tokenize */
    const int32_t *prompt;
    int n_prompt;
    const char *text; /* kind 3 */
    int n_gen;
    uint64_t seed;
    /* results */
    int32_t toks[MAX_OUT];
    int n;
    float *logits; /* kind 2: n_prompt * n_vocab */
    vkf_status st;
    char err[512];
    pthread_barrier_t *bar;
} job;

static int on_token(void *user, int32_t token, const char *piece, size_t len) {
    (void)piece;
    (void)len;
    job *j = user;
    if (j->n < MAX_OUT) j->toks[j->n++] = token;
    return 0;
}

static void run_job(job *j) {
    j->n = 0;
    j->st = VKF_OK;
    j->err[0] = 0;
    vkf_session *s = NULL;
    if (j->kind == 3) { /* 200 tokenizations; every result must be the same */
        int32_t first[MAX_OUT], cur[MAX_OUT], n0 = 0, n1 = 0;
        for (int i = 0; i < 200 && j->st == VKF_OK; i++) {
            j->st = vkf_model_tokenize(j->m, j->text, 0, i ? cur : first, MAX_OUT, i ? &n1 : &n0);
            if (j->st == VKF_OK && i &&
                (n1 != n0 || memcmp(first, cur, (size_t)n0 * sizeof *cur) != 0)) {
                j->st = VKF_ERROR_INTERNAL;
                snprintf(j->err, sizeof j->err, "tokenization %d differs from the first", i);
            }
        }
        memcpy(j->toks, first, (size_t)n0 * sizeof *first);
        j->n = n0;
    } else {
        vkf_session_params sp = {.n_ctx = 128};
        j->st = vkf_session_create(j->m, &sp, &s);
        if (j->st == VKF_OK && j->kind == 2) {
            j->st = vkf_session_eval(s, j->prompt, j->n_prompt, j->logits);
        } else if (j->st == VKF_OK) {
            vkf_sampler_params smp = {
                .temp = j->kind == 0 ? 0.0f : 0.9f, .top_k = 30, .top_p = 0.9f, .seed = j->seed};
            j->st = vkf_generate(s, j->prompt, j->n_prompt, j->n_gen, &smp, on_token, j, NULL);
        }
    }
    if (j->st != VKF_OK && !j->err[0]) snprintf(j->err, sizeof j->err, "%s", vkf_last_error());
    vkf_session_free(s);
}

static void *thread_main(void *arg) {
    job *j = arg;
    pthread_barrier_wait(j->bar);
    run_job(j);
    return NULL;
}

typedef struct loader {
    vkf_context *ctx;
    const char *path;
    int rounds;
    vkf_status st;
    char err[512];
    pthread_barrier_t *bar;
} loader;

static void *loader_main(void *arg) {
    loader *l = arg;
    pthread_barrier_wait(l->bar);
    l->st = VKF_OK;
    for (int i = 0; i < l->rounds && l->st == VKF_OK; i++) {
        vkf_model_params mp = {.path = l->path};
        vkf_model *m = NULL;
        l->st = vkf_model_load(l->ctx, &mp, &m);
        if (l->st != VKF_OK) snprintf(l->err, sizeof l->err, "%s", vkf_last_error());
        vkf_model_free(m);
    }
    return NULL;
}

static int same(const job *a, const job *b, int n_logits) {
    if (a->st != b->st || a->n != b->n ||
        memcmp(a->toks, b->toks, (size_t)a->n * sizeof *a->toks) != 0)
        return 0;
    return !n_logits || memcmp(a->logits, b->logits, (size_t)n_logits * sizeof *a->logits) == 0;
}

/* Runs jobs a and b one after the other (the reference), then `rounds` times concurrently (with
 * a model loader as a third thread), and compares. */
static void run_pair(const char *label, vkf_context *ctx, job *a, job *b, int n_logits,
                     int rounds) {
    job ra = *a, rb = *b;
    float *la = n_logits ? malloc((size_t)n_logits * sizeof *la) : NULL,
          *lb = n_logits ? malloc((size_t)n_logits * sizeof *lb) : NULL;
    if (a->kind == 2) ra.logits = la;
    if (b->kind == 2) rb.logits = lb;
    run_job(&ra);
    run_job(&rb);
    VKT_CHECK(ra.st == VKF_OK && rb.st == VKF_OK, "%s: sequential run failed: %s / %s", label,
              ra.err, rb.err);
    int bad = 0;
    for (int r = 0; r < rounds; r++) {
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, 3);
        job ca = *a, cb = *b;
        ca.bar = cb.bar = &bar;
        float *cl = n_logits ? calloc((size_t)n_logits, sizeof *cl) : NULL;
        if (a->kind == 2) ca.logits = cl;
        if (b->kind == 2) cb.logits = cl;
        loader ld = {ctx, rb_repo("models/kjv-gpt"), 2, VKF_OK, "", &bar};
        pthread_t ta, tb, tl;
        pthread_create(&ta, NULL, thread_main, &ca);
        pthread_create(&tb, NULL, thread_main, &cb);
        pthread_create(&tl, NULL, loader_main, &ld);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_join(tl, NULL);
        pthread_barrier_destroy(&bar);
        VKT_CHECK(ld.st == VKF_OK, "%s round %d: loading a model meanwhile: %s", label, r, ld.err);
        int ok_a = same(&ca, &ra, a->kind == 2 ? n_logits : 0),
            ok_b = same(&cb, &rb, b->kind == 2 ? n_logits : 0);
        free(cl);
        if (!ok_a || !ok_b) {
            bad++;
            VKT_CHECK(
                0,
                "%s round %d: concurrent results differ from sequential ones (a: %s %s, b: %s %s)",
                label, r, ok_a ? "same" : "DIFFERENT", ca.err, ok_b ? "same" : "DIFFERENT", cb.err);
        }
    }
    VKT_CHECK(bad == 0, "%s: %d of %d rounds differ", label, bad, rounds);
    *a = ra;
    *b = rb;
    a->logits = b->logits = NULL;
    free(la);
    free(lb);
}

static int32_t g_kjv_tokens[2][64], g_kjv_greedy[2][64];
static int g_kjv_n[2], g_kjv_ng[2];

static void load_kjv(void) {
    char *text = vkt_read_file(rb_repo("models/kjv-gpt/expected.json"), NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *c;
    int k = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
        if (k == 2) break;
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "tokens")) if (g_kjv_n[k] < 64)
            g_kjv_tokens[k][g_kjv_n[k]++] = e->valueint;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "greedy_tokens")) if (g_kjv_ng[k] < 64)
            g_kjv_greedy[k][g_kjv_ng[k]++] = e->valueint;
        k++;
    }
    cJSON_Delete(j);
    VKT_CHECK(k == 2 && g_kjv_ng[0] >= 48, "models/kjv-gpt/expected.json unreadable");
}

static void test_backend(vkf_backend_kind kind, int rounds) {
    const char *label = kind == VKF_BACKEND_VULKAN ? "vulkan" : "cpu";
    vkf_context_params cp = {.backend = kind};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (!ctx) return;
    vkf_model_params mp = {.path = rb_repo("models/kjv-gpt")};
    vkf_model *m = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    if (m) {
        char l[64];
        /* greedy + greedy: both equal PyTorch */
        job a = {.m = m, .kind = 0, .prompt = g_kjv_tokens[0], .n_prompt = g_kjv_n[0], .n_gen = 48};
        job b = {.m = m, .kind = 0, .prompt = g_kjv_tokens[1], .n_prompt = g_kjv_n[1], .n_gen = 48};
        snprintf(l, sizeof l, "%s greedy/greedy", label);
        run_pair(l, ctx, &a, &b, 0, rounds);
        VKT_CHECK(a.n == 48 && memcmp(a.toks, g_kjv_greedy[0], 48 * sizeof *a.toks) == 0,
                  "%s: greedy 0 differs from PyTorch", label);
        VKT_CHECK(b.n == 48 && memcmp(b.toks, g_kjv_greedy[1], 48 * sizeof *b.toks) == 0,
                  "%s: greedy 1 differs from PyTorch", label);
        /* sampled + logits */
        job c = {.m = m,
                 .kind = 1,
                 .prompt = g_kjv_tokens[0],
                 .n_prompt = g_kjv_n[0],
                 .n_gen = 64,
                 .seed = 99};
        job d = {.m = m, .kind = 2, .prompt = g_kjv_tokens[1], .n_prompt = g_kjv_n[1]};
        snprintf(l, sizeof l, "%s sampled/logits", label);
        run_pair(l, ctx, &c, &d, g_kjv_n[1] * 67, rounds);
        VKT_CHECK(c.n == 64, "%s: sampled %d tokens", label, c.n);
        vkf_model_free(m);
    }
    vkf_context_free(ctx);
}

static void test_tokenizer_threads(void) {
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    vkf_model_params mp = {.path = vkt_fixture("gpt2-tiny/hf")};
    vkf_model *m = NULL;
    if (ctx) VKT_OK(vkf_model_load(ctx, &mp, &m));
    if (m) {
        /* many distinct words, so the pre-token cache is written while the other thread reads */
        static const char ta[] = "In the beginning God created the heaven and the earth. And the "
                                 "earth was without form, and void; and darkness "
                                 "was upon the face of the deep. The quick brown fox jumps over "
                                 "the lazy dog 0123456789 times!";
        static const char tb[] =
            "Vulkan 1.3 runs on AMD, Intel & NVIDIA \xe2\x80\x94 42 tokens/s! Numbers: 3.14159 "
            "-273.15 1,000,000 "
            "unbelievably antidisestablishmentarianism supercalifragilistic expialidocious";
        job a = {.m = m, .kind = 3, .text = ta}, b = {.m = m, .kind = 3, .text = tb};
        run_pair("gpt2 tokenizer", ctx, &a, &b, 0, 5);
        VKT_CHECK(a.n > 20 && b.n > 20, "tokenized %d and %d tokens", a.n, b.n);
        vkf_model_free(m);
    }
    vkf_context_free(ctx);
}

typedef struct tok_load_job {
    pthread_barrier_t *bar;
    const char *path, *text;
    int32_t *ids;
    size_t n;
    vkf_status st;
} tok_load_job;

static void *tok_load_main(void *arg) {
    tok_load_job *j = arg;
    pthread_barrier_wait(j->bar);
    vkf_tokenizer *t = NULL;
    j->st = vkf_tokenizer_from_hf_json(j->path, &t);
    if (j->st == VKF_OK)
        j->st = vkf_tokenizer_encode(t, j->text, strlen(j->text), 0, &j->ids, &j->n);
    vkf_tokenizer_free(t);
    return NULL;
}

static void test_tokenizer_load_threads(void) {
    const char *path = rb_repo("tests/data/tokenizers/bpe_bytelevel/tokenizer.json");
    const char *text =
        "Threads load tokenizers: caf\xc3\xa9 \xe2\x80\x94 42 \xf0\x9f\x98\x80 naïve   spaces";
    vkf_tokenizer *t = NULL;
    int32_t *ref = NULL;
    size_t n_ref = 0;
    VKT_OK(vkf_tokenizer_from_hf_json(path, &t));
    if (t) VKT_OK(vkf_tokenizer_encode(t, text, strlen(text), 0, &ref, &n_ref));
    vkf_tokenizer_free(t);
    enum { N = 4 };
    tok_load_job j[N];
    pthread_t th[N];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, N);
    for (int i = 0; i < N; i++) {
        j[i] = (tok_load_job){.bar = &bar, .path = path, .text = text};
        pthread_create(&th[i], NULL, tok_load_main, &j[i]);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    for (int i = 0; i < N; i++) {
        VKT_CHECK(j[i].st == VKF_OK && j[i].n == n_ref && n_ref > 5 &&
                      memcmp(j[i].ids, ref, n_ref * sizeof *ref) == 0,
                  "tokenizer loaded by thread %d tokenizes differently (%zu ids, alone %zu)", i,
                  j[i].n, n_ref);
        free(j[i].ids);
    }
    free(ref);
}

int main(void) {
    load_kjv();
    int vulkan = rb_has_vulkan();
    int rounds = rb_asan() || rb_valgrind() ? 1 : 3;
    printf("cpu\n");
    test_backend(VKF_BACKEND_CPU, rounds);
    if (vulkan) {
        printf("vulkan\n");
        test_backend(VKF_BACKEND_VULKAN, rounds);
    }
    printf("tokenizer loading\n");
    test_tokenizer_load_threads();
    if (vkt_need_fixtures("gpt2-tiny")) {
        printf("tokenizer\n");
        test_tokenizer_threads();
    }
    return vkt_finish();
}
