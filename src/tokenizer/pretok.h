/* Regex pre-tokenizers: a list of patterns applied one after the other, as llama.cpp's
 * unicode_regex_split does for a GGUF vocabulary's tokenizer.ggml.pre: each pattern cuts every
 * piece left by the previous ones into its matches and the text between them (both kept).
 * The named sets are llama.cpp's (src/llama-vocab.cpp), written as the regular expressions of
 * the models' tokenizer.json where llama.cpp rewrote them for std::regex; kimi-k2 and afmoe's
 * digit step are llama.cpp's hand-written splitters, written by hand here too (pretok.c). */
#ifndef VKF_TOKENIZER_PRETOK_H
#define VKF_TOKENIZER_PRETOK_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/regex.h"
#include "vkformer.h"

typedef struct vkf_pretok vkf_pretok;

/* Properties of a named pre-tokenizer besides its patterns (llama.cpp's defaults). */
typedef struct vkf_pretok_info {
    int gpt2;          /* the GPT-2 pattern alone (tok_gpt2.c matches it without the engine) */
    int ignore_merges; /* a word that is a whole token is taken as is (Llama-3, Tekken) */
    int add_bos;       /* default of tokenizer.ggml.add_bos_token */
    int no_bos;        /* the vocabulary has no BOS token (ChatGLM) */
} vkf_pretok_info;

/* The pre-tokenizer named name (tokenizer.ggml.pre). An unknown name is VKF_ERROR_UNSUPPORTED
 * naming it and path. *out is NULL for the GPT-2 pattern (info->gpt2 = 1); out == NULL only
 * checks the name. */
vkf_status vkf_pretok_from_name(const char *name, const char *path, vkf_pretok **out,
                                vkf_pretok_info *info);
/* A pre-tokenizer of n patterns; what names them in messages. */
vkf_status vkf_pretok_create(const char *const *patterns, size_t n, const char *what,
                             vkf_pretok **out);
void vkf_pretok_free(vkf_pretok *p);

/* Splits s[0..n) into words: *words receives 2 * *n_words byte offsets (start, end) of each
 * word in order, valid until the next call. Returns 0 when out of memory. */
int vkf_pretok_split(vkf_pretok *p, const char *s, size_t n, const uint32_t **words,
                     size_t *n_words);

/* Code points, byte offsets and categories of a text, grown as needed (shared by the
 * pre-tokenizers of tokenizer.json). */
typedef struct vkf_cptext {
    uint32_t *cp;
    uint32_t *off; /* [n + 1]: byte offset of each code point, then the length */
    uint8_t *gc;
    size_t n, cap;
} vkf_cptext;
int vkf_cptext_set(vkf_cptext *t, const char *s, size_t n); /* 0 when out of memory */
void vkf_cptext_free(vkf_cptext *t);

#endif
