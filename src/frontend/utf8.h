/* Text helpers the front ends share (src/frontend): the chat command and the server both show a
 * model's output, which may be any bytes. */
#ifndef VKF_FRONTEND_UTF8_H
#define VKF_FRONTEND_UTF8_H

#include <stddef.h>

/* s[0..n) copied as valid UTF-8 (JSON strings and terminals need it): each byte that does not
 * begin a well-formed sequence becomes U+FFFD; malloc'ed, NUL-terminated; NULL when out of
 * memory. */
char *vkf_frontend_utf8_dup(const char *s, size_t n);

#endif
