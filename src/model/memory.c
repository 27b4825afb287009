/* Memory by use (weights, KV cache, activations) and the checks that refuse a model or a
 * context that cannot fit before anything is allocated. */
#include <string.h>

#include "core/error.h"
#include "model/model.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void device_memory(vkf_backend *be, uint64_t *total, uint64_t *used) {
    *total = *used = 0;
    if (be->i->memory_info) be->i->memory_info(be, total, used);
}

vkf_status vkf_model_memory(const vkf_model *m, vkf_memory_info *out) {
    if (!m || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "model_memory: NULL model or output");
    memset(out, 0, sizeof *out);
    out->weights = m->weight_bytes;
    out->weights_in_place = m->weight_bytes_in_place;
    vkf_context_lock(m->ctx);
    device_memory(m->be, &out->device_total, &out->device_used);
    vkf_context_unlock(m->ctx);
    return VKF_OK;
}

static uint64_t tensors_bytes(const vkf_tensor *t, int n) {
    uint64_t b = 0;
    for (int i = 0; t && i < n; i++)
        b += vkf_tensor_nbytes(&t[i]);
    return b;
}

vkf_status vkf_session_memory(const vkf_session *s, vkf_memory_info *out) {
    if (!s || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "session_memory: NULL session or output");
    VKF_TRY(vkf_model_memory(s->m, out));
    int nl = s->m->hp.n_layer;
    out->kv_cache = tensors_bytes(s->kc, nl) + tensors_bytes(s->vc, nl) + tensors_bytes(s->xk, nl) +
                    tensors_bytes(s->xv, nl);
    for (int i = 0; i < s->n_graphs; i++) {
        const vkf_sgraph *g = &s->graphs[i];
        out->activations += (g->g ? g->g->arena_bytes : 0) +
                            (g->ids.buf ? vkf_tensor_nbytes(&g->ids) : 0) +
                            (g->lens.buf ? vkf_tensor_nbytes(&g->lens) : 0) +
                            (g->out.buf ? vkf_tensor_nbytes(&g->out) : 0);
    }
    return VKF_OK;
}

vkf_status vkf_memory_check_fit(vkf_model *m, uint64_t need, const char *what, const char *advice) {
    uint64_t total, used;
    device_memory(m->be, &total, &used);
    if (!total || used + need <= total) return VKF_OK;
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY,
                     "%s: %s needs %.2f GiB, the device has %.2f GiB (%.2f GiB in use)%s%s",
                     m->path, what, (double)need / GIB, (double)total / GIB, (double)used / GIB,
                     advice ? "; " : "", advice ? advice : "");
}
