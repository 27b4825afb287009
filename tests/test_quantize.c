/* vkf_model_quantize and the reference quantizers against llama.cpp: every file in
 * fixtures/llama-kq was written by llama.cpp's own llama-quantize (no importance matrix) from the
 * F32 file there, so quantizing that F32 file must give the same file byte for byte (metadata,
 * tensor order, per-tensor types, blocks, padding). Plus the GGUF writer against the reader, and
 * the errors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/quant.h"
#include "io/gguf.h"
#include "io/gguf_write.h"
#include "testutil.h"

static const char *const k_types[] = {"q4_k_m", "q5_k_m", "q6_k", "q3_k_m", "q2_k",  "q4_k_s",
                                      "q4_1",   "q5_0",   "q5_1", "iq4_nl", "iq4_xs"};

static char tmpdir[64];

static void test_llama_kq(void) {
    if (!vkt_have_fixtures()) {
        fprintf(stderr, "skip llama-kq: no fixtures\n");
        return;
    }
    char src[1024];
    snprintf(src, sizeof src, "%s", vkt_fixture("llama-kq/llama-kq-f32.gguf"));
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
        char out[256], ref[1024], rel[128];
        snprintf(out, sizeof out, "%s/%s.gguf", tmpdir, k_types[i]);
        snprintf(rel, sizeof rel, "llama-kq/llama-kq-%s.gguf", k_types[i]);
        snprintf(ref, sizeof ref, "%s", vkt_fixture(rel));
        vkf_quantize_params qp = {.input = src, .output = out, .type = k_types[i]};
        vkf_quantize_stats st;
        VKT_OK(vkf_model_quantize(&qp, &st));
        size_t na = 0, nb = 0;
        unsigned char *a = vkt_read_file(out, &na), *b = vkt_read_file(ref, &nb);
        VKT_CHECK(a && b, "read %s / %s", out, ref);
        if (a && b) {
            size_t first = 0;
            while (first < na && first < nb && a[first] == b[first])
                first++;
            VKT_CHECK(na == nb && first == na,
                      "%s: %zu bytes vs llama.cpp's %zu, first difference at byte %zu", k_types[i],
                      na, nb, first);
            VKT_CHECK(st.file_bytes == nb, "%s: stats file_bytes %llu", k_types[i],
                      (unsigned long long)st.file_bytes);
        }
        /* the README's table: 16 matrices quantized, the 5 norms copied as F32 */
        VKT_CHECK(st.n_tensors == 21 && st.n_quantized == 16 && st.n_by_type[VKF_DTYPE_F32] == 5,
                  "%s: %d tensors, %d quantized", k_types[i], st.n_tensors, st.n_quantized);
        free(a);
        free(b);
        remove(out);
    }
}

/* Writer -> reader: every metadata type (nested arrays too), a key set twice moves to the end,
 * tensors aligned with their data intact. */
static void test_writer(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/w.gguf", tmpdir);
    static const unsigned char src[] = {
        'G', 'G', 'U', 'F', 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* version 3, 0 tensors */
        3, 0, 0, 0, 0, 0, 0, 0,                                 /* 3 keys */
        /* "a.f" float32 1.5 */
        3, 0, 0, 0, 0, 0, 0, 0, 'a', '.', 'f', 6, 0, 0, 0, 0, 0, 0xc0, 0x3f,
        /* "a.s" array of 2 strings "x", "yz" */
        3, 0, 0, 0, 0, 0, 0, 0, 'a', '.', 's', 9, 0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0,
        0, 0, 0, 0, 0, 0, 'x', 2, 0, 0, 0, 0, 0, 0, 0, 'y', 'z',
        /* "a.n" array of 1 array of 2 int16 {-1, 7} */
        3, 0, 0, 0, 0, 0, 0, 0, 'a', '.', 'n', 9, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0,
        0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 7, 0};
    vkf_gguf *g = NULL;
    VKT_OK(vkf_gguf_open_memory(src, sizeof src, "src", &g));
    if (!g) return;
    vkf_gguf_writer *w = NULL;
    VKT_OK(vkf_gguf_writer_create(&w));
    for (size_t i = 0; i < vkf_gguf_kv_count(g); i++)
        VKT_OK(vkf_gguf_writer_copy_kv(w, vkf_gguf_kv_at(g, i)));
    VKT_OK(vkf_gguf_writer_set_str(w, "a.f", "replaced"));
    VKT_OK(vkf_gguf_writer_set_u32(w, "b.u", 77));
    float t0[3] = {1, 2, 3};
    uint16_t t1[64];
    for (int i = 0; i < 64; i++)
        t1[i] = (uint16_t)(i * 1000);
    int64_t ne0[1] = {3}, ne1[2] = {32, 2};
    VKT_OK(vkf_gguf_writer_add_tensor(w, "t0", 0, 1, ne0, sizeof t0));
    VKT_OK(vkf_gguf_writer_add_tensor(w, "t1", 1, 2, ne1, sizeof t1));
    VKT_OK(vkf_gguf_writer_begin(w, path));
    VKT_CHECK(vkf_gguf_writer_write(w, t0, 4) == VKF_ERROR_INVALID_ARGUMENT,
              "a wrong size is refused");
    VKT_OK(vkf_gguf_writer_write(w, t0, sizeof t0));
    VKT_OK(vkf_gguf_writer_write(w, t1, sizeof t1));
    VKT_OK(vkf_gguf_writer_finish(w));
    vkf_gguf_writer_free(w);
    vkf_gguf_close(g);

    vkf_gguf *r = NULL;
    VKT_OK(vkf_gguf_open(path, &r));
    if (!r) return;
    VKT_CHECK(vkf_gguf_kv_count(r) == 4, "%zu keys", vkf_gguf_kv_count(r));
    const vkf_gguf_kv *k2 = vkf_gguf_kv_at(r, 2), *k3 = vkf_gguf_kv_at(r, 3);
    VKT_CHECK(k2 && !strcmp(k2->key, "a.f") && k2->value.str && !strcmp(k2->value.str, "replaced"),
              "a set key moves to the end");
    VKT_CHECK(k3 && !strcmp(k3->key, "b.u"), "new key last");
    const vkf_gguf_value *a;
    VKT_OK(vkf_gguf_get_arr(r, "a.s", VKF_GGUF_TYPE_STRING, &a));
    size_t len = 0;
    const char *s1 = a ? vkf_gguf_arr_str(a, 1, &len) : NULL;
    VKT_CHECK(a && a->count == 2 && s1 && len == 2 && !memcmp(s1, "yz", 2), "string array copied");
    VKT_OK(vkf_gguf_get_arr(r, "a.n", VKF_GGUF_TYPE_ARRAY, &a));
    const vkf_gguf_value *in = a ? vkf_gguf_arr_elem(a, 0) : NULL;
    VKT_CHECK(in && in->count == 2 && vkf_gguf_arr_int(in, 0) == -1 && vkf_gguf_arr_int(in, 1) == 7,
              "nested array copied");
    uint32_t u = 0;
    VKT_OK(vkf_gguf_get_u32(r, "b.u", 0, &u));
    VKT_CHECK(u == 77, "u32 %u", u);
    const vkf_gguf_tensor *ta = vkf_gguf_find_tensor(r, "t0"), *tb = vkf_gguf_find_tensor(r, "t1");
    VKT_CHECK(ta && tb && tb->offset % 32 == 0 && !memcmp(ta->data, t0, sizeof t0) &&
                  !memcmp(tb->data, t1, sizeof t1),
              "tensor data aligned and intact");
    vkf_gguf_close(r);
    remove(path);
}

static void test_errors(void) {
    char out[256];
    snprintf(out, sizeof out, "%s/e.gguf", tmpdir);
    vkf_quantize_params qp = {.input = "/nonexistent.gguf", .output = out, .type = "Q4_K_M"};
    VKT_CHECK(vkf_model_quantize(&qp, NULL) == VKF_ERROR_IO, "missing input: %s", vkf_last_error());
    VKT_CHECK(strstr(vkf_last_error(), "/nonexistent.gguf") != NULL, "names the file: %s",
              vkf_last_error());
    if (!vkt_have_fixtures()) return;
    char src[1024];
    snprintf(src, sizeof src, "%s", vkt_fixture("llama-kq/llama-kq-f32.gguf"));
    qp.input = src;
    qp.type = "Q7_K";
    VKT_CHECK(vkf_model_quantize(&qp, NULL) == VKF_ERROR_INVALID_ARGUMENT, "unknown type");
    VKT_CHECK(strstr(vkf_last_error(), "Q7_K") && strstr(vkf_last_error(), "Q4_K_M"),
              "names it and the choices: %s", vkf_last_error());
    char q8[1024];
    snprintf(q8, sizeof q8, "%s", vkt_fixture("llama-tiny/llama-tiny-q8_0.gguf"));
    qp.input = q8;
    qp.type = "Q4_0";
    VKT_CHECK(vkf_model_quantize(&qp, NULL) == VKF_ERROR_UNSUPPORTED, "requantizing is refused: %s",
              vkf_last_error());
    VKT_CHECK(access(out, F_OK) != 0 && access("e.gguf.part", F_OK) != 0, "nothing left behind");
    qp.input = src;
    qp.output = "/nonexistent-dir/x.gguf";
    VKT_CHECK(vkf_model_quantize(&qp, NULL) == VKF_ERROR_IO, "unwritable output: %s",
              vkf_last_error());
}

/* Block sizes as ggml defines them (ggml-common.h), independent of the code's tables. */
static void test_sizes(void) {
    VKT_CHECK(vkf_quant_row_bytes(VKF_DTYPE_Q4_K, 512) == 288, "Q4_K row");
    VKT_CHECK(vkf_quant_row_bytes(VKF_DTYPE_Q3_K, 256) == 110, "Q3_K row");
    VKT_CHECK(vkf_quant_row_bytes(VKF_DTYPE_IQ4_NL, 96) == 54, "IQ4_NL row");
    VKT_CHECK(vkf_quant_row_bytes(VKF_DTYPE_Q6_K, 896) == 0, "896 is not a multiple of 256");
    VKT_CHECK(vkf_quant_row_bytes(VKF_DTYPE_I32, 32) == 0, "I32 is not a quantization target");
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vkt_quantize_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_sizes();
    test_writer();
    test_errors();
    test_llama_kq();
    rmdir(tmpdir);
    return vkt_finish();
}
