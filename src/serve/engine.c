/* The serving engine: n slots of one session, a queue, one thread.
 *
 * Each step of the thread:
 *   1. a slot whose client went away is freed;
 *   2. queued requests take the free slots: each prompt is evaluated into its slot's region of
 *      the KV cache (vkf_session_seq_eval) and its first token sampled;
 *   3. every busy slot advances by one token in one batched graph (vkf_session_seq_decode):
 *      each slot at its own position, so a request joins at the next step and leaves when it
 *      finishes, without waiting for the others (continuous batching). The step computes the
 *      rows from the first busy slot to the last only (idle slots cost nothing, but those
 *      between busy ones), so a lone request runs as fast as on a one-slot server.
 * A request's tokens do not depend on the other slots: a slot's logits are the same bits
 * whichever slots are busy (the library's guarantee: a step of fewer rows runs the kernels of a
 * step of all of them) and each slot has its own sampler, so the same request with the same
 * seed gives the same tokens alone or in company.
 *
 * Prompt cache: each slot remembers the tokens its cache rows hold (the last request's prompt
 * and the generated tokens fed back). A queued request takes the free slot holding the longest
 * prefix of its prompt and evaluates only the rest (cache_prompt, on by default as in
 * llama-server; at least its last token, for the logits). The cached rows are the same values
 * a fresh evaluation computes, up to float rounding (the prompt is evaluated in other chunks). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/serve.h"
#include "serve/structured.h"

struct srv_engine {
    vkf_model *m;
    vkf_session *s;
    int n_slots;
    int32_t n_ctx, n_vocab;
    int queue_max;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* work for the engine thread */
    pthread_t thread;
    srv_req **slot; /* [n_slots]: the request in each slot, or NULL */
    srv_req *q_head, *q_tail;
    int n_queued;
    int stopping;             /* no new requests; finish the rest, then exit */
    long n_done, n_cancelled; /* requests finished, of which cancelled (/health) */
    float *logits;            /* [n_slots * n_vocab] */
    int32_t *tok, *pos;
    /* prompt cache (engine thread): ctok[b * n_ctx + i] = token at cache row i of slot b, for
     * i < ctok_n[b] <= n_ctx - 1 (an idle slot's step writes its last row) */
    int32_t *ctok, *ctok_n;
    long *used, n_started; /* used[b]: when slot b last took a request (n_started then) */
    /* /metrics and /slots (under the mutex) */
    srv_stats st;    /* counters; st.kv_tokens is summed from kv_pub when read */
    int32_t *kv_pub; /* [n_slots]: cache rows slot b holds, as last published */
    srv_req **prev;  /* [n_slots]: the request slot b held last (a reference), or NULL */
    /* speculative decoding (engine thread): the slots with a draft leave the batched step and
     * are checked one by one, all their drafted tokens in one pass */
    int spec;
    int32_t draft_max, draft_min, ngram_n;
    int32_t *sdraft; /* [n_slots * (draft_max + 1)]: slot b's pass, its last token first */
    int32_t *sk;     /* [n_slots]: drafted tokens of slot b this step (0: in the batched step) */
    int32_t *hist;   /* [n_ctx + 1] scratch: a slot's tokens */
    float *srows;    /* [(draft_max + 1) * n_vocab]: the logits of a slot's pass */
    srv_draft **dr;  /* [n_slots] with a draft model (-md): each slot's drafter, else NULL */
    /* LoRA (serve/lora.c): the adapters, the server's scales (under the mutex), the set each
     * slot's prompt cache was computed with ([n_slots * SRV_MAX_LORA]), the set on the
     * session (engine thread); slots of different sets step in separate passes */
    vkf_lora *lora[SRV_MAX_LORA];
    char *lora_path[SRV_MAX_LORA];
    int n_lora;
    float lora_global[SRV_MAX_LORA];
    float *slot_lora;
    float cur_lora[SRV_MAX_LORA];
    int32_t *pos_all; /* [n_slots]: the busy slots of a step, before they split by set */
    srv_slot_op *ops; /* slot saves, restores and erases waiting for the engine thread */
};

/* ------------------------------------------------------------------ LoRA sets */

static int lora_same(const srv_engine *e, const float *a, const float *b) {
    return e->n_lora == 0 || memcmp(a, b, (size_t)e->n_lora * sizeof *a) == 0;
}

/* the session applies set from now on (graphs are rebuilt when it changes) */
static vkf_status lora_use(srv_engine *e, const float *set) {
    if (lora_same(e, e->cur_lora, set)) return VKF_OK;
    vkf_status st = vkf_session_set_lora(e->s, e->lora, set, e->n_lora);
    if (st != VKF_OK) return st;
    memcpy(e->cur_lora, set, (size_t)e->n_lora * sizeof *set);
    return VKF_OK;
}

int srv_engine_n_lora(const srv_engine *e) { return e->n_lora; }
const char *srv_engine_lora_path(const srv_engine *e, int i) { return e->lora_path[i]; }
const char *srv_engine_lora_meta(const srv_engine *e, int i, int what) {
    return what ? vkf_lora_prompt_prefix(e->lora[i]) : vkf_lora_task_name(e->lora[i]);
}

void srv_engine_lora_get(srv_engine *e, float *scales) {
    pthread_mutex_lock(&e->mu);
    memcpy(scales, e->lora_global, sizeof e->lora_global);
    pthread_mutex_unlock(&e->mu);
}

void srv_engine_lora_set(srv_engine *e, const float *scales) {
    pthread_mutex_lock(&e->mu);
    memcpy(e->lora_global, scales, sizeof e->lora_global);
    pthread_mutex_unlock(&e->mu);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

srv_req *srv_req_new(void) {
    srv_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    pthread_cond_init(&r->cv, NULL);
    r->refs = 2; /* the connection and the engine */
    r->slot = -1;
    r->id_slot = -1;
    return r;
}

static void req_free(srv_req *r) {
    for (int i = 0; i < r->n_ev; i++) {
        free(r->ev[i].text);
        free(r->ev[i].piece);
    }
    free(r->ev);
    free(r->prompt);
    free(r->gen);
    for (int i = 0; i < r->n_stops; i++)
        free(r->stops[i]);
    vkf_sampler_free(r->smp);
    vkf_stopper_free(r->stopper);
    srv_structured_free(r->st);
    pthread_cond_destroy(&r->cv);
    free(r);
}

/* with the mutex held */
static void req_unref(srv_req *r) {
    if (--r->refs == 0) req_free(r);
}

void srv_req_release(srv_engine *e, srv_req *r) {
    pthread_mutex_lock(&e->mu);
    r->cancel = 1; /* a no-op when it is done */
    req_unref(r);
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

void srv_engine_lock(srv_engine *e) { pthread_mutex_lock(&e->mu); }
void srv_engine_unlock(srv_engine *e) { pthread_mutex_unlock(&e->mu); }
int32_t srv_engine_n_ctx(const srv_engine *e) { return e->n_ctx; }

void srv_engine_kv(const srv_engine *e, uint64_t *bytes, int32_t *type_k, int32_t *type_v) {
    vkf_memory_info mi;
    memset(&mi, 0, sizeof mi);
    vkf_session_memory(e->s, &mi); /* reads the session's tensors: no device work */
    *bytes = mi.kv_cache;
    *type_k = mi.kv_type_k;
    *type_v = mi.kv_type_v;
}
int srv_engine_n_slots(const srv_engine *e) { return e->n_slots; }

void srv_engine_counts(srv_engine *e, long *done, long *cancelled) {
    pthread_mutex_lock(&e->mu);
    *done = e->n_done;
    *cancelled = e->n_cancelled;
    pthread_mutex_unlock(&e->mu);
}

void srv_engine_load(srv_engine *e, int *busy, int *queued) {
    pthread_mutex_lock(&e->mu);
    int b = 0;
    for (int i = 0; i < e->n_slots; i++)
        b += e->slot[i] != NULL;
    *busy = b;
    *queued = e->n_queued;
    pthread_mutex_unlock(&e->mu);
}

vkf_status srv_engine_memory(srv_engine *e, vkf_memory_info *out) {
    return vkf_session_memory(e->s, out);
}

void srv_engine_wait(srv_engine *e, srv_req *r, int timeout_ms) {
    pthread_mutex_lock(&e->mu);
    if (r->done) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)timeout_ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&r->cv, &e->mu, &ts);
}

int srv_engine_submit(srv_engine *e, srv_req *r) {
    pthread_mutex_lock(&e->mu);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mu);
        return -2;
    }
    int busy = 0;
    for (int i = 0; i < e->n_slots; i++)
        busy += e->slot[i] != NULL;
    /* a free slot takes it at the next step; otherwise it waits, if the queue has room */
    if (e->n_queued >= (e->n_slots - busy) + e->queue_max) {
        pthread_mutex_unlock(&e->mu);
        return -1;
    }
    if (!r->lora_given) memcpy(r->lora, e->lora_global, sizeof r->lora);
    r->next = NULL;
    if (e->q_tail)
        e->q_tail->next = r;
    else
        e->q_head = r;
    e->q_tail = r;
    e->n_queued++;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

/* ------------------------------------------------------------------ per-token work (engine thread)
 */

/* with the mutex held, on the engine thread: what /slots and /metrics show of r */
static void publish(srv_engine *e, srv_req *r) {
    r->pub_gen = r->n_gen;
    r->pub_cached = r->n_cached;
    r->pub_pos = r->pos;
    if (r->slot >= 0) e->kv_pub[r->slot] = r->pos;
}

/* with the mutex held: the request is over */
static void finish(srv_engine *e, srv_req *r, srv_finish f) {
    r->finish = f;
    if (r->t_gen0 > 0) r->predicted_ms = 1e3 * (now_s() - r->t_gen0);
    r->done = 1;
    e->n_done++;
    e->n_cancelled += f == SRV_FINISH_CANCELLED;
    e->st.n_finished[f]++;
    if (r->slot >= 0) {
        int b = r->slot;
        publish(e, r);
        e->kv_pub[b] = e->ctok_n[b]; /* what the slot keeps: its prompt cache */
        e->slot[b] = NULL;
        if (e->prev[b]) req_unref(e->prev[b]);
        e->prev[b] = r; /* /slots shows it until the slot takes another */
        r->refs++;
    }
    r->slot = -1;
    pthread_cond_broadcast(&r->cv);
    req_unref(r);
}

static int push_event(srv_req *r, srv_event *ev) {
    if (r->n_ev == r->cap_ev) {
        int nc = r->cap_ev ? 2 * r->cap_ev : 32;
        srv_event *n = realloc(r->ev, (size_t)nc * sizeof *n);
        if (!n) return -1;
        r->ev = n;
        r->cap_ev = nc;
    }
    r->ev[r->n_ev++] = *ev;
    return 0;
}

/* log-softmax of one row at token id, and the top k */
static void logprobs_of(const float *l, int32_t n, int32_t id, int k, srv_event *ev) {
    float mx = l[0];
    for (int32_t i = 1; i < n; i++)
        if (l[i] > mx) mx = l[i];
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        sum += exp((double)l[i] - mx);
    double lse = mx + log(sum);
    ev->logprob = (float)((double)l[id] - lse);
    ev->n_top = 0;
    for (int j = 0; j < k && j < n; j++) { /* k passes of selection: k <= 20 */
        int32_t best = -1;
        for (int32_t i = 0; i < n; i++) {
            int taken = 0;
            for (int t = 0; t < j && !taken; t++)
                taken = ev->top_id[t] == i;
            if (!taken && (best < 0 || l[i] > l[best])) best = i;
        }
        ev->top_id[j] = best;
        ev->top_lp[j] = (float)((double)l[best] - lse);
        ev->n_top++;
    }
}

/* Samples the next token of r from its logits row and delivers it. Returns 1 when r is done
 * (finished under the mutex), 0 to continue. */
static int take_token(srv_engine *e, srv_req *r, const float *row) {
    int32_t tok;
    srv_event ev;
    memset(&ev, 0, sizeof ev);
    int bad = 0;
    for (int32_t i = 0; i < e->n_vocab && !bad; i++)
        bad = isnan(row[i]) || row[i] == INFINITY;
    vkf_status st = bad ? VKF_ERROR_INTERNAL : vkf_sampler_sample(r->smp, row, e->n_vocab, &tok);
    if (st == VKF_OK) st = vkf_sampler_accept(r->smp, tok);
    if (st != VKF_OK) {
        pthread_mutex_lock(&e->mu);
        snprintf(r->err, sizeof r->err, "%s",
                 bad ? "the logits are not finite (a numerical failure in the backend)"
                     : vkf_last_error());
        finish(e, r, SRV_FINISH_ERROR);
        pthread_mutex_unlock(&e->mu);
        return 1;
    }
    srv_finish f = SRV_FINISH_NONE;
    const char *emit = "";
    size_t emit_len = 0;
    char *all = NULL;
    if (vkf_model_is_eog(e->m, tok)) {
        f = SRV_FINISH_STOP;
        vkf_stopper_flush(r->stopper, &emit, &emit_len);
    } else {
        if (r->n_gen == r->cap_gen) {
            int32_t nc = r->cap_gen ? 2 * r->cap_gen : 64;
            int32_t *g = realloc(r->gen, (size_t)nc * sizeof *g);
            if (g) r->gen = g, r->cap_gen = nc;
        }
        if (r->n_gen < r->cap_gen) r->gen[r->n_gen] = tok;
        r->n_gen++;
        /* the text of the whole generation, detokenized again: a token's own text may depend
         * on its neighbours (SentencePiece spaces, multi-token characters) */
        /* with tools, control tokens show: [TOOL_CALLS] and <|python_tag|> are markers; a
         * completion continues its prompt, so the leading space of a SentencePiece token stays
         * (" Paris" after "The capital of France is", as generate and llama.cpp's server) */
        int flags = (r->st && r->st->tools ? VKF_DETOKENIZE_SPECIAL : 0) |
                    (r->chat ? 0 : VKF_DETOKENIZE_CONTINUATION);
        if (vkf_model_detokenize(e->m, r->gen, r->n_gen, flags, &all) == VKF_OK) {
            size_t n = strlen(all);
            size_t from = r->text_done < n ? r->text_done : n;
            if (vkf_stopper_push(r->stopper, all + from, n - from, &emit, &emit_len))
                f = SRV_FINISH_STOP;
            r->text_done = n;
        }
        /* a grammar that nothing can extend ends the answer (the held text goes out) */
        int grammar_end =
            f == SRV_FINISH_NONE && vkf_sampler_grammar_state(r->smp) == VKF_GRAMMAR_MUST_END;
        if (grammar_end) f = SRV_FINISH_STOP;
        /* the token is fed at r->pos next: it must fit the slot's context */
        if (f == SRV_FINISH_NONE && (r->n_gen >= r->max_tokens || r->pos >= e->n_ctx))
            f = SRV_FINISH_LENGTH;
        if (f == SRV_FINISH_LENGTH || grammar_end) {
            const char *rest;
            size_t rest_len;
            char *head = vkf_frontend_utf8_dup(emit, emit_len);
            vkf_stopper_flush(r->stopper, &rest, &rest_len);
            size_t hl = head ? strlen(head) : 0;
            char *joined = malloc(hl + rest_len + 1);
            if (joined) {
                memcpy(joined, head ? head : "", hl);
                memcpy(joined + hl, rest, rest_len);
                joined[hl + rest_len] = '\0';
            }
            free(head);
            ev.text = joined ? vkf_frontend_utf8_dup(joined, hl + rest_len) : NULL;
            ev.len = ev.text ? strlen(ev.text) : 0;
            free(joined);
        }
    }
    if (!ev.text) {
        ev.text = vkf_frontend_utf8_dup(emit, emit_len);
        ev.len = ev.text ? strlen(ev.text) : 0;
    }
    free(all);
    ev.id = tok;
    if (r->logprobs && !vkf_model_is_eog(e->m, tok)) {
        logprobs_of(row, e->n_vocab, tok, r->top_logprobs, &ev);
        char *p = NULL;
        if (vkf_model_detokenize(e->m, &tok, 1, VKF_DETOKENIZE_SPECIAL, &p) == VKF_OK) {
            ev.piece = vkf_frontend_utf8_dup(p, strlen(p));
            free(p);
        }
    }
    pthread_mutex_lock(&e->mu);
    int keep = !vkf_model_is_eog(e->m, tok) || ev.len > 0;
    if (keep && push_event(r, &ev) != 0) {
        free(ev.text);
        free(ev.piece);
        snprintf(r->err, sizeof r->err, "out of host memory");
        f = SRV_FINISH_ERROR;
    } else if (!keep) {
        free(ev.text);
        free(ev.piece);
    }
    if (!vkf_model_is_eog(e->m, tok)) e->st.n_predicted++;
    publish(e, r);
    if (r->cancel) f = SRV_FINISH_CANCELLED;
    if (f != SRV_FINISH_NONE) {
        finish(e, r, f);
        pthread_mutex_unlock(&e->mu);
        return 1;
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&e->mu);
    r->last = tok;
    return 0;
}

/* ------------------------------------------------------------------ prompt cache */

/* tokens of r's prompt that slot b's cache holds, leaving at least the last to evaluate */
static int32_t cached_prefix(const srv_engine *e, const srv_req *r, int b) {
    if (!r->cache_prompt) return 0;
    /* rows computed with another adapter set are no prefix of this request's */
    if (!lora_same(e, e->slot_lora + (size_t)b * SRV_MAX_LORA, r->lora)) return 0;
    const int32_t *c = e->ctok + (size_t)b * e->n_ctx;
    int32_t n = 0, lim = e->ctok_n[b] < r->n_prompt - 1 ? e->ctok_n[b] : r->n_prompt - 1;
    while (n < lim && c[n] == r->prompt[n])
        n++;
    return n;
}

/* the free slot for r (with the mutex held): the longest cached prefix (the lowest index of
 * equals) when it covers at least half the prompt, else the least recently used free slot (as
 * llama-server's similarity threshold: a short common start such as BOS does not evict another
 * conversation); -1 when every slot is busy */
static int pick_slot(const srv_engine *e, const srv_req *r) {
    int best = -1, lru = -1;
    int32_t best_n = -1;
    for (int b = 0; b < e->n_slots; b++) {
        if (e->slot[b]) continue;
        int32_t n = cached_prefix(e, r, b);
        if (n > best_n) best = b, best_n = n;
        if (lru < 0 || e->used[b] < e->used[lru]) lru = b;
    }
    return best >= 0 && 2 * (int64_t)best_n >= r->n_prompt ? best : lru;
}

/* slot b's cache row i now holds token t (rows before it still valid) */
static void cache_note(srv_engine *e, int b, int32_t i, int32_t t) {
    if (i >= e->n_ctx - 1) return; /* the last row is written by idle steps */
    e->ctok[(size_t)b * e->n_ctx + i] = t;
    e->ctok_n[b] = i + 1;
}

/* The session's abort callback while r's prompt is evaluated: the client went away (issue
 * 28.4), so a long prompt stops at the next pass instead of running to its end. */
typedef struct prefill_watch {
    srv_engine *e;
    srv_req *r;
} prefill_watch;

static int prefill_cancelled(void *user) {
    prefill_watch *w = user;
    pthread_mutex_lock(&w->e->mu);
    int c = w->r->cancel;
    pthread_mutex_unlock(&w->e->mu);
    return c;
}

/* Prefill: r's prompt into slot b (past what the slot's cache holds), then its first token. */
static void start_request(srv_engine *e, srv_req *r, int b) {
    vkf_status st = vkf_sampler_create_ex(e->m, &r->sp, &r->smp);
    if (st == VKF_OK)
        st = vkf_stopper_create((const char *const *)r->stops, r->n_stops, &r->stopper);
    for (int32_t i = 0; st == VKF_OK && i < r->n_prompt; i++)
        st = vkf_sampler_accept(r->smp, r->prompt[i]);
    float *row = e->logits + (size_t)b * e->n_vocab;
    int32_t keep = cached_prefix(e, r, b);
    e->used[b] = ++e->n_started;
    r->n_cached = keep;
    e->ctok_n[b] = keep; /* rows past it are rewritten now */
    memcpy(e->slot_lora + (size_t)b * SRV_MAX_LORA, r->lora, sizeof r->lora);
    if (st == VKF_OK) st = lora_use(e, r->lora);
    prefill_watch w = {e, r};
    vkf_session_set_abort_callback(e->s, prefill_cancelled, &w);
    double t0 = now_s();
    if (st == VKF_OK)
        st = vkf_session_seq_eval(e->s, b, keep, r->prompt + keep, r->n_prompt - keep, row);
    vkf_session_set_abort_callback(e->s, NULL, NULL);
    if (st == VKF_OK) {
        r->t_gen0 = now_s();
        double dt = r->t_gen0 - t0;
        r->prompt_ms = 1e3 * dt;
        pthread_mutex_lock(&e->mu);
        e->st.n_prompt += (uint64_t)(r->n_prompt - keep);
        e->st.n_bucket_prompt += (uint64_t)(r->n_prompt - keep);
        e->st.t_prompt += dt;
        e->st.t_bucket_prompt += dt;
        pthread_mutex_unlock(&e->mu);
    }
    if (st == VKF_OK)
        for (int32_t i = keep; i < r->n_prompt; i++)
            cache_note(e, b, i, r->prompt[i]);
    if (st == VKF_ERROR_ABORTED) { /* the client left during its prompt: the slot is free now */
        pthread_mutex_lock(&e->mu);
        finish(e, r, SRV_FINISH_CANCELLED);
        pthread_mutex_unlock(&e->mu);
        return;
    }
    if (st != VKF_OK) {
        e->ctok_n[b] = 0;
        pthread_mutex_lock(&e->mu);
        snprintf(r->err, sizeof r->err, "%s", vkf_last_error());
        finish(e, r, SRV_FINISH_ERROR);
        pthread_mutex_unlock(&e->mu);
        return;
    }
    r->pos = r->n_prompt; /* tokens in the slot's cache: the first generated token goes there */
    take_token(e, r, row);
}

/* Passes of 2, 4, 8, ... tokens, at most draft_max + 1 (the library's rule,
 * generate/speculative.c): each length is a graph the session keeps. */
static void drafts_free(srv_engine *e) {
    for (int b = 0; e->dr && b < e->n_slots; b++)
        srv_draft_free(e->dr[b]);
    free(e->dr);
}

static int32_t spec_pass(int32_t k, int32_t n_max) {
    int32_t b = 1;
    while (b * 2 <= k + 1 && b * 2 <= n_max + 1)
        b *= 2;
    return b;
}

/* Drafts for slot b (engine thread): the lookup over the tokens its cache holds and the one to
 * feed; none past the request's max_tokens or the slot's context. Returns how many. */
static int32_t spec_draft(srv_engine *e, const srv_req *r, int b) {
    int32_t n = e->ctok_n[b];
    if (n != r->pos) return 0; /* the cache's record stops short (its last row): no lookup */
    int32_t max = e->draft_max;
    if (r->max_tokens - r->n_gen - 1 < max) max = r->max_tokens - r->n_gen - 1;
    if (e->n_ctx - 2 - r->pos < max) max = e->n_ctx - 2 - r->pos;
    if (max < 1) return 0;
    memcpy(e->hist, e->ctok + (size_t)b * e->n_ctx, (size_t)n * sizeof *e->hist);
    e->hist[n] = r->last;
    int32_t *d = e->sdraft + (size_t)b * (e->draft_max + 1);
    int32_t k = e->dr ? srv_draft_run(e->dr[b], e->hist, n + 1, max, d + 1)
                      : vkf_spec_ngram_draft(e->hist, n + 1, e->ngram_n, max, d + 1);
    if (k < 1 || k < e->draft_min) return 0;
    d[0] = r->last;
    return spec_pass(k, e->draft_max) - 1;
}

/* Slot b's drafts checked in one pass; the tokens are drawn from its rows in order while they
 * match the drafts: the first that does not (or the one after the last draft) is fed next, at
 * the position after the last token kept, so the rows of the rejected drafts are written over. */
static void spec_check(srv_engine *e, int b) {
    srv_req *r = e->slot[b];
    int32_t k = e->sk[b], *d = e->sdraft + (size_t)b * (e->draft_max + 1);
    if (!r || k < 1) return;
    double t0 = now_s();
    vkf_status st = vkf_session_seq_eval_all(e->s, b, r->pos, d, k + 1, e->srows);
    double dt = now_s() - t0;
    pthread_mutex_lock(&e->mu);
    e->st.n_steps++;
    e->st.n_busy_total++;
    e->st.n_decoded++;
    e->st.n_bucket_decoded++;
    e->st.t_decode += dt;
    e->st.t_bucket_decode += dt;
    e->st.n_drafted += (uint64_t)k;
    r->n_drafted += k;
    if (st != VKF_OK) {
        e->ctok_n[b] = 0;
        snprintf(r->err, sizeof r->err, "%s", vkf_last_error());
        finish(e, r, SRV_FINISH_ERROR);
    }
    pthread_mutex_unlock(&e->mu);
    if (st != VKF_OK) return;
    for (int32_t i = 0; i <= k; i++) {
        if (i > 0) { /* the token drawn from row i - 1 was the draft d[i]: kept */
            pthread_mutex_lock(&e->mu);
            e->st.n_accepted++;
            r->n_accepted++;
            pthread_mutex_unlock(&e->mu);
        }
        cache_note(e, b, r->pos, d[i]);
        r->pos++;
        if (take_token(e, r, e->srows + (size_t)i * e->n_vocab)) break; /* r has finished */
        if (i < k && r->last != d[i + 1]) break;
    }
}

void srv_engine_slot_op(srv_engine *e, srv_slot_op *op) {
    pthread_cond_init(&op->cv, NULL);
    pthread_mutex_lock(&e->mu);
    op->done = 0;
    op->next = e->ops;
    e->ops = op;
    pthread_cond_signal(&e->cv);
    while (!op->done)
        pthread_cond_wait(&op->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    pthread_cond_destroy(&op->cv);
}

/* a slot operation (engine thread, the mutex not held): on an idle slot only */
static void run_op(srv_engine *e, srv_slot_op *op) {
    int b = op->slot;
    if (b < 0 || b >= e->n_slots) {
        op->status = 400;
        snprintf(op->err, sizeof op->err, "slot %d: this server has slots 0 to %d", b,
                 e->n_slots - 1);
        return;
    }
    if (e->slot[b]) {
        op->status = 400;
        snprintf(op->err, sizeof op->err, "slot %d is processing a request; try when it is idle",
                 b);
        return;
    }
    int32_t *ct = e->ctok + (size_t)b * e->n_ctx;
    op->status = 200;
    if (op->action == SRV_SLOT_SAVE) {
        srv_slot_save(e->m, e->s, b, ct, e->ctok_n[b], op);
    } else if (op->action == SRV_SLOT_RESTORE) {
        e->ctok_n[b] = 0; /* what it held is overwritten, whatever happens */
        srv_slot_restore(e->m, e->s, b, ct, e->n_ctx - 1, op);
        if (op->status == 200) e->ctok_n[b] = op->n_tokens;
        /* a file does not say which adapter scales computed it: with adapters loaded, the
         * restored rows match no request's set (NaN never compares equal), so they are never
         * taken for another set's prefix */
        for (int i = 0; i < e->n_lora; i++)
            e->slot_lora[(size_t)b * SRV_MAX_LORA + i] = NAN;
    } else {
        op->n_tokens = e->ctok_n[b];
        e->ctok_n[b] = 0;
    }
}

static void *engine_main(void *arg) {
    srv_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        /* 0. slot saves, restores, erases (between steps, on idle slots) */
        while (e->ops) {
            srv_slot_op *op = e->ops;
            e->ops = op->next;
            pthread_mutex_unlock(&e->mu);
            run_op(e, op);
            pthread_mutex_lock(&e->mu);
            if (op->slot >= 0 && op->slot < e->n_slots && !e->slot[op->slot])
                e->kv_pub[op->slot] = e->ctok_n[op->slot];
            op->done = 1;
            pthread_cond_signal(&op->cv);
        }
        /* 1. cancelled slots leave */
        for (int b = 0; b < e->n_slots; b++)
            if (e->slot[b] && e->slot[b]->cancel) finish(e, e->slot[b], SRV_FINISH_CANCELLED);
        /* 2. queued requests take free slots (the one caching most of the prompt) */
        for (int b; e->q_head && (b = pick_slot(e, e->q_head)) >= 0;) {
            srv_req *r = e->q_head;
            e->q_head = r->next;
            if (!e->q_head) e->q_tail = NULL;
            e->n_queued--;
            if (r->cancel) {
                finish(e, r, SRV_FINISH_CANCELLED);
                continue;
            }
            r->slot = b;
            r->id_slot = b;
            e->slot[b] = r;
            pthread_mutex_unlock(&e->mu);
            start_request(e, r, b);
            pthread_mutex_lock(&e->mu);
        }
        int busy = 0;
        for (int b = 0; b < e->n_slots; b++) {
            srv_req *r = e->slot[b];
            e->pos[b] = r ? r->pos : -1;
            e->tok[b] = r ? r->last : 0;
            busy += r != NULL;
        }
        if (!busy) {
            /* a request that came while a prompt was evaluated (unlocked) and finished at once
             * found the engine awake: its signal is gone, so look at the queue again */
            if (e->q_head || e->ops) continue;
            if (e->stopping) break;
            pthread_cond_wait(&e->cv, &e->mu);
            continue;
        }
        /* 3. one batched step for every busy slot without a draft */
        pthread_mutex_unlock(&e->mu);
        for (int b = 0; e->spec && b < e->n_slots; b++) {
            e->sk[b] = e->pos[b] >= 0 && e->slot[b] ? spec_draft(e, e->slot[b], b) : 0;
            if (e->sk[b] > 0) {
                e->pos[b] = -1;
                busy--;
            }
        }
        /* one pass per adapter set among the busy slots (one pass without adapters) */
        memcpy(e->pos_all, e->pos, (size_t)e->n_slots * sizeof *e->pos);
        for (;;) {
            int lead = -1;
            for (int b = 0; b < e->n_slots && lead < 0; b++)
                if (e->pos_all[b] >= 0 && e->slot[b]) lead = b;
            if (lead < 0) break;
            busy = 0;
            for (int b = 0; b < e->n_slots; b++) {
                int with = e->pos_all[b] >= 0 && e->slot[b] &&
                           lora_same(e, e->slot[b]->lora, e->slot[lead]->lora);
                e->pos[b] = with ? e->pos_all[b] : -1;
                if (with) e->pos_all[b] = -1, busy++;
            }
            double t0 = now_s();
            vkf_status st = lora_use(e, e->slot[lead]->lora);
            if (st == VKF_OK) st = vkf_session_seq_decode(e->s, e->tok, e->pos, e->logits);
            double dt = now_s() - t0;
            pthread_mutex_lock(&e->mu);
            e->st.n_steps += busy > 0;
            e->st.n_busy_total += (uint64_t)busy;
            e->st.n_decoded += (uint64_t)busy;
            e->st.n_bucket_decoded += (uint64_t)busy;
            e->st.t_decode += dt;
            e->st.t_bucket_decode += dt;
            pthread_mutex_unlock(&e->mu);
            char msg[512];
            snprintf(msg, sizeof msg, "%s", st == VKF_OK ? "" : vkf_last_error());
            for (int b = 0; b < e->n_slots; b++) {
                if (e->pos[b] < 0) continue;
                srv_req *r = e->slot[b]; /* only this thread empties slots */
                if (!r) continue;
                if (st != VKF_OK) {
                    e->ctok_n[b] = 0;
                    pthread_mutex_lock(&e->mu);
                    snprintf(r->err, sizeof r->err, "%s", msg);
                    finish(e, r, SRV_FINISH_ERROR);
                    pthread_mutex_unlock(&e->mu);
                    continue;
                }
                cache_note(e, b, r->pos, r->last);
                r->pos++; /* r->last is in the cache now */
                take_token(e, r, e->logits + (size_t)b * e->n_vocab);
            }
        }
        /* 4. each slot with a draft: its check pass (with its adapter set) */
        for (int b = 0; e->spec && b < e->n_slots; b++) {
            if (e->sk[b] > 0 && e->slot[b] && lora_use(e, e->slot[b]->lora) != VKF_OK) {
                pthread_mutex_lock(&e->mu);
                snprintf(e->slot[b]->err, sizeof e->slot[b]->err, "%s", vkf_last_error());
                finish(e, e->slot[b], SRV_FINISH_ERROR);
                pthread_mutex_unlock(&e->mu);
                continue;
            }
            spec_check(e, b);
        }
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

vkf_status srv_engine_start(vkf_model *m, const srv_engine_params *p, srv_engine **out) {
    srv_engine *e = calloc(1, sizeof *e);
    if (!e) return VKF_ERROR_OUT_OF_MEMORY;
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    e->m = m;
    e->n_slots = p->n_slots;
    e->n_ctx = p->n_ctx;
    e->n_vocab = d.n_vocab;
    e->queue_max = p->queue_max;
    vkf_session_params sp = {.n_ctx = p->n_ctx,
                             .n_batch = p->n_slots,
                             .cache_type_k = p->cache_type_k,
                             .cache_type_v = p->cache_type_v};
    vkf_status st = vkf_session_create(m, &sp, &e->s);
    e->slot = calloc((size_t)e->n_slots, sizeof *e->slot);
    e->logits = malloc((size_t)e->n_slots * (size_t)e->n_vocab * sizeof *e->logits);
    e->tok = calloc((size_t)e->n_slots, sizeof *e->tok);
    e->pos = calloc((size_t)e->n_slots, sizeof *e->pos);
    e->ctok = malloc((size_t)e->n_slots * (size_t)e->n_ctx * sizeof *e->ctok);
    e->ctok_n = calloc((size_t)e->n_slots, sizeof *e->ctok_n);
    e->used = calloc((size_t)e->n_slots, sizeof *e->used);
    e->kv_pub = calloc((size_t)e->n_slots, sizeof *e->kv_pub);
    e->prev = calloc((size_t)e->n_slots, sizeof *e->prev);
    e->slot_lora = calloc((size_t)e->n_slots * SRV_MAX_LORA, sizeof *e->slot_lora);
    e->pos_all = calloc((size_t)e->n_slots, sizeof *e->pos_all);
    e->n_lora = p->n_lora < SRV_MAX_LORA ? p->n_lora : SRV_MAX_LORA;
    for (int i = 0; i < e->n_lora; i++) {
        e->lora[i] = p->lora[i];
        e->lora_path[i] = strdup(p->lora_path[i]);
        e->lora_global[i] = p->lora_scale[i];
        if (!e->lora_path[i]) st = VKF_ERROR_OUT_OF_MEMORY;
    }
    if (st == VKF_OK && (!e->slot_lora || !e->pos_all)) st = VKF_ERROR_OUT_OF_MEMORY;
    if (st == VKF_OK && (!e->slot || !e->logits || !e->tok || !e->pos || !e->ctok || !e->ctok_n ||
                         !e->used || !e->kv_pub || !e->prev))
        st = VKF_ERROR_OUT_OF_MEMORY;
    if (st == VKF_OK && (p->spec_ngram || p->draft)) {
        e->spec = 1;
        e->draft_max = p->draft_max;
        e->draft_min = p->draft_min;
        e->ngram_n = p->ngram_n;
        e->sdraft = malloc((size_t)e->n_slots * (size_t)(e->draft_max + 1) * sizeof *e->sdraft);
        e->sk = calloc((size_t)e->n_slots, sizeof *e->sk);
        e->hist = malloc(((size_t)e->n_ctx + 1) * sizeof *e->hist);
        e->srows = malloc((size_t)(e->draft_max + 1) * (size_t)e->n_vocab * sizeof *e->srows);
        if (!e->sdraft || !e->sk || !e->hist || !e->srows) st = VKF_ERROR_OUT_OF_MEMORY;
        if (st == VKF_OK && p->draft) {
            e->dr = calloc((size_t)e->n_slots, sizeof *e->dr);
            if (!e->dr) st = VKF_ERROR_OUT_OF_MEMORY;
            for (int b = 0; st == VKF_OK && b < e->n_slots; b++)
                st = srv_draft_new(p->draft, e->n_ctx, p->cache_type_k, p->cache_type_v, e->n_vocab,
                                   p->draft_p_min, &e->dr[b]);
        }
    }
    /* warm-up: builds the batched step's graphs now (and fails here if it cannot): of 1, 2,
     * 4, ... busy slots and of all of them, which compiles the kernels of every width a step
     * takes (its activation rows go by powers of two), so the first lone request or the first
     * full house does not wait for them. Each slot is empty, so writing its row 0 costs
     * nothing. */
    for (int k = 1; st == VKF_OK && k <= e->n_slots;
         k = k < e->n_slots && 2 * k > e->n_slots ? e->n_slots : 2 * k) {
        for (int b = 0; b < e->n_slots; b++)
            e->pos[b] = b < k ? 0 : -1;
        st = vkf_session_seq_decode(e->s, e->tok, e->pos, e->logits);
    }
    if (st == VKF_OK) {
        pthread_mutex_init(&e->mu, NULL);
        pthread_cond_init(&e->cv, NULL);
        if (pthread_create(&e->thread, NULL, engine_main, e) != 0) {
            pthread_mutex_destroy(&e->mu);
            pthread_cond_destroy(&e->cv);
            st = VKF_ERROR_OUT_OF_MEMORY;
        }
    }
    if (st != VKF_OK) {
        vkf_session_free(e->s);
        free(e->slot);
        free(e->logits);
        free(e->tok);
        free(e->pos);
        free(e->ctok);
        free(e->ctok_n);
        free(e->used);
        free(e->kv_pub);
        free(e->prev);
        free(e->slot_lora);
        free(e->pos_all);
        for (int i = 0; i < e->n_lora; i++)
            free(e->lora_path[i]);
        free(e->sdraft);
        free(e->sk);
        free(e->hist);
        free(e->srows);
        drafts_free(e);
        free(e);
        return st;
    }
    *out = e;
    return VKF_OK;
}

void srv_engine_stop(srv_engine *e) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->stopping = 1;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    for (int b = 0; b < e->n_slots; b++)
        if (e->prev[b]) req_unref(e->prev[b]);
    vkf_session_free(e->s);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e->slot);
    free(e->logits);
    free(e->tok);
    free(e->pos);
    free(e->ctok);
    free(e->ctok_n);
    free(e->used);
    free(e->kv_pub);
    free(e->prev);
    free(e->sdraft);
    free(e->sk);
    free(e->hist);
    free(e->srows);
    drafts_free(e);
    free(e->slot_lora);
    free(e->pos_all);
    for (int i = 0; i < e->n_lora; i++)
        free(e->lora_path[i]);
    free(e);
}

/* ------------------------------------------------------------------ /metrics and /slots */

void srv_engine_stats(srv_engine *e, srv_stats *out, int reset_bucket) {
    pthread_mutex_lock(&e->mu);
    *out = e->st;
    out->n_slots = e->n_slots;
    out->busy = 0;
    out->kv_tokens = 0;
    for (int b = 0; b < e->n_slots; b++) {
        out->busy += e->slot[b] != NULL;
        out->kv_tokens += e->kv_pub[b];
    }
    out->queued = e->n_queued;
    out->kv_size = (int64_t)e->n_slots * e->n_ctx;
    if (reset_bucket) {
        e->st.n_bucket_prompt = e->st.n_bucket_decoded = 0;
        e->st.t_bucket_prompt = e->st.t_bucket_decode = 0.0;
    }
    pthread_mutex_unlock(&e->mu);
}

void srv_slot_info_free(srv_slot_info *s, int n) {
    if (!s) return;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < s[i].n_stops; k++)
            free(s[i].stops[k]);
        free(s[i].prompt);
        free(s[i].generated);
    }
    free(s);
}

/* with the mutex held: r's fields that do not change after submit, its published counts and
 * the text of its events */
static int slot_copy(const srv_req *r, srv_slot_info *o) {
    o->task = r->task;
    o->n_prompt = r->n_prompt;
    o->n_cached = r->pub_cached;
    o->n_gen = r->pub_gen;
    o->max_tokens = r->max_tokens;
    o->stream = r->stream;
    o->n_probs = r->logprobs ? r->top_logprobs : 0;
    o->sp = r->sp;
    o->n_drafted = r->n_drafted;
    o->n_accepted = r->n_accepted;
    for (int k = 0; k < r->n_stops; k++)
        if ((o->stops[o->n_stops] = strdup(r->stops[k]))) o->n_stops++;
    o->prompt = malloc((size_t)r->n_prompt * sizeof *o->prompt);
    size_t len = 0;
    for (int i = 0; i < r->n_ev; i++)
        len += r->ev[i].len;
    o->generated = malloc(len + 1);
    if (!o->prompt || !o->generated) return -1;
    memcpy(o->prompt, r->prompt, (size_t)r->n_prompt * sizeof *o->prompt);
    len = 0;
    for (int i = 0; i < r->n_ev; i++) {
        if (r->ev[i].len) memcpy(o->generated + len, r->ev[i].text, r->ev[i].len);
        len += r->ev[i].len;
    }
    o->generated[len] = '\0';
    return 0;
}

srv_slot_info *srv_engine_slots(srv_engine *e) {
    srv_slot_info *s = calloc((size_t)e->n_slots, sizeof *s);
    if (!s) return NULL;
    int fail = 0;
    pthread_mutex_lock(&e->mu);
    for (int b = 0; b < e->n_slots; b++) {
        const srv_req *r = e->slot[b] ? e->slot[b] : e->prev[b];
        s[b].id = b;
        s[b].busy = e->slot[b] != NULL;
        s[b].n_ctx = e->n_ctx;
        s[b].speculative = e->spec;
        s[b].task = -1;
        if (r && slot_copy(r, &s[b]) != 0) fail = 1;
    }
    pthread_mutex_unlock(&e->mu);
    if (fail) {
        srv_slot_info_free(s, e->n_slots);
        return NULL;
    }
    return s;
}
