/* Memory by use (weights, KV cache, activations), the one place that sizes a KV cache, and the
 * checks that refuse a model or a context that cannot fit before anything is allocated. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/error.h"
#include "model/model.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* ------------------------------------------------------------------ what the backend has */

/* The host's available memory (MemAvailable: free pages plus what the kernel can reclaim, such
 * as the page cache), bytes; 0 when unknown. */
static uint64_t host_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kb = 0;
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
    if (f) fclose(f);
    if (found) return (uint64_t)kb * 1024;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* What the backend's buffers take and what it has for more, as every check below sees it. */
typedef struct mem_state {
    vkf_backend_memory bm; /* the backend's report (zeros for host memory) */
    int host;              /* the backend allocates host memory (the CPU backend) */
    uint64_t available;    /* bytes that can still be allocated; UINT64_MAX: unknown */
} mem_state;

static void mem_state_read(vkf_backend *be, mem_state *ms) {
    memset(ms, 0, sizeof *ms);
    ms->available = UINT64_MAX;
    if (!be->i->memory_info) {
        ms->host = 1;
        uint64_t a = host_available();
        if (a) ms->available = a;
        return;
    }
    be->i->memory_info(be, &ms->bm);
    const vkf_backend_memory *bm = &ms->bm;
    /* only what occupies the heap counts: host memory used in place (the model file's pages)
     * takes none of it */
    uint64_t heap_free = bm->heap > bm->allocated ? bm->heap - bm->allocated : 0;
    if (bm->capped) { /* VKF_MAX_DEVICE_MEMORY: a small device simulated, its cap alone */
        ms->available = heap_free;
        return;
    }
    if (bm->unified) {
        /* the heap is the host's memory and its size a driver's figure (lavapipe says 2 GiB
         * whatever the host has, and allocates past it): what can be allocated is what the
         * host has available, and the driver's budget where it gives one */
        uint64_t a = host_available();
        if (bm->has_budget && (!a || bm->budget < a)) a = bm->budget;
        ms->available = a ? a : heap_free;
        return;
    }
    ms->available = bm->has_budget && bm->budget < heap_free ? bm->budget : heap_free;
}

/* ------------------------------------------------------------------ KV cache sizing */

vkf_dtype vkf_session_cache_dtype(const vkf_model *m, int32_t cache_type) {
    /* the encoder-decoder's caches stay F32 (its graphs read them as F32 views) */
    if (m->arch == VKF_ARCH_TRANSFORMER) return VKF_DTYPE_F32;
    int f16 = cache_type == VKF_CACHE_F16 ||
              (cache_type == VKF_CACHE_DEFAULT && m->be && m->be->kv_f16_default);
    return f16 ? VKF_DTYPE_F16 : VKF_DTYPE_F32;
}

uint64_t vkf_kv_cache_bytes(const vkf_model *m, int32_t n_ctx, int32_t n_batch, vkf_dtype dtype) {
    const vkf_hparams *hp = &m->hp;
    if (m->arch == VKF_ARCH_ENCODER) return 0; /* embeddings keep no cache */
    /* K and V of every layer: [n_batch * n_ctx, n_kv_head * head_dim] each */
    uint64_t b = 2 * (uint64_t)hp->n_layer * (uint64_t)n_batch * (uint64_t)n_ctx *
                 vkf_dtype_row_bytes(dtype, (int64_t)hp->n_kv_head * hp->head_dim);
    /* the encoder-decoder's cross-attention K/V of the encoded source: [n_batch * its longest
     * source (the model's n_ctx), d_model] F32 per layer */
    if (m->arch == VKF_ARCH_TRANSFORMER)
        b += 2 * (uint64_t)hp->n_layer * (uint64_t)n_batch * (uint64_t)hp->n_ctx *
             (uint64_t)hp->d_model * sizeof(float);
    return b;
}

/* ------------------------------------------------------------------ the checks */

/* "3.81 GiB", "64.0 MiB", "12.0 KiB": sizes in refusals, readable at every scale */
static const char *fmt_bytes(uint64_t b, char *buf, size_t n) {
    if ((double)b >= GIB)
        snprintf(buf, n, "%.2f GiB", (double)b / GIB);
    else if (b >= (1u << 20))
        snprintf(buf, n, "%.1f MiB", (double)b / (1 << 20));
    else
        snprintf(buf, n, "%.1f KiB", (double)b / 1024);
    return buf;
}

/* "the device has X free (...)" or "the host has X available": what a refusal says about the
 * memory it checked, and why that figure. */
static void describe_available(const mem_state *ms, char *buf, size_t n) {
    char a[32], h[32], u[32], p[32] = "";
    const vkf_backend_memory *bm = &ms->bm;
    fmt_bytes(ms->available, a, sizeof a);
    if (ms->host) {
        snprintf(buf, n, "the host has %s available", a);
        return;
    }
    fmt_bytes(bm->heap, h, sizeof h);
    fmt_bytes(bm->allocated, u, sizeof u);
    if (bm->in_place) fmt_bytes(bm->in_place, p, sizeof p);
    if (bm->capped)
        snprintf(buf, n, "the device has %s free (VKF_MAX_DEVICE_MEMORY %s, %s allocated%s%s%s)", a,
                 h, u, *p ? "; " : "", p, *p ? " used in place from the file, not counted" : "");
    else if (bm->unified)
        snprintf(buf, n,
                 "the device has %s available (unified memory: what the host has available%s%s%s)",
                 a, bm->has_budget ? " and the driver's budget" : "", *p ? "; " : "",
                 *p ? "weights used in place from the file take none of it" : "");
    else
        snprintf(buf, n, "the device has %s free (heap %s, %s allocated%s)", a, h, u,
                 bm->has_budget ? ", the driver's budget" : "");
}

/* VKF_OK when need more bytes fit, else the refusal: "<path>: <what> needs X GiB[ beside Y GiB
 * of <beside_what>], <what the backend has>; <advice>". */
static vkf_status check_fit(const vkf_model *m, const mem_state *ms, uint64_t need, uint64_t beside,
                            const char *what, const char *beside_what, const char *advice) {
    if (ms->available == UINT64_MAX || need + beside <= ms->available) return VKF_OK;
    char have[256], bes[96] = "", nb[32], bb[32];
    describe_available(ms, have, sizeof have);
    if (beside)
        snprintf(bes, sizeof bes, " beside %s of %s", fmt_bytes(beside, bb, sizeof bb),
                 beside_what);
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: %s needs %s%s, %s%s%s", m->path, what,
                     fmt_bytes(need, nb, sizeof nb), bes, have, advice ? "; " : "",
                     advice ? advice : "");
}

/* check_fit on every device of a layer split, each with its share of need and beside (the
 * context's proportions: a layer's weights and KV cache live on its device); one device
 * otherwise. */
static vkf_status check_fit_devices(const vkf_model *m, uint64_t need, uint64_t beside,
                                    const char *what, const char *beside_what, const char *advice) {
    const vkf_context *ctx = m->ctx;
    mem_state ms;
    if (!ctx || ctx->n_dev < 2) {
        mem_state_read(m->be, &ms);
        return check_fit(m, &ms, need, beside, what, beside_what, advice);
    }
    for (int d = 0; d < ctx->n_dev; d++) {
        mem_state_read(ctx->dev_be[d], &ms);
        vkf_status st =
            check_fit(m, &ms, (uint64_t)ceil((double)need * ctx->prop[d]),
                      (uint64_t)ceil((double)beside * ctx->prop[d]), what, beside_what, advice);
        if (st != VKF_OK) return vkf_error_prefix(st, "device %d of the split (-dev)", d);
    }
    return VKF_OK;
}

vkf_status vkf_memory_check_fit(vkf_model *m, uint64_t need, const char *what, const char *advice) {
    mem_state ms;
    mem_state_read(m->be, &ms);
    return check_fit(m, &ms, need, 0, what, NULL, advice);
}

/* "the KV cache for n_ctx N (-c) x B sequences (F16)" */
static void kv_what(char *buf, size_t n, int32_t n_ctx, int32_t n_batch, vkf_dtype dt) {
    snprintf(buf, n, "the KV cache for n_ctx %d (-c) x %d sequence%s (%s)", n_ctx, n_batch,
             n_batch == 1 ? "" : "s", vkf_dtype_name(dt));
}

/* The session's parameters as vkf_session_create reads them (0: defaults). */
static int32_t fit_n_ctx(const vkf_model *m, const vkf_session_params *p) {
    return p && p->n_ctx ? p->n_ctx : m->hp.n_ctx;
}

static int32_t fit_n_batch(const vkf_model *m, const vkf_session_params *p) {
    return p && p->n_batch ? p->n_batch : m->arch == VKF_ARCH_ENCODER ? 32 : 1;
}

vkf_status vkf_session_fit(const vkf_model *m, const vkf_session_params *p, vkf_memory_fit *out) {
    if (!m) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "session_fit: NULL model");
    int32_t n_ctx = fit_n_ctx(m, p), n_batch = fit_n_batch(m, p);
    vkf_dtype dt = vkf_session_cache_dtype(m, p ? p->cache_type : VKF_CACHE_DEFAULT);
    uint64_t need = vkf_kv_cache_bytes(m, n_ctx, n_batch, dt);
    vkf_context_lock(m->ctx);
    mem_state ms;
    mem_state_read(m->be, &ms);
    vkf_context_unlock(m->ctx);
    if (out) {
        out->kv_cache = need;
        out->available = ms.available;
    }
    char what[128];
    kv_what(what, sizeof what, n_ctx, n_batch, dt);
    return check_fit_devices(m, need, 0, what, NULL, "lower n_ctx (-c)");
}

/* The position tables the loader computes (model/arch.c: n_ctx x n_rot F32, a second one for
 * gemma3's local layers); learned position tables are weights in the file. */
static uint64_t table_bytes(const vkf_model *m) {
    const vkf_hparams *hp = &m->hp;
    if (!m->desc || m->desc->pos != VKF_POS_ROPE) return 0;
    int local = 0;
    for (int l = 0; l < hp->n_layer; l++)
        local |= vkf_layer_swa(hp, l);
    uint64_t one = (uint64_t)hp->n_ctx * (uint64_t)hp->n_rot * sizeof(float);
    return one * (local && m->desc->swa_rope_unscaled ? 2 : 1);
}

vkf_status vkf_model_check_load(vkf_model *m, uint64_t data_bytes) {
    /* weights the backend uses in place from the file's memory take no room: only the copied
     * ones, and the tables, do */
    int in_place = vkf_model_in_place_possible(m);
    uint64_t weights = (in_place ? 0 : data_bytes) + table_bytes(m);
    char tables[128];
    snprintf(tables, sizeof tables,
             "the position table of n_ctx %d (the weights are used in place from the file)",
             m->hp.n_ctx);
    VKF_TRY(check_fit_devices(m, weights, 0, in_place ? tables : "the weight data", NULL,
                              "use a smaller or more quantized model"));
    if (m->ctx_req <= 0) return VKF_OK; /* sessions are checked when they are created */
    /* a context asked for: one sequence of it, in the cache type sessions will use */
    vkf_dtype dt = vkf_session_cache_dtype(m, m->cache_type);
    char what[128];
    kv_what(what, sizeof what, m->hp.n_ctx, 1, dt);
    return check_fit_devices(m, vkf_kv_cache_bytes(m, m->hp.n_ctx, 1, dt), weights, what,
                             "weights and tables", "lower n_ctx (-c)");
}

/* ------------------------------------------------------------------ reports */

vkf_status vkf_model_memory(const vkf_model *m, vkf_memory_info *out) {
    if (!m || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "model_memory: NULL model or output");
    memset(out, 0, sizeof *out);
    out->weights = m->weight_bytes;
    out->weights_in_place = m->weight_bytes_in_place;
    vkf_context_lock(m->ctx);
    mem_state ms;
    mem_state_read(m->be, &ms);
    vkf_context_unlock(m->ctx);
    out->device_total = ms.bm.heap;
    out->device_used = ms.bm.allocated;
    out->device_available = ms.available;
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
        for (int k = 1; k < g->n_parts; k++) /* a split graph's other devices */
            out->activations += g->part[k].g ? g->part[k].g->arena_bytes : 0;
        out->activations += (g->g ? g->g->arena_bytes : 0) +
                            (g->ids.buf ? vkf_tensor_nbytes(&g->ids) : 0) +
                            (g->lens.buf ? vkf_tensor_nbytes(&g->lens) : 0) +
                            (g->out.buf ? vkf_tensor_nbytes(&g->out) : 0);
    }
    return VKF_OK;
}
