/* JSON Schema -> grammar (vkf_json_schema_to_grammar) against llama.cpp's converter tests
 * (tests/data/grammar/json_schema.json and the schema cases of integration.json, extracted by
 * tools/make_grammar_cases.py) and against arithmetic.
 *
 * - llama.cpp's FAILURE schemas fail here too; for each SUCCESS schema our grammar and
 *   llama.cpp's expected grammar accept the same strings: 100 random strings drawn from each
 *   grammar (a random walk over printable characters) must match the other, and so must
 *   mutations of them (a character dropped, doubled or changed) match both or neither. The
 *   cases where we differ on purpose are listed with the reason (a refusal by name, or a
 *   llama.cpp grammar that writes invalid JSON);
 * - integration.json's schema cases: the strings llama.cpp says must (not) match;
 * - number ranges: integers around random bounds, and decimals with random fractional bounds,
 *   accepted exactly when the value is in range (compared as numbers);
 * - unsupported keywords are refused with their name and JSON pointer.
 * Generated text validated by a JSON Schema validator: tests/structured/test_schema_outputs.py
 * (it runs this program with --sample). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "structured/gbnf.h"
#include "testutil.h"

static uint64_t g_rng = 12345;
static uint32_t rnd(void) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}

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
    return j;
}

static vkf_gmatch *matcher(const char *gbnf) {
    vkf_gbnf *g;
    vkf_gmatch *m;
    if (vkf_gbnf_parse(gbnf, strlen(gbnf), "root", NULL, NULL, &g) != VKF_OK) return NULL;
    if (vkf_gmatch_create(g, 0, &m) != VKF_OK) {
        vkf_gbnf_free(g);
        return NULL;
    }
    return m;
}

static int matches(vkf_gmatch *m, const char *s, size_t n) {
    vkf_gstate st = vkf_gmatch_start(m);
    return vkf_gmatch_accept_bytes(m, &st, s, n) == 0 && vkf_gmatch_complete(m, &st);
}

/* A random string of the grammar: characters drawn among those that keep it alive, closers
 * preferred as it grows, stopping at random once complete. 0 when it ran too long. */
static int sample(vkf_gmatch *m, char *out, size_t cap) {
    /* printable ASCII, tab and new line, and characters of 2, 3 and 4 UTF-8 bytes */
    static char ascii[96][2];
    static const char *alphabet[104];
    static int n_alpha;
    if (!n_alpha) {
        for (int c = 0x20; c < 0x7F; c++) {
            ascii[c - 0x20][0] = (char)c;
            alphabet[n_alpha++] = ascii[c - 0x20];
        }
        alphabet[n_alpha++] = "\n";
        alphabet[n_alpha++] = "\t";
        alphabet[n_alpha++] = "é";
        alphabet[n_alpha++] = "日";
        alphabet[n_alpha++] = "🔵";
    }
    vkf_gstate st = vkf_gmatch_start(m);
    size_t len = 0;
    for (int step = 0; step < 400; step++) {
        if (vkf_gmatch_complete(m, &st) && (vkf_gmatch_only_complete(m, &st) || rnd() % 8 == 0)) {
            out[len] = 0;
            return 1;
        }
        int ok[128], n_ok = 0;
        for (int a = 0; a < n_alpha; a++) {
            vkf_gstate t = st;
            if (vkf_gmatch_accept_bytes(m, &t, alphabet[a], strlen(alphabet[a])) == 0)
                ok[n_ok++] = a;
        }
        if (!n_ok) return 0;
        int pick = ok[rnd() % (uint32_t)n_ok];
        if (step > 40) /* prefer closers and quotes: finish */
            for (int k = 0; k < n_ok; k++)
                if (strchr("\"}]", alphabet[ok[k]][0]) && rnd() % 2) pick = ok[k];
        size_t al = strlen(alphabet[pick]);
        if (len + al + 1 >= cap) return 0;
        memcpy(out + len, alphabet[pick], al);
        len += al;
        vkf_gmatch_accept_bytes(m, &st, alphabet[pick], al);
    }
    return 0;
}

/* ---- strict JSON (RFC 8259), to tell llama.cpp's grammar bugs from ours */

typedef struct jp {
    const unsigned char *s;
    size_t i, n;
} jp;

static void jws(jp *p) {
    while (p->i < p->n && strchr(" \t\n\r", p->s[p->i]) && p->s[p->i])
        p->i++;
}

static int jvalue(jp *p, int depth);

static int g_key_escape; /* a key began with an escape */

static int jstring(jp *p) {
    if (p->i >= p->n || p->s[p->i] != '"') return 0;
    for (p->i++; p->i < p->n; p->i++) {
        unsigned char c = p->s[p->i];
        if (c == '"') {
            p->i++;
            return 1;
        }
        if (c < 0x20) return 0;
        if (c == '\\') {
            if (++p->i >= p->n) return 0;
            c = p->s[p->i];
            if (c == 'u') {
                for (int k = 0; k < 4; k++)
                    if (++p->i >= p->n || !strchr("0123456789abcdefABCDEF", p->s[p->i]) ||
                        !p->s[p->i])
                        return 0;
            } else if (!strchr("\"\\/bfnrt", c) || !c) {
                return 0;
            }
        }
    }
    return 0;
}

static int jnumber(jp *p) {
    size_t i = p->i;
    if (i < p->n && p->s[i] == '-') i++;
    if (i >= p->n || !(p->s[i] >= '0' && p->s[i] <= '9')) return 0;
    if (p->s[i] == '0') {
        i++;
    } else {
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    }
    if (i < p->n && p->s[i] == '.') {
        size_t d = ++i;
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
        if (i == d) return 0;
    }
    if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->n && (p->s[i] == '+' || p->s[i] == '-')) i++;
        size_t d = i;
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
        if (i == d) return 0;
    }
    p->i = i;
    return 1;
}

static int jvalue(jp *p, int depth) {
    if (depth > 64) return 0;
    jws(p);
    if (p->i >= p->n) return 0;
    unsigned char c = p->s[p->i];
    if (c == '"') return jstring(p);
    if (c == '{' || c == '[') {
        p->i++;
        jws(p);
        unsigned char close = c == '{' ? '}' : ']';
        if (p->i < p->n && p->s[p->i] == close) {
            p->i++;
            return 1;
        }
        for (;;) {
            if (c == '{') {
                jws(p);
                if (p->i + 1 < p->n && p->s[p->i + 1] == '\\') g_key_escape = 1;
                if (!jstring(p)) return 0;
                jws(p);
                if (p->i >= p->n || p->s[p->i] != ':') return 0;
                p->i++;
            }
            if (!jvalue(p, depth + 1)) return 0;
            jws(p);
            if (p->i < p->n && p->s[p->i] == ',') {
                p->i++;
                continue;
            }
            if (p->i < p->n && p->s[p->i] == close) {
                p->i++;
                return 1;
            }
            return 0;
        }
    }
    for (const char *lit = "true\0false\0null\0"; *lit; lit += strlen(lit) + 1)
        if (p->n - p->i >= strlen(lit) && !memcmp(p->s + p->i, lit, strlen(lit))) {
            p->i += strlen(lit);
            return 1;
        }
    return jnumber(p);
}

static int json_strict(const char *s, size_t n) {
    jp p = {(const unsigned char *)s, 0, n};
    if (!jvalue(&p, 0)) return 0;
    jws(&p);
    return p.i == n;
}

/* a string llama.cpp's grammar takes and ours does not, for a reason of our choosing: it is
 * not JSON (llama.cpp's grammars let raw control characters, lone backslashes and leading
 * zeros through), or it holds a negative zero (-0: a valid number we never write) */
static int llama_only_explained(const char *s, size_t n) {
    if (!json_strict(s, n)) return 1;
    for (size_t i = 0; i + 1 < n; i++)
        if (s[i] == '-' && s[i + 1] == '0' && (i + 2 == n || !(s[i + 2] >= '1' && s[i + 2] <= '9')))
            return 1;
    return 0;
}

/* a string ours takes and llama.cpp's does not: a key beginning with an escape (llama.cpp's
 * additional-key rule takes its first character raw, [^"a], so "\\..." cannot start a key) */
static int ours_only_explained(const char *s, size_t n) {
    g_key_escape = 0;
    return json_strict(s, n) && g_key_escape;
}

static int n_explained;

/* strings of a must match b; mutations must agree; returns the strings compared */
static int cross_check(const char *name, vkf_gmatch *a, vkf_gmatch *b, const char *an,
                       const char *bn, int b_is_ours, int n) {
    int checked = 0, bad = 0;
    char s[4096], t[4200];
    for (int i = 0; i < n && bad < 3; i++) {
        if (!sample(a, s, sizeof s)) continue;
        size_t len = strlen(s);
        if (!matches(b, s, len)) {
            if (b_is_ours ? llama_only_explained(s, len) : ours_only_explained(s, len)) {
                n_explained++;
                continue;
            }
            bad++;
            VKT_CHECK(0, "%s: %s writes '%s', %s does not accept it", name, an, s, bn);
        }
        checked++;
        for (int k = 0; k < 4 && len > 0; k++) { /* mutations */
            size_t pos = rnd() % len;
            int kind = (int)(rnd() % 3);
            size_t tl = 0;
            memcpy(t, s, pos);
            tl = pos;
            if (kind == 1) t[tl++] = s[pos];                       /* doubled */
            if (kind == 2) t[tl++] = "a0\"{}[],: -.e"[rnd() % 13]; /* changed */
            size_t from = kind == 2 || kind == 0 ? pos + 1 : pos;  /* dropped */
            memcpy(t + tl, s + from, len - from);
            tl += len - from;
            int ma = matches(a, t, tl), mb = matches(b, t, tl);
            int theirs_only = b_is_ours ? ma && !mb : mb && !ma;
            if (ma != mb &&
                (theirs_only ? llama_only_explained(t, tl) : ours_only_explained(t, tl))) {
                n_explained++;
                continue;
            }
            if (ma != mb) {
                bad++;
                VKT_CHECK(0, "%s: '%.*s': %s %s, %s %s", name, (int)tl, t, an,
                          ma ? "accepts" : "rejects", bn, mb ? "accepts" : "rejects");
            }
            checked++;
        }
    }
    return checked;
}

/* cases where we differ from llama.cpp on purpose, and why */
static const struct {
    const char *name, *why, *refused; /* refused: the word our message must name, or NULL */
} k_differ[] = {
    {"regexp quote", "llama.cpp writes the matched '\"' raw, which is not JSON; we write \\\"",
     NULL},
    {"regexp", "llama.cpp's . takes \" and \\ raw (not JSON); ours writes them escaped", NULL},
    {"exotic formats",
     "llama.cpp's date takes days a month lacks (02-30, 09-31) and year 0000; "
     "ours writes calendar dates (February up to 28)",
     NULL},
    {"regexp with top-level alternation",
     "^A|B|C|D$: in ECMAScript ^ anchors A alone and $ D alone (B and C match anywhere); "
     "llama.cpp anchors every alternative",
     NULL},
    {"unanchored regexp", "a pattern matches anywhere (ECMAScript search): llama.cpp drops it",
     NULL},
    {"regexp with unsupported shorthand", "\\w is translated here; llama.cpp drops the pattern",
     NULL},
    {"unsupported regexp in a property", "a lookahead: refused by name, llama.cpp drops it",
     "lookaround"},
    {"mix of allOf, anyOf and $ref (similar to https://json.schemastore.org/tsconfig.json)",
     "allOf over anyOf: refused, llama.cpp makes every alternative's properties optional", "allOf"},
};

static const char *differs(const char *name, const char **refused) {
    for (size_t i = 0; i < sizeof k_differ / sizeof *k_differ; i++)
        if (!strcmp(k_differ[i].name, name)) {
            *refused = k_differ[i].refused;
            return k_differ[i].why;
        }
    *refused = NULL;
    return NULL;
}

static void test_llama_cases(void) {
    cJSON *j = load_json("json_schema.json");
    if (!j) return;
    const cJSON *c;
    int n_same = 0, n_fail = 0, n_differ = 0, n_strings = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *schema = cJSON_GetObjectItem(c, "schema")->valuestring;
        int want_ok = !strcmp(cJSON_GetObjectItem(c, "status")->valuestring, "SUCCESS");
        char *g = NULL;
        vkf_status st = vkf_json_schema_to_grammar(schema, &g);
        const char *refused, *why = differs(name, &refused);
        if (!want_ok) {
            VKT_CHECK(st != VKF_OK, "%s: llama.cpp refuses this schema; we wrote\n%s", name,
                      g ? g : "");
            n_fail++;
            free(g);
            continue;
        }
        if (refused) {
            VKT_CHECK(st == VKF_ERROR_UNSUPPORTED && strstr(vkf_last_error(), refused),
                      "%s: must be refused naming '%s' (%s): %s", name, refused, why,
                      vkf_last_error());
            n_differ++;
            free(g);
            continue;
        }
        VKT_CHECK(st == VKF_OK, "%s: %s", name, vkf_last_error());
        if (st != VKF_OK) continue;
        const char *theirs = cJSON_GetObjectItem(c, "grammar")->valuestring;
        vkf_gmatch *mo = matcher(g), *mt = matcher(theirs);
        VKT_CHECK(mo && mt, "%s: grammars parse (ours %d, llama.cpp's %d): %s", name, !!mo, !!mt,
                  vkf_last_error());
        if (mo && mt && !why) {
            n_strings += cross_check(name, mo, mt, "ours", "llama.cpp's", 0, 100);
            n_strings += cross_check(name, mt, mo, "llama.cpp's", "ours", 1, 100);
            n_same++;
        } else if (why) {
            n_differ++;
        }
        vkf_gmatch_free(mo);
        vkf_gmatch_free(mt);
        free(g);
    }
    printf("llama.cpp converter cases: %d with the same language (%d strings compared; %d that "
           "one grammar alone takes for a known reason: not JSON, -0, an escaped key), %d refused "
           "like llama.cpp, "
           "%d different on purpose\n",
           n_same, n_strings, n_explained, n_fail, n_differ);
    cJSON_Delete(j);
}

/* integration.json: schemas with strings llama.cpp says must and must not match */
static const struct {
    const char *name, *refused;
} k_int_refused[] = {
    {"required props", "uniqueItems"}, /* the product schema: tags has uniqueItems */
};

static void test_integration_schemas(void) {
    cJSON *j = load_json("integration.json");
    if (!j) return;
    const cJSON *c;
    int n = 0, n_str = 0, n_ref = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
        if (strcmp(cJSON_GetObjectItem(c, "kind")->valuestring, "schema") != 0) continue;
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *schema = cJSON_GetObjectItem(c, "schema")->valuestring;
        char *g = NULL;
        vkf_status st = vkf_json_schema_to_grammar(schema, &g);
        const char *refused = NULL;
        for (size_t i = 0; i < sizeof k_int_refused / sizeof *k_int_refused; i++)
            if (!strcmp(k_int_refused[i].name, name) && strstr(schema, k_int_refused[i].refused))
                refused = k_int_refused[i].refused;
        if (refused) {
            VKT_CHECK(st == VKF_ERROR_UNSUPPORTED && strstr(vkf_last_error(), refused),
                      "%s: refused naming %s: %s", name, refused, vkf_last_error());
            n_ref++;
            free(g);
            continue;
        }
        VKT_CHECK(st == VKF_OK, "%s: %s", name, vkf_last_error());
        vkf_gmatch *m = g ? matcher(g) : NULL;
        if (m) {
            const cJSON *x;
            cJSON_ArrayForEach(x, cJSON_GetObjectItem(c, "pass")) {
                const char *s = cJSON_GetObjectItem(x, "text")->valuestring;
                VKT_CHECK(matches(m, s, strlen(s)), "%s: must match %s\n%s", name, s, g);
                n_str++;
            }
            cJSON_ArrayForEach(x, cJSON_GetObjectItem(c, "fail")) {
                const char *s = cJSON_GetObjectItem(x, "text")->valuestring;
                VKT_CHECK(!matches(m, s, strlen(s)), "%s: must not match %s\n%s", name, s, g);
                n_str++;
            }
            n++;
        }
        vkf_gmatch_free(m);
        free(g);
    }
    printf("integration schemas: %d schemas, %d strings; %d refused by name\n", n, n_str, n_ref);
    cJSON_Delete(j);
}

/* ------------------------------------------------------------------ number ranges */

static void check_range(const char *schema, double lo, int lex, int has_lo, double hi, int hex,
                        int has_hi, int integer, int trials) {
    char *g = NULL;
    vkf_status st = vkf_json_schema_to_grammar(schema, &g);
    VKT_CHECK(st == VKF_OK, "%s: %s", schema, vkf_last_error());
    if (st != VKF_OK) return;
    vkf_gmatch *m = matcher(g);
    int bad = 0;
    for (int t = 0; t < trials && !bad; t++) {
        char s[64];
        double v;
        if (integer || t % 3 == 0) { /* integers around the bounds */
            double c = has_lo && (t & 1) ? lo : has_hi ? hi : has_lo ? lo : 0;
            long k = (long)floor(c) + (long)(rnd() % 41) - 20;
            snprintf(s, sizeof s, "%ld", k);
            v = (double)k;
        } else { /* decimals with up to 3 fraction digits */
            double c = has_lo && (t & 1) ? lo : has_hi ? hi : has_lo ? lo : 0;
            long k = (long)floor(c * 1000) + (long)(rnd() % 4001) - 2000;
            long ip = labs(k) / 1000, fp = labs(k) % 1000;
            snprintf(s, sizeof s, "%s%ld.%03ld", k < 0 ? "-" : "", ip, fp);
            if (rnd() % 2) { /* drop trailing zeros sometimes */
                size_t l = strlen(s);
                while (s[l - 1] == '0' && s[l - 2] != '.')
                    s[--l] = 0;
            }
            v = strtod(s, NULL);
        }
        int in = (!has_lo || (lex ? v > lo : v >= lo)) && (!has_hi || (hex ? v < hi : v <= hi));
        if (integer && strchr(s, '.')) in = 0;
        if (!strcmp(s, "-0") || !strncmp(s, "-0.000", 6)) continue; /* -0: not written */
        int got = matches(m, s, strlen(s));
        if (got != in) {
            bad = 1;
            VKT_CHECK(0, "%s: %s is %s the range but the grammar %s it\n%s", schema, s,
                      in ? "in" : "outside", got ? "accepts" : "rejects", g);
        }
    }
    vkt_passed += !bad;
    vkf_gmatch_free(m);
    free(g);
}

static void test_ranges(void) {
    int n = 0;
    for (int r = 0; r < 60; r++) { /* integer bounds, inclusive and exclusive */
        long a = (long)(rnd() % 2001) - 1000, b = a + (long)(rnd() % 1500);
        if (r % 5 == 0) b = a + (long)(rnd() % 3);
        int has_lo = r % 7 != 3, has_hi = r % 7 != 5, lex = r % 3 == 1, hex = r % 4 == 1;
        int integer = r % 2;
        char schema[256];
        snprintf(schema, sizeof schema, "{\"type\": \"%s\"", integer ? "integer" : "number");
        if (has_lo)
            snprintf(schema + strlen(schema), sizeof schema - strlen(schema), ", \"%s\": %ld",
                     lex ? "exclusiveMinimum" : "minimum", a);
        if (has_hi)
            snprintf(schema + strlen(schema), sizeof schema - strlen(schema), ", \"%s\": %ld",
                     hex ? "exclusiveMaximum" : "maximum", b);
        strcat(schema, "}");
        if (has_lo && has_hi && (lex || hex) && b - a < 2 && integer) continue; /* may be empty */
        check_range(schema, (double)a, lex, has_lo, (double)b, hex, has_hi, integer, 400);
        n++;
    }
    for (int r = 0; r < 60; r++) { /* fractional bounds on numbers */
        double a = ((long)(rnd() % 20001) - 10000) / 1000.0, b = a + (rnd() % 5000) / 1000.0;
        if (r % 6 == 0) b = a + (rnd() % 10) / 1000.0;
        int lex = r % 3 == 1, hex = r % 4 == 1, has_lo = r % 5 != 2, has_hi = r % 5 != 4;
        char schema[256];
        snprintf(schema, sizeof schema, "{\"type\": \"number\"");
        if (has_lo)
            snprintf(schema + strlen(schema), sizeof schema - strlen(schema), ", \"%s\": %g",
                     lex ? "exclusiveMinimum" : "minimum", a);
        if (has_hi)
            snprintf(schema + strlen(schema), sizeof schema - strlen(schema), ", \"%s\": %g",
                     hex ? "exclusiveMaximum" : "maximum", b);
        strcat(schema, "}");
        if (has_lo && has_hi && a == b && (lex || hex)) continue;
        check_range(schema, strtod(strchr(schema, ':') ? "0" : "0", NULL) + a, lex, has_lo, b, hex,
                    has_hi, 0, 600);
        n++;
    }
    /* an empty range is an error naming it */
    char *g = NULL;
    VKT_CHECK(vkf_json_schema_to_grammar("{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 4}",
                                         &g) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "minimum and maximum"),
              "empty range: %s", vkf_last_error());
    free(g);
    printf("number ranges: %d random ranges, values around their bounds\n", n);
}

/* ------------------------------------------------------------------ patterns and refusals */

static void test_patterns(void) {
    static const struct {
        const char *pattern, *yes[4], *no[4];
    } cases[] = {
        {"^[a-z]+@[a-z]+\\.com$", {"\"a@b.com\"", "\"xyz@q.com\""}, {"\"a@b.org\"", "\"@b.com\""}},
        {"^\\d{3}-\\d{4}$", {"\"555-1234\""}, {"\"55-1234\"", "\"5555-123\"", "\"abc-defg\""}},
        {"cat", {"\"cat\"", "\"concatenate\"", "\"a cat!\""}, {"\"dog\"", "\"ca t\""}},
        {"^(?:yes|no)$", {"\"yes\"", "\"no\""}, {"\"yesno\"", "\"maybe\""}},
        {"^\\w+\\s\\w+$", {"\"hello world\"", "\"a_1\\tb\""}, {"\"hello\"", "\"a  b\""}},
        {"^a\"b$", {"\"a\\\"b\""}, {"\"a\"b\""}},
        {"^[^x]{2}$", {"\"ab\"", "\"\\\"\\\\\""}, {"\"xa\"", "\"abc\""}},
        {"^.{1,3}$", {"\"a\"", "\"日本語\""}, {"\"\"", "\"abcd\""}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "type", "string");
        cJSON_AddStringToObject(s, "pattern", cases[i].pattern);
        char *js = cJSON_PrintUnformatted(s), *g = NULL;
        cJSON_Delete(s);
        vkf_status st = vkf_json_schema_to_grammar(js, &g);
        VKT_CHECK(st == VKF_OK, "%s: %s", cases[i].pattern, vkf_last_error());
        vkf_gmatch *m = g ? matcher(g) : NULL;
        for (int k = 0; m && k < 4 && cases[i].yes[k]; k++)
            VKT_CHECK(matches(m, cases[i].yes[k], strlen(cases[i].yes[k])), "%s must match %s\n%s",
                      cases[i].pattern, cases[i].yes[k], g);
        for (int k = 0; m && k < 4 && cases[i].no[k]; k++)
            VKT_CHECK(!matches(m, cases[i].no[k], strlen(cases[i].no[k])),
                      "%s must not match %s\n%s", cases[i].pattern, cases[i].no[k], g);
        vkf_gmatch_free(m);
        free(g);
        free(js);
    }
    static const struct {
        const char *schema, *named;
        vkf_status st;
    } refusals[] = {
        {"{\"type\": \"array\", \"uniqueItems\": true}", "'uniqueItems' at #",
         VKF_ERROR_UNSUPPORTED},
        {"{\"properties\": {\"n\": {\"type\": \"number\", \"multipleOf\": 5}}}",
         "multipleOf' at #/properties/n", VKF_ERROR_UNSUPPORTED},
        {"{\"not\": {\"type\": \"string\"}}", "'not'", VKF_ERROR_UNSUPPORTED},
        {"{\"if\": {}, \"then\": {}}", "'if'", VKF_ERROR_UNSUPPORTED},
        {"{\"type\": \"object\", \"patternProperties\": {}}", "patternProperties",
         VKF_ERROR_UNSUPPORTED},
        {"{\"type\": \"string\", \"format\": \"email\"}", "format 'email'", VKF_ERROR_UNSUPPORTED},
        {"{\"type\": \"string\", \"pattern\": \"^(a)\\\\1$\"}", "back reference",
         VKF_ERROR_UNSUPPORTED},
        {"{\"type\": \"string\", \"pattern\": \"^(a$\"}", "unbalanced", VKF_ERROR_FORMAT},
        {"{\"$ref\": \"#/$defs/missing\"}", "does not resolve", VKF_ERROR_FORMAT},
        {"{\"$ref\": \"http://example.com/s.json\"}", "not within the schema",
         VKF_ERROR_UNSUPPORTED},
        {"{\"type\": \"kaboom\"}", "kaboom", VKF_ERROR_FORMAT},
        {"{\"type\": 123}", "type", VKF_ERROR_FORMAT},
        {"{\"type\": ", "not valid JSON", VKF_ERROR_FORMAT},
        {"{\"minItems\": -1}", "minItems", VKF_ERROR_FORMAT},
        /* bytes that are not UTF-8 (cJSON takes them; a grammar's literal cannot hold them):
         * named by place (fuzz_json_schema found the converter writing a grammar that did not
         * parse) */
        {"{\"type\": \"object\", \"required\": [\"a\\u0041\", \"n\xff\"]}",
         "at #/required/1 is not valid UTF-8", VKF_ERROR_FORMAT},
        {"{\"properties\": {\"k\xc0\xaf\": {}}}", "at #/properties is not valid UTF-8",
         VKF_ERROR_FORMAT},
        {"{\"const\": \"\xed\xa0\x80\"}", "at #/const is not valid UTF-8", VKF_ERROR_FORMAT},
        /* no value satisfies these (each must contain another without end): named as the
         * schema's, not as a converter failure (they once read "the grammar written does not
         * parse: ...", the message garbled by formatting into itself) */
        {"{\"$ref\": \"#\"}", "no JSON value satisfies it", VKF_ERROR_FORMAT},
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"$ref\": \"#\"}}, \"required\": "
         "[\"a\"]}",
         "no JSON value satisfies it", VKF_ERROR_FORMAT},
        {"{\"type\": \"array\", \"items\": {\"$ref\": \"#\"}, \"minItems\": 1}",
         "no JSON value satisfies it", VKF_ERROR_FORMAT},
    };
    for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++) {
        char *g = NULL;
        vkf_status st = vkf_json_schema_to_grammar(refusals[i].schema, &g);
        VKT_CHECK(st == refusals[i].st && strstr(vkf_last_error(), refusals[i].named),
                  "%s: want %s naming \"%s\", got %s: %s", refusals[i].schema,
                  vkf_status_name(refusals[i].st), refusals[i].named, vkf_status_name(st),
                  vkf_last_error());
        free(g);
    }
    /* recursion through $ref, and json_object */
    char *g = NULL;
    VKT_OK(vkf_json_schema_to_grammar(
        "{\"$ref\": \"#/$defs/node\", \"$defs\": {\"node\": {\"type\": \"object\", "
        "\"properties\": {\"v\": {\"type\": \"integer\"}, \"next\": {\"$ref\": "
        "\"#/$defs/node\"}}, \"required\": [\"v\"], \"additionalProperties\": false}}}",
        &g));
    vkf_gmatch *m = g ? matcher(g) : NULL;
    const char *tree = "{\"v\": 1, \"next\": {\"v\": 2, \"next\": {\"v\": 3}}}";
    VKT_CHECK(m && matches(m, tree, strlen(tree)), "recursive $ref\n%s", g ? g : "");
    VKT_CHECK(m && !matches(m, "{\"v\": 1, \"next\": {}}", 20), "recursive $ref: v required");
    vkf_gmatch_free(m);
    free(g);
    /* the same cycles with a way out are kept: an optional property, an empty array */
    static const char *const ends[] = {
        "{\"type\": \"object\", \"properties\": {\"a\": {\"$ref\": \"#\"}}}",
        "{\"type\": \"array\", \"items\": {\"$ref\": \"#\"}}",
    };
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
        g = NULL;
        VKT_CHECK(vkf_json_schema_to_grammar(ends[i], &g) == VKF_OK, "%s: %s", ends[i],
                  vkf_last_error());
        free(g);
    }
    /* the longest name excluded beside additionalProperties: 240 characters build (the
     * grammar's nesting limit holds), 241 are refused by name, as fuzz_json_schema once found a
     * 300-character name writing a grammar that did not parse */
    for (int len = 240; len <= 241; len++) {
        char sch[512];
        int k = snprintf(sch, sizeof sch, "{\"type\": \"object\", \"properties\": {\"");
        memset(sch + k, 'q', (size_t)len);
        snprintf(sch + k + len, sizeof sch - (size_t)(k + len),
                 "\": {}}, \"additionalProperties\": true}");
        g = NULL;
        vkf_status st = vkf_json_schema_to_grammar(sch, &g);
        VKT_CHECK(len == 240 ? st == VKF_OK
                             : st == VKF_ERROR_UNSUPPORTED &&
                                   strstr(vkf_last_error(), "property name of 241 characters"),
                  "a %d-character name beside additionalProperties: %s", len, vkf_last_error());
        free(g);
    }
    /* names that together need more than llama.cpp's 2000 rules for the others (each
     * character a nested group; llama.cpp's parser refuses the same grammar): refused as past
     * GBNF's limits (VKF_ERROR_UNSUPPORTED), no longer as a converter failure (fuzz_json_schema) */
    {
        char sch[1024];
        int k = snprintf(sch, sizeof sch, "{\"type\": \"object\", \"properties\": {\"");
        memset(sch + k, 'a', 200);
        k += 200;
        k += snprintf(sch + k, sizeof sch - (size_t)k, "\": {}, \"");
        memset(sch + k, 'b', 200);
        k += 200;
        snprintf(sch + k, sizeof sch - (size_t)k, "\": {}}, \"additionalProperties\": true}");
        g = NULL;
        vkf_status st = vkf_json_schema_to_grammar(sch, &g);
        VKT_CHECK(st == VKF_ERROR_UNSUPPORTED && g == NULL &&
                      strstr(vkf_last_error(), "json schema: the grammar it needs is past GBNF's "
                                               "limits: grammar: line"),
                  "two 200-character names beside additionalProperties: %s %s", vkf_status_name(st),
                  vkf_last_error());
        free(g);
    }
    /* a property name with ^ beside additionalProperties (the key classes once wrote "\^",
     * which GBNF has no escape for, and "[^]" for a lone ^: found by fuzz_json_schema) */
    g = NULL;
    VKT_OK(vkf_json_schema_to_grammar(
        "{\"type\": \"object\", \"properties\": {\"^a\": {\"type\": \"string\"}, \"b^\": "
        "{\"type\": \"integer\"}}, \"additionalProperties\": {\"type\": \"integer\"}}",
        &g));
    m = g ? matcher(g) : NULL;
    static const char *const caret_yes[] = {"{\"^a\": \"x\", \"b^\": 1}", "{\"^b\": 2}",
                                            "{\"b^\": 1, \"^\": 3}", "{\"b\": 4}"};
    static const char *const caret_no[] = {"{\"^a\": 1}", "{\"b^\": \"x\"}", "{\"x\": \"s\"}"};
    for (size_t i = 0; i < sizeof caret_yes / sizeof *caret_yes; i++)
        VKT_CHECK(m && matches(m, caret_yes[i], strlen(caret_yes[i])), "^ in names: %s\n%s",
                  caret_yes[i], g ? g : "");
    for (size_t i = 0; i < sizeof caret_no / sizeof *caret_no; i++)
        VKT_CHECK(m && !matches(m, caret_no[i], strlen(caret_no[i])), "^ in names: not %s",
                  caret_no[i]);
    vkf_gmatch_free(m);
    free(g);
    g = NULL;
    VKT_OK(vkf_json_schema_to_grammar("{\"type\": \"object\"}", &g));
    m = g ? matcher(g) : NULL;
    VKT_CHECK(m && matches(m, "{\"a\": [1, {\"b\": null}]}", 23) && !matches(m, "[1]", 3) &&
                  !matches(m, "\"x\"", 3),
              "json_object: any object, nothing else");
    vkf_gmatch_free(m);
    free(g);
}

/* --sample SCHEMA_FILE N: N random strings of the schema's grammar, one JSON line each:
 * {"ok": true, "text": "..."} (or the refusal) for test_schema_outputs.py */
static int sample_mode(const char *path, int n) {
    size_t len;
    char *schema = vkt_read_file(path, &len);
    if (!schema) return 2;
    char *g = NULL;
    if (vkf_json_schema_to_grammar(schema, &g) != VKF_OK) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddFalseToObject(o, "ok");
        cJSON_AddStringToObject(o, "error", vkf_last_error());
        char *js = cJSON_PrintUnformatted(o);
        printf("%s\n", js);
        free(js);
        cJSON_Delete(o);
        free(schema);
        return 0;
    }
    vkf_gmatch *m = matcher(g);
    char s[4096];
    for (int i = 0; i < n; i++) {
        if (!sample(m, s, sizeof s)) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddTrueToObject(o, "ok");
        cJSON_AddStringToObject(o, "text", s);
        char *js = cJSON_PrintUnformatted(o);
        printf("%s\n", js);
        free(js);
        cJSON_Delete(o);
    }
    vkf_gmatch_free(m);
    free(g);
    free(schema);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "--sample")) return sample_mode(argv[2], atoi(argv[3]));
    test_llama_cases();
    test_integration_schemas();
    test_ranges();
    test_patterns();
    return vkt_finish();
}
