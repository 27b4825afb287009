/* Speculative decoding: a drafter proposes the next tokens (n-gram prompt lookup, or a smaller
 * draft model with the same vocabulary), the target model checks them all in one batched pass,
 * and the positions it rejects are dropped from its KV cache.
 *
 * vkf_spec_eval stands in for vkf_session_eval_last(s, &token, 1, logits) in a decoding loop:
 * it appends `token` and hands back the logits after it. When the caller's sampler then draws
 * the token the drafter proposed next, the logits after it come from the rows already computed
 * (no pass); when it draws another token, the cache is cut back to the tokens accepted and a
 * new pass starts from the drawn one. The caller samples every token from the target's own
 * logits with its own sampler, in order, one draw per token: this is speculative sampling's
 * rejection rule for a draft that proposes one token with certainty (q = one-hot at d): d is
 * kept with probability min(1, p(d)/q(d)) = p(d), and on a rejection the replacement is drawn
 * from norm(max(0, p - q)) = p without d (Leviathan et al. 2023, Chen et al. 2023), which is
 * exactly what drawing x ~ p and keeping d iff x == d does. So the tokens are distributed as
 * without speculation, at any temperature and with any sampler chain (penalties, grammar), and
 * for a given seed they are the same tokens. Both drafters here are deterministic (the draft
 * model's proposal is its argmax, as llama.cpp's greedy draft). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "generate/sampling.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

/* llama.cpp's limits (common/speculative.cpp): the vocabularies may differ by this many tokens
 * at the end, and the texts are compared from this id on (the first ids are the specials whose
 * texts differ between otherwise equal vocabularies) */
#define SPEC_VOCAB_MAX_SIZE_DIFFERENCE 128
#define SPEC_VOCAB_CHECK_START_TOKEN_ID 5
/* the draft model's proposal probability is its top token's among its 10 best (llama.cpp's draft
 * sampler: top_k 10) */
#define SPEC_DRAFT_TOP_K 10

struct vkf_spec {
    vkf_spec_params p;
    vkf_model *m; /* target */
    int32_t V;    /* target vocabulary */
    vkf_session *s;
    int32_t *hist; /* the sequence so far (context given to begin + every token evaluated) */
    int32_t n_hist, hist_cap;
    /* the last verification pass: batch[0..n_batch) at positions base.., rows[i] the logits
     * after batch[i]; batch[used] is the next token the pass already holds */
    int32_t *batch;
    float *rows;
    int32_t n_batch, base, used, pending;
    int32_t *draft; /* [n_max] */
    /* draft model */
    vkf_session *ds;
    int32_t *ds_tok; /* the tokens ds holds */
    int32_t ds_n, ds_cap;
    float *dlog;
    vkf_cand top[SPEC_DRAFT_TOP_K];
    int32_t limit; /* most tokens to draft (vkf_spec_limit), < 0: none */
    int64_t n_drafted, n_accepted, n_passes;
};

static const char *kind_of(const vkf_model *m) {
    return m->tok ? vkf_tokenizer_kind(m->tok) : "none";
}

vkf_status vkf_spec_check_vocab(const vkf_model *target, const vkf_model *draft) {
    if (!target || !draft)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "speculative: NULL target or draft model");
    const char *tp = target->path, *dp = draft->path;
    if (target->arch == VKF_ARCH_TRANSFORMER || draft->arch == VKF_ARCH_TRANSFORMER ||
        target->arch == VKF_ARCH_ENCODER || draft->arch == VKF_ARCH_ENCODER)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: %s: target and draft must both be decoder-only models",
                         target->arch == VKF_ARCH_DECODER ? dp : tp);
    if (!target->tok || !draft->tok)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: %s has no tokenizer: its vocabulary cannot be compared",
                         target->tok ? dp : tp);
    const vkf_tokenizer *tt = target->tok, *dt = draft->tok;
    if (strcmp(kind_of(target), kind_of(draft)) != 0)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: draft model %s has a %s vocabulary, the target %s a %s one",
                         dp, kind_of(draft), tp, kind_of(target));
    int ab_t = vkf_tokenizer_add_bos(tt), ab_d = vkf_tokenizer_add_bos(dt);
    if (ab_t != ab_d || (ab_t && vkf_tokenizer_bos(tt) != vkf_tokenizer_bos(dt)))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: draft model %s: add_bos %d, BOS id %d; the target %s: "
                         "add_bos %d, BOS id %d",
                         dp, ab_d, vkf_tokenizer_bos(dt), tp, ab_t, vkf_tokenizer_bos(tt));
    int ae_t = vkf_tokenizer_add_eos(tt), ae_d = vkf_tokenizer_add_eos(dt);
    if (ae_t != ae_d || (ae_t && vkf_tokenizer_eos(tt) != vkf_tokenizer_eos(dt)))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: draft model %s: add_eos %d, EOS id %d; the target %s: "
                         "add_eos %d, EOS id %d",
                         dp, ae_d, vkf_tokenizer_eos(dt), tp, ae_t, vkf_tokenizer_eos(tt));
    int32_t nt = target->hp.n_vocab, nd = draft->hp.n_vocab;
    int32_t diff = nt > nd ? nt - nd : nd - nt;
    if (diff > SPEC_VOCAB_MAX_SIZE_DIFFERENCE)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: draft model %s has %d tokens, the target %s %d: they may "
                         "differ by at most %d",
                         dp, nd, tp, nt, SPEC_VOCAB_MAX_SIZE_DIFFERENCE);
    int32_t n = nt < nd ? nt : nd;
    for (int32_t i = SPEC_VOCAB_CHECK_START_TOKEN_ID; i < n; i++) {
        const char *a = vkf_tokenizer_token_text(tt, i), *b = vkf_tokenizer_token_text(dt, i);
        if (!a || !b || strcmp(a, b) != 0)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "speculative: draft model %s: token %d is '%.64s', the target %s "
                             "has '%.64s': the vocabularies differ",
                             dp, i, b ? b : "(none)", tp, a ? a : "(none)");
    }
    return VKF_OK;
}

void vkf_spec_params_default(vkf_spec_params *p) {
    memset(p, 0, sizeof *p);
    p->n_max = 16;
    p->n_min = 0;
    p->p_min = 0.75f;
    p->ngram_n = 3;
}

vkf_status vkf_spec_create(vkf_model *target, const vkf_spec_params *p, vkf_spec **out) {
    if (!target || !p || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "speculative: NULL model, params or output");
    *out = NULL;
    if (p->type != VKF_SPEC_NGRAM && p->type != VKF_SPEC_DRAFT)
        return vkf_error(
            VKF_ERROR_INVALID_ARGUMENT,
            "speculative: type %d is neither n-gram lookup (%d) nor a draft model (%d)", p->type,
            VKF_SPEC_NGRAM, VKF_SPEC_DRAFT);
    if (p->n_max < 1)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: draft-max %d: at least 1 token must be drafted per step",
                         p->n_max);
    if (p->n_min < 0 || p->n_min > p->n_max)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: draft-min %d must be in [0, draft-max %d]", p->n_min,
                         p->n_max);
    if (!(p->p_min >= 0 && p->p_min <= 1))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: draft-p-min %g must be in [0, 1]", (double)p->p_min);
    if (p->type == VKF_SPEC_NGRAM && p->ngram_n < 1)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: n-gram size %d must be at least 1", p->ngram_n);
    if (target->arch != VKF_ARCH_DECODER)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "speculative: %s is not a decoder-only model",
                         target->path);
    if (p->type == VKF_SPEC_DRAFT) {
        if (!p->draft)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "speculative: the draft-model type needs a draft model");
        VKF_TRY(vkf_spec_check_vocab(target, p->draft));
    }
    vkf_spec *sp = calloc(1, sizeof *sp);
    if (!sp) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "speculative: out of host memory");
    sp->p = *p;
    sp->m = target;
    sp->limit = -1;
    sp->V = target->hp.n_vocab;
    sp->batch = malloc((size_t)(p->n_max + 1) * sizeof *sp->batch);
    sp->draft = malloc((size_t)p->n_max * sizeof *sp->draft);
    sp->rows = malloc((size_t)(p->n_max + 1) * (size_t)sp->V * sizeof *sp->rows);
    if (p->type == VKF_SPEC_DRAFT)
        sp->dlog = malloc((size_t)p->draft->hp.n_vocab * sizeof *sp->dlog);
    if (!sp->batch || !sp->draft || !sp->rows || (p->type == VKF_SPEC_DRAFT && !sp->dlog)) {
        vkf_spec_free(sp);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "speculative: out of host memory");
    }
    *out = sp;
    return VKF_OK;
}

void vkf_spec_free(vkf_spec *sp) {
    if (!sp) return;
    free(sp->hist);
    free(sp->batch);
    free(sp->rows);
    free(sp->draft);
    vkf_session_free(sp->ds);
    free(sp->ds_tok);
    free(sp->dlog);
    free(sp);
}

void vkf_spec_limit(vkf_spec *sp, int32_t n) {
    if (sp) sp->limit = n;
}

int32_t vkf_spec_n_past(const vkf_spec *sp, const vkf_session *s) {
    if (sp && sp->s == s && sp->pending) return sp->base + sp->used;
    return vkf_session_n_past(s);
}

void vkf_spec_counts(const vkf_spec *sp, int64_t *drafted, int64_t *accepted) {
    if (drafted) *drafted = sp ? sp->n_drafted : 0;
    if (accepted) *accepted = sp ? sp->n_accepted : 0;
}

static vkf_status grow(int32_t **a, int32_t *cap, int32_t need) {
    if (need <= *cap) return VKF_OK;
    int32_t nc = *cap ? *cap : 256;
    while (nc < need)
        nc *= 2;
    int32_t *b = realloc(*a, (size_t)nc * sizeof *b);
    if (!b) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "speculative: out of host memory");
    *a = b;
    *cap = nc;
    return VKF_OK;
}

/* drops the rows of the last pass past the tokens accepted from it */
static vkf_status drop_pending(vkf_spec *sp) {
    if (!sp->pending) return VKF_OK;
    sp->pending = 0;
    return vkf_session_truncate(sp->s, sp->base + sp->used);
}

vkf_status vkf_spec_end(vkf_spec *sp) {
    if (!sp || !sp->s) return VKF_OK;
    return drop_pending(sp);
}

vkf_status vkf_spec_begin(vkf_spec *sp, vkf_session *s, const int32_t *context, int32_t n) {
    if (!sp || !s || n < 0 || (n > 0 && !context))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: NULL state or session, or a context of %d tokens", n);
    if (s->m != sp->m)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: the session is of %s, the state was made for %s", s->m->path,
                         sp->m->path);
    if (s->n_batch != 1)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: the session holds %d sequences; speculation runs on "
                         "single-sequence sessions",
                         s->n_batch);
    if (sp->s == s) VKF_TRY(drop_pending(sp)); /* another session's rows: vkf_spec_end's */
    sp->s = s;
    sp->pending = 0;
    VKF_TRY(grow(&sp->hist, &sp->hist_cap, n + 1));
    if (n) memcpy(sp->hist, context, (size_t)n * sizeof *context);
    sp->n_hist = n;
    if (sp->p.type == VKF_SPEC_DRAFT && (!sp->ds || vkf_session_n_ctx(sp->ds) < s->n_ctx)) {
        vkf_session_free(sp->ds);
        sp->ds = NULL;
        sp->ds_n = 0;
        int32_t dctx = s->n_ctx < sp->p.draft->hp.n_ctx ? s->n_ctx : sp->p.draft->hp.n_ctx;
        vkf_session_params dp = {.n_ctx = dctx};
        VKF_TRY(vkf_session_create(sp->p.draft, &dp, &sp->ds));
    }
    return VKF_OK;
}

/* Prompt lookup: the latest earlier occurrence of the history's last L tokens (L = ngram_n down
 * to 1), and the up to max tokens that followed it there. */
int32_t vkf_spec_ngram_draft(const int32_t *h, int32_t n, int32_t ngram_n, int32_t max,
                             int32_t *out) {
    if (!h || !out || max < 1) return 0;
    for (int32_t L = ngram_n < n - 1 ? ngram_n : n - 1; L >= 1; L--) {
        const int32_t *key = h + n - L;
        for (int32_t j = n - L - 1; j >= 0; j--) {
            if (memcmp(h + j, key, (size_t)L * sizeof *h) != 0) continue;
            int32_t k = n - (j + L) < max ? n - (j + L) : max;
            memcpy(out, h + j + L, (size_t)k * sizeof *h);
            return k;
        }
    }
    return 0;
}

/* The draft model's greedy continuation of the history: its argmax, token after token, up to
 * max, stopping after the first token whose probability (among its 10 best) is under p_min
 * (llama.cpp's common_speculative draft loop). The draft session keeps what it evaluated. */
static vkf_status draft_model(vkf_spec *sp, int32_t max, int32_t *k) {
    *k = 0;
    vkf_session *ds = sp->ds;
    int32_t n = sp->n_hist, dV = sp->p.draft->hp.n_vocab, dctx = vkf_session_n_ctx(ds);
    if (n < 1) return VKF_OK;
    if (n + max > dctx) max = dctx - n;
    if (max < 1) return VKF_OK;
    int32_t keep = 0;
    while (keep < n && keep < sp->ds_n && sp->hist[keep] == sp->ds_tok[keep])
        keep++;
    if (keep == n) keep = n - 1;
    for (int32_t i = keep; i < n; i++) /* a token the draft model does not have: no draft */
        if (sp->hist[i] >= dV) return VKF_OK;
    VKF_TRY(grow(&sp->ds_tok, &sp->ds_cap, n + max));
    sp->ds_n = keep < vkf_session_n_past(ds) ? keep : vkf_session_n_past(ds);
    VKF_TRY(vkf_session_truncate(ds, sp->ds_n));
    vkf_status st = vkf_session_eval_last(ds, sp->hist + sp->ds_n, n - sp->ds_n, sp->dlog);
    if (st != VKF_OK) {
        sp->ds_n = 0;
        vkf_session_reset(ds);
        return st;
    }
    memcpy(sp->ds_tok, sp->hist, (size_t)n * sizeof *sp->hist);
    sp->ds_n = n;
    for (int32_t i = 0; i < max; i++) {
        vkf_select_top_k(sp->dlog, dV, SPEC_DRAFT_TOP_K, sp->top);
        int32_t id = sp->top[0].id;
        if (id >= sp->V) break; /* beyond the target's vocabulary */
        double sum = 0;
        for (int32_t j = 0; j < SPEC_DRAFT_TOP_K && j < dV; j++)
            sum += exp((double)sp->top[j].logit - (double)sp->top[0].logit);
        sp->draft[(*k)++] = id;
        if (i + 1 == max || 1.0 / sum < (double)sp->p.p_min) break;
        if ((st = vkf_session_eval_last(ds, &id, 1, sp->dlog)) != VKF_OK) {
            sp->ds_n = 0;
            vkf_session_reset(ds);
            return st;
        }
        sp->ds_tok[sp->ds_n++] = id;
    }
    return VKF_OK;
}

/* Verification passes of 2, 4, 8, 16, ... tokens, at most n_max + 1: each length is a graph the
 * session builds and keeps (it keeps a few shapes), so a draft is cut to the longest of these
 * lengths that it fills. Powers of two also fit the batched kernels' row tiles (16 rows on CPU
 * devices): a pass of 17 would pay a second tile for one row. */
static int32_t pass_tokens(int32_t k, int32_t n_max) {
    int32_t b = 1;
    while (b * 2 <= k + 1 && b * 2 <= n_max + 1)
        b *= 2;
    return b;
}

vkf_status vkf_spec_eval(vkf_spec *sp, vkf_session *s, int32_t token, float *logits) {
    if (!sp || !s || !logits)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "speculative: NULL state, session or logits");
    if (s != sp->s)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "speculative: vkf_spec_begin was not called for this session");
    int32_t V = sp->V;
    if (token < 0 || token >= V) return vkf_check_tokens(&token, 1, V, "speculative");
    VKF_TRY(grow(&sp->hist, &sp->hist_cap, sp->n_hist + 1));
    if (sp->pending && sp->used < sp->n_batch && token == sp->batch[sp->used]) {
        /* the pass already evaluated it: the abort callback is heard as before a pass */
        if (s->abort_cb && s->abort_cb(s->abort_user))
            return vkf_error(VKF_ERROR_ABORTED, "%s: stopped by the abort callback", s->m->path);
        memcpy(logits, sp->rows + (size_t)sp->used * V, (size_t)V * sizeof *logits);
        sp->used++;
        sp->n_accepted++;
        sp->hist[sp->n_hist++] = token;
        return VKF_OK;
    }
    VKF_TRY(drop_pending(sp));
    sp->hist[sp->n_hist++] = token;
    int32_t room = s->n_ctx - s->n_past - 1, max = sp->p.n_max < room ? sp->p.n_max : room, k = 0;
    if (sp->limit >= 0 && sp->limit < max) max = sp->limit;
    vkf_status st = VKF_OK;
    if (max > 0) {
        if (sp->p.type == VKF_SPEC_NGRAM)
            k = vkf_spec_ngram_draft(sp->hist, sp->n_hist, sp->p.ngram_n, max, sp->draft);
        else
            st = draft_model(sp, max, &k);
    }
    /* a draft shorter than n_min is not worth a pass (llama.cpp's --draft-min) */
    k = st == VKF_OK && k > 0 && k >= sp->p.n_min ? pass_tokens(k, sp->p.n_max) - 1 : 0;
    sp->base = s->n_past;
    if (st == VKF_OK && k == 0) {
        st = vkf_session_eval_last(s, &token, 1, logits);
    } else if (st == VKF_OK) {
        sp->batch[0] = token;
        memcpy(sp->batch + 1, sp->draft, (size_t)k * sizeof *sp->draft);
        st = vkf_session_eval(s, sp->batch, k + 1, sp->rows);
        if (st == VKF_OK) {
            memcpy(logits, sp->rows, (size_t)V * sizeof *logits);
            sp->n_batch = k + 1;
            sp->used = 1;
            sp->pending = 1;
            sp->n_drafted += k;
        } else if (s->n_past > sp->base) {
            vkf_session_truncate(s, sp->base); /* nothing half-done */
        }
    }
    if (st == VKF_OK)
        sp->n_passes++;
    else
        sp->n_hist--;
    return st;
}
