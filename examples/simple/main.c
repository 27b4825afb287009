/* The first program: load a model, tokenize a prompt, stream the generated text, print timings.
 *     ./simple models/kjv-gpt "And God said"                  (any model directory or .gguf) */
#include <stdio.h>
#include <vkformer.h>

static int on_token(void *user, int32_t token, const char *piece, size_t len) {
    (void)user, (void)token;
    fwrite(piece, 1, len, stdout); /* streamed as it is produced */
    fflush(stdout);
    return 0; /* non-zero stops */
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "models/kjv-gpt",
               *prompt = argc > 2 ? argv[2] : "And God said";
    vkf_context_params cp = {0}; /* the best Vulkan device, else the CPU */
    vkf_model_params mp = {.path = path};
    vkf_context *ctx = NULL;
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    int32_t toks[512], n = 0;
    vkf_sampler_params sp = {.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 42};
    vkf_generate_stats st;
    if (vkf_context_create(&cp, &ctx) || vkf_model_load(ctx, &mp, &m) ||
        vkf_session_create(m, NULL, &s) ||
        vkf_model_tokenize(m, prompt, VKF_TOKENIZE_ADD_SPECIAL, toks, 512, &n) ||
        (printf("%s", prompt), vkf_generate(s, toks, n, 48, &sp, on_token, NULL, &st))) {
        fprintf(stderr, "error: %s\n", vkf_last_error());
        return 1;
    }
    fprintf(stderr, "\n%s: prompt %d tokens, %.1f t/s; generated %d tokens, %.1f t/s\n",
            vkf_context_device_name(ctx), st.n_prompt, st.prompt_tps, st.n_generated, st.gen_tps);
    vkf_session_free(s), vkf_model_free(m), vkf_context_free(ctx);
    return 0;
}
