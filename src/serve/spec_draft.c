/* A slot's draft model (serve -md): its own draft session, the tokens it holds, and the greedy
 * draft of generate/speculative.c (the draft model's argmax token after token, stopping after
 * the first one it gives a probability under p_min among its 10 best: llama.cpp's
 * common_speculative loop). Before each draft the session is cut back to the longest prefix it
 * shares with the slot's tokens, so the drafts the target rejected leave the draft cache too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

#define DRAFT_TOP_K 10 /* llama.cpp's draft sampler: top_k 10 */

struct srv_draft {
    vkf_session *s;
    int32_t *tok; /* [n_ctx]: the tokens s holds */
    int32_t n, n_ctx, dV, tV;
    float p_min;
    float *log; /* [dV] */
};

vkf_status srv_draft_new(vkf_model *dm, int32_t n_ctx, int32_t ctk, int32_t ctv,
                         int32_t target_vocab, float p_min, srv_draft **out) {
    *out = NULL;
    vkf_model_desc d;
    vkf_model_describe(dm, &d);
    srv_draft *dr = calloc(1, sizeof *dr);
    if (!dr) return VKF_ERROR_OUT_OF_MEMORY;
    if (n_ctx > d.n_ctx) n_ctx = d.n_ctx;
    vkf_session_params sp = {.n_ctx = n_ctx, .cache_type_k = ctk, .cache_type_v = ctv};
    vkf_status st = vkf_session_create(dm, &sp, &dr->s);
    dr->n_ctx = n_ctx;
    dr->dV = d.n_vocab;
    dr->tV = target_vocab;
    dr->p_min = p_min;
    dr->tok = malloc((size_t)n_ctx * sizeof *dr->tok);
    dr->log = malloc((size_t)d.n_vocab * sizeof *dr->log);
    if (st == VKF_OK && (!dr->tok || !dr->log)) st = VKF_ERROR_OUT_OF_MEMORY;
    if (st != VKF_OK) {
        srv_draft_free(dr);
        return st;
    }
    *out = dr;
    return VKF_OK;
}

void srv_draft_free(srv_draft *dr) {
    if (!dr) return;
    vkf_session_free(dr->s);
    free(dr->tok);
    free(dr->log);
    free(dr);
}

/* the top token and its probability among the DRAFT_TOP_K largest logits */
static int32_t top_token(const float *l, int32_t V, double *p) {
    float top[DRAFT_TOP_K];
    int32_t id = 0, nt = 0;
    for (int32_t i = 0; i < V; i++) {
        if (nt == DRAFT_TOP_K && l[i] <= top[nt - 1]) continue;
        int32_t j = nt < DRAFT_TOP_K ? nt++ : nt - 1;
        while (j > 0 && top[j - 1] < l[i]) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = l[i];
        if (j == 0) id = i;
    }
    double sum = 0;
    for (int32_t j = 0; j < nt; j++)
        sum += exp((double)top[j] - (double)top[0]);
    *p = 1.0 / sum;
    return id;
}

int32_t srv_draft_run(srv_draft *dr, const int32_t *h, int32_t n, int32_t max, int32_t *out) {
    if (n < 1) return 0;
    if (n + max > dr->n_ctx) max = dr->n_ctx - n;
    if (max < 1) return 0;
    int32_t keep = 0;
    while (keep < n && keep < dr->n && h[keep] == dr->tok[keep])
        keep++;
    if (keep == n) keep = n - 1;       /* the last token again: its logits */
    for (int32_t i = keep; i < n; i++) /* a token the draft model does not have: no draft */
        if (h[i] >= dr->dV) return 0;
    dr->n = keep < vkf_session_n_past(dr->s) ? keep : vkf_session_n_past(dr->s);
    vkf_status st = vkf_session_truncate(dr->s, dr->n);
    if (st == VKF_OK) st = vkf_session_eval_last(dr->s, h + dr->n, n - dr->n, dr->log);
    if (st != VKF_OK) { /* no draft; the next one starts from an empty cache */
        vkf_session_reset(dr->s);
        dr->n = 0;
        return 0;
    }
    memcpy(dr->tok, h, (size_t)n * sizeof *h);
    dr->n = n;
    int32_t k = 0;
    for (int32_t i = 0; i < max; i++) {
        double p;
        int32_t id = top_token(dr->log, dr->dV, &p);
        if (id >= dr->tV) break; /* beyond the target's vocabulary */
        out[k++] = id;
        if (i + 1 == max || p < (double)dr->p_min) break;
        if (vkf_session_eval_last(dr->s, &id, 1, dr->log) != VKF_OK) {
            vkf_session_reset(dr->s);
            dr->n = 0;
            break;
        }
        dr->tok[dr->n++] = id;
    }
    return k;
}
