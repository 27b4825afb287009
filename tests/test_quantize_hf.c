/* `vkformer quantize` from Hugging Face llama-family directories (tests/data/arch-hf, written
 * from the fixtures/arch GGUFs by tools/gguf_to_hf.py: the same weights in HF's layout, q/k rows
 * un-permuted for llama, Gemma norms stored as w - 1, rope scaling in config.json, qwen2 and
 * gemma3 sharded). For each architecture:
 * - Q8_0 and Q4_K_M from the HF directory give the same tensors (names, types, shapes, bytes)
 *   as from the original GGUF (the independent reference: written by llama.cpp's gguf-py);
 * - the F32 path gives every {arch}.* key of the fixture with its value, and the fixture's
 *   logits on the CPU reference.
 * Not compared there: tokenizer.* keys other than bos/eos (the HF directories have no
 * tokenizer.json; the converter writes no tokenizer then) and general.name. The tokenizer
 * conversion is checked on its own: the real Llama-3 tokenizer.json (tests/data/tokenizers/
 * real_llama3) gives the tokenizer.* arrays of llama.cpp's own ggml-vocab-llama-bpe.gguf
 * (fixtures/real-vocab, written by its converter from that tokenizer). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/gguf.h"
#include "io/gguf_write.h"
#include "quantize/quantize.h"
#include "testutil.h"
#include "vkformer.h"

#define HF_DIR VKF_SOURCE_DIR "/tests/data/arch-hf"

static const int32_t toks[] = {1, 45, 300, 17, 222, 90, 8, 411, 3, 77, 128, 500};
#define N_TOK ((int)(sizeof toks / sizeof toks[0]))

static char tmpdir[64];

/* Gemma's norm weights went through w - 1 (gguf_to_hf.py) and + 1 (the converter) in f32:
 * each rounding is at most half an ulp of a value near 1 (2^-24 relative), so a norm weight may
 * differ from the fixture's by 2 ulps; every other tensor must be byte-identical. */
static int same_f32(const vkf_gguf_tensor *a, const vkf_gguf_tensor *b, int norm_tol) {
    if (!memcmp(a->data, b->data, a->nbytes)) return 1;
    if (!norm_tol || a->dtype != VKF_DTYPE_F32 || !strstr(a->name, "norm")) return 0;
    for (int64_t i = 0; i < a->n_elems; i++) {
        float x, y;
        memcpy(&x, (const char *)a->data + 4 * i, 4);
        memcpy(&y, (const char *)b->data + 4 * i, 4);
        if (fabsf(x - y) > 2.0f * 1.2e-7f * fmaxf(fabsf(x), 1.0f)) return 0;
    }
    return 1;
}

static void compare_tensors(const char *what, const char *pa, const char *pb, int norm_tol) {
    vkf_gguf *a = NULL, *b = NULL;
    VKT_OK(vkf_gguf_open(pa, &a));
    VKT_OK(vkf_gguf_open(pb, &b));
    if (!a || !b) goto done;
    size_t n = vkf_gguf_tensor_count(a);
    VKT_CHECK(n == vkf_gguf_tensor_count(b), "%s: %zu tensors from GGUF, %zu from HF", what, n,
              vkf_gguf_tensor_count(b));
    int bad = 0;
    for (size_t i = 0; i < n && i < vkf_gguf_tensor_count(b); i++) {
        const vkf_gguf_tensor *x = vkf_gguf_tensor_at(a, i), *y = vkf_gguf_tensor_at(b, i);
        int ok = !strcmp(x->name, y->name) && x->dtype == y->dtype && x->n_dims == y->n_dims &&
                 !memcmp(x->ne, y->ne, sizeof x->ne) && x->nbytes == y->nbytes &&
                 same_f32(x, y, norm_tol);
        if (!ok && bad++ < 3)
            VKT_CHECK(0, "%s: tensor %zu: GGUF %s %s [%lld, %lld], HF %s %s [%lld, %lld]%s", what,
                      i, x->name, vkf_dtype_name(x->dtype), (long long)x->ne[0],
                      (long long)x->ne[1], y->name, vkf_dtype_name(y->dtype), (long long)y->ne[0],
                      (long long)y->ne[1], x->nbytes == y->nbytes ? " (data differ)" : "");
    }
    VKT_CHECK(bad == 0, "%s: %d tensors differ", what, bad);
done:
    vkf_gguf_close(a);
    vkf_gguf_close(b);
}

static size_t scalar_bytes(vkf_gguf_type t) {
    switch (t) {
    case VKF_GGUF_TYPE_UINT8:
    case VKF_GGUF_TYPE_INT8:
    case VKF_GGUF_TYPE_BOOL: return 1;
    case VKF_GGUF_TYPE_UINT16:
    case VKF_GGUF_TYPE_INT16: return 2;
    case VKF_GGUF_TYPE_UINT64:
    case VKF_GGUF_TYPE_INT64:
    case VKF_GGUF_TYPE_FLOAT64: return 8;
    default: return 4;
    }
}

/* Every {arch}.* key of the fixture, with the same type and value, in the converted file. */
static void compare_keys(const char *what, const char *fixture, const char *conv) {
    vkf_gguf *a = NULL, *b = NULL;
    VKT_OK(vkf_gguf_open(fixture, &a));
    VKT_OK(vkf_gguf_open(conv, &b));
    if (!a || !b) goto done;
    const char *arch = vkf_gguf_architecture(a);
    VKT_CHECK(arch && vkf_gguf_architecture(b) && !strcmp(arch, vkf_gguf_architecture(b)),
              "%s: architecture", what);
    size_t al = arch ? strlen(arch) : 0;
    for (size_t i = 0; arch && i < vkf_gguf_kv_count(a); i++) {
        const vkf_gguf_kv *kv = vkf_gguf_kv_at(a, i);
        int mine = !strncmp(kv->key, arch, al) && kv->key[al] == '.';
        if (!mine && strcmp(kv->key, "tokenizer.ggml.bos_token_id") &&
            strcmp(kv->key, "tokenizer.ggml.eos_token_id") && strcmp(kv->key, "general.file_type"))
            continue;
        const vkf_gguf_kv *o = vkf_gguf_find(b, kv->key);
        int same = o && o->value.type == kv->value.type;
        if (same && kv->value.type == VKF_GGUF_TYPE_STRING)
            same = !strcmp(o->value.str, kv->value.str);
        else if (same && kv->value.type != VKF_GGUF_TYPE_ARRAY)
            same = !memcmp(o->value.raw, kv->value.raw, scalar_bytes(kv->value.type));
        VKT_CHECK(same, "%s: key %s %s", what, kv->key, o ? "differs" : "missing");
    }
done:
    vkf_gguf_close(a);
    vkf_gguf_close(b);
}

static float *logits(vkf_context *ctx, const char *path) {
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
    vkf_session_params sp = {.n_ctx = 32};
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

/* The same array (of strings or int32) under key in both files. */
static int same_arr(const vkf_gguf *a, const vkf_gguf *b, const char *key) {
    const vkf_gguf_kv *x = vkf_gguf_find(a, key), *y = vkf_gguf_find(b, key);
    if (!x || !y || x->value.type != VKF_GGUF_TYPE_ARRAY || y->value.type != VKF_GGUF_TYPE_ARRAY ||
        x->value.elem_type != y->value.elem_type || x->value.count != y->value.count)
        return 0;
    if (x->value.elem_type == VKF_GGUF_TYPE_STRING) {
        for (uint64_t i = 0; i < x->value.count; i++)
            if (x->value.elems[i].count != y->value.elems[i].count ||
                memcmp(x->value.elems[i].raw, y->value.elems[i].raw, x->value.elems[i].count))
                return 0;
        return 1;
    }
    return !memcmp(x->value.raw, y->value.raw, x->value.count * scalar_bytes(x->value.elem_type));
}

static void test_tokenizer(void) {
    char dir[128], cmd[512], out[160];
    snprintf(dir, sizeof dir, "%s/tok", tmpdir);
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s' && xz -dc '%s/tests/data/tokenizers/real_llama3/tokenizer.json.xz' > "
             "'%s/tokenizer.json'",
             dir, VKF_SOURCE_DIR, dir);
    if (system(cmd) != 0) {
        VKT_CHECK(0, "cannot run: %s", cmd);
        return;
    }
    snprintf(out, sizeof out, "%s/vocab.gguf", tmpdir);
    vkf_gguf_writer *w = NULL;
    int written = 0;
    VKT_OK(vkf_gguf_writer_create(&w));
    if (w) {
        VKT_OK(vkf_gguf_writer_set_str(w, "general.architecture", "llama"));
        VKT_OK(vkf_hf_tokenizer_keys(w, dir, 0, &written));
        VKT_CHECK(written, "real_llama3: tokenizer not converted");
        VKT_OK(vkf_gguf_writer_begin(w, out));
        VKT_OK(vkf_gguf_writer_finish(w));
        vkf_gguf_writer_free(w);
    }
    vkf_gguf *a = NULL, *b = NULL;
    VKT_OK(vkf_gguf_open(vkt_fixture("real-vocab/ggml-vocab-llama-bpe.gguf"), &a));
    VKT_OK(vkf_gguf_open(out, &b));
    if (a && b) {
        static const char *const arrs[] = {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                                           "tokenizer.ggml.merges"};
        for (size_t i = 0; i < 3; i++)
            VKT_CHECK(same_arr(a, b, arrs[i]), "real_llama3: %s differs from llama.cpp's", arrs[i]);
        static const char *const strs[] = {"tokenizer.ggml.model", "tokenizer.ggml.pre"};
        for (size_t i = 0; i < 2; i++) {
            const char *x = "", *y = "";
            vkf_gguf_get_str(a, strs[i], "", &x);
            vkf_gguf_get_str(b, strs[i], "", &y);
            VKT_CHECK(!strcmp(x, y), "real_llama3: %s '%s', llama.cpp '%s'", strs[i], y, x);
        }
    }
    vkf_gguf_close(a);
    vkf_gguf_close(b);
    remove(out);
    /* Qwen3's tokenizer.json: llama.cpp's converter names its pre-tokenizer "qwen2" (its hash
     * table maps Qwen2, Qwen2.5 and Qwen3 there) */
    snprintf(cmd, sizeof cmd,
             "xz -dc '%s/tests/data/tokenizers/real_qwen3/tokenizer.json.xz' > '%s/tokenizer.json'",
             VKF_SOURCE_DIR, dir);
    VKT_CHECK(system(cmd) == 0, "cannot run: %s", cmd);
    w = NULL;
    written = 0;
    VKT_OK(vkf_gguf_writer_create(&w));
    if (w) {
        VKT_OK(vkf_hf_tokenizer_keys(w, dir, 0, &written));
        VKT_CHECK(written, "real_qwen3: tokenizer not converted");
        VKT_OK(vkf_gguf_writer_begin(w, out));
        VKT_OK(vkf_gguf_writer_finish(w));
        vkf_gguf_writer_free(w);
    }
    b = NULL;
    VKT_OK(vkf_gguf_open(out, &b));
    const char *pre = "";
    if (b) vkf_gguf_get_str(b, "tokenizer.ggml.pre", "", &pre);
    VKT_CHECK(!strcmp(pre, "qwen2"), "real_qwen3: pre '%s', llama.cpp names it qwen2", pre);
    vkf_gguf_close(b);
    remove(out);
    snprintf(cmd, sizeof cmd, "%s/tokenizer.json", dir);
    remove(cmd);
    rmdir(dir);
}

static int quantize(const char *in, const char *out, const char *type) {
    vkf_quantize_params qp = {.input = in, .output = out, .type = type};
    vkf_status s = vkf_model_quantize(&qp, NULL);
    VKT_CHECK(s == VKF_OK, "quantize %s %s: %s", in, type, vkf_last_error());
    return s == VKF_OK;
}

int main(void) {
    if (!vkt_need_fixtures("arch real-vocab")) return vkt_finish();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vkt_qhf_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    static const char *const archs[] = {"llama3", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"};
    static const char *const types[] = {"Q8_0", "Q4_K_M"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0] && ctx; i++) {
        char fix[512], dir[512], a[256], b[256], what[64];
        snprintf(fix, sizeof fix, "%s", vkt_fixture("arch"));
        snprintf(fix + strlen(fix), sizeof fix - strlen(fix), "/%s-f32.gguf", archs[i]);
        snprintf(dir, sizeof dir, "%s/%s", HF_DIR, archs[i]);
        int gemma = !strncmp(archs[i], "gemma", 5);
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            snprintf(a, sizeof a, "%s/%s-gguf-%s.gguf", tmpdir, archs[i], types[t]);
            snprintf(b, sizeof b, "%s/%s-hf-%s.gguf", tmpdir, archs[i], types[t]);
            snprintf(what, sizeof what, "%s %s", archs[i], types[t]);
            if (quantize(fix, a, types[t]) && quantize(dir, b, types[t]))
                compare_tensors(what, a, b, gemma);
            remove(a);
            remove(b);
        }
        snprintf(b, sizeof b, "%s/%s-hf-F32.gguf", tmpdir, archs[i]);
        snprintf(what, sizeof what, "%s F32", archs[i]);
        if (!quantize(dir, b, "F32")) continue;
        compare_keys(what, fix, b);
        float *ref = logits(ctx, fix), *got = logits(ctx, b);
        if (ref && got) {
            double mx = 0;
            for (int k = 0; k < N_TOK * 512; k++)
                mx = fmax(mx, fabs((double)ref[k] - got[k]));
            printf("%-7s F32 from HF vs fixture: max|d| %.3e\n", archs[i], mx);
            /* the same tensors and keys run through the same CPU code: identical logits, except
             * gemma whose norm weights may differ by 2 ulps (see same_f32): measured 0 here */
            VKT_CHECK(mx <= (gemma ? 1e-4 : 0.0), "%s: max|d| %.3e", what, mx);
        }
        free(ref);
        free(got);
        remove(b);
    }
    test_tokenizer();
    vkf_context_free(ctx);
    rmdir(tmpdir);
    return vkt_finish();
}
