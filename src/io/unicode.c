#include "io/unicode.h"

#include "io/unicode_tables.h"

size_t vkf_utf8_decode(const char *str, size_t n, uint32_t *cp) {
    const uint8_t *s = (const uint8_t *)str;
    uint8_t b = s[0];
    *cp = VKF_UTF8_INVALID;
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if ((b & 0xE0) == 0xC0) {
        len = 2, v = b & 0x1F, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
        len = 3, v = b & 0x0F, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
        len = 4, v = b & 0x07, min = 0x10000;
    } else {
        return 1; /* continuation byte or 0xF8..0xFF */
    }
    if (len > n) return 1;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 1;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 1;
    *cp = v;
    return len;
}

size_t vkf_utf8_encode(uint32_t cp, char *out) {
    uint8_t *o = (uint8_t *)out;
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | (cp >> 18));
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

static int in_ranges(const vkf_unicode_range *r, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].first)
            hi = mid;
        else if (cp > r[mid].last)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

vkf_ucat vkf_unicode_category(uint32_t cp) {
    if (cp < 0x80) { /* ASCII fast path: most text */
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return VKF_UCAT_LETTER;
        if (cp >= '0' && cp <= '9') return VKF_UCAT_NUMBER;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return VKF_UCAT_SPACE;
        return VKF_UCAT_OTHER;
    }
    if (cp == VKF_UTF8_INVALID) return VKF_UCAT_OTHER;
    if (in_ranges(vkf_unicode_letter, VKF_UNICODE_N_LETTER, cp)) return VKF_UCAT_LETTER;
    if (in_ranges(vkf_unicode_number, VKF_UNICODE_N_NUMBER, cp)) return VKF_UCAT_NUMBER;
    if (in_ranges(vkf_unicode_space, VKF_UNICODE_N_SPACE, cp)) return VKF_UCAT_SPACE;
    return VKF_UCAT_OTHER;
}
