/* The Unigram Viterbi search shared by SentencePiece .model files (tok_spm.c) and tokenizer.json
 * Unigram models (tok_hf.c): at every character start, every vocabulary piece that starts there
 * (walked in a trie) extends the best segmentation of the prefix; a character no single-character
 * piece covers may be the unknown piece at a penalty (min score - 10, as both libraries do); the
 * best path is read back from the end. The front ends differ only in the scores they give pieces
 * (user-defined bonus, unused pieces skipped) and in float or double sums (sentencepiece keeps
 * float; the tokenizers library double): they pass those in vkf_unigram. */
#include <math.h>
#include <stdlib.h>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

typedef struct uni_node {
    double score;
    int64_t start; /* -1: not reached */
    int32_t id;
} uni_node;

static size_t char_len(const vkf_unigram *u, const char *s, size_t n) {
    if (u->lead_byte_len) { /* the length the lead byte announces (text already valid UTF-8) */
        static const uint8_t k[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
        size_t l = k[(uint8_t)s[0] >> 4];
        return l < n ? l : n;
    }
    uint32_t cp;
    return vkf_utf8_decode(s, n, &cp);
}

/* Stores cand at best[e] if it beats what is there (strictly: the first path found wins). */
static void relax(const vkf_unigram *u, uni_node *best, size_t e, double cand, size_t st,
                  int32_t id) {
    if (u->float_sums) {
        float f = (float)cand;
        if (best[e].start < 0 || cand > best[e].score)
            best[e] = (uni_node){(double)f, (int64_t)st, id};
    } else if (best[e].start < 0 || cand > best[e].score) {
        best[e] = (uni_node){cand, (int64_t)st, id};
    }
}

int vkf_unigram_best(const vkf_unigram *u, const char *w, size_t n, vkf_uni_pieces *out) {
    out->n = 0;
    if (!n) return 1;
    uni_node *best = malloc((n + 1) * sizeof *best);
    if (!best) return 0;
    for (size_t i = 0; i <= n; i++)
        best[i] = (uni_node){0.0, -1, -1};
    best[0].start = 0;
    for (size_t st = 0; st < n;) {
        size_t mblen = char_len(u, w + st, n - st);
        double here = best[st].score;
        int single = 0;
        int32_t node = 0;
        for (size_t k = st; k < n; k++) {
            node = vkf_trie_step(u->trie, node, (uint8_t)w[k]);
            if (node < 0) break;
            int32_t id = u->trie->val[node];
            if (id < 0) continue;
            double sc = u->score(u->ctx, id, k + 1 - st);
            if (isnan(sc)) continue; /* a piece the model never emits */
            relax(u, best, k + 1, sc + here, st, id);
            if (k + 1 - st == mblen) single = 1;
        }
        if (!single) {
            if (u->unk < 0) {
                free(best);
                out->err_at = st;
                return -1;
            }
            double cand =
                u->float_sums ? (double)((float)u->unk_score + (float)here) : u->unk_score + here;
            relax(u, best, st + mblen, cand, st, u->unk);
        }
        st += mblen;
    }
    size_t cnt = 0;
    for (size_t e = n; e > 0; e = (size_t)best[e].start)
        cnt++;
    if (cnt > out->cap) {
        vkf_uni_piece *v = realloc(out->v, cnt * sizeof *v);
        if (!v) {
            free(best);
            return 0;
        }
        out->v = v;
        out->cap = cnt;
    }
    size_t k = cnt;
    for (size_t e = n; e > 0; e = (size_t)best[e].start)
        out->v[--k] = (vkf_uni_piece){(uint32_t)best[e].start,
                                      (uint32_t)(e - (size_t)best[e].start), best[e].id};
    out->n = cnt;
    free(best);
    return 1;
}
