/* Jinja evaluation: statements and expressions over the syntax tree of jinja_parse.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "template/jinja.h"
#include "template/jinja_int.h"

void jj_arena_free(jj_ctx *c); /* jinja_value.c */

struct jj_eval {
    jj_ctx *c;
    jj_frame *root;
    int signal; /* 1: break, 2: continue */
};

static jj_value *eval(jj_eval *E, jj_frame *f, const jj_node *n);
static void exec_body(jj_eval *E, jj_frame *f, jj_node **body, int n, jj_buf *out);
static void run_loop(jj_eval *E, jj_frame *f, const jj_node *n, jj_value *items, int64_t depth,
                     jj_buf *out);

static const char *const globals[] = {"range",        "namespace", "raise_exception",
                                      "strftime_now", "dict",      NULL};

static jj_frame *frame_new(jj_ctx *c, jj_frame *parent) {
    jj_frame *f = jj_alloc(c, sizeof *f);
    f->parent = parent;
    f->vars = jj_dict(c);
    return f;
}

static void frame_set(jj_ctx *c, jj_frame *f, const char *name, jj_value *v) {
    jj_dict_set(c, f->vars, name, strlen(name), v);
}

static jj_value *lookup(jj_eval *E, jj_frame *f, const char *name) {
    size_t n = strlen(name);
    for (; f; f = f->parent) {
        jj_value *v = jj_dict_get(f->vars, name, n);
        if (v) return v;
    }
    for (int i = 0; globals[i]; i++)
        if (strcmp(globals[i], name) == 0) {
            jj_value *g = jj_new(E->c, JJ_FUNC);
            g->u.func.name = globals[i];
            return g;
        }
    char *hint = jj_alloc(E->c, n + 32);
    sprintf(hint, "'%s' is undefined", name);
    return jj_undef(E->c, hint);
}

_Noreturn static void undefined_error(jj_ctx *c, const jj_node *n, const jj_value *v) {
    jj_fail(c, n->line, n->col, "%s", v->hint ? v->hint : "a value is undefined");
}

/* ------------------------------------------------------------------ attributes and items */

static jj_value *missing(jj_ctx *c, const jj_value *obj, const char *name) {
    const char *tn = obj->t == JJ_DICT ? "dict" : jj_type_name(obj);
    char *hint = jj_alloc(c, strlen(tn) + strlen(name) + 40);
    sprintf(hint, "'%s object' has no attribute '%s'", tn, name);
    return jj_undef(c, hint);
}

/* obj.name: the Python attribute (a method) first, then the key */
static jj_value *get_attr(jj_eval *E, const jj_node *n, jj_value *obj, const char *name) {
    if (obj->t == JJ_UNDEF) undefined_error(E->c, n, obj);
    if (obj->t == JJ_NS || obj->t == JJ_LOOP) {
        jj_value *v = jj_dict_get(obj, name, strlen(name));
        if (v) return v;
    }
    jj_value *m = jj_method_get(E->c, obj, name);
    if (m) return m;
    if (obj->t == JJ_DICT) {
        jj_value *v = jj_dict_get(obj, name, strlen(name));
        if (v) return v;
    }
    return missing(E->c, obj, name);
}

static int64_t norm_index(int64_t i, size_t n) { return i < 0 ? i + (int64_t)n : i; }

/* obj[key]: the item first, then (string keys) the attribute */
static jj_value *get_item(jj_eval *E, const jj_node *n, jj_value *obj, jj_value *key) {
    jj_ctx *c = E->c;
    if (obj->t == JJ_UNDEF) undefined_error(c, n, obj);
    if (obj->t == JJ_DICT || obj->t == JJ_NS || obj->t == JJ_LOOP) {
        jj_value *v = jj_dict_get_key(obj, key);
        if (v) return v;
    }
    if (key->t == JJ_INT || key->t == JJ_BOOL) {
        int64_t i = key->t == JJ_INT ? key->u.i : key->u.b;
        if (obj->t == JJ_LIST && !obj->u.list.is_gen) {
            i = norm_index(i, obj->u.list.n);
            if (i >= 0 && (size_t)i < obj->u.list.n) return obj->u.list.items[i];
        } else if (obj->t == JJ_STR) {
            size_t len = jj_utf8_len(obj->u.str.s, obj->u.str.n);
            i = norm_index(i, len);
            if (i >= 0 && (size_t)i < len) {
                size_t a = jj_utf8_offset(obj->u.str.s, obj->u.str.n, (size_t)i);
                size_t b = jj_utf8_offset(obj->u.str.s, obj->u.str.n, (size_t)i + 1);
                return jj_str_ref(c, obj->u.str.s + a, b - a);
            }
        }
    }
    if (key->t == JJ_STR) {
        const char *name = jj_strdup(c, key->u.str.s, key->u.str.n);
        jj_value *m = jj_method_get(c, obj, name);
        if (m) return m;
        return missing(c, obj, name);
    }
    return jj_undef(c, "an index out of range is undefined");
}

static int64_t slice_bound(jj_eval *E, jj_frame *f, const jj_node *n, int64_t def, int64_t len,
                           int64_t step) {
    if (!n) return def;
    jj_value *v = eval(E, f, n);
    if (v->t == JJ_NONE) return def;
    if (v->t != JJ_INT && v->t != JJ_BOOL)
        jj_fail(E->c, n->line, n->col, "slice indices must be integers or None");
    int64_t i = v->t == JJ_INT ? v->u.i : v->u.b;
    if (i < 0) i += len;
    if (step > 0) return i < 0 ? 0 : i > len ? len : i;
    return i < 0 ? -1 : i >= len ? len - 1 : i;
}

static jj_value *slice(jj_eval *E, jj_frame *f, const jj_node *n) {
    jj_ctx *c = E->c;
    jj_value *obj = eval(E, f, n->a);
    if (obj->t == JJ_UNDEF) undefined_error(c, n, obj);
    int64_t step = 1;
    if (n->d) {
        jj_value *s = eval(E, f, n->d);
        if (s->t == JJ_INT)
            step = s->u.i;
        else if (s->t != JJ_NONE)
            jj_fail(c, n->line, n->col, "slice step must be an integer or None");
        if (step == 0) jj_fail(c, n->line, n->col, "slice step cannot be zero");
    }
    jj_value *items;
    if (obj->t == JJ_STR)
        items = jj_iterate(c, obj, n->line, n->col);
    else if (obj->t == JJ_LIST && !obj->u.list.is_gen)
        items = obj;
    else
        jj_fail(c, n->line, n->col, "'%s' object is not subscriptable", jj_type_name(obj));
    int64_t len = (int64_t)items->u.list.n;
    int64_t a = slice_bound(E, f, n->b, step > 0 ? 0 : len - 1, len, step);
    int64_t b = slice_bound(E, f, n->c, step > 0 ? len : -1, len, step);
    jj_value *r = jj_list(c);
    r->u.list.is_tuple = obj->t == JJ_LIST && obj->u.list.is_tuple;
    for (int64_t i = a; step > 0 ? i < b : i > b;) {
        jj_list_push(c, r, items->u.list.items[i]);
        if (__builtin_add_overflow(i, step, &i)) break; /* a step past the int64 range ends it */
    }
    if (obj->t != JJ_STR) return r;
    jj_buf out = {0};
    for (size_t i = 0; i < r->u.list.n; i++)
        jj_buf_put(c, &out, r->u.list.items[i]->u.str.s, r->u.list.items[i]->u.str.n);
    return jj_str_ref(c, out.p ? out.p : "", out.n);
}

/* ------------------------------------------------------------------ operators */

static int64_t as_int(const jj_value *v) { return v->t == JJ_INT ? v->u.i : v->u.b; }

_Noreturn static void bad_operands(jj_ctx *c, const jj_node *n, const char *op, const jj_value *a,
                                   const jj_value *b) {
    if (a->t == JJ_UNDEF) undefined_error(c, n, a);
    if (b->t == JJ_UNDEF) undefined_error(c, n, b);
    jj_fail(c, n->line, n->col, "unsupported operand type(s) for %s: '%s' and '%s'", op,
            jj_type_name(a), jj_type_name(b));
}

static jj_value *repeat(jj_ctx *c, const jj_node *n, jj_value *seq, int64_t k) {
    if (k < 0) k = 0;
    size_t unit = seq->t == JJ_STR ? seq->u.str.n : seq->u.list.n;
    if (unit && (uint64_t)k > (JJ_MAX_ARENA / 4) / unit)
        jj_fail(c, n->line, n->col, "repetition result too large");
    if (seq->t == JJ_STR) {
        jj_buf b = {0};
        for (int64_t i = 0; i < k; i++)
            jj_buf_put(c, &b, seq->u.str.s, seq->u.str.n);
        return jj_str_ref(c, b.p ? b.p : "", b.n);
    }
    jj_value *r = jj_list(c);
    r->u.list.is_tuple = seq->u.list.is_tuple;
    for (int64_t i = 0; i < k; i++)
        for (size_t j = 0; j < seq->u.list.n; j++)
            jj_list_push(c, r, seq->u.list.items[j]);
    return r;
}

static int contains(jj_ctx *c, const jj_node *n, jj_value *item, jj_value *cont) {
    switch (cont->t) {
    case JJ_UNDEF: return 0;
    case JJ_STR:
        if (item->t != JJ_STR)
            jj_fail(c, n->line, n->col, "'in <string>' requires string as left operand, not %s",
                    jj_type_name(item));
        if (item->u.str.n == 0) return 1;
        for (size_t i = 0; i + item->u.str.n <= cont->u.str.n; i++)
            if (memcmp(cont->u.str.s + i, item->u.str.s, item->u.str.n) == 0) return 1;
        return 0;
    case JJ_LIST:
        for (size_t i = 0; i < cont->u.list.n; i++)
            if (jj_equal(cont->u.list.items[i], item)) return 1;
        return 0;
    case JJ_DICT:
    case JJ_NS: return jj_dict_get_key(cont, item) != NULL;
    default:
        jj_fail(c, n->line, n->col, "argument of type '%s' is not iterable", jj_type_name(cont));
    }
}

static double py_fmod(double a, double b) {
    double m = fmod(a, b);
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
}

static jj_value *binop(jj_eval *E, const jj_node *n, jj_value *a, jj_value *b) {
    jj_ctx *c = E->c;
    int ints = (a->t == JJ_INT || a->t == JJ_BOOL) && (b->t == JJ_INT || b->t == JJ_BOOL);
    int nums = jj_is_number(a) && jj_is_number(b);
    switch (n->op) {
    case JOP_ADD:
        if (ints) {
            int64_t r;
            if (__builtin_add_overflow(as_int(a), as_int(b), &r))
                jj_fail(c, n->line, n->col, "integer overflow");
            return jj_int(c, r);
        }
        if (nums) return jj_float(c, jj_num(a) + jj_num(b));
        if (a->t == JJ_STR && b->t == JJ_STR) {
            /* markupsafe: Markup + str and str + Markup escape the plain side, giving a Markup
             * (transformers' own tojson returns a plain str, so "x"|safe + t|tojson escapes) */
            int markup = a->u.str.markup || b->u.str.markup;
            if (markup) {
                a = jj_markup_escape(c, a);
                b = jj_markup_escape(c, b);
            }
            char *s = jj_alloc(c, a->u.str.n + b->u.str.n + 1);
            memcpy(s, a->u.str.s, a->u.str.n);
            memcpy(s + a->u.str.n, b->u.str.s, b->u.str.n);
            s[a->u.str.n + b->u.str.n] = 0;
            jj_value *r = jj_str_ref(c, s, a->u.str.n + b->u.str.n);
            r->u.str.markup = markup;
            return r;
        }
        if (a->t == JJ_LIST && b->t == JJ_LIST && !a->u.list.is_gen && !b->u.list.is_gen &&
            a->u.list.is_tuple == b->u.list.is_tuple) {
            jj_value *r = jj_list(c);
            r->u.list.is_tuple = a->u.list.is_tuple;
            for (size_t i = 0; i < a->u.list.n; i++)
                jj_list_push(c, r, a->u.list.items[i]);
            for (size_t i = 0; i < b->u.list.n; i++)
                jj_list_push(c, r, b->u.list.items[i]);
            return r;
        }
        bad_operands(c, n, "+", a, b);
    case JOP_SUB:
        if (ints) {
            int64_t r;
            if (__builtin_sub_overflow(as_int(a), as_int(b), &r))
                jj_fail(c, n->line, n->col, "integer overflow");
            return jj_int(c, r);
        }
        if (nums) return jj_float(c, jj_num(a) - jj_num(b));
        bad_operands(c, n, "-", a, b);
    case JOP_MUL:
        if (ints) {
            int64_t r;
            if (__builtin_mul_overflow(as_int(a), as_int(b), &r))
                jj_fail(c, n->line, n->col, "integer overflow");
            return jj_int(c, r);
        }
        if (nums) return jj_float(c, jj_num(a) * jj_num(b));
        if ((a->t == JJ_STR || (a->t == JJ_LIST && !a->u.list.is_gen)) &&
            (b->t == JJ_INT || b->t == JJ_BOOL))
            return repeat(c, n, a, as_int(b));
        if ((b->t == JJ_STR || (b->t == JJ_LIST && !b->u.list.is_gen)) &&
            (a->t == JJ_INT || a->t == JJ_BOOL))
            return repeat(c, n, b, as_int(a));
        bad_operands(c, n, "*", a, b);
    case JOP_DIV:
        if (!nums) bad_operands(c, n, "/", a, b);
        if (jj_num(b) == 0) jj_fail(c, n->line, n->col, "division by zero");
        return jj_float(c, jj_num(a) / jj_num(b));
    case JOP_FLOORDIV:
    case JOP_MOD:
        if (!nums) {
            if (n->op == JOP_MOD && a->t == JJ_STR)
                return jj_percent_format(c, a, b, n->line, n->col);
            bad_operands(c, n, n->op == JOP_MOD ? "%" : "//", a, b);
        }
        if (jj_num(b) == 0) jj_fail(c, n->line, n->col, "integer division or modulo by zero");
        if (ints) {
            int64_t x = as_int(a), y = as_int(b);
            if (x == INT64_MIN && y == -1) jj_fail(c, n->line, n->col, "integer overflow");
            int64_t q = x / y, r = x % y;
            if (r != 0 && ((r < 0) != (y < 0))) {
                q--;
                r += y;
            }
            return jj_int(c, n->op == JOP_MOD ? r : q);
        }
        if (n->op == JOP_MOD) return jj_float(c, py_fmod(jj_num(a), jj_num(b)));
        return jj_float(c, floor(jj_num(a) / jj_num(b)));
    case JOP_POW:
        if (!nums) bad_operands(c, n, "**", a, b);
        if (ints && as_int(b) >= 0) {
            int64_t r = 1, x = as_int(a), e = as_int(b);
            if (x == 0 || x == 1) return jj_int(c, e == 0 ? 1 : x);
            if (x == -1) return jj_int(c, e % 2 ? -1 : 1);
            for (int64_t i = 0; i < e; i++) /* |x| >= 2: overflows within 64 steps */
                if (__builtin_mul_overflow(r, x, &r))
                    jj_fail(c, n->line, n->col, "integer overflow");
            return jj_int(c, r);
        }
        return jj_float(c, pow(jj_num(a), jj_num(b)));
    case JOP_CONCAT: {
        jj_buf s = {0};
        jj_to_str(c, &s, a);
        jj_to_str(c, &s, b);
        return jj_str_ref(c, s.p ? s.p : "", s.n);
    }
    case JOP_EQ: return jj_bool(c, jj_equal(a, b));
    case JOP_NE: return jj_bool(c, !jj_equal(a, b));
    case JOP_LT: return jj_bool(c, jj_compare(c, a, b, n->line, n->col) < 0);
    case JOP_LE: return jj_bool(c, jj_compare(c, a, b, n->line, n->col) <= 0);
    case JOP_GT: return jj_bool(c, jj_compare(c, a, b, n->line, n->col) > 0);
    case JOP_GE: return jj_bool(c, jj_compare(c, a, b, n->line, n->col) >= 0);
    case JOP_IN: return jj_bool(c, contains(c, n, a, b));
    case JOP_NOTIN: return jj_bool(c, !contains(c, n, a, b));
    }
    jj_fail(c, n->line, n->col, "unknown operator");
}

/* ------------------------------------------------------------------ calls */

static void eval_args(jj_eval *E, jj_frame *f, const jj_node *n, jj_args *a, jj_value *first) {
    int extra = first != NULL;
    a->npos = n->nargs + extra;
    a->pos = jj_alloc(E->c, (size_t)(a->npos + 1) * sizeof *a->pos);
    if (first) a->pos[0] = first;
    for (int i = 0; i < n->nargs; i++)
        a->pos[i + extra] = eval(E, f, n->args[i]);
    a->nkw = n->nkw;
    a->kwn = n->kwn;
    a->kwv = jj_alloc(E->c, (size_t)(n->nkw + 1) * sizeof *a->kwv);
    for (int i = 0; i < n->nkw; i++)
        a->kwv[i] = eval(E, f, n->kwv[i]);
}

static jj_value *call_macro(jj_eval *E, const jj_node *at, jj_value *m, jj_args *a) {
    jj_ctx *c = E->c;
    const jj_node *def = m->u.macro.def;
    jj_frame *f = frame_new(c, m->u.macro.scope);
    if (a->npos > def->nkw)
        jj_fail(c, at->line, at->col, "macro '%s' takes not more than %d argument(s)", def->s,
                def->nkw);
    for (int i = 0; i < def->nkw; i++) {
        jj_value *v = i < a->npos ? a->pos[i] : NULL;
        for (int k = 0; k < a->nkw; k++)
            if (strcmp(a->kwn[k], def->kwn[i]) == 0) {
                if (v)
                    jj_fail(c, at->line, at->col,
                            "macro '%s' got multiple values for argument '%s'", def->s,
                            def->kwn[i]);
                v = a->kwv[k];
            }
        if (!v)
            v = def->kwv[i] ? eval(E, f, def->kwv[i])
                            : jj_undef(c, "a macro argument is undefined");
        frame_set(c, f, def->kwn[i], v);
    }
    for (int k = 0; k < a->nkw; k++) {
        int found = 0;
        for (int i = 0; i < def->nkw; i++)
            found |= strcmp(a->kwn[k], def->kwn[i]) == 0;
        if (!found && strcmp(a->kwn[k], "caller") == 0) { /* from a call block */
            frame_set(c, f, "caller", a->kwv[k]);
            found = 1;
        }
        if (!found)
            jj_fail(c, at->line, at->col, "macro '%s' has no argument '%s'", def->s, a->kwn[k]);
    }
    jj_buf out = {0};
    jj_enter(c, at->line, at->col);
    int saved = E->signal;
    exec_body(E, f, def->body, def->nbody, &out);
    E->signal = saved;
    jj_leave(c);
    return jj_str_ref(c, out.p ? out.p : "", out.n);
}

static jj_value *call(jj_eval *E, jj_frame *f, const jj_node *n) {
    jj_value *fn = eval(E, f, n->a);
    jj_args a;
    eval_args(E, f, n, &a, NULL);
    if (fn->t == JJ_MACRO) return call_macro(E, n, fn, &a);
    if (fn->t == JJ_LOOP) { /* loop(items) in a recursive loop */
        jj_value *rec = jj_dict_get(fn, "\x01rec", 4), *depth = jj_dict_get(fn, "depth", 5);
        if (!rec)
            jj_fail(E->c, n->line, n->col,
                    "loop() can only be called in a loop marked 'recursive'");
        if (a.npos != 1 || a.nkw)
            jj_fail(E->c, n->line, n->col, "loop() takes exactly one argument");
        jj_buf b = {0};
        jj_enter(E->c, n->line, n->col);
        int saved = E->signal;
        run_loop(E, rec->u.macro.scope, rec->u.macro.def, a.pos[0], depth->u.i + 1, &b);
        E->signal = saved;
        jj_leave(E->c);
        return jj_str_ref(E->c, b.p ? b.p : "", b.n);
    }
    if (fn->t == JJ_FUNC) return jj_call_func(E->c, fn, &a, n->line, n->col);
    if (fn->t == JJ_UNDEF) undefined_error(E->c, n, fn);
    jj_fail(E->c, n->line, n->col, "'%s' object is not callable", jj_type_name(fn));
}

/* a filter chain whose innermost operand is NULL (filter blocks, block set): applied to v */
static jj_value *apply_filters(jj_eval *E, jj_frame *f, const jj_node *n, jj_value *v) {
    if (!n) return v;
    jj_value *inner = n->a ? apply_filters(E, f, n->a, v) : v;
    jj_args a;
    eval_args(E, f, n, &a, NULL);
    return jj_filter(E->c, n->s, inner, &a, n->line, n->col);
}

/* ------------------------------------------------------------------ expressions */

static jj_value *eval(jj_eval *E, jj_frame *f, const jj_node *n) {
    jj_ctx *c = E->c;
    jj_enter(c, n->line, n->col);
    jj_value *r = NULL;
    switch (n->kind) {
    case JN_CONST: r = n->val; break;
    case JN_NAME: r = lookup(E, f, n->s); break;
    case JN_GETATTR: r = get_attr(E, n, eval(E, f, n->a), n->s); break;
    case JN_GETITEM: {
        jj_value *obj = eval(E, f, n->a);
        r = get_item(E, n, obj, eval(E, f, n->b));
        break;
    }
    case JN_SLICE: r = slice(E, f, n); break;
    case JN_CALL: r = call(E, f, n); break;
    case JN_FILTER: {
        jj_value *v = eval(E, f, n->a);
        jj_args a;
        eval_args(E, f, n, &a, NULL);
        r = jj_filter(c, n->s, v, &a, n->line, n->col);
        break;
    }
    case JN_TEST: {
        jj_value *v = eval(E, f, n->a);
        jj_args a;
        eval_args(E, f, n, &a, NULL);
        int t = jj_test(c, n->s, v, &a, n->line, n->col);
        r = jj_bool(c, n->neg ? !t : t);
        break;
    }
    case JN_BINOP: {
        jj_value *a = eval(E, f, n->a);
        r = binop(E, n, a, eval(E, f, n->b));
        break;
    }
    case JN_NEG:
    case JN_POS: {
        jj_value *v = eval(E, f, n->a);
        if (v->t == JJ_INT || v->t == JJ_BOOL) {
            int64_t i = as_int(v);
            if (n->kind == JN_NEG && i == INT64_MIN)
                jj_fail(c, n->line, n->col, "integer overflow");
            r = jj_int(c, n->kind == JN_NEG ? -i : i);
        } else if (v->t == JJ_FLOAT) {
            r = jj_float(c, n->kind == JN_NEG ? -v->u.f : v->u.f);
        } else {
            if (v->t == JJ_UNDEF) undefined_error(c, n, v);
            jj_fail(c, n->line, n->col, "bad operand type for unary %s: '%s'",
                    n->kind == JN_NEG ? "-" : "+", jj_type_name(v));
        }
        break;
    }
    case JN_NOT: r = jj_bool(c, !jj_truthy(eval(E, f, n->a))); break;
    case JN_AND: {
        jj_value *a = eval(E, f, n->a);
        r = jj_truthy(a) ? eval(E, f, n->b) : a;
        break;
    }
    case JN_OR: {
        jj_value *a = eval(E, f, n->a);
        r = jj_truthy(a) ? a : eval(E, f, n->b);
        break;
    }
    case JN_COND:
        if (jj_truthy(eval(E, f, n->a)))
            r = eval(E, f, n->b);
        else
            r = n->c ? eval(E, f, n->c)
                     : jj_undef(c, "the else branch of a conditional expression is undefined");
        break;
    case JN_LIST:
    case JN_TUPLE:
        r = jj_list(c);
        r->u.list.is_tuple = n->kind == JN_TUPLE;
        for (int i = 0; i < n->nargs; i++)
            jj_list_push(c, r, eval(E, f, n->args[i]));
        break;
    case JN_DICT:
        r = jj_dict(c);
        for (int i = 0; i + 1 < n->nargs; i += 2) {
            jj_value *k = eval(E, f, n->args[i]);
            if ((k->t == JJ_LIST && !k->u.list.is_tuple) || k->t == JJ_DICT || k->t == JJ_NS ||
                k->t == JJ_UNDEF)
                jj_fail(c, n->args[i]->line, n->args[i]->col, "unhashable type: '%s'",
                        jj_type_name(k));
            jj_dict_set_key(c, r, k, eval(E, f, n->args[i + 1]));
        }
        break;
    default: jj_fail(c, n->line, n->col, "a statement where an expression was expected");
    }
    jj_leave(c);
    return r;
}

/* ------------------------------------------------------------------ statements */

static void step(jj_ctx *c, const jj_node *n) {
    if (++c->steps > JJ_MAX_STEPS)
        jj_fail(c, n->line, n->col, "the render takes more than %d steps", JJ_MAX_STEPS);
}

static void assign_targets(jj_eval *E, jj_frame *f, const jj_node *n, const char **names, int nn,
                           jj_value *v) {
    if (nn == 1) {
        frame_set(E->c, f, names[0], v);
        return;
    }
    jj_value *items = jj_iterate(E->c, v, n->line, n->col);
    if ((int)items->u.list.n != nn)
        jj_fail(E->c, n->line, n->col, "cannot unpack %zu values into %d names", items->u.list.n,
                nn);
    for (int i = 0; i < nn; i++)
        frame_set(E->c, f, names[i], items->u.list.items[i]);
}

/* The loop of n over the value items at depth (1 for the outermost; recursive loops call
 * again through loop(...)). */
static void run_loop(jj_eval *E, jj_frame *f, const jj_node *n, jj_value *items, int64_t depth,
                     jj_buf *out) {
    jj_ctx *c = E->c;
    jj_value *seq = jj_iterate(c, items, n->line, n->col);
    if (n->b) { /* {% for x in xs if cond %}: filtered before loop.* is computed */
        jj_value *kept = jj_list(c);
        for (size_t i = 0; i < seq->u.list.n; i++) {
            step(c, n);
            jj_frame *tf = frame_new(c, f);
            assign_targets(E, tf, n, n->kwn, n->nkw, seq->u.list.items[i]);
            if (jj_truthy(eval(E, tf, n->b))) jj_list_push(c, kept, seq->u.list.items[i]);
        }
        seq = kept;
    }
    size_t len = seq->u.list.n;
    if (len == 0) {
        exec_body(E, f, n->els, n->nels, out);
        return;
    }
    jj_value *state = jj_dict(c);
    for (size_t i = 0; i < len; i++) {
        step(c, n);
        jj_frame *lf = frame_new(c, f);
        jj_value *loop = jj_new(c, JJ_LOOP);
        jj_dict_set(c, loop, "\x01state", 6,
                    state); /* loop.changed()'s memory, shared by the iterations */
        jj_dict_set(c, loop, "index", 5, jj_int(c, (int64_t)i + 1));
        jj_dict_set(c, loop, "index0", 6, jj_int(c, (int64_t)i));
        jj_dict_set(c, loop, "revindex", 8, jj_int(c, (int64_t)(len - i)));
        jj_dict_set(c, loop, "revindex0", 9, jj_int(c, (int64_t)(len - i - 1)));
        jj_dict_set(c, loop, "first", 5, jj_bool(c, i == 0));
        jj_dict_set(c, loop, "last", 4, jj_bool(c, i + 1 == len));
        jj_dict_set(c, loop, "length", 6, jj_int(c, (int64_t)len));
        jj_dict_set(c, loop, "depth", 5, jj_int(c, depth));
        jj_dict_set(c, loop, "depth0", 6, jj_int(c, depth - 1));
        if (n->neg) { /* recursive: what calling loop(...) needs */
            jj_value *rec = jj_new(c, JJ_MACRO);
            rec->u.macro.def = n;
            rec->u.macro.scope = f;
            jj_dict_set(c, loop, "\x01rec", 4, rec);
        }
        jj_dict_set(c, loop, "previtem", 8,
                    i > 0 ? seq->u.list.items[i - 1] : jj_undef(c, "'loop.previtem' is undefined"));
        jj_dict_set(c, loop, "nextitem", 8,
                    i + 1 < len ? seq->u.list.items[i + 1]
                                : jj_undef(c, "'loop.nextitem' is undefined"));
        assign_targets(E, lf, n, n->kwn, n->nkw, seq->u.list.items[i]);
        frame_set(c, lf, "loop", loop);
        exec_body(E, lf, n->body, n->nbody, out);
        if (E->signal == 1) {
            E->signal = 0;
            break;
        }
        E->signal = 0;
    }
}

static void exec_for(jj_eval *E, jj_frame *f, const jj_node *n, jj_buf *out) {
    run_loop(E, f, n, eval(E, f, n->a), 1, out);
}

static void exec_set(jj_eval *E, jj_frame *f, const jj_node *n) {
    jj_ctx *c = E->c;
    jj_value *v;
    if (n->b) {
        v = eval(E, f, n->b);
    } else {
        jj_buf b = {0};
        exec_body(E, f, n->body, n->nbody, &b);
        v = apply_filters(E, f, n->c, jj_str_ref(c, b.p ? b.p : "", b.n));
    }
    const jj_node *t = n->a;
    if (t->kind == JN_NAME) {
        frame_set(c, f, t->s, v);
    } else if (t->kind == JN_GETATTR) {
        jj_value *obj = eval(E, f, t->a);
        if (obj->t != JJ_NS)
            jj_fail(c, t->line, t->col, "cannot assign attribute on non-namespace object");
        jj_dict_set(c, obj, t->s, strlen(t->s), v);
    } else {
        assign_targets(E, f, t, t->kwn, t->nkw, v);
    }
}

static void exec_stmt(jj_eval *E, jj_frame *f, const jj_node *n, jj_buf *out) {
    jj_ctx *c = E->c;
    step(c, n);
    jj_enter(c, n->line, n->col);
    switch (n->kind) {
    case JN_TEXT: jj_buf_put(c, out, n->s, n->sn); break;
    case JN_PRINT: jj_to_str(c, out, eval(E, f, n->a)); break;
    case JN_IF:
        if (jj_truthy(eval(E, f, n->a)))
            exec_body(E, f, n->body, n->nbody, out);
        else
            exec_body(E, f, n->els, n->nels, out);
        break;
    case JN_FOR: exec_for(E, f, n, out); break;
    case JN_SET: exec_set(E, f, n); break;
    case JN_MACRO: {
        jj_value *m = jj_new(c, JJ_MACRO);
        m->u.macro.def = n;
        m->u.macro.scope = f;
        frame_set(c, f, n->s, m);
        break;
    }
    case JN_CALLBLOCK: {
        jj_value *caller = jj_new(c, JJ_MACRO);
        caller->u.macro.def = n;
        caller->u.macro.scope = f;
        const jj_node *cn = n->a;
        jj_value *fn = eval(E, f, cn->a);
        jj_args a;
        eval_args(E, f, cn, &a, NULL);
        const char **kwn = jj_alloc(c, (size_t)(a.nkw + 1) * sizeof *kwn);
        jj_value **kwv = jj_alloc(c, (size_t)(a.nkw + 1) * sizeof *kwv);
        for (int i = 0; i < a.nkw; i++)
            kwn[i] = a.kwn[i], kwv[i] = a.kwv[i];
        kwn[a.nkw] = "caller";
        kwv[a.nkw] = caller;
        a.kwn = kwn;
        a.kwv = kwv;
        a.nkw++;
        if (fn->t != JJ_MACRO)
            jj_fail(c, cn->line, cn->col, "a call block needs a macro, not '%s'", jj_type_name(fn));
        jj_to_str(c, out, call_macro(E, cn, fn, &a));
        break;
    }
    case JN_WITH: {
        jj_frame *wf = frame_new(c, f);
        jj_value **vals = jj_alloc(c, (size_t)(n->nkw + 1) * sizeof *vals);
        for (int i = 0; i < n->nkw; i++)
            vals[i] = eval(E, f, n->kwv[i]); /* all in the outer scope */
        for (int i = 0; i < n->nkw; i++)
            frame_set(c, wf, n->kwn[i], vals[i]);
        exec_body(E, wf, n->body, n->nbody, out);
        break;
    }
    case JN_BREAK: E->signal = 1; break;
    case JN_CONTINUE: E->signal = 2; break;
    case JN_FILTERBLOCK: {
        jj_buf b = {0};
        exec_body(E, f, n->body, n->nbody, &b);
        jj_to_str(c, out, apply_filters(E, f, n->a, jj_str_ref(c, b.p ? b.p : "", b.n)));
        break;
    }
    default: jj_fail(c, n->line, n->col, "an expression where a statement was expected");
    }
    jj_leave(c);
}

static void exec_body(jj_eval *E, jj_frame *f, jj_node **body, int n, jj_buf *out) {
    for (int i = 0; i < n && !E->signal; i++)
        exec_stmt(E, f, body[i], out);
}

/* ------------------------------------------------------------------ entry */

vkf_status vkf_jinja_render(const char *tmpl, size_t len, const vkf_jinja_var *vars, int n_vars,
                            char **out) {
    if (!tmpl || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "jinja_render: NULL template or output");
    *out = NULL;
    jj_ctx *c = calloc(1, sizeof *c);
    if (!c) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "chat template: out of memory");
    vkf_status s = VKF_OK;
    if (setjmp(c->jmp) == 0) {
        c->undef = jj_new(c, JJ_UNDEF);
        c->none = jj_new(c, JJ_NONE);
        c->vtrue = jj_new(c, JJ_BOOL);
        c->vtrue->u.b = 1;
        c->vfalse = jj_new(c, JJ_BOOL);
        int n = 0;
        jj_node **body = jj_parse(c, tmpl, len, &n);
        jj_eval E = {c, NULL, 0};
        E.root = frame_new(c, NULL);
        for (int i = 0; i < n_vars; i++) {
            jj_value *v = jj_parse_json(c, vars[i].json, strlen(vars[i].json),
                                        vars[i].name ? vars[i].name : "the context");
            if (vars[i].name) {
                frame_set(c, E.root, vars[i].name, v);
            } else if (v->t == JJ_DICT) {
                for (size_t k = 0; k < v->u.dict.n; k++)
                    jj_dict_set(c, E.root->vars, v->u.dict.kv[k].key, v->u.dict.kv[k].klen,
                                v->u.dict.kv[k].val);
            } else {
                jj_fail(c, 0, 0, "the context must be a JSON object");
            }
        }
        jj_buf b = {0};
        exec_body(&E, E.root, body, n, &b);
        *out = malloc(b.n + 1);
        if (!*out) {
            s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "chat template: out of memory");
        } else {
            if (b.n) memcpy(*out, b.p, b.n);
            (*out)[b.n] = 0;
        }
    } else {
        s = c->status;
    }
    jj_arena_free(c);
    free(c);
    return s;
}
