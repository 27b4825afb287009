/* SentencePiece's precompiled character map (normalizer_spec.precompiled_charsmap, and the
 * Precompiled normalizer of tokenizer.json): a darts-clone double-array trie over UTF-8 byte
 * strings whose values point at NUL-terminated replacement strings.
 *
 * Blob layout: uint32 trie size in bytes (little-endian), the trie (uint32 units), then the
 * replacement strings. */
#ifndef VKF_TOKENIZER_TOK_CHARSMAP_H
#define VKF_TOKENIZER_TOK_CHARSMAP_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer_impl.h"

typedef struct vkf_charsmap {
    uint8_t *blob; /* owned copy of the whole blob (NULL: no map) */
    const uint8_t *units;
    size_t n_units;
    const char *strs;
    size_t n_strs;
} vkf_charsmap;

/* Copies and checks a blob; an empty blob gives an empty map (no rules). */
vkf_status vkf_charsmap_init(const void *blob, size_t n, const char *name, vkf_charsmap *out);
/* Same from base64 text (tokenizer.json). */
vkf_status vkf_charsmap_from_base64(const char *b64, size_t n, const char *name, vkf_charsmap *out);
void vkf_charsmap_free(vkf_charsmap *m);
/* The longest rule matching a prefix of s[0..n): returns its length in bytes (0: none) and
 * sets *rep and *rep_len to the replacement. */
size_t vkf_charsmap_match(const vkf_charsmap *m, const char *s, size_t n, const char **rep,
                          size_t *rep_len);
/* Rewrites s[0..n) into out (appending): the longest rule at each position, else the next
 * character unchanged. 0 on allocation failure. */
int vkf_charsmap_normalize(const vkf_charsmap *m, const char *s, size_t n, vkf_sbuf *out);

#endif
