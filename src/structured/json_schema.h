/* JSON Schema -> GBNF (json_schema.c: the schema walk; json_schema_text.c: number ranges and
 * regular expressions as grammar expressions). */
#ifndef VKF_STRUCTURED_JSON_SCHEMA_H
#define VKF_STRUCTURED_JSON_SCHEMA_H

#include <stddef.h>

#include "structured/sbuf.h"
#include "vkformer.h"

/* A decimal bound: sign, integer digits (no leading zeros, "0" for zero), fraction digits (no
 * trailing zeros, "" for none). */
typedef struct vkf_jdec {
    int neg;
    char i[40], f[40];
} vkf_jdec;

/* A JSON number's value as a vkf_jdec; 0 when it has more digits than a grammar bound may. */
int vkf_jdec_from_double(double v, vkf_jdec *d);

/* The JSON numbers in the range (a NULL bound: none; excl: strict) as one GBNF expression;
 * integers only when !allow_frac. Integer parts have at most 16 digits and fractions at most
 * 16 (llama.cpp's number rule), no exponent. Returns 0 when the range holds no such number. */
int vkf_js_number_range(vkf_sb *out, const vkf_jdec *lo, int lo_excl, const vkf_jdec *hi,
                        int hi_excl, int allow_frac);

/* A code point inside a GBNF class [...]: ] \ - [ escaped, ^ and what is not printable ASCII
 * as \x.. \u.... \U........ (so it is literal anywhere in the class). */
void vkf_js_class_char(vkf_sb *o, uint32_t c);

/* An ECMAScript regular expression (JSON Schema's pattern) as a GBNF expression of the JSON
 * string literals (quotes included) whose value it matches somewhere (^ and $ anchor a top-level
 * alternative). char_rule: the name of the rule for any JSON string character (for unanchored
 * sides). VKF_ERROR_UNSUPPORTED (lookarounds, back references, word boundaries, ...) or
 * VKF_ERROR_FORMAT (not a regular expression), with the message in err. */
vkf_status vkf_js_pattern(const char *re, const char *char_rule, vkf_sb *out, char *err,
                          size_t errn);

/* Several schemas in one grammar (tool calls): rules named after each schema's name, the
 * primitives shared. */
struct cJSON;
typedef struct vkf_jconv vkf_jconv;
vkf_status vkf_jconv_create(vkf_jconv **out);
void vkf_jconv_free(vkf_jconv *j);
/* schema (a parsed document; its $refs resolve within it) as rules; *rule gets the name of its
 * top rule (name, or a variant when taken) */
vkf_status vkf_jconv_add(vkf_jconv *j, const struct cJSON *schema, const char *name,
                         const char **rule);
/* a rule of the caller's (name taken: a variant); *rule (may be NULL) gets the name used */
vkf_status vkf_jconv_rule(vkf_jconv *j, const char *name, const char *body, const char **rule);
/* a primitive rule (space, value, string, ...) added; its name */
const char *vkf_jconv_prim(vkf_jconv *j, const char *name);
/* the grammar (rules sorted by name, start rule "root"); frees j */
vkf_status vkf_jconv_finish(vkf_jconv *j, char **gbnf);
/* VKF_OK when every key and string of node's tree is UTF-8 (JSON text is; cJSON takes any
 * bytes, and a grammar's literals cannot hold what is not), else VKF_ERROR_FORMAT naming what
 * (e.g. "json schema") and the first bad place as a JSON pointer. */
vkf_status vkf_json_check_utf8(const struct cJSON *node, const char *what);

#endif
