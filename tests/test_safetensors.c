/* safetensors and config.json tests: the fixture checkpoints' tensor names and shapes (derived
 * from each config.json), their data cross-checked bitwise against the GGUF copy of the same
 * GPT-2 weights and against offsets read independently from the raw header, truncation at every
 * byte of the first 4 KB, and malformed synthetic files that must fail with messages naming the
 * tensor. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/error.h"
#include "io/gguf.h"
#include "io/json_config.h"
#include "io/safetensors.h"
#include "testutil.h"

/* ------------------------------------------------------------------ temp files */

static char g_tmp[64];

/* Writes data as the test's temp file. The file is opened once and rewritten in place (no
 * re-creation), which keeps thousands of fuzz iterations fast. */
static const char *write_tmp(const void *data, size_t n) {
    static int fd = -1;
    if (fd < 0) {
        snprintf(g_tmp, sizeof g_tmp, "/tmp/vkf_st_XXXXXX");
        fd = mkstemp(g_tmp);
        if (fd < 0) return g_tmp;
    }
    if (ftruncate(fd, (off_t)n) != 0 || (n && pwrite(fd, data, n, 0) != (ssize_t)n))
        fprintf(stderr, "cannot write %s\n", g_tmp);
    return g_tmp;
}

/* A safetensors file: 8-byte length, the header text as given, then data_len bytes 0, 1, ... */
static const char *st_file(const char *json, size_t data_len) {
    size_t hn = strlen(json), n = 8 + hn + data_len;
    uint8_t *b = malloc(n);
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)hn >> (8 * i));
    memcpy(b + 8, json, hn);
    for (size_t i = 0; i < data_len; i++)
        b[8 + hn + i] = (uint8_t)i;
    const char *p = write_tmp(b, n);
    free(b);
    return p;
}

/* Opening json (+ data_len bytes) must fail with want and a message containing needle. */
static void expect_fail(const char *label, const char *json, size_t data_len, vkf_status want,
                        const char *needle) {
    vkf_safetensors *st = NULL;
    vkf_status s = vkf_safetensors_open(st_file(json, data_len), &st);
    VKT_CHECK(s == want && st == NULL, "%s: expected %s, found %s (%s)", label,
              vkf_status_name(want), vkf_status_name(s), vkf_last_error());
    VKT_CHECK(strstr(vkf_last_error(), needle) != NULL, "%s: message \"%s\" lacks \"%s\"", label,
              vkf_last_error(), needle);
    vkf_safetensors_close(st);
}

/* ------------------------------------------------------------------ GPT-2 checkpoint */

static void check_shape(const vkf_safetensors *st, const char *name, int rank, int64_t d0,
                        int64_t d1) {
    const int64_t dims[2] = {d0, d1};
    const vkf_st_tensor *t = NULL;
    VKT_OK(vkf_safetensors_get(st, name, VKF_DTYPE_F32, rank, dims, &t));
    if (t) VKT_CHECK(t->nbytes == (size_t)t->n_elems * 4, "%s: nbytes", name);
}

static void test_gpt2(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s", vkt_fixture("gpt2-tiny/hf/model.safetensors"));
    vkf_safetensors *st = NULL;
    VKT_OK(vkf_safetensors_open(path, &st));
    if (!st) return;
    VKT_CHECK(vkf_safetensors_count(st) == 28, "gpt2: %zu tensors", vkf_safetensors_count(st));
    const char *fmt = vkf_safetensors_metadata(st, "format");
    VKT_CHECK(fmt && strcmp(fmt, "pt") == 0, "gpt2: __metadata__ format");
    VKT_CHECK(vkf_safetensors_find(st, "__metadata__") == NULL, "__metadata__ is not a tensor");
    check_shape(st, "wte.weight", 2, 50257, 64);
    check_shape(st, "wpe.weight", 2, 256, 64);
    check_shape(st, "ln_f.weight", 1, 64, 0);
    check_shape(st, "ln_f.bias", 1, 64, 0);
    for (int l = 0; l < 2; l++) {
        char n[96];
#define SHAPE(suffix, r, a, b)                                                                     \
    (snprintf(n, sizeof n, "h.%d.%s", l, suffix), check_shape(st, n, r, a, b))
        SHAPE("ln_1.weight", 1, 64, 0);
        SHAPE("ln_1.bias", 1, 64, 0);
        SHAPE("attn.c_attn.weight", 2, 64, 192);
        SHAPE("attn.c_attn.bias", 1, 192, 0);
        SHAPE("attn.c_proj.weight", 2, 64, 64);
        SHAPE("attn.c_proj.bias", 1, 64, 0);
        SHAPE("ln_2.weight", 1, 64, 0);
        SHAPE("ln_2.bias", 1, 64, 0);
        SHAPE("mlp.c_fc.weight", 2, 64, 256);
        SHAPE("mlp.c_fc.bias", 1, 256, 0);
        SHAPE("mlp.c_proj.weight", 2, 256, 64);
        SHAPE("mlp.c_proj.bias", 1, 64, 0);
#undef SHAPE
    }
    /* a transposed expectation names the tensor and both shapes */
    const int64_t wrong[2] = {192, 64};
    const vkf_st_tensor *t = NULL;
    VKT_CHECK(vkf_safetensors_get(st, "h.0.attn.c_attn.weight", VKF_DTYPE_F32, 2, wrong, &t) ==
                  VKF_ERROR_FORMAT,
              "transposed shape must fail");
    VKT_CHECK(strstr(vkf_last_error(),
                     "model.safetensors: tensor h.0.attn.c_attn.weight: expected F32 [192, 64], "
                     "found F32 [64, 192]") != NULL,
              "message: %s", vkf_last_error());
    const int64_t any[2] = {-1, 64};
    VKT_OK(vkf_safetensors_get(st, "wte.weight", -1, 2, any, &t));
    VKT_CHECK(vkf_safetensors_get(st, "wte.weight", VKF_DTYPE_F16, 2, any, &t) ==
                      VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "expected F16 [?, 64], found F32 [50257, 64]"),
              "dtype mismatch: %s", vkf_last_error());
    VKT_CHECK(vkf_safetensors_get(st, "lm_head.weight", -1, -1, NULL, &t) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "missing tensor lm_head.weight"),
              "missing: %s", vkf_last_error());
    VKT_CHECK(vkf_safetensors_get(st, "wte.weight", -1, 3, NULL, &t) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "expected any dtype rank 3"),
              "rank: %s", vkf_last_error());

    /* the GGUF holds the same weights bitwise (after the Conv1D transpose) */
    vkf_gguf *g = NULL;
    VKT_OK(vkf_gguf_open(vkt_fixture("gpt2-tiny/gpt2-tiny-f32.gguf"), &g));
    if (g) {
        const char *same[][2] = {{"token_embd.weight", "wte.weight"},
                                 {"position_embd.weight", "wpe.weight"},
                                 {"output.weight", "wte.weight"},
                                 {"blk.1.attn_qkv.bias", "h.1.attn.c_attn.bias"},
                                 {"output_norm.weight", "ln_f.weight"}};
        for (int i = 0; i < 5; i++) {
            const vkf_gguf_tensor *a = vkf_gguf_find_tensor(g, same[i][0]);
            const vkf_st_tensor *b = vkf_safetensors_find(st, same[i][1]);
            VKT_CHECK(a && b && a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0,
                      "GGUF %s != safetensors %s", same[i][0], same[i][1]);
        }
        const char *trans[][2] = {{"blk.0.attn_qkv.weight", "h.0.attn.c_attn.weight"},
                                  {"blk.1.ffn_up.weight", "h.1.mlp.c_fc.weight"},
                                  {"blk.1.ffn_down.weight", "h.1.mlp.c_proj.weight"}};
        for (int i = 0; i < 3; i++) {
            const vkf_gguf_tensor *a = vkf_gguf_find_tensor(g, trans[i][0]);
            const vkf_st_tensor *b = vkf_safetensors_find(st, trans[i][1]);
            int ok = a && b && b->rank == 2 && a->rows == b->shape[1] && a->cols == b->shape[0];
            for (int64_t o = 0; ok && o < a->rows; o++)
                for (int64_t in = 0; ok && in < a->cols; in++) {
                    float x, y; /* GGUF row o = output feature; Conv1D is [in, out] */
                    memcpy(&x, (const float *)a->data + o * a->cols + in, 4);
                    memcpy(&y, (const float *)b->data + in * b->shape[1] + o, 4);
                    ok = memcmp(&x, &y, 4) == 0;
                }
            VKT_CHECK(ok, "GGUF %s is not the transpose of %s", trans[i][0], trans[i][1]);
        }
        vkf_gguf_close(g);
    }
    vkf_safetensors_close(st);
}

/* ------------------------------------------------------------------ seed-transformer */

/* Every tensor's offset equals 8 + N + data_offsets[0] read from the raw header by this test. */
static void check_offsets_raw(const char *path, const vkf_safetensors *st) {
    FILE *f = fopen(path, "rb");
    uint8_t len8[8];
    if (!f || fread(len8, 1, 8, f) != 8) {
        VKT_CHECK(0, "cannot read %s", path);
        if (f) fclose(f);
        return;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | len8[i];
    char *h = malloc(n + 1);
    size_t got = fread(h, 1, n, f);
    fclose(f);
    h[got] = 0;
    cJSON *j = cJSON_Parse(h);
    int bad = 0, count = 0;
    for (const cJSON *e = j ? j->child : NULL; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) continue;
        count++;
        const vkf_st_tensor *t = vkf_safetensors_find(st, e->string);
        const cJSON *off = cJSON_GetObjectItem(e, "data_offsets");
        if (!t || t->offset != 8 + n + (uint64_t)cJSON_GetArrayItem(off, 0)->valuedouble) bad++;
    }
    VKT_CHECK(j && bad == 0 && count == (int)vkf_safetensors_count(st),
              "%s: %d tensors with wrong offsets", path, bad);
    cJSON_Delete(j);
    free(h);
}

static void test_seed(const char *set, vkf_dtype want_dtype) {
    char rel[128], cfg_path[4096], st_path[4096];
    snprintf(rel, sizeof rel, "%s/config.json", set);
    snprintf(cfg_path, sizeof cfg_path, "%s", vkt_fixture(rel));
    snprintf(rel, sizeof rel, "%s/model.safetensors", set);
    snprintf(st_path, sizeof st_path, "%s", vkt_fixture(rel));
    vkf_json_config *c = NULL;
    VKT_OK(vkf_json_config_load(cfg_path, &c));
    vkf_safetensors *st = NULL;
    VKT_OK(vkf_safetensors_open(st_path, &st));
    if (!c || !st) {
        vkf_json_config_free(c);
        vkf_safetensors_close(st);
        return;
    }
    int64_t d = 0, ff = 0, ne = 0, nd = 0, sv = 0, tv = 0;
    VKT_OK(vkf_json_config_require_int(c, "d_model", &d));
    VKT_OK(vkf_json_config_require_int(c, "dim_feedforward", &ff));
    VKT_OK(vkf_json_config_require_int(c, "num_encoder_layers", &ne));
    VKT_OK(vkf_json_config_require_int(c, "num_decoder_layers", &nd));
    VKT_OK(vkf_json_config_require_int(c, "src_vocab_size", &sv));
    VKT_OK(vkf_json_config_require_int(c, "tgt_vocab_size", &tv));
    int n_checked = 0;
    const vkf_st_tensor *t;
#define EXPECT2(name, a, b)                                                                        \
    do {                                                                                           \
        const int64_t dims_[2] = {a, b};                                                           \
        VKT_OK(vkf_safetensors_get(st, name, (int)want_dtype, 2, dims_, &t));                      \
        n_checked++;                                                                               \
    } while (0)
#define EXPECT1(name, a)                                                                           \
    do {                                                                                           \
        const int64_t dims_[1] = {a};                                                              \
        VKT_OK(vkf_safetensors_get(st, name, (int)want_dtype, 1, dims_, &t));                      \
        n_checked++;                                                                               \
    } while (0)
    EXPECT2("src_embed.weight", sv, d);
    EXPECT2("tgt_embed.weight", tv, d);
    EXPECT2("generator.weight", tv, d);
    EXPECT1("generator.bias", tv);
    char n[128];
    const char *stacks[2] = {"encoder", "decoder"};
    for (int s = 0; s < 2; s++) {
        snprintf(n, sizeof n, "transformer.%s.norm.weight", stacks[s]);
        EXPECT1(n, d);
        snprintf(n, sizeof n, "transformer.%s.norm.bias", stacks[s]);
        EXPECT1(n, d);
        for (int64_t l = 0; l < (s ? nd : ne); l++) {
            const char *attn[2] = {"self_attn", "multihead_attn"};
            for (int a = 0; a < (s ? 2 : 1); a++) {
#define P(fmt)                                                                                     \
    snprintf(n, sizeof n, "transformer.%s.layers.%lld.%s." fmt, stacks[s], (long long)l, attn[a])
                P("in_proj_weight");
                EXPECT2(n, 3 * d, d);
                P("in_proj_bias");
                EXPECT1(n, 3 * d);
                P("out_proj.weight");
                EXPECT2(n, d, d);
                P("out_proj.bias");
                EXPECT1(n, d);
#undef P
            }
#define P(fmt) snprintf(n, sizeof n, "transformer.%s.layers.%lld." fmt, stacks[s], (long long)l)
            P("linear1.weight");
            EXPECT2(n, ff, d);
            P("linear1.bias");
            EXPECT1(n, ff);
            P("linear2.weight");
            EXPECT2(n, d, ff);
            P("linear2.bias");
            EXPECT1(n, d);
            for (int k = 1; k <= (s ? 3 : 2); k++) {
                snprintf(n, sizeof n, "transformer.%s.layers.%lld.norm%d.weight", stacks[s],
                         (long long)l, k);
                EXPECT1(n, d);
                snprintf(n, sizeof n, "transformer.%s.layers.%lld.norm%d.bias", stacks[s],
                         (long long)l, k);
                EXPECT1(n, d);
            }
#undef P
        }
    }
#undef EXPECT1
#undef EXPECT2
    VKT_CHECK((size_t)n_checked == vkf_safetensors_count(st), "%s: %d named tensors, file has %zu",
              set, n_checked, vkf_safetensors_count(st));
    /* LayerNorm gammas are 1 + 0.1 N(0,1): a sane decode of the first one */
    const vkf_st_tensor *g = vkf_safetensors_find(st, "transformer.encoder.layers.0.norm1.weight");
    if (g) {
        double mean = 0;
        for (int64_t i = 0; i < g->n_elems; i++) {
            uint16_t h;
            float v;
            if (g->dtype == VKF_DTYPE_F16) {
                memcpy(&h, (const uint16_t *)g->data + i, 2);
                v = vkf_f16_to_f32(h);
            } else {
                memcpy(&v, (const float *)g->data + i, 4);
            }
            mean += v / (double)g->n_elems;
        }
        VKT_CHECK(fabs(mean - 1.0) < 0.05, "%s: norm1 gamma mean %g", set, mean);
    }
    check_offsets_raw(st_path, st);
    vkf_safetensors_close(st);
    vkf_json_config_free(c);
}

/* ------------------------------------------------------------------ config.json */

static void test_config(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s", vkt_fixture("gpt2-tiny/hf/config.json"));
    vkf_json_config *c = NULL;
    VKT_OK(vkf_json_config_load(path, &c));
    if (!c) return;
    int64_t v = 0;
    double f = 0;
    const char *s = NULL;
    int b = 0;
    VKT_OK(vkf_json_config_require_int(c, "n_embd", &v));
    VKT_CHECK(v == 64, "n_embd %lld", (long long)v);
    VKT_OK(vkf_json_config_get_int(c, "n_inner", 4 * 64, &v)); /* null means default */
    VKT_CHECK(v == 256, "n_inner default %lld", (long long)v);
    VKT_OK(vkf_json_config_get_int(c, "absent", -7, &v));
    VKT_CHECK(v == -7, "absent default");
    VKT_OK(vkf_json_config_require_float(c, "layer_norm_epsilon", &f));
    VKT_CHECK(f == 1e-5, "layer_norm_epsilon %g", f);
    VKT_OK(vkf_json_config_require_float(c, "n_layer", &f)); /* integers are numbers */
    VKT_CHECK(f == 2.0, "n_layer as float");
    VKT_OK(vkf_json_config_require_str(c, "activation_function", &s));
    VKT_CHECK(s && strcmp(s, "gelu_new") == 0, "activation_function");
    VKT_OK(vkf_json_config_require_bool(c, "tie_word_embeddings", &b));
    VKT_CHECK(b == 1, "tie_word_embeddings");
    VKT_CHECK(vkf_json_config_has(c, "n_embd") && !vkf_json_config_has(c, "n_inner") &&
                  !vkf_json_config_has(c, "absent"),
              "has");
    VKT_CHECK(vkf_json_config_get_int(c, "activation_function", 0, &v) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(),
                         "config.json: key activation_function: expected an integer, found string"),
              "int from string: %s", vkf_last_error());
    VKT_CHECK(vkf_json_config_get_float(c, "architectures", 0, &f) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "key architectures: expected a number, found array"),
              "float from array: %s", vkf_last_error());
    VKT_CHECK(vkf_json_config_get_bool(c, "n_embd", 0, &b) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "key n_embd: expected a bool, found number"),
              "bool from number: %s", vkf_last_error());
    VKT_CHECK(vkf_json_config_get_str(c, "n_embd", NULL, &s) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "key n_embd: expected a string, found number"),
              "string from number: %s", vkf_last_error());
    VKT_CHECK(vkf_json_config_require_int(c, "n_inner", &v) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "key n_inner: expected an integer, found null"),
              "required null: %s", vkf_last_error());
    VKT_CHECK(vkf_json_config_require_str(c, "model_name", &s) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "key model_name") && strstr(vkf_last_error(), "missing"),
              "required missing: %s", vkf_last_error());
    vkf_json_config_free(c);

    const char *frac = "{\"a\": 1.5, \"big\": 1e300}";
    VKT_OK(vkf_json_config_parse(frac, strlen(frac), "mem.json", &c));
    if (c) {
        VKT_CHECK(vkf_json_config_get_int(c, "a", 0, &v) == VKF_ERROR_FORMAT &&
                      strstr(vkf_last_error(), "mem.json: key a: expected an integer, found 1.5"),
                  "fraction: %s", vkf_last_error());
        VKT_CHECK(vkf_json_config_get_int(c, "big", 0, &v) == VKF_ERROR_FORMAT, "1e300 as int");
        vkf_json_config_free(c);
    }
    /* the loaders' one integer reader: range, default, other name, messages naming the key */
    const char *hp = "{\"n_head\": 0, \"n_ctx\": 1024, \"n_layer\": 3, \"big\": 4294967296, "
                     "\"n_inner\": null}";
    VKT_OK(vkf_json_config_parse(hp, strlen(hp), "hp.json", &c));
    if (c) {
        int32_t i32 = -1;
        VKT_CHECK(vkf_json_config_int32(c, "n_head", NULL, VKF_JSON_REQUIRED, 1, 4096, &i32) ==
                          VKF_ERROR_FORMAT &&
                      strstr(vkf_last_error(),
                             "hp.json: key n_head: expected an integer in [1, 4096], found 0"),
                  "int32 range: %s", vkf_last_error());
        VKT_CHECK(vkf_json_config_int32(c, "big", NULL, 0, 0, INT32_MAX, &i32) ==
                          VKF_ERROR_FORMAT &&
                      strstr(vkf_last_error(), "key big: expected an integer in [0, 2147483647], "
                                               "found 4294967296"),
                  "int32 overflow: %s", vkf_last_error());
        VKT_OK(
            vkf_json_config_int32(c, "n_positions", "n_ctx", VKF_JSON_REQUIRED, 1, 1 << 20, &i32));
        VKT_CHECK(i32 == 1024, "int32 from the other name: %d", i32);
        VKT_CHECK(vkf_json_config_int32(c, "n_embd", "d_model", VKF_JSON_REQUIRED, 1, 8, &i32) ==
                          VKF_ERROR_FORMAT &&
                      strstr(vkf_last_error(), "hp.json: key n_embd: expected an integer, found "
                                               "nothing (missing)"),
                  "int32 required: %s", vkf_last_error());
        VKT_OK(vkf_json_config_int32(c, "n_inner", NULL, 256, 1, 8, &i32)); /* null: default */
        VKT_CHECK(i32 == 256, "int32 default %d", i32);
        VKT_OK(vkf_json_config_int32(c, "n_layer", NULL, 7, 1, 8, &i32));
        VKT_CHECK(i32 == 3, "int32 present %d", i32);
        vkf_json_config_free(c);
    }
    const char *bad[] = {"{\"a\": }", "[1, 2]", "{} x", ""};
    for (int i = 0; i < 4; i++) {
        c = NULL;
        VKT_CHECK(vkf_json_config_parse(bad[i], strlen(bad[i]), "bad.json", &c) ==
                          VKF_ERROR_FORMAT &&
                      !c && strstr(vkf_last_error(), "bad.json"),
                  "bad json %d: %s", i, vkf_last_error());
    }
    VKT_CHECK(vkf_json_config_load("/nonexistent/config.json", &c) == VKF_ERROR_IO,
              "missing config file");
}

/* ------------------------------------------------------------------ synthetic files */

static void test_synthetic(void) {
    /* valid: scalar, BF16, empty tensor, I64 buffer, metadata; 8+N padded with spaces */
    const char *ok = "{\"__metadata__\":{\"format\":\"pt\",\"x\":\"y\"},"
                     "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
                     "\"b\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[4,16]},"
                     "\"e\":{\"dtype\":\"F16\",\"shape\":[0,5],\"data_offsets\":[16,16]},"
                     "\"pos\":{\"dtype\":\"I64\",\"shape\":[1,2],\"data_offsets\":[16,32]},"
                     "\"h\":{\"dtype\":\"F16\",\"shape\":[1,1,2,2],\"data_offsets\":[32,40]}}     ";
    vkf_safetensors *st = NULL;
    VKT_OK(vkf_safetensors_open(st_file(ok, 40), &st));
    if (st) {
        size_t hn = strlen(ok);
        VKT_CHECK(vkf_safetensors_count(st) == 5, "synthetic count %zu", vkf_safetensors_count(st));
        VKT_CHECK(strcmp(vkf_safetensors_tensor(st, 0)->name, "s") == 0 &&
                      strcmp(vkf_safetensors_tensor(st, 4)->name, "h") == 0 &&
                      vkf_safetensors_tensor(st, 5) == NULL,
                  "header order");
        const vkf_st_tensor *t = vkf_safetensors_find(st, "s");
        VKT_CHECK(t && t->rank == 0 && t->n_elems == 1 && t->nbytes == 4 && t->offset == 8 + hn,
                  "scalar");
        t = vkf_safetensors_find(st, "b");
        VKT_CHECK(t && t->dtype == VKF_DTYPE_BF16 && t->shape[0] == 2 && t->shape[1] == 3 &&
                      ((const uint8_t *)t->data)[0] == 4,
                  "bf16 tensor");
        t = vkf_safetensors_find(st, "e");
        VKT_CHECK(t && t->nbytes == 0 && t->n_elems == 0, "empty tensor");
        t = vkf_safetensors_find(st, "h");
        VKT_CHECK(t && t->rank == 4 && t->shape[3] == 2 && ((const uint8_t *)t->data)[1] == 33,
                  "rank 4");
        t = vkf_safetensors_find(st, "pos");
        VKT_CHECK(t && t->dtype == VKF_DTYPE_COUNT && strcmp(t->dtype_name, "I64") == 0,
                  "I64 is listed as unsupported");
        VKT_CHECK(vkf_safetensors_get(st, "pos", -1, -1, NULL, &t) == VKF_ERROR_UNSUPPORTED &&
                      strstr(vkf_last_error(), "tensor pos: dtype I64 is not supported"),
                  "I64 get: %s", vkf_last_error());
        const char *x = vkf_safetensors_metadata(st, "x");
        VKT_CHECK(x && strcmp(x, "y") == 0 && !vkf_safetensors_metadata(st, "z"), "metadata");
        vkf_safetensors_close(st);
    }
    static const struct {
        const char *label, *json;
        size_t data;
        const char *needle;
    } bad[] = {
        {"past the end", "{\"w.0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8,
         "tensor w.0: data_offsets [0, 16] extend past the data section (8 bytes)"},
        {"begin > end", "{\"w.1\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", 8,
         "tensor w.1: data_offsets begin 8 > end 4"},
        {"size mismatch", "{\"w.2\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}",
         32, "tensor w.2: F32 [2, 3] needs 24 bytes, data_offsets span 20"},
        {"overlap",
         "{\"a.w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
         "\"b.w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
         32, "tensors a.w and b.w overlap"},
        {"unknown dtype", "{\"w.3\":{\"dtype\":\"Q9\",\"shape\":[1],\"data_offsets\":[0,1]}}", 8,
         "tensor w.3: unknown dtype \"Q9\""},
        {"rank 5", "{\"w.4\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]}}", 8,
         "tensor w.4: rank 5"},
        {"negative dim", "{\"w.5\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 8,
         "tensor w.5: shape[0]"},
        {"fractional dim", "{\"w.6\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,4]}}",
         8, "tensor w.6: shape[0]"},
        {"overflow",
         "{\"w.7\":{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776,1099511627776],"
         "\"data_offsets\":[0,4]}}",
         8, "tensor w.7: element count overflows"},
        {"no offsets", "{\"w.8\":{\"dtype\":\"F32\",\"shape\":[1]}}", 8,
         "tensor w.8: key data_offsets"},
        {"dtype not a string", "{\"w.9\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 8,
         "tensor w.9: key dtype: expected a string"},
        {"not an object", "{\"w.10\":[1,2]}", 8, "tensor w.10: expected an object"},
        {"duplicate",
         "{\"d\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"d\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
         8, "duplicate tensor d"},
        {"metadata value", "{\"__metadata__\":{\"n\":3}}", 0,
         "__metadata__ key n: expected a string"},
        {"malformed json", "{\"w\":{\"dtype\":\"F32\",", 8, "header JSON is malformed"},
        {"not an object header", "[1,2]", 8, "header does not start with a JSON object"},
        {"trailing bytes", "{}   x", 8, "trailing bytes after the header JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_fail(bad[i].label, bad[i].json, bad[i].data, VKF_ERROR_FORMAT, bad[i].needle);

    /* header length fields that do not fit */
    uint8_t raw[16] = {0};
    raw[7] = 0x80; /* 2^63 */
    vkf_safetensors *s2 = NULL;
    VKT_CHECK(vkf_safetensors_open(write_tmp(raw, 16), &s2) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "header length 9223372036854775808 exceeds the file"),
              "huge header length: %s", vkf_last_error());
    VKT_CHECK(vkf_safetensors_open(write_tmp(raw, 5), &s2) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "too small"),
              "tiny file: %s", vkf_last_error());
    VKT_CHECK(vkf_safetensors_open("/nonexistent/model.safetensors", &s2) == VKF_ERROR_IO &&
                  strstr(vkf_last_error(), "/nonexistent/model.safetensors"),
              "missing file: %s", vkf_last_error());
}

/* ------------------------------------------------------------------ truncation and fuzzing */

static void truncation(const char *rel, size_t dense_until) {
    size_t n = 0;
    uint8_t *file = vkt_read_file(vkt_fixture(rel), &n);
    VKT_CHECK(file != NULL, "cannot read %s", rel);
    if (!file) return;
    size_t *cuts = malloc(12000 * sizeof *cuts), n_cuts = 0;
    for (size_t cut = 0; cut < n && n_cuts < 12000; cut += cut < dense_until ? 1 : n / 48)
        cuts[n_cuts++] = cut;
    const char *path = write_tmp(file, n);
    vkf_safetensors *st = NULL;
    VKT_OK(vkf_safetensors_open(path, &st));
    vkf_safetensors_close(st);
    int wrong = 0;
    for (size_t i = n_cuts; i-- > 0;) { /* the copy is cut shorter and shorter */
        if (truncate(path, (off_t)cuts[i]) != 0) {
            wrong++;
            continue;
        }
        st = NULL;
        vkf_status s = vkf_safetensors_open(path, &st);
        if (s != VKF_ERROR_FORMAT || st) {
            if (wrong++ < 5)
                fprintf(stderr, "%s cut at %zu: %s %s\n", rel, cuts[i], vkf_status_name(s),
                        vkf_last_error());
            vkf_safetensors_close(st);
        }
    }
    VKT_CHECK(wrong == 0, "%s: %d of %zu truncated copies did not fail with VKF_ERROR_FORMAT", rel,
              wrong, n_cuts);
    free(cuts);
    free(file);
}

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}

static void test_fuzz(void) {
    const char *json = "{\"__metadata__\":{\"format\":\"pt\"},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                       "\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[16,24]}}";
    size_t hn = strlen(json), n = 8 + hn + 24;
    uint8_t *base = malloc(n), *m = malloc(n);
    for (int i = 0; i < 8; i++)
        base[i] = (uint8_t)((uint64_t)hn >> (8 * i));
    memcpy(base + 8, json, hn);
    memset(base + 8 + hn, 7, 24);
    int opened = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(m, base, n);
        int k = 1 + (int)(rnd() % 3);
        for (int j = 0; j < k; j++) {
            size_t at = rnd() % n;
            m[at] = (rnd() & 1) ? (uint8_t)("0123456789[]{},:\"-. e"[rnd() % 21]) : (uint8_t)rnd();
        }
        vkf_safetensors *st = NULL;
        if (vkf_safetensors_open(write_tmp(m, n), &st) != VKF_OK) continue;
        opened++;
        unsigned sum = 0;
        for (size_t i = 0; i < vkf_safetensors_count(st); i++) {
            const vkf_st_tensor *t = vkf_safetensors_tensor(st, i);
            for (size_t x = 0; x < t->nbytes; x++)
                sum += ((const uint8_t *)t->data)[x];
        }
        (void)sum;
        vkf_safetensors_close(st);
    }
    VKT_CHECK(opened > 0 && opened < 3000, "fuzz: %d of 3000 mutants opened", opened);
    free(base);
    free(m);
}

int main(void) {
    if (!vkt_need_fixtures("gpt2-tiny")) return vkt_finish();
    test_gpt2();
    test_seed("seed-transformer-tiny", VKF_DTYPE_F32);
    test_seed("seed-transformer-base", VKF_DTYPE_F16);
    test_config();
    test_synthetic();
    truncation("gpt2-tiny/hf/model.safetensors", 4096);
    truncation("seed-transformer-tiny/model.safetensors", 7400); /* its header is 7.3 KB */
    test_fuzz();
    if (g_tmp[0]) unlink(g_tmp);
    return vkt_finish();
}
