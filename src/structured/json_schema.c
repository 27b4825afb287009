/* JSON Schema -> GBNF (vkf_json_schema_to_grammar in vkformer.h).
 *
 * The grammar has llama.cpp's shape (common/json-schema-to-grammar.cpp), so its grammars read
 * the same: one rule per schema node named after its path ("root", "person-name-kv", ...), the
 * same primitive rules (value, object, array, string, char, number, integer, boolean, null,
 * date, time, date-time, uuid) and the same whitespace ("space": nothing, a space, or one or
 * two new lines and up to 20 spaces or tabs, after "{" "[" "," ":" and before "}" "]"). Object
 * properties come in the schema's order: the required ones, then the optional ones each
 * optional, then additional ones; a property list without additionalProperties allows no
 * others (a subset of what the schema accepts, as llama.cpp and OpenAI's strict mode do).
 *
 * Everything a keyword constrains is either translated or refused with the keyword's name and
 * its JSON pointer: a grammar that silently ignored a keyword would let the model write text
 * the schema rejects. oneOf is written as anyOf (its "exactly one" is not enforced: schemas
 * use it for disjoint alternatives). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "structured/gbnf.h"
#include "structured/json_schema.h"
#include "tokenizer/unicode.h"

#define SPACE_RULE "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}"

typedef struct prim {
    const char *name, *body, *deps[6];
} prim;

/* llama.cpp's primitive rules (common/json-schema-to-grammar.cpp PRIMITIVE_RULES and
 * STRING_FORMAT_RULES): the same texts, so grammars for the same schema agree (but "date") */
static const prim k_prims[] = {
    {"boolean", "(\"true\" | \"false\")", {0}},
    {"decimal-part", "[0-9]{1,16}", {0}},
    {"integral-part", "[0] | [1-9] [0-9]{0,15}", {0}},
    {"number",
     "(\"-\"? integral-part) (\".\" decimal-part)? ([eE] [-+]? integral-part)?",
     {"integral-part", "decimal-part"}},
    {"integer", "(\"-\"? integral-part)", {"integral-part"}},
    {"value",
     "object | array | string | number | boolean | null",
     {"object", "array", "string", "number", "boolean", "null"}},
    {"object",
     "\"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? space "
     "\"}\"",
     {"string", "value", "space"}},
    {"array", "\"[\" space ( value (\",\" space value)* )? space \"]\"", {"value", "space"}},
    {"uuid",
     "\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} "
     "\"-\" [0-9a-fA-F]{12} \"\\\"\"",
     {0}},
    {"char", "[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})", {0}},
    {"string", "\"\\\"\" char* \"\\\"\"", {"char"}},
    {"null", "\"null\"", {0}},
    /* a calendar date (llama.cpp's rule lets 02-30 through, and year 0000): the days each
     * month has, February's 28 (the 29th of leap years is left out: a subset, never an
     * invalid date), years 0001-9999 */
    {"date",
     "( [1-9] [0-9]{3} | \"0\" [1-9] [0-9]{2} | \"00\" [1-9] [0-9] | \"000\" [1-9] ) \"-\" ( "
     "( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] ) | ( \"0\" "
     "[469] | \"11\" ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" ) | \"02-\" ( \"0\" [1-9] | "
     "\"1\" [0-9] | \"2\" [0-8] ) )",
     {0}},
    {"time",
     "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{3} )? ( "
     "\"Z\" | ( \"+\" | \"-\" ) ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )",
     {0}},
    {"date-time", "date \"T\" time", {"date", "time"}},
    {"date-string", "\"\\\"\" date \"\\\"\"", {"date"}},
    {"time-string", "\"\\\"\" time \"\\\"\"", {"time"}},
    {"date-time-string", "\"\\\"\" date-time \"\\\"\"", {"date-time"}},
    {"space", SPACE_RULE, {0}},
};

/* keywords that only annotate: ignored */
static const char *const k_annotations[] = {
    "title",    "description", "examples", "default",   "$schema", "$id",
    "$comment", "deprecated",  "readOnly", "writeOnly", "$defs",   "definitions",
};
/* keywords translated */
static const char *const k_keywords[] = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "format",
    "uniqueItems",
};

typedef struct rule {
    char *name, *body;
} rule;

typedef struct refent {
    char *ref, *name;
} refent;

typedef struct conv {
    const cJSON *root;
    rule *rules;
    int n_rules, cap_rules;
    refent *refs;
    int n_refs, cap_refs;
    vkf_status st;
    int depth;
} conv;

static vkf_status fail(conv *c, vkf_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static vkf_status fail(conv *c, vkf_status st, const char *fmt, ...) {
    if (c->st != VKF_OK) return c->st;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->st = vkf_error(st, "json schema: %s", msg);
    return c->st;
}

static int oom(conv *c) {
    fail(c, VKF_ERROR_OUT_OF_MEMORY, "out of memory");
    return -1;
}

/* ------------------------------------------------------------------ rules */

static const char *find_rule(const conv *c, const char *name) {
    for (int i = 0; i < c->n_rules; i++)
        if (!strcmp(c->rules[i].name, name)) return c->rules[i].body;
    return NULL;
}

/* a rule name: runs of characters outside [a-zA-Z0-9-] become one "-" (llama.cpp's) */
static void sanitize(const char *name, char *out, size_t n) {
    size_t k = 0;
    int run = 0;
    for (const char *p = name; *p && k + 1 < n; p++) {
        int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                 *p == '-';
        if (ok) {
            out[k++] = *p;
            run = 0;
        } else if (!run) {
            out[k++] = '-';
            run = 1;
        }
    }
    out[k] = 0;
}

/* rule name := body; a taken name with another body gets a number (llama.cpp's _add_rule);
 * returns the name used (owned by c) or NULL */
static const char *add_rule(conv *c, const char *name, const char *body) {
    if (c->st != VKF_OK) return NULL;
    char esc[240], key[260];
    sanitize(name, esc, sizeof esc);
    snprintf(key, sizeof key, "%s", esc);
    for (int i = 0;; i++) {
        const char *b = find_rule(c, key);
        if (!b) break;
        if (!strcmp(b, body))
            for (int j = 0; j < c->n_rules; j++)
                if (!strcmp(c->rules[j].name, key)) return c->rules[j].name;
        snprintf(key, sizeof key, "%s%d", esc, i);
    }
    if (c->n_rules == c->cap_rules) {
        int nc = c->cap_rules ? 2 * c->cap_rules : 32;
        rule *r = realloc(c->rules, (size_t)nc * sizeof *r);
        if (!r) return oom(c), NULL;
        c->rules = r;
        c->cap_rules = nc;
    }
    rule *r = &c->rules[c->n_rules];
    r->name = strdup(key);
    r->body = strdup(body);
    if (!r->name || !r->body) {
        free(r->name);
        free(r->body);
        return oom(c), NULL;
    }
    c->n_rules++;
    return r->name;
}

/* rule name := body, replacing a placeholder of the same name (recursive $ref) */
static void set_rule(conv *c, const char *name, const char *body) {
    for (int i = 0; i < c->n_rules; i++)
        if (!strcmp(c->rules[i].name, name)) {
            char *b = strdup(body);
            if (!b) {
                oom(c);
                return;
            }
            free(c->rules[i].body);
            c->rules[i].body = b;
            return;
        }
    add_rule(c, name, body);
}

static const char *add_prim(conv *c, const char *name) {
    for (size_t i = 0; i < sizeof k_prims / sizeof *k_prims; i++)
        if (!strcmp(k_prims[i].name, name)) {
            if (!find_rule(c, name)) { /* the rule first: value and object refer to each other */
                add_rule(c, name, k_prims[i].body);
                for (int d = 0; d < 6 && k_prims[i].deps[d]; d++)
                    add_prim(c, k_prims[i].deps[d]);
            }
            for (int j = 0; j < c->n_rules; j++)
                if (!strcmp(c->rules[j].name, name)) return c->rules[j].name;
        }
    return NULL;
}

static int is_reserved(const char *name) {
    if (!strcmp(name, "root")) return 1;
    for (size_t i = 0; i < sizeof k_prims / sizeof *k_prims; i++)
        if (!strcmp(k_prims[i].name, name)) return 1;
    return 0;
}

/* the rule name for a node named name ("" is the root; primitives' names get a "-") */
static void rule_name(const char *name, char *out, size_t n) {
    if (!*name)
        snprintf(out, n, "root");
    else if (is_reserved(name))
        snprintf(out, n, "%s-", name);
    else
        snprintf(out, n, "%s", name);
}

static void sub_name(const char *name, const char *part, char *out, size_t n) {
    snprintf(out, n, "%s%s%s", name, *name ? "-" : "", part);
}

/* ------------------------------------------------------------------ helpers */

static void pointer_child(const char *path, const char *key, char *out, size_t n) {
    /* JSON pointer escaping: ~ -> ~0, / -> ~1 */
    size_t k = (size_t)snprintf(out, n, "%s/", path);
    for (const char *p = key; *p && k + 3 < n; p++) {
        if (*p == '~') {
            out[k++] = '~';
            out[k++] = '0';
        } else if (*p == '/') {
            out[k++] = '~';
            out[k++] = '1';
        } else {
            out[k++] = *p;
        }
    }
    out[k < n ? k : n - 1] = 0;
}

static void pointer_index(const char *path, const char *key, int i, char *out, size_t n) {
    snprintf(out, n, "%s/%s/%d", path, key, i);
}

static int in_list(const char *k, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, list[i])) return 1;
    return 0;
}

/* every keyword of s is translated or an annotation */
static int check_keywords(conv *c, const cJSON *s, const char *path) {
    const cJSON *k;
    cJSON_ArrayForEach(k, s) {
        if (in_list(k->string, k_annotations, sizeof k_annotations / sizeof *k_annotations))
            continue;
        if (!in_list(k->string, k_keywords, sizeof k_keywords / sizeof *k_keywords)) {
            fail(c, VKF_ERROR_UNSUPPORTED,
                 "'%s' at %s is not supported (a grammar cannot enforce it); supported: type, "
                 "properties, required, additionalProperties, enum, const, anyOf, oneOf, allOf, "
                 "$ref, items, prefixItems, minItems, maxItems, minLength, maxLength, pattern, "
                 "minimum, maximum, exclusiveMinimum, exclusiveMaximum, format",
                 k->string, *path ? path : "#");
            return -1;
        }
        if (!strcmp(k->string, "uniqueItems") && cJSON_IsTrue(k)) {
            fail(c, VKF_ERROR_UNSUPPORTED,
                 "'uniqueItems' at %s is not supported (a grammar cannot compare items)",
                 *path ? path : "#");
            return -1;
        }
    }
    return 0;
}

static const cJSON *get(const cJSON *s, const char *k) {
    return cJSON_IsObject(s) ? cJSON_GetObjectItemCaseSensitive(s, k) : NULL;
}

/* a non-negative integer keyword; -1 when absent, -2 when malformed (reported) */
static long get_count(conv *c, const cJSON *s, const char *k, const char *path) {
    const cJSON *v = get(s, k);
    if (!v) return -1;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble > 1e9) {
        fail(c, VKF_ERROR_FORMAT, "'%s' at %s must be a non-negative integer", k,
             *path ? path : "#");
        return -2;
    }
    return (long)v->valuedouble;
}

/* ------------------------------------------------------------------ the walk */

static const char *visit(conv *c, const cJSON *s, const char *name, const char *path);

/* a JSON value as a literal: its compact JSON text */
static const char *constant(conv *c, const cJSON *v, vkf_sb *out) {
    char *js = cJSON_PrintUnformatted(v);
    if (!js) return oom(c), NULL;
    vkf_sb_gbnf_literal(out, js, strlen(js));
    cJSON_free(js);
    return "";
}

/* resolves a $ref within the document: #, #/a/b (JSON pointer), or a bare #name is refused */
static const cJSON *resolve(conv *c, const char *ref, const char *path) {
    if (ref[0] != '#') {
        fail(c, VKF_ERROR_UNSUPPORTED,
             "$ref '%s' at %s is not within the schema (only #/... references are)", ref,
             *path ? path : "#");
        return NULL;
    }
    const cJSON *n = c->root;
    const char *p = ref + 1;
    if (*p && *p != '/') {
        fail(c, VKF_ERROR_UNSUPPORTED, "$ref '%s' at %s: anchors are not supported", ref,
             *path ? path : "#");
        return NULL;
    }
    while (*p == '/') {
        p++;
        char tok[256];
        size_t k = 0;
        for (; *p && *p != '/' && k < sizeof tok - 1; p++) {
            if (*p == '~' && p[1] == '0') {
                tok[k++] = '~';
                p++;
            } else if (*p == '~' && p[1] == '1') {
                tok[k++] = '/';
                p++;
            } else {
                tok[k++] = *p;
            }
        }
        tok[k] = 0;
        if (cJSON_IsArray(n)) {
            char *end;
            long i = strtol(tok, &end, 10);
            n = *end || !*tok ? NULL : cJSON_GetArrayItem(n, (int)i);
        } else {
            n = cJSON_IsObject(n) ? cJSON_GetObjectItemCaseSensitive(n, tok) : NULL;
        }
        if (!n) {
            fail(c, VKF_ERROR_FORMAT, "$ref '%s' at %s does not resolve", ref, *path ? path : "#");
            return NULL;
        }
    }
    return n;
}

static const char *visit_ref(conv *c, const char *ref, const char *path) {
    for (int i = 0; i < c->n_refs; i++)
        if (!strcmp(c->refs[i].ref, ref)) return c->refs[i].name; /* done or being resolved */
    const cJSON *t = resolve(c, ref, path);
    if (!t) return NULL;
    /* the rule is named after the reference ("#/$defs/node" -> ref-defs-node) and its name
     * recorded before its body is written, so a recursive schema refers to itself */
    char raw[256], name[240], key[260];
    snprintf(raw, sizeof raw, "ref%s", ref + 1);
    sanitize(raw, name, sizeof name);
    snprintf(key, sizeof key, "%s", name);
    for (int i = 0; find_rule(c, key); i++)
        snprintf(key, sizeof key, "%s%d", name, i);
    if (c->n_refs == c->cap_refs) {
        int nc = c->cap_refs ? 2 * c->cap_refs : 8;
        refent *r = realloc(c->refs, (size_t)nc * sizeof *r);
        if (!r) return oom(c), NULL;
        c->refs = r;
        c->cap_refs = nc;
    }
    char *rcopy = strdup(ref), *ncopy = strdup(key);
    if (!rcopy || !ncopy) {
        free(rcopy);
        free(ncopy);
        return oom(c), NULL;
    }
    c->refs[c->n_refs++] = (refent){rcopy, ncopy};
    const char *body = visit(c, t, ncopy, ref);
    if (!body) return NULL;
    if (strcmp(body, ncopy) != 0) set_rule(c, ncopy, body); /* an alias */
    return ncopy;
}

/* ---- objects */

static int json_name_plain(const char *k) { /* ASCII that JSON writes as it is */
    for (const unsigned char *p = (const unsigned char *)k; *p; p++)
        if (*p == '"' || *p == '\\' || *p < 0x20 || *p >= 0x7F) return 0;
    return 1;
}

/* The longest property name not_strings excludes: it nests a group (and a call) per character,
 * and GBNF allows 256 nested groups (gbnf_parse.c), the key rule's own taking a few more. */
#define MAX_KEY_EXCLUDED 240

/* JSON string bodies (without quotes) that are not one of names[0..n): a trie of the names,
 * each node: a character leading to another name prefix, any other character then anything,
 * or the end unless a name ends here (llama.cpp's _not_strings) */
static void not_strings(conv *c, vkf_sb *o, const char *const *names, int n, size_t depth) {
    /* the distinct next characters of names sharing the current prefix */
    int end_here = 0;
    char firsts[256];
    int nf = 0;
    for (int i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)names[i][depth];
        if (!ch) {
            end_here = 1;
            continue;
        }
        if (!memchr(firsts, ch, (size_t)nf)) firsts[nf++] = (char)ch;
    }
    const char *ch_rule = add_prim(c, "char");
    vkf_sb_putc(o, '(');
    for (int f = 0; f < nf; f++) {
        const char *sub[256];
        int ns = 0;
        for (int i = 0; i < n && ns < 256; i++)
            if ((unsigned char)names[i][depth] == (unsigned char)firsts[f]) sub[ns++] = names[i];
        if (f) vkf_sb_puts(o, " | ");
        vkf_sb_putc(o, '['); /* ("[^]" would be a negated class: ^ goes as \x5E) */
        vkf_js_class_char(o, (unsigned char)firsts[f]);
        vkf_sb_puts(o, "] ");
        not_strings(c, o, sub, ns, depth + 1);
    }
    /* a character no name continues with: then anything */
    if (nf) vkf_sb_puts(o, " | ");
    vkf_sb_puts(o, "[^\"\\\\\\x7F\\x00-\\x1F");
    for (int f = 0; f < nf; f++)
        vkf_js_class_char(o, (unsigned char)firsts[f]);
    vkf_sb_printf(o, "] %s* | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4}) %s*", ch_rule, ch_rule);
    vkf_sb_putc(o, ')');
    if (!end_here) vkf_sb_putc(o, '?');
}

static const char *visit_object(conv *c, const cJSON *s, const char *name, const char *path) {
    const cJSON *props = get(s, "properties"), *req = get(s, "required"),
                *add = get(s, "additionalProperties");
    char rn[256], sn[320], p2[1024];
    rule_name(name, rn, sizeof rn);
    if (props && !cJSON_IsObject(props))
        return fail(c, VKF_ERROR_FORMAT, "'properties' at %s must be an object", path), NULL;
    if (req && !cJSON_IsArray(req))
        return fail(c, VKF_ERROR_FORMAT, "'required' at %s must be an array", path), NULL;
    const cJSON *x;
    cJSON_ArrayForEach(x, req) if (!cJSON_IsString(x)) return fail(
        c, VKF_ERROR_FORMAT, "'required' at %s must list strings", path),
        NULL;
    int n_props = cJSON_GetArraySize(props);
    int add_any = !add ? n_props == 0 : cJSON_IsTrue(add) || (cJSON_IsObject(add) && !add->child);
    int add_none = add ? cJSON_IsFalse(add) : n_props > 0;
    if (add && !cJSON_IsBool(add) && !cJSON_IsObject(add))
        return fail(c, VKF_ERROR_FORMAT, "'additionalProperties' at %s must be a schema", path),
               NULL;
    /* required names the properties do not list: any value */
    int n_extra = 0;
    cJSON_ArrayForEach(x, req) if (!get(props, x->valuestring)) n_extra++;
    if (n_props == 0 && n_extra == 0 && add_any) return add_rule(c, rn, add_prim(c, "object"));
    int n = n_props + n_extra, n_req = 0, n_opt = 0;
    if (n > 1000)
        return fail(c, VKF_ERROR_UNSUPPORTED, "more than 1000 properties at %s", path), NULL;
    const char **kv = calloc((size_t)n + 1, sizeof *kv),
               **names = calloc((size_t)n + 1, sizeof *names);
    int *is_req = calloc((size_t)n + 1, sizeof *is_req);
    if (!kv || !names || !is_req) {
        free(kv);
        free(names);
        free(is_req);
        return oom(c), NULL;
    }
    int i = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, props) {
        names[i] = p->string;
        cJSON_ArrayForEach(x, req) if (!strcmp(x->valuestring, p->string)) is_req[i] = 1;
        i++;
    }
    cJSON_ArrayForEach(x, req) if (!get(props, x->valuestring)) {
        names[i] = x->valuestring;
        is_req[i] = 1;
        i++;
    }
    for (i = 0; i < n && c->st == VKF_OK; i++) {
        const cJSON *ps = get(props, names[i]);
        char p1[1024];
        sub_name(name, names[i], sn, sizeof sn);
        pointer_child(path, "properties", p1, sizeof p1);
        pointer_child(p1, names[i], p2, sizeof p2);
        const char *vr = ps ? visit(c, ps, sn, p2) : add_prim(c, "value");
        if (!vr) break;
        vkf_sb body = {0};
        vkf_sb js = {0};
        vkf_sb_json_string(&js, names[i], strlen(names[i]));
        vkf_sb_gbnf_literal(&body, js.p, js.n);
        vkf_sb_printf(&body, " space \":\" space %s", vr);
        vkf_sb_free(&js);
        char kn[340];
        snprintf(kn, sizeof kn, "%s-kv", sn);
        add_prim(c, "space");
        kv[i] = body.oom ? (oom(c), NULL) : add_rule(c, kn, body.p);
        vkf_sb_free(&body);
        if (is_req[i])
            n_req++;
        else
            n_opt++;
    }
    /* additional properties: keys other than the listed names */
    const char *add_kv = NULL;
    if (c->st == VKF_OK && !add_none) {
        sub_name(name, "additional", sn, sizeof sn);
        const char *val;
        if (add_any) {
            val = add_prim(c, "value");
        } else {
            char vn[340];
            snprintf(vn, sizeof vn, "%s-value", sn);
            pointer_child(path, "additionalProperties", p2, sizeof p2);
            val = visit(c, add, vn, p2);
        }
        const char *key = NULL;
        if (n == 0) {
            key = add_prim(c, "string");
        } else {
            for (i = 0; i < n; i++) {
                if (!json_name_plain(names[i]))
                    return fail(c, VKF_ERROR_UNSUPPORTED,
                                "additionalProperties at %s beside a property name that is not "
                                "plain ASCII ('%s')",
                                path, names[i]),
                           free(kv), free(names), free(is_req), NULL;
                if (strlen(names[i]) > MAX_KEY_EXCLUDED)
                    return fail(c, VKF_ERROR_UNSUPPORTED,
                                "additionalProperties at %s beside a property name of %zu "
                                "characters (at most %d: the rule for the other names nests a "
                                "group per character)",
                                path, strlen(names[i]), MAX_KEY_EXCLUDED),
                           free(kv), free(names), free(is_req), NULL;
            }
            vkf_sb kb = {0};
            vkf_sb_puts(&kb, "[\"] ");
            not_strings(c, &kb, names, n, 0);
            vkf_sb_puts(&kb, " [\"]");
            char kn[340];
            snprintf(kn, sizeof kn, "%s-k", sn);
            key = kb.oom ? (oom(c), NULL) : add_rule(c, kn, kb.p);
            vkf_sb_free(&kb);
        }
        if (val && key) {
            vkf_sb b = {0};
            vkf_sb_printf(&b, "%s \":\" space %s", key, val);
            char kn[340];
            snprintf(kn, sizeof kn, "%s-kv", sn);
            add_kv = b.oom ? (oom(c), NULL) : add_rule(c, kn, b.p);
            vkf_sb_free(&b);
        }
    }
    const char *result = NULL;
    if (c->st == VKF_OK) {
        /* "{" required ("," optional...)? "}", optional ones in order, each may be left out */
        vkf_sb b = {0};
        vkf_sb_puts(&b, "\"{\" space ");
        int k = 0;
        for (i = 0; i < n; i++)
            if (is_req[i]) {
                if (k++) vkf_sb_puts(&b, " \",\" space ");
                vkf_sb_puts(&b, kv[i]);
            }
        /* the optional ones: opt[0..n_o), then the additional kv (repeatable) */
        const char *opt[1024];
        int n_o = 0;
        for (i = 0; i < n && n_o < 1023; i++)
            if (!is_req[i]) opt[n_o++] = kv[i];
        if (add_kv) opt[n_o++] = add_kv;
        if (n_o) {
            vkf_sb_puts(&b, k ? " ( \",\" space ( " : " ( ");
            /* alternative j starts with opt[j] then any later ones in order: a chain of
             * "-rest" rules, as llama.cpp writes it */
            for (int j = 0; j < n_o; j++) {
                if (j) vkf_sb_puts(&b, " | ");
                int last_add = add_kv && j == n_o - 1;
                vkf_sb_puts(&b, opt[j]);
                if (last_add) {
                    vkf_sb_printf(&b, " ( \",\" space %s )*", add_kv);
                    continue;
                }
                if (j + 1 < n_o) {
                    /* rest after opt[j]: each later one optional, the additional repeatable */
                    vkf_sb rest = {0};
                    for (int q = j + 1; q < n_o; q++) {
                        int is_add = add_kv && q == n_o - 1;
                        vkf_sb_printf(&rest, "%s( \",\" space %s )%c", q > j + 1 ? " " : "", opt[q],
                                      is_add ? '*' : '?');
                    }
                    char restn[600];
                    snprintf(restn, sizeof restn, "%s-rest", opt[j]);
                    size_t l = strlen(restn);
                    if (l > 8 && !strcmp(restn + l - 8, "-kv-rest")) /* "a-kv-rest" -> "a-rest" */
                        memmove(restn + l - 8, "-rest", 6);
                    const char *rr = rest.oom ? (oom(c), NULL) : add_rule(c, restn, rest.p);
                    vkf_sb_free(&rest);
                    if (rr) vkf_sb_printf(&b, " %s", rr);
                }
            }
            vkf_sb_puts(&b, k ? " ) )?" : " )?");
        }
        if (k || n_o) vkf_sb_puts(&b, " space");
        vkf_sb_puts(&b, " \"}\"");
        result = b.oom ? (oom(c), NULL) : add_rule(c, rn, b.p);
        vkf_sb_free(&b);
    }
    free(kv);
    free(names);
    free(is_req);
    return result;
}

/* ---- arrays */

/* item repeated min..max times (max < 0: no limit) separated by "," space (llama.cpp's
 * build_repetition) */
static void repetition(vkf_sb *o, const char *item, long min, long max) {
    if (max == 0) return;
    if (min == 0 && max == 1) {
        vkf_sb_printf(o, "%s?", item);
        return;
    }
    if (min == 0) vkf_sb_putc(o, '(');
    vkf_sb_printf(o, "%s", item);
    long rmin = min ? min - 1 : 0, rmax = max < 0 ? -1 : max - 1;
    if (rmax != 0) {
        vkf_sb_printf(o, " (\",\" space %s)", item);
        if (rmin == 0 && rmax < 0)
            vkf_sb_putc(o, '*');
        else if (rmin == 1 && rmax < 0)
            vkf_sb_putc(o, '+');
        else if (rmin == 0 && rmax == 1)
            vkf_sb_putc(o, '?');
        else if (rmax < 0)
            vkf_sb_printf(o, "{%ld,}", rmin);
        else if (rmin == rmax)
            vkf_sb_printf(o, "{%ld}", rmin);
        else
            vkf_sb_printf(o, "{%ld,%ld}", rmin, rmax);
    }
    if (min == 0) vkf_sb_puts(o, ")?");
}

static const char *visit_array(conv *c, const cJSON *s, const char *name, const char *path) {
    const cJSON *items = get(s, "items"), *prefix = get(s, "prefixItems");
    char rn[256], sn[320], p2[1024];
    rule_name(name, rn, sizeof rn);
    long min = get_count(c, s, "minItems", path), max = get_count(c, s, "maxItems", path);
    if (min == -2 || max == -2) return NULL;
    if (min < 0) min = 0;
    if (max >= 0 && max < min)
        return fail(c, VKF_ERROR_FORMAT, "maxItems < minItems at %s: no array satisfies it", path),
               NULL;
    if (min > 2000 || max > 2000)
        return fail(c, VKF_ERROR_UNSUPPORTED, "minItems/maxItems over 2000 at %s", path), NULL;
    /* a tuple: prefixItems, or items as a list (older drafts) */
    const cJSON *tuple = cJSON_IsArray(prefix) ? prefix : cJSON_IsArray(items) ? items : NULL;
    if (prefix && !tuple && !items) items = prefix; /* an object prefixItems: items (llama.cpp) */
    vkf_sb b = {0};
    vkf_sb_puts(&b, "\"[\" space ");
    add_prim(c, "space");
    if (tuple) {
        int nt = cJSON_GetArraySize(tuple);
        if (nt < min || (max >= 0 && nt > max))
            return fail(c, VKF_ERROR_UNSUPPORTED,
                        "a tuple of %d items at %s with minItems/maxItems that ask for another "
                        "count",
                        nt, path),
                   vkf_sb_free(&b), NULL;
        for (int i = 0; i < nt; i++) {
            char part[32];
            snprintf(part, sizeof part, "tuple-%d", i);
            sub_name(name, part, sn, sizeof sn);
            pointer_index(path, tuple == prefix ? "prefixItems" : "items", i, p2, sizeof p2);
            const char *r = visit(c, cJSON_GetArrayItem(tuple, i), sn, p2);
            if (!r) {
                vkf_sb_free(&b);
                return NULL;
            }
            vkf_sb_printf(&b, "%s%s", i ? " \",\" space " : "", r);
        }
    } else {
        const char *item;
        if (!items || cJSON_IsTrue(items) || (cJSON_IsObject(items) && !items->child)) {
            item = add_prim(c, "value");
        } else {
            sub_name(name, "item", sn, sizeof sn);
            pointer_child(path, "items", p2, sizeof p2);
            item = visit(c, items, sn, p2);
        }
        if (!item) {
            vkf_sb_free(&b);
            return NULL;
        }
        repetition(&b, item, min, max);
    }
    vkf_sb_puts(&b, " space \"]\"");
    const char *r = b.oom ? (oom(c), NULL) : add_rule(c, rn, b.p);
    vkf_sb_free(&b);
    return r;
}

/* ---- strings and numbers */

static const char *visit_string(conv *c, const cJSON *s, const char *name, const char *path) {
    char rn[256];
    rule_name(name, rn, sizeof rn);
    const cJSON *fmt = get(s, "format"), *pat = get(s, "pattern");
    long minl = get_count(c, s, "minLength", path), maxl = get_count(c, s, "maxLength", path);
    if (minl == -2 || maxl == -2) return NULL;
    int has_len = minl >= 0 || maxl >= 0;
    if ((fmt != NULL) + (pat != NULL) + has_len > 1)
        return fail(c, VKF_ERROR_UNSUPPORTED,
                    "format, pattern and minLength/maxLength combined at %s (one of them per "
                    "string)",
                    path),
               NULL;
    if (fmt) {
        static const char *const fmts[][2] = {{"date", "date-string"},
                                              {"time", "time-string"},
                                              {"date-time", "date-time-string"},
                                              {"uuid", "uuid"}};
        if (!cJSON_IsString(fmt))
            return fail(c, VKF_ERROR_FORMAT, "'format' at %s must be a string", path), NULL;
        for (size_t i = 0; i < 4; i++)
            if (!strcmp(fmt->valuestring, fmts[i][0]))
                return add_rule(c, rn, add_prim(c, fmts[i][1]));
        return fail(c, VKF_ERROR_UNSUPPORTED,
                    "format '%s' at %s is not supported (date, time, date-time and uuid are)",
                    fmt->valuestring, path),
               NULL;
    }
    if (pat) {
        if (!cJSON_IsString(pat))
            return fail(c, VKF_ERROR_FORMAT, "'pattern' at %s must be a string", path), NULL;
        vkf_sb b = {0};
        char err[256];
        vkf_status st = vkf_js_pattern(pat->valuestring, add_prim(c, "char"), &b, err, sizeof err);
        if (st != VKF_OK) {
            vkf_sb_free(&b);
            return fail(c, st, "pattern '%s' at %s: %s %s", pat->valuestring, path,
                        st == VKF_ERROR_UNSUPPORTED ? "uses" : "is not a regular expression:", err),
                   NULL;
        }
        const char *r = add_rule(c, rn, b.p);
        vkf_sb_free(&b);
        return r;
    }
    if (has_len) {
        if (minl < 0) minl = 0;
        if (maxl >= 0 && maxl < minl)
            return fail(c, VKF_ERROR_FORMAT, "maxLength < minLength at %s", path), NULL;
        if (minl > 2000 || maxl > 2000)
            return fail(c, VKF_ERROR_UNSUPPORTED, "minLength/maxLength over 2000 at %s", path),
                   NULL;
        vkf_sb b = {0};
        const char *ch = add_prim(c, "char");
        vkf_sb_printf(&b, "\"\\\"\" %s", ch);
        if (maxl < 0 && minl == 0)
            vkf_sb_putc(&b, '*');
        else if (maxl < 0 && minl == 1)
            vkf_sb_putc(&b, '+');
        else if (maxl < 0)
            vkf_sb_printf(&b, "{%ld,}", minl);
        else
            vkf_sb_printf(&b, "{%ld,%ld}", minl, maxl);
        vkf_sb_puts(&b, " \"\\\"\"");
        const char *r = add_rule(c, rn, b.p);
        vkf_sb_free(&b);
        return r;
    }
    return add_rule(c, rn, add_prim(c, "string"));
}

/* minimum / maximum / exclusive* as decimal bounds; draft 4's boolean exclusive* too */
static const char *visit_number(conv *c, const cJSON *s, const char *name, const char *path,
                                int integer) {
    char rn[256];
    rule_name(name, rn, sizeof rn);
    const cJSON *mn = get(s, "minimum"), *mx = get(s, "maximum"), *emn = get(s, "exclusiveMinimum"),
                *emx = get(s, "exclusiveMaximum");
    vkf_jdec lo, hi;
    int has_lo = 0, has_hi = 0, lex = 0, hex = 0;
    const cJSON *vals[4] = {mn, mx, emn, emx};
    static const char *const keys[4] = {"minimum", "maximum", "exclusiveMinimum",
                                        "exclusiveMaximum"};
    for (int k = 0; k < 4; k++) {
        const cJSON *v = vals[k];
        if (!v) continue;
        if (cJSON_IsBool(v) && k >= 2) { /* draft 4: a flag on minimum / maximum */
            if (k == 2) lex = cJSON_IsTrue(v);
            if (k == 3) hex = cJSON_IsTrue(v);
            continue;
        }
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
            return fail(c, VKF_ERROR_FORMAT, "'%s' at %s must be a number", keys[k], path), NULL;
        vkf_jdec d;
        if (!vkf_jdec_from_double(v->valuedouble, &d))
            return fail(c, VKF_ERROR_UNSUPPORTED,
                        "'%s' %g at %s has more than 16 digits before or after the point", keys[k],
                        v->valuedouble, path),
                   NULL;
        int is_lo = k == 0 || k == 2, excl = k >= 2;
        /* the tighter of minimum and exclusiveMinimum (or maximums) */
        vkf_jdec *b = is_lo ? &lo : &hi;
        int *has = is_lo ? &has_lo : &has_hi, *ex = is_lo ? &lex : &hex;
        double cur = 0;
        if (*has) {
            char t[96];
            snprintf(t, sizeof t, "%s%s.%s", b->neg ? "-" : "", b->i, b->f[0] ? b->f : "0");
            cur = strtod(t, NULL);
        }
        int tighter = !*has || (is_lo ? v->valuedouble > cur : v->valuedouble < cur) ||
                      (v->valuedouble == cur && excl);
        if (tighter) {
            *b = d;
            *has = 1;
            *ex = excl;
        }
    }
    if (!has_lo && !has_hi) return add_rule(c, rn, add_prim(c, integer ? "integer" : "number"));
    vkf_sb b = {0};
    if (!vkf_js_number_range(&b, has_lo ? &lo : NULL, lex, has_hi ? &hi : NULL, hex, !integer)) {
        vkf_sb_free(&b);
        return fail(c, VKF_ERROR_FORMAT, "no %s at %s is within its minimum and maximum",
                    integer ? "integer" : "number", path),
               NULL;
    }
    const char *r = b.oom ? (oom(c), NULL) : add_rule(c, rn, b.p);
    vkf_sb_free(&b);
    return r;
}

/* ---- combinators */

static const char *alternatives(conv *c, const cJSON *list, const char *key, const char *name,
                                const char *path) {
    char rn[256], sn[320], p2[1024];
    rule_name(name, rn, sizeof rn);
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0)
        return fail(c, VKF_ERROR_FORMAT, "'%s' at %s must be a non-empty array", key, path), NULL;
    vkf_sb b = {0};
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, list) {
        char part[32];
        snprintf(part, sizeof part, "%d", i);
        sub_name(*name ? name : "alternative", part, sn, sizeof sn);
        pointer_index(path, key, i, p2, sizeof p2);
        const char *r = visit(c, x, sn, p2);
        if (!r) {
            vkf_sb_free(&b);
            return NULL;
        }
        vkf_sb_printf(&b, "%s%s", i ? " | " : "", r);
        i++;
    }
    const char *r = b.oom ? (oom(c), NULL) : add_rule(c, rn, b.p);
    vkf_sb_free(&b);
    return r;
}

/* a $ref followed to its target (annotations around it allowed) */
static const cJSON *deref(conv *c, const cJSON *s, const char *path) {
    for (int hops = 0; hops < 32 && cJSON_IsObject(s); hops++) {
        const cJSON *r = get(s, "$ref");
        if (!r) return s;
        if (!cJSON_IsString(r))
            return fail(c, VKF_ERROR_FORMAT, "$ref at %s must be a string", path), NULL;
        s = resolve(c, r->valuestring, path);
    }
    return s;
}

/* allOf: objects merged (properties, required; additionalProperties false when any says so),
 * or enums intersected; anything else is refused */
static const char *visit_all_of(conv *c, const cJSON *s, const char *name, const char *path) {
    const cJSON *list = get(s, "allOf"), *x;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0)
        return fail(c, VKF_ERROR_FORMAT, "'allOf' at %s must be a non-empty array", path), NULL;
    cJSON *merged = cJSON_CreateObject(), *props = cJSON_CreateObject(), *req = cJSON_CreateArray();
    cJSON *en = NULL;
    int n_obj = 0, n_enum = 0, n = 0, no_add = 0;
    const char *result = NULL;
    cJSON_ArrayForEach(x, list) {
        const cJSON *t = deref(c, x, path);
        if (!t) goto done;
        n++;
        if (get(t, "enum") || get(t, "const")) {
            cJSON *vals = get(t, "enum") ? cJSON_Duplicate(get(t, "enum"), 1) : cJSON_CreateArray();
            if (get(t, "const")) cJSON_AddItemToArray(vals, cJSON_Duplicate(get(t, "const"), 1));
            if (!en) {
                en = vals;
            } else { /* intersect */
                cJSON *keep = cJSON_CreateArray(), *a, *b;
                cJSON_ArrayForEach(a, en) {
                    int found = 0;
                    cJSON_ArrayForEach(b, vals) found |= cJSON_Compare(a, b, 1);
                    if (found) cJSON_AddItemToArray(keep, cJSON_Duplicate(a, 1));
                }
                cJSON_Delete(en);
                cJSON_Delete(vals);
                en = keep;
            }
            n_enum++;
            continue;
        }
        if (get(t, "anyOf") || get(t, "oneOf") || get(t, "allOf")) break;
        const cJSON *tp = get(t, "type");
        if (!(get(t, "properties") || (cJSON_IsString(tp) && !strcmp(tp->valuestring, "object"))))
            break;
        const cJSON *p;
        cJSON_ArrayForEach(p, get(t, "properties")) {
            if (!get(props, p->string))
                cJSON_AddItemToObject(props, p->string, cJSON_Duplicate(p, 1));
        }
        cJSON_ArrayForEach(p, get(t, "required")) {
            int dup = 0;
            const cJSON *q;
            cJSON_ArrayForEach(q, req) dup |= cJSON_Compare(p, q, 1);
            if (!dup) cJSON_AddItemToArray(req, cJSON_Duplicate(p, 1));
        }
        no_add |= cJSON_IsFalse(get(t, "additionalProperties"));
        n_obj++;
    }
    if (c->st != VKF_OK) goto done;
    if (n_enum == n) {
        if (!cJSON_GetArraySize(en)) {
            fail(c, VKF_ERROR_FORMAT, "the enums of 'allOf' at %s have no value in common", path);
            goto done;
        }
        cJSON_AddItemToObject(merged, "enum", en);
        en = NULL;
    } else if (n_obj == n) {
        cJSON_AddStringToObject(merged, "type", "object");
        cJSON_AddItemToObject(merged, "properties", props);
        cJSON_AddItemToObject(merged, "required", req);
        props = req = NULL;
        if (no_add) cJSON_AddFalseToObject(merged, "additionalProperties");
    } else {
        fail(c, VKF_ERROR_UNSUPPORTED,
             "'allOf' at %s combines schemas other than objects (merged) or enums (intersected)",
             path);
        goto done;
    }
    result = visit(c, merged, name, path);
done:
    cJSON_Delete(merged);
    cJSON_Delete(props);
    cJSON_Delete(req);
    cJSON_Delete(en);
    return result;
}

/* ---- one schema node */

static const char *visit_type(conv *c, const cJSON *s, const char *type, const char *name,
                              const char *path) {
    char rn[256];
    rule_name(name, rn, sizeof rn);
    if (!strcmp(type, "object")) return visit_object(c, s, name, path);
    if (!strcmp(type, "array")) return visit_array(c, s, name, path);
    if (!strcmp(type, "string")) return visit_string(c, s, name, path);
    if (!strcmp(type, "number")) return visit_number(c, s, name, path, 0);
    if (!strcmp(type, "integer")) return visit_number(c, s, name, path, 1);
    if (!strcmp(type, "boolean")) return add_rule(c, rn, add_prim(c, "boolean"));
    if (!strcmp(type, "null")) return add_rule(c, rn, add_prim(c, "null"));
    return fail(c, VKF_ERROR_FORMAT,
                "type '%s' at %s is not a JSON Schema type (object, array, string, number, "
                "integer, boolean, null)",
                type, path),
           NULL;
}

static const char *visit(conv *c, const cJSON *s, const char *name, const char *path) {
    char rn[256];
    rule_name(name, rn, sizeof rn);
    if (c->st != VKF_OK) return NULL;
    if (++c->depth > 128) {
        c->depth--;
        return fail(c, VKF_ERROR_UNSUPPORTED, "schema nested deeper than 128 at %s", path), NULL;
    }
    const char *r = NULL;
    if (cJSON_IsTrue(s)) {
        r = add_rule(c, rn, add_prim(c, "value"));
        goto out;
    }
    if (cJSON_IsFalse(s)) {
        fail(c, VKF_ERROR_UNSUPPORTED, "the schema false at %s matches nothing", path);
        goto out;
    }
    if (!cJSON_IsObject(s)) {
        fail(c, VKF_ERROR_FORMAT, "the schema at %s must be an object or a boolean", path);
        goto out;
    }
    if (check_keywords(c, s, path)) goto out;
    const cJSON *ref = get(s, "$ref"), *cst = get(s, "const"), *en = get(s, "enum"),
                *type = get(s, "type");
    if (ref) {
        const cJSON *k;
        cJSON_ArrayForEach(k, s) if (strcmp(k->string, "$ref") &&
                                     !in_list(k->string, k_annotations,
                                              sizeof k_annotations / sizeof *k_annotations)) {
            fail(c, VKF_ERROR_UNSUPPORTED, "'%s' beside $ref at %s is not supported", k->string,
                 path);
            goto out;
        }
        if (!cJSON_IsString(ref)) {
            fail(c, VKF_ERROR_FORMAT, "$ref at %s must be a string", path);
            goto out;
        }
        const char *target = visit_ref(c, ref->valuestring, path);
        r = target ? add_rule(c, rn, target) : NULL;
        goto out;
    }
    if (cst) {
        vkf_sb b = {0};
        constant(c, cst, &b);
        r = b.oom ? (oom(c), NULL) : add_rule(c, rn, b.p);
        vkf_sb_free(&b);
        goto out;
    }
    if (en) {
        if (!cJSON_IsArray(en) || !cJSON_GetArraySize(en)) {
            fail(c, VKF_ERROR_FORMAT, "'enum' at %s must be a non-empty array", path);
            goto out;
        }
        vkf_sb b = {0};
        const cJSON *v;
        int i = 0;
        vkf_sb_putc(&b, '(');
        cJSON_ArrayForEach(v, en) {
            if (i++) vkf_sb_puts(&b, " | ");
            constant(c, v, &b);
        }
        vkf_sb_putc(&b, ')');
        r = b.oom ? (oom(c), NULL) : add_rule(c, rn, b.p);
        vkf_sb_free(&b);
        goto out;
    }
    if (get(s, "anyOf") || get(s, "oneOf")) {
        const char *key = get(s, "anyOf") ? "anyOf" : "oneOf";
        if (get(s, "anyOf") && get(s, "oneOf")) {
            fail(c, VKF_ERROR_UNSUPPORTED, "anyOf and oneOf together at %s", path);
            goto out;
        }
        r = alternatives(c, get(s, key), key, name, path);
        goto out;
    }
    if (get(s, "allOf")) {
        r = visit_all_of(c, s, name, path);
        goto out;
    }
    if (cJSON_IsArray(type)) { /* a list of types: one alternative each */
        vkf_sb b = {0};
        int i = 0;
        const cJSON *t;
        cJSON_ArrayForEach(t, type) {
            if (!cJSON_IsString(t)) {
                fail(c, VKF_ERROR_FORMAT, "'type' at %s must list strings", path);
                break;
            }
            char sn[320], part[32];
            snprintf(part, sizeof part, "%d", i);
            sub_name(*name ? name : "alternative", part, sn, sizeof sn);
            const char *a = visit_type(c, s, t->valuestring, sn, path);
            if (!a) break;
            vkf_sb_printf(&b, "%s%s", i++ ? " | " : "", a);
        }
        if (c->st == VKF_OK && i == 0)
            fail(c, VKF_ERROR_FORMAT, "'type' at %s is an empty list", path);
        r = c->st == VKF_OK ? add_rule(c, rn, b.p) : NULL;
        vkf_sb_free(&b);
        goto out;
    }
    if (type && !cJSON_IsString(type)) {
        fail(c, VKF_ERROR_FORMAT, "'type' at %s must be a string or a list of strings", path);
        goto out;
    }
    if (type) {
        r = visit_type(c, s, type->valuestring, name, path);
        goto out;
    }
    /* no type: the keywords say which */
    if (get(s, "properties") || get(s, "additionalProperties") || get(s, "required"))
        r = visit_object(c, s, name, path);
    else if (get(s, "items") || get(s, "prefixItems") || get(s, "minItems") || get(s, "maxItems"))
        r = visit_array(c, s, name, path);
    else if (get(s, "format") || get(s, "pattern") || get(s, "minLength") || get(s, "maxLength"))
        r = visit_string(c, s, name, path);
    else if (get(s, "minimum") || get(s, "maximum") || get(s, "exclusiveMinimum") ||
             get(s, "exclusiveMaximum"))
        r = visit_number(c, s, name, path, 0);
    else
        r = add_rule(c, rn, add_prim(c, "value"));
out:
    c->depth--;
    return c->st == VKF_OK ? r : NULL;
}

/* ------------------------------------------------------------------ entry points */

static int rule_cmp(const void *a, const void *b) {
    return strcmp(((const rule *)a)->name, ((const rule *)b)->name);
}

struct vkf_jconv {
    conv c;
};

vkf_status vkf_jconv_create(vkf_jconv **out) {
    vkf_jconv *j = calloc(1, sizeof *j);
    if (!j) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "json schema: out of memory");
    add_prim(&j->c, "space"); /* llama.cpp's grammars always carry it */
    *out = j;
    return VKF_OK;
}

static void clear_refs(conv *c) {
    for (int i = 0; i < c->n_refs; i++) {
        free(c->refs[i].ref);
        free(c->refs[i].name);
    }
    c->n_refs = 0;
}

void vkf_jconv_free(vkf_jconv *j) {
    if (!j) return;
    conv *c = &j->c;
    for (int i = 0; i < c->n_rules; i++) {
        free(c->rules[i].name);
        free(c->rules[i].body);
    }
    free(c->rules);
    clear_refs(c);
    free(c->refs);
    free(j);
}

static int utf8_ok(const char *s) {
    for (size_t n = strlen(s), i = 0; i < n;) {
        uint32_t cp;
        i += vkf_utf8_decode(s + i, n - i, &cp);
        if (cp == VKF_UTF8_INVALID) return 0;
    }
    return 1;
}

/* the first key or string below node that is not UTF-8: 1 and its JSON pointer in *path */
static int find_bad_utf8(const cJSON *node, vkf_sb *path) {
    if (cJSON_IsString(node) && !utf8_ok(node->valuestring)) return 1;
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node)) return 0;
    size_t mark = path->n;
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, node) {
        path->n = mark;
        if (cJSON_IsObject(node)) {
            if (!utf8_ok(x->string)) return 1; /* a key of the object at path */
            vkf_sb_putc(path, '/');
            vkf_sb_puts(path, x->string);
        } else {
            vkf_sb_printf(path, "/%d", i);
        }
        if (find_bad_utf8(x, path)) return 1;
        i++;
    }
    path->n = mark;
    return 0;
}

vkf_status vkf_json_check_utf8(const cJSON *node, const char *what) {
    vkf_sb path = {0};
    vkf_sb_putc(&path, '#');
    int bad = find_bad_utf8(node, &path);
    if (path.p) path.p[path.n] = 0; /* the pointer where the walk stopped */
    vkf_status st = VKF_OK;
    if (path.oom)
        st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    else if (bad)
        st = vkf_error(VKF_ERROR_FORMAT,
                       "%s: a string or key at %s is not valid UTF-8 (JSON text is UTF-8)", what,
                       path.p);
    vkf_sb_free(&path);
    return st;
}

vkf_status vkf_jconv_add(vkf_jconv *j, const cJSON *schema, const char *name, const char **out) {
    VKF_TRY(vkf_json_check_utf8(schema, "json schema"));
    conv *c = &j->c;
    c->root = schema; /* $ref resolves within this document */
    clear_refs(c);
    const char *r = visit(c, schema, name, "#");
    c->root = NULL;
    if (c->st != VKF_OK) return c->st;
    if (!r) return vkf_error(VKF_ERROR_INTERNAL, "json schema: no rule written");
    *out = r;
    return VKF_OK;
}

vkf_status vkf_jconv_rule(vkf_jconv *j, const char *name, const char *body, const char **out) {
    const char *r = add_rule(&j->c, name, body);
    if (!r)
        return j->c.st != VKF_OK ? j->c.st : vkf_error(VKF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (out) *out = r;
    return VKF_OK;
}

const char *vkf_jconv_prim(vkf_jconv *j, const char *name) { return add_prim(&j->c, name); }

vkf_status vkf_jconv_finish(vkf_jconv *j, char **gbnf) {
    conv *c = &j->c;
    vkf_sb out = {0};
    vkf_status st = c->st;
    if (st == VKF_OK) {
        qsort(c->rules, (size_t)c->n_rules, sizeof *c->rules, rule_cmp);
        for (int i = 0; i < c->n_rules; i++)
            vkf_sb_printf(&out, "%s ::= %s\n", c->rules[i].name, c->rules[i].body);
        if (out.oom) st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "json schema: out of memory");
    }
    vkf_jconv_free(j);
    if (st != VKF_OK) {
        vkf_sb_free(&out);
        return st;
    }
    /* the grammar must parse: a check on this converter, cheap beside sampling. A root that
     * matches nothing is the schema's doing (every value it allows contains another without
     * end: {"$ref": "#"}, a required property or minItems through a $ref cycle). */
    vkf_gbnf *g = NULL;
    st = vkf_gbnf_parse(out.p, strlen(out.p), "root", NULL, NULL, &g);
    vkf_gbnf_free(g);
    if (st != VKF_OK) {
        int prod = -1;
        if (st == VKF_ERROR_FORMAT &&
            vkf_gbnf_parse_rules(out.p, strlen(out.p), NULL, NULL, &g) == VKF_OK) {
            for (uint32_t i = 0; i < g->n_rules; i++)
                if (strcmp(g->names[i], "root") == 0) prod = vkf_gbnf_rule_productive(g, i);
            vkf_gbnf_free(g);
        }
        if (st == VKF_ERROR_UNSUPPORTED)
            st = vkf_error_prefix(VKF_ERROR_UNSUPPORTED,
                                  "json schema: the grammar it needs is past GBNF's limits");
        else if (prod == 0)
            st = vkf_error(VKF_ERROR_FORMAT,
                           "json schema: no JSON value satisfies it: every value it allows must "
                           "contain another such value without end (a $ref cycle through "
                           "required properties, minItems or the like)");
        else if (st != VKF_ERROR_OUT_OF_MEMORY)
            st = vkf_error_prefix(VKF_ERROR_INTERNAL,
                                  "json schema: the grammar written does not parse");
        vkf_sb_free(&out);
        return st;
    }
    *gbnf = vkf_sb_take(&out);
    return VKF_OK;
}

vkf_status vkf_json_schema_to_grammar(const char *schema_json, char **gbnf) {
    if (!schema_json || !gbnf)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "json schema: NULL schema or output");
    *gbnf = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(schema_json, &end, 1);
    if (!root)
        return vkf_error(VKF_ERROR_FORMAT, "json schema: not valid JSON (at byte %zu)",
                         end ? (size_t)(end - schema_json) : 0);
    vkf_jconv *j;
    vkf_status st = vkf_jconv_create(&j);
    const char *r = NULL;
    if (st == VKF_OK) st = vkf_jconv_add(j, root, "", &r);
    if (st == VKF_OK && strcmp(r, "root") != 0) st = vkf_jconv_rule(j, "root", r, NULL);
    if (st == VKF_OK) {
        st = vkf_jconv_finish(j, gbnf);
    } else if (j) {
        vkf_jconv_free(j);
    }
    cJSON_Delete(root);
    return st;
}
