#include "graph/tensor.h"

#include <stdio.h>
#include <string.h>

#include "core/dtype.h"

size_t vkf_tensor_nbytes(const vkf_tensor *t) {
    if (t->rows <= 0) return 0;
    return vkf_dtype_row_bytes(t->dtype, (t->rows - 1) * t->row_stride + t->cols);
}

size_t vkf_tensor_row_offset(const vkf_tensor *t, int64_t r) {
    return vkf_dtype_row_bytes(t->dtype, r * t->row_stride);
}

vkf_tensor vkf_tensor_make(vkf_dtype dtype, int64_t rows, int64_t cols, const char *name) {
    vkf_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.rows = rows;
    t.cols = cols;
    t.row_stride = cols;
    if (name) snprintf(t.name, sizeof t.name, "%s", name);
    return t;
}

vkf_tensor vkf_tensor_view(const vkf_tensor *t, int64_t r0, int64_t n, int64_t c0, int64_t nc) {
    vkf_tensor v = *t;
    v.rows = n;
    v.cols = nc;
    v.offset = t->offset + vkf_tensor_row_offset(t, r0) + vkf_dtype_row_bytes(t->dtype, c0);
    return v;
}
