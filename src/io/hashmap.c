#include "io/hashmap.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ hashing */

static uint64_t hash_bytes(const char *s, size_t n) { /* FNV-1a 64, then a final mix */
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    h ^= h >> 32;
    return h;
}

static uint64_t hash_u64(uint64_t x) { /* splitmix64 finaliser */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static size_t cap_for(size_t expected) { /* load factor <= 1/2 */
    size_t cap = 16;
    while (cap < 2 * expected + 2)
        cap *= 2;
    return cap;
}

/* ------------------------------------------------------------------ strings */

int vkf_strmap_init(vkf_strmap *m, size_t expected) {
    memset(m, 0, sizeof *m);
    m->cap = cap_for(expected);
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->lens = calloc(m->cap, sizeof *m->lens);
    m->vals = calloc(m->cap, sizeof *m->vals);
    if (!m->keys || !m->lens || !m->vals) {
        vkf_strmap_free(m);
        return 0;
    }
    return 1;
}

void vkf_strmap_free(vkf_strmap *m) {
    free(m->keys);
    free(m->lens);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

void vkf_strmap_clear(vkf_strmap *m) {
    memset(m->keys, 0, m->cap * sizeof *m->keys);
    m->n = 0;
}

static size_t strmap_slot(const vkf_strmap *m, const char *key, size_t len) {
    size_t i = (size_t)hash_bytes(key, len) & (m->cap - 1);
    while (m->keys[i] && !(m->lens[i] == len && memcmp(m->keys[i], key, len) == 0))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int strmap_grow(vkf_strmap *m) {
    vkf_strmap big;
    if (!vkf_strmap_init(&big, m->cap)) return 0; /* doubles the capacity */
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = strmap_slot(&big, m->keys[i], m->lens[i]);
            big.keys[j] = m->keys[i];
            big.lens[j] = m->lens[i];
            big.vals[j] = m->vals[i];
            big.n++;
        }
    vkf_strmap_free(m);
    *m = big;
    return 1;
}

int vkf_strmap_put(vkf_strmap *m, const char *key, size_t len, int32_t val) {
    if (len > UINT32_MAX) return 0;
    if (2 * (m->n + 1) > m->cap && !strmap_grow(m)) return 0;
    size_t i = strmap_slot(m, key, len);
    if (!m->keys[i]) {
        m->keys[i] = key ? key : ""; /* a NULL key with len 0 still marks the slot used */
        m->lens[i] = (uint32_t)len;
        m->n++;
    }
    m->vals[i] = val;
    return 1;
}

int32_t vkf_strmap_get(const vkf_strmap *m, const char *key, size_t len) {
    if (!m->cap) return -1;
    size_t i = strmap_slot(m, key, len);
    return m->keys[i] ? m->vals[i] : -1;
}

/* ------------------------------------------------------------------ uint64 */

int vkf_u64map_init(vkf_u64map *m, size_t expected) {
    memset(m, 0, sizeof *m);
    m->cap = cap_for(expected);
    m->keys = malloc(m->cap * sizeof *m->keys);
    m->vals = malloc(m->cap * sizeof *m->vals);
    if (!m->keys || !m->vals) {
        vkf_u64map_free(m);
        return 0;
    }
    memset(m->keys, 0xff, m->cap * sizeof *m->keys);
    return 1;
}

void vkf_u64map_free(vkf_u64map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static size_t u64map_slot(const vkf_u64map *m, uint64_t key) {
    size_t i = (size_t)hash_u64(key) & (m->cap - 1);
    while (m->keys[i] != UINT64_MAX && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

int vkf_u64map_put_first(vkf_u64map *m, uint64_t key, uint64_t val) {
    if (key == UINT64_MAX) return 0;
    if (2 * (m->n + 1) > m->cap) {
        vkf_u64map big;
        if (!vkf_u64map_init(&big, m->cap)) return 0;
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i] != UINT64_MAX) {
                size_t j = u64map_slot(&big, m->keys[i]);
                big.keys[j] = m->keys[i];
                big.vals[j] = m->vals[i];
                big.n++;
            }
        vkf_u64map_free(m);
        *m = big;
    }
    size_t i = u64map_slot(m, key);
    if (m->keys[i] == UINT64_MAX) {
        m->keys[i] = key;
        m->vals[i] = val;
        m->n++;
    }
    return 1;
}

int vkf_u64map_get(const vkf_u64map *m, uint64_t key, uint64_t *val) {
    if (!m->cap || key == UINT64_MAX) return 0;
    size_t i = u64map_slot(m, key);
    if (m->keys[i] == UINT64_MAX) return 0;
    *val = m->vals[i];
    return 1;
}
