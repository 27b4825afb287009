/* SentencePiece-style BPE over a GGUF "llama" vocabulary, as llama.cpp's SPM tokenizer does it:
 * symbols start as UTF-8 characters; the adjacent pair whose concatenation is the vocabulary
 * piece with the highest score merges first (leftmost on ties: the shared loop of bpe.c);
 * a final symbol that is not a piece falls back to byte tokens <0xNN>. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

static const char k_space[] = "\xe2\x96\x81"; /* U+2581 LOWER ONE EIGHTH BLOCK */

/* Merge priority: the score of the vocabulary piece the two symbols form (highest first). */
static int score_pair(void *ctx, const vkf_symbol *a, const vkf_symbol *b, double *key,
                      int32_t *id) {
    vkf_tokenizer *t = ctx;
    *id = vkf_strmap_get(&t->vocab, t->work + a->start, a->n + b->n);
    if (*id < 0) return 0;
    *key = -(double)(t->score ? t->score[*id] : 0.0f);
    return 1;
}

vkf_status vkf_llama_encode_text(vkf_tokenizer *t, const char *s, size_t n, int prev_special,
                                 vkf_ids *out) {
    /* escape: ' ' -> U+2581, and one U+2581 in front at the start or after a special token */
    int prefix = t->add_space_prefix && prev_special;
    if (n > (UINT32_MAX - 3) / 3 || !vkf_tok_reserve_work(t, 3 * n + 3))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
    char *w = t->work;
    size_t wn = 0;
    if (prefix) {
        memcpy(w, k_space, 3);
        wn = 3;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') {
            memcpy(w + wn, k_space, 3);
            wn += 3;
        } else {
            w[wn++] = s[i];
        }
    }
    /* symbols: UTF-8 characters; each invalid byte is a symbol of its own */
    if (!vkf_tok_reserve_symbols(t, wn))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
    vkf_symbol *sym = t->sym;
    int32_t ns = 0;
    for (size_t i = 0; i < wn;) {
        uint32_t cp;
        size_t l = vkf_utf8_decode(w + i, wn - i, &cp);
        sym[ns] = (vkf_symbol){
            .prev = ns - 1, .next = ns + 1, .id = -1, .start = (uint32_t)i, .n = (uint32_t)l};
        ns++;
        i += l;
    }
    if (ns) sym[ns - 1].next = -1;
    if (!vkf_bpe_merge(t, ns, score_pair, t)) goto oom;
    for (int32_t i = ns ? 0 : -1; i >= 0; i = sym[i].next) {
        int32_t id = vkf_strmap_get(&t->vocab, w + sym[i].start, sym[i].n);
        if (id >= 0) {
            if (!vkf_ids_push(out, id)) goto oom;
            continue;
        }
        for (uint32_t k = 0; k < sym[i].n; k++) { /* no piece: byte fallback */
            uint8_t b = (uint8_t)w[sym[i].start + k];
            int32_t bt = t->byte_token[b] >= 0 ? t->byte_token[b] : t->unk;
            if (bt < 0)
                return vkf_error(VKF_ERROR_TOKEN,
                                 "%s: byte 0x%02x has no piece, no <0x%02X> token and no unk",
                                 t->name, b, b);
            if (!vkf_ids_push(out, bt)) goto oom;
        }
    }
    return VKF_OK;
oom:
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing", t->name);
}
