/* Tokenizer common parts: vocabulary storage, special-token splitting, the encode/decode driver
 * and the GGUF constructor. The per-algorithm code is in tok_gpt2.c, tok_llama.c, tok_char.c. */
#include "tokenizer/tokenizer.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "tokenizer/pretok.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

/* ------------------------------------------------------------------ small containers */

int vkf_ids_push(vkf_ids *a, int32_t id) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        int32_t *v = realloc(a->v, cap * sizeof *v);
        if (!v) return 0;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = id;
    return 1;
}

static int bigram_less(const vkf_bigram *x, const vkf_bigram *y) {
    return x->key < y->key || (x->key == y->key && x->left < y->left);
}

int vkf_bigram_push(vkf_bigram_heap *h, vkf_bigram b) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        vkf_bigram *v = realloc(h->v, cap * sizeof *v);
        if (!v) return 0;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) { /* sift up */
        size_t p = (i - 1) / 2;
        if (!bigram_less(&b, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = b;
    return 1;
}

int vkf_bigram_pop(vkf_bigram_heap *h, vkf_bigram *out) {
    if (!h->n) return 0;
    *out = h->v[0];
    vkf_bigram last = h->v[--h->n];
    size_t i = 0;
    for (;;) { /* sift down */
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && bigram_less(&h->v[c + 1], &h->v[c])) c++;
        if (!bigram_less(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return 1;
}

int vkf_tok_reserve_symbols(vkf_tokenizer *t, size_t n) {
    if (n <= t->sym_cap) return 1;
    size_t cap = t->sym_cap ? t->sym_cap : 256;
    while (cap < n)
        cap *= 2;
    vkf_symbol *s = realloc(t->sym, cap * sizeof *s);
    if (!s) return 0;
    t->sym = s;
    t->sym_cap = cap;
    return 1;
}

int vkf_tok_reserve_work(vkf_tokenizer *t, size_t n) {
    if (n <= t->work_cap) return 1;
    size_t cap = t->work_cap ? t->work_cap : 1024;
    while (cap < n)
        cap *= 2;
    char *w = realloc(t->work, cap);
    if (!w) return 0;
    t->work = w;
    t->work_cap = cap;
    return 1;
}

/* ------------------------------------------------------------------ vocabulary */

vkf_status vkf_tok_create(vkf_tok_kind kind, const char *name, int64_t n, size_t pool_bytes,
                          vkf_tokenizer **out) {
    *out = NULL;
    if (n <= 0 || n > INT32_MAX)
        return vkf_error(VKF_ERROR_FORMAT, "%s: vocabulary size %lld is out of range [1, 2^31)",
                         name, (long long)n);
    vkf_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    t->kind = kind;
    t->n_vocab = (int32_t)n;
    t->name = strdup(name);
    t->pool = malloc(pool_bytes + (size_t)n);
    t->off = calloc((size_t)n, sizeof *t->off);
    t->len = calloc((size_t)n, sizeof *t->len);
    t->type = malloc((size_t)n);
    if (!t->name || !t->pool || !t->off || !t->len || !t->type) {
        vkf_tokenizer_free(t);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory for %lld tokens", name,
                         (long long)n);
    }
    memset(t->type, VKF_TOKEN_NORMAL, (size_t)n);
    t->bos = t->eos = t->unk = t->pad = t->sep = -1;
    for (int i = 0; i < VKF_FIM_COUNT; i++)
        t->fim[i] = -1;
    for (int i = 0; i < 256; i++)
        t->byte_token[i] = -1;
    for (int i = 0; i < 324; i++)
        t->unicode_byte[i] = -1;
    *out = t;
    return VKF_OK;
}

void vkf_tok_set(vkf_tokenizer *t, int32_t id, const char *s, size_t len, int type) {
    uint32_t off = id ? t->off[id - 1] + t->len[id - 1] + 1 : 0;
    memcpy(t->pool + off, s, len);
    t->pool[off + len] = 0;
    t->off[id] = off;
    t->len[id] = (uint32_t)len;
    t->type[id] = (uint8_t)type;
}

static int cmp_special(const void *a, const void *b, void *ctx) {
    const vkf_tokenizer *t = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (t->len[x] != t->len[y]) return t->len[x] > t->len[y] ? -1 : 1; /* longest first */
    return x < y ? -1 : x > y;
}

int vkf_tok_add_eog(vkf_tokenizer *t, int32_t id) {
    if (id < 0 || id >= t->n_vocab || vkf_tokenizer_is_eog(t, id)) return 1;
    int32_t *v = realloc(t->eog, (t->n_eog + 1) * sizeof *v);
    if (!v) return 0;
    t->eog = v;
    t->eog[t->n_eog++] = id;
    return 1;
}

/* Spellings llama.cpp treats as end of generation (eot, eom, end of turn, FIM padding). */
static const char *const k_eog_text[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81"
    "of\xe2\x96\x81"
    "sentence\xef\xbd\x9c>" /* DeepSeek */,
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<fim-pad>",
    "<fim_pad>",
    "<reponame>",
    "<file_sep>",
};

vkf_status vkf_tok_finish(vkf_tokenizer *t) {
    if (!vkf_strmap_init(&t->vocab, (size_t)t->n_vocab))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", t->name);
    size_t n_special = 0;
    for (int32_t i = 0; i < t->n_vocab; i++) {
        if (!vkf_strmap_put(&t->vocab, vkf_tok_str(t, i), t->len[i], i)) /* last one wins */
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", t->name);
        if (t->len[i] > t->max_token_len) t->max_token_len = t->len[i];
        int ty = t->type[i];
        if (t->len[i] &&
            (ty == VKF_TOKEN_CONTROL || ty == VKF_TOKEN_UNKNOWN || ty == VKF_TOKEN_USER_DEFINED))
            n_special++;
    }
    t->special = malloc((n_special ? n_special : 1) * sizeof *t->special);
    if (!t->special) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", t->name);
    for (int32_t i = 0; i < t->n_vocab; i++) {
        int ty = t->type[i];
        if (t->len[i] &&
            (ty == VKF_TOKEN_CONTROL || ty == VKF_TOKEN_UNKNOWN || ty == VKF_TOKEN_USER_DEFINED))
            t->special[t->n_special++] = i;
    }
    qsort_r(t->special, t->n_special, sizeof *t->special, cmp_special, t);
    const struct {
        const char *what;
        int32_t id;
    } ids[] = {{"bos", t->bos}, {"eos", t->eos}, {"unk", t->unk}, {"pad", t->pad}};
    for (size_t i = 0; i < 4; i++)
        if (ids[i].id < -1 || ids[i].id >= t->n_vocab)
            return vkf_error(VKF_ERROR_FORMAT, "%s: %s token id %d is out of range [0, %d)",
                             t->name, ids[i].what, ids[i].id, t->n_vocab);
    if (!vkf_tok_add_eog(t, t->eos))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", t->name);
    for (size_t i = 0; i < sizeof k_eog_text / sizeof k_eog_text[0]; i++)
        if (!vkf_tok_add_eog(t, vkf_strmap_get(&t->vocab, k_eog_text[i], strlen(k_eog_text[i]))))
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", t->name);
    if (t->kind == VKF_TOK_LLAMA)
        for (int b = 0; b < 256; b++) {
            char buf[8];
            snprintf(buf, sizeof buf, "<0x%02X>", b);
            t->byte_token[b] = vkf_strmap_get(&t->vocab, buf, 6);
        }
    return VKF_OK;
}

void vkf_tokenizer_free(vkf_tokenizer *t) {
    if (!t) return;
    free(t->name);
    free(t->pool);
    free(t->off);
    free(t->len);
    free(t->type);
    free(t->score);
    free(t->special);
    free(t->eog);
    vkf_strmap_free(&t->vocab);
    vkf_u64map_free(&t->merges);
    vkf_bpe_cache_free(&t->cache);
    free(t->sym);
    free(t->heap.v);
    free(t->work);
    free(t->cps);
    free(t->cp_off);
    free(t->cp_cls);
    vkf_hf_free(t->hf);
    vkf_spm_free(t->spm);
    vkf_pretok_free(t->pre);
    free(t);
}

/* ------------------------------------------------------------------ encode */

/* A piece of the input: a special token (id >= 0) or raw text to tokenize (id == -1). */
typedef struct fragment {
    int32_t id;
    size_t off, len;
} fragment;

typedef struct fragments {
    fragment *v;
    size_t n, cap;
} fragments;

static int frag_push(fragments *f, int32_t id, size_t off, size_t len) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        fragment *v = realloc(f->v, cap * sizeof *v);
        if (!v) return 0;
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = (fragment){id, off, len};
    return 1;
}

/* Cuts special tokens out of the raw text, longest token first, like llama.cpp's
 * tokenizer_st_partition: each special token splits every raw fragment left at that point. */
static vkf_status split_specials(const vkf_tokenizer *t, const char *text, size_t len,
                                 int parse_special, fragments *out) {
    fragments a = {0}, b = {0};
    if (len && !frag_push(&a, -1, 0, len)) goto oom;
    for (size_t k = 0; k < t->n_special; k++) {
        int32_t id = t->special[k];
        if (!parse_special && t->type[id] != VKF_TOKEN_USER_DEFINED) continue;
        const char *s = vkf_tok_str(t, id);
        size_t sl = t->len[id];
        b.n = 0;
        for (size_t i = 0; i < a.n; i++) {
            fragment f = a.v[i];
            if (f.id >= 0 || f.len < sl) {
                if (!frag_push(&b, f.id, f.off, f.len)) goto oom;
                continue;
            }
            size_t pos = f.off, end = f.off + f.len;
            for (;;) {
                const char *hit = memmem(text + pos, end - pos, s, sl);
                if (!hit) break;
                size_t h = (size_t)(hit - text);
                if (h > pos && !frag_push(&b, -1, pos, h - pos)) goto oom;
                if (!frag_push(&b, id, h, sl)) goto oom;
                pos = h + sl;
            }
            if (pos < end && !frag_push(&b, -1, pos, end - pos)) goto oom;
        }
        fragments tmp = a;
        a = b;
        b = tmp;
    }
    free(b.v);
    *out = a;
    return VKF_OK;
oom:
    free(a.v);
    free(b.v);
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
}

vkf_status vkf_tokenizer_encode_ex(vkf_tokenizer *t, const char *text, size_t len, int add_special,
                                   int parse_special, int32_t **ids, size_t *n) {
    *ids = NULL;
    *n = 0;
    if (!text && len) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tokenize: text is NULL");
    vkf_ids out = {0};
    fragments fr = {0};
    vkf_status s = VKF_OK;
    if (t->kind == VKF_TOK_HF || (t->kind == VKF_TOK_SPM && !t->gguf_specials)) {
        s = t->kind == VKF_TOK_HF
                ? vkf_hf_encode(t, text ? text : "", len, add_special, parse_special, &out)
                : vkf_spm_encode(t, text ? text : "", len, add_special, parse_special, &out);
        if (s != VKF_OK) goto fail;
        if (!out.v && !(out.v = malloc(sizeof *out.v))) goto oom;
        *ids = out.v;
        *n = out.n;
        return VKF_OK;
    }
    if (add_special && t->add_bos && t->bos >= 0 && !vkf_ids_push(&out, t->bos)) goto oom;
    if ((s = split_specials(t, text, len, parse_special, &fr)) != VKF_OK) goto fail;
    int prev_special = 1;
    for (size_t i = 0; i < fr.n; i++) {
        const fragment *f = &fr.v[i];
        if (f->id >= 0) {
            if (!vkf_ids_push(&out, f->id)) goto oom;
            prev_special = 1;
            continue;
        }
        switch (t->kind) {
        case VKF_TOK_GPT2: s = vkf_gpt2_encode_text(t, text + f->off, f->len, &out); break;
        case VKF_TOK_LLAMA:
            s = vkf_llama_encode_text(t, text + f->off, f->len, prev_special, &out);
            break;
        case VKF_TOK_CHAR: s = vkf_char_encode_text(t, text + f->off, f->len, &out); break;
        case VKF_TOK_WPM: s = vkf_wpm_encode_text(t, text + f->off, f->len, &out); break;
        case VKF_TOK_SPM: s = vkf_spm_encode(t, text + f->off, f->len, 0, 0, &out); break;
        default: s = vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tokenize: bad tokenizer kind"); break;
        }
        if (s != VKF_OK) goto fail;
        prev_special = 0;
    }
    if (add_special && t->add_eos && t->eos >= 0 && !vkf_ids_push(&out, t->eos)) goto oom;
    if (!out.v && !(out.v = malloc(sizeof *out.v))) goto oom; /* never NULL on success */
    free(fr.v);
    *ids = out.v;
    *n = out.n;
    return VKF_OK;
oom:
    s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
fail:
    free(fr.v);
    free(out.v);
    return s;
}

vkf_status vkf_tokenizer_encode(vkf_tokenizer *t, const char *text, size_t len, int add_special,
                                int32_t **ids, size_t *n) {
    return vkf_tokenizer_encode_ex(t, text, len, add_special, 1, ids, n);
}

/* ------------------------------------------------------------------ decode */

typedef vkf_sbuf strbuf;
#define sb_put vkf_sbuf_put

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Renders an ordinary token of the llama vocabulary: U+2581 -> ' ', optionally dropping one
 * leading space (the one encode prepended). */
static int render_llama(strbuf *b, const char *s, size_t n, int strip) {
    static const char sp[] = "\xe2\x96\x81";
    size_t i = 0;
    if (strip && n >= 3 && memcmp(s, sp, 3) == 0) i = 3;
    while (i < n) {
        if (n - i >= 3 && memcmp(s + i, sp, 3) == 0) {
            if (!sb_put(b, " ", 1)) return 0;
            i += 3;
            continue;
        }
        size_t j = i + 1; /* copy up to the next U+2581 lead byte */
        while (j < n && (uint8_t)s[j] != 0xE2)
            j++;
        if (!sb_put(b, s + i, j - i)) return 0;
        i = j;
    }
    return 1;
}

/* Renders an ordinary GPT-2 token: every stand-in code point back to its byte. */
static int render_gpt2(const vkf_tokenizer *t, strbuf *b, const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t l = vkf_utf8_decode(s + i, n - i, &cp);
        if (cp < 324 && t->unicode_byte[cp] >= 0) {
            char c = (char)t->unicode_byte[cp];
            if (!sb_put(b, &c, 1)) return 0;
        } else if (!sb_put(b, s + i, l)) { /* not byte-level: keep the text as is */
            return 0;
        }
        i += l;
    }
    return 1;
}

vkf_status vkf_tokenizer_decode_ex(const vkf_tokenizer *t, const int32_t *ids, size_t n, int flags,
                                   char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    strbuf b = {0};
    if (!sb_put(&b, "", 0)) goto oom;
    int prev_special = !(flags & VKF_DECODE_NO_STRIP);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= t->n_vocab) {
            free(b.p);
            return vkf_error(VKF_ERROR_TOKEN,
                             "%s: decode: token id %d at position %zu is out of "
                             "range [0, %d)",
                             t->name, ids[i], i, t->n_vocab);
        }
    if (t->kind == VKF_TOK_HF || t->kind == VKF_TOK_SPM) {
        vkf_status s = t->kind == VKF_TOK_HF ? vkf_hf_decode(t, ids, n, flags, &b)
                                             : vkf_spm_decode(t, ids, n, flags, &b);
        if (s != VKF_OK) {
            free(b.p);
            return s;
        }
        *text = b.p;
        *len = b.n;
        return VKF_OK;
    }
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        const char *s = vkf_tok_str(t, id);
        size_t sl = t->len[id];
        int ty = t->type[id];
        int ok = 1;
        if (ty == VKF_TOKEN_CONTROL || ty == VKF_TOKEN_UNKNOWN) {
            if (flags & VKF_DECODE_SPECIAL)
                ok = sb_put(&b, s, sl);
            else if (ty == VKF_TOKEN_UNKNOWN)
                ok = sb_put(&b, "\xef\xbf\xbd", 3); /* U+FFFD */
            prev_special = 1;
        } else if (ty == VKF_TOKEN_USER_DEFINED) {
            ok = sb_put(&b, s, sl);
            prev_special = 1;
        } else if (t->kind == VKF_TOK_LLAMA && ty == VKF_TOKEN_BYTE && sl == 6 && s[0] == '<' &&
                   s[1] == '0' && s[2] == 'x' && hexval(s[3]) >= 0 && hexval(s[4]) >= 0) {
            char c = (char)(hexval(s[3]) * 16 + hexval(s[4]));
            ok = sb_put(&b, &c, 1);
            prev_special = 0;
        } else if (t->kind == VKF_TOK_LLAMA || t->kind == VKF_TOK_WPM) {
            ok = render_llama(&b, s, sl,
                              prev_special && (t->add_space_prefix || t->kind == VKF_TOK_WPM));
            prev_special = 0;
        } else if (t->kind == VKF_TOK_GPT2) {
            ok = render_gpt2(t, &b, s, sl);
        } else {
            ok = sb_put(&b, s, sl);
        }
        if (!ok) goto oom;
    }
    *text = b.p;
    *len = b.n;
    return VKF_OK;
oom:
    free(b.p);
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while decoding", t->name);
}

vkf_status vkf_tokenizer_decode(const vkf_tokenizer *t, const int32_t *ids, size_t n, char **text,
                                size_t *len) {
    return vkf_tokenizer_decode_ex(t, ids, n, 0, text, len);
}

/* ------------------------------------------------------------------ accessors */

int32_t vkf_tokenizer_n_vocab(const vkf_tokenizer *t) { return t->n_vocab; }

const char *vkf_tokenizer_token_text(const vkf_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? vkf_tok_str(t, id) : NULL;
}

int vkf_tokenizer_token_type(const vkf_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? t->type[id] : 0;
}

int32_t vkf_tokenizer_find(const vkf_tokenizer *t, const char *text, size_t len) {
    return vkf_strmap_get(&t->vocab, text, len);
}

int32_t vkf_tokenizer_bos(const vkf_tokenizer *t) { return t->bos; }
int32_t vkf_tokenizer_eos(const vkf_tokenizer *t) { return t->eos; }
int32_t vkf_tokenizer_unk(const vkf_tokenizer *t) { return t->unk; }
int32_t vkf_tokenizer_pad(const vkf_tokenizer *t) { return t->pad; }
size_t vkf_tokenizer_eog(const vkf_tokenizer *t, const int32_t **ids) {
    if (ids) *ids = t->eog;
    return t->n_eog;
}

int vkf_tokenizer_is_eog(const vkf_tokenizer *t, int32_t id) {
    for (size_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return 1;
    return 0;
}

/* llama.cpp's spellings of the FIM tokens (llama-vocab.cpp, the "auto-detect special tokens by
 * text" loop), per vkf_fim_kind, NULL-terminated */
static const char *const k_fim_text[VKF_FIM_COUNT][10] = {
    [VKF_FIM_PRE] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                     "<\xef\xbd\x9c"
                     "fim\xe2\x96\x81"
                     "begin\xef\xbd\x9c>", /* DeepSeek */
                     "<PRE>", "\xe2\x96\x81<PRE>" /* CodeLlama */, "<|code_prefix|>", "<|prefix|>",
                     NULL},
    [VKF_FIM_SUF] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                     "<\xef\xbd\x9c"
                     "fim\xe2\x96\x81"
                     "hole\xef\xbd\x9c>",
                     "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL},
    [VKF_FIM_MID] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                     "<\xef\xbd\x9c"
                     "fim\xe2\x96\x81"
                     "end\xef\xbd\x9c>",
                     "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL},
    [VKF_FIM_PAD] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL},
    [VKF_FIM_REP] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL},
    [VKF_FIM_SEP] = {"<|file_sep|>", NULL},
};

int32_t vkf_tokenizer_fim(const vkf_tokenizer *t, vkf_fim_kind k) {
    if ((unsigned)k >= VKF_FIM_COUNT) return -1;
    if (t->fim[k] >= 0) return t->fim[k];
    for (const char *const *s = k_fim_text[k]; *s; s++) {
        int32_t id = vkf_tokenizer_find(t, *s, strlen(*s));
        if (id >= 0) return id;
    }
    return -1;
}

int vkf_tokenizer_add_bos(const vkf_tokenizer *t) { return t->add_bos; }
int vkf_tokenizer_add_eos(const vkf_tokenizer *t) { return t->add_eos; }
int32_t vkf_tokenizer_sep(const vkf_tokenizer *t) { return t->sep; }
int vkf_tokenizer_add_sep(const vkf_tokenizer *t) { return t->add_sep; }

const char *vkf_tokenizer_kind(const vkf_tokenizer *t) {
    switch (t->kind) {
    case VKF_TOK_GPT2: return "gpt2";
    case VKF_TOK_LLAMA: return "llama";
    case VKF_TOK_CHAR: return "char";
    case VKF_TOK_WPM: return "bert";
    case VKF_TOK_HF: return vkf_hf_model_name(t->hf);
    case VKF_TOK_SPM: return vkf_spm_model_name(t->spm);
    }
    return "?";
}

/* ------------------------------------------------------------------ from GGUF */

/* Reads an optional tokenizer.ggml.*_token_id into *id (left unchanged when absent). */
static vkf_status gguf_token_id(const vkf_gguf *g, const char *key, int32_t n_vocab, int32_t *id) {
    if (!vkf_gguf_find(g, key)) return VKF_OK;
    uint32_t v;
    VKF_TRY(vkf_gguf_require_u32(g, key, &v));
    if (v >= (uint32_t)n_vocab)
        return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: token id %u is out of range [0, %d)",
                         vkf_gguf_path(g), key, v, n_vocab);
    *id = (int32_t)v;
    return VKF_OK;
}

vkf_status vkf_tokenizer_from_gguf(const vkf_gguf *g, vkf_tokenizer **out) {
    *out = NULL;
    const char *path = vkf_gguf_path(g), *model;
    VKF_TRY(vkf_gguf_require_str(g, "tokenizer.ggml.model", &model));
    vkf_tok_kind kind;
    const char *pre = NULL;
    if (strcmp(model, "gpt2") == 0) {
        kind = VKF_TOK_GPT2;
        /* as llama.cpp: no tokenizer.ggml.pre means its "default" set */
        VKF_TRY(vkf_gguf_get_str(g, "tokenizer.ggml.pre", "default", &pre));
        vkf_pretok_info info;
        VKF_TRY(vkf_pretok_from_name(pre, path, NULL, &info)); /* an unknown name fails first */
    } else if (strcmp(model, "llama") == 0) {
        kind = VKF_TOK_LLAMA;
    } else if (strcmp(model, "bert") == 0) {
        kind = VKF_TOK_WPM;
    } else if (strcmp(model, "t5") == 0) {
        return vkf_tokenizer_spm_from_gguf(g, out);
    } else {
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: key tokenizer.ggml.model: tokenizer \"%s\" is not supported "
                         "(gpt2, llama, bert and t5 are)",
                         path, model);
    }
    const vkf_gguf_value *tokens, *types, *scores = NULL;
    VKF_TRY(vkf_gguf_require_arr(g, "tokenizer.ggml.tokens", VKF_GGUF_TYPE_STRING, &tokens));
    VKF_TRY(vkf_gguf_get_arr(g, "tokenizer.ggml.token_type", -1, &types));
    if (kind == VKF_TOK_LLAMA) VKF_TRY(vkf_gguf_get_arr(g, "tokenizer.ggml.scores", -1, &scores));
    uint64_t n = tokens->count;
    if (types && types->count != n)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: key tokenizer.ggml.token_type: expected %llu entries (one per "
                         "token), found %llu",
                         path, (unsigned long long)n, (unsigned long long)types->count);
    if (types && types->elem_type != VKF_GGUF_TYPE_INT32 &&
        types->elem_type != VKF_GGUF_TYPE_UINT32 && types->elem_type != VKF_GGUF_TYPE_INT8 &&
        types->elem_type != VKF_GGUF_TYPE_UINT8 && types->elem_type != VKF_GGUF_TYPE_INT16 &&
        types->elem_type != VKF_GGUF_TYPE_UINT16)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: key tokenizer.ggml.token_type: expected an array of int32, found "
                         "an array of %s",
                         path, vkf_gguf_type_name(types->elem_type));
    if (scores && scores->count != n)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: key tokenizer.ggml.scores: expected %llu entries (one per token), "
                         "found %llu",
                         path, (unsigned long long)n, (unsigned long long)scores->count);
    if (scores && scores->elem_type != VKF_GGUF_TYPE_FLOAT32 &&
        scores->elem_type != VKF_GGUF_TYPE_FLOAT64)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: key tokenizer.ggml.scores: expected an array of float32, found an "
                         "array of %s",
                         path, vkf_gguf_type_name(scores->elem_type));
    size_t pool = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t l;
        vkf_gguf_arr_str(tokens, i, &l);
        if (l > UINT32_MAX / 2 || pool + l > UINT32_MAX / 2)
            return vkf_error(VKF_ERROR_FORMAT, "%s: key tokenizer.ggml.tokens: tokens too long",
                             path);
        pool += l;
    }
    vkf_pretok *pt = NULL;
    vkf_pretok_info pinfo = {0};
    if (pre) VKF_TRY(vkf_pretok_from_name(pre, path, &pt, &pinfo));
    vkf_tokenizer *t;
    vkf_status s = vkf_tok_create(kind, path, (int64_t)n, pool, &t);
    if (s != VKF_OK) {
        vkf_pretok_free(pt);
        return s;
    }
    t->pre = pt;
    t->ignore_merges = pinfo.ignore_merges;
    if (scores && !(t->score = malloc((size_t)n * sizeof *t->score))) {
        s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto fail;
    }
    for (uint64_t i = 0; i < n; i++) {
        size_t l;
        const char *str = vkf_gguf_arr_str(tokens, i, &l);
        int ty = VKF_TOKEN_NORMAL;
        if (types) {
            int64_t v = vkf_gguf_arr_int(types, i);
            if (v < 0 || v > VKF_TOKEN_BYTE) {
                s = vkf_error(VKF_ERROR_FORMAT,
                              "%s: key tokenizer.ggml.token_type: entry %llu: type %lld is not "
                              "a token type (0..6)",
                              path, (unsigned long long)i, (long long)v);
                goto fail;
            }
            ty = v == 0 ? VKF_TOKEN_NORMAL : (int)v; /* 0 = undefined: treat as normal */
        } else if (kind == VKF_TOK_LLAMA && l == 6 && memcmp(str, "<0x", 3) == 0 && str[5] == '>') {
            ty = VKF_TOKEN_BYTE; /* no types: recognise byte tokens by their spelling */
        }
        vkf_tok_set(t, (int32_t)i, str, l, ty);
        if (t->score) t->score[i] = (float)vkf_gguf_arr_float(scores, i);
    }
    if (kind == VKF_TOK_LLAMA) { /* llama.cpp's defaults for SentencePiece vocabularies */
        t->bos = n > 1 ? 1 : -1;
        t->eos = n > 2 ? 2 : -1;
        t->unk = 0;
    }
    if (kind == VKF_TOK_WPM) { /* llama.cpp's defaults: [CLS] text [SEP] */
        t->bos = n > 101 ? 101 : -1;
        t->eos = n > 102 ? 102 : -1;
        t->unk = n > 100 ? 100 : -1;
        t->pad = 0;
        if ((s = gguf_token_id(g, "tokenizer.ggml.seperator_token_id", t->n_vocab, &t->eos)) !=
            VKF_OK)
            goto fail;
    }
    if ((s = gguf_token_id(g, "tokenizer.ggml.bos_token_id", t->n_vocab, &t->bos)) != VKF_OK ||
        (s = gguf_token_id(g, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos)) != VKF_OK ||
        (s = gguf_token_id(g, "tokenizer.ggml.unknown_token_id", t->n_vocab, &t->unk)) != VKF_OK ||
        (s = gguf_token_id(g, "tokenizer.ggml.padding_token_id", t->n_vocab, &t->pad)) != VKF_OK)
        goto fail;
    /* FIM ids; the older keys, when present, win (llama.cpp reads them after the new ones) */
    static const char *const fim_keys[][2] = {
        [VKF_FIM_PRE] = {"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"},
        [VKF_FIM_SUF] = {"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"},
        [VKF_FIM_MID] = {"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"},
        [VKF_FIM_PAD] = {"tokenizer.ggml.fim_pad_token_id", NULL},
        [VKF_FIM_REP] = {"tokenizer.ggml.fim_rep_token_id", NULL},
        [VKF_FIM_SEP] = {"tokenizer.ggml.fim_sep_token_id", NULL},
    };
    for (int k = 0; k < VKF_FIM_COUNT; k++)
        for (int o = 0; o < 2; o++)
            if (fim_keys[k][o] &&
                (s = gguf_token_id(g, fim_keys[k][o], t->n_vocab, &t->fim[k])) != VKF_OK)
                goto fail;
    int is_llama = kind == VKF_TOK_LLAMA, is_wpm = kind == VKF_TOK_WPM;
    if (pinfo.no_bos && !vkf_gguf_find(g, "tokenizer.ggml.bos_token_id")) t->bos = -1;
    if ((s = vkf_gguf_get_bool(g, "tokenizer.ggml.add_bos_token",
                               is_llama || is_wpm || pinfo.add_bos, &t->add_bos)) ||
        (s = vkf_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", is_wpm, &t->add_eos)) ||
        (s = vkf_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", is_llama,
                               &t->add_space_prefix)))
        goto fail;
    if ((s = vkf_tok_finish(t)) != VKF_OK) goto fail;
    static const char *const eog_keys[] = {
        "tokenizer.ggml.eot_token_id",     "tokenizer.ggml.eom_token_id",
        "tokenizer.ggml.fim_pad_token_id", "tokenizer.ggml.fim_rep_token_id",
        "tokenizer.ggml.fim_sep_token_id",
    };
    for (size_t k = 0; k < sizeof eog_keys / sizeof eog_keys[0]; k++) {
        int32_t id = -1;
        if ((s = gguf_token_id(g, eog_keys[k], t->n_vocab, &id)) != VKF_OK) goto fail;
        if (!vkf_tok_add_eog(t, id)) {
            s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
            goto fail;
        }
    }
    /* llama.cpp lets a Kimi-K2 vocabulary go without merges (every word is then split into
     * byte-level characters) */
    if (kind == VKF_TOK_GPT2 && pre && strcmp(pre, "kimi-k2") == 0 &&
        !vkf_gguf_find(g, "tokenizer.ggml.merges")) {
        if ((s = vkf_gpt2_init_bytes(t)) != VKF_OK) goto fail;
    } else if (kind == VKF_TOK_GPT2) {
        const vkf_gguf_value *merges;
        if ((s = vkf_gguf_require_arr(g, "tokenizer.ggml.merges", VKF_GGUF_TYPE_STRING, &merges)))
            goto fail;
        if ((s = vkf_gpt2_init_bytes(t)) != VKF_OK) goto fail;
        if (merges->count > UINT32_MAX) {
            s = vkf_error(VKF_ERROR_FORMAT, "%s: key tokenizer.ggml.merges: too many merges", path);
            goto fail;
        }
        for (uint64_t i = 0; i < merges->count; i++) {
            size_t l;
            const char *m = vkf_gguf_arr_str(merges, i, &l);
            char where[96];
            snprintf(where, sizeof where, "key tokenizer.ggml.merges: entry %llu",
                     (unsigned long long)i);
            if ((s = vkf_gpt2_add_merge(t, m, l, (uint32_t)i, where)) != VKF_OK) goto fail;
        }
    }
    *out = t;
    return VKF_OK;
fail:
    vkf_tokenizer_free(t);
    return s;
}

/* ------------------------------------------------------------------ open_auto */

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static vkf_status open_gguf_tokenizer(const char *path, vkf_tokenizer **out) {
    vkf_gguf *g;
    VKF_TRY(vkf_gguf_open(path, &g));
    vkf_status s = vkf_tokenizer_from_gguf(g, out);
    vkf_gguf_close(g);
    return s;
}

/* Whether a JSON file is a char vocabulary: {"type": "char", ...} (its first key, as the tools
 * write it; src_vocab.json / tgt_vocab.json of encoder-decoders are such files). */
static int is_char_vocab(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char head[256];
    size_t got = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[got] = 0;
    char *p = head;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    if (*p++ != '{') return 0;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    if (strncmp(p, "\"type\"", 6) != 0) return 0;
    p += 6;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' || *p == ':')
        p++;
    return strncmp(p, "\"char\"", 6) == 0;
}

/* A file: by its name, else by its first bytes. */
static vkf_status open_file(const char *path, vkf_tokenizer **out) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (ends_with(base, ".gguf")) return open_gguf_tokenizer(path, out);
    if (ends_with(base, ".model")) return vkf_tokenizer_from_spm_file(path, out);
    if (strcmp(base, "char_vocab.json") == 0) return vkf_tokenizer_char_from_file(path, out);
    if (ends_with(base, ".json") && is_char_vocab(path))
        return vkf_tokenizer_char_from_file(path, out);
    if (strcmp(base, "vocab.json") == 0 || strcmp(base, "merges.txt") == 0) {
        char v[4096], m[4096];
        size_t dir = (size_t)(base - path);
        snprintf(v, sizeof v, "%.*svocab.json", (int)dir, path);
        snprintf(m, sizeof m, "%.*smerges.txt", (int)dir, path);
        return vkf_tokenizer_from_gpt2_files(v, m, out);
    }
    if (ends_with(base, ".json")) return vkf_tokenizer_from_hf_json(path, out);
    FILE *f = fopen(path, "rb");
    if (!f) return vkf_error(VKF_ERROR_IO, "%s: cannot open", path);
    char head[4] = {0};
    size_t got = fread(head, 1, 4, f);
    fclose(f);
    if (got == 4 && memcmp(head, "GGUF", 4) == 0) return open_gguf_tokenizer(path, out);
    if (got && head[0] == '{') return vkf_tokenizer_from_hf_json(path, out);
    return vkf_tokenizer_from_spm_file(path, out);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

vkf_status vkf_tokenizer_open_auto(const char *path, vkf_tokenizer **out) {
    *out = NULL;
    struct stat st;
    if (!path || stat(path, &st) != 0)
        return vkf_error(VKF_ERROR_IO, "%s: no such file or directory", path ? path : "(null)");
    if (!S_ISDIR(st.st_mode)) return open_file(path, out);
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/tokenizer.json", path);
    if (is_file(a)) return vkf_tokenizer_from_hf_json(a, out);
    snprintf(a, sizeof a, "%s/tokenizer.model", path);
    if (is_file(a)) return vkf_tokenizer_from_spm_file(a, out);
    snprintf(a, sizeof a, "%s/vocab.json", path);
    snprintf(b, sizeof b, "%s/merges.txt", path);
    if (is_file(a) && is_file(b)) return vkf_tokenizer_from_gpt2_files(a, b, out);
    snprintf(a, sizeof a, "%s/char_vocab.json", path);
    if (is_file(a)) return vkf_tokenizer_char_from_file(a, out);
    /* the first GGUF file by name */
    DIR *d = opendir(path);
    if (!d) return vkf_error(VKF_ERROR_IO, "%s: cannot read the directory", path);
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!ends_with(e->d_name, ".gguf")) continue;
        char **v = realloc(names, (n + 1) * sizeof *v);
        if (!v || !(v[n] = strdup(e->d_name))) {
            free(v ? v : names);
            closedir(d);
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
        }
        names = v;
        n++;
    }
    closedir(d);
    vkf_status s;
    if (n) {
        qsort(names, n, sizeof *names, cmp_str);
        snprintf(a, sizeof a, "%s/%s", path, names[0]);
        s = open_gguf_tokenizer(a, out);
    } else {
        s = vkf_error(VKF_ERROR_IO,
                      "%s: no tokenizer found (looked for tokenizer.json, tokenizer.model, "
                      "vocab.json + merges.txt, char_vocab.json, *.gguf)",
                      path);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return s;
}
