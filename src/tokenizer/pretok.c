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
    {"seed-coder",
     {RX_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|"
                      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     {0}},
};

/* Known to llama.cpp but split by hand-written code there (script tables this project does not
 * carry): refused by name. */
static const char *const k_unsupported[] = {"kimi-k2", "afmoe"};

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

struct vkf_pretok {
    vkf_regex **re;
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
    vkf_cptext_free(&p->text);
    free(p->a.v);
    free(p->b.v);
    free(p->words);
    free(p);
}

vkf_status vkf_pretok_create(const char *const *patterns, size_t n, const char *what,
                             vkf_pretok **out) {
    *out = NULL;
    vkf_pretok *p = calloc(1, sizeof *p);
    if (p) p->re = calloc(n ? n : 1, sizeof *p->re);
    if (!p || !p->re) {
        free(p);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    for (size_t i = 0; i < n; i++) {
        vkf_status s = vkf_regex_compile(patterns[i], strlen(patterns[i]), what, &p->re[i]);
        if (s != VKF_OK) {
            vkf_pretok_free(p);
            return s;
        }
        p->n++;
    }
    *out = p;
    return VKF_OK;
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
        return vkf_pretok_create(np->patterns, n, what, out);
    }
    for (size_t i = 0; i < sizeof k_unsupported / sizeof k_unsupported[0]; i++)
        if (strcmp(k_unsupported[i], name) == 0)
            return vkf_error(VKF_ERROR_UNSUPPORTED,
                             "%s: key tokenizer.ggml.pre: pre-tokenizer \"%s\" is not supported "
                             "(it needs Unicode script tables)",
                             path, name);
    return vkf_error(VKF_ERROR_UNSUPPORTED,
                     "%s: key tokenizer.ggml.pre: unknown pre-tokenizer \"%s\" (known: the names "
                     "llama.cpp knows, such as gpt-2, llama-bpe, qwen2, deepseek-llm, falcon, "
                     "starcoder, default)",
                     path, name);
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
        for (size_t i = 0; i < p->a.n; i++)
            if (!vkf_regex_spans(p->re[k], t->cp, t->gc, p->a.v[i].s, p->a.v[i].e, &p->b)) return 0;
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
