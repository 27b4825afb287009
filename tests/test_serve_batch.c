/* Serve's batched step computes only its busy sequences (issue 42.4), and a sequence's logits
 * do not depend on which others are busy.
 *
 * A session of 4 sequences: each gets its own prompt (seq_eval), then N_STEP batched steps
 * (seq_decode) with all four busy, feeding each its greedy token: the logits in company. Then
 * the same prompts and tokens again with only some sequences busy (each alone, the ends {0, 3}
 * with idle ones between, {1, 2}, {0, 2, 3}): every busy sequence's logits must equal its
 * logits in company bit for bit (memcmp, no tolerance: the guarantee is exact, whatever kernels
 * a step of fewer rows takes), and the rows outside the busy range are left as they were. The
 * step must also run a graph of only the busy range (the graph the session replayed last: one
 * sequence for a lone one, where a step computed all four before). CPU and Vulkan, on F32,
 * Q4_0, Q8_0 and K-quant weights, learned positions (kjv-gpt) and sliding windows (gemma3). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "testutil.h"
#include "vkformer.h"

#define N_SEQ 4
#define N_STEP 4

/* the decoder graph the session ran last */
static const vkf_sgraph *last_graph(const vkf_session *s) {
    const vkf_sgraph *g = NULL;
    for (int i = 0; i < s->n_graphs; i++)
        if (!g || s->graphs[i].last_use > g->last_use) g = &s->graphs[i];
    return g;
}

static int argmax(const float *l, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[b]) b = i;
    return b;
}

static const float k_sentinel = -12345.0f; /* not a logit any of these models gives */

/* Prompts of the busy sequences (mask bit b), then N_STEP steps of them with the tokens tok;
 * out[(step * N_SEQ + b) * V ..] gets the logits of busy sequence b. With tok_out, the tokens
 * are the greedy ones of each step (the company run) and are written there. */
static int run(vkf_session *s, int V, unsigned mask, int32_t prompts[N_SEQ][24], const int *plen,
               int32_t *tok, int choose, float *out, const char *what) {
    float *lg = malloc((size_t)N_SEQ * V * sizeof *lg);
    if (!lg) return 0;
    int ok = 1;
    int32_t t[N_SEQ], pos[N_SEQ];
    for (int b = 0; b < N_SEQ; b++) {
        pos[b] = -1;
        t[b] = 0;
        if (!(mask >> b & 1)) continue;
        if (vkf_session_seq_eval(s, b, 0, prompts[b], plen[b], lg + (size_t)b * V) != VKF_OK) {
            VKT_CHECK(0, "%s: seq_eval %d: %s", what, b, vkf_last_error());
            free(lg);
            return 0;
        }
        pos[b] = plen[b];
    }
    int lo = -1, hi = -1;
    for (int b = 0; b < N_SEQ; b++)
        if (mask >> b & 1) {
            if (lo < 0) lo = b;
            hi = b + 1;
        }
    for (int k = 0; k < N_STEP && ok; k++) {
        for (int b = 0; b < N_SEQ; b++) {
            if (!(mask >> b & 1)) continue;
            int32_t *tk = tok + (size_t)k * N_SEQ + b;
            if (choose) *tk = argmax(lg + (size_t)b * V, V);
            t[b] = *tk;
        }
        for (size_t i = 0; i < (size_t)N_SEQ * V; i++)
            lg[i] = k_sentinel;
        if (vkf_session_seq_decode(s, t, pos, lg) != VKF_OK) {
            VKT_CHECK(0, "%s: seq_decode step %d: %s", what, k, vkf_last_error());
            ok = 0;
            break;
        }
        const vkf_sgraph *g = last_graph(s);
        VKT_CHECK(g && (g->flags & VKF_SG_PERSEQ) && g->seq0 == lo && g->batch == hi - lo,
                  "%s: the step ran a graph of %d sequences from %d, not of the busy range [%d, "
                  "%d)",
                  what, g ? g->batch : -1, g ? g->seq0 : -1, lo, hi);
        for (int b = 0; b < N_SEQ; b++) {
            const float *row = lg + (size_t)b * V;
            if (b < lo || b >= hi) {
                int kept = 1;
                for (int i = 0; i < V && kept; i++)
                    kept = row[i] == k_sentinel;
                VKT_CHECK(kept,
                          "%s: step %d wrote the logits row of sequence %d, outside the "
                          "busy range [%d, %d)",
                          what, k, b, lo, hi);
            }
            if (mask >> b & 1) {
                memcpy(out + ((size_t)k * N_SEQ + b) * V, row, (size_t)V * sizeof *row);
                pos[b]++;
            }
        }
    }
    free(lg);
    return ok;
}

static void test_model(vkf_context *ctx, const char *backend, void *user) {
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
    /* prompts of 5, 3, 9 and 6 tokens (gemma3: 13 and more, past its window of 8) */
    int32_t prompts[N_SEQ][24];
    int plen[N_SEQ] = {5, 3, 9, 6};
    int swa = strstr(path, "gemma") != NULL;
    for (int b = 0; b < N_SEQ; b++) {
        if (swa) plen[b] += 10;
        for (int i = 0; i < plen[b]; i++)
            prompts[b][i] = (2 + (7 * i + 31 * b + i * i) % 400) % V;
    }
    vkf_session_params sp = {.n_batch = N_SEQ, .n_ctx = 64};
    vkf_session *s;
    if (vkf_session_create(m, &sp, &s) != VKF_OK) {
        VKT_CHECK(0, "session %s: %s", path, vkf_last_error());
        vkf_model_free(m);
        return;
    }
    size_t n = (size_t)N_STEP * N_SEQ * V;
    float *company = malloc(n * sizeof *company), *part = malloc(n * sizeof *part);
    int32_t tok[N_STEP * N_SEQ];
    char what[256];
    snprintf(what, sizeof what, "%s %s, all busy", backend, path);
    if (company && part && run(s, V, 0xf, prompts, plen, tok, 1, company, what)) {
        static const unsigned masks[] = {0x1, 0x2, 0x4, 0x8, 0x9, 0x6, 0xd};
        for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++) {
            snprintf(what, sizeof what, "%s %s, busy mask 0x%x", backend, path, masks[i]);
            if (!run(s, V, masks[i], prompts, plen, tok, 0, part, what)) continue;
            for (int k = 0; k < N_STEP; k++)
                for (int b = 0; b < N_SEQ; b++) {
                    if (!(masks[i] >> b & 1)) continue;
                    size_t off = ((size_t)k * N_SEQ + b) * V;
                    VKT_CHECK(memcmp(part + off, company + off, (size_t)V * sizeof *part) == 0,
                              "%s: sequence %d at step %d differs from its logits in company", what,
                              b, k);
                }
        }
    }
    /* nothing busy: nothing to compute, the logits untouched */
    int32_t idle[N_SEQ] = {-1, -1, -1, -1}, zero[N_SEQ] = {0};
    float keep = k_sentinel;
    if (company) {
        company[0] = keep;
        VKT_OK(vkf_session_seq_decode(s, zero, idle, company));
        VKT_CHECK(company[0] == keep, "%s %s: a step with nothing busy wrote logits", backend,
                  path);
    }
    free(company);
    free(part);
    vkf_session_free(s);
    vkf_model_free(m);
}

/* argv[1]: one fixture (its path under the fixtures) instead of them all */
int main(int argc, char **argv) {
    static char paths[6][1024];
    if (argc > 1) {
        snprintf(paths[0], sizeof paths[0], "%s", vkt_fixture(argv[1]));
        vkt_for_each_backend(test_model, paths[0]);
        return vkt_finish();
    }
    const char *rel[] = {"llama-tiny/llama-tiny-f32.gguf", "llama-tiny/llama-tiny-q4_0.gguf",
                         "llama-tiny/llama-tiny-q8_0.gguf", "llama-kq/llama-kq-q4_k_m.gguf",
                         "arch/gemma3-f32.gguf"};
    for (int i = 0; i < 5; i++) {
        snprintf(paths[i], sizeof paths[i], "%s", vkt_fixture(rel[i]));
        vkt_for_each_backend(test_model, paths[i]);
    }
    snprintf(paths[5], sizeof paths[5], "%s/models/kjv-gpt", VKF_SOURCE_DIR);
    vkt_for_each_backend(test_model, paths[5]);
    return vkt_finish();
}
