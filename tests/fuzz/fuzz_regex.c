/* libFuzzer entry for the pre-tokenizer regex engine (src/tokenizer/regex.c): the input is a
 * pattern, a NUL byte, then a text. The pattern must compile or fail with a status (never
 * crash); a compiled pattern splits the text into spans that cover it in order, without gaps or
 * overlaps, every span non-empty; each match reported by vkf_regex_find lies inside the text
 * and starts at or after the search position. Inputs are capped (pattern 256 bytes, text 2048
 * code points) so that the O(text x program) bound keeps each run well under the timeout.
 * A pattern with a hand-written matcher (Llama-3, Qwen2, SuperBPE's digit groups) must split as
 * the engine does; the hand-written named pre-tokenizers (kimi-k2, afmoe) split the text into
 * words that cover it in order.
 *
 * Build: cmake -DVKF_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ ...
 * Run:   ./fuzz_regex -max_total_time=60 tests/fuzz/corpus/regex */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/pretok.h"
#include "tokenizer/regex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t pl = nul ? (size_t)(nul - data) : size;
    if (pl > 256) return 0;
    const char *text = nul ? (const char *)nul + 1 : "";
    size_t tl = nul ? size - pl - 1 : 0;
    vkf_regex *re = NULL;
    if (vkf_regex_compile((const char *)data, pl, "fuzz", &re) != VKF_OK) return 0;
    vkf_cptext t = {0};
    if (!vkf_cptext_set(&t, text, tl)) abort();
    if (t.n > 2048) t.n = 2048;
    vkf_rx_spans sp = {0};
    if (!vkf_regex_spans(re, t.cp, t.gc, 0, t.n, &sp)) abort();
    size_t pos = 0;
    for (size_t i = 0; i < sp.n; i++) {
        if (sp.v[i].s != pos || sp.v[i].e <= sp.v[i].s || sp.v[i].e > t.n) {
            fprintf(stderr, "span %zu [%u, %u) after %zu of %zu\n", i, sp.v[i].s, sp.v[i].e, pos,
                    t.n);
            abort();
        }
        pos = sp.v[i].e;
    }
    if (pos != t.n) abort();
    for (size_t from = 0; from <= t.n; from += 1 + t.n / 8) {
        size_t ms, me;
        int r = vkf_regex_find(re, t.cp, t.gc, 0, t.n, from, &ms, &me);
        if (r < 0) abort();
        if (r && (ms < from || me < ms || me > t.n)) abort();
    }
    vkf_regex *slow = NULL;
    if (vkf_regex_compile_ex((const char *)data, pl, "fuzz", 1, &slow) != VKF_OK) abort();
    vkf_rx_spans sp2 = {0};
    if (!vkf_regex_spans(slow, t.cp, t.gc, 0, t.n, &sp2)) abort();
    if (sp2.n != sp.n || (sp.n && memcmp(sp.v, sp2.v, sp.n * sizeof *sp.v) != 0)) {
        fprintf(stderr, "hand-written matcher and engine disagree\n");
        abort();
    }
    static const char *const named[] = {"kimi-k2", "afmoe"};
    size_t bytes = t.off[t.n];
    for (size_t k = 0; k < 2; k++) {
        vkf_pretok *p = NULL;
        vkf_pretok_info info;
        if (vkf_pretok_from_name(named[k], "fuzz", &p, &info) != VKF_OK) abort();
        const uint32_t *w;
        size_t nw, at = 0;
        if (!vkf_pretok_split(p, text, bytes, &w, &nw)) abort();
        for (size_t i = 0; i < nw; i++) {
            if (w[2 * i] != at || w[2 * i + 1] <= at) abort();
            at = w[2 * i + 1];
        }
        if (at != bytes) abort();
        vkf_pretok_free(p);
    }
    free(sp2.v);
    vkf_regex_free(slow);
    free(sp.v);
    vkf_cptext_free(&t);
    vkf_regex_free(re);
    return 0;
}
