/* Open-addressing hash maps for the tokenizers: byte strings -> int32 (vocabularies, caches) and
 * uint64 -> uint64 (BPE merge pairs). */
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

#endif
