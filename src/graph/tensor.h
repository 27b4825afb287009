/* Tensors: a typed 2-D view (rows x cols, row-major, explicit row stride) of a backend buffer.
 *
 * Every op reads its operands as matrices; higher-rank layouts ([batch, seq, head, dim]) are
 * described by op parameters, not by the tensor. A row may be longer than cols (row_stride),
 * so a column block of a fused QKV projection or a KV cache slice is a view, never a copy. */
#ifndef VKF_GRAPH_TENSOR_H
#define VKF_GRAPH_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "vkformer.h"

typedef struct vkf_buffer vkf_buffer; /* owned by a backend (host memory or a VkBuffer range) */

typedef struct vkf_tensor {
    vkf_dtype dtype;
    int64_t rows;       /* number of rows */
    int64_t cols;       /* elements per row (a multiple of the dtype's block: 32 or 256) */
    int64_t row_stride; /* elements between row starts, >= cols (== cols for quantized types) */
    vkf_buffer *buf;    /* NULL until allocated */
    size_t offset;      /* bytes from the start of buf */
    char name[64];      /* for error messages: "blk.3.attn_q.weight" */
} vkf_tensor;

/* Bytes spanned by t: (rows-1)*row_stride + cols elements, in t's storage type. */
size_t vkf_tensor_nbytes(const vkf_tensor *t);
/* Byte offset of row r relative to t->offset. */
size_t vkf_tensor_row_offset(const vkf_tensor *t, int64_t r);
/* A contiguous rows x cols tensor description with no buffer. */
vkf_tensor vkf_tensor_make(vkf_dtype dtype, int64_t rows, int64_t cols, const char *name);
/* A view of rows [r0, r0+n) and columns [c0, c0+nc) of t (plain dtypes; c0 = 0 for quantized). */
vkf_tensor vkf_tensor_view(const vkf_tensor *t, int64_t r0, int64_t n, int64_t c0, int64_t nc);

#endif
