/* Text helpers the front ends share (src/cli, src/serve, bench/). */
#include <stdlib.h>
#include <string.h>

#include "frontend/utf8.h"

/* s[0..n) as valid UTF-8 (JSON strings must be): each byte that does not begin a well-formed
 * sequence becomes U+FFFD. A random or byte-level model may emit any bytes. */
char *vkf_frontend_utf8_dup(const char *s, size_t n) {
    char *d = malloc(3 * n + 1);
    if (!d) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t k = c < 0x80                   ? 1
                   : (c >= 0xC2 && c <= 0xDF) ? 2
                   : (c >= 0xE0 && c <= 0xEF) ? 3
                   : (c >= 0xF0 && c <= 0xF4) ? 4
                                              : 0;
        int ok = k > 0 && i + k <= n;
        for (size_t j = 1; ok && j < k; j++)
            ok = (p[i + j] & 0xC0) == 0x80;
        if (ok && k == 3) ok = !(c == 0xE0 && p[i + 1] < 0xA0) && !(c == 0xED && p[i + 1] >= 0xA0);
        if (ok && k == 4) ok = !(c == 0xF0 && p[i + 1] < 0x90) && !(c == 0xF4 && p[i + 1] >= 0x90);
        if (ok) {
            memcpy(d + o, p + i, k);
            o += k;
            i += k;
        } else {
            memcpy(d + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    d[o] = '\0';
    return d;
}
