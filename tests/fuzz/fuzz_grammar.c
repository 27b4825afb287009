/* libFuzzer entry for the GBNF grammar engine (src/structured/gbnf_*.c): the input is a grammar
 * text, a NUL byte, then a string. The grammar must parse or fail with a status naming a place
 * (never crash); a grammar that parses is matched against the string one code point at a time,
 * and over a small vocabulary cut from the string's bytes the cached masks (context depth 2)
 * must equal the token-by-token check at every state the string passes through. Inputs are
 * capped (grammar 1024 bytes, string 256) so a run stays well under the timeout.
 *
 * Build: cmake -DVKF_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ ...
 * Run:   ./fuzz_grammar -max_total_time=60 tests/fuzz/corpus/grammar */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "structured/gbnf.h"
#include "structured/grammar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t gl = nul ? (size_t)(nul - data) : size;
    if (gl > 1024) return 0;
    const char *text = nul ? (const char *)nul + 1 : "";
    size_t tl = nul ? size - gl - 1 : 0;
    if (tl > 256) tl = 256;
    vkf_gbnf *rules = NULL;
    if (vkf_gbnf_parse_rules((const char *)data, gl, NULL, NULL, &rules) == VKF_OK)
        vkf_gbnf_free(rules);
    else if (!strstr(vkf_last_error(), "grammar:"))
        abort(); /* a refusal names the grammar and the place */
    /* a vocabulary: the string cut into pieces of 1..4 bytes, every single byte, an EOG */
    const char *piece[600];
    size_t len[600];
    uint8_t eog[600] = {0};
    static char bytes[256];
    int n = 0;
    for (int b = 0; b < 256; b++) {
        bytes[b] = (char)b;
        piece[n] = &bytes[b];
        len[n++] = 1;
    }
    for (size_t i = 0; i < tl && n < 590;) {
        size_t k = 1 + (unsigned char)text[i] % 4;
        if (i + k > tl) k = tl - i;
        piece[n] = text + i;
        len[n++] = k;
        i += k;
    }
    piece[n] = "</s>";
    len[n] = 4;
    eog[n++] = 1;
    vkf_gvocab *v = NULL;
    if (vkf_gvocab_create(n, piece, len, eog, &v) != VKF_OK) abort();
    vkf_gengine *e = NULL;
    if (vkf_gengine_create(v, (const char *)data, gl, NULL, NULL, NULL, 2, &e) != VKF_OK) {
        vkf_gvocab_free(v);
        return 0;
    }
    vkf_gmatch *m = vkf_gengine_matcher(e);
    vkf_gstate st = vkf_gengine_start(e);
    for (size_t i = 0; i <= tl; i++) {
        const uint64_t *mask;
        if (vkf_gengine_mask(e, &st, &mask) != VKF_OK) break;
        for (int t = 0; t < n; t++) {
            int got = (int)((mask[t >> 6] >> (t & 63)) & 1);
            /* tokens with a NUL byte are never allowed (llama.cpp's pieces end there) */
            int want = eog[t] ? vkf_gmatch_complete(m, &st)
                       : memchr(piece[t], 0, len[t])
                           ? 0
                           : vkf_gmatch_can_accept(m, &st, piece[t], len[t]);
            if (got != want && !(got && !eog[t])) { /* token elements may add tokens */
                fprintf(stderr, "token %d: mask %d, check %d\n", t, got, want);
                abort();
            }
        }
        if (i == tl || vkf_gmatch_accept_bytes(m, &st, text + i, 1) != 0) break;
    }
    vkf_gengine_free(e);
    vkf_gvocab_free(v);
    return 0;
}
