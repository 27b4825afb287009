/* The layer split (vkf_context_params.n_devices >= 2, llama.cpp's -sm layer): which device holds
 * which layers. Device i takes a contiguous block of layers in proportion to its share (the
 * context's tensor_split, else its free memory), rounded on the cumulative shares so the blocks
 * cover every layer once; the embeddings stay on device 0, the final norm and the output head on
 * the last device. Graphs are cut at the block boundaries (model/graph_decoder.c) and the
 * residual stream crosses through host-visible memory (model/session.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "model/model.h"

vkf_status vkf_model_split_assign(vkf_model *m) {
    const vkf_context *ctx = m->ctx;
    m->n_dev = 1;
    m->upload_dev = 0;
    m->layer0[0] = 0;
    m->layer0[1] = m->hp.n_layer;
    if (ctx->n_dev < 2) return VKF_OK;
    if (m->arch != VKF_ARCH_DECODER)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: a layer split over %d devices runs decoder-only models; this one is "
                         "%s (%s): run it on one device",
                         m->path, ctx->n_dev, vkf_model_arch_name(m),
                         m->arch == VKF_ARCH_TRANSFORMER ? "encoder-decoder" : "encoder-only");
    double cum = 0;
    for (int i = 0; i < ctx->n_dev; i++) {
        m->dev_be[i] = ctx->dev_be[i];
        m->layer0[i] = (int32_t)lround(cum * m->hp.n_layer);
        cum += ctx->prop[i];
    }
    m->layer0[ctx->n_dev] = m->hp.n_layer;
    for (int i = 1; i < ctx->n_dev; i++) /* rounding never leaves a block negative */
        if (m->layer0[i] < m->layer0[i - 1]) m->layer0[i] = m->layer0[i - 1];
    m->n_dev = ctx->n_dev;
    return VKF_OK;
}

int vkf_model_layer_dev(const vkf_model *m, int l) {
    for (int i = m->n_dev - 1; i > 0; i--)
        if (l >= m->layer0[i]) return i;
    return 0;
}

int vkf_model_split(const vkf_model *m, vkf_split_device *out, int cap) {
    const vkf_hparams *hp = &m->hp;
    size_t kv_layer = 0; /* K and V of one layer, bytes per token, in the load's cache types */
    if (m->arch != VKF_ARCH_ENCODER) {
        int64_t kvd = (int64_t)hp->n_kv_head * hp->head_dim;
        kv_layer = vkf_dtype_row_bytes(vkf_session_cache_dtype(m, m->cache_type_k), kvd) +
                   vkf_dtype_row_bytes(vkf_session_cache_dtype(m, m->cache_type_v), kvd);
    }
    for (int i = 0; out && i < m->n_dev && i < cap; i++) {
        vkf_split_device *d = &out[i];
        memset(d, 0, sizeof *d);
        d->device = vkf_model_dev_be(m, i)->device_name;
        d->layer0 = m->n_dev > 1 ? m->layer0[i] : 0;
        d->n_layers = m->n_dev > 1 ? m->layer0[i + 1] - m->layer0[i] : hp->n_layer;
        d->weight_bytes = m->n_dev > 1 ? m->dev_weight_bytes[i] : m->weight_bytes;
        d->kv_bytes_per_token = kv_layer * (size_t)d->n_layers;
        d->embeddings = i == 0;
        d->output = i == m->n_dev - 1;
    }
    return m->n_dev;
}

size_t vkf_model_split_text(const vkf_model *m, char *buf, size_t cap) {
    size_t n = 0;
    if (m->n_dev < 2 || cap == 0) return 0;
    vkf_split_device d[VKF_MAX_DEVICES];
    int nd = vkf_model_split(m, d, VKF_MAX_DEVICES);
    for (int i = 0; i < nd && n < cap; i++) {
        char layers[48];
        if (d[i].n_layers == 1)
            snprintf(layers, sizeof layers, "layer %d", d[i].layer0);
        else if (d[i].n_layers > 1)
            snprintf(layers, sizeof layers, "layers %d-%d", d[i].layer0,
                     d[i].layer0 + d[i].n_layers - 1);
        else
            snprintf(layers, sizeof layers, "no layers");
        n += (size_t)snprintf(buf + n, cap - n,
                              "split %d        %s: %s%s%s, weights %.2f MiB, KV cache %zu bytes "
                              "per token\n",
                              i, d[i].device, layers, d[i].embeddings ? ", embeddings" : "",
                              d[i].output ? ", output head" : "",
                              (double)d[i].weight_bytes / 1048576.0, d[i].kv_bytes_per_token);
    }
    return n < cap ? n : cap - 1;
}
