/* vkformer generate -m PATH -p "prompt" -n 64 [--temp T --top-k K --top-p P --seed S]:
 * streams the generated text to stdout as it is produced; speeds go to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

static const char *usage_text =
    "usage: vkformer generate -m PATH [-p PROMPT] [-n N] [--temp T] [--top-k K] [--top-p P] "
    "[--seed S]\n"
    "                         [-c N_CTX] [--cache-type f16|f32] [--tokenizer PATH] [--no-mmap] "
    "[--device N | --cpu]\n"
    "  -c, --ctx-size N   context: KV cache and RoPE tables (default min(4096, the model's))\n"
    "  --cache-type T     KV cache f16 or f32 (also -ctk/-ctv; default f16 on GPUs, f32 on CPU "
    "devices)\n"
    "  -m, --model PATH   model directory (config.json + model.safetensors) or .gguf file\n"
    "  -p, --prompt TEXT  prompt (default: empty, generation starts from BOS)\n"
    "  -n, --n-predict N  tokens to generate (default 64)\n"
    "  --temp T           temperature, 0 = greedy (default 0.8)\n"
    "  --top-k K          sample among the K most likely tokens, 0 = all (default 40)\n"
    "  --top-p P          nucleus sampling threshold, 1 = off (default 0.95)\n"
    "  --seed S           random seed (default: from the clock, printed on stderr)\n"
    "  -c, --ctx-size N   context length in tokens (default: the model's); past the training\n"
    "                     context for models with computed positions (RoPE, sinusoidal)\n"
    "  --no-mmap          read the model file into memory instead of mapping it\n";

static int on_token(void *user, int32_t token, const char *piece, size_t len) {
    (void)user;
    (void)token;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return 0;
}

static int parse_num(const char *opt, const char *v, double *out) {
    char *end;
    *out = strtod(v, &end);
    if (end == v || *end) {
        fprintf(stderr, "vkformer generate: %s expects a number, got '%s'\n", opt, v);
        return 0;
    }
    return 1;
}

int vkf_cmd_generate(int argc, char **argv) {
    vkf_context_params cp = {0};
    vkf_model_params mp = {0};
    vkf_sampler_params sp = {.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = (uint64_t)time(NULL)};
    const char *prompt = "";
    double n_predict = 64, n_ctx = 0, v;
    int seed_given = 0, cache_type = VKF_CACHE_DEFAULT;
    for (int i = 1; i < argc; i++) {
        int r = vkf_cli_backend_opt(argc, argv, &i, &cp);
        if (r < 0) {
            fprintf(stderr, "vkformer generate: %s needs a value\n", argv[i]);
            return 2;
        }
        if (r) continue;
        const char *a = argv[i];
        if (strcmp(a, "--no-mmap") == 0) {
            mp.no_mmap = 1;
            continue;
        }
        if (i + 1 >= argc && a[0] == '-') {
            fprintf(stderr, "vkformer generate: %s needs a value\n%s", a, usage_text);
            return 2;
        }
        if (strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0) {
            mp.path = argv[++i];
        } else if (strcmp(a, "-p") == 0 || strcmp(a, "--prompt") == 0) {
            prompt = argv[++i];
        } else if (strcmp(a, "--tokenizer") == 0) {
            mp.tokenizer = argv[++i];
        } else if (strcmp(a, "-n") == 0 || strcmp(a, "--n-predict") == 0) {
            if (!parse_num(a, argv[++i], &n_predict)) return 2;
        } else if (strcmp(a, "-c") == 0 || strcmp(a, "--ctx-size") == 0) {
            if (!parse_num(a, argv[++i], &n_ctx)) return 2;
        } else if (strcmp(a, "--cache-type") == 0 || strcmp(a, "-ctk") == 0 ||
                   strcmp(a, "-ctv") == 0) {
            const char *t = argv[++i]; /* one type for K and V */
            if (strcmp(t, "f16") != 0 && strcmp(t, "f32") != 0) {
                fprintf(stderr, "vkformer generate: %s %s: expected f16 or f32\n", a, t);
                return 2;
            }
            cache_type = strcmp(t, "f16") == 0 ? VKF_CACHE_F16 : VKF_CACHE_F32;
        } else if (strcmp(a, "--temp") == 0) {
            if (!parse_num(a, argv[++i], &v)) return 2;
            sp.temp = (float)v;
        } else if (strcmp(a, "--top-k") == 0) {
            if (!parse_num(a, argv[++i], &v)) return 2;
            sp.top_k = (int32_t)v;
        } else if (strcmp(a, "--top-p") == 0) {
            if (!parse_num(a, argv[++i], &v)) return 2;
            sp.top_p = (float)v;
        } else if (strcmp(a, "--seed") == 0) {
            if (!parse_num(a, argv[++i], &v)) return 2;
            sp.seed = (uint64_t)v;
            seed_given = 1;
        } else {
            fprintf(stderr, "vkformer generate: unknown option '%s'\n%s", a, usage_text);
            return 2;
        }
    }
    if (!mp.path || n_predict < 0 || n_ctx < 0 || n_ctx > (1 << 24)) {
        fputs(usage_text, stderr);
        return 2;
    }
    mp.n_ctx = (int32_t)n_ctx;
    vkf_context *ctx;
    if (vkf_cli_context(&cp, &ctx) != VKF_OK) return vkf_cli_fail("generate");
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    int32_t *toks = NULL;
    int rc = 1;
    vkf_model_desc md;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        vkf_cli_fail("generate: loading the model");
        goto done;
    }
    vkf_model_describe(m, &md);
    if (md.encoder_decoder) {
        fprintf(stderr, "vkformer generate: %s is an encoder-decoder model; use `vkformer translate`\n", mp.path);
        goto done;
    }
    if (md.n_ctx > md.n_ctx_train)
        fprintf(stderr,
                "vkformer generate: context %d tokens, past the %d the model was trained on\n",
                md.n_ctx, md.n_ctx_train);
    vkf_session_params sesp = {.n_ctx = (int32_t)n_ctx, .cache_type = cache_type};
    if (vkf_session_create(m, &sesp, &s) != VKF_OK) {
        vkf_cli_fail("generate");
        goto done;
    }
    int32_t cap = (int32_t)strlen(prompt) + 8, n = 0;
    toks = malloc((size_t)cap * sizeof *toks);
    if (!toks || vkf_model_tokenize(m, prompt, VKF_TOKENIZE_ADD_SPECIAL, toks, cap, &n) != VKF_OK) {
        vkf_cli_fail("generate: tokenizing the prompt");
        goto done;
    }
    if (n == 0) { /* an empty prompt starts from BOS (GPT-2: <|endoftext|>) */
        if (md.bos_id < 0) {
            fprintf(stderr, "vkformer generate: empty prompt and the model has no BOS token\n");
            goto done;
        }
        toks[n++] = md.bos_id;
    }
    fprintf(stderr, "vkformer generate: %s on %s, %d prompt tokens, seed %llu%s\n", mp.path, vkf_context_device_name(ctx), n,
            (unsigned long long)sp.seed, seed_given ? "" : " (from the clock)");
    fputs(prompt, stdout);
    fflush(stdout);
    vkf_generate_stats st;
    vkf_status gs = vkf_generate(s, toks, n, (int32_t)n_predict, &sp, on_token, NULL, &st);
    fputc('\n', stdout);
    fflush(stdout);
    if (gs != VKF_OK && st.stop != VKF_STOP_CONTEXT_FULL) {
        vkf_cli_fail("generate");
        goto done;
    }
    if (st.stop == VKF_STOP_CONTEXT_FULL) fprintf(stderr, "vkformer generate: stopped early: %s\n", vkf_last_error());
    if (st.stop == VKF_STOP_EOS) fprintf(stderr, "vkformer generate: end of sequence\n");
    fprintf(stderr, "prompt:     %5d tokens in %8.1f ms, %9.1f tokens/s\n", st.n_prompt, st.prompt_ms, st.prompt_tps);
    fprintf(stderr, "generation: %5d tokens in %8.1f ms, %9.1f tokens/s\n", st.n_generated, st.gen_ms, st.gen_tps);
    vkf_memory_info mi;
    if (vkf_session_memory(s, &mi) == VKF_OK)
        fprintf(stderr,
                "memory:     weights %.1f MiB (%.1f MiB used in place from the file), KV cache "
                "%.1f MiB, activations %.1f MiB\n",
                (double)mi.weights / 1048576.0, (double)mi.weights_in_place / 1048576.0,
                (double)mi.kv_cache / 1048576.0, (double)mi.activations / 1048576.0);
    rc = 0;
done:
    free(toks);
    vkf_session_free(s);
    vkf_model_free(m);
    vkf_context_free(ctx);
    return rc;
}
