/* Jinja values: the arena, errors, Python-like printing (str, repr), json.dumps, comparison. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/jinja_int.h"

/* ------------------------------------------------------------------ arena and errors */

struct jj_block {
    jj_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *jj_alloc(jj_ctx *c, size_t n) {
    n = (n + 15) & ~(size_t)15;
    jj_block *b = c->blocks;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ((size_t)64 << 10) ? n : ((size_t)64 << 10);
        if (c->used + cap > JJ_MAX_ARENA) {
            c->status =
                vkf_error(VKF_ERROR_OUT_OF_MEMORY,
                          "chat template: the render needs more than %zu MiB", JJ_MAX_ARENA >> 20);
            longjmp(c->jmp, 1);
        }
        jj_block *nb = malloc(sizeof *nb + cap);
        if (!nb) {
            c->status = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "chat template: out of memory");
            longjmp(c->jmp, 1);
        }
        nb->used = 0;
        nb->cap = cap;
        c->used += cap;
        if (b && n > ((size_t)64 << 10)) { /* a big one-off: keep filling the current block */
            nb->next = b->next;
            b->next = nb;
            nb->used = n;
            return nb->data;
        }
        nb->next = b;
        c->blocks = b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

void jj_arena_free(jj_ctx *c) {
    for (jj_block *b = c->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    c->blocks = NULL;
}

char *jj_strdup(jj_ctx *c, const char *s, size_t n) {
    char *r = jj_alloc(c, n + 1);
    if (n) memcpy(r, s, n);
    r[n] = 0;
    return r;
}

void jj_fail(jj_ctx *c, int line, int col, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        c->status = vkf_error(VKF_ERROR_FORMAT, "template line %d, column %d: %s", line, col, msg);
    else
        c->status = vkf_error(VKF_ERROR_FORMAT, "template: %s", msg);
    longjmp(c->jmp, 1);
}

void jj_raise(jj_ctx *c, const char *msg) {
    c->status = vkf_error(VKF_ERROR_FORMAT, "%s", msg);
    longjmp(c->jmp, 1);
}

void jj_enter(jj_ctx *c, int line, int col) {
    if (++c->depth > JJ_MAX_DEPTH) jj_fail(c, line, col, "nesting deeper than %d", JJ_MAX_DEPTH);
}

void jj_leave(jj_ctx *c) { c->depth--; }

void jj_buf_put(jj_ctx *c, jj_buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *np = jj_alloc(c, cap);
        if (b->n) memcpy(np, b->p, b->n);
        b->p = np;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void jj_buf_puts(jj_ctx *c, jj_buf *b, const char *s) { jj_buf_put(c, b, s, strlen(s)); }

void jj_buf_printf(jj_ctx *c, jj_buf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if ((size_t)k < sizeof tmp) {
        jj_buf_put(c, b, tmp, (size_t)k);
        return;
    }
    char *big = jj_alloc(c, (size_t)k + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)k + 1, fmt, ap);
    va_end(ap);
    jj_buf_put(c, b, big, (size_t)k);
}

/* ------------------------------------------------------------------ construction */

jj_value *jj_new(jj_ctx *c, jj_type t) {
    jj_value *v = jj_alloc(c, sizeof *v);
    memset(v, 0, sizeof *v);
    v->t = t;
    return v;
}

jj_value *jj_str_ref(jj_ctx *c, const char *s, size_t n) {
    jj_value *v = jj_new(c, JJ_STR);
    v->u.str.s = s;
    v->u.str.n = n;
    return v;
}

jj_value *jj_str(jj_ctx *c, const char *s, size_t n) {
    return jj_str_ref(c, jj_strdup(c, s, n), n);
}

jj_value *jj_int(jj_ctx *c, int64_t i) {
    jj_value *v = jj_new(c, JJ_INT);
    v->u.i = i;
    return v;
}

jj_value *jj_float(jj_ctx *c, double f) {
    jj_value *v = jj_new(c, JJ_FLOAT);
    v->u.f = f;
    return v;
}

jj_value *jj_bool(jj_ctx *c, int b) { return b ? c->vtrue : c->vfalse; }

jj_value *jj_undef(jj_ctx *c, const char *hint) {
    if (!hint) return c->undef;
    jj_value *v = jj_new(c, JJ_UNDEF);
    v->hint = hint;
    return v;
}

jj_value *jj_list(jj_ctx *c) { return jj_new(c, JJ_LIST); }

jj_value *jj_dict(jj_ctx *c) { return jj_new(c, JJ_DICT); }

void jj_list_push(jj_ctx *c, jj_value *l, jj_value *v) {
    if (l->u.list.n == l->u.list.cap) {
        size_t cap = l->u.list.cap ? l->u.list.cap * 2 : 8;
        jj_value **np = jj_alloc(c, cap * sizeof *np);
        if (l->u.list.n) memcpy(np, l->u.list.items, l->u.list.n * sizeof *np);
        l->u.list.items = np;
        l->u.list.cap = cap;
    }
    l->u.list.items[l->u.list.n++] = v;
}

jj_value *jj_dict_get(const jj_value *d, const char *key, size_t klen) {
    for (size_t i = 0; i < d->u.dict.n; i++)
        if (d->u.dict.kv[i].klen == klen && memcmp(d->u.dict.kv[i].key, key, klen) == 0)
            return d->u.dict.kv[i].val;
    return NULL;
}

void jj_dict_set(jj_ctx *c, jj_value *d, const char *key, size_t klen, jj_value *v) {
    for (size_t i = 0; i < d->u.dict.n; i++)
        if (d->u.dict.kv[i].klen == klen && memcmp(d->u.dict.kv[i].key, key, klen) == 0) {
            d->u.dict.kv[i].val = v;
            return;
        }
    if (d->u.dict.n == d->u.dict.cap) {
        size_t cap = d->u.dict.cap ? d->u.dict.cap * 2 : 8;
        jj_kv *np = jj_alloc(c, cap * sizeof *np);
        if (d->u.dict.n) memcpy(np, d->u.dict.kv, d->u.dict.n * sizeof *np);
        d->u.dict.kv = np;
        d->u.dict.cap = cap;
    }
    d->u.dict.kv[d->u.dict.n++] = (jj_kv){key, klen, v};
}

jj_value *jj_from_json(jj_ctx *c, const void *p) {
    const cJSON *j = p;
    if (!j || cJSON_IsNull(j)) return c->none;
    if (cJSON_IsTrue(j)) return c->vtrue;
    if (cJSON_IsFalse(j)) return c->vfalse;
    if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        /* cJSON keeps no text: an integral value within int64 is an int (Python's json would
         * make "1.0" a float; JSON inputs here write integers without a fraction) */
        if (d == floor(d) && fabs(d) < 9.2e18) return jj_int(c, (int64_t)d);
        return jj_float(c, d);
    }
    if (cJSON_IsString(j)) return jj_str(c, j->valuestring, strlen(j->valuestring));
    if (cJSON_IsArray(j)) {
        jj_value *l = jj_list(c);
        const cJSON *e;
        cJSON_ArrayForEach(e, j) jj_list_push(c, l, jj_from_json(c, e));
        return l;
    }
    jj_value *d = jj_dict(c);
    const cJSON *e;
    cJSON_ArrayForEach(e, j) jj_dict_set(c, d, jj_strdup(c, e->string, strlen(e->string)),
                                         strlen(e->string), jj_from_json(c, e));
    return d;
}

/* ------------------------------------------------------------------ UTF-8 */

size_t jj_utf8_len(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

size_t jj_utf8_offset(const char *s, size_t n, size_t cp) {
    size_t i = 0;
    while (i < n && cp > 0) {
        i++;
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
        cp--;
    }
    return i;
}

static uint32_t decode_at(const char *s, size_t n, size_t i, size_t *len) {
    unsigned char b = (unsigned char)s[i];
    size_t k = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    if (i + k > n) k = 1;
    uint32_t cp = k == 1 ? b : k == 2 ? (b & 0x1Fu) : k == 3 ? (b & 0x0Fu) : (b & 0x07u);
    for (size_t j = 1; j < k; j++)
        cp = (cp << 6) | ((unsigned char)s[i + j] & 0x3Fu);
    *len = k;
    return cp;
}

int jj_is_space_at(const char *s, size_t n, size_t i, size_t *len) {
    uint32_t cp = decode_at(s, n, i, len);
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* ------------------------------------------------------------------ truth, equality, order */

int jj_truthy(const jj_value *v) {
    switch (v->t) {
    case JJ_UNDEF:
    case JJ_NONE: return 0;
    case JJ_BOOL: return v->u.b;
    case JJ_INT: return v->u.i != 0;
    case JJ_FLOAT: return v->u.f != 0;
    case JJ_STR: return v->u.str.n != 0;
    case JJ_LIST: return v->u.list.is_gen || v->u.list.n != 0;
    case JJ_DICT: return v->u.dict.n != 0;
    default: return 1;
    }
}

int jj_is_number(const jj_value *v) {
    return v->t == JJ_INT || v->t == JJ_FLOAT || v->t == JJ_BOOL;
}

double jj_num(const jj_value *v) {
    return v->t == JJ_FLOAT  ? v->u.f
           : v->t == JJ_INT  ? (double)v->u.i
           : v->t == JJ_BOOL ? v->u.b
                             : 0;
}

/* nested lists deeper than this compare unequal (a template can build any depth; the C stack
 * cannot recurse that far) */
#define JJ_MAX_EQ_DEPTH 1000
static int equal_d(const jj_value *a, const jj_value *b, int depth);

int jj_equal(const jj_value *a, const jj_value *b) { return equal_d(a, b, 0); }

static int equal_d(const jj_value *a, const jj_value *b, int depth) {
    if (depth > JJ_MAX_EQ_DEPTH) return 0;
    if (jj_is_number(a) && jj_is_number(b)) {
        if (a->t != JJ_FLOAT && b->t != JJ_FLOAT) {
            int64_t x = a->t == JJ_INT ? a->u.i : a->u.b, y = b->t == JJ_INT ? b->u.i : b->u.b;
            return x == y;
        }
        return jj_num(a) == jj_num(b);
    }
    if (a->t != b->t) return 0;
    switch (a->t) {
    case JJ_UNDEF:
    case JJ_NONE: return 1;
    case JJ_STR: return a->u.str.n == b->u.str.n && memcmp(a->u.str.s, b->u.str.s, a->u.str.n) == 0;
    case JJ_LIST:
        if (a->u.list.is_gen || b->u.list.is_gen) return a == b;
        if (a->u.list.is_tuple != b->u.list.is_tuple || a->u.list.n != b->u.list.n) return 0;
        for (size_t i = 0; i < a->u.list.n; i++)
            if (!equal_d(a->u.list.items[i], b->u.list.items[i], depth + 1)) return 0;
        return 1;
    case JJ_DICT:
        if (a->u.dict.n != b->u.dict.n) return 0;
        for (size_t i = 0; i < a->u.dict.n; i++) {
            jj_value *o = jj_dict_get(b, a->u.dict.kv[i].key, a->u.dict.kv[i].klen);
            if (!o || !equal_d(a->u.dict.kv[i].val, o, depth + 1)) return 0;
        }
        return 1;
    case JJ_FUNC:
        return a->u.func.self == b->u.func.self && strcmp(a->u.func.name, b->u.func.name) == 0;
    default: return a == b;
    }
}

int jj_compare(jj_ctx *c, const jj_value *a, const jj_value *b, int line, int col) {
    if (jj_is_number(a) && jj_is_number(b)) {
        if (a->t == JJ_INT && b->t == JJ_INT) return a->u.i < b->u.i ? -1 : a->u.i > b->u.i;
        double x = jj_num(a), y = jj_num(b);
        return x < y ? -1 : x > y;
    }
    if (a->t == JJ_STR && b->t == JJ_STR) { /* UTF-8 byte order is code point order */
        size_t n = a->u.str.n < b->u.str.n ? a->u.str.n : b->u.str.n;
        int r = memcmp(a->u.str.s, b->u.str.s, n);
        if (r) return r < 0 ? -1 : 1;
        return a->u.str.n < b->u.str.n ? -1 : a->u.str.n > b->u.str.n;
    }
    if (a->t == JJ_LIST && b->t == JJ_LIST && !a->u.list.is_gen && !b->u.list.is_gen) {
        for (size_t i = 0; i < a->u.list.n && i < b->u.list.n; i++) {
            if (jj_equal(a->u.list.items[i], b->u.list.items[i])) continue;
            jj_enter(c, line, col);
            int r = jj_compare(c, a->u.list.items[i], b->u.list.items[i], line, col);
            jj_leave(c);
            return r;
        }
        return a->u.list.n < b->u.list.n ? -1 : a->u.list.n > b->u.list.n;
    }
    if (a->t == JJ_UNDEF || b->t == JJ_UNDEF)
        jj_fail(c, line, col, "%s",
                a->t == JJ_UNDEF && a->hint ? a->hint
                : b->hint                   ? b->hint
                                            : "a value is undefined");
    jj_fail(c, line, col, "'<' not supported between instances of '%s' and '%s'", jj_type_name(a),
            jj_type_name(b));
}

const char *jj_type_name(const jj_value *v) {
    switch (v->t) {
    case JJ_UNDEF: return "Undefined";
    case JJ_NONE: return "NoneType";
    case JJ_BOOL: return "bool";
    case JJ_INT: return "int";
    case JJ_FLOAT: return "float";
    case JJ_STR: return "str";
    case JJ_LIST: return v->u.list.is_gen ? "generator" : v->u.list.is_tuple ? "tuple" : "list";
    case JJ_DICT: return "dict";
    case JJ_NS: return "Namespace";
    case JJ_MACRO: return "Macro";
    case JJ_FUNC: return v->u.func.self ? "builtin_function_or_method" : "function";
    case JJ_LOOP: return "LoopContext";
    }
    return "object";
}

/* ------------------------------------------------------------------ printing */

/* Python's repr(float): the shortest digits that read back the same. */
static void float_repr(jj_ctx *c, jj_buf *b, double f) {
    if (isnan(f)) {
        jj_buf_puts(c, b, "nan");
        return;
    }
    if (isinf(f)) {
        jj_buf_puts(c, b, f < 0 ? "-inf" : "inf");
        return;
    }
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    /* tmp: d.ddde[+-]XX; Python uses positional notation for 1e-4 <= |f| < 1e16 */
    char *e = strchr(tmp, 'e');
    int exp = atoi(e + 1);
    *e = 0;
    char digits[32];
    size_t nd = 0;
    int neg = tmp[0] == '-';
    for (char *p = tmp + neg; *p; p++)
        if (*p != '.') digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    if (neg) jj_buf_put(c, b, "-", 1);
    if (exp >= -5 && exp < 16) {
        if (exp < 0) {
            jj_buf_puts(c, b, "0.");
            for (int i = 0; i < -exp - 1; i++)
                jj_buf_put(c, b, "0", 1);
            jj_buf_put(c, b, digits, nd);
        } else {
            size_t ip = (size_t)exp + 1;
            for (size_t i = 0; i < ip; i++)
                jj_buf_put(c, b, i < nd ? digits + i : "0", 1);
            jj_buf_put(c, b, ".", 1);
            if (nd > ip)
                jj_buf_put(c, b, digits + ip, nd - ip);
            else
                jj_buf_put(c, b, "0", 1);
        }
        return;
    }
    jj_buf_put(c, b, digits, 1);
    if (nd > 1) {
        jj_buf_put(c, b, ".", 1);
        jj_buf_put(c, b, digits + 1, nd - 1);
    }
    jj_buf_printf(c, b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
}

static void str_repr(jj_ctx *c, jj_buf *b, const char *s, size_t n) {
    int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    jj_buf_put(c, b, &q, 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == (unsigned char)q || ch == '\\') {
            jj_buf_put(c, b, "\\", 1);
            jj_buf_put(c, b, s + i, 1);
        } else if (ch == '\n') {
            jj_buf_puts(c, b, "\\n");
        } else if (ch == '\r') {
            jj_buf_puts(c, b, "\\r");
        } else if (ch == '\t') {
            jj_buf_puts(c, b, "\\t");
        } else if (ch < 0x20 || ch == 0x7f) {
            jj_buf_printf(c, b, "\\x%02x", ch);
        } else {
            jj_buf_put(c, b, s + i, 1);
        }
    }
    jj_buf_put(c, b, &q, 1);
}

static void repr_rec(jj_ctx *c, jj_buf *b, const jj_value *v);

void jj_repr(jj_ctx *c, jj_buf *b, const jj_value *v) {
    jj_enter(c, 0, 0);
    repr_rec(c, b, v);
    jj_leave(c);
}

static void repr_rec(jj_ctx *c, jj_buf *b, const jj_value *v) {
    switch (v->t) {
    case JJ_STR: str_repr(c, b, v->u.str.s, v->u.str.n); return;
    case JJ_LIST:
        if (v->u.list.is_gen) {
            jj_buf_puts(c, b, "<generator object>");
            return;
        }
        jj_buf_puts(c, b, v->u.list.is_tuple ? "(" : "[");
        for (size_t i = 0; i < v->u.list.n; i++) {
            if (i) jj_buf_puts(c, b, ", ");
            jj_repr(c, b, v->u.list.items[i]);
        }
        if (v->u.list.is_tuple && v->u.list.n == 1) jj_buf_puts(c, b, ",");
        jj_buf_puts(c, b, v->u.list.is_tuple ? ")" : "]");
        return;
    case JJ_DICT:
        jj_buf_puts(c, b, "{");
        for (size_t i = 0; i < v->u.dict.n; i++) {
            if (i) jj_buf_puts(c, b, ", ");
            str_repr(c, b, v->u.dict.kv[i].key, v->u.dict.kv[i].klen);
            jj_buf_puts(c, b, ": ");
            jj_repr(c, b, v->u.dict.kv[i].val);
        }
        jj_buf_puts(c, b, "}");
        return;
    default: jj_to_str(c, b, v);
    }
}

void jj_to_str(jj_ctx *c, jj_buf *b, const jj_value *v) {
    switch (v->t) {
    case JJ_UNDEF: return;
    case JJ_NONE: jj_buf_puts(c, b, "None"); return;
    case JJ_BOOL: jj_buf_puts(c, b, v->u.b ? "True" : "False"); return;
    case JJ_INT: jj_buf_printf(c, b, "%lld", (long long)v->u.i); return;
    case JJ_FLOAT: float_repr(c, b, v->u.f); return;
    case JJ_STR: jj_buf_put(c, b, v->u.str.s, v->u.str.n); return;
    case JJ_LIST:
    case JJ_DICT: jj_repr(c, b, v); return;
    case JJ_NS: {
        jj_buf_puts(c, b, "<Namespace ");
        jj_value tmp = *v;
        tmp.t = JJ_DICT;
        jj_repr(c, b, &tmp);
        jj_buf_puts(c, b, ">");
        return;
    }
    case JJ_MACRO: jj_buf_puts(c, b, "<Macro>"); return;
    case JJ_FUNC: jj_buf_printf(c, b, "<built-in method %s>", v->u.func.name); return;
    case JJ_LOOP: jj_buf_puts(c, b, "<LoopContext>"); return;
    }
}

jj_value *jj_stringify(jj_ctx *c, jj_value *v) {
    if (v->t == JJ_STR) return v;
    jj_buf b = {0};
    jj_to_str(c, &b, v);
    return jj_str_ref(c, b.p ? b.p : "", b.n);
}

/* ------------------------------------------------------------------ json.dumps */

static void json_str(jj_ctx *c, jj_buf *b, const char *s, size_t n) {
    jj_buf_put(c, b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        if (ch == '"')
            esc = "\\\"";
        else if (ch == '\\')
            esc = "\\\\";
        else if (ch == '\n')
            esc = "\\n";
        else if (ch == '\r')
            esc = "\\r";
        else if (ch == '\t')
            esc = "\\t";
        else if (ch == '\b')
            esc = "\\b";
        else if (ch == '\f')
            esc = "\\f";
        else if (ch < 0x20) {
            snprintf(u, sizeof u, "\\u%04x", ch);
            esc = u;
        } else if (ch >= 0x80 &&
                   c->json_ascii) { /* ensure_ascii: \uXXXX, surrogate pairs above U+FFFF */
            size_t k;
            uint32_t cp = decode_at(s, n, i, &k);
            jj_buf_put(c, b, s + run, i - run);
            if (cp >= 0x10000)
                jj_buf_printf(c, b, "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10),
                              0xDC00 + ((cp - 0x10000) & 0x3FF));
            else
                jj_buf_printf(c, b, "\\u%04x", cp);
            i += k - 1;
            run = i + 1;
            continue;
        }
        if (esc) {
            jj_buf_put(c, b, s + run, i - run);
            jj_buf_puts(c, b, esc);
            run = i + 1;
        }
    }
    jj_buf_put(c, b, s + run, n - run);
    jj_buf_put(c, b, "\"", 1);
}

static void json_nl(jj_ctx *c, jj_buf *b, int indent, int level) {
    jj_buf_put(c, b, "\n", 1);
    for (int i = 0; i < indent * level; i++)
        jj_buf_put(c, b, " ", 1);
}

static int cmp_kv(const void *x, const void *y) {
    const jj_kv *a = x, *b = y;
    size_t n = a->klen < b->klen ? a->klen : b->klen;
    int r = memcmp(a->key, b->key, n);
    return r ? r : (a->klen > b->klen) - (a->klen < b->klen);
}

static void tojson_rec(jj_ctx *c, jj_buf *b, const jj_value *v, int indent, int sort_keys,
                       const char *isep, const char *ksep, int level, int line, int col) {
    jj_enter(c, line, col);
    switch (v->t) {
    case JJ_NONE: jj_buf_puts(c, b, "null"); break;
    case JJ_BOOL: jj_buf_puts(c, b, v->u.b ? "true" : "false"); break;
    case JJ_INT: jj_buf_printf(c, b, "%lld", (long long)v->u.i); break;
    case JJ_FLOAT:
        if (isnan(v->u.f))
            jj_buf_puts(c, b, "NaN");
        else if (isinf(v->u.f))
            jj_buf_puts(c, b, v->u.f < 0 ? "-Infinity" : "Infinity");
        else
            float_repr(c, b, v->u.f);
        break;
    case JJ_STR: json_str(c, b, v->u.str.s, v->u.str.n); break;
    case JJ_LIST:
        if (v->u.list.is_gen)
            jj_fail(c, line, col, "tojson: Object of type generator is not JSON serializable");
        if (v->u.list.n == 0) {
            jj_buf_puts(c, b, "[]");
            break;
        }
        jj_buf_puts(c, b, "[");
        for (size_t i = 0; i < v->u.list.n; i++) {
            if (i) jj_buf_puts(c, b, isep);
            if (indent >= 0) json_nl(c, b, indent, level + 1);
            tojson_rec(c, b, v->u.list.items[i], indent, sort_keys, isep, ksep, level + 1, line,
                       col);
        }
        if (indent >= 0) json_nl(c, b, indent, level);
        jj_buf_puts(c, b, "]");
        break;
    case JJ_DICT: {
        if (v->u.dict.n == 0) {
            jj_buf_puts(c, b, "{}");
            break;
        }
        const jj_kv *kv = v->u.dict.kv;
        if (sort_keys) {
            jj_kv *sorted = jj_alloc(c, v->u.dict.n * sizeof *sorted);
            memcpy(sorted, kv, v->u.dict.n * sizeof *sorted);
            qsort(sorted, v->u.dict.n, sizeof *sorted, cmp_kv);
            kv = sorted;
        }
        jj_buf_puts(c, b, "{");
        for (size_t i = 0; i < v->u.dict.n; i++) {
            if (i) jj_buf_puts(c, b, isep);
            if (indent >= 0) json_nl(c, b, indent, level + 1);
            json_str(c, b, kv[i].key, kv[i].klen);
            jj_buf_puts(c, b, ksep);
            tojson_rec(c, b, kv[i].val, indent, sort_keys, isep, ksep, level + 1, line, col);
        }
        if (indent >= 0) json_nl(c, b, indent, level);
        jj_buf_puts(c, b, "}");
        break;
    }
    default:
        jj_fail(c, line, col, "tojson: Object of type %s is not JSON serializable",
                jj_type_name(v));
    }
    jj_leave(c);
}

void jj_tojson(jj_ctx *c, jj_buf *b, const jj_value *v, int indent, int sort_keys,
               const char *item_sep, const char *key_sep, int line, int col) {
    if (!item_sep) item_sep = indent >= 0 ? "," : ", ";
    if (!key_sep) key_sep = ": ";
    tojson_rec(c, b, v, indent, sort_keys, item_sep, key_sep, 0, line, col);
}

/* ------------------------------------------------------------------ iteration */

jj_value *jj_iterate(jj_ctx *c, jj_value *v, int line, int col) {
    switch (v->t) {
    case JJ_UNDEF: return jj_list(c);
    case JJ_LIST: return v;
    case JJ_DICT: {
        jj_value *l = jj_list(c);
        for (size_t i = 0; i < v->u.dict.n; i++)
            jj_list_push(c, l, jj_str_ref(c, v->u.dict.kv[i].key, v->u.dict.kv[i].klen));
        return l;
    }
    case JJ_STR: {
        jj_value *l = jj_list(c);
        const char *s = v->u.str.s;
        size_t n = v->u.str.n;
        for (size_t i = 0; i < n;) {
            size_t j = i + 1;
            while (j < n && ((unsigned char)s[j] & 0xC0) == 0x80)
                j++;
            jj_list_push(c, l, jj_str_ref(c, s + i, j - i));
            i = j;
        }
        return l;
    }
    default: jj_fail(c, line, col, "'%s' object is not iterable", jj_type_name(v));
    }
}
