/* The trained context and the context asked for stay apart, through every loader: vkf_model_desc
 * and vkf_model_info report n_ctx_train as the file gives it (config.json's
 * max_position_embeddings / n_positions / max_len, GGUF's {arch}.context_length) whatever
 * vkf_model_params.n_ctx asks, before and after a session of that context; n_ctx is the
 * request (computed positions: RoPE, sinusoidal), else min(4096, trained) as llama.cpp's
 * default -c; learned positions keep their table's rows and refuse a larger request by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "vkformer.h"

typedef struct {
    const char *path; /* under the source tree */
    int32_t trained;  /* what the file declares (see each file; not the loader's output) */
    int computed;     /* positions computed (RoPE, sinusoidal) vs a learned table */
} model_case;

static const model_case k_cases[] = {
    {"tests/data/arch-hf/qwen2", 32768, 1},      /* config.json max_position_embeddings, RoPE */
    {"tests/data/embed/tiny-nomic.gguf", 64, 1}, /* nomic-bert.context_length, RoPE encoder */
    {"models/dates-transformer", 128, 1},        /* config.json max_len, sinusoidal */
    {"models/kjv-gpt", 256, 0},                  /* config.json n_positions, learned (gpt2) */
    {"tests/data/embed/tiny-bert", 64, 0},       /* max_position_embeddings, learned (bert) */
};

static int32_t info_n_ctx_train(const vkf_model *m) {
    char *text = NULL;
    int32_t v = -1;
    if (vkf_model_info(m, 1, &text) != VKF_OK) return -1;
    cJSON *j = cJSON_Parse(text);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "n_ctx_train");
    if (cJSON_IsNumber(n)) v = (int32_t)n->valuedouble;
    cJSON_Delete(j);
    free(text);
    return v;
}

static void check_case(vkf_context *ctx, const model_case *c, int32_t req) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", VKF_SOURCE_DIR, c->path);
    vkf_model_params mp = {.path = path, .n_ctx = req};
    vkf_model *m = NULL;
    vkf_status s = vkf_model_load(ctx, &mp, &m);
    if (!c->computed && req > c->trained) {
        char want[128];
        snprintf(want, sizeof want, "n_ctx %d exceeds the %d positions of its learned", req,
                 c->trained);
        VKT_CHECK(s == VKF_ERROR_UNSUPPORTED && strstr(vkf_last_error(), want), "%s -c %d: %s",
                  c->path, req, vkf_last_error());
        vkf_model_free(m);
        return;
    }
    VKT_CHECK(s == VKF_OK, "%s -c %d: %s", c->path, req, vkf_last_error());
    if (s != VKF_OK) return;
    int32_t want_ctx = !c->computed        ? c->trained
                       : req               ? req
                       : c->trained < 4096 ? c->trained
                                           : 4096;
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    VKT_CHECK(d.n_ctx_train == c->trained && d.n_ctx == want_ctx && d.ctx_extendable == c->computed,
              "%s -c %d: n_ctx %d n_ctx_train %d extendable %d, expected %d %d %d", c->path, req,
              d.n_ctx, d.n_ctx_train, d.ctx_extendable, want_ctx, c->trained, c->computed);
    /* a session of the whole context asked for leaves the trained value as it was */
    vkf_session *se = NULL;
    vkf_session_params sp = {.n_ctx = want_ctx};
    VKT_OK(vkf_session_create(m, &sp, &se));
    VKT_CHECK(vkf_session_n_ctx(se) == want_ctx, "%s: session context %d", c->path,
              vkf_session_n_ctx(se));
    vkf_model_describe(m, &d);
    VKT_CHECK(d.n_ctx_train == c->trained, "%s -c %d: after a session n_ctx_train %d", c->path, req,
              d.n_ctx_train);
    VKT_CHECK(info_n_ctx_train(m) == c->trained, "%s -c %d: info's n_ctx_train %d", c->path, req,
              info_n_ctx_train(m));
    vkf_session_free(se);
    vkf_model_free(m);
}

int main(void) {
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (!ctx) return vkt_finish();
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        const model_case *c = &k_cases[i];
        check_case(ctx, c, 0);               /* the default */
        check_case(ctx, c, 1);               /* shorter than trained */
        check_case(ctx, c, c->trained + 64); /* past the trained context */
    }
    vkf_context_free(ctx);
    return vkt_finish();
}
