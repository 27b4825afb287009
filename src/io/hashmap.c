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

/* ------------------------------------------------------------------ trie */

int vkf_trie_init(vkf_trie *t, size_t expected_bytes) {
    memset(t, 0, sizeof *t);
    t->cap = 64;
    t->val = malloc(t->cap * sizeof *t->val);
    if (!t->val || !vkf_u64map_init(&t->edges, expected_bytes)) {
        vkf_trie_free(t);
        return 0;
    }
    t->val[0] = -1;
    t->n_nodes = 1;
    return 1;
}

void vkf_trie_free(vkf_trie *t) {
    vkf_u64map_free(&t->edges);
    free(t->val);
    free(t->first);
    free(t->byte);
    free(t->child);
    memset(t, 0, sizeof *t);
}

int vkf_trie_insert(vkf_trie *t, const char *key, size_t len, int32_t val) {
    int32_t node = 0;
    for (size_t i = 0; i < len; i++) {
        int32_t child = vkf_trie_step(t, node, (uint8_t)key[i]);
        if (child < 0) {
            if (t->n_nodes == t->cap) {
                int32_t *v = realloc(t->val, 2 * t->cap * sizeof *v);
                if (!v) return 0;
                t->val = v;
                t->cap *= 2;
            }
            child = (int32_t)t->n_nodes++;
            t->val[child] = -1;
            if (!vkf_u64map_put_first(&t->edges, (uint64_t)node << 8 | (uint8_t)key[i],
                                      (uint64_t)child))
                return 0;
        }
        node = child;
    }
    t->val[node] = val;
    return 1;
}

int vkf_trie_freeze(vkf_trie *t) {
    if (t->frozen) return 1;
    size_t ne = t->edges.n;
    uint32_t *first = calloc(t->n_nodes + 1, sizeof *first);
    uint8_t *byte = malloc(ne ? ne : 1);
    int32_t *child = malloc((ne ? ne : 1) * sizeof *child);
    uint32_t *fill = calloc(t->n_nodes + 1, sizeof *fill);
    if (!first || !byte || !child || !fill) {
        free(first);
        free(byte);
        free(child);
        free(fill);
        return 0;
    }
    for (size_t i = 0; i < t->edges.cap; i++) /* count edges per node */
        if (t->edges.keys[i] != UINT64_MAX) first[(t->edges.keys[i] >> 8) + 1]++;
    for (size_t i = 0; i < t->n_nodes; i++)
        first[i + 1] += first[i];
    for (size_t i = 0; i < t->edges.cap; i++) {
        uint64_t k = t->edges.keys[i];
        if (k == UINT64_MAX) continue;
        size_t node = (size_t)(k >> 8);
        uint32_t j = first[node] + fill[node]++;
        while (j > first[node] && byte[j - 1] > (uint8_t)k) { /* insertion sort by byte */
            byte[j] = byte[j - 1];
            child[j] = child[j - 1];
            j--;
        }
        byte[j] = (uint8_t)k;
        child[j] = (int32_t)t->edges.vals[i];
    }
    free(fill);
    for (int b = 0; b < 256; b++)
        t->root[b] = -1;
    for (uint32_t j = first[0]; j < first[1]; j++)
        t->root[byte[j]] = child[j];
    t->first = first;
    t->byte = byte;
    t->child = child;
    t->frozen = 1;
    return 1;
}
