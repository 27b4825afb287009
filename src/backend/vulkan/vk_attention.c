/* The ATTENTION encoder (vk_ops.c dispatches to it): attention_texel.comp where the device has
 * texels and subgroups and the shapes allow (F32 or F16 caches; layouts chosen per device kind,
 * see vkf_vk_attention_texel), else attention.comp, in key chunks when one sequence exceeds a
 * storage window; decode split over the keys and merged (attention_merge.comp) on request. */
#include <stdio.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/dtype.h"
#include "vkf_abi.h"

/* ---------------------------------------------------------------- attention */

#define VKF_VK_ATTN_WG 128

/* rows spanned by nb sequences of kv_stride rows with n_kv used rows each */
static int vkf_vk_kv_fits(const vkf_tensor *t, int64_t nb, int64_t kv_stride, int64_t n_kv,
                          uint64_t budget) {
    uint64_t rows = (uint64_t)(nb - 1) * (uint64_t)kv_stride + (uint64_t)n_kv;
    return (rows - 1) * vkf_vk_stride_bytes(t) + vkf_vk_row_bytes(t) <= budget;
}

/* the attention pipeline: CHUNKED for key-chunked sequences, VEC4 when every q/k/v/dst offset
 * and stride and head_dim are multiples of 4 (VKF_NO_VEC4=1 turns it off) */
static vkf_status vkf_vk_attn_pipe(vkf_vk_rec *r, const vkf_pc_attn *pc, int chunked, int kv_f16,
                                   vkf_vk_pipeline **pl) {
    int v4 = !kv_f16 && pc->head_dim % 4 == 0 && pc->q_off % 4 == 0 && pc->k_off % 4 == 0 &&
             pc->v_off % 4 == 0 && pc->d_off % 4 == 0 && pc->q_stride % 4 == 0 &&
             pc->k_stride % 4 == 0 && pc->v_stride % 4 == 0 && pc->d_stride % 4 == 0 &&
             !r->vb->sw.no_vec4;
    char defs[48];
    snprintf(defs, sizeof defs, "CHUNKED=%d;VEC4=%d;KV_F16=%d", chunked, v4, kv_f16);
    uint32_t spec[1] = {VKF_VK_ATTN_WG};
    return vkf_vk_pipe(r, "attention", defs, spec, 1, pl);
}

static void vkf_vk_attn_pc(const vkf_node *n, vkf_pc_attn *pc) {
    const vkf_attn_params *ap = &n->p.attn;
    pc->n_q = (uint32_t)ap->n_q;
    pc->n_kv = (uint32_t)ap->n_kv;
    pc->kv_stride = (uint32_t)ap->kv_stride;
    pc->n_head = (uint32_t)ap->n_head;
    pc->n_kv_head = (uint32_t)ap->n_kv_head;
    pc->head_dim = (uint32_t)ap->head_dim;
    pc->causal = ap->causal ? 1u : 0u;
    pc->kv_dyn = ap->kv_dyn ? 1u : 0u;
    pc->scale = ap->scale;
    pc->window = ap->window > 0 ? (uint32_t)ap->window : 0u;
    pc->softcap = ap->softcap;
    pc->q_stride = (uint32_t)n->src[0]->row_stride;
    pc->k_stride = (uint32_t)n->src[1]->row_stride;
    pc->v_stride = (uint32_t)n->src[2]->row_stride;
    pc->d_stride = (uint32_t)n->dst->row_stride;
}

/* attention.comp's windows: dst and q over query rows [q0, q0 + nq), k and v over key rows
 * [k0, k0 + nk), the key lengths (bound to q when absent), and their element offsets in pc */
static vkf_status vkf_vk_attn_bind(vkf_vk_rec *r, const vkf_node *n, int64_t q0, int64_t nq,
                                   int64_t k0, int64_t nk, vkf_vk_win win[5], vkf_pc_attn *pc) {
    const vkf_attn_params *ap = &n->p.attn;
    const vkf_tensor *d = n->dst, *q = n->src[0], *k = n->src[1], *v = n->src[2], *lens = n->src[3];
    VKF_TRY(vkf_vk_rows_win(r, d, q0, nq, 1, &win[0]));
    VKF_TRY(vkf_vk_rows_win(r, q, q0, nq, 0, &win[1]));
    VKF_TRY(vkf_vk_rows_win(r, k, k0, nk, 0, &win[2]));
    VKF_TRY(vkf_vk_rows_win(r, v, k0, nk, 0, &win[3]));
    VKF_TRY(vkf_vk_elem_off(&win[0], d, &pc->d_off));
    VKF_TRY(vkf_vk_elem_off(&win[1], q, &pc->q_off));
    VKF_TRY(vkf_vk_elem_off(&win[2], k, &pc->k_off));
    VKF_TRY(vkf_vk_elem_off(&win[3], v, &pc->v_off));
    win[4] = win[1];
    if (lens) {
        VKF_TRY(vkf_vk_window(r, lens->buf, lens->offset, lens->offset + (uint64_t)ap->batch * 4, 0,
                              &win[4]));
        VKF_TRY(vkf_vk_elem_off(&win[4], lens, &pc->len_off));
        pc->has_len = ap->len_pos ? 3u : 1u; /* bit 1: q_pos from the lengths (serve) */
    }
    return VKF_OK;
}

/* llvmpipe (gallivm) ends every loop of an invocation once the invocation's loops have run
 * 65535 iterations in all (its loop limiter, LP_MAX_TGSI_LOOP_ITERATIONS), silently: decode or
 * prefill attention with one invocation walking more keys than that gave wrong results on
 * lavapipe (op harness, n_q = 16 at 131072 keys: NMSE 1e-2; bench/RESULTS.md). On CPU drivers
 * no invocation walks more than this many keys: the texel kernel's lanes-take-keys and
 * lanes-take-query-rows layouts split the keys across workgroups and merge the parts
 * (vkf_vk_attn_layout_of), the rest goes to the general kernel in chunks of this size (its
 * invocations walk them WG at a time, a few hundred loop iterations per block at most). */
#define VKF_VK_CPU_KEYS_MAX 16384u

static int vkf_vk_cpu_driver(const vkf_vk_caps *c) {
    return c->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

/* One sequence exceeds a window (or, on CPU drivers, VKF_VK_CPU_KEYS_MAX keys): per sequence
 * and query chunk, key chunks of at most kmax in order, each resuming from the (max, sum) state
 * and normalized output the previous chunk left (scratch + dst). */
static vkf_status vkf_vk_attention_chunked(vkf_vk_rec *r, const vkf_node *n, int64_t kmax) {
    const vkf_attn_params *ap = &n->p.attn;
    const vkf_tensor *d = n->dst, *q = n->src[0], *k = n->src[1], *v = n->src[2];
    uint64_t budget = vkf_vk_window_budget(r->vb);
    const vkf_vk_caps *c = &r->vb->caps;
    int64_t qc =
        vkf_vk_min64(vkf_vk_min64(vkf_vk_rows_fit(q, budget), vkf_vk_rows_fit(d, budget)), ap->n_q);
    int64_t kc = vkf_vk_min64(vkf_vk_min64(vkf_vk_rows_fit(k, budget), vkf_vk_rows_fit(v, budget)),
                              vkf_vk_min64(ap->n_kv, kmax));
    if (qc == 0 || kc == 0)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "attention %s: one query or key row does not fit the "
                         "storage window of %llu bytes",
                         d->name, (unsigned long long)budget);
    uint64_t st_bytes = (uint64_t)ap->batch * (uint64_t)ap->n_q * (uint64_t)ap->n_head * 8;
    if (st_bytes > budget)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "attention %s: chunk state of %llu bytes exceeds the "
                         "storage window",
                         d->name, (unsigned long long)st_bytes);
    vkf_buffer *state;
    VKF_TRY(vkf_vk_scratch(r, st_bytes, &state));
    vkf_vk_pipeline *pl;
    for (int64_t b = 0; b < ap->batch; b++) {
        for (int64_t q0 = 0; q0 < ap->n_q; q0 += qc) {
            int64_t qn = vkf_vk_min64(qc, ap->n_q - q0);
            for (int64_t j0 = 0; j0 < ap->n_kv; j0 += kc) {
                int64_t jn = vkf_vk_min64(kc, ap->n_kv - j0);
                vkf_vk_win win[6];
                vkf_pc_attn pc;
                memset(&pc, 0, sizeof pc);
                vkf_vk_attn_pc(n, &pc);
                VKF_TRY(vkf_vk_attn_bind(r, n, b * ap->n_q + q0, qn, b * ap->kv_stride + j0, jn,
                                         win, &pc));
                VKF_TRY(vkf_vk_window(r, state, 0, st_bytes, 1, &win[5]));
                pc.s_off = (uint32_t)(win[5].delta / 4);
                pc.batch = 1;
                pc.b0 = (uint32_t)b;
                pc.j0 = (uint32_t)j0;
                pc.jn = (uint32_t)jn;
                pc.carry = (j0 > 0 ? 1u : 0u) | (j0 + jn < ap->n_kv ? 2u : 0u);
                pc.q0 = (uint32_t)q0;
                pc.qn = (uint32_t)qn;
                uint32_t gy = (uint32_t)vkf_vk_min64(qn, c->max_wg_count[1]);
                VKF_TRY(vkf_vk_attn_pipe(r, &pc, 1, k->dtype == VKF_DTYPE_F16, &pl));
                VKF_TRY(
                    vkf_vk_dispatch(r, pl, win, 6, &pc, sizeof pc, (uint32_t)ap->n_head, gy, 1));
            }
        }
    }
    return VKF_OK;
}

#define VKF_VK_ATTN_TEXEL_WG 64

/* attention_texel.comp's layout for a node (one query head per workgroup): who takes keys or query
 * rows, the workgroup size, the key parts; walk: the keys one invocation walks (0 if unsafe
 * on a CPU driver: the general kernel then runs in chunks) */
typedef struct vkf_vk_attn_layout {
    uint32_t qr, split, wg;
    int keylanes, qlanes;
} vkf_vk_attn_layout;

static int vkf_vk_attn_layout_of(const vkf_vk_caps *c, const vkf_switches *sw,
                                 const vkf_attn_params *ap, vkf_vk_attn_layout *o) {
    uint32_t hw = (uint32_t)ap->head_dim / 4u, S = c->subgroup_min;
    /* one query head per workgroup: several heads sharing a KV head (GQA, the shader's HG) lost
     * on lavapipe (its register arrays spill) and on the H200 (bench/RESULTS.md) */
    /* CPU drivers' choices, unless VKF_GPU_TABLE=1 (lavapipe taking the GPUs') */
    int cpu = c->type == VK_PHYSICAL_DEVICE_TYPE_CPU && !sw->gpu_table;
    /* decode: lanes take whole keys (no subgroupAdd per key) on every device; on GPUs up to
     * head_dim 64, which keeps q and the accumulator (2 * head_dim floats per lane) within
     * reason. On an H200 (TinyLlama Q4_0, F16 cache, tg32 t/s at depth 128 / 2048): subgroups
     * splitting the keys, 64 invocations 289 / 49, 512 409 / 220; lanes taking keys, 256
     * invocations 397 / 279. CPU drivers take it up to head_dim 128, where the registers spill
     * and it still wins with K/V read from memory (lavapipe, 1x2048 keys, 16/8 heads of 128, CPU
     * ms: F16 cache 4.7-5.0 -> 3.1, F32 4.4-4.5 -> 4.0-4.2; qwen3-0.6b Q8_0 at depth 2048,
     * attention 71.2 -> 37.7 ms per token); at 256 it is even (1.60 / 1.63 ms, gemma's 4/1
     * heads) (bench/RESULTS.md). VKF_ATTN_KEYLANES=1 gives GPUs the CPU drivers' bound (an
     * experiment: bench/steps-gpu-decode.txt) */
    uint32_t kl_hw = cpu || sw->attn_keylanes ? 32u : 16u;
    int keylanes = ap->n_q == 1 && hw <= kl_hw && !sw->no_keylanes;
    /* prefill on CPU drivers: lanes take whole query rows (K/V read once per tile of queries),
     * up to head_dim 256 there (qwen3's 128 and gemma's 256 spill registers, and still beat the
     * subgroup layout: pp512 attention ms per token, qwen3-0.6b 10.0 -> 2.4, gemma-3-1b 3.3 ->
     * 1.1; bench/RESULTS.md); not on GPUs (H200 pp512 at depth 128 / 2048: 4,533 / 1,736 t/s
     * against 7,192 / 3,778 with subgroups splitting a query's keys) */
    int qlanes = ap->n_q > 1 && hw <= 64u && cpu && !sw->no_qlanes;
    /* with qlanes, 4 (or 2) query rows per lane where every sequence's row count is a multiple
     * (a lane's rows then share one sequence's K/V): each K/V load serves all of them. pp512
     * on TinyLlama's attention shape, ms per layer: 1 row 80.5, 2 rows 54.2, 4 rows 44.0, 8 rows
     * 42.3 (bench/RESULTS.md). VKF_ATTN_QR=N sets it (1 turns it off). */
    uint64_t qre = sw->attn_qr;
    uint32_t qr = qre >= 1 && qre <= 8 ? (uint32_t)qre : ap->n_q % 4 == 0 ? 4 : 2;
    if (!qlanes || ap->n_q % qr) qr = 1;
    /* decode split over the keys across workgroups (flash-decoding), then merged: an
     * experiment for GPUs, whose decode attention runs one workgroup per head (VKF_ATTN_SPLIT=P,
     * 2..64 parts; lanes taking keys only) */
    uint64_t spe = sw->attn_split;
    uint32_t split = keylanes && spe >= 2 && spe <= 64 ? (uint32_t)spe : 1u;
    /* CPU drivers: one subgroup per workgroup (no shared-memory merge; their barriers are
     * expensive) except decode in the subgroup layout (split-K over the cache, 64). GPUs: the
     * subgroups of 256 invocations split the keys of a query row (prefill, decode with lanes
     * taking keys), 512 in decode's subgroup layout; on the H200, pp512 t/s at depth 128 / 2048:
     * one subgroup 6905 / 3313, 256 invocations 7192 / 3778 (attention.comp: 4892 / 1555) */
    uint32_t wg = cpu ? (ap->n_q > 1 || keylanes ? S : VKF_VK_ATTN_TEXEL_WG)
                      : (ap->n_q == 1 && !keylanes ? 512u : 256u);
    uint64_t wge = sw->attn_wg;
    if (wge >= 1 && wge <= c->max_wg_invocations) wg = (uint32_t)wge;
    /* the merge's shared memory: (wg / S) x (head_dim / 4) texels and two floats per subgroup */
    while (wg > S &&
           (wg > c->max_wg_invocations || (uint64_t)(wg / S) * (hw * 16u + 8u) > c->max_shared))
        wg /= 2;
    /* llvmpipe's loop limiter (VKF_VK_CPU_KEYS_MAX): on CPU drivers the layouts whose lanes
     * take keys or query rows split the keys across workgroups so that no invocation walks more
     * than VKF_VK_CPU_KEYS_MAX; the subgroup layout (head_dim > 64), whose invocations spend
     * about two loop iterations per key (262144 keys over 8 subgroups failed, 131072 held), is
     * left to the chunked general kernel past that many keys per subgroup */
    if (vkf_vk_cpu_driver(c)) {
        uint64_t walk = keylanes ? ((uint64_t)ap->n_kv + wg - 1) / wg : (uint64_t)ap->n_kv;
        if (!keylanes && !qlanes) {
            uint64_t G = ap->n_q == 1 && wg / S > 1 ? wg / S : 1;
            if (((uint64_t)ap->n_kv + G - 1) / G > VKF_VK_CPU_KEYS_MAX) return 0;
        } else {
            uint64_t need = (walk + VKF_VK_CPU_KEYS_MAX - 1) / VKF_VK_CPU_KEYS_MAX;
            if (need > 64) return 0;
            if (need > split) split = (uint32_t)need;
        }
    }
    o->qr = qr;
    o->split = split;
    o->wg = wg;
    o->keylanes = keylanes;
    o->qlanes = qlanes;
    return 1;
}

/* attention_texel.comp when the device has texels and subgroups, head_dim and every offset and
 * stride are multiples of 4 (of 8 with an F16 cache: a K/V texel holds 8 halves) and one
 * dispatch binds everything (else 0: the general kernel). */
static int vkf_vk_attn_texel_ok(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_attn_params *ap = &n->p.attn;
    const vkf_tensor *d = n->dst, *q = n->src[0], *k = n->src[1], *v = n->src[2];
    const vkf_vk_caps *c = &r->vb->caps;
    if (!c->texel || !c->has_subgroup || !c->subgroup_min || r->vb->sw.no_texel_attention) return 0;
    vkf_vk_attn_layout lo;
    if (!vkf_vk_attn_layout_of(c, &r->vb->sw, ap, &lo)) return 0;
    /* key parts: their states must fit one window */
    if (lo.split > 1 &&
        (uint64_t)ap->batch * ap->n_q * ap->n_head * lo.split * (ap->head_dim / 4 + 1) * 16u >
            vkf_vk_window_budget(r->vb))
        return 0;
    int kvu = k->dtype == VKF_DTYPE_F16 ? 2 : 1; /* 4-wide units per K/V texel */
    if ((k->dtype != VKF_DTYPE_F32 && k->dtype != VKF_DTYPE_F16) || v->dtype != k->dtype ||
        q->dtype != VKF_DTYPE_F32 || d->dtype != VKF_DTYPE_F32)
        return 0;
    if (ap->head_dim % (4 * kvu) || d->row_stride % 4 || q->row_stride % 4 ||
        k->row_stride % (4 * kvu) || v->row_stride % (4 * kvu))
        return 0;
    if (d->offset % 16 || q->offset % 16 || k->offset % 16 || v->offset % 16) return 0;
    if ((uint32_t)ap->n_head > c->max_wg_count[0] ||
        (int64_t)ap->batch * ap->n_q > (int64_t)c->max_wg_count[1])
        return 0;
    uint64_t budget = vkf_vk_texel_budget(r->vb) - 32;
    int64_t kv_rows = (int64_t)(ap->batch - 1) * ap->kv_stride + ap->n_kv;
    int64_t q_rows = (int64_t)ap->batch * ap->n_q;
    return vkf_vk_rows_fit(q, budget) >= q_rows &&
           vkf_vk_rows_fit(d, vkf_vk_window_budget(r->vb)) >= q_rows &&
           vkf_vk_rows_fit(k, budget) >= kv_rows && vkf_vk_rows_fit(v, budget) >= kv_rows;
}

static vkf_status vkf_vk_attention_texel(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_attn_params *ap = &n->p.attn;
    const vkf_tensor *d = n->dst, *q = n->src[0], *k = n->src[1], *v = n->src[2], *lens = n->src[3];
    const vkf_vk_caps *c = &r->vb->caps;
    uint32_t kv_f16 = k->dtype == VKF_DTYPE_F16, kvu = kv_f16 ? 2u : 1u;
    uint32_t hw = (uint32_t)ap->head_dim / 4u, S = c->subgroup_min;
    uint32_t maxt = (hw / kvu + S - 1) / S; /* K/V texels of a head per lane */
    vkf_vk_attn_layout lo;
    if (!vkf_vk_attn_layout_of(c, &r->vb->sw, ap, &lo))
        return vkf_error(VKF_ERROR_INTERNAL, "attention %s: no texel layout", d->name);
    uint32_t qr = lo.qr, split = lo.split, wg = lo.wg;
    int keylanes = lo.keylanes, qlanes = lo.qlanes;
    char defs[144];
    snprintf(defs, sizeof defs,
             "MAXT=%uu;HWMAX=%uu;KEYLANES=%d;QLANES=%d;QR=%uu;KV_F16=%u;SPLIT=%u", maxt, hw,
             keylanes, qlanes, qr, kv_f16, split);
    uint32_t spec[1] = {wg};
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, "attention_texel", defs, spec, 1, &pl));
    int64_t kv_rows = (int64_t)(ap->batch - 1) * ap->kv_stride + ap->n_kv;
    int64_t q_rows = (int64_t)ap->batch * ap->n_q;
    vkf_vk_win win[5];
    vkf_pc_attn pc;
    memset(&pc, 0, sizeof pc);
    VKF_TRY(vkf_vk_rows_win(r, d, 0, q_rows, 1, &win[0]));
    VKF_TRY(vkf_vk_elem_off(&win[0], d, &pc.d_off));
    VKF_TRY(vkf_vk_rows_texwin(r, q, 0, q_rows, &win[1]));
    VKF_TRY(vkf_vk_rows_texwin(r, k, 0, kv_rows, &win[2]));
    VKF_TRY(vkf_vk_rows_texwin(r, v, 0, kv_rows, &win[3]));
    if (win[0].delta % 16 || win[1].delta % 16 || win[2].delta % 16 || win[3].delta % 16)
        return vkf_error(VKF_ERROR_INTERNAL, "attention %s: windows not texel aligned", d->name);
    pc.q_off = (uint32_t)(win[1].delta / 4);
    /* element offsets: floats, or halves for an F16 cache */
    pc.k_off = (uint32_t)(win[2].delta / (kv_f16 ? 2 : 4));
    pc.v_off = (uint32_t)(win[3].delta / (kv_f16 ? 2 : 4));
    win[4] = win[0];
    win[4].write = 0;
    if (lens) {
        VKF_TRY(vkf_vk_window(r, lens->buf, lens->offset, lens->offset + (uint64_t)ap->batch * 4, 0,
                              &win[4]));
        VKF_TRY(vkf_vk_elem_off(&win[4], lens, &pc.len_off));
        pc.has_len = ap->len_pos ? 3u : 1u; /* bit 1: q_pos from the lengths (serve) */
    }
    vkf_vk_attn_pc(n, &pc);
    pc.batch = (uint32_t)ap->batch;
    pc.b0 = 0;
    pc.j0 = 0;
    pc.jn = (uint32_t)ap->n_kv;
    pc.q0 = 0;
    pc.qn = (uint32_t)ap->n_q;
    /* qlanes: one workgroup per tile of wg query rows */
    uint32_t gy = qlanes ? (uint32_t)((q_rows + wg * qr - 1) / (wg * qr)) : (uint32_t)q_rows;
    if (split == 1)
        return vkf_vk_dispatch(r, pl, win, 5, &pc, sizeof pc, (uint32_t)ap->n_head, gy, 1);
    /* the parts' states (one texel of max and sum, then the head's texels) in scratch, then
     * attention_merge.comp into dst */
    uint64_t pbytes = (uint64_t)q_rows * (uint64_t)ap->n_head * split * (hw + 1u) * 16u;
    if (pbytes > vkf_vk_window_budget(r->vb) || (uint64_t)split > c->max_wg_count[2])
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "attention %s: %u key parts of %llu bytes exceed the device's limits",
                         d->name, split, (unsigned long long)pbytes);
    vkf_buffer *parts;
    VKF_TRY(vkf_vk_scratch(r, (size_t)pbytes, &parts));
    vkf_vk_win pw, mwin[2];
    VKF_TRY(vkf_vk_window(r, parts, 0, pbytes, 1, &pw));
    if (pw.delta % 16)
        return vkf_error(VKF_ERROR_INTERNAL, "attention %s: parts unaligned", d->name);
    mwin[0] = win[0];
    win[0] = pw;
    vkf_pc_attn mpc = pc;
    pc.d_off = (uint32_t)(pw.delta / 4);
    VKF_TRY(vkf_vk_dispatch(r, pl, win, 5, &pc, sizeof pc, (uint32_t)ap->n_head, gy, split));
    char mdefs[48];
    snprintf(mdefs, sizeof mdefs, "SPLIT=%u;HWMAX=%uu", split, hw);
    uint32_t mwg = 64;
    vkf_vk_pipeline *ml;
    VKF_TRY(vkf_vk_pipe(r, "attention_merge", mdefs, &mwg, 1, &ml));
    mwin[1] = pw;
    mwin[1].write = 0;
    mpc.s_off = (uint32_t)(pw.delta / 16);
    /* one merge workgroup per (head, query row) */
    return vkf_vk_dispatch(r, ml, mwin, 2, &mpc, sizeof mpc, (uint32_t)ap->n_head, (uint32_t)q_rows,
                           1);
}

vkf_status vkf_vk_op_attention(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_attn_params *ap = &n->p.attn;
    const vkf_tensor *d = n->dst, *q = n->src[0], *k = n->src[1], *v = n->src[2];
    if (ap->batch <= 0 || ap->n_q <= 0 || ap->n_kv <= 0 || ap->n_head <= 0 || ap->n_kv_head <= 0 ||
        ap->head_dim <= 0 || ap->head_dim > 1024 || ap->n_head % ap->n_kv_head ||
        ap->kv_stride < ap->n_kv)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "attention: bad parameters batch %d n_q %d n_kv %d "
                         "kv_stride %d heads %d/%d head_dim %d",
                         ap->batch, ap->n_q, ap->n_kv, ap->kv_stride, ap->n_head, ap->n_kv_head,
                         ap->head_dim);
    if (vkf_vk_attn_texel_ok(r, n)) return vkf_vk_attention_texel(r, n);
    uint64_t budget = vkf_vk_window_budget(r->vb);
    const vkf_vk_caps *c = &r->vb->caps;
    /* sequences per dispatch: Q/dst rows nb*n_q, K/V rows (nb-1)*kv_stride + n_kv */
    int64_t nb = ap->batch;
    int64_t qfit = vkf_vk_min64(vkf_vk_rows_fit(q, budget), vkf_vk_rows_fit(d, budget));
    nb = vkf_vk_min64(nb, qfit / ap->n_q);
    while (nb > 0 && !(vkf_vk_kv_fits(k, nb, ap->kv_stride, ap->n_kv, budget) &&
                       vkf_vk_kv_fits(v, nb, ap->kv_stride, ap->n_kv, budget)))
        nb--;
    if ((uint32_t)ap->n_head > c->max_wg_count[0])
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "attention: %d heads exceed the workgroup count limit", ap->n_head);
    /* the general kernel's loops per key grow with head_dim (a dot product over the head's
     * texels): 16384-key chunks hold up to head_dim 128 (270000 keys in the op harness), and at
     * 256 (gemma) 20000 keys in two chunks read NMSE 1e-3 on lavapipe, so the chunks shrink with
     * wider heads */
    int64_t kmax = vkf_vk_cpu_driver(c) ? (int64_t)VKF_VK_CPU_KEYS_MAX * 128 /
                                              (ap->head_dim > 128 ? ap->head_dim : 128)
                                        : (int64_t)ap->n_kv;
    if (nb == 0 || ap->n_kv > kmax) return vkf_vk_attention_chunked(r, n, kmax);
    vkf_vk_pipeline *pl;
    for (int64_t b0 = 0; b0 < ap->batch; b0 += nb) {
        int64_t bc = vkf_vk_min64(nb, ap->batch - b0);
        vkf_vk_win win[5];
        vkf_pc_attn pc;
        memset(&pc, 0, sizeof pc);
        int64_t kv_rows = (bc - 1) * ap->kv_stride + ap->n_kv;
        VKF_TRY(vkf_vk_attn_bind(r, n, b0 * ap->n_q, bc * ap->n_q, b0 * ap->kv_stride, kv_rows, win,
                                 &pc));
        vkf_vk_attn_pc(n, &pc);
        pc.batch = (uint32_t)bc;
        pc.b0 = (uint32_t)b0;
        pc.j0 = 0;
        pc.jn = (uint32_t)ap->n_kv;
        pc.q0 = 0;
        pc.qn = (uint32_t)ap->n_q;
        uint32_t gy = (uint32_t)vkf_vk_min64(bc * ap->n_q, c->max_wg_count[1]);
        VKF_TRY(vkf_vk_attn_pipe(r, &pc, 0, k->dtype == VKF_DTYPE_F16, &pl));
        VKF_TRY(vkf_vk_dispatch(r, pl, win, 5, &pc, sizeof pc, (uint32_t)ap->n_head, gy, 1));
    }
    return VKF_OK;
}
