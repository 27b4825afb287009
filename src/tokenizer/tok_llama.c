/* SentencePiece-style BPE over a GGUF "llama" vocabulary, as llama.cpp's SPM tokenizer does it:
 * symbols start as UTF-8 characters; the adjacent pair whose concatenation is the vocabulary
 * piece with the highest score merges first (leftmost on ties), via a heap of candidate pairs;
 * a final symbol that is not a piece falls back to byte tokens <0xNN>. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

static const char k_space[] = "\xe2\x96\x81"; /* U+2581 LOWER ONE EIGHTH BLOCK */

/* Queues the merge of symbols l and r if their concatenation is a piece. */
static int try_bigram(vkf_tokenizer *t, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return 1;
    const vkf_symbol *a = &t->sym[l], *b = &t->sym[r];
    int32_t id = vkf_strmap_get(&t->vocab, t->work + a->start, a->n + b->n);
    if (id < 0) return 1;
    float score = t->score ? t->score[id] : 0.0f;
    vkf_bigram bg = {.key = -(double)score, .left = l, .right = r, .a = (int32_t)(a->n + b->n)};
    return vkf_bigram_push(&t->heap, bg);
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
    t->heap.n = 0;
    for (int32_t i = 1; i < ns; i++)
        if (!try_bigram(t, i - 1, i)) goto oom;
    vkf_bigram bg;
    while (vkf_bigram_pop(&t->heap, &bg)) {
        vkf_symbol *l = &sym[bg.left], *r = &sym[bg.right];
        /* stale if either side was merged away or grew since the pair was queued (symbols only
         * grow, so an unchanged total size means both are as they were, and adjacent) */
        if (!l->n || !r->n || l->n + r->n != (uint32_t)bg.a) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = bg.left;
        if (!try_bigram(t, l->prev, bg.left) || !try_bigram(t, bg.left, l->next)) goto oom;
    }
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
