/* The BPE merge loop shared by every BPE front end: GGUF "gpt2" vocabularies and vocab.json +
 * merges.txt (tok_gpt2.c: merge rules by rank), tokenizer.json BPE models (tok_hf.c: by rank),
 * GGUF "llama" vocabularies (tok_llama.c) and SentencePiece BPE .model files (tok_spm.c: by the
 * score of the merged piece). Each front end builds the symbols of one word and says which
 * adjacent pairs merge, into what and with which priority; this file merges.
 *
 * Symbols are a doubly linked list (t->sym[0..ns), in order); a heap of candidate pairs is
 * popped smallest key first, leftmost on ties, which is the order of llama.cpp's SPM and BPE
 * sessions and of the tokenizers library's Word::merge_all. A popped pair is stale when either
 * symbol changed since it was queued; symbols only grow (a merge appends the right one to the
 * left one), so "both unchanged" is "the two lengths still add up to the queued sum". */
#include "tokenizer/tokenizer_impl.h"

static int queue_pair(vkf_tokenizer *t, int32_t l, int32_t r, vkf_bpe_pair_fn pair, void *ctx) {
    if (l < 0 || r < 0) return 1;
    double key;
    int32_t id;
    if (!pair(ctx, &t->sym[l], &t->sym[r], &key, &id)) return 1;
    vkf_bigram bg = {
        .key = key, .left = l, .right = r, .a = (int32_t)(t->sym[l].n + t->sym[r].n), .b = id};
    return vkf_bigram_push(&t->heap, bg);
}

int vkf_bpe_merge(vkf_tokenizer *t, int32_t ns, vkf_bpe_pair_fn pair, void *ctx) {
    vkf_symbol *sym = t->sym;
    t->heap.n = 0;
    for (int32_t i = 1; i < ns; i++)
        if (!queue_pair(t, i - 1, i, pair, ctx)) return 0;
    vkf_bigram bg;
    while (vkf_bigram_pop(&t->heap, &bg)) {
        vkf_symbol *l = &sym[bg.left], *r = &sym[bg.right];
        if (!l->n || !r->n || l->n + r->n != (uint32_t)bg.a) continue; /* stale */
        l->id = bg.b;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = bg.left;
        if (!queue_pair(t, l->prev, bg.left, pair, ctx) ||
            !queue_pair(t, bg.left, l->next, pair, ctx))
            return 0;
    }
    return 1;
}
