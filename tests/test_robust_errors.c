/* Robustness: every error path a user can reach gives a clear status and message, crashes
 * nothing, and leaves the process able to go on.
 *
 *   devices   no Vulkan driver (VK_ICD_FILENAMES / VK_DRIVER_FILES pointing nowhere) and no
 *             Vulkan loader (an LD_PRELOAD shim that hides libvulkan from dlopen): the CLI falls
 *             back to the CPU and prints the right text, or fails cleanly when --device was
 *             given; unknown device names; bad context parameters
 *   memory    VKF_MAX_ALLOC (one allocation) and VKF_MAX_DEVICE_MEMORY (the device's total):
 *             loads and sessions fail with VKF_ERROR_OUT_OF_MEMORY naming the tensor, nothing
 *             stays allocated, and the same context then works
 *   context   prompts longer than the context, context filling during generation, bad n_ctx
 *   tokens    ids outside the vocabulary (eval, generate, encode, decode_step, detokenize)
 *   text      invalid UTF-8 prompts (character, byte-level BPE and SentencePiece vocabularies)
 *   numbers   a model whose logits are NaN: generation stops with an error, samples nothing
 *   cache     an unusable and a corrupt shader cache directory (VKF_CACHE_DIR)
 *   device    a lost device (VKF_SIMULATE_DEVICE_LOST): the error names the graph, its ops and
 *             VK_ERROR_DEVICE_LOST; the same generation then finishes on the CPU
 * References: models/kjv-gpt/expected.json (PyTorch greedy tokens) and the CPU backend. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend/vulkan/vk_backend.h"
#include "core/error.h"
#include "model/model.h"
#include "robust/robust_util.h"
#include "testutil.h"
#include "vkformer.h"

/* ------------------------------------------------------------------ references */

#define KJV_GREEDY_MAX 64

typedef struct kjv_case {
    char prompt[128];
    int32_t tokens[64];
    int n_tokens;
    int32_t greedy[KJV_GREEDY_MAX];
    int n_greedy;
    char greedy_text[KJV_GREEDY_MAX + 1];
} kjv_case;

static kjv_case g_kjv[4];
static int g_n_kjv;

static void load_kjv_expected(void) {
    char *text = vkt_read_file(rb_repo("models/kjv-gpt/expected.json"), NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    VKT_CHECK(j != NULL, "models/kjv-gpt/expected.json unreadable");
    const cJSON *cases = cJSON_GetObjectItem(j, "cases"), *c;
    cJSON_ArrayForEach(c, cases) {
        if (g_n_kjv == 4) break;
        kjv_case *k = &g_kjv[g_n_kjv++];
        snprintf(k->prompt, sizeof k->prompt, "%s", cJSON_GetObjectItem(c, "prompt")->valuestring);
        snprintf(k->greedy_text, sizeof k->greedy_text, "%s",
                 cJSON_GetObjectItem(c, "greedy_text")->valuestring);
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "tokens")) if (k->n_tokens < 64)
            k->tokens[k->n_tokens++] = e->valueint;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "greedy_tokens")) if (k->n_greedy <
                                                                           KJV_GREEDY_MAX)
            k->greedy[k->n_greedy++] = e->valueint;
    }
    cJSON_Delete(j);
}

typedef struct collect {
    int32_t toks[4096];
    int n;
    char text[4096];
    size_t tlen;
} collect;

static int on_token(void *user, int32_t token, const char *piece, size_t len) {
    collect *c = user;
    if (c->n < 4096) c->toks[c->n++] = token;
    if (c->tlen + len < sizeof c->text) {
        memcpy(c->text + c->tlen, piece, len);
        c->tlen += len;
        c->text[c->tlen] = 0;
    }
    return 0;
}

static vkf_model *load_model(vkf_context *ctx, const char *path) {
    vkf_model_params mp = {.path = path};
    vkf_model *m = NULL;
    vkf_status s = vkf_model_load(ctx, &mp, &m);
    VKT_CHECK(s == VKF_OK, "load %s: %s", path, vkf_last_error());
    return s == VKF_OK ? m : NULL;
}

/* Greedy generation of n tokens from a kjv case must reproduce PyTorch's greedy tokens. */
static void check_kjv_greedy(vkf_model *m, const kjv_case *k, int n, const char *where) {
    vkf_session *s = NULL;
    VKT_OK(vkf_session_create(m, NULL, &s));
    if (!s) return;
    collect c = {0};
    vkf_sampler_params sp = {.temp = 0};
    vkf_generate_stats st;
    VKT_OK(vkf_generate(s, k->tokens, k->n_tokens, n, &sp, on_token, &c, &st));
    VKT_CHECK(c.n == n && memcmp(c.toks, k->greedy, (size_t)n * sizeof *c.toks) == 0,
              "%s: greedy \"%s\" gave %d tokens \"%s\", expected \"%.*s\"", where, k->prompt, c.n,
              c.text, n, k->greedy_text);
    vkf_session_free(s);
}

/* ------------------------------------------------------------------ devices and the loader */

static void test_cli_no_driver(void) {
    const kjv_case *k = &g_kjv[0];
    char expect[256];
    /* generate's stdout is exactly the prompt and the generated text, nothing added */
    snprintf(expect, sizeof expect, "%s%.16s", k->prompt, k->greedy_text);
    const char *argv_auto[] = {rb_cli(), "generate", "-m",     rb_repo("models/kjv-gpt"),
                               "-p",     k->prompt,  "-n",     "16",
                               "--temp", "0",        "--seed", "1",
                               NULL};
    const char *argv_dev[] = {
        rb_cli(), "generate", "--device", "0", "-m", rb_repo("models/kjv-gpt"),
        "-p",     k->prompt,  "-n",       "4", NULL};
    const char *argv_devices[] = {rb_cli(), "devices", NULL};
    /* both loader generations: VK_ICD_FILENAMES (old name) and VK_DRIVER_FILES (1.3.207+) */
    const char *no_icd[] = {"VK_ICD_FILENAMES=/nonexistent/vkf_icd.json",
                            "VK_DRIVER_FILES=/nonexistent/vkf_icd.json", "VK_ADD_DRIVER_FILES",
                            "VKF_DEVICE", NULL};
    rb_run r;
    rb_run_cmd(argv_auto, no_icd, 60, &r);
    VKT_CHECK(r.exited && r.code == 0, "no driver, auto: exit %d signal %d: %s", r.code, r.signal,
              r.err);
    VKT_CHECK(strcmp(r.out, expect) == 0, "no driver, auto: printed \"%s\", expected \"%s\"", r.out,
              expect);
    VKT_CHECK(strstr(r.err, " on cpu") != NULL,
              "no driver, auto: stderr does not say it runs on the CPU: %s", r.err);
    rb_run_cmd(argv_dev, no_icd, 60, &r);
    VKT_CHECK(rb_clean_failure(&r), "no driver, --device 0: exit %d signal %d", r.code, r.signal);
    VKT_CHECK(strstr(r.err, "no Vulkan driver") != NULL,
              "no driver, --device 0: unclear message: %s", r.err);
    rb_run_cmd(argv_devices, no_icd, 60, &r);
    VKT_CHECK(rb_clean_failure(&r), "no driver, devices: exit %d signal %d", r.code, r.signal);

#ifdef VKT_HIDE_VULKAN
    /* no loader: dlopen("libvulkan.so.1") fails; ASan must tolerate a preload before its runtime */
    char pre[1024], asan[1024];
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s", VKT_HIDE_VULKAN);
    const char *ao = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s%sverify_asan_link_order=0", ao ? ao : "",
             ao && *ao ? ":" : "");
    const char *no_loader[] = {pre, asan, "VKF_DEVICE", NULL};
    rb_run_cmd(argv_auto, no_loader, 60, &r);
    VKT_CHECK(r.exited && r.code == 0, "no loader, auto: exit %d signal %d: %s", r.code, r.signal,
              r.err);
    VKT_CHECK(strcmp(r.out, expect) == 0, "no loader, auto: printed \"%s\", expected \"%s\"", r.out,
              expect);
    VKT_CHECK(strstr(r.err, " on cpu") != NULL,
              "no loader, auto: stderr does not say it runs on the CPU: %s", r.err);
    rb_run_cmd(argv_dev, no_loader, 60, &r);
    VKT_CHECK(rb_clean_failure(&r), "no loader, --device 0: exit %d signal %d", r.code, r.signal);
    VKT_CHECK(strstr(r.err, "no Vulkan loader") != NULL,
              "no loader, --device 0: unclear message: %s", r.err);
#else
    printf("  (no LD_PRELOAD shim in this build: the missing-loader case is not run)\n");
#endif
}

static void test_context_params(int vulkan) {
    vkf_context *ctx = NULL;
    vkf_context_params bad = {.backend = (vkf_backend_kind)42};
    VKT_CHECK(vkf_context_create(&bad, &ctx) == VKF_ERROR_INVALID_ARGUMENT && ctx == NULL,
              "backend 42 accepted");
    VKT_CHECK(vkf_context_create(NULL, NULL) == VKF_ERROR_INVALID_ARGUMENT, "NULL output accepted");
    /* an explicit device that does not exist never falls back to the CPU */
    vkf_context_params cp = {.backend = VKF_BACKEND_AUTO, .device = "no-such-gpu-xyz"};
    vkf_status s = vkf_context_create(&cp, &ctx);
    VKT_CHECK(s == (vulkan ? VKF_ERROR_NO_DEVICE : s) && s != VKF_OK && ctx == NULL,
              "unknown device: %s", vkf_status_name(s));
    if (vulkan)
        VKT_CHECK(strstr(vkf_last_error(), "no-such-gpu-xyz") != NULL,
                  "message does not name the device: %s", vkf_last_error());
    cp.device = "99";
    s = vkf_context_create(&cp, &ctx);
    VKT_CHECK(s != VKF_OK && ctx == NULL, "device index 99 accepted");
}

/* ------------------------------------------------------------------ memory limits */

static void test_alloc_caps(void) {
    const kjv_case *k = &g_kjv[0];
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN};
    vkf_context *ctx = NULL;
    vkf_model_params mp = {.path = rb_repo("models/kjv-gpt")};
    vkf_model *m = NULL;

    /* one allocation capped at 64 KiB: wpe (256 x 192 F32 = 192 KiB) cannot be placed */
    setenv("VKF_MAX_ALLOC", "65536", 1);
    vkf_status s = vkf_context_create(&cp, &ctx);
    unsetenv("VKF_MAX_ALLOC");
    VKT_OK(s);
    if (s != VKF_OK) return;
    rb_counter cnt;
    rb_counter_install(ctx, &cnt);
    s = vkf_model_load(ctx, &mp, &m);
    VKT_CHECK(s == VKF_ERROR_OUT_OF_MEMORY && m == NULL, "VKF_MAX_ALLOC 64K: load gave %s",
              vkf_status_name(s));
    VKT_CHECK(strstr(vkf_last_error(), "wpe") && strstr(vkf_last_error(), "VKF_MAX_ALLOC"),
              "message names neither the tensor nor the cap: %s", vkf_last_error());
    VKT_CHECK(cnt.live_bytes == 0 && cnt.n_live == 0 && cnt.unknown_frees == 0,
              "a failed load left %lld bytes in %zu buffers", (long long)cnt.live_bytes,
              cnt.n_live);
    rb_counter_remove(ctx, &cnt);
    vkf_context_free(ctx);

    /* the device's total capped: the model fits, a session of 64 sequences (100 MiB of KV
     * cache) does not; afterwards a one-sequence session on the same model works */
    setenv("VKF_MAX_DEVICE_MEMORY", "48M", 1);
    s = vkf_context_create(&cp, &ctx);
    VKT_OK(s);
    if (s != VKF_OK) {
        unsetenv("VKF_MAX_DEVICE_MEMORY");
        return;
    }
    rb_counter_install(ctx, &cnt);
    m = load_model(ctx, mp.path);
    if (m) {
        int64_t after_load = cnt.live_bytes;
        vkf_session *sess = NULL;
        vkf_session_params sp = {.n_batch = 64};
        s = vkf_session_create(m, &sp, &sess);
        VKT_CHECK(s == VKF_ERROR_OUT_OF_MEMORY && sess == NULL,
                  "64 sequences under a 48 MiB device: %s", vkf_status_name(s));
        /* refused before any allocation, naming the need and the remedy (model/memory.c) */
        VKT_CHECK(strstr(vkf_last_error(), "KV cache for n_ctx") != NULL &&
                      strstr(vkf_last_error(), "lower n_ctx") != NULL,
                  "unclear message: %s", vkf_last_error());
        VKT_CHECK(cnt.live_bytes == after_load, "the failed session left %lld bytes",
                  (long long)(cnt.live_bytes - after_load));
        check_kjv_greedy(m, k, 16, "vulkan after a failed session");
        vkf_model_free(m);
    }
    VKT_CHECK(cnt.live_bytes == 0 && cnt.unknown_frees == 0,
              "%lld bytes left after freeing everything", (long long)cnt.live_bytes);
    /* a cap below the first block: the load itself fails cleanly */
    unsetenv("VKF_MAX_DEVICE_MEMORY");
    rb_counter_remove(ctx, &cnt);
    vkf_context_free(ctx);
    setenv("VKF_MAX_DEVICE_MEMORY", "1M", 1);
    s = vkf_context_create(&cp, &ctx);
    if (s == VKF_OK) {
        m = NULL;
        s = vkf_model_load(ctx, &mp, &m);
        VKT_CHECK(s == VKF_ERROR_OUT_OF_MEMORY && m == NULL, "1 MiB device: load gave %s",
                  vkf_status_name(s));
        vkf_context_free(ctx);
    }
    unsetenv("VKF_MAX_DEVICE_MEMORY");
}

/* ------------------------------------------------------------------ context length */

static void test_context_full(vkf_model *m, const char *where) {
    const kjv_case *k = &g_kjv[0]; /* 17 prompt tokens */
    vkf_sampler_params sp = {.temp = 0};
    vkf_session *s = NULL;
    vkf_session_params p16 = {.n_ctx = 16};
    VKT_OK(vkf_session_create(m, &p16, &s));
    if (!s) return;
    collect c = {0};
    vkf_generate_stats st;
    vkf_status rc = vkf_generate(s, k->tokens, k->n_tokens, 8, &sp, on_token, &c, &st);
    VKT_CHECK(rc == VKF_ERROR_CONTEXT_FULL && c.n == 0 && vkf_session_n_past(s) == 0,
              "%s: 17-token prompt in a 16-token context: %s, %d tokens, n_past %d", where,
              vkf_status_name(rc), c.n, vkf_session_n_past(s));
    VKT_CHECK(strstr(vkf_last_error(), "17") && strstr(vkf_last_error(), "16"),
              "message lacks the sizes: %s", vkf_last_error());
    float logits[67 * 17];
    rc = vkf_session_eval(s, k->tokens, 17, logits);
    VKT_CHECK(rc == VKF_ERROR_CONTEXT_FULL && vkf_session_n_past(s) == 0,
              "%s: eval of 17 tokens: %s", where, vkf_status_name(rc));
    vkf_session_free(s);

    /* 24 tokens of context: 17 prompt tokens + 8 generated (the last one needs no pass), then
     * CONTEXT_FULL; the tokens delivered so far are PyTorch's */
    vkf_session_params p24 = {.n_ctx = 24};
    VKT_OK(vkf_session_create(m, &p24, &s));
    if (!s) return;
    memset(&c, 0, sizeof c);
    rc = vkf_generate(s, k->tokens, k->n_tokens, 100, &sp, on_token, &c, &st);
    VKT_CHECK(rc == VKF_ERROR_CONTEXT_FULL && st.stop == VKF_STOP_CONTEXT_FULL && c.n == 8 &&
                  memcmp(c.toks, k->greedy, 8 * sizeof *c.toks) == 0,
              "%s: filling the context: %s, stop %d, %d tokens \"%s\"", where, vkf_status_name(rc),
              (int)st.stop, c.n, c.text);
    /* full: even one more token is refused, and reset makes room again */
    int32_t one = k->greedy[8];
    rc = vkf_session_eval_last(s, &one, 1, logits);
    VKT_CHECK(rc == VKF_ERROR_CONTEXT_FULL && vkf_session_n_past(s) == 24,
              "%s: eval into a full context: %s", where, vkf_status_name(rc));
    vkf_session_reset(s);
    memset(&c, 0, sizeof c);
    VKT_OK(vkf_generate(s, k->tokens, k->n_tokens, 4, &sp, on_token, &c, &st));
    VKT_CHECK(c.n == 4 && memcmp(c.toks, k->greedy, 4 * sizeof *c.toks) == 0,
              "%s: after reset: \"%s\"", where, c.text);
    vkf_session_free(s);

    /* session sizes outside the model's context */
    vkf_session_params bad = {.n_ctx = 257};
    s = NULL;
    VKT_CHECK(vkf_session_create(m, &bad, &s) == VKF_ERROR_INVALID_ARGUMENT && s == NULL,
              "n_ctx 257 > 256 accepted");
    bad.n_ctx = -1;
    VKT_CHECK(vkf_session_create(m, &bad, &s) == VKF_ERROR_INVALID_ARGUMENT && s == NULL,
              "n_ctx -1 accepted");
    vkf_session_params nb = {.n_batch = -3};
    VKT_CHECK(vkf_session_create(m, &nb, &s) == VKF_ERROR_INVALID_ARGUMENT && s == NULL,
              "n_batch -3 accepted");
}

static void test_cli_context_full(void) {
    const char *gen[] = {
        rb_cli(),           "generate", "--cpu", "-m", rb_repo("models/kjv-gpt"), "-c", "8", "-p",
        "In the beginning", "-n",       "4",     NULL};
    rb_run r;
    rb_run_cmd(gen, NULL, 60, &r);
    VKT_CHECK(rb_clean_failure(&r) && strstr(r.err, "context full"),
              "CLI, prompt > -c 8: exit %d signal %d: %s", r.code, r.signal, r.err);
}

/* ------------------------------------------------------------------ token ids */

static void test_bad_tokens(vkf_model *m, const char *where) {
    vkf_session *s = NULL;
    VKT_OK(vkf_session_create(m, NULL, &s));
    if (!s) return;
    float logits[67 * 4];
    const int32_t bad_ids[] = {67, -1, INT32_MAX, INT32_MIN};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        int32_t toks[3] = {1, 24, bad_ids[i]};
        vkf_status rc = vkf_session_eval(s, toks, 3, logits);
        char want[64];
        snprintf(want, sizeof want, "token id %d at position 2", bad_ids[i]);
        VKT_CHECK(rc == VKF_ERROR_TOKEN && vkf_session_n_past(s) == 0 &&
                      strstr(vkf_last_error(), want),
                  "%s: eval with id %d: %s \"%s\"", where, bad_ids[i], vkf_status_name(rc),
                  vkf_last_error());
    }
    collect c = {0};
    vkf_sampler_params sp = {.temp = 0};
    VKT_CHECK(vkf_generate(s, NULL, 0, 4, &sp, on_token, &c, NULL) == VKF_ERROR_INVALID_ARGUMENT,
              "an empty prompt accepted");
    int32_t prompt[2] = {1, 500};
    vkf_status rc = vkf_generate(s, prompt, 2, 4, &sp, on_token, &c, NULL);
    VKT_CHECK(rc == VKF_ERROR_TOKEN && c.n == 0 && vkf_session_n_past(s) == 0,
              "%s: generate with id 500: %s", where, vkf_status_name(rc));
    /* the session is intact: PyTorch's greedy tokens after the errors */
    const kjv_case *k = &g_kjv[1];
    memset(&c, 0, sizeof c);
    VKT_OK(vkf_generate(s, k->tokens, k->n_tokens, 6, &sp, on_token, &c, NULL));
    VKT_CHECK(c.n == 6 && memcmp(c.toks, k->greedy, 6 * sizeof *c.toks) == 0,
              "%s: generation after the errors: \"%s\"", where, c.text);
    vkf_session_free(s);
    char *txt = NULL;
    int32_t bad = 67;
    VKT_CHECK(vkf_model_detokenize(m, &bad, 1, 0, &txt) == VKF_ERROR_TOKEN && txt == NULL,
              "detokenize of id 67 accepted");
    free(txt);
}

static void test_bad_tokens_encdec(vkf_context *ctx) {
    vkf_model *m = load_model(ctx, rb_repo("models/dates-transformer"));
    if (!m) return;
    vkf_session *s = NULL;
    VKT_OK(vkf_session_create(m, NULL, &s));
    if (s) {
        int32_t src[3] = {36, 43, 2}; /* 43 == n_src_vocab */
        vkf_status rc = vkf_session_encode(s, src, 3);
        VKT_CHECK(rc == VKF_ERROR_TOKEN && strstr(vkf_last_error(), "43"),
                  "encode with id 43: %s %s", vkf_status_name(rc), vkf_last_error());
        int32_t ok_src[3] = {36, 24, 2};
        VKT_OK(vkf_session_encode(s, ok_src, 3));
        float lp[15];
        rc = vkf_session_decode_step(s, 15, lp);
        VKT_CHECK(rc == VKF_ERROR_TOKEN, "decode_step with id 15: %s", vkf_status_name(rc));
        VKT_OK(vkf_session_decode_step(s, 1, lp));
        /* decoder-only calls on an encoder-decoder, and the reverse */
        VKT_CHECK(vkf_session_eval(s, ok_src, 1, NULL) == VKF_ERROR_INVALID_ARGUMENT,
                  "eval on an encoder-decoder accepted");
        vkf_sampler_params sp = {0};
        VKT_CHECK(vkf_generate(s, ok_src, 1, 1, &sp, NULL, NULL, NULL) ==
                      VKF_ERROR_INVALID_ARGUMENT,
                  "generate on an encoder-decoder accepted");
        /* a source longer than the model's 128 positions */
        int32_t longsrc[129];
        for (int i = 0; i < 129; i++)
            longsrc[i] = 5;
        int32_t out[128], n_out = -1;
        vkf_translate_params tp = {0};
        rc = vkf_translate(s, longsrc, 129, &tp, out, 128, &n_out, NULL);
        VKT_CHECK(rc == VKF_ERROR_CONTEXT_FULL && n_out == 0, "129-token source: %s",
                  vkf_status_name(rc));
        tp.max_len = 200;
        rc = vkf_translate(s, ok_src, 3, &tp, out, 128, &n_out, NULL);
        VKT_CHECK(rc == VKF_ERROR_CONTEXT_FULL, "max_len 200 > 128: %s", vkf_status_name(rc));
        tp.max_len = 0;
        rc = vkf_translate(s, ok_src, 3, &tp, out, 16, &n_out, NULL);
        VKT_CHECK(rc == VKF_ERROR_INVALID_ARGUMENT, "a 16-token output buffer for max_len 128: %s",
                  vkf_status_name(rc));
        vkf_session_free(s);
    }
    vkf_model_free(m);
}

/* ------------------------------------------------------------------ invalid UTF-8 */

static const char k_bad_utf8[] =
    "And\xff\xfe God \xc3 said \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf!";

static void test_utf8_char(vkf_model *m) {
    int32_t toks[256], n = 0;
    VKT_OK(vkf_model_tokenize(m, k_bad_utf8, VKF_TOKENIZE_ADD_SPECIAL, toks, 256, &n));
    int unk = 0;
    for (int i = 0; i < n; i++)
        unk += toks[i] == 3;
    /* every invalid byte is one <unk>: ff fe c3 e2 82 ed a0 80 f4 90 80 80 c0 af */
    VKT_CHECK(n > 0 && toks[0] == 1 && unk == 14, "char vocabulary: %d tokens, %d unk (want 14)", n,
              unk);
    vkf_session *s = NULL;
    VKT_OK(vkf_session_create(m, NULL, &s));
    if (s) {
        collect c = {0};
        vkf_sampler_params sp = {.temp = 0.8f, .top_k = 20, .seed = 7};
        VKT_OK(vkf_generate(s, toks, n, 8, &sp, on_token, &c, NULL));
        VKT_CHECK(c.n == 8, "generate after an invalid UTF-8 prompt: %d tokens", c.n);
        vkf_session_free(s);
    }
    /* NULL text and a too small buffer */
    VKT_CHECK(vkf_model_tokenize(m, NULL, 0, toks, 256, &n) == VKF_ERROR_INVALID_ARGUMENT,
              "NULL text accepted");
    VKT_CHECK(vkf_model_tokenize(m, "In the beginning", VKF_TOKENIZE_ADD_SPECIAL, toks, 4, &n) ==
                      VKF_ERROR_INVALID_ARGUMENT &&
                  n == 17,
              "a 4-token buffer for 17 tokens: n %d", n);
}

/* Byte-level vocabularies give the exact bytes back. */
static void test_utf8_roundtrip(vkf_context *ctx, const char *path, const char *what) {
    vkf_model *m = load_model(ctx, path);
    if (!m) return;
    int32_t toks[512], n = 0;
    VKT_OK(vkf_model_tokenize(m, k_bad_utf8, 0, toks, 512, &n));
    char *back = NULL;
    VKT_OK(vkf_model_detokenize(m, toks, n, 0, &back));
    VKT_CHECK(back && strcmp(back, k_bad_utf8) == 0,
              "%s: invalid UTF-8 does not round-trip (%d tokens)", what, n);
    free(back);
    vkf_session *s = NULL;
    vkf_session_params sp16 = {.n_ctx = 128};
    VKT_OK(vkf_session_create(m, &sp16, &s));
    if (s && n > 0) {
        collect c = {0};
        vkf_sampler_params sp = {.temp = 0};
        VKT_OK(vkf_generate(s, toks, n, 4, &sp, on_token, &c, NULL));
        VKT_CHECK(c.n >= 1, "%s: nothing generated after an invalid UTF-8 prompt", what);
    }
    vkf_session_free(s);
    vkf_model_free(m);
}

static void test_cli_bad_utf8(void) {
    const char *gen[] = {rb_cli(), "generate", "--cpu", "-m", rb_repo("models/kjv-gpt"),
                         "-p",     k_bad_utf8, "-n",    "4",  "--seed",
                         "3",      NULL};
    rb_run r;
    rb_run_cmd(gen, NULL, 60, &r);
    VKT_CHECK(r.exited && r.code == 0, "CLI with an invalid UTF-8 prompt: exit %d signal %d: %s",
              r.code, r.signal, r.err);
}

/* ------------------------------------------------------------------ shader cache directory */

/* Teacher-forced logits of kjv case 0 on a fresh Vulkan context, compared with the CPU's. */
static double kjv_logits_vs_cpu(const float *cpu, int n_rows, vkf_vk_stats *stats) {
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN};
    vkf_context *ctx = NULL;
    if (vkf_context_create(&cp, &ctx) != VKF_OK) {
        VKT_CHECK(0, "vulkan context: %s", vkf_last_error());
        return INFINITY;
    }
    double worst = INFINITY;
    vkf_model *m = load_model(ctx, rb_repo("models/kjv-gpt"));
    vkf_session *s = NULL;
    float *lg = malloc((size_t)n_rows * 67 * sizeof *lg);
    /* an F32 cache, as the CPU's (Vulkan devices default to F16; this compares shader caches) */
    vkf_session_params sp = {.cache_type_k = VKF_CACHE_F32, .cache_type_v = VKF_CACHE_F32};
    if (m && lg && vkf_session_create(m, &sp, &s) == VKF_OK &&
        vkf_session_eval(s, g_kjv[0].tokens, n_rows, lg) == VKF_OK) {
        worst = 0;
        for (int i = 0; i < n_rows * 67; i++)
            worst = fmax(worst, fabs((double)lg[i] - cpu[i]));
    } else {
        VKT_CHECK(0, "vulkan eval: %s", vkf_last_error());
    }
    if (stats) *stats = vkf_backend_vulkan_stats(ctx->be);
    free(lg);
    vkf_session_free(s);
    vkf_model_free(m);
    vkf_context_free(ctx);
    return worst;
}

static void corrupt_file(const char *path, int how) {
    size_t n = 0;
    unsigned char *p = vkt_read_file(path, &n);
    if (!p) return;
    if (how == 0 && n > 40) { /* flip bytes after the headers */
        for (size_t i = 36; i < n; i += 97)
            p[i] ^= 0x5a;
        rb_write_file(path, p, n);
    } else if (how == 1) { /* truncated */
        rb_write_file(path, p, n / 2);
    } else { /* empty */
        rb_write_file(path, p, 0);
    }
    free(p);
}

static void test_cache_dir(void) {
    float cpu[17 * 67];
    vkf_context_params ccp = {.backend = VKF_BACKEND_CPU};
    vkf_context *cctx = NULL;
    VKT_OK(vkf_context_create(&ccp, &cctx));
    vkf_model *cm = cctx ? load_model(cctx, rb_repo("models/kjv-gpt")) : NULL;
    vkf_session *cs = NULL;
    if (!cm || vkf_session_create(cm, NULL, &cs) != VKF_OK ||
        vkf_session_eval(cs, g_kjv[0].tokens, 17, cpu) != VKF_OK) {
        VKT_CHECK(0, "cpu reference: %s", vkf_last_error());
        vkf_session_free(cs);
        vkf_model_free(cm);
        vkf_context_free(cctx);
        return;
    }
    vkf_session_free(cs);
    vkf_model_free(cm);
    vkf_context_free(cctx);

    char *tmp = rb_mkdtemp("cache");
    if (!tmp) return;
    char *old = getenv("VKF_CACHE_DIR") ? strdup(getenv("VKF_CACHE_DIR")) : NULL;
    char path[2048];
    /* a path through a regular file: nothing can be created there, whoever runs the test */
    snprintf(path, sizeof path, "%s/a-file", tmp);
    rb_write_file(path, "x", 1);
    snprintf(path, sizeof path, "%s/a-file/cache", tmp);
    setenv("VKF_CACHE_DIR", path, 1);
    vkf_vk_stats st;
    double d = kjv_logits_vs_cpu(cpu, 17, &st);
    VKT_CHECK(d < 1e-3, "unusable cache directory: max |vulkan - cpu| = %g", d);

    /* a cache filled by one run, then every file damaged (bytes flipped, truncated, emptied) */
    snprintf(path, sizeof path, "%s/cache", tmp);
    setenv("VKF_CACHE_DIR", path, 1);
    d = kjv_logits_vs_cpu(cpu, 17, &st);
    VKT_CHECK(d < 1e-3, "fresh cache: max |vulkan - cpu| = %g", d);
    uint64_t compiled = st.shader_compiles;
    char cmd[2300];
    snprintf(cmd, sizeof cmd, "ls %s", path);
    FILE *ls = popen(cmd, "r");
    int n_files = 0, n_spv = 0;
    char name[512];
    while (ls && fgets(name, sizeof name, ls)) {
        name[strcspn(name, "\n")] = 0;
        char f[2600];
        snprintf(f, sizeof f, "%s/%s", path, name);
        n_spv += strstr(name, ".spv") != NULL;
        corrupt_file(f, n_files++ % 3);
    }
    if (ls) pclose(ls);
    VKT_CHECK(n_spv > 0 && compiled > 0, "the first run cached nothing (%d files, %llu compiles)",
              n_files, (unsigned long long)compiled);
    d = kjv_logits_vs_cpu(cpu, 17, &st);
    VKT_CHECK(d < 1e-3, "corrupt cache: max |vulkan - cpu| = %g", d);
    VKT_CHECK(st.spirv_cache_hits == 0 && st.shader_compiles == compiled,
              "corrupt SPIR-V was used: %llu hits, %llu compiles (first run %llu)",
              (unsigned long long)st.spirv_cache_hits, (unsigned long long)st.shader_compiles,
              (unsigned long long)compiled);
    printf("  cache: %d files damaged, %llu rejected, %llu recompiled\n", n_files,
           (unsigned long long)st.spirv_cache_rejects, (unsigned long long)st.shader_compiles);
    /* and the rebuilt cache serves the next run */
    d = kjv_logits_vs_cpu(cpu, 17, &st);
    VKT_CHECK(d < 1e-3 && st.spirv_cache_hits > 0 && st.shader_compiles == 0,
              "rebuilt cache: %g, %llu hits, %llu compiles", d,
              (unsigned long long)st.spirv_cache_hits, (unsigned long long)st.shader_compiles);
    if (old) {
        setenv("VKF_CACHE_DIR", old, 1);
        free(old);
    } else {
        unsetenv("VKF_CACHE_DIR");
    }
    rb_rmtree(tmp);
    free(tmp);
}

/* ------------------------------------------------------------------ device loss */

static void test_device_lost(void) {
    const kjv_case *k = &g_kjv[2];
    const int n_total = 24;
    vkf_sampler_params sp = {.temp = 0};
    /* the 6th submission fails: the prompt pass and 4 generation steps succeed, so 5 tokens are
     * delivered before the error */
    setenv("VKF_SIMULATE_DEVICE_LOST", "6", 1);
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN};
    vkf_context *ctx = NULL;
    vkf_status s = vkf_context_create(&cp, &ctx);
    VKT_OK(s);
    collect c = {0};
    if (s == VKF_OK) {
        vkf_model *m = load_model(ctx, rb_repo("models/kjv-gpt"));
        vkf_session *sess = NULL;
        if (m && vkf_session_create(m, NULL, &sess) == VKF_OK) {
            vkf_generate_stats st;
            s = vkf_generate(sess, k->tokens, k->n_tokens, n_total, &sp, on_token, &c, &st);
            const char *e = vkf_last_error();
            VKT_CHECK(s == VKF_ERROR_VULKAN && st.stop == VKF_STOP_NONE, "device lost: %s, stop %d",
                      vkf_status_name(s), (int)st.stop);
            VKT_CHECK(strstr(e, "VK_ERROR_DEVICE_LOST") && strstr(e, "graph \"gpt2 n1 b1 last\"") &&
                          strstr(e, "kjv-gpt") && strstr(e, "ops"),
                      "the message does not name the graph, its ops and the error: %s", e);
            VKT_CHECK(c.n == 5 && memcmp(c.toks, k->greedy, 5 * sizeof *c.toks) == 0,
                      "tokens before the loss: %d \"%s\"", c.n, c.text);
            /* later calls fail the same way instead of hanging or crashing */
            float lg[67];
            VKT_CHECK(vkf_session_eval_last(sess, k->greedy, 1, lg) == VKF_ERROR_VULKAN,
                      "a call after the loss succeeded");
        }
        vkf_session_free(sess);
        vkf_model_free(m);
        vkf_context_free(ctx);
    }
    unsetenv("VKF_SIMULATE_DEVICE_LOST");

    /* go on on the CPU: the prompt and the delivered tokens, then the rest */
    vkf_context_params ccp = {.backend = VKF_BACKEND_CPU};
    VKT_OK(vkf_context_create(&ccp, &ctx));
    if (!ctx) return;
    vkf_model *m = load_model(ctx, rb_repo("models/kjv-gpt"));
    vkf_session *sess = NULL;
    if (m && vkf_session_create(m, NULL, &sess) == VKF_OK) {
        int32_t seq[128];
        int n = 0;
        for (int i = 0; i < k->n_tokens; i++)
            seq[n++] = k->tokens[i];
        for (int i = 0; i < c.n; i++)
            seq[n++] = c.toks[i];
        int had = c.n;
        VKT_OK(vkf_generate(sess, seq, n, n_total - had, &sp, on_token, &c, NULL));
        VKT_CHECK(
            c.n == n_total && memcmp(c.toks, k->greedy, (size_t)n_total * sizeof *c.toks) == 0,
            "vulkan then cpu: %d tokens \"%s\", expected \"%.24s\"", c.n, c.text, k->greedy_text);
    }
    vkf_session_free(sess);
    vkf_model_free(m);
    vkf_context_free(ctx);

    /* the CLI reports it and exits cleanly */
    const char *gen[] = {rb_cli(), "generate", "-m", rb_repo("models/kjv-gpt"),
                         "-p",     "The",      "-n", "16",
                         "--temp", "0",        NULL};
    const char *env[] = {"VKF_SIMULATE_DEVICE_LOST=3", "VKF_DEVICE", NULL};
    rb_run r;
    rb_run_cmd(gen, env, 60, &r);
    VKT_CHECK(rb_clean_failure(&r) && strstr(r.err, "VK_ERROR_DEVICE_LOST") &&
                  strstr(r.err, "graph"),
              "CLI, device lost: exit %d signal %d: %s", r.code, r.signal, r.err);
}

/* ------------------------------------------------------------------ small-device profile */

static void test_mobile_profile(void) {
    setenv("VKF_DEVICE_PROFILE", "mobile", 1);
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN};
    vkf_context *ctx = NULL;
    vkf_status s = vkf_context_create(&cp, &ctx);
    unsetenv("VKF_DEVICE_PROFILE");
    VKT_OK(s);
    if (s != VKF_OK) return;
    const vkf_vk_caps *c = vkf_backend_vulkan_caps(ctx->be);
    VKT_CHECK(
        c && c->max_storage_range <= (128u << 20) && c->max_alloc <= (256u << 20) &&
            c->max_shared <= 16384 && !c->fp16 && !c->int8 && !c->storage16 && !c->storage8 &&
            !c->has_subgroup && strstr(c->overrides, "mobile"),
        "mobile profile not applied: range %llu alloc %llu shared %u fp16 %d int8 %d s16 %d sg %d",
        c ? (unsigned long long)c->max_storage_range : 0, c ? (unsigned long long)c->max_alloc : 0,
        c ? c->max_shared : 0, c ? c->fp16 : -1, c ? c->int8 : -1, c ? c->storage16 : -1,
        c ? c->has_subgroup : -1);
    vkf_model *m = load_model(ctx, rb_repo("models/kjv-gpt"));
    if (m) {
        check_kjv_greedy(m, &g_kjv[0], 48, "mobile profile");
        vkf_model_free(m);
    }
    vkf_context_free(ctx);
}

/* ------------------------------------------------------------------ non-finite logits */

/* The synthetic llama GGUF of tests/fuzz/corpus with output_norm.weight[0] = NaN: every logit
 * is NaN. Generation must stop with an error instead of sampling from garbage. The tensor is
 * found by name in the file (a GGUF v3 walk: key/values, tensor infos, aligned data). */
static size_t gguf_tensor_data_at(const uint8_t *d, size_t size, const char *want) {
    size_t at = 24;
    uint64_t nt, nkv;
    memcpy(&nt, d + 8, 8);
    memcpy(&nkv, d + 16, 8);
    static const size_t sz[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    for (uint64_t i = 0; i < nkv && at < size; i++) {
        uint64_t kl, n;
        uint32_t t, et;
        memcpy(&kl, d + at, 8);
        at += 8 + kl;
        memcpy(&t, d + at, 4);
        at += 4;
        if (t == 8) {
            memcpy(&n, d + at, 8);
            at += 8 + n;
        } else if (t == 9) {
            memcpy(&et, d + at, 4);
            memcpy(&n, d + at + 4, 8);
            at += 12;
            for (uint64_t j = 0; j < n; j++) {
                if (et == 8) {
                    uint64_t sl;
                    memcpy(&sl, d + at, 8);
                    at += 8 + sl;
                } else {
                    at += sz[et];
                }
            }
        } else {
            at += sz[t];
        }
    }
    size_t found = 0;
    for (uint64_t i = 0; i < nt && at < size; i++) {
        uint64_t nl, off;
        uint32_t nd;
        memcpy(&nl, d + at, 8);
        int match = nl == strlen(want) && memcmp(d + at + 8, want, nl) == 0;
        at += 8 + nl;
        memcpy(&nd, d + at, 4);
        at += 4 + 8 * (size_t)nd + 4;
        memcpy(&off, d + at, 8);
        at += 8;
        if (match) found = off + 1;
    }
    size_t data0 = (at + 31) / 32 * 32;
    return found ? data0 + found - 1 : 0;
}

static void test_nonfinite_logits(vkf_context *ctx, const char *where) {
    size_t size = 0;
    uint8_t *d = vkt_read_file(rb_repo("tests/fuzz/corpus/gguf/llama-tiny-synthetic.gguf"), &size);
    char *tmp = rb_mkdtemp("nan");
    size_t at = d ? gguf_tensor_data_at(d, size, "output_norm.weight") : 0;
    VKT_CHECK(d && tmp && at && at + 4 <= size, "cannot prepare the NaN model");
    if (d && tmp && at && at + 4 <= size) {
        float nan = NAN;
        memcpy(d + at, &nan, 4);
        char path[2048];
        snprintf(path, sizeof path, "%s/nan.gguf", tmp);
        rb_write_file(path, d, size);
        vkf_model *m = load_model(ctx, path);
        vkf_session *s = NULL;
        if (m && vkf_session_create(m, NULL, &s) == VKF_OK) {
            int32_t prompt[2] = {1, 3};
            collect c = {0};
            vkf_sampler_params sp = {.temp = 0.7f, .seed = 5};
            vkf_generate_stats st;
            vkf_status rc = vkf_generate(s, prompt, 2, 4, &sp, on_token, &c, &st);
            VKT_CHECK(rc == VKF_ERROR_INTERNAL && c.n == 0 && strstr(vkf_last_error(), "NaN") &&
                          strstr(vkf_last_error(), "not finite"),
                      "%s: NaN logits: %s, %d tokens: %s", where, vkf_status_name(rc), c.n,
                      vkf_last_error());
        }
        vkf_session_free(s);
        vkf_model_free(m);
    }
    free(d);
    rb_rmtree(tmp);
    free(tmp);
}

/* ------------------------------------------------------------------ main */

/* A message built from the one it replaces (vkf_error(..., "%s", vkf_last_error())) keeps it
 * whole: vkf_error once formatted into its own buffer and garbled such messages ("json
 * schema: the grammar written does not parse: json schema: the grammar ..."). */
static void test_error_wraps_itself(void) {
    vkf_error(VKF_ERROR_FORMAT, "grammar: line %d: expected %s", 3, "'::='");
    VKT_CHECK(vkf_error(VKF_ERROR_INTERNAL, "json schema: %s (in %s)", vkf_last_error(), "x") ==
                  VKF_ERROR_INTERNAL,
              "vkf_error returns its status");
    VKT_CHECK(strcmp(vkf_last_error(), "json schema: grammar: line 3: expected '::=' (in x)") == 0,
              "a message wrapping the last one: %s", vkf_last_error());
}

int main(void) {
    load_kjv_expected();
    if (g_n_kjv < 4) return vkt_finish();
    int vulkan = rb_has_vulkan();

    test_error_wraps_itself();
    printf("devices and loader\n");
    test_cli_no_driver();
    test_context_params(vulkan);

    vkf_context_params ccp = {.backend = VKF_BACKEND_CPU};
    vkf_context *cpu = NULL;
    VKT_OK(vkf_context_create(&ccp, &cpu));
    vkf_model *kjv = cpu ? load_model(cpu, rb_repo("models/kjv-gpt")) : NULL;
    printf("context length, token ids, UTF-8 (cpu)\n");
    if (kjv) {
        check_kjv_greedy(kjv, &g_kjv[0], 48, "cpu");
        test_context_full(kjv, "cpu");
        test_bad_tokens(kjv, "cpu");
        test_utf8_char(kjv);
    }
    test_cli_context_full();
    test_bad_tokens_encdec(cpu);
    if (vkt_need_fixtures("gpt2-tiny llama-tiny")) {
        test_utf8_roundtrip(cpu, vkt_fixture("gpt2-tiny/hf"), "gpt2 byte-level BPE");
        test_utf8_roundtrip(cpu, vkt_fixture("llama-tiny/llama-tiny-q4_0.gguf"),
                            "llama SentencePiece BPE");
    }
    test_cli_bad_utf8();
    test_nonfinite_logits(cpu, "cpu");
    vkf_model_free(kjv);
    vkf_context_free(cpu);

    if (vulkan) {
        printf("vulkan: context length and token ids\n");
        vkf_context_params vcp = {.backend = VKF_BACKEND_VULKAN};
        vkf_context *vk = NULL;
        VKT_OK(vkf_context_create(&vcp, &vk));
        vkf_model *vm = vk ? load_model(vk, rb_repo("models/kjv-gpt")) : NULL;
        if (vm) {
            test_context_full(vm, "vulkan");
            test_bad_tokens(vm, "vulkan");
        }
        if (vk) test_nonfinite_logits(vk, "vulkan");
        vkf_model_free(vm);
        vkf_context_free(vk);
        printf("vulkan: memory caps\n");
        test_alloc_caps();
        printf("vulkan: shader cache directory\n");
        test_cache_dir();
        printf("vulkan: device loss\n");
        test_device_lost();
        printf("vulkan: mobile profile\n");
        test_mobile_profile();
    }
    return vkt_finish();
}
