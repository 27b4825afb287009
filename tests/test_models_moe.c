/* Mixture of experts against llama.cpp (fixtures/moe, tools/refs/make_moe.py: qwen3moe,
 * qwen2moe with its shared expert, olmoe, Mixtral as llama with experts, a 256-wide qwen3moe,
 * gpt-oss (attention sinks, sliding window, YaRN, biases, swiglu_oai), granitemoe with and
 * without its ungated shared expert (Granite's multipliers), in F32; qwen3moe with Q8_0
 * and Q4_0 experts, the 256-wide one as Q4_K_M: Q4_K and Q6_K experts, llama.cpp's repacked and
 * tiled kernels; gpt-oss as MXFP4_MOE: MXFP4 experts): the float path of the F32 models on the CPU
 * and on Vulkan through vkf_verify, the CPU's ggml-activations mode bit for bit on every case; bad
 * files (expert count against the tensors, more experts used than exist, no router, an unknown
 * gating function, no expert count) refused with the key or tensor named; `info`'s experts line;
 * the quantizer byte-identical to llama.cpp on expert tensors. The F32 qwen3moe, qwen2moe, olmoe
 * and Mixtral also as Hugging Face directories (each case's "hf_model", tools/gguf_to_hf.py: one
 * tensor per expert, Mixtral's q/k rows in HF's layout), run by vkf_verify against the same
 * llama.cpp logits: the expert stacking, router and shared-expert names and config.json's MoE
 * keys of the HF loader; a directory whose config.json counts fewer experts than its tensors, or
 * misses one, is refused naming the tensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/gguf.h"
#include "io/gguf_write.h"
#include "testutil.h"
#include "vkformer.h"

/* The float path's bound. The models are f32: what differs from llama.cpp is the order of f32
 * sums (matmuls, norms, softmax), measured at 5.1e-6 (CPU) and 2.7e-6 (lavapipe) worst over the
 * 10 cases of the first five models, as for the dense f32 models of fixtures/arch (4e-6); gpt-oss,
 * whose experts run at 4x scale, 1.04e-5 (CPU) and 8.7e-6 (lavapipe). 5e-5 is that with a
 * margin of ~5x (10x for the others). Leaving out gpt-oss's sinks, expert biases, swiglu_oai's
 * clamp or YaRN moves its logits by 2.4, 2.7, 1.9 and 4.8 (measured): far above it.
 * A mistake of the routing (another expert, a weight not renormalised, the shared expert's gate
 * missing) changes a layer's FFN output by O(1): far above it. The fixtures' routers are scaled
 * (make_moe.py) so that no top-k choice is a near tie that f32 rounding could flip. */
#define FLOAT_BOUND 5e-5
/* The quantized files are checked in the ggml-activations mode only: llama.cpp quantizes every
 * matmul's activations (q8_0 rows) and the float path does not, a difference that can change an
 * expert choice, so no smooth bound holds (qwen3moe-q4_0: 0.86 max on the CPU's float path); the
 * mode that quantizes them as llama.cpp does is exact instead. */
#define FLOAT_CASES "-f32"

static int n_seen[3]; /* cpu, vulkan, ggml */
static int n_hf[3];   /* of those, the Hugging Face directories' */

static void check_case(void *user, const vkf_verify_case *c) {
    const char *backend = user;
    int ggml = strcmp(backend, "ggml") == 0;
    n_seen[ggml ? 2 : strcmp(backend, "cpu") != 0]++;
    printf("  %-6s %-18s max|d| %.3e rms %.2e argmax %d/%d greedy %s %.2fs\n", backend, c->name,
           c->max_abs, c->rms, c->argmax_checked - c->argmax_mismatch, c->argmax_checked,
           c->greedy_match ? "match" : "differs", c->seconds);
    VKT_CHECK(c->pass, "%s %s failed", backend, c->name);
    if (ggml) /* llama.cpp's arithmetic, operation for operation: the same bits */
        VKT_CHECK(c->max_abs == 0.0, "%s %s: max|d| %.3e, expected 0", backend, c->name,
                  c->max_abs);
    else
        VKT_CHECK(c->max_abs <= FLOAT_BOUND, "%s %s: max|d| %.3e > %.0e", backend, c->name,
                  c->max_abs, FLOAT_BOUND);
    /* the HF directories carry no tokenizer (the case's token ids are fed): nothing to compare */
    int hf = strstr(c->name, "[hf]") != NULL;
    if (hf) n_hf[ggml ? 2 : strcmp(backend, "cpu") != 0]++;
    VKT_CHECK(c->tokens_match == (hf ? -1 : 1), "%s %s: tokenization differs", backend, c->name);
    VKT_CHECK(c->argmax_checked > 40 && c->argmax_mismatch == 0, "%s %s: argmax %d/%d", backend,
              c->name, c->argmax_checked - c->argmax_mismatch, c->argmax_checked);
    VKT_CHECK(c->greedy_required && c->greedy_match, "%s %s: free-running greedy differs", backend,
              c->name);
}

static void per_backend(vkf_context *ctx, const char *backend, void *user) {
    (void)user;
    vkf_verify_summary sum;
    VKT_OK(vkf_verify(ctx, vkt_fixture("moe"), FLOAT_CASES, check_case, (void *)backend, &sum));
    printf("  %s: %d cases, %d failed, worst max|d| %.3e\n", backend, sum.n_cases, sum.n_failed,
           sum.worst_abs);
}

static void test_ggml_mode(void) {
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU, .ggml_activations = VKF_GGML_AVX2};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (!ctx) return;
    vkf_verify_summary sum;
    VKT_OK(vkf_verify(ctx, vkt_fixture("moe"), NULL, check_case, "ggml", &sum));
    vkf_context_free(ctx);
}

/* ------------------------------------------------------------------ bad files */

typedef struct edit {
    const char *file;     /* the fixture edited (NULL: moe/qwen3moe-f32.gguf) */
    const char *key;      /* a u32 key set (NULL: none) */
    uint32_t value;       /* its value */
    const char *drop_key; /* a key left out */
    const char *drop;     /* a tensor left out */
} edit;

/* A fixture (qwen3moe-f32.gguf unless named) with one edit, written to path. */
static int write_edited(const char *path, const edit *e) {
    vkf_gguf *g = NULL;
    if (vkf_gguf_open(vkt_fixture(e->file ? e->file : "moe/qwen3moe-f32.gguf"), &g) != VKF_OK)
        return 0;
    vkf_gguf_writer *w = NULL;
    int ok = vkf_gguf_writer_create(&w) == VKF_OK;
    for (size_t i = 0; ok && i < vkf_gguf_kv_count(g); i++) {
        const vkf_gguf_kv *kv = vkf_gguf_kv_at(g, i);
        if (e->drop_key && strcmp(kv->key, e->drop_key) == 0) continue;
        ok = vkf_gguf_writer_copy_kv(w, kv) == VKF_OK;
    }
    if (ok && e->key) ok = vkf_gguf_writer_set_u32(w, e->key, e->value) == VKF_OK;
    for (size_t i = 0; ok && i < vkf_gguf_tensor_count(g); i++) {
        const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
        if (e->drop && strcmp(t->name, e->drop) == 0) continue;
        ok = vkf_gguf_writer_add_tensor(w, t->name, t->ggml_type, t->n_dims, t->ne, t->nbytes) ==
             VKF_OK;
    }
    ok = ok && vkf_gguf_writer_begin(w, path) == VKF_OK;
    for (size_t i = 0; ok && i < vkf_gguf_tensor_count(g); i++) {
        const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
        if (e->drop && strcmp(t->name, e->drop) == 0) continue;
        ok = vkf_gguf_writer_write(w, t->data, t->nbytes) == VKF_OK;
    }
    ok = ok && vkf_gguf_writer_finish(w) == VKF_OK;
    vkf_gguf_writer_free(w);
    vkf_gguf_close(g);
    return ok;
}

static void test_bad_files(vkf_context *ctx) {
    static const struct {
        edit e;
        vkf_status want;
        const char *names[2]; /* what the message must name */
    } cases[] = {
        /* 4 experts declared, tensors of 8: the router's shape, with the key */
        {{NULL, "qwen3moe.expert_count", 4, NULL, NULL},
         VKF_ERROR_FORMAT,
         {"qwen3moe.expert_count 4", "blk.0.ffn_gate_inp.weight"}},
        /* 16 declared: the same, beyond the tensors */
        {{NULL, "qwen3moe.expert_count", 16, NULL, NULL},
         VKF_ERROR_FORMAT,
         {"qwen3moe.expert_count 16", "ffn_gate_inp"}},
        {{NULL, "qwen3moe.expert_used_count", 9, NULL, NULL},
         VKF_ERROR_FORMAT,
         {"qwen3moe.expert_used_count 9", "expert_count = 8"}},
        {{NULL, "qwen3moe.expert_used_count", 0, NULL, NULL},
         VKF_ERROR_FORMAT,
         {"qwen3moe.expert_used_count 0", NULL}},
        {{NULL, NULL, 0, NULL, "blk.1.ffn_gate_inp.weight"},
         VKF_ERROR_FORMAT,
         {"missing tensor blk.1.ffn_gate_inp.weight", NULL}},
        {{NULL, NULL, 0, NULL, "blk.0.ffn_down_exps.weight"},
         VKF_ERROR_FORMAT,
         {"blk.0.ffn_down_exps.weight", NULL}},
        {{NULL, "qwen3moe.expert_gating_func", 7, NULL, NULL},
         VKF_ERROR_UNSUPPORTED,
         {"qwen3moe.expert_gating_func 7", NULL}},
        {{NULL, NULL, 0, "qwen3moe.expert_count", NULL},
         VKF_ERROR_FORMAT,
         {"qwen3moe.expert_count", NULL}},
        /* gpt-oss without a layer's attention sinks, or an expert bias */
        {{"moe/gptoss-f32.gguf", NULL, 0, NULL, "blk.0.attn_sinks.weight"},
         VKF_ERROR_FORMAT,
         {"missing tensor blk.0.attn_sinks.weight", NULL}},
        {{"moe/gptoss-f32.gguf", NULL, 0, NULL, "blk.1.ffn_up_exps.bias"},
         VKF_ERROR_FORMAT,
         {"missing tensor blk.1.ffn_up_exps.bias", NULL}},
    };
    char dir[64], path[128];
    snprintf(dir, sizeof dir, "/tmp/vkt_moe_XXXXXX");
    if (!mkdtemp(dir)) {
        VKT_CHECK(0, "mkdtemp %s", dir);
        return;
    }
    snprintf(path, sizeof path, "%s/bad.gguf", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!write_edited(path, &cases[i].e)) {
            VKT_CHECK(0, "case %zu: writing the edited file: %s", i, vkf_last_error());
            continue;
        }
        vkf_model_params mp = {.path = path};
        vkf_model *m = NULL;
        vkf_status s = vkf_model_load(ctx, &mp, &m);
        const char *msg = vkf_last_error();
        printf("  bad file %zu: status %d: %s\n", i, (int)s, msg);
        VKT_CHECK(s == cases[i].want, "case %zu: status %d, expected %d (%s)", i, (int)s,
                  (int)cases[i].want, msg);
        for (int j = 0; j < 2; j++)
            VKT_CHECK(!cases[i].names[j] || strstr(msg, cases[i].names[j]),
                      "case %zu: the message does not name \"%s\": %s", i, cases[i].names[j], msg);
        vkf_model_free(m);
    }
    remove(path);
    rmdir(dir);
    /* nothing else broke: the unedited file loads and runs in the same context */
    vkf_model_params mp = {.path = vkt_fixture("moe/qwen3moe-f32.gguf")};
    vkf_model *m = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    vkf_model_free(m);
}

/* The HF directory qwen2moe-hf with its config.json edited (the weights linked): an expert count
 * below the tensors', above them, more experts used than exist, norm_topk_prob against the
 * architecture, a dense layer among the routed ones; weights missing an expert; each refused
 * naming the key or tensor. */
static void test_bad_hf(vkf_context *ctx) {
    static const struct {
        const char *from, *to;
        const char *names[2];
    } cases[] = {
        {"\"num_experts\": 8",
         "\"num_experts\": 7",
         {"model.layers.0.mlp.gate.weight", "expert count (num_experts / num_local_experts) 7"}},
        {"\"num_experts\": 8",
         "\"num_experts\": 9",
         {"model.layers.0.mlp.gate.weight", "expert count (num_experts / num_local_experts) 9"}},
        {"\"num_experts_per_tok\": 2",
         "\"num_experts_per_tok\": 9",
         {"num_experts_per_tok 9", NULL}},
        {"\"norm_topk_prob\": false", "\"norm_topk_prob\": true", {"norm_topk_prob", NULL}},
        {"\"decoder_sparse_step\": 1",
         "\"decoder_sparse_step\": 2",
         {"decoder_sparse_step 2", NULL}},
    };
    char src[1024];
    snprintf(src, sizeof src, "%s", vkt_fixture("moe/qwen2moe-hf/config.json"));
    FILE *f = fopen(src, "rb");
    char text[8192];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    VKT_CHECK(n > 0, "read %s", src);
    char dir[64], cfg[128], st[128], weights[1100];
    snprintf(dir, sizeof dir, "/tmp/vkt_moehf_XXXXXX");
    if (n == 0 || !mkdtemp(dir)) return;
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    snprintf(weights, sizeof weights, "%s", vkt_fixture("moe/qwen2moe-hf/model.safetensors"));
    VKT_CHECK(symlink(weights, st) == 0, "symlink %s", weights);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *at = strstr(text, cases[i].from);
        VKT_CHECK(at != NULL, "case %zu: %s not in config.json", i, cases[i].from);
        if (!at) continue;
        FILE *o = fopen(cfg, "wb");
        if (!o) continue;
        fwrite(text, 1, (size_t)(at - text), o);
        fputs(cases[i].to, o);
        fputs(at + strlen(cases[i].from), o);
        fclose(o);
        vkf_model_params mp = {.path = dir};
        vkf_model *m = NULL;
        vkf_status s = vkf_model_load(ctx, &mp, &m);
        const char *msg = vkf_last_error();
        printf("  bad HF config %zu: status %d: %s\n", i, (int)s, msg);
        VKT_CHECK(s != VKF_OK, "case %zu: loaded", i);
        for (int j = 0; j < 2; j++)
            VKT_CHECK(!cases[i].names[j] || strstr(msg, cases[i].names[j]),
                      "case %zu: the message does not name \"%s\": %s", i, cases[i].names[j], msg);
        vkf_model_free(m);
    }
    /* the unedited config.json over weights whose layer-0 expert 7 is renamed expert 9 (the
     * safetensors header edited in place, same length): the gap is named */
    FILE *o = fopen(cfg, "wb");
    if (o) {
        fputs(text, o);
        fclose(o);
    }
    remove(st);
    f = fopen(weights, "rb");
    char *w = NULL;
    long wn = 0;
    if (f && fseek(f, 0, SEEK_END) == 0 && (wn = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (w = malloc((size_t)wn + 1)) && fread(w, 1, (size_t)wn, f) == (size_t)wn) {
        w[wn] = 0;
        const char *key = "model.layers.0.mlp.experts.7.gate_proj.weight";
        char *at = NULL;
        for (long i = 8; i + (long)strlen(key) < wn && !at; i++) /* in the JSON header */
            if (memcmp(w + i, key, strlen(key)) == 0) at = w + i;
        VKT_CHECK(at != NULL, "%s: no %s", weights, key);
        if (at) at[strlen("model.layers.0.mlp.experts.")] = '9';
        FILE *ow = fopen(st, "wb");
        if (ow) {
            fwrite(w, 1, (size_t)wn, ow);
            fclose(ow);
        }
        vkf_model_params mp = {.path = dir};
        vkf_model *m = NULL;
        vkf_status s = vkf_model_load(ctx, &mp, &m);
        const char *msg = vkf_last_error();
        printf("  HF expert 7 renamed 9: status %d: %s\n", (int)s, msg);
        VKT_CHECK(s != VKF_OK && strstr(msg, "missing tensor " /* the gap */
                                             "model.layers.0.mlp.experts.7.gate_proj.weight"),
                  "a missing expert: status %d: %s", (int)s, msg);
        vkf_model_free(m);
    }
    if (f) fclose(f);
    free(w);
    remove(cfg);
    remove(st);
    rmdir(dir);
}

/* `info`: the experts and the parameters a token uses. qwen2moe-f32 (make_moe.py: vocabulary
 * 512, d 64, 2 layers, q 64 and k, v 32 wide with biases, 8 experts of FFN 32, 2 used, a shared
 * expert of FFN 48): per layer 2 norms 128 + q, k, v, o 12288 + biases 128 + router 512 +
 * experts 3 * 8 * 32 * 64 = 49152 + shared gate 64 + shared expert 3 * 48 * 64 = 9216, i.e.
 * 71488; with embeddings, head and final norm 65600: 208576 in all; the 6 experts a token does
 * not use, 6 * 3 * 32 * 64 per layer, leave 208576 - 73728 = 134848 active. */
static void test_info(vkf_context *ctx) {
    vkf_model_params mp = {.path = vkt_fixture("moe/qwen2moe-f32.gguf")};
    vkf_model *m = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    char *txt = NULL;
    if (m) VKT_OK(vkf_model_info(m, 0, &txt));
    if (txt) {
        VKT_CHECK(strstr(txt, "experts        8, 2 per token (softmax), expert FFN 32, shared "
                              "expert FFN 48; active parameters 134848 of 208576"),
                  "qwen2moe info lacks the experts line:\n%s", txt);
        free(txt);
    }
    vkf_model_free(m);
    /* gpt-oss (make_moe.py: YaRN factor 32 over an original context of 4096, top-3 of 8 then a
     * softmax over them) */
    vkf_model_params mg = {.path = vkt_fixture("moe/gptoss-f32.gguf")};
    m = NULL;
    txt = NULL;
    VKT_OK(vkf_model_load(ctx, &mg, &m));
    if (m) VKT_OK(vkf_model_info(m, 0, &txt));
    if (txt) {
        VKT_CHECK(strstr(txt, "rope           neox, 16 dims, base 150000, YaRN scaling x32 over "
                              "4096") &&
                      strstr(txt, "experts        8, 3 per token (softmax over the top k)"),
                  "gpt-oss info lacks the YaRN rope or the experts line:\n%s", txt);
        free(txt);
    }
    vkf_model_free(m);
}

/* The quantizer on 3-D expert tensors: qwen3moe-f32 to Q8_0 and Q4_0 gives llama.cpp's own
 * llama_model_quantize files (the fixture's qwen3moe-q8_0 / -q4_0) byte for byte. */
static void test_quantize(void) {
    static const char *types[] = {"q8_0", "q4_0"};
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/vkt_moeq_XXXXXX");
    if (!mkdtemp(dir)) {
        VKT_CHECK(0, "mkdtemp %s", dir);
        return;
    }
    for (int i = 0; i < 2; i++) {
        char out[128], ref[64];
        snprintf(out, sizeof out, "%s/%s.gguf", dir, types[i]);
        snprintf(ref, sizeof ref, "moe/qwen3moe-%s.gguf", types[i]);
        vkf_quantize_params qp = {
            .input = vkt_fixture("moe/qwen3moe-f32.gguf"), .output = out, .type = types[i]};
        vkf_quantize_stats st;
        VKT_OK(vkf_model_quantize(&qp, &st));
        size_t na = 0, nb = 0;
        char *a = vkt_read_file(out, &na), *b = vkt_read_file(vkt_fixture(ref), &nb);
        VKT_CHECK(a && b && na == nb && memcmp(a, b, na) == 0,
                  "quantize %s: %zu bytes, llama.cpp's file %zu, not identical", types[i], na, nb);
        free(a);
        free(b);
        remove(out);
    }
    rmdir(dir);
}

int main(void) {
    if (!vkt_need_fixtures("moe")) return vkt_finish();
    vkt_for_each_backend(per_backend, NULL);
    /* 8 F32 models x 2 prompts, and the 4 HF directories' 8 */
    VKT_CHECK(n_seen[0] == 24 && n_hf[0] == 8, "cpu ran %d cases, %d from HF", n_seen[0], n_hf[0]);
    test_ggml_mode();
    VKT_CHECK(n_seen[2] == 32 && n_hf[2] == 8, "ggml mode ran %d cases, %d from HF", n_seen[2],
              n_hf[2]);
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (ctx) test_bad_files(ctx);
    if (ctx) test_bad_hf(ctx);
    if (ctx) test_info(ctx);
    test_quantize();
    vkf_context_free(ctx);
    return vkt_finish();
}
