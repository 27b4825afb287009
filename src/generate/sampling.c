/* Sampling: the sampler chain (llama.cpp's order) and text-level stop strings.
 *
 * The sampler is deterministic for a given seed: a splitmix64 generator, candidates ordered by
 * (logit descending, id ascending), probabilities in double. The chain, in llama.cpp's default
 * order (common/sampling: penalties, top_k, typical_p, top_p, min_p, temperature, dist):
 *
 *   1. penalties over the last penalty_last_n accepted tokens, for each seen token t with
 *      count c:  l[t] = l[t] > 0 ? l[t] / repeat : l[t] * repeat;  l[t] -= c*freq + presence
 *   2. top_k:     the k best logits
 *   3. typical_p: softmax p at T = 1, entropy H; keep the shortest list, ordered by |-log p - H|
 *                 ascending, whose mass reaches typical_p
 *   4. top_p:     softmax at T = 1; the shortest prefix (best first) whose mass reaches top_p
 *   5. min_p:     keep p >= min_p * p_max (softmax at T = 1)
 *   6. temperature: l / T, softmax, draw one (T <= 0: the argmax of the penalized logits) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "generate/sampling.h"
#include "model/model.h"
#include "structured/grammar.h"
#include "tokenizer/tokenizer.h"

struct vkf_sampler {
    vkf_sampler_params p;
    uint64_t state; /* splitmix64 */
    vkf_cand *c;    /* [cap] candidates */
    double *prob;   /* [cap] */
    int32_t cap;
    int32_t *hist; /* ring of the last n_hist accepted tokens */
    int32_t n_hist, hist_cap, hist_pos;
    float *pen;   /* [pen_cap] penalized copy of the logits */
    int32_t *cnt; /* [pen_cap] occurrences in the window (zero between calls) */
    int32_t pen_cap;
    vkf_grammar *gr; /* constrained sampling (structured/grammar.c), or NULL */
    float *gl;       /* [gl_cap] the logits with the grammar's mask applied */
    int32_t gl_cap;
};

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 random bits */
static double rng_uniform(uint64_t *s) {
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static int penalties_on(const vkf_sampler_params *p) {
    return (p->repeat_penalty > 0 && p->repeat_penalty != 1.0f) || p->presence_penalty != 0 ||
           p->frequency_penalty != 0;
}

vkf_status vkf_sampler_create(const vkf_sampler_params *p, vkf_sampler **out) {
    return vkf_sampler_create_ex(NULL, p, out);
}

static int model_is_eog(const void *m, int32_t token) { return vkf_model_is_eog(m, token); }

/* A grammar over the model's vocabulary: what the grammar code needs of the model, as data and
 * a callback; the cache lives in the model (its mutable part, like tok_lock). */
static vkf_status grammar_create(const vkf_model *m, const char *text, const char *root,
                                 vkf_grammar **out) {
    vkf_model *mm = (vkf_model *)m;
    vkf_grammar_vocab v = {.name = m->path,
                           .tok = mm->tok,
                           .tok_lock = &mm->tok_lock,
                           .n_vocab = m->hp.n_vocab,
                           .is_eog = model_is_eog,
                           .user = m,
                           .cache = &mm->gcache};
    return vkf_grammar_create(&v, text, root, out);
}

vkf_status vkf_sampler_create_ex(const vkf_model *m, const vkf_sampler_params *p,
                                 vkf_sampler **out) {
    vkf_sampler_params def = {0};
    if (!p) p = &def;
    if (p->top_k < 0 || p->top_p < 0 || isnan(p->temp) || isnan(p->top_p))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "sampler: top_k %d and top_p %g must be >= 0",
                         p->top_k, (double)p->top_p);
    if (!(p->min_p >= 0 && p->min_p <= 1) || !(p->typical_p >= 0))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "sampler: min_p %g must be in [0, 1] and typical_p %g >= 0",
                         (double)p->min_p, (double)p->typical_p);
    if (!(p->repeat_penalty >= 0) || isnan(p->presence_penalty) || isnan(p->frequency_penalty) ||
        p->penalty_last_n < -1)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "sampler: repeat_penalty %g must be >= 0 (0 or 1: off), penalty_last_n %d "
                         ">= -1",
                         (double)p->repeat_penalty, p->penalty_last_n);
    vkf_sampler *s = calloc(1, sizeof *s);
    if (!s) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "sampler: out of host memory");
    s->p = *p;
    s->state = p->seed;
    if (p->grammar && *p->grammar) {
        vkf_status st = m ? grammar_create(m, p->grammar, p->grammar_root, &s->gr)
                          : vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                                      "sampler: a grammar needs the model's vocabulary: create "
                                      "the sampler with vkf_sampler_create_ex");
        if (st != VKF_OK) {
            free(s);
            return st;
        }
    }
    s->p.grammar = s->p.grammar_root = NULL; /* the caller's strings are not kept */
    *out = s;
    return VKF_OK;
}

int vkf_sampler_grammar_state(const vkf_sampler *s) {
    return s && s->gr ? vkf_grammar_state(s->gr) : VKF_GRAMMAR_NONE;
}

void vkf_sampler_free(vkf_sampler *s) {
    if (!s) return;
    free(s->c);
    free(s->prob);
    free(s->hist);
    free(s->pen);
    free(s->cnt);
    free(s->gl);
    vkf_grammar_free(s->gr);
    free(s);
}

vkf_status vkf_sampler_accept(vkf_sampler *s, int32_t token) {
    if (!penalties_on(&s->p)) return VKF_OK;
    int32_t want = s->p.penalty_last_n == 0 ? 64 : s->p.penalty_last_n; /* -1: no limit */
    if (s->n_hist == s->hist_cap && (want < 0 || s->hist_cap < want)) { /* grow the ring */
        int32_t ncap = s->hist_cap ? s->hist_cap * 2 : 64;
        if (want > 0 && ncap > want) ncap = want;
        int32_t *h = malloc((size_t)ncap * sizeof *h);
        if (!h) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "sampler: out of host memory");
        for (int32_t i = 0; i < s->n_hist; i++)
            h[i] = s->hist[(s->hist_pos + i) % s->hist_cap];
        free(s->hist);
        s->hist = h;
        s->hist_pos = 0;
        s->hist_cap = ncap;
    }
    if (s->n_hist < s->hist_cap) {
        s->hist[(s->hist_pos + s->n_hist) % s->hist_cap] = token;
        s->n_hist++;
    } else { /* full: overwrite the oldest */
        s->hist[s->hist_pos] = token;
        s->hist_pos = (s->hist_pos + 1) % s->hist_cap;
    }
    return VKF_OK;
}

void vkf_sampler_reset(vkf_sampler *s) {
    s->n_hist = 0;
    s->hist_pos = 0;
    s->state = s->p.seed;
    if (s->gr) vkf_grammar_reset(s->gr);
}

/* a ranks before b: higher logit, then lower id */
static int cand_before(const vkf_cand *a, const vkf_cand *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int cand_cmp(const void *x, const void *y) {
    const vkf_cand *a = x, *b = y;
    return cand_before(a, b) ? -1 : cand_before(b, a) ? 1 : 0;
}

void vkf_select_top_k(const float *v, int32_t n, int32_t k, vkf_cand *c) {
    int32_t size = 0;
    for (int32_t i = 0; i < n; i++) {
        vkf_cand x = {v[i], i};
        if (size == k) {
            if (!cand_before(&x, &c[0])) continue;
            c[0] = x; /* replace the worst, sift down */
            int32_t j = 0;
            for (;;) {
                int32_t l = 2 * j + 1, r = l + 1, w = j;
                if (l < size && cand_before(&c[w], &c[l])) w = l;
                if (r < size && cand_before(&c[w], &c[r])) w = r;
                if (w == j) break;
                vkf_cand t = c[j];
                c[j] = c[w];
                c[w] = t;
                j = w;
            }
        } else { /* push, sift up */
            int32_t j = size++;
            c[j] = x;
            while (j > 0 && cand_before(&c[(j - 1) / 2], &c[j])) {
                vkf_cand t = c[j];
                c[j] = c[(j - 1) / 2];
                c[(j - 1) / 2] = t;
                j = (j - 1) / 2;
            }
        }
    }
    qsort(c, (size_t)size, sizeof *c, cand_cmp);
}

int32_t vkf_argmax_f32(const float *v, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (v[i] > v[best]) best = i; /* strict: ties keep the lowest id */
    return best;
}

/* penalties (step 1) into s->pen; returns the logits to use. s->cnt counts each token of the
 * window; a token is penalized once, when its count is first seen, then its count is cleared. */
static const float *apply_penalties(vkf_sampler *s, const float *logits, int32_t n_vocab) {
    if (!penalties_on(&s->p) || s->n_hist == 0) return logits;
    memcpy(s->pen, logits, (size_t)n_vocab * sizeof *logits);
    float rep = s->p.repeat_penalty > 0 ? s->p.repeat_penalty : 1.0f;
    for (int32_t i = 0; i < s->n_hist; i++) {
        int32_t t = s->hist[(s->hist_pos + i) % s->hist_cap];
        if (t >= 0 && t < n_vocab) s->cnt[t]++;
    }
    for (int32_t i = 0; i < s->n_hist; i++) {
        int32_t t = s->hist[(s->hist_pos + i) % s->hist_cap];
        if (t < 0 || t >= n_vocab || s->cnt[t] == 0) continue;
        float l = s->pen[t];
        l = l > 0 ? l / rep : l * rep;
        s->pen[t] = l - (float)s->cnt[t] * s->p.frequency_penalty - s->p.presence_penalty;
        s->cnt[t] = 0;
    }
    return s->pen;
}

/* softmax at T = 1 of c[0..k) (sorted best first) into prob; returns the sum */
static double softmax_t1(const vkf_cand *c, int32_t k, double *prob) {
    double sum = 0.0;
    for (int32_t i = 0; i < k; i++) {
        prob[i] = exp((double)c[i].logit - (double)c[0].logit);
        sum += prob[i];
    }
    return sum;
}

typedef struct typ_item {
    double score;
    int32_t i;
} typ_item;

static int typ_cmp(const void *x, const void *y) {
    const typ_item *a = x, *b = y;
    if (a->score != b->score) return a->score < b->score ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* typical_p (step 3): reorders c[0..k) by typicality, keeps a prefix; returns the new k */
static vkf_status apply_typical(vkf_sampler *s, int32_t *k) {
    int32_t n = *k;
    double sum = softmax_t1(s->c, n, s->prob), ent = 0.0;
    for (int32_t i = 0; i < n; i++) {
        double p = s->prob[i] / sum;
        if (p > 0) ent -= p * log(p);
    }
    typ_item *t = malloc((size_t)n * sizeof *t);
    vkf_cand *tmp = malloc((size_t)n * sizeof *tmp);
    if (!t || !tmp) {
        free(t);
        free(tmp);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "sampler: out of host memory");
    }
    for (int32_t i = 0; i < n; i++)
        t[i] = (typ_item){fabs(-log(s->prob[i] / sum) - ent), i};
    qsort(t, (size_t)n, sizeof *t, typ_cmp);
    double acc = 0.0;
    int32_t keep = n;
    for (int32_t i = 0; i < n; i++) {
        acc += s->prob[t[i].i] / sum;
        if (acc >= s->p.typical_p) {
            keep = i + 1;
            break;
        }
    }
    for (int32_t i = 0; i < keep; i++)
        tmp[i] = s->c[t[i].i];
    qsort(tmp, (size_t)keep, sizeof *tmp, cand_cmp); /* back to best first */
    memcpy(s->c, tmp, (size_t)keep * sizeof *tmp);
    free(t);
    free(tmp);
    *k = keep;
    return VKF_OK;
}

static vkf_status sample_chain(vkf_sampler *s, const float *logits, int32_t n_vocab,
                               int32_t *token);

vkf_status vkf_sampler_sample(vkf_sampler *s, const float *logits, int32_t n_vocab,
                              int32_t *token) {
    if (!s->gr) return sample_chain(s, logits, n_vocab, token);
    if (n_vocab < 1) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "sampler: empty vocabulary");
    /* greedy: the argmax of the penalized logits is the answer whenever the grammar allows it
     * (the argmax among allowed tokens is then the same token), so the mask is computed only
     * when it does not */
    vkf_status st = VKF_ERROR_INVALID_ARGUMENT;
    if (!(s->p.temp > 0)) {
        st = sample_chain(s, logits, n_vocab, token);
        if (st != VKF_OK) return st;
        st = vkf_grammar_allows(s->gr, *token) ? VKF_OK : VKF_ERROR_INVALID_ARGUMENT;
    }
    if (st != VKF_OK) {
        if (s->gl_cap < n_vocab) {
            float *g = realloc(s->gl, (size_t)n_vocab * sizeof *g);
            if (!g) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "sampler: out of host memory");
            s->gl = g;
            s->gl_cap = n_vocab;
        }
        memcpy(s->gl, logits, (size_t)n_vocab * sizeof *logits);
        VKF_TRY(vkf_grammar_apply(s->gr, s->gl, n_vocab));
        VKF_TRY(sample_chain(s, s->gl, n_vocab, token));
        /* a draw that rounding left on a masked (-inf) tail: the best allowed token instead */
        if (!(s->gl[*token] > -INFINITY)) *token = vkf_argmax_f32(s->gl, n_vocab);
    }
    return vkf_grammar_accept(s->gr, *token);
}

static vkf_status sample_chain(vkf_sampler *s, const float *logits, int32_t n_vocab,
                               int32_t *token) {
    if (n_vocab < 1) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "sampler: empty vocabulary");
    if (s->cap < n_vocab) {
        vkf_cand *c = realloc(s->c, (size_t)n_vocab * sizeof *c);
        if (c) s->c = c;
        double *pr = realloc(s->prob, (size_t)n_vocab * sizeof *pr);
        if (pr) s->prob = pr;
        if (!c || !pr) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "sampler: out of host memory");
        s->cap = n_vocab;
    }
    if (penalties_on(&s->p) && s->pen_cap < n_vocab) {
        float *pen = realloc(s->pen, (size_t)n_vocab * sizeof *pen);
        if (pen) s->pen = pen;
        int32_t *cnt = calloc((size_t)n_vocab, sizeof *cnt);
        if (!pen || !cnt) {
            free(cnt);
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "sampler: out of host memory");
        }
        free(s->cnt);
        s->cnt = cnt;
        s->pen_cap = n_vocab;
    }
    const float *l = apply_penalties(s, logits, n_vocab);
    if (!(s->p.temp > 0)) {
        *token = vkf_argmax_f32(l, n_vocab);
        return VKF_OK;
    }
    int32_t k = s->p.top_k > 0 && s->p.top_k < n_vocab ? s->p.top_k : n_vocab;
    vkf_select_top_k(l, n_vocab, k, s->c);
    if (s->p.typical_p > 0 && s->p.typical_p < 1) VKF_TRY(apply_typical(s, &k));
    if (s->p.top_p > 0 && s->p.top_p < 1) { /* nucleus: the shortest prefix reaching top_p */
        double sum = softmax_t1(s->c, k, s->prob), acc = 0.0;
        for (int32_t i = 0; i < k; i++) {
            acc += s->prob[i] / sum;
            if (acc >= s->p.top_p) {
                k = i + 1;
                break;
            }
        }
    }
    if (s->p.min_p > 0) { /* p_i >= min_p * p_max  <=>  l_i - l_max >= log(min_p) */
        double floor = log((double)s->p.min_p);
        int32_t keep = 1;
        while (keep < k && (double)s->c[keep].logit - (double)s->c[0].logit >= floor)
            keep++;
        k = keep;
    }
    /* temperature, then draw: softmax over the survivors (max subtracted: exp overflows) */
    double sum = 0.0, inv_t = 1.0 / (double)s->p.temp;
    for (int32_t i = 0; i < k; i++) {
        s->prob[i] = exp(((double)s->c[i].logit - (double)s->c[0].logit) * inv_t);
        sum += s->prob[i];
    }
    double u = rng_uniform(&s->state) * sum, acc = 0.0;
    *token = s->c[k - 1].id;
    for (int32_t i = 0; i < k; i++) {
        acc += s->prob[i];
        if (u < acc) {
            *token = s->c[i].id;
            break;
        }
    }
    return VKF_OK;
}

/* ------------------------------------------------------------------ stop strings */

#define VKF_STOP_MAX 16

struct vkf_stopper {
    char *stops[VKF_STOP_MAX];
    size_t stop_len[VKF_STOP_MAX];
    int n_stops;
    char *buf; /* held text: may still begin a stop string, or an unfinished UTF-8 sequence */
    size_t len, cap;
    size_t emitted; /* bytes of buf handed out by the last call (dropped at the next one) */
    int stopped;
};

vkf_status vkf_stopper_create(const char *const *stops, int n_stops, vkf_stopper **out) {
    if (n_stops < 0 || n_stops > VKF_STOP_MAX || (n_stops > 0 && !stops))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "stop strings: %d given, at most %d", n_stops,
                         VKF_STOP_MAX);
    vkf_stopper *st = calloc(1, sizeof *st);
    if (!st) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "stop strings: out of host memory");
    for (int i = 0; i < n_stops; i++) {
        if (!stops[i] || !stops[i][0]) continue; /* an empty stop string never matches */
        st->stops[st->n_stops] = strdup(stops[i]);
        if (!st->stops[st->n_stops]) {
            vkf_stopper_free(st);
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "stop strings: out of host memory");
        }
        st->stop_len[st->n_stops++] = strlen(stops[i]);
    }
    *out = st;
    return VKF_OK;
}

void vkf_stopper_free(vkf_stopper *st) {
    if (!st) return;
    for (int i = 0; i < st->n_stops; i++)
        free(st->stops[i]);
    free(st->buf);
    free(st);
}

/* bytes at the end of b[0..n) that start a UTF-8 sequence not yet complete */
static size_t utf8_incomplete_tail(const unsigned char *b, size_t n) {
    for (size_t back = 1; back <= 4 && back <= n; back++) {
        unsigned char c = b[n - back];
        if ((c & 0xC0) == 0x80) continue; /* continuation byte: look further back */
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return need > back ? back : 0;
    }
    return 0;
}

int vkf_stopper_push(vkf_stopper *st, const char *piece, size_t len, const char **emit,
                     size_t *emit_len) {
    *emit = "";
    *emit_len = 0;
    if (st->stopped) return 1;
    /* drop what the previous call handed out */
    if (st->emitted) memmove(st->buf, st->buf + st->emitted, st->len - st->emitted);
    st->len -= st->emitted;
    st->emitted = 0;
    if (st->len + len + 1 > st->cap) {
        size_t ncap = (st->len + len + 1) * 2;
        char *b = realloc(st->buf, ncap);
        if (!b) { /* cannot hold text back: stop, handing out what there is */
            st->stopped = 1;
            *emit = st->buf ? st->buf : "";
            *emit_len = st->len;
            st->emitted = st->len;
            return 1;
        }
        st->buf = b;
        st->cap = ncap;
    }
    memcpy(st->buf + st->len, piece, len);
    st->len += len;
    st->buf[st->len] = '\0';
    /* the earliest complete stop string ends the text just before it */
    size_t best = (size_t)-1;
    for (int i = 0; i < st->n_stops; i++) {
        const char *hit = NULL;
        for (size_t p = 0; p + st->stop_len[i] <= st->len; p++)
            if (memcmp(st->buf + p, st->stops[i], st->stop_len[i]) == 0) {
                hit = st->buf + p;
                break;
            }
        if (hit && (size_t)(hit - st->buf) < best) best = (size_t)(hit - st->buf);
    }
    if (best != (size_t)-1) {
        st->stopped = 1;
        *emit = st->buf;
        *emit_len = best;
        st->emitted = st->len;
        return 1;
    }
    /* hold back the longest suffix that begins some stop string, and an unfinished character */
    size_t hold = 0;
    for (int i = 0; i < st->n_stops; i++) {
        size_t m = st->stop_len[i] - 1 < st->len ? st->stop_len[i] - 1 : st->len;
        for (; m > hold; m--)
            if (memcmp(st->buf + st->len - m, st->stops[i], m) == 0) break;
        if (m > hold) hold = m;
    }
    size_t u = utf8_incomplete_tail((const unsigned char *)st->buf, st->len);
    if (u > hold) hold = u;
    *emit = st->buf;
    *emit_len = st->len - hold;
    st->emitted = *emit_len;
    return 0;
}

void vkf_stopper_flush(vkf_stopper *st, const char **emit, size_t *emit_len) {
    if (st->stopped || !st->buf) {
        *emit = "";
        *emit_len = 0;
        return;
    }
    *emit = st->buf + st->emitted;
    *emit_len = st->len - st->emitted;
    st->emitted = st->len;
}

/* ------------------------------------------------------------------ end of generation */

/* The model's EOS or any end-of-generation token of its tokenizer (vkf_tokenizer_is_eog:
 * <|eot_id|>, <|im_end|>, <end_of_turn>, ...). */
int vkf_model_is_eog(const vkf_model *m, int32_t token) {
    if (!m || token < 0) return 0;
    return token == m->hp.eos_id || (m->tok && vkf_tokenizer_is_eog(m->tok, token));
}
