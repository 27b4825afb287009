#include "tokenizer/unicode.h"

#include <stdlib.h>

#include "tables/unicode_tables.h"

/* ------------------------------------------------------------------ UTF-8 */

size_t vkf_utf8_decode(const char *str, size_t n, uint32_t *cp) {
    const uint8_t *s = (const uint8_t *)str;
    uint8_t b = s[0];
    *cp = VKF_UTF8_INVALID;
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if ((b & 0xE0) == 0xC0) {
        len = 2, v = b & 0x1F, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
        len = 3, v = b & 0x0F, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
        len = 4, v = b & 0x07, min = 0x10000;
    } else {
        return 1; /* continuation byte or 0xF8..0xFF */
    }
    if (len > n) return 1;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 1;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 1;
    *cp = v;
    return len;
}

size_t vkf_utf8_encode(uint32_t cp, char *out) {
    uint8_t *o = (uint8_t *)out;
    if (VKF_CP_IS_RAW(cp)) {
        o[0] = (uint8_t)(cp & 0xFF);
        return 1;
    }
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | (cp >> 18));
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

int vkf_cpbuf_reserve(vkf_cpbuf *b, size_t n) {
    if (n <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < n)
        cap *= 2;
    uint32_t *v = realloc(b->v, cap * sizeof *v);
    if (!v) return 0;
    b->v = v;
    b->cap = cap;
    return 1;
}

int vkf_cpbuf_push(vkf_cpbuf *b, uint32_t cp) {
    if (b->n == b->cap && !vkf_cpbuf_reserve(b, b->n + 1)) return 0;
    b->v[b->n++] = cp;
    return 1;
}

int vkf_utf8_to_cps(const char *s, size_t n, vkf_cpbuf *b) {
    if (!vkf_cpbuf_reserve(b, b->n + n)) return 0; /* at most one code point per byte */
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = vkf_utf8_decode(s + i, n - i, &cp);
        b->v[b->n++] = cp == VKF_UTF8_INVALID ? VKF_CP_RAW(s[i]) : cp;
        i += l;
    }
    return 1;
}

/* ------------------------------------------------------------------ classes */

static int in_ranges(const vkf_unicode_range *r, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].first)
            hi = mid;
        else if (cp > r[mid].last)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

vkf_ucat vkf_unicode_category(uint32_t cp) {
    if (cp < 0x80) { /* ASCII fast path: most text */
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return VKF_UCAT_LETTER;
        if (cp >= '0' && cp <= '9') return VKF_UCAT_NUMBER;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return VKF_UCAT_SPACE;
        return VKF_UCAT_OTHER;
    }
    if (cp == VKF_UTF8_INVALID || VKF_CP_IS_RAW(cp)) return VKF_UCAT_OTHER;
    if (in_ranges(vkf_unicode_letter, VKF_UNICODE_N_LETTER, cp)) return VKF_UCAT_LETTER;
    if (in_ranges(vkf_unicode_number, VKF_UNICODE_N_NUMBER, cp)) return VKF_UCAT_NUMBER;
    if (in_ranges(vkf_unicode_space, VKF_UNICODE_N_SPACE, cp)) return VKF_UCAT_SPACE;
    return VKF_UCAT_OTHER;
}

/* The value of the run holding cp in a (start << 8 | value) run table. */
static uint32_t run_value(const uint32_t *runs, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n; /* find the last run with start <= cp */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((runs[mid] >> 8) <= cp)
            lo = mid;
        else
            hi = mid;
    }
    return runs[lo] & 0xFF;
}

static const uint8_t k_ascii_gc[128] = {
    /* 0x00..0x1F: Cc */
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    26,
    /* ' ' ! " # $ % & ' ( ) * + , - . / */
    23,
    18,
    18,
    18,
    20,
    18,
    18,
    18,
    14,
    15,
    18,
    19,
    18,
    13,
    18,
    18,
    /* 0-9 : ; < = > ? */
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    18,
    18,
    19,
    19,
    19,
    18,
    /* @ A-O */
    18,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    /* P-Z [ \ ] ^ _ */
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    14,
    18,
    15,
    21,
    12,
    /* ` a-o */
    21,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    /* p-z { | } ~ DEL */
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    2,
    14,
    19,
    15,
    19,
    26,
};

vkf_gc vkf_unicode_gc(uint32_t cp) {
    if (cp < 0x80) return (vkf_gc)k_ascii_gc[cp];
    if (cp > 0x10FFFF) return VKF_GC_CN;
    return (vkf_gc)run_value(vkf_unicode_cat_runs, VKF_UNICODE_N_CAT_RUNS, cp);
}

int vkf_unicode_is_space(uint32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
    return cp <= 0x10FFFF && in_ranges(vkf_unicode_space, VKF_UNICODE_N_SPACE, cp);
}

int vkf_unicode_is_word(uint32_t cp) {
    if (cp < 0x80)
        return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') ||
               cp == '_';
    vkf_gc g = vkf_unicode_gc(cp);
    if (vkf_gc_is_letter(g) || vkf_gc_is_mark(g) || g == VKF_GC_ND || g == VKF_GC_NL ||
        g == VKF_GC_PC)
        return 1;
    /* Join_Control and the Other_Alphabetic characters that are not marks (circled and
     * squared Latin letters) */
    return cp == 0x200C || cp == 0x200D || (cp >= 0x2160 && cp <= 0x2188) ||
           (cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) ||
           (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189);
}

int vkf_unicode_ccc(uint32_t cp) {
    if (cp < 0x300 || cp > 0x10FFFF) return 0;
    return (int)run_value(vkf_unicode_ccc_runs, VKF_UNICODE_N_CCC_RUNS, cp);
}

size_t vkf_unicode_lower(uint32_t cp, uint32_t out[3]) {
    if (cp < 0x80) {
        out[0] = cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
        return 1;
    }
    if (cp == 0x130) { /* LATIN CAPITAL LETTER I WITH DOT ABOVE -> i + COMBINING DOT ABOVE */
        out[0] = 0x69;
        out[1] = 0x307;
        return 2;
    }
    size_t lo = 0, hi = VKF_UNICODE_N_LOWER;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (vkf_unicode_lower_map[mid][0] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    out[0] = lo < VKF_UNICODE_N_LOWER && vkf_unicode_lower_map[lo][0] == cp
                 ? vkf_unicode_lower_map[lo][1]
                 : cp;
    return 1;
}

/* ------------------------------------------------------------------ normalization */

enum { S_BASE = 0xAC00, L_BASE = 0x1100, V_BASE = 0x1161, T_BASE = 0x11A7 };
enum { L_COUNT = 19, V_COUNT = 21, T_COUNT = 28, N_COUNT = V_COUNT * T_COUNT };
enum { S_COUNT = L_COUNT * N_COUNT };

static const vkf_unicode_decomp *find_decomp(uint32_t cp) {
    size_t lo = 0, hi = VKF_UNICODE_N_DECOMP;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (vkf_unicode_decomps[mid].cp < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < VKF_UNICODE_N_DECOMP && vkf_unicode_decomps[lo].cp == cp ? &vkf_unicode_decomps[lo]
                                                                         : NULL;
}

/* Appends the full (recursive) decomposition of cp. */
static int decompose(uint32_t cp, int compat, vkf_cpbuf *out) {
    if (cp < 0xA0 || VKF_CP_IS_RAW(cp)) return vkf_cpbuf_push(out, cp); /* none decompose */
    if (cp >= S_BASE && cp < S_BASE + S_COUNT) { /* Hangul syllable: algorithmic */
        uint32_t s = cp - S_BASE;
        if (!vkf_cpbuf_push(out, L_BASE + s / N_COUNT) ||
            !vkf_cpbuf_push(out, V_BASE + (s % N_COUNT) / T_COUNT))
            return 0;
        return s % T_COUNT ? vkf_cpbuf_push(out, T_BASE + s % T_COUNT) : 1;
    }
    const vkf_unicode_decomp *d = find_decomp(cp);
    if (!d || (((d->info >> 5) & 1) && !compat)) return vkf_cpbuf_push(out, cp);
    uint32_t off = d->info >> 6, len = d->info & 31;
    for (uint32_t i = 0; i < len; i++)
        if (!decompose(vkf_unicode_decomp_pool[off + i], compat, out)) return 0;
    return 1;
}

static uint32_t compose_pair(uint32_t a, uint32_t b) {
    if (a >= L_BASE && a < L_BASE + L_COUNT && b >= V_BASE && b < V_BASE + V_COUNT)
        return S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT;
    if (a >= S_BASE && a < S_BASE + S_COUNT && (a - S_BASE) % T_COUNT == 0 && b > T_BASE &&
        b < T_BASE + T_COUNT)
        return a + (b - T_BASE);
    if (a > 0x10FFFF || b > 0x10FFFF) return 0;
    uint64_t key = (uint64_t)a << 21 | b;
    size_t lo = 0, hi = VKF_UNICODE_N_COMPOSE;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (vkf_unicode_compose_keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < VKF_UNICODE_N_COMPOSE && vkf_unicode_compose_keys[lo] == key
               ? vkf_unicode_compose_vals[lo]
               : 0;
}

int vkf_unicode_normalize(vkf_nf form, const uint32_t *in, size_t n, vkf_cpbuf *out) {
    int compat = form == VKF_NF_NFKD || form == VKF_NF_NFKC;
    out->n = 0;
    if (!vkf_cpbuf_reserve(out, n)) return 0;
    for (size_t i = 0; i < n; i++)
        if (!decompose(in[i], compat, out)) return 0;
    /* canonical ordering: stable sort of each run of non-starters by combining class */
    uint32_t *v = out->v;
    for (size_t i = 1; i < out->n; i++) {
        int c = vkf_unicode_ccc(v[i]);
        if (!c) continue;
        size_t j = i;
        while (j > 0 && vkf_unicode_ccc(v[j - 1]) > c) {
            uint32_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
            j--;
        }
    }
    if (form == VKF_NF_NFD || form == VKF_NF_NFKD || out->n < 2) return 1;
    /* canonical composition (UAX #15): a character composes with the last starter unless a
     * character between them has class 0 or a class >= its own */
    size_t starter = 0, w = 1;
    int last_class = vkf_unicode_ccc(v[0]) ? 256 : 0;
    for (size_t i = 1; i < out->n; i++) {
        uint32_t ch = v[i];
        int cls = vkf_unicode_ccc(ch);
        uint32_t comp = compose_pair(v[starter], ch);
        if (comp && (last_class < cls || last_class == 0)) {
            v[starter] = comp;
            continue;
        }
        if (cls == 0) starter = w;
        last_class = cls;
        v[w++] = ch;
    }
    out->n = w;
    return 1;
}
