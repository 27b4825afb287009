/* GGUF reader tests: the fixture files' known metadata and tensor layout (with the quantized
 * files' values checked against the f32 file), every metadata type through a synthetic file
 * built here byte by byte, truncation at every byte of the first 4 KB (and samples beyond),
 * and malformed files (huge lengths, bad offsets, overlaps, bad types, bad alignment), each of
 * which must fail cleanly with a message naming the key or tensor. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/error.h"
#include "io/gguf.h"
#include "testutil.h"

/* ------------------------------------------------------------------ temp files */

static char g_tmp[64];

/* Writes data as the test's temp file. The file is opened once and rewritten in place (no
 * re-creation), which keeps thousands of fuzz iterations fast. */
static const char *write_tmp(const void *data, size_t n) {
    static int fd = -1;
    if (fd < 0) {
        snprintf(g_tmp, sizeof g_tmp, "/tmp/vkf_gguf_XXXXXX");
        fd = mkstemp(g_tmp);
        if (fd < 0) return g_tmp;
    }
    if (ftruncate(fd, (off_t)n) != 0 || (n && pwrite(fd, data, n, 0) != (ssize_t)n))
        fprintf(stderr, "cannot write %s\n", g_tmp);
    return g_tmp;
}

/* ------------------------------------------------------------------ GGUF writer */

typedef struct gbuf {
    uint8_t *p;
    size_t n, cap;
} gbuf;

static void put(gbuf *b, const void *s, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void put_u8(gbuf *b, uint8_t v) { put(b, &v, 1); }
static void put_u32(gbuf *b, uint32_t v) {
    uint8_t x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, 4);
}
static void put_u64(gbuf *b, uint64_t v) {
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, 8);
}
static void put_str(gbuf *b, const char *s) {
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void header(gbuf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    put(b, "GGUF", 4);
    put_u32(b, version);
    put_u64(b, n_tensors);
    put_u64(b, n_kv);
}
static void kv_u32(gbuf *b, const char *k, uint32_t v) {
    put_str(b, k);
    put_u32(b, VKF_GGUF_TYPE_UINT32);
    put_u32(b, v);
}
static void kv_str(gbuf *b, const char *k, const char *v) {
    put_str(b, k);
    put_u32(b, VKF_GGUF_TYPE_STRING);
    put_str(b, v);
}
static void tinfo(gbuf *b, const char *name, uint32_t nd, const uint64_t *ne, uint32_t type,
                  uint64_t off) {
    put_str(b, name);
    put_u32(b, nd);
    for (uint32_t i = 0; i < nd; i++)
        put_u64(b, ne[i]);
    put_u32(b, type);
    put_u64(b, off);
}
static void pad_to(gbuf *b, size_t align) {
    while (b->n % align)
        put_u8(b, 0);
}

/* Opens the bytes as a GGUF; expects status want and, if needle, the message to contain it. */
static void expect_fail(const char *label, gbuf *b, vkf_status want, const char *needle) {
    vkf_gguf *g = NULL;
    vkf_status s = vkf_gguf_open(write_tmp(b->p, b->n), &g);
    VKT_CHECK(s == want && g == NULL, "%s: expected %s, found %s (%s)", label,
              vkf_status_name(want), vkf_status_name(s), vkf_last_error());
    if (needle)
        VKT_CHECK(strstr(vkf_last_error(), needle) != NULL, "%s: message \"%s\" lacks \"%s\"",
                  label, vkf_last_error(), needle);
    vkf_gguf_close(g);
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------ the fixture files */

static void test_llama_file(const char *stem, vkf_dtype wtype) {
    char rel[128];
    snprintf(rel, sizeof rel, "llama-tiny/%s.gguf", stem);
    vkf_gguf *g = NULL;
    VKT_OK(vkf_gguf_open(vkt_fixture(rel), &g));
    if (!g) return;
    VKT_CHECK(vkf_gguf_version(g) == 3 && vkf_gguf_alignment(g) == 32, "%s: version %u align %u",
              stem, vkf_gguf_version(g), vkf_gguf_alignment(g));
    VKT_CHECK(vkf_gguf_architecture(g) && strcmp(vkf_gguf_architecture(g), "llama") == 0,
              "%s: architecture", stem);
    uint32_t u;
    float f;
    const struct {
        const char *key;
        uint32_t want;
    } ints[] = {{"llama.block_count", 4},           {"llama.embedding_length", 256},
                {"llama.attention.head_count", 8},  {"llama.attention.head_count_kv", 4},
                {"llama.context_length", 512},      {"llama.feed_forward_length", 768},
                {"llama.rope.dimension_count", 32}, {"tokenizer.ggml.bos_token_id", 1}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        u = 0;
        VKT_OK(vkf_gguf_require_u32(g, ints[i].key, &u));
        VKT_CHECK(u == ints[i].want, "%s: %s = %u, expected %u", stem, ints[i].key, u,
                  ints[i].want);
    }
    VKT_OK(vkf_gguf_require_f32(g, "llama.rope.freq_base", &f));
    VKT_CHECK(f == 10000.0f, "%s: rope.freq_base %g", stem, f);
    VKT_OK(vkf_gguf_require_f32(g, "llama.attention.layer_norm_rms_epsilon", &f));
    VKT_CHECK(f == 1e-5f, "%s: rms eps %g", stem, f);
    int b = 0;
    VKT_OK(vkf_gguf_require_bool(g, "tokenizer.ggml.add_bos_token", &b));
    VKT_CHECK(b == 1, "%s: add_bos_token", stem);
    const char *s = NULL;
    VKT_OK(vkf_gguf_require_str(g, "tokenizer.ggml.model", &s));
    VKT_CHECK(s && strcmp(s, "llama") == 0, "%s: tokenizer model %s", stem, s ? s : "(null)");
    const vkf_gguf_value *toks = NULL, *scores = NULL;
    VKT_OK(vkf_gguf_require_arr(g, "tokenizer.ggml.tokens", VKF_GGUF_TYPE_STRING, &toks));
    VKT_OK(vkf_gguf_require_arr(g, "tokenizer.ggml.scores", VKF_GGUF_TYPE_FLOAT32, &scores));
    if (toks && scores) {
        size_t l;
        const char *t1 = vkf_gguf_arr_str(toks, 1, &l);
        VKT_CHECK(toks->count == 512 && l == 3 && memcmp(t1, "<s>", 3) == 0, "%s: tokens", stem);
        VKT_CHECK(vkf_gguf_arr_float(scores, 260) == -2.0 && vkf_gguf_arr_float(scores, 0) == 0.0,
                  "%s: scores", stem);
    }
    /* defaults, wrong types and missing keys */
    VKT_OK(vkf_gguf_get_u32(g, "llama.no_such_key", 77, &u));
    VKT_CHECK(u == 77, "%s: default", stem);
    VKT_CHECK(vkf_gguf_require_u32(g, "llama.no_such_key", &u) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "missing key llama.no_such_key"),
              "%s: missing key: %s", stem, vkf_last_error());
    VKT_CHECK(
        vkf_gguf_get_u32(g, "general.architecture", 0, &u) == VKF_ERROR_FORMAT &&
            strstr(vkf_last_error(), "key general.architecture: expected uint32, found string"),
        "%s: wrong type: %s", stem, vkf_last_error());
    VKT_CHECK(vkf_gguf_get_str(g, "llama.block_count", NULL, &s) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "llama.block_count"),
              "%s: wrong type: %s", stem, vkf_last_error());
    VKT_CHECK(vkf_gguf_get_arr(g, "tokenizer.ggml.tokens", VKF_GGUF_TYPE_INT32, &toks) ==
                      VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "expected array of int32, found array of string"),
              "%s: array type: %s", stem, vkf_last_error());

    /* tensors: 4 layers x 9 + token_embd, output_norm, output */
    VKT_CHECK(vkf_gguf_tensor_count(g) == 39, "%s: %zu tensors", stem, vkf_gguf_tensor_count(g));
    for (size_t i = 0; i < vkf_gguf_tensor_count(g); i++) {
        const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
        vkf_dtype want = t->n_dims == 2 ? wtype : VKF_DTYPE_F32;
        VKT_CHECK(t->dtype == want, "%s: %s is %s, expected %s", stem, t->name,
                  vkf_dtype_name(t->dtype), vkf_dtype_name(want));
        VKT_CHECK((t->offset - vkf_gguf_data_offset(g)) % 32 == 0 &&
                      (const uint8_t *)t->data - (const uint8_t *)NULL > 0,
                  "%s: %s alignment", stem, t->name);
        VKT_CHECK(t->nbytes == vkf_dtype_row_bytes(t->dtype, t->cols) * (size_t)t->rows,
                  "%s: %s nbytes", stem, t->name);
    }
    const vkf_gguf_tensor *t = NULL;
    const int64_t ne_embd[2] = {256, 512}, ne_k[2] = {256, 128}, ne_down[2] = {768, 256},
                  ne_norm[1] = {256};
    VKT_OK(vkf_gguf_get_tensor(g, "token_embd.weight", (int)wtype, 2, ne_embd, &t));
    VKT_CHECK(t && t->rows == 512 && t->cols == 256, "%s: token_embd rows/cols", stem);
    VKT_OK(vkf_gguf_get_tensor(g, "blk.3.attn_k.weight", -1, 2, ne_k, &t));
    VKT_CHECK(t && t->rows == 128 && t->cols == 256, "%s: attn_k rows/cols", stem);
    VKT_OK(vkf_gguf_get_tensor(g, "blk.0.ffn_down.weight", -1, 2, ne_down, &t));
    VKT_OK(vkf_gguf_get_tensor(g, "output_norm.weight", VKF_DTYPE_F32, 1, ne_norm, &t));
    VKT_OK(vkf_gguf_get_tensor(g, "output.weight", -1, 2, ne_embd, &t));
    const int64_t ne_norm2[2] = {256, 1};
    VKT_OK(vkf_gguf_get_tensor(g, "output_norm.weight", -1, 2, ne_norm2, &t)); /* trailing 1 */
    /* a transposed expectation names the tensor and both shapes */
    const int64_t ne_wrong[2] = {128, 256};
    VKT_CHECK(vkf_gguf_get_tensor(g, "blk.3.attn_k.weight", -1, 2, ne_wrong, &t) ==
                  VKF_ERROR_FORMAT,
              "%s: wrong shape must fail", stem);
    char want_msg[160];
    snprintf(want_msg, sizeof want_msg,
             "tensor blk.3.attn_k.weight: expected any type ne [128, 256], found %s ne [256, 128]",
             vkf_dtype_name(wtype));
    VKT_CHECK(strstr(vkf_last_error(), want_msg) != NULL, "%s: message: %s", stem,
              vkf_last_error());
    VKT_CHECK(vkf_gguf_get_tensor(g, "blk.9.attn_k.weight", -1, -1, NULL, &t) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "missing tensor blk.9.attn_k.weight"),
              "%s: missing tensor: %s", stem, vkf_last_error());
    if (wtype != VKF_DTYPE_F32) {
        VKT_CHECK(vkf_gguf_get_tensor(g, "token_embd.weight", VKF_DTYPE_F32, 2, ne_embd, &t) ==
                      VKF_ERROR_FORMAT,
                  "%s: wrong dtype must fail", stem);
        VKT_CHECK(strstr(vkf_last_error(), "expected F32") != NULL, "%s: %s", stem,
                  vkf_last_error());
    }
    VKT_CHECK(vkf_gguf_find_tensor(g, "nope") == NULL, "%s: find absent", stem);
    vkf_gguf_close(g);
}

/* The f16 / q8_0 / q4_0 files hold the f32 file's weights rounded: dequantized values must sit
 * within the type's rounding error of the f32 values, which pins data offsets and block order. */
static void test_llama_values(void) {
    vkf_gguf *ref = NULL;
    VKT_OK(vkf_gguf_open(vkt_fixture("llama-tiny/llama-tiny-f32.gguf"), &ref));
    const char *stems[] = {"llama-tiny-f16", "llama-tiny-q8_0", "llama-tiny-q4_0"};
    for (int k = 0; k < 3 && ref; k++) {
        char rel[128];
        snprintf(rel, sizeof rel, "llama-tiny/%s.gguf", stems[k]);
        vkf_gguf *g = NULL;
        VKT_OK(vkf_gguf_open(vkt_fixture(rel), &g));
        if (!g) continue;
        int bad = 0;
        double worst = 0;
        for (size_t i = 0; i < vkf_gguf_tensor_count(g); i++) {
            const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
            const vkf_gguf_tensor *r = vkf_gguf_find_tensor(ref, t->name);
            if (!r || r->n_elems != t->n_elems) {
                bad++;
                continue;
            }
            float *row = malloc((size_t)t->cols * sizeof *row);
            for (int64_t y = 0; y < t->rows; y++) {
                vkf_dequantize_row(
                    t->dtype, (const uint8_t *)t->data + y * vkf_dtype_row_bytes(t->dtype, t->cols),
                    row, t->cols);
                const float *x = (const float *)r->data + y * r->cols;
                for (int64_t c0 = 0; c0 < t->cols; c0 += 32) { /* per 32-block tolerance */
                    int64_t c1 = c0 + 32 < t->cols ? c0 + 32 : t->cols;
                    double amax = 0;
                    for (int64_t c = c0; c < c1; c++)
                        amax = fmax(amax, fabs(x[c]));
                    for (int64_t c = c0; c < c1; c++) {
                        double e = fabs(row[c] - x[c]), tol;
                        if (t->dtype == VKF_DTYPE_F32)
                            tol = 0;
                        else if (t->dtype == VKF_DTYPE_F16)
                            tol = fabs(x[c]) * 4.9e-4 + 6e-8;
                        else if (t->dtype == VKF_DTYPE_Q8_0)
                            tol = amax / 127 * 0.5 + amax * 1e-3;
                        else
                            tol = amax / 8 * 1.0 + amax * 1e-3;
                        if (amax > 0) worst = fmax(worst, e / amax);
                        if (e > tol) bad++;
                    }
                }
            }
            free(row);
        }
        VKT_CHECK(bad == 0, "%s: %d values outside the rounding error of the f32 file", stems[k],
                  bad);
        /* and not trivially: the quantized types must differ somewhere */
        VKT_CHECK(k == 0 || worst > 1e-4, "%s: suspiciously exact (%g)", stems[k], worst);
        vkf_gguf_close(g);
    }
    vkf_gguf_close(ref);
}

static void test_gpt2_file(void) {
    vkf_gguf *g = NULL;
    VKT_OK(vkf_gguf_open(vkt_fixture("gpt2-tiny/gpt2-tiny-f32.gguf"), &g));
    if (!g) return;
    uint32_t u = 0;
    float f = 0;
    VKT_OK(vkf_gguf_require_u32(g, "gpt2.block_count", &u));
    VKT_CHECK(u == 2, "gpt2 block_count %u", u);
    VKT_OK(vkf_gguf_require_u32(g, "gpt2.embedding_length", &u));
    VKT_CHECK(u == 64, "gpt2 embedding_length %u", u);
    VKT_OK(vkf_gguf_require_u32(g, "gpt2.context_length", &u));
    VKT_CHECK(u == 256, "gpt2 context_length %u", u);
    VKT_OK(vkf_gguf_require_f32(g, "gpt2.attention.layer_norm_epsilon", &f));
    VKT_CHECK(f == 1e-5f, "gpt2 eps %g", f);
    VKT_CHECK(vkf_gguf_find(g, "tokenizer.ggml.add_bos_token") == NULL, "gpt2: no add_bos key");
    const vkf_gguf_value *merges = NULL;
    VKT_OK(vkf_gguf_require_arr(g, "tokenizer.ggml.merges", VKF_GGUF_TYPE_STRING, &merges));
    if (merges) {
        size_t l;
        const char *m0 = vkf_gguf_arr_str(merges, 0, &l);
        VKT_CHECK(merges->count == 50000 && l == 4 && memcmp(m0, "\xc4\xa0 t", 4) == 0,
                  "gpt2 merges[0]");
    }
    VKT_CHECK(vkf_gguf_tensor_count(g) == 29, "gpt2: %zu tensors", vkf_gguf_tensor_count(g));
    const vkf_gguf_tensor *t = NULL;
    const int64_t qkv[2] = {64, 192}, emb[2] = {64, 50257};
    VKT_OK(vkf_gguf_get_tensor(g, "blk.1.attn_qkv.weight", VKF_DTYPE_F32, 2, qkv, &t));
    VKT_CHECK(t && t->rows == 192 && t->cols == 64, "gpt2 qkv rows/cols");
    VKT_OK(vkf_gguf_get_tensor(g, "token_embd.weight", VKF_DTYPE_F32, 2, emb, &t));
    VKT_OK(vkf_gguf_get_tensor(g, "output.weight", VKF_DTYPE_F32, 2, emb, &t));
    vkf_gguf_close(g);
}

/* ------------------------------------------------------------------ synthetic: all types */

static void test_all_types(void) {
    gbuf b = {0};
    header(&b, 2, 3, 20);
    kv_str(&b, "general.architecture", "test");
    kv_u32(&b, "general.alignment", 64);
    put_str(&b, "u8"), put_u32(&b, VKF_GGUF_TYPE_UINT8), put_u8(&b, 200);
    put_str(&b, "i8"), put_u32(&b, VKF_GGUF_TYPE_INT8), put_u8(&b, (uint8_t)-5);
    put_str(&b, "u16"), put_u32(&b, VKF_GGUF_TYPE_UINT16), put_u8(&b, 0x60), put_u8(&b, 0xEA);
    put_str(&b, "i16"), put_u32(&b, VKF_GGUF_TYPE_INT16), put_u8(&b, 0xD0), put_u8(&b, 0x8A);
    put_str(&b, "u32"), put_u32(&b, VKF_GGUF_TYPE_UINT32), put_u32(&b, 4000000000u);
    put_str(&b, "i32"), put_u32(&b, VKF_GGUF_TYPE_INT32), put_u32(&b, (uint32_t)-2000000000);
    float f15 = 1.5f;
    uint32_t fb;
    memcpy(&fb, &f15, 4);
    put_str(&b, "f32"), put_u32(&b, VKF_GGUF_TYPE_FLOAT32), put_u32(&b, fb);
    put_str(&b, "bool"), put_u32(&b, VKF_GGUF_TYPE_BOOL), put_u8(&b, 1);
    put_str(&b, "u64"), put_u32(&b, VKF_GGUF_TYPE_UINT64), put_u64(&b, (1ull << 40) + 3);
    put_str(&b, "i64"), put_u32(&b, VKF_GGUF_TYPE_INT64), put_u64(&b, (uint64_t) - (1ll << 40));
    double d01 = 0.1;
    uint64_t db;
    memcpy(&db, &d01, 8);
    put_str(&b, "f64"), put_u32(&b, VKF_GGUF_TYPE_FLOAT64), put_u64(&b, db);
    kv_str(&b, "str", "hello");
    put_str(&b, "arr.i32"), put_u32(&b, VKF_GGUF_TYPE_ARRAY), put_u32(&b, VKF_GGUF_TYPE_INT32);
    put_u64(&b, 3), put_u32(&b, 1), put_u32(&b, (uint32_t)-2), put_u32(&b, 3);
    put_str(&b, "arr.str"), put_u32(&b, VKF_GGUF_TYPE_ARRAY), put_u32(&b, VKF_GGUF_TYPE_STRING);
    put_u64(&b, 3), put_str(&b, "a"), put_str(&b, "bc"), put_str(&b, "");
    /* [[1, 2], [3]] as uint8 inside */
    put_str(&b, "arr.nested"), put_u32(&b, VKF_GGUF_TYPE_ARRAY), put_u32(&b, VKF_GGUF_TYPE_ARRAY);
    put_u64(&b, 2);
    put_u32(&b, VKF_GGUF_TYPE_UINT8), put_u64(&b, 2), put_u8(&b, 1), put_u8(&b, 2);
    put_u32(&b, VKF_GGUF_TYPE_UINT8), put_u64(&b, 1), put_u8(&b, 3);
    put_str(&b, "arr.f32"), put_u32(&b, VKF_GGUF_TYPE_ARRAY), put_u32(&b, VKF_GGUF_TYPE_FLOAT32);
    put_u64(&b, 2), put_u32(&b, 0x3F000000u), put_u32(&b, 0x40000000u); /* 0.5, 2 */
    put_str(&b, "arr.bool"), put_u32(&b, VKF_GGUF_TYPE_ARRAY), put_u32(&b, VKF_GGUF_TYPE_BOOL);
    put_u64(&b, 2), put_u8(&b, 0), put_u8(&b, 1);
    put_str(&b, "arr.empty"), put_u32(&b, VKF_GGUF_TYPE_ARRAY), put_u32(&b, VKF_GGUF_TYPE_STRING);
    put_u64(&b, 0);
    /* tensors: a F32 ne [4, 3] @0, b Q8_0 ne [32, 2] @64, c BF16 ne [8] @192 */
    const uint64_t ne_a[2] = {4, 3}, ne_b[2] = {32, 2}, ne_c[1] = {8};
    tinfo(&b, "a", 2, ne_a, 0, 0);
    tinfo(&b, "b", 2, ne_b, 8, 64);
    tinfo(&b, "c", 1, ne_c, 30, 192);
    pad_to(&b, 64);
    size_t data_start = b.n;
    for (int i = 0; i < 256; i++)
        put_u8(&b, (uint8_t)i);
    vkf_gguf *g = NULL;
    VKT_OK(vkf_gguf_open(write_tmp(b.p, b.n), &g));
    free(b.p);
    if (!g) return;
    VKT_CHECK(vkf_gguf_version(g) == 2 && vkf_gguf_alignment(g) == 64 &&
                  vkf_gguf_data_offset(g) == data_start && vkf_gguf_kv_count(g) == 20,
              "synthetic: version %u align %u data %llu", vkf_gguf_version(g),
              vkf_gguf_alignment(g), (unsigned long long)vkf_gguf_data_offset(g));
    VKT_CHECK(strcmp(vkf_gguf_kv_at(g, 2)->key, "u8") == 0, "kv order");
    uint32_t u32 = 0;
    int32_t i32 = 0;
    uint64_t u64 = 0;
    int64_t i64 = 0;
    float f = 0;
    double d = 0;
    int bo = 0;
    const char *s = NULL;
    VKT_OK(vkf_gguf_require_u32(g, "u8", &u32));
    VKT_CHECK(u32 == 200, "u8 %u", u32);
    VKT_OK(vkf_gguf_require_i64(g, "i8", &i64));
    VKT_CHECK(i64 == -5, "i8 %lld", (long long)i64);
    VKT_OK(vkf_gguf_require_u32(g, "u16", &u32));
    VKT_CHECK(u32 == 60000, "u16 %u", u32);
    VKT_OK(vkf_gguf_require_i32(g, "i16", &i32));
    VKT_CHECK(i32 == -30000, "i16 %d", i32);
    VKT_OK(vkf_gguf_require_u32(g, "u32", &u32));
    VKT_CHECK(u32 == 4000000000u, "u32 %u", u32);
    VKT_OK(vkf_gguf_require_i32(g, "i32", &i32));
    VKT_CHECK(i32 == -2000000000, "i32 %d", i32);
    VKT_OK(vkf_gguf_require_f32(g, "f32", &f));
    VKT_CHECK(f == 1.5f, "f32 %g", f);
    VKT_OK(vkf_gguf_require_bool(g, "bool", &bo));
    VKT_CHECK(bo == 1, "bool");
    VKT_OK(vkf_gguf_require_u64(g, "u64", &u64));
    VKT_CHECK(u64 == (1ull << 40) + 3, "u64");
    VKT_OK(vkf_gguf_require_i64(g, "i64", &i64));
    VKT_CHECK(i64 == -(1ll << 40), "i64");
    VKT_OK(vkf_gguf_require_f64(g, "f64", &d));
    VKT_CHECK(d == 0.1, "f64 %.17g", d);
    VKT_OK(vkf_gguf_require_f32(g, "u16", &f)); /* integers read as floats */
    VKT_CHECK(f == 60000.0f, "u16 as f32");
    VKT_OK(vkf_gguf_require_str(g, "str", &s));
    VKT_CHECK(s && strcmp(s, "hello") == 0, "str");
    /* range errors name the key */
    VKT_CHECK(
        vkf_gguf_require_i32(g, "u32", &i32) == VKF_ERROR_FORMAT &&
            strstr(vkf_last_error(), "key u32: expected int32, found 4000000000 (out of range)"),
        "range: %s", vkf_last_error());
    VKT_CHECK(vkf_gguf_require_u32(g, "i8", &u32) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "found -5"),
              "negative: %s", vkf_last_error());
    VKT_CHECK(vkf_gguf_require_u32(g, "u64", &u32) == VKF_ERROR_FORMAT, "u64 into u32");
    VKT_CHECK(vkf_gguf_require_bool(g, "u8", &bo) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "key u8: expected bool, found uint8"),
              "bool: %s", vkf_last_error());
    VKT_CHECK(vkf_gguf_require_f32(g, "str", &f) == VKF_ERROR_FORMAT, "str as f32");
    VKT_CHECK(vkf_gguf_require_u32(g, "arr.i32", &u32) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "found array of int32"),
              "array as u32: %s", vkf_last_error());
    const vkf_gguf_value *a = NULL;
    VKT_OK(vkf_gguf_require_arr(g, "arr.i32", VKF_GGUF_TYPE_INT32, &a));
    VKT_CHECK(a && a->count == 3 && vkf_gguf_arr_int(a, 0) == 1 && vkf_gguf_arr_int(a, 1) == -2 &&
                  vkf_gguf_arr_int(a, 2) == 3 && vkf_gguf_arr_int(a, 3) == 0 &&
                  vkf_gguf_arr_float(a, 1) == -2.0,
              "arr.i32");
    VKT_OK(vkf_gguf_require_arr(g, "arr.str", VKF_GGUF_TYPE_STRING, &a));
    size_t l = 9;
    VKT_CHECK(a && a->count == 3 && memcmp(vkf_gguf_arr_str(a, 1, &l), "bc", 2) == 0 && l == 2,
              "arr.str");
    VKT_CHECK(a && vkf_gguf_arr_str(a, 2, &l) && l == 0 && vkf_gguf_arr_str(a, 3, &l) == NULL,
              "arr.str empty / out of range");
    VKT_OK(vkf_gguf_require_arr(g, "arr.nested", VKF_GGUF_TYPE_ARRAY, &a));
    const vkf_gguf_value *e0 = a ? vkf_gguf_arr_elem(a, 0) : NULL,
                         *e1 = a ? vkf_gguf_arr_elem(a, 1) : NULL;
    VKT_CHECK(e0 && e1 && e0->count == 2 && e1->count == 1 && vkf_gguf_arr_int(e0, 1) == 2 &&
                  vkf_gguf_arr_int(e1, 0) == 3 && e0->elem_type == VKF_GGUF_TYPE_UINT8,
              "nested array");
    VKT_OK(vkf_gguf_require_arr(g, "arr.f32", -1, &a));
    VKT_CHECK(a && vkf_gguf_arr_float(a, 0) == 0.5 && vkf_gguf_arr_float(a, 1) == 2.0, "arr.f32");
    VKT_OK(vkf_gguf_require_arr(g, "arr.bool", VKF_GGUF_TYPE_BOOL, &a));
    VKT_CHECK(a && vkf_gguf_arr_int(a, 0) == 0 && vkf_gguf_arr_int(a, 1) == 1, "arr.bool");
    VKT_OK(vkf_gguf_require_arr(g, "arr.empty", VKF_GGUF_TYPE_STRING, &a));
    VKT_CHECK(a && a->count == 0, "arr.empty");
    VKT_OK(vkf_gguf_get_arr(g, "arr.none", -1, &a));
    VKT_CHECK(a == NULL, "absent array gives NULL");
    /* tensors point at the bytes written after the aligned data start */
    const vkf_gguf_tensor *ta = vkf_gguf_find_tensor(g, "a"), *tb = vkf_gguf_find_tensor(g, "b"),
                          *tc = vkf_gguf_find_tensor(g, "c");
    VKT_CHECK(ta && ta->dtype == VKF_DTYPE_F32 && ta->nbytes == 48 &&
                  ((const uint8_t *)ta->data)[5] == 5 && ta->rows == 3 && ta->cols == 4,
              "tensor a");
    VKT_CHECK(tb && tb->dtype == VKF_DTYPE_Q8_0 && tb->nbytes == 68 &&
                  ((const uint8_t *)tb->data)[0] == 64 && tb->offset == data_start + 64,
              "tensor b");
    VKT_CHECK(tc && tc->dtype == VKF_DTYPE_BF16 && tc->nbytes == 16 && tc->n_dims == 1 &&
                  ((const uint8_t *)tc->data)[0] == 192 && tc->ggml_type == 30,
              "tensor c");
    vkf_gguf_close(g);
}

/* ------------------------------------------------------------------ synthetic: malformed */

/* A valid minimal file: one kv, tensors "x" F32 ne [8] @0 and "y" F32 ne [8] @32. */
static void minimal(gbuf *b, uint32_t type_y, uint64_t off_y, uint64_t ne_y0) {
    header(b, 3, 2, 1);
    kv_str(b, "general.architecture", "t");
    const uint64_t ne[1] = {8}, ney[1] = {ne_y0};
    tinfo(b, "x", 1, ne, 0, 0);
    tinfo(b, "y.weight", 1, ney, type_y, off_y);
    pad_to(b, 32);
    for (int i = 0; i < 64; i++)
        put_u8(b, (uint8_t)i);
}

static void test_malformed(void) {
    gbuf b = {0};
    minimal(&b, 0, 32, 8);
    vkf_gguf *g = NULL;
    VKT_OK(vkf_gguf_open(write_tmp(b.p, b.n), &g)); /* the base case is valid */
    vkf_gguf_close(g);
    free(b.p);
    memset(&b, 0, sizeof b);

    put(&b, "GGUG", 4), put_u32(&b, 3), put_u64(&b, 0), put_u64(&b, 0);
    expect_fail("bad magic", &b, VKF_ERROR_FORMAT, "magic");
    header(&b, 1, 0, 0);
    expect_fail("version 1", &b, VKF_ERROR_UNSUPPORTED, "version 1");
    header(&b, 4, 0, 0);
    expect_fail("version 4", &b, VKF_ERROR_UNSUPPORTED, "version 4");
    put(&b, "GGUF", 4), put_u32(&b, 0x03000000u), put_u64(&b, 0), put_u64(&b, 0);
    expect_fail("big-endian", &b, VKF_ERROR_UNSUPPORTED, "big-endian");
    header(&b, 3, 0, 1ull << 60);
    expect_fail("huge kv count", &b, VKF_ERROR_FORMAT, "metadata entries");
    header(&b, 3, 1ull << 60, 0);
    expect_fail("huge tensor count", &b, VKF_ERROR_FORMAT, "tensor infos");

    /* huge lengths are rejected before allocating */
    header(&b, 3, 0, 1);
    put_u64(&b, 1ull << 62), put(&b, "abc", 3);
    for (int i = 0; i < 64; i++)
        put_u8(&b, 'x'); /* enough bytes for one entry */
    expect_fail("huge key length", &b, VKF_ERROR_FORMAT, "key #0");
    header(&b, 3, 0, 1);
    put_str(&b, "tokenizer.ggml.tokens"), put_u32(&b, VKF_GGUF_TYPE_STRING),
        put_u64(&b, 1ull << 62);
    expect_fail("huge string length", &b, VKF_ERROR_FORMAT, "key tokenizer.ggml.tokens");
    header(&b, 3, 0, 1);
    put_str(&b, "tokenizer.ggml.tokens"), put_u32(&b, VKF_GGUF_TYPE_ARRAY);
    put_u32(&b, VKF_GGUF_TYPE_STRING), put_u64(&b, 1ull << 61);
    expect_fail("huge array count", &b, VKF_ERROR_FORMAT, "key tokenizer.ggml.tokens");
    header(&b, 3, 0, 1);
    put_str(&b, "tokenizer.ggml.scores"), put_u32(&b, VKF_GGUF_TYPE_ARRAY);
    put_u32(&b, VKF_GGUF_TYPE_FLOAT32), put_u64(&b, 0x4000000000000001ull); /* x4 wraps */
    expect_fail("wrapping array count", &b, VKF_ERROR_FORMAT, "tokenizer.ggml.scores");
    header(&b, 3, 0, 1);
    put_str(&b, "k"), put_u32(&b, 13), put_u32(&b, 0);
    expect_fail("bad value type", &b, VKF_ERROR_FORMAT, "key k: invalid value type 13");
    header(&b, 3, 0, 1);
    put_str(&b, "k"), put_u32(&b, VKF_GGUF_TYPE_ARRAY), put_u32(&b, 99), put_u64(&b, 0);
    expect_fail("bad element type", &b, VKF_ERROR_FORMAT, "key k");
    header(&b, 3, 0, 1);
    put_str(&b, "deep"), put_u32(&b, VKF_GGUF_TYPE_ARRAY);
    for (int i = 0; i < 12; i++)
        put_u32(&b, VKF_GGUF_TYPE_ARRAY), put_u64(&b, 1);
    put_u32(&b, VKF_GGUF_TYPE_UINT8), put_u64(&b, 0);
    expect_fail("deep nesting", &b, VKF_ERROR_FORMAT, "key deep");
    header(&b, 3, 0, 2);
    kv_u32(&b, "dup", 1), kv_u32(&b, "dup", 2);
    expect_fail("duplicate key", &b, VKF_ERROR_FORMAT, "duplicate key dup");
    header(&b, 3, 0, 1);
    kv_str(&b, "general.alignment", "32");
    expect_fail("alignment type", &b, VKF_ERROR_FORMAT, "general.alignment: expected uint32");
    header(&b, 3, 0, 1);
    kv_u32(&b, "general.alignment", 48);
    expect_fail("alignment not a power of two", &b, VKF_ERROR_FORMAT,
                "general.alignment: 48 is not a power of two");
    header(&b, 3, 0, 1);
    kv_u32(&b, "general.alignment", 0);
    expect_fail("alignment zero", &b, VKF_ERROR_FORMAT, "general.alignment");

    /* tensor infos */
    minimal(&b, 16, 32, 256); /* IQ2_XXS: not a type vkformer reads */
    expect_fail("unsupported type", &b, VKF_ERROR_UNSUPPORTED,
                "tensor y.weight: ggml type 16 (IQ2_XXS)");
    minimal(&b, 77, 32, 8);
    expect_fail("unknown type", &b, VKF_ERROR_UNSUPPORTED, "tensor y.weight: ggml type 77");
    minimal(&b, 0, 36, 8);
    expect_fail("misaligned offset", &b, VKF_ERROR_FORMAT,
                "tensor y.weight: offset 36 is not a multiple of the alignment 32");
    minimal(&b, 0, 64, 8);
    expect_fail("offset past the end", &b, VKF_ERROR_FORMAT, "tensor y.weight: data");
    minimal(&b, 0, 0, 8);
    expect_fail("overlap", &b, VKF_ERROR_FORMAT, "overlap");
    minimal(&b, 0, 32, 16); /* y runs 32..96, file data ends at 64 */
    expect_fail("size past the end", &b, VKF_ERROR_FORMAT, "y.weight");
    minimal(&b, 8, 32, 33);
    expect_fail("q8_0 row not a multiple of 32", &b, VKF_ERROR_FORMAT,
                "tensor y.weight: Q8_0 rows need ne[0] to be a multiple of 32");
    /* MXFP4 (ggml type 39): 17-byte blocks of 32. A writer that took them for 16 bytes puts two
     * blocks (34 bytes here) in the 32 the file has; a row of 48 is no whole number of blocks */
    minimal(&b, 39, 32, 64);
    {
        vkf_gguf *mg = NULL;
        VKT_CHECK(vkf_gguf_open(write_tmp(b.p, b.n), &mg) == VKF_ERROR_FORMAT &&
                      strstr(vkf_last_error(), "tensor y.weight: data [32, +34) extends past") &&
                      strstr(vkf_last_error(), "MXFP4: blocks of 32 elements in 17 bytes"),
                  "mxfp4 blocks of the wrong size: %s", vkf_last_error());
        vkf_gguf_close(mg);
        free(b.p);
        memset(&b, 0, sizeof b);
    }
    minimal(&b, 39, 32, 48);
    expect_fail("mxfp4 row not a multiple of 32", &b, VKF_ERROR_FORMAT,
                "tensor y.weight: MXFP4 rows need ne[0] to be a multiple of 32");
    minimal(&b, 39, 32, 32); /* one block fits */
    {
        vkf_gguf *mg = NULL;
        VKT_OK(vkf_gguf_open(write_tmp(b.p, b.n), &mg));
        const vkf_gguf_tensor *y = mg ? vkf_gguf_find_tensor(mg, "y.weight") : NULL;
        VKT_CHECK(y && y->dtype == VKF_DTYPE_MXFP4 && y->nbytes == 17, "one MXFP4 block: %s",
                  y ? vkf_dtype_name(y->dtype) : "missing");
        vkf_gguf_close(mg);
        free(b.p);
        memset(&b, 0, sizeof b);
    }
    minimal(&b, 0, 32, 0);
    expect_fail("zero dim", &b, VKF_ERROR_FORMAT, "tensor y.weight: ne[0] = 0");
    minimal(&b, 0, 1ull << 63, 8);
    expect_fail("offset overflow", &b, VKF_ERROR_FORMAT, "tensor y.weight");
    header(&b, 3, 1, 0);
    {
        const uint64_t ne[5] = {1, 1, 1, 1, 1};
        tinfo(&b, "five", 5, ne, 0, 0);
    }
    expect_fail("5 dims", &b, VKF_ERROR_FORMAT, "tensor five: n_dims 5");
    header(&b, 3, 1, 0);
    {
        const uint64_t ne[2] = {1ull << 40, 1ull << 40};
        tinfo(&b, "big", 2, ne, 0, 0);
    }
    expect_fail("element overflow", &b, VKF_ERROR_FORMAT, "tensor big");
    header(&b, 3, 1, 0);
    put_u64(&b, 100000), put(&b, "x", 1);
    for (int i = 0; i < 64; i++)
        put_u8(&b, 'x');
    expect_fail("huge name", &b, VKF_ERROR_FORMAT, "tensor info #0");
    header(&b, 3, 2, 0);
    {
        const uint64_t ne[1] = {8};
        tinfo(&b, "same", 1, ne, 0, 0);
        tinfo(&b, "same", 1, ne, 0, 32);
        pad_to(&b, 32);
        for (int i = 0; i < 64; i++)
            put_u8(&b, 0);
    }
    expect_fail("duplicate tensor", &b, VKF_ERROR_FORMAT, "duplicate tensor same");
    header(&b, 3, 0, 0);
    {
        vkf_gguf *e = NULL;
        VKT_OK(vkf_gguf_open(write_tmp(b.p, b.n), &e)); /* empty but valid */
        VKT_CHECK(e && vkf_gguf_tensor_count(e) == 0 && vkf_gguf_kv_count(e) == 0, "empty gguf");
        vkf_gguf_close(e);
        free(b.p);
        memset(&b, 0, sizeof b);
    }
    vkf_gguf *e = NULL;
    vkf_status s = vkf_gguf_open("/nonexistent/x.gguf", &e);
    VKT_CHECK(s == VKF_ERROR_IO && strstr(vkf_last_error(), "/nonexistent/x.gguf"),
              "missing file: %s", vkf_last_error());
}

/* ------------------------------------------------------------------ truncation and fuzzing */

static void test_truncation(void) {
    size_t n = 0;
    uint8_t *file = vkt_read_file(vkt_fixture("llama-tiny/llama-tiny-q4_0.gguf"), &n);
    VKT_CHECK(file != NULL, "cannot read the q4_0 fixture");
    if (!file) return;
    /* every byte of the first 4 KB, every 7th byte through the metadata and tensor infos
     * (13.5 KB), then 48 cuts through the tensor data; the last tensor ends at the last byte,
     * so every cut must fail. The copy is written once and cut shorter and shorter. */
    size_t *cuts = malloc(8000 * sizeof *cuts), n_cuts = 0;
    for (size_t cut = 0; cut < n && n_cuts < 8000; cut += cut < 4096 ? 1 : cut < 14000 ? 7 : n / 48)
        cuts[n_cuts++] = cut;
    const char *path = write_tmp(file, n);
    vkf_gguf *g = NULL;
    VKT_OK(vkf_gguf_open(path, &g)); /* the untruncated copy opens */
    vkf_gguf_close(g);
    int wrong = 0;
    for (size_t i = n_cuts; i-- > 0;) {
        if (truncate(path, (off_t)cuts[i]) != 0) {
            wrong++;
            continue;
        }
        g = NULL;
        vkf_status s = vkf_gguf_open(path, &g);
        if (s != VKF_ERROR_FORMAT || g) {
            if (wrong++ < 5)
                fprintf(stderr, "cut at %zu: %s %s\n", cuts[i], vkf_status_name(s),
                        vkf_last_error());
            vkf_gguf_close(g);
        }
    }
    VKT_CHECK(wrong == 0, "%d of %zu truncated files did not fail with VKF_ERROR_FORMAT", wrong,
              n_cuts);
    free(cuts);
    free(file);
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}

/* Random byte mutations of a small valid file: whatever open() says, it must not crash, and
 * whatever it accepts must be readable end to end (run under ASan to see it). */
static void test_fuzz(void) {
    gbuf b = {0};
    header(&b, 3, 2, 4);
    kv_str(&b, "general.architecture", "fuzz");
    kv_u32(&b, "general.alignment", 32);
    put_str(&b, "arr"), put_u32(&b, VKF_GGUF_TYPE_ARRAY), put_u32(&b, VKF_GGUF_TYPE_STRING);
    put_u64(&b, 2), put_str(&b, "xy"), put_str(&b, "z");
    put_str(&b, "nest"), put_u32(&b, VKF_GGUF_TYPE_ARRAY), put_u32(&b, VKF_GGUF_TYPE_ARRAY);
    put_u64(&b, 1), put_u32(&b, VKF_GGUF_TYPE_INT16), put_u64(&b, 2), put_u32(&b, 0x00020001);
    const uint64_t ne[2] = {32, 2};
    tinfo(&b, "q", 2, ne, 8, 0);
    tinfo(&b, "f", 2, ne, 1, 96);
    pad_to(&b, 32);
    for (int i = 0; i < 96 + 128; i++)
        put_u8(&b, (uint8_t)rnd());
    uint8_t *m = malloc(b.n);
    int opened = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(m, b.p, b.n);
        int k = 1 + (int)(rnd() % 4);
        for (int j = 0; j < k; j++) {
            size_t at = rnd() % 200; /* mostly the header region */
            if (at < b.n)
                m[at] = (rnd() & 1) ? (uint8_t)rnd() : (uint8_t)(m[at] ^ (1u << (rnd() % 8)));
        }
        vkf_gguf *g = NULL;
        if (vkf_gguf_open(write_tmp(m, b.n), &g) != VKF_OK) continue;
        opened++;
        unsigned sum = 0;
        for (size_t i = 0; i < vkf_gguf_tensor_count(g); i++) {
            const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
            for (size_t x = 0; x < t->nbytes; x++)
                sum += ((const uint8_t *)t->data)[x];
        }
        for (size_t i = 0; i < vkf_gguf_kv_count(g); i++) {
            const vkf_gguf_value *v = &vkf_gguf_kv_at(g, i)->value;
            for (uint64_t x = 0; v->type == VKF_GGUF_TYPE_ARRAY && x < v->count; x++) {
                size_t l;
                const char *s = vkf_gguf_arr_str(v, x, &l);
                for (size_t c = 0; s && c < l; c++)
                    sum += (uint8_t)s[c];
                sum += (unsigned)vkf_gguf_arr_int(v, x);
            }
        }
        (void)sum;
        vkf_gguf_close(g);
    }
    VKT_CHECK(opened > 0 && opened < 3000, "fuzz: %d of 3000 mutants opened", opened);
    free(m);
    free(b.p);
}

int main(void) {
    if (!vkt_need_fixtures("llama-tiny gpt2-tiny")) return vkt_finish();
    test_llama_file("llama-tiny-f32", VKF_DTYPE_F32);
    test_llama_file("llama-tiny-f16", VKF_DTYPE_F16);
    test_llama_file("llama-tiny-q8_0", VKF_DTYPE_Q8_0);
    test_llama_file("llama-tiny-q4_0", VKF_DTYPE_Q4_0);
    test_llama_values();
    test_gpt2_file();
    test_all_types();
    test_malformed();
    test_truncation();
    test_fuzz();
    if (g_tmp[0]) unlink(g_tmp);
    return vkt_finish();
}
