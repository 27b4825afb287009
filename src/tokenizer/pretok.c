/* Named regex pre-tokenizers (GGUF tokenizer.ggml.pre) and the split driver. */
#include "tokenizer/pretok.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/unicode.h"

/* ------------------------------------------------------------------ the named sets */

#define RX_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RX_CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RX_LLAMA3                                                                                  \
    RX_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"   \
                    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_QWEN2                                                                                   \
    RX_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"        \
                    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_BLOOM " ?[^(\\s|.,!?\\u2026\\u3002\\uFF0C\\u3001\\u0964\\u06D4\\u060C)]+"
#define RX_CJK_DS "[\\u4E00-\\u9FA5\\u0800-\\u4E00\\uAC00-\\uD7FF]+"
#define RX_DS3_MAIN                                                                                \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?"           \
    "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* llama.cpp's std::regex forms of Tekken / GPT-4o: a letter that is not a-z, then letters that
 * are not A-Z */
#define RX_UPPERS "((?=[\\p{L}])([^a-z]))"
#define RX_LOWERS "((?=[\\p{L}])([^A-Z]))"
#define RX_TEKKEN                                                                                  \
    "[^\\r\\n\\p{L}\\p{N}]?" RX_UPPERS "*" RX_LOWERS "+|[^\\r\\n\\p{L}\\p{N}]?" RX_UPPERS          \
    "+" RX_LOWERS "*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_GPT4O                                                                                   \
    "[^\\r\\n\\p{L}\\p{N}]?" RX_UPPERS "*" RX_LOWERS "+" RX_CONTRACTIONS                           \
    "?|[^\\r\\n\\p{L}\\p{N}]?" RX_UPPERS "+" RX_LOWERS "*" RX_CONTRACTIONS                         \
    "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* the letters of DeepSeek LLM's pattern (cased letters of the Latin, Greek, Cyrillic, ...
 * blocks), as code point ranges */
#define RX_DS_LETTERS                                                                              \
    "A-Za-z\\u00B5\\u00C0-\\u00D6\\u00D8-\\u00F6\\u00F8-\\u01BA\\u01BC-\\u01BF\\u01C4-\\u0293"     \
    "\\u0295-\\u02AF\\u0370-\\u0373\\u0376\\u0377\\u037B-\\u037D\\u037F\\u0386\\u0388-\\u038A"     \
    "\\u038C\\u038E-\\u03A1\\u03A3-\\u03F5\\u03F7-\\u0481\\u048A-\\u052F\\u0531-\\u0556"           \
    "\\u10A0-\\u10C5\\u13A0-\\u13F5\\u13F8-\\u13FD\\u1C90-\\u1CBA\\u1CBD-\\u1CBF\\u1D00-\\u1D2B"   \
    "\\u1D6B-\\u1D77\\u1D79-\\u1D9A\\u1E00-\\u1F15\\u1F18-\\u1F1D\\u1F20-\\u1F45\\u1F48-\\u1F4D"   \
    "\\u1F50-\\u1F57\\u1F59\\u1F5B\\u1F5D\\u1F5F-\\u1F7D\\u1F80-\\u1FB4\\u1FB6-\\u1FBC\\u1FBE"     \
    "\\u1FC2-\\u1FC4\\u1FC6-\\u1FCC\\u1FD0-\\u1FD3\\u1FD6-\\u1FDB\\u1FE0-\\u1FEC\\u1FF2-\\u1FF4"   \
    "\\u1FF6-\\u1FFC\\u2102\\u2107\\u210A-\\u2113\\u2115\\u2119-\\u211D\\u2124\\u2126\\u2128"      \
    "\\u212A-\\u212D\\u212F-\\u2134\\u2139\\u213C-\\u213F\\u2145-\\u2149\\u214E\\u2183\\u2184"     \
    "\\u2C00-\\u2C7B\\u2C7E-\\u2CE4\\u2CEB-\\u2CEE\\u2CF2\\u2CF3\\uA640-\\uA66D\\uA680-\\uA69B"    \
    "\\uA722-\\uA76F\\uA771-\\uA787\\uA78B-\\uA78E\\uAB70-\\uABBF\\uFB00-\\uFB06\\uFB13-\\uFB17"   \
    "\\uFF21-\\uFF3A\\uFF41-\\uFF5A\\U00010400-\\U0001044F\\U000104B0-\\U000104D3"                 \
    "\\U000104D8-\\U000104FB\\U00010C80-\\U00010CB2\\U00010CC0-\\U00010CF2"                        \
    "\\U000118A0-\\U000118DF\\U0001E900-\\U0001E943"

/* AFMoE's second pattern: runs of CJK and other Asian-script code points. llama.cpp writes it
 * with literal characters, the first and last code points of these Unicode blocks: CJK Unified
 * Ideographs, Extension A, CJK Compatibility Ideographs, Hiragana, Katakana, halfwidth
 * Katakana, Kangxi Radicals, Thai, Lao, Khmer, Myanmar, Myanmar Extended-A and -B, Hangul
 * Syllables, Hangul Jamo; except Thai, which llama.cpp starts at U+0E40 (SARA E), not at the
 * block's U+0E01: so Thai consonants are left to the main pattern, as there. (Read through a
 * text index that applies NFC: the compatibility start showed as U+8C48, NFC of U+F900, which
 * is the block's start; NFC changes no Thai code point, so U+0E40 is the source's.) */
#define RX_AFMOE_ASIAN                                                                             \
    "[\\u4E00-\\u9FFF\\u3400-\\u4DBF\\uF900-\\uFAFF\\u3040-\\u309F\\u30A0-\\u30FF\\uFF65-\\uFF9F"  \
    "\\u2F00-\\u2FDF\\u0E40-\\u0E7F\\u0E80-\\u0EFF\\u1780-\\u17FF\\u1000-\\u109F\\uAA60-\\uAA7F"   \
    "\\uA9E0-\\uA9FF\\uAC00-\\uD7AF\\u1100-\\u11FF]+"
/* Pseudo-patterns (llama.cpp's own names) for the splitters written by hand below. */
#define CUSTOM_KIMI_K2 "\\p{Han}+"
#define CUSTOM_AFMOE_DIGITS "\\p{AFMoE_digits}"

#define MAX_PATTERNS 6

typedef struct named_pretok {
    const char *names; /* '|'-separated tokenizer.ggml.pre values */
    const char *patterns[MAX_PATTERNS];
    vkf_pretok_info info;
} named_pretok;

static const named_pretok k_named[] = {
    {"gpt-2|phi-2|jina-es|jina-de|gigachat|jina-v2-es|jina-v2-de|a.x-4.0|mellum|jina-v1-en|"
     "jina-v2-code|roberta-bpe|mpt|olmo|jais|trillion|granite-docling|exaone4",
     {RX_GPT2},
     {.gpt2 = 1}},
    {"default", {"[\\p{P}\\$\\+<=>\\^~\\|]+", RX_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, {0}},
    {"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2",
     {RX_LLAMA3},
     {.ignore_merges = 1, .add_bos = 1}},
    {"dbrx|smaug-bpe", {RX_LLAMA3}, {0}},
    {"glm4|chatglm-bpe", {RX_LLAMA3}, {.no_bos = 1}},
    {"deepseek-llm",
     {"[\\r\\n]", "\\s?[" RX_DS_LETTERS "]+",
      "\\s?[!-/:-~\\uFF01-\\uFF0F\\uFF1A-\\uFF5E\\u2018-\\u201F\\u3000-\\u3002]+", "\\s+$",
      RX_CJK_DS, "\\p{N}+"},
     {0}},
    {"deepseek-v3|hunyuan-dense",
     {"\\p{N}{1,3}", "[\\u4E00-\\u9FA5\\u3040-\\u309F\\u30A0-\\u30FF]+", RX_DS3_MAIN},
     {0}},
    {"deepseek-coder", {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RX_CJK_DS, "\\p{N}"}, {0}},
    {"falcon", {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RX_GPT2, "[0-9][0-9][0-9]"}, {0}},
    {"starcoder|refact|command-r|smollm|codeshell|exaone|minerva-7b", {"\\p{N}", RX_GPT2}, {0}},
    {"qwen2|deepseek-r1-qwen|kormo|stablelm2|megrez|hunyuan|grok-2", {RX_QWEN2}, {0}},
    {"poro-chat|bloom|gpt3-finnish", {RX_BLOOM}, {0}},
    {"viking", {RX_BLOOM, "\\p{N}"}, {0}},
    {"tekken", {RX_TEKKEN}, {.ignore_merges = 1, .add_bos = 1}},
    {"chameleon",
     {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
      "[\\p{P}!-/:-@\\[-`{-~]", RX_GPT2},
     {.add_bos = 1}},
    {"gpt-4o|llama4|minimax-m2", {RX_GPT4O}, {0}},
    {"superbpe", {"\\p{N}+", "(?=(\\d{3})+(?!\\d))"}, {0}},
    {"bailingmoe|bailingmoe2|llada-moe",
     {"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"},
     {0}},
    /* llama.cpp names its two hand-written splitters by these pseudo-patterns (never compiled:
     * see split_kimi_k2 and split_afmoe_digits below) */
    {"kimi-k2", {CUSTOM_KIMI_K2}, {0}},
    {"afmoe", {CUSTOM_AFMOE_DIGITS, RX_AFMOE_ASIAN, RX_DS3_MAIN}, {0}},
    {"seed-coder",
     {RX_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|"
                      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     {0}},
};

static int name_in(const char *names, const char *name) {
    size_t n = strlen(name);
    for (const char *p = names;;) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (l == n && memcmp(p, name, n) == 0) return 1;
        if (!bar) return 0;
        p = bar + 1;
    }
}

/* ------------------------------------------------------------------ create / free */

/* What a step of a pre-tokenizer is: a regex, or one of llama.cpp's hand-written splitters. */
enum { STEP_REGEX, STEP_KIMI_K2, STEP_AFMOE_DIGITS };

struct vkf_pretok {
    vkf_regex **re; /* [n]: NULL for a hand-written step */
    uint8_t *kind;  /* [n]: STEP_* */
    size_t n;
    vkf_cptext text;
    vkf_rx_spans a, b;
    uint32_t *words;
    size_t words_cap;
};

void vkf_pretok_free(vkf_pretok *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n; i++)
        vkf_regex_free(p->re[i]);
    free(p->re);
    free(p->kind);
    vkf_cptext_free(&p->text);
    free(p->a.v);
    free(p->b.v);
    free(p->words);
    free(p);
}

/* custom = 1 reads the pseudo-patterns CUSTOM_* as the hand-written steps (named sets only). */
static vkf_status create_steps(const char *const *patterns, size_t n, const char *what, int custom,
                               vkf_pretok **out) {
    *out = NULL;
    vkf_pretok *p = calloc(1, sizeof *p);
    if (p) {
        p->re = calloc(n ? n : 1, sizeof *p->re);
        p->kind = calloc(n ? n : 1, 1);
    }
    if (!p || !p->re || !p->kind) {
        vkf_pretok_free(p);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    for (size_t i = 0; i < n; i++) {
        p->n++;
        if (custom && strcmp(patterns[i], CUSTOM_KIMI_K2) == 0) {
            p->kind[i] = STEP_KIMI_K2;
            continue;
        }
        if (custom && strcmp(patterns[i], CUSTOM_AFMOE_DIGITS) == 0) {
            p->kind[i] = STEP_AFMOE_DIGITS;
            continue;
        }
        vkf_status s = vkf_regex_compile(patterns[i], strlen(patterns[i]), what, &p->re[i]);
        if (s != VKF_OK) {
            vkf_pretok_free(p);
            return s;
        }
    }
    *out = p;
    return VKF_OK;
}

vkf_status vkf_pretok_create(const char *const *patterns, size_t n, const char *what,
                             vkf_pretok **out) {
    return create_steps(patterns, n, what, 0, out);
}

vkf_status vkf_pretok_from_name(const char *name, const char *path, vkf_pretok **out,
                                vkf_pretok_info *info) {
    if (out) *out = NULL;
    memset(info, 0, sizeof *info);
    for (size_t i = 0; i < sizeof k_named / sizeof k_named[0]; i++) {
        const named_pretok *np = &k_named[i];
        if (!name_in(np->names, name)) continue;
        *info = np->info;
        if (np->info.gpt2 || !out) return VKF_OK;
        size_t n = 0;
        while (n < MAX_PATTERNS && np->patterns[n])
            n++;
        char what[256];
        snprintf(what, sizeof what, "%s: pre-tokenizer \"%s\"", path, name);
        return create_steps(np->patterns, n, what, 1, out);
    }
    return vkf_error(VKF_ERROR_UNSUPPORTED,
                     "%s: key tokenizer.ggml.pre: unknown pre-tokenizer \"%s\" (known: the names "
                     "llama.cpp knows, such as gpt-2, llama-bpe, qwen2, deepseek-llm, falcon, "
                     "starcoder, default)",
                     path, name);
}

/* ------------------------------------------------------------------ hand-written splitters */

static int push_span(vkf_rx_spans *o, size_t s, size_t e) {
    if (e <= s) return 1;
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 64;
        vkf_rx_span *v = realloc(o->v, cap * sizeof *v);
        if (!v) return 0;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = (vkf_rx_span){(uint32_t)s, (uint32_t)e, 1};
    return 1;
}

/* llama.cpp's unicode_cpt_is_han: the CJK ideograph blocks (Unified, Extensions A to F,
 * Compatibility and its Supplement), whole blocks, unassigned code points included. */
static int is_han(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2EBEF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Kimi-K2 (llama.cpp's unicode_regex_split_custom_kimi_k2), in place of Moonshot's pattern
 *   [\p{Han}]+ | [^\r\n\p{L}\p{N}]?<upper>*<lower>+<contraction>? | ...<upper>+<lower>*... |
 *   \p{N}{1,3} |  ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 * whose letter classes are \p{L} and \p{M} without Han (a class intersection). llama.cpp's code
 * is simpler and is what a GGUF file gets: a letter run is any non-Han \p{L} (no case split,
 * "getUserName" stays one word; marks are not letters), the contraction is ASCII only. At
 * each position, in this order:
 *   1. a run of Han;
 *   2. an optional lead (not \r \n \p{L} \p{N}) then non-Han letters, then 's 't 'm 'd 're 've
 *      'll in either case;
 *   3. \p{N} cut in threes from the left;
 *   4. an optional space, a run of [^\s\p{L}\p{N}], then \r \n;
 *   5. whitespace: through the last \r or \n of the run; else the run less its last character
 *      when something follows and the run is longer than one; else the run. */
static int split_kimi_k2(const vkf_cptext *t, size_t a, size_t b, vkf_rx_spans *o) {
    const uint32_t *cp = t->cp;
    const uint8_t *gc = t->gc;
#define LETTER(k) ((k) < b && vkf_gc_is_letter((vkf_gc)gc[k]) && !is_han(cp[k]))
#define NUMBER(k) vkf_gc_is_number((vkf_gc)gc[k])
#define SPACE(k) vkf_unicode_is_space(cp[k])
#define OTHER(k) (!vkf_gc_is_letter((vkf_gc)gc[k]) && !NUMBER(k) && !SPACE(k))
#define LOW(c) ((c) >= 'A' && (c) <= 'Z' ? (c) | 32 : (c))
    for (size_t i = a; i < b;) {
        size_t j = i;
        if (is_han(cp[i])) {
            while (j < b && is_han(cp[j]))
                j++;
        } else if (LETTER(i) || (cp[i] != '\r' && cp[i] != '\n' &&
                                 !vkf_gc_is_letter((vkf_gc)gc[i]) && !NUMBER(i) && LETTER(i + 1))) {
            if (!LETTER(i)) j++; /* the lead */
            while (LETTER(j))
                j++;
            if (j + 1 < b && cp[j] == '\'') {
                uint32_t x = LOW(cp[j + 1]);
                if (x == 's' || x == 't' || x == 'm' || x == 'd') {
                    j += 2;
                } else if (j + 2 < b) {
                    uint32_t y = LOW(cp[j + 2]);
                    if ((x == 'r' && y == 'e') || (x == 'v' && y == 'e') || (x == 'l' && y == 'l'))
                        j += 3;
                }
            }
        } else if (NUMBER(i)) {
            while (j < b && j - i < 3 && NUMBER(j))
                j++;
        } else if (OTHER(i) || (cp[i] == ' ' && i + 1 < b && OTHER(i + 1))) {
            j = cp[i] == ' ' ? i + 1 : i;
            while (j < b && OTHER(j))
                j++;
            while (j < b && (cp[j] == '\r' || cp[j] == '\n'))
                j++;
        } else {
            /* whitespace (every code point left is) */
            size_t last_nl = SIZE_MAX;
            while (j < b && SPACE(j)) {
                if (cp[j] == '\r' || cp[j] == '\n') last_nl = j;
                j++;
            }
            if (last_nl != SIZE_MAX)
                j = last_nl + 1;
            else if (j < b && j - i > 1)
                j--;
            else if (j == i)
                j++; /* not reached: every code point is one of the above */
        }
        if (!push_span(o, i, j)) return 0;
        i = j;
    }
    return 1;
#undef LETTER
#undef NUMBER
#undef SPACE
#undef OTHER
#undef LOW
}

/* AFMoE's digits (llama.cpp's unicode_regex_split_custom_afmoe): a run of \p{N} is cut into
 * its first (length mod 3) digits, if any, then threes. llama.cpp cuts a piece only where a
 * digit group ends, so the text before a run stays joined to the run's first group ("ab1234"
 * gives "ab1", "234"), and the text after the last run is one piece; the later patterns see
 * those pieces. */
static int split_afmoe_digits(const vkf_cptext *t, size_t a, size_t b, vkf_rx_spans *o) {
    size_t prev = a;
    for (size_t i = a; i < b;) {
        if (!vkf_gc_is_number((vkf_gc)t->gc[i])) {
            i++;
            continue;
        }
        size_t e = i;
        while (e < b && vkf_gc_is_number((vkf_gc)t->gc[e]))
            e++;
        for (size_t cut = i + (e - i) % 3; cut <= e; cut += 3) {
            if (cut > i && !push_span(o, prev, cut)) return 0;
            if (cut > i) prev = cut;
        }
        i = e;
    }
    return push_span(o, prev, b);
}

/* ------------------------------------------------------------------ split */

int vkf_cptext_set(vkf_cptext *t, const char *s, size_t n) {
    if (n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (cap < n + 1)
            cap *= 2;
        uint32_t *a = realloc(t->cp, cap * sizeof *a);
        if (a) t->cp = a;
        uint32_t *b = realloc(t->off, cap * sizeof *b);
        if (b) t->off = b;
        uint8_t *c = realloc(t->gc, cap);
        if (c) t->gc = c;
        if (!a || !b || !c) return 0;
        t->cap = cap;
    }
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = vkf_utf8_decode(s + i, n - i, &cp);
        if (cp == VKF_UTF8_INVALID) cp = VKF_CP_RAW(s[i]);
        t->cp[m] = cp;
        t->off[m] = (uint32_t)i;
        t->gc[m] = (uint8_t)vkf_unicode_gc(cp);
        m++;
        i += l;
    }
    t->off[m] = (uint32_t)n;
    t->n = m;
    return 1;
}

void vkf_cptext_free(vkf_cptext *t) {
    free(t->cp);
    free(t->off);
    free(t->gc);
    memset(t, 0, sizeof *t);
}

int vkf_pretok_split(vkf_pretok *p, const char *s, size_t n, const uint32_t **words,
                     size_t *n_words) {
    if (n > UINT32_MAX - 1 || !vkf_cptext_set(&p->text, s, n)) return 0;
    vkf_cptext *t = &p->text;
    p->a.n = 0;
    if (t->n) {
        if (!p->a.cap) {
            p->a.v = malloc(64 * sizeof *p->a.v);
            if (!p->a.v) return 0;
            p->a.cap = 64;
        }
        p->a.v[p->a.n++] = (vkf_rx_span){0, (uint32_t)t->n, 0};
    }
    for (size_t k = 0; k < p->n; k++) {
        p->b.n = 0;
        for (size_t i = 0; i < p->a.n; i++) {
            size_t s0 = p->a.v[i].s, e0 = p->a.v[i].e;
            int ok = p->kind[k] == STEP_KIMI_K2 ? split_kimi_k2(t, s0, e0, &p->b)
                     : p->kind[k] == STEP_AFMOE_DIGITS
                         ? split_afmoe_digits(t, s0, e0, &p->b)
                         : vkf_regex_spans(p->re[k], t->cp, t->gc, s0, e0, &p->b);
            if (!ok) return 0;
        }
        vkf_rx_spans tmp = p->a;
        p->a = p->b;
        p->b = tmp;
    }
    if (2 * p->a.n > p->words_cap) {
        size_t cap = 2 * p->a.n + 64;
        uint32_t *w = realloc(p->words, cap * sizeof *w);
        if (!w) return 0;
        p->words = w;
        p->words_cap = cap;
    }
    for (size_t i = 0; i < p->a.n; i++) {
        p->words[2 * i] = t->off[p->a.v[i].s];
        p->words[2 * i + 1] = t->off[p->a.v[i].e];
    }
    *words = p->words;
    *n_words = p->a.n;
    return 1;
}
