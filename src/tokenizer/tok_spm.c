/* SentencePiece .model files, read with a small protobuf reader, encoded as the sentencepiece
 * library does it:
 *
 *   normalize: user-defined symbols are kept as they are; elsewhere the longest rule of the
 *   precompiled charsmap (nmt_nfkc, ...) applies, invalid UTF-8 bytes become U+FFFD; leading,
 *   trailing and repeated spaces are dropped (remove_extra_whitespaces), "▁" is put in front
 *   (add_dummy_prefix) and spaces become "▁" (escape_whitespaces);
 *   model: Unigram (best-scoring segmentation, user-defined symbols always win, unknown
 *   characters become unk), BPE (pairs merge by the score of the merged piece, highest first,
 *   leftmost on ties; user-defined symbols never merge), CHAR or WORD;
 *   then each unk piece becomes its bytes <0xNN> when byte_fallback is on, and runs of unk
 *   become one unk otherwise.
 *
 * Decode: control tokens are invisible (VKF_DECODE_SPECIAL shows them), unk is " ⁇ ", runs of
 * byte pieces become their bytes (each byte that does not form UTF-8 becomes U+FFFD, as the
 * library does), "▁" becomes a space and the first one of the text is dropped.
 *
 * Control tokens written in the text ("<s>") are plain text, as in the library: parse_special
 * does not change that; add_special puts bos (trainer_spec.bos_id) in front. */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/gguf.h"
#include "io/mapfile.h"
#include "tokenizer/tok_charsmap.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

enum { SPM_UNIGRAM = 1, SPM_BPE = 2, SPM_WORD = 3, SPM_CHAR = 4 };

static const char k_ws[] = "\xe2\x96\x81"; /* U+2581 */

struct vkf_spm {
    int model_type;
    int add_dummy_prefix, remove_extra_ws, escape_ws, ws_suffix, byte_fallback;
    vkf_charsmap charsmap;
    vkf_strmap pieces;   /* NORMAL, USER_DEFINED, UNUSED pieces -> id */
    vkf_strmap reserved; /* CONTROL, UNKNOWN, BYTE pieces -> id */
    vkf_trie trie;       /* Unigram: the pieces above */
    vkf_trie user;       /* user-defined symbols (prefix matching) */
    int has_user;
    int ws_split; /* BPE: the text may be cut before U+2581 (see bpe_encode_cut) */
    int32_t unk;
    float min_score, max_score;
    int32_t byte_id[256];
    char *unk_surface;
    size_t unk_surface_len;
    vkf_sbuf norm; /* scratch */
};

/* ------------------------------------------------------------------ protobuf */

typedef struct pb {
    const uint8_t *p, *end;
    int bad;
} pb;

static uint64_t pb_varint(pb *r) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) {
            r->bad = 1;
            return 0;
        }
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return v;
    }
    r->bad = 1;
    return 0;
}

/* Reads the next field's key; 0 at the end or on error. */
static int pb_next(pb *r, uint32_t *field, int *wire) {
    if (r->bad || r->p >= r->end) return 0;
    uint64_t k = pb_varint(r);
    if (r->bad || (k >> 3) == 0 || (k >> 3) > 0x1FFFFFFF) {
        r->bad = 1;
        return 0;
    }
    *field = (uint32_t)(k >> 3);
    *wire = (int)(k & 7);
    return 1;
}

/* A length-delimited field's bytes. */
static int pb_bytes(pb *r, const uint8_t **s, size_t *n) {
    uint64_t l = pb_varint(r);
    if (r->bad || l > (uint64_t)(r->end - r->p)) { /* an empty slice: the reader stays bad */
        r->bad = 1;
        *s = r->end;
        *n = 0;
        return 0;
    }
    *s = r->p;
    *n = (size_t)l;
    r->p += l;
    return 1;
}

static void pb_skip(pb *r, int wire) {
    const uint8_t *s;
    size_t n;
    switch (wire) {
    case 0: pb_varint(r); break;
    case 1:
        if (r->end - r->p < 8)
            r->bad = 1;
        else
            r->p += 8;
        break;
    case 2: pb_bytes(r, &s, &n); break;
    case 5:
        if (r->end - r->p < 4)
            r->bad = 1;
        else
            r->p += 4;
        break;
    default: r->bad = 1; /* groups are not used by sentencepiece */
    }
}

static float pb_float(pb *r) {
    if (r->end - r->p < 4) {
        r->bad = 1;
        return 0;
    }
    uint32_t u = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
                 (uint32_t)r->p[3] << 24;
    r->p += 4;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ------------------------------------------------------------------ normalizer */

static int user_match(const struct vkf_spm *m, const char *s, size_t n) {
    if (!m->has_user) return 0;
    size_t best = 0;
    int32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        node = vkf_trie_step(&m->user, node, (uint8_t)s[i]);
        if (node < 0) break;
        if (m->user.val[node] >= 0) best = i + 1;
    }
    return (int)best;
}

/* The normalized form of the next piece of input: *rep, *rep_len, consuming the returned bytes. */
static size_t norm_prefix(const struct vkf_spm *m, const char *s, size_t n, const char **rep,
                          size_t *rep_len) {
    size_t l = (size_t)user_match(m, s, n);
    if (l) {
        *rep = s;
        *rep_len = l;
        return l;
    }
    l = vkf_charsmap_match(&m->charsmap, s, n, rep, rep_len);
    if (l) return l;
    uint32_t cp;
    l = vkf_utf8_decode(s, n, &cp);
    if (cp == VKF_UTF8_INVALID) {
        *rep = "\xef\xbf\xbd"; /* U+FFFD for each invalid byte */
        *rep_len = 3;
        return 1;
    }
    *rep = s;
    *rep_len = l;
    return l;
}

static int put_ws(const struct vkf_spm *m, vkf_sbuf *o) {
    return m->escape_ws ? vkf_sbuf_put(o, k_ws, 3) : vkf_sbuf_put(o, " ", 1);
}

static int spm_normalize(const struct vkf_spm *m, const char *s, size_t n, vkf_sbuf *o) {
    o->n = 0;
    if (!vkf_sbuf_reserve(o, 3 * n + 8)) return 0;
    const char *rep;
    size_t rl;
    if (m->remove_extra_ws) /* leading spaces */
        while (n) {
            size_t l = norm_prefix(m, s, n, &rep, &rl);
            if (!(rl == 1 && rep[0] == ' ')) break;
            s += l, n -= l;
        }
    if (!n) return 1;
    if (!m->ws_suffix && m->add_dummy_prefix && !put_ws(m, o)) return 0;
    int prev_space = m->remove_extra_ws;
    while (n) {
        size_t l = norm_prefix(m, s, n, &rep, &rl);
        if (prev_space)
            while (rl && rep[0] == ' ')
                rep++, rl--;
        if (rl) {
            if (!vkf_sbuf_reserve(o, o->n + 3 * rl)) return 0;
            char *d = o->p + o->n;
            for (size_t i = 0; i < rl; i++) {
                if (rep[i] == ' ' && m->escape_ws) {
                    memcpy(d, k_ws, 3);
                    d += 3;
                } else {
                    *d++ = rep[i];
                }
            }
            o->n = (size_t)(d - o->p);
            o->p[o->n] = 0;
            prev_space = rep[rl - 1] == ' ';
        }
        s += l, n -= l;
        if (!m->remove_extra_ws) prev_space = 0;
    }
    if (m->remove_extra_ws) { /* trailing spaces */
        const char *ws = m->escape_ws ? k_ws : " ";
        size_t wl = m->escape_ws ? 3 : 1;
        while (o->n >= wl && memcmp(o->p + o->n - wl, ws, wl) == 0)
            o->n -= wl;
        o->p[o->n] = 0;
    }
    if (m->ws_suffix && m->add_dummy_prefix && !put_ws(m, o)) return 0;
    return 1;
}

/* ------------------------------------------------------------------ models */

/* sentencepiece's OneCharLen: the length the lead byte announces. */
static size_t one_char_len(const char *s, size_t n) {
    static const uint8_t k[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    size_t l = k[(uint8_t)s[0] >> 4];
    return l < n ? l : n;
}

/* A piece of the model output: bytes [s, s + n) of the normalized text and its id. */
typedef struct spm_piece {
    uint32_t s, n;
    int32_t id;
} spm_piece;

typedef struct spm_pieces {
    spm_piece *v;
    size_t n, cap;
} spm_pieces;

static int sp_add(spm_pieces *p, size_t s, size_t n, int32_t id) {
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        spm_piece *v = realloc(p->v, cap * sizeof *v);
        if (!v) return 0;
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = (spm_piece){(uint32_t)s, (uint32_t)n, id};
    return 1;
}

static int32_t piece_to_id(const vkf_tokenizer *t, const char *s, size_t n) {
    const struct vkf_spm *m = t->spm;
    int32_t id = vkf_strmap_get(&m->reserved, s, n);
    if (id >= 0) return id;
    id = vkf_strmap_get(&m->pieces, s, n);
    return id >= 0 ? id : m->unk;
}

/* Piece scores as the sentencepiece library gives them: user-defined symbols a bonus that makes
 * them always win (computed as a double, as the library's 0.1 literal makes it), unused pieces
 * never. */
static double unigram_score(void *ctx, int32_t id, size_t len) {
    const vkf_tokenizer *t = ctx;
    if (t->type[id] == VKF_TOKEN_UNUSED) return NAN;
    if (t->type[id] == VKF_TOKEN_USER_DEFINED)
        return (double)((float)len * t->spm->max_score) - 0.1;
    return (double)t->score[id];
}

static int unigram_encode(vkf_tokenizer *t, const char *w, size_t n, spm_pieces *out) {
    const struct vkf_spm *m = t->spm;
    vkf_unigram u = {.trie = &m->trie,
                     .score = unigram_score,
                     .ctx = t,
                     .unk_score = (double)(m->min_score - 10.0f),
                     .unk = m->unk,
                     .float_sums = 1,
                     .lead_byte_len = 1};
    vkf_uni_pieces p = {0};
    int r = vkf_unigram_best(&u, w, n, &p);
    for (size_t i = 0; r > 0 && i < p.n; i++)
        if (!sp_add(out, p.v[i].s, p.v[i].n, p.v[i].id)) r = 0;
    free(p.v);
    return r > 0;
}

typedef struct spm_pair_ctx {
    vkf_tokenizer *t;
    const char *w;
} spm_pair_ctx;

#define SPM_FROZEN (-2) /* a user-defined symbol: never merges */

/* Merge priority: the score of the piece the two symbols form (highest first). */
static int bpe_pair(void *ctx, const vkf_symbol *a, const vkf_symbol *b, double *key, int32_t *id) {
    const spm_pair_ctx *c = ctx;
    if (a->id == SPM_FROZEN || b->id == SPM_FROZEN) return 0;
    *id = vkf_strmap_get(&c->t->spm->pieces, c->w + a->start, a->n + b->n);
    if (*id < 0) return 0;
    *key = -(double)c->t->score[*id];
    return 1;
}

static int bpe_encode(vkf_tokenizer *t, const char *w, size_t n, spm_pieces *out) {
    const struct vkf_spm *m = t->spm;
    if (!vkf_tok_reserve_symbols(t, n + 1)) return 0;
    vkf_symbol *sym = t->sym;
    int32_t ns = 0;
    for (size_t i = 0; i < n;) {
        size_t l = (size_t)user_match(m, w + i, n - i);
        int frozen = l > 0;
        if (!l) l = one_char_len(w + i, n - i);
        sym[ns] = (vkf_symbol){.prev = ns - 1,
                               .next = ns + 1,
                               .id = frozen ? SPM_FROZEN : -1,
                               .start = (uint32_t)i,
                               .n = (uint32_t)l};
        ns++;
        i += l;
    }
    if (ns) sym[ns - 1].next = -1;
    spm_pair_ctx ctx = {t, w};
    if (!vkf_bpe_merge(t, ns, bpe_pair, &ctx)) return 0;
    for (int32_t i = ns ? 0 : -1; i >= 0; i = sym[i].next)
        if (!sp_add(out, sym[i].start, sym[i].n, piece_to_id(t, w + sym[i].start, sym[i].n)))
            return 0;
    return 1;
}

/* BPE over the whole normalized text, cut before each U+2581 that follows another character
 * when every piece is "U+2581* then no U+2581" (ws_split): no merge can cross such a cut, so
 * the pieces are the same, and each chunk's pieces are cached as (id, length) pairs. */
static int bpe_encode_cut(vkf_tokenizer *t, const char *w, size_t n, spm_pieces *out) {
    if (!t->spm->ws_split) return bpe_encode(t, w, n, out);
    vkf_ids pairs = {0};
    size_t start = 0;
    int prev_ws = 0, ok = 1;
    for (size_t i = 0; ok && i <= n;) {
        int ws = i + 3 <= n && memcmp(w + i, k_ws, 3) == 0;
        if (i == n || (ws && !prev_ws && i > start)) {
            size_t len = i - start;
            pairs.n = 0;
            int hit = len ? vkf_bpe_cache_get(&t->cache, w + start, len, &pairs) : 1;
            if (hit < 0) ok = 0;
            if (hit > 0) {
                size_t off = start;
                for (size_t k = 0; ok && k + 1 < pairs.n; k += 2) {
                    ok = sp_add(out, off, (size_t)pairs.v[k + 1], pairs.v[k]);
                    off += (size_t)pairs.v[k + 1];
                }
            } else if (ok) {
                size_t first = out->n;
                ok = bpe_encode(t, w + start, len, out);
                for (size_t k = first; ok && k < out->n; k++) {
                    ok = vkf_ids_push(&pairs, out->v[k].id) &&
                         vkf_ids_push(&pairs, (int32_t)out->v[k].n);
                    out->v[k].s += (uint32_t)start;
                }
                if (ok) vkf_bpe_cache_put(&t->cache, w + start, len, pairs.v, pairs.n);
            }
            start = i;
        }
        if (i == n) break;
        prev_ws = ws;
        i += ws ? 3 : 1;
    }
    free(pairs.v);
    return ok;
}

static int char_encode(vkf_tokenizer *t, const char *w, size_t n, spm_pieces *out) {
    for (size_t i = 0; i < n;) {
        size_t l = one_char_len(w + i, n - i);
        if (!sp_add(out, i, l, piece_to_id(t, w + i, l))) return 0;
        i += l;
    }
    return 1;
}

/* WORD: words start at each "▁" (or end after one with treat_whitespace_as_suffix). */
static int word_encode(vkf_tokenizer *t, const char *w, size_t n, spm_pieces *out) {
    size_t start = 0;
    for (size_t i = 0; i < n;) {
        size_t l = one_char_len(w + i, n - i);
        int is_ws = l == 3 && memcmp(w + i, k_ws, 3) == 0;
        if (!t->spm->ws_suffix && is_ws && i > start) {
            if (!sp_add(out, start, i - start, piece_to_id(t, w + start, i - start))) return 0;
            start = i;
        }
        i += l;
        if (t->spm->ws_suffix && is_ws) {
            if (!sp_add(out, start, i - start, piece_to_id(t, w + start, i - start))) return 0;
            start = i;
        }
    }
    if (start < n && !sp_add(out, start, n - start, piece_to_id(t, w + start, n - start))) return 0;
    return 1;
}

vkf_status vkf_spm_encode(vkf_tokenizer *t, const char *text, size_t len, int add_special,
                          int parse_special, vkf_ids *out) {
    (void)parse_special;
    struct vkf_spm *m = t->spm;
    spm_pieces ps = {0};
    if (add_special && t->add_bos && t->bos >= 0 && !vkf_ids_push(out, t->bos)) goto oom;
    if (!spm_normalize(m, text, len, &m->norm)) goto oom;
    const char *w = m->norm.p ? m->norm.p : "";
    size_t n = m->norm.n;
    int ok = 1;
    if (n) switch (m->model_type) {
        case SPM_UNIGRAM: ok = unigram_encode(t, w, n, &ps); break;
        case SPM_BPE: ok = bpe_encode_cut(t, w, n, &ps); break;
        case SPM_CHAR: ok = char_encode(t, w, n, &ps); break;
        default: ok = word_encode(t, w, n, &ps); break;
        }
    if (!ok) goto oom;
    int prev_unk = 0;
    for (size_t i = 0; i < ps.n; i++) {
        int32_t id = ps.v[i].id;
        int is_unk = id == m->unk;
        if (is_unk && m->byte_fallback) {
            for (uint32_t k = 0; k < ps.v[i].n; k++) {
                int32_t b = m->byte_id[(uint8_t)w[ps.v[i].s + k]];
                if (!vkf_ids_push(out, b >= 0 ? b : m->unk)) goto oom;
            }
        } else if (!(is_unk && prev_unk)) { /* a run of unk is one unk */
            if (!vkf_ids_push(out, id)) goto oom;
        }
        prev_unk = is_unk;
    }
    if (add_special && t->add_eos && t->eos >= 0 && !vkf_ids_push(out, t->eos)) goto oom;
    free(ps.v);
    return VKF_OK;
oom:
    free(ps.v);
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
}

/* ------------------------------------------------------------------ decode */

static int hexv(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Appends bytes, each byte that does not start a valid UTF-8 sequence as U+FFFD. */
static int put_bytes_checked(vkf_sbuf *o, const char *b, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = vkf_utf8_decode(b + i, n - i, &cp);
        if (cp == VKF_UTF8_INVALID) {
            if (!vkf_sbuf_put(o, "\xef\xbf\xbd", 3)) return 0;
        } else if (!vkf_sbuf_put(o, b + i, l)) {
            return 0;
        }
        i += l;
    }
    return 1;
}

vkf_status vkf_spm_decode(const vkf_tokenizer *t, const int32_t *ids, size_t n, int flags,
                          vkf_sbuf *out) {
    const struct vkf_spm *m = t->spm;
    vkf_sbuf bytes = {0};
    int strip = !(flags & VKF_DECODE_NO_STRIP) && (m->add_dummy_prefix || m->remove_extra_ws) &&
                !m->ws_suffix;
    for (size_t i = 0; i <= n; i++) {
        int32_t id = i < n ? ids[i] : -1;
        int ty = i < n ? t->type[id] : 0;
        const char *s = i < n ? vkf_tok_str(t, id) : "";
        size_t sl = i < n ? t->len[id] : 0;
        if (ty == VKF_TOKEN_BYTE && sl == 6 && hexv(s[3]) >= 0 && hexv(s[4]) >= 0) {
            char c = (char)(hexv(s[3]) * 16 + hexv(s[4]));
            if (!vkf_sbuf_put(&bytes, &c, 1)) goto oom;
            continue;
        }
        if (bytes.n) { /* flush a run of byte pieces */
            if (!put_bytes_checked(out, bytes.p, bytes.n)) goto oom;
            bytes.n = 0;
        }
        if (i == n) break;
        if (ty == VKF_TOKEN_CONTROL) {
            if ((flags & VKF_DECODE_SPECIAL) && !vkf_sbuf_put(out, s, sl)) goto oom;
            continue;
        }
        if (ty == VKF_TOKEN_UNKNOWN) {
            if (!((flags & VKF_DECODE_SPECIAL)
                      ? vkf_sbuf_put(out, s, sl)
                      : vkf_sbuf_put(out, m->unk_surface, m->unk_surface_len)))
                goto oom;
            continue;
        }
        /* the first "▁" of the text is the dummy prefix */
        if (strip && out->n == 0 && sl >= 3 && memcmp(s, k_ws, 3) == 0) s += 3, sl -= 3;
        for (size_t k = 0; k < sl;) {
            if (sl - k >= 3 && memcmp(s + k, k_ws, 3) == 0) {
                if (!vkf_sbuf_put(out, " ", 1)) goto oom;
                k += 3;
            } else {
                if (!vkf_sbuf_put(out, s + k, 1)) goto oom;
                k++;
            }
        }
    }
    free(bytes.p);
    return VKF_OK;
oom:
    free(bytes.p);
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while decoding", t->name);
}

/* ------------------------------------------------------------------ loading */

void vkf_spm_free(struct vkf_spm *m) {
    if (!m) return;
    vkf_charsmap_free(&m->charsmap);
    vkf_strmap_free(&m->pieces);
    vkf_strmap_free(&m->reserved);
    vkf_trie_free(&m->trie);
    vkf_trie_free(&m->user);
    free(m->unk_surface);
    free(m->norm.p);
    free(m);
}

typedef struct spm_spec {
    int64_t model_type, unk_id, bos_id, eos_id, pad_id;
    int byte_fallback, ws_suffix;
    const uint8_t *unk_surface;
    size_t unk_surface_len;
    int add_dummy_prefix, remove_extra_ws, escape_ws;
    const uint8_t *charsmap;
    size_t charsmap_len;
} spm_spec;

static void parse_trainer(pb r, spm_spec *sp) {
    uint32_t f;
    int w;
    while (pb_next(&r, &f, &w)) {
        if (w == 0 && (f == 3 || f == 24 || f == 35 || (f >= 40 && f <= 43))) {
            int64_t v = (int64_t)pb_varint(&r);
            if (f == 3)
                sp->model_type = v;
            else if (f == 24)
                sp->ws_suffix = v != 0;
            else if (f == 35)
                sp->byte_fallback = v != 0;
            else if (f == 40)
                sp->unk_id = (int32_t)v;
            else if (f == 41)
                sp->bos_id = (int32_t)v;
            else if (f == 42)
                sp->eos_id = (int32_t)v;
            else
                sp->pad_id = (int32_t)v;
        } else if (w == 2 && f == 44) {
            pb_bytes(&r, &sp->unk_surface, &sp->unk_surface_len);
        } else {
            pb_skip(&r, w);
        }
    }
}

static void parse_normalizer(pb r, spm_spec *sp) {
    uint32_t f;
    int w;
    while (pb_next(&r, &f, &w)) {
        if (w == 0 && f >= 3 && f <= 5) {
            int v = pb_varint(&r) != 0;
            if (f == 3)
                sp->add_dummy_prefix = v;
            else if (f == 4)
                sp->remove_extra_ws = v;
            else
                sp->escape_ws = v;
        } else if (w == 2 && f == 2) {
            pb_bytes(&r, &sp->charsmap, &sp->charsmap_len);
        } else {
            pb_skip(&r, w);
        }
    }
}

/* After the pieces are set: the piece maps, tries and byte pieces (both front ends). */
static vkf_status spm_index(vkf_tokenizer *t, struct vkf_spm *m, const char *name) {
    if (m->unk < 0) {
        return vkf_error(VKF_ERROR_FORMAT, "%s: the model has no unknown piece (type UNKNOWN)",
                         name);
    }
    if (!vkf_strmap_init(&m->pieces, (size_t)t->n_vocab) || !vkf_strmap_init(&m->reserved, 300) ||
        !vkf_trie_init(&m->trie, m->model_type == SPM_UNIGRAM ? 4 * (size_t)t->n_vocab : 1) ||
        !vkf_trie_init(&m->user, 16))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    for (int b = 0; b < 256; b++)
        m->byte_id[b] = -1;
    for (int32_t k = 0; k < t->n_vocab; k++) {
        int ty = t->type[k];
        const char *s = vkf_tok_str(t, k);
        size_t l = t->len[k];
        if (ty == VKF_TOKEN_NORMAL || ty == VKF_TOKEN_USER_DEFINED || ty == VKF_TOKEN_UNUSED) {
            if (!vkf_strmap_put(&m->pieces, s, l, k))
                return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
            if (m->model_type == SPM_UNIGRAM && !vkf_trie_insert(&m->trie, s, l, k))
                return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
            if (ty == VKF_TOKEN_USER_DEFINED) {
                if (!vkf_trie_insert(&m->user, s, l, k))
                    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
                m->has_user = 1;
            }
        } else {
            if (!vkf_strmap_put(&m->reserved, s, l, k))
                return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
            if (ty == VKF_TOKEN_BYTE && l == 6 && hexv(s[3]) >= 0 && hexv(s[4]) >= 0)
                m->byte_id[hexv(s[3]) * 16 + hexv(s[4])] = k;
        }
    }
    if (!vkf_trie_freeze(&m->trie) || !vkf_trie_freeze(&m->user))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    if (m->model_type == SPM_BPE && !m->ws_suffix) {
        m->ws_split = 1; /* unless a piece has U+2581 after some other character */
        for (int32_t k = 0; k < t->n_vocab && m->ws_split; k++) {
            int ty = t->type[k];
            if (ty != VKF_TOKEN_NORMAL && ty != VKF_TOKEN_USER_DEFINED && ty != VKF_TOKEN_UNUSED)
                continue;
            const char *p = vkf_tok_str(t, k), *end = p + t->len[k];
            while (end - p >= 3 && memcmp(p, k_ws, 3) == 0)
                p += 3;
            if (memmem(p, (size_t)(end - p), k_ws, 3)) m->ws_split = 0;
        }
    }
    return VKF_OK;
}

vkf_status vkf_tokenizer_from_spm_memory(const void *data, size_t size, const char *name,
                                         vkf_tokenizer **out) {
    *out = NULL;
    pb r = {data, (const uint8_t *)data + size, 0};
    spm_spec sp = {.model_type = SPM_UNIGRAM,
                   .unk_id = 0,
                   .bos_id = 1,
                   .eos_id = 2,
                   .pad_id = -1,
                   .add_dummy_prefix = 1,
                   .remove_extra_ws = 1,
                   .escape_ws = 1};
    uint64_t n = 0;
    size_t pool = 0;
    uint32_t f;
    int w;
    /* pass 1: count pieces and read the specs */
    while (pb_next(&r, &f, &w)) {
        const uint8_t *s;
        size_t l;
        if (w == 2 && (f == 1 || f == 2 || f == 3)) {
            if (!pb_bytes(&r, &s, &l)) break;
            pb sub = {s, s + l, 0};
            if (f == 1) {
                uint32_t f2;
                int w2;
                n++;
                while (pb_next(&sub, &f2, &w2)) {
                    const uint8_t *ps;
                    size_t pl;
                    if (f2 == 1 && w2 == 2 && pb_bytes(&sub, &ps, &pl))
                        pool += pl;
                    else
                        pb_skip(&sub, w2);
                }
                if (sub.bad) r.bad = 1;
            } else if (f == 2) {
                parse_trainer(sub, &sp);
            } else {
                parse_normalizer(sub, &sp);
            }
        } else {
            pb_skip(&r, w);
        }
    }
    if (r.bad)
        return vkf_error(VKF_ERROR_FORMAT, "%s: not a valid SentencePiece model (protobuf)", name);
    if (!n) return vkf_error(VKF_ERROR_FORMAT, "%s: SentencePiece model has no pieces", name);
    if (n > (1u << 26))
        return vkf_error(VKF_ERROR_FORMAT, "%s: %llu pieces is too many", name,
                         (unsigned long long)n);
    if (sp.model_type < SPM_UNIGRAM || sp.model_type > SPM_CHAR)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: trainer_spec.model_type %lld is not supported "
                         "(1 unigram, 2 bpe, 3 word, 4 char are)",
                         name, (long long)sp.model_type);
    vkf_tokenizer *t;
    VKF_TRY(vkf_tok_create(VKF_TOK_SPM, name, (int64_t)n, pool, &t));
    vkf_status st = VKF_OK;
    struct vkf_spm *m = calloc(1, sizeof *m);
    if (!m || !(t->score = malloc(n * sizeof *t->score))) {
        free(m);
        goto oom;
    }
    t->spm = m;
    m->model_type = (int)sp.model_type;
    m->add_dummy_prefix = sp.add_dummy_prefix;
    m->remove_extra_ws = sp.remove_extra_ws;
    m->escape_ws = sp.escape_ws;
    m->ws_suffix = sp.ws_suffix;
    m->byte_fallback = sp.byte_fallback;
    m->unk = -1;
    m->min_score = FLT_MAX;
    m->max_score = FLT_MIN; /* sentencepiece starts from FLT_MIN, the smallest positive float */
    if ((st = vkf_charsmap_init(sp.charsmap, sp.charsmap_len, name, &m->charsmap)) != VKF_OK)
        goto fail;
    const char *us = sp.unk_surface ? (const char *)sp.unk_surface : " \xe2\x81\x87 ";
    m->unk_surface_len = sp.unk_surface ? sp.unk_surface_len : strlen(us);
    if (!(m->unk_surface = malloc(m->unk_surface_len + 1))) goto oom;
    memcpy(m->unk_surface, us, m->unk_surface_len);
    /* pass 2: the pieces */
    r = (pb){data, (const uint8_t *)data + size, 0};
    uint64_t i = 0;
    while (pb_next(&r, &f, &w)) {
        const uint8_t *s;
        size_t l;
        if (!(w == 2 && f == 1)) {
            pb_skip(&r, w);
            continue;
        }
        pb_bytes(&r, &s, &l);
        pb sub = {s, s + l, 0};
        const uint8_t *piece = (const uint8_t *)"";
        size_t pl = 0;
        float score = 0;
        int64_t type = VKF_TOKEN_NORMAL;
        uint32_t f2;
        int w2;
        while (pb_next(&sub, &f2, &w2)) {
            if (f2 == 1 && w2 == 2)
                pb_bytes(&sub, &piece, &pl);
            else if (f2 == 2 && w2 == 5)
                score = pb_float(&sub);
            else if (f2 == 3 && w2 == 0)
                type = (int64_t)pb_varint(&sub);
            else
                pb_skip(&sub, w2);
        }
        if (type < VKF_TOKEN_NORMAL || type > VKF_TOKEN_BYTE) {
            st = vkf_error(VKF_ERROR_FORMAT, "%s: piece %llu: type %lld is not a piece type (1..6)",
                           name, (unsigned long long)i, (long long)type);
            goto fail;
        }
        if (!pl) {
            st =
                vkf_error(VKF_ERROR_FORMAT, "%s: piece %llu is empty", name, (unsigned long long)i);
            goto fail;
        }
        vkf_tok_set(t, (int32_t)i, (const char *)piece, pl, (int)type);
        t->score[i] = score;
        if (type == VKF_TOKEN_NORMAL) {
            if (score < m->min_score) m->min_score = score;
            if (score > m->max_score) m->max_score = score;
        }
        if (type == VKF_TOKEN_UNKNOWN && m->unk < 0) m->unk = (int32_t)i;
        i++;
    }
    if ((st = spm_index(t, m, name)) != VKF_OK) goto fail;
    t->unk = m->unk;
    t->bos = sp.bos_id >= 0 && sp.bos_id < (int64_t)n ? (int32_t)sp.bos_id : -1;
    t->eos = sp.eos_id >= 0 && sp.eos_id < (int64_t)n ? (int32_t)sp.eos_id : -1;
    t->pad = sp.pad_id >= 0 && sp.pad_id < (int64_t)n ? (int32_t)sp.pad_id : -1;
    t->add_bos = t->bos >= 0;
    t->add_eos = 0;
    t->add_space_prefix = m->add_dummy_prefix;
    if ((st = vkf_tok_finish(t)) != VKF_OK) goto fail;
    *out = t;
    return VKF_OK;
oom:
    st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
fail:
    vkf_tokenizer_free(t);
    return st;
}

/* A GGUF "t5" vocabulary (llama.cpp's UGM): the same Unigram model from the GGUF arrays
 * (tokens, scores, token_type), the charsmap from tokenizer.ggml.precompiled_charsmap, the
 * dummy prefix from add_space_prefix (default on) and remove_extra_whitespaces (default off);
 * llama.cpp's defaults for the ids (eos 1, unk 2, pad 0, no bos) and for add_eos (on). Special
 * tokens are cut out before the model as for every GGUF (tokenizer.c). */
vkf_status vkf_tokenizer_spm_from_gguf(const vkf_gguf *g, vkf_tokenizer **out) {
    *out = NULL;
    const char *name = vkf_gguf_path(g);
    const vkf_gguf_value *tokens, *scores, *types, *cmap;
    VKF_TRY(vkf_gguf_require_arr(g, "tokenizer.ggml.tokens", VKF_GGUF_TYPE_STRING, &tokens));
    VKF_TRY(vkf_gguf_require_arr(g, "tokenizer.ggml.scores", -1, &scores));
    VKF_TRY(vkf_gguf_get_arr(g, "tokenizer.ggml.token_type", -1, &types));
    VKF_TRY(vkf_gguf_get_arr(g, "tokenizer.ggml.precompiled_charsmap", -1, &cmap));
    uint64_t n = tokens->count;
    if (!n || n > (1u << 26))
        return vkf_error(VKF_ERROR_FORMAT, "%s: key tokenizer.ggml.tokens: %llu tokens", name,
                         (unsigned long long)n);
    if (scores->count != n || (types && types->count != n))
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: keys tokenizer.ggml.scores / token_type: expected %llu entries (one "
                         "per token)",
                         name, (unsigned long long)n);
    size_t pool = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t l;
        vkf_gguf_arr_str(tokens, i, &l);
        pool += l;
    }
    vkf_tokenizer *t;
    VKF_TRY(vkf_tok_create(VKF_TOK_SPM, name, (int64_t)n, pool, &t));
    vkf_status st = VKF_OK;
    uint8_t *blob = NULL;
    struct vkf_spm *m = calloc(1, sizeof *m);
    if (!m || !(t->score = malloc(n * sizeof *t->score))) {
        free(m);
        goto oom;
    }
    t->spm = m;
    t->gguf_specials = 1;
    m->model_type = SPM_UNIGRAM;
    m->escape_ws = 1;
    m->unk = -1;
    m->min_score = FLT_MAX;
    m->max_score = FLT_MIN;
    if ((st = vkf_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", 1, &m->add_dummy_prefix)) ||
        (st = vkf_gguf_get_bool(g, "tokenizer.ggml.remove_extra_whitespaces", 0,
                                &m->remove_extra_ws)))
        goto fail;
    if (cmap && cmap->count) {
        if (!(blob = malloc(cmap->count))) goto oom;
        for (uint64_t i = 0; i < cmap->count; i++)
            blob[i] = (uint8_t)vkf_gguf_arr_int(cmap, i);
        if ((st = vkf_charsmap_init(blob, cmap->count, name, &m->charsmap)) != VKF_OK) goto fail;
    }
    static const char unk_surface[] = " \xe2\x81\x87 ";
    m->unk_surface_len = sizeof unk_surface - 1;
    if (!(m->unk_surface = malloc(m->unk_surface_len + 1))) goto oom;
    memcpy(m->unk_surface, unk_surface, m->unk_surface_len + 1);
    for (uint64_t i = 0; i < n; i++) {
        size_t l;
        const char *piece = vkf_gguf_arr_str(tokens, i, &l);
        int64_t type = types ? vkf_gguf_arr_int(types, i) : VKF_TOKEN_NORMAL;
        if (type == 0) type = VKF_TOKEN_NORMAL;
        if (type < VKF_TOKEN_NORMAL || type > VKF_TOKEN_BYTE) {
            st = vkf_error(VKF_ERROR_FORMAT,
                           "%s: key tokenizer.ggml.token_type: entry %llu: type %lld is not a "
                           "token type (0..6)",
                           name, (unsigned long long)i, (long long)type);
            goto fail;
        }
        vkf_tok_set(t, (int32_t)i, piece, l, (int)type);
        float score = (float)vkf_gguf_arr_float(scores, i);
        t->score[i] = score;
        if (type == VKF_TOKEN_NORMAL) {
            if (score < m->min_score) m->min_score = score;
            if (score > m->max_score) m->max_score = score;
        }
        if (type == VKF_TOKEN_UNKNOWN && m->unk < 0) m->unk = (int32_t)i;
    }
    t->bos = -1;
    t->eos = n > 1 ? 1 : -1;
    t->unk = m->unk >= 0 ? m->unk : n > 2 ? 2 : -1;
    t->pad = 0;
    static const struct {
        const char *key;
        size_t off;
    } ids[] = {
        {"tokenizer.ggml.bos_token_id", offsetof(vkf_tokenizer, bos)},
        {"tokenizer.ggml.eos_token_id", offsetof(vkf_tokenizer, eos)},
        {"tokenizer.ggml.unknown_token_id", offsetof(vkf_tokenizer, unk)},
        {"tokenizer.ggml.padding_token_id", offsetof(vkf_tokenizer, pad)},
        {"tokenizer.ggml.seperator_token_id", offsetof(vkf_tokenizer, sep)},
    };
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        if (!vkf_gguf_find(g, ids[k].key)) continue;
        uint32_t v;
        if ((st = vkf_gguf_require_u32(g, ids[k].key, &v)) != VKF_OK) goto fail;
        if (v >= (uint32_t)n) {
            st = vkf_error(VKF_ERROR_FORMAT, "%s: key %s: token id %u is out of range [0, %llu)",
                           name, ids[k].key, v, (unsigned long long)n);
            goto fail;
        }
        *(int32_t *)((char *)t + ids[k].off) = (int32_t)v;
    }
    m->unk = t->unk;
    if ((st = vkf_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", 0, &t->add_bos)) ||
        (st = vkf_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", 1, &t->add_eos)) ||
        (st = vkf_gguf_get_bool(g, "tokenizer.ggml.add_sep_token", 0, &t->add_sep)))
        goto fail;
    t->add_space_prefix = m->add_dummy_prefix;
    if ((st = spm_index(t, m, name)) != VKF_OK) goto fail;
    if ((st = vkf_tok_finish(t)) != VKF_OK) goto fail;
    free(blob);
    *out = t;
    return VKF_OK;
oom:
    st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
fail:
    free(blob);
    vkf_tokenizer_free(t);
    return st;
}

vkf_status vkf_tokenizer_from_spm_file(const char *path, vkf_tokenizer **out) {
    *out = NULL;
    vkf_mapfile mf = {0};
    VKF_TRY(vkf_mapfile_open(path, &mf));
    vkf_status s =
        vkf_tokenizer_from_spm_memory(mf.data ? (const void *)mf.data : "", mf.size, path, out);
    vkf_mapfile_close(&mf);
    return s;
}

const char *vkf_spm_model_name(const struct vkf_spm *m) {
    switch (m->model_type) {
    case SPM_UNIGRAM: return "spm-unigram";
    case SPM_BPE: return "spm-bpe";
    case SPM_CHAR: return "spm-char";
    default: return "spm-word";
    }
}
