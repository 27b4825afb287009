/* GPT-2 byte-level BPE: the GPT-2 pre-tokenizer regex written out by hand over Unicode class
 * tables (or another regex pre-tokenizer, pretok.c), then merges by rank (the shared loop of
 * bpe.c, O(n log n) per pre-token), and a cache of pre-token results. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/mapfile.h"
#include "tokenizer/pretok.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

#define BPE_CACHE_MAX_ENTRIES 65536 /* the cache is reset when it holds this many pre-tokens */
#define BPE_CACHE_MAX_KEY 256       /* longer pre-tokens are not cached */
#define BPE_CACHE_CHUNK 65536       /* bytes per key chunk */

/* ------------------------------------------------------------------ byte <-> unicode */

/* GPT-2 maps every byte to a printable stand-in character so that the vocabulary is text:
 * '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand for themselves, and the remaining 68
 * bytes take U+0100, U+0101, ... in byte order. */
uint32_t vkf_gpt2_byte_to_unicode(uint8_t b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return b;
    uint32_t n = 0;
    for (int c = 0; c < b; c++)
        if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE))) n++;
    return 256 + n;
}

vkf_status vkf_gpt2_init_bytes(vkf_tokenizer *t) {
    for (int b = 0; b < 256; b++) {
        uint32_t cp = vkf_gpt2_byte_to_unicode((uint8_t)b);
        char u[4];
        size_t l = vkf_utf8_encode(cp, u);
        t->byte_token[b] = vkf_strmap_get(&t->vocab, u, l);
        t->unicode_byte[cp] = (int16_t)b;
    }
    if (!vkf_u64map_init(&t->merges, 1024))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", t->name);
    return VKF_OK;
}

/* One merge rule "left right" (split at the first space after the first byte, as llama.cpp
 * does). The first occurrence of a pair keeps its rank. */
vkf_status vkf_gpt2_add_merge(vkf_tokenizer *t, const char *line, size_t len, uint32_t rank,
                              const char *where) {
    const char *sp = len > 1 ? memchr(line + 1, ' ', len - 1) : NULL;
    if (!sp || sp + 1 == line + len)
        return vkf_error(VKF_ERROR_FORMAT, "%s: %s: expected \"left right\", found \"%.*s\"",
                         t->name, where, (int)(len > 64 ? 64 : len), line);
    size_t ll = (size_t)(sp - line), rl = len - ll - 1;
    int32_t a = vkf_strmap_get(&t->vocab, line, ll);
    int32_t b = vkf_strmap_get(&t->vocab, sp + 1, rl);
    if (!vkf_tok_reserve_work(t, len)) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "out of memory");
    memcpy(t->work, line, ll);
    memcpy(t->work + ll, sp + 1, rl);
    int32_t m = vkf_strmap_get(&t->vocab, t->work, ll + rl);
    if (a < 0 || b < 0 || m < 0)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: %s: merge \"%.*s\": token \"%.*s\" is not in the "
                         "vocabulary",
                         t->name, where, (int)(len > 64 ? 64 : len), line,
                         (int)(a < 0   ? ll
                               : b < 0 ? rl
                                       : ll + rl),
                         a < 0   ? line
                         : b < 0 ? sp + 1
                                 : t->work);
    if (!vkf_u64map_put_first(&t->merges, (uint64_t)a << 32 | (uint32_t)b,
                              (uint64_t)rank << 32 | (uint32_t)m))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", t->name);
    return VKF_OK;
}

/* ------------------------------------------------------------------ pre-token cache */

void vkf_bpe_cache_free(vkf_bpe_cache *c) {
    vkf_strmap_free(&c->map);
    free(c->ids_off);
    free(c->ids_n);
    free(c->ids);
    for (size_t i = 0; i < c->n_chunks; i++)
        free(c->key_chunks[i]);
    free(c->key_chunks);
    memset(c, 0, sizeof *c);
}

int vkf_bpe_cache_get(const vkf_bpe_cache *c, const char *key, size_t len, vkf_ids *out) {
    if (!c->map.cap) return 0;
    int32_t e = vkf_strmap_get(&c->map, key, len);
    if (e < 0) return 0;
    for (uint32_t i = 0; i < c->ids_n[e]; i++)
        if (!vkf_ids_push(out, c->ids[c->ids_off[e] + i])) return -1;
    return 1;
}

static void cache_reset(vkf_bpe_cache *c) {
    vkf_strmap_clear(&c->map);
    c->n_entries = c->ids_used = 0;
    c->cur_chunk = c->chunk_used = 0;
}

/* Best effort: a failed allocation only means the entry is not cached. */
void vkf_bpe_cache_put(vkf_bpe_cache *c, const char *key, size_t len, const int32_t *ids,
                       size_t n) {
    if (len > BPE_CACHE_MAX_KEY) return;
    if (!c->map.cap && !vkf_strmap_init(&c->map, 4096)) return;
    if (c->n_entries >= BPE_CACHE_MAX_ENTRIES) cache_reset(c);
    if (c->n_entries == c->cap_entries) {
        size_t cap = c->cap_entries ? 2 * c->cap_entries : 1024;
        uint32_t *o = realloc(c->ids_off, cap * sizeof *o);
        if (!o) return;
        c->ids_off = o;
        uint32_t *m = realloc(c->ids_n, cap * sizeof *m);
        if (!m) return;
        c->ids_n = m;
        c->cap_entries = cap;
    }
    if (c->ids_used + n > c->ids_cap) {
        size_t cap = c->ids_cap ? c->ids_cap : 4096;
        while (cap < c->ids_used + n)
            cap *= 2;
        int32_t *v = realloc(c->ids, cap * sizeof *v);
        if (!v) return;
        c->ids = v;
        c->ids_cap = cap;
    }
    if (!c->n_chunks || c->chunk_used + len > BPE_CACHE_CHUNK) { /* next key chunk */
        if (c->n_chunks) c->cur_chunk++;
        if (c->cur_chunk >= c->n_chunks || !c->n_chunks) {
            char **kc = realloc(c->key_chunks, (c->n_chunks + 1) * sizeof *kc);
            if (!kc) return;
            c->key_chunks = kc;
            if (!(kc[c->n_chunks] = malloc(BPE_CACHE_CHUNK))) return;
            c->cur_chunk = c->n_chunks++;
        }
        c->chunk_used = 0;
    }
    char *k = c->key_chunks[c->cur_chunk] + c->chunk_used;
    memcpy(k, key, len);
    if (!vkf_strmap_put(&c->map, k, len, (int32_t)c->n_entries)) return;
    c->chunk_used += len;
    if (n) memcpy(c->ids + c->ids_used, ids, n * sizeof *ids);
    c->ids_off[c->n_entries] = (uint32_t)c->ids_used;
    c->ids_n[c->n_entries] = (uint32_t)n;
    c->ids_used += n;
    c->n_entries++;
}

/* ------------------------------------------------------------------ BPE of one pre-token */

/* Merge priority: the rank of the rule (left, right) -> merged (lowest first). */
int vkf_bpe_rank_pair(void *ctx, const vkf_symbol *l, const vkf_symbol *r, double *key,
                      int32_t *id) {
    const vkf_tokenizer *t = ctx;
    uint64_t v;
    if (l->id < 0 || r->id < 0 ||
        !vkf_u64map_get(&t->merges, (uint64_t)(uint32_t)l->id << 32 | (uint32_t)r->id, &v))
        return 0;
    *key = (double)(v >> 32);
    *id = (int32_t)(uint32_t)v;
    return 1;
}

/* ignore_merges: the id of the pre-token's byte-level text when it is a token, else -1 */
static int32_t whole_token(vkf_tokenizer *t, const char *s, size_t n) {
    if (n > 4096 || !vkf_tok_reserve_work(t, 2 * n)) return -1;
    size_t l = 0;
    for (size_t i = 0; i < n; i++)
        l += vkf_utf8_encode(vkf_gpt2_byte_to_unicode((uint8_t)s[i]), t->work + l);
    return vkf_strmap_get(&t->vocab, t->work, l);
}

static vkf_status bpe_piece(vkf_tokenizer *t, const char *s, size_t n, vkf_ids *out) {
    int hit = vkf_bpe_cache_get(&t->cache, s, n, out);
    if (hit < 0) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "out of memory while tokenizing");
    if (hit) return VKF_OK;
    if (t->ignore_merges) {
        int32_t id = whole_token(t, s, n);
        if (id >= 0) {
            if (!vkf_ids_push(out, id)) goto oom;
            vkf_bpe_cache_put(&t->cache, s, n, &id, 1);
            return VKF_OK;
        }
    }
    if (n > INT32_MAX || !vkf_tok_reserve_symbols(t, n))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
    /* one symbol per byte: the byte-level text has exactly one character per byte */
    vkf_symbol *sym = t->sym;
    for (size_t i = 0; i < n; i++) {
        sym[i].prev = (int32_t)i - 1;
        sym[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
        sym[i].id = t->byte_token[(uint8_t)s[i]];
        sym[i].n = 1;
    }
    if (!vkf_bpe_merge(t, (int32_t)n, vkf_bpe_rank_pair, t)) goto oom;
    size_t first = out->n;
    for (int32_t i = 0; i >= 0; i = sym[i].next) {
        int32_t id = sym[i].id;
        /* a byte whose stand-in character is not a token (Falcon has no tokens for some
         * control bytes): unk, or nothing when there is no unk, as llama.cpp and the tokenizers
         * library drop it */
        if (id < 0) id = t->unk;
        if (id >= 0 && !vkf_ids_push(out, id)) goto oom;
    }
    if (out->n > first) vkf_bpe_cache_put(&t->cache, s, n, out->v + first, out->n - first);
    return VKF_OK;
oom:
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
}

/* ------------------------------------------------------------------ pre-tokenizer */

/* End (exclusive, in code points) of the GPT-2 regex match that starts at i:
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * Alternatives are tried in order, as the regex engine does. */
size_t vkf_gpt2_match(const uint32_t *cp, const uint8_t *cls, size_t n, size_t i) {
    if (cp[i] == '\'' && i + 1 < n) {
        uint32_t c1 = cp[i + 1];
        if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return i + 2;
        if (i + 2 < n) {
            uint32_t c2 = cp[i + 2];
            if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l'))
                return i + 3;
        }
    }
    /* " ?X+" for X = letter, number, other: the optional space only when X follows it */
    size_t j = (cp[i] == ' ' && i + 1 < n && cls[i + 1] != VKF_UCAT_SPACE) ? i + 1 : i;
    if (cls[j] != VKF_UCAT_SPACE) {
        uint8_t c = cls[j];
        while (j < n && cls[j] == c)
            j++;
        return j;
    }
    /* whitespace run [i, k): \s+(?!\S) leaves the last space to the next word, \s+ takes one */
    size_t k = i;
    while (k < n && cls[k] == VKF_UCAT_SPACE)
        k++;
    if (k == n) return n;
    if (k - 1 > i) return k - 1;
    return i + 1;
}

vkf_status vkf_gpt2_encode_text(vkf_tokenizer *t, const char *s, size_t n, vkf_ids *out) {
    if (t->pre) { /* a regex pre-tokenizer */
        const uint32_t *w;
        size_t nw;
        if (!vkf_pretok_split(t->pre, s, n, &w, &nw))
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing",
                             t->name);
        for (size_t i = 0; i < nw; i++)
            VKF_TRY(bpe_piece(t, s + w[2 * i], w[2 * i + 1] - w[2 * i], out));
        return VKF_OK;
    }
    if (n + 1 > t->cps_cap) {
        size_t cap = t->cps_cap ? t->cps_cap : 1024;
        while (cap < n + 1)
            cap *= 2;
        uint32_t *a = realloc(t->cps, cap * sizeof *a);
        if (a) t->cps = a;
        uint32_t *b = realloc(t->cp_off, cap * sizeof *b);
        if (b) t->cp_off = b;
        uint8_t *c = realloc(t->cp_cls, cap);
        if (c) t->cp_cls = c;
        if (!a || !b || !c)
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing",
                             t->name);
        t->cps_cap = cap;
    }
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = vkf_utf8_decode(s + i, n - i, &cp);
        t->cps[m] = cp;
        t->cp_off[m] = (uint32_t)i;
        t->cp_cls[m] = (uint8_t)vkf_unicode_category(cp);
        m++;
        i += l;
    }
    t->cp_off[m] = (uint32_t)n;
    for (size_t i = 0; i < m;) {
        size_t e = vkf_gpt2_match(t->cps, t->cp_cls, m, i);
        VKF_TRY(bpe_piece(t, s + t->cp_off[i], t->cp_off[e] - t->cp_off[i], out));
        i = e;
    }
    return VKF_OK;
}

/* ------------------------------------------------------------------ vocab.json + merges.txt */

vkf_status vkf_tokenizer_from_gpt2_files(const char *vocab_path, const char *merges_path,
                                         vkf_tokenizer **out) {
    *out = NULL;
    vkf_mapfile vm = {0}, mm = {0};
    cJSON *root = NULL;
    const cJSON **items = NULL;
    vkf_tokenizer *t = NULL;
    vkf_status s = vkf_mapfile_open(vocab_path, &vm);
    if (s != VKF_OK) return s;
    if (vm.size > UINT32_MAX) {
        s = vkf_error(VKF_ERROR_FORMAT, "%s: file too large for a vocabulary", vocab_path);
        goto done;
    }
    root = cJSON_ParseWithLength(vm.data ? (const char *)vm.data : "", vm.size);
    if (!cJSON_IsObject(root)) {
        s = vkf_error(VKF_ERROR_FORMAT, "%s: expected a JSON object {\"token\": id, ...}",
                      vocab_path);
        goto done;
    }
    int n = cJSON_GetArraySize(root);
    if (n <= 0) {
        s = vkf_error(VKF_ERROR_FORMAT, "%s: the vocabulary is empty", vocab_path);
        goto done;
    }
    items = calloc((size_t)n, sizeof *items); /* the JSON entry of each id */
    if (!items) {
        s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", vocab_path);
        goto done;
    }
    size_t pool = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (!cJSON_IsNumber(e) || v < 0 || v >= n || v != (double)(int32_t)v) {
            s = vkf_error(VKF_ERROR_FORMAT,
                          "%s: token \"%.64s\": expected an integer id in [0, %d) (ids must be "
                          "dense), found %s",
                          vocab_path, e->string, n,
                          cJSON_IsNumber(e) ? "an out-of-range number" : "a non-number");
            goto done;
        }
        int32_t id = (int32_t)v;
        if (items[id]) {
            s = vkf_error(VKF_ERROR_FORMAT, "%s: id %d is used by \"%.64s\" and \"%.64s\"",
                          vocab_path, id, items[id]->string, e->string);
            goto done;
        }
        items[id] = e;
        pool += strlen(e->string);
    }
    if ((s = vkf_tok_create(VKF_TOK_GPT2, vocab_path, n, pool, &t)) != VKF_OK) goto done;
    for (int32_t id = 0; id < n; id++) {
        const char *str = items[id]->string;
        int special = strcmp(str, "<|endoftext|>") == 0;
        vkf_tok_set(t, id, str, strlen(str), special ? VKF_TOKEN_CONTROL : VKF_TOKEN_NORMAL);
        if (special) t->bos = t->eos = t->unk = id;
    }
    if ((s = vkf_tok_finish(t)) != VKF_OK || (s = vkf_gpt2_init_bytes(t)) != VKF_OK) goto done;

    if ((s = vkf_mapfile_open(merges_path, &mm)) != VKF_OK) goto done;
    free(t->name); /* merge errors name the merges file */
    if (!(t->name = strdup(merges_path))) {
        s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", merges_path);
        goto done;
    }
    const char *p = (const char *)mm.data, *end = p + mm.size;
    uint32_t rank = 0;
    for (size_t line = 1; p && p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        size_t len = (size_t)(e - p);
        if (len && p[len - 1] == '\r') len--;
        if (len && !(line == 1 && len >= 8 && memcmp(p, "#version", 8) == 0)) {
            char where[48];
            snprintf(where, sizeof where, "line %zu", line);
            if ((s = vkf_gpt2_add_merge(t, p, len, rank++, where)) != VKF_OK) goto done;
        }
        p = nl ? nl + 1 : end;
    }
    free(t->name);
    if (!(t->name = strdup(vocab_path))) {
        s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", vocab_path);
        goto done;
    }
done:
    if (s != VKF_OK) {
        vkf_tokenizer_free(t);
        t = NULL;
    }
    cJSON_Delete(root);
    free(items);
    vkf_mapfile_close(&vm);
    vkf_mapfile_close(&mm);
    *out = t;
    return s;
}
