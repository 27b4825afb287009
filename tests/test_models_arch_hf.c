/* Hugging Face directories (tests/data/arch-hf, written from fixtures/arch by
 * tools/gguf_to_hf.py: the same weights in HF's layout, qwen2 and gemma3 sharded with
 * model.safetensors.index.json) give the GGUF's logits, on the CPU and on Vulkan. The GGUF side
 * is itself checked against llama.cpp by test_models_arch, so this pins the HF loader: the q/k
 * row permutation (llama), Gemma's 1 + w norms, config.json's rope_scaling (llama3 factors
 * recomputed, LongRoPE lists, linear), tie_word_embeddings, shards. MistralForCausalLM runs the
 * llama directory under that name. smollm3 (tests/data/smollm3, made by llama.cpp) the same way:
 * its NoPE layers from config.json's no_rope_layers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "vkformer.h"

#define HF_DIR VKF_SOURCE_DIR "/tests/data/arch-hf"

/* 20 token ids, past gemma's window of 8 */
static const int32_t toks[] = {1,   45,  300, 17,  222, 90, 8,   411, 3,   77,
                               128, 500, 64,  255, 19,  32, 400, 7,   180, 99};
#define N_TOK ((int)(sizeof toks / sizeof toks[0]))

static float *logits(vkf_context *ctx, const char *path, int *n_vocab, char *arch,
                     size_t arch_cap) {
    vkf_model_params mp = {.path = path};
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    float *lg = NULL;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        VKT_CHECK(0, "load %s: %s", path, vkf_last_error());
        return NULL;
    }
    vkf_model_desc md;
    vkf_model_describe(m, &md);
    *n_vocab = md.n_vocab;
    if (arch) snprintf(arch, arch_cap, "%s/%s", md.architecture, md.format);
    /* F32 caches (Vulkan devices default to F16): HF and GGUF logits are held to 1e-5 */
    vkf_session_params sp = {
        .n_ctx = 32, .cache_type_k = VKF_CACHE_F32, .cache_type_v = VKF_CACHE_F32};
    if (vkf_session_create(m, &sp, &s) == VKF_OK) {
        lg = malloc((size_t)N_TOK * (size_t)md.n_vocab * sizeof *lg);
        if (lg && vkf_session_eval(s, toks, N_TOK, lg) != VKF_OK) {
            VKT_CHECK(0, "eval %s: %s", path, vkf_last_error());
            free(lg);
            lg = NULL;
        }
    }
    vkf_session_free(s);
    vkf_model_free(m);
    return lg;
}

static void compare(vkf_context *ctx, const char *backend, const char *name, const char *gguf,
                    const char *hf) {
    int v1 = 0, v2 = 0;
    char a1[64] = "", a2[64] = "";
    float *a = logits(ctx, gguf, &v1, a1, sizeof a1);
    float *b = logits(ctx, hf, &v2, a2, sizeof a2);
    if (a && b && v1 == v2) {
        double d = 0, mx = 0;
        for (size_t i = 0; i < (size_t)N_TOK * (size_t)v1; i++) {
            d = fmax(d, fabs((double)a[i] - (double)b[i]));
            mx = fmax(mx, fabs((double)a[i]));
        }
        printf("  %s %-8s %s vs %s: max|d| %.3e (logits up to %.1f)\n", backend, name, a1, a2, d,
               mx);
        /* The same weights through the same graph: the only arithmetic differences are the
         * llama3 rope factors and phi3's attention factor recomputed in double from config.json
         * vs the converter's f32 values (one ulp; 2e-6 observed); 1e-5 is f32 noise with margin
         * and 1000x below the smallest ablation (llama3 rope_freqs, 0.052). */
        VKT_CHECK(d <= 1e-5, "%s %s: HF and GGUF logits differ by %.3e", backend, name, d);
    } else {
        VKT_CHECK(0, "%s %s: logits unavailable (vocab %d / %d)", backend, name, v1, v2);
    }
    free(a);
    free(b);
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* The llama3 directory as MistralForCausalLM: config with that name, the weights linked. */
static void test_mistral(vkf_context *ctx, const char *backend) {
    char dir[] = "/tmp/vkf_mistral_XXXXXX";
    VKT_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    size_t n;
    char *cfg = vkt_read_file(HF_DIR "/llama3/config.json", &n);
    char *at = cfg ? strstr(cfg, "LlamaForCausalLM") : NULL;
    char *mt = cfg ? strstr(cfg, "\"llama\"") : NULL;
    VKT_CHECK(at && mt, "llama3 config.json lacks its architecture");
    if (!at || !mt) {
        free(cfg);
        rmdir(dir);
        return;
    }
    char out[8192], p[512], w[512];
    snprintf(out, sizeof out, "%.*sMistralForCausalLM%.*s\"mistral\"%s", (int)(at - cfg), cfg,
             (int)(mt - at - 16), at + 16, mt + 7);
    snprintf(p, sizeof p, "%s/config.json", dir);
    VKT_CHECK(write_text(p, out), "writing %s failed", p);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    snprintf(w, sizeof w, "%s/llama3/model.safetensors", HF_DIR);
    VKT_CHECK(symlink(w, p) == 0, "symlink %s failed", p);
    compare(ctx, backend, "mistral", vkt_fixture("arch/llama3-f32.gguf"), dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    rmdir(dir);
    free(cfg);
}

/* SmolLM3 with another NoPE pattern than llama.cpp's (rope on every layer) is refused, naming
 * the key and the layer. */
static void test_nope_pattern(vkf_context *ctx) {
    char dir[] = "/tmp/vkf_nope_XXXXXX";
    VKT_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    size_t n;
    char *cfg = vkt_read_file(HF_DIR "/smollm3/config.json", &n);
    char *last = cfg ? strstr(cfg, "0\n  ]") : NULL; /* the NoPE layer's 0 */
    VKT_CHECK(last != NULL, "smollm3 config.json lacks no_rope_layers");
    char p[512], w[512];
    if (last) {
        *last = '1';
        snprintf(p, sizeof p, "%s/config.json", dir);
        VKT_CHECK(write_text(p, cfg), "writing %s failed", p);
        snprintf(p, sizeof p, "%s/model.safetensors", dir);
        snprintf(w, sizeof w, "%s/smollm3/model.safetensors", HF_DIR);
        VKT_CHECK(symlink(w, p) == 0, "symlink %s failed", p);
        vkf_model_params mp = {.path = dir};
        vkf_model *m = NULL;
        vkf_status st = vkf_model_load(ctx, &mp, &m);
        printf("  NoPE pattern: %s: %s\n", vkf_status_name(st), vkf_last_error());
        VKT_CHECK(st == VKF_ERROR_UNSUPPORTED && strstr(vkf_last_error(), "no_rope_layers[3]"),
                  "another NoPE pattern: %s", vkf_last_error());
        vkf_model_free(m);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    rmdir(dir);
    free(cfg);
}

/* Errors name the file and what was expected. */
static void test_errors(vkf_context *ctx) {
    char dir[] = "/tmp/vkf_hfbad_XXXXXX";
    VKT_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", dir);
    write_text(p, "{\"architectures\": [\"FalconForCausalLM\"], \"hidden_size\": 64}");
    vkf_model_params mp = {.path = dir};
    vkf_model *m = NULL;
    vkf_status st = vkf_model_load(ctx, &mp, &m);
    printf("  unknown architecture: %s: %s\n", vkf_status_name(st), vkf_last_error());
    VKT_CHECK(st == VKF_ERROR_UNSUPPORTED && strstr(vkf_last_error(), "FalconForCausalLM") &&
                  strstr(vkf_last_error(), "Qwen2ForCausalLM"),
              "unknown HF architecture: %s", vkf_last_error());
    write_text(p, "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, "
                  "\"num_hidden_layers\": 2, "
                  "\"num_attention_heads\": 2, \"intermediate_size\": 128, \"vocab_size\": 512, "
                  "\"max_position_embeddings\": 64}");
    st = vkf_model_load(ctx, &mp, &m);
    printf("  no weights: %s: %s\n", vkf_status_name(st), vkf_last_error());
    VKT_CHECK(st == VKF_ERROR_IO && strstr(vkf_last_error(), "model.safetensors"), "no weights: %s",
              vkf_last_error());
    unlink(p);
    rmdir(dir);
}

static void per_backend(vkf_context *ctx, const char *backend, void *user) {
    (void)user;
    static const char *archs[] = {"llama3", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        char g[256], h[512];
        snprintf(g, sizeof g, "arch/%s-f32.gguf", archs[i]);
        snprintf(h, sizeof h, "%s/%s", HF_DIR, archs[i]);
        compare(ctx, backend, archs[i], vkt_fixture(g), h);
    }
    /* the architecture added as one descriptor file: its NoPE layers and permuted q/k rows */
    compare(ctx, backend, "smollm3", VKF_SOURCE_DIR "/tests/data/smollm3/smollm3-f32.gguf",
            HF_DIR "/smollm3");
    test_mistral(ctx, backend);
    if (strcmp(backend, "cpu") == 0) {
        test_errors(ctx);
        test_nope_pattern(ctx);
    }
}

int main(void) {
    if (!vkt_need_fixtures("arch")) return vkt_finish();
    vkt_for_each_backend(per_backend, NULL);
    return vkt_finish();
}
