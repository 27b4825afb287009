/* libFuzzer entry for the tool-call parsers (src/structured/tool_calls.c, tool_messages.c): the
 * first byte picks the format (of six), the second seeds the sizes of the streamed pieces, the
 * rest is a model's answer (capped at 4096 bytes). The whole answer must become a JSON object
 * with role "assistant", content a string or null (null only beside tool_calls), every call with
 * an id, type "function", a name and arguments, all strings; streamed in pieces, the deltas must
 * keep OpenAI's rules and add up to the streaming parser's own message (vkformer.h), checked by
 * tests/harness/tool_deltas.c as test_tool_calls checks it.
 *
 * Build: cmake -DVKF_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ ...
 * Run:   ./fuzz_tool_calls -max_total_time=60 tests/fuzz/corpus/tool_calls */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_deltas.h"
#include "vkformer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *json) {
    fprintf(stderr, "%s: %s\n", what, json ? json : "(NULL)");
    abort();
}

static int is_str(const cJSON *o, const char *key) {
    return cJSON_IsString(cJSON_GetObjectItem(o, key));
}

/* the shape of an OpenAI assistant message */
static void check_message(const char *json) {
    cJSON *m = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(m)) fail("the message is not a JSON object", json);
    const cJSON *role = cJSON_GetObjectItem(m, "role"),
                *content = cJSON_GetObjectItem(m, "content"),
                *calls = cJSON_GetObjectItem(m, "tool_calls"), *c;
    if (!cJSON_IsString(role) || strcmp(role->valuestring, "assistant") != 0)
        fail("role is not \"assistant\"", json);
    if (!cJSON_IsString(content) && !(cJSON_IsNull(content) && cJSON_GetArraySize(calls) > 0))
        fail("content is neither a string nor null beside tool_calls", json);
    if (calls && (!cJSON_IsArray(calls) || cJSON_GetArraySize(calls) == 0))
        fail("tool_calls is not a non-empty array", json);
    cJSON_ArrayForEach(c, calls) {
        const cJSON *fn = cJSON_GetObjectItem(c, "function");
        if (!is_str(c, "id") || !is_str(c, "type") || !is_str(fn, "name") ||
            !is_str(fn, "arguments"))
            fail("a call without id, type, name or arguments", json);
    }
    cJSON_Delete(m);
}

static uint32_t g_rng;
static size_t piece(void *user) {
    (void)user;
    g_rng = g_rng * 1103515245u + 12345u;
    return 1 + (g_rng >> 16) % 16;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || size > 4098) return 0;
    vkf_tool_format f = (vkf_tool_format)(data[0] % 6);
    g_rng = data[1];
    const char *text = (const char *)data + 2;
    size_t len = size - 2;
    char *msg = NULL;
    if (vkf_tool_calls_parse(f, text, len, &msg) != VKF_OK) fail("vkf_tool_calls_parse", NULL);
    check_message(msg);
    free(msg);
    char *own = NULL;
    const char *why = NULL;
    int n_deltas;
    char *sum = vkt_tool_stream(f, text, len, piece, NULL, &own, &n_deltas, &why);
    if (!sum) fail(why, own);
    check_message(own);
    cJSON *a = cJSON_Parse(sum), *b = cJSON_Parse(own);
    if (!cJSON_Compare(a, b, 1)) {
        fprintf(stderr, "the deltas add up to\n%s\nthe parser's message is\n%s\n", sum, own);
        abort();
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(sum);
    free(own);
    return 0;
}
