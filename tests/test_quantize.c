/* vkf_model_quantize and the reference quantizers against llama.cpp: every file in
 * fixtures/llama-kq was written by llama.cpp's own llama-quantize (no importance matrix) from the
 * F32 file there, so quantizing that F32 file must give the same file byte for byte (metadata,
 * tensor order, per-tensor types, blocks, padding). Plus the GGUF writer against the reader, and
 * the errors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/quant.h"
#include "io/gguf.h"
#include "io/gguf_write.h"
#include "testutil.h"

/* the file suffix, the type as vkformer quantize takes it, --pure */
static const struct {
    const char *file, *type;
    int pure;
} k_types[] = {{"q4_k_m", "q4_k_m", 0},
               {"q5_k_m", "q5_k_m", 0},
               {"q6_k", "q6_k", 0},
               {"q3_k_m", "q3_k_m", 0},
               {"q2_k", "q2_k", 0},
               {"q4_k_s", "q4_k_s", 0},
               {"q4_1", "q4_1", 0},
               {"q5_0", "q5_0", 0},
               {"q5_1", "q5_1", 0},
               {"iq4_nl", "iq4_nl", 0},
               {"iq4_xs", "iq4_xs", 0},
               /* MXFP4_MOE by llama.cpp's rules (a dense model: every matrix Q8_0) and with
                * --pure (every matrix MXFP4), by llama-quantize's number for it */
               {"mxfp4_moe", "38", 0},
               {"mxfp4", "MXFP4_MOE", 1},
               /* BF16 (llama.cpp: ftype 32; every matrix, the embedding and output too) */
               {"bf16", "bf16", 0}};

static char tmpdir[64];

static void test_llama_kq(void) {
    if (!vkt_need_fixtures("llama-kq")) return;
    char src[1024];
    snprintf(src, sizeof src, "%s", vkt_fixture("llama-kq/llama-kq-f32.gguf"));
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
        char out[256], ref[1024], rel[128];
        const char *name = k_types[i].file;
        snprintf(out, sizeof out, "%s/%s.gguf", tmpdir, name);
        snprintf(rel, sizeof rel, "llama-kq/llama-kq-%s.gguf", name);
        snprintf(ref, sizeof ref, "%s", vkt_fixture(rel));
        vkf_quantize_params qp = {
            .input = src, .output = out, .type = k_types[i].type, .pure = k_types[i].pure};
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
                      "%s: %zu bytes vs llama.cpp's %zu, first difference at byte %zu", name, na,
                      nb, first);
            VKT_CHECK(st.file_bytes == nb, "%s: stats file_bytes %llu", name,
                      (unsigned long long)st.file_bytes);
        }
        /* the README's table: 16 matrices quantized, the 5 norms copied as F32 */
        VKT_CHECK(st.n_tensors == 21 && st.n_quantized == 16 && st.n_by_type[VKF_DTYPE_F32] == 5,
                  "%s: %d tensors, %d quantized", name, st.n_tensors, st.n_quantized);
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
    if (!vkt_need_fixtures("llama-kq")) return;
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
    VKT_CHECK(vkf_quant_row_bytes(VKF_DTYPE_MXFP4, 96) == 51, "MXFP4 row: 3 blocks of 17 bytes");
    VKT_CHECK(vkf_quant_row_bytes(VKF_DTYPE_MXFP4, 48) == 0, "48 is not a multiple of 32");
    VKT_CHECK(vkf_quant_row_bytes(VKF_DTYPE_Q6_K, 896) == 0, "896 is not a multiple of 256");
    VKT_CHECK(vkf_quant_row_bytes(VKF_DTYPE_I32, 32) == 0, "I32 is not a quantization target");
    /* the table is complete: every weight type's row owns a quantizer and llama.cpp's dot */
    for (int t = 0; t < VKF_DTYPE_COUNT; t++) {
        const vkf_wtype *w = vkf_wtype_of((vkf_dtype)t);
        if (!w || !w->weight) continue;
        VKT_CHECK(w->quantize_row && w->act_dot && vkf_quant_supported((vkf_dtype)t),
                  "%s: quantizer and ggml dot in its row", w->name);
    }
}

/* MXFP4 blocks from ggml's rules by hand: e = floor(log2(max |x|)) - 2 + 127, scale 2^(e - 128)
 * on the doubled E2M1 values, each element the first nearest value. */
static void test_mxfp4_blocks(void) {
    float x[32] = {0};
    x[0] = 1.0f;     /* max 1: e = 125, scale 1/8: 1.0 = 8/8, index 6 */
    x[16] = -0.5f;   /* -4/8: index 12 (sign bit 8 + 4) */
    x[1] = 0.0625f;  /* halfway between 0 and 1/8: the first, index 0 */
    x[17] = 0.1875f; /* halfway between 1/8 and 2/8: index 1 */
    x[2] = -100.0f;  /* becomes the max below */
    vkf_block_mxfp4 b;
    vkf_quantize_rows(VKF_DTYPE_MXFP4, x, &b, 1, 32);
    /* max 100: floor(log2 100) = 6, e = 131, scale 2^3: -100 -> -12 * 8 = -96, index 15 */
    VKT_CHECK(b.e == 131 && (b.qs[2] & 15) == 15, "MXFP4 e %u, q %u", b.e, b.qs[2] & 15);
    x[2] = 0.0f;
    vkf_quantize_rows(VKF_DTYPE_MXFP4, x, &b, 1, 32);
    VKT_CHECK(b.e == 125 && b.qs[0] == (6 | 12 << 4) && b.qs[1] == (0 | 1 << 4) && b.qs[3] == 0,
              "MXFP4 e %u, qs %02x %02x", b.e, b.qs[0], b.qs[1]);
    float y[32];
    vkf_dequantize_row(VKF_DTYPE_MXFP4, &b, y, 32);
    VKT_CHECK(y[0] == 1.0f && y[16] == -0.5f && y[17] == 0.125f && y[1] == 0.0f,
              "MXFP4 dequantized %g %g %g", (double)y[0], (double)y[16], (double)y[17]);
    memset(x, 0, sizeof x); /* all zero: e = 0 */
    vkf_quantize_rows(VKF_DTYPE_MXFP4, x, &b, 1, 32);
    VKT_CHECK(b.e == 0 && b.qs[0] == 0, "MXFP4 zeros: e %u", b.e);
    /* max 2^-126: e = -126 - 2 + 127 = -1, which ggml's float -> uint8_t conversion (through a
     * 32-bit integer on x86) wraps to 255 */
    x[5] = 0x1p-126f;
    vkf_quantize_rows(VKF_DTYPE_MXFP4, x, &b, 1, 32);
    VKT_CHECK(b.e == 255, "MXFP4 tiny: e %u", b.e);
    /* E8M0 scales ggml's way: 2^(e - 128), the subnormals for e < 2 */
    VKT_CHECK(vkf_e8m0_to_f32_half(128) == 1.0f && vkf_e8m0_to_f32_half(1) == 0x1p-127f &&
                  vkf_e8m0_to_f32_half(0) == 0x1p-128f && vkf_e8m0_to_f32_half(255) == 0x1p127f,
              "E8M0 halves");
}

/* Every tensor of a and b (by name): same type, shape and bytes. */
static void same_tensors(const char *pa, const char *pb, const char *what) {
    vkf_gguf *a = NULL, *b = NULL;
    VKT_OK(vkf_gguf_open(pa, &a));
    VKT_OK(vkf_gguf_open(pb, &b));
    if (a && b) {
        VKT_CHECK(vkf_gguf_tensor_count(a) == vkf_gguf_tensor_count(b), "%s: %zu vs %zu tensors",
                  what, vkf_gguf_tensor_count(a), vkf_gguf_tensor_count(b));
        int bad = 0;
        for (size_t i = 0; i < vkf_gguf_tensor_count(a); i++) {
            const vkf_gguf_tensor *ta = vkf_gguf_tensor_at(a, i),
                                  *tb = vkf_gguf_find_tensor(b, ta->name);
            if (!tb || ta->ggml_type != tb->ggml_type || ta->nbytes != tb->nbytes ||
                memcmp(ta->ne, tb->ne, sizeof ta->ne) || memcmp(ta->data, tb->data, ta->nbytes)) {
                if (!bad++) fprintf(stderr, "%s: tensor %s differs\n", what, ta->name);
            }
        }
        VKT_CHECK(bad == 0, "%s: %d tensors differ", what, bad);
    }
    vkf_gguf_close(a);
    vkf_gguf_close(b);
}

/* A Hugging Face GPT-2 directory: as F32 it must hold exactly the tensors llama.cpp's converter
 * wrote for the same checkpoint (fixtures/gpt2-tiny: gpt2-tiny-f32.gguf is its output), with the
 * same vocabulary and merges; quantized, exactly the blocks of the converter's file quantized. */
static void test_hf(void) {
    char hf[1024], ref[1024], a[256], b[256];
    snprintf(hf, sizeof hf, "%s", vkt_fixture("gpt2-tiny/hf"));
    snprintf(ref, sizeof ref, "%s", vkt_fixture("gpt2-tiny/gpt2-tiny-f32.gguf"));
    snprintf(a, sizeof a, "%s/hf-f32.gguf", tmpdir);
    vkf_quantize_params qp = {.input = hf, .output = a, .type = "F32"};
    VKT_OK(vkf_model_quantize(&qp, NULL));
    same_tensors(a, ref, "hf F32 vs llama.cpp's converter");
    vkf_gguf *g = NULL, *r = NULL;
    VKT_OK(vkf_gguf_open(a, &g));
    VKT_OK(vkf_gguf_open(ref, &r));
    static const char *const arrays[] = {"tokenizer.ggml.tokens", "tokenizer.ggml.merges",
                                         "tokenizer.ggml.token_type"};
    for (size_t k = 0; g && r && k < 3; k++) {
        const vkf_gguf_value *x = NULL, *y = NULL;
        VKT_OK(vkf_gguf_get_arr(g, arrays[k], -1, &x));
        VKT_OK(vkf_gguf_get_arr(r, arrays[k], -1, &y));
        int same = x && y && x->count == y->count && x->elem_type == y->elem_type;
        for (uint64_t i = 0; same && i < x->count; i++) {
            if (x->elem_type == VKF_GGUF_TYPE_STRING) {
                size_t lx, ly;
                const char *sx = vkf_gguf_arr_str(x, i, &lx), *sy = vkf_gguf_arr_str(y, i, &ly);
                same = lx == ly && !memcmp(sx, sy, lx);
            } else {
                same = vkf_gguf_arr_int(x, i) == vkf_gguf_arr_int(y, i);
            }
        }
        VKT_CHECK(same, "%s as llama.cpp's converter writes it", arrays[k]);
    }
    vkf_gguf_close(g);
    vkf_gguf_close(r);
    snprintf(b, sizeof b, "%s/hf-q4km.gguf", tmpdir);
    qp.output = b;
    qp.type = "Q4_K_M";
    VKT_OK(vkf_model_quantize(&qp, NULL));
    snprintf(a, sizeof a, "%s/gguf-q4km.gguf", tmpdir);
    qp.input = ref;
    qp.output = a;
    VKT_OK(vkf_model_quantize(&qp, NULL));
    same_tensors(b, a, "hf Q4_K_M vs converter's file Q4_K_M");
    remove(a);
    remove(b);
    snprintf(a, sizeof a, "%s/hf-f32.gguf", tmpdir);
    remove(a);
    /* another architecture's directory: refused with its model_type named */
    char dir[256], cfg[300];
    snprintf(dir, sizeof dir, "%s/llamahf", tmpdir);
    mkdir(dir, 0700);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    FILE *f = fopen(cfg, "w");
    if (f) {
        fputs("{\"model_type\": \"mamba\"}", f);
        fclose(f);
    }
    qp.input = dir;
    VKT_CHECK(vkf_model_quantize(&qp, NULL) == VKF_ERROR_UNSUPPORTED &&
                  strstr(vkf_last_error(), "mamba"),
              "unsupported directory: %s", vkf_last_error());
    remove(cfg);
    rmdir(dir);
}

/* Q8_0 and Q4_0 blocks against an independent writer: fixtures/llama-tiny's q8_0 / q4_0 files
 * (written by the fixtures' maintainers from the same F32 weights) hold the same blocks for every
 * tensor both give the same type (all 39 of Q8_0; 38 of Q4_0: output.weight is Q4_0 there and
 * Q6_K under llama-quantize's rules). */
static void test_tiny_blocks(void) {
    char src[1024], ref[1024], out[256];
    snprintf(src, sizeof src, "%s", vkt_fixture("llama-tiny/llama-tiny-f32.gguf"));
    static const char *const types[] = {"q8_0", "q4_0"};
    for (int t = 0; t < 2; t++) {
        char rel[64];
        snprintf(rel, sizeof rel, "llama-tiny/llama-tiny-%s.gguf", types[t]);
        snprintf(ref, sizeof ref, "%s", vkt_fixture(rel));
        snprintf(out, sizeof out, "%s/tiny-%s.gguf", tmpdir, types[t]);
        vkf_quantize_params qp = {.input = src, .output = out, .type = types[t]};
        VKT_OK(vkf_model_quantize(&qp, NULL));
        vkf_gguf *a = NULL, *b = NULL;
        VKT_OK(vkf_gguf_open(out, &a));
        VKT_OK(vkf_gguf_open(ref, &b));
        int bad = 0, n = 0;
        for (size_t i = 0; a && b && i < vkf_gguf_tensor_count(a); i++) {
            const vkf_gguf_tensor *ta = vkf_gguf_tensor_at(a, i),
                                  *tb = vkf_gguf_find_tensor(b, ta->name);
            if (!tb || ta->ggml_type != tb->ggml_type) continue;
            n++;
            bad += ta->nbytes != tb->nbytes || memcmp(ta->data, tb->data, ta->nbytes) != 0;
        }
        VKT_CHECK(bad == 0 && n == (t == 0 ? 39 : 38), "%s: %d of %d tensors differ", types[t], bad,
                  n);
        vkf_gguf_close(a);
        vkf_gguf_close(b);
        remove(out);
    }
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vkt_quantize_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_sizes();
    test_mxfp4_blocks();
    test_writer();
    test_errors();
    test_llama_kq();
    if (vkt_need_fixtures("llama-tiny gpt2-tiny")) {
        test_hf();
        test_tiny_blocks();
    }
    rmdir(tmpdir);
    return vkt_finish();
}
