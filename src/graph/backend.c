/* Backend-independent tensor helpers. */
#include "graph/backend.h"

#include <stdlib.h>

#include "core/dtype.h"
#include "core/error.h"

vkf_status vkf_tensor_alloc(vkf_backend *be, vkf_tensor *t, vkf_buffer_usage usage,
                            const void *data) {
    size_t n = vkf_tensor_nbytes(t);
    VKF_TRY(be->i->buffer_alloc(be, n ? n : 4, usage, &t->buf));
    t->offset = 0;
    vkf_status s = data ? be->i->buffer_write(be, t->buf, 0, data, n) : VKF_OK;
    if (s != VKF_OK) { /* a failed call leaves nothing allocated */
        be->i->buffer_free(be, t->buf);
        t->buf = NULL;
    }
    return s;
}

vkf_status vkf_tensor_write(vkf_backend *be, vkf_tensor *t, const void *data) {
    if (t->row_stride == t->cols || t->rows <= 1)
        return be->i->buffer_write(be, t->buf, t->offset, data, vkf_tensor_nbytes(t));
    size_t rb = vkf_dtype_row_bytes(t->dtype, t->cols);
    for (int64_t r = 0; r < t->rows; r++)
        VKF_TRY(be->i->buffer_write(be, t->buf, t->offset + vkf_tensor_row_offset(t, r),
                                    (const char *)data + r * rb, rb));
    return VKF_OK;
}

vkf_status vkf_tensor_read(vkf_backend *be, const vkf_tensor *t, void *data) {
    if (t->row_stride == t->cols || t->rows <= 1)
        return be->i->buffer_read(be, t->buf, t->offset, data, vkf_tensor_nbytes(t));
    size_t rb = vkf_dtype_row_bytes(t->dtype, t->cols);
    for (int64_t r = 0; r < t->rows; r++)
        VKF_TRY(be->i->buffer_read(be, t->buf, t->offset + vkf_tensor_row_offset(t, r),
                                   (char *)data + r * rb, rb));
    return VKF_OK;
}

vkf_status vkf_tensor_read_f32(vkf_backend *be, const vkf_tensor *t, float *data) {
    size_t rb = vkf_dtype_row_bytes(t->dtype, t->cols);
    char *tmp = malloc(rb * (size_t)t->rows + 1);
    if (!tmp) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "read %s: out of host memory", t->name);
    vkf_status s = vkf_tensor_read(be, t, tmp);
    if (s == VKF_OK)
        for (int64_t r = 0; r < t->rows; r++)
            vkf_dequantize_row(t->dtype, tmp + r * rb, data + r * t->cols, t->cols);
    free(tmp);
    return s;
}
