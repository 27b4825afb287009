/* UTF-8 decoding and the Unicode classes the GPT-2 pre-tokenizer needs. */
#ifndef VKF_IO_UNICODE_H
#define VKF_IO_UNICODE_H

#include <stddef.h>
#include <stdint.h>

/* Returned by vkf_utf8_decode for a byte that does not start a valid sequence. */
#define VKF_UTF8_INVALID 0xFFFFFFFFu

/* Decodes the sequence at s[0..n) (n >= 1). Returns its length in bytes (1..4) and sets *cp.
 * Invalid input (a stray continuation byte, a truncated sequence, an overlong form, a surrogate,
 * a value above U+10FFFF) consumes exactly one byte and sets *cp = VKF_UTF8_INVALID, so every
 * byte string decodes to a sequence that covers all of its bytes. */
size_t vkf_utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Writes cp (<= U+10FFFF) as UTF-8 into out[0..4); returns the length. */
size_t vkf_utf8_encode(uint32_t cp, char *out);

/* Character classes of the GPT-2 regex. */
typedef enum vkf_ucat {
    VKF_UCAT_OTHER = 0, /* [^\s\p{L}\p{N}], including invalid bytes */
    VKF_UCAT_LETTER,    /* \p{L} */
    VKF_UCAT_NUMBER,    /* \p{N} */
    VKF_UCAT_SPACE,     /* \s (White_Space) */
} vkf_ucat;

vkf_ucat vkf_unicode_category(uint32_t cp);

#endif
