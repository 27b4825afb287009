/* Weight upload: stored tensors (mapped file) -> backend tensors, once per model.
 *
 * Matrices keep their stored dtype (the kernels dequantize inside; no dequantized copy is
 * kept). Vectors become F32 (norm and bias kernels read F32). HF Conv1D weights are stored
 * [in, out] and are transposed on the host into [out, in] through a temporary copy. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "model/model.h"
#include "runtime/context.h"

/* ------------------------------------------------------------------ buffer bookkeeping */

/* The backend uploads go to now: the split's device of the tensors being loaded. */
static vkf_backend *upload_be(const vkf_model *m) { return vkf_model_dev_be(m, m->upload_dev); }

static vkf_status model_track(vkf_model *m, vkf_buffer *b) {
    if (m->n_bufs == m->cap_bufs) {
        int cap = m->cap_bufs ? 2 * m->cap_bufs : VKF_MODEL_MAX_BUFS_INIT;
        vkf_buffer **nb = realloc(m->bufs, (size_t)cap * sizeof *nb);
        if (!nb) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "model: out of host memory");
        m->bufs = nb;
        vkf_backend **nbe = realloc(m->buf_be, (size_t)cap * sizeof *nbe);
        if (!nbe) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "model: out of host memory");
        m->buf_be = nbe;
        m->cap_bufs = cap;
    }
    m->buf_be[m->n_bufs] = upload_be(m);
    m->bufs[m->n_bufs++] = b;
    return VKF_OK;
}

void vkf_load_progress_step(size_t bytes);

static vkf_status model_alloc(vkf_model *m, vkf_tensor *t, const void *data) {
    vkf_backend *be = upload_be(m);
    vkf_status s = vkf_tensor_alloc(be, t, VKF_BUFFER_WEIGHTS, data);
    if (s != VKF_OK) return vkf_error_prefix(s, "%s: uploading %s", m->path, t->name);
    s = model_track(m, t->buf);
    if (s != VKF_OK) {
        be->i->buffer_free(be, t->buf);
        t->buf = NULL;
        return s;
    }
    m->weight_bytes += vkf_tensor_nbytes(t);
    m->dev_weight_bytes[m->upload_dev] += vkf_tensor_nbytes(t);
    vkf_load_progress_step(vkf_tensor_nbytes(t)); /* api_public.c: vkf_model_params.progress */
    return VKF_OK;
}

int vkf_tensor_present(const vkf_tensor *t) { return t->buf != NULL; }

/* ------------------------------------------------------------------ the file, in place */

vkf_status vkf_model_open_file(vkf_model *m, const char *path) {
    return vkf_mapfile_open_ex(path, m->no_mmap ? VKF_MAP_READ : VKF_MAP_MMAP, &m->file);
}

void vkf_model_release_file(vkf_model *m) {
    if (m->n_in_place == 0) vkf_mapfile_close(&m->file);
}

int vkf_model_in_place_possible(const vkf_model *m) {
    if (!m->be->i->buffer_import || !m->be->import_host || !m->file.data) return 0;
    return !m->ctx->sw.no_import;
}

/* A stored matrix whose bytes lie in m->file: the backend may use them where they are (the CPU,
 * and unified-memory GPUs with VK_EXT_external_memory_host), so the weights exist once. Returns
 * 1 when it did; 0 when the caller copies (the no_import switch, VKF_NO_IMPORT=1, forces that,
 * for comparison). */
static int model_in_place(vkf_model *m, vkf_tensor *t, const void *data) {
    size_t n = vkf_tensor_nbytes(t);
    const uint8_t *p = data;
    vkf_backend *be = upload_be(m);
    if (!vkf_model_in_place_possible(m) || !be->i->buffer_import || !be->import_host ||
        p < m->file.data || n > m->file.size || (size_t)(p - m->file.data) > m->file.size - n)
        return 0;
    vkf_buffer *b = NULL;
    if (be->i->buffer_import(be, data, n, m->file.data, m->file.size, &b) != VKF_OK) {
        vkf_error_clear(); /* not an error: the caller copies */
        return 0;
    }
    t->buf = b;
    t->offset = 0;
    if (model_track(m, b) != VKF_OK) {
        be->i->buffer_free(be, b);
        t->buf = NULL;
        return 0;
    }
    m->weight_bytes += n;
    m->dev_weight_bytes[m->upload_dev] += n;
    m->weight_bytes_in_place += n;
    m->n_in_place++;
    return 1;
}

/* ------------------------------------------------------------------ uploads */

vkf_status vkf_model_upload(vkf_model *m, vkf_tensor *t, const char *name, vkf_wkind kind,
                            vkf_dtype dtype, int64_t rows, int64_t cols, const void *data) {
    size_t esz = vkf_dtype_block_bytes(dtype);
    if (!vkf_wtype_is_weight(dtype) || esz == 0)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: tensor %s has dtype %s; weights must be one of %s", m->path, name,
                         vkf_dtype_name(dtype), vkf_wtype_weight_list());
    int quant = vkf_wtype_is_quant(dtype);
    void *tmp = NULL;
    if (kind == VKF_W_VECTOR) {
        int64_t n = rows * cols;
        *t = vkf_tensor_make(VKF_DTYPE_F32, 1, n, name);
        if (dtype != VKF_DTYPE_F32) { /* norms and biases are read as F32 by every kernel */
            tmp = malloc((size_t)n * sizeof(float) + 1);
            if (!tmp)
                return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", m->path,
                                 name);
            vkf_dequantize_row(dtype, data, tmp, n);
            data = tmp;
        }
    } else if (kind == VKF_W_CONV1D) {
        if (quant)
            return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: Conv1D tensor %s cannot be %s", m->path,
                             name, vkf_dtype_name(dtype));
        /* stored [in = rows, out = cols]; kernels want [out, in] */
        *t = vkf_tensor_make(dtype, cols, rows, name);
        tmp = malloc((size_t)(rows * cols) * esz + 1);
        if (!tmp)
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", m->path, name);
        const char *src = data;
        char *dst = tmp;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t o = 0; o < cols; o++)
                memcpy(dst + (size_t)(o * rows + i) * esz, src + (size_t)(i * cols + o) * esz, esz);
        data = tmp;
    } else {
        *t = vkf_tensor_make(dtype, rows, cols, name);
    }
    vkf_status s = !tmp && model_in_place(m, t, data) ? VKF_OK : model_alloc(m, t, data);
    free(tmp);
    if (s != VKF_OK) return s;
    m->n_params += rows * cols;
    m->n_by_dtype[dtype]++;
    return VKF_OK;
}

vkf_status vkf_model_upload_table(vkf_model *m, vkf_tensor *t, const char *name, int64_t rows,
                                  int64_t cols, const float *data) {
    *t = vkf_tensor_make(VKF_DTYPE_F32, rows, cols, name);
    return model_alloc(m, t, data);
}

/* ------------------------------------------------------------------ token checks */

vkf_status vkf_check_tokens(const int32_t *tokens, int64_t n, int32_t n_vocab, const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            return vkf_error(VKF_ERROR_TOKEN,
                             "%s: token id %d at position %lld is outside the vocabulary [0, %d)",
                             what, tokens[i], (long long)i, n_vocab);
    return VKF_OK;
}
