/* Robustness of model loading: bad files through vkf_model_load never crash, never load, and
 * say what is wrong.
 *
 *   truncation  seed-transformer-tiny/model.safetensors cut at every byte of its first 8 KiB
 *               (the whole header) and at 64 later positions; llama-tiny-q4_0.gguf cut at every
 *               byte of its first 16 KiB (all metadata and tensor infos) and at 64 later ones
 *   headers     safetensors: huge / zero / past-the-end header lengths, offsets past the end,
 *               overlapping tensors, begin > end, negative and overflowing shapes, rank 5,
 *               unknown and unsupported dtypes, duplicate names, non-JSON headers
 *               GGUF: bad magic and versions, huge counts and string lengths, dims that overflow,
 *               too many dims, unsupported types, offsets past the end / misaligned / overlapping
 *   model       wrong tensor shapes and dtypes, missing tensors, unknown architectures, config
 *               values out of range, special ids outside the vocabulary
 *   mutations   4,000 random mutants of a small llama GGUF through load + eval (no crash)
 * Each corrupt file is first checked to load when unmodified, so the corruption is the cause. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "robust/robust_util.h"
#include "testutil.h"
#include "vkformer.h"

static vkf_context *g_ctx;
static char *g_tmp;

/* Loads path; returns the status and frees the model if it loaded. */
static vkf_status try_load(const char *path) {
    vkf_model_params mp = {.path = path};
    vkf_model *m = (vkf_model *)(uintptr_t)1; /* must come back NULL on failure */
    vkf_status s = vkf_model_load(g_ctx, &mp, &m);
    if (s == VKF_OK) {
        vkf_model_free(m);
    } else {
        VKT_CHECK(m == NULL, "%s: a failed load left the output set", path);
    }
    return s;
}

/* Expects status `want` and a message containing each of the NULL-terminated needles. */
static void expect_fail(const char *what, const char *path, vkf_status want, const char *n1,
                        const char *n2) {
    vkf_status s = try_load(path);
    const char *e = vkf_last_error();
    if (getenv("VKT_VERBOSE")) printf("  %-40s %s: %s\n", what, vkf_status_name(s), e);
    VKT_CHECK(s == want, "%s: expected %s, got %s: %s", what, vkf_status_name(want),
              vkf_status_name(s), e);
    if (s != VKF_OK) {
        VKT_CHECK(!n1 || strstr(e, n1), "%s: message lacks \"%s\": %s", what, n1, e);
        VKT_CHECK(!n2 || strstr(e, n2), "%s: message lacks \"%s\": %s", what, n2, e);
    }
}

/* ------------------------------------------------------------------ truncation */

/* Writes data[0..size) to path once, then shrinks it with ftruncate through the lengths in
 * lens[] (descending), loading `load_path` at each one. Every length < min_ok must fail with
 * FORMAT or IO; a length >= min_ok (all the bytes the file's tensors use) may load. */
static void truncation_sweep(const char *what, const char *path, const char *load_path,
                             const uint8_t *data, size_t size, const size_t *lens, size_t n_lens,
                             size_t min_ok) {
    if (!rb_write_file(path, data, size)) {
        VKT_CHECK(0, "%s: cannot write %s", what, path);
        return;
    }
    int n_format = 0, n_io = 0, n_bad = 0, n_loaded = 0;
    for (size_t i = 0; i < n_lens; i++) {
        if (truncate(path, (off_t)lens[i]) != 0) {
            VKT_CHECK(0, "truncate %s to %zu", path, lens[i]);
            return;
        }
        vkf_status s = try_load(load_path);
        if (s == VKF_OK) {
            n_loaded++;
            if (lens[i] < min_ok) {
                n_bad++;
                VKT_CHECK(0, "%s cut to %zu bytes (< %zu) loaded", what, lens[i], min_ok);
            }
        } else if (s == VKF_ERROR_FORMAT) {
            n_format++;
        } else if (s == VKF_ERROR_IO) {
            n_io++;
        } else {
            n_bad++;
            VKT_CHECK(0, "%s cut to %zu bytes: %s: %s", what, lens[i], vkf_status_name(s),
                      vkf_last_error());
        }
        if (s != VKF_OK && !strstr(vkf_last_error(), "model.safetensors") &&
            !strstr(vkf_last_error(), ".gguf")) {
            n_bad++;
            VKT_CHECK(0, "%s cut to %zu bytes: the message does not name the file: %s", what,
                      lens[i], vkf_last_error());
        }
    }
    VKT_CHECK(n_bad == 0, "%s: %d bad outcomes", what, n_bad);
    printf("  %s: %zu lengths: %d FORMAT, %d IO, %d loaded (all >= %zu bytes)\n", what, n_lens,
           n_format, n_io, n_loaded, min_ok);
}

/* Lengths: size-1 (or size), then 64 spread over [dense, size), then every byte below dense. */
static size_t *cut_lengths(size_t size, size_t dense, size_t *n) {
    size_t *l = malloc((dense + 80) * sizeof *l);
    size_t k = 0;
    if (!l) return NULL;
    l[k++] = size - 1;
    for (int i = 63; i >= 0; i--) {
        size_t v = dense + (size - 1 - dense) * (size_t)i / 64;
        if (v < l[k - 1]) l[k++] = v;
    }
    for (size_t v = dense; v-- > 0;)
        l[k++] = v;
    *n = k;
    return l;
}

static void test_truncation(void) {
    char dir[2048], path[2100];
    /* safetensors: a model directory with the real config.json */
    snprintf(dir, sizeof dir, "%s/st-trunc", g_tmp);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/config.json", dir);
    rb_copy_file(vkt_fixture("seed-transformer-tiny/config.json"), path);
    size_t size = 0;
    uint8_t *data = vkt_read_file(vkt_fixture("seed-transformer-tiny/model.safetensors"), &size);
    if (data) {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        VKT_CHECK(rb_write_file(path, data, size) && try_load(dir) == VKF_OK,
                  "unmodified safetensors copy: %s", vkf_last_error());
        size_t n = 0, *lens = cut_lengths(size, 8192, &n);
        if (lens) truncation_sweep("model.safetensors", path, dir, data, size, lens, n, size);
        free(lens);
        free(data);
    }
    /* GGUF: a single file */
    data = vkt_read_file(vkt_fixture("llama-tiny/llama-tiny-q4_0.gguf"), &size);
    if (data) {
        snprintf(path, sizeof path, "%s/trunc.gguf", g_tmp);
        VKT_CHECK(rb_write_file(path, data, size) && try_load(path) == VKF_OK,
                  "unmodified gguf copy: %s", vkf_last_error());
        size_t n = 0, *lens = cut_lengths(size, 16384, &n);
        if (lens) truncation_sweep("llama-tiny-q4_0.gguf", path, path, data, size, lens, n, size);
        free(lens);
        free(data);
    }
}

/* ------------------------------------------------------------------ safetensors headers */

typedef struct st_file {
    uint8_t *data;
    size_t size;
    uint64_t hlen;
    cJSON *header;
} st_file;

static int st_read(st_file *f) {
    memset(f, 0, sizeof *f);
    f->data = vkt_read_file(vkt_fixture("seed-transformer-tiny/model.safetensors"), &f->size);
    if (!f->data || f->size < 8) return 0;
    memcpy(&f->hlen, f->data, 8);
    char *h = malloc(f->hlen + 1);
    memcpy(h, f->data + 8, f->hlen);
    h[f->hlen] = 0;
    f->header = cJSON_Parse(h);
    free(h);
    return f->header != NULL;
}

/* The model directory with header text `json` (NULL: the original) and header length field
 * `hlen_field` (0: the real length), then the original data section. */
static const char *st_write(const st_file *f, const char *json, uint64_t hlen_field) {
    static char dir[2048];
    static int k;
    char path[2200];
    snprintf(dir, sizeof dir, "%s/st-%d", g_tmp, k++);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/config.json", dir);
    rb_copy_file(vkt_fixture("seed-transformer-tiny/config.json"), path);
    char *text = json ? strdup(json) : cJSON_PrintUnformatted(f->header);
    size_t tl = strlen(text), padded = (tl + 7) / 8 * 8;
    size_t body = f->size - 8 - f->hlen;
    uint8_t *out = malloc(8 + padded + body);
    uint64_t hl = hlen_field ? hlen_field : padded;
    memcpy(out, &hl, 8);
    memcpy(out + 8, text, tl);
    memset(out + 8 + tl, ' ', padded - tl);
    memcpy(out + 8 + padded, f->data + 8 + f->hlen, body);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    rb_write_file(path, out, 8 + padded + body);
    free(out);
    free(text);
    return dir;
}

static cJSON *st_entry(cJSON *h, const char *name) { return cJSON_GetObjectItem(h, name); }

static void set_offsets(cJSON *e, double b, double en) {
    cJSON *o = cJSON_CreateArray();
    cJSON_AddItemToArray(o, cJSON_CreateNumber(b));
    cJSON_AddItemToArray(o, cJSON_CreateNumber(en));
    cJSON_ReplaceItemInObject(e, "data_offsets", o);
}

static void set_shape(cJSON *e, const double *dims, int n) {
    cJSON *s = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(s, cJSON_CreateNumber(dims[i]));
    cJSON_ReplaceItemInObject(e, "shape", s);
}

/* A copy of the header with one change applied by fn, written out, loaded, checked. */
typedef void (*st_edit)(cJSON *h);
static void st_case(st_file *f, const char *what, st_edit fn, vkf_status want, const char *n1,
                    const char *n2) {
    cJSON *saved = f->header;
    f->header = cJSON_Duplicate(saved, 1);
    fn(f->header);
    const char *dir = st_write(f, NULL, 0);
    cJSON_Delete(f->header);
    f->header = saved;
    expect_fail(what, dir, want, n1, n2);
}

static void e_past_end(cJSON *h) {
    set_offsets(st_entry(h, "generator.bias"), 748000, 748000 + 356);
}
static void e_overlap(cJSON *h) { /* two [64] F32 norms on the same bytes */
    cJSON *a = cJSON_GetObjectItem(st_entry(h, "transformer.encoder.norm.weight"), "data_offsets");
    set_offsets(st_entry(h, "transformer.encoder.norm.bias"), cJSON_GetArrayItem(a, 0)->valuedouble,
                cJSON_GetArrayItem(a, 1)->valuedouble);
}
static void e_begin_gt_end(cJSON *h) {
    cJSON *a = cJSON_GetObjectItem(st_entry(h, "generator.bias"), "data_offsets");
    set_offsets(st_entry(h, "generator.bias"), cJSON_GetArrayItem(a, 1)->valuedouble,
                cJSON_GetArrayItem(a, 0)->valuedouble);
}
static void e_size_mismatch(cJSON *h) {
    cJSON *a = cJSON_GetObjectItem(st_entry(h, "generator.bias"), "data_offsets");
    set_offsets(st_entry(h, "generator.bias"), cJSON_GetArrayItem(a, 0)->valuedouble,
                cJSON_GetArrayItem(a, 1)->valuedouble - 4);
}
static void e_neg_shape(cJSON *h) {
    double d[2] = {-89, -64};
    set_shape(st_entry(h, "generator.weight"), d, 2);
}
static void e_overflow_shape(cJSON *h) {
    double d[3] = {4611686018427387904.0, 4611686018427387904.0, 4.0};
    set_shape(st_entry(h, "generator.weight"), d, 3);
}
static void e_rank5(cJSON *h) {
    double d[5] = {89, 64, 1, 1, 1};
    set_shape(st_entry(h, "generator.weight"), d, 5);
}
static void e_unknown_dtype(cJSON *h) {
    cJSON_ReplaceItemInObject(st_entry(h, "generator.weight"), "dtype", cJSON_CreateString("F99"));
}
static void e_int_dtype(cJSON *h) {
    cJSON_ReplaceItemInObject(st_entry(h, "generator.weight"), "dtype", cJSON_CreateString("I32"));
}
static void e_f16_dtype(cJSON *h) { /* F16 with the F32 byte count: a size mismatch */
    cJSON_ReplaceItemInObject(st_entry(h, "generator.weight"), "dtype", cJSON_CreateString("F16"));
}
static void e_transposed(cJSON *h) {
    double d[2] = {64, 89};
    set_shape(st_entry(h, "generator.weight"), d, 2);
}
static void e_missing(cJSON *h) {
    cJSON *e = cJSON_DetachItemFromObject(h, "generator.bias");
    cJSON_AddItemToObject(h, "generator.bias_renamed", e);
}
static void e_offsets_string(cJSON *h) {
    cJSON_ReplaceItemInObject(st_entry(h, "generator.bias"), "data_offsets",
                              cJSON_CreateString("0"));
}
static void e_shape_float(cJSON *h) {
    double d[1] = {88.5};
    set_shape(st_entry(h, "generator.bias"), d, 1);
}

static void test_safetensors_headers(void) {
    st_file f;
    if (!st_read(&f)) {
        VKT_CHECK(0, "cannot read seed-transformer-tiny/model.safetensors");
        return;
    }
    VKT_CHECK(try_load(st_write(&f, NULL, 0)) == VKF_OK, "re-serialized header does not load: %s",
              vkf_last_error());
    /* header length fields */
    expect_fail("header length 2^63", st_write(&f, NULL, (uint64_t)1 << 63), VKF_ERROR_FORMAT,
                "model.safetensors", NULL);
    expect_fail("header length past the end", st_write(&f, NULL, f.size), VKF_ERROR_FORMAT,
                "model.safetensors", NULL);
    expect_fail("header length 1", st_write(&f, NULL, 1), VKF_ERROR_FORMAT, "model.safetensors",
                NULL);
    expect_fail("header not JSON", st_write(&f, "{\"a\": [1, 2", 0), VKF_ERROR_FORMAT,
                "model.safetensors", NULL);
    expect_fail("header a JSON array", st_write(&f, "[1, 2, 3]", 0), VKF_ERROR_FORMAT,
                "model.safetensors", NULL);
    expect_fail("header empty object", st_write(&f, "{}", 0), VKF_ERROR_FORMAT, "missing tensor",
                NULL);
    /* tensor entries */
    st_case(&f, "offsets past the end", e_past_end, VKF_ERROR_FORMAT, "generator.bias", NULL);
    st_case(&f, "overlapping tensors", e_overlap, VKF_ERROR_FORMAT, "overlap", NULL);
    st_case(&f, "begin > end", e_begin_gt_end, VKF_ERROR_FORMAT, "generator.bias", NULL);
    st_case(&f, "size != shape x dtype", e_size_mismatch, VKF_ERROR_FORMAT, "generator.bias", NULL);
    st_case(&f, "negative shape", e_neg_shape, VKF_ERROR_FORMAT, "generator.weight", NULL);
    st_case(&f, "overflowing shape", e_overflow_shape, VKF_ERROR_FORMAT, "generator.weight", NULL);
    st_case(&f, "rank 5", e_rank5, VKF_ERROR_FORMAT, "generator.weight", NULL);
    st_case(&f, "unknown dtype", e_unknown_dtype, VKF_ERROR_FORMAT, "F99", NULL);
    st_case(&f, "I32 weight", e_int_dtype, VKF_ERROR_UNSUPPORTED, "generator.weight", "I32");
    st_case(&f, "F16 dtype, F32 bytes", e_f16_dtype, VKF_ERROR_FORMAT, "generator.weight", NULL);
    st_case(&f, "transposed shape", e_transposed, VKF_ERROR_FORMAT, "generator.weight", "expected");
    st_case(&f, "missing tensor", e_missing, VKF_ERROR_FORMAT, "missing tensor", "generator.bias");
    st_case(&f, "offsets not a list", e_offsets_string, VKF_ERROR_FORMAT, "generator.bias", NULL);
    st_case(&f, "fractional dim", e_shape_float, VKF_ERROR_FORMAT, "generator.bias", NULL);
    /* duplicate names: cJSON keeps a second member of the same name and prints both */
    cJSON *dup = cJSON_Duplicate(f.header, 1);
    cJSON *e = cJSON_Duplicate(st_entry(dup, "generator.bias"), 1);
    cJSON_AddItemToObject(dup, "generator.bias", e); /* a second member of the same name */
    char *txt = cJSON_PrintUnformatted(dup);
    expect_fail("duplicate tensor name", st_write(&f, txt, 0), VKF_ERROR_FORMAT, "generator.bias",
                NULL);
    free(txt);
    cJSON_Delete(dup);
    cJSON_Delete(f.header);
    free(f.data);
}

/* ------------------------------------------------------------------ config.json */

static const char *cfg_dir(const char *config_text, const char *model_dir,
                           const char *const *files) {
    static char dir[2048];
    static int k;
    char from[2200], to[2200];
    snprintf(dir, sizeof dir, "%s/cfg-%d", g_tmp, k++);
    mkdir(dir, 0755);
    for (int i = 0; files[i]; i++) {
        snprintf(from, sizeof from, "%s/%s", model_dir, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        rb_copy_file(from, to);
    }
    if (config_text) {
        snprintf(to, sizeof to, "%s/config.json", dir);
        rb_write_file(to, config_text, strlen(config_text));
    }
    return dir;
}

/* The model's config.json with key set to the JSON value `val` (NULL: removed). */
static char *cfg_with(const char *model_dir, const char *key, const char *val) {
    char path[2200];
    snprintf(path, sizeof path, "%s/config.json", model_dir);
    char *text = vkt_read_file(path, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!j) return NULL;
    cJSON_DeleteItemFromObject(j, key);
    if (val) cJSON_AddItemToObject(j, key, cJSON_Parse(val));
    char *out = cJSON_Print(j);
    cJSON_Delete(j);
    return out;
}

static void cfg_case(const char *model_dir, const char *const *files, const char *key,
                     const char *val, vkf_status want, const char *n1, const char *n2) {
    char *cfg = cfg_with(model_dir, key, val);
    char what[256];
    snprintf(what, sizeof what, "%s: %s = %s", model_dir, key, val ? val : "(removed)");
    if (!cfg) {
        VKT_CHECK(0, "%s: cannot build the config", what);
        return;
    }
    expect_fail(what, cfg_dir(cfg, model_dir, files), want, n1, n2);
    free(cfg);
}

static void test_configs(void) {
    static const char *const tf_files[] = {"model.safetensors", NULL};
    static const char *const kjv_files[] = {"model.safetensors", "char_vocab.json", NULL};
    char tf[2048], kjv[2048];
    snprintf(tf, sizeof tf, "%s", vkt_fixture("seed-transformer-tiny"));
    snprintf(kjv, sizeof kjv, "%s", rb_repo("models/kjv-gpt"));
    /* the unmodified copies load */
    char *cfg = cfg_with(tf, "dropout", NULL);
    VKT_CHECK(cfg && try_load(cfg_dir(cfg, tf, tf_files)) == VKF_OK, "transformer copy: %s",
              vkf_last_error());
    free(cfg);
    cfg = cfg_with(kjv, "attn_pdrop", NULL);
    VKT_CHECK(cfg && try_load(cfg_dir(cfg, kjv, kjv_files)) == VKF_OK, "kjv-gpt copy: %s",
              vkf_last_error());
    free(cfg);

    /* architecture */
    cfg_case(tf, tf_files, "architecture", "\"mamba\"", VKF_ERROR_UNSUPPORTED, "mamba",
             "not supported");
    cfg_case(tf, tf_files, "architecture", NULL, VKF_ERROR_FORMAT, "architecture", NULL);
    cfg_case(kjv, kjv_files, "model_type", "\"bert\"", VKF_ERROR_UNSUPPORTED, "bert", NULL);
    cfg_case(tf, tf_files, "architecture", "42", VKF_ERROR_FORMAT, "architecture", NULL);
    /* hyperparameters */
    cfg_case(tf, tf_files, "d_model", "\"64\"", VKF_ERROR_FORMAT, "d_model", NULL);
    cfg_case(tf, tf_files, "d_model", "-64", VKF_ERROR_FORMAT, "d_model", NULL);
    cfg_case(tf, tf_files, "nhead", "3", VKF_ERROR_FORMAT, "nhead", NULL);
    cfg_case(tf, tf_files, "max_len", "1099511627776", VKF_ERROR_FORMAT, "max_len", NULL);
    cfg_case(tf, tf_files, "tgt_vocab_size", "90", VKF_ERROR_FORMAT, "tgt_embed.weight",
             "expected");
    cfg_case(tf, tf_files, "num_decoder_layers", "3", VKF_ERROR_FORMAT, "missing tensor",
             "layers.2");
    cfg_case(tf, tf_files, "bos_id", "89", VKF_ERROR_FORMAT, "bos_id", NULL);
    cfg_case(tf, tf_files, "activation", "\"swish\"", VKF_ERROR_UNSUPPORTED, "swish", NULL);
    cfg_case(tf, tf_files, "layer_norm_eps", "0", VKF_ERROR_FORMAT, "layer_norm_eps", NULL);
    cfg_case(kjv, kjv_files, "n_positions", "1099511627776", VKF_ERROR_FORMAT, "n_positions", NULL);
    cfg_case(kjv, kjv_files, "n_positions", "2000000000", VKF_ERROR_UNSUPPORTED, "n_positions",
             NULL);
    cfg_case(kjv, kjv_files, "n_embd", "0", VKF_ERROR_FORMAT, "n_embd", NULL);
    cfg_case(kjv, kjv_files, "n_layer", "100000000", VKF_ERROR_FORMAT, "n_layer", NULL);
    cfg_case(kjv, kjv_files, "n_head", "5", VKF_ERROR_FORMAT, "n_head", NULL);
    cfg_case(kjv, kjv_files, "vocab_size", "68", VKF_ERROR_FORMAT, "wte.weight", "expected");
    cfg_case(kjv, kjv_files, "layer_norm_epsilon", "0", VKF_ERROR_FORMAT, "layer_norm_epsilon",
             NULL);
    cfg_case(kjv, kjv_files, "activation_function", "\"tanh\"", VKF_ERROR_UNSUPPORTED, "tanh",
             NULL);
    cfg_case(kjv, kjv_files, "tie_word_embeddings", "false", VKF_ERROR_FORMAT, "lm_head.weight",
             NULL);
    cfg_case(kjv, kjv_files, "tokenizer", "\"no_such_vocab.json\"", VKF_ERROR_IO,
             "no_such_vocab.json", NULL);
    /* files */
    static const char *const none[] = {NULL};
    expect_fail("config.json not JSON",
                cfg_dir("{\"architecture\": \"transformer\",", tf, tf_files), VKF_ERROR_FORMAT,
                "config.json", NULL);
    expect_fail("config.json a list", cfg_dir("[1]", tf, tf_files), VKF_ERROR_FORMAT, "config.json",
                NULL);
    expect_fail("no config.json", cfg_dir(NULL, tf, tf_files), VKF_ERROR_IO, "config.json", NULL);
    cfg = cfg_with(tf, "dropout", NULL);
    expect_fail("no model.safetensors", cfg_dir(cfg, tf, none), VKF_ERROR_IO, "model.safetensors",
                NULL);
    free(cfg);
    expect_fail("no such path", "/nonexistent/vkf/model", VKF_ERROR_IO, "/nonexistent/vkf/model",
                NULL);
    expect_fail("an empty directory", cfg_dir(NULL, tf, none), VKF_ERROR_IO, "config.json", NULL);
    char empty[2200];
    snprintf(empty, sizeof empty, "%s/empty.gguf", g_tmp);
    rb_write_file(empty, "", 0);
    expect_fail("an empty .gguf", empty, VKF_ERROR_FORMAT, "empty.gguf", NULL);
    char bogus_tok[2200];
    snprintf(bogus_tok, sizeof bogus_tok, "%s/bogus_vocab.json", g_tmp);
    rb_write_file(bogus_tok, "{\"type\": \"char\", \"tokens\": 7}", 29);
    vkf_model_params mp = {.path = kjv, .tokenizer = bogus_tok};
    vkf_model *m = NULL;
    vkf_status s = vkf_model_load(g_ctx, &mp, &m);
    VKT_CHECK(s == VKF_ERROR_FORMAT && m == NULL && strstr(vkf_last_error(), "bogus_vocab.json"),
              "bad tokenizer file: %s %s", vkf_status_name(s), vkf_last_error());
}

/* ------------------------------------------------------------------ GGUF */

/* Where things are in a GGUF file, found by walking it here (independently of src/io/gguf.c). */
typedef struct gg_loc {
    size_t n_tensors_at, n_kv_at;
    size_t kv_key_len_at[64]; /* offset of each key's length field */
    size_t kv_val_at[64];     /* offset of each key's value (after the type) */
    char kv_key[64][96];
    int n_kv;
    size_t ti_at[64]; /* offset of each tensor info's name length */
    size_t ti_ndims_at[64], ti_type_at[64], ti_off_at[64];
    char ti_name[64][64];
    int n_ti;
} gg_loc;

static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static uint32_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static size_t gg_skip_value(const uint8_t *d, size_t at, uint32_t type) {
    static const size_t sz[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) return at + 8 + rd64(d + at);
    if (type == 9) {
        uint32_t et = rd32(d + at);
        uint64_t n = rd64(d + at + 4);
        at += 12;
        for (uint64_t i = 0; i < n; i++)
            at = gg_skip_value(d, at, et);
        return at;
    }
    return at + sz[type];
}

static int gg_walk(const uint8_t *d, size_t size, gg_loc *L) {
    memset(L, 0, sizeof *L);
    if (size < 24 || memcmp(d, "GGUF", 4) != 0) return 0;
    L->n_tensors_at = 8;
    L->n_kv_at = 16;
    uint64_t nt = rd64(d + 8), nkv = rd64(d + 16);
    size_t at = 24;
    for (uint64_t i = 0; i < nkv && i < 64; i++) {
        L->kv_key_len_at[i] = at;
        uint64_t kl = rd64(d + at);
        snprintf(L->kv_key[i], sizeof L->kv_key[i], "%.*s", (int)kl, (const char *)d + at + 8);
        at += 8 + kl;
        uint32_t type = rd32(d + at);
        L->kv_val_at[i] = at + 4;
        at = gg_skip_value(d, at + 4, type);
        L->n_kv++;
    }
    for (uint64_t i = 0; i < nt && i < 64; i++) {
        L->ti_at[i] = at;
        uint64_t nl = rd64(d + at);
        snprintf(L->ti_name[i], sizeof L->ti_name[i], "%.*s", (int)nl, (const char *)d + at + 8);
        at += 8 + nl;
        L->ti_ndims_at[i] = at;
        uint32_t nd = rd32(d + at);
        at += 4 + 8 * (size_t)nd;
        L->ti_type_at[i] = at;
        L->ti_off_at[i] = at + 4;
        at += 12;
        L->n_ti++;
    }
    return at <= size;
}

static int gg_kv(const gg_loc *L, const char *key) {
    for (int i = 0; i < L->n_kv; i++)
        if (strcmp(L->kv_key[i], key) == 0) return i;
    return -1;
}

static int gg_ti(const gg_loc *L, const char *name) {
    for (int i = 0; i < L->n_ti; i++)
        if (strcmp(L->ti_name[i], name) == 0) return i;
    return -1;
}

static const char *gg_write(const uint8_t *d, size_t size) {
    static char path[2200];
    static int k;
    snprintf(path, sizeof path, "%s/patched-%d.gguf", g_tmp, k++);
    rb_write_file(path, d, size);
    return path;
}

typedef struct gg_file {
    const uint8_t *orig;
    size_t size;
    uint8_t *work;
    gg_loc L;
} gg_file;

static uint8_t *gg_fresh(gg_file *g) {
    memcpy(g->work, g->orig, g->size);
    return g->work;
}

static void test_gguf(void) {
    gg_file g;
    g.orig = vkt_read_file(vkt_fixture("llama-tiny/llama-tiny-q4_0.gguf"), &g.size);
    if (!g.orig) {
        VKT_CHECK(0, "cannot read llama-tiny-q4_0.gguf");
        return;
    }
    g.work = malloc(g.size);
    VKT_CHECK(gg_walk(g.orig, g.size, &g.L) && g.L.n_ti == 39, "walking the GGUF: %d tensors",
              g.L.n_ti);
    VKT_CHECK(try_load(gg_write(gg_fresh(&g), g.size)) == VKF_OK, "unmodified GGUF: %s",
              vkf_last_error());
    const gg_loc *L = &g.L;
    uint8_t *d;

    d = gg_fresh(&g);
    d[0] = 'X';
    expect_fail("bad magic", gg_write(d, g.size), VKF_ERROR_FORMAT, ".gguf", NULL);
    d = gg_fresh(&g);
    wr32(d + 4, 1);
    expect_fail("version 1", gg_write(d, g.size), VKF_ERROR_UNSUPPORTED, ".gguf", NULL);
    d = gg_fresh(&g);
    wr32(d + 4, 4);
    expect_fail("version 4", gg_write(d, g.size), VKF_ERROR_UNSUPPORTED, ".gguf", NULL);
    d = gg_fresh(&g);
    wr64(d + L->n_tensors_at, (uint64_t)1 << 62);
    expect_fail("2^62 tensors", gg_write(d, g.size), VKF_ERROR_FORMAT, ".gguf", NULL);
    d = gg_fresh(&g);
    wr64(d + L->n_kv_at, (uint64_t)1 << 40);
    expect_fail("2^40 keys", gg_write(d, g.size), VKF_ERROR_FORMAT, ".gguf", NULL);
    d = gg_fresh(&g);
    wr64(d + L->kv_key_len_at[0], (uint64_t)1 << 62);
    expect_fail("key length 2^62", gg_write(d, g.size), VKF_ERROR_FORMAT, ".gguf", NULL);
    d = gg_fresh(&g);
    wr64(d + L->kv_key_len_at[0], UINT64_MAX);
    expect_fail("key length 2^64-1", gg_write(d, g.size), VKF_ERROR_FORMAT, ".gguf", NULL);

    int k = gg_kv(L, "general.architecture");
    if (k >= 0) {
        d = gg_fresh(&g);
        memcpy(d + L->kv_val_at[k] + 8, "lamma", 5);
        expect_fail("architecture lamma", gg_write(d, g.size), VKF_ERROR_UNSUPPORTED, "lamma",
                    "not supported");
        d = gg_fresh(&g);
        wr64(d + L->kv_val_at[k], (uint64_t)1 << 60);
        expect_fail("architecture string length 2^60", gg_write(d, g.size), VKF_ERROR_FORMAT,
                    ".gguf", NULL);
    }
    k = gg_kv(L, "tokenizer.ggml.tokens");
    if (k >= 0) {
        d = gg_fresh(&g);
        wr64(d + L->kv_val_at[k] + 4, (uint64_t)1 << 50); /* array count */
        expect_fail("2^50 tokens", gg_write(d, g.size), VKF_ERROR_FORMAT, ".gguf", NULL);
        d = gg_fresh(&g);
        wr32(d + L->kv_val_at[k], 77); /* element type */
        expect_fail("array element type 77", gg_write(d, g.size), VKF_ERROR_FORMAT, ".gguf", NULL);
    }
    struct {
        const char *key;
        uint32_t v;
        vkf_status want;
        const char *needle;
    } u32s[] = {
        {"llama.block_count", 0, VKF_ERROR_FORMAT, "block_count"},
        {"llama.block_count", 5, VKF_ERROR_FORMAT, "blk.4"},
        {"llama.block_count", 0xFFFFFFFFu, VKF_ERROR_FORMAT, "block_count"},
        {"llama.block_count", 100000000, VKF_ERROR_FORMAT, "block_count"},
        {"llama.embedding_length", 255, VKF_ERROR_FORMAT, "embedding_length"},
        {"llama.attention.head_count", 0, VKF_ERROR_FORMAT, ".gguf"},
        {"llama.attention.head_count_kv", 3, VKF_ERROR_FORMAT, "KV heads"},
        {"llama.context_length", 0x7FFFFFFFu, VKF_ERROR_UNSUPPORTED, "context_length"},
        {"llama.feed_forward_length", 769, VKF_ERROR_FORMAT, "ffn"},
        {"llama.rope.dimension_count", 33, VKF_ERROR_FORMAT, "rope.dimension_count"},
        {"tokenizer.ggml.bos_token_id", 99999, VKF_ERROR_FORMAT, "bos_token_id"},
    };
    for (size_t i = 0; i < sizeof u32s / sizeof u32s[0]; i++) {
        k = gg_kv(L, u32s[i].key);
        if (k < 0) {
            if (strcmp(u32s[i].key, "llama.rope.dimension_count") != 0)
                VKT_CHECK(0, "key %s not in the fixture", u32s[i].key);
            continue;
        }
        d = gg_fresh(&g);
        wr32(d + L->kv_val_at[k], u32s[i].v);
        char what[128];
        snprintf(what, sizeof what, "%s = %u", u32s[i].key, u32s[i].v);
        expect_fail(what, gg_write(d, g.size), u32s[i].want, u32s[i].needle, NULL);
    }
    k = gg_kv(L, "llama.attention.layer_norm_rms_epsilon");
    if (k >= 0) {
        d = gg_fresh(&g);
        float nan = 0.0f / 0.0f;
        memcpy(d + L->kv_val_at[k], &nan, 4);
        expect_fail("rms epsilon NaN", gg_write(d, g.size), VKF_ERROR_FORMAT, "epsilon", NULL);
    }

    /* tensor infos: blk.0.ffn_up.weight is Q4_0 ne [256, 768] */
    int t = gg_ti(L, "blk.0.ffn_up.weight"), t2 = gg_ti(L, "blk.0.ffn_gate.weight");
    VKT_CHECK(t >= 0 && t2 >= 0 && rd32(g.orig + L->ti_ndims_at[t]) == 2, "fixture layout changed");
    if (t >= 0 && t2 >= 0) {
        size_t ne = L->ti_ndims_at[t] + 4;
        d = gg_fresh(&g);
        wr64(d + ne, 768);
        wr64(d + ne + 8, 256);
        expect_fail("ffn_up transposed", gg_write(d, g.size), VKF_ERROR_FORMAT,
                    "blk.0.ffn_up.weight", "expected");
        d = gg_fresh(&g);
        wr64(d + ne, (uint64_t)1 << 62);
        expect_fail("ffn_up ne0 2^62", gg_write(d, g.size), VKF_ERROR_FORMAT, "blk.0.ffn_up.weight",
                    NULL);
        d = gg_fresh(&g);
        wr64(d + ne + 8, (uint64_t)1 << 58);
        expect_fail("ffn_up ne1 2^58", gg_write(d, g.size), VKF_ERROR_FORMAT, "blk.0.ffn_up.weight",
                    NULL);
        d = gg_fresh(&g);
        wr64(d + ne, 0);
        expect_fail("ffn_up ne0 0", gg_write(d, g.size), VKF_ERROR_FORMAT, "blk.0.ffn_up.weight",
                    NULL);
        d = gg_fresh(&g);
        wr64(d + ne, 250); /* not a multiple of the Q4_0 block */
        expect_fail("ffn_up row of 250 Q4_0", gg_write(d, g.size), VKF_ERROR_FORMAT,
                    "blk.0.ffn_up.weight", NULL);
        d = gg_fresh(&g);
        wr32(d + L->ti_ndims_at[t], 9);
        expect_fail("ffn_up 9 dims", gg_write(d, g.size), VKF_ERROR_FORMAT, "blk.0.ffn_up.weight",
                    NULL);
        d = gg_fresh(&g);
        wr32(d + L->ti_type_at[t], 16); /* IQ2_XXS: not read */
        expect_fail("ffn_up IQ2_XXS", gg_write(d, g.size), VKF_ERROR_UNSUPPORTED,
                    "blk.0.ffn_up.weight", NULL);
        d = gg_fresh(&g);
        wr32(d + L->ti_type_at[t], 0xFFFFFFFFu);
        expect_fail("ffn_up type 2^32-1", gg_write(d, g.size), VKF_ERROR_UNSUPPORTED,
                    "blk.0.ffn_up.weight", NULL);
        d = gg_fresh(&g);
        wr32(d + L->ti_type_at[t], 0); /* F32: 4x the bytes, past the end or into the next tensor */
        expect_fail("ffn_up as F32", gg_write(d, g.size), VKF_ERROR_FORMAT, ".gguf", NULL);
        d = gg_fresh(&g);
        wr64(d + L->ti_off_at[t], (uint64_t)1 << 62);
        expect_fail("ffn_up offset 2^62", gg_write(d, g.size), VKF_ERROR_FORMAT,
                    "blk.0.ffn_up.weight", NULL);
        d = gg_fresh(&g);
        wr64(d + L->ti_off_at[t], UINT64_MAX - 31);
        expect_fail("ffn_up offset 2^64-32", gg_write(d, g.size), VKF_ERROR_FORMAT,
                    "blk.0.ffn_up.weight", NULL);
        d = gg_fresh(&g);
        wr64(d + L->ti_off_at[t], rd64(g.orig + L->ti_off_at[t]) + 1);
        expect_fail("ffn_up misaligned", gg_write(d, g.size), VKF_ERROR_FORMAT,
                    "blk.0.ffn_up.weight", NULL);
        d = gg_fresh(&g);
        wr64(d + L->ti_off_at[t], rd64(g.orig + L->ti_off_at[t2])); /* on ffn_gate's bytes */
        expect_fail("ffn_up overlapping ffn_gate", gg_write(d, g.size), VKF_ERROR_FORMAT, ".gguf",
                    NULL);
        d = gg_fresh(&g);
        memcpy(d + L->ti_at[t] + 8, "blk.0.attn_q.weight",
               19); /* as long as "blk.0.ffn_up.weight" */
        expect_fail("duplicate tensor name", gg_write(d, g.size), VKF_ERROR_FORMAT,
                    "blk.0.attn_q.weight", NULL);
        d = gg_fresh(&g);
        memcpy(d + L->ti_at[t] + 8, "blk.0.ffn_xx.weight", 19);
        expect_fail("ffn_up renamed", gg_write(d, g.size), VKF_ERROR_FORMAT, "missing tensor",
                    "blk.0.ffn_up.weight");
        d = gg_fresh(&g);
        wr64(d + L->ti_at[t], 0);
        expect_fail("empty tensor name", gg_write(d, g.size), VKF_ERROR_FORMAT, ".gguf", NULL);
    }
    /* a norm stored as Q8_0 would need a 32-multiple row: a 256-vector as Q8_0 is legal, but as
     * an I32-typed tensor (ggml type 26) it is not a weight type */
    t = gg_ti(L, "output_norm.weight");
    if (t >= 0) {
        d = gg_fresh(&g);
        wr32(d + L->ti_type_at[t], 26);
        expect_fail("output_norm as I32", gg_write(d, g.size), VKF_ERROR_UNSUPPORTED,
                    "output_norm.weight", NULL);
    }
    free(g.work);
    free((void *)g.orig);
}

/* ------------------------------------------------------------------ random mutations */

/* A small mutation fuzzer over the whole load path (parser, hyperparameters, shapes, upload,
 * graph build, a forward pass): the synthetic 20 KB llama GGUF of tests/fuzz/corpus with 1-8
 * random bytes changed per iteration, mostly in the metadata and tensor infos. Nothing may
 * crash; a file that loads must also evaluate two tokens. Deterministic (fixed seed). The bytes
 * of llama.context_length are left alone: a larger but valid context only makes the position
 * table and KV cache legitimately big. */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_mutations(int iters) {
    size_t size = 0;
    uint8_t *orig =
        vkt_read_file(rb_repo("tests/fuzz/corpus/gguf/llama-tiny-synthetic.gguf"), &size);
    if (!orig) {
        VKT_CHECK(0, "tests/fuzz/corpus/gguf/llama-tiny-synthetic.gguf unreadable");
        return;
    }
    gg_loc L;
    VKT_CHECK(gg_walk(orig, size, &L), "walking the synthetic GGUF");
    int k = gg_kv(&L, "llama.context_length");
    size_t ctx_at = k >= 0 ? L.kv_val_at[k] : 0;
    size_t meta_end = L.n_ti ? L.ti_off_at[L.n_ti - 1] + 8 : size;
    char path[2200];
    snprintf(path, sizeof path, "%s/mutant.gguf", g_tmp);
    VKT_CHECK(rb_write_file(path, orig, size) && try_load(path) == VKF_OK,
              "the synthetic GGUF does not load: %s", vkf_last_error());
    uint8_t *d = malloc(size);
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    int n_ok = 0, n_fail = 0, n_bad = 0, by[VKF_ERROR_INTERNAL + 1] = {0};
    for (int it = 0; it < iters; it++) {
        memcpy(d, orig, size);
        int nm = 1 + (int)(rng_next(&seed) % 8);
        for (int j = 0; j < nm; j++) {
            size_t at = rng_next(&seed) % 4 ? rng_next(&seed) % meta_end : rng_next(&seed) % size;
            if (k >= 0 && at >= ctx_at && at < ctx_at + 4) continue;
            uint64_t r = rng_next(&seed);
            d[at] = r % 3 == 0      ? (uint8_t)(d[at] ^ (1u << (r >> 8) % 8))
                    : r % 3 == 1    ? (uint8_t)(r >> 16)
                    : (r >> 16) % 2 ? 0xFF
                                    : 0;
        }
        rb_write_file(path, d, size);
        vkf_model_params mp = {.path = path};
        vkf_model *m = NULL;
        vkf_status st = vkf_model_load(g_ctx, &mp, &m);
        if (st == VKF_OK) {
            n_ok++;
            vkf_session *s = NULL;
            vkf_session_params sp = {.n_ctx = 8};
            vkf_model_desc md;
            vkf_model_describe(m, &md);
            int32_t toks[2] = {0, md.n_vocab - 1};
            float *lg = malloc((size_t)md.n_vocab * 2 * sizeof *lg);
            vkf_status es = vkf_session_create(m, &sp, &s);
            if (es == VKF_OK) es = vkf_session_eval(s, toks, 2, lg);
            if (es != VKF_OK && es != VKF_ERROR_OUT_OF_MEMORY) {
                n_bad++;
                VKT_CHECK(0, "mutant %d loads but does not evaluate: %s: %s", it,
                          vkf_status_name(es), vkf_last_error());
            }
            free(lg);
            vkf_session_free(s);
            vkf_model_free(m);
        } else {
            n_fail++;
            if (st <= VKF_ERROR_INTERNAL) by[st]++;
            if (getenv("VKT_VERBOSE") && st != VKF_ERROR_FORMAT)
                printf("    mutant %d: %s: %s\n", it, vkf_status_name(st), vkf_last_error());
            if (st != VKF_ERROR_FORMAT && st != VKF_ERROR_UNSUPPORTED &&
                st != VKF_ERROR_OUT_OF_MEMORY) {
                n_bad++;
                VKT_CHECK(0, "mutant %d: %s: %s", it, vkf_status_name(st), vkf_last_error());
            }
            VKT_CHECK(m == NULL, "mutant %d: a failed load left the output set", it);
        }
    }
    VKT_CHECK(n_bad == 0, "%d bad outcomes", n_bad);
    printf("  %d mutants: %d loaded and evaluated, %d refused (%d FORMAT, %d UNSUPPORTED, %d "
           "OUT_OF_MEMORY)\n",
           iters, n_ok, n_fail, by[VKF_ERROR_FORMAT], by[VKF_ERROR_UNSUPPORTED],
           by[VKF_ERROR_OUT_OF_MEMORY]);
    free(d);
    free(orig);
}

/* ------------------------------------------------------------------ main */

int main(void) {
    if (!vkt_need_fixtures("llama-tiny seed-transformer-tiny")) return vkt_finish();
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    VKT_OK(vkf_context_create(&cp, &g_ctx));
    g_tmp = rb_mkdtemp("files");
    if (!g_ctx || !g_tmp) return vkt_finish();
    printf("truncation\n");
    test_truncation();
    printf("safetensors headers\n");
    test_safetensors_headers();
    printf("config.json\n");
    test_configs();
    printf("gguf\n");
    test_gguf();
    printf("random mutations\n");
    const char *mi = getenv("VKT_MUTATIONS");
    test_mutations(mi && *mi ? atoi(mi) : rb_asan() || rb_valgrind() ? 1000 : 4000);
    rb_rmtree(g_tmp);
    free(g_tmp);
    vkf_context_free(g_ctx);
    return vkt_finish();
}
