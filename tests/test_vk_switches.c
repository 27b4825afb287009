/* The switches (vkf_switches, docs/DESIGN.md, 'Switches read once'): read from the environment by
 * one function, settable through vkf_context_params without touching the environment, copied into
 * the backend once, and what they change: the device's capabilities (a small-device profile) and
 * the kernel the planner chooses. Also the shader-compile callback a context carries down to its
 * backend. The expected values come from the documentation of each switch (vkformer.h), not from
 * the code under test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/vulkan/vk_backend.h"
#include "backend/vulkan/vk_internal.h"
#include "graph/backend.h"
#include "runtime/context.h"
#include "testutil.h"

/* the variables this test sets, so that a leftover cannot pass for an API switch */
static const char *const k_vars[] = {"VKF_NO_FUSE",        "VKF_MAX_ALLOC",       "VKF_MM_TILE",
                                     "VKF_GPU_TIMEOUT_MS", "VKF_DEVICE_PROFILE",  "LP_NUM_THREADS",
                                     "VKF_ATTN_SPLIT",     "VKF_NO_TEXEL_MATMUL", "VKF_MODELS_DIR",
                                     "VKF_PYPI_URL",       "VKF_INT_DOT",         "VKF_NO_INT_DOT"};

static int env_clean(void) {
    for (size_t i = 0; i < sizeof k_vars / sizeof *k_vars; i++)
        if (getenv(k_vars[i])) return 0;
    return 1;
}

/* vkf_switches_from_env: each kind of variable lands in its field as documented */
static void test_from_env(void) {
    for (size_t i = 0; i < sizeof k_vars / sizeof *k_vars; i++) /* whatever the caller had set */
        unsetenv(k_vars[i]);
    vkf_switches sw;
    vkf_switches_xp xp;
    vkf_switches_from_env(&sw);
    vkf_switches_xp_get(&sw, &xp);
    VKT_CHECK(!sw.no_fuse && !sw.max_alloc && !xp.mm_tile[0] && !sw.gpu_timeout_ms &&
                  sw.device_profile == VKF_DEVICE_PROFILE_NONE,
              "unset variables must leave the defaults");
    setenv("VKF_NO_FUSE", "1", 1);
    setenv("VKF_MAX_ALLOC", "64K", 1); /* byte counts take K/M/G */
    setenv("VKF_MM_TILE", "64x32x8x4", 1);
    setenv("VKF_GPU_TIMEOUT_MS", "0", 1); /* 0: the shortest wait, stored as < 0 */
    setenv("VKF_DEVICE_PROFILE", "mobile", 1);
    setenv("LP_NUM_THREADS", "3", 1);
    setenv("VKF_ATTN_SPLIT", "0", 1); /* "0" is unset for counts as for flags */
    vkf_switches_from_env(&sw);
    vkf_switches_xp_get(&sw, &xp);
    VKT_CHECK(sw.no_fuse == 1, "VKF_NO_FUSE=1 -> no_fuse %d", sw.no_fuse);
    VKT_CHECK(sw.max_alloc == 65536, "VKF_MAX_ALLOC=64K -> %llu", (unsigned long long)sw.max_alloc);
    VKT_CHECK(xp.mm_tile[0] == 64 && xp.mm_tile[1] == 32 && xp.mm_tile[2] == 8 &&
                  xp.mm_tile[3] == 4,
              "VKF_MM_TILE=64x32x8x4 -> %ux%ux%ux%u", xp.mm_tile[0], xp.mm_tile[1], xp.mm_tile[2],
              xp.mm_tile[3]);
    VKT_CHECK(sw.gpu_timeout_ms < 0, "VKF_GPU_TIMEOUT_MS=0 -> %lld", (long long)sw.gpu_timeout_ms);
    VKT_CHECK(sw.device_profile == VKF_DEVICE_PROFILE_MOBILE, "VKF_DEVICE_PROFILE=mobile -> %d",
              (int)sw.device_profile);
    VKT_CHECK(sw.driver_threads == 3, "LP_NUM_THREADS=3 -> %u", sw.driver_threads);
    VKT_CHECK(xp.attn_split == 0, "VKF_ATTN_SPLIT=0 -> %u", xp.attn_split);
    /* vkformer pull's: the models directory and the index, through the same struct */
    char dir[1100], home[1024] = "", xdg[1024] = "";
    const char *e;
    if ((e = getenv("HOME"))) snprintf(home, sizeof home, "%s", e);
    if ((e = getenv("XDG_CACHE_HOME"))) snprintf(xdg, sizeof xdg, "%s", e);
    setenv("HOME", "/h", 1);
    unsetenv("XDG_CACHE_HOME");
    VKT_CHECK(vkf_switches_models_dir(&sw, dir, sizeof dir) == 0 &&
                  strcmp(dir, "/h/.cache/vkformer/models") == 0,
              "no VKF_MODELS_DIR, no XDG_CACHE_HOME -> %s", dir);
    setenv("VKF_MODELS_DIR", "/m", 1);
    setenv("VKF_PYPI_URL", "http://mirror", 1);
    vkf_switches_from_env(&sw);
    VKT_CHECK(strcmp(sw.pypi_url, "http://mirror") == 0, "VKF_PYPI_URL -> %s", sw.pypi_url);
    VKT_CHECK(vkf_switches_models_dir(&sw, dir, sizeof dir) == 0 && strcmp(dir, "/m") == 0,
              "VKF_MODELS_DIR=/m -> %s", dir);
    if (home[0]) setenv("HOME", home, 1);
    if (xdg[0]) setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("VKF_NO_FUSE", "0", 1);
    vkf_switches_from_env(&sw);
    VKT_CHECK(sw.no_fuse == 0, "VKF_NO_FUSE=0 must be off");
    /* the integer-dot path: an off switch and a word-valued one (1 on, 2 plain, 3 off) */
    vkf_switches_xp_get(&sw, &xp);
    VKT_CHECK(sw.no_int_dot == 0 && xp.int_dot == 0, "VKF_NO_INT_DOT, VKF_INT_DOT unset");
    static const struct {
        const char *v;
        int want;
    } idot[] = {{"on", 1}, {"plain", 2}, {"off", 3}, {"sometimes", 0}};
    for (size_t i = 0; i < sizeof idot / sizeof idot[0]; i++) {
        setenv("VKF_INT_DOT", idot[i].v, 1);
        vkf_switches_from_env(&sw);
        vkf_switches_xp_get(&sw, &xp);
        VKT_CHECK(xp.int_dot == idot[i].want, "VKF_INT_DOT=%s -> %d", idot[i].v, xp.int_dot);
    }
    setenv("VKF_NO_INT_DOT", "1", 1);
    vkf_switches_from_env(&sw);
    VKT_CHECK(sw.no_int_dot == 1, "VKF_NO_INT_DOT=1 -> %d", sw.no_int_dot);
    for (size_t i = 0; i < sizeof k_vars / sizeof *k_vars; i++)
        unsetenv(k_vars[i]);
}

/* vkf_switches_set: a key sets what its variable sets (each kind of switch, public fields and
 * experiments: the struct from the environment with the variable equals the struct without it
 * and the key set), "" resets, and every refusal names the key and leaves sw as it was. */
static void test_set(void) {
    static const struct {
        const char *env, *key, *value;
    } same[] = {
        {"VKF_NO_FUSE", "no_fuse", "1"},
        {"VKF_MAX_ALLOC", "max_alloc", "64K"},
        {"VKF_GPU_TIMEOUT_MS", "gpu_timeout_ms", "0"},
        {"VKF_DEVICE_PROFILE", "device_profile", "mobile"},
        {"LP_NUM_THREADS", "driver_threads", "3"},
        {"VKF_MODELS_DIR", "models_dir", "/m"},
        {"VKF_NO_TEXEL_MATMUL", "no_texel_matmul", "1"},
        {"VKF_NO_RS_PAIRU", "no_rs_pairu", "1"},
        {"VKF_MM_TM", "mm_tm", "4"},
        {"VKF_MM_TILE", "mm_tile", "64x32x8x4"},
        {"VKF_ATTN_SPLIT", "attn_split", "4"},
        {"VKF_INT_DOT", "int_dot", "plain"},
        {"VKF_COOPMAT", "coopmat", "nv"},
        {"VKF_SIMULATE_DEVICE_LOST", "simulate_device_lost", "3"},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        char old[1100] = "";
        const char *o = getenv(same[i].env);
        if (o) snprintf(old, sizeof old, "%s", o);
        unsetenv(same[i].env);
        vkf_switches without, with, by_key;
        vkf_switches_from_env(&without);
        setenv(same[i].env, same[i].value, 1);
        vkf_switches_from_env(&with);
        if (o)
            setenv(same[i].env, old, 1);
        else
            unsetenv(same[i].env);
        by_key = without;
        VKT_OK(vkf_switches_set(&by_key, same[i].key, same[i].value));
        VKT_CHECK(memcmp(&with, &without, sizeof with) != 0, "%s=%s changed nothing", same[i].env,
                  same[i].value);
        VKT_CHECK(memcmp(&with, &by_key, sizeof with) == 0,
                  "vkf_switches_set(\"%s\", \"%s\") is not what %s=%s gives", same[i].key,
                  same[i].value, same[i].env, same[i].value);
        VKT_OK(vkf_switches_set(&by_key, same[i].key, ""));
        VKT_CHECK(memcmp(&without, &by_key, sizeof with) == 0, "%s = \"\" is not the default",
                  same[i].key);
    }

    static const struct {
        const char *key, *value, *says; /* what the message must name */
    } bad[] = {
        {"mm_tmm", "4", "unknown switch \"mm_tmm\""},
        {"VKF_MM_TM", "4", "lower case"},
        {"no_fuse", "yes", "VKF_NO_FUSE"},
        {"mm_tm", "4294967296", "4294967295"},
        {"mm_tm", "-1", "mm_tm"},
        {"mm_tm", "12abc", "mm_tm"},
        {"max_alloc", "16Q", "max_alloc"},
        {"mm_tile", "64x32x8", "BMxBNxBKxTT"},
        {"device_profile", "desktop", "mobile"},
        {"int_dot", "sometimes", "plain"},
        {"coopmat", "khr", "nv"},
    };
    vkf_switches sw, before;
    memset(&sw, 0, sizeof sw);
    VKT_OK(vkf_switches_set(&sw, "mm_tm", "2"));
    VKT_OK(vkf_switches_set(&sw, "no_fuse", "1"));
    before = sw;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vkf_status st = vkf_switches_set(&sw, bad[i].key, bad[i].value);
        VKT_CHECK(st == VKF_ERROR_INVALID_ARGUMENT && strstr(vkf_last_error(), bad[i].says) &&
                      strstr(vkf_last_error(), bad[i].key),
                  "%s = \"%s\": %s \"%s\" (want INVALID_ARGUMENT naming %s and \"%s\")", bad[i].key,
                  bad[i].value, vkf_status_name(st), vkf_last_error(), bad[i].key, bad[i].says);
        VKT_CHECK(memcmp(&sw, &before, sizeof sw) == 0, "a refused %s changed the switches",
                  bad[i].key);
    }
    char big[1200];
    memset(big, 'd', sizeof big - 1);
    big[sizeof big - 1] = 0;
    VKT_CHECK(vkf_switches_set(&sw, "cache_dir", big) == VKF_ERROR_INVALID_ARGUMENT,
              "a cache_dir longer than its 1024 bytes must be refused, not cut");
    VKT_CHECK(vkf_switches_set(NULL, "no_fuse", "1") == VKF_ERROR_INVALID_ARGUMENT,
              "NULL switches");
    vkf_switches_xp xp;
    vkf_switches_xp_get(&sw, &xp);
    VKT_CHECK(xp.mm_tm == 2 && sw.no_fuse == 1, "mm_tm %u no_fuse %d after the refusals", xp.mm_tm,
              sw.no_fuse);
}

/* switches at their defaults, but the cache directory ctest gives the tests */
static vkf_switches base_switches(void) {
    vkf_switches sw;
    memset(&sw, 0, sizeof sw);
    const char *d = getenv("VKF_CACHE_DIR");
    if (d) snprintf(sw.cache_dir, sizeof sw.cache_dir, "%s", d);
    return sw;
}

/* the matmul kernel kind the backend picks for an M x N x K Q4_0 product */
static vkf_vk_mm_kind mm_kind(vkf_context *ctx, int64_t M) {
    vkf_vk_mm_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    vkf_status st = vkf_vk_plan_mm_cfg(vkf_vk(ctx->be), M, 2048, 2048, VKF_DTYPE_Q4_0, &cfg);
    VKT_OK(st);
    return cfg.kind;
}

/* Through the public API, the environment untouched: a context given switches runs with them
 * (and not with the environment's); a context given none reads the environment. */
static void test_api(void) {
    VKT_CHECK(env_clean(), "a variable this test sets is set already");
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN, .validate = 1};
    vkf_context *def = NULL, *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &def));
    if (!def) return;
    const vkf_vk_caps *c0 = vkf_backend_vulkan_caps(def->be);
    VKT_CHECK(c0->texel && c0->has_subgroup, "%s has no texels and subgroups: nothing to switch",
              c0->name);

    /* the texel matmul off (VKF_NO_TEXEL_MATMUL): decode and prefill leave matmul_texel.comp */
    vkf_switches sw = base_switches();
    VKT_OK(vkf_switches_set(&sw, "no_texel_matmul", "1")); /* an experiment, by its key */
    cp.switches = &sw;
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (ctx) {
        VKT_CHECK(mm_kind(def, 1) == VKF_VK_MM_TEXEL && mm_kind(def, 64) == VKF_VK_MM_TEXEL,
                  "lavapipe's table takes the texel kernel for every M");
        VKT_CHECK(mm_kind(ctx, 1) == VKF_VK_MM_TILED && mm_kind(ctx, 64) == VKF_VK_MM_TILED,
                  "no_texel_matmul through the API did not leave the texel kernel");
        vkf_switches got;
        vkf_switches_xp got_xp;
        vkf_context_switches(ctx, &got);
        vkf_switches_xp_get(&got, &got_xp);
        VKT_CHECK(got_xp.no_texel_matmul == 1 && got.no_fuse == 0,
                  "vkf_context_switches does not report what the context was given");
        vkf_context_free(ctx);
        ctx = NULL;
    }

    /* the small-device profile (VKF_DEVICE_PROFILE=mobile): 128 MiB storage range, 16 KiB
     * shared memory, no subgroups; and a cap of its own below it */
    sw = base_switches();
    sw.device_profile = VKF_DEVICE_PROFILE_MOBILE;
    sw.max_alloc = 1u << 20;
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (ctx) {
        const vkf_vk_caps *c = vkf_backend_vulkan_caps(ctx->be);
        VKT_CHECK(c->max_storage_range <= (128u << 20) && c->max_shared <= (16u << 10) &&
                      !c->has_subgroup && !c->fp16 && c->max_alloc == (1u << 20),
                  "mobile profile through the API: range %llu shared %u subgroups %d fp16 %d "
                  "alloc %llu",
                  (unsigned long long)c->max_storage_range, c->max_shared, c->has_subgroup, c->fp16,
                  (unsigned long long)c->max_alloc);
        VKT_CHECK(c0->max_storage_range > (128u << 20) || c0->max_shared > (16u << 10) ||
                      c0->has_subgroup,
                  "the device itself is that small: the profile shows nothing");
        vkf_context_free(ctx);
        ctx = NULL;
    }

    /* the GPUs' table on the CPU driver (VKF_GPU_TABLE): prefill takes the tiled kernel */
    sw = base_switches();
    VKT_OK(vkf_switches_set(&sw, "gpu_table", "1"));
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (ctx) {
        VKT_CHECK(mm_kind(ctx, 64) == VKF_VK_MM_TILED && mm_kind(ctx, 1) == VKF_VK_MM_TEXEL,
                  "gpu_table: prefill %d decode %d", (int)mm_kind(ctx, 64), (int)mm_kind(ctx, 1));
        vkf_context_free(ctx);
        ctx = NULL;
    }
    VKT_CHECK(env_clean(), "setting switches through the API changed the environment");

    /* the environment is the default source, and only that: with VKF_NO_TEXEL_MATMUL=1 set, a
     * context given switches ignores it, a context given none takes it */
    setenv("VKF_NO_TEXEL_MATMUL", "1", 1);
    sw = base_switches();
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (ctx) {
        VKT_CHECK(mm_kind(ctx, 1) == VKF_VK_MM_TEXEL, "given switches, the environment was read");
        vkf_context_free(ctx);
        ctx = NULL;
    }
    cp.switches = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    unsetenv("VKF_NO_TEXEL_MATMUL");
    if (ctx) {
        VKT_CHECK(mm_kind(ctx, 1) == VKF_VK_MM_TILED, "given no switches, the environment was not "
                                                      "read");
        vkf_context_free(ctx);
    }
    vkf_context_free(def);
}

/* The shader-compile callback, carried by the context to its backend: with an empty cache,
 * one element-wise op compiles exactly one shader (binary.comp), reported with its count. */
static int g_calls, g_last_n;
static char g_last[64];
static void on_compiled(void *user, int n, const char *shader) {
    (*(int *)user)++;
    g_calls++;
    g_last_n = n;
    snprintf(g_last, sizeof g_last, "%s", shader);
}

static void test_compile_callback(void) {
    char dir[] = "/tmp/vkf-switches-XXXXXX";
    if (!mkdtemp(dir)) {
        VKT_CHECK(0, "mkdtemp failed");
        return;
    }
    vkf_switches sw = {0};
    snprintf(sw.cache_dir, sizeof sw.cache_dir, "%s", dir);
    int mine = 0;
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN,
                             .validate = 1,
                             .switches = &sw,
                             .shader_compiled = on_compiled,
                             .shader_compiled_user = &mine};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (ctx) {
        VKT_CHECK(strcmp(vkf_backend_vulkan_cache_dir(ctx->be), dir) == 0,
                  "cache_dir switch: the backend caches in %s",
                  vkf_backend_vulkan_cache_dir(ctx->be));
        vkf_backend *be = ctx->be;
        vkf_tensor a = vkf_tensor_make(VKF_DTYPE_F32, 4, 64, "a");
        vkf_tensor b = vkf_tensor_make(VKF_DTYPE_F32, 4, 64, "b");
        vkf_tensor d = vkf_tensor_make(VKF_DTYPE_F32, 4, 64, "d");
        float x[256];
        for (int i = 0; i < 256; i++)
            x[i] = (float)i;
        VKT_OK(vkf_tensor_alloc(be, &a, VKF_BUFFER_ACTIVATIONS, x));
        VKT_OK(vkf_tensor_alloc(be, &b, VKF_BUFFER_ACTIVATIONS, x));
        VKT_OK(vkf_tensor_alloc(be, &d, VKF_BUFFER_ACTIVATIONS, NULL));
        vkf_graph *g = NULL;
        vkf_op_params p;
        memset(&p, 0, sizeof p);
        VKT_OK(vkf_graph_create(be, "add", &g));
        if (g) VKT_OK(vkf_graph_add(g, VKF_OP_ADD, &d, &a, &b, NULL, NULL, &p));
        if (g) VKT_OK(vkf_graph_plan(g));
        if (g) VKT_OK(be->i->graph_compute(be, g, 0));
        float y[256];
        VKT_OK(vkf_tensor_read(be, &d, y));
        VKT_CHECK(y[255] == 510.0f, "add: %g", y[255]);
        VKT_CHECK(mine == 1 && g_calls == 1 && g_last_n == 1 && strcmp(g_last, "binary") == 0,
                  "callback: %d calls with this user, %d in all, last %d \"%s\" (want one: 1 "
                  "\"binary\")",
                  mine, g_calls, g_last_n, g_last);
        vkf_graph_free(g);
        be->i->buffer_free(be, a.buf);
        be->i->buffer_free(be, b.buf);
        be->i->buffer_free(be, d.buf);
        vkf_context_free(ctx);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int main(void) {
    test_from_env();
    test_set();
    if (getenv("VKF_TEST_NO_VULKAN")) return vkt_finish();
    test_api();
    test_compile_callback();
    return vkt_finish();
}
