/* Hugging Face tokenizer.json: the pipeline of the `tokenizers` library, step by step.
 *
 *   added tokens (non-normalized ones cut from the raw text, leftmost-longest)
 *   -> normalizer (on every remaining piece) -> added tokens that are matched normalized
 *   -> pre-tokenizer (splits each piece into words, may rewrite them: ByteLevel, Metaspace)
 *   -> model (BPE, WordPiece, Unigram, WordLevel: each word -> ids, with a cache)
 *   -> post-processor (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel)
 *
 * and decode: ids -> token strings (special added tokens skipped unless VKF_DECODE_SPECIAL)
 * -> decoder chain (ByteLevel, Metaspace, WordPiece, BPEDecoder, ByteFallback, Fuse, Strip,
 * Replace, Sequence) -> concatenation; with no decoder the tokens are joined with " ".
 *
 * Where this differs from the library on purpose:
 * - invalid UTF-8 (the library takes strings, so it never sees any): each invalid byte is a
 *   character of its own with no category; byte-level BPE and byte-fallback models encode it
 *   as its byte, and decoding those tokens gives the bytes back exactly (the library's
 *   decoders would put U+FFFD for bytes that do not form UTF-8);
 * - BPE dropout is ignored (the library samples; vkformer is deterministic);
 * - Split pre-tokenizers take any pattern of the regex engine (src/tokenizer/regex.h: the
 *   Llama-3, Qwen2, GPT-4o, ... patterns), compiled once at load time; Replace normalizers and
 *   decoders take literal patterns (and " {2,}"-style runs); a construct outside the engine's
 *   syntax is VKF_ERROR_UNSUPPORTED at load time, naming the pattern and the offset;
 * - Precompiled (SentencePiece charsmap) normalizers apply the charsmap as SentencePiece does
 *   (longest match at each position), not grapheme by grapheme as the library does; the two
 *   agree except for graphemes that the charsmap maps as a whole.
 * Offsets, type ids, attention masks, padding and truncation are not produced. */
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/mapfile.h"
#include "tokenizer/pretok.h"
#include "tokenizer/regex.h"
#include "tokenizer/tok_charsmap.h"
#include "tokenizer/tok_hf.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

/* ------------------------------------------------------------------ small helpers */

int vkf_sbuf_reserve(vkf_sbuf *b, size_t n) {
    if (n + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < n + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return 0;
    b->p = p;
    b->cap = cap;
    return 1;
}

int vkf_sbuf_put(vkf_sbuf *b, const void *s, size_t n) {
    if (!vkf_sbuf_reserve(b, b->n + n)) return 0;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 1;
}

static int cps_to_utf8(const uint32_t *v, size_t n, vkf_sbuf *out) {
    out->n = 0;
    if (!vkf_sbuf_reserve(out, 4 * n)) return 0;
    for (size_t i = 0; i < n; i++)
        out->n += vkf_utf8_encode(v[i], out->p + out->n);
    out->p[out->n] = 0;
    return 1;
}

/* Decodes one character at s[0..n): its code point (VKF_CP_RAW for an invalid byte). */
static size_t next_cp(const char *s, size_t n, uint32_t *cp) {
    size_t l = vkf_utf8_decode(s, n, cp);
    if (*cp == VKF_UTF8_INVALID) *cp = VKF_CP_RAW(s[0]);
    return l;
}

char *vkf_hf_dup(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

uint32_t *vkf_hf_utf8_cps(const char *s, size_t n, size_t *out_n) {
    vkf_cpbuf b = {0};
    if (!vkf_utf8_to_cps(s, n, &b) || !vkf_cpbuf_reserve(&b, b.n + 1)) {
        free(b.v);
        return NULL;
    }
    *out_n = b.n;
    return b.v;
}

/* BERT's whitespace: \t \n \r and White_Space. */
static int bert_is_space(uint32_t c) { return vkf_unicode_is_space(c); }
/* BERT's control: the C* categories but \t \n \r (invalid bytes count as unassigned). */
static int bert_is_control(uint32_t c) {
    if (c == '\t' || c == '\n' || c == '\r') return 0;
    return vkf_gc_is_other(vkf_unicode_gc(c));
}
/* ASCII punctuation or a P* category (BertPreTokenizer, Punctuation). */
static int is_punc(uint32_t c) {
    if (c < 0x80)
        return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
               (c >= 123 && c <= 126);
    return vkf_gc_is_punct(vkf_unicode_gc(c));
}
static int is_chinese(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}
static int is_alnum(uint32_t c) {
    vkf_gc g = vkf_unicode_gc(c);
    return vkf_gc_is_letter(g) || vkf_gc_is_number(g);
}

/* ------------------------------------------------------------------ normalizers */

/* Applies one normalizer to the code points in a (result in a or b; returns the result). */
/* NFC of a[0..n) into b, normalizing only around the code points >= U+0300: every character
 * below U+0300 is in NFC and is never the second character of a composition, so the text can
 * be cut before each of them (the one before a run of higher code points joins the run: it may
 * compose with the marks that follow). */
static vkf_cpbuf *nfc_segments(struct vkf_hf *h, vkf_cpbuf *a, vkf_cpbuf *b, int *ok) {
    vkf_cpbuf *tmp = &h->cp_c;
    if (!vkf_cpbuf_reserve(b, a->n)) return *ok = 0, b;
    for (size_t k = 0; k < a->n;) {
        if (a->v[k] < 0x300 && (k + 1 == a->n || a->v[k + 1] < 0x300)) {
            b->v[b->n++] = a->v[k++];
            continue;
        }
        size_t e = k + 1;
        while (e < a->n && a->v[e] >= 0x300)
            e++;
        if (!vkf_unicode_normalize(VKF_NF_NFC, a->v + k, e - k, tmp) ||
            !vkf_cpbuf_reserve(b, b->n + tmp->n + (a->n - e)))
            return *ok = 0, b;
        memcpy(b->v + b->n, tmp->v, tmp->n * sizeof *tmp->v);
        b->n += tmp->n;
        k = e;
    }
    return b;
}

static vkf_cpbuf *norm_apply(struct vkf_hf *h, const hf_norm *op, vkf_cpbuf *a, vkf_cpbuf *b,
                             int *ok) {
    *ok = 1;
    b->n = 0;
    switch (op->type) {
    case NORM_NFD:
    case NORM_NFKD:
    case NORM_NFC:
    case NORM_NFKC: {
        size_t i = 0;
        while (i < a->n && a->v[i] < 0x80) /* ASCII is in every normal form */
            i++;
        if (i == a->n) return a;
        if (op->type == NORM_NFC) return nfc_segments(h, a, b, ok);
        vkf_nf f = op->type == NORM_NFD    ? VKF_NF_NFD
                   : op->type == NORM_NFKD ? VKF_NF_NFKD
                   : op->type == NORM_NFC  ? VKF_NF_NFC
                                           : VKF_NF_NFKC;
        *ok = vkf_unicode_normalize(f, a->v, a->n, b);
        return b;
    }
    case NORM_LOWERCASE:
        if (!vkf_cpbuf_reserve(b, 2 * a->n)) break;
        for (size_t i = 0; i < a->n; i++) {
            uint32_t l[3];
            size_t k = vkf_unicode_lower(a->v[i], l);
            for (size_t j = 0; j < k; j++)
                b->v[b->n++] = l[j];
        }
        return b;
    case NORM_STRIP_ACCENTS: /* drops every mark (General_Category M) */
        if (!vkf_cpbuf_reserve(b, a->n)) break;
        for (size_t i = 0; i < a->n; i++)
            if (!vkf_gc_is_mark(vkf_unicode_gc(a->v[i]))) b->v[b->n++] = a->v[i];
        return b;
    case NORM_STRIP: {
        size_t s = 0, e = a->n;
        if (op->a)
            while (s < e && vkf_unicode_is_space(a->v[s]))
                s++;
        if (op->b)
            while (e > s && vkf_unicode_is_space(a->v[e - 1]))
                e--;
        if (!vkf_cpbuf_reserve(b, e - s)) break;
        memcpy(b->v, a->v + s, (e - s) * sizeof *b->v);
        b->n = e - s;
        return b;
    }
    case NORM_REPLACE:
        if (!op->n_pat) return a;
        if (op->a) { /* regex "X{n,}" / "X+": runs of at least a copies of X */
            for (size_t i = 0; i < a->n;) {
                size_t j = i;
                while (j < a->n && a->v[j] == op->pat[0])
                    j++;
                if (j - i >= (size_t)op->a) {
                    for (size_t k = 0; k < op->n_rep; k++)
                        if (!vkf_cpbuf_push(b, op->rep[k])) goto oom;
                    i = j;
                } else if (j > i) {
                    while (i < j)
                        if (!vkf_cpbuf_push(b, a->v[i++])) goto oom;
                } else if (!vkf_cpbuf_push(b, a->v[i++])) {
                    goto oom;
                }
            }
            return b;
        }
        for (size_t i = 0; i < a->n;) {
            if (i + op->n_pat <= a->n && memcmp(a->v + i, op->pat, op->n_pat * 4) == 0) {
                for (size_t j = 0; j < op->n_rep; j++)
                    if (!vkf_cpbuf_push(b, op->rep[j])) goto oom;
                i += op->n_pat;
            } else if (!vkf_cpbuf_push(b, a->v[i++])) {
                goto oom;
            }
        }
        return b;
    case NORM_PREPEND:
        if (!a->n) return a;
        if (!vkf_cpbuf_reserve(b, a->n + op->n_rep)) break;
        memcpy(b->v, op->rep, op->n_rep * sizeof *b->v);
        memcpy(b->v + op->n_rep, a->v, a->n * sizeof *b->v);
        b->n = a->n + op->n_rep;
        return b;
    case NORM_NMT: /* the NMT normalizer: drop some controls, map odd spaces to ' ' */
        if (!vkf_cpbuf_reserve(b, a->n)) break;
        for (size_t i = 0; i < a->n; i++) {
            uint32_t c = a->v[i];
            if ((c >= 1 && c <= 8) || c == 0xB || (c >= 0xE && c <= 0x1F) || c == 0x7F ||
                c == 0x8F || c == 0x9F)
                continue;
            if (c == 9 || c == 0xA || c == 0xC || c == 0xD || c == 0x1680 ||
                (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x2581 ||
                c == 0xFEFF || c == 0xFFFD)
                c = ' ';
            b->v[b->n++] = c;
        }
        return b;
    case NORM_BERT: {
        vkf_cpbuf *cur = a, *nxt = b;
        if (op->a) { /* clean text */
            if (!vkf_cpbuf_reserve(nxt, cur->n)) break;
            nxt->n = 0;
            for (size_t i = 0; i < cur->n; i++) {
                uint32_t c = cur->v[i];
                if (c == 0 || c == 0xFFFD || bert_is_control(c)) continue;
                nxt->v[nxt->n++] = bert_is_space(c) ? ' ' : c;
            }
            vkf_cpbuf *t = cur;
            cur = nxt, nxt = t;
        }
        if (op->b) { /* Chinese characters become words of their own */
            if (!vkf_cpbuf_reserve(nxt, 3 * cur->n)) break;
            nxt->n = 0;
            for (size_t i = 0; i < cur->n; i++) {
                uint32_t c = cur->v[i];
                if (is_chinese(c)) {
                    nxt->v[nxt->n++] = ' ';
                    nxt->v[nxt->n++] = c;
                    nxt->v[nxt->n++] = ' ';
                } else {
                    nxt->v[nxt->n++] = c;
                }
            }
            vkf_cpbuf *t = cur;
            cur = nxt, nxt = t;
        }
        if (op->c) { /* strip accents: NFD, then drop nonspacing marks (Mn) */
            if (!vkf_unicode_normalize(VKF_NF_NFD, cur->v, cur->n, nxt)) break;
            size_t w = 0;
            for (size_t i = 0; i < nxt->n; i++)
                if (vkf_unicode_gc(nxt->v[i]) != VKF_GC_MN) nxt->v[w++] = nxt->v[i];
            nxt->n = w;
            vkf_cpbuf *t = cur;
            cur = nxt, nxt = t;
        }
        if (op->d) {
            if (!vkf_cpbuf_reserve(nxt, 2 * cur->n)) break;
            nxt->n = 0;
            for (size_t i = 0; i < cur->n; i++) {
                uint32_t l[3];
                size_t k = vkf_unicode_lower(cur->v[i], l);
                for (size_t j = 0; j < k; j++)
                    nxt->v[nxt->n++] = l[j];
            }
            cur = nxt;
        }
        return cur;
    }
    case NORM_PRECOMPILED: {
        if (!cps_to_utf8(a->v, a->n, &h->s_c)) break;
        vkf_sbuf tmp = {0};
        int r = vkf_charsmap_normalize(&op->charsmap, h->s_c.p ? h->s_c.p : "", h->s_c.n, &tmp);
        if (r && !vkf_utf8_to_cps(tmp.p ? tmp.p : "", tmp.n, b)) r = 0;
        free(tmp.p);
        if (!r) break;
        return b;
    }
    }
oom:
    *ok = 0;
    return a;
}

/* Normalizes UTF-8 s[0..n) into out. */
int vkf_hf_normalize(struct vkf_hf *h, const char *s, size_t n, vkf_sbuf *out) {
    out->n = 0;
    if (!h->n_norm) return vkf_sbuf_put(out, s, n);
    vkf_cpbuf *a = &h->cp_a, *b = &h->cp_b;
    a->n = 0;
    if (!vkf_utf8_to_cps(s, n, a)) return 0;
    for (size_t k = 0; k < h->n_norm; k++) {
        int ok;
        vkf_cpbuf *r = norm_apply(h, &h->norm[k], a, b, &ok);
        if (!ok) return 0;
        if (r == b) { /* keep the result in a */
            vkf_cpbuf t = *a;
            *a = *b;
            *b = t;
        } else if (r != a) {
            return 0;
        }
    }
    return cps_to_utf8(a->v, a->n, out);
}

/* ------------------------------------------------------------------ pieces */

/* A word being pre-tokenized: bytes in a pool; first: it starts the text (Metaspace "first"). */
typedef struct piece {
    size_t off, len;
    int first;
} piece;

typedef struct pieces {
    piece *v;
    size_t n, cap;
    vkf_sbuf pool;
} pieces;

static int pieces_add(pieces *p, const char *s, size_t n, int first) {
    if (!n) return 1; /* empty splits are dropped, as the library does */
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        piece *v = realloc(p->v, cap * sizeof *v);
        if (!v) return 0;
        p->v = v;
        p->cap = cap;
    }
    size_t off = p->pool.n;
    if (!vkf_sbuf_put(&p->pool, s, n)) return 0;
    p->v[p->n++] = (piece){off, n, first};
    return 1;
}

static void pieces_free(pieces *p) {
    free(p->v);
    free(p->pool.p);
}

/* One match event of a split: bytes [s, e) and whether they matched the pattern. */
typedef struct span {
    size_t s, e;
    int match;
} span;

typedef struct spans {
    span *v;
    size_t n, cap;
} spans;

static int spans_add(spans *sp, size_t s, size_t e, int match) {
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? 2 * sp->cap : 64;
        span *v = realloc(sp->v, cap * sizeof *v);
        if (!v) return 0;
        sp->v = v;
        sp->cap = cap;
    }
    sp->v[sp->n++] = (span){s, e, match};
    return 1;
}

/* Applies a split behavior to the spans of a piece and adds the resulting words to out (the
 * library's NormalizedString::split). */
static int split_apply(const char *s, const spans *sp, split_behavior beh, int first, pieces *out) {
    size_t n = sp->n;
    if (!n) return 1;
    /* merge spans per the behavior into (start, end, keep) words */
    span *w = malloc(n * sizeof *w);
    if (!w) return 0;
    size_t m = 0;
    switch (beh) {
    case SPLIT_REMOVED:
        for (size_t i = 0; i < n; i++)
            if (!sp->v[i].match) w[m++] = sp->v[i];
        break;
    case SPLIT_ISOLATED:
        for (size_t i = 0; i < n; i++)
            w[m++] = sp->v[i];
        break;
    case SPLIT_MERGED_PREV: {
        int prev = 0;
        for (size_t i = 0; i < n; i++) {
            if (sp->v[i].match && !prev && m)
                w[m - 1].e = sp->v[i].e;
            else
                w[m++] = sp->v[i];
            prev = sp->v[i].match;
        }
        break;
    }
    case SPLIT_MERGED_NEXT: { /* mirrored: walk backwards */
        int prev = 0;
        for (size_t i = n; i-- > 0;) {
            if (sp->v[i].match && !prev && m)
                w[m - 1].s = sp->v[i].s;
            else
                w[m++] = sp->v[i];
            prev = sp->v[i].match;
        }
        for (size_t i = 0; i < m / 2; i++) {
            span t = w[i];
            w[i] = w[m - 1 - i];
            w[m - 1 - i] = t;
        }
        break;
    }
    case SPLIT_CONTIGUOUS: {
        int prev = 0;
        for (size_t i = 0; i < n; i++) {
            if (sp->v[i].match == prev && m)
                w[m - 1].e = sp->v[i].e;
            else
                w[m++] = sp->v[i];
            prev = sp->v[i].match;
        }
        break;
    }
    }
    int ok = 1;
    for (size_t i = 0; i < m && ok; i++)
        ok = pieces_add(out, s + w[i].s, w[i].e - w[i].s, first && w[i].s == 0);
    free(w);
    return ok;
}

/* Spans of a per-character predicate: every matching character is a match of its own. */
typedef int (*char_pred)(uint32_t c, const void *ctx);

static int char_spans(const char *s, size_t n, char_pred f, const void *ctx, spans *sp) {
    sp->n = 0;
    size_t last = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t l = next_cp(s + i, n - i, &c);
        if (f(c, ctx)) {
            if (last < i && !spans_add(sp, last, i, 0)) return 0;
            if (!spans_add(sp, i, i + l, 1)) return 0;
            last = i + l;
        }
        i += l;
    }
    if (last < n && !spans_add(sp, last, n, 0)) return 0;
    return 1;
}

static int pred_space(uint32_t c, const void *ctx) { return (void)ctx, vkf_unicode_is_space(c); }
static int pred_punc(uint32_t c, const void *ctx) { return (void)ctx, is_punc(c); }
static int pred_digit(uint32_t c, const void *ctx) {
    return (void)ctx, vkf_gc_is_number(vkf_unicode_gc(c));
}
static int pred_cp(uint32_t c, const void *ctx) { return c == *(const uint32_t *)ctx; }

/* Spans of the GPT-2 regex over s: every character belongs to a match. */
static int gpt2_spans(struct vkf_hf *h, const char *s, size_t n, spans *sp) {
    sp->n = 0;
    vkf_cpbuf *cp = &h->cp_a;
    cp->n = 0;
    if (!vkf_cpbuf_reserve(cp, 2 * n + 2)) return 0;
    /* code points in v[0..m), byte offsets after them, classes packed into a byte array */
    uint32_t *off = malloc((n + 1) * sizeof *off);
    uint8_t *cls = malloc(n + 1);
    if (!off || !cls) {
        free(off);
        free(cls);
        return 0;
    }
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t l = vkf_utf8_decode(s + i, n - i, &c);
        cp->v[m] = c;
        off[m] = (uint32_t)i;
        cls[m] = (uint8_t)vkf_unicode_category(c);
        m++;
        i += l;
    }
    off[m] = (uint32_t)n;
    int ok = 1;
    for (size_t i = 0; i < m && ok;) {
        size_t e = vkf_gpt2_match(cp->v, cls, m, i);
        ok = spans_add(sp, off[i], off[e], 1);
        i = e;
    }
    free(off);
    free(cls);
    return ok;
}

/* Spans of a regular expression over s (matches and the text between them). */
static int regex_spans(struct vkf_hf *h, vkf_regex *re, const char *s, size_t n, spans *sp) {
    sp->n = 0;
    h->rx.n = 0;
    if (n > UINT32_MAX - 1 || !vkf_cptext_set(&h->cpt, s, n) ||
        !vkf_regex_spans(re, h->cpt.cp, h->cpt.gc, 0, h->cpt.n, &h->rx))
        return 0;
    for (size_t i = 0; i < h->rx.n; i++)
        if (!spans_add(sp, h->cpt.off[h->rx.v[i].s], h->cpt.off[h->rx.v[i].e], h->rx.v[i].match))
            return 0;
    return 1;
}

/* Spans of a literal pattern (every occurrence, left to right). */
static int literal_spans(const char *s, size_t n, const char *pat, size_t pl, spans *sp) {
    sp->n = 0;
    size_t last = 0, i = 0;
    if (!pl) return spans_add(sp, 0, n, 0);
    while (i + pl <= n) {
        const char *hit = memmem(s + i, n - i, pat, pl);
        if (!hit) break;
        size_t hpos = (size_t)(hit - s);
        if (last < hpos && !spans_add(sp, last, hpos, 0)) return 0;
        if (!spans_add(sp, hpos, hpos + pl, 1)) return 0;
        last = i = hpos + pl;
    }
    if (last < n && !spans_add(sp, last, n, 0)) return 0;
    return 1;
}

/* The Whitespace pre-tokenizer's regex \w+|[^\w\s]+: runs of word characters and runs of
 * other non-space characters; spaces are dropped. */
static int whitespace_words(const char *s, size_t n, int first, pieces *out) {
    size_t i = 0;
    while (i < n) {
        uint32_t c;
        size_t l = next_cp(s + i, n - i, &c);
        if (vkf_unicode_is_space(c)) {
            i += l;
            continue;
        }
        int word = vkf_unicode_is_word(c);
        size_t j = i + l;
        while (j < n) {
            size_t l2 = next_cp(s + j, n - j, &c);
            if (vkf_unicode_is_space(c) || vkf_unicode_is_word(c) != word) break;
            j += l2;
        }
        if (!pieces_add(out, s + i, j - i, first && i == 0)) return 0;
        i = j;
    }
    return 1;
}

static const char *k_byte_char[256]; /* GPT-2 byte -> its stand-in character, UTF-8 */
static char k_byte_char_buf[256][4];
static uint8_t k_byte_char_len[256];
static int16_t k_unicode_byte[324]; /* stand-in code point -> byte, -1 if none */

/* Fills the tables above; run once through pthread_once (two threads may load tokenizers at
 * the same time: an unlocked "already filled?" check was a data race). */
static void byte_chars_fill(void) {
    for (int c = 0; c < 324; c++)
        k_unicode_byte[c] = -1;
    for (int b = 0; b < 256; b++) {
        k_unicode_byte[vkf_gpt2_byte_to_unicode((uint8_t)b)] = (int16_t)b;
        k_byte_char_len[b] =
            (uint8_t)vkf_utf8_encode(vkf_gpt2_byte_to_unicode((uint8_t)b), k_byte_char_buf[b]);
        k_byte_char[b] = k_byte_char_buf[b];
    }
}

static pthread_once_t k_byte_chars_once = PTHREAD_ONCE_INIT;
void vkf_hf_byte_chars_init(void) { pthread_once(&k_byte_chars_once, byte_chars_fill); }

/* Runs one pre-tokenizer over every piece of in, into out. */
static int pre_apply(struct vkf_hf *h, const hf_pre *op, const pieces *in, pieces *out, spans *sp) {
    out->n = 0;
    out->pool.n = 0;
    vkf_sbuf *tmp = &h->s_c;
    for (size_t k = 0; k < in->n; k++) {
        const char *s = in->pool.p + in->v[k].off;
        size_t n = in->v[k].len;
        int first = in->v[k].first;
        switch (op->type) {
        case PRE_BYTELEVEL: {
            tmp->n = 0;
            if (op->add_prefix_space && s[0] != ' ' && !vkf_sbuf_put(tmp, " ", 1)) return 0;
            if (!vkf_sbuf_put(tmp, s, n)) return 0;
            /* split on a copy: tmp is reused by the byte mapping below */
            char *src = vkf_hf_dup(tmp->p, tmp->n);
            if (!src) return 0;
            size_t sn = tmp->n;
            int ok =
                op->use_regex ? gpt2_spans(h, src, sn, sp) : (sp->n = 0, spans_add(sp, 0, sn, 1));
            for (size_t i = 0; ok && i < sp->n; i++) {
                tmp->n = 0;
                for (size_t j = sp->v[i].s; ok && j < sp->v[i].e; j++) {
                    uint8_t b = (uint8_t)src[j];
                    ok = vkf_sbuf_put(tmp, k_byte_char[b], k_byte_char_len[b]);
                }
                ok = ok && pieces_add(out, tmp->p, tmp->n, first && sp->v[i].s == 0);
            }
            free(src);
            if (!ok) return 0;
            break;
        }
        case PRE_METASPACE: {
            tmp->n = 0;
            int starts_rep = n >= op->rep_len && memcmp(s, op->rep, op->rep_len) == 0;
            if (s[0] == ' ') starts_rep = 1; /* the space becomes the replacement */
            if ((op->prepend == PREPEND_ALWAYS || (op->prepend == PREPEND_FIRST && first)) &&
                !starts_rep && !vkf_sbuf_put(tmp, op->rep, op->rep_len))
                return 0;
            for (size_t i = 0; i < n; i++) {
                if (s[i] == ' ') {
                    if (!vkf_sbuf_put(tmp, op->rep, op->rep_len)) return 0;
                } else if (!vkf_sbuf_put(tmp, s + i, 1)) {
                    return 0;
                }
            }
            if (!op->split) {
                if (!pieces_add(out, tmp->p, tmp->n, first)) return 0;
                break;
            }
            char *src = vkf_hf_dup(tmp->p, tmp->n);
            if (!src) return 0;
            int ok = literal_spans(src, tmp->n, op->rep, op->rep_len, sp) &&
                     split_apply(src, sp, SPLIT_MERGED_NEXT, first, out);
            free(src);
            if (!ok) return 0;
            break;
        }
        case PRE_BERT: {
            /* split on whitespace (removed), then on punctuation (isolated) */
            pieces words = {0};
            int ok = char_spans(s, n, pred_space, NULL, sp) &&
                     split_apply(s, sp, SPLIT_REMOVED, first, &words);
            for (size_t i = 0; ok && i < words.n; i++) {
                const char *ws = words.pool.p + words.v[i].off;
                ok = char_spans(ws, words.v[i].len, pred_punc, NULL, sp) &&
                     split_apply(ws, sp, SPLIT_ISOLATED, words.v[i].first, out);
            }
            pieces_free(&words);
            if (!ok) return 0;
            break;
        }
        case PRE_WHITESPACE:
            if (!whitespace_words(s, n, first, out)) return 0;
            break;
        case PRE_WHITESPACE_SPLIT:
            if (!char_spans(s, n, pred_space, NULL, sp) ||
                !split_apply(s, sp, SPLIT_REMOVED, first, out))
                return 0;
            break;
        case PRE_PUNCTUATION:
            if (!char_spans(s, n, pred_punc, NULL, sp) ||
                !split_apply(s, sp, op->behavior, first, out))
                return 0;
            break;
        case PRE_DIGITS:
            if (!char_spans(s, n, pred_digit, NULL, sp) ||
                !split_apply(s, sp, op->individual_digits ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS,
                             first, out))
                return 0;
            break;
        case PRE_CHAR_DELIMITER:
            if (!char_spans(s, n, pred_cp, &op->delim, sp) ||
                !split_apply(s, sp, SPLIT_REMOVED, first, out))
                return 0;
            break;
        case PRE_SPLIT: {
            int ok = op->re           ? regex_spans(h, op->re, s, n, sp)
                     : op->gpt2_regex ? gpt2_spans(h, s, n, sp)
                                      : literal_spans(s, n, op->pat, op->pat_len, sp);
            if (!ok) return 0;
            if (op->invert)
                for (size_t i = 0; i < sp->n; i++)
                    sp->v[i].match = !sp->v[i].match;
            if (!split_apply(s, sp, op->behavior, first, out)) return 0;
            break;
        }
        }
    }
    return 1;
}

/* ------------------------------------------------------------------ models */

int32_t vkf_hf_mvocab_get(const struct vkf_hf *h, const char *s, size_t n) {
    return vkf_strmap_get(&h->mvocab, s, n);
}

/* Queues the merge of symbols l and r (HF: by rank, then leftmost). */
static int bpe_add_symbol(vkf_tokenizer *t, int32_t *ns, int32_t id, uint32_t len) {
    if (!vkf_tok_reserve_symbols(t, (size_t)*ns + 1)) return 0;
    t->sym[*ns] = (vkf_symbol){.prev = *ns - 1, .next = -1, .id = id, .start = 0, .n = len};
    if (*ns > 0) t->sym[*ns - 1].next = *ns;
    (*ns)++;
    return 1;
}

/* The library's BPE::merge_word for one word; Word::merge_all is the shared loop of bpe.c. */
static vkf_status bpe_word(vkf_tokenizer *t, const char *w, size_t n, vkf_ids *out) {
    struct vkf_hf *h = t->hf;
    if (h->ignore_merges) {
        int32_t id = vkf_hf_mvocab_get(h, w, n);
        if (id >= 0) return vkf_ids_push(out, id) ? VKF_OK : VKF_ERROR_OUT_OF_MEMORY;
    }
    int32_t ns = 0, unk_id = -1;
    uint32_t unk_len = 0;
    vkf_sbuf *s = &h->s_c;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = next_cp(w + i, n - i, &cp);
        int is_first = i == 0, is_last = i + l == n;
        const char *str = w + i;
        size_t sl = l;
        if ((!is_first && h->prefix) || (is_last && h->suffix)) {
            s->n = 0;
            if ((!is_first && h->prefix && !vkf_sbuf_put(s, h->prefix, h->n_prefix)) ||
                !vkf_sbuf_put(s, w + i, l) ||
                (is_last && h->suffix && !vkf_sbuf_put(s, h->suffix, h->n_suffix)))
                goto oom;
            str = s->p, sl = s->n;
        }
        int32_t id = vkf_hf_mvocab_get(h, str, sl);
        if (id >= 0) {
            if (unk_id >= 0 && !bpe_add_symbol(t, &ns, unk_id, unk_len)) goto oom;
            unk_id = -1;
            if (!bpe_add_symbol(t, &ns, id, (uint32_t)l)) goto oom;
        } else {
            int done = 0;
            if (h->byte_fallback) {
                size_t k = 0;
                while (k < sl && h->byte_id[(uint8_t)str[k]] >= 0)
                    k++;
                if (k == sl) { /* every byte has a token (a pending unk stays pending) */
                    for (k = 0; k < sl; k++)
                        if (!bpe_add_symbol(t, &ns, h->byte_id[(uint8_t)str[k]], 1)) goto oom;
                    done = 1;
                }
            }
            if (!done && h->unk >= 0) {
                if (unk_id >= 0 && h->fuse_unk) {
                    unk_len += (uint32_t)l;
                } else {
                    if (unk_id >= 0 && !bpe_add_symbol(t, &ns, unk_id, unk_len)) goto oom;
                    unk_id = h->unk;
                    unk_len = (uint32_t)l;
                }
            }
        }
        i += l;
    }
    if (unk_id >= 0 && !bpe_add_symbol(t, &ns, unk_id, unk_len)) goto oom;
    if (!vkf_bpe_merge(t, ns, vkf_bpe_rank_pair, t)) goto oom;
    vkf_symbol *sym = t->sym;
    for (int32_t i = ns ? 0 : -1; i >= 0; i = sym[i].next)
        if (!vkf_ids_push(out, sym[i].id)) goto oom;
    return VKF_OK;
oom:
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
}

/* WordPiece: greedy longest-match-first, "##" on continuations, the whole word becomes unk
 * when it is too long or some part has no piece. */
static vkf_status wordpiece_word(vkf_tokenizer *t, const char *w, size_t n, vkf_ids *out) {
    struct vkf_hf *h = t->hf;
    size_t chars = 0;
    for (size_t i = 0; i < n; chars++) {
        uint32_t cp;
        i += next_cp(w + i, n - i, &cp);
    }
    size_t first = out->n;
    if ((int64_t)chars > (int64_t)h->max_chars) goto unk;
    vkf_sbuf *s = &h->s_c;
    for (size_t start = 0; start < n;) {
        size_t end = n;
        int32_t found = -1;
        while (start < end) {
            s->n = 0;
            if ((start > 0 && !vkf_sbuf_put(s, h->prefix ? h->prefix : "", h->n_prefix)) ||
                !vkf_sbuf_put(s, w + start, end - start))
                goto oom;
            found = vkf_hf_mvocab_get(h, s->p, s->n);
            if (found >= 0) break;
            /* drop the last character */
            size_t e = end - 1;
            while (e > start && ((uint8_t)w[e] & 0xC0) == 0x80)
                e--;
            uint32_t cp;
            if (next_cp(w + e, end - e, &cp) != end - e) e = end - 1; /* invalid byte */
            end = e;
        }
        if (found < 0) goto unk;
        if (!vkf_ids_push(out, found)) goto oom;
        start = end;
    }
    return VKF_OK;
unk:
    out->n = first;
    if (h->unk < 0)
        return vkf_error(VKF_ERROR_TOKEN, "%s: word \"%.*s\" has no pieces and there is no unk",
                         t->name, (int)(n > 64 ? 64 : n), w);
    return vkf_ids_push(out, h->unk) ? VKF_OK : VKF_ERROR_OUT_OF_MEMORY;
oom:
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
}

static vkf_status wordlevel_word(vkf_tokenizer *t, const char *w, size_t n, vkf_ids *out) {
    struct vkf_hf *h = t->hf;
    int32_t id = vkf_hf_mvocab_get(h, w, n);
    if (id < 0) id = h->unk;
    if (id < 0)
        return vkf_error(VKF_ERROR_TOKEN,
                         "%s: word \"%.*s\" is not in the vocabulary and there "
                         "is no unk token",
                         t->name, (int)(n > 64 ? 64 : n), w);
    return vkf_ids_push(out, id) ? VKF_OK : VKF_ERROR_OUT_OF_MEMORY;
}

/* Unigram: best-scoring segmentation (the library's encode_optimized), unknown characters
 * fused, then byte fallback or unk for pieces outside the vocabulary. */
static double hf_unigram_score(void *ctx, int32_t id, size_t len) {
    (void)len;
    return ((const struct vkf_hf *)ctx)->uscore[id];
}

/* The library's Unigram::encode for one word: the Viterbi search of unigram.c, then runs of
 * unknown pieces fused into one, and byte fallback for pieces not in the vocabulary. */
static vkf_status unigram_word(vkf_tokenizer *t, const char *w, size_t n, vkf_ids *out) {
    struct vkf_hf *h = t->hf;
    if (!n) return VKF_OK;
    vkf_unigram u = {.trie = &h->trie,
                     .score = hf_unigram_score,
                     .ctx = h,
                     .unk_score = h->min_score - 10.0,
                     .unk = h->unk};
    vkf_uni_pieces p = {0};
    int r = vkf_unigram_best(&u, w, n, &p);
    if (r < 0) {
        free(p.v);
        return vkf_error(VKF_ERROR_TOKEN,
                         "%s: character at byte %zu has no piece and there is no unk", t->name,
                         p.err_at);
    }
    if (!r) goto oom;
    vkf_status st_ = VKF_OK;
    for (size_t i = 0; i < p.n && st_ == VKF_OK;) {
        size_t s0 = p.v[i].s, j = i + 1;
        if (p.v[i].id == h->unk) /* fuse consecutive unknowns into one piece */
            while (j < p.n && p.v[j].id == h->unk)
                j++;
        size_t e0 = p.v[j - 1].s + p.v[j - 1].n;
        int32_t pid = vkf_hf_mvocab_get(h, w + s0, e0 - s0);
        if (pid < 0 && h->byte_fallback) {
            size_t b = s0;
            while (b < e0 && h->byte_id[(uint8_t)w[b]] >= 0)
                b++;
            if (b == e0) {
                for (b = s0; b < e0; b++)
                    if (!vkf_ids_push(out, h->byte_id[(uint8_t)w[b]]))
                        st_ = VKF_ERROR_OUT_OF_MEMORY;
                i = j;
                continue;
            }
        }
        if (pid < 0) pid = h->unk;
        if (!vkf_ids_push(out, pid)) st_ = VKF_ERROR_OUT_OF_MEMORY;
        i = j;
    }
    free(p.v);
    if (st_ != VKF_OK) goto oom;
    return VKF_OK;
oom:
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
}

static vkf_status model_chunk(vkf_tokenizer *t, const char *w, size_t n, vkf_ids *out);

/* One word through the model. Files without a pre-tokenizer (llama 2 style: the whole text is
 * one word) are cut before each U+2581 that follows another character when every token is
 * "U+2581* then no U+2581" (ws_split): no merge can cross such a cut, so the ids are the same,
 * and the pieces hit the cache. */
static vkf_status model_word(vkf_tokenizer *t, const char *w, size_t n, vkf_ids *out) {
    if (!t->hf->ws_split) return model_chunk(t, w, n, out);
    size_t start = 0;
    int prev_ws = 0;
    for (size_t i = 0; i < n;) {
        int ws = i + 3 <= n && memcmp(w + i, "\xe2\x96\x81", 3) == 0;
        if (ws && !prev_ws && i > start) {
            VKF_TRY(model_chunk(t, w + start, i - start, out));
            start = i;
        }
        prev_ws = ws;
        i += ws ? 3 : 1;
    }
    return model_chunk(t, w + start, n - start, out);
}

static vkf_status model_chunk(vkf_tokenizer *t, const char *w, size_t n, vkf_ids *out) {
    if (!n) return VKF_OK;
    int hit = vkf_bpe_cache_get(&t->cache, w, n, out);
    if (hit < 0) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "out of memory while tokenizing");
    if (hit) return VKF_OK;
    size_t first = out->n;
    vkf_status s = VKF_OK;
    switch (t->hf->model) {
    case MODEL_BPE: s = bpe_word(t, w, n, out); break;
    case MODEL_WORDPIECE: s = wordpiece_word(t, w, n, out); break;
    case MODEL_UNIGRAM: s = unigram_word(t, w, n, out); break;
    case MODEL_WORDLEVEL: s = wordlevel_word(t, w, n, out); break;
    }
    if (s == VKF_ERROR_OUT_OF_MEMORY)
        return vkf_error(s, "%s: out of memory while tokenizing", t->name);
    if (s != VKF_OK) return s;
    /* a word may give no ids (BPE without unk drops unknown characters): out->v may be NULL */
    vkf_bpe_cache_put(&t->cache, w, n, out->n > first ? out->v + first : NULL, out->n - first);
    return VKF_OK;
}

/* ------------------------------------------------------------------ added tokens */

typedef struct segment {
    int32_t id; /* added token id, or -1 for text */
    size_t off, len;
} segment;

typedef struct segments {
    segment *v;
    size_t n, cap;
} segments;

static int seg_add(segments *g, int32_t id, size_t off, size_t len) {
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        segment *v = realloc(g->v, cap * sizeof *v);
        if (!v) return 0;
        g->v = v;
        g->cap = cap;
    }
    g->v[g->n++] = (segment){id, off, len};
    return 1;
}

static int ends_with_word(const char *s, size_t n) {
    if (!n) return 0;
    size_t i = n - 1;
    while (i > 0 && ((uint8_t)s[i] & 0xC0) == 0x80)
        i--;
    uint32_t c;
    next_cp(s + i, n - i, &c);
    return is_alnum(c);
}

static int starts_with_word(const char *s, size_t n) {
    if (!n) return 0;
    uint32_t c;
    next_cp(s, n, &c);
    return is_alnum(c);
}

/* Cuts the added tokens with normalized == want_norm out of s[0..n) (leftmost-longest, like the
 * library's Aho-Corasick matcher), appending segments with offsets relative to base. */
static int split_added(const struct vkf_hf *h, const char *s, size_t n, size_t base, int want_norm,
                       int parse_special, segments *out) {
    size_t last = 0, i = 0;
    while (i < n) {
        if (!h->added_first[(uint8_t)s[i]]) { /* most bytes start no added token */
            i++;
            continue;
        }
        const added_token *best = NULL;
        for (size_t k = 0; k < h->n_added; k++) {
            const added_token *a = &h->added[k];
            if (a->normalized != want_norm || !a->len || a->len > n - i ||
                (a->special && !parse_special))
                continue;
            if ((best && a->len <= best->len) || memcmp(s + i, a->content, a->len) != 0) continue;
            best = a;
        }
        if (!best) {
            i++;
            continue;
        }
        size_t start = i, stop = i + best->len;
        i = stop; /* the matcher goes on after this match even when it is discarded */
        if (best->single_word && ((start > 0 && ends_with_word(s, start)) ||
                                  (stop < n && starts_with_word(s + stop, n - stop))))
            continue;
        if (best->lstrip) {
            size_t ns = start;
            while (ns > last) {
                size_t p = ns - 1;
                while (p > last && ((uint8_t)s[p] & 0xC0) == 0x80)
                    p--;
                uint32_t c;
                next_cp(s + p, ns - p, &c);
                if (!vkf_unicode_is_space(c)) break;
                ns = p;
            }
            start = ns;
        }
        if (best->rstrip) {
            while (stop < n) {
                uint32_t c;
                size_t l = next_cp(s + stop, n - stop, &c);
                if (!vkf_unicode_is_space(c)) break;
                stop += l;
            }
            i = stop > i ? stop : i;
        }
        if (last < start && !seg_add(out, -1, base + last, start - last)) return 0;
        if (!seg_add(out, best->id, base + start, stop - start)) return 0;
        last = stop;
    }
    if (last < n && !seg_add(out, -1, base + last, n - last)) return 0;
    return 1;
}

/* ------------------------------------------------------------------ encode */

vkf_status vkf_hf_encode(vkf_tokenizer *t, const char *text, size_t len, int add_special,
                         int parse_special, vkf_ids *out) {
    struct vkf_hf *h = t->hf;
    segments raw = {0}, norm = {0};
    pieces pa = {0}, pb = {0};
    spans sp = {0};
    vkf_sbuf ntext = {0}; /* every normalized segment, concatenated */
    vkf_status s = VKF_OK;
    if (add_special)
        for (size_t i = 0; i < h->post.n_pre; i++)
            if (!vkf_ids_push(out, h->post.pre[i])) goto oom;
    if (!split_added(h, text, len, 0, 0, parse_special, &raw)) goto oom;
    for (size_t g = 0; g < raw.n; g++) {
        if (raw.v[g].id >= 0) {
            if (!vkf_ids_push(out, raw.v[g].id)) goto oom;
            continue;
        }
        /* normalize, then cut the normalized added tokens */
        if (!vkf_hf_normalize(h, text + raw.v[g].off, raw.v[g].len, &h->s_a)) goto oom;
        size_t base = ntext.n;
        if (!vkf_sbuf_put(&ntext, h->s_a.p ? h->s_a.p : "", h->s_a.n)) goto oom;
        norm.n = 0;
        if (!split_added(h, ntext.p + base, ntext.n - base, base, 1, parse_special, &norm))
            goto oom;
        for (size_t q = 0; q < norm.n; q++) {
            if (norm.v[q].id >= 0) {
                if (!vkf_ids_push(out, norm.v[q].id)) goto oom;
                continue;
            }
            /* the piece starts the text if it starts the raw segment at offset 0 */
            int first = raw.v[g].off == 0 && norm.v[q].off == base;
            pa.n = 0;
            pa.pool.n = 0;
            if (!pieces_add(&pa, ntext.p + norm.v[q].off, norm.v[q].len, first)) goto oom;
            pieces *cur = &pa, *nxt = &pb;
            for (size_t k = 0; k < h->n_pre; k++) {
                if (!pre_apply(h, &h->pre[k], cur, nxt, &sp)) goto oom;
                pieces *tmp = cur;
                cur = nxt, nxt = tmp;
            }
            for (size_t k = 0; k < cur->n; k++)
                if ((s = model_word(t, cur->pool.p + cur->v[k].off, cur->v[k].len, out)) != VKF_OK)
                    goto fail;
        }
    }
    if (add_special)
        for (size_t i = 0; i < h->post.n_post; i++)
            if (!vkf_ids_push(out, h->post.post[i])) goto oom;
    goto done;
oom:
    s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
fail:
done:
    free(raw.v);
    free(norm.v);
    pieces_free(&pa);
    pieces_free(&pb);
    free(sp.v);
    free(ntext.p);
    return s;
}

/* ------------------------------------------------------------------ decode */

typedef struct toklist {
    vkf_sbuf *v;
    size_t n, cap;
} toklist;

static vkf_sbuf *tl_add(toklist *l) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        vkf_sbuf *v = realloc(l->v, cap * sizeof *v);
        if (!v) return NULL;
        memset(v + l->cap, 0, (cap - l->cap) * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    vkf_sbuf *b = &l->v[l->n++];
    b->n = 0;
    if (!vkf_sbuf_reserve(b, 0)) return NULL;
    b->p[0] = 0;
    return b;
}

static void tl_free(toklist *l) {
    for (size_t i = 0; i < l->cap; i++)
        free(l->v[i].p);
    free(l->v);
}

static int hexv(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static int byte_token(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>' || hexv(s[3]) < 0 || hexv(s[4]) < 0)
        return -1;
    return hexv(s[3]) * 16 + hexv(s[4]);
}

/* Replaces every occurrence of pat with rep in b (in place through a temporary). */
static int sbuf_replace(vkf_sbuf *b, const char *pat, size_t pl, const char *rep, size_t rl,
                        vkf_sbuf *tmp) {
    if (!pl || b->n < pl || !memmem(b->p, b->n, pat, pl)) return 1;
    tmp->n = 0;
    for (size_t i = 0; i < b->n;) {
        if (i + pl <= b->n && memcmp(b->p + i, pat, pl) == 0) {
            if (!vkf_sbuf_put(tmp, rep, rl)) return 0;
            i += pl;
        } else {
            if (!vkf_sbuf_put(tmp, b->p + i, 1)) return 0;
            i++;
        }
    }
    vkf_sbuf t = *b;
    *b = *tmp;
    *tmp = t;
    return 1;
}

static int wordpiece_cleanup(vkf_sbuf *b, vkf_sbuf *tmp) {
    static const char *const pairs[][2] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (!sbuf_replace(b, pairs[i][0], strlen(pairs[i][0]), pairs[i][1], strlen(pairs[i][1]),
                          tmp))
            return 0;
    return 1;
}

/* Runs one decoder over the token list (in place, possibly changing its length); tmp is
 * scratch (decode keeps nothing in the tokenizer: it may run on several threads). */
static int dec_apply(const hf_dec *d, toklist *l, vkf_sbuf *tmp) {
    switch (d->type) {
    case DEC_BYTELEVEL: {
        /* every token whose characters are all byte stand-ins becomes those bytes; the rest
         * stay as they are; then everything is one string */
        toklist o = {0};
        vkf_sbuf *r = tl_add(&o);
        if (!r) return 0;
        for (size_t i = 0; i < l->n; i++) {
            const vkf_sbuf *b = &l->v[i];
            size_t start = r->n;
            int all = 1;
            for (size_t j = 0; j < b->n && all;) {
                uint32_t cp;
                size_t k = next_cp(b->p + j, b->n - j, &cp);
                int byte = cp < 324 ? k_unicode_byte[cp] : -1;
                if (byte < 0) {
                    all = 0;
                    break;
                }
                char c = (char)byte;
                if (!vkf_sbuf_put(r, &c, 1)) return tl_free(&o), 0;
                j += k;
            }
            if (!all) {
                r->n = start;
                if (!vkf_sbuf_put(r, b->p, b->n)) return tl_free(&o), 0;
            }
        }
        tl_free(l);
        *l = o;
        return 1;
    }
    case DEC_METASPACE:
        for (size_t i = 0; i < l->n; i++) {
            vkf_sbuf *b = &l->v[i];
            char u[4];
            size_t ul = vkf_utf8_encode(d->cp, u);
            if (!sbuf_replace(b, u, ul, i == 0 && d->y ? "" : " ", i == 0 && d->y ? 0 : 1, tmp))
                return 0;
        }
        return 1;
    case DEC_WORDPIECE:
        for (size_t i = 0; i < l->n; i++) {
            vkf_sbuf *b = &l->v[i];
            if (i != 0) {
                if (b->n >= d->na && memcmp(b->p, d->a, d->na) == 0) {
                    memmove(b->p, b->p + d->na, b->n - d->na + 1);
                    b->n -= d->na;
                } else {
                    tmp->n = 0;
                    if (!vkf_sbuf_put(tmp, " ", 1) || !vkf_sbuf_put(tmp, b->p, b->n)) return 0;
                    vkf_sbuf t = *b;
                    *b = *tmp;
                    *tmp = t;
                }
            }
            if (d->x && !wordpiece_cleanup(b, tmp)) return 0;
        }
        return 1;
    case DEC_BPE:
        for (size_t i = 0; i < l->n; i++)
            if (!sbuf_replace(&l->v[i], d->a, d->na, i + 1 == l->n ? "" : " ",
                              i + 1 == l->n ? 0 : 1, tmp))
                return 0;
        return 1;
    case DEC_BYTEFALLBACK: {
        toklist o = {0};
        for (size_t i = 0; i < l->n;) {
            int b = byte_token(l->v[i].p, l->v[i].n);
            vkf_sbuf *r = tl_add(&o);
            if (!r) return tl_free(&o), 0;
            if (b < 0) {
                if (!vkf_sbuf_put(r, l->v[i].p, l->v[i].n)) return tl_free(&o), 0;
                i++;
                continue;
            }
            /* a run of byte tokens becomes one string of those bytes */
            while (i < l->n && (b = byte_token(l->v[i].p, l->v[i].n)) >= 0) {
                char c = (char)b;
                if (!vkf_sbuf_put(r, &c, 1)) return tl_free(&o), 0;
                i++;
            }
        }
        tl_free(l);
        *l = o;
        return 1;
    }
    case DEC_FUSE: {
        if (l->n < 2) return 1;
        for (size_t i = 1; i < l->n; i++)
            if (!vkf_sbuf_put(&l->v[0], l->v[i].p, l->v[i].n)) return 0;
        for (size_t i = 1; i < l->n; i++)
            l->v[i].n = 0;
        l->n = 1;
        return 1;
    }
    case DEC_STRIP: {
        char u[4];
        size_t ul = vkf_utf8_encode(d->cp, u);
        for (size_t i = 0; i < l->n; i++) {
            vkf_sbuf *b = &l->v[i];
            size_t s = 0, e = b->n;
            for (int k = 0; k < d->x && e - s >= ul && memcmp(b->p + s, u, ul) == 0; k++)
                s += ul;
            for (int k = 0; k < d->y && e - s >= ul && memcmp(b->p + e - ul, u, ul) == 0; k++)
                e -= ul;
            memmove(b->p, b->p + s, e - s);
            b->n = e - s;
            b->p[b->n] = 0;
        }
        return 1;
    }
    case DEC_REPLACE:
        for (size_t i = 0; i < l->n; i++)
            if (!sbuf_replace(&l->v[i], d->a, d->na, d->b, d->nb, tmp)) return 0;
        return 1;
    }
    return 1;
}

vkf_status vkf_hf_decode(const vkf_tokenizer *t, const int32_t *ids, size_t n, int flags,
                         vkf_sbuf *out) {
    const struct vkf_hf *h = t->hf;
    toklist l = {0};
    vkf_sbuf tmp = {0};
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (h->is_special[id] && !(flags & VKF_DECODE_SPECIAL)) continue;
        if (!t->len[id] && t->type[id] == VKF_TOKEN_UNUSED) continue; /* a hole in the ids */
        vkf_sbuf *b = tl_add(&l);
        if (!b || !vkf_sbuf_put(b, vkf_tok_str(t, id), t->len[id])) goto oom;
    }
    if (h->has_decoder) {
        for (size_t k = 0; k < h->n_dec; k++)
            if (!dec_apply(&h->dec[k], &l, &tmp)) goto oom;
        for (size_t i = 0; i < l.n; i++)
            if (!vkf_sbuf_put(out, l.v[i].p, l.v[i].n)) goto oom;
    } else {
        for (size_t i = 0; i < l.n; i++)
            if ((i && !vkf_sbuf_put(out, " ", 1)) || !vkf_sbuf_put(out, l.v[i].p, l.v[i].n))
                goto oom;
    }
    tl_free(&l);
    free(tmp.p);
    return VKF_OK;
oom:
    tl_free(&l);
    free(tmp.p);
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while decoding", t->name);
}
