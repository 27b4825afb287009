/* UTF-8 decoding and the Unicode data the tokenizers need: GPT-2 regex classes, general
 * categories, lowercase mapping and the normalization forms NFD, NFKD, NFC, NFKC. */
#ifndef VKF_TOKENIZER_UNICODE_H
#define VKF_TOKENIZER_UNICODE_H

#include <stddef.h>
#include <stdint.h>

/* Returned by vkf_utf8_decode for a byte that does not start a valid sequence. */
#define VKF_UTF8_INVALID 0xFFFFFFFFu

/* Decodes the sequence at s[0..n) (n >= 1). Returns its length in bytes (1..4) and sets *cp.
 * Invalid input (a stray continuation byte, a truncated sequence, an overlong form, a surrogate,
 * a value above U+10FFFF) consumes exactly one byte and sets *cp = VKF_UTF8_INVALID, so every
 * byte string decodes to a sequence that covers all of its bytes. */
size_t vkf_utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Writes cp (<= U+10FFFF) as UTF-8 into out[0..4); returns the length. A "raw byte" code
 * (VKF_CP_RAW(b), see below) is written as the single byte b. */
size_t vkf_utf8_encode(uint32_t cp, char *out);

/* Inside the normalizers an invalid input byte b travels as the code VKF_CP_RAW(b), above
 * U+10FFFF: it has no category (VKF_GC_CN), combining class 0, no decomposition and no case,
 * and vkf_utf8_encode writes it back as the byte itself, so invalid bytes pass through. */
#define VKF_CP_RAW(b) (0x110000u | (uint32_t)(uint8_t)(b))
#define VKF_CP_IS_RAW(cp) ((cp) >= 0x110000u)

/* Character classes of the GPT-2 regex. */
typedef enum vkf_ucat {
    VKF_UCAT_OTHER = 0, /* [^\s\p{L}\p{N}], including invalid bytes */
    VKF_UCAT_LETTER,    /* \p{L} */
    VKF_UCAT_NUMBER,    /* \p{N} */
    VKF_UCAT_SPACE,     /* \s (White_Space) */
} vkf_ucat;

vkf_ucat vkf_unicode_category(uint32_t cp);

/* General categories, in the order of tools/gen_unicode_tables.py. */
typedef enum vkf_gc {
    VKF_GC_CN = 0, /* unassigned (and invalid bytes) */
    VKF_GC_LU,
    VKF_GC_LL,
    VKF_GC_LT,
    VKF_GC_LM,
    VKF_GC_LO,
    VKF_GC_MN,
    VKF_GC_MC,
    VKF_GC_ME,
    VKF_GC_ND,
    VKF_GC_NL,
    VKF_GC_NO,
    VKF_GC_PC,
    VKF_GC_PD,
    VKF_GC_PS,
    VKF_GC_PE,
    VKF_GC_PI,
    VKF_GC_PF,
    VKF_GC_PO,
    VKF_GC_SM,
    VKF_GC_SC,
    VKF_GC_SK,
    VKF_GC_SO,
    VKF_GC_ZS,
    VKF_GC_ZL,
    VKF_GC_ZP,
    VKF_GC_CC,
    VKF_GC_CF,
    VKF_GC_CS,
    VKF_GC_CO,
} vkf_gc;

vkf_gc vkf_unicode_gc(uint32_t cp);
static inline int vkf_gc_is_letter(vkf_gc g) { return g >= VKF_GC_LU && g <= VKF_GC_LO; }
static inline int vkf_gc_is_mark(vkf_gc g) { return g >= VKF_GC_MN && g <= VKF_GC_ME; }
static inline int vkf_gc_is_number(vkf_gc g) { return g >= VKF_GC_ND && g <= VKF_GC_NO; }
static inline int vkf_gc_is_punct(vkf_gc g) { return g >= VKF_GC_PC && g <= VKF_GC_PO; }
static inline int vkf_gc_is_other(vkf_gc g) { return g == VKF_GC_CN || g >= VKF_GC_CC; }
/* The White_Space property (Rust's char::is_whitespace, regex \s). */
int vkf_unicode_is_space(uint32_t cp);
/* Rust regex's \w: Alphabetic, marks, decimal digits, connector punctuation, Join_Control. */
int vkf_unicode_is_word(uint32_t cp);
/* Canonical combining class (0 for starters and invalid bytes). */
int vkf_unicode_ccc(uint32_t cp);
/* Full lowercase mapping of one character (Rust's char::to_lowercase): writes 1 or 2 code
 * points to out and returns the count. */
size_t vkf_unicode_lower(uint32_t cp, uint32_t out[3]);

/* Normalization forms. */
typedef enum vkf_nf { VKF_NF_NFD, VKF_NF_NFKD, VKF_NF_NFC, VKF_NF_NFKC } vkf_nf;

/* Growable code point buffer. */
typedef struct vkf_cpbuf {
    uint32_t *v;
    size_t n, cap;
} vkf_cpbuf;
/* 0 on allocation failure. */
int vkf_cpbuf_reserve(vkf_cpbuf *b, size_t n);
int vkf_cpbuf_push(vkf_cpbuf *b, uint32_t cp);

/* Decodes UTF-8 s[0..n) into code points (invalid bytes become VKF_CP_RAW(b)), appending to b;
 * 0 on allocation failure. */
int vkf_utf8_to_cps(const char *s, size_t n, vkf_cpbuf *b);
/* Normalizes the code points in[0..n) into out (replacing its contents); 0 on allocation
 * failure. */
int vkf_unicode_normalize(vkf_nf form, const uint32_t *in, size_t n, vkf_cpbuf *out);

#endif
