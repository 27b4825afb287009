/* Grammar expressions for JSON Schema's number ranges and string patterns (json_schema.h).
 *
 * Number ranges. A bound is a decimal (sign, integer digits, fraction digits); a number
 * I(.F)? in range is split by its integer part: strictly between the bounds' integer parts any
 * fraction will do; equal to one of them, the fraction is compared digit by digit with the
 * bound's. Negative numbers are "-" and a magnitude in the mirrored range (-0 is never
 * produced). Integer parts are digit strings without leading zeros split by length, each length
 * a prefix decomposition ([1] [5-9] | [2-9] [0-9] for 15..99).
 *
 * Patterns. ECMAScript syntax, as JSON Schema says: literals, escapes, classes, ., groups
 * ((?:...) and (?<name>...) too), |, * + ? {m} {m,} {m,n} (lazy forms match the same
 * strings), \d \w \s and their negations. A pattern matches anywhere in the string unless ^ or
 * $ anchors it; an unanchored side becomes any characters. The grammar writes the JSON text of
 * the string: " \ and control characters as their escapes; classes and . allow the printable
 * characters raw and the escapes \" \\ \t \n \r where the class includes them (a subset of the
 * strings the pattern matches, never a string it does not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "structured/json_schema.h"

#define MAX_DIGITS 16 /* integer and fraction digits (llama.cpp's integral-part, decimal-part) */

/* ------------------------------------------------------------------ decimals */

int vkf_jdec_from_double(double v, vkf_jdec *d) {
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) { /* the shortest text that reads back as v */
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    memset(d, 0, sizeof *d);
    const char *p = buf;
    if (*p == '-') {
        d->neg = 1;
        p++;
    }
    char mant[32];
    int k = 0, point = -1;
    for (; *p && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.')
            point = k;
        else if (k < 30)
            mant[k++] = *p;
    }
    if (point < 0) point = k;
    if (*p) point += atoi(p + 1); /* the exponent moves the point */
    if (point > MAX_DIGITS || point < -MAX_DIGITS) return 0;
    /* integer digits: mant[0..point) (zeros past k); fraction: the rest (zeros before 0) */
    int n = 0;
    for (int i = 0; i < point; i++)
        d->i[n++] = i < k ? mant[i] : '0';
    d->i[n] = 0;
    n = 0;
    for (int i = point < 0 ? point : point; i < k; i++)
        d->f[n++] = i < 0 ? '0' : mant[i];
    d->f[n] = 0;
    /* no leading zeros, no trailing fraction zeros */
    char *q = d->i;
    while (q[0] == '0' && q[1])
        q++;
    memmove(d->i, q, strlen(q) + 1);
    if (!d->i[0]) strcpy(d->i, "0");
    while (n > 0 && d->f[n - 1] == '0')
        d->f[--n] = 0;
    if (strlen(d->i) > MAX_DIGITS || strlen(d->f) > MAX_DIGITS) return 0;
    if (!strcmp(d->i, "0") && !d->f[0]) d->neg = 0; /* -0 is 0 */
    return 1;
}

static int cmp_int(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb) return la < lb ? -1 : 1;
    int c = strcmp(a, b);
    return c < 0 ? -1 : c > 0;
}

/* a + delta (delta +1 or -1) for a non-negative digit string (a > 0 when delta is -1) */
static void int_add1(const char *a, int delta, char *out) {
    char t[48];
    size_t n = strlen(a);
    t[0] = '0';
    memcpy(t + 1, a, n + 1);
    for (size_t i = n; i > 0; i--) {
        int dgt = t[i] - '0' + delta;
        if (dgt >= 0 && dgt <= 9) {
            t[i] = (char)('0' + dgt);
            break;
        }
        t[i] = delta > 0 ? '0' : '9';
        if (i == 1) t[0] = '1'; /* only reached by +1 on all nines */
    }
    const char *p = t;
    while (p[0] == '0' && p[1])
        p++;
    strcpy(out, p);
}

static int all_of(const char *s, size_t n, char c) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != c) return 0;
    return 1;
}

static void digit_class(vkf_sb *o, int a, int b) {
    if (a == b)
        vkf_sb_printf(o, "[%c]", a);
    else
        vkf_sb_printf(o, "[%c-%c]", a, b);
}

static void any_digits(vkf_sb *o, int min, int max) {
    if (max <= 0) return;
    if (min == 1 && max == 1)
        vkf_sb_puts(o, "[0-9]");
    else if (min == max)
        vkf_sb_printf(o, "[0-9]{%d}", min);
    else
        vkf_sb_printf(o, "[0-9]{%d,%d}", min, max);
}

/* digit strings of length n in [a, b] (a <= b, the same length, n <= MAX_DIGITS: int_range
 * refuses longer bounds) */
static void same_len(vkf_sb *o, const char *a, const char *b, size_t n) {
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    if (i == n) {
        vkf_sb_gbnf_literal(o, a, n);
        return;
    }
    if (i > 0) {
        vkf_sb_gbnf_literal(o, a, i);
        vkf_sb_putc(o, ' ');
    }
    a += i;
    b += i;
    size_t m = n - i;
    if (m == 1) {
        digit_class(o, a[0], b[0]);
        return;
    }
    /* the digits after the first: 1 .. MAX_DIGITS - 1 (n <= MAX_DIGITS, m >= 2); said to the
     * optimizer too, which cannot follow the bound through the recursion */
    size_t tail = m - 1;
    char fill[MAX_DIGITS + 1];
    if (tail >= sizeof fill) return;
    int low0 = all_of(a + 1, tail, '0'), high9 = all_of(b + 1, tail, '9');
    int lo = a[0], hi = b[0], first = 1;
    vkf_sb_putc(o, '(');
    if (!low0) { /* a[0] followed by [a[1..], 99..9] */
        memset(fill, '9', tail);
        fill[tail] = 0;
        digit_class(o, lo, lo);
        vkf_sb_puts(o, " (");
        same_len(o, a + 1, fill, tail);
        vkf_sb_putc(o, ')');
        first = 0;
        lo++;
    }
    int mid_hi = high9 ? hi : hi - 1;
    if (lo <= mid_hi) { /* any tail */
        if (!first) vkf_sb_puts(o, " | ");
        digit_class(o, lo, mid_hi);
        vkf_sb_putc(o, ' ');
        any_digits(o, (int)tail, (int)tail);
        first = 0;
    }
    if (!high9) { /* b[0] followed by [00..0, b[1..]] */
        memset(fill, '0', tail);
        fill[tail] = 0;
        if (!first) vkf_sb_puts(o, " | ");
        digit_class(o, hi, hi);
        vkf_sb_puts(o, " (");
        same_len(o, fill, b + 1, tail);
        vkf_sb_putc(o, ')');
    }
    vkf_sb_putc(o, ')');
}

/* non-negative integers without leading zeros in [lo, hi] (hi NULL: any up to MAX_DIGITS
 * digits), as "( ... )"; 0 when empty */
static int int_range(vkf_sb *o, const char *lo, const char *hi) {
    size_t ll = strlen(lo), hl = hi ? strlen(hi) : MAX_DIGITS;
    if ((hi && (cmp_int(lo, hi) > 0 || hl > MAX_DIGITS)) || ll > MAX_DIGITS) return 0;
    vkf_sb_putc(o, '(');
    for (size_t len = ll; len <= hl; len++) {
        char a[48], b[48];
        if (len > ll) vkf_sb_puts(o, " | ");
        if (!hi && len > ll) { /* every longer length at once */
            vkf_sb_puts(o, "[1-9] ");
            any_digits(o, (int)len - 1, MAX_DIGITS - 1);
            break;
        }
        if (len == ll) {
            strcpy(a, lo);
        } else {
            a[0] = '1';
            memset(a + 1, '0', len - 1);
            a[len] = 0;
        }
        if (hi && len == hl) {
            strcpy(b, hi);
        } else {
            memset(b, '9', len);
            b[len] = 0;
        }
        same_len(o, a, b, len);
    }
    vkf_sb_putc(o, ')');
    return 1;
}

/* What the remaining fraction digits' value v must satisfy: v >= 0.l (lex: >) when hl, and
 * v <= 0.h (hex: <) when hh; l and h without trailing zeros. */
typedef struct fcon {
    const char *l, *h;
    int lex, hex, hl, hh;
} fcon;

static void fcon_norm(fcon *c) {
    if (c->hl && !c->l[0] && !c->lex) c->hl = 0; /* v >= 0: always */
}

static int fcon_dead(const fcon *c) { return c->hh && c->hex && !c->h[0]; } /* v < 0 */

static int fcon_end_ok(const fcon *c) { /* the digits may stop here: v = 0 */
    if (c->hl) return 0; /* normalized: an active lower bound needs v > 0 or v >= 0.l > 0 */
    return !fcon_dead(c);
}

/* the continuation after first digit d, or -1 when d fails */
static int fcon_next(const fcon *c, int d, fcon *n) {
    *n = *c;
    if (c->hl) {
        int lc = c->l[0] ? c->l[0] : '0';
        if (d < lc) return -1;
        if (d > lc) {
            n->hl = 0;
        } else if (c->l[0]) {
            n->l = c->l + 1;
        } /* l empty, v > 0, d == '0': still v > 0 */
    }
    if (c->hh) {
        int hc = c->h[0] ? c->h[0] : '0';
        if (!c->h[0] && c->hex) return -1;
        if (d > hc) return -1;
        if (d < hc)
            n->hh = 0;
        else if (c->h[0])
            n->h = c->h + 1;
    }
    fcon_norm(n);
    return fcon_dead(n) ? -1 : 0;
}

/* 1..r fraction digits satisfying c, as "( ... )"; 0 when none do */
static int frac_digits(vkf_sb *o, fcon c, int r) {
    if (!c.hl && !c.hh) {
        vkf_sb_putc(o, '(');
        any_digits(o, 1, r);
        vkf_sb_putc(o, ')');
        return 1;
    }
    int first = 1;
    vkf_sb_putc(o, '(');
    for (int d = '0'; d <= '9'; d++) {
        fcon n;
        if (fcon_next(&c, d, &n) < 0) continue;
        if (!n.hl && !n.hh) { /* free: the run of free digits from d */
            int e = d;
            fcon m;
            while (e < '9' && fcon_next(&c, e + 1, &m) == 0 && !m.hl && !m.hh)
                e++;
            if (!first) vkf_sb_puts(o, " | ");
            first = 0;
            digit_class(o, d, e);
            if (r > 1) {
                vkf_sb_putc(o, ' ');
                any_digits(o, 0, r - 1);
            }
            d = e;
            continue;
        }
        int end = fcon_end_ok(&n);
        vkf_sb sub = {0};
        int more = r > 1 && frac_digits(&sub, n, r - 1);
        if (end || more) {
            if (!first) vkf_sb_puts(o, " | ");
            first = 0;
            digit_class(o, d, d);
            if (more) {
                vkf_sb_putc(o, ' ');
                vkf_sb_put(o, sub.p, sub.n);
                if (end) vkf_sb_putc(o, '?');
            }
        }
        vkf_sb_free(&sub);
    }
    vkf_sb_putc(o, ')');
    return !first;
}

/* (" ." digits)? satisfying c after an integer part; 0 when nothing does */
static int frac_part(vkf_sb *o, fcon c, int allow_frac) {
    fcon_norm(&c);
    if (fcon_dead(&c)) return 0;
    int end = fcon_end_ok(&c);
    if (!allow_frac) return end; /* integers: only the empty fraction */
    vkf_sb d = {0};
    int some = frac_digits(&d, c, MAX_DIGITS);
    if (some) {
        vkf_sb_puts(o, " (\".\" ");
        vkf_sb_put(o, d.p, d.n);
        vkf_sb_puts(o, end ? ")?" : ")");
    }
    vkf_sb_free(&d);
    return some || end;
}

/* non-negative numbers I(.F)? with lo (<: lex) <= x <= hi (<: hex); lo and hi non-negative,
 * hi may be NULL; as "( ... )"; 0 when none */
static int nonneg_range(vkf_sb *o, const vkf_jdec *lo, int lex, const vkf_jdec *hi, int hex,
                        int allow_frac) {
    int first = 1;
    vkf_sb_putc(o, '(');
    if (hi && cmp_int(lo->i, hi->i) == 0) { /* one integer part: both bounds on the fraction */
        fcon c = {lo->f, hi->f, lex, hex, 1, 1};
        vkf_sb t = {0};
        vkf_sb_gbnf_literal(&t, lo->i, strlen(lo->i));
        if (frac_part(&t, c, allow_frac)) {
            vkf_sb_put(o, t.p, t.n);
            first = 0;
        }
        vkf_sb_free(&t);
    } else if (!hi || cmp_int(lo->i, hi->i) < 0) {
        fcon c = {lo->f, "", lex, 0, 1, 0}; /* I == lo.i */
        vkf_sb t = {0};
        vkf_sb_gbnf_literal(&t, lo->i, strlen(lo->i));
        if (frac_part(&t, c, allow_frac)) {
            vkf_sb_put(o, t.p, t.n);
            first = 0;
        }
        vkf_sb_free(&t);
        char a[48], b[48]; /* lo.i < I < hi.i: any fraction */
        int_add1(lo->i, 1, a);
        if (hi) int_add1(hi->i, -1, b);
        vkf_sb mid = {0};
        if ((!hi || cmp_int(a, b) <= 0) && int_range(&mid, a, hi ? b : NULL)) {
            if (!first) vkf_sb_puts(o, " | ");
            first = 0;
            vkf_sb_put(o, mid.p, mid.n);
            if (allow_frac) vkf_sb_puts(o, " (\".\" [0-9]{1,16})?");
        }
        vkf_sb_free(&mid);
        if (hi) { /* I == hi.i */
            fcon d = {"", hi->f, 0, hex, 0, 1};
            vkf_sb h = {0};
            vkf_sb_gbnf_literal(&h, hi->i, strlen(hi->i));
            if (frac_part(&h, d, allow_frac)) {
                if (!first) vkf_sb_puts(o, " | ");
                first = 0;
                vkf_sb_put(o, h.p, h.n);
            }
            vkf_sb_free(&h);
        }
    }
    vkf_sb_putc(o, ')');
    return !first;
}

static int sign_of(const vkf_jdec *d) {
    if (!strcmp(d->i, "0") && !d->f[0]) return 0;
    return d->neg ? -1 : 1;
}

int vkf_js_number_range(vkf_sb *out, const vkf_jdec *lo, int lo_excl, const vkf_jdec *hi,
                        int hi_excl, int allow_frac) {
    static const vkf_jdec zero = {0, "0", ""};
    vkf_sb o = {0};
    int any = 0;
    /* negative numbers: "-" m with m > 0 (or m >(=) |hi| when hi < 0) and m <(=) |lo| */
    if (!lo || sign_of(lo) < 0) {
        vkf_jdec mlo = zero, mhi = zero;
        int mlex = 1; /* m > 0: -0 is never written */
        if (hi && sign_of(hi) < 0) {
            mlo = *hi;
            mlo.neg = 0;
            mlex = hi_excl;
        }
        if (lo) {
            mhi = *lo;
            mhi.neg = 0;
        }
        vkf_sb m = {0};
        if (nonneg_range(&m, &mlo, mlex, lo ? &mhi : NULL, lo_excl, allow_frac)) {
            vkf_sb_puts(&o, "\"-\" ");
            vkf_sb_put(&o, m.p, m.n);
            any = 1;
        }
        vkf_sb_free(&m);
    }
    /* non-negative numbers */
    if (!hi || sign_of(hi) > 0 || (sign_of(hi) == 0 && !hi_excl)) {
        const vkf_jdec *l = lo && sign_of(lo) >= 0 ? lo : &zero;
        int lex = lo && sign_of(lo) >= 0 ? lo_excl : 0;
        vkf_sb m = {0};
        if (nonneg_range(&m, l, lex, hi, hi_excl, allow_frac)) {
            if (any) vkf_sb_puts(&o, " | ");
            vkf_sb_put(&o, m.p, m.n);
            any = 1;
        }
        vkf_sb_free(&m);
    }
    if (any && !o.oom) {
        vkf_sb_putc(out, '(');
        vkf_sb_put(out, o.p, o.n);
        vkf_sb_putc(out, ')');
    }
    vkf_sb_free(&o);
    return any;
}

/* ------------------------------------------------------------------ patterns */

typedef struct crange {
    uint32_t lo, hi;
} crange;

typedef struct cset {
    crange *r;
    size_t n, cap;
    int neg;
} cset;

typedef struct rx {
    uint32_t *cp; /* the pattern's code points */
    size_t n, i;
    const char *char_rule;
    vkf_status st;
    char *err;
    size_t errn;
    int depth;
} rx;

static int rx_fail(rx *x, vkf_status st, const char *what) {
    if (x->st == VKF_OK) {
        x->st = st;
        snprintf(x->err, x->errn, "%s (at character %zu)", what, x->i);
    }
    return -1;
}

static int cset_add(cset *s, uint32_t lo, uint32_t hi) {
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 8;
        crange *r = realloc(s->r, nc * sizeof *r);
        if (!r) return -1;
        s->r = r;
        s->cap = nc;
    }
    s->r[s->n++] = (crange){lo, hi};
    return 0;
}

static int cset_has(const cset *s, uint32_t c) {
    int in = 0;
    for (size_t i = 0; i < s->n && !in; i++)
        in = s->r[i].lo <= c && c <= s->r[i].hi;
    return in != s->neg;
}

/* ECMAScript's \s: WhiteSpace and LineTerminator */
static const crange k_space[] = {
    {0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
static const crange k_digit[] = {{'0', '9'}};
static const crange k_word[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};

static int cset_add_all(cset *s, const crange *r, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (cset_add(s, r[i].lo, r[i].hi)) return -1;
    return 0;
}

void vkf_js_class_char(vkf_sb *o, uint32_t c) {
    if (c == ']' || c == '\\' || c == '-' || c == '[')
        vkf_sb_printf(o, "\\%c", (char)c);
    else if (c >= 0x20 && c < 0x7F && c != '^')
        vkf_sb_putc(o, (char)c);
    else if (c < 0x100)
        vkf_sb_printf(o, "\\x%02X", c);
    else if (c < 0x10000)
        vkf_sb_printf(o, "\\u%04X", c);
    else
        vkf_sb_printf(o, "\\U%08X", c);
}

static void class_range(vkf_sb *o, uint32_t a, uint32_t b) {
    vkf_js_class_char(o, a);
    if (b != a) {
        vkf_sb_putc(o, '-');
        vkf_js_class_char(o, b);
    }
}

/* The JSON string characters for the code points of s: printable ones raw (a GBNF class),
 * " \ and the usual control characters as their escapes. -1 when s holds none. */
static int emit_set(rx *x, vkf_sb *o, const cset *s) {
    static const uint32_t esc_cp[] = {'"', '\\', '\n', '\r', '\t'};
    static const char *const esc_txt[] = {"\"\\\\\\\"\"", "\"\\\\\\\\\"", "\"\\\\n\"", "\"\\\\r\"",
                                          "\"\\\\t\""};
    vkf_sb raw = {0};
    int have_raw = 0;
    if (s->neg) { /* everything but the ranges and what JSON escapes */
        vkf_sb_puts(&raw, "[^");
        for (size_t i = 0; i < s->n; i++)
            class_range(&raw, s->r[i].lo, s->r[i].hi);
        vkf_sb_puts(&raw, "\"\\\\\\x7F\\x00-\\x1F]");
        have_raw = 1;
    } else { /* the ranges less the control characters, " \ and DEL */
        static const uint32_t cut[] = {0x22, 0x5C, 0x7F};
        vkf_sb_putc(&raw, '[');
        for (size_t i = 0; i < s->n; i++) {
            uint32_t a = s->r[i].lo < 0x20 ? 0x20 : s->r[i].lo, hi = s->r[i].hi;
            for (int k = 0; k < 3 && a <= hi; k++) {
                if (cut[k] < a) continue;
                if (cut[k] > hi) break;
                if (a < cut[k]) {
                    class_range(&raw, a, cut[k] - 1);
                    have_raw = 1;
                }
                a = cut[k] + 1;
            }
            if (a <= hi) {
                class_range(&raw, a, hi);
                have_raw = 1;
            }
        }
        vkf_sb_putc(&raw, ']');
    }
    int n_alt = have_raw;
    for (int k = 0; k < 5; k++)
        n_alt += cset_has(s, esc_cp[k]);
    if (n_alt == 0) {
        vkf_sb_free(&raw);
        return rx_fail(x, VKF_ERROR_UNSUPPORTED, "a character class that matches no character");
    }
    if (n_alt > 1) vkf_sb_putc(o, '(');
    int first = 1;
    if (have_raw) {
        vkf_sb_put(o, raw.p, raw.n);
        first = 0;
    }
    for (int k = 0; k < 5; k++)
        if (cset_has(s, esc_cp[k])) {
            if (!first) vkf_sb_puts(o, " | ");
            first = 0;
            vkf_sb_puts(o, esc_txt[k]);
        }
    if (n_alt > 1) vkf_sb_putc(o, ')');
    vkf_sb_free(&raw);
    return 0;
}

static int hex_digits(rx *x, int n, uint32_t *v) {
    *v = 0;
    for (int k = 0; k < n; k++) {
        if (x->i >= x->n) return rx_fail(x, VKF_ERROR_FORMAT, "a hex escape too short");
        uint32_t c = x->cp[x->i++];
        int h = c >= '0' && c <= '9'   ? (int)c - '0'
                : c >= 'a' && c <= 'f' ? (int)c - 'a' + 10
                : c >= 'A' && c <= 'F' ? (int)c - 'A' + 10
                                       : -1;
        if (h < 0) return rx_fail(x, VKF_ERROR_FORMAT, "a bad hex escape");
        *v = *v << 4 | (uint32_t)h;
    }
    return 0;
}

/* after '\': one character (*c) or a class (*is_set, s); in_class: inside [...] */
static int parse_escape(rx *x, int in_class, uint32_t *c, cset *s, int *is_set) {
    *is_set = 0;
    if (x->i >= x->n) return rx_fail(x, VKF_ERROR_FORMAT, "a pattern ending in '\\'");
    uint32_t e = x->cp[x->i++];
    switch (e) {
    case 'd':
    case 'w':
    case 's':
    case 'D':
    case 'W':
    case 'S': {
        int up = e < 'a';
        if (up && in_class)
            return rx_fail(x, VKF_ERROR_UNSUPPORTED, "\\D, \\W or \\S inside a character class");
        *is_set = 1;
        s->neg = up;
        uint32_t lower = up ? e + 32 : e;
        return lower == 'd'   ? cset_add_all(s, k_digit, 1)
               : lower == 'w' ? cset_add_all(s, k_word, 4)
                              : cset_add_all(s, k_space, sizeof k_space / sizeof *k_space);
    }
    case 't': *c = '\t'; return 0;
    case 'n': *c = '\n'; return 0;
    case 'r': *c = '\r'; return 0;
    case 'f': *c = '\f'; return 0;
    case 'v': *c = '\v'; return 0;
    case '0': *c = 0; return 0;
    case 'x': return hex_digits(x, 2, c);
    case 'u': return hex_digits(x, 4, c);
    case 'b':
        if (in_class) {
            *c = 8;
            return 0;
        }
        return rx_fail(x, VKF_ERROR_UNSUPPORTED, "a word boundary (\\b)");
    case 'B': return rx_fail(x, VKF_ERROR_UNSUPPORTED, "a word boundary (\\B)");
    case 'c': return rx_fail(x, VKF_ERROR_UNSUPPORTED, "a control escape (\\c)");
    case 'p':
    case 'P': return rx_fail(x, VKF_ERROR_UNSUPPORTED, "a Unicode property (\\p)");
    case 'k': return rx_fail(x, VKF_ERROR_UNSUPPORTED, "a back reference (\\k)");
    default:
        if (e >= '1' && e <= '9')
            return rx_fail(x, VKF_ERROR_UNSUPPORTED, "a back reference (\\1 .. \\9)");
        *c = e; /* identity escape: \. \[ \- \/ ... */
        return 0;
    }
}

/* [...] after '[' */
static int parse_class(rx *x, cset *s) {
    if (x->i < x->n && x->cp[x->i] == '^') {
        s->neg = 1;
        x->i++;
    }
    int first = 1;
    for (;;) {
        if (x->i >= x->n) return rx_fail(x, VKF_ERROR_FORMAT, "an unterminated character class");
        uint32_t c = x->cp[x->i];
        if (c == ']' && !first) {
            x->i++;
            return 0;
        }
        if (c == ']') { /* []: matches nothing in ECMAScript */
            x->i++;
            return rx_fail(x, VKF_ERROR_UNSUPPORTED, "an empty character class []");
        }
        first = 0;
        x->i++;
        uint32_t lo = c;
        if (c == '\\') {
            cset sub = {0};
            int is_set;
            if (parse_escape(x, 1, &lo, &sub, &is_set)) {
                free(sub.r);
                return -1;
            }
            if (is_set) {
                int r = cset_add_all(s, sub.r, sub.n);
                free(sub.r);
                if (r) return rx_fail(x, VKF_ERROR_OUT_OF_MEMORY, "out of memory");
                continue;
            }
        }
        uint32_t hi = lo;
        if (x->i + 1 < x->n && x->cp[x->i] == '-' && x->cp[x->i + 1] != ']') {
            x->i++;
            hi = x->cp[x->i++];
            if (hi == '\\') {
                cset sub = {0};
                int is_set;
                int r = parse_escape(x, 1, &hi, &sub, &is_set);
                free(sub.r);
                if (r) return -1;
                if (is_set) return rx_fail(x, VKF_ERROR_FORMAT, "a class escape as a range end");
            }
            if (hi < lo) return rx_fail(x, VKF_ERROR_FORMAT, "a range out of order");
        }
        if (cset_add(s, lo, hi)) return rx_fail(x, VKF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
}

static int parse_alt(rx *x, vkf_sb *o);

/* one atom and its quantifier appended to o; *lit gets the JSON text of a single unquantified
 * character (to merge literals), else *lit_len = 0 */
static int parse_atom(rx *x, vkf_sb *o, char *lit, size_t *lit_len) {
    *lit_len = 0;
    vkf_sb a = {0};
    uint32_t c = x->cp[x->i++];
    int single = 0, rc = 0;
    cset s = {0};
    if (c == '(') {
        if (x->i < x->n && x->cp[x->i] == '?') {
            uint32_t k = x->i + 1 < x->n ? x->cp[x->i + 1] : 0;
            uint32_t k2 = x->i + 2 < x->n ? x->cp[x->i + 2] : 0;
            if (k == ':') {
                x->i += 2;
            } else if (k == '<' && k2 != '=' && k2 != '!') { /* (?<name>...) */
                while (x->i < x->n && x->cp[x->i] != '>')
                    x->i++;
                if (x->i >= x->n) return rx_fail(x, VKF_ERROR_FORMAT, "an unterminated group name");
                x->i++;
            } else {
                return rx_fail(x, VKF_ERROR_UNSUPPORTED,
                               "a lookaround or group flag ((?=, (?!, (?<=, (?<!)");
            }
        }
        if (++x->depth > 64)
            return rx_fail(x, VKF_ERROR_UNSUPPORTED, "groups nested deeper than 64");
        vkf_sb_putc(&a, '(');
        rc = parse_alt(x, &a);
        vkf_sb_putc(&a, ')');
        x->depth--;
        if (!rc && (x->i >= x->n || x->cp[x->i] != ')'))
            rc = rx_fail(x, VKF_ERROR_FORMAT, "unbalanced parentheses");
        if (!rc) x->i++;
    } else if (c == '[') {
        rc = parse_class(x, &s);
        if (!rc) rc = emit_set(x, &a, &s);
    } else if (c == '.') { /* anything but line terminators */
        s.neg = 1;
        rc = cset_add(&s, '\n', '\n') || cset_add(&s, '\r', '\r') || cset_add(&s, 0x2028, 0x2029);
        if (!rc) rc = emit_set(x, &a, &s);
    } else if (c == '\\') {
        int is_set;
        uint32_t ch;
        rc = parse_escape(x, 0, &ch, &s, &is_set);
        if (!rc && is_set) rc = emit_set(x, &a, &s);
        if (!rc && !is_set) {
            c = ch;
            single = 1;
        }
    } else if (c == '^' || c == '$') {
        rc = rx_fail(x, VKF_ERROR_UNSUPPORTED, "^ or $ inside the pattern (only at its ends)");
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        rc = rx_fail(x, VKF_ERROR_FORMAT, "nothing to repeat");
    } else if (c == ')') {
        rc = rx_fail(x, VKF_ERROR_FORMAT, "unbalanced parentheses");
    } else {
        single = 1;
    }
    free(s.r);
    if (rc) {
        vkf_sb_free(&a);
        return -1;
    }
    char jl[16];
    size_t jn = 0;
    if (single) { /* the character as JSON writes it */
        vkf_sb j = {0};
        char u8[4];
        size_t un = 0;
        if (c < 0x80)
            u8[un++] = (char)c;
        else if (c < 0x800)
            u8[un++] = (char)(0xC0 | (c >> 6)), u8[un++] = (char)(0x80 | (c & 0x3F));
        else if (c < 0x10000)
            u8[un++] = (char)(0xE0 | (c >> 12)), u8[un++] = (char)(0x80 | ((c >> 6) & 0x3F)),
            u8[un++] = (char)(0x80 | (c & 0x3F));
        else
            u8[un++] = (char)(0xF0 | (c >> 18)), u8[un++] = (char)(0x80 | ((c >> 12) & 0x3F)),
            u8[un++] = (char)(0x80 | ((c >> 6) & 0x3F)), u8[un++] = (char)(0x80 | (c & 0x3F));
        vkf_sb_json_string(&j, u8, un);
        jn = j.n - 2 < sizeof jl ? j.n - 2 : 0;
        memcpy(jl, j.p + 1, jn); /* without the quotes */
        vkf_sb_gbnf_literal(&a, jl, jn);
        vkf_sb_free(&j);
    }
    /* quantifier */
    int quant = 0;
    if (x->i < x->n) {
        uint32_t q = x->cp[x->i];
        if (q == '*' || q == '+' || q == '?') {
            x->i++;
            vkf_sb_put(o, a.p, a.n);
            vkf_sb_putc(o, (char)q);
            quant = 1;
        } else if (q == '{') {
            size_t save = x->i++;
            long m = -1, nmax = -1;
            int comma = 0, ok = 1;
            char num[16];
            int k = 0;
            while (x->i < x->n && x->cp[x->i] >= '0' && x->cp[x->i] <= '9' && k < 9)
                num[k++] = (char)x->cp[x->i++];
            num[k] = 0;
            if (k) m = atol(num);
            if (x->i < x->n && x->cp[x->i] == ',') {
                comma = 1;
                x->i++;
                k = 0;
                while (x->i < x->n && x->cp[x->i] >= '0' && x->cp[x->i] <= '9' && k < 9)
                    num[k++] = (char)x->cp[x->i++];
                num[k] = 0;
                if (k) nmax = atol(num);
            }
            if (m < 0 || x->i >= x->n || x->cp[x->i] != '}') ok = 0;
            if (!ok) { /* not a quantifier: a literal '{' (ECMAScript's Annex B) */
                x->i = save;
            } else {
                x->i++;
                if (!comma) nmax = m;
                if (nmax >= 0 && nmax < m) {
                    vkf_sb_free(&a);
                    return rx_fail(x, VKF_ERROR_FORMAT, "a repetition {m,n} with n < m");
                }
                if (m > 2000 || nmax > 2000) {
                    vkf_sb_free(&a);
                    return rx_fail(x, VKF_ERROR_UNSUPPORTED, "a repetition over 2000");
                }
                vkf_sb_put(o, a.p, a.n);
                if (nmax < 0)
                    vkf_sb_printf(o, "{%ld,}", m);
                else if (nmax == m)
                    vkf_sb_printf(o, "{%ld}", m);
                else
                    vkf_sb_printf(o, "{%ld,%ld}", m, nmax);
                quant = 1;
            }
        }
        if (quant && x->i < x->n && x->cp[x->i] == '?') x->i++; /* lazy: the same strings */
    }
    if (!quant) {
        if (single) {
            memcpy(lit, jl, jn);
            *lit_len = jn;
        } else {
            vkf_sb_put(o, a.p, a.n);
        }
    }
    vkf_sb_free(&a);
    return 0;
}

/* a sequence up to '|', ')' or the end; anchors ^ $ only at a top-level alternative's ends */
static int parse_seq(rx *x, vkf_sb *o) {
    int top = x->depth == 0, first = 1, start_anchor = 0, end_anchor = 0;
    vkf_sb lit = {0}, body = {0};
    if (top && x->i < x->n && x->cp[x->i] == '^') {
        start_anchor = 1;
        x->i++;
    }
    while (x->i < x->n && x->cp[x->i] != '|' && x->cp[x->i] != ')') {
        if (top && x->cp[x->i] == '$' && (x->i + 1 == x->n || x->cp[x->i + 1] == '|')) {
            end_anchor = 1;
            x->i++;
            break;
        }
        char l[16];
        size_t ln;
        vkf_sb item = {0};
        if (parse_atom(x, &item, l, &ln)) {
            vkf_sb_free(&item);
            vkf_sb_free(&lit);
            vkf_sb_free(&body);
            return -1;
        }
        if (ln) {
            vkf_sb_put(&lit, l, ln);
        } else {
            if (lit.n) {
                if (!first) vkf_sb_putc(&body, ' ');
                vkf_sb_gbnf_literal(&body, lit.p, lit.n);
                lit.n = 0;
                first = 0;
            }
            if (!first) vkf_sb_putc(&body, ' ');
            vkf_sb_put(&body, item.p, item.n);
            first = 0;
        }
        vkf_sb_free(&item);
    }
    if (lit.n) {
        if (!first) vkf_sb_putc(&body, ' ');
        vkf_sb_gbnf_literal(&body, lit.p, lit.n);
        first = 0;
    }
    vkf_sb_free(&lit);
    /* a pattern matches anywhere: unanchored sides take any characters */
    if (top && !start_anchor) vkf_sb_printf(o, "%s* ", x->char_rule);
    if (first)
        vkf_sb_puts(o, "\"\"");
    else
        vkf_sb_put(o, body.p, body.n);
    if (top && !end_anchor) vkf_sb_printf(o, " %s*", x->char_rule);
    vkf_sb_free(&body);
    return 0;
}

static int parse_alt(rx *x, vkf_sb *o) {
    if (parse_seq(x, o)) return -1;
    while (x->i < x->n && x->cp[x->i] == '|') {
        x->i++;
        vkf_sb_puts(o, " | ");
        if (parse_seq(x, o)) return -1;
    }
    return 0;
}

vkf_status vkf_js_pattern(const char *re, const char *char_rule, vkf_sb *out, char *err,
                          size_t errn) {
    size_t len = strlen(re);
    rx x = {.char_rule = char_rule, .err = err, .errn = errn};
    x.cp = malloc((len + 1) * sizeof *x.cp);
    if (!x.cp) {
        snprintf(err, errn, "out of memory");
        return VKF_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < len;) { /* UTF-8 -> code points (bad bytes as themselves) */
        unsigned char b = (unsigned char)re[i];
        size_t k = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
        uint32_t c = k == 1 ? b : b & (0x7F >> k);
        for (size_t j = 1; j < k && i + j < len; j++)
            c = c << 6 | ((unsigned char)re[i + j] & 0x3F);
        x.cp[x.n++] = c;
        i += k;
    }
    /* parentheses balance (outside classes, escapes skipped): a malformed pattern is a format
     * error whatever else it holds */
    int depth = 0, in_class = 0;
    for (size_t i = 0; i < x.n && depth >= 0; i++) {
        uint32_t c = x.cp[i];
        if (c == '\\')
            i++;
        else if (in_class)
            in_class = c != ']';
        else if (c == '[')
            in_class = 1;
        else if (c == '(')
            depth++;
        else if (c == ')')
            depth--;
    }
    if (depth != 0) {
        free(x.cp);
        snprintf(err, errn, "unbalanced parentheses");
        return VKF_ERROR_FORMAT;
    }
    vkf_sb body = {0};
    vkf_sb_puts(&body, "\"\\\"\" (");
    if (parse_alt(&x, &body) == 0 && x.i < x.n) /* a ')' without '(' */
        rx_fail(&x, VKF_ERROR_FORMAT, "unbalanced parentheses");
    vkf_sb_puts(&body, ") \"\\\"\"");
    free(x.cp);
    if (x.st == VKF_OK && body.oom) {
        x.st = VKF_ERROR_OUT_OF_MEMORY;
        snprintf(err, errn, "out of memory");
    }
    if (x.st == VKF_OK) vkf_sb_put(out, body.p, body.n);
    vkf_sb_free(&body);
    return x.st;
}
