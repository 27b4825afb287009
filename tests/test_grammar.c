/* The GBNF engine against llama.cpp's own grammar tests (tests/data/grammar, extracted by
 * tools/make_grammar_cases.py from llama.cpp's test-grammar-parser.cpp and
 * test-grammar-integration.cpp), and the token masks against a token-by-token check.
 *
 * - parser.json: each grammar parses to exactly llama.cpp's symbol ids and rule elements (the
 *   same rewrite of repetitions and groups), and the texts it refuses are refused;
 * - integration.json: strings that must and must not match each grammar, fed as llama.cpp's
 *   test feeds them (one code point at a time, token(id) markers as tokens), and the grammars
 *   that must fail to build (left recursion, missing rules, missing root);
 * - masks: over a vocabulary of random byte strings (multi-byte characters split across
 *   tokens, control-like texts, an end-of-generation token), the cached mask at every state a
 *   random walk visits equals the plain check of every token (vkf_gmatch_can_accept, the same
 *   test llama.cpp's llama_grammar_reject_candidates makes), at several context depths. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "structured/gbnf.h"
#include "structured/grammar.h"
#include "testutil.h"

static cJSON *load_json(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/grammar/%s", VKF_SOURCE_DIR, rel);
    size_t n;
    char *s = vkt_read_file(path, &n);
    if (!s) {
        VKT_CHECK(0, "cannot read %s", path);
        return NULL;
    }
    cJSON *j = cJSON_ParseWithLength(s, n);
    free(s);
    VKT_CHECK(j != NULL, "%s is not JSON", path);
    return j;
}

static const char *type_name(uint32_t t) {
    static const char *const names[] = {
        "END",      "ALT",      "RULE_REF", "CHAR",     "CHAR_NOT", "CHAR_RNG_UPPER",
        "CHAR_ALT", "CHAR_ANY", "TOKEN",    "TOKEN_NOT"};
    return t < 10 ? names[t] : "?";
}

/* ------------------------------------------------------------------ parser.json */

static void test_parser(void) {
    cJSON *j = load_json("parser.json");
    if (!j) return;
    const cJSON *c;
    int n_ok = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "parse")) {
        const char *text = cJSON_GetObjectItem(c, "grammar")->valuestring;
        vkf_gbnf *g = NULL;
        vkf_status st = vkf_gbnf_parse_rules(text, strlen(text), NULL, NULL, &g);
        VKT_CHECK(st == VKF_OK, "parse %s: %s", text, vkf_last_error());
        if (st != VKF_OK) continue;
        const cJSON *syms = cJSON_GetObjectItem(c, "symbols"),
                    *els = cJSON_GetObjectItem(c, "elements");
        int ok = (uint32_t)cJSON_GetArraySize(syms) == g->n_rules;
        const cJSON *s;
        cJSON_ArrayForEach(s, syms) {
            const char *name = cJSON_GetArrayItem(s, 0)->valuestring;
            uint32_t id = (uint32_t)cJSON_GetArrayItem(s, 1)->valuedouble;
            ok = ok && id < g->n_rules && strcmp(g->names[id], name) == 0;
        }
        VKT_CHECK(ok, "symbols of %s differ from llama.cpp's (%u symbols)", text, g->n_rules);
        int k = 0, n_el = cJSON_GetArraySize(els);
        for (uint32_t r = 0; ok && r < g->n_rules; r++)
            for (uint32_t i = 0; ok && i < g->rule_len[r]; i++, k++) {
                const cJSON *e = cJSON_GetArrayItem(els, k);
                if (!e) {
                    ok = 0;
                    break;
                }
                const char *tn = cJSON_GetArrayItem(e, 0)->valuestring;
                uint32_t v = (uint32_t)cJSON_GetArrayItem(e, 1)->valuedouble;
                ok = strcmp(tn, type_name(g->rules[r][i].type)) == 0 && v == g->rules[r][i].value;
                if (!ok)
                    fprintf(stderr, "  element %d: llama.cpp %s %u, ours %s %u\n", k, tn, v,
                            type_name(g->rules[r][i].type), g->rules[r][i].value);
            }
        VKT_CHECK(ok && k == n_el, "elements of %s differ from llama.cpp's (%d of %d)", text, k,
                  n_el);
        n_ok += ok && k == n_el;
        vkf_gbnf_free(g);
    }
    int n_fail = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "fail")) {
        vkf_gbnf *g = NULL;
        vkf_status st =
            vkf_gbnf_parse_rules(c->valuestring, strlen(c->valuestring), NULL, NULL, &g);
        /* llama.cpp's repetition threshold ({5000}, {0,99} nested six deep) is a limit of
         * valid GBNF (VKF_ERROR_UNSUPPORTED); the rest is not GBNF (VKF_ERROR_FORMAT) */
        int limit = strstr(c->valuestring, "5000") || strstr(c->valuestring, "{0,99}");
        VKT_CHECK(st == (limit ? VKF_ERROR_UNSUPPORTED : VKF_ERROR_FORMAT),
                  "llama.cpp refuses %s; we: %s (%s)", c->valuestring, vkf_status_name(st),
                  vkf_last_error());
        if (st != VKF_OK) {
            n_fail++;
            /* the message names a place */
            VKT_CHECK(strstr(vkf_last_error(), "grammar:") != NULL, "message: %s",
                      vkf_last_error());
        }
        vkf_gbnf_free(g);
    }
    printf("parser: %d grammars equal to llama.cpp's rules, %d refusals\n", n_ok, n_fail);
    cJSON_Delete(j);
}

/* ------------------------------------------------------------------ integration.json */

/* llama.cpp's match_string: 0xff + 4 bytes = a token (its text "<[id]>"), else one code point
 * at a time (invalid UTF-8: U+FFFD) as token 0; matched when a stack is empty at the end */
static int match_string(vkf_gmatch *m, const unsigned char *s, size_t n) {
    vkf_gstate st = vkf_gmatch_start(m);
    for (size_t i = 0; i < n;) {
        if (s[i] == 0xFF && i + 5 <= n) {
            int32_t id = (int32_t)((uint32_t)s[i + 1] << 24 | (uint32_t)s[i + 2] << 16 |
                                   (uint32_t)s[i + 3] << 8 | s[i + 4]);
            char piece[32];
            int pl = snprintf(piece, sizeof piece, "<[%d]>", id);
            if (vkf_gmatch_accept_token(m, &st, id, piece, (size_t)pl) != 0) return 0;
            i += 5;
            continue;
        }
        size_t k = s[i] < 0x80 ? 1 : s[i] >= 0xF0 ? 4 : s[i] >= 0xE0 ? 3 : s[i] >= 0xC0 ? 2 : 0;
        int valid = k > 0 && i + k <= n;
        for (size_t q = 1; valid && q < k; q++)
            valid = (s[i + q] & 0xC0) == 0x80;
        const char *piece = valid ? (const char *)s + i : "\xEF\xBF\xBD";
        size_t pl = valid ? k : 3;
        if (vkf_gmatch_accept_token(m, &st, 0, piece, pl) != 0) return 0;
        i += valid ? k : 1;
    }
    return vkf_gmatch_complete(m, &st);
}

static unsigned char *case_bytes(const cJSON *item, size_t *n) {
    const cJSON *t = cJSON_GetObjectItem(item, "text");
    if (t) {
        *n = strlen(t->valuestring);
        return (unsigned char *)strdup(t->valuestring);
    }
    const cJSON *b = cJSON_GetObjectItem(item, "bytes"), *x;
    unsigned char *out = malloc((size_t)cJSON_GetArraySize(b) + 1);
    *n = 0;
    cJSON_ArrayForEach(x, b) out[(*n)++] = (unsigned char)x->valuedouble;
    return out;
}

/* matches every "pass" string and none of the "fail" ones; returns the strings checked */
static int check_strings(const char *name, vkf_gmatch *m, const cJSON *c) {
    int n = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(c, "pass")) {
        size_t len;
        unsigned char *s = case_bytes(x, &len);
        VKT_CHECK(match_string(m, s, len), "%s: must match '%.*s'", name, (int)len, (char *)s);
        free(s);
        n++;
    }
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(c, "fail")) {
        size_t len;
        unsigned char *s = case_bytes(x, &len);
        VKT_CHECK(!match_string(m, s, len), "%s: must not match '%.*s'", name, (int)len, (char *)s);
        free(s);
        n++;
    }
    return n;
}

static void test_integration(void) {
    cJSON *j = load_json("integration.json");
    if (!j) return;
    const cJSON *c;
    int n_cases = 0, n_strings = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
        if (strcmp(cJSON_GetObjectItem(c, "kind")->valuestring, "grammar") != 0) continue;
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *text = cJSON_GetObjectItem(c, "grammar")->valuestring;
        vkf_gbnf *g;
        vkf_gmatch *m;
        if (vkf_gbnf_parse(text, strlen(text), "root", NULL, NULL, &g) != VKF_OK) {
            VKT_CHECK(0, "%s: %s", name, vkf_last_error());
            continue;
        }
        VKT_OK(vkf_gmatch_create(g, 0, &m));
        n_strings += check_strings(name, m, c);
        vkf_gmatch_free(m);
        n_cases++;
    }
    int n_bf = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "build_fails")) {
        const char *text = cJSON_GetObjectItem(c, "grammar")->valuestring;
        vkf_gbnf *g = NULL;
        vkf_status st = vkf_gbnf_parse(text, strlen(text), "root", NULL, NULL, &g);
        VKT_CHECK(st == VKF_ERROR_FORMAT && strstr(vkf_last_error(), "left-recursive"),
                  "left recursion must be refused: %s (%s)", text, vkf_last_error());
        vkf_gbnf_free(g);
        n_bf++;
    }
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "roots")) {
        const char *text = cJSON_GetObjectItem(c, "grammar")->valuestring;
        const char *root = cJSON_GetObjectItem(c, "root")->valuestring;
        int builds = cJSON_IsTrue(cJSON_GetObjectItem(c, "builds"));
        int parses = cJSON_IsTrue(cJSON_GetObjectItem(c, "parses"));
        vkf_gbnf *g = NULL;
        vkf_status st = vkf_gbnf_parse(text, strlen(text), root, NULL, NULL, &g);
        VKT_CHECK((st == VKF_OK) == builds, "%s: build %s",
                  cJSON_GetObjectItem(c, "name")->valuestring,
                  builds ? "must succeed" : "must fail");
        if (st != VKF_OK)
            VKT_CHECK(strstr(vkf_last_error(), parses ? root : "never defined") != NULL,
                      "the message names the problem: %s", vkf_last_error());
        vkf_gbnf_free(g);
        g = NULL;
        st = vkf_gbnf_parse_rules(text, strlen(text), NULL, NULL, &g);
        VKT_CHECK((st == VKF_OK) == parses, "%s: parse",
                  cJSON_GetObjectItem(c, "name")->valuestring);
        vkf_gbnf_free(g);
    }
    printf("integration: %d grammars, %d strings; %d left-recursive grammars refused\n", n_cases,
           n_strings, n_bf);
    cJSON_Delete(j);
}

/* ------------------------------------------------------------------ masks */

static uint64_t rng_state = 42;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* A vocabulary: single bytes, ASCII words, JSON-ish pieces, UTF-8 characters whole and split
 * at every byte, invalid bytes, two texts shared by several ids, an empty one, an EOG. */
static vkf_gvocab *make_vocab(int32_t *n_out, char ***pieces_out, size_t **lens_out,
                              uint8_t **eog_out) {
    const char *fixed[] = {"{",     "}",      "[",   "]",     ",",   ":",     "\"",      "\",",
                           "\":",   "\"}",    "{\"", " ",     "  ",  "\n",    "\n  ",    "true",
                           "false", "null",   "nul", "0",     "1",   "12",    "-",       "-1",
                           ".",     ".5",     "e",   "E+",    "a",   "b",     "ab",      "abc",
                           "name",  "\"name", "age", "\\",    "\\n", "\\u00", "é",       "日本",
                           "🔵",     "x\"y",   "},{", "\":\"", "1,",  "]}",    "<|eot|>", "🟠✅"};
    int n_fixed = (int)(sizeof fixed / sizeof fixed[0]);
    const char *utf8[] = {"é", "日", "本", "🔵", "❌", "ü"};
    int32_t n = 256 + n_fixed + 400;
    char **p = calloc((size_t)n, sizeof *p);
    size_t *l = calloc((size_t)n, sizeof *l);
    uint8_t *eog = calloc((size_t)n, 1);
    int32_t k = 0;
    for (int b = 0; b < 256; b++, k++) { /* every byte (byte-level vocabularies have them) */
        p[k] = malloc(2);
        p[k][0] = (char)b;
        l[k] = 1;
    }
    for (int i = 0; i < n_fixed; i++, k++) {
        p[k] = strdup(fixed[i]);
        l[k] = strlen(fixed[i]);
    }
    eog[k - 2] = 1; /* "<|eot|>" */
    while (k < n) {
        char buf[16];
        size_t bl = 0;
        int kind = (int)(rnd() % 4);
        if (kind == 0) { /* a split character: its head or tail */
            const char *u = utf8[rnd() % 6];
            size_t ul = strlen(u), cut = 1 + rnd() % (ul - 1 ? ul - 1 : 1);
            if (rnd() & 1) {
                memcpy(buf, u, cut);
                bl = cut;
            } else {
                memcpy(buf, u + cut, ul - cut);
                bl = ul - cut;
            }
        } else {
            int len = 1 + (int)(rnd() % 5);
            const char alpha[] = "ab\"{}:, 019.-e\\nul";
            for (int i = 0; i < len; i++)
                buf[bl++] = alpha[rnd() % (sizeof alpha - 1)];
        }
        if (bl == 0) continue;
        p[k] = malloc(bl + 1);
        memcpy(p[k], buf, bl);
        l[k] = bl;
        k++;
    }
    free(p[k - 1]); /* the last one: an empty text (never allowed) */
    p[k - 1] = strdup("");
    l[k - 1] = 0;
    vkf_gvocab *v = NULL;
    VKT_OK(vkf_gvocab_create(n, (const char *const *)p, l, eog, &v));
    *n_out = n;
    *pieces_out = p;
    *lens_out = l;
    *eog_out = eog;
    return v;
}

static const char *mask_grammars[] = {
    /* JSON (llama.cpp's grammars/json.gbnf shape) */
    "root ::= object\n"
    "value ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "object ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws value)* )? \"}\" ws\n"
    "array ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" "
    "[0-9a-fA-F]{4}) )* \"\\\"\" ws\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)? ws\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n",
    /* multi-byte characters and classes over them */
    "root ::= [日本é]+ \"🔵\" ([^a-z] | \"ab\")* \"}\"\n",
    /* tokens, an optional end, nested groups */
    "root ::= \"a\" (\"b\" | <[300]> | !<[1]>)* (\"c\" item)?\nitem ::= [0-9]{1,3}\n",
};

/* random walk over allowed tokens, comparing the cached mask with the plain check */
static void check_masks(vkf_gvocab *v, int32_t n, char **p, size_t *l, const uint8_t *eog,
                        const char *text, int depth, int steps) {
    vkf_gengine *e;
    vkf_status st = vkf_gengine_create(v, text, strlen(text), NULL, NULL, NULL, depth, &e);
    VKT_CHECK(st == VKF_OK, "%s", vkf_last_error());
    if (st != VKF_OK) return;
    vkf_gmatch *m = vkf_gengine_matcher(e);
    vkf_gstate s = vkf_gengine_start(e);
    int bad = 0, states = 0;
    for (int step = 0; step < steps && !bad; step++) {
        const uint64_t *mask;
        VKT_OK(vkf_gengine_mask(e, &s, &mask));
        int32_t allowed[1024];
        int n_allowed = 0;
        for (int32_t t = 0; t < n; t++) {
            int want;
            if (eog[t]) /* "<|eot|>": only where the grammar is complete */
                want = vkf_gmatch_complete(m, &s);
            else if (l[t] == 0 || memchr(p[t], '\0', l[t]))
                want = 0;
            else {
                want = vkf_gmatch_can_accept(m, &s, p[t], l[t]);
                if (!want && !s.partial.n_remain) { /* token elements */
                    uint32_t k;
                    const uint32_t *mem = vkf_gmatch_set(m, s.set, &k);
                    for (uint32_t i = 0; i < k; i++) {
                        const vkf_gelem *top = vkf_gmatch_top(m, mem[i]);
                        if (top && ((top->type == VKF_G_TOKEN && top->value == (uint32_t)t) ||
                                    (top->type == VKF_G_TOKEN_NOT && top->value != (uint32_t)t)))
                            want = 1;
                    }
                }
            }
            int got = (int)((mask[t >> 6] >> (t & 63)) & 1);
            if (got != want) {
                bad = 1;
                VKT_CHECK(0, "depth %d, step %d: token %d '%.*s': mask %d, check %d", depth, step,
                          t, (int)l[t], p[t], got, want);
                break;
            }
            if (got && n_allowed < 1024) allowed[n_allowed++] = t;
            VKT_CHECK(got == vkf_gengine_allows(e, &s, t), "allows() = mask for token %d", t);
        }
        states++;
        if (n_allowed == 0) break;
        int32_t t = allowed[rnd() % (uint32_t)n_allowed];
        if (eog[t]) break; /* end of generation */
        VKT_OK(vkf_gengine_accept(e, &s, t));
        if (vkf_gmatch_only_complete(m, &s)) s = vkf_gengine_start(e);
    }
    vkf_gengine_stats gs;
    vkf_gengine_get_stats(e, &gs);
    VKT_CHECK(!bad, "masks at depth %d", depth);
    (void)states;
    vkf_gengine_free(e);
}

static void test_masks(void) {
    int32_t n;
    char **p;
    size_t *l;
    uint8_t *eog;
    vkf_gvocab *v = make_vocab(&n, &p, &l, &eog);
    if (!v) return;
    for (size_t g = 0; g < sizeof mask_grammars / sizeof *mask_grammars; g++)
        for (int depth = 0; depth <= 4; depth += (depth < 2 ? 1 : 2))
            for (int walk = 0; walk < 3; walk++)
                check_masks(v, n, p, l, eog, mask_grammars[g], depth, 60);
    for (int32_t t = 0; t < n; t++)
        free(p[t]);
    free(p);
    free(l);
    free(eog);
    vkf_gvocab_free(v);
    printf("masks: cached masks equal the token-by-token check\n");
}

/* Only well-formed UTF-8 gets through a grammar (JSON text must be UTF-8): the cases are those
 * of Unicode's table 3-7 (well-formed byte sequences) and its boundaries, expected values from
 * the standard, through the matcher and through a vocabulary's cached masks. */
static void test_utf8(void) {
    static const struct {
        const char *bytes;
        int ok;
    } cases[] = {
        {"\x41", 1},
        {"\xC2\x80", 1},
        {"\xDF\xBF", 1},
        {"\xE0\xA0\x80", 1},
        {"\xED\x9F\xBF", 1},
        {"\xEE\x80\x80", 1},
        {"\xEF\xBF\xBF", 1},
        {"\xF0\x90\x80\x80", 1},
        {"\xF4\x8F\xBF\xBF", 1},
        {"\xC3\xA9", 1},
        {"\xC0\x80", 0},         /* overlong U+0000 */
        {"\xC1\xBF", 0},         /* overlong U+007F */
        {"\xE0\x9F\xBF", 0},     /* overlong U+07FF */
        {"\xED\xA0\x80", 0},     /* surrogate U+D800 */
        {"\xED\xBF\xBF", 0},     /* surrogate U+DFFF */
        {"\xF0\x8F\xBF\xBF", 0}, /* overlong U+FFFF */
        {"\xF4\x90\x80\x80", 0}, /* U+110000 */
        {"\xF5\x80\x80\x80", 0},
        {"\xFF", 0},
        {"\x80", 0},
        {"\xC3", 0}, /* cut short */
    };
    const char *text = "root ::= [^\"]*";
    vkf_gbnf *g = NULL;
    vkf_gmatch *m = NULL;
    VKT_OK(vkf_gbnf_parse(text, strlen(text), NULL, NULL, NULL, &g));
    VKT_OK(vkf_gmatch_create(g, 0, &m));
    if (!m) return;
    int nc = (int)(sizeof cases / sizeof cases[0]);
    char *pieces[32];
    size_t lens[32];
    for (int i = 0; i < nc; i++) {
        vkf_gstate st = vkf_gmatch_start(m);
        size_t n = strlen(cases[i].bytes);
        int got =
            vkf_gmatch_accept_bytes(m, &st, cases[i].bytes, n) == 0 && vkf_gmatch_complete(m, &st);
        VKT_CHECK(got == cases[i].ok, "UTF-8 case %d (%zu bytes): matched %d, the standard says %d",
                  i, n, got, cases[i].ok);
        pieces[i] = (char *)cases[i].bytes;
        lens[i] = n;
    }
    vkf_gmatch_free(m);
    /* as tokens: the mask of the start state allows exactly the well-formed ones and the
     * prefixes that can still become one ("\xC3", cut short, may be continued) */
    uint8_t eog[32] = {0};
    vkf_gvocab *v = NULL;
    VKT_OK(vkf_gvocab_create(nc, (const char *const *)pieces, lens, eog, &v));
    vkf_gengine *e = NULL;
    if (v) VKT_OK(vkf_gengine_create(v, text, strlen(text), NULL, NULL, NULL, 0, &e));
    if (e) {
        vkf_gstate s = vkf_gengine_start(e);
        const uint64_t *mask;
        VKT_OK(vkf_gengine_mask(e, &s, &mask));
        for (int i = 0; i < nc; i++) {
            int want = cases[i].ok || strcmp(cases[i].bytes, "\xC3") == 0;
            VKT_CHECK((int)((mask[i >> 6] >> (i & 63)) & 1) == want,
                      "UTF-8 case %d as a token: mask %d, want %d", i,
                      (int)((mask[i >> 6] >> (i & 63)) & 1), want);
        }
        vkf_gengine_free(e);
    }
    vkf_gvocab_free(v);
    printf("utf8: only well-formed UTF-8 passes a grammar (%d cases)\n", nc);
}

/* the public side: a grammar needs the model's vocabulary; a bad grammar names its place */
/* A start rule that matches no string is refused by name (found by fuzz_grammar: "root ::= root"
 * reached the matcher with an empty start state); recursion with a way out still builds. */
static void test_unproductive(void) {
    static const char *const refused[] = {
        "root ::= root",
        "root ::= \"a\" root",
        "root ::= x\nx ::= \"b\" x | \"c\" x",
        "root ::= x y\nx ::= \"a\"\ny ::= y",
    };
    static const char *const kept[] = {
        "root ::= \"a\" root | \"\"",
        "root ::= x | \"c\"\nx ::= x",       /* x is dead, root's second alternative is not */
        "root ::= x\nx ::= \"b\" x | [a-z]", /* ends through a character class */
        "root ::= (\"a\" root)?",
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        vkf_gbnf *g = NULL;
        vkf_status st = vkf_gbnf_parse(refused[i], strlen(refused[i]), "root", NULL, NULL, &g);
        VKT_CHECK(st == VKF_ERROR_FORMAT && strstr(vkf_last_error(), "'root' matches no string"),
                  "%s must be refused: %s", refused[i], vkf_last_error());
        vkf_gbnf_free(g);
        VKT_CHECK(vkf_grammar_check(refused[i], NULL) == VKF_ERROR_FORMAT, "public check: %s",
                  refused[i]);
        /* the matcher itself copes with these (parse_rules keeps the rule): "root ::= root"
         * starts from the empty set */
        VKT_OK(vkf_gbnf_parse_rules(refused[i], strlen(refused[i]), NULL, NULL, &g));
        vkf_gmatch *m;
        VKT_OK(vkf_gmatch_create(g, 0, &m));
        vkf_gstate st0 = vkf_gmatch_start(m);
        VKT_CHECK(i != 0 || st0.set == VKF_GSET_EMPTY, "%s: nothing to match", refused[i]);
        vkf_gmatch_free(m);
    }
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
        vkf_gbnf *g = NULL;
        VKT_CHECK(vkf_gbnf_parse(kept[i], strlen(kept[i]), "root", NULL, NULL, &g) == VKF_OK,
                  "%s must build: %s", kept[i], vkf_last_error());
        vkf_gbnf_free(g);
    }
}

/* A grammar whose parse grows combinatorially (nested repetitions, ". (.+)+++..." 25 deep:
 * C(25 + n, n) stacks after n characters, 15276 after 5) fails fast with the reason instead of
 * running for minutes (fuzz_grammar found one taking 60 s for one input); one level less deep
 * nesting, (..+)+, stays at 5 stacks and matches any length. */
static void test_exponential(void) {
    static const char deep[] = "root ::= ..+++++++++++++++++++++++++";
    static const char shallow[] = "root ::= (..+)+";
    const char *text = "abcdefghijklmnopqrstuvwxyz";
    for (int i = 0; i < 2; i++) {
        const char *gt = i ? deep : shallow;
        vkf_gbnf *g = NULL;
        VKT_OK(vkf_gbnf_parse(gt, strlen(gt), "root", NULL, NULL, &g));
        vkf_gmatch *m;
        VKT_OK(vkf_gmatch_create(g, 0, &m));
        vkf_gstate st = vkf_gmatch_start(m);
        int ok = st.set != VKF_GSET_EMPTY && vkf_gmatch_accept_bytes(m, &st, text, 26) == 0;
        const char *why = vkf_gmatch_failure(m);
        if (!i)
            VKT_CHECK(ok && !why && vkf_gmatch_complete(m, &st), "%s matches 26 letters", gt);
        else
            VKT_CHECK(!ok && why && strstr(why, "nested repetitions"), "%s: fails with why: %s", gt,
                      why ? why : "(no reason)");
        vkf_gmatch_free(m);
    }
    /* through the engine: the token that overflows it is refused with the reason */
    const char *piece[2] = {"a", "b"};
    size_t len[2] = {1, 1};
    uint8_t eog[2] = {0};
    vkf_gvocab *v = NULL;
    VKT_OK(vkf_gvocab_create(2, piece, len, eog, &v));
    vkf_gengine *e = NULL;
    VKT_OK(vkf_gengine_create(v, deep, strlen(deep), NULL, NULL, NULL, 2, &e));
    vkf_gstate st = e ? vkf_gengine_start(e) : (vkf_gstate){0};
    vkf_status s = VKF_OK;
    int n = 0;
    while (e && s == VKF_OK && n < 26) {
        s = vkf_gengine_accept(e, &st, 0);
        n++;
    }
    VKT_CHECK(s == VKF_ERROR_UNSUPPORTED && n > 2 &&
                  strstr(vkf_last_error(), "grammar: accepting a token: the parse grew"),
              "the engine names the reason after %d tokens: %s", n, vkf_last_error());
    vkf_gengine_free(e);
    vkf_gvocab_free(v);
}

static void test_public(void) {
    vkf_sampler_params sp = {.temp = 0.5f, .grammar = "root ::= \"a\""};
    vkf_sampler *s = NULL;
    VKT_CHECK(vkf_sampler_create(&sp, &s) == VKF_ERROR_INVALID_ARGUMENT &&
                  strstr(vkf_last_error(), "vkf_sampler_create_ex"),
              "a grammar without a model: %s", vkf_last_error());
    vkf_sampler_free(s);
    sp.grammar = "";
    VKT_OK(vkf_sampler_create(&sp, &s)); /* "": no grammar */
    VKT_CHECK(vkf_sampler_grammar_state(s) == VKF_GRAMMAR_NONE, "no grammar state");
    vkf_sampler_free(s);
    VKT_OK(vkf_grammar_check("root ::= <think> x\nx ::= [a-z]+", NULL)); /* tokens on trust */
    VKT_CHECK(vkf_grammar_check("root ::= \"a\"\n\nbad ::= (\"x\"", NULL) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "line 3"),
              "the line of the error: %s", vkf_last_error());
    VKT_CHECK(vkf_grammar_check("start ::= \"a\"", NULL) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "'root'"),
              "no root: %s", vkf_last_error());
    VKT_OK(vkf_grammar_check("start ::= \"a\"", "start"));
}

int main(void) {
    test_public();
    test_utf8();
    test_unproductive();
    test_exponential();
    test_parser();
    test_integration();
    test_masks();
    return vkt_finish();
}
