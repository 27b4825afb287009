/* Sampling chain (penalties, top_k, typical_p, top_p, min_p, temperature in llama.cpp's order)
 * against hand-computed cases, stop strings spread over pieces, and the serve-side session
 * calls: truncate (prefix reuse) and parallel sequences at their own positions, each checked
 * against a single-sequence session (the reference path) on the CPU and on Vulkan. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vkformer.h"

/* ------------------------------------------------------------------ helpers */

static int32_t sample1(const vkf_sampler_params *p, const float *l, int n, const int32_t *hist,
                       int n_hist) {
    vkf_sampler *s;
    int32_t t = -1;
    if (vkf_sampler_create(p, &s) != VKF_OK) return -2;
    for (int i = 0; i < n_hist; i++)
        vkf_sampler_accept(s, hist[i]);
    if (vkf_sampler_sample(s, l, n, &t) != VKF_OK) t = -3;
    vkf_sampler_free(s);
    return t;
}

/* draws N tokens, counts per id */
static void draw(const vkf_sampler_params *p, const float *l, int n, int N, int *count) {
    vkf_sampler *s;
    memset(count, 0, (size_t)n * sizeof *count);
    if (vkf_sampler_create(p, &s) != VKF_OK) return;
    for (int i = 0; i < N; i++) {
        int32_t t;
        if (vkf_sampler_sample(s, l, n, &t) == VKF_OK && t >= 0 && t < n) count[t]++;
    }
    vkf_sampler_free(s);
}

/* ------------------------------------------------------------------ penalties */

static void test_penalties(void) {
    /* repeat: 3 / 1.1 = 2.727 < 2.9, so the seen token 0 loses the argmax */
    float l[3] = {3.0f, 2.9f, 0.0f};
    int32_t h0[1] = {0}, h01[2] = {0, 1};
    vkf_sampler_params p = {.temp = 0, .repeat_penalty = 1.1f};
    VKT_CHECK(sample1(&p, l, 3, NULL, 0) == 0, "no history: argmax 0");
    VKT_CHECK(sample1(&p, l, 3, h0, 1) == 1, "repeat 1.1 over [0]: 2.727 < 2.9, want 1");
    /* window of 1 over [0, 1]: only token 1 is penalized (2.9 / 1.1 = 2.636 < 3) */
    p.penalty_last_n = 1;
    VKT_CHECK(sample1(&p, l, 3, h01, 2) == 0, "window 1 over [0, 1]: token 0 unpenalized");
    /* window -1 (everything): both penalized, 2.727 > 2.636 */
    p.penalty_last_n = -1;
    VKT_CHECK(sample1(&p, l, 3, h01, 2) == 0, "window -1: 2.727 > 2.636, want 0");
    /* a negative logit is multiplied: -1 * 2 = -2 < -1.5 */
    float ln[2] = {-1.0f, -1.5f};
    vkf_sampler_params r2 = {.temp = 0, .repeat_penalty = 2.0f};
    VKT_CHECK(sample1(&r2, ln, 2, h0, 1) == 1, "repeat 2 on -1: -2 < -1.5, want 1");
    /* presence: 1 - 0.3 = 0.7 < 0.8; 1 - 0.1 = 0.9 > 0.8 */
    float lp[2] = {1.0f, 0.8f};
    vkf_sampler_params pr = {.temp = 0, .presence_penalty = 0.3f};
    VKT_CHECK(sample1(&pr, lp, 2, h0, 1) == 1, "presence 0.3: want 1");
    pr.presence_penalty = 0.1f;
    VKT_CHECK(sample1(&pr, lp, 2, h0, 1) == 0, "presence 0.1: want 0");
    /* frequency counts: [0, 0, 0] at 0.1 -> 1 - 0.3 = 0.7 < 0.8; [0] -> 0.9 */
    int32_t h000[3] = {0, 0, 0};
    vkf_sampler_params fr = {.temp = 0, .frequency_penalty = 0.1f};
    VKT_CHECK(sample1(&fr, lp, 2, h000, 3) == 1, "frequency 0.1 x 3: want 1");
    VKT_CHECK(sample1(&fr, lp, 2, h0, 1) == 0, "frequency 0.1 x 1: want 0");
    /* all three on one token: l = 2 / 2 - 2 * 0.25 - 0.25 = 0.25 < 0.3 */
    float la[2] = {2.0f, 0.3f};
    int32_t h00[2] = {0, 0};
    vkf_sampler_params all = {
        .temp = 0, .repeat_penalty = 2.0f, .frequency_penalty = 0.25f, .presence_penalty = 0.25f};
    VKT_CHECK(sample1(&all, la, 2, h00, 2) == 1, "all penalties: 0.25 < 0.3, want 1");
    all.presence_penalty = 0.15f; /* 0.35 > 0.3 */
    VKT_CHECK(sample1(&all, la, 2, h00, 2) == 0, "all penalties: 0.35 > 0.3, want 0");
}

/* ------------------------------------------------------------------ truncation steps */

static void test_truncation(void) {
    const int N = 40000;
    int c[4];
    /* p = 0.5, 0.3, 0.15, 0.05 at T = 1 */
    float l4[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
    /* min_p 0.5: keep p >= 0.25 -> {0, 1}, renormalized 0.625 / 0.375 */
    vkf_sampler_params mp = {.temp = 1.0f, .min_p = 0.5f, .seed = 11};
    draw(&mp, l4, 4, N, c);
    /* 4 sigma of a binomial with N = 40000, p = 0.375: 4 * sqrt(p(1-p)/N) = 0.0097 */
    VKT_CHECK(c[2] == 0 && c[3] == 0, "min_p 0.5 drew outside {0, 1}: %d %d", c[2], c[3]);
    VKT_CHECK(fabs((double)c[1] / N - 0.375) < 0.0097, "min_p 0.5: token 1 at %.4f, want 0.375",
              (double)c[1] / N);
    /* min_p 0.2: threshold 0.1 keeps {0, 1, 2} */
    mp.min_p = 0.2f;
    draw(&mp, l4, 4, N, c);
    VKT_CHECK(c[3] == 0 && c[2] > 0, "min_p 0.2: counts %d %d %d %d", c[0], c[1], c[2], c[3]);
    /* typical_p: H = 1.1421 nats; |-ln p - H| = 0.449, 0.062, 0.755, 1.854, so token 1 is the
     * most typical; 0.2 keeps {1} alone (not the argmax), 0.5 keeps {1, 0} (0.3 + 0.5 >= 0.5) */
    vkf_sampler_params ty = {.temp = 1.0f, .typical_p = 0.2f, .seed = 3};
    draw(&ty, l4, 4, 2000, c);
    VKT_CHECK(c[1] == 2000, "typical_p 0.2: counts %d %d %d %d, want all 1", c[0], c[1], c[2],
              c[3]);
    ty.typical_p = 0.5f;
    draw(&ty, l4, 4, 2000, c);
    VKT_CHECK(c[0] > 0 && c[1] > 0 && c[2] == 0 && c[3] == 0, "typical_p 0.5: counts %d %d %d %d",
              c[0], c[1], c[2], c[3]);
    /* order: top_p sees T = 1. p = 4/7, 2/7, 1/7; top_p 0.8 keeps 2 tokens (6/7 >= 0.8), then
     * T = 2 draws them as 2 : sqrt(2) = 0.586 / 0.414. (Temperature first would give
     * 0.453, 0.320, 0.227 and keep all three.) */
    float l3[3] = {logf(4.0f), logf(2.0f), 0.0f};
    vkf_sampler_params tp = {.temp = 2.0f, .top_p = 0.8f, .seed = 5};
    draw(&tp, l3, 3, N, c);
    VKT_CHECK(c[2] == 0, "top_p 0.8 at T 2 drew token 2 %d times (temperature applied first?)",
              c[2]);
    /* 4 sigma at N = 40000, p = 0.414: 0.0099 */
    VKT_CHECK(fabs((double)c[1] / N - 0.4142) < 0.0099,
              "top_p 0.8, T 2: token 1 at %.4f, want 0.414", (double)c[1] / N);
    /* top_k 1 then min_p: still the argmax */
    vkf_sampler_params k1 = {.temp = 3.0f, .top_k = 1, .min_p = 0.9f, .seed = 1};
    draw(&k1, l3, 3, 500, c);
    VKT_CHECK(c[0] == 500, "top_k 1: counts %d %d %d", c[0], c[1], c[2]);
    /* the same seed gives the same draws */
    vkf_sampler_params d = {.temp = 1.0f, .min_p = 0.01f, .seed = 77};
    vkf_sampler *a, *b;
    VKT_OK(vkf_sampler_create(&d, &a));
    VKT_OK(vkf_sampler_create(&d, &b));
    int same = 1;
    for (int i = 0; i < 200; i++) {
        int32_t ta, tb;
        vkf_sampler_sample(a, l4, 4, &ta);
        vkf_sampler_sample(b, l4, 4, &tb);
        same &= ta == tb;
    }
    VKT_CHECK(same, "two samplers with seed 77 differ");
    vkf_sampler_free(a);
    vkf_sampler_free(b);
    /* bad parameters are refused */
    vkf_sampler *x = NULL;
    vkf_sampler_params bad = {.temp = 1.0f, .min_p = 1.5f};
    VKT_CHECK(vkf_sampler_create(&bad, &x) == VKF_ERROR_INVALID_ARGUMENT, "min_p 1.5 accepted");
    bad = (vkf_sampler_params){.temp = 1.0f, .penalty_last_n = -2};
    VKT_CHECK(vkf_sampler_create(&bad, &x) == VKF_ERROR_INVALID_ARGUMENT, "last_n -2 accepted");
}

/* ------------------------------------------------------------------ stop strings */

typedef struct stop_run {
    char out[256];
    int stopped_at; /* index of the piece that completed a stop, -1: none */
} stop_run;

static void run_stops(const char *const *stops, int n_stops, const char *const *pieces, int n,
                      stop_run *r, char *shown_after_first) {
    vkf_stopper *st;
    r->out[0] = '\0';
    r->stopped_at = -1;
    if (vkf_stopper_create(stops, n_stops, &st) != VKF_OK) return;
    for (int i = 0; i < n; i++) {
        const char *e;
        size_t el;
        int stop = vkf_stopper_push(st, pieces[i], strlen(pieces[i]), &e, &el);
        strncat(r->out, e, el);
        if (i == 0 && shown_after_first) snprintf(shown_after_first, 64, "%.*s", (int)el, e);
        if (stop) {
            r->stopped_at = i;
            break;
        }
    }
    if (r->stopped_at < 0) {
        const char *e;
        size_t el;
        vkf_stopper_flush(st, &e, &el);
        strncat(r->out, e, el);
    }
    vkf_stopper_free(st);
}

static void test_stops(void) {
    const char *stops[2] = {"###", "END"};
    stop_run r;
    char first[64];
    /* "##" is held back while it may begin "###", then released when " world" rules it out */
    const char *p1[3] = {"Hello #", "#", " world"};
    run_stops(stops, 2, p1, 3, &r, first);
    VKT_CHECK(strcmp(first, "Hello ") == 0, "first piece showed \"%s\", want \"Hello \"", first);
    VKT_CHECK(strcmp(r.out, "Hello ## world") == 0 && r.stopped_at < 0, "got \"%s\"", r.out);
    /* a stop spread over three pieces; the text before it is kept */
    const char *p2[4] = {"a b E", "N", "D and more", "never"};
    run_stops(stops, 2, p2, 4, &r, NULL);
    VKT_CHECK(strcmp(r.out, "a b ") == 0 && r.stopped_at == 2, "got \"%s\" at %d", r.out,
              r.stopped_at);
    /* the earliest stop wins when two complete in one piece */
    const char *p3[1] = {"xEND###"};
    run_stops(stops, 2, p3, 1, &r, NULL);
    VKT_CHECK(strcmp(r.out, "x") == 0 && r.stopped_at == 0, "got \"%s\"", r.out);
    /* an unfinished UTF-8 character is held back; no stop strings at all */
    const char *p4[2] = {"caf\xC3", "\xA9!"};
    run_stops(NULL, 0, p4, 2, &r, first);
    VKT_CHECK(strcmp(first, "caf") == 0, "first piece showed \"%s\", want \"caf\"", first);
    VKT_CHECK(strcmp(r.out, "caf\xC3\xA9!") == 0, "got \"%s\"", r.out);
    /* held text that never resolves comes out at the end */
    const char *p5[1] = {"tail E"};
    run_stops(stops, 2, p5, 1, &r, first);
    VKT_CHECK(strcmp(first, "tail ") == 0 && strcmp(r.out, "tail E") == 0, "got \"%s\" / \"%s\"",
              first, r.out);
}

/* ------------------------------------------------------------------ sessions */

static float max_abs_diff(const float *a, const float *b, int n) {
    float m = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(a[i] - b[i]) > m) m = fabsf(a[i] - b[i]);
    return m;
}

static int32_t argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

/* logits after tokens[0..n) from a fresh single-sequence session: the reference path */
static int ref_logits(vkf_model *m, const int32_t *t, int n, float *out) {
    vkf_session *s;
    if (vkf_session_create(m, NULL, &s) != VKF_OK) return 0;
    vkf_status st = vkf_session_eval_last(s, t, n, out);
    vkf_session_free(s);
    return st == VKF_OK;
}

static void test_sessions(vkf_context *ctx, const char *backend, void *user) {
    const char *path = user;
    vkf_model_params mp = {.path = path};
    vkf_model *m;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        VKT_CHECK(0, "load %s: %s", path, vkf_last_error());
        return;
    }
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    int V = d.n_vocab;
    /* end of generation: the model's EOS is one; a token that is not EOS is not */
    VKT_CHECK(d.eos_id < 0 || vkf_model_is_eog(m, d.eos_id), "EOS %d is not end-of-generation",
              d.eos_id);
    VKT_CHECK(!vkf_model_is_eog(m, d.eos_id == 3 ? 4 : 3) && !vkf_model_is_eog(m, -1),
              "a plain token or -1 is end-of-generation");
    /* Thresholds: the reference runs the same math in differently shaped graphs (one sequence
     * of n tokens vs 3 sequences of 1; kv_dyn vs a static key count); on Vulkan those may pick
     * kernels that sum in another order. Float rounding of logits of size ~10 over a few layers
     * stays far below 1e-3; a wrong position or cache row changes them by > 0.1. */
    const float tol = 1e-3f;
    float *ref = malloc((size_t)V * sizeof *ref), *lg = malloc((size_t)3 * V * sizeof *lg);
    float *solo = malloc((size_t)3 * V * sizeof *solo);
    int32_t seqs[3][32] = {{1, 5, 9, 2, 7}, {3, 3, 4}, {11, 2, 6, 8, 1, 4, 10}};
    int len[3] = {5, 3, 7};
    if (strstr(path, "gemma")) { /* serve, sliding windows (issue 14): sequences of 21, 12 and
                                  * 17 tokens, past the fixtures' window of 8 */
        len[0] = 21, len[1] = 12, len[2] = 17;
        for (int b = 0; b < 3; b++)
            for (int i = 0; i < len[b]; i++)
                seqs[b][i] = 2 + (7 * i + 31 * b + i * i) % 400;
    }
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < len[b]; i++)
            seqs[b][i] %= V;

    /* truncate: [A B] -> keep A -> + C equals a fresh [A C] */
    vkf_session *s;
    VKT_OK(vkf_session_create(m, NULL, &s));
    int32_t ab[6] = {1, 5, 9, 2, 7, 3}, ac[6] = {1, 5, 9, 4, 4, 8};
    for (int i = 0; i < 6; i++)
        ab[i] %= V, ac[i] %= V;
    VKT_OK(vkf_session_eval(s, ab, 6, NULL));
    VKT_OK(vkf_session_truncate(s, 3));
    VKT_CHECK(vkf_session_n_past(s) == 3, "n_past %d after truncate", vkf_session_n_past(s));
    VKT_OK(vkf_session_eval_last(s, ac + 3, 3, lg));
    VKT_CHECK(ref_logits(m, ac, 6, ref), "reference: %s", vkf_last_error());
    float dt = max_abs_diff(lg, ref, V);
    VKT_CHECK(dt < tol, "%s %s: truncate + eval differs from a fresh session by %g", backend, path,
              dt);
    VKT_CHECK(vkf_session_truncate(s, 7) == VKF_ERROR_INVALID_ARGUMENT, "truncate past n_past (6)");
    vkf_session_free(s);

    /* parallel sequences: prompts of 4, 2, 6 tokens, then one step of each at its position */
    vkf_session_params sp = {.n_batch = 3};
    VKT_OK(vkf_session_create(m, &sp, &s));
    for (int b = 0; b < 3; b++)
        VKT_OK(vkf_session_seq_eval(s, b, 0, seqs[b], len[b] - 1, NULL));
    int32_t tok[3], pos[3];
    for (int b = 0; b < 3; b++) {
        tok[b] = seqs[b][len[b] - 1];
        pos[b] = len[b] - 1;
    }
    VKT_OK(vkf_session_seq_decode(s, tok, pos, lg));
    for (int b = 0; b < 3; b++) {
        VKT_CHECK(ref_logits(m, seqs[b], len[b], ref), "reference: %s", vkf_last_error());
        float db = max_abs_diff(lg + (size_t)b * V, ref, V);
        VKT_CHECK(db < tol && argmax(lg + (size_t)b * V, V) == argmax(ref, V),
                  "%s %s: sequence %d differs from its single-sequence reference by %g", backend,
                  path, b, db);
    }
    /* sequence 1 alone (0 and 2 idle) gives bit-identical logits: the serve guarantee that a
     * request's result does not depend on the others */
    VKT_OK(vkf_session_seq_eval(s, 1, 0, seqs[1], len[1] - 1, NULL));
    int32_t pos1[3] = {-1, len[1] - 1, -1};
    VKT_OK(vkf_session_seq_decode(s, tok, pos1, solo));
    VKT_CHECK(memcmp(solo + V, lg + V, (size_t)V * sizeof *lg) == 0,
              "%s %s: sequence 1 alone differs from sequence 1 in company", backend, path);
    /* the same prompt in another slot gives the same logits */
    VKT_OK(vkf_session_seq_eval(s, 2, 0, seqs[1], len[1] - 1, NULL));
    int32_t tok2[3] = {0, 0, tok[1]}, pos2[3] = {-1, -1, len[1] - 1};
    VKT_OK(vkf_session_seq_decode(s, tok2, pos2, solo));
    VKT_CHECK(memcmp(solo + 2 * (size_t)V, lg + V, (size_t)V * sizeof *lg) == 0,
              "%s %s: the prompt in slot 2 differs from slot 1", backend, path);
    /* refusals */
    int32_t far[3] = {-1, d.n_ctx, -1};
    VKT_CHECK(vkf_session_seq_decode(s, tok, far, lg) == VKF_ERROR_CONTEXT_FULL,
              "position n_ctx accepted");
    VKT_CHECK(vkf_session_seq_eval(s, 3, 0, seqs[0], 2, NULL) == VKF_ERROR_INVALID_ARGUMENT,
              "sequence 3 of 3 accepted");
    vkf_session_free(s);
    free(ref);
    free(lg);
    free(solo);
    vkf_model_free(m);
}

int main(void) {
    test_penalties();
    test_truncation();
    test_stops();
    static char llama[1024], gpt2[1024];
    snprintf(llama, sizeof llama, "%s", vkt_fixture("llama-tiny/llama-tiny-f32.gguf"));
    snprintf(gpt2, sizeof gpt2, "%s/models/kjv-gpt", VKF_SOURCE_DIR);
    vkt_for_each_backend(test_sessions, llama);
    vkt_for_each_backend(test_sessions, gpt2);
    /* serve on sliding-window models (issue 14): the batched step's window at each sequence's
     * own position, against the single-sequence path */
    static char gemma2[1024], gemma3[1024];
    snprintf(gemma2, sizeof gemma2, "%s", vkt_fixture("arch/gemma2-f32.gguf"));
    snprintf(gemma3, sizeof gemma3, "%s", vkt_fixture("arch/gemma3-f32.gguf"));
    vkt_for_each_backend(test_sessions, gemma2);
    vkt_for_each_backend(test_sessions, gemma3);
    return vkt_finish();
}
