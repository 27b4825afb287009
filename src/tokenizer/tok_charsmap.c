/* SentencePiece's precompiled charsmap: darts-clone double array + replacement strings. */
#include "tokenizer/tok_charsmap.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/unicode.h"

static uint32_t unit_at(const vkf_charsmap *m, size_t i) {
    const uint8_t *p = m->units + 4 * i;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* darts-clone unit fields */
static int unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }
static uint32_t unit_value(uint32_t u) { return u & 0x7FFFFFFFu; }
static uint32_t unit_label(uint32_t u) { return u & 0x800000FFu; }
static uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

vkf_status vkf_charsmap_init(const void *blob, size_t n, const char *name, vkf_charsmap *out) {
    memset(out, 0, sizeof *out);
    if (!n) return VKF_OK;
    if (n < 4)
        return vkf_error(VKF_ERROR_FORMAT, "%s: precompiled charsmap: %zu bytes, too short", name,
                         n);
    const uint8_t *b = blob;
    uint32_t tsize =
        (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    if (tsize % 4 || tsize > n - 4 || tsize < 4)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: precompiled charsmap: trie size %u does not fit the %zu-byte blob",
                         name, tsize, n);
    if (!(out->blob = malloc(n + 1)))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    memcpy(out->blob, blob, n);
    out->blob[n] = 0; /* the last replacement string is NUL-terminated even if the blob is not */
    out->units = out->blob + 4;
    out->n_units = tsize / 4;
    out->strs = (const char *)out->blob + 4 + tsize;
    out->n_strs = n - 4 - tsize;
    return VKF_OK;
}

static int b64v(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

vkf_status vkf_charsmap_from_base64(const char *s, size_t n, const char *name, vkf_charsmap *out) {
    memset(out, 0, sizeof *out);
    uint8_t *buf = malloc(n / 4 * 3 + 4);
    if (!buf) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    size_t m = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '=' || s[i] == '\n' || s[i] == '\r') continue;
        int v = b64v(s[i]);
        if (v < 0) {
            free(buf);
            return vkf_error(VKF_ERROR_FORMAT, "%s: precompiled_charsmap: invalid base64", name);
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[m++] = (uint8_t)(acc >> bits);
        }
    }
    vkf_status st = vkf_charsmap_init(buf, m, name, out);
    free(buf);
    return st;
}

void vkf_charsmap_free(vkf_charsmap *m) {
    free(m->blob);
    memset(m, 0, sizeof *m);
}

size_t vkf_charsmap_match(const vkf_charsmap *m, const char *s, size_t n, const char **rep,
                          size_t *rep_len) {
    if (!m->n_units) return 0;
    size_t best = 0;
    uint32_t pos = 0, u = unit_at(m, 0);
    pos ^= unit_offset(u);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        pos ^= c;
        if (pos >= m->n_units) break;
        u = unit_at(m, pos);
        if (unit_label(u) != c) break;
        pos ^= unit_offset(u);
        if (pos >= m->n_units) break;
        if (unit_has_leaf(u)) {
            uint32_t v = unit_value(unit_at(m, pos));
            if (v < m->n_strs) {
                best = i + 1;
                *rep = m->strs + v;
                *rep_len = strnlen(*rep, m->n_strs - v);
            }
        }
    }
    return best;
}

int vkf_charsmap_normalize(const vkf_charsmap *m, const char *s, size_t n, vkf_sbuf *out) {
    for (size_t i = 0; i < n;) {
        const char *rep;
        size_t rl, l = vkf_charsmap_match(m, s + i, n - i, &rep, &rl);
        if (l) {
            if (!vkf_sbuf_put(out, rep, rl)) return 0;
            i += l;
            continue;
        }
        uint32_t cp;
        l = vkf_utf8_decode(s + i, n - i, &cp);
        if (!vkf_sbuf_put(out, s + i, l)) return 0;
        i += l;
    }
    return vkf_sbuf_reserve(out, out->n);
}
