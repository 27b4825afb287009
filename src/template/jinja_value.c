/* Jinja values: the arena, errors, Python-like printing (str, repr), json.dumps, comparison. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "template/jinja_int.h"

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
        if (!d->u.dict.kv[i].kval && d->u.dict.kv[i].klen == klen &&
            memcmp(d->u.dict.kv[i].key, key, klen) == 0)
            return d->u.dict.kv[i].val;
    return NULL;
}

static void dict_append(jj_ctx *c, jj_value *d, jj_kv kv) {
    if (d->u.dict.n == d->u.dict.cap) {
        size_t cap = d->u.dict.cap ? d->u.dict.cap * 2 : 8;
        jj_kv *np = jj_alloc(c, cap * sizeof *np);
        if (d->u.dict.n) memcpy(np, d->u.dict.kv, d->u.dict.n * sizeof *np);
        d->u.dict.kv = np;
        d->u.dict.cap = cap;
    }
    d->u.dict.kv[d->u.dict.n++] = kv;
}

void jj_dict_set(jj_ctx *c, jj_value *d, const char *key, size_t klen, jj_value *v) {
    for (size_t i = 0; i < d->u.dict.n; i++)
        if (!d->u.dict.kv[i].kval && d->u.dict.kv[i].klen == klen &&
            memcmp(d->u.dict.kv[i].key, key, klen) == 0) {
            d->u.dict.kv[i].val = v;
            return;
        }
    dict_append(c, d, (jj_kv){key, klen, v, NULL});
}

jj_value *jj_dict_get_key(const jj_value *d, const jj_value *k) {
    if (k->t == JJ_STR) return jj_dict_get(d, k->u.str.s, k->u.str.n);
    for (size_t i = 0; i < d->u.dict.n; i++)
        if (d->u.dict.kv[i].kval && jj_equal(d->u.dict.kv[i].kval, k)) return d->u.dict.kv[i].val;
    return NULL;
}

void jj_dict_set_key(jj_ctx *c, jj_value *d, jj_value *k, jj_value *v) {
    if (k->t == JJ_STR) {
        jj_dict_set(c, d, k->u.str.s, k->u.str.n, v);
        return;
    }
    for (size_t i = 0; i < d->u.dict.n; i++)
        if (d->u.dict.kv[i].kval && jj_equal(d->u.dict.kv[i].kval, k)) {
            d->u.dict.kv[i].val = v;
            return;
        }
    dict_append(c, d, (jj_kv){NULL, 0, v, k});
}

jj_value *jj_kv_key(jj_ctx *c, const jj_kv *kv) {
    return kv->kval ? kv->kval : jj_str_ref(c, kv->key, kv->klen);
}

/* ------------------------------------------------------------------ JSON input */

/* A JSON reader that keeps what Python's json.loads keeps and cJSON loses: integers and floats
 * stay apart ("1.0" is a float, printed "1.0"), and object members keep their order (a repeated
 * key keeps its first place and its last value, as a Python dict does). */
typedef struct jj_json {
    jj_ctx *c;
    const char *s;
    size_t n, i;
    const char *what;
    int depth;
} jj_json;

_Noreturn static void json_fail(jj_json *J, const char *why) {
    jj_fail(J->c, 0, 0, "%s is not valid JSON at byte %zu: %s", J->what, J->i, why);
}

static void json_ws(jj_json *J) {
    while (J->i < J->n &&
           (J->s[J->i] == ' ' || J->s[J->i] == '\t' || J->s[J->i] == '\n' || J->s[J->i] == '\r'))
        J->i++;
}

static int json_lit(jj_json *J, const char *lit) {
    size_t k = strlen(lit);
    if (J->i + k <= J->n && memcmp(J->s + J->i, lit, k) == 0) {
        J->i += k;
        return 1;
    }
    return 0;
}

static void put_cp(jj_ctx *c, jj_buf *b, uint32_t cp) {
    char u[4];
    size_t k;
    if (cp < 0x80) {
        u[0] = (char)cp;
        k = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        k = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        k = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        k = 4;
    }
    jj_buf_put(c, b, u, k);
}

static int json_hex4(jj_json *J, uint32_t *v) {
    if (J->i + 4 > J->n) return 0;
    *v = 0;
    for (int k = 0; k < 4; k++) {
        char ch = J->s[J->i + k];
        int h = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
        if (h < 0) return 0;
        *v = *v * 16 + (uint32_t)h;
    }
    J->i += 4;
    return 1;
}

static jj_value *json_string(jj_json *J) {
    jj_buf b = {0};
    J->i++; /* the opening quote */
    for (;;) {
        if (J->i >= J->n) json_fail(J, "unterminated string");
        char ch = J->s[J->i];
        if (ch == '"') break;
        if (ch != '\\') {
            size_t st = J->i;
            while (J->i < J->n && J->s[J->i] != '"' && J->s[J->i] != '\\')
                J->i++;
            jj_buf_put(J->c, &b, J->s + st, J->i - st);
            continue;
        }
        if (++J->i >= J->n) json_fail(J, "unterminated string");
        char e = J->s[J->i++];
        uint32_t cp;
        switch (e) {
        case '"': jj_buf_put(J->c, &b, "\"", 1); break;
        case '\\': jj_buf_put(J->c, &b, "\\", 1); break;
        case '/': jj_buf_put(J->c, &b, "/", 1); break;
        case 'b': jj_buf_put(J->c, &b, "\b", 1); break;
        case 'f': jj_buf_put(J->c, &b, "\f", 1); break;
        case 'n': jj_buf_put(J->c, &b, "\n", 1); break;
        case 'r': jj_buf_put(J->c, &b, "\r", 1); break;
        case 't': jj_buf_put(J->c, &b, "\t", 1); break;
        case 'u':
            if (!json_hex4(J, &cp)) json_fail(J, "bad \\u escape");
            if (cp >= 0xD800 && cp < 0xDC00 && J->i + 1 < J->n && J->s[J->i] == '\\' &&
                J->s[J->i + 1] == 'u') {
                size_t save = J->i;
                uint32_t lo;
                J->i += 2;
                if (json_hex4(J, &lo) && lo >= 0xDC00 && lo < 0xE000)
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else
                    J->i = save;
            }
            put_cp(J->c, &b, cp);
            break;
        default: J->i--; json_fail(J, "bad escape");
        }
    }
    J->i++;
    return jj_str_ref(J->c, b.p ? b.p : "", b.n);
}

static jj_value *json_number(jj_json *J) {
    size_t st = J->i;
    int is_float = 0;
    if (J->s[J->i] == '-') J->i++;
    if (json_lit(J, "Infinity")) return jj_float(J->c, J->s[st] == '-' ? -INFINITY : INFINITY);
    if (J->i >= J->n || J->s[J->i] < '0' || J->s[J->i] > '9') json_fail(J, "expected a value");
    while (J->i < J->n && J->s[J->i] >= '0' && J->s[J->i] <= '9')
        J->i++;
    if (J->i < J->n && J->s[J->i] == '.') {
        is_float = 1;
        J->i++;
        while (J->i < J->n && J->s[J->i] >= '0' && J->s[J->i] <= '9')
            J->i++;
    }
    if (J->i < J->n && (J->s[J->i] == 'e' || J->s[J->i] == 'E')) {
        is_float = 1;
        J->i++;
        if (J->i < J->n && (J->s[J->i] == '+' || J->s[J->i] == '-')) J->i++;
        while (J->i < J->n && J->s[J->i] >= '0' && J->s[J->i] <= '9')
            J->i++;
    }
    char *text = jj_strdup(J->c, J->s + st, J->i - st);
    if (!is_float) {
        errno = 0;
        long long v = strtoll(text, NULL, 10);
        if (errno == 0) return jj_int(J->c, v);
        /* beyond int64: Python keeps an exact int; the nearest float is the best here */
    }
    return jj_float(J->c, strtod(text, NULL));
}

static jj_value *json_value(jj_json *J) {
    json_ws(J);
    if (J->i >= J->n) json_fail(J, "unexpected end");
    char ch = J->s[J->i];
    if (ch == '"') return json_string(J);
    if (ch == '[' || ch == '{') {
        if (++J->depth > 1000) json_fail(J, "nested deeper than 1000");
        J->i++;
        jj_value *v = ch == '[' ? jj_list(J->c) : jj_dict(J->c);
        json_ws(J);
        if (J->i < J->n && J->s[J->i] == (ch == '[' ? ']' : '}')) {
            J->i++;
            J->depth--;
            return v;
        }
        for (;;) {
            if (ch == '[') {
                jj_list_push(J->c, v, json_value(J));
            } else {
                json_ws(J);
                if (J->i >= J->n || J->s[J->i] != '"') json_fail(J, "expected a string key");
                jj_value *k = json_string(J);
                json_ws(J);
                if (J->i >= J->n || J->s[J->i] != ':') json_fail(J, "expected ':'");
                J->i++;
                jj_dict_set(J->c, v, k->u.str.s, k->u.str.n, json_value(J));
            }
            json_ws(J);
            if (J->i < J->n && J->s[J->i] == ',') {
                J->i++;
                continue;
            }
            if (J->i < J->n && J->s[J->i] == (ch == '[' ? ']' : '}')) {
                J->i++;
                J->depth--;
                return v;
            }
            json_fail(J, ch == '[' ? "expected ',' or ']'" : "expected ',' or '}'");
        }
    }
    if (json_lit(J, "true")) return J->c->vtrue;
    if (json_lit(J, "false")) return J->c->vfalse;
    if (json_lit(J, "null")) return J->c->none;
    if (json_lit(J, "NaN")) return jj_float(J->c, NAN);
    if (json_lit(J, "Infinity")) return jj_float(J->c, INFINITY);
    return json_number(J);
}

jj_value *jj_parse_json(jj_ctx *c, const char *text, size_t n, const char *what) {
    jj_json J = {c, text, n, 0, what, 0};
    jj_value *v = json_value(&J);
    json_ws(&J);
    if (J.i != n) json_fail(&J, "extra data after the value");
    return v;
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
            const jj_kv *kv = &a->u.dict.kv[i];
            jj_value *o =
                kv->kval ? jj_dict_get_key(b, kv->kval) : jj_dict_get(b, kv->key, kv->klen);
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
            if (v->u.dict.kv[i].kval)
                jj_repr(c, b, v->u.dict.kv[i].kval);
            else
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

/* Stable merge sort (Python's sorted is stable) by precomputed keys; ti/tk: scratch of n. */
static void merge_sort(jj_ctx *c, jj_value **items, jj_value **keys, size_t n, jj_value **ti,
                       jj_value **tk, int line, int col) {
    if (n < 2) return;
    size_t h = n / 2;
    merge_sort(c, items, keys, h, ti, tk, line, col);
    merge_sort(c, items + h, keys + h, n - h, ti, tk, line, col);
    size_t i = 0, j = h, k = 0;
    while (i < h || j < n) {
        int take_right = i >= h || (j < n && jj_compare(c, keys[j], keys[i], line, col) < 0);
        size_t from = take_right ? j++ : i++;
        ti[k] = items[from];
        tk[k++] = keys[from];
    }
    memcpy(items, ti, n * sizeof *items);
    memcpy(keys, tk, n * sizeof *keys);
}

void jj_sort(jj_ctx *c, jj_value **items, jj_value **keys, size_t n, int line, int col) {
    jj_value **ti = jj_alloc(c, (n + 1) * sizeof *ti), **tk = jj_alloc(c, (n + 1) * sizeof *tk);
    merge_sort(c, items, keys, n, ti, tk, line, col);
}

/* json.dumps's key text: strings as they are; int, float, bool and None converted */
static jj_value *json_key(jj_ctx *c, const jj_kv *kv, int line, int col) {
    if (!kv->kval) return jj_str_ref(c, kv->key, kv->klen);
    const jj_value *k = kv->kval;
    if (k->t == JJ_BOOL) return jj_str_ref(c, k->u.b ? "true" : "false", k->u.b ? 4 : 5);
    if (k->t == JJ_NONE) return jj_str_ref(c, "null", 4);
    if (k->t == JJ_INT || k->t == JJ_FLOAT) {
        jj_buf b = {0};
        jj_to_str(c, &b, k);
        return jj_str_ref(c, b.p, b.n);
    }
    jj_fail(c, line, col, "tojson: keys must be str, int, float, bool or None, not %s",
            jj_type_name(k));
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
        size_t n = v->u.dict.n;
        jj_kv *kv = jj_alloc(c, n * sizeof *kv);
        memcpy(kv, v->u.dict.kv, n * sizeof *kv);
        if (sort_keys) { /* on the keys themselves: Python sorts before converting them */
            jj_value **idx = jj_alloc(c, n * sizeof *idx), **keys = jj_alloc(c, n * sizeof *keys);
            for (size_t i = 0; i < n; i++) {
                idx[i] = jj_int(c, (int64_t)i);
                keys[i] = jj_kv_key(c, &v->u.dict.kv[i]);
            }
            jj_sort(c, idx, keys, n, line, col);
            for (size_t i = 0; i < n; i++)
                kv[i] = v->u.dict.kv[idx[i]->u.i];
        }
        jj_buf_puts(c, b, "{");
        for (size_t i = 0; i < v->u.dict.n; i++) {
            if (i) jj_buf_puts(c, b, isep);
            if (indent >= 0) json_nl(c, b, indent, level + 1);
            jj_value *k = json_key(c, &kv[i], line, col);
            json_str(c, b, k->u.str.s, k->u.str.n);
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
            jj_list_push(c, l, jj_kv_key(c, &v->u.dict.kv[i]));
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
