/* tokenizer.json internals shared by tok_hf.c (the encode / decode pipeline) and tok_hf_load.c
 * (reading the file into these structures). */
#ifndef VKF_TOKENIZER_TOK_HF_H
#define VKF_TOKENIZER_TOK_HF_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/pretok.h"
#include "tokenizer/regex.h"
#include "tokenizer/tok_charsmap.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

/* ------------------------------------------------------------------ types */

typedef enum {
    SPLIT_REMOVED,
    SPLIT_ISOLATED,
    SPLIT_MERGED_PREV,
    SPLIT_MERGED_NEXT,
    SPLIT_CONTIGUOUS
} split_behavior;

typedef enum {
    NORM_NFD,
    NORM_NFKD,
    NORM_NFC,
    NORM_NFKC,
    NORM_LOWERCASE,
    NORM_STRIP_ACCENTS,
    NORM_STRIP,
    NORM_REPLACE,
    NORM_PREPEND,
    NORM_BERT,
    NORM_NMT,
    NORM_PRECOMPILED,
} norm_type;

typedef struct hf_norm {
    norm_type type;
    int a, b, c, d;      /* Strip: left, right; Bert: clean, chinese, strip_accents, lower */
    uint32_t *pat, *rep; /* Replace: pattern and content; Prepend: rep */
    size_t n_pat, n_rep;
    vkf_charsmap charsmap; /* Precompiled */
} hf_norm;

typedef enum {
    PRE_BYTELEVEL,
    PRE_METASPACE,
    PRE_BERT,
    PRE_WHITESPACE,
    PRE_WHITESPACE_SPLIT,
    PRE_PUNCTUATION,
    PRE_DIGITS,
    PRE_SPLIT,
    PRE_CHAR_DELIMITER,
} pre_type;

typedef enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER } prepend_scheme;

typedef struct hf_pre {
    pre_type type;
    int add_prefix_space, use_regex; /* ByteLevel */
    char rep[8];                     /* Metaspace replacement (UTF-8) */
    size_t rep_len;
    uint32_t rep_cp;
    prepend_scheme prepend;  /* Metaspace */
    int split;               /* Metaspace: split on the replacement */
    split_behavior behavior; /* Punctuation, Split */
    int individual_digits;   /* Digits */
    int invert;              /* Split */
    int gpt2_regex;          /* Split: the pattern is the GPT-2 regex */
    vkf_regex *re;           /* Split: any other regular expression */
    char *pat;               /* Split: literal pattern */
    size_t pat_len;
    uint32_t delim; /* CharDelimiterSplit */
} hf_pre;

typedef enum { MODEL_BPE, MODEL_WORDPIECE, MODEL_UNIGRAM, MODEL_WORDLEVEL } model_type;

typedef enum {
    DEC_BYTELEVEL,
    DEC_METASPACE,
    DEC_WORDPIECE,
    DEC_BPE,
    DEC_BYTEFALLBACK,
    DEC_FUSE,
    DEC_STRIP,
    DEC_REPLACE,
} dec_type;

typedef struct hf_dec {
    dec_type type;
    char *a, *b; /* WordPiece prefix; BPE suffix; Replace pattern, content */
    size_t na, nb;
    uint32_t cp; /* Metaspace replacement, Strip content */
    int x, y;    /* WordPiece cleanup; Metaspace prepend != never; Strip start, stop */
} hf_dec;

typedef struct added_token {
    int32_t id;
    char *content; /* as matched: normalized when normalized is set */
    size_t len;
    int single_word, lstrip, rstrip, normalized, special;
} added_token;

/* One post-processor step for a single sequence: ids before and after it. */
typedef struct hf_post {
    int32_t *pre, *post;
    size_t n_pre, n_post;
} hf_post;

struct vkf_hf {
    hf_norm *norm;
    size_t n_norm;
    hf_pre *pre;
    size_t n_pre;
    hf_dec *dec;
    size_t n_dec;
    int has_decoder;
    hf_post post;

    added_token *added;
    size_t n_added;
    uint8_t added_first[256]; /* bytes that start some added token */
    uint8_t *is_special;      /* [n_vocab] special added tokens (skipped when decoding) */

    model_type model;
    vkf_strmap mvocab; /* model vocabulary: string -> id (keys in mkeys) */
    char *mkeys;
    int32_t unk; /* model unk id, -1 if none */
    /* BPE */
    char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix (NULL: none) */
    size_t n_prefix, n_suffix;
    int fuse_unk, byte_fallback, ignore_merges;
    int ws_split;         /* words may be cut before each U+2581 (see model_word) */
    int32_t byte_id[256]; /* <0xNN> ids for byte fallback */
    /* WordPiece */
    int max_chars;
    /* Unigram */
    vkf_trie trie;
    double *uscore; /* [n_vocab] */
    double min_score;

    /* scratch */
    vkf_cptext cpt; /* Split: the piece as code points */
    vkf_rx_spans rx;
    vkf_cpbuf cp_a, cp_b, cp_c;
    vkf_sbuf s_a, s_b, s_c;
};

/* Helpers of tok_hf.c used while loading. */
char *vkf_hf_dup(const char *s, size_t n); /* NUL-terminated copy; NULL: no memory */
uint32_t *vkf_hf_utf8_cps(const char *s, size_t n, size_t *out_n); /* malloc'ed code points */
void vkf_hf_byte_chars_init(void);                                 /* the GPT-2 byte tables, once */
int vkf_hf_normalize(struct vkf_hf *h, const char *s, size_t n, vkf_sbuf *out); /* 0: no memory */
int32_t vkf_hf_mvocab_get(const struct vkf_hf *h, const char *s, size_t n);     /* model id or -1 */

#endif
