/* safetensors reader: the file is mapped once and tensors are pointers into the mapping.
 *
 * Usage:
 *     vkf_safetensors *st;
 *     VKF_TRY(vkf_safetensors_open("model.safetensors", &st));
 *     const vkf_st_tensor *w;
 *     int64_t dims[2] = {64, 192};
 *     VKF_TRY(vkf_safetensors_get(st, "h.0.attn.c_attn.weight", VKF_DTYPE_F32, 2, dims, &w));
 *     ... w->data, w->nbytes ...
 *     vkf_safetensors_close(st);
 *
 * Layout: 8-byte little-endian header length N, N bytes of JSON header, then the data section;
 * every tensor is {"dtype", "shape", "data_offsets": [begin, end]} with offsets relative to the
 * data section. "__metadata__" (string -> string) is kept apart from the tensors.
 *
 * open() validates the whole header: the header fits in the file, offsets lie inside the data
 * section, begin <= end, end - begin == product(shape) * element size (overflow-checked), no two
 * tensors overlap, rank 0..4, non-negative dims, no duplicate names. Every known safetensors
 * dtype is validated by size, but only F32, F16 and BF16 are supported: a tensor of another dtype
 * (I64 position_ids buffers, F64, ...) is listed with dtype == VKF_DTYPE_COUNT, and
 * vkf_safetensors_get() on it fails with VKF_ERROR_UNSUPPORTED naming the tensor, so one unused
 * buffer does not make the whole checkpoint unloadable. An unknown dtype string is a format
 * error at open(). */
#ifndef VKF_IO_SAFETENSORS_H
#define VKF_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "vkformer.h"

#define VKF_ST_MAX_RANK 4

typedef struct vkf_st_tensor {
    const char *name;               /* "h.0.attn.c_attn.weight" */
    vkf_dtype dtype;                /* F32, F16 or BF16; VKF_DTYPE_COUNT if unsupported */
    const char *dtype_name;         /* as in the file: "F32", "I64", ... */
    int rank;                       /* 0..4 */
    int64_t shape[VKF_ST_MAX_RANK]; /* row-major: shape[rank-1] is contiguous; unused dims = 1 */
    int64_t n_elems;                /* product of shape (1 for rank 0) */
    const void *data;               /* into the mapping; may be unaligned; NULL if nbytes == 0 */
    size_t nbytes;                  /* end - begin */
    uint64_t offset;                /* bytes from the start of the file */
} vkf_st_tensor;

typedef struct vkf_safetensors vkf_safetensors;

/* Maps and validates path. Errors: VKF_ERROR_IO (open/mmap), VKF_ERROR_FORMAT (any header or
 * layout problem; the message names the file and the tensor). */
vkf_status vkf_safetensors_open(const char *path, vkf_safetensors **out);
/* The same over size bytes in memory (fuzzing, embedded weights): data is not copied and must
 * outlive the handle; name is used in messages (NULL: "(memory)"). */
vkf_status vkf_safetensors_open_memory(const void *data, size_t size, const char *name,
                                       vkf_safetensors **out);
void vkf_safetensors_close(vkf_safetensors *st);

/* The path given to open(), for messages. */
const char *vkf_safetensors_path(const vkf_safetensors *st);
/* Tensors in header order. */
size_t vkf_safetensors_count(const vkf_safetensors *st);
const vkf_st_tensor *vkf_safetensors_tensor(const vkf_safetensors *st, size_t i);
/* NULL if absent. */
const vkf_st_tensor *vkf_safetensors_find(const vkf_safetensors *st, const char *name);
/* Value of a "__metadata__" entry, NULL if absent. */
const char *vkf_safetensors_metadata(const vkf_safetensors *st, const char *key);

/* Finds name and checks it: dtype (a vkf_dtype, or -1 for any supported dtype), rank (-1: any)
 * and dims[0..rank) (dims may be NULL; an entry < 0 matches any size). Fails with
 * VKF_ERROR_FORMAT "model.safetensors: missing tensor X" or
 * "model.safetensors: tensor X: expected F32 [64, 192], found F32 [192, 64]", and with
 * VKF_ERROR_UNSUPPORTED for a tensor whose dtype is not F32/F16/BF16. */
vkf_status vkf_safetensors_get(const vkf_safetensors *st, const char *name, int dtype, int rank,
                               const int64_t *dims, const vkf_st_tensor **out);

#endif
