/* A GPU that does not finish in time: with VKF_GPU_TIMEOUT_MS=0 the first wait times out. The
 * error names the timeout, every later call on that context is refused (its memory may still be
 * written by the pending work), and the same model on a CPU context gives the reference logits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define KJV VKF_SOURCE_DIR "/models/kjv-gpt"

static vkf_status eval_last(vkf_context *ctx, const char *text, float *logits, int32_t *n_vocab) {
    vkf_model_params mp = {.path = KJV};
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    int32_t toks[64], n = 0;
    vkf_status st = vkf_model_load(ctx, &mp, &m);
    if (st == VKF_OK) st = vkf_model_tokenize(m, text, VKF_TOKENIZE_ADD_SPECIAL, toks, 64, &n);
    vkf_session_params sp = {.cache_type_k = VKF_CACHE_F32,
                             .cache_type_v = VKF_CACHE_F32}; /* as the CPU's: compared at 1e-4 */
    if (st == VKF_OK) st = vkf_session_create(m, &sp, &s);
    /* a wait of 1 ns can still see a finished fence: give the timeout a few chances */
    for (int i = 0; st == VKF_OK && i < 20; i++) {
        st = vkf_session_eval_last(s, toks, n, logits);
        if (st == VKF_OK) vkf_session_reset(s);
    }
    vkf_model_desc md;
    if (m) {
        vkf_model_describe(m, &md);
        *n_vocab = md.n_vocab;
    }
    vkf_session_free(s);
    vkf_model_free(m);
    return st;
}

int main(void) {
    float gpu[512], cpu[512], cpu2[512];
    int32_t nv = 0;
    setenv("VKF_GPU_TIMEOUT_MS", "0", 1);
    vkf_context_params vk = {.backend = VKF_BACKEND_VULKAN};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&vk, &ctx));
    if (ctx) {
        vkf_status st = eval_last(ctx, "And God said", gpu, &nv);
        VKT_CHECK(st == VKF_ERROR_VULKAN && strstr(vkf_last_error(), "VK_TIMEOUT"), "status %s: %s",
                  vkf_status_name(st), vkf_last_error());
        st = eval_last(ctx, "And God said", gpu, &nv); /* the context refuses further work */
        VKT_CHECK(st != VKF_OK && strstr(vkf_last_error(), "unusable"), "after a timeout: %s",
                  vkf_last_error());
        vkf_context_free(ctx); /* waits for the pending work, then frees */
    }
    unsetenv("VKF_GPU_TIMEOUT_MS");
    /* the process goes on: the CPU gives the same logits as a fresh CPU context */
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    VKT_OK(vkf_context_create(&cp, &ctx));
    VKT_OK(eval_last(ctx, "And God said", cpu, &nv));
    vkf_context_free(ctx);
    VKT_OK(vkf_context_create(&vk, &ctx));
    VKT_OK(eval_last(ctx, "And God said", cpu2, &nv));
    vkf_context_free(ctx);
    double md = 0;
    for (int i = 0; i < nv; i++)
        md = fmax(md, fabs(cpu[i] - cpu2[i]));
    VKT_CHECK(nv > 0 && md < 1e-4, "a new Vulkan context after the timeout: max |d| %g vs CPU", md);
    return vkt_finish();
}
