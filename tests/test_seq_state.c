/* vkf_session_seq_state_get / _set (serve's slot save and restore): a sequence's cache rows
 * copied into another sequence make it that sequence. A session of 2 sequences: sequence 0
 * evaluates a prompt, sequence 1 another one; sequence 0's rows go into sequence 1; then each
 * alone takes the same next token at the same position, and the two logits rows must be the same
 * bits (memcmp: the same rows of the same cache through the same kernels). Before the copy they
 * differ (the check has teeth). Sizes: rows x layers x (K row + V row bytes). Refused: a size
 * that is not the rows', a sequence or row count out of range. CPU and Vulkan, f32 and q8_0
 * weights, learned positions (kjv-gpt); quantized KV caches (q8_0, q4_0) on the CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vkformer.h"

#define N_PROMPT 9

static int32_t cache_type = 0; /* vkf_cache_type of the session (0: the default) */

static vkf_status step_alone(vkf_session *s, int seq, int32_t tok, float *lg) {
    int32_t t[2] = {tok, tok}, pos[2] = {-1, -1};
    pos[seq] = N_PROMPT;
    return vkf_session_seq_decode(s, t, pos, lg);
}

static void test_model(vkf_context *ctx, const char *backend, void *user) {
    const char *path = user;
    vkf_model_params mp = {.path = path, .cache_type_k = cache_type, .cache_type_v = cache_type};
    vkf_model *m;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        VKT_CHECK(0, "load %s: %s", path, vkf_last_error());
        return;
    }
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    int V = d.n_vocab;
    vkf_session_params sp = {
        .n_batch = 2, .n_ctx = 64, .cache_type_k = cache_type, .cache_type_v = cache_type};
    vkf_session *s;
    if (vkf_session_create(m, &sp, &s) != VKF_OK) {
        VKT_CHECK(0, "session %s: %s", path, vkf_last_error());
        vkf_model_free(m);
        return;
    }
    int32_t a[N_PROMPT], b[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++) {
        a[i] = (3 + 7 * i + i * i) % V;
        b[i] = (11 + 13 * i) % V;
    }
    float *lg = calloc((size_t)2 * V, sizeof *lg), *l0 = malloc((size_t)V * sizeof *l0);
    size_t n = 0, one = 0;
    void *state = NULL;
    char what[1200];
    snprintf(what, sizeof what, "%s %s (cache type %d)", backend, path, cache_type);
    VKT_OK(vkf_session_seq_state_size(s, N_PROMPT, &n));
    VKT_OK(vkf_session_seq_state_size(s, 1, &one));
    VKT_CHECK(n == one * N_PROMPT && one > 0, "%s: %zu bytes for %d rows, %zu for one", what, n,
              N_PROMPT, one);
    if (lg && l0 && (state = malloc(n)) != NULL &&
        vkf_session_seq_eval(s, 0, 0, a, N_PROMPT, NULL) == VKF_OK &&
        vkf_session_seq_eval(s, 1, 0, b, N_PROMPT, NULL) == VKF_OK) {
        int32_t tok = 5 % V;
        /* before the copy: sequence 1 is its own prompt */
        VKT_OK(step_alone(s, 0, tok, lg));
        memcpy(l0, lg, (size_t)V * sizeof *l0);
        VKT_OK(step_alone(s, 1, tok, lg));
        VKT_CHECK(memcmp(l0, lg + V, (size_t)V * sizeof *l0) != 0,
                  "%s: two prompts gave the same logits (the check below would prove nothing)",
                  what);
        /* sequence 0's rows into sequence 1 */
        VKT_OK(vkf_session_seq_state_get(s, 0, N_PROMPT, state, n));
        VKT_OK(vkf_session_seq_state_set(s, 1, N_PROMPT, state, n));
        VKT_OK(step_alone(s, 1, tok, lg));
        VKT_CHECK(memcmp(l0, lg + V, (size_t)V * sizeof *l0) == 0,
                  "%s: the copied sequence's logits differ from the original's", what);
        /* refused */
        VKT_CHECK(vkf_session_seq_state_set(s, 1, N_PROMPT, state, n - 1) ==
                      VKF_ERROR_INVALID_ARGUMENT,
                  "%s: a short buffer accepted", what);
        VKT_CHECK(vkf_session_seq_state_get(s, 2, N_PROMPT, state, n) == VKF_ERROR_INVALID_ARGUMENT,
                  "%s: sequence 2 of 2 accepted", what);
        VKT_CHECK(vkf_session_seq_state_size(s, 65, &n) == VKF_ERROR_INVALID_ARGUMENT,
                  "%s: 65 rows of 64 accepted", what);
    } else {
        VKT_CHECK(0, "%s: setup: %s", what, vkf_last_error());
    }
    free(state);
    free(lg);
    free(l0);
    vkf_session_free(s);
    vkf_model_free(m);
}

int main(void) {
    static char paths[3][1024];
    snprintf(paths[0], sizeof paths[0], "%s", vkt_fixture("llama-tiny/llama-tiny-f32.gguf"));
    snprintf(paths[1], sizeof paths[1], "%s", vkt_fixture("llama-tiny/llama-tiny-q8_0.gguf"));
    snprintf(paths[2], sizeof paths[2], "%s/models/kjv-gpt", VKF_SOURCE_DIR);
    for (int i = 0; i < 3; i++)
        vkt_for_each_backend(test_model, paths[i]);
    /* the block types of the KV cache: the CPU backend's */
    static const int32_t types[] = {VKF_CACHE_Q8_0, VKF_CACHE_Q4_0};
    vkf_context *cpu;
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    if (vkf_context_create(&cp, &cpu) == VKF_OK) {
        for (int k = 0; k < 2; k++) {
            cache_type = types[k];
            test_model(cpu, "cpu", paths[0]);
        }
        vkf_context_free(cpu);
    } else {
        VKT_CHECK(0, "cpu context: %s", vkf_last_error());
    }
    return vkt_finish();
}
