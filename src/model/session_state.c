/* A sequence's KV cache as bytes (vkf_session_seq_state_*): serve's slot save and restore.
 * Sequence seq's token at position i lives in cache row seq * n_ctx + i of every layer's K and
 * V caches (session.c's seq_eval and seq_decode); the bytes are those rows, whole (a quantized
 * row's blocks move as they are), layer by layer, K before V. */
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "model/model.h"
#include "runtime/context.h"

static vkf_status check(const vkf_session *s, int32_t seq, int32_t n, const char *what) {
    if (!s) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "%s: NULL session", what);
    if (s->m->arch == VKF_ARCH_ENCODER || s->m->arch == VKF_ARCH_TRANSFORMER || !s->kc)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "%s: only a decoder-only model's session has a sequence cache", what);
    if (seq < 0 || seq >= s->n_batch)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "%s: sequence %d outside [0, %d)", what, seq,
                         s->n_batch);
    if (n < 0 || n > s->n_ctx)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "%s: %d rows outside [0, %d]", what, n,
                         s->n_ctx);
    return VKF_OK;
}

static size_t state_bytes(const vkf_session *s, int32_t n) {
    int64_t kvd = s->kc[0].cols;
    size_t row =
        vkf_dtype_row_bytes(s->kc[0].dtype, kvd) + vkf_dtype_row_bytes(s->vc[0].dtype, kvd);
    return (size_t)s->m->hp.n_layer * (size_t)n * row;
}

vkf_status vkf_session_seq_state_size(const vkf_session *s, int32_t n, size_t *bytes) {
    VKF_TRY(check(s, 0, n, "seq_state_size"));
    if (!bytes) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "seq_state_size: NULL bytes");
    *bytes = state_bytes(s, n);
    return VKF_OK;
}

static vkf_status copy_rows(vkf_session *s, int32_t seq, int32_t n, char *buf, const char *src,
                            size_t size, const char *what) {
    VKF_TRY(check(s, seq, n, what));
    if (!(buf || src) || size != state_bytes(s, n))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "%s: %zu bytes given; %d rows of this session's cache take %zu", what,
                         size, n, state_bytes(s, n));
    if (n == 0) return VKF_OK;
    int64_t kvd = s->kc[0].cols;
    vkf_status st = VKF_OK;
    size_t off = 0;
    vkf_context_lock(s->m->ctx);
    for (int l = 0; l < s->m->hp.n_layer && st == VKF_OK; l++) {
        vkf_backend *be = vkf_model_dev_be(s->m, vkf_model_layer_dev(s->m, l));
        vkf_tensor *caches[2] = {&s->kc[l], &s->vc[l]};
        for (int c = 0; c < 2 && st == VKF_OK; c++) {
            vkf_tensor v = vkf_tensor_view(caches[c], (int64_t)seq * s->n_ctx, n, 0, kvd);
            st = src ? vkf_tensor_write(be, &v, src + off) : vkf_tensor_read(be, &v, buf + off);
            off += (size_t)n * vkf_dtype_row_bytes(caches[c]->dtype, kvd);
        }
    }
    vkf_context_unlock(s->m->ctx);
    return st;
}

vkf_status vkf_session_seq_state_get(vkf_session *s, int32_t seq, int32_t n, void *buf,
                                     size_t size) {
    return copy_rows(s, seq, n, buf, NULL, size, "seq_state_get");
}

vkf_status vkf_session_seq_state_set(vkf_session *s, int32_t seq, int32_t n, const void *buf,
                                     size_t size) {
    return copy_rows(s, seq, n, NULL, buf, size, "seq_state_set");
}
