/* A small regular-expression engine over Unicode code points, for pre-tokenizer patterns
 * (GPT-2, Llama-3, Qwen2, ... and Hugging Face Split patterns).
 *
 * Syntax: alternation |, groups (...) (?:...) (?i:...) (captures are not recorded), lookahead
 * (?=...) (?!...), classes [...] [^...] with ranges and escapes, . ^ $, \p{X} \P{X} \pX for
 * the general categories (L, Lu, Ll, Lt, Lm, Lo, LC, M, Mn, Mc, Me, N, Nd, Nl, No, P, Pc, Pd,
 * Ps, Pe, Pi, Pf, Po, S, Sm, Sc, Sk, So, Z, Zs, Zl, Zp, C, Cc, Cf, Cs, Co, Cn and the long
 * names Letter, Number, ...), \s \S (White_Space) \d \D (Nd) \w \W, \r \n \t \f \v \0 \xHH
 * \x{H...} \uHHHH, quantifiers ? * + {n} {n,} {n,m} (a trailing ? makes them lazy, a trailing +
 * is read as greedy).
 *
 * Matching is leftmost-first, as Perl, Oniguruma (Hugging Face tokenizers) and ECMAScript
 * (llama.cpp's std::regex) choose among alternatives, simulated with a Pike VM: every position
 * is visited once per live program state, so the time is O(text length x program size) with
 * no backtracking; lookahead bodies are matched anchored at the position where they are asked
 * (once per position), a single-character body such as (?!\S) in O(1). A longer body can read
 * ahead at every position (quadratic in a run it spans): SuperBPE's (?=(\d{3})+(?!\d)) has a
 * dedicated linear matcher for that reason.
 *
 * Text is code points (invalid UTF-8 bytes as VKF_CP_RAW(b): no category, not space). A
 * compiled regex keeps scratch space: one regex is used by one thread at a time. */
#ifndef VKF_TOKENIZER_REGEX_H
#define VKF_TOKENIZER_REGEX_H

#include <stddef.h>
#include <stdint.h>

#include "vkformer.h"

typedef struct vkf_regex vkf_regex;

/* Compiles pattern[0..len) (UTF-8). Errors (VKF_ERROR_UNSUPPORTED for a construct outside the
 * syntax above, VKF_ERROR_FORMAT for a malformed pattern) name the pattern and the offset;
 * what is a prefix for the messages ("tokenizer.json: pre_tokenizer Split"). */
vkf_status vkf_regex_compile(const char *pattern, size_t len, const char *what, vkf_regex **out);
/* The same; no_fast = 1 runs the Llama-3 / Qwen2 / SuperBPE-digit patterns on the engine too (tests
 * compare the hand-written matcher with it). */
vkf_status vkf_regex_compile_ex(const char *pattern, size_t len, const char *what, int no_fast,
                                vkf_regex **out);
void vkf_regex_free(vkf_regex *re);

/* Finds the leftmost-first match in cp[from..end) of the text cp[begin..end) (^ and $ and
 * lookahead see that text). Returns 1 with [*ms, *me) set, 0 when there is none, -1 when out of
 * memory. gc: the general category (vkf_gc) of each code point, same indexing as cp. */
int vkf_regex_find(vkf_regex *re, const uint32_t *cp, const uint8_t *gc, size_t begin, size_t end,
                   size_t from, size_t *ms, size_t *me);

/* Spans of a split: [s, e) in code points, match = 1 for a match of the pattern, 0 for the text
 * between matches. */
typedef struct vkf_rx_span {
    uint32_t s, e;
    int match;
} vkf_rx_span;

typedef struct vkf_rx_spans {
    vkf_rx_span *v;
    size_t n, cap;
} vkf_rx_spans;

/* Appends the spans of every match of re in cp[a..b) (the text seen by the pattern) and of the
 * text between them, covering [a, b) in order; an empty match splits the text where it occurs.
 * Returns 0 when out of memory. */
int vkf_regex_spans(vkf_regex *re, const uint32_t *cp, const uint8_t *gc, size_t a, size_t b,
                    vkf_rx_spans *out);

#endif
