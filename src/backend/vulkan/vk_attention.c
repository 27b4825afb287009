/* The ATTENTION encoder (vk_ops.c dispatches to it), as the planner chose (vkf_vk_plan_attention):
 * attention_texel.comp where the device has texels and subgroups and the shapes allow (F32 or F16
 * caches; its layout per device kind), with the key parts merged by attention_merge.comp where
 * the keys are split across workgroups; else attention.comp, in key chunks when one sequence
 * exceeds a storage window or what a CPU driver's invocation may walk; attention with sinks
 * (gpt-oss) always takes attention.comp (SINKS=1). */
#include <stdio.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/dtype.h"
#include "vkf_abi.h"

/* ---------------------------------------------------------------- attention */

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
    if (vkf_vk_kvq(n->src[1]->dtype)) { /* bf16 / block caches: bytes */
        pc->k_stride = (uint32_t)vkf_vk_stride_bytes(n->src[1]);
        pc->v_stride = (uint32_t)vkf_vk_stride_bytes(n->src[2]);
    }
    pc->d_stride = (uint32_t)n->dst->row_stride;
}

/* attention.comp with 16-byte loads where the plan allows them and every q/k/v/dst offset and
 * stride and head_dim are multiples of 4 */
static int vkf_vk_attn_vec4(const vkf_vk_attn_plan *p, const vkf_pc_attn *pc) {
    return p->vec4_ok && pc->head_dim % 4 == 0 && pc->q_off % 4 == 0 && pc->k_off % 4 == 0 &&
           pc->v_off % 4 == 0 && pc->d_off % 4 == 0 && pc->q_stride % 4 == 0 &&
           pc->k_stride % 4 == 0 && pc->v_stride % 4 == 0 && pc->d_stride % 4 == 0;
}

/* the key lengths' window (bound to q, win[1], when absent) */
static vkf_status vkf_vk_attn_bind_lens(vkf_vk_rec *r, const vkf_node *n, vkf_vk_win win[5],
                                        vkf_pc_attn *pc) {
    const vkf_attn_params *ap = &n->p.attn;
    const vkf_tensor *lens = n->src[3];
    win[4] = win[1];
    if (lens) {
        VKF_TRY(vkf_vk_window(r, lens->buf, lens->offset, lens->offset + (uint64_t)ap->batch * 4, 0,
                              &win[4]));
        VKF_TRY(vkf_vk_elem_off(&win[4], lens, &pc->len_off));
        pc->has_len = ap->len_pos ? 3u : 1u; /* bit 1: q_pos from the lengths (serve) */
    }
    return VKF_OK;
}

/* attention.comp's windows: dst and q over query rows [q0, q0 + nq), k and v over key rows
 * [k0, k0 + nk), the key lengths (bound to q when absent), and their element offsets in pc
 * (bytes for K and V of bf16 or a block type: attention.comp's KVQ) */
static vkf_status vkf_vk_attn_bind(vkf_vk_rec *r, const vkf_node *n, int64_t q0, int64_t nq,
                                   int64_t k0, int64_t nk, vkf_vk_win win[5], vkf_pc_attn *pc) {
    const vkf_tensor *d = n->dst, *q = n->src[0], *k = n->src[1], *v = n->src[2];
    VKF_TRY(vkf_vk_rows_win(r, d, q0, nq, 1, &win[0]));
    VKF_TRY(vkf_vk_rows_win(r, q, q0, nq, 0, &win[1]));
    VKF_TRY(vkf_vk_rows_win(r, k, k0, nk, 0, &win[2]));
    VKF_TRY(vkf_vk_rows_win(r, v, k0, nk, 0, &win[3]));
    VKF_TRY(vkf_vk_elem_off(&win[0], d, &pc->d_off));
    VKF_TRY(vkf_vk_elem_off(&win[1], q, &pc->q_off));
    if (vkf_vk_kvq(k->dtype)) {
        pc->k_off = (uint32_t)win[2].delta;
        pc->v_off = (uint32_t)win[3].delta;
        if (pc->k_off % 2 || pc->v_off % 2)
            return vkf_error(VKF_ERROR_INTERNAL, "attention %s: K/V windows at odd bytes", d->name);
    } else {
        VKF_TRY(vkf_vk_elem_off(&win[2], k, &pc->k_off));
        VKF_TRY(vkf_vk_elem_off(&win[3], v, &pc->v_off));
    }
    return vkf_vk_attn_bind_lens(r, n, win, pc);
}

/* The sinks' window (SINKS=1 kernels): win, with its element offset in pc; nothing without. */
static vkf_status vkf_vk_attn_sinks(vkf_vk_rec *r, const vkf_node *n, vkf_vk_win *win,
                                    vkf_pc_attn *pc, int *n_win) {
    const vkf_tensor *sk = n->src[4];
    if (!sk) return VKF_OK;
    VKF_TRY(vkf_vk_rows_win(r, sk, 0, 1, 0, win));
    VKF_TRY(vkf_vk_elem_off(win, sk, &pc->sink_off));
    (*n_win)++;
    return VKF_OK;
}

/* One sequence exceeds a window (or, on CPU drivers, VKF_VK_CPU_KEYS_MAX keys): per sequence
 * and query chunk, key chunks of at most kmax in order, each resuming from the (max, sum) state
 * and normalized output the previous chunk left (scratch + dst). */
static vkf_status vkf_vk_attention_chunked(vkf_vk_rec *r, const vkf_node *n,
                                           const vkf_vk_attn_plan *p) {
    int64_t kmax = p->kmax;
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
                vkf_vk_win win[7];
                vkf_pc_attn pc;
                int nw = 6;
                memset(&pc, 0, sizeof pc);
                vkf_vk_attn_pc(n, &pc);
                VKF_TRY(vkf_vk_attn_bind(r, n, b * ap->n_q + q0, qn, b * ap->kv_stride + j0, jn,
                                         win, &pc));
                VKF_TRY(vkf_vk_window(r, state, 0, st_bytes, 1, &win[5]));
                VKF_TRY(vkf_vk_attn_sinks(r, n, &win[6], &pc, &nw));
                pc.s_off = (uint32_t)(win[5].delta / 4);
                pc.batch = 1;
                pc.b0 = (uint32_t)b;
                pc.j0 = (uint32_t)j0;
                pc.jn = (uint32_t)jn;
                pc.carry = (j0 > 0 ? 1u : 0u) | (j0 + jn < ap->n_kv ? 2u : 0u);
                pc.q0 = (uint32_t)q0;
                pc.qn = (uint32_t)qn;
                uint32_t gy = (uint32_t)vkf_vk_min64(qn, c->max_wg_count[1]);
                VKF_TRY(vkf_vk_pipe(r, vkf_vk_attn_vec4(p, &pc) ? &p->gen : &p->gen1, &pl));
                VKF_TRY(
                    vkf_vk_dispatch(r, pl, win, nw, &pc, sizeof pc, (uint32_t)ap->n_head, gy, 1));
            }
        }
    }
    return VKF_OK;
}

static vkf_status vkf_vk_attention_texel(vkf_vk_rec *r, const vkf_node *n,
                                         const vkf_vk_attn_plan *p) {
    const vkf_attn_params *ap = &n->p.attn;
    const vkf_tensor *d = n->dst, *q = n->src[0], *k = n->src[1], *v = n->src[2], *lens = n->src[3];
    const vkf_vk_caps *c = &r->vb->caps;
    uint32_t kv_f16 = k->dtype == VKF_DTYPE_F16, hw = (uint32_t)ap->head_dim / 4u;
    uint32_t qr = p->qr, split = p->split, wg = p->wg;
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &p->k, &pl));
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
    uint32_t gy = p->qlanes ? (uint32_t)((q_rows + wg * qr - 1) / (wg * qr)) : (uint32_t)q_rows;
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
    vkf_vk_pipeline *ml;
    VKF_TRY(vkf_vk_pipe(r, &p->merge, &ml));
    mwin[1] = pw;
    mwin[1].write = 0;
    mpc.s_off = (uint32_t)(pw.delta / 16);
    /* one merge workgroup per (head, query row) */
    return vkf_vk_dispatch(r, ml, mwin, 2, &mpc, sizeof mpc, (uint32_t)ap->n_head, (uint32_t)q_rows,
                           1);
}

vkf_status vkf_vk_op_attention(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_attn_params *ap = &n->p.attn;
    if (ap->batch <= 0 || ap->n_q <= 0 || ap->n_kv <= 0 || ap->n_head <= 0 || ap->n_kv_head <= 0 ||
        ap->head_dim <= 0 || ap->head_dim > 1024 || ap->n_head % ap->n_kv_head ||
        ap->kv_stride < ap->n_kv)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "attention: bad parameters batch %d n_q %d n_kv %d "
                         "kv_stride %d heads %d/%d head_dim %d",
                         ap->batch, ap->n_q, ap->n_kv, ap->kv_stride, ap->n_head, ap->n_kv_head,
                         ap->head_dim);
    vkf_vk_attn_plan p;
    VKF_TRY(vkf_vk_plan_attention(r->vb, n, &p));
    if (p.texel) return vkf_vk_attention_texel(r, n, &p);
    if (p.chunked) return vkf_vk_attention_chunked(r, n, &p);
    const vkf_vk_caps *c = &r->vb->caps;
    int64_t nb = p.nb;
    vkf_vk_pipeline *pl;
    for (int64_t b0 = 0; b0 < ap->batch; b0 += nb) {
        int64_t bc = vkf_vk_min64(nb, ap->batch - b0);
        vkf_vk_win win[6];
        vkf_pc_attn pc;
        int nw = 5;
        memset(&pc, 0, sizeof pc);
        int64_t kv_rows = (bc - 1) * ap->kv_stride + ap->n_kv;
        VKF_TRY(vkf_vk_attn_bind(r, n, b0 * ap->n_q, bc * ap->n_q, b0 * ap->kv_stride, kv_rows, win,
                                 &pc));
        VKF_TRY(vkf_vk_attn_sinks(r, n, &win[5], &pc, &nw));
        vkf_vk_attn_pc(n, &pc);
        pc.batch = (uint32_t)bc;
        pc.b0 = (uint32_t)b0;
        pc.j0 = 0;
        pc.jn = (uint32_t)ap->n_kv;
        pc.q0 = 0;
        pc.qn = (uint32_t)ap->n_q;
        uint32_t gy = (uint32_t)vkf_vk_min64(bc * ap->n_q, c->max_wg_count[1]);
        VKF_TRY(vkf_vk_pipe(r, vkf_vk_attn_vec4(&p, &pc) ? &p.gen : &p.gen1, &pl));
        VKF_TRY(vkf_vk_dispatch(r, pl, win, nw, &pc, sizeof pc, (uint32_t)ap->n_head, gy, 1));
    }
    return VKF_OK;
}
