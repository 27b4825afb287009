/* A growable string for the grammar writers (structured/): appends never fail loudly; a failed
 * allocation sets oom and later appends do nothing, so a writer checks once at the end. */
#ifndef VKF_STRUCTURED_SBUF_H
#define VKF_STRUCTURED_SBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct vkf_sb {
    char *p; /* NUL-terminated once anything was appended */
    size_t n, cap;
    int oom;
} vkf_sb;

void vkf_sb_put(vkf_sb *b, const char *s, size_t n);
void vkf_sb_puts(vkf_sb *b, const char *s);
void vkf_sb_putc(vkf_sb *b, char c);
void vkf_sb_printf(vkf_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the string (never NULL unless oom: "" when empty), ownership to the caller; b is reset */
char *vkf_sb_take(vkf_sb *b);
void vkf_sb_free(vkf_sb *b);
/* s[0..n) as a GBNF literal: "..." with \" \\ \n \r \t escaped, other control bytes \xNN */
void vkf_sb_gbnf_literal(vkf_sb *b, const char *s, size_t n);
/* s[0..n) as a JSON string literal (quotes included) */
void vkf_sb_json_string(vkf_sb *b, const char *s, size_t n);

#endif
