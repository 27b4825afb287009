/* Internal layout of vkf_tokenizer, shared by tokenizer.c (common parts: vocabulary, special
 * tokens, encode/decode driver, open_auto) and tok_gpt2.c, tok_llama.c, tok_char.c (one
 * algorithm each), tok_hf.c (tokenizer.json pipelines) and tok_spm.c (SentencePiece .model). */
#ifndef VKF_TOKENIZER_TOKENIZER_IMPL_H
#define VKF_TOKENIZER_TOKENIZER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "io/hashmap.h"
#include "tokenizer/tokenizer.h"

typedef enum vkf_tok_kind {
    VKF_TOK_GPT2,  /* vocab.json + merges.txt, GGUF "gpt2" */
    VKF_TOK_LLAMA, /* GGUF "llama" (llama.cpp's SPM-style BPE) */
    VKF_TOK_CHAR,  /* char_vocab.json */
    VKF_TOK_WPM,   /* GGUF "bert" (llama.cpp's WordPiece) */
    VKF_TOK_HF,    /* tokenizer.json: normalizer, pre-tokenizer, model, post-processor, decoder */
    VKF_TOK_SPM,   /* SentencePiece .model (BPE or Unigram) */
} vkf_tok_kind;

struct vkf_hf;
struct vkf_spm;

/* Growable byte string, always NUL-terminated once non-empty. */
typedef struct vkf_sbuf {
    char *p;
    size_t n, cap;
} vkf_sbuf;

int vkf_sbuf_put(vkf_sbuf *b, const void *s, size_t n); /* 0 on allocation failure */
int vkf_sbuf_reserve(vkf_sbuf *b, size_t n);

/* Growable id list. */
typedef struct vkf_ids {
    int32_t *v;
    size_t n, cap;
} vkf_ids;

/* A candidate merge of symbols left and right. Popped smallest key first, leftmost on ties:
 * rank-based BPE uses key = merge rank, score-based key = -score of the merged piece. */
typedef struct vkf_bigram {
    double key;
    int32_t left, right;
    int32_t a, b; /* a: the sum of the two symbols' lengths (staleness); b: the merged id */
} vkf_bigram;

typedef struct vkf_bigram_heap {
    vkf_bigram *v;
    size_t n, cap;
} vkf_bigram_heap;

/* One symbol of the text being merged; symbols form a doubly linked list. */
typedef struct vkf_symbol {
    int32_t prev, next; /* -1 at the ends */
    int32_t id;         /* gpt2: current token id (-1: byte without a token) */
    uint32_t start, n;  /* llama: byte range in the work buffer; n == 0 once merged away */
} vkf_symbol;

/* Cache of GPT-2 pre-token -> ids. Keys and ids live in fixed chunks so map keys stay valid. */
typedef struct vkf_bpe_cache {
    vkf_strmap map;    /* pre-token bytes -> entry index */
    uint32_t *ids_off; /* per entry: offset into ids */
    uint32_t *ids_n;
    size_t n_entries, cap_entries;
    int32_t *ids;
    size_t ids_used, ids_cap;
    char **key_chunks; /* allocated chunks of key bytes */
    size_t n_chunks, cur_chunk, chunk_used;
} vkf_bpe_cache;

struct vkf_tokenizer {
    vkf_tok_kind kind;
    char *name; /* source file, for messages */
    int32_t n_vocab;
    char *pool;          /* every token string, NUL-terminated */
    uint32_t *off, *len; /* [n_vocab]: token i = pool + off[i], len[i] bytes */
    uint8_t *type;       /* [n_vocab] vkf_token_type */
    float *score;        /* [n_vocab] llama piece scores (NULL for others) */
    vkf_strmap vocab;    /* token string -> id */
    int32_t bos, eos, unk, pad;
    int32_t fim[VKF_FIM_COUNT]; /* GGUF's tokenizer.ggml.fim_*_token_id (-1: absent) */
    int32_t sep;                /* GGUF tokenizer.ggml.seperator_token_id of a t5 vocabulary (-1) */
    int add_bos, add_eos, add_space_prefix;
    int add_sep;       /* GGUF tokenizer.ggml.add_sep_token of a t5 vocabulary (llama.cpp: a pair's
                        * separator, as XLM-RoBERTa's </s></s>) */
    int gguf_specials; /* VKF_TOK_SPM from a GGUF: special tokens cut out first (tokenizer.c) */
    int32_t *eog;      /* end-of-generation ids (eos, eot, eom, <|eot_id|>, <|im_end|>, ...) */
    size_t n_eog;
    int32_t *special; /* ids cut out of the text before tokenizing, longest first */
    size_t n_special;
    size_t max_token_len;    /* bytes of the longest token */
    int32_t byte_token[256]; /* gpt2: token of the byte's stand-in character; llama: <0xNN> */

    /* gpt2 */
    struct vkf_pretok *pre;    /* regex pre-tokenizer (NULL: the GPT-2 pattern, matched by hand) */
    int ignore_merges;         /* a pre-token that is a whole token is taken as is */
    vkf_u64map merges;         /* (left << 32 | right) -> (rank << 32 | merged id) */
    int16_t unicode_byte[324]; /* stand-in code point -> byte, -1 if none */
    vkf_bpe_cache cache;

    /* scratch reused across encode calls */
    vkf_symbol *sym;
    size_t sym_cap;
    vkf_bigram_heap heap;
    char *work;
    size_t work_cap;
    uint32_t *cps; /* gpt2 pre-tokenizer: code points, byte offsets and classes */
    uint32_t *cp_off;
    uint8_t *cp_cls;
    size_t cps_cap;

    struct vkf_hf *hf;   /* VKF_TOK_HF */
    struct vkf_spm *spm; /* VKF_TOK_SPM */
};

/* ------------------------------------------------------------------ shared helpers */

int vkf_ids_push(vkf_ids *a, int32_t id);
int vkf_bigram_push(vkf_bigram_heap *h, vkf_bigram b);
int vkf_bigram_pop(vkf_bigram_heap *h, vkf_bigram *out); /* 0 when empty */
/* BPE (bpe.c): whether adjacent symbols l and r merge; if so *key is the priority (smaller
 * merges first) and *id the merged symbol's id. */
typedef int (*vkf_bpe_pair_fn)(void *ctx, const vkf_symbol *l, const vkf_symbol *r, double *key,
                               int32_t *id);
/* Merges the symbols t->sym[0..ns) (linked in order, lengths n > 0) until no pair merges; the
 * survivors are the symbols with n > 0, in list order from 0. Returns 0 when out of memory. */
int vkf_bpe_merge(vkf_tokenizer *t, int32_t ns, vkf_bpe_pair_fn pair, void *ctx);
/* The rank-based pair rule over t->merges (ctx = t): symbols' ids are token ids. */
int vkf_bpe_rank_pair(void *ctx, const vkf_symbol *l, const vkf_symbol *r, double *key,
                      int32_t *id);
/* Unigram (unigram.c): the best segmentation of a word. */
typedef struct vkf_unigram {
    const vkf_trie *trie; /* piece bytes -> id */
    /* score of piece id (len bytes); NAN: the piece is never used */
    double (*score)(void *ctx, int32_t id, size_t len);
    void *ctx;
    double unk_score;  /* the unknown piece's score (min score - 10) */
    int32_t unk;       /* -1: none (a character without a piece is an error) */
    int float_sums;    /* sums rounded to float at each step (sentencepiece) */
    int lead_byte_len; /* character length from the lead byte (sentencepiece) */
} vkf_unigram;

typedef struct vkf_uni_piece {
    uint32_t s, n; /* bytes [s, s + n) of the word */
    int32_t id;
} vkf_uni_piece;

typedef struct vkf_uni_pieces {
    vkf_uni_piece *v;
    size_t n, cap;
    size_t err_at; /* on -1: the byte offset of the character without a piece */
} vkf_uni_pieces;

/* Fills out with the pieces of w[0..n) in order. Returns 1, 0 when out of memory, -1 when a
 * character has no piece and there is no unk. */
int vkf_unigram_best(const vkf_unigram *u, const char *w, size_t n, vkf_uni_pieces *out);
/* Grows t->sym to hold n symbols; 0 on allocation failure. */
int vkf_tok_reserve_symbols(vkf_tokenizer *t, size_t n);
int vkf_tok_reserve_work(vkf_tokenizer *t, size_t n);

/* Allocates a tokenizer of the given kind with n tokens and pool_bytes of string storage
 * (the lengths of all token strings, without NULs). Every token starts NORMAL, ids at -1. */
vkf_status vkf_tok_create(vkf_tok_kind kind, const char *name, int64_t n, size_t pool_bytes,
                          vkf_tokenizer **out);
/* Adds id to the end-of-generation set (ignored when out of range or already there); 0 when
 * out of memory. */
int vkf_tok_add_eog(vkf_tokenizer *t, int32_t id);
/* Sets token id's string; tokens must be set in increasing id order. */
void vkf_tok_set(vkf_tokenizer *t, int32_t id, const char *s, size_t len, int type);
/* After all tokens are set: builds the string map, the special-token list and byte tokens,
 * and checks the special ids. */
vkf_status vkf_tok_finish(vkf_tokenizer *t);
static inline const char *vkf_tok_str(const vkf_tokenizer *t, int32_t id) {
    return t->pool + t->off[id];
}

/* The GPT-2 byte <-> stand-in code point map (bytes that are printable keep their code point;
 * the others map to 256 + n in order). */
uint32_t vkf_gpt2_byte_to_unicode(uint8_t b);

/* Per-kind text encoders: append the ids of one text fragment (no special tokens inside).
 * prev_special: the fragment starts the text or follows a special token. */
vkf_status vkf_gpt2_encode_text(vkf_tokenizer *t, const char *s, size_t n, vkf_ids *out);
vkf_status vkf_llama_encode_text(vkf_tokenizer *t, const char *s, size_t n, int prev_special,
                                 vkf_ids *out);
vkf_status vkf_wpm_encode_text(vkf_tokenizer *t, const char *s, size_t n, vkf_ids *out);
vkf_status vkf_char_encode_text(vkf_tokenizer *t, const char *s, size_t n, vkf_ids *out);
/* GPT-2 setup after the vocabulary: byte tables and merges (from "left right" strings). */
vkf_status vkf_gpt2_init_bytes(vkf_tokenizer *t);
vkf_status vkf_gpt2_add_merge(vkf_tokenizer *t, const char *line, size_t len, uint32_t rank,
                              const char *where);
void vkf_bpe_cache_free(vkf_bpe_cache *c);
/* Pre-token cache: appends the cached ids of key to out and returns 1, 0 if absent, -1 on
 * allocation failure; put is best effort (long keys are not cached). */
int vkf_bpe_cache_get(const vkf_bpe_cache *c, const char *key, size_t len, vkf_ids *out);
void vkf_bpe_cache_put(vkf_bpe_cache *c, const char *key, size_t len, const int32_t *ids, size_t n);
/* The GPT-2 pre-tokenizer: end (exclusive, in code points) of the regex match at i. */
size_t vkf_gpt2_match(const uint32_t *cp, const uint8_t *cls, size_t n, size_t i);

/* tokenizer.json and SentencePiece: whole-text encode (special tokens, normalization,
 * post-processing included) and decode (flags: VKF_DECODE_*), and destructors. */
vkf_status vkf_hf_encode(vkf_tokenizer *t, const char *text, size_t len, int add_special,
                         int parse_special, vkf_ids *out);
vkf_status vkf_hf_decode(const vkf_tokenizer *t, const int32_t *ids, size_t n, int flags,
                         vkf_sbuf *out);
void vkf_hf_free(struct vkf_hf *hf);
vkf_status vkf_spm_encode(vkf_tokenizer *t, const char *text, size_t len, int add_special,
                          int parse_special, vkf_ids *out);
vkf_status vkf_spm_decode(const vkf_tokenizer *t, const int32_t *ids, size_t n, int flags,
                          vkf_sbuf *out);
void vkf_spm_free(struct vkf_spm *spm);
/* A GGUF "t5" vocabulary as a SentencePiece Unigram model (tok_spm.c). */
vkf_status vkf_tokenizer_spm_from_gguf(const vkf_gguf *g, vkf_tokenizer **out);
const char *vkf_hf_model_name(const struct vkf_hf *hf);    /* "hf-bpe", ... */
const char *vkf_spm_model_name(const struct vkf_spm *spm); /* "spm-bpe", ... */

#endif
