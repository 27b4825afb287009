/* Internals shared by the jinja_*.c files (see template/jinja.h). */
#ifndef VKF_MODEL_JINJA_INT_H
#define VKF_MODEL_JINJA_INT_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "vkformer.h"

/* Limits that keep a hostile template from exhausting the machine (fuzzing, servers). */
#define JJ_MAX_ARENA ((size_t)512 << 20) /* bytes allocated by one render */
#define JJ_MAX_DEPTH 200                 /* nesting of expressions, blocks and macro calls */
#define JJ_MAX_STEPS 20000000            /* statements and loop iterations executed */

/* ------------------------------------------------------------------ arena and errors */

typedef struct jj_block jj_block;

typedef struct jj_ctx {
    jmp_buf jmp;       /* errors longjmp here */
    vkf_status status; /* set with the message before the jump */
    jj_block *blocks;  /* arena */
    size_t used;       /* bytes allocated, against JJ_MAX_ARENA */
    int depth;         /* current nesting, against JJ_MAX_DEPTH */
    long steps;        /* executed statements / iterations, against JJ_MAX_STEPS */
    struct jj_value *undef, *none, *vtrue, *vfalse;
    int json_ascii; /* tojson(ensure_ascii=True) in progress */
} jj_ctx;

void *jj_alloc(jj_ctx *c, size_t n);
char *jj_strdup(jj_ctx *c, const char *s, size_t n);
/* Records the error (vkf_error) and unwinds to the render. line 0: no position. */
_Noreturn void jj_fail(jj_ctx *c, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* raise_exception(msg): the message exactly, no position. */
_Noreturn void jj_raise(jj_ctx *c, const char *msg);
void jj_enter(jj_ctx *c, int line, int col); /* depth + 1, fails past JJ_MAX_DEPTH */
void jj_leave(jj_ctx *c);

/* Growable byte buffer in the arena. */
typedef struct jj_buf {
    char *p;
    size_t n, cap;
} jj_buf;
void jj_buf_put(jj_ctx *c, jj_buf *b, const char *s, size_t n);
void jj_buf_puts(jj_ctx *c, jj_buf *b, const char *s);
void jj_buf_printf(jj_ctx *c, jj_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ------------------------------------------------------------------ values */

typedef enum jj_type {
    JJ_UNDEF = 0,
    JJ_NONE,
    JJ_BOOL,
    JJ_INT,
    JJ_FLOAT,
    JJ_STR,
    JJ_LIST, /* also tuples (is_tuple) and generators (is_gen: select/map results) */
    JJ_DICT,
    JJ_NS, /* namespace(): a dict whose attributes can be set */
    JJ_MACRO,
    JJ_FUNC, /* a global function or a bound method */
    JJ_LOOP, /* the loop variable */
} jj_type;

typedef struct jj_value jj_value;
typedef struct jj_node jj_node;

typedef struct jj_kv {
    const char *key; /* a string key (NULL when kval is set) */
    size_t klen;
    jj_value *val;
    jj_value *kval; /* a key of another type (int, bool, None, ...: dict literals), else NULL */
} jj_kv;

typedef struct jj_frame jj_frame;

struct jj_value {
    jj_type t;
    union {
        int b;
        int64_t i;
        double f;
        struct {
            const char *s;
            size_t n;
            int markup; /* markupsafe.Markup (|safe, |escape): `+` escapes a plain operand */
        } str;
        struct {
            jj_value **items;
            size_t n, cap;
            int is_tuple, is_gen;
        } list;
        struct {
            jj_kv *kv;
            size_t n, cap;
        } dict; /* JJ_DICT, JJ_NS, JJ_LOOP */
        struct {
            const jj_node *def;
            jj_frame *scope;
        } macro;
        struct {
            const char *name; /* global function or method name */
            jj_value *self;   /* bound object, NULL for globals */
        } func;
    } u;
    const char *hint; /* JJ_UNDEF: what was looked up, for messages */
};

jj_value *jj_new(jj_ctx *c, jj_type t);
jj_value *jj_str(jj_ctx *c, const char *s, size_t n);     /* copies */
jj_value *jj_str_ref(jj_ctx *c, const char *s, size_t n); /* does not copy */
jj_value *jj_int(jj_ctx *c, int64_t i);
jj_value *jj_float(jj_ctx *c, double f);
jj_value *jj_bool(jj_ctx *c, int b);
jj_value *jj_undef(jj_ctx *c, const char *hint);
jj_value *jj_list(jj_ctx *c);
jj_value *jj_dict(jj_ctx *c);
void jj_list_push(jj_ctx *c, jj_value *l, jj_value *v);
jj_value *jj_dict_get(const jj_value *d, const char *key, size_t klen); /* NULL if absent */
void jj_dict_set(jj_ctx *c, jj_value *d, const char *key, size_t klen, jj_value *v);
/* Keys of any type, compared as Python does (1, 1.0 and True are one key). */
jj_value *jj_dict_get_key(const jj_value *d, const jj_value *k); /* NULL if absent */
void jj_dict_set_key(jj_ctx *c, jj_value *d, jj_value *k, jj_value *v);
jj_value *jj_kv_key(jj_ctx *c, const jj_kv *kv); /* the key as a value */
/* Parses JSON text as Python's json.loads would (ints and floats apart, member order kept);
 * fails naming what on malformed text. */
jj_value *jj_parse_json(jj_ctx *c, const char *text, size_t n, const char *what);

int jj_truthy(const jj_value *v);
int jj_equal(const jj_value *a, const jj_value *b);
/* a < b: -1 / 0 / 1, or fails for unorderable types */
int jj_compare(jj_ctx *c, const jj_value *a, const jj_value *b, int line, int col);
const char *jj_type_name(const jj_value *v); /* Python's: 'str', 'int', 'NoneType', ... */
int jj_is_number(const jj_value *v);         /* int, float or bool */
double jj_num(const jj_value *v);
/* str(v) as Python prints it (Undefined: ""). */
void jj_to_str(jj_ctx *c, jj_buf *b, const jj_value *v);
jj_value *jj_stringify(jj_ctx *c, jj_value *v);
/* repr(v) */
void jj_repr(jj_ctx *c, jj_buf *b, const jj_value *v);
/* json.dumps(v, ensure_ascii=False, indent=indent (< 0: None), sort_keys=sort_keys,
 * separators=(item_sep, key_sep) or Python's defaults when NULL). */
void jj_tojson(jj_ctx *c, jj_buf *b, const jj_value *v, int indent, int sort_keys,
               const char *item_sep, const char *key_sep, int line, int col);
/* Stable sort of items[0..n) by keys[0..n) (moved along), with jj_compare. */
void jj_sort(jj_ctx *c, jj_value **items, jj_value **keys, size_t n, int line, int col);
/* Iterates v as Python would: lists/tuples, dict keys, string code points; Undefined is
 * empty; None and numbers fail. Returns a list value (shared when v is already a list). */
jj_value *jj_iterate(jj_ctx *c, jj_value *v, int line, int col);

/* UTF-8 helpers */
size_t jj_utf8_len(const char *s, size_t n);               /* code points */
size_t jj_utf8_offset(const char *s, size_t n, size_t cp); /* byte offset of code point cp */
int jj_is_space_at(const char *s, size_t n, size_t i,
                   size_t *len); /* Python str.isspace char at i */

/* ------------------------------------------------------------------ syntax tree */

typedef enum jj_kind {
    /* statements */
    JN_TEXT,
    JN_PRINT,
    JN_IF,        /* a cond, body, els */
    JN_FOR,       /* targets in names, a iterable, b filter (or NULL), body, els */
    JN_SET,       /* a target (name, getattr or tuple), b value; or block set: body */
    JN_MACRO,     /* s name, names + defs params, body */
    JN_CALLBLOCK, /* a: the call; kwn + kwv: caller's parameters; body: caller's body */
    JN_WITH,      /* kwn + kwv: assignments; body */
    JN_BREAK,
    JN_CONTINUE,
    JN_FILTERBLOCK, /* a: filter node applied to the body's output (its a is NULL) */
    /* expressions */
    JN_CONST,
    JN_NAME,
    JN_GETATTR, /* a . s */
    JN_GETITEM, /* a [ b ] */
    JN_SLICE,   /* a [ b : c : d ] (any of b c d NULL) */
    JN_CALL,    /* a ( args, kwn=kwv ) */
    JN_FILTER,  /* a | s ( args, kw ) */
    JN_TEST,    /* a is [not: neg] s ( args ) */
    JN_BINOP,   /* a op b */
    JN_NEG,
    JN_POS,
    JN_NOT,
    JN_AND,
    JN_OR,
    JN_COND, /* b if a else c */
    JN_LIST,
    JN_TUPLE,
    JN_DICT, /* args: key, value, key, value ... */
} jj_kind;

enum {
    JOP_ADD = 1,
    JOP_SUB,
    JOP_MUL,
    JOP_DIV,
    JOP_FLOORDIV,
    JOP_MOD,
    JOP_POW,
    JOP_CONCAT,
    JOP_EQ,
    JOP_NE,
    JOP_LT,
    JOP_LE,
    JOP_GT,
    JOP_GE,
    JOP_IN,
    JOP_NOTIN,
};

struct jj_node {
    jj_kind kind;
    int line, col;
    int op, neg;
    const char *s;
    size_t sn;
    jj_value *val; /* JN_CONST */
    jj_node *a, *b, *c, *d;
    jj_node **body, **els; /* statements */
    int nbody, nels;
    jj_node **args; /* positional arguments / items */
    int nargs;
    const char **kwn; /* keyword argument names / macro parameters / loop targets */
    jj_node **kwv;    /* their values / defaults (NULL: none) */
    int nkw;
};

/* Parses the template into a list of statements. */
jj_node **jj_parse(jj_ctx *c, const char *src, size_t len, int *n);

/* ------------------------------------------------------------------ evaluation */

struct jj_frame {
    jj_frame *parent;
    jj_value *vars; /* a dict */
};

typedef struct jj_eval jj_eval;

/* Built-ins (jinja_builtin.c). args: positional values; kwn/kwv: keyword arguments. */
typedef struct jj_args {
    jj_value **pos;
    int npos;
    const char **kwn;
    jj_value **kwv;
    int nkw;
} jj_args;

jj_value *jj_filter(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col);
int jj_test(jj_ctx *c, const char *name, jj_value *v, jj_args *a, int line, int col);
/* v.name: a method, else (dict) the key; NULL when neither */
jj_value *jj_method_get(jj_ctx *c, jj_value *v, const char *name);
jj_value *jj_call_func(jj_ctx *c, jj_value *f, jj_args *a, int line, int col);
int jj_is_test_name(const char *name);
int jj_is_filter_name(const char *name); /* jinja2 has a filter of that name */
/* markupsafe.escape(s) for a string s: s itself when it is a Markup, else s escaped (& < > " ')
 * as a Markup */
jj_value *jj_markup_escape(jj_ctx *c, jj_value *s);
/* Python's printf-style str % args (args: a tuple, a dict for %(name)s, or one value). */
jj_value *jj_percent_format(jj_ctx *c, jj_value *fmt, jj_value *args, int line, int col);

#endif
