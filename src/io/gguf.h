/* GGUF reader (versions 2 and 3, little-endian): metadata key/values and tensor infos, with the
 * file mapped once and tensors as pointers into the mapping (zero copy).
 *
 * Usage:
 *     vkf_gguf *g;
 *     VKF_TRY(vkf_gguf_open("llama-tiny-q8_0.gguf", &g));
 *     uint32_t n_layer;
 *     VKF_TRY(vkf_gguf_require_u32(g, "llama.block_count", &n_layer));
 *     float eps;
 *     VKF_TRY(vkf_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f, &eps));
 *     const vkf_gguf_tensor *wq;
 *     int64_t ne[2] = {256, 256};  // ggml order: ne[0] = row length (in), ne[1] = rows (out)
 *     VKF_TRY(vkf_gguf_get_tensor(g, "blk.0.attn_q.weight", -1, 2, ne, &wq));
 *     ... wq->dtype, wq->data, wq->rows x wq->cols ...
 *     vkf_gguf_close(g);
 *
 * open() validates everything and never reads outside the file: a file truncated at any byte
 * gives VKF_ERROR_FORMAT; string lengths and array counts are checked against the bytes left
 * before anything is allocated; general.alignment (default 32) must be a uint32 power of two;
 * tensor infos: name length 1..255, n_dims <= 4, every dim > 0 and the element count without
 * overflow, a type the weight-type table reads (src/core/wtype.c: F32, F16, BF16, Q8_0, Q4_0,
 * Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS, MXFP4; any other ggml type is VKF_ERROR_UNSUPPORTED
 * naming the tensor and the type number), rows a multiple of the type's block (32 or 256),
 * offsets aligned and inside the file, no overlapping tensors, no duplicate keys or names.
 * Nested arrays (arrays of arrays) are supported, 8 levels deep at most. */
#ifndef VKF_IO_GGUF_H
#define VKF_IO_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "vkformer.h"

#define VKF_GGUF_MAX_DIMS 4
#define VKF_GGUF_DEFAULT_ALIGNMENT 32

/* Metadata value types, numbered as in the file. */
typedef enum vkf_gguf_type {
    VKF_GGUF_TYPE_UINT8 = 0,
    VKF_GGUF_TYPE_INT8 = 1,
    VKF_GGUF_TYPE_UINT16 = 2,
    VKF_GGUF_TYPE_INT16 = 3,
    VKF_GGUF_TYPE_UINT32 = 4,
    VKF_GGUF_TYPE_INT32 = 5,
    VKF_GGUF_TYPE_FLOAT32 = 6,
    VKF_GGUF_TYPE_BOOL = 7,
    VKF_GGUF_TYPE_STRING = 8,
    VKF_GGUF_TYPE_ARRAY = 9,
    VKF_GGUF_TYPE_UINT64 = 10,
    VKF_GGUF_TYPE_INT64 = 11,
    VKF_GGUF_TYPE_FLOAT64 = 12,
    VKF_GGUF_TYPE_COUNT
} vkf_gguf_type;

/* One metadata value. Scalars and scalar arrays point into the mapping (little-endian, possibly
 * unaligned: read them with the accessors below). */
typedef struct vkf_gguf_value {
    vkf_gguf_type type;
    vkf_gguf_type elem_type;            /* ARRAY: type of the elements */
    uint64_t count;                     /* ARRAY: number of elements; STRING: bytes */
    const uint8_t *raw;                 /* scalar: its bytes; STRING: its bytes (no NUL);
                                           ARRAY of scalars: the first element */
    const struct vkf_gguf_value *elems; /* ARRAY of STRING or ARRAY: one value per element */
    const char *str;                    /* STRING of a key/value: NUL-terminated copy (NULL for
                                           strings inside arrays) */
} vkf_gguf_value;

typedef struct vkf_gguf_kv {
    const char *key; /* "llama.block_count" */
    vkf_gguf_value value;
} vkf_gguf_kv;

typedef struct vkf_gguf_tensor {
    const char *name;              /* "blk.0.attn_q.weight" */
    vkf_dtype dtype;               /* a weight type of src/core/wtype.c */
    uint32_t ggml_type;            /* as in the file: 0, 1, 30, 8, 2 */
    int n_dims;                    /* as in the file, 0..4 */
    int64_t ne[VKF_GGUF_MAX_DIMS]; /* ggml order: ne[0] innermost (row length); unused = 1 */
    int64_t n_elems;               /* ne[0]*ne[1]*ne[2]*ne[3] */
    int64_t rows;                  /* row-major view: ne[1]*ne[2]*ne[3] */
    int64_t cols;                  /* row-major view: ne[0] (multiple of 32 if quantized) */
    uint64_t offset;               /* bytes from the start of the file (aligned) */
    const void *data;              /* into the mapping, aligned to general.alignment */
    size_t nbytes;
} vkf_gguf_tensor;

typedef struct vkf_gguf vkf_gguf;

/* ------------------------------------------------------------------ file */

/* Maps and validates path. VKF_ERROR_IO (open/mmap), VKF_ERROR_FORMAT (malformed or truncated;
 * the message names the key or tensor), VKF_ERROR_UNSUPPORTED (version 1 or > 3, big-endian,
 * an unsupported tensor type). */
vkf_status vkf_gguf_open(const char *path, vkf_gguf **out);
/* The same over size bytes in memory (fuzzing, embedded models): data is not copied and must
 * outlive the handle; name is used in messages (NULL: "(memory)"). */
vkf_status vkf_gguf_open_memory(const void *data, size_t size, const char *name, vkf_gguf **out);
void vkf_gguf_close(vkf_gguf *g);

const char *vkf_gguf_path(const vkf_gguf *g);     /* as given to open(), for messages */
uint32_t vkf_gguf_version(const vkf_gguf *g);     /* 2 or 3 */
uint32_t vkf_gguf_alignment(const vkf_gguf *g);   /* general.alignment or 32 */
uint64_t vkf_gguf_data_offset(const vkf_gguf *g); /* start of the tensor data section */
/* general.architecture ("llama", "gpt2"), NULL if absent or not a string. */
const char *vkf_gguf_architecture(const vkf_gguf *g);

/* ------------------------------------------------------------------ metadata */

size_t vkf_gguf_kv_count(const vkf_gguf *g);
const vkf_gguf_kv *vkf_gguf_kv_at(const vkf_gguf *g, size_t i); /* file order; NULL past end */
const vkf_gguf_kv *vkf_gguf_find(const vkf_gguf *g, const char *key); /* NULL if absent */
const char *vkf_gguf_type_name(vkf_gguf_type t); /* "uint32", "string", "array", ... */

/* Typed getters. get_*: an absent key gives def and VKF_OK; require_*: an absent key is
 * VKF_ERROR_FORMAT "x.gguf: missing key llama.block_count". A present key of the wrong type or
 * out of range is VKF_ERROR_FORMAT "x.gguf: key K: expected uint32, found string".
 * Integer getters accept any integer type whose value fits; float getters accept float32,
 * float64 and integers; bool needs a bool; str needs a string (the pointer is owned by g). */
vkf_status vkf_gguf_get_u32(const vkf_gguf *g, const char *key, uint32_t def, uint32_t *out);
vkf_status vkf_gguf_get_i32(const vkf_gguf *g, const char *key, int32_t def, int32_t *out);
vkf_status vkf_gguf_get_u64(const vkf_gguf *g, const char *key, uint64_t def, uint64_t *out);
vkf_status vkf_gguf_get_i64(const vkf_gguf *g, const char *key, int64_t def, int64_t *out);
vkf_status vkf_gguf_get_f32(const vkf_gguf *g, const char *key, float def, float *out);
vkf_status vkf_gguf_get_f64(const vkf_gguf *g, const char *key, double def, double *out);
vkf_status vkf_gguf_get_bool(const vkf_gguf *g, const char *key, int def, int *out);
vkf_status vkf_gguf_get_str(const vkf_gguf *g, const char *key, const char *def, const char **out);
vkf_status vkf_gguf_require_u32(const vkf_gguf *g, const char *key, uint32_t *out);
vkf_status vkf_gguf_require_i32(const vkf_gguf *g, const char *key, int32_t *out);
vkf_status vkf_gguf_require_u64(const vkf_gguf *g, const char *key, uint64_t *out);
vkf_status vkf_gguf_require_i64(const vkf_gguf *g, const char *key, int64_t *out);
vkf_status vkf_gguf_require_f32(const vkf_gguf *g, const char *key, float *out);
vkf_status vkf_gguf_require_f64(const vkf_gguf *g, const char *key, double *out);
vkf_status vkf_gguf_require_bool(const vkf_gguf *g, const char *key, int *out);
vkf_status vkf_gguf_require_str(const vkf_gguf *g, const char *key, const char **out);
/* Arrays: elem_type is a vkf_gguf_type or -1 for any. get_arr gives *out = NULL when the key is
 * absent; require_arr fails then. Wrong type or element type is VKF_ERROR_FORMAT. */
vkf_status vkf_gguf_get_arr(const vkf_gguf *g, const char *key, int elem_type,
                            const vkf_gguf_value **out);
vkf_status vkf_gguf_require_arr(const vkf_gguf *g, const char *key, int elem_type,
                                const vkf_gguf_value **out);

/* Array elements (i < a->count; out of range or wrong kind gives 0 / NULL).
 * arr_int: integer or bool arrays (uint64 values above INT64_MAX wrap);
 * arr_float: any numeric array; arr_str: string arrays, *len bytes, NOT NUL-terminated;
 * arr_elem: the element as a value (string and nested arrays). */
int64_t vkf_gguf_arr_int(const vkf_gguf_value *a, uint64_t i);
double vkf_gguf_arr_float(const vkf_gguf_value *a, uint64_t i);
const char *vkf_gguf_arr_str(const vkf_gguf_value *a, uint64_t i, size_t *len);
const vkf_gguf_value *vkf_gguf_arr_elem(const vkf_gguf_value *a, uint64_t i);

/* ------------------------------------------------------------------ tensors */

size_t vkf_gguf_tensor_count(const vkf_gguf *g);
const vkf_gguf_tensor *vkf_gguf_tensor_at(const vkf_gguf *g, size_t i);           /* file order */
const vkf_gguf_tensor *vkf_gguf_find_tensor(const vkf_gguf *g, const char *name); /* or NULL */
/* Finds name and checks dtype (a vkf_dtype, or -1 for any), n_dims and ne[0..n_dims) in ggml
 * order (ne may be NULL; an entry < 0 matches any size; trailing dims of 1 are ignored, so
 * ne {256} matches a tensor stored as {256, 1}; n_dims < 0 skips the shape check). Fails with
 * VKF_ERROR_FORMAT "x.gguf: missing tensor N" or
 * "x.gguf: tensor N: expected F32 ne [64, 192], found F16 ne [192, 64]". */
vkf_status vkf_gguf_get_tensor(const vkf_gguf *g, const char *name, int dtype, int n_dims,
                               const int64_t *ne, const vkf_gguf_tensor **out);

#endif
