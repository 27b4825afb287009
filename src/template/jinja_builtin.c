/* Jinja built-ins: filters, tests, the methods of str / dict / list, and the globals
 * (range, namespace, dict, raise_exception, strftime_now). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tables/case_tables.h"
#include "template/jinja_int.h"
#include "tokenizer/unicode.h"

/* ------------------------------------------------------------------ arguments */

/* Argument i by position or by keyword name; NULL when absent. */
static jj_value *arg(jj_args *a, int i, const char *name) {
    if (i >= 0 && i < a->npos) return a->pos[i];
    for (int k = 0; k < a->nkw; k++)
        if (name && strcmp(a->kwn[k], name) == 0) return a->kwv[k];
    return NULL;
}

static void check_args(jj_ctx *c, jj_args *a, const char *what, int max_pos, const char *const *kw,
                       int line, int col) {
    if (a->npos > max_pos)
        jj_fail(c, line, col, "%s takes at most %d positional argument(s), %d given", what, max_pos,
                a->npos);
    for (int k = 0; k < a->nkw; k++) {
        int ok = 0;
        for (int i = 0; kw && kw[i]; i++)
            ok |= strcmp(kw[i], a->kwn[k]) == 0;
        if (!ok)
            jj_fail(c, line, col, "%s got an unexpected keyword argument '%s'", what, a->kwn[k]);
    }
}

static const char *str_arg(jj_ctx *c, jj_value *v, const char *what, size_t *n, int line, int col) {
    if (!v || v->t != JJ_STR) jj_fail(c, line, col, "%s must be a string", what);
    *n = v->u.str.n;
    return v->u.str.s;
}

static int64_t int_arg(jj_ctx *c, jj_value *v, int64_t def, const char *what, int line, int col) {
    if (!v || v->t == JJ_NONE) return def;
    if (v->t == JJ_INT) return v->u.i;
    if (v->t == JJ_BOOL) return v->u.b;
    jj_fail(c, line, col, "%s must be an integer", what);
}

/* soft_str: str(v), Undefined as "" */
static jj_value *sstr(jj_ctx *c, jj_value *v) { return jj_stringify(c, v); }

/* ------------------------------------------------------------------ string helpers */

static jj_value *str_strip(jj_ctx *c, jj_value *s, jj_value *chars, int left, int right) {
    const char *p = s->u.str.s;
    size_t n = s->u.str.n, a = 0, b = n, len;
    if (chars && chars->t == JJ_STR) {
        /* strip the code points of chars */
        for (;;) {
            if (!left || a >= b) break;
            size_t k = jj_utf8_offset(p + a, b - a, 1);
            int hit = 0;
            for (size_t i = 0; i < chars->u.str.n;) {
                size_t kk = jj_utf8_offset(chars->u.str.s + i, chars->u.str.n - i, 1);
                if (kk == k && memcmp(chars->u.str.s + i, p + a, k) == 0) hit = 1;
                i += kk;
            }
            if (!hit) break;
            a += k;
        }
        for (;;) {
            if (!right || b <= a) break;
            size_t k = 1;
            while (k < b - a && ((unsigned char)p[b - k] & 0xC0) == 0x80)
                k++;
            int hit = 0;
            for (size_t i = 0; i < chars->u.str.n;) {
                size_t kk = jj_utf8_offset(chars->u.str.s + i, chars->u.str.n - i, 1);
                if (kk == k && memcmp(chars->u.str.s + i, p + b - k, k) == 0) hit = 1;
                i += kk;
            }
            if (!hit) break;
            b -= k;
        }
        return jj_str_ref(c, p + a, b - a);
    }
    if (left)
        while (a < n && jj_is_space_at(p, n, a, &len))
            a += len;
    if (right) {
        size_t i = a, end = a;
        while (i < n) {
            if (jj_is_space_at(p, n, i, &len)) {
                i += len;
            } else {
                i += jj_utf8_offset(p + i, n - i, 1);
                end = i;
            }
        }
        b = end;
    }
    return jj_str_ref(c, p + a, b - a);
}

static jj_value *str_split(jj_ctx *c, jj_value *s, jj_value *sep, int64_t maxsplit, int line,
                           int col) {
    jj_value *r = jj_list(c);
    const char *p = s->u.str.s;
    size_t n = s->u.str.n, len;
    if (!sep || sep->t == JJ_NONE) { /* runs of whitespace, no empty parts */
        size_t i = 0;
        while (i < n) {
            while (i < n && jj_is_space_at(p, n, i, &len))
                i += len;
            if (i >= n) break;
            if (maxsplit >= 0 && (int64_t)r->u.list.n >= maxsplit) {
                jj_value *rest = str_strip(c, jj_str_ref(c, p + i, n - i), NULL, 0, 1);
                jj_list_push(c, r, rest);
                break;
            }
            size_t st = i;
            while (i < n && !jj_is_space_at(p, n, i, &len))
                i += jj_utf8_offset(p + i, n - i, 1);
            jj_list_push(c, r, jj_str_ref(c, p + st, i - st));
        }
        return r;
    }
    if (sep->t != JJ_STR) jj_fail(c, line, col, "split: the separator must be a string or None");
    if (sep->u.str.n == 0) jj_fail(c, line, col, "split: empty separator");
    size_t st = 0;
    for (size_t i = 0; i + sep->u.str.n <= n;) {
        if ((maxsplit < 0 || (int64_t)r->u.list.n < maxsplit) &&
            memcmp(p + i, sep->u.str.s, sep->u.str.n) == 0) {
            jj_list_push(c, r, jj_str_ref(c, p + st, i - st));
            i += sep->u.str.n;
            st = i;
        } else {
            i++;
        }
    }
    jj_list_push(c, r, jj_str_ref(c, p + st, n - st));
    return r;
}

static jj_value *str_replace(jj_ctx *c, jj_value *s, jj_value *old, jj_value *new_, int64_t count,
                             int line, int col) {
    size_t on, nn;
    const char *o = str_arg(c, old, "replace: old", &on, line, col);
    const char *nw = str_arg(c, new_, "replace: new", &nn, line, col);
    const char *p = s->u.str.s;
    size_t n = s->u.str.n;
    jj_buf b = {0};
    int64_t done = 0;
    if (on == 0) { /* inserts new before every code point and at the end */
        for (size_t i = 0; i <= n;) {
            if (count < 0 || done < count) {
                jj_buf_put(c, &b, nw, nn);
                done++;
            }
            if (i == n) break;
            size_t k = jj_utf8_offset(p + i, n - i, 1);
            jj_buf_put(c, &b, p + i, k);
            i += k;
        }
        return jj_str_ref(c, b.p ? b.p : "", b.n);
    }
    size_t i = 0, st = 0;
    while (i + on <= n) {
        if ((count < 0 || done < count) && memcmp(p + i, o, on) == 0) {
            jj_buf_put(c, &b, p + st, i - st);
            jj_buf_put(c, &b, nw, nn);
            i += on;
            st = i;
            done++;
        } else {
            i++;
        }
    }
    jj_buf_put(c, &b, p + st, n - st);
    return jj_str_ref(c, b.p ? b.p : "", b.n);
}

/* case mapping: ASCII both ways; lower() beyond ASCII through the Unicode tables */
/* Python's Final_Sigma rule: capital sigma at s[i] lowers to final sigma when a cased letter
 * precedes it and none follows it (case-ignorable code points between are skipped). */
static int final_sigma(const char *s, size_t n, size_t i, size_t k) {
    uint32_t cp = 0;
    size_t j = i, len;
    int found = 0;
    while (j > 0) { /* back over case-ignorables */
        size_t st = j - 1;
        while (st > 0 && ((unsigned char)s[st] & 0xC0) == 0x80)
            st--;
        len = vkf_utf8_decode(s + st, j - st, &cp);
        j = st;
        if (len && !jj_case_ignorable(cp)) {
            found = 1;
            break;
        }
    }
    if (!found || !jj_case_cased(cp)) return 0;
    for (j = i + k; j < n; j += len ? len : 1) {
        len = vkf_utf8_decode(s + j, n - j, &cp);
        if (len && !jj_case_ignorable(cp)) return !jj_case_cased(cp);
    }
    return 1;
}

/* Python's case operations with its full mappings (tables/case_tables.c). mode: 0 str.lower,
 * 1 str.upper, 2 str.title, 3 str.capitalize (first title case, rest lower), 4 jinja2's |title
 * (after the start and each run of -, whitespace, (, {, [, <: upper; else lower). */
static jj_value *str_case(jj_ctx *c, jj_value *s, int mode) {
    const char *p = s->u.str.s;
    size_t n = s->u.str.n;
    jj_buf b = {0};
    int prev_cased = 0, first = 1, after_sep = 1;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = vkf_utf8_decode(p + i, n - i, &cp);
        if (k == 0) k = 1, cp = (unsigned char)p[i];
        size_t sp;
        int sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' ||
                  jj_is_space_at(p, n, i, &sp);
        jj_case kind = JJ_CASE_LOWER;
        if (mode == 1 || (mode == 4 && after_sep && !sep)) kind = JJ_CASE_UPPER;
        if ((mode == 2 && !prev_cased) || (mode == 3 && first)) kind = JJ_CASE_TITLE;
        uint32_t m[3];
        size_t nm = jj_case_map(cp, kind, m);
        if (cp == 0x3A3 && kind == JJ_CASE_LOWER && final_sigma(p, n, i, k)) m[0] = 0x3C2;
        if (nm == 1 && m[0] == cp) {
            jj_buf_put(c, &b, p + i, k); /* unchanged: keep the bytes */
        } else {
            for (size_t j = 0; j < nm; j++) {
                char u[4];
                jj_buf_put(c, &b, u, vkf_utf8_encode(m[j], u));
            }
        }
        prev_cased = jj_case_cased(cp);
        after_sep = sep;
        first = 0;
        i += k;
    }
    return jj_str_ref(c, b.p ? b.p : "", b.n);
}

static int str_starts(const jj_value *s, const jj_value *pre, int end) {
    if (pre->u.str.n > s->u.str.n) return 0;
    const char *at = end ? s->u.str.s + s->u.str.n - pre->u.str.n : s->u.str.s;
    return memcmp(at, pre->u.str.s, pre->u.str.n) == 0;
}

/* ------------------------------------------------------------------ attribute getters */

/* jinja2's make_attrgetter: "a.b.0" by item lookup, then attribute */
static jj_value *attr_path(jj_ctx *c, jj_value *v, jj_value *attr, jj_value *def, int line,
                           int col) {
    if (attr->t == JJ_INT) {
        if (v->t == JJ_LIST && attr->u.i >= 0 && (size_t)attr->u.i < v->u.list.n)
            return v->u.list.items[attr->u.i];
        return def ? def : jj_undef(c, "an attribute is undefined");
    }
    size_t n;
    const char *p = str_arg(c, attr, "attribute", &n, line, col);
    size_t st = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '.') continue;
        const char *part = p + st;
        size_t pn = i - st;
        st = i + 1;
        if (v->t == JJ_UNDEF)
            jj_fail(c, line, col, "%s", v->hint ? v->hint : "a value is undefined");
        jj_value *next = NULL;
        int digits = pn > 0;
        for (size_t k = 0; k < pn; k++)
            digits &= part[k] >= '0' && part[k] <= '9';
        if (digits && v->t == JJ_LIST) {
            size_t idx = (size_t)strtoull(jj_strdup(c, part, pn), NULL, 10);
            if (idx < v->u.list.n) next = v->u.list.items[idx];
        } else if (v->t == JJ_DICT || v->t == JJ_NS) {
            /* jinja2 makes a part of digits an int: the int key first, then the string */
            if (digits && pn < 19)
                next = jj_dict_get_key(v, jj_int(c, strtoll(jj_strdup(c, part, pn), NULL, 10)));
            if (!next) next = jj_dict_get(v, part, pn);
        }
        if (!next) next = jj_method_get(c, v, jj_strdup(c, part, pn));
        v = next ? next : jj_undef(c, "an attribute is undefined");
    }
    if (v->t == JJ_UNDEF && def) return def;
    return v;
}

/* ------------------------------------------------------------------ tests */

static const char *const test_names[] = {
    "defined", "undefined",   "none",    "boolean",     "false",    "true",     "integer",  "float",
    "number",  "string",      "mapping", "iterable",    "sequence", "callable", "sameas",   "eq",
    "equalto", "==",          "ne",      "!=",          "lt",       "<",        "lessthan", "le",
    "<=",      "gt",          ">",       "greaterthan", "ge",       ">=",       "in",       "odd",
    "even",    "divisibleby", "lower",   "upper",       "escaped",  "filter",   "test",     NULL};

int jj_is_test_name(const char *name) {
    for (int i = 0; test_names[i]; i++)
        if (strcmp(test_names[i], name) == 0) return 1;
    return 0;
}

int jj_test(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    jj_value *x = arg(a, 0, NULL);
    if (!strcmp(name, "defined")) return v->t != JJ_UNDEF;
    if (!strcmp(name, "undefined")) return v->t == JJ_UNDEF;
    if (!strcmp(name, "none")) return v->t == JJ_NONE;
    if (!strcmp(name, "boolean")) return v->t == JJ_BOOL;
    if (!strcmp(name, "false")) return v->t == JJ_BOOL && !v->u.b;
    if (!strcmp(name, "true")) return v->t == JJ_BOOL && v->u.b;
    if (!strcmp(name, "integer")) return v->t == JJ_INT;
    if (!strcmp(name, "float")) return v->t == JJ_FLOAT;
    if (!strcmp(name, "number")) return jj_is_number(v);
    if (!strcmp(name, "string")) return v->t == JJ_STR;
    if (!strcmp(name, "mapping")) return v->t == JJ_DICT;
    if (!strcmp(name, "iterable"))
        return v->t == JJ_UNDEF || v->t == JJ_STR || v->t == JJ_LIST || v->t == JJ_DICT ||
               v->t == JJ_LOOP;
    if (!strcmp(name, "sequence"))
        return v->t == JJ_UNDEF || v->t == JJ_STR || (v->t == JJ_LIST && !v->u.list.is_gen) ||
               v->t == JJ_DICT;
    if (!strcmp(name, "callable")) return v->t == JJ_FUNC || v->t == JJ_MACRO;
    if (!strcmp(name, "filter") || !strcmp(name, "test")) {
        if (!v || v->t != JJ_STR) return 0;
        return !strcmp(name, "test") ? jj_is_test_name(v->u.str.s) : jj_is_filter_name(v->u.str.s);
    }
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        if (v->t != JJ_STR) return 0;
        int any = 0;
        for (size_t i = 0; i < v->u.str.n; i++) {
            char ch = v->u.str.s[i];
            if ((ch >= 'A' && ch <= 'Z' && name[0] == 'l') ||
                (ch >= 'a' && ch <= 'z' && name[0] == 'u'))
                return 0;
            any |= (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
        }
        return any;
    }
    if (!strcmp(name, "escaped")) return v->t == JJ_STR && v->u.str.markup; /* __html__ */
    if (!strcmp(name, "odd") || !strcmp(name, "even")) {
        if (v->t != JJ_INT && v->t != JJ_BOOL)
            jj_fail(c, line, col, "test '%s' needs an integer", name);
        int64_t i = v->t == JJ_INT ? v->u.i : v->u.b;
        return (i % 2 != 0) == (name[0] == 'o');
    }
    if (!x) jj_fail(c, line, col, "test '%s' needs an argument", name);
    if (!strcmp(name, "sameas"))
        return v == x ||
               (v->t == x->t && (v->t == JJ_NONE || (v->t == JJ_BOOL && v->u.b == x->u.b)));
    if (!strcmp(name, "eq") || !strcmp(name, "equalto") || !strcmp(name, "=="))
        return jj_equal(v, x);
    if (!strcmp(name, "ne") || !strcmp(name, "!=")) return !jj_equal(v, x);
    if (!strcmp(name, "lt") || !strcmp(name, "<") || !strcmp(name, "lessthan"))
        return jj_compare(c, v, x, line, col) < 0;
    if (!strcmp(name, "le") || !strcmp(name, "<=")) return jj_compare(c, v, x, line, col) <= 0;
    if (!strcmp(name, "gt") || !strcmp(name, ">") || !strcmp(name, "greaterthan"))
        return jj_compare(c, v, x, line, col) > 0;
    if (!strcmp(name, "ge") || !strcmp(name, ">=")) return jj_compare(c, v, x, line, col) >= 0;
    if (!strcmp(name, "divisibleby")) {
        int64_t d = int_arg(c, x, 1, "divisibleby", line, col);
        if (d == 0) jj_fail(c, line, col, "divisibleby(0)");
        return int_arg(c, v, 0, "divisibleby's operand", line, col) % d == 0;
    }
    if (!strcmp(name, "in")) {
        if (x->t == JJ_STR)
            return v->t == JJ_STR &&
                   (v->u.str.n == 0 || (v->u.str.n <= x->u.str.n &&
                                        memmem(x->u.str.s, x->u.str.n, v->u.str.s, v->u.str.n)));
        if (x->t == JJ_DICT) return jj_dict_get_key(x, v) != NULL;
        jj_value *items = jj_iterate(c, x, line, col);
        for (size_t i = 0; i < items->u.list.n; i++)
            if (jj_equal(items->u.list.items[i], v)) return 1;
        return 0;
    }
    jj_fail(c, line, col, "no test named '%s'", name);
}

/* ------------------------------------------------------------------ filters */

static jj_value *gen(jj_ctx *c) {
    jj_value *l = jj_list(c);
    l->u.list.is_gen = 1;
    return l;
}

static jj_value *do_select(jj_ctx *c, jj_value *v, jj_args *a, int attr, int keep, int line,
                           int col) {
    if (!jj_truthy(v)) return gen(c); /* jinja2: `if value:` guards the loop (none, undefined) */
    jj_value *items = jj_iterate(c, v, line, col), *r = gen(c);
    int first_test = attr ? 1 : 0;
    jj_value *tname = arg(a, first_test, NULL);
    jj_args rest = {a->pos + first_test + 1,
                    a->npos > first_test + 1 ? a->npos - first_test - 1 : 0, NULL, NULL, 0};
    for (size_t i = 0; i < items->u.list.n; i++) {
        jj_value *it = items->u.list.items[i];
        jj_value *x =
            attr ? attr_path(c, it, arg(a, 0, NULL) ? arg(a, 0, NULL) : c->none, NULL, line, col)
                 : it;
        int ok;
        if (!tname) {
            ok = jj_truthy(x);
        } else {
            size_t n;
            const char *tn = str_arg(c, tname, "the test name", &n, line, col);
            ok = jj_test(c, tn, x, &rest, line, col);
        }
        if (ok == keep) jj_list_push(c, r, it);
    }
    return r;
}

static jj_value *do_indent(jj_ctx *c, jj_value *s, jj_args *a, int line, int col) {
    jj_value *w = arg(a, 0, "width");
    jj_buf ind = {0};
    if (w && w->t == JJ_STR)
        jj_buf_put(c, &ind, w->u.str.s, w->u.str.n);
    else
        for (int64_t i = 0, k = int_arg(c, w, 4, "indent: width", line, col); i < k && i < 4096;
             i++)
            jj_buf_put(c, &ind, " ", 1);
    int first = arg(a, 1, "first") ? jj_truthy(arg(a, 1, "first")) : 0;
    int blank = arg(a, 2, "blank") ? jj_truthy(arg(a, 2, "blank")) : 0;
    /* s + "\n", split into lines (Python splitlines on \n, \r\n, \r) */
    jj_value *lines = jj_list(c);
    const char *p = s->u.str.s;
    size_t n = s->u.str.n, st = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n) {
            jj_list_push(c, lines, jj_str_ref(c, p + st, n - st)); /* before the appended "\n" */
            break;
        }
        if (p[i] == '\n' || p[i] == '\r') {
            jj_list_push(c, lines, jj_str_ref(c, p + st, i - st));
            if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n') i++;
            st = i + 1;
        }
    }
    jj_buf b = {0};
    if (first) jj_buf_put(c, &b, ind.p, ind.n);
    for (size_t i = 0; i < lines->u.list.n; i++) {
        jj_value *l = lines->u.list.items[i];
        if (i) {
            jj_buf_put(c, &b, "\n", 1);
            if (blank || l->u.str.n) jj_buf_put(c, &b, ind.p, ind.n);
        }
        jj_buf_put(c, &b, l->u.str.s, l->u.str.n);
    }
    return jj_str_ref(c, b.p ? b.p : "", b.n);
}

/* sort keys: the attribute (if any), lowercased strings unless case-sensitive */
static jj_value *sort_key(jj_ctx *c, jj_value *v, jj_value *attr, int cs, int line, int col) {
    if (attr) v = attr_path(c, v, attr, NULL, line, col);
    if (!cs && v->t == JJ_STR) v = str_case(c, v, 0);
    return v;
}

static void reverse_pairs(jj_value **x, jj_value **y, size_t n) {
    for (size_t i = 0, j = n; i + 1 < j--; i++) {
        jj_value *t = x[i];
        x[i] = x[j];
        x[j] = t;
        if (y) {
            t = y[i];
            y[i] = y[j];
            y[j] = t;
        }
    }
}

static jj_value *tuple2(jj_ctx *c, jj_value *a, jj_value *b) {
    jj_value *t = jj_list(c);
    t->u.list.is_tuple = 1;
    jj_list_push(c, t, a);
    jj_list_push(c, t, b);
    return t;
}

/* |safe: markupsafe.Markup(str(value)) */
static jj_value *f_safe(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)a, (void)line, (void)col;
    jj_value *s = sstr(c, v);
    if (s->u.str.markup) return s;
    jj_value *m = jj_str_ref(c, s->u.str.s, s->u.str.n);
    m->u.str.markup = 1;
    return m;
}

/* |forceescape: markupsafe.escape(str(value)), a Markup escaped even when it was one */
static jj_value *f_forceescape(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line,
                               int col) {
    (void)name, (void)a, (void)line, (void)col;
    jj_value *s = sstr(c, v);
    return jj_markup_escape(c, jj_str_ref(c, s->u.str.s, s->u.str.n)); /* as a plain str */
}

static jj_value *f_string(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)a, (void)line, (void)col;
    return sstr(c, v);
}

static jj_value *f_trim(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)line, (void)col;
    return str_strip(c, sstr(c, v), arg(a, 0, "chars"), 1, 1);
}

static jj_value *f_upper(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)a, (void)line, (void)col;
    return str_case(c, sstr(c, v), 1);
}

static jj_value *f_lower(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)a, (void)line, (void)col;
    return str_case(c, sstr(c, v), 0);
}

static jj_value *f_capitalize(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line,
                              int col) {
    (void)name, (void)a, (void)line, (void)col;
    return str_case(c, sstr(c, v), 3);
}

static jj_value *f_title(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)a, (void)line, (void)col;
    return str_case(c, sstr(c, v), 4);
}

static jj_value *f_length(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)a;
    switch (v->t) {
    case JJ_UNDEF: return jj_int(c, 0);
    case JJ_STR: return jj_int(c, (int64_t)jj_utf8_len(v->u.str.s, v->u.str.n));
    case JJ_LIST:
        if (!v->u.list.is_gen) return jj_int(c, (int64_t)v->u.list.n);
        break;
    case JJ_DICT:
    case JJ_NS: return jj_int(c, (int64_t)v->u.dict.n);
    default: break;
    }
    jj_fail(c, line, col, "object of type '%s' has no len()", jj_type_name(v));
}

static jj_value *f_default(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line,
                           int col) {
    (void)name, (void)line, (void)col;
    jj_value *def = arg(a, 0, "default_value"), *boolean = arg(a, 1, "boolean");
    if (v->t == JJ_UNDEF || (boolean && jj_truthy(boolean) && !jj_truthy(v)))
        return def ? def : jj_str_ref(c, "", 0);
    return v;
}

static jj_value *f_tojson(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name;
    static const char *const kw[] = {"ensure_ascii", "indent", "separators", "sort_keys", NULL};
    check_args(c, a, "tojson", 4, kw, line, col);
    jj_value *ind = arg(a, 1, "indent"), *sep = arg(a, 2, "separators"),
             *sk = arg(a, 3, "sort_keys");
    jj_value *ea = arg(a, 0, "ensure_ascii");
    int indent = -1;
    if (ind && ind->t != JJ_NONE) indent = (int)int_arg(c, ind, -1, "tojson: indent", line, col);
    if (indent > 64) indent = 64;
    const char *isep = NULL, *ksep = NULL;
    if (sep && sep->t == JJ_LIST && sep->u.list.n == 2 && sep->u.list.items[0]->t == JJ_STR &&
        sep->u.list.items[1]->t == JJ_STR) {
        isep = sep->u.list.items[0]->u.str.s;
        ksep = sep->u.list.items[1]->u.str.s;
    }
    jj_buf b = {0};
    c->json_ascii = ea && jj_truthy(ea);
    jj_tojson(c, &b, v, indent, sk ? jj_truthy(sk) : 0, isep, ksep, line, col);
    c->json_ascii = 0;
    return jj_str_ref(c, b.p ? b.p : "", b.n);
}

static jj_value *f_items(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name;
    jj_value *r = gen(c);
    if (v->t == JJ_UNDEF) return r;
    if (v->t != JJ_DICT) jj_fail(c, line, col, "Can only get item pairs from a mapping.");
    for (size_t i = 0; i < v->u.dict.n; i++) {
        jj_value *t = jj_list(c);
        t->u.list.is_tuple = 1;
        jj_list_push(c, t, jj_kv_key(c, &v->u.dict.kv[i]));
        jj_list_push(c, t, v->u.dict.kv[i].val);
        jj_list_push(c, r, t);
    }
    return r;
}

static jj_value *f_list(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)a;
    jj_value *items = jj_iterate(c, v, line, col), *r = jj_list(c);
    for (size_t i = 0; i < items->u.list.n; i++)
        jj_list_push(c, r, items->u.list.items[i]);
    return r;
}

static jj_value *f_first(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)a;
    jj_value *items = jj_iterate(c, v, line, col);
    return items->u.list.n ? items->u.list.items[0]
                           : jj_undef(c, "'first' of an empty sequence is undefined");
}

static jj_value *f_last(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)a;
    if (v->t == JJ_LIST && v->u.list.is_gen)
        jj_fail(c, line, col, "'generator' object is not reversible");
    jj_value *items = jj_iterate(c, v, line, col);
    return items->u.list.n ? items->u.list.items[items->u.list.n - 1]
                           : jj_undef(c, "'last' of an empty sequence is undefined");
}

static jj_value *f_reverse(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line,
                           int col) {
    (void)name, (void)a;
    if (v->t == JJ_STR) {
        jj_value *items = jj_iterate(c, v, line, col);
        jj_buf b = {0};
        for (size_t i = items->u.list.n; i-- > 0;)
            jj_buf_put(c, &b, items->u.list.items[i]->u.str.s, items->u.list.items[i]->u.str.n);
        return jj_str_ref(c, b.p ? b.p : "", b.n);
    }
    jj_value *items = jj_iterate(c, v, line, col), *r = gen(c);
    for (size_t i = items->u.list.n; i-- > 0;)
        jj_list_push(c, r, items->u.list.items[i]);
    return r;
}

static jj_value *f_join(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name;
    jj_value *items = jj_iterate(c, v, line, col), *sep = arg(a, 0, "d"),
             *attr = arg(a, 1, "attribute");
    jj_buf b = {0};
    for (size_t i = 0; i < items->u.list.n; i++) {
        if (i && sep) jj_to_str(c, &b, sep);
        jj_value *it = items->u.list.items[i];
        if (attr) it = attr_path(c, it, attr, NULL, line, col);
        jj_to_str(c, &b, it);
    }
    return jj_str_ref(c, b.p ? b.p : "", b.n);
}

static jj_value *f_replace(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line,
                           int col) {
    (void)name;
    jj_value *cnt = arg(a, 2, "count");
    return str_replace(c, sstr(c, v), arg(a, 0, "old"), arg(a, 1, "new"),
                       int_arg(c, cnt, -1, "replace: count", line, col), line, col);
}

static jj_value *f_indent(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name;
    return do_indent(c, sstr(c, v), a, line, col);
}

static jj_value *f_select(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name;
    return do_select(c, v, a, 0, 1, line, col);
}

static jj_value *f_reject(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name;
    return do_select(c, v, a, 0, 0, line, col);
}

static jj_value *f_selectattr(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line,
                              int col) {
    (void)name;
    return do_select(c, v, a, 1, 1, line, col);
}

static jj_value *f_rejectattr(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line,
                              int col) {
    (void)name;
    return do_select(c, v, a, 1, 0, line, col);
}

static jj_value *f_map(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    if (!jj_truthy(v)) return gen(c); /* as select: `if value:` in jinja2 */
    jj_value *items = jj_iterate(c, v, line, col), *r = gen(c);
    jj_value *attr = arg(a, -1, "attribute");
    for (size_t i = 0; i < items->u.list.n; i++) {
        jj_value *it = items->u.list.items[i];
        if (attr) {
            jj_list_push(c, r, attr_path(c, it, attr, arg(a, -1, "default"), line, col));
        } else {
            size_t n;
            const char *fname = str_arg(c, arg(a, 0, NULL), "map: the filter name", &n, line, col);
            jj_args rest = {a->pos + 1, a->npos - 1, a->kwn, a->kwv, a->nkw};
            jj_list_push(c, r, jj_filter(c, fname, it, &rest, line, col));
        }
    }
    return r;
}

static jj_value *f_unique(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name;
    jj_value *items = jj_iterate(c, v, line, col), *r = gen(c), *cs = arg(a, 0, "case_sensitive");
    jj_value *attr = arg(a, 1, "attribute");
    jj_value *seen = jj_list(c);
    for (size_t i = 0; i < items->u.list.n; i++) {
        jj_value *key = items->u.list.items[i];
        if (attr) key = attr_path(c, key, attr, NULL, line, col);
        if (key->t == JJ_STR && !(cs && jj_truthy(cs))) key = str_case(c, key, 0);
        int dup = 0;
        for (size_t j = 0; j < seen->u.list.n && !dup; j++)
            dup = jj_equal(seen->u.list.items[j], key);
        if (!dup) {
            jj_list_push(c, seen, key);
            jj_list_push(c, r, items->u.list.items[i]);
        }
    }
    return r;
}

static jj_value *f_sort(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name;
    jj_value *items = jj_iterate(c, v, line, col), *r = jj_list(c);
    for (size_t i = 0; i < items->u.list.n; i++)
        jj_list_push(c, r, items->u.list.items[i]);
    jj_value *rev = arg(a, 0, "reverse"), *cs = arg(a, 1, "case_sensitive"),
             *attr = arg(a, 2, "attribute");
    size_t n = r->u.list.n;
    jj_value **keys = jj_alloc(c, (n + 1) * sizeof *keys), **ti = jj_alloc(c, (n + 1) * sizeof *ti);
    jj_value **tk = jj_alloc(c, (n + 1) * sizeof *tk);
    for (size_t i = 0; i < n; i++)
        keys[i] = sort_key(c, r->u.list.items[i], attr, cs && jj_truthy(cs), line, col);
    /* reverse=True is a stable descending sort: reverse, sort ascending, reverse back */
    int desc = rev && jj_truthy(rev);
    if (desc) reverse_pairs(r->u.list.items, keys, n);
    jj_sort(c, r->u.list.items, keys, n, line, col);
    if (desc) reverse_pairs(r->u.list.items, keys, n);
    return r;
}

/* jinja2: str(value) % (kwargs or args) */
static jj_value *f_format(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name;
    if (a->npos && a->nkw)
        jj_fail(c, line, col, "can't handle positional and keyword arguments at the same time");
    jj_value *args;
    if (a->nkw) {
        args = jj_dict(c);
        for (int k = 0; k < a->nkw; k++)
            jj_dict_set(c, args, a->kwn[k], strlen(a->kwn[k]), a->kwv[k]);
    } else {
        args = jj_list(c);
        args->u.list.is_tuple = 1;
        for (int k = 0; k < a->npos; k++)
            jj_list_push(c, args, a->pos[k]);
    }
    return jj_percent_format(c, sstr(c, v), args, line, col);
}

/* (key, value) pairs sorted by key or value */
static jj_value *f_dictsort(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line,
                            int col) {
    (void)name;
    if (v->t != JJ_DICT)
        jj_fail(c, line, col, "dictsort: needs a mapping, not '%s'", jj_type_name(v));
    jj_value *cs = arg(a, 0, "case_sensitive"), *by = arg(a, 1, "by"), *rev = arg(a, 2, "reverse");
    int by_value = 0;
    if (by) {
        if (by->t == JJ_STR && by->u.str.n == 5 && !memcmp(by->u.str.s, "value", 5))
            by_value = 1;
        else if (!(by->t == JJ_STR && by->u.str.n == 3 && !memcmp(by->u.str.s, "key", 3)))
            jj_fail(c, line, col, "You can only sort by either \"key\" or \"value\"");
    }
    size_t n = v->u.dict.n;
    jj_value *r = jj_list(c), **keys = jj_alloc(c, (n + 1) * sizeof *keys);
    for (size_t i = 0; i < n; i++) {
        jj_value *k = jj_kv_key(c, &v->u.dict.kv[i]);
        jj_list_push(c, r, tuple2(c, k, v->u.dict.kv[i].val));
        keys[i] =
            sort_key(c, by_value ? v->u.dict.kv[i].val : k, NULL, cs && jj_truthy(cs), line, col);
    }
    int desc = rev && jj_truthy(rev);
    if (desc) reverse_pairs(r->u.list.items, keys, n);
    jj_sort(c, r->u.list.items, keys, n, line, col);
    if (desc) reverse_pairs(r->u.list.items, keys, n);
    return r;
}

static jj_value *f_abs(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)a;
    if (v->t == JJ_INT) return jj_int(c, v->u.i < 0 ? -v->u.i : v->u.i);
    if (v->t == JJ_FLOAT) return jj_float(c, fabs(v->u.f));
    if (v->t == JJ_BOOL) return jj_int(c, v->u.b);
    jj_fail(c, line, col, "bad operand type for abs(): '%s'", jj_type_name(v));
}

static jj_value *f_int(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)line, (void)col;
    jj_value *def = arg(a, 0, "default");
    if (v->t == JJ_INT) return v;
    if (v->t == JJ_BOOL) return jj_int(c, v->u.b);
    if (v->t == JJ_FLOAT && isfinite(v->u.f) && fabs(v->u.f) < 9e18)
        return jj_int(c, (int64_t)v->u.f);
    if (v->t == JJ_STR) {
        char *s = jj_strdup(c, v->u.str.s, v->u.str.n), *end;
        long long i = strtoll(s, &end, 10);
        while (*end == ' ' || *end == '\n' || *end == '\t')
            end++;
        if (end != s && !*end) return jj_int(c, i);
        double d = strtod(s, &end);
        if (end != s && !*end && isfinite(d) && fabs(d) < 9e18) return jj_int(c, (int64_t)d);
    }
    return def ? def : jj_int(c, 0);
}

static jj_value *f_float(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)line, (void)col;
    if (jj_is_number(v)) return jj_float(c, jj_num(v));
    if (v->t == JJ_STR) {
        char *s = jj_strdup(c, v->u.str.s, v->u.str.n), *end;
        double d = strtod(s, &end);
        if (end != s && !*end) return jj_float(c, d);
    }
    jj_value *def = arg(a, 0, "default");
    return def ? def : jj_float(c, 0);
}

static jj_value *f_round(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name;
    int64_t prec = int_arg(c, arg(a, 0, "precision"), 0, "round: precision", line, col);
    jj_value *m = arg(a, 1, "method");
    double x = jj_num(v), s = pow(10, (double)prec);
    if (!jj_is_number(v)) jj_fail(c, line, col, "round: needs a number");
    const char *meth = m && m->t == JJ_STR ? m->u.str.s : "common";
    double r;
    if (!strcmp(meth, "floor"))
        r = floor(x * s) / s;
    else if (!strcmp(meth, "ceil"))
        r = ceil(x * s) / s;
    else {              /* Python's round(): the exact value rounded half to even, as printf does */
        char tmp[1024]; /* 309 integer digits + 300 decimals at most */
        snprintf(tmp, sizeof tmp, "%.*f", (int)(prec < 0 ? 0 : prec > 300 ? 300 : prec), x);
        r = strtod(tmp, NULL);
    }
    return jj_float(c, r);
}

static jj_value *f_sum(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name;
    jj_value *items = jj_iterate(c, v, line, col), *attr = arg(a, 0, "attribute"),
             *st = arg(a, 1, "start");
    int is_int = 1;
    int64_t si = st && st->t == JJ_INT ? st->u.i : 0;
    double sf = st ? jj_num(st) : 0;
    if (st && st->t == JJ_FLOAT) is_int = 0;
    for (size_t i = 0; i < items->u.list.n; i++) {
        jj_value *x = items->u.list.items[i];
        if (attr) x = attr_path(c, x, attr, NULL, line, col);
        if (!jj_is_number(x))
            jj_fail(c, line, col, "sum: unsupported operand type '%s'", jj_type_name(x));
        if (x->t == JJ_FLOAT) is_int = 0;
        si += x->t == JJ_INT ? x->u.i : x->t == JJ_BOOL ? x->u.b : 0;
        sf += jj_num(x);
    }
    return is_int ? jj_int(c, si) : jj_float(c, sf);
}

static jj_value *f_min(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    jj_value *items = jj_iterate(c, v, line, col), *best = NULL;
    jj_value *cs = arg(a, 0, "case_sensitive"), *attr = arg(a, 1, "attribute");
    for (size_t i = 0; i < items->u.list.n; i++) {
        jj_value *x = items->u.list.items[i], *kx = x;
        if (attr) kx = attr_path(c, x, attr, NULL, line, col);
        if (kx->t == JJ_STR && !(cs && jj_truthy(cs))) kx = str_case(c, kx, 0);
        if (!best) {
            best = x;
            continue;
        }
        jj_value *kb = attr ? attr_path(c, best, attr, NULL, line, col) : best;
        if (kb->t == JJ_STR && !(cs && jj_truthy(cs))) kb = str_case(c, kb, 0);
        int r = jj_compare(c, kx, kb, line, col);
        if (name[1] == 'i' ? r < 0 : r > 0) best = x;
    }
    return best ? best : jj_undef(c, "min/max of an empty sequence is undefined");
}

/* |escape, |e: markupsafe.escape(value): a Markup as it is, anything else as str, escaped */
static jj_value *f_escape(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    (void)name, (void)a, (void)line, (void)col;
    return jj_markup_escape(c, sstr(c, v));
}

jj_value *jj_markup_escape(jj_ctx *c, jj_value *s) {
    if (s->u.str.markup) return s;
    jj_buf b = {0};
    for (size_t i = 0; i < s->u.str.n; i++) {
        char ch = s->u.str.s[i];
        const char *r = ch == '&'    ? "&amp;"
                        : ch == '<'  ? "&lt;"
                        : ch == '>'  ? "&gt;"
                        : ch == '"'  ? "&#34;"
                        : ch == '\'' ? "&#39;"
                                     : NULL;
        if (r)
            jj_buf_puts(c, &b, r);
        else
            jj_buf_put(c, &b, &ch, 1);
    }
    jj_value *m = jj_str_ref(c, b.p ? b.p : "", b.n);
    m->u.str.markup = 1;
    return m;
}

static jj_value *f_attr(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    size_t n;
    const char *an = str_arg(c, arg(a, 0, "name"), "attr: the name", &n, line, col);
    if (v->t == JJ_NS) {
        jj_value *r = jj_dict_get(v, an, n);
        if (r) return r;
    }
    jj_value *m = jj_method_get(c, v, jj_strdup(c, an, n));
    return m ? m : jj_undef(c, "an attribute is undefined");
}

static jj_value *f_wordcount(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line,
                             int col) {
    (void)name, (void)line, (void)col;
    jj_value *s = sstr(c, v);
    int64_t k = 0, in = 0;
    for (size_t i = 0; i < s->u.str.n; i++) {
        unsigned char ch = (unsigned char)s->u.str.s[i];
        int w = ch >= 0x80 || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                (ch >= 'A' && ch <= 'Z') || ch == '_';
        if (w && !in) k++;
        in = w;
    }
    return jj_int(c, k);
}

/* jinja2's built-in filters by name (sorted, for bsearch), each f_NAME(c, name, value, args,
 * line, col) with one signature (hence the (void) casts); NULL: jinja2 has it, this
 * interpreter does not (a clear error when run) */
typedef jj_value *(*jj_filter_fn)(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line,
                                  int col);
static const struct filter_row {
    const char *name;
    jj_filter_fn fn;
} filters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", NULL},
    {"capitalize", f_capitalize},
    {"center", NULL},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"filesizeformat", NULL},
    {"first", f_first},
    {"float", f_float},
    {"forceescape", f_forceescape},
    {"format", f_format},
    {"groupby", NULL},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_min},
    {"min", f_min},
    {"pprint", NULL},
    {"random", NULL},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"slice", NULL},
    {"sort", f_sort},
    {"string", f_string},
    {"striptags", NULL},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", NULL},
    {"unique", f_unique},
    {"upper", f_upper},
    {"urlencode", NULL},
    {"urlize", NULL},
    {"wordcount", f_wordcount},
    {"wordwrap", NULL},
    {"xmlattr", NULL},
};

static int filter_cmp(const void *key, const void *row) {
    return strcmp((const char *)key, ((const struct filter_row *)row)->name);
}

static const struct filter_row *filter_find(const char *name) {
    return bsearch(name, filters, sizeof filters / sizeof filters[0], sizeof filters[0],
                   filter_cmp);
}

int jj_is_filter_name(const char *name) { return filter_find(name) != NULL; }

jj_value *jj_filter(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col) {
    const struct filter_row *f = filter_find(name);
    if (!f) jj_fail(c, line, col, "no filter named '%s'", name);
    if (!f->fn) jj_fail(c, line, col, "filter '%s' is not supported by this interpreter", name);
    return f->fn(c, name, v, a, line, col);
}

/* ------------------------------------------------------------------ printf-style formatting */

static void pad_text(jj_ctx *c, jj_buf *b, const char *s, size_t n, int64_t width, int left) {
    int64_t len = (int64_t)jj_utf8_len(s, n);
    if (!left)
        for (int64_t i = len; i < width; i++)
            jj_buf_put(c, b, " ", 1);
    jj_buf_put(c, b, s, n);
    if (left)
        for (int64_t i = len; i < width; i++)
            jj_buf_put(c, b, " ", 1);
}

/* Python's str % args ('%s', '%r', '%d', '%x', '%f', '%(name)s', flags, width, precision). */
jj_value *jj_percent_format(jj_ctx *c, jj_value *fmt, jj_value *args, int line, int col) {
    jj_value **pos = &args;
    size_t npos = 1, next = 0;
    int is_map = args->t == JJ_DICT;
    if (args->t == JJ_LIST && args->u.list.is_tuple) {
        pos = args->u.list.items;
        npos = args->u.list.n;
    }
    const char *p = fmt->u.str.s;
    size_t n = fmt->u.str.n, i = 0;
    int used_map = 0;
    jj_buf b = {0};
    while (i < n) {
        if (p[i] != '%') {
            size_t st = i;
            while (i < n && p[i] != '%')
                i++;
            jj_buf_put(c, &b, p + st, i - st);
            continue;
        }
        if (++i >= n) jj_fail(c, line, col, "incomplete format");
        jj_value *arg = NULL;
        if (p[i] == '(') { /* %(name)s */
            size_t st = ++i;
            while (i < n && p[i] != ')')
                i++;
            if (i >= n) jj_fail(c, line, col, "incomplete format key");
            if (!is_map) jj_fail(c, line, col, "format requires a mapping");
            arg = jj_dict_get(args, p + st, i - st);
            if (!arg) jj_fail(c, line, col, "KeyError: '%.*s'", (int)(i - st), p + st);
            used_map = 1;
            i++;
        }
        char flags[8];
        int nf = 0, left = 0;
        while (i < n && strchr("-+ #0", p[i]) && nf < 7) {
            left |= p[i] == '-';
            flags[nf++] = p[i++];
        }
        flags[nf] = 0;
        int64_t width = -1, prec = -1;
        if (i < n && p[i] == '*') {
            if (next >= npos) jj_fail(c, line, col, "not enough arguments for format string");
            width = int_arg(c, pos[next++], 0, "* width", line, col);
            i++;
        } else {
            while (i < n && p[i] >= '0' && p[i] <= '9' && width < 100000)
                width = (width < 0 ? 0 : width * 10) + (p[i++] - '0');
        }
        if (i < n && p[i] == '.') {
            i++;
            prec = 0;
            if (i < n && p[i] == '*') {
                if (next >= npos) jj_fail(c, line, col, "not enough arguments for format string");
                prec = int_arg(c, pos[next++], 0, "* precision", line, col);
                i++;
            } else {
                while (i < n && p[i] >= '0' && p[i] <= '9' && prec < 100000)
                    prec = prec * 10 + (p[i++] - '0');
            }
        }
        while (i < n && (p[i] == 'h' || p[i] == 'l' || p[i] == 'L'))
            i++;
        if (i >= n) jj_fail(c, line, col, "incomplete format");
        char type = p[i++];
        if (type == '%') {
            jj_buf_put(c, &b, "%", 1);
            continue;
        }
        if (!arg) {
            if (is_map && !used_map && npos == 1)
                arg = args; /* '%s' % {...} prints the dict */
            else if (next >= npos)
                jj_fail(c, line, col, "not enough arguments for format string");
            else
                arg = pos[next++];
        }
        if (width > 100000 || prec > 100000)
            jj_fail(c, line, col, "format width or precision too large");
        if (type == 's' || type == 'r' || type == 'a') {
            jj_buf t = {0};
            if (type == 's')
                jj_to_str(c, &t, arg);
            else
                jj_repr(c, &t, arg);
            size_t tn = t.n;
            if (prec >= 0) tn = jj_utf8_offset(t.p ? t.p : "", t.n, (size_t)prec);
            pad_text(c, &b, t.p ? t.p : "", tn, width, left);
        } else if (type == 'c') {
            jj_buf t = {0};
            if (arg->t == JJ_STR && jj_utf8_len(arg->u.str.s, arg->u.str.n) == 1)
                jj_buf_put(c, &t, arg->u.str.s, arg->u.str.n);
            else if (arg->t == JJ_INT && arg->u.i >= 0 && arg->u.i <= 0x10FFFF) {
                char u[4];
                jj_buf_put(c, &t, u, vkf_utf8_encode((uint32_t)arg->u.i, u));
            } else
                jj_fail(c, line, col, "%%c requires an int or a unicode character");
            pad_text(c, &b, t.p, t.n, width, left);
        } else if (strchr("diuxXo", type)) {
            int64_t v;
            if (arg->t == JJ_INT || arg->t == JJ_BOOL)
                v = arg->t == JJ_INT ? arg->u.i : arg->u.b;
            else if (arg->t == JJ_FLOAT && strchr("diu", type) && isfinite(arg->u.f) &&
                     fabs(arg->u.f) < 9e18)
                v = (int64_t)arg->u.f;
            else
                jj_fail(c, line, col, "%%%c format: %s is required, not %s", type,
                        strchr("diu", type) ? "a real number" : "an integer", jj_type_name(arg));
            char spec[32], out[256];
            const char *conv = type == 'x'   ? "llx"
                               : type == 'X' ? "llX"
                               : type == 'o' ? "llo"
                                             : "lld";
            /* C's %x of a negative prints its two's complement: Python prints -0x.. */
            int neg = v < 0 && strchr("xXo", type);
            unsigned long long mag =
                neg ? (unsigned long long)(-(v + 1)) + 1 : (unsigned long long)v;
            if (neg) { /* format the magnitude, then put the sign in front */
                snprintf(spec, sizeof spec, "%%%s%s", strchr(flags, '#') ? "#" : "", conv);
                int k = snprintf(out, sizeof out, spec, mag);
                if (type == 'o' && strchr(flags, '#')) { /* Python writes 0o, C writes 0 */
                    memmove(out + 2, out + 1, (size_t)k);
                    out[1] = 'o';
                }
                jj_buf t = {0};
                jj_buf_put(c, &t, "-", 1);
                jj_buf_puts(c, &t, out);
                pad_text(c, &b, t.p, t.n, width, left);
            } else {
                snprintf(spec, sizeof spec, "%%%s%s%s%s", flags, width >= 0 ? "*" : "",
                         prec >= 0 ? ".*" : "", conv);
                int k;
                if (width >= 0 && prec >= 0)
                    k = snprintf(out, sizeof out, spec, (int)width, (int)prec, (long long)v);
                else if (width >= 0)
                    k = snprintf(out, sizeof out, spec, (int)width, (long long)v);
                else if (prec >= 0)
                    k = snprintf(out, sizeof out, spec, (int)prec, (long long)v);
                else
                    k = snprintf(out, sizeof out, spec, (long long)v);
                if (k < 0 || (size_t)k >= sizeof out)
                    jj_fail(c, line, col, "format result too long");
                if (type == 'o' && strchr(flags, '#')) {
                    char *z = strchr(out, '0'); /* C's alternate octal prefix "0" becomes "0o" */
                    if (z && v != 0) {
                        memmove(z + 2, z + 1, strlen(z + 1) + 1);
                        z[1] = 'o';
                    } else if (v == 0) {
                        jj_buf_puts(c, &b, "0o");
                    }
                }
                jj_buf_puts(c, &b, out);
            }
        } else if (strchr("eEfFgG", type)) {
            if (!jj_is_number(arg))
                jj_fail(c, line, col, "must be real number, not %s", jj_type_name(arg));
            char spec[32], out[512];
            snprintf(spec, sizeof spec, "%%%s*.*%c", flags, type);
            int k = snprintf(out, sizeof out, spec, (int)(width < 0 ? 0 : width),
                             (int)(prec < 0     ? 6
                                   : prec > 300 ? 300
                                                : prec),
                             jj_num(arg));
            if (k < 0 || (size_t)k >= sizeof out) jj_fail(c, line, col, "format result too long");
            jj_buf_puts(c, &b, out);
        } else {
            jj_fail(c, line, col, "unsupported format character '%c'", type);
        }
    }
    if (!is_map && next < npos)
        jj_fail(c, line, col, "not all arguments converted during string formatting");
    return jj_str_ref(c, b.p ? b.p : "", b.n);
}

/* ------------------------------------------------------------------ methods and globals */

static const char *const str_methods[] = {
    "strip",   "lstrip",  "rstrip",     "split",        "startswith",   "endswith",
    "upper",   "lower",   "title",      "capitalize",   "replace",      "find",
    "count",   "join",    "splitlines", "isdigit",      "isspace",      "isalpha",
    "isalnum", "islower", "isupper",    "removeprefix", "removesuffix", NULL};
static const char *const dict_methods[] = {"items", "keys", "values", "get", NULL};
static const char *const list_methods[] = {"index", "count", NULL};

static const char *find_name(const char *const *names, const char *name) {
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0) return names[i];
    return NULL;
}

jj_value *jj_method_get(jj_ctx *c, jj_value *v, const char *name) {
    const char *m = NULL;
    if (v->t == JJ_STR) m = find_name(str_methods, name);
    if (v->t == JJ_DICT) m = find_name(dict_methods, name);
    if (v->t == JJ_LIST && !v->u.list.is_gen) m = find_name(list_methods, name);
    if (v->t == JJ_LOOP && (!strcmp(name, "cycle") || !strcmp(name, "changed")))
        m = name[1] == 'y' ? "cycle" : "changed";
    if (!m) return NULL;
    jj_value *f = jj_new(c, JJ_FUNC);
    f->u.func.name = m;
    f->u.func.self = v;
    return f;
}

static jj_value *str_method(jj_ctx *c, const char *m, jj_value *s, jj_args *a, int line, int col) {
    jj_value *x = arg(a, 0, NULL);
    if (!strcmp(m, "strip")) return str_strip(c, s, x, 1, 1);
    if (!strcmp(m, "lstrip")) return str_strip(c, s, x, 1, 0);
    if (!strcmp(m, "rstrip")) return str_strip(c, s, x, 0, 1);
    if (!strcmp(m, "split"))
        return str_split(c, s, arg(a, 0, "sep"),
                         int_arg(c, arg(a, 1, "maxsplit"), -1, "split: maxsplit", line, col), line,
                         col);
    if (!strcmp(m, "upper")) return str_case(c, s, 1);
    if (!strcmp(m, "lower")) return str_case(c, s, 0);
    if (!strcmp(m, "title")) return str_case(c, s, 2);
    if (!strcmp(m, "capitalize")) return str_case(c, s, 3);
    if (!strcmp(m, "replace"))
        return str_replace(c, s, x, arg(a, 1, NULL),
                           int_arg(c, arg(a, 2, "count"), -1, "replace: count", line, col), line,
                           col);
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
        int end = m[0] == 'e';
        if (!x) jj_fail(c, line, col, "%s needs an argument", m);
        if (x->t == JJ_LIST && x->u.list.is_tuple) {
            for (size_t i = 0; i < x->u.list.n; i++)
                if (x->u.list.items[i]->t == JJ_STR && str_starts(s, x->u.list.items[i], end))
                    return c->vtrue;
            return c->vfalse;
        }
        if (x->t != JJ_STR)
            jj_fail(c, line, col, "%s first arg must be str or a tuple of str, not %s", m,
                    jj_type_name(x));
        return jj_bool(c, str_starts(s, x, end));
    }
    if (!strcmp(m, "removeprefix") || !strcmp(m, "removesuffix")) {
        int end = m[6] == 's';
        size_t n;
        str_arg(c, x, m, &n, line, col);
        if (!str_starts(s, x, end)) return s;
        return jj_str_ref(c, s->u.str.s + (end ? 0 : n), s->u.str.n - n);
    }
    if (!strcmp(m, "find") || !strcmp(m, "count")) {
        size_t n;
        const char *sub = str_arg(c, x, m, &n, line, col);
        int64_t k = 0;
        for (size_t i = 0; i + n <= s->u.str.n;) {
            if (memcmp(s->u.str.s + i, sub, n) == 0) {
                if (m[0] == 'f') return jj_int(c, (int64_t)jj_utf8_len(s->u.str.s, i));
                k++;
                i += n ? n : 1;
            } else {
                i++;
            }
        }
        if (n == 0 && m[0] == 'c') k = (int64_t)jj_utf8_len(s->u.str.s, s->u.str.n) + 1;
        return jj_int(c, m[0] == 'f' ? -1 : k);
    }
    if (!strcmp(m, "join")) {
        if (!x) jj_fail(c, line, col, "join needs an argument");
        jj_value *items = jj_iterate(c, x, line, col);
        jj_buf b = {0};
        for (size_t i = 0; i < items->u.list.n; i++) {
            if (items->u.list.items[i]->t != JJ_STR)
                jj_fail(c, line, col, "sequence item %zu: expected str instance", i);
            if (i) jj_buf_put(c, &b, s->u.str.s, s->u.str.n);
            jj_buf_put(c, &b, items->u.list.items[i]->u.str.s, items->u.list.items[i]->u.str.n);
        }
        return jj_str_ref(c, b.p ? b.p : "", b.n);
    }
    if (!strcmp(m, "splitlines")) {
        jj_value *r = jj_list(c);
        const char *p = s->u.str.s;
        size_t n = s->u.str.n, st = 0;
        for (size_t i = 0; i < n; i++)
            if (p[i] == '\n' || p[i] == '\r') {
                jj_list_push(c, r, jj_str_ref(c, p + st, i - st));
                if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n') i++;
                st = i + 1;
            }
        if (st < n) jj_list_push(c, r, jj_str_ref(c, p + st, n - st));
        return r;
    }
    /* is*: ASCII classes (non-ASCII letters count as alpha) */
    int all = s->u.str.n > 0, cased = 0, upper = 0, lower = 0;
    size_t len;
    for (size_t i = 0; i < s->u.str.n; i++) {
        unsigned char ch = (unsigned char)s->u.str.s[i];
        int digit = ch >= '0' && ch <= '9',
            alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch >= 0x80;
        upper |= ch >= 'A' && ch <= 'Z';
        lower |= ch >= 'a' && ch <= 'z';
        cased |= upper || lower;
        if (!strcmp(m, "isdigit")) all &= digit;
        if (!strcmp(m, "isalpha")) all &= alpha;
        if (!strcmp(m, "isalnum")) all &= alpha || digit;
        if (!strcmp(m, "isspace")) all &= jj_is_space_at(s->u.str.s, s->u.str.n, i, &len);
    }
    if (!strcmp(m, "islower")) return jj_bool(c, cased && !upper);
    if (!strcmp(m, "isupper")) return jj_bool(c, cased && !lower);
    return jj_bool(c, all);
}

static jj_value *dict_from_kwargs(jj_ctx *c, jj_args *a, int type, int line, int col) {
    jj_value *d = jj_new(c, type);
    for (int i = 0; i < a->npos; i++) {
        jj_value *src = a->pos[i];
        if (src->t != JJ_DICT && src->t != JJ_NS)
            jj_fail(c, line, col, "namespace()/dict() take mappings and keyword arguments");
        for (size_t k = 0; k < src->u.dict.n; k++)
            jj_dict_set_key(c, d, jj_kv_key(c, &src->u.dict.kv[k]), src->u.dict.kv[k].val);
    }
    for (int k = 0; k < a->nkw; k++)
        jj_dict_set(c, d, a->kwn[k], strlen(a->kwn[k]), a->kwv[k]);
    return d;
}

jj_value *jj_call_func(jj_ctx *c, jj_value *f, jj_args *a, int line, int col) {
    const char *m = f->u.func.name;
    jj_value *self = f->u.func.self, *x = arg(a, 0, NULL);
    if (self && self->t == JJ_STR) return str_method(c, m, self, a, line, col);
    if (self && self->t == JJ_DICT) {
        if (!strcmp(m, "get")) {
            jj_value *r = x ? jj_dict_get_key(self, x) : NULL;
            return r ? r : arg(a, 1, NULL) ? arg(a, 1, NULL) : c->none;
        }
        jj_value *r = jj_list(c);
        for (size_t i = 0; i < self->u.dict.n; i++) {
            jj_value *k = jj_kv_key(c, &self->u.dict.kv[i]);
            jj_list_push(c, r,
                         !strcmp(m, "keys")     ? k
                         : !strcmp(m, "values") ? self->u.dict.kv[i].val
                                                : tuple2(c, k, self->u.dict.kv[i].val));
        }
        return r;
    }
    if (self && self->t == JJ_LIST) {
        if (!x) jj_fail(c, line, col, "%s needs an argument", m);
        int64_t k = 0;
        for (size_t i = 0; i < self->u.list.n; i++)
            if (jj_equal(self->u.list.items[i], x)) {
                if (m[0] == 'i') return jj_int(c, (int64_t)i);
                k++;
            }
        if (m[0] == 'i') jj_fail(c, line, col, "list.index(x): x not in list");
        return jj_int(c, k);
    }
    if (self && self->t == JJ_LOOP) {
        if (!strcmp(m, "changed")) { /* true when the arguments differ from the last call's */
            jj_value *state = jj_dict_get(self, "\x01state", 6), *now = jj_list(c);
            for (int i = 0; i < a->npos; i++)
                jj_list_push(c, now, a->pos[i]);
            jj_value *last = state ? jj_dict_get(state, "last", 4) : NULL;
            if (last && jj_equal(last, now)) return c->vfalse;
            if (state) jj_dict_set(c, state, "last", 4, now);
            return c->vtrue;
        }
        if (a->npos == 0) jj_fail(c, line, col, "no items for cycling given");
        jj_value *idx = jj_dict_get(self, "index0", 6);
        return a->pos[idx->u.i % a->npos];
    }
    if (!strcmp(m, "raise_exception")) {
        jj_buf b = {0};
        if (x) jj_to_str(c, &b, x);
        jj_raise(c, b.p ? b.p : "");
    }
    if (!strcmp(m, "namespace")) return dict_from_kwargs(c, a, JJ_NS, line, col);
    if (!strcmp(m, "dict")) return dict_from_kwargs(c, a, JJ_DICT, line, col);
    if (!strcmp(m, "range")) {
        if (a->npos < 1 || a->npos > 3)
            jj_fail(c, line, col, "range expected 1 to 3 arguments, got %d", a->npos);
        int64_t start = 0, stop, st = 1;
        if (a->npos == 1) {
            stop = int_arg(c, a->pos[0], 0, "range", line, col);
        } else {
            start = int_arg(c, a->pos[0], 0, "range", line, col);
            stop = int_arg(c, a->pos[1], 0, "range", line, col);
            if (a->npos == 3) st = int_arg(c, a->pos[2], 1, "range", line, col);
        }
        if (st == 0) jj_fail(c, line, col, "range() arg 3 must not be zero");
        jj_value *r = jj_list(c);
        /* jinja2's sandbox refuses ranges over 100000 items (MAX_RANGE) */
        for (int64_t i = start; st > 0 ? i < stop : i > stop;) {
            if (r->u.list.n >= 100000)
                jj_fail(c, line, col,
                        "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
            jj_list_push(c, r, jj_int(c, i));
            if (__builtin_add_overflow(i, st, &i)) break;
        }
        return r;
    }
    if (!strcmp(m, "strftime_now")) {
        size_t n;
        const char *fmt = str_arg(c, x, "strftime_now: the format", &n, line, col);
        /* the fixed date of the reference renders: Friday 26 July 2024, 00:00:00 */
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        tm.tm_year = 2024 - 1900;
        tm.tm_mon = 6;
        tm.tm_mday = 26;
        tm.tm_wday = 5;
        tm.tm_yday = 207;
        char out[512];
        size_t k = n ? strftime(out, sizeof out, jj_strdup(c, fmt, n), &tm) : 0;
        return jj_str(c, out, k);
    }
    jj_fail(c, line, col, "'%s' is not callable", m);
}
