/* Sessions: KV caches, encoder memory and the per-shape graph cache.
 *
 * Every sequence of a session advances together (one n_past); a graph is built the first time
 * a (kind, n, batch, flags) shape is needed and replayed afterwards with the current n_past,
 * after rewriting its input tensors (token ids, key lengths). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "model/model.h"

/* ------------------------------------------------------------------ graph cache */

static void buf_free(vkf_backend *be, vkf_tensor *t) {
    if (t->buf) be->i->buffer_free(be, t->buf);
    t->buf = NULL;
}

/* A split graph's parts (model/graph_decoder.c): part 0's inputs are the sgraph's own. */
static void sg_release_parts(vkf_session *s, vkf_sgraph *sg) {
    if (sg->n_parts == 0) return;
    for (int k = 0; k < sg->n_parts; k++) {
        vkf_sgpart *pt = &sg->part[k];
        if (pt->g != sg->g) vkf_graph_free(pt->g);
        buf_free(pt->be, &pt->xin);
        buf_free(pt->be, &pt->xout);
        if (k == 0) continue;
        buf_free(pt->be, &pt->lens);
        buf_free(pt->be, &pt->pos);
        buf_free(pt->be, &pt->kvrow);
    }
    /* the logits live on the last device */
    buf_free(vkf_model_dev_be(s->m, s->m->n_dev - 1), &sg->out);
    free(sg->xfer);
}

static void sg_release(vkf_session *s, vkf_sgraph *sg) {
    vkf_backend *be = s->m->be;
    sg_release_parts(s, sg);
    vkf_graph_free(sg->g);
    buf_free(be, &sg->ids);
    buf_free(be, &sg->lens);
    buf_free(be, &sg->out);
    buf_free(be, &sg->pos);
    buf_free(be, &sg->kvrow);
    memset(sg, 0, sizeof *sg);
}

/* The backend of the logits. */
static vkf_backend *sg_out_be(const vkf_session *s, const vkf_sgraph *sg) {
    return sg->n_parts ? sg->part[sg->n_parts - 1].be : s->m->be;
}

/* Writes the per-step inputs every device's part reads: key lengths, and serve's positions and
 * cache rows (pos, row NULL otherwise). */
static vkf_status sg_write_inputs(vkf_session *s, vkf_sgraph *sg, const int32_t *lens,
                                  const int32_t *pos, const int32_t *row) {
    if (sg->n_parts == 0) {
        vkf_backend *be = s->m->be;
        VKF_TRY(vkf_tensor_write(be, &sg->lens, lens));
        if (pos) VKF_TRY(vkf_tensor_write(be, &sg->pos, pos));
        if (row) VKF_TRY(vkf_tensor_write(be, &sg->kvrow, row));
        return VKF_OK;
    }
    for (int k = 0; k < sg->n_parts; k++) {
        vkf_sgpart *pt = &sg->part[k];
        VKF_TRY(vkf_tensor_write(pt->be, &pt->lens, lens));
        if (pos) VKF_TRY(vkf_tensor_write(pt->be, &pt->pos, pos));
        if (row) VKF_TRY(vkf_tensor_write(pt->be, &pt->kvrow, row));
    }
    return VKF_OK;
}

static vkf_status sg_get_seq(vkf_session *s, vkf_sgraph_kind kind, int32_t n, int32_t batch,
                             int32_t rep, int32_t flags, int32_t seq0, vkf_sgraph **out) {
    s->clock++;
    for (int i = 0; i < s->n_graphs; i++) {
        vkf_sgraph *g = &s->graphs[i];
        if (g->kind == kind && g->n == n && g->batch == batch && g->rep == rep &&
            g->flags == flags && g->seq0 == seq0) {
            g->last_use = s->clock;
            *out = g;
            return VKF_OK;
        }
    }
    int slot = s->n_graphs;
    if (slot == VKF_SESSION_MAX_GRAPHS) { /* evict the least recently used shape */
        slot = 0;
        for (int i = 1; i < s->n_graphs; i++)
            if (s->graphs[i].last_use < s->graphs[slot].last_use) slot = i;
        sg_release(s, &s->graphs[slot]);
    } else {
        s->n_graphs++;
    }
    vkf_sgraph *g = &s->graphs[slot];
    memset(g, 0, sizeof *g);
    g->kind = kind;
    g->n = n;
    g->batch = batch;
    g->rep = rep;
    g->flags = flags;
    g->seq0 = seq0;
    vkf_status st;
    if (kind == VKF_SG_EMBED)
        st = vkf_build_embed_graph(s, g);
    else if (kind == VKF_SG_ENCODER)
        st = vkf_build_encoder_graph(s, g);
    else if (s->m->arch == VKF_ARCH_TRANSFORMER)
        st = vkf_build_encdec_decoder_graph(s, g);
    else
        st = vkf_build_decoder_graph(s, g);
    if (st != VKF_OK) {
        sg_release(s, g);
        /* keep the slot list dense */
        s->graphs[slot] = s->graphs[s->n_graphs - 1];
        memset(&s->graphs[s->n_graphs - 1], 0, sizeof s->graphs[0]);
        s->n_graphs--;
        return st;
    }
    g->last_use = s->clock;
    *out = g;
    return VKF_OK;
}

static vkf_status sg_get(vkf_session *s, vkf_sgraph_kind kind, int32_t n, int32_t batch,
                         int32_t rep, int32_t flags, vkf_sgraph **out) {
    return sg_get_seq(s, kind, n, batch, rep, flags, 0, out);
}

vkf_status vkf_session_graph(vkf_session *s, vkf_sgraph_kind kind, int32_t n, int32_t batch,
                             int32_t flags, vkf_sgraph **out) {
    return sg_get(s, kind, n, batch, 1, flags, out);
}

/* Runs a cached graph. A failure names the graph, its ops and the device: the whole graph is
 * one submission on Vulkan, so a device loss or timeout cannot be narrowed to one op there
 * (the backend names the node itself when recording fails). */
static vkf_status sg_compute_graph(vkf_session *s, vkf_backend *be, vkf_graph *g, int32_t n_past) {
    vkf_status st = be->i->graph_compute(be, g, n_past);
    if (st == VKF_OK) return VKF_OK;
    const char *first = g->n_nodes ? vkf_op_name(g->nodes[0].op) : "-";
    const char *last = g->n_nodes ? vkf_op_name(g->nodes[g->n_nodes - 1].op) : "-";
    const char *last_dst =
        g->n_nodes && g->nodes[g->n_nodes - 1].dst ? g->nodes[g->n_nodes - 1].dst->name : "?";
    return vkf_error_prefix(st, "%s: graph \"%s\" (%d ops, %s .. %s -> %s) at position %d on %s",
                            s->m->path, g->name, g->n_nodes, first, last, last_dst, n_past,
                            be->device_name);
}

/* A layer split runs its parts in order, one submission per device: each graph_compute returns
 * when its device's fence has signalled, then the residual stream crosses through the host
 * (read from this device's host-visible xout, written into the next one's xin). */
static vkf_status sg_compute(vkf_session *s, vkf_sgraph *sg, int32_t n_past) {
    if (sg->n_parts == 0) return sg_compute_graph(s, s->m->be, sg->g, n_past);
    for (int k = 0; k < sg->n_parts; k++) {
        vkf_sgpart *pt = &sg->part[k];
        if (k > 0) {
            vkf_sgpart *pv = &sg->part[k - 1];
            if (!sg->xfer) sg->xfer = malloc(vkf_tensor_nbytes(&pt->xin));
            if (!sg->xfer) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "split: out of host memory");
            VKF_TRY(vkf_tensor_read(pv->be, &pv->xout, sg->xfer));
            VKF_TRY(vkf_tensor_write(pt->be, &pt->xin, sg->xfer));
        }
        VKF_TRY(sg_compute_graph(s, pt->be, pt->g, n_past));
    }
    return VKF_OK;
}

vkf_status vkf_session_graph_compute(vkf_session *s, vkf_sgraph *sg) {
    return sg_compute(s, sg, 0);
}

/* ------------------------------------------------------------------ create / free */

static vkf_status session_alloc_caches(vkf_session *s) {
    vkf_model *m = s->m;
    const vkf_hparams *hp = &m->hp;
    int64_t kvd = (int64_t)hp->n_kv_head * hp->head_dim;
    s->kc = calloc((size_t)hp->n_layer, sizeof *s->kc);
    s->vc = calloc((size_t)hp->n_layer, sizeof *s->vc);
    s->host_lens = calloc((size_t)s->n_batch, sizeof *s->host_lens);
    if (!s->kc || !s->vc || !s->host_lens)
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "session: out of host memory");
    if (m->arch == VKF_ARCH_ENCODER) return VKF_OK; /* embeddings: no cache */
    for (int l = 0; l < hp->n_layer; l++) { /* a layer's cache on the device of its weights */
        vkf_backend *be = vkf_model_dev_be(m, vkf_model_layer_dev(m, l));
        s->kc[l] =
            vkf_tensor_make(s->cache_dtype_k, (int64_t)s->n_batch * s->n_ctx, kvd, "k_cache");
        s->vc[l] =
            vkf_tensor_make(s->cache_dtype_v, (int64_t)s->n_batch * s->n_ctx, kvd, "v_cache");
        VKF_TRY(vkf_tensor_alloc(be, &s->kc[l], VKF_BUFFER_ACTIVATIONS, NULL));
        VKF_TRY(vkf_tensor_alloc(be, &s->vc[l], VKF_BUFFER_ACTIVATIONS, NULL));
    }
    if (m->arch != VKF_ARCH_TRANSFORMER) return VKF_OK;
    s->n_src_max = hp->n_ctx;
    s->xk = calloc((size_t)hp->n_layer, sizeof *s->xk);
    s->xv = calloc((size_t)hp->n_layer, sizeof *s->xv);
    if (!s->xk || !s->xv) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "session: out of host memory");
    for (int l = 0; l < hp->n_layer; l++) {
        s->xk[l] = vkf_tensor_make(VKF_DTYPE_F32, (int64_t)s->n_batch * s->n_src_max, hp->d_model,
                                   "cross_k");
        s->xv[l] = vkf_tensor_make(VKF_DTYPE_F32, (int64_t)s->n_batch * s->n_src_max, hp->d_model,
                                   "cross_v");
        VKF_TRY(vkf_tensor_alloc(m->be, &s->xk[l], VKF_BUFFER_ACTIVATIONS, NULL));
        VKF_TRY(vkf_tensor_alloc(m->be, &s->xv[l], VKF_BUFFER_ACTIVATIONS, NULL));
    }
    s->src_lens = vkf_tensor_make(VKF_DTYPE_I32, 1, s->n_batch, "src_lens");
    return vkf_tensor_alloc(m->be, &s->src_lens, VKF_BUFFER_IO, NULL);
}

vkf_status vkf_session_create(vkf_model *m, const vkf_session_params *p, vkf_session **out) {
    vkf_session_params def = {0};
    if (!p) p = &def;
    if (!m || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "session_create: NULL model or output");
    if (p->n_ctx < 0 || p->n_ctx > m->hp.n_ctx)
        return vkf_error(
            VKF_ERROR_INVALID_ARGUMENT,
            "session_create: n_ctx %d outside [1, %d] (the model's context; 0 means all of it)",
            p->n_ctx, m->hp.n_ctx);
    if (p->n_batch < 0 || p->n_batch > 4096)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "session_create: n_batch %d outside [1, 4096]",
                         p->n_batch);
    if (p->n_ubatch < 0)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "session_create: n_ubatch %d < 0 (0: the backend's default)", p->n_ubatch);
    /* a type the model or a device cannot use, or a context that cannot fit, is refused before
     * any of it is allocated (model/memory.c) */
    VKF_TRY(vkf_session_fit(m, p, NULL));
    vkf_session *s = calloc(1, sizeof *s);
    if (!s) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "session: out of host memory");
    s->m = m;
    s->n_ctx = p->n_ctx ? p->n_ctx : m->hp.n_ctx;
    /* encoder-only: inputs per batched embedding graph */
    s->n_batch = p->n_batch ? p->n_batch : m->arch == VKF_ARCH_ENCODER ? 32 : 1;
    s->max_chunk = p->n_ubatch                 ? p->n_ubatch
                   : m->be->ubatch_default > 0 ? m->be->ubatch_default
                                               : 512;
    s->abort_cb = p->abort_callback;
    s->abort_user = p->abort_user;
    s->cache_dtype_k = vkf_session_cache_dtype(m, p->cache_type_k);
    s->cache_dtype_v = vkf_session_cache_dtype(m, p->cache_type_v);
    vkf_context_lock(m->ctx);
    vkf_status st = session_alloc_caches(s);
    vkf_context_unlock(m->ctx);
    if (st != VKF_OK) {
        vkf_session_free(s);
        return st;
    }
    *out = s;
    return VKF_OK;
}

static void free_tensors(const vkf_model *m, vkf_tensor *t, int n) {
    if (!t) return;
    for (int i = 0; i < n; i++) { /* layer i's tensors live on its device */
        vkf_backend *be = vkf_model_dev_be(m, vkf_model_layer_dev(m, i));
        if (t[i].buf) be->i->buffer_free(be, t[i].buf);
    }
    free(t);
}

void vkf_session_drop_graphs(vkf_session *s) {
    for (int i = 0; i < s->n_graphs; i++)
        sg_release(s, &s->graphs[i]);
    s->n_graphs = 0;
}

void vkf_session_free(vkf_session *s) {
    if (!s) return;
    vkf_backend *be = s->m->be;
    free(s->lora);
    vkf_context_lock(s->m->ctx);
    for (int i = 0; i < s->n_graphs; i++)
        sg_release(s, &s->graphs[i]);
    free_tensors(s->m, s->kc, s->m->hp.n_layer);
    free_tensors(s->m, s->vc, s->m->hp.n_layer);
    free_tensors(s->m, s->xk, s->m->hp.n_layer);
    free_tensors(s->m, s->xv, s->m->hp.n_layer);
    if (s->src_lens.buf) be->i->buffer_free(be, s->src_lens.buf);
    vkf_context_unlock(s->m->ctx);
    free(s->host_lens);
    free(s);
}

void vkf_session_reset(vkf_session *s) {
    s->n_past = 0;
    s->enc_slots = 0;
}

void vkf_session_set_abort_callback(vkf_session *s, int (*cb)(void *user), void *user) {
    if (!s) return;
    s->abort_cb = cb;
    s->abort_user = user;
}

int32_t vkf_session_n_past(const vkf_session *s) { return s->n_past; }
int32_t vkf_session_n_ctx(const vkf_session *s) { return s->n_ctx; }
int32_t vkf_session_n_batch(const vkf_session *s) { return s->n_batch; }

/* ------------------------------------------------------------------ stepping */

/* Before each forward pass: the abort callback may stop the call (done of n tokens evaluated). */
static vkf_status check_abort(const vkf_session *s, int32_t done, int32_t n) {
    if (!s->abort_cb || !s->abort_cb(s->abort_user)) return VKF_OK;
    return vkf_error(VKF_ERROR_ABORTED, "%s: stopped by the abort callback after %d of %d tokens",
                     s->m->path, done, n);
}

static vkf_status step_chunk(vkf_session *s, int32_t batch, int32_t n, const int32_t *tokens,
                             const int32_t *key_lens, int last_only, float *out) {
    vkf_backend *be = s->m->be;
    vkf_sgraph *sg;
    VKF_TRY(sg_get(s, VKF_SG_DECODER, n, batch, 1, last_only ? VKF_SG_LAST_ONLY : 0, &sg));
    for (int32_t b = 0; b < batch; b++) {
        int32_t len = s->n_past + n;
        if (key_lens && key_lens[b] < len) len = key_lens[b];
        s->host_lens[b] = len;
    }
    VKF_TRY(vkf_tensor_write(be, &sg->ids, tokens));
    VKF_TRY(sg_write_inputs(s, sg, s->host_lens, NULL, NULL));
    VKF_TRY(sg_compute(s, sg, s->n_past));
    if (out) VKF_TRY(vkf_tensor_read(sg_out_be(s, sg), &sg->out, out));
    s->n_past += n;
    return VKF_OK;
}

static vkf_status session_step(vkf_session *s, int32_t batch, int32_t n, const int32_t *tokens,
                               const int32_t *key_lens, int last_only, float *out) {
    vkf_model *m = s->m;
    if (m->arch == VKF_ARCH_ENCODER)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "%s is an encoder-only (embedding) model: use vkf_embed", m->path);
    if (batch < 1 || batch > s->n_batch || n < 1)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "session: %d sequences of %d tokens (the session holds %d sequences)",
                         batch, n, s->n_batch);
    if (m->arch == VKF_ARCH_TRANSFORMER && s->enc_slots != batch)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "decode: %d sequences, but %d source sequences are encoded (call "
                         "vkf_session_encode first)",
                         batch, s->enc_slots);
    VKF_TRY(vkf_check_tokens(tokens, (int64_t)batch * n, m->hp.n_vocab, "decode"));
    if ((int64_t)s->n_past + n > s->n_ctx)
        return vkf_error(
            VKF_ERROR_CONTEXT_FULL,
            "context full: %d tokens in the cache + %d new exceed the context of %d tokens",
            s->n_past, n, s->n_ctx);
    VKF_TRY(check_abort(s, 0, n));
    if (n <= s->max_chunk) return step_chunk(s, batch, n, tokens, key_lens, last_only, out);

    /* long inputs: chunks of at most max_chunk tokens per sequence */
    int64_t V = m->hp.n_vocab;
    int32_t *ct = malloc((size_t)batch * s->max_chunk * sizeof *ct);
    float *co = out ? malloc((size_t)batch * s->max_chunk * (size_t)V * sizeof *co) : NULL;
    if (!ct || (out && !co)) {
        free(ct);
        free(co);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "session: out of host memory");
    }
    vkf_status st = VKF_OK;
    for (int32_t c0 = 0; c0 < n && st == VKF_OK; c0 += s->max_chunk) {
        int32_t cn = n - c0 < s->max_chunk ? n - c0 : s->max_chunk;
        int final = c0 + cn == n;
        if (c0 > 0 && (st = check_abort(s, c0, n)) != VKF_OK) break;
        for (int32_t b = 0; b < batch; b++)
            memcpy(ct + (size_t)b * cn, tokens + (size_t)b * n + c0, (size_t)cn * sizeof *ct);
        int lo = last_only || !out;
        st = step_chunk(s, batch, cn, ct, key_lens, lo, out && (final || !last_only) ? co : NULL);
        if (st != VKF_OK || !out) continue;
        if (last_only) {
            if (final) memcpy(out, co, (size_t)batch * (size_t)V * sizeof *co);
        } else {
            for (int32_t b = 0; b < batch; b++)
                memcpy(out + ((size_t)b * n + c0) * V, co + (size_t)b * cn * V,
                       (size_t)cn * V * sizeof *co);
        }
    }
    free(ct);
    free(co);
    return st;
}

vkf_status vkf_session_step(vkf_session *s, int32_t batch, int32_t n, const int32_t *tokens,
                            const int32_t *key_lens, int last_only, float *out) {
    if (!s || (n > 0 && batch > 0 && !tokens))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "session: NULL session or tokens");
    vkf_context_lock(s->m->ctx);
    vkf_status st = session_step(s, batch, n, tokens, key_lens, last_only, out);
    vkf_context_unlock(s->m->ctx);
    return st;
}

static vkf_status session_encode_batch(vkf_session *s, int32_t batch, int32_t n, const int32_t *src,
                                       const int32_t *src_lens, int32_t rep, float *mem_out) {
    vkf_model *m = s->m;
    vkf_backend *be = m->be;
    if (m->arch != VKF_ARCH_TRANSFORMER)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "encode: %s is a decoder-only model",
                         vkf_model_arch_name(m));
    if (batch < 1 || rep < 1 || (int64_t)batch * rep > s->n_batch || n < 1)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "encode: %d sources x %d copies do not fit a session of %d sequences",
                         batch, rep, s->n_batch);
    if (n > s->n_src_max)
        return vkf_error(VKF_ERROR_CONTEXT_FULL,
                         "encode: a source of %d tokens exceeds the model's maximum length of %d",
                         n, s->n_src_max);
    for (int32_t b = 0; b < batch; b++)
        if (src_lens[b] < 1 || src_lens[b] > n)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "encode: source %d has length %d, outside [1, %d]", b, src_lens[b], n);
    VKF_TRY(vkf_check_tokens(src, (int64_t)batch * n, m->hp.n_src_vocab, "encode"));
    vkf_sgraph *sg;
    VKF_TRY(sg_get(s, VKF_SG_ENCODER, n, batch, rep, 0, &sg));
    VKF_TRY(vkf_tensor_write(be, &sg->ids, src));
    VKF_TRY(vkf_tensor_write(be, &sg->lens, src_lens));
    /* the decoder's cross-attention masks: one entry per slot */
    for (int32_t b = 0; b < batch; b++)
        for (int32_t r = 0; r < rep; r++)
            s->host_lens[b * rep + r] = src_lens[b];
    vkf_tensor sl = vkf_tensor_view(&s->src_lens, 0, 1, 0, (int64_t)batch * rep);
    VKF_TRY(vkf_tensor_write(be, &sl, s->host_lens));
    s->enc_slots = 0;
    VKF_TRY(sg_compute(s, sg, 0));
    if (mem_out) VKF_TRY(vkf_tensor_read(be, &sg->out, mem_out));
    s->enc_slots = batch * rep;
    s->n_past = 0;
    return VKF_OK;
}

vkf_status vkf_session_encode_batch(vkf_session *s, int32_t batch, int32_t n, const int32_t *src,
                                    const int32_t *src_lens, int32_t rep, float *mem_out) {
    if (!s || (n > 0 && batch > 0 && (!src || !src_lens)))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "encode: NULL session, source or lengths");
    vkf_context_lock(s->m->ctx);
    vkf_status st = session_encode_batch(s, batch, n, src, src_lens, rep, mem_out);
    vkf_context_unlock(s->m->ctx);
    return st;
}

static vkf_status session_reorder(vkf_session *s, int32_t batch, const int32_t *from) {
    vkf_backend *be = s->m->be;
    int32_t np = s->n_past;
    if (np == 0 || batch <= 1) return VKF_OK;
    int64_t kvd = s->kc[0].cols;
    /* bytes of the wider cache row (K and V may differ in type): rows move whole, blocks and all */
    size_t rbk = vkf_dtype_row_bytes(s->kc[0].dtype, kvd),
           rbv = vkf_dtype_row_bytes(s->vc[0].dtype, kvd);
    size_t rbmax = rbk > rbv ? rbk : rbv;
    char *tmp = malloc((size_t)batch * (size_t)np * rbmax);
    if (!tmp) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "session reorder: out of host memory");
    vkf_status st = VKF_OK;
    for (int l = 0; l < s->m->hp.n_layer && st == VKF_OK; l++) {
        be = vkf_model_dev_be(s->m, vkf_model_layer_dev(s->m, l));
        vkf_tensor *caches[2] = {&s->kc[l], &s->vc[l]};
        for (int c = 0; c < 2 && st == VKF_OK; c++) {
            size_t rb = c ? rbv : rbk;
            for (int32_t b = 0; b < batch && st == VKF_OK; b++) {
                vkf_tensor v = vkf_tensor_view(caches[c], (int64_t)b * s->n_ctx, np, 0, kvd);
                st = vkf_tensor_read(be, &v, tmp + (size_t)b * np * rb);
            }
            for (int32_t b = 0; b < batch && st == VKF_OK; b++) {
                if (from[b] == b) continue;
                vkf_tensor v = vkf_tensor_view(caches[c], (int64_t)b * s->n_ctx, np, 0, kvd);
                st = vkf_tensor_write(be, &v, tmp + (size_t)from[b] * np * rb);
            }
        }
    }
    free(tmp);
    return st;
}

vkf_status vkf_session_reorder(vkf_session *s, int32_t batch, const int32_t *from) {
    if (batch > s->n_batch)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "reorder: %d sequences, the session holds %d",
                         batch, s->n_batch);
    for (int32_t b = 0; b < batch; b++)
        if (from[b] < 0 || from[b] >= batch)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "reorder: sequence %d would come from %d, outside [0, %d)", b, from[b],
                             batch);
    vkf_context_lock(s->m->ctx);
    vkf_status st = session_reorder(s, batch, from);
    vkf_context_unlock(s->m->ctx);
    return st;
}

/* ------------------------------------------------------------------ public single-sequence calls
 */

static vkf_status require_decoder_only(const vkf_session *s, const char *what) {
    if (s->m->arch == VKF_ARCH_TRANSFORMER)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "%s: %s is an encoder-decoder model: use vkf_session_encode and "
                         "vkf_session_decode_step",
                         what, s->m->path);
    return VKF_OK;
}

vkf_status vkf_session_eval(vkf_session *s, const int32_t *tokens, int32_t n, float *logits) {
    VKF_TRY(require_decoder_only(s, "eval"));
    return vkf_session_step(s, 1, n, tokens, NULL, logits == NULL, logits);
}

vkf_status vkf_session_eval_last(vkf_session *s, const int32_t *tokens, int32_t n, float *logits) {
    VKF_TRY(require_decoder_only(s, "eval"));
    return vkf_session_step(s, 1, n, tokens, NULL, 1, logits);
}

vkf_status vkf_session_encode(vkf_session *s, const int32_t *src, int32_t n) {
    if (n < 1) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "encode: empty source");
    return vkf_session_encode_batch(s, 1, n, src, &n, 1, NULL);
}

vkf_status vkf_session_decode_step(vkf_session *s, int32_t token, float *logprobs) {
    if (s->m->arch != VKF_ARCH_TRANSFORMER)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "decode_step: %s is decoder-only: use vkf_session_eval", s->m->path);
    return vkf_session_step(s, 1, 1, &token, NULL, 1, logprobs);
}

/* ------------------------------------------------------------------ parallel sequences (serve) */

vkf_status vkf_session_truncate(vkf_session *s, int32_t n) {
    if (!s || n < 0 || n > s->n_past)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "truncate: keep %d tokens, the cache holds %d",
                         n, s ? s->n_past : 0);
    s->n_past = n;
    return VKF_OK;
}

/* all_rows: logits holds n * n_vocab floats, the logits after every token */
static vkf_status seq_eval(vkf_session *s, int32_t seq, int32_t pos, const int32_t *tokens,
                           int32_t n, float *logits, int all_rows) {
    vkf_backend *be = s->m->be;
    for (int32_t c0 = 0; c0 < n; c0 += s->max_chunk) {
        int32_t cn = n - c0 < s->max_chunk ? n - c0 : s->max_chunk;
        VKF_TRY(check_abort(s, c0, n));
        vkf_sgraph *sg;
        VKF_TRY(sg_get_seq(s, VKF_SG_DECODER, cn, 1, 1, all_rows ? 0 : VKF_SG_LAST_ONLY, seq, &sg));
        s->host_lens[0] = pos + c0 + cn;
        VKF_TRY(vkf_tensor_write(be, &sg->ids, tokens + c0));
        VKF_TRY(sg_write_inputs(s, sg, s->host_lens, NULL, NULL));
        VKF_TRY(sg_compute(s, sg, pos + c0));
        if (all_rows && logits)
            VKF_TRY(vkf_tensor_read(sg_out_be(s, sg), &sg->out,
                                    logits + (size_t)c0 * (size_t)s->m->hp.n_vocab));
        else if (c0 + cn == n && logits)
            VKF_TRY(vkf_tensor_read(sg_out_be(s, sg), &sg->out, logits));
    }
    return VKF_OK;
}

static vkf_status seq_eval_checked(vkf_session *s, int32_t seq, int32_t pos, const int32_t *tokens,
                                   int32_t n, float *logits, int all_rows);

vkf_status vkf_session_seq_eval(vkf_session *s, int32_t seq, int32_t pos, const int32_t *tokens,
                                int32_t n, float *logits) {
    return seq_eval_checked(s, seq, pos, tokens, n, logits, 0);
}

vkf_status vkf_session_seq_eval_all(vkf_session *s, int32_t seq, int32_t pos, const int32_t *tokens,
                                    int32_t n, float *logits) {
    return seq_eval_checked(s, seq, pos, tokens, n, logits, 1);
}

static vkf_status seq_eval_checked(vkf_session *s, int32_t seq, int32_t pos, const int32_t *tokens,
                                   int32_t n, float *logits, int all_rows) {
    if (!s || !tokens || n < 1)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "seq_eval: NULL session or tokens, or n %d < 1", n);
    VKF_TRY(require_decoder_only(s, "seq_eval"));
    if (seq < 0 || seq >= s->n_batch)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "seq_eval: sequence %d outside [0, %d)", seq,
                         s->n_batch);
    if (pos < 0 || (int64_t)pos + n > s->n_ctx)
        return vkf_error(VKF_ERROR_CONTEXT_FULL,
                         "context full: %d tokens at position %d exceed the context of %d tokens",
                         n, pos, s->n_ctx);
    VKF_TRY(vkf_check_tokens(tokens, n, s->m->hp.n_vocab, "seq_eval"));
    vkf_context_lock(s->m->ctx);
    vkf_status st = seq_eval(s, seq, pos, tokens, n, logits, all_rows);
    vkf_context_unlock(s->m->ctx);
    return st;
}

/* The busy sequences' range [lo, hi) of a step: only those rows are computed (serve's idle
 * slots cost nothing), in the graph of hi - lo sequences from lo; none busy: none computed. */
static vkf_status seq_decode(vkf_session *s, const int32_t *tokens, const int32_t *pos,
                             float *logits) {
    vkf_backend *be = s->m->be;
    int32_t lo = -1, hi = -1;
    for (int32_t b = 0; b < s->n_batch; b++)
        if (pos[b] >= 0) {
            if (lo < 0) lo = b;
            hi = b + 1;
        }
    if (lo < 0) return VKF_OK;
    int32_t B = hi - lo;
    VKF_TRY(check_abort(s, 0, 1));
    vkf_sgraph *sg;
    VKF_TRY(sg_get_seq(s, VKF_SG_DECODER, 1, B, 1, VKF_SG_LAST_ONLY | VKF_SG_PERSEQ, lo, &sg));
    int32_t *buf = malloc((size_t)B * 3 * sizeof *buf);
    if (!buf) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "seq_decode: out of host memory");
    int32_t *ids = buf, *p = buf + B, *row = buf + 2 * B;
    for (int32_t i = 0; i < B; i++) {
        int32_t b = lo + i;
        int idle = pos[b] < 0;
        ids[i] = idle ? 0 : tokens[b];
        p[i] = idle ? 0 : pos[b];
        /* an idle sequence between busy ones writes its last cache row, which holds nothing it
         * needs */
        row[i] = b * s->n_ctx + (idle ? s->n_ctx - 1 : pos[b]);
        s->host_lens[i] = idle ? 0 : pos[b] + 1;
    }
    vkf_status st = vkf_tensor_write(be, &sg->ids, ids);
    if (st == VKF_OK) st = sg_write_inputs(s, sg, s->host_lens, p, row);
    free(buf);
    VKF_TRY(st);
    VKF_TRY(sg_compute(s, sg, 0));
    if (logits)
        VKF_TRY(vkf_tensor_read(sg_out_be(s, sg), &sg->out,
                                logits + (size_t)lo * (size_t)s->m->hp.n_vocab));
    return VKF_OK;
}

vkf_status vkf_session_seq_decode(vkf_session *s, const int32_t *tokens, const int32_t *pos,
                                  float *logits) {
    if (!s || !tokens || !pos)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "seq_decode: NULL session, tokens or positions");
    VKF_TRY(require_decoder_only(s, "seq_decode"));
    for (int32_t b = 0; b < s->n_batch; b++) {
        if (pos[b] < 0) continue;
        if (pos[b] >= s->n_ctx)
            return vkf_error(
                VKF_ERROR_CONTEXT_FULL,
                "context full: sequence %d at position %d, the context holds %d tokens", b, pos[b],
                s->n_ctx);
        VKF_TRY(vkf_check_tokens(tokens + b, 1, s->m->hp.n_vocab, "seq_decode"));
    }
    vkf_context_lock(s->m->ctx);
    vkf_status st = seq_decode(s, tokens, pos, logits);
    vkf_context_unlock(s->m->ctx);
    return st;
}
