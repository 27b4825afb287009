/* Tool calls: a model's answer in its family's format -> content and calls (tool_calls.h).
 *
 * One parser per format reads the whole text each time (answers are short; streaming re-reads
 * the text as it grows and sends the difference). A call is recognised only from its marker or
 * shape; whatever does not complete as a call stays text, so a malformed call is returned as
 * content and never an error. While text is still coming (partial), a call is kept open and a
 * possible marker at the end is held back, so the content handed out never has to be taken
 * back.
 *
 *   hermes       <tool_call>{"name": "f", "arguments": {...}}</tool_call> (Qwen2.5/3: the same)
 *   llama3       {"name": "f", "parameters": {...}} at the start, several separated by ; or new
 *                lines; <|python_tag|> then JSON or f.call(key="value", ...)
 *   mistral      [TOOL_CALLS][{"name", "arguments", "id"}, ...] or [TOOL_CALLS]f[ARGS]{...}
 *   deepseek
 * <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{...}\n```
 *                <｜tool▁call▁end｜>...<｜tool▁calls▁end｜>, or (V3.1) f<｜tool▁sep｜>{...}
 *   functionary  >>>f\n{...} and >>>all\ntext (v3.2; the prompt ends with >>>), or
 *                <function=f>{...}</function> (v3.1)
 *   generic      the whole answer one JSON value: {"tool_calls": [...]}, {"tool_call": {...}},
 *                {"name", "arguments"} or a list of those; {"response": "..."} is text */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "structured/tool_calls.h"

/* ------------------------------------------------------------------ strict JSON scanning */

typedef struct js {
    const unsigned char *s;
    size_t n, i;
    int depth;
} js;

static int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static void js_ws(js *p) {
    while (p->i < p->n && is_ws(p->s[p->i]))
        p->i++;
}

/* 1 a whole string, 0 the text ends inside it, -1 not a JSON string */
static int js_string(js *p) {
    if (p->i >= p->n) return 0;
    if (p->s[p->i] != '"') return -1;
    for (p->i++; p->i < p->n; p->i++) {
        unsigned char c = p->s[p->i];
        if (c == '"') {
            p->i++;
            return 1;
        }
        if (c < 0x20) return -1;
        if (c != '\\') continue;
        if (++p->i >= p->n) return 0;
        c = p->s[p->i];
        if (c == 'u') {
            for (int k = 0; k < 4; k++) {
                if (++p->i >= p->n) return 0;
                c = p->s[p->i];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
                    return -1;
            }
        } else if (!strchr("\"\\/bfnrt", c) || !c) {
            return -1;
        }
    }
    return 0;
}

static int js_digits(js *p, int need) {
    size_t d = p->i;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
        p->i++;
    if (p->i >= p->n) return 0; /* more digits may come */
    return p->i - d >= (size_t)need ? 1 : -1;
}

static int js_number(js *p) {
    if (p->s[p->i] == '-') p->i++;
    if (p->i >= p->n) return 0;
    if (p->s[p->i] == '0') {
        p->i++;
        if (p->i >= p->n) return 0;
    } else if (p->s[p->i] >= '1' && p->s[p->i] <= '9') {
        int r = js_digits(p, 1);
        if (r <= 0) return r;
    } else {
        return -1;
    }
    if (p->s[p->i] == '.') {
        p->i++;
        int r = js_digits(p, 1);
        if (r <= 0) return r;
    }
    if (p->s[p->i] == 'e' || p->s[p->i] == 'E') {
        p->i++;
        if (p->i >= p->n) return 0;
        if (p->s[p->i] == '+' || p->s[p->i] == '-') p->i++;
        int r = js_digits(p, 1);
        if (r <= 0) return r;
    }
    return 1;
}

static int js_value(js *p) {
    js_ws(p);
    if (p->i >= p->n) return 0;
    if (++p->depth > 256) return -1;
    unsigned char c = p->s[p->i];
    int r;
    if (c == '{' || c == '[') {
        unsigned char close = c == '{' ? '}' : ']';
        p->i++;
        js_ws(p);
        if (p->i >= p->n) return 0;
        if (p->s[p->i] == close) {
            p->i++;
            p->depth--;
            return 1;
        }
        for (;;) {
            if (c == '{') {
                js_ws(p);
                if ((r = js_string(p)) <= 0) return r;
                js_ws(p);
                if (p->i >= p->n) return 0;
                if (p->s[p->i] != ':') return -1;
                p->i++;
            }
            if ((r = js_value(p)) <= 0) return r;
            js_ws(p);
            if (p->i >= p->n) return 0;
            if (p->s[p->i] == ',') {
                p->i++;
                continue;
            }
            if (p->s[p->i] != close) return -1;
            p->i++;
            p->depth--;
            return 1;
        }
    }
    if (c == '"') {
        r = js_string(p);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        r = js_number(p);
    } else {
        static const char *const lits[] = {"true", "false", "null"};
        r = -1;
        for (int k = 0; k < 3; k++) {
            size_t l = strlen(lits[k]), have = p->n - p->i < l ? p->n - p->i : l;
            if (memcmp(p->s + p->i, lits[k], have) == 0) {
                p->i += have;
                r = have == l ? 1 : 0;
                break;
            }
        }
    }
    p->depth--;
    return r;
}

int vkf_json_scan(const char *s, size_t n, size_t *end) {
    js p = {(const unsigned char *)s, n, 0, 0};
    int r = js_value(&p);
    if (r == 1) *end = p.i;
    return r;
}

/* the decoded text of the JSON string at s[0..n) (quotes included when whole); an unfinished
 * one gives what is decoded so far (an unfinished escape left out) */
static char *js_decode(const char *s, size_t n) {
    vkf_sb o = {0};
    vkf_sb_put(&o, "", 0);
    for (size_t i = 1; i < n && s[i] != '"'; i++) {
        if (s[i] != '\\') {
            vkf_sb_putc(&o, s[i]);
            continue;
        }
        if (i + 1 >= n) break;
        char e = s[++i];
        const char *rep = e == 'n'   ? "\n"
                          : e == 't' ? "\t"
                          : e == 'r' ? "\r"
                          : e == 'b' ? "\b"
                          : e == 'f' ? "\f"
                                     : NULL;
        if (rep) {
            vkf_sb_puts(&o, rep);
        } else if (e == 'u') {
            if (i + 4 >= n) break;
            unsigned v = 0;
            sscanf(s + i + 1, "%4x", &v);
            i += 4;
            if (v >= 0xD800 && v <= 0xDBFF && i + 6 < n && s[i + 1] == '\\' && s[i + 2] == 'u') {
                unsigned lo = 0;
                sscanf(s + i + 3, "%4x", &lo);
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            char u[4];
            int k = v < 0x80 ? 1 : v < 0x800 ? 2 : v < 0x10000 ? 3 : 4;
            if (k == 1) u[0] = (char)v;
            if (k == 2) u[0] = (char)(0xC0 | (v >> 6)), u[1] = (char)(0x80 | (v & 0x3F));
            if (k == 3)
                u[0] = (char)(0xE0 | (v >> 12)), u[1] = (char)(0x80 | ((v >> 6) & 0x3F)),
                u[2] = (char)(0x80 | (v & 0x3F));
            if (k == 4)
                u[0] = (char)(0xF0 | (v >> 18)), u[1] = (char)(0x80 | ((v >> 12) & 0x3F)),
                u[2] = (char)(0x80 | ((v >> 6) & 0x3F)), u[3] = (char)(0x80 | (v & 0x3F));
            vkf_sb_put(&o, u, (size_t)k);
        } else {
            vkf_sb_putc(&o, e);
        }
    }
    return vkf_sb_take(&o);
}

/* ------------------------------------------------------------------ objects as calls */

/* One top-level field of an object: its key (decoded) and value span. */
typedef struct jfield {
    char key[48];
    size_t v0, v1; /* value span; v1 = n while unfinished */
    int state;     /* 1 whole, 0 unfinished */
} jfield;

/* The fields of the object at s[at] (which must be '{'): 1 whole (*end past '}'), 0 unfinished,
 * -1 not JSON. */
static int obj_fields(const char *s, size_t n, size_t at, jfield *f, int max, int *nf,
                      size_t *end) {
    js p = {(const unsigned char *)s, n, at + 1, 0};
    *nf = 0;
    js_ws(&p);
    if (p.i >= n) return 0;
    if (s[p.i] == '}') {
        *end = p.i + 1;
        return 1;
    }
    for (;;) {
        js_ws(&p);
        size_t k0 = p.i;
        int r = js_string(&p);
        if (r <= 0) return r;
        jfield *x = *nf < max ? &f[*nf] : NULL;
        if (x) {
            char *k = js_decode(s + k0, p.i - k0);
            snprintf(x->key, sizeof x->key, "%s", k ? k : "");
            free(k);
        }
        js_ws(&p);
        if (p.i >= n) return 0;
        if (s[p.i] != ':') return -1;
        p.i++;
        js_ws(&p);
        if (x) {
            x->v0 = p.i;
            x->v1 = n;
            x->state = 0;
            (*nf)++;
        }
        r = js_value(&p);
        if (r < 0) return r;
        if (r == 0) return 0;
        if (x) {
            x->v1 = p.i;
            x->state = 1;
        }
        js_ws(&p);
        if (p.i >= n) return 0;
        if (s[p.i] == ',') {
            p.i++;
            continue;
        }
        if (s[p.i] != '}') return -1;
        *end = p.i + 1;
        return 1;
    }
}

static const jfield *field(const jfield *f, int nf, const char *const *keys) {
    for (int k = 0; keys[k]; k++)
        for (int i = 0; i < nf; i++)
            if (!strcmp(f[i].key, keys[k])) return &f[i];
    return NULL;
}

static vkf_tcall *new_call(vkf_tparse *out) {
    if (out->n_calls == out->cap_calls) {
        int nc = out->cap_calls ? 2 * out->cap_calls : 4;
        vkf_tcall *c = realloc(out->calls, (size_t)nc * sizeof *c);
        if (!c) return NULL;
        out->calls = c;
        out->cap_calls = nc;
    }
    vkf_tcall *c = &out->calls[out->n_calls++];
    memset(c, 0, sizeof *c);
    return c;
}

static void drop_last_call(vkf_tparse *out) {
    vkf_tcall *c = &out->calls[--out->n_calls];
    free(c->id);
    free(c->name);
    free(c->args);
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* the arguments' text: an object or other value as written (trailing blanks off), a string
 * (arguments written as JSON in a string) decoded */
static char *args_text(const char *s, size_t v0, size_t v1) {
    while (v1 > v0 && is_ws((unsigned char)s[v1 - 1]))
        v1--;
    if (v1 > v0 && s[v0] == '"') return js_decode(s + v0, v1 - v0);
    return dup_n(s + v0, v1 - v0);
}

static const char *const k_name_keys[] = {"name", NULL};
static const char *const k_args_keys[] = {"arguments", "parameters", NULL};
static const char *const k_id_keys[] = {"id", NULL};

/* The object at s[at] as a call ({"name": ..., "arguments"|"parameters": ...}): 1 a whole
 * call (*end past the object), 0 unfinished (the call is open, filled as far as known), -1 not a
 * call (the call added is removed). */
static int object_call(vkf_tparse *out, const char *s, size_t n, size_t at, size_t *end) {
    jfield f[16];
    int nf;
    int r = obj_fields(s, n, at, f, 16, &nf, end);
    if (r < 0) return -1;
    const jfield *nm = field(f, nf, k_name_keys), *ar = field(f, nf, k_args_keys),
                 *id = field(f, nf, k_id_keys);
    if (r == 1 && (!nm || nm->state != 1 || s[nm->v0] != '"')) return -1;
    if (nm && nm->state == 1 && s[nm->v0] != '"') return -1;
    vkf_tcall *c = new_call(out);
    if (!c) return -1;
    if (nm && nm->state == 1) c->name = js_decode(s + nm->v0, nm->v1 - nm->v0);
    if (ar) c->args = args_text(s, ar->v0, ar->v1);
    if (id && id->state == 1 && s[id->v0] == '"') c->id = js_decode(s + id->v0, id->v1 - id->v0);
    if (r == 1) {
        if (!c->args) c->args = strdup("{}");
        c->complete = 1;
    }
    return r;
}

/* ------------------------------------------------------------------ text helpers */

static long find(const char *s, size_t n, size_t from, const char *m) {
    size_t ml = strlen(m);
    for (size_t i = from; i + ml <= n; i++)
        if (s[i] == m[0] && memcmp(s + i, m, ml) == 0) return (long)i;
    return -1;
}

/* bytes at the end of s[0..n) that begin one of the markers (to hold back while partial) */
static size_t marker_tail(const char *s, size_t n, const char *const *markers) {
    size_t best = 0;
    for (int k = 0; markers[k]; k++) {
        size_t ml = strlen(markers[k]);
        for (size_t t = ml - 1 < n ? ml - 1 : n; t > best; t--)
            if (memcmp(s + n - t, markers[k], t) == 0) {
                best = t;
                break;
            }
    }
    return best;
}

static size_t skip_ws(const char *s, size_t n, size_t i) {
    while (i < n && is_ws((unsigned char)s[i]))
        i++;
    return i;
}

static int starts(const char *s, size_t n, size_t i, const char *m) {
    size_t ml = strlen(m);
    return i + ml <= n && memcmp(s + i, m, ml) == 0;
}

/* s[i..n) is a proper prefix of m (the marker may still be coming) */
static int prefix_of(const char *s, size_t n, size_t i, const char *m) {
    size_t ml = strlen(m);
    return n - i < ml && memcmp(s + i, m, n - i) == 0;
}

typedef struct pctx {
    const char *s;
    size_t n;
    int partial;
    vkf_tparse *out;
} pctx;

static void content(pctx *c, size_t a, size_t b) {
    if (b > a) vkf_sb_put(&c->out->content, c->s + a, b - a);
}

/* the rest from i is text: all of it, or (partial) all but a tail that may begin a marker */
static void rest_is_text(pctx *c, size_t i, const char *const *markers) {
    size_t hold = c->partial && markers ? marker_tail(c->s + i, c->n - i, markers) : 0;
    content(c, i, c->n - hold);
    if (hold) c->out->open = 1;
}

/* ------------------------------------------------------------------ formats */

/* marker {JSON call} [close]: Hermes / Qwen */
static void parse_hermes(pctx *c) {
    static const char *open = "<tool_call>", *close = "</tool_call>";
    static const char *const markers[] = {"<tool_call>", NULL};
    const char *s = c->s;
    size_t n = c->n, pos = 0;
    for (;;) {
        long k = find(s, n, pos, open);
        if (k < 0) {
            rest_is_text(c, pos, markers);
            return;
        }
        content(c, pos, (size_t)k);
        size_t j = skip_ws(s, n, (size_t)k + strlen(open)), end;
        if (j >= n) { /* the call has not begun */
            if (c->partial)
                c->out->open = 1;
            else
                content(c, (size_t)k, n);
            return;
        }
        int r = s[j] == '{' ? object_call(c->out, s, n, j, &end) : -1;
        if (r < 0) { /* not a call: the marker is text */
            content(c, (size_t)k, (size_t)k + strlen(open));
            pos = (size_t)k + strlen(open);
            continue;
        }
        if (r == 0) {
            if (c->partial) {
                c->out->open = 1;
            } else { /* cut off: text */
                drop_last_call(c->out);
                content(c, (size_t)k, n);
            }
            return;
        }
        size_t e = skip_ws(s, n, end);
        if (starts(s, n, e, close)) {
            pos = e + strlen(close);
        } else if (e >= n || prefix_of(s, n, e, close)) { /* no closing tag (yet) */
            if (c->partial) {
                c->out->calls[c->out->n_calls - 1].complete = 0;
                c->out->open = 1;
                return;
            }
            pos = n; /* the answer ended after the object: a call all the same */
        } else {
            pos = end; /* something else follows the object: keep the call, read on */
        }
    }
}

/* f.call(key="value", n=1): Llama's built-in tools after <|python_tag|> */
static int builtin_call(pctx *c, size_t i) {
    const char *s = c->s;
    size_t n = c->n, j = i;
    while (j < n && (s[j] == '_' || s[j] == '.' || (s[j] >= 'a' && s[j] <= 'z') ||
                     (s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= '0' && s[j] <= '9')))
        j++;
    if (j >= n) return c->partial ? 0 : -1;
    if (j - i < 6 || memcmp(s + j - 5, ".call", 5) != 0 || s[j] != '(') return -1;
    vkf_tcall *call = new_call(c->out);
    if (!call) return -1;
    call->name = dup_n(s + i, j - 5 - i);
    vkf_sb a = {0};
    vkf_sb_putc(&a, '{');
    size_t k = j + 1;
    int first = 1;
    for (;;) {
        k = skip_ws(s, n, k);
        if (k >= n) goto unfinished;
        if (s[k] == ')') break;
        if (!first) {
            if (s[k] != ',') goto bad;
            k = skip_ws(s, n, k + 1);
        }
        size_t k0 = k;
        while (k < n && (s[k] == '_' || (s[k] >= 'a' && s[k] <= 'z') ||
                         (s[k] >= 'A' && s[k] <= 'Z') || (s[k] >= '0' && s[k] <= '9')))
            k++;
        size_t k1 = k;
        k = skip_ws(s, n, k);
        if (k >= n) goto unfinished;
        if (k1 == k0 || s[k] != '=') goto bad;
        k = skip_ws(s, n, k + 1);
        if (k >= n) goto unfinished;
        vkf_sb_printf(&a, "%s", first ? "" : ", ");
        vkf_sb_json_string(&a, s + k0, k1 - k0);
        vkf_sb_puts(&a, ": ");
        if (s[k] == '"' || s[k] == '\'') { /* a Python string -> a JSON string */
            char q = s[k];
            size_t v0 = ++k;
            while (k < n && s[k] != q)
                k += s[k] == '\\' ? 2 : 1;
            if (k >= n) goto unfinished;
            vkf_sb_json_string(&a, s + v0, k - v0);
            k++;
        } else {
            size_t e;
            int r = vkf_json_scan(s + k, n - k, &e);
            if (r == 0) goto unfinished;
            if (r < 0) goto bad;
            vkf_sb_put(&a, s + k, e);
            k += e;
        }
        first = 0;
    }
    vkf_sb_putc(&a, '}');
    call->args = vkf_sb_take(&a);
    call->complete = 1;
    return (int)(k + 1 - i) + 1; /* > 0: consumed */
unfinished:
    vkf_sb_free(&a);
    if (c->partial) return 0;
bad:
    vkf_sb_free(&a);
    drop_last_call(c->out);
    return -1;
}

/* {"name", "parameters"} objects at the start, or <|python_tag|> */
static void parse_llama3(pctx *c) {
    static const char *tag = "<|python_tag|>";
    static const char *const markers[] = {"<|python_tag|>", NULL};
    const char *s = c->s;
    size_t n = c->n, w = skip_ws(s, n, 0);
    if (c->partial && (w == n || prefix_of(s, n, w, tag))) { /* cannot tell yet */
        c->out->open = 1;
        return;
    }
    if (w == n) { /* blanks only */
        content(c, 0, n);
        return;
    }
    size_t i = w;
    if (starts(s, n, w, tag)) {
        i = skip_ws(s, n, w + strlen(tag));
        if (i >= n) {
            if (c->partial)
                c->out->open = 1;
            else
                content(c, 0, n);
            return;
        }
        if (s[i] != '{') {
            int r = builtin_call(c, i);
            if (r == 0) c->out->open = 1;
            if (r < 0) rest_is_text(c, 0, NULL);
            return;
        }
    }
    if (s[i] != '{') {
        rest_is_text(c, 0, markers);
        return;
    }
    int n_before = c->out->n_calls;
    for (;;) {
        size_t end;
        int r = object_call(c->out, s, n, i, &end);
        if (r < 0) { /* not a call: everything is text (calls before it included) */
            while (c->out->n_calls > n_before)
                drop_last_call(c->out);
            content(c, 0, n);
            return;
        }
        if (r == 0) {
            if (c->partial) {
                c->out->open = 1;
                if (!c->out->calls[c->out->n_calls - 1].name) /* unknown yet: not a call so far */
                    drop_last_call(c->out);
                return;
            }
            while (c->out->n_calls > n_before)
                drop_last_call(c->out);
            content(c, 0, n);
            return;
        }
        size_t e = skip_ws(s, n, end);
        if (e < n && s[e] == ';') e = skip_ws(s, n, e + 1);
        if (e >= n) return;
        if (s[e] != '{') { /* text after the calls */
            rest_is_text(c, e, NULL);
            return;
        }
        i = e;
    }
}

/* [TOOL_CALLS] then a list of calls, or name[ARGS]{...} */
static void parse_mistral(pctx *c) {
    static const char *mark = "[TOOL_CALLS]", *args_mark = "[ARGS]";
    static const char *const markers[] = {"[TOOL_CALLS]", NULL};
    const char *s = c->s;
    size_t n = c->n, pos = 0;
    for (;;) {
        long k = find(s, n, pos, mark);
        if (k < 0) {
            rest_is_text(c, pos, markers);
            return;
        }
        content(c, pos, (size_t)k);
        size_t i = skip_ws(s, n, (size_t)k + strlen(mark)), end;
        int n_before = c->out->n_calls;
        if (i >= n) {
            if (c->partial)
                c->out->open = 1;
            else
                content(c, (size_t)k, n);
            return;
        }
        int r = -1;
        if (s[i] == '[') { /* [{...}, {...}] */
            size_t j = skip_ws(s, n, i + 1);
            r = 0;
            while (j < n) {
                if (s[j] == ']' && c->out->n_calls > n_before) {
                    end = j + 1;
                    r = 1;
                    break;
                }
                if (s[j] != '{') {
                    r = -1;
                    break;
                }
                int q = object_call(c->out, s, n, j, &end);
                if (q <= 0) {
                    r = q;
                    break;
                }
                j = skip_ws(s, n, end);
                if (j < n && s[j] == ',') j = skip_ws(s, n, j + 1);
            }
        } else if (s[i] == '{') {
            r = object_call(c->out, s, n, i, &end);
        } else { /* name[ARGS]{...} */
            size_t j = i;
            while (j < n && !is_ws((unsigned char)s[j]) && s[j] != '[' && s[j] != '{')
                j++;
            if (j >= n || prefix_of(s, n, j, args_mark)) {
                r = 0;
            } else if (j > i && starts(s, n, j, args_mark)) {
                size_t v = skip_ws(s, n, j + strlen(args_mark)), e2;
                vkf_tcall *call = new_call(c->out);
                if (call) {
                    call->name = dup_n(s + i, j - i);
                    int q = v < n ? vkf_json_scan(s + v, n - v, &e2) : 0;
                    if (v < n) call->args = args_text(s, v, q == 1 ? v + e2 : n);
                    if (q == 1) {
                        call->complete = 1;
                        end = v + e2;
                    }
                    r = q;
                    if (q < 0) drop_last_call(c->out);
                }
            }
        }
        if (r < 0) { /* not calls: the marker is text */
            while (c->out->n_calls > n_before)
                drop_last_call(c->out);
            content(c, (size_t)k, (size_t)k + strlen(mark));
            pos = (size_t)k + strlen(mark);
            continue;
        }
        if (r == 0) {
            if (c->partial) {
                c->out->open = 1;
            } else {
                while (c->out->n_calls > n_before)
                    drop_last_call(c->out);
                content(c, (size_t)k, n);
            }
            return;
        }
        pos = skip_ws(s, n, end);
        if (pos >= n) return;
    }
}

/* DeepSeek's <｜tool▁call▁begin｜> blocks */
static void parse_deepseek(pctx *c) {
    static const char *calls_begin = "<｜tool▁calls▁begin｜>",
                      *call_begin = "<｜tool▁call▁begin｜>", *sep = "<｜tool▁sep｜>",
                      *call_end = "<｜tool▁call▁end｜>", *calls_end = "<｜tool▁calls▁end｜>";
    static const char *const markers[] = {"<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", NULL};
    const char *s = c->s;
    size_t n = c->n;
    long k = find(s, n, 0, calls_begin), k2 = find(s, n, 0, call_begin);
    if (k < 0 || (k2 >= 0 && k2 < k)) k = k2;
    if (k < 0) {
        rest_is_text(c, 0, markers);
        return;
    }
    content(c, 0, (size_t)k);
    size_t i = (size_t)k;
    if (starts(s, n, i, calls_begin)) i += strlen(calls_begin);
    int n_before = c->out->n_calls, state = 1;
    for (;;) {
        i = skip_ws(s, n, i);
        if (i >= n) {
            state = c->out->n_calls > n_before ? (c->partial ? 0 : 1) : 0;
            break;
        }
        if (starts(s, n, i, calls_end)) {
            i += strlen(calls_end);
            break;
        }
        if (prefix_of(s, n, i, calls_end) || prefix_of(s, n, i, call_begin)) {
            state = 0;
            break;
        }
        if (!starts(s, n, i, call_begin)) {
            state = c->out->n_calls > n_before ? 2 : -1; /* text after the calls, or none */
            break;
        }
        i += strlen(call_begin);
        long sp = find(s, n, i, sep);
        if (sp < 0) {
            state = 0;
            break;
        }
        size_t a0 = skip_ws(s, n, i), a1 = (size_t)sp;
        size_t j = (size_t)sp + strlen(sep), name0, name1;
        if (a1 - a0 == 8 && !memcmp(s + a0, "function", 8)) { /* R1: the name on its own line */
            name0 = j;
            long nl = find(s, n, j, "\n");
            if (nl < 0) {
                state = 0;
                break;
            }
            name1 = (size_t)nl;
            j = skip_ws(s, n, (size_t)nl);
            if (starts(s, n, j, "```json"))
                j += 7;
            else if (prefix_of(s, n, j, "```json")) {
                state = 0;
                break;
            }
        } else { /* V3.1: the name before the separator */
            name0 = a0;
            name1 = a1;
        }
        while (name1 > name0 && is_ws((unsigned char)s[name1 - 1]))
            name1--;
        vkf_tcall *call = new_call(c->out);
        if (!call) return;
        call->name = dup_n(s + name0, name1 - name0);
        size_t v = skip_ws(s, n, j), e;
        int q = v < n ? vkf_json_scan(s + v, n - v, &e) : 0;
        if (v < n) call->args = args_text(s, v, q == 1 ? v + e : n);
        if (q <= 0) {
            state = q;
            break;
        }
        size_t t = skip_ws(s, n, v + e);
        if (starts(s, n, t, "```")) t = skip_ws(s, n, t + 3);
        if (starts(s, n, t, call_end)) {
            call->complete = 1;
            i = t + strlen(call_end);
        } else if (t >= n || prefix_of(s, n, t, "```") || prefix_of(s, n, t, call_end)) {
            state = 0;
            break;
        } else {
            state = -1;
            break;
        }
    }
    if (state == 0 && c->partial) {
        c->out->open = 1;
        return;
    }
    if (state <= 0 && !(state == 0 && c->out->n_calls > n_before &&
                        c->out->calls[c->out->n_calls - 1].complete)) {
        while (c->out->n_calls > n_before)
            drop_last_call(c->out);
        content(c, (size_t)k, n);
        return;
    }
    while (c->out->n_calls > n_before && !c->out->calls[c->out->n_calls - 1].complete)
        drop_last_call(c->out);
    if (state == 2) rest_is_text(c, i, NULL);
}

static int ident_char(char ch) {
    return ch == '_' || ch == '-' || ch == '.' || (ch >= 'a' && ch <= 'z') ||
           (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* Functionary: <function=f>{...}</function> (v3.1), or >>>recipient\n segments (v3.2) */
static void parse_functionary(pctx *c) {
    const char *s = c->s;
    size_t n = c->n;
    if (find(s, n, 0, "<function=") >= 0 ||
        (c->partial && find(s, n, 0, ">>>") < 0 &&
         marker_tail(s, n, (const char *const[]){"<function=", NULL}))) {
        static const char *const markers[] = {"<function=", NULL};
        size_t pos = 0;
        for (;;) {
            long k = find(s, n, pos, "<function=");
            if (k < 0) {
                rest_is_text(c, pos, markers);
                return;
            }
            content(c, pos, (size_t)k);
            size_t i = (size_t)k + 10, j = i, end;
            while (j < n && s[j] != '>')
                j++;
            if (j >= n) {
                if (c->partial)
                    c->out->open = 1;
                else
                    content(c, (size_t)k, n);
                return;
            }
            vkf_tcall *call = new_call(c->out);
            if (!call) return;
            call->name = dup_n(s + i, j - i);
            size_t v = skip_ws(s, n, j + 1);
            int q = v < n ? vkf_json_scan(s + v, n - v, &end) : 0;
            if (v < n && q >= 0) call->args = args_text(s, v, q == 1 ? v + end : n);
            if (q == 1) {
                size_t t = skip_ws(s, n, v + end);
                if (starts(s, n, t, "</function>")) {
                    call->complete = 1;
                    pos = t + 11;
                    continue;
                }
                if (t >= n || prefix_of(s, n, t, "</function>"))
                    q = 0;
                else
                    q = -1;
            }
            if (q == 0 && c->partial) {
                c->out->open = 1;
                return;
            }
            if (q == 0 && !c->partial && call->args &&
                vkf_json_scan(call->args, strlen(call->args), &end) == 1) {
                call->complete = 1; /* the answer ended before </function> */
                return;
            }
            drop_last_call(c->out);
            content(c, (size_t)k, (size_t)k + 10);
            pos = (size_t)k + 10;
        }
    }
    /* v3.2: segments "recipient\n body", separated by ">>>" (the first one's ">>>" is the
     * prompt's) */
    size_t i = starts(s, n, 0, ">>>") ? 3 : 0;
    for (;;) {
        size_t j = i;
        while (j < n && ident_char(s[j]))
            j++;
        if (j >= n) { /* the recipient is not finished */
            if (c->partial)
                c->out->open = 1;
            else
                content(c, i, n);
            return;
        }
        if (j == i || s[j] != '\n') { /* no recipient: plain text */
            rest_is_text(c, i, NULL);
            return;
        }
        size_t b = j + 1;
        long next = find(s, n, b, ">>>");
        size_t e = next < 0 ? n : (size_t)next;
        if (j - i == 3 && !memcmp(s + i, "all", 3)) { /* text for the user */
            size_t hold = c->partial && next < 0
                              ? marker_tail(s + b, n - b, (const char *const[]){">>>", NULL})
                              : 0;
            content(c, b, e - hold);
            if (hold) c->out->open = 1;
        } else {
            size_t v = skip_ws(s, n, b), end;
            vkf_tcall *call = new_call(c->out);
            if (!call) return;
            call->name = dup_n(s + i, j - i);
            int q = v < e ? vkf_json_scan(s + v, e - v, &end) : 0;
            if (v < e && q >= 0) call->args = args_text(s, v, q == 1 ? v + end : e);
            if (q == 1) {
                call->complete = 1;
            } else if (q == 0 && c->partial && next < 0) {
                c->out->open = 1;
                return;
            } else { /* not JSON: the segment is text */
                drop_last_call(c->out);
                content(c, i, e);
            }
        }
        if (next < 0) return;
        i = (size_t)next + 3;
    }
}

/* the whole answer as one JSON value */
static void parse_generic(pctx *c) {
    const char *s = c->s;
    size_t n = c->n, w = skip_ws(s, n, 0), end;
    if (w >= n) {
        if (c->partial) c->out->open = 1;
        return;
    }
    if (s[w] != '{' && s[w] != '[') {
        content(c, 0, n);
        return;
    }
    int r = vkf_json_scan(s + w, n - w, &end);
    if (r < 0 || (r == 1 && skip_ws(s, n, w + end) < n)) {
        content(c, 0, n);
        return;
    }
    if (r == 0) { /* stream what is known: calls in "tool_calls" as they complete */
        if (!c->partial) {
            content(c, 0, n);
            return;
        }
        c->out->open = 1;
    }
    int n_before = c->out->n_calls, is_list = 0;
    size_t list = 0;
    int ok = 1;
    if (s[w] == '[') {
        list = w;
        is_list = 1;
    } else {
        jfield f[16];
        int nf;
        size_t oend;
        int q = obj_fields(s, n, w, f, 16, &nf, &oend);
        static const char *const tc[] = {"tool_calls", NULL}, *const one[] = {"tool_call", NULL},
                                 *const resp[] = {"response", NULL};
        const jfield *x;
        if ((x = field(f, nf, tc)) && s[x->v0] == '[') {
            list = x->v0;
            is_list = 1;
        } else if ((x = field(f, nf, one)) && s[x->v0] == '{') {
            size_t e2;
            if (object_call(c->out, s, n, x->v0, &e2) < 0) ok = 0;
        } else if (field(f, nf, k_name_keys)) {
            size_t e2;
            if (object_call(c->out, s, n, w, &e2) < 0) ok = 0;
        } else if ((x = field(f, nf, resp)) && s[x->v0] == '"' && q == 1) {
            char *t = js_decode(s + x->v0, x->v1 - x->v0);
            if (t) vkf_sb_puts(&c->out->content, t);
            free(t);
            return;
        } else if (q == 1 || !c->partial) {
            ok = 0;
        }
    }
    if (is_list) { /* [{call}, {call}, ...] */
        size_t j = skip_ws(s, n, list + 1), e2;
        while (j < n && s[j] == '{') {
            int q = object_call(c->out, s, n, j, &e2);
            if (q < 0) {
                ok = 0;
                break;
            }
            if (q == 0) break;
            j = skip_ws(s, n, e2);
            if (j < n && s[j] == ',') j = skip_ws(s, n, j + 1);
        }
        if (ok && j < n && s[j] != ']' && s[j] != '{') ok = 0;
    }
    if (!ok || (r == 1 && c->out->n_calls == n_before)) {
        while (c->out->n_calls > n_before)
            drop_last_call(c->out);
        if (r == 1 || !c->partial) content(c, 0, n);
        return;
    }
    if (r == 0) /* an unfinished call with no name yet is not announced */
        while (c->out->n_calls > n_before && !c->out->calls[c->out->n_calls - 1].name)
            drop_last_call(c->out);
}

int vkf_tool_parse_text(vkf_tool_format f, const char *text, size_t len, int partial,
                        vkf_tparse *out) {
    memset(out, 0, sizeof *out);
    vkf_sb_put(&out->content, "", 0);
    pctx c = {text, len, partial, out};
    switch (f) {
    case VKF_TOOL_FORMAT_HERMES: parse_hermes(&c); break;
    case VKF_TOOL_FORMAT_LLAMA3: parse_llama3(&c); break;
    case VKF_TOOL_FORMAT_MISTRAL: parse_mistral(&c); break;
    case VKF_TOOL_FORMAT_DEEPSEEK: parse_deepseek(&c); break;
    case VKF_TOOL_FORMAT_FUNCTIONARY: parse_functionary(&c); break;
    default: parse_generic(&c); break;
    }
    /* a call is whole only with its name and arguments */
    for (int i = 0; i < out->n_calls; i++)
        if (!out->calls[i].name || !out->calls[i].name[0]) {
            if (!partial || i + 1 < out->n_calls) out->calls[i].complete = 0;
        }
    return out->content.oom ? -1 : 0;
}

void vkf_tparse_free(vkf_tparse *p) {
    for (int i = 0; i < p->n_calls; i++) {
        free(p->calls[i].id);
        free(p->calls[i].name);
        free(p->calls[i].args);
    }
    free(p->calls);
    vkf_sb_free(&p->content);
    memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------------ ids */

static pthread_mutex_t g_id_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_id_state;

void vkf_tool_call_id(vkf_tool_format f, char *out, size_t n) {
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    pthread_mutex_lock(&g_id_mu);
    if (!g_id_state) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        g_id_state = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec;
    }
    size_t len = f == VKF_TOOL_FORMAT_MISTRAL ? 9 : 24, k = 0;
    if (f != VKF_TOOL_FORMAT_MISTRAL) k = (size_t)snprintf(out, n, "call_");
    for (size_t i = 0; i < len && k + 1 < n; i++) {
        g_id_state ^= g_id_state << 13;
        g_id_state ^= g_id_state >> 7;
        g_id_state ^= g_id_state << 17;
        out[k++] = alnum[g_id_state % 62];
    }
    out[k] = 0;
    pthread_mutex_unlock(&g_id_mu);
}
