/* libFuzzer entry for the pre-tokenizer regex engine (src/tokenizer/regex.c): the input is a
 * pattern, a NUL byte, then a text. The pattern must compile or fail with a status (never
 * crash); a compiled pattern splits the text into spans that cover it in order, without gaps or
 * overlaps, every span non-empty; each match reported by vkf_regex_find lies inside the text
 * and starts at or after the search position. Inputs are capped (pattern 256 bytes, text 2048
 * code points) so that the O(text x program) bound keeps each run well under the timeout.
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
    free(sp.v);
    vkf_cptext_free(&t);
    vkf_regex_free(re);
    return 0;
}
