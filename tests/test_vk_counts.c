/* Dispatches and hazard barriers of a decoding step under the GPUs' kernel choices (the
 * gpu_table switch, VKF_GPU_TABLE=1, given through the API here so the environment does not
 * matter), counted in the command buffer the Vulkan backend records (vkf_vk_stats: every
 * vkCmdDispatch and vkCmdPipelineBarrier it records), on llama-tiny-q4_0 (4 llama layers).
 *
 * The expected counts are derived by hand from the decoder graph (src/model/graph_decoder.c)
 * and the fusions vk_fuse.c documents, not read from the code under test:
 *
 *   EMBED x = tok_embd[id]                                      1 dispatch, no barrier (the
 *                                                                 first: nothing written yet)
 *   per layer (llama: RMSNorm, q/k/v, RoPE q and k, K and V stored, attention, o + residual,
 *   RMSNorm, gate/up, SwiGLU, down + residual):
 *     RMSNorm + q/k/v matmuls (one group, the norm folded in)   1 dispatch, 1 barrier (reads x)
 *     RoPE q, RoPE k, COPY_ROWS k and v (kv_store.comp)         1 dispatch, 1 barrier (q, k, v)
 *     ATTENTION (one query row, 8 heads, a few keys: one pass)  1 dispatch, 1 barrier (q', K, V)
 *     MATMUL o + ADD residual                                   1 dispatch, 1 barrier (attn)
 *     RMSNorm + gate/up + SWIGLU                                1 dispatch, 1 barrier (x1)
 *     MATMUL down + ADD residual                                1 dispatch, 1 barrier (f)
 *   final RMSNorm + output matmul (the norm folded in)          1 dispatch, 1 barrier (x)
 *
 * so a step is 6 per layer + 2 dispatches and 6 per layer + 1 barriers: one barrier per
 * dispatch that reads its predecessor's output (each does), none more; q/k/v and gate/up are
 * one dispatch each, so they share their barrier. A barrier more would be one on no hazard
 * (or a fusion lost), a dispatch more a fusion lost. A second step replays the recording (no
 * new dispatch recorded).
 *
 * The integer-dot path (quantized weights on a device with shaderIntegerDotProduct, which the
 * GPUs' table takes: vk_plan.c) quantizes each matmul group's activations in a dispatch of its
 * own (quantize_q8.comp; the group's RMSNorm goes into it), which the group's matmul then reads:
 * one dispatch and one barrier more per group, 4 a layer (q/k/v, o, gate/up, down) and 1 for the
 * output head. The step is counted with it (where the device has the feature) and without
 * (VKF_NO_INT_DOT). Cost: two model loads and a few steps on lavapipe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_backend.h"
#include "graph/backend.h"
#include "runtime/context.h"
#include "testutil.h"

/* dispatches and barriers per decoding step, per layer and besides the layers (see above) */
#define PER_LAYER_DISPATCHES 6
#define PER_LAYER_BARRIERS 6
#define HEAD_DISPATCHES 2
#define HEAD_BARRIERS 1
#define FIXTURE_LAYERS 4    /* llama-tiny (fixtures/README.md) */
#define INT_DOT_PER_LAYER 4 /* the integer-dot path's quantizations (see above) */
#define INT_DOT_HEAD 1

static void decode_counts(int no_int_dot) {
    vkf_switches sw;
    memset(&sw, 0, sizeof sw);
    const char *d = getenv("VKF_CACHE_DIR");
    if (d) snprintf(sw.cache_dir, sizeof sw.cache_dir, "%s", d);
    VKT_OK(vkf_switches_set(&sw, "gpu_table", "1")); /* the GPUs' choices on lavapipe */
    sw.no_tune = 1;                                  /* the table's, not a tuning cache's */
    sw.no_int_dot = no_int_dot;
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN, .validate = 1, .switches = &sw};
    vkf_context *ctx = NULL;
    vkf_status st = vkf_context_create(&cp, &ctx);
    if (st != VKF_OK) {
        VKT_CHECK(getenv("VKF_TEST_NO_VULKAN") != NULL, "no Vulkan device: %s", vkf_last_error());
        return;
    }
    const vkf_vk_caps *c = vkf_backend_vulkan_caps(ctx->be);
    /* the fusions above need texels and subgroups (lavapipe has both) */
    VKT_CHECK(c->texel && c->has_subgroup, "%s: no texels or subgroups", c->name);
    vkf_model_params mp = {.path = vkt_fixture("llama-tiny/llama-tiny-q4_0.gguf")};
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    if (m) VKT_OK(vkf_session_create(m, NULL, &s));
    if (!s) {
        vkf_model_free(m);
        vkf_context_free(ctx);
        return;
    }
    vkf_model_desc md;
    vkf_model_describe(m, &md);
    VKT_CHECK(md.n_layer == FIXTURE_LAYERS, "llama-tiny has %d layers, expected %d", md.n_layer,
              FIXTURE_LAYERS);
    float *logits = malloc(sizeof *logits * (size_t)md.n_vocab);
    const int32_t prompt[4] = {1, 394, 402, 365};
    VKT_OK(vkf_session_eval_last(s, prompt, 4, logits));
    int32_t tok = 280;
    vkf_vk_stats s0 = vkf_backend_vulkan_stats(ctx->be);
    VKT_OK(vkf_session_eval_last(s, &tok, 1, logits)); /* records the step's graph */
    vkf_vk_stats s1 = vkf_backend_vulkan_stats(ctx->be);
    tok = 402;
    VKT_OK(vkf_session_eval_last(s, &tok, 1, logits)); /* replays it */
    vkf_vk_stats s2 = vkf_backend_vulkan_stats(ctx->be);
    uint64_t nd = s1.dispatches - s0.dispatches, nb = s1.barriers - s0.barriers;
    uint64_t want_d = (uint64_t)PER_LAYER_DISPATCHES * md.n_layer + HEAD_DISPATCHES;
    uint64_t want_b = (uint64_t)PER_LAYER_BARRIERS * md.n_layer + HEAD_BARRIERS;
    int idot = c->int_dot && !no_int_dot;
    if (idot) {
        want_d += (uint64_t)INT_DOT_PER_LAYER * md.n_layer + INT_DOT_HEAD;
        want_b += (uint64_t)INT_DOT_PER_LAYER * md.n_layer + INT_DOT_HEAD;
    }
    printf("decode step under the GPUs' table on %s, integer dot %s: %llu dispatches (expected "
           "%llu), %llu barriers (expected %llu), %llu recordings\n",
           c->name, idot ? "on" : "off", (unsigned long long)nd, (unsigned long long)want_d,
           (unsigned long long)nb, (unsigned long long)want_b,
           (unsigned long long)(s1.recordings - s0.recordings));
    VKT_CHECK(s1.recordings - s0.recordings == 1, "the first step recorded %llu graphs, not 1",
              (unsigned long long)(s1.recordings - s0.recordings));
    VKT_CHECK(nd == want_d, "decode step: %llu dispatches, expected %llu", (unsigned long long)nd,
              (unsigned long long)want_d);
    VKT_CHECK(nb == want_b, "decode step: %llu barriers, expected %llu", (unsigned long long)nb,
              (unsigned long long)want_b);
    VKT_CHECK(s2.dispatches == s1.dispatches && s2.recordings == s1.recordings &&
                  s2.submits == s1.submits + 1,
              "the second step was not one replayed submission (%llu dispatches and %llu "
              "recordings more, %llu submissions)",
              (unsigned long long)(s2.dispatches - s1.dispatches),
              (unsigned long long)(s2.recordings - s1.recordings),
              (unsigned long long)(s2.submits - s1.submits));
    free(logits);
    vkf_session_free(s);
    vkf_model_free(m);
    vkf_context_free(ctx);
}

int main(void) {
    if (!vkt_need_fixtures("llama-tiny")) return vkt_finish();
    decode_counts(1);
    decode_counts(0);
    return vkt_finish();
}
