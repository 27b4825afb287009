/* Memory by use (weights, KV cache, activations), the one place that sizes a KV cache, and the
 * checks that refuse a model or a context that cannot fit before anything is allocated. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
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

/* vkf_cache_type -> its name (llama.cpp's ggml type names) and dtype */
static const struct {
    const char *name;
    vkf_dtype dtype;
} cache_types[VKF_CACHE_COUNT] = {
    [VKF_CACHE_DEFAULT] = {"default", VKF_DTYPE_F32},
    [VKF_CACHE_F32] = {"f32", VKF_DTYPE_F32},
    [VKF_CACHE_F16] = {"f16", VKF_DTYPE_F16},
    [VKF_CACHE_BF16] = {"bf16", VKF_DTYPE_BF16},
    [VKF_CACHE_Q8_0] = {"q8_0", VKF_DTYPE_Q8_0},
    [VKF_CACHE_Q4_0] = {"q4_0", VKF_DTYPE_Q4_0},
    [VKF_CACHE_Q4_1] = {"q4_1", VKF_DTYPE_Q4_1},
    [VKF_CACHE_IQ4_NL] = {"iq4_nl", VKF_DTYPE_IQ4_NL},
    [VKF_CACHE_Q5_0] = {"q5_0", VKF_DTYPE_Q5_0},
    [VKF_CACHE_Q5_1] = {"q5_1", VKF_DTYPE_Q5_1},
};

const char *vkf_cache_type_name(int32_t t) {
    return t >= 0 && t < VKF_CACHE_COUNT ? cache_types[t].name : NULL;
}

int32_t vkf_cache_type_from_name(const char *name) {
    for (int32_t t = 0; name && t < VKF_CACHE_COUNT; t++)
        if (strcasecmp(name, cache_types[t].name) == 0) return t;
    return -1;
}

vkf_dtype vkf_session_cache_dtype(const vkf_model *m, int32_t cache_type) {
    /* the encoder-decoder's caches stay F32 (its graphs read them as F32 views; a type asked
     * for other than F32 / F16 is refused by vkf_cache_types_check) */
    if (m->arch == VKF_ARCH_TRANSFORMER) return VKF_DTYPE_F32;
    if (cache_type == VKF_CACHE_DEFAULT)
        return m->be && m->be->kv_f16_default ? VKF_DTYPE_F16 : VKF_DTYPE_F32;
    return cache_type > 0 && cache_type < VKF_CACHE_COUNT ? cache_types[cache_type].dtype
                                                          : VKF_DTYPE_F32;
}

/* One cache (which: "K" or "V") of type t on backend be, or its refusal. */
static vkf_status cache_type_check_one(const vkf_model *m, const vkf_backend *be, int32_t t,
                                       const char *which, const char *who) {
    if (t < 0 || t >= VKF_CACHE_COUNT)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "%s: cache_type_%c %d is not a vkf_cache_type (0 default, f32, f16, "
                         "bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1: 1 to %d)",
                         who, which[0] == 'K' ? 'k' : 'v', t, VKF_CACHE_COUNT - 1);
    if (t == VKF_CACHE_DEFAULT || m->arch == VKF_ARCH_ENCODER) return VKF_OK;
    const char *name = cache_types[t].name;
    if (m->arch == VKF_ARCH_TRANSFORMER) {
        if (t == VKF_CACHE_F32 || t == VKF_CACHE_F16) return VKF_OK; /* kept F32, as before */
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: %s cache type %s: the encoder-decoder transformer keeps its caches "
                         "in F32 (f32 or f16 accepted)",
                         who, which, name);
    }
    vkf_dtype dt = cache_types[t].dtype;
    int blk = vkf_dtype_block_elems(dt);
    if (blk > 1 && m->hp.head_dim % blk)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: %s cache type %s needs a head_dim that is a multiple of %d (its "
                         "block, read per head), this model's is %d",
                         who, which, name, blk, m->hp.head_dim);
    if (be->kv_block_no_rot && blk > 1 && m->hp.head_dim % 64 == 0)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: %s cache type %s with head_dim %d: llama.cpp rotates q, k and v by "
                         "a Walsh-Hadamard matrix for a quantized cache when head_dim is a "
                         "multiple of 64 (its attn_rot; LLAMA_ATTN_ROT_DISABLE=1 turns it off), "
                         "which the ggml-activations mode does not reproduce",
                         who, which, name, m->hp.head_dim);
    uint32_t mask = be->kv_dtypes ? be->kv_dtypes : (1u << VKF_DTYPE_F32) | (1u << VKF_DTYPE_F16);
    if (!(mask & (1u << dt))) {
        char list[160] = "";
        size_t n = 0;
        for (int32_t u = 1; u < VKF_CACHE_COUNT; u++)
            if (mask & (1u << cache_types[u].dtype))
                n += (size_t)snprintf(list + n, n < sizeof list ? sizeof list - n : 0, "%s%s",
                                      n ? ", " : "", cache_types[u].name);
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: %s cache type %s: the backend on %s cannot use it (%s%s"
                         "accepted there: %s)",
                         who, which, name, be->device_name,
                         be->kv_dtypes_why ? be->kv_dtypes_why : "", be->kv_dtypes_why ? "; " : "",
                         list);
    }
    return VKF_OK;
}

vkf_status vkf_cache_types_check(const vkf_model *m, int32_t k, int32_t v, const char *who) {
    int n = m->n_dev > 1 ? m->n_dev : 1;
    for (int d = 0; d < n; d++) {
        vkf_backend *be = n > 1 ? vkf_model_dev_be(m, d) : m->be;
        VKF_TRY(cache_type_check_one(m, be, k, "K", who));
        VKF_TRY(cache_type_check_one(m, be, v, "V", who));
        vkf_dtype dk = vkf_session_cache_dtype(m, k), dv = vkf_session_cache_dtype(m, v);
        if (!be->kv_mixed && dk != dv)
            return vkf_error(VKF_ERROR_UNSUPPORTED,
                             "%s: K cache type %s and V cache type %s: the backend on %s reads K "
                             "and V in one type (give -ctk and -ctv the same)",
                             who, vkf_dtype_name(dk), vkf_dtype_name(dv), be->device_name);
    }
    return VKF_OK;
}

uint64_t vkf_kv_cache_bytes(const vkf_model *m, int32_t n_ctx, int32_t n_batch, vkf_dtype k,
                            vkf_dtype v) {
    const vkf_hparams *hp = &m->hp;
    if (m->arch == VKF_ARCH_ENCODER) return 0; /* embeddings keep no cache */
    /* K and V of every layer: [n_batch * n_ctx, n_kv_head * head_dim] each */
    int64_t kvd = (int64_t)hp->n_kv_head * hp->head_dim;
    uint64_t b = (uint64_t)hp->n_layer * (uint64_t)n_batch * (uint64_t)n_ctx *
                 (vkf_dtype_row_bytes(k, kvd) + vkf_dtype_row_bytes(v, kvd));
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

/* "the KV cache for n_ctx N (-c) x B sequences (F16)", "(K Q8_0, V F16)" */
static void kv_what(char *buf, size_t n, int32_t n_ctx, int32_t n_batch, vkf_dtype k, vkf_dtype v) {
    char t[48];
    if (k == v)
        snprintf(t, sizeof t, "%s", vkf_dtype_name(k));
    else
        snprintf(t, sizeof t, "K %s, V %s", vkf_dtype_name(k), vkf_dtype_name(v));
    snprintf(buf, n, "the KV cache for n_ctx %d (-c) x %d sequence%s (%s)", n_ctx, n_batch,
             n_batch == 1 ? "" : "s", t);
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
    int32_t tk = p ? p->cache_type_k : VKF_CACHE_DEFAULT, tv = p ? p->cache_type_v : 0;
    VKF_TRY(vkf_cache_types_check(m, tk, tv, "session_create"));
    vkf_dtype dk = vkf_session_cache_dtype(m, tk), dv = vkf_session_cache_dtype(m, tv);
    uint64_t need = vkf_kv_cache_bytes(m, n_ctx, n_batch, dk, dv);
    vkf_context_lock(m->ctx);
    mem_state ms;
    mem_state_read(m->be, &ms);
    vkf_context_unlock(m->ctx);
    if (out) {
        out->kv_cache = need;
        out->available = ms.available;
    }
    char what[128];
    kv_what(what, sizeof what, n_ctx, n_batch, dk, dv);
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
    VKF_TRY(vkf_cache_types_check(m, m->cache_type_k, m->cache_type_v, "model_load"));
    vkf_dtype dk = vkf_session_cache_dtype(m, m->cache_type_k),
              dv = vkf_session_cache_dtype(m, m->cache_type_v);
    char what[128];
    kv_what(what, sizeof what, m->hp.n_ctx, 1, dk, dv);
    return check_fit_devices(m, vkf_kv_cache_bytes(m, m->hp.n_ctx, 1, dk, dv), weights, what,
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
    out->kv_type_k = (int32_t)vkf_session_cache_dtype(m, m->cache_type_k);
    out->kv_type_v = (int32_t)vkf_session_cache_dtype(m, m->cache_type_v);
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
    out->kv_type_k = (int32_t)(s->kc ? s->kc[0].dtype : VKF_DTYPE_F32);
    out->kv_type_v = (int32_t)(s->vc ? s->vc[0].dtype : VKF_DTYPE_F32);
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
