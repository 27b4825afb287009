/* libFuzzer entry for the JSON Schema converter (src/structured/json_schema*.c): the input is a
 * schema's text. The converter must return a grammar that parses with its start rule (the GBNF
 * parser's checks: rules defined, no left recursion, a root that matches something), or refuse
 * with a status and a message naming "json schema" (never crash, never write a grammar that
 * does not parse: that comes back as VKF_ERROR_INTERNAL, which aborts here). Inputs are capped
 * at 4096 bytes; a schema's grammar can grow with nesting, which the timeout bounds.
 *
 * Build: cmake -DVKF_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ ...
 * Run:   ./fuzz_json_schema -max_total_time=60 tests/fuzz/corpus/json_schema */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "structured/gbnf.h"
#include "vkformer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0; /* a NUL inside ends the text early: the API takes C strings */
    char *g = NULL;
    vkf_status st = vkf_json_schema_to_grammar(text, &g);
    if (st == VKF_OK) {
        vkf_gbnf *r = NULL;
        if (!g || vkf_gbnf_parse(g, strlen(g), "root", NULL, NULL, &r) != VKF_OK) {
            fprintf(stderr, "the grammar written does not parse: %s\n%s\n", vkf_last_error(),
                    g ? g : "(NULL)");
            abort();
        }
        vkf_gbnf_free(r);
    } else if (g || st == VKF_ERROR_INTERNAL || !strstr(vkf_last_error(), "json schema")) {
        fprintf(stderr, "refusal %d: %s\n", (int)st, vkf_last_error());
        abort(); /* a refusal names the schema's problem, leaves no output */
    }
    free(g);
    free(text);
    return 0;
}
