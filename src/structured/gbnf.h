/* GBNF grammars (llama.cpp's format) and the matcher that constrains sampling to them.
 *
 *   gbnf_parse.c  text -> rules: the same rule and symbol layout llama.cpp's parser builds
 *                 (repetitions rewritten into generated rules, groups into sub-rules), so its
 *                 parser tests compare element by element; errors name line, column and what
 *                 was expected
 *   gbnf_match.c  the pushdown matcher: stacks and sets of stacks interned (hash-consed), rule
 *                 references expanded once per stack, transitions memoized per (set, code
 *                 point); strings are matched one code point at a time, UTF-8 decoded across
 *                 token boundaries
 *   gbnf_vocab.c  per vocabulary: every token's bytes in a trie (built once per model); per
 *                 grammar: the mask of tokens that can continue a set of stacks, found by one
 *                 pruned walk of the trie and cached (see there)
 *
 * A grammar is a list of rules; each rule is its alternatives, element sequences separated by
 * ALT and closed by END. A stack is a list of positions (indices of elements), its top a
 * terminal (a character class or a token); the empty stack means the grammar is complete. A
 * matcher state is a set of stacks: a string is accepted when a path through the grammar
 * reaches one of them, as llama.cpp's llama_grammar_accept. */
#ifndef VKF_STRUCTURED_GBNF_H
#define VKF_STRUCTURED_GBNF_H

#include <stddef.h>
#include <stdint.h>

#include "vkformer.h"

/* Element types, numbered as llama.cpp's llama_gretype (the parser tests compare them). */
typedef enum vkf_gtype {
    VKF_G_END = 0,            /* end of a rule */
    VKF_G_ALT = 1,            /* start of another alternative */
    VKF_G_RULE_REF = 2,       /* value: rule id */
    VKF_G_CHAR = 3,           /* value: code point; starts a positive class */
    VKF_G_CHAR_NOT = 4,       /* starts a negated class [^...] */
    VKF_G_CHAR_RNG_UPPER = 5, /* makes the previous char a range [a-z] */
    VKF_G_CHAR_ALT = 6,       /* one more char (or range start) of the class */
    VKF_G_CHAR_ANY = 7,       /* . */
    VKF_G_TOKEN = 8,          /* <[id]>: the token itself */
    VKF_G_TOKEN_NOT = 9,      /* !<[id]>: any token but this one */
} vkf_gtype;

typedef struct vkf_gelem {
    uint32_t type; /* vkf_gtype */
    uint32_t value;
} vkf_gelem;

typedef struct vkf_gbnf {
    uint32_t n_rules;
    vkf_gelem **rules; /* [n_rules], each ends with END (as llama.cpp's rules) */
    uint32_t *rule_len;
    char **names;  /* [n_rules] symbol names, by id */
    uint32_t root; /* start rule */
    /* the rules flattened, for the matcher: el[rule_start[r] ...] */
    vkf_gelem *el;
    uint32_t n_el;
    uint32_t *rule_start;
} vkf_gbnf;

/* Resolves a token written as <text> in a grammar: its id, or -1 when text is not exactly one
 * token. NULL: such references are an error (no vocabulary). */
typedef int32_t (*vkf_gbnf_token_fn)(void *user, const char *text, size_t len);

/* Parses GBNF text. root: the start rule (NULL: "root"). Checks what llama.cpp checks (every
 * referenced rule defined, the root present, no left recursion) and that the root matches some
 * string, with messages naming the line and column, the rule and what was expected
 * (VKF_ERROR_FORMAT). */
vkf_status vkf_gbnf_parse(const char *text, size_t len, const char *root, vkf_gbnf_token_fn tok,
                          void *tok_user, vkf_gbnf **out);
/* Parses only (no root, no left-recursion check): the rules as llama.cpp's
 * llama_grammar_parser leaves them (for its parser tests). */
vkf_status vkf_gbnf_parse_rules(const char *text, size_t len, vkf_gbnf_token_fn tok, void *tok_user,
                                vkf_gbnf **out);
void vkf_gbnf_free(vkf_gbnf *g);
/* 1 when rule matches some string, 0 when it matches none (x ::= x, x ::= "a" x), -1 out of
 * memory. */
int vkf_gbnf_rule_productive(const vkf_gbnf *g, uint32_t rule);

/* ------------------------------------------------------------------ matcher */

typedef struct vkf_gmatch vkf_gmatch;

/* Partial UTF-8 character at the end of what was accepted so far. */
typedef struct vkf_gutf8 {
    uint32_t value;        /* bits so far */
    int n_remain;          /* continuation bytes still due (0: none) */
    unsigned char next_lo; /* the next continuation byte's range when narrower than */
    unsigned char next_hi; /* 0x80..0xBF (0, 0: that range) */
} vkf_gutf8;

/* A matcher state: a set of stacks (an interned set id) and an unfinished UTF-8 character. */
typedef struct vkf_gstate {
    uint32_t set;
    vkf_gutf8 partial;
} vkf_gstate;

/* The matcher over g (which it keeps: freed with it). context_depth: the stack frames a cached
 * mask may depend on (gbnf_vocab.c); 0: whole stacks. */
vkf_status vkf_gmatch_create(vkf_gbnf *g, int context_depth, vkf_gmatch **out);
void vkf_gmatch_free(vkf_gmatch *m);
const vkf_gbnf *vkf_gmatch_grammar(const vkf_gmatch *m);
/* NULL while the matcher works; after a failure (every later operation fails too) why: "out of
 * memory", or the parse grew past its limits (an exponentially ambiguous grammar). */
const char *vkf_gmatch_failure(const vkf_gmatch *m);
/* The state before any input. */
vkf_gstate vkf_gmatch_start(vkf_gmatch *m);
/* Advances st over bytes[0..n) (text, UTF-8 decoded across calls); returns 0 when some stack
 * survives, -1 when none does (st is then the empty set) or on a malformed byte. */
int vkf_gmatch_accept_bytes(vkf_gmatch *m, vkf_gstate *st, const char *bytes, size_t n);
/* Advances st over a token consumed by token elements (<[id]>, !<[id]>) only. */
int vkf_gmatch_accept_token_elem(vkf_gmatch *m, vkf_gstate *st, int32_t token);
/* A token: llama_grammar_accept_token. Stacks topped by a token element take the token id,
 * the others its text bytes[0..n) (bytes NULL: none); st becomes the union. -1 when nothing
 * survives. */
int vkf_gmatch_accept_token(vkf_gmatch *m, vkf_gstate *st, int32_t token, const char *bytes,
                            size_t n);
/* 1 when st may end here: a stack is empty and no character is unfinished. */
int vkf_gmatch_complete(const vkf_gmatch *m, const vkf_gstate *st);
/* 1 when st holds no stack other than the empty one (nothing may follow). */
int vkf_gmatch_only_complete(const vkf_gmatch *m, const vkf_gstate *st);
/* 1 when bytes[0..n) can continue st (a token's text; n > 0): the test the masks cache. */
int vkf_gmatch_can_accept(vkf_gmatch *m, const vkf_gstate *st, const char *bytes, size_t n);

/* ---- internals shared with gbnf_vocab.c */

#define VKF_GSTACK_EMPTY 0u /* the empty stack: the grammar is complete */
#define VKF_GSTACK_CTX 1u   /* bottom of a truncated stack: the frames below are unknown */
#define VKF_GSET_EMPTY 0u   /* the empty set */

/* The members of set s (sorted stack ids). */
const uint32_t *vkf_gmatch_set(const vkf_gmatch *m, uint32_t s, uint32_t *n);
/* The set after code point cp; *escaped (may be NULL) is set to 1 when a truncated stack of s
 * had to return below its known frames. */
uint32_t vkf_gmatch_step(vkf_gmatch *m, uint32_t s, uint32_t cp, int *escaped);
/* s with its stacks cut at one depth, context_depth frames below the shallowest top
 * (VKF_GSTACK_CTX below); s itself when context_depth is 0. */
uint32_t vkf_gmatch_truncate(vkf_gmatch *m, uint32_t s);
/* 1 when some stack of s has a character class that one of the code points the unfinished
 * character p can still become matches. */
int vkf_gmatch_partial_ok(const vkf_gmatch *m, uint32_t s, vkf_gutf8 p);
/* The set of the stacks v[0..n) (v is reordered). */
uint32_t vkf_gmatch_union(vkf_gmatch *m, uint32_t *v, size_t n);
/* Top element of stack id (VKF_GSTACK_EMPTY / CTX have none: NULL). */
const vkf_gelem *vkf_gmatch_top(const vkf_gmatch *m, uint32_t stack);
/* Memory the interned tables hold, bytes (the caches evict past a budget). */
size_t vkf_gmatch_bytes(const vkf_gmatch *m);

/* UTF-8 decoding one byte at a time, as llama.cpp's decode_utf8: returns 1 with *cp when a code
 * point completes, 0 while one is unfinished, -1 on a malformed byte. */
int vkf_gutf8_push(vkf_gutf8 *p, unsigned char b, uint32_t *cp);

#endif
