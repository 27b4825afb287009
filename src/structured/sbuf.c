/* A growable string (see sbuf.h). */
#include "structured/sbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(vkf_sb *b, size_t more) {
    if (b->oom) return 0;
    if (b->n + more + 1 <= b->cap) return 1;
    size_t nc = b->cap ? b->cap : 64;
    while (nc < b->n + more + 1)
        nc *= 2;
    char *p = realloc(b->p, nc);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = nc;
    return 1;
}

void vkf_sb_put(vkf_sb *b, const char *s, size_t n) {
    if (!reserve(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void vkf_sb_puts(vkf_sb *b, const char *s) { vkf_sb_put(b, s, strlen(s)); }
void vkf_sb_putc(vkf_sb *b, char c) { vkf_sb_put(b, &c, 1); }

void vkf_sb_printf(vkf_sb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || !reserve(b, (size_t)k)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

char *vkf_sb_take(vkf_sb *b) {
    if (b->oom) {
        vkf_sb_free(b);
        return NULL;
    }
    char *p = b->p ? b->p : strdup("");
    b->p = NULL;
    b->n = b->cap = 0;
    return p;
}

void vkf_sb_free(vkf_sb *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

void vkf_sb_gbnf_literal(vkf_sb *b, const char *s, size_t n) {
    vkf_sb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': vkf_sb_puts(b, "\\\""); break;
        case '\\': vkf_sb_puts(b, "\\\\"); break;
        case '\n': vkf_sb_puts(b, "\\n"); break;
        case '\r': vkf_sb_puts(b, "\\r"); break;
        case '\t': vkf_sb_puts(b, "\\t"); break;
        default:
            if (c < 0x20 || c == 0x7F)
                vkf_sb_printf(b, "\\x%02X", c);
            else
                vkf_sb_putc(b, (char)c);
        }
    }
    vkf_sb_putc(b, '"');
}

void vkf_sb_json_string(vkf_sb *b, const char *s, size_t n) {
    vkf_sb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': vkf_sb_puts(b, "\\\""); break;
        case '\\': vkf_sb_puts(b, "\\\\"); break;
        case '\n': vkf_sb_puts(b, "\\n"); break;
        case '\r': vkf_sb_puts(b, "\\r"); break;
        case '\t': vkf_sb_puts(b, "\\t"); break;
        case '\b': vkf_sb_puts(b, "\\b"); break;
        case '\f': vkf_sb_puts(b, "\\f"); break;
        default:
            if (c < 0x20)
                vkf_sb_printf(b, "\\u%04x", c);
            else
                vkf_sb_putc(b, (char)c);
        }
    }
    vkf_sb_putc(b, '"');
}
