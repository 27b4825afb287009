/* Decoder-only generation and encoder-decoder translation (greedy and beam search). The sampler
 * is in generate/sampling.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "generate/sampling.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

/* ------------------------------------------------------------------ generation */

/* A NaN or +Inf logit is never a model's answer (a -Inf log-prob can be): it means a numerical
 * failure in a kernel or the driver, and sampling from it would silently pick garbage. */
static vkf_status check_finite(const vkf_session *s, const float *v, int32_t n_vocab, int32_t pos,
                               const char *what) {
    for (int32_t i = 0; i < n_vocab; i++)
        if (isnan(v[i]) || v[i] == INFINITY)
            return vkf_error(VKF_ERROR_INTERNAL,
                             "%s: the %s after position %d are not finite (%s at token id %d) on "
                             "%s: a numerical failure in "
                             "the backend; try the CPU (--cpu) or the VKF_NO_* fast-path switches",
                             s->m->path, what, pos, isnan(v[i]) ? "NaN" : "+Inf", i,
                             s->m->be->device_name);
    return VKF_OK;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --ignore-eos: every end-of-generation token out of the draw (llama.cpp biases them to -inf) */
static void mask_eog(const vkf_model *m, float *logits) {
    if (m->hp.eos_id >= 0 && m->hp.eos_id < m->hp.n_vocab) logits[m->hp.eos_id] = -INFINITY;
    const int32_t *ids = NULL;
    size_t n = m->tok ? vkf_tokenizer_eog(m->tok, &ids) : 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < m->hp.n_vocab) logits[ids[i]] = -INFINITY;
}

vkf_status vkf_generate(vkf_session *s, const int32_t *prompt, int32_t n_prompt, int32_t n_predict,
                        const vkf_sampler_params *sp, vkf_token_callback cb, void *user,
                        vkf_generate_stats *stats) {
    return vkf_generate_spec(s, NULL, prompt, n_prompt, n_predict, sp, cb, user, stats);
}

vkf_status vkf_generate_spec(vkf_session *s, vkf_spec *spec, const int32_t *prompt,
                             int32_t n_prompt, int32_t n_predict, const vkf_sampler_params *sp,
                             vkf_token_callback cb, void *user, vkf_generate_stats *stats) {
    vkf_generate_stats st;
    memset(&st, 0, sizeof st);
    if (stats) *stats = st;
    vkf_model *m = s->m;
    if (m->arch == VKF_ARCH_TRANSFORMER)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "generate: %s is an encoder-decoder model: use vkf_translate", m->path);
    if (n_prompt < 1 || !prompt)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "generate: the prompt is empty (it needs at least one token, e.g. BOS)");
    if (n_predict < 0)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "generate: n_predict %d < 0", n_predict);
    if ((int64_t)s->n_past + n_prompt > s->n_ctx)
        return vkf_error(
            VKF_ERROR_CONTEXT_FULL,
            "context full: the prompt has %d tokens but the context holds %d (%d already used)",
            n_prompt, s->n_ctx, s->n_past);
    VKF_TRY(vkf_check_tokens(prompt, n_prompt, m->hp.n_vocab, "prompt"));
    vkf_sampler *smp;
    VKF_TRY(vkf_sampler_create_ex(m, sp, &smp));
    float *logits = malloc((size_t)m->hp.n_vocab * sizeof *logits);
    vkf_status ac = VKF_OK;
    for (int32_t i = 0; i < n_prompt && ac == VKF_OK; i++)
        ac = vkf_sampler_accept(smp, prompt[i]);
    if (!logits || ac != VKF_OK) {
        free(logits);
        vkf_sampler_free(smp);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "generate: out of host memory");
    }
    double t0 = now_ms();
    int32_t past0 = s->n_past;
    int64_t drafted0 = 0, accepted0 = 0;
    vkf_spec_counts(spec, &drafted0, &accepted0);
    vkf_status rc = spec ? vkf_spec_begin(spec, s, prompt, n_prompt) : VKF_OK;
    if (rc == VKF_OK) rc = vkf_session_eval_last(s, prompt, n_prompt, logits);
    double t1 = now_ms();
    st.n_prompt = s->n_past - past0; /* all of it, unless the abort callback stopped it */
    st.prompt_ms = t1 - t0;
    st.stop = VKF_STOP_LENGTH;
    for (int32_t i = 0; rc == VKF_OK && i < n_predict; i++) {
        int32_t tok;
        rc = check_finite(s, logits, m->hp.n_vocab, s->n_past - 1, "logits");
        if (rc != VKF_OK) break;
        if (sp && sp->ignore_eos) mask_eog(m, logits);
        rc = vkf_sampler_sample(smp, logits, m->hp.n_vocab, &tok);
        if (rc == VKF_OK) rc = vkf_sampler_accept(smp, tok);
        if (rc != VKF_OK) break;
        if (vkf_model_is_eog(m, tok)) {
            st.stop = VKF_STOP_EOS;
            break;
        }
        st.n_generated++;
        if (cb) {
            char *piece = NULL;
            size_t len = 0;
            /* NO_STRIP: a continuation keeps the leading space a SentencePiece token carries */
            if (m->tok)
                rc = vkf_tokenizer_decode_ex(m->tok, &tok, 1, VKF_DECODE_NO_STRIP, &piece, &len);
            int stop = rc == VKF_OK ? cb(user, tok, piece ? piece : "", len) : 0;
            free(piece);
            if (rc != VKF_OK) break;
            if (stop) {
                st.stop = VKF_STOP_CALLBACK;
                break;
            }
        }
        if (vkf_sampler_grammar_state(smp) == VKF_GRAMMAR_MUST_END) { /* nothing can follow */
            st.stop = VKF_STOP_GRAMMAR;
            break;
        }
        if (i + 1 == n_predict) break; /* the last token needs no forward pass */
        if (vkf_spec_n_past(spec, s) >= s->n_ctx) {
            st.stop = VKF_STOP_CONTEXT_FULL;
            rc = vkf_error(
                VKF_ERROR_CONTEXT_FULL,
                "context full: generation stopped after %d token%s; the context holds %d tokens",
                st.n_generated, st.n_generated == 1 ? "" : "s", s->n_ctx);
            break;
        }
        if (spec) { /* n_predict - i - 1 tokens to come after tok: no draft past the last */
            vkf_spec_limit(spec, n_predict - i - 2);
            rc = vkf_spec_eval(spec, s, tok, logits);
        } else {
            rc = vkf_session_eval_last(s, &tok, 1, logits);
        }
    }
    if (spec) { /* the cache keeps the tokens generated, not the drafts past them */
        vkf_spec_limit(spec, -1);
        vkf_status es = vkf_spec_end(spec);
        if (rc == VKF_OK) rc = es;
        int64_t d = 0, a = 0;
        vkf_spec_counts(spec, &d, &a);
        st.n_drafted = (int32_t)(d - drafted0);
        st.n_accepted = (int32_t)(a - accepted0);
    }
    double t2 = now_ms();
    st.gen_ms = t2 - t1;
    st.prompt_tps = st.prompt_ms > 0 ? st.n_prompt / (st.prompt_ms / 1e3) : 0;
    st.gen_tps = st.gen_ms > 0 ? st.n_generated / (st.gen_ms / 1e3) : 0;
    if (rc == VKF_ERROR_ABORTED) st.stop = VKF_STOP_ABORTED;
    if (rc != VKF_OK && st.stop != VKF_STOP_CONTEXT_FULL && st.stop != VKF_STOP_ABORTED)
        st.stop = VKF_STOP_NONE;
    if (stats) *stats = st;
    free(logits);
    vkf_sampler_free(smp);
    return rc;
}

/* ------------------------------------------------------------------ translation */

static vkf_status translate_greedy(vkf_session *s, int32_t max_len, int32_t *out, int32_t *n_out,
                                   float *score) {
    vkf_model *m = s->m;
    float *lp = malloc((size_t)m->hp.n_vocab * sizeof *lp);
    if (!lp) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "translate: out of host memory");
    int32_t tok = m->hp.bos_id, n = 0;
    double sum = 0.0;
    vkf_status rc = VKF_OK;
    while (n < max_len) {
        rc = vkf_session_step(s, 1, 1, &tok, NULL, 1, lp);
        if (rc == VKF_OK) rc = check_finite(s, lp, m->hp.n_vocab, n, "log-probabilities");
        if (rc != VKF_OK) break;
        tok = vkf_argmax_f32(lp, m->hp.n_vocab); /* over the whole vocabulary: nothing suppressed */
        sum += lp[tok];
        out[n++] = tok;
        if (tok == m->hp.eos_id) break;
    }
    free(lp);
    *n_out = n;
    if (score) *score = (float)sum;
    return rc;
}

typedef struct beam_cand {
    double score;
    int32_t from; /* live slot it extends */
    int32_t tok;
} beam_cand;

static int beam_cand_cmp(const void *x, const void *y) {
    const beam_cand *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->from != b->from) return a->from < b->from ? -1 : 1;
    return a->tok < b->tok ? -1 : a->tok > b->tok;
}

static double beam_norm(double score, int32_t len, float penalty) {
    return penalty != 0 ? score / pow((double)len, (double)penalty) : score;
}

/* Beam search over `beam` slots of the session, lock-step: each step decodes every live slot's
 * last token, extends each by its 2*beam best tokens, keeps the beam best non-EOS extensions as
 * the new slots (the KV caches follow their parents) and sets EOS extensions aside as finished.
 * Stops when beam hypotheses have finished or after max_len tokens. */
static vkf_status translate_beam(vkf_session *s, int32_t beam, int32_t max_len, float penalty,
                                 int32_t *out, int32_t *n_out, float *score) {
    vkf_model *m = s->m;
    int32_t V = m->hp.n_vocab, kc = 2 * beam < V ? 2 * beam : V;
    size_t nb = (size_t)beam;
    float *lp = malloc(nb * (size_t)V * sizeof *lp);
    int32_t *toks = calloc(nb * (size_t)max_len, sizeof *toks),
            *ntoks = calloc(nb * (size_t)max_len, sizeof *ntoks);
    double *sc = malloc(nb * sizeof *sc), *nsc = malloc(nb * sizeof *nsc);
    int32_t *feed = malloc(nb * sizeof *feed), *from = malloc(nb * sizeof *from);
    beam_cand *cands = malloc(nb * (size_t)kc * sizeof *cands);
    vkf_cand *top = malloc((size_t)kc * sizeof *top);
    int32_t *best = malloc((size_t)max_len * sizeof *best);
    vkf_status rc = VKF_OK;
    if (!lp || !toks || !ntoks || !sc || !nsc || !feed || !from || !cands || !top || !best) {
        rc = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "translate: out of host memory");
        goto done;
    }
    for (int32_t b = 0; b < beam; b++)
        sc[b] = b == 0 ? 0.0 : -INFINITY; /* one hypothesis: BOS */
    int32_t n_fin = 0, best_len = 0;
    double best_norm = -INFINITY, best_raw = -INFINITY;
    for (int32_t t = 0; t < max_len; t++) {
        for (int32_t b = 0; b < beam; b++)
            feed[b] = t == 0 || !isfinite(sc[b]) ? m->hp.bos_id : toks[(size_t)b * max_len + t - 1];
        rc = vkf_session_step(s, beam, 1, feed, NULL, 1, lp);
        for (int32_t b = 0; rc == VKF_OK && b < beam; b++)
            if (isfinite(sc[b]))
                rc = check_finite(s, lp + (size_t)b * V, V, t, "log-probabilities");
        if (rc != VKF_OK) break;
        int32_t nc = 0;
        for (int32_t b = 0; b < beam; b++) {
            if (!isfinite(sc[b])) continue;
            vkf_select_top_k(lp + (size_t)b * V, V, kc, top);
            for (int32_t i = 0; i < kc; i++)
                cands[nc++] = (beam_cand){sc[b] + top[i].logit, b, top[i].id};
        }
        qsort(cands, (size_t)nc, sizeof *cands, beam_cand_cmp);
        int32_t live = 0;
        for (int32_t i = 0; i < nc && live < beam; i++) {
            const beam_cand *c = &cands[i];
            int final = c->tok == m->hp.eos_id || t + 1 == max_len;
            if (final) { /* finished: EOS, or out of length */
                if (c->tok == m->hp.eos_id && n_fin >= beam) continue;
                double nrm = beam_norm(c->score, t + 1, penalty);
                if (nrm > best_norm) {
                    best_norm = nrm;
                    best_raw = c->score;
                    best_len = t + 1;
                    memcpy(best, toks + (size_t)c->from * max_len, (size_t)t * sizeof *best);
                    best[t] = c->tok;
                }
                n_fin++;
                if (c->tok == m->hp.eos_id) continue;
            }
            memcpy(ntoks + (size_t)live * max_len, toks + (size_t)c->from * max_len,
                   (size_t)t * sizeof *toks);
            ntoks[(size_t)live * max_len + t] = c->tok;
            nsc[live] = c->score;
            from[live] = c->from;
            live++;
        }
        if (n_fin >= beam || live == 0 || t + 1 == max_len) break;
        for (int32_t b = live; b < beam; b++) { /* fewer candidates than slots: keep them dead */
            nsc[b] = -INFINITY;
            from[b] = b;
        }
        rc = vkf_session_reorder(s, beam, from);
        if (rc != VKF_OK) break;
        int32_t *tt = toks;
        toks = ntoks;
        ntoks = tt;
        double *ts = sc;
        sc = nsc;
        nsc = ts;
    }
    if (rc == VKF_OK) {
        memcpy(out, best, (size_t)best_len * sizeof *out);
        *n_out = best_len;
        if (score) *score = (float)best_raw;
    }
done:
    free(lp);
    free(toks);
    free(ntoks);
    free(sc);
    free(nsc);
    free(feed);
    free(from);
    free(cands);
    free(top);
    free(best);
    return rc;
}

vkf_status vkf_translate(vkf_session *s, const int32_t *src, int32_t n_src,
                         const vkf_translate_params *p, int32_t *out, int32_t cap, int32_t *n_out,
                         float *score) {
    vkf_translate_params def = {0};
    if (!p) p = &def;
    vkf_model *m = s->m;
    *n_out = 0;
    if (m->arch != VKF_ARCH_TRANSFORMER)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "translate: %s is decoder-only: use vkf_generate", m->path);
    if (n_src < 1) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "translate: empty source");
    int32_t beam = p->beam > 1 ? p->beam : 1;
    int32_t max_len = p->max_len > 0 ? p->max_len : s->n_ctx;
    if (max_len > s->n_ctx)
        return vkf_error(VKF_ERROR_CONTEXT_FULL,
                         "translate: max_len %d exceeds the session's context of %d tokens",
                         max_len, s->n_ctx);
    if (cap < max_len)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "translate: the output buffer holds %d tokens, max_len is %d", cap,
                         max_len);
    if (beam > s->n_batch)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "translate: beam %d needs a session with n_batch >= %d (it has %d)", beam,
                         beam, s->n_batch);
    VKF_TRY(vkf_session_encode_batch(s, 1, n_src, src, &n_src, beam, NULL));
    if (beam == 1) return translate_greedy(s, max_len, out, n_out, score);
    return translate_beam(s, beam, max_len, p->length_penalty, out, n_out, score);
}
