/* The layer split (vkf_context_params.n_devices, `-dev A,B -sm layer -ts X,Y`): on a host with
 * one Vulkan device it runs over two logical VkDevices of the same physical device, which is how
 * CI checks it on lavapipe. The reference is the unsplit run on the same device: the split only
 * moves where each layer's nodes run and copies the residual stream between devices, so every
 * logit must be equal bit for bit (memcmp, no tolerance): for a multi-chunk prompt, decoding
 * after it, serve's parallel sequences (seq_eval, then the batched seq_decode with one slot
 * idle), on every decoder-only architecture fixture (GGUF, and GPT-2 from Hugging Face files).
 * Placement is checked against the proportions asked for (computed here from -ts, not read from
 * the code under test), so a split that silently ran on one device fails. Bad input (-ts with the
 * wrong count, a device that does not exist, -sm row, -mg in layer mode, an encoder-decoder
 * model) is refused naming the flag or the model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "testutil.h"
#include "vkformer.h"

#define N_PROMPT 11 /* three chunks of 4 (see MAX_CHUNK) */
#define MAX_CHUNK 4 /* the session's prompt chunk, lowered so a short prompt spans chunks */
#define N_DECODE 3
#define N_SEQ 3 /* serve's slots */

/* A context over the one device twice (two logical VkDevices), proportions ts[0..n_ts). */
static vkf_context *split_ctx(int n_ts, const float *ts) {
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN, .device = "0,0", .validate = 0};
    cp.n_tensor_split = n_ts;
    for (int i = 0; i < n_ts; i++)
        cp.tensor_split[i] = ts[i];
    vkf_context *ctx = NULL;
    if (vkf_context_create(&cp, &ctx) != VKF_OK) {
        VKT_CHECK(0, "split context: %s", vkf_last_error());
        return NULL;
    }
    VKT_CHECK(vkf_context_n_devices(ctx) == 2, "split context: %d devices, expected 2",
              vkf_context_n_devices(ctx));
    return ctx;
}

typedef struct run_out {
    float *prompt; /* [N_PROMPT, V] */
    float *decode; /* [N_DECODE, V] */
    float *serve;  /* [N_SEQ, V] after seq_eval, then [N_SEQ, V] of seq_decode */
    int32_t n_vocab, n_layer;
    vkf_split_device dev[2];
    int n_dev;
} run_out;

static void run_free(run_out *r) {
    free(r->prompt);
    free(r->decode);
    free(r->serve);
    memset(r, 0, sizeof *r);
}

/* Token ids from a small generator (any valid ids; the comparison is run against run). */
static int32_t tok(int i, int32_t n_vocab) {
    return (int32_t)((i * 7919 + 13) % (n_vocab - 1)) + 1;
}

/* Prompt (chunked) then decode; then serve's slots: seq_eval of prompts of different lengths,
 * one batched seq_decode with slot 1 idle. */
static int run_model(vkf_context *ctx, const char *path, int serve, run_out *r) {
    memset(r, 0, sizeof *r);
    vkf_model_params mp = {.path = path};
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        VKT_CHECK(0, "load %s: %s", path, vkf_last_error());
        return 0;
    }
    vkf_model_desc md;
    vkf_model_describe(m, &md);
    r->n_vocab = md.n_vocab;
    r->n_layer = md.n_layer;
    r->n_dev = vkf_model_split(m, r->dev, 2);
    size_t V = (size_t)md.n_vocab;
    int ok = 0;
    r->prompt = malloc(N_PROMPT * V * sizeof(float));
    r->decode = malloc(N_DECODE * V * sizeof(float));
    r->serve = malloc(2 * N_SEQ * V * sizeof(float));
    int32_t toks[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++)
        toks[i] = tok(i, md.n_vocab);
    vkf_session_params sp = {.n_ctx = 32};
    if (!r->prompt || !r->decode || !r->serve || vkf_session_create(m, &sp, &s) != VKF_OK) {
        VKT_CHECK(0, "session %s: %s", path, vkf_last_error());
        goto done;
    }
    s->max_chunk = MAX_CHUNK;
    if (vkf_session_eval(s, toks, N_PROMPT, r->prompt) != VKF_OK) {
        VKT_CHECK(0, "prompt %s: %s", path, vkf_last_error());
        goto done;
    }
    for (int i = 0; i < N_DECODE; i++) {
        int32_t t = tok(100 + i, md.n_vocab);
        if (vkf_session_eval(s, &t, 1, r->decode + (size_t)i * V) != VKF_OK) {
            VKT_CHECK(0, "decode %s: %s", path, vkf_last_error());
            goto done;
        }
    }
    vkf_session_free(s);
    s = NULL;
    if (serve) {
        vkf_session_params pp = {.n_ctx = 32, .n_batch = N_SEQ};
        if (vkf_session_create(m, &pp, &s) != VKF_OK) {
            VKT_CHECK(0, "serve session %s: %s", path, vkf_last_error());
            goto done;
        }
        s->max_chunk = MAX_CHUNK;
        int32_t pos[N_SEQ], next[N_SEQ];
        for (int q = 0; q < N_SEQ; q++) { /* prompts of 6, 3 and 9 tokens */
            int n = 3 + 3 * ((q + 1) % 3);
            if (vkf_session_seq_eval(s, q, 0, toks + q, n, r->serve + (size_t)q * V) != VKF_OK) {
                VKT_CHECK(0, "seq_eval %s: %s", path, vkf_last_error());
                goto done;
            }
            pos[q] = q == 1 ? -1 : n; /* slot 1 idle in the batched step */
            next[q] = tok(200 + q, md.n_vocab);
        }
        if (vkf_session_seq_decode(s, next, pos, r->serve + N_SEQ * V) != VKF_OK) {
            VKT_CHECK(0, "seq_decode %s: %s", path, vkf_last_error());
            goto done;
        }
        /* the idle slot's row is whatever the device computed for token 0: not compared */
        memset(r->serve + (N_SEQ + 1) * V, 0, V * sizeof(float));
    }
    ok = 1;
done:
    vkf_session_free(s);
    vkf_model_free(m);
    return ok;
}

static void compare(const char *name, const char *what, const float *a, const float *b, size_t n) {
    size_t first = n;
    for (size_t i = 0; i < n && first == n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0) first = i;
    VKT_CHECK(first == n, "%s: %s differs from the unsplit run at %zu (%.9g vs %.9g)", name, what,
              first, first < n ? (double)a[first] : 0.0, first < n ? (double)b[first] : 0.0);
}

/* The blocks -ts asks for, computed independently: device 0 takes round(n * t0 / (t0 + t1)). */
static void check_placement(const char *name, const run_out *r, const float *ts) {
    int32_t n0 = (int32_t)lround((double)r->n_layer * ts[0] / (ts[0] + ts[1]));
    VKT_CHECK(r->n_dev == 2, "%s: split over %d devices, expected 2", name, r->n_dev);
    if (r->n_dev != 2) return;
    VKT_CHECK(r->dev[0].layer0 == 0 && r->dev[0].n_layers == n0 && r->dev[1].layer0 == n0 &&
                  r->dev[1].n_layers == r->n_layer - n0,
              "%s: -ts %g,%g gave layers [%d,+%d) [%d,+%d), expected [0,+%d) [%d,+%d)", name,
              (double)ts[0], (double)ts[1], r->dev[0].layer0, r->dev[0].n_layers, r->dev[1].layer0,
              r->dev[1].n_layers, n0, n0, r->n_layer - n0);
    VKT_CHECK(r->dev[0].embeddings && !r->dev[0].output && r->dev[1].output,
              "%s: embeddings on device 0, head on device 1", name);
    /* device 1 holds its layers' weights and the head: never empty */
    VKT_CHECK(r->dev[1].weight_bytes > 0 && r->dev[0].weight_bytes > 0,
              "%s: weights %zu / %zu bytes per device", name, r->dev[0].weight_bytes,
              r->dev[1].weight_bytes);
    VKT_CHECK(r->dev[0].kv_bytes_per_token * (size_t)r->dev[1].n_layers ==
                  r->dev[1].kv_bytes_per_token * (size_t)r->dev[0].n_layers,
              "%s: KV cache not in proportion to the layers", name);
}

static void check_model(vkf_context *one, vkf_context *const *split, const float (*ts)[2], int n,
                        const char *rel, int serve) {
    const char *path = vkt_fixture(rel);
    run_out base, r;
    if (!run_model(one, path, serve, &base)) return;
    size_t V = (size_t)base.n_vocab;
    for (int k = 0; k < n; k++) {
        if (!split[k]) continue;
        char name[160];
        snprintf(name, sizeof name, "%s -ts %g,%g", rel, (double)ts[k][0], (double)ts[k][1]);
        if (run_model(split[k], path, serve, &r)) {
            check_placement(name, &r, ts[k]);
            compare(name, "prompt logits (chunked)", r.prompt, base.prompt, N_PROMPT * V);
            compare(name, "decode logits", r.decode, base.decode, N_DECODE * V);
            if (serve) compare(name, "serve slots", r.serve, base.serve, 2 * N_SEQ * V);
            printf("  %-40s layers %d+%d: equal\n", name, r.dev[0].n_layers, r.dev[1].n_layers);
        }
        run_free(&r);
    }
    run_free(&base);
}

static void expect_refused(vkf_context_params *cp, const char *needle, const char *what) {
    vkf_context *ctx = NULL;
    vkf_status st = vkf_context_create(cp, &ctx);
    VKT_CHECK(st != VKF_OK, "%s accepted", what);
    if (st == VKF_OK) {
        vkf_context_free(ctx);
        return;
    }
    VKT_CHECK(strstr(vkf_last_error(), needle) != NULL, "%s: message \"%s\" does not name %s", what,
              vkf_last_error(), needle);
}

static void check_refusals(vkf_context *split) {
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN, .device = "0,0"};
    cp.n_tensor_split = 3;
    cp.tensor_split[0] = cp.tensor_split[1] = cp.tensor_split[2] = 1;
    expect_refused(&cp, "-ts", "-ts with 3 proportions for 2 devices");
    cp.n_tensor_split = 0;
    cp.device = "0,57";
    expect_refused(&cp, "-dev", "a device index that does not exist");
    cp.device = "0,0";
    cp.split_mode = VKF_SPLIT_ROW;
    expect_refused(&cp, "-sm row", "split mode row");
    cp.split_mode = VKF_SPLIT_LAYER;
    cp.main_device = 1;
    expect_refused(&cp, "-mg", "-mg in layer mode");
    cp.main_device = 0;
    cp.n_tensor_split = 2;
    cp.tensor_split[0] = -1;
    cp.tensor_split[1] = 1;
    expect_refused(&cp, "-ts", "-ts -1,1");
    /* -sm none -mg 1: one device, the list's second */
    cp.n_tensor_split = 0;
    cp.split_mode = VKF_SPLIT_NONE;
    cp.main_device = 1;
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (ctx)
        VKT_CHECK(vkf_context_n_devices(ctx) == 1, "-sm none: %d devices",
                  vkf_context_n_devices(ctx));
    vkf_context_free(ctx);
    /* an encoder-decoder model is not split: refused, naming it */
    if (split) {
        vkf_model_params mp = {.path = vkt_fixture("seed-transformer-tiny")};
        vkf_model *m = NULL;
        vkf_status st = vkf_model_load(split, &mp, &m);
        VKT_CHECK(st == VKF_ERROR_UNSUPPORTED && strstr(vkf_last_error(), "decoder-only"),
                  "encoder-decoder model in a split: %s",
                  st == VKF_OK ? "loaded" : vkf_last_error());
        vkf_model_free(m);
    }
}

/* The CLI: the flags accepted on generate (placement reported, the text equal to the unsplit
 * run's), each bad one refused naming the flag. */
static void check_cli(void) {
    const char *m = vkt_fixture("llama-tiny/llama-tiny-f32.gguf");
    char mp[4096];
    snprintf(mp, sizeof mp, "%s", m);
    const char *out = "test_split.out", *err = "test_split.err";
    char *gen1[] = {"./vkformer", "generate", "-m", mp,     "-p", "Hello", "-n",
                    "6",          "--temp",   "0",  "-dev", "0",  NULL};
    char *gen2[] = {"./vkformer", "generate", "-m",  mp,    "-p",    "Hello", "-n",  "6", "--temp",
                    "0",          "-dev",     "0,0", "-sm", "layer", "-ts",   "3,1", NULL};
    VKT_CHECK(vkt_run(gen1, out, err) == 0, "generate -dev 0 failed");
    char *t1 = vkt_read_file(out, NULL);
    VKT_CHECK(vkt_run(gen2, out, err) == 0, "generate -dev 0,0 -ts 3,1 failed");
    char *t2 = vkt_read_file(out, NULL), *e2 = vkt_read_file(err, NULL);
    VKT_CHECK(t1 && t2 && strcmp(t1, t2) == 0, "split text \"%s\" differs from \"%s\"",
              t2 ? t2 : "", t1 ? t1 : "");
    VKT_CHECK(e2 && strstr(e2, "split device 0") && strstr(e2, "layers 0-2, embeddings") &&
                  strstr(e2, "split device 1") && strstr(e2, "layer 3, output head"),
              "generate does not report the placement: %s", e2 ? e2 : "");
    free(t1);
    free(t2);
    free(e2);
    struct {
        char *argv[16];
        int rc;
        const char *needle;
    } bad[] = {
        {{"./vkformer", "generate", "-m", mp, "-p", "x", "-dev", "0,0", "-sm", "row", NULL},
         2,
         "-sm"},
        {{"./vkformer", "generate", "-m", mp, "-p", "x", "-dev", "0,0", "-ts", "1,2,3", NULL},
         1,
         "-ts"},
        {{"./vkformer", "generate", "-m", mp, "-p", "x", "-dev", "0,9", NULL}, 1, "-dev"},
        {{"./vkformer", "generate", "-m", mp, "-p", "x", "-dev", "0,0", "-mg", "1", NULL},
         1,
         "-mg"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = vkt_run(bad[i].argv, out, err);
        char *e = vkt_read_file(err, NULL);
        VKT_CHECK(rc == bad[i].rc && e && strstr(e, bad[i].needle),
                  "case %zu: exit %d (expected %d), stderr \"%s\" should name %s", i, rc, bad[i].rc,
                  e ? e : "", bad[i].needle);
        free(e);
    }
    remove(out);
    remove(err);
}

int main(void) {
    if (!vkt_need_fixtures("llama-tiny seed-transformer-tiny")) return vkt_finish();
    vkf_context_params cp1 = {.backend = VKF_BACKEND_VULKAN, .device = "0"};
    vkf_context *one = NULL;
    if (vkf_context_create(&cp1, &one) != VKF_OK) {
        printf("SKIP (device): no Vulkan device: %s\n", vkf_last_error());
        return 77;
    }
    /* 1,1; 3,1; and 1,3, which leaves device 0 a single layer of a 4-layer model */
    static const float ts[3][2] = {{1, 1}, {3, 1}, {1, 3}};
    vkf_context *split[3];
    for (int k = 0; k < 3; k++)
        split[k] = split_ctx(2, ts[k]);
    /* the tiny llama: every proportion and serve's batched step */
    check_model(one, split, ts, 3, "llama-tiny/llama-tiny-f32.gguf", 1);
    /* every architecture fixture: 1,1 and serve's step; 3,1 on one quantized model */
    static const char *arch[] = {"arch/llama3-f32.gguf",         "arch/qwen2-f32.gguf",
                                 "arch/qwen3-f32.gguf",          "arch/gemma2-f32.gguf",
                                 "arch/gemma3-f32.gguf",         "arch/phi3-f32.gguf",
                                 "gpt2-tiny/gpt2-tiny-f32.gguf", "gpt2-tiny/hf"};
    for (size_t i = 0; i < sizeof arch / sizeof arch[0]; i++)
        check_model(one, split, ts, 1, arch[i], 1);
    check_model(one, split + 1, ts + 1, 1, "llama-tiny/llama-tiny-q4_0.gguf", 0);
    check_refusals(split[0]);
    check_cli();
    for (int k = 0; k < 3; k++)
        vkf_context_free(split[k]);
    vkf_context_free(one);
    return vkt_finish();
}
