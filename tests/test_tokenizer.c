/* Tokenizer tests: every fixture prompt must tokenize exactly to the llama.cpp / gpt-3-encoder
 * ids (GPT-2 from vocab.json+merges.txt and from the GGUF, the four llama GGUFs), decode must
 * round-trip, and hand-derived edge cases whose expected ids come from looking the pieces up in
 * vocab.json (or the GGUF token list) inside this test, never from the code under test. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "io/gguf.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

/* ------------------------------------------------------------------ helpers */

static int ids_equal(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static void print_ids(const char *what, const int32_t *v, size_t n) {
    fprintf(stderr, "  %s (%zu):", what, n);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %d", v[i]);
    fprintf(stderr, "\n");
}

/* Encodes text and compares with want[0..nw); prints both on mismatch. */
static void check_encode(vkf_tokenizer *tok, const char *label, const char *text, size_t len,
                         int add_special, int parse_special, const int32_t *want, size_t nw) {
    int32_t *ids = NULL;
    size_t n = 0;
    vkf_status s = vkf_tokenizer_encode_ex(tok, text, len, add_special, parse_special, &ids, &n);
    VKT_CHECK(s == VKF_OK, "%s: encode failed: %s", label, vkf_last_error());
    if (s != VKF_OK) return;
    int ok = ids_equal(ids, n, want, nw);
    VKT_CHECK(ok, "%s: token ids differ", label);
    if (!ok) {
        print_ids("expected", want, nw);
        print_ids("found", ids, n);
    }
    free(ids);
}

/* Encodes text (parse_special on) and checks that decode gives the text back exactly. */
static void check_roundtrip(vkf_tokenizer *tok, const char *label, const char *text, size_t len,
                            int add_special, int flags) {
    int32_t *ids = NULL;
    size_t n = 0;
    char *out = NULL;
    size_t olen = 0;
    VKT_OK(vkf_tokenizer_encode(tok, text, len, add_special, &ids, &n));
    VKT_OK(vkf_tokenizer_decode_ex(tok, ids, n, flags, &out, &olen));
    VKT_CHECK(out && olen == len && memcmp(out, text, len) == 0,
              "%s: decode(encode(text)) differs: \"%.*s\" vs \"%s\"", label, (int)len, text,
              out ? out : "(null)");
    free(ids);
    free(out);
}

/* Reads a JSON array of ints into a malloc'ed array. */
static int32_t *json_ids(const cJSON *a, size_t *n) {
    *n = (size_t)cJSON_GetArraySize(a);
    int32_t *v = malloc((*n ? *n : 1) * sizeof *v);
    size_t i = 0;
    for (const cJSON *e = a ? a->child : NULL; e; e = e->next)
        v[i++] = (int32_t)e->valuedouble;
    return v;
}

static cJSON *load_json(const char *rel) {
    size_t n;
    char *text = vkt_read_file(vkt_fixture(rel), &n);
    if (!text) return NULL;
    cJSON *j = cJSON_ParseWithLength(text, n);
    free(text);
    return j;
}

/* ------------------------------------------------------------------ independent GPT-2 lookup */

/* The test's own copy of GPT-2's byte -> printable character map and of vocab.json, used to
 * derive expected ids for hand-written pre-tokenizations. */
static cJSON *g_vocab;

static void byte_char(unsigned b, char *out, size_t *len) {
    unsigned cp = b;
    if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
        unsigned n = 0;
        for (unsigned c = 0; c < b; c++)
            if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE)) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) {
        out[(*len)++] = (char)cp;
    } else {
        out[(*len)++] = (char)(0xC0 | (cp >> 6));
        out[(*len)++] = (char)(0x80 | (cp & 0x3F));
    }
}

/* vocab.json id of the raw piece (bytes), -1 if absent. */
static int32_t gpt2_piece(const char *piece) {
    char key[256];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)piece; *p && n < 250; p++)
        byte_char(*p, key, &n);
    key[n] = 0;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(g_vocab, key);
    return cJSON_IsNumber(e) ? (int32_t)e->valuedouble : -1;
}

/* Encodes text and compares with the vocab.json ids of the given pieces (NULL-terminated). */
static void check_pieces(vkf_tokenizer *tok, const char *label, const char *text,
                         const char *const *pieces) {
    int32_t want[64];
    size_t nw = 0;
    for (; pieces[nw]; nw++) {
        want[nw] = gpt2_piece(pieces[nw]);
        VKT_CHECK(want[nw] >= 0, "%s: test bug: piece \"%s\" is not in vocab.json", label,
                  pieces[nw]);
    }
    check_encode(tok, label, text, strlen(text), 1, 1, want, nw);
}

/* ------------------------------------------------------------------ Unicode classes */

/* Categories from the Unicode Character Database (facts, not derived from the tables). */
static void test_unicode(void) {
    static const struct {
        uint32_t cp;
        vkf_ucat cat;
    } cases[] = {
        {'a', VKF_UCAT_LETTER},
        {'Z', VKF_UCAT_LETTER},
        {0x00E9, VKF_UCAT_LETTER},
        {0x00AA, VKF_UCAT_LETTER},
        {0x4E00, VKF_UCAT_LETTER},
        {0x0416, VKF_UCAT_LETTER},
        {0x02B0, VKF_UCAT_LETTER},
        {0x1D400, VKF_UCAT_LETTER},
        {'7', VKF_UCAT_NUMBER},
        {0x00B2, VKF_UCAT_NUMBER},
        {0x0661, VKF_UCAT_NUMBER},
        {0x2164, VKF_UCAT_NUMBER},
        {0xFF11, VKF_UCAT_NUMBER},
        {0x1D7CE, VKF_UCAT_NUMBER},
        {0x00BD, VKF_UCAT_NUMBER},
        {' ', VKF_UCAT_SPACE},
        {'\t', VKF_UCAT_SPACE},
        {'\r', VKF_UCAT_SPACE},
        {0x0085, VKF_UCAT_SPACE},
        {0x00A0, VKF_UCAT_SPACE},
        {0x2009, VKF_UCAT_SPACE},
        {0x3000, VKF_UCAT_SPACE},
        {0x2029, VKF_UCAT_SPACE},
        {'!', VKF_UCAT_OTHER},
        {0x2014, VKF_UCAT_OTHER},
        {0x00B7, VKF_UCAT_OTHER},
        {0x0301, VKF_UCAT_OTHER},
        {0x1F600, VKF_UCAT_OTHER},
        {0x200B, VKF_UCAT_OTHER},
        {0x10FFFF, VKF_UCAT_OTHER},
        {VKF_UTF8_INVALID, VKF_UCAT_OTHER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        VKT_CHECK(vkf_unicode_category(cases[i].cp) == cases[i].cat,
                  "U+%04X: category %d, expected %d", cases[i].cp,
                  vkf_unicode_category(cases[i].cp), cases[i].cat);
    /* UTF-8: valid forms decode, every malformed form consumes exactly one byte */
    static const struct {
        const char *s;
        size_t n, len;
        uint32_t cp;
    } utf8[] = {
        {"A", 1, 1, 'A'},
        {"\xc3\xa9", 2, 2, 0xE9},
        {"\xe2\x80\x94", 3, 3, 0x2014},
        {"\xf0\x9f\x98\x80", 4, 4, 0x1F600},
        {"\xc0\xaf", 2, 1, VKF_UTF8_INVALID},         /* overlong '/' */
        {"\xed\xa0\x80", 3, 1, VKF_UTF8_INVALID},     /* surrogate */
        {"\xf4\x90\x80\x80", 4, 1, VKF_UTF8_INVALID}, /* above U+10FFFF */
        {"\x80", 1, 1, VKF_UTF8_INVALID},             /* stray continuation */
        {"\xe2\x80", 2, 1, VKF_UTF8_INVALID},         /* truncated */
        {"\xe2\x28\xa1", 3, 1, VKF_UTF8_INVALID},     /* bad continuation */
        {"\xff", 1, 1, VKF_UTF8_INVALID},
    };
    for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++) {
        uint32_t cp = 0;
        size_t len = vkf_utf8_decode(utf8[i].s, utf8[i].n, &cp);
        VKT_CHECK(len == utf8[i].len && cp == utf8[i].cp, "utf8 case %zu: len %zu cp %X", i, len,
                  cp);
    }
}

/* ------------------------------------------------------------------ fixture cases */

static void test_gpt2_fixtures(vkf_tokenizer *hf, vkf_tokenizer *gg) {
    cJSON *cases = load_json("gpt2-tiny/cases.json");
    VKT_CHECK(cJSON_IsArray(cases), "cannot read gpt2-tiny/cases.json");
    int n_cases = 0;
    for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next, n_cases++) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *prompt = cJSON_GetObjectItem(c, "prompt")->valuestring;
        int add_bos = cJSON_IsTrue(cJSON_GetObjectItem(c, "add_bos"));
        size_t nw;
        int32_t *want = json_ids(cJSON_GetObjectItem(c, "tokens"), &nw);
        char label[160];
        VKT_CHECK(add_bos == 0, "%s: gpt2 cases have no BOS", name);
        snprintf(label, sizeof label, "%s (vocab.json+merges.txt)", name);
        check_encode(hf, label, prompt, strlen(prompt), 1, 1, want, nw);
        snprintf(label, sizeof label, "%s (GGUF tokenizer)", name);
        check_encode(gg, label, prompt, strlen(prompt), 1, 1, want, nw);
        check_roundtrip(hf, label, prompt, strlen(prompt), 1, 0);
        check_roundtrip(gg, label, prompt, strlen(prompt), 1, 0);
        free(want);
    }
    VKT_CHECK(n_cases == 3, "expected 3 gpt2 cases, found %d", n_cases);
    cJSON_Delete(cases);
}

static void test_llama_fixtures(void) {
    cJSON *cases = load_json("llama-tiny/cases.json");
    VKT_CHECK(cJSON_IsArray(cases), "cannot read llama-tiny/cases.json");
    char cur_model[256] = "";
    vkf_gguf *g = NULL;
    vkf_tokenizer *tok = NULL;
    int n_cases = 0;
    for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next, n_cases++) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *model = cJSON_GetObjectItem(c, "model")->valuestring;
        const char *prompt = cJSON_GetObjectItem(c, "prompt")->valuestring;
        int add_bos = cJSON_IsTrue(cJSON_GetObjectItem(c, "add_bos"));
        if (strcmp(model, cur_model) != 0) {
            vkf_tokenizer_free(tok);
            vkf_gguf_close(g);
            tok = NULL;
            g = NULL;
            char rel[300];
            snprintf(rel, sizeof rel, "llama-tiny/%s", model);
            VKT_OK(vkf_gguf_open(vkt_fixture(rel), &g));
            if (g) VKT_OK(vkf_tokenizer_from_gguf(g, &tok));
            snprintf(cur_model, sizeof cur_model, "%s", model);
        }
        if (!tok) continue;
        size_t nw;
        int32_t *want = json_ids(cJSON_GetObjectItem(c, "tokens"), &nw);
        VKT_CHECK(vkf_tokenizer_add_bos(tok) == add_bos, "%s: add_bos %d, case says %d", name,
                  vkf_tokenizer_add_bos(tok), add_bos);
        check_encode(tok, name, prompt, strlen(prompt), 1, 1, want, nw);
        /* without add_special: the same ids minus BOS */
        check_encode(tok, name, prompt, strlen(prompt), 0, 1, want + add_bos, nw - add_bos);
        check_roundtrip(tok, name, prompt, strlen(prompt), 1, 0);
        free(want);
    }
    VKT_CHECK(n_cases == 12, "expected 12 llama cases, found %d", n_cases);
    vkf_tokenizer_free(tok);
    vkf_gguf_close(g);
    cJSON_Delete(cases);
}

/* ------------------------------------------------------------------ GPT-2 edge cases */

static void test_gpt2_edges(vkf_tokenizer *tok, const char *which) {
    char label[128];
#define LABEL(s) (snprintf(label, sizeof label, "%s: %s", which, s), label)
    /* known GPT-2 facts */
    VKT_CHECK(vkf_tokenizer_n_vocab(tok) == 50257, "%s: n_vocab %d", which,
              vkf_tokenizer_n_vocab(tok));
    VKT_CHECK(vkf_tokenizer_eos(tok) == 50256 && vkf_tokenizer_bos(tok) == 50256,
              "%s: bos %d eos %d", which, vkf_tokenizer_bos(tok), vkf_tokenizer_eos(tok));
    VKT_CHECK(vkf_tokenizer_add_bos(tok) == 0, "%s: GPT-2 adds no BOS", which);
    VKT_CHECK(vkf_tokenizer_pad(tok) == -1, "%s: no pad", which);
    const char *t262 = vkf_tokenizer_token_text(tok, 262);
    VKT_CHECK(t262 && strcmp(t262, "\xc4\xa0the") == 0, "%s: token 262 is \"%s\"", which,
              t262 ? t262 : "(null)");
    VKT_CHECK(vkf_tokenizer_token_text(tok, 50257) == NULL &&
                  vkf_tokenizer_token_text(tok, -1) == NULL,
              "%s: out-of-range token_text", which);
    VKT_CHECK(vkf_tokenizer_find(tok, "\xc4\xa0the", 5) == 262, "%s: find", which);
    {
        const int32_t the[] = {262};
        check_encode(tok, LABEL("\" the\""), " the", 4, 1, 1, the, 1);
        const int32_t eot[] = {50256};
        check_encode(tok, LABEL("<|endoftext|>"), "<|endoftext|>", 13, 1, 1, eot, 1);
        check_encode(tok, LABEL("empty"), "", 0, 1, 1, NULL, 0);
    }
    {
        const char *p[] = {"Hello", "<|endoftext|>", " world", NULL};
        check_pieces(tok, LABEL("special in text"), "Hello<|endoftext|> world", p);
    }
    {
        /* not parsed as special: the text is tokenized as ordinary characters */
        int32_t *ids;
        size_t n;
        VKT_OK(vkf_tokenizer_encode_ex(tok, "<|endoftext|>", 13, 1, 0, &ids, &n));
        int has = 0;
        for (size_t i = 0; i < n; i++)
            has |= ids[i] == 50256;
        VKT_CHECK(n > 1 && !has, "%s: parse_special=0 must not produce 50256 (n=%zu)", which, n);
        free(ids);
    }
    { /* whitespace: \s+(?!\S) leaves the last space to the next word */
        const char *p1[] = {"a", " ", " ", " b", NULL}; /* "  " is not a token: two " " */
        check_pieces(tok, LABEL("run of spaces"), "a   b", p1);
        const char *p2[] = {"Hello", "\n", "\n", "world", NULL};
        check_pieces(tok, LABEL("newlines before a word"), "Hello\n\nworld", p2);
        const char *p3[] = {"Hello", "\n\n", NULL};
        check_pieces(tok, LABEL("trailing newlines"), "Hello\n\n", p3);
        const char *p4[] = {"a", " ", "\t", "b", NULL};
        check_pieces(tok, LABEL("space tab"), "a \tb", p4);
        const char *p5[] = {" ", NULL};
        check_pieces(tok, LABEL("single space"), " ", p5);
    }
    { /* digits, punctuation, contractions, letters vs numbers */
        const char *p1[] = {"x", " 1", ".", "3", " 42", NULL};
        check_pieces(tok, LABEL("digits"), "x 1.3 42", p1);
        const char *p2[] = {"don", "'t",  " I",  "'m",  " we", "'d", " they", "'re",
                            " I",  "'ve", " we", "'ll", " it", "'s", NULL};
        check_pieces(tok, LABEL("contractions"), "don't I'm we'd they're I've we'll it's", p2);
        const char *p3[] = {"ab", "12", "cd", NULL};
        check_pieces(tok, LABEL("letters/numbers"), "ab12cd", p3);
    }
    { /* Unicode classes: U+2014 is punctuation, U+00B2 is \p{N}, U+00E9 is \p{L} */
        const char *p1[] = {"x", "\xe2\x80\x94", "\xc2\xb2", NULL};
        check_pieces(tok, LABEL("em dash, superscript two"), "x\xe2\x80\x94\xc2\xb2", p1);
        const char *p2[] = {" caf\xc3\xa9", NULL};
        check_pieces(tok, LABEL("e acute is a letter"), " caf\xc3\xa9", p2);
    }
    { /* invalid UTF-8 passes through as bytes: 0xFF is the character U+00FF in vocab.json */
        const char *p[] = {"\xff", NULL};
        check_pieces(tok, LABEL("invalid byte"), "\xff", p);
        check_roundtrip(tok, LABEL("invalid bytes"), "a\xff\xfe b\xc3", 7, 0, 0);
    }
    check_roundtrip(tok, LABEL("mixed text"),
                    "  Hi there!\n\tTabs,  spaces 123 ... \xe2\x80\x94 ok  ", 44, 0, 0);
    { /* decode: control tokens are skipped unless asked for */
        const int32_t ids[] = {15496, 50256, 995};
        char *out;
        size_t n;
        VKT_OK(vkf_tokenizer_decode(tok, ids, 3, &out, &n));
        VKT_CHECK(n == 11 && strcmp(out, "Hello world") == 0, "%s: decode \"%s\"", which, out);
        free(out);
        VKT_OK(vkf_tokenizer_decode_ex(tok, ids, 3, VKF_DECODE_SPECIAL, &out, &n));
        VKT_CHECK(strcmp(out, "Hello<|endoftext|> world") == 0, "%s: decode special \"%s\"", which,
                  out);
        free(out);
        const int32_t bad[] = {1, 50257};
        VKT_CHECK(vkf_tokenizer_decode(tok, bad, 2, &out, &n) == VKF_ERROR_TOKEN,
                  "%s: out-of-range id must fail", which);
        VKT_CHECK(strstr(vkf_last_error(), "50257") != NULL, "%s: message: %s", which,
                  vkf_last_error());
    }
#undef LABEL
}

/* The merge loop must be O(n log n): one 200k-letter word and a 200k-space run. */
static void test_gpt2_long(vkf_tokenizer *tok) {
    size_t n = 200000;
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        s[i] = (char)('a' + (i * 7 + i / 13) % 26);
    s[n] = 0;
    clock_t t0 = clock();
    check_roundtrip(tok, "200k-letter word", s, n, 0, 0);
    memset(s, ' ', n);
    check_roundtrip(tok, "200k spaces", s, n, 0, 0);
    double sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
    VKT_CHECK(sec < 5.0, "long inputs took %.2f s (quadratic merging?)", sec);
    free(s);
}

/* ------------------------------------------------------------------ llama edge cases */

static void test_llama_edges(void) {
    vkf_gguf *g;
    vkf_tokenizer *tok = NULL;
    VKT_OK(vkf_gguf_open(vkt_fixture("llama-tiny/llama-tiny-f32.gguf"), &g));
    if (!g) return;
    VKT_OK(vkf_tokenizer_from_gguf(g, &tok));
    /* ids straight from the GGUF token list, to derive expectations by hand */
    const vkf_gguf_value *toks;
    VKT_OK(vkf_gguf_require_arr(g, "tokenizer.ggml.tokens", VKF_GGUF_TYPE_STRING, &toks));
    if (!tok || !toks) {
        vkf_tokenizer_free(tok);
        vkf_gguf_close(g);
        return;
    }
    const char *names[] = {"<unk>",
                           "<s>",
                           "</s>",
                           "<0x00>",
                           "<0xFF>",
                           "\xe2\x96\x81",
                           "\xe2\x96\x81"
                           "a",
                           "\xe2\x96\x81"
                           "the",
                           "aa"};
    const int32_t ids[] = {0, 1, 2, 3, 258, 259, 349, 452, 467};
    for (int i = 0; i < 9; i++) {
        size_t l;
        const char *s = vkf_gguf_arr_str(toks, (uint64_t)ids[i], &l);
        VKT_CHECK(s && l == strlen(names[i]) && memcmp(s, names[i], l) == 0,
                  "test bug: token %d is not \"%s\"", ids[i], names[i]);
    }
    VKT_CHECK(vkf_tokenizer_bos(tok) == 1 && vkf_tokenizer_eos(tok) == 2 &&
                  vkf_tokenizer_unk(tok) == 0 && vkf_tokenizer_add_bos(tok) == 1 &&
                  vkf_tokenizer_add_eos(tok) == 0,
              "llama specials: bos %d eos %d unk %d", vkf_tokenizer_bos(tok),
              vkf_tokenizer_eos(tok), vkf_tokenizer_unk(tok));
    VKT_CHECK(vkf_tokenizer_token_type(tok, 3) == VKF_TOKEN_BYTE &&
                  vkf_tokenizer_token_type(tok, 1) == VKF_TOKEN_CONTROL,
              "llama token types");
    {
        const int32_t w[] = {1};
        check_encode(tok, "llama empty + BOS", "", 0, 1, 1, w, 1);
        check_encode(tok, "llama empty", "", 0, 0, 1, NULL, 0);
    }
    { /* "▁a" merges; "▁t"(-110) before "he"(-144) before "▁th"(-193)... ends at "▁the" */
        const int32_t w1[] = {1, 349};
        check_encode(tok, "llama a", "a", 1, 1, 1, w1, 2);
        const int32_t w2[] = {452};
        check_encode(tok, "llama the", "the", 3, 0, 1, w2, 1);
        /* "▁x" first; then "aa" at two positions with equal score: the leftmost wins */
        const int32_t w3[] = {372, 467, 260};
        check_encode(tok, "llama leftmost tie", "xaaa", 4, 0, 1, w3, 3);
        /* spaces: "▁a▁▁b" -> ▁a, ▁, ▁b */
        const int32_t w4[] = {349, 259, 350};
        check_encode(tok, "llama double space", "a  b", 4, 0, 1, w4, 3);
        check_roundtrip(tok, "llama double space", "a  b", 4, 1, 0);
        check_roundtrip(tok, "llama leading spaces", "  a", 3, 1, 0);
    }
    { /* byte fallback: U+20AC has no piece -> <0xE2><0x82><0xAC> = 3 + byte */
        const int32_t w[] = {1, 259, 3 + 0xE2, 3 + 0x82, 3 + 0xAC};
        check_encode(tok, "llama euro sign", "\xe2\x82\xac", 3, 1, 1, w, 5);
        check_roundtrip(tok, "llama euro sign", "\xe2\x82\xac", 3, 1, 0);
        /* invalid UTF-8: each bad byte is its own byte token */
        const int32_t w2[] = {259, 3 + 0xFF, 260, 3 + 0xC3};
        check_encode(tok, "llama invalid bytes",
                     "\xff"
                     "a\xc3",
                     3, 0, 1, w2, 4);
        check_roundtrip(tok, "llama invalid bytes",
                        "\xff"
                        "a\xc3",
                        3, 1, 0);
    }
    { /* control tokens in text: parsed with parse_special, plain characters without */
        const int32_t w1[] = {1, 1};
        check_encode(tok, "llama <s> parsed", "<s>", 3, 1, 1, w1, 2);
        const int32_t w2[] = {1, 259, 339, 278, 340};
        check_encode(tok, "llama <s> not parsed", "<s>", 3, 1, 0, w2, 5);
        /* after a special token a new "▁" is prepended */
        const int32_t w3[] = {349, 2, 350};
        check_encode(tok, "llama text</s>text", "a</s>b", 6, 0, 1, w3, 3);
        char *out;
        size_t n;
        VKT_OK(vkf_tokenizer_decode(tok, w3, 3, &out, &n));
        VKT_CHECK(strcmp(out, "ab") == 0, "llama decode skips </s>: \"%s\"", out);
        free(out);
        VKT_OK(vkf_tokenizer_decode_ex(tok, w3, 3, VKF_DECODE_SPECIAL, &out, &n));
        VKT_CHECK(strcmp(out, "a</s>b") == 0, "llama decode special: \"%s\"", out);
        free(out);
        const int32_t w4[] = {1, 349, 350};
        VKT_OK(vkf_tokenizer_decode_ex(tok, w4 + 2, 1, VKF_DECODE_NO_STRIP, &out, &n));
        VKT_CHECK(strcmp(out, " b") == 0, "llama decode no-strip: \"%s\"", out);
        free(out);
        VKT_OK(vkf_tokenizer_decode(tok, w4, 3, &out, &n));
        VKT_CHECK(strcmp(out, "a b") == 0, "llama decode: \"%s\"", out);
        free(out);
    }
    { /* merging must stay O(n log n) on long inputs */
        size_t n = 200000;
        char *txt = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            txt[i] = "the quick brown fox aaaa bbb "[(i * 7 + i / 5) % 29];
        txt[n] = 0;
        clock_t t0 = clock();
        check_roundtrip(tok, "llama 200k chars", txt, n, 1, 0);
        memset(txt, 'a', n);
        check_roundtrip(tok, "llama 200k 'a'", txt, n, 1, 0);
        double sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
        VKT_CHECK(sec < 5.0, "llama long inputs took %.2f s", sec);
        free(txt);
    }
    vkf_tokenizer_free(tok);
    vkf_gguf_close(g);
}

/* ------------------------------------------------------------------ char vocabulary */

static char *write_temp(const char *text) {
    static char path[4][64];
    static int k;
    char *p = path[k++ & 3];
    snprintf(p, 64, "/tmp/vkf_tok_XXXXXX");
    int fd = mkstemp(p);
    if (fd < 0) return NULL;
    size_t n = strlen(text);
    if (write(fd, text, n) != (ssize_t)n) n = 0;
    close(fd);
    return p;
}

static void test_char(void) {
    const char *vocab =
        "{\"type\":\"char\",\"tokens\":[\"<pad>\",\"<bos>\",\"<eos>\",\"<unk>\",\"a\",\"b\","
        "\" \",\"\\u00e9\",\"\\u2014\"],\"bos\":1,\"eos\":2,\"pad\":0,\"unk\":3,"
        "\"add_bos\":true,\"add_eos\":true}";
    char *path = write_temp(vocab);
    vkf_tokenizer *tok = NULL;
    VKT_OK(vkf_tokenizer_char_from_file(path, &tok));
    if (tok) {
        VKT_CHECK(vkf_tokenizer_n_vocab(tok) == 9 && vkf_tokenizer_bos(tok) == 1 &&
                      vkf_tokenizer_eos(tok) == 2 && vkf_tokenizer_pad(tok) == 0 &&
                      vkf_tokenizer_unk(tok) == 3 && strcmp(vkf_tokenizer_kind(tok), "char") == 0,
                  "char vocab fields");
        /* "ab é—" + unknown 'z' + invalid byte */
        const int32_t w1[] = {1, 4, 5, 6, 7, 8, 3, 3, 2};
        check_encode(tok, "char encode", "ab \xc3\xa9\xe2\x80\x94z\xff", 10, 1, 1, w1, 9);
        const int32_t w2[] = {4, 1, 5};
        check_encode(tok, "char special in text", "a<bos>b", 7, 0, 1, w2, 3);
        const int32_t w3[] = {4, 3, 5, 3, 3, 3, 5}; /* '<' 'b' 'o' 's' '>' */
        check_encode(tok, "char special not parsed", "a<bos>b", 7, 0, 0, w3, 7);
        check_roundtrip(tok, "char roundtrip", "ab \xc3\xa9\xe2\x80\x94 ba", 11, 1, 0);
        char *out;
        size_t n;
        VKT_OK(vkf_tokenizer_decode(tok, w1, 9, &out, &n));
        VKT_CHECK(strcmp(out, "ab \xc3\xa9\xe2\x80\x94\xef\xbf\xbd\xef\xbf\xbd") == 0,
                  "char decode: unk renders as U+FFFD: \"%s\"", out);
        free(out);
        vkf_tokenizer_free(tok);
    }
    unlink(path);
    /* malformed vocabularies name the problem */
    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"{\"type\":\"char\",\"tokens\":[\"<unk>\",\"ab\"],\"unk\":0}", "entry 1"},
        {"{\"type\":\"char\",\"tokens\":[\"a\",\"a\"]}", "twice"},
        {"{\"type\":\"char\",\"tokens\":[\"a\"],\"unk\":5}", "unk"},
        {"{\"type\":\"word\",\"tokens\":[\"a\"]}", "type"},
        {"{\"type\":\"char\",\"tokens\":[\"a\", 3]}", "entry 1"},
        {"{\"type\":\"char\",\"tokens\":[\"a\"],\"bos\":\"x\"}", "bos"},
        {"{\"type\":\"char\",\"tokens\":[\"a\"]", "malformed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *p = write_temp(bad[i].json);
        vkf_tokenizer *t = NULL;
        vkf_status s = vkf_tokenizer_char_from_file(p, &t);
        VKT_CHECK(s == VKF_ERROR_FORMAT && !t, "bad char vocab %zu: status %s", i,
                  vkf_status_name(s));
        VKT_CHECK(strstr(vkf_last_error(), bad[i].needle) != NULL,
                  "bad char vocab %zu: message \"%s\" lacks \"%s\"", i, vkf_last_error(),
                  bad[i].needle);
        vkf_tokenizer_free(t);
        unlink(p);
    }
    /* no unk: an unknown character is an error naming it */
    char *p = write_temp("{\"type\":\"char\",\"tokens\":[\"a\"]}");
    VKT_OK(vkf_tokenizer_char_from_file(p, &tok));
    if (tok) {
        int32_t *ids;
        size_t n;
        VKT_CHECK(vkf_tokenizer_encode(tok, "aq", 2, 0, &ids, &n) == VKF_ERROR_TOKEN,
                  "unknown char without unk must fail");
        VKT_CHECK(strstr(vkf_last_error(), "\"q\"") != NULL, "message: %s", vkf_last_error());
        vkf_tokenizer_free(tok);
    }
    unlink(p);
}

/* ------------------------------------------------------------------ errors */

static void test_errors(void) {
    vkf_tokenizer *t = NULL;
    vkf_status s = vkf_tokenizer_from_gpt2_files("/nonexistent/vocab.json",
                                                 vkt_fixture("gpt2-tiny/hf/merges.txt"), &t);
    VKT_CHECK(s == VKF_ERROR_IO && strstr(vkf_last_error(), "/nonexistent/vocab.json"),
              "missing vocab: %s %s", vkf_status_name(s), vkf_last_error());
    /* a merge naming a token that is not in the vocabulary */
    char *v = write_temp("{\"a\":0,\"b\":1,\"ab\":2}");
    char *m = write_temp("#version: 0.2\na b\nab c\n");
    s = vkf_tokenizer_from_gpt2_files(v, m, &t);
    VKT_CHECK(s == VKF_ERROR_FORMAT && strstr(vkf_last_error(), "line 3") &&
                  strstr(vkf_last_error(), "\"c\""),
              "bad merge: %s %s", vkf_status_name(s), vkf_last_error());
    unlink(v);
    unlink(m);
    v = write_temp("{\"a\":0,\"b\":5}");
    m = write_temp("");
    s = vkf_tokenizer_from_gpt2_files(v, m, &t);
    VKT_CHECK(s == VKF_ERROR_FORMAT && strstr(vkf_last_error(), "\"b\""), "sparse ids: %s",
              vkf_last_error());
    unlink(v);
    unlink(m);
}

/* ------------------------------------------------------------------ synthetic GGUF vocabularies */

typedef struct gbuf {
    uint8_t *p;
    size_t n, cap;
} gbuf;

static void put(gbuf *b, const void *s, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void put_u32(gbuf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}
static void put_u64(gbuf *b, uint64_t v) {
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}
static void put_str(gbuf *b, const char *s) {
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void kv_str(gbuf *b, const char *k, const char *v) {
    put_str(b, k), put_u32(b, VKF_GGUF_TYPE_STRING), put_str(b, v);
}
static void kv_u32(gbuf *b, const char *k, uint32_t v) {
    put_str(b, k), put_u32(b, VKF_GGUF_TYPE_UINT32), put_u32(b, v);
}
static void kv_bool(gbuf *b, const char *k, int v) {
    uint8_t x = (uint8_t)v;
    put_str(b, k), put_u32(b, VKF_GGUF_TYPE_BOOL), put(b, &x, 1);
}
static void kv_strs(gbuf *b, const char *k, const char *const *v, int n) {
    put_str(b, k), put_u32(b, VKF_GGUF_TYPE_ARRAY), put_u32(b, VKF_GGUF_TYPE_STRING);
    put_u64(b, (uint64_t)n);
    for (int i = 0; i < n; i++)
        put_str(b, v[i]);
}
static void kv_i32s(gbuf *b, const char *k, const int32_t *v, int n) {
    put_str(b, k), put_u32(b, VKF_GGUF_TYPE_ARRAY), put_u32(b, VKF_GGUF_TYPE_INT32);
    put_u64(b, (uint64_t)n);
    for (int i = 0; i < n; i++)
        put_u32(b, (uint32_t)v[i]);
}
static void kv_f32s(gbuf *b, const char *k, const float *v, int n) {
    put_str(b, k), put_u32(b, VKF_GGUF_TYPE_ARRAY), put_u32(b, VKF_GGUF_TYPE_FLOAT32);
    put_u64(b, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        put_u32(b, u);
    }
}

/* Writes b as a GGUF (n_kv entries, no tensors), opens it and builds a tokenizer. */
static vkf_status gguf_tokenizer(gbuf *b, uint64_t n_kv, vkf_tokenizer **tok) {
    gbuf f = {0};
    put(&f, "GGUF", 4), put_u32(&f, 3), put_u64(&f, 0), put_u64(&f, n_kv);
    put(&f, b->p, b->n);
    free(b->p);
    memset(b, 0, sizeof *b);
    char path[64];
    snprintf(path, sizeof path, "/tmp/vkf_tokgguf_XXXXXX");
    int fd = mkstemp(path);
    vkf_status s = VKF_ERROR_IO;
    *tok = NULL;
    if (fd >= 0) {
        if (write(fd, f.p, f.n) == (ssize_t)f.n) {
            vkf_gguf *g = NULL;
            s = vkf_gguf_open(path, &g);
            if (s == VKF_OK) s = vkf_tokenizer_from_gguf(g, tok);
            vkf_gguf_close(g);
        }
        close(fd);
        unlink(path);
    }
    free(f.p);
    return s;
}

static void expect_tok_fail(const char *label, gbuf *b, uint64_t n_kv, vkf_status want,
                            const char *needle) {
    vkf_tokenizer *t = NULL;
    vkf_status s = gguf_tokenizer(b, n_kv, &t);
    VKT_CHECK(s == want && !t, "%s: expected %s, found %s (%s)", label, vkf_status_name(want),
              vkf_status_name(s), vkf_last_error());
    VKT_CHECK(strstr(vkf_last_error(), needle) != NULL, "%s: message \"%s\" lacks \"%s\"", label,
              vkf_last_error(), needle);
    vkf_tokenizer_free(t);
}

static void test_synthetic_gguf(void) {
    /* a custom llama vocabulary: byte token for 'A' only, a user-defined token, add_eos */
    const char *toks[] = {"<unk>",
                          "<s>",
                          "</s>",
                          "<0x41>",
                          "\xe2\x96\x81",
                          "a",
                          "b",
                          "\xe2\x96\x81"
                          "a",
                          "\xe2\x96\x81"
                          "ab",
                          "<|u|>"};
    const int32_t types[] = {2, 3, 3, 6, 1, 1, 1, 1, 1, 4};
    const float scores[] = {0, 0, 0, 0, -1, -2, -3, -4, -5, 0};
    gbuf b = {0};
    kv_str(&b, "tokenizer.ggml.model", "llama");
    kv_strs(&b, "tokenizer.ggml.tokens", toks, 10);
    kv_i32s(&b, "tokenizer.ggml.token_type", types, 10);
    kv_f32s(&b, "tokenizer.ggml.scores", scores, 10);
    kv_bool(&b, "tokenizer.ggml.add_bos_token", 0);
    kv_bool(&b, "tokenizer.ggml.add_eos_token", 1);
    vkf_tokenizer *tok = NULL;
    VKT_OK(gguf_tokenizer(&b, 6, &tok));
    if (tok) {
        VKT_CHECK(!vkf_tokenizer_add_bos(tok) && vkf_tokenizer_add_eos(tok) &&
                      vkf_tokenizer_bos(tok) == 1 && vkf_tokenizer_eos(tok) == 2,
                  "custom llama: add_bos/add_eos/defaults");
        /* "▁ab" beats everything; the user-defined token is cut out even without parse_special,
         * and the text after it gets a new "▁"; 'A' falls back to its byte token */
        const int32_t w1[] = {8, 9, 8, 2};
        check_encode(tok, "custom llama user-defined", "ab<|u|>ab", 9, 1, 0, w1, 4);
        const int32_t w2[] = {4, 3, 6};
        check_encode(tok, "custom llama byte fallback", "Ab", 2, 0, 1, w2, 3);
        /* 'C' has neither a piece nor a byte token: unk */
        const int32_t w3[] = {4, 0};
        check_encode(tok, "custom llama unk", "C", 1, 0, 1, w3, 2);
        char *out;
        size_t n;
        VKT_OK(vkf_tokenizer_decode(tok, w1, 4, &out, &n));
        VKT_CHECK(strcmp(out, "ab<|u|>ab") == 0, "custom llama decode: \"%s\"", out);
        free(out);
        vkf_tokenizer_free(tok);
    }
    kv_str(&b, "tokenizer.ggml.model", "rwkv");
    expect_tok_fail("unsupported model", &b, 1, VKF_ERROR_UNSUPPORTED,
                    "tokenizer.ggml.model: tokenizer \"rwkv\" is not supported");
    kv_str(&b, "tokenizer.ggml.model", "gpt2");
    kv_str(&b, "tokenizer.ggml.pre", "no-such-pre");
    expect_tok_fail("unknown pre-tokenizer", &b, 2, VKF_ERROR_UNSUPPORTED,
                    "tokenizer.ggml.pre: unknown pre-tokenizer \"no-such-pre\"");
    kv_str(&b, "tokenizer.ggml.model", "llama");
    expect_tok_fail("no tokens", &b, 1, VKF_ERROR_FORMAT, "missing key tokenizer.ggml.tokens");
    kv_str(&b, "tokenizer.ggml.model", "llama");
    kv_strs(&b, "tokenizer.ggml.tokens", toks, 10);
    kv_i32s(&b, "tokenizer.ggml.token_type", types, 9);
    expect_tok_fail("token_type count", &b, 3, VKF_ERROR_FORMAT,
                    "tokenizer.ggml.token_type: expected 10 entries");
    kv_str(&b, "tokenizer.ggml.model", "llama");
    kv_strs(&b, "tokenizer.ggml.tokens", toks, 10);
    kv_u32(&b, "tokenizer.ggml.eos_token_id", 10);
    expect_tok_fail("eos out of range", &b, 3, VKF_ERROR_FORMAT,
                    "tokenizer.ggml.eos_token_id: token id 10 is out of range");
    const char *gtoks[] = {"a", "b", "ab"}, *merges[] = {"a c"};
    kv_str(&b, "tokenizer.ggml.model", "gpt2");
    kv_strs(&b, "tokenizer.ggml.tokens", gtoks, 3);
    kv_strs(&b, "tokenizer.ggml.merges", merges, 1);
    expect_tok_fail("bad merge", &b, 3, VKF_ERROR_FORMAT, "tokenizer.ggml.merges: entry 0");

    /* kimi-k2 through a GGUF: its splitter keeps "aA" one word (no case split), so the merge
     * "a A" applies: [2]; gpt-4o splits lower from upper ("a", "A"): [0, 1]. Without merges
     * (llama.cpp accepts that for kimi-k2 only) the word stays two characters: [0, 1]. */
    const char *ktoks[] = {"a", "A", "aA"}, *kmerges[] = {"a A"};
    static const struct {
        const char *pre;
        int merges;
        int32_t want[2];
        size_t n_want;
    } kc[] = {{"kimi-k2", 1, {2}, 1}, {"gpt-4o", 1, {0, 1}, 2}, {"kimi-k2", 0, {0, 1}, 2}};
    for (size_t i = 0; i < sizeof kc / sizeof kc[0]; i++) {
        kv_str(&b, "tokenizer.ggml.model", "gpt2");
        kv_str(&b, "tokenizer.ggml.pre", kc[i].pre);
        kv_strs(&b, "tokenizer.ggml.tokens", ktoks, 3);
        if (kc[i].merges) kv_strs(&b, "tokenizer.ggml.merges", kmerges, 1);
        vkf_tokenizer *kt = NULL;
        VKT_OK(gguf_tokenizer(&b, 3 + (uint64_t)kc[i].merges, &kt));
        if (kt) check_encode(kt, kc[i].pre, "aA", 2, 0, 0, kc[i].want, kc[i].n_want);
        vkf_tokenizer_free(kt);
    }
    kv_str(&b, "tokenizer.ggml.model", "gpt2");
    kv_str(&b, "tokenizer.ggml.pre", "llama-bpe");
    kv_strs(&b, "tokenizer.ggml.tokens", ktoks, 3);
    expect_tok_fail("no merges", &b, 3, VKF_ERROR_FORMAT, "tokenizer.ggml.merges");
}

int main(void) {
    if (!vkt_need_fixtures("gpt2-tiny llama-tiny")) return vkt_finish();
    g_vocab = load_json("gpt2-tiny/hf/vocab.json");
    VKT_CHECK(cJSON_IsObject(g_vocab), "cannot read vocab.json");
    vkf_tokenizer *hf = NULL, *gg = NULL;
    vkf_gguf *g = NULL;
    char vocab_path[4096], merges_path[4096]; /* vkt_fixture() returns a static buffer */
    snprintf(vocab_path, sizeof vocab_path, "%s", vkt_fixture("gpt2-tiny/hf/vocab.json"));
    snprintf(merges_path, sizeof merges_path, "%s", vkt_fixture("gpt2-tiny/hf/merges.txt"));
    VKT_OK(vkf_tokenizer_from_gpt2_files(vocab_path, merges_path, &hf));
    VKT_OK(vkf_gguf_open(vkt_fixture("gpt2-tiny/gpt2-tiny-f32.gguf"), &g));
    if (g) VKT_OK(vkf_tokenizer_from_gguf(g, &gg));
    vkf_gguf_close(g); /* the tokenizer keeps its own copy */
    if (hf && gg) {
        test_gpt2_fixtures(hf, gg);
        test_gpt2_edges(hf, "gpt2 vocab.json");
        test_gpt2_edges(gg, "gpt2 GGUF");
        test_gpt2_long(hf);
    }
    test_unicode();
    test_llama_fixtures();
    test_llama_edges();
    test_char();
    test_errors();
    test_synthetic_gguf();
    vkf_tokenizer_free(hf);
    vkf_tokenizer_free(gg);
    cJSON_Delete(g_vocab);
    return vkt_finish();
}
