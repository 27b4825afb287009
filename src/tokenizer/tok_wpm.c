/* WordPiece over a GGUF "bert" vocabulary, as llama.cpp's WPM tokenizer does it: the text is
 * decomposed (NFD), accents (Mn) and control characters dropped, lower-cased and cut into words
 * at whitespace, with every punctuation character, ASCII symbol and CJK ideograph a word of its
 * own; each word, with U+2581 in front (llama.cpp stores word-initial pieces as "▁the" and
 * continuations without "##"), is covered greedily by the longest vocabulary pieces from the
 * left; a word with a position no piece covers becomes the unknown token. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

static int is_cjk(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Covers the word w[0..n) (U+2581 included) with pieces; unk if some position has none. */
static vkf_status word_pieces(vkf_tokenizer *t, const char *w, size_t n, vkf_ids *out) {
    size_t first = out->n;
    for (size_t i = 0; i < n;) {
        size_t j = n - i > t->max_token_len ? i + t->max_token_len : n;
        int32_t id = -1;
        for (; j > i; j--)
            if ((id = vkf_strmap_get(&t->vocab, w + i, j - i)) >= 0) break;
        if (id < 0) {
            out->n = first;
            break;
        }
        if (!vkf_ids_push(out, id)) goto oom;
        i = j;
    }
    if (out->n == first) {
        if (t->unk < 0)
            return vkf_error(VKF_ERROR_TOKEN, "%s: word \"%.*s\" has no pieces and there is no unk",
                             t->name, (int)(n > 64 ? 64 : n), w);
        if (!vkf_ids_push(out, t->unk)) goto oom;
    }
    return VKF_OK;
oom:
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
}

vkf_status vkf_wpm_encode_text(vkf_tokenizer *t, const char *s, size_t n, vkf_ids *out) {
    static const char k_mark[] = "\xe2\x96\x81";
    vkf_cpbuf in = {0}, nfd = {0};
    vkf_sbuf word = {0};
    vkf_status st = VKF_OK;
    if (!vkf_utf8_to_cps(s, n, &in) || !vkf_unicode_normalize(VKF_NF_NFD, in.v, in.n, &nfd) ||
        !vkf_sbuf_put(&word, k_mark, 3))
        goto oom;
    for (size_t i = 0; i <= nfd.n; i++) {
        uint32_t c = i < nfd.n ? nfd.v[i] : ' '; /* a space at the end flushes the last word */
        vkf_gc g = vkf_unicode_gc(c);
        int space = vkf_unicode_is_space(c);
        if (!space && (c == 0 || c == 0xFFFD || g == VKF_GC_CC || g == VKF_GC_CF ||
                       g == VKF_GC_CO || g == VKF_GC_CS || g == VKF_GC_MN))
            continue;
        int alone = !space && (vkf_gc_is_punct(g) ||
                               (c < 0x7F && g >= VKF_GC_SM && g <= VKF_GC_SO) || is_cjk(c));
        if ((space || alone) && word.n > 3) { /* finish the word so far */
            if ((st = word_pieces(t, word.p, word.n, out)) != VKF_OK) goto done;
            word.n = 3;
        }
        if (space) continue;
        uint32_t low[3];
        size_t nl = VKF_CP_IS_RAW(c) ? 0 : vkf_unicode_lower(c, low);
        if (!nl) low[nl++] = c;
        for (size_t k = 0; k < nl; k++) {
            char u[4];
            if (!vkf_sbuf_put(&word, u, vkf_utf8_encode(low[k], u))) goto oom;
        }
        if (alone) { /* a word of its own */
            if ((st = word_pieces(t, word.p, word.n, out)) != VKF_OK) goto done;
            word.n = 3;
        }
    }
    goto done;
oom:
    st = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
done:
    free(in.v);
    free(nfd.v);
    free(word.p);
    return st;
}
