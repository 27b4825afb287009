/* Generation: sampling determinism and distribution, greedy = argmax (and = the llama.cpp
 * fixture's greedy tokens), context-full handling, beam search consistency, and the shipped
 * models' expected.json reproduced token for token, on the CPU and on Vulkan. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "model/model.h" /* vkf_session.max_chunk: force the chunked prompt path */
#include "testutil.h"
#include "vkformer.h"

/* ------------------------------------------------------------------ helpers */

typedef struct collect {
    int32_t toks[1024];
    int n;
    int stop_after; /* 0: never */
} collect;

static int on_token(void *user, int32_t token, const char *piece, size_t len) {
    (void)piece;
    (void)len;
    collect *c = user;
    if (c->n < 1024) c->toks[c->n++] = token;
    return c->stop_after && c->n >= c->stop_after;
}

static cJSON *load_json(const char *path) {
    char *text = vkt_read_file(path, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

static int json_ints(const cJSON *a, int32_t *out, int cap) {
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        if (n < cap) out[n] = (int32_t)e->valuedouble;
        n++;
    }
    return n;
}

static int32_t argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

static vkf_model *load(vkf_context *ctx, const char *path) {
    vkf_model_params mp = {.path = path};
    vkf_model *m = NULL;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        VKT_CHECK(0, "load %s: %s", path, vkf_last_error());
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------------ sampler alone */

static void test_sampler(void) {
    float logits[5] = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
    vkf_sampler *s;
    int32_t t;
    /* greedy: argmax, ties to the lowest id */
    vkf_sampler_params g = {.temp = 0};
    VKT_OK(vkf_sampler_create(&g, &s));
    VKT_OK(vkf_sampler_sample(s, logits, 5, &t));
    VKT_CHECK(t == 1, "greedy picked %d, want 1", t);
    vkf_sampler_free(s);
    /* top_k 1 at any temperature is greedy */
    vkf_sampler_params k1 = {.temp = 5.0f, .top_k = 1, .seed = 7};
    VKT_OK(vkf_sampler_create(&k1, &s));
    int ok = 1;
    for (int i = 0; i < 100; i++)
        ok &= vkf_sampler_sample(s, logits, 5, &t) == VKF_OK && t == 1;
    VKT_CHECK(ok, "top_k 1 did not always pick the argmax");
    vkf_sampler_free(s);
    /* frequencies follow softmax(logits / T) over the top-k */
    float l3[3] = {0.0f, (float)log(2.0), (float)log(4.0)}; /* p = 1/7, 2/7, 4/7 at T = 1 */
    vkf_sampler_params p1 = {.temp = 1.0f, .seed = 123};
    VKT_OK(vkf_sampler_create(&p1, &s));
    int count[3] = {0};
    const int N = 70000;
    for (int i = 0; i < N; i++)
        if (vkf_sampler_sample(s, l3, 3, &t) == VKF_OK) count[t]++;
    vkf_sampler_free(s);
    double want[3] = {1.0 / 7, 2.0 / 7, 4.0 / 7};
    for (int i = 0; i < 3; i++) /* 4 sigma of a binomial with N = 70000 is below 0.008 */
        VKT_CHECK(fabs((double)count[i] / N - want[i]) < 0.008, "token %d drawn %.4f, want %.4f", i,
                  (double)count[i] / N, want[i]);
    /* top_p 0.5 keeps only the 4/7 token; 0.6 keeps the top two (4/7 + 2/7 >= 0.6) */
    vkf_sampler_params pp = {.temp = 1.0f, .top_p = 0.5f, .seed = 9};
    VKT_OK(vkf_sampler_create(&pp, &s));
    ok = 1;
    for (int i = 0; i < 200; i++)
        ok &= vkf_sampler_sample(s, l3, 3, &t) == VKF_OK && t == 2;
    VKT_CHECK(ok, "top_p 0.5 sampled outside the nucleus");
    vkf_sampler_free(s);
    pp.top_p = 0.6f;
    VKT_OK(vkf_sampler_create(&pp, &s));
    int seen[3] = {0};
    for (int i = 0; i < 400; i++)
        if (vkf_sampler_sample(s, l3, 3, &t) == VKF_OK) seen[t]++;
    VKT_CHECK(seen[0] == 0 && seen[1] > 0 && seen[2] > 0, "top_p 0.6: counts %d %d %d", seen[0],
              seen[1], seen[2]);
    vkf_sampler_free(s);
    /* top_k 2 excludes the third */
    vkf_sampler_params kk = {.temp = 1.0f, .top_k = 2, .seed = 5};
    VKT_OK(vkf_sampler_create(&kk, &s));
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < 400; i++)
        if (vkf_sampler_sample(s, l3, 3, &t) == VKF_OK) seen[t]++;
    VKT_CHECK(seen[0] == 0 && seen[1] > 0, "top_k 2: counts %d %d %d", seen[0], seen[1], seen[2]);
    vkf_sampler_free(s);
}

/* ------------------------------------------------------------------ decoder-only generation */

static void test_generation(vkf_context *ctx, const char *backend) {
    cJSON *cases = load_json(vkt_fixture("llama-tiny/cases.json"));
    VKT_CHECK(cases != NULL, "llama-tiny/cases.json unreadable");
    if (!cases) return;
    const cJSON *fox = cJSON_GetArrayItem(cases, 0); /* llama-tiny-f32/fox */
    int32_t prompt[64], want[32];
    int np = json_ints(cJSON_GetObjectItem(fox, "tokens"), prompt, 64);
    int nw = json_ints(cJSON_GetObjectItem(fox, "greedy_tokens"), want, 32);
    vkf_model *m = load(ctx, vkt_fixture("llama-tiny/llama-tiny-f32.gguf"));
    cJSON_Delete(cases);
    if (!m) return;
    vkf_session *s;
    VKT_OK(vkf_session_create(m, NULL, &s));
    vkf_generate_stats st;

    /* greedy = the llama.cpp reference's greedy tokens, and = argmax of eval_last */
    collect g = {0};
    vkf_sampler_params greedy = {.temp = 0};
    VKT_OK(vkf_generate(s, prompt, np, nw, &greedy, on_token, &g, &st));
    VKT_CHECK(g.n == nw && memcmp(g.toks, want, (size_t)nw * sizeof *want) == 0,
              "%s: greedy generation differs from the fixture", backend);
    VKT_CHECK(st.stop == VKF_STOP_LENGTH && st.n_prompt == np && st.n_generated == nw,
              "%s: stats stop %d prompt %d gen %d", backend, st.stop, st.n_prompt, st.n_generated);
    VKT_CHECK(st.prompt_tps > 0 && st.gen_tps > 0, "%s: speeds %.1f / %.1f", backend, st.prompt_tps,
              st.gen_tps);
    vkf_session_reset(s);
    float *lg = malloc(512 * sizeof *lg);
    int same = 1;
    VKT_OK(vkf_session_eval_last(s, prompt, np, lg));
    for (int i = 0; i < 8; i++) {
        int32_t t = argmax(lg, 512);
        same &= t == g.toks[i];
        VKT_OK(vkf_session_eval_last(s, &t, 1, lg));
    }
    VKT_CHECK(same, "%s: greedy generation is not the argmax of eval_last", backend);

    /* the same seed gives the same tokens; another seed other tokens */
    vkf_sampler_params sp = {.temp = 0.9f, .top_k = 40, .top_p = 0.95f, .seed = 42};
    collect a = {0}, b = {0}, c = {0};
    vkf_session_reset(s);
    VKT_OK(vkf_generate(s, prompt, np, 32, &sp, on_token, &a, NULL));
    vkf_session_reset(s);
    VKT_OK(vkf_generate(s, prompt, np, 32, &sp, on_token, &b, NULL));
    sp.seed = 43;
    vkf_session_reset(s);
    VKT_OK(vkf_generate(s, prompt, np, 32, &sp, on_token, &c, NULL));
    VKT_CHECK(a.n == 32 && b.n == 32 && memcmp(a.toks, b.toks, sizeof a.toks) == 0,
              "%s: seed 42 twice gave different tokens", backend);
    VKT_CHECK(c.n == 32 && memcmp(a.toks, c.toks, 32 * sizeof a.toks[0]) != 0,
              "%s: seeds 42 and 43 gave the same tokens", backend);
    VKT_CHECK(memcmp(a.toks, g.toks, 24 * sizeof a.toks[0]) != 0,
              "%s: sampling at T=0.9 reproduced greedy", backend);

    /* a callback can stop generation */
    collect cb = {.stop_after = 3};
    vkf_session_reset(s);
    VKT_OK(vkf_generate(s, prompt, np, 32, &sp, on_token, &cb, &st));
    VKT_CHECK(cb.n == 3 && st.stop == VKF_STOP_CALLBACK,
              "%s: callback stop gave %d tokens, stop %d", backend, cb.n, st.stop);
    vkf_session_free(s);

    /* context full: a prompt that does not fit, and generation that fills the context */
    vkf_session_params small = {.n_ctx = np + 8};
    VKT_OK(vkf_session_create(m, &small, &s));
    collect f = {0};
    int32_t longer[64];
    memcpy(longer, prompt, (size_t)np * sizeof *prompt);
    for (int i = np; i < np + 9; i++)
        longer[i] = 100 + i;
    vkf_status r = vkf_generate(s, longer, np + 9, 4, &greedy, on_token, &f, &st);
    printf("  %s prompt of %d in %d: %s: %s\n", backend, np + 9, np + 8, vkf_status_name(r),
           vkf_last_error());
    VKT_CHECK(r == VKF_ERROR_CONTEXT_FULL && strstr(vkf_last_error(), "context") && f.n == 0 &&
                  vkf_session_n_past(s) == 0,
              "%s: an over-long prompt gave %s", backend, vkf_status_name(r));
    r = vkf_generate(s, prompt, np, 20, &greedy, on_token, &f, &st);
    printf("  %s %d + 20 in %d: %s: %s (%d generated)\n", backend, np, np + 8, vkf_status_name(r),
           vkf_last_error(), f.n);
    /* 8 tokens fed back fill the context; the 9th comes from the full context and cannot be
     * fed back */
    VKT_CHECK(r == VKF_ERROR_CONTEXT_FULL && st.stop == VKF_STOP_CONTEXT_FULL && f.n == 9 &&
                  st.n_generated == 9 && strstr(vkf_last_error(), "context full"),
              "%s: filling the context gave %s, stop %d, %d tokens", backend, vkf_status_name(r),
              st.stop, f.n);
    VKT_CHECK(memcmp(f.toks, want, 9 * sizeof *want) == 0,
              "%s: tokens before the context filled differ from greedy", backend);
    vkf_session_free(s);
    free(lg);
    vkf_model_free(m);
}

/* Prompts longer than one compute are split into chunks; the logits must not change. */
static void test_chunking(vkf_context *ctx, const char *backend) {
    vkf_model *m = load(ctx, vkt_fixture("llama-tiny/llama-tiny-f32.gguf"));
    if (!m) return;
    int32_t toks[100];
    for (int i = 0; i < 100; i++)
        toks[i] = (int32_t)((i * 37 + 11) % 509) + 3;
    float *a = malloc(100 * 512 * sizeof *a), *b = malloc(100 * 512 * sizeof *b),
          *la = malloc(512 * sizeof *la), *lb = malloc(512 * sizeof *lb);
    vkf_session *s1, *s2;
    vkf_session_params whole = {.n_ubatch = 512}; /* the 100 tokens in one pass */
    VKT_OK(vkf_session_create(m, &whole, &s1));
    VKT_OK(vkf_session_create(m, NULL, &s2));
    s2->max_chunk = 16; /* 100 tokens: six chunks of 16 and one of 4 */
    VKT_OK(vkf_session_eval(s1, toks, 100, a));
    VKT_OK(vkf_session_eval(s2, toks, 100, b));
    double md = 0;
    for (int i = 0; i < 100 * 512; i++)
        md = fmax(md, fabs((double)a[i] - b[i]));
    /* then one more token on both: the caches written chunk by chunk must match */
    VKT_OK(vkf_session_eval_last(s1, toks, 1, la));
    VKT_OK(vkf_session_eval_last(s2, toks, 1, lb));
    for (int i = 0; i < 512; i++)
        md = fmax(md, fabs((double)la[i] - lb[i]));
    /* and the last-only path in chunks */
    vkf_session_reset(s2);
    VKT_OK(vkf_session_eval_last(s2, toks, 100, lb));
    for (int i = 0; i < 512; i++)
        md = fmax(md, fabs((double)a[99 * 512 + i] - lb[i]));
    printf("  %s chunked (16) vs whole prompt of 100: max|d| %.3e\n", backend, md);
    VKT_CHECK(md <= 1e-4 && vkf_session_n_past(s2) == 100, "%s: chunked logits differ by %.3e",
              backend, md);
    vkf_session_free(s1);
    vkf_session_free(s2);
    free(a);
    free(b);
    free(la);
    free(lb);
    vkf_model_free(m);
}

/* The abort callback (issue 28.4), llama.cpp's abort_callback: heard before each forward pass. */
typedef struct abort_ctl {
    int calls;   /* times the library asked */
    int fire_at; /* answer "stop" from this call on (1-based); 0: never */
} abort_ctl;

static int abort_after(void *user) {
    abort_ctl *a = user;
    a->calls++;
    return a->fire_at && a->calls >= a->fire_at;
}

static double max_diff_f(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static void test_abort(vkf_context *ctx, const char *backend) {
    vkf_model *m = load(ctx, vkt_fixture("llama-tiny/llama-tiny-f32.gguf"));
    if (!m) return;
    enum { N = 72, V = 512 };
    int32_t toks[N];
    for (int i = 0; i < N; i++)
        toks[i] = (int32_t)((i * 37 + 11) % 509) + 3;
    float *whole = malloc(V * sizeof *whole), *rest = malloc(V * sizeof *rest);

    /* passes of 16 tokens; the callback says "stop" from its second call, i.e. after the first
     * pass: the 72-token prompt stops there, with the first 16 tokens in the cache */
    abort_ctl a = {0, 2};
    vkf_session_params p16 = {.n_ubatch = 16, .abort_callback = abort_after, .abort_user = &a};
    vkf_session *s = NULL, *ref = NULL;
    VKT_OK(vkf_session_create(m, &p16, &s));
    VKT_OK(vkf_session_create(m, &p16, &ref));
    if (!s || !ref) goto done;
    vkf_status st = vkf_session_eval_last(s, toks, N, rest);
    printf("  %s abort after the first pass: %s, n_past %d, %d calls: %s\n", backend,
           vkf_status_name(st), vkf_session_n_past(s), a.calls, vkf_last_error());
    VKT_CHECK(st == VKF_ERROR_ABORTED && vkf_session_n_past(s) == 16 && a.calls == 2 &&
                  strstr(vkf_last_error(), "after 16 of 72 tokens"),
              "%s: an abort after the first pass gave %s, n_past %d, %d calls", backend,
              vkf_status_name(st), vkf_session_n_past(s), a.calls);
    /* the session is usable: the rest of the prompt after the aborted passes gives the logits
     * of the whole prompt evaluated at once (same passes of 16: the same arithmetic) */
    vkf_session_set_abort_callback(s, NULL, NULL);
    vkf_session_set_abort_callback(ref, NULL, NULL);
    VKT_OK(vkf_session_eval_last(s, toks + 16, N - 16, rest));
    VKT_OK(vkf_session_eval_last(ref, toks, N, whole));
    double d = max_diff_f(rest, whole, V);
    VKT_CHECK(d == 0 && vkf_session_n_past(s) == N,
              "%s: after the abort, the rest of the prompt gives logits %.3e off (n_past %d)",
              backend, d, vkf_session_n_past(s));

    /* vkf_generate: stopped in the prompt (VKF_STOP_ABORTED, nothing generated), then between
     * tokens (the tokens before are greedy's) */
    vkf_sampler_params greedy = {.temp = 0};
    vkf_generate_stats gs;
    collect c = {0}, g = {0};
    vkf_session_reset(s);
    a = (abort_ctl){0, 3};
    vkf_session_set_abort_callback(s, abort_after, &a);
    st = vkf_generate(s, toks, N, 8, &greedy, on_token, &c, &gs);
    VKT_CHECK(st == VKF_ERROR_ABORTED && gs.stop == VKF_STOP_ABORTED && gs.n_prompt == 32 &&
                  c.n == 0 && gs.n_generated == 0,
              "%s: generate aborted in the prompt: %s, stop %d, %d prompt tokens, %d generated",
              backend, vkf_status_name(st), gs.stop, gs.n_prompt, c.n);
    vkf_session_reset(ref);
    VKT_OK(vkf_generate(ref, toks, 20, 8, &greedy, on_token, &g, NULL));
    vkf_session_reset(s);
    /* calls: the prompt's two passes, then the first token fed back; the fourth, before the
     * second is fed back, stops: two tokens were delivered */
    a = (abort_ctl){0, 4};
    collect c2 = {0};
    st = vkf_generate(s, toks, 20, 8, &greedy, on_token, &c2, &gs);
    VKT_CHECK(st == VKF_ERROR_ABORTED && gs.stop == VKF_STOP_ABORTED && gs.n_generated == 2 &&
                  c2.n == 2 && g.n == 8 && memcmp(c2.toks, g.toks, 2 * sizeof *g.toks) == 0,
              "%s: generate aborted between tokens: %s, stop %d, %d generated", backend,
              vkf_status_name(st), gs.stop, gs.n_generated);

    /* the default pass: 64 tokens on CPU devices (lavapipe, the CPU backend), 512 on GPUs */
    vkf_device_info di;
    VKT_OK(vkf_context_device_info(ctx, &di));
    int cpu = !strcmp(di.type, "cpu") || !strcmp(di.type, "host");
    vkf_session *sd = NULL;
    a = (abort_ctl){0, 0};
    vkf_session_params pd = {.abort_callback = abort_after, .abort_user = &a};
    VKT_OK(vkf_session_create(m, &pd, &sd));
    if (sd) VKT_OK(vkf_session_eval_last(sd, toks, N, rest));
    VKT_CHECK(a.calls == (cpu ? 2 : 1), "%s (%s): a 72-token prompt took %d passes by default",
              backend, di.type, a.calls);
    vkf_session_free(sd);
done:
    vkf_session_free(s);
    vkf_session_free(ref);
    free(whole);
    free(rest);
    vkf_model_free(m);
}

/* ------------------------------------------------------------------ encoder-decoder */

/* Teacher-forces out[0..n) after BOS and returns the sum of the chosen tokens' log-probs. */
static double rescore(vkf_session *s, const vkf_model_desc *d, const int32_t *src, int ns,
                      const int32_t *out, int n) {
    float *lp = malloc((size_t)d->n_vocab * sizeof *lp);
    double sum = 0;
    if (vkf_session_encode(s, src, ns) != VKF_OK) sum = NAN;
    int32_t tok = d->bos_id;
    for (int i = 0; i < n && !isnan(sum); i++) {
        if (vkf_session_decode_step(s, tok, lp) != VKF_OK) {
            sum = NAN;
            break;
        }
        sum += lp[out[i]];
        tok = out[i];
    }
    free(lp);
    return sum;
}

static void test_translate(vkf_context *ctx, const char *backend) {
    cJSON *cases = load_json(vkt_fixture("seed-transformer-tiny/cases.json"));
    VKT_CHECK(cases != NULL, "seed-transformer-tiny/cases.json unreadable");
    vkf_model *m = cases ? load(ctx, vkt_fixture("seed-transformer-tiny")) : NULL;
    if (!m) {
        cJSON_Delete(cases);
        return;
    }
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    vkf_session_params sp = {.n_batch = 4};
    vkf_session *s;
    VKT_OK(vkf_session_create(m, &sp, &s));
    const cJSON *c0 = cJSON_GetArrayItem(cases, 0);
    const cJSON *src_rows = cJSON_GetObjectItem(c0, "src_tokens"),
                *lens = cJSON_GetObjectItem(c0, "src_lengths");
    const cJSON *greedy_rows = cJSON_GetObjectItem(c0, "greedy");
    for (int b = 0; b < cJSON_GetArraySize(src_rows); b++) {
        int32_t src[256], want[32], out[64], gout[64];
        json_ints(cJSON_GetArrayItem(src_rows, b), src, 256);
        int ns = cJSON_GetArrayItem(lens, b)->valueint;
        int nw = json_ints(cJSON_GetArrayItem(greedy_rows, b), want, 32);
        int32_t n_out = 0, n_g = 0;
        float score = 0, gscore = 0;
        vkf_translate_params g = {.beam = 1, .max_len = 20};
        VKT_OK(vkf_translate(s, src, ns, &g, gout, 64, &n_g, &gscore));
        VKT_CHECK(n_g + 1 == nw && memcmp(gout, want + 1, (size_t)n_g * sizeof *gout) == 0,
                  "%s row %d: greedy differs from the fixture", backend, b);
        vkf_translate_params bp = {.beam = 4, .max_len = 20};
        VKT_OK(vkf_translate(s, src, ns, &bp, out, 64, &n_out, &score));
        /* the beam's score must be what the model assigns to its tokens: a wrong KV-cache
         * reorder between steps would break this */
        double re = rescore(s, &d, src, ns, out, n_out);
        printf("  %s row %d: greedy %d tokens log-prob %.5f, beam 4 %d tokens log-prob %.5f "
               "(rescored %.5f)\n",
               backend, b, n_g, (double)gscore, n_out, (double)score, re);
        VKT_CHECK(fabs(re - score) < 1e-3, "%s row %d: beam score %.6f, rescored %.6f", backend, b,
                  (double)score, re);
        double rg = rescore(s, &d, src, ns, gout, n_g);
        VKT_CHECK(fabs(rg - gscore) < 1e-3, "%s row %d: greedy score %.6f, rescored %.6f", backend,
                  b, (double)gscore, rg);
        /* ending in EOS (or at max_len) and scoring at least as well as greedy on these rows */
        VKT_CHECK(n_out >= 1 && n_out <= 20, "%s row %d: beam gave %d tokens", backend, b, n_out);
        VKT_CHECK(score >= gscore - 1e-4, "%s row %d: beam %.5f < greedy %.5f", backend, b,
                  (double)score, (double)gscore);
    }
    /* beam wider than the session */
    int32_t one = 5, out[64], n_out;
    vkf_translate_params wide = {.beam = 8, .max_len = 4};
    VKT_CHECK(vkf_translate(s, &one, 1, &wide, out, 64, &n_out, NULL) == VKF_ERROR_INVALID_ARGUMENT,
              "beam 8 in a 4-sequence session");
    vkf_session_free(s);
    vkf_model_free(m);
    cJSON_Delete(cases);
}

/* ------------------------------------------------------------------ shipped models */

static int dir_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* models/kjv-gpt: prompts tokenized to `tokens`; vkf_generate at temperature 0 gives the greedy
 * tokens up to the first EOS. (Teacher-forced logits and all 48 greedy steps: vkf_verify below.) */
static void test_kjv(vkf_context *ctx, const char *backend) {
    char dir[1024], p[1100];
    snprintf(dir, sizeof dir, "%s/models/kjv-gpt", VKF_SOURCE_DIR);
    snprintf(p, sizeof p, "%s/expected.json", dir);
    cJSON *e = dir_exists(dir) ? load_json(p) : NULL;
    VKT_CHECK(e != NULL, "%s kjv-gpt: reference %s missing or unreadable", backend, p);
    if (!e) return;
    vkf_model *m = load(ctx, dir);
    if (!m) {
        cJSON_Delete(e);
        return;
    }
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    vkf_session *s;
    VKT_OK(vkf_session_create(m, NULL, &s));
    const cJSON *c;
    int k = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(e, "cases")) {
        int32_t want_tok[512], greedy[128], mine[512];
        int nt = json_ints(cJSON_GetObjectItem(c, "tokens"), want_tok, 512);
        int ng = json_ints(cJSON_GetObjectItem(c, "greedy_tokens"), greedy, 128);
        int32_t nm = 0;
        const char *prompt = cJSON_GetObjectItem(c, "prompt")->valuestring;
        VKT_OK(vkf_model_tokenize(m, prompt, VKF_TOKENIZE_ADD_SPECIAL, mine, 512, &nm));
        VKT_CHECK(nm == nt && memcmp(mine, want_tok, (size_t)nt * sizeof *mine) == 0,
                  "%s kjv case %d: tokenization differs", backend, k);
        /* vkf_generate at temperature 0 (it stops at EOS) */
        collect g = {0};
        vkf_sampler_params gp = {.temp = 0};
        vkf_session_reset(s);
        VKT_OK(vkf_generate(s, want_tok, nt, ng, &gp, on_token, &g, NULL));
        int upto = 0;
        while (upto < ng && greedy[upto] != d.eos_id)
            upto++;
        VKT_CHECK(g.n == upto && memcmp(g.toks, greedy, (size_t)upto * sizeof *greedy) == 0,
                  "%s kjv case %d: vkf_generate differs", backend, k);
        k++;
    }
    VKT_CHECK(k > 0, "kjv-gpt expected.json has no cases");
    vkf_session_free(s);
    vkf_model_free(m);
    cJSON_Delete(e);
}

/* models/dates-transformer: source tokens, greedy and beam translations decoded to the target
 * text. (Encoder output and teacher-forced log-probs: vkf_verify below.) */
static void test_dates(vkf_context *ctx, const char *backend) {
    char dir[1024], p[1100];
    snprintf(dir, sizeof dir, "%s/models/dates-transformer", VKF_SOURCE_DIR);
    snprintf(p, sizeof p, "%s/expected.json", dir);
    cJSON *e = dir_exists(dir) ? load_json(p) : NULL;
    VKT_CHECK(e != NULL, "%s dates-transformer: reference %s missing or unreadable", backend, p);
    if (!e) return;
    vkf_model *m = load(ctx, dir);
    if (!m) {
        cJSON_Delete(e);
        return;
    }
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    vkf_session_params sp = {.n_batch = 4};
    vkf_session *s;
    VKT_OK(vkf_session_create(m, &sp, &s));
    const cJSON *c;
    int k = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(e, "cases")) {
        int32_t src[256], mine[256], greedy[64], out[128];
        int ns = json_ints(cJSON_GetObjectItem(c, "src_tokens"), src, 256);
        int ng = json_ints(cJSON_GetObjectItem(c, "greedy"), greedy, 64);
        const char *source = cJSON_GetObjectItem(c, "source")->valuestring;
        const char *target = cJSON_GetObjectItem(c, "target")->valuestring;
        int32_t nm = 0, n_out = 0;
        VKT_OK(vkf_model_tokenize(m, source, VKF_TOKENIZE_SOURCE | VKF_TOKENIZE_ADD_SPECIAL, mine,
                                  256, &nm));
        VKT_CHECK(nm == ns && memcmp(mine, src, (size_t)ns * sizeof *src) == 0,
                  "%s dates case %d: source tokens differ", backend, k);
        /* greedy through vkf_translate (KV cache), max 20 steps */
        vkf_translate_params tp = {.beam = 1, .max_len = 20};
        VKT_OK(vkf_translate(s, src, ns, &tp, out, 128, &n_out, NULL));
        VKT_CHECK(n_out + 1 == ng && memcmp(out, greedy + 1, (size_t)n_out * sizeof *out) == 0,
                  "%s dates case %d: greedy differs", backend, k);
        char *text = NULL;
        VKT_OK(vkf_model_detokenize(m, out, n_out, 0, &text));
        printf("  %s dates case %d: \"%s\" -> \"%s\" (expected \"%s\")\n", backend, k, source,
               text ? text : "", target);
        VKT_CHECK(text && strcmp(text, target) == 0,
                  "%s dates case %d: decoded \"%s\", want \"%s\"", backend, k, text ? text : "",
                  target);
        free(text);
        /* beam search finds the same date on these held-out examples */
        vkf_translate_params bp = {.beam = 4, .max_len = 20};
        VKT_OK(vkf_translate(s, src, ns, &bp, out, 128, &n_out, NULL));
        text = NULL;
        VKT_OK(vkf_model_detokenize(m, out, n_out, 0, &text));
        VKT_CHECK(text && strcmp(text, target) == 0,
                  "%s dates case %d: beam 4 decoded \"%s\", want \"%s\"", backend, k,
                  text ? text : "", target);
        free(text);
        k++;
    }
    VKT_CHECK(k > 0, "dates-transformer expected.json has no cases");
    vkf_session_free(s);
    vkf_model_free(m);
    cJSON_Delete(e);
}

/* ------------------------------------------------------------------ main */

/* The shipped models through vkf_verify (`vkformer verify models/...`). */
static void verify_cb(void *user, const vkf_verify_case *c) {
    printf("  %s verify %-44s max|d| %.3e (<= %.2g)%s greedy %s\n", (const char *)user, c->name,
           c->max_abs, c->tol_abs, c->enc_max_abs >= 0 ? " +enc" : "",
           c->greedy_match ? "match" : "DIFFER");
    VKT_CHECK(c->pass && c->greedy_match && c->tokens_match == 1, "%s verify %s failed",
              (const char *)user, c->name);
}

static void test_verify_shipped(vkf_context *ctx, const char *backend, const char *name) {
    char dir[1024], p[1100];
    snprintf(dir, sizeof dir, "%s/models/%s", VKF_SOURCE_DIR, name);
    snprintf(p, sizeof p, "%s/expected.json", dir);
    size_t n;
    char *probe = vkt_read_file(p, &n);
    VKT_CHECK(probe != NULL, "%s verify %s: reference %s missing", backend, name, p);
    if (!probe) return;
    free(probe);
    vkf_verify_summary sum;
    VKT_OK(vkf_verify(ctx, dir, NULL, verify_cb, (void *)backend, &sum));
    VKT_CHECK(sum.n_cases > 0 && sum.n_failed == 0, "%s verify %s: %d cases, %d failed", backend,
              name, sum.n_cases, sum.n_failed);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void timed(const char *what, const char *backend, void (*fn)(vkf_context *, const char *),
                  vkf_context *ctx) {
    double t0 = now_s();
    fn(ctx, backend);
    printf("  %s %s: %.2fs\n", backend, what, now_s() - t0);
}

static void test_verify_kjv(vkf_context *ctx, const char *backend) {
    test_verify_shipped(ctx, backend, "kjv-gpt");
}
static void test_verify_dates(vkf_context *ctx, const char *backend) {
    test_verify_shipped(ctx, backend, "dates-transformer");
}

static void run_backend(vkf_context *ctx, const char *backend) {
    printf("%s (%s):\n", backend, vkf_context_device_name(ctx));
    if (vkt_need_fixtures("llama-tiny seed-transformer-tiny")) {
        timed("generation", backend, test_generation, ctx);
        timed("chunking", backend, test_chunking, ctx);
        timed("abort", backend, test_abort, ctx);
        timed("translate", backend, test_translate, ctx);
    }
    timed("kjv-gpt", backend, test_kjv, ctx);
    timed("dates-transformer", backend, test_dates, ctx);
    /* the same references through vkf_verify (`vkformer verify models/...`) */
    timed("verify kjv-gpt", backend, test_verify_kjv, ctx);
    timed("verify dates-transformer", backend, test_verify_dates, ctx);
}

static void per_backend(vkf_context *ctx, const char *backend, void *user) {
    run_backend(ctx, backend);
}

int main(void) {
    test_sampler();
    vkt_for_each_backend(per_backend, NULL);
    return vkt_finish();
}
