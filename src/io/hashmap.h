/* Open-addressing hash maps for the tokenizers: byte strings -> int32 (vocabularies, caches),
 * uint64 -> uint64 (BPE merge pairs), and a byte trie over them (Unigram prefix search). */
#ifndef VKF_IO_HASHMAP_H
#define VKF_IO_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

/* Keys are (pointer, length) byte strings that the map does NOT own: they must outlive it. */
typedef struct vkf_strmap {
    const char **keys; /* NULL: empty slot */
    uint32_t *lens;
    int32_t *vals;
    size_t cap, n; /* cap is a power of two */
} vkf_strmap;

/* 0 on allocation failure. */
int vkf_strmap_init(vkf_strmap *m, size_t expected);
void vkf_strmap_free(vkf_strmap *m);
void vkf_strmap_clear(vkf_strmap *m);
/* Inserts or replaces key -> val; 0 on allocation failure. */
int vkf_strmap_put(vkf_strmap *m, const char *key, size_t len, int32_t val);
/* The value of key, -1 if absent. */
int32_t vkf_strmap_get(const vkf_strmap *m, const char *key, size_t len);

typedef struct vkf_u64map {
    uint64_t *keys; /* UINT64_MAX: empty slot (never a valid key) */
    uint64_t *vals;
    size_t cap, n;
} vkf_u64map;

int vkf_u64map_init(vkf_u64map *m, size_t expected);
void vkf_u64map_free(vkf_u64map *m);
/* Inserts key -> val unless key is present (the first value wins); 0 on allocation failure. */
int vkf_u64map_put_first(vkf_u64map *m, uint64_t key, uint64_t val);
/* 1 and *val if present, else 0. */
int vkf_u64map_get(const vkf_u64map *m, uint64_t key, uint64_t *val);

/* A byte trie: node 0 is the root; each edge (node, byte) -> child lives in a u64map, each node
 * holds a value (-1: no string ends here). Used to enumerate every vocabulary piece that is a
 * prefix of the text at a position, shortest first. */
typedef struct vkf_trie {
    vkf_u64map edges; /* node << 8 | byte -> child node (while building) */
    int32_t *val;     /* [n_nodes] */
    size_t n_nodes, cap;
    /* after vkf_trie_freeze: each node's edges sorted by byte, the root's as a direct table */
    uint32_t *first; /* [n_nodes + 1] edge range of each node */
    uint8_t *byte;   /* [n_edges] */
    int32_t *child;  /* [n_edges] */
    int32_t root[256];
    int frozen;
} vkf_trie;

/* 0 on allocation failure. */
int vkf_trie_init(vkf_trie *t, size_t expected_bytes);
void vkf_trie_free(vkf_trie *t);
/* Sets the value of key (replacing an earlier one); 0 on allocation failure. */
int vkf_trie_insert(vkf_trie *t, const char *key, size_t len, int32_t val);
/* Packs the trie into sorted arrays for fast lookups (no inserts afterwards); 0 on allocation
 * failure (the trie still works, unpacked). */
int vkf_trie_freeze(vkf_trie *t);
/* The child of node for byte b, -1 if none. */
static inline int32_t vkf_trie_step(const vkf_trie *t, int32_t node, uint8_t b) {
    if (t->frozen) {
        if (node == 0) return t->root[b];
        uint32_t lo = t->first[node], hi = t->first[node + 1];
        while (lo < hi) { /* nodes have few children: a short search */
            uint32_t mid = (lo + hi) >> 1;
            if (t->byte[mid] < b)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo < t->first[node + 1] && t->byte[lo] == b ? t->child[lo] : -1;
    }
    uint64_t v;
    return vkf_u64map_get(&t->edges, (uint64_t)node << 8 | b, &v) ? (int32_t)v : -1;
}

#endif
