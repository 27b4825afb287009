/* Graph fusion at record time: node sequences that one kernel can do in a single pass are
 * recorded as one dispatch. On CPU drivers each dispatch costs tens of microseconds whatever
 * its size, and a decoding step of a small model is mostly dispatches (bench/RESULTS.md), so
 * the dispatch count per token is what fusion buys; on GPUs it also saves passes over memory.
 *
 * Patterns, each checked against the whole graph before it is used:
 *   RMSNORM h = norm(x) followed by the matmuls that read h   -> matmuls on x with the norm
 *                                                                folded in (h is not written)
 *   MATMUL g, MATMUL u (same input), SWIGLU f = silu(g) * u    -> one dispatch writing f
 *   (or GeGLU, gelu_tanh(g) * u: gemma)
 *   MATMUL gu (a fused gate|up matrix), SWIGLU of its halves     -> the same (phi3)
 *   2-3 consecutive MATMULs with the same input (q, k, v), each -> one dispatch
 *   with a bias or none of them (qwen2 has q/k/v biases)
 *   MATMUL o, ADD y = x + o                                    -> one dispatch writing y
 *   MATMUL o (+ bias), UNARY y = act(o)                        -> one dispatch writing y
 *   RMSNORM o' = norm(o), ADD y = x + o' (a post-norm: gemma)  -> one dispatch writing y
 *   RMSNORM q' = norm(q), RMSNORM k' = norm(k), independent    -> one dispatch (per-head q/k
 *                                                                 norms: qwen3, gemma3)
 *   ROPE q, ROPE k, COPY_ROWS of k and v into the KV cache     -> one dispatch (kv_store.comp;
 *                                                                 F32 or F16 caches),
 *   or the COPY_ROWS alone (models without RoPE)
 * and combinations (norm + q/k/v, norm + gate/up + swiglu; a norm whose readers form several
 * groups, as q/k and v of two weight types, is folded into each). A tensor that a fusion does not
 * write must be an intermediate of the graph's arena that no other node reads while it lives;
 * outputs must not overlap the inputs of the fused dispatch (workgroups run in any order).
 * VKF_NO_FUSE=1 turns all of it off. */
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "vkf_abi.h"

/* ---------------------------------------------------------------- memory ranges */

typedef struct vkf_vk_span {
    const void *block;
    uint64_t lo, hi;
} vkf_vk_span;

static vkf_vk_span vkf_vk_span_of(const vkf_tensor *t) {
    vkf_vk_span s = {NULL, 0, 0};
    if (!t || !t->buf) return s;
    s.block = t->buf->block;
    s.lo = t->buf->offset + t->offset;
    s.hi = s.lo + vkf_tensor_nbytes(t);
    return s;
}

static int vkf_vk_spans_overlap(vkf_vk_span a, vkf_vk_span b) {
    return a.block && a.block == b.block && a.lo < b.hi && b.lo < a.hi;
}

static int vkf_vk_overlap(const vkf_tensor *a, const vkf_tensor *b) {
    return a && b && vkf_vk_spans_overlap(vkf_vk_span_of(a), vkf_vk_span_of(b));
}

/* a and b are the same elements: same block, start, shape and row stride */
static int vkf_vk_same_rows(const vkf_tensor *a, const vkf_tensor *b) {
    vkf_vk_span sa = vkf_vk_span_of(a), sb = vkf_vk_span_of(b);
    return sa.block && sa.block == sb.block && sa.lo == sb.lo && a->rows == b->rows &&
           a->cols == b->cols && a->row_stride == b->row_stride && a->dtype == b->dtype;
}

/* t, written by node `producer`, is an arena intermediate that no node after `last` reads
 * before its bytes are overwritten (the arena reuses memory, so later tensors may occupy parts
 * of it): the fused dispatch covering nodes producer..last may skip writing it. The live part
 * of t is a list of byte intervals; every write after the producer removes from it (a write by
 * another elided node hands the bytes to that tensor, which is checked on its own), and a read
 * after `last` that touches it means t is still needed. */
#define VKF_VK_LIVE_MAX 32
static int vkf_vk_dead_after(const vkf_graph *g, const vkf_tensor *t, int producer, int last) {
    if (!t || !t->buf || !g->arena || t->buf != g->arena) return 0;
    vkf_vk_span s = vkf_vk_span_of(t);
    uint64_t lo[VKF_VK_LIVE_MAX], hi[VKF_VK_LIVE_MAX];
    int n = 1;
    lo[0] = s.lo;
    hi[0] = s.hi;
    for (int j = producer + 1; j < g->n_nodes && n > 0; j++) {
        const vkf_node *nd = &g->nodes[j];
        for (int k = 0; k < VKF_MAX_SRC && j > last; k++) {
            vkf_vk_span r = vkf_vk_span_of(nd->src[k]);
            if (r.block != s.block) continue;
            for (int i = 0; i < n; i++)
                if (r.lo < hi[i] && lo[i] < r.hi) return 0;
        }
        vkf_vk_span d = vkf_vk_span_of(nd->dst);
        if (d.block != s.block) continue;
        /* a strided destination (a column view) does not overwrite the gaps between its rows */
        if (nd->dst->row_stride != nd->dst->cols && nd->dst->rows > 1) continue;
        int m = 0;
        uint64_t nlo[VKF_VK_LIVE_MAX], nhi[VKF_VK_LIVE_MAX];
        for (int i = 0; i < n; i++) {
            if (d.hi <= lo[i] || hi[i] <= d.lo) {
                nlo[m] = lo[i];
                nhi[m++] = hi[i];
                continue;
            }
            if (lo[i] < d.lo) {
                nlo[m] = lo[i];
                nhi[m++] = d.lo;
            }
            if (d.hi < hi[i]) {
                if (m == VKF_VK_LIVE_MAX) return 0;
                nlo[m] = d.hi;
                nhi[m++] = hi[i];
            }
            if (m >= VKF_VK_LIVE_MAX - 1) return 0;
        }
        n = m;
        memcpy(lo, nlo, sizeof lo[0] * (size_t)n);
        memcpy(hi, nhi, sizeof hi[0] * (size_t)n);
    }
    return 1;
}

/* ---------------------------------------------------------------- matching */

static int vkf_vk_is_mm(const vkf_graph *g, int i) {
    return i < g->n_nodes && g->nodes[i].op == VKF_OP_MATMUL;
}

/* Matmuls i.. (at most 3) reading `a`, each with a bias or none (as the first); returns how
 * many. */
static int vkf_vk_mm_run(const vkf_graph *g, int i, const vkf_tensor *a) {
    int k = 0, biased = vkf_vk_is_mm(g, i) && g->nodes[i].src[2];
    while (k < 3 && vkf_vk_is_mm(g, i + k) && g->nodes[i + k].src[0] == a &&
           !g->nodes[i + k].src[2] == !biased)
        k++;
    return k;
}

/* Outputs of the group must not overlap what the dispatch reads. */
static int vkf_vk_group_disjoint(const vkf_vk_mm_group *gr) {
    int n_out = gr->swiglu ? 1 : gr->n_mats;
    for (int i = 0; i < n_out; i++) {
        const vkf_tensor *d = gr->d[i];
        if (vkf_vk_overlap(d, gr->a) || vkf_vk_overlap(d, gr->norm_w)) return 0;
        for (int j = 0; j < gr->n_mats; j++)
            if (vkf_vk_overlap(d, gr->bias[j])) return 0;
        for (int j = 0; j < gr->n_mats; j++)
            if (vkf_vk_overlap(d, gr->w[j])) return 0;
        for (int j = 0; j < n_out; j++)
            if (j != i && vkf_vk_overlap(d, gr->d[j])) return 0;
        /* a residual may be the output itself (in place), but not overlap it partially */
        if (gr->res && vkf_vk_overlap(d, gr->res)) {
            vkf_vk_span a = vkf_vk_span_of(d), b = vkf_vk_span_of(gr->res);
            if (a.lo != b.lo || d->row_stride != gr->res->row_stride) return 0;
        }
    }
    return 1;
}

/* a and b are the left and right column halves of all of gu's rows (views) */
static int vkf_vk_halves_of(const vkf_tensor *a, const vkf_tensor *b, const vkf_tensor *gu) {
    int64_t h = gu->cols / 2;
    return gu->dtype == VKF_DTYPE_F32 && gu->cols % 2 == 0 && a->buf == gu->buf &&
           b->buf == gu->buf && a->dtype == gu->dtype && b->dtype == gu->dtype &&
           a->rows == gu->rows && b->rows == gu->rows && a->cols == h && b->cols == h &&
           a->row_stride == gu->row_stride && b->row_stride == gu->row_stride &&
           a->offset == gu->offset && b->offset == gu->offset + (size_t)h * 4;
}

/* Builds the matmul group for the matmuls starting at node i (reading a), with the optional
 * norm; returns the nodes it covers after i - 1 (0: no group). */
static int vkf_vk_match_mms(vkf_vk_rec *r, const vkf_graph *g, int i, const vkf_tensor *a,
                            const vkf_node *norm, vkf_vk_mm_group *gr) {
    memset(gr, 0, sizeof *gr);
    int k = vkf_vk_mm_run(g, i, a);
    gr->a = norm ? norm->src[0] : a;
    if (norm) {
        gr->norm_w = norm->src[1];
        gr->eps = norm->p.norm.eps;
        if (!gr->norm_w) return 0; /* an unweighted RMSNorm: not folded (the kernel scales by g) */
    }
    /* one fused gate|up matrix (phi3), swiglu of the output's halves: the two row halves of the
     * matrix as gate and up */
    if (k >= 1 && i + 1 < g->n_nodes && !g->nodes[i].src[2]) {
        const vkf_node *sw = &g->nodes[i + 1];
        const vkf_tensor *gu = g->nodes[i].dst, *W = g->nodes[i].src[1];
        if (sw->op == VKF_OP_SWIGLU && W->rows % 2 == 0 && W->rows / 2 == gu->cols / 2 &&
            vkf_vk_halves_of(sw->src[0], sw->src[1], gu) && vkf_vk_dead_after(g, gu, i, i + 1)) {
            int64_t ff = W->rows / 2;
            gr->wv[0] = vkf_tensor_view(W, 0, ff, 0, W->cols);
            gr->wv[1] = vkf_tensor_view(W, ff, ff, 0, W->cols);
            gr->n_mats = 2;
            gr->swiglu = sw->p.glu.gelu ? 2 : 1;
            gr->w[0] = &gr->wv[0];
            gr->w[1] = &gr->wv[1];
            gr->d[0] = sw->dst;
            if (vkf_vk_group_disjoint(gr) && vkf_vk_plan_mm_group_ok(r->vb, gr, NULL)) return 2;
            memset(gr, 0, sizeof *gr);
            gr->a = norm ? norm->src[0] : a;
            if (norm) {
                gr->norm_w = norm->src[1];
                gr->eps = norm->p.norm.eps;
            }
        }
    }
    /* gate, up, swiglu (without biases) */
    if (k >= 2 && i + 2 < g->n_nodes && !g->nodes[i].src[2]) {
        const vkf_node *sw = &g->nodes[i + 2];
        const vkf_tensor *gt = g->nodes[i].dst, *up = g->nodes[i + 1].dst;
        if (sw->op == VKF_OP_SWIGLU && sw->src[0] == gt && sw->src[1] == up &&
            gt->rows == up->rows && gt->cols == up->cols && vkf_vk_dead_after(g, gt, i, i + 2) &&
            vkf_vk_dead_after(g, up, i + 1, i + 2)) {
            gr->n_mats = 2;
            gr->swiglu = sw->p.glu.gelu ? 2 : 1;
            gr->w[0] = g->nodes[i].src[1];
            gr->w[1] = g->nodes[i + 1].src[1];
            gr->d[0] = sw->dst;
            if (gr->w[0]->rows == gr->w[1]->rows && vkf_vk_group_disjoint(gr) &&
                vkf_vk_plan_mm_group_ok(r->vb, gr, NULL))
                return 3;
            memset(gr, 0, sizeof *gr);
            gr->a = norm ? norm->src[0] : a;
            if (norm) {
                gr->norm_w = norm->src[1];
                gr->eps = norm->p.norm.eps;
            }
        }
    }
    /* q, k, v (or any run sharing the input) */
    while (k >= 1) {
        gr->n_mats = k;
        gr->swiglu = 0;
        for (int j = 0; j < 3; j++) {
            gr->w[j] = j < k ? g->nodes[i + j].src[1] : NULL;
            gr->d[j] = j < k ? g->nodes[i + j].dst : NULL;
            gr->bias[j] = j < k ? g->nodes[i + j].src[2] : NULL;
        }
        /* a single matmul is only a fusion with a norm (or a residual, below) */
        if ((k > 1 || norm) && vkf_vk_group_disjoint(gr) &&
            vkf_vk_plan_mm_group_ok(r->vb, gr, NULL))
            return k;
        k--;
    }
    return 0;
}

/* ---------------------------------------------------------------- rope + kv store */

typedef struct vkf_vk_kvfuse {
    const vkf_node *rq, *rk; /* the ROPE nodes (NULL without RoPE) */
    vkf_tensor k, v;         /* the rows stored: kr (or k) and v, [B*n, kvd] (views spanning every
                                sequence's copy source) */
    const vkf_tensor *kc, *vc;
    int32_t seq;           /* rows per sequence */
    int32_t c_row0, c_seq; /* cache row of sequence b: c_row0 + b * c_seq (+ n_past + i) */
    int n_copies;
} vkf_vk_kvfuse;

/* the copy's source is rows [b*seq, (b+1)*seq) of t, every column */
static int vkf_vk_is_rows_of(const vkf_tensor *src, const vkf_tensor *t, int64_t b, int32_t seq) {
    return src->buf == t->buf && src->dtype == t->dtype && src->cols == t->cols &&
           src->row_stride == t->row_stride && src->rows == seq &&
           src->offset == t->offset + (size_t)(b * seq) * (size_t)t->row_stride * 4;
}

/* COPY_ROWS nodes from j on that store the rows of K (given, or taken from the first copy)
 * and of one V into two caches, alternating or not; returns the nodes matched. */
static int vkf_vk_match_copies(const vkf_graph *g, int j, const vkf_tensor *K, int32_t seq,
                               vkf_vk_kvfuse *f) {
    int n = 0;
    const vkf_tensor *V = NULL;
    f->kc = f->vc = NULL;
    int nk = 0, nv = 0;
    while (j + n < g->n_nodes && g->nodes[j + n].op == VKF_OP_COPY_ROWS) {
        const vkf_node *c = &g->nodes[j + n];
        const vkf_tensor *src = c->src[0], *dst = c->dst;
        if (!c->p.copy.dyn || src->dtype != VKF_DTYPE_F32 ||
            (dst->dtype != VKF_DTYPE_F32 && dst->dtype != VKF_DTYPE_F16) || src->rows != seq)
            break;
        int is_k = (K && vkf_vk_is_rows_of(src, K, nk, seq)) || (!K && n == 0);
        if (is_k) {
            if (!K) K = src; /* b = 0: the view itself describes the rows of sequence 0 */
            if (!vkf_vk_is_rows_of(src, K, nk, seq) || (f->kc && dst != f->kc)) break;
            f->kc = dst;
            if (nk == 0)
                f->c_row0 = c->p.copy.dst_row0;
            else if (nk == 1)
                f->c_seq = c->p.copy.dst_row0 - f->c_row0;
            else if (c->p.copy.dst_row0 != f->c_row0 + nk * f->c_seq)
                break;
            nk++;
        } else {
            if (!V) V = src;
            if (!vkf_vk_is_rows_of(src, V, nv, seq) || (f->vc && dst != f->vc)) break;
            if (nv == 0 && c->p.copy.dst_row0 != f->c_row0) break;
            if (nv > 0 && c->p.copy.dst_row0 != f->c_row0 + nv * f->c_seq) break;
            f->vc = dst;
            nv++;
        }
        n++;
    }
    /* every sequence of both: B copies each, the same layout */
    if (!K || !V || nk == 0 || nk != nv) return 0;
    if (f->kc->cols != K->cols || f->vc->cols != V->cols || K->cols != V->cols ||
        f->kc->dtype != f->vc->dtype)
        return 0;
    f->k = *K;
    f->v = *V;
    f->k.rows = f->v.rows = (int64_t)nk * seq; /* sequence b's rows follow sequence 0's */
    f->seq = seq;
    f->n_copies = nk + nv;
    if (nk == 1) f->c_seq = 0;
    return n;
}

static vkf_status vkf_vk_kv_record(vkf_vk_rec *r, const vkf_graph *g, const vkf_vk_kvfuse *f,
                                   int last, int *ok) {
    *ok = 0;
    const vkf_vk_caps *c = &r->vb->caps;
    const vkf_node *rq = f->rq, *rk = f->rk;
    const vkf_tensor *K = rk ? rk->src[0] : &f->k; /* the rows read */
    const vkf_tensor *kr = rk ? rk->dst : NULL;
    const vkf_tensor *q = rq ? rq->src[0] : NULL, *qr = rq ? rq->dst : NULL;
    const vkf_tensor *V = &f->v;
    int64_t rows = (int64_t)(f->n_copies / 2) * f->seq;
    uint32_t hd = rk ? (uint32_t)rk->p.rope.head_dim : (uint32_t)K->cols;
    uint32_t kh = (uint32_t)(K->cols / hd), qh = rq ? (uint32_t)rq->p.rope.n_head : 0;
    if (hd % 2 || K->cols % hd || V->cols != K->cols || rows > (int64_t)c->max_wg_count[1] ||
        qh + 2 * kh > c->max_wg_count[2] || c->max_storage_buffers_per_stage < 5)
        return VKF_OK;
    /* everything read or written besides the caches and the table: one buffer */
    const vkf_tensor *acts[5] = {K, V, kr, q, qr};
    for (int i = 0; i < 5; i++)
        if (acts[i] && (acts[i]->dtype != VKF_DTYPE_F32 || acts[i]->buf != K->buf)) return VKF_OK;
    if (rq && (q->rows != rows || q->cols != (int64_t)qh * hd)) return VKF_OK;
    /* with RoPE the stored rows are all of kr (and so of k) */
    if (K->rows != rows || V->rows != rows || (kr && kr->rows != rows)) return VKF_OK;
    /* outputs in place or apart from every input */
    if (qr && qr != q &&
        (vkf_vk_overlap(qr, q) || vkf_vk_overlap(qr, K) || vkf_vk_overlap(qr, V))) {
        vkf_vk_span a = vkf_vk_span_of(qr), b = vkf_vk_span_of(q);
        if (!(a.lo == b.lo && qr->row_stride == q->row_stride) || vkf_vk_overlap(qr, K) ||
            vkf_vk_overlap(qr, V))
            return VKF_OK;
    }
    int write_kr = kr && !vkf_vk_dead_after(g, kr, (int)(rk - g->nodes), last);
    if (write_kr && kr != K &&
        (vkf_vk_overlap(kr, K) || vkf_vk_overlap(kr, V) || vkf_vk_overlap(kr, q)))
        return VKF_OK;
    const vkf_tensor *tab = rk ? rk->src[1] : rq ? rq->src[1] : NULL;
    if (rq && rk &&
        (rq->src[1] != rk->src[1] || rq->p.rope.seq_len != rk->p.rope.seq_len ||
         rq->p.rope.pos0 != rk->p.rope.pos0 || rq->p.rope.dyn != rk->p.rope.dyn ||
         rq->p.rope.n_rot != rk->p.rope.n_rot || rq->p.rope.mode != rk->p.rope.mode ||
         rq->p.rope.head_dim != rk->p.rope.head_dim))
        return VKF_OK;
    if (rk && (rk->p.rope.seq_len != f->seq || rk->p.rope.n_head != (int32_t)kh)) return VKF_OK;
    /* F16 caches (GPUs' default): an invocation writes two whole words of halves, so head_dim
     * and the rotated dims come in fours and the caches' offsets and strides in pairs */
    int f16 = f->kc->dtype == VKF_DTYPE_F16;
    if (f16 &&
        (hd % 4 || (rk && rk->p.rope.n_rot % 4) || (rq && rq->p.rope.n_rot % 4) ||
         f->kc->row_stride % 2 || f->vc->row_stride % 2 ||
         (f->kc->buf->offset + f->kc->offset) % 4 || (f->vc->buf->offset + f->vc->offset) % 4))
        return VKF_OK;

    /* windows: activations (all of the rows involved), caches (whole: rows depend on n_past), table
     */
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < 5; i++) {
        if (!acts[i]) continue;
        vkf_vk_span sp = vkf_vk_span_of(acts[i]);
        if (sp.lo < lo) lo = sp.lo;
        if (sp.hi > hi) hi = sp.hi;
    }
    uint64_t budget = vkf_vk_window_budget(r->vb);
    if (hi - lo > budget || vkf_tensor_nbytes(f->kc) > budget ||
        vkf_tensor_nbytes(f->vc) > budget || (tab && vkf_tensor_nbytes(tab) > budget))
        return VKF_OK;
    vkf_vk_kplan kp = vkf_vk_plan_kv_store(r->vb, f16);
    uint32_t wg = kp.spec[0];
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &kp, &pl));
    vkf_vk_win win[4];
    VKF_TRY(vkf_vk_window_block(r, K->buf->block, lo, hi, 1, 0, &win[0]));
    VKF_TRY(vkf_vk_window(r, f->kc->buf, f->kc->offset, f->kc->offset + vkf_tensor_nbytes(f->kc), 1,
                          &win[1]));
    VKF_TRY(vkf_vk_window(r, f->vc->buf, f->vc->offset, f->vc->offset + vkf_tensor_nbytes(f->vc), 1,
                          &win[2]));
    win[3] = win[0];
    win[3].write = 0;
    if (tab)
        VKF_TRY(vkf_vk_window(r, tab->buf, tab->offset, tab->offset + vkf_tensor_nbytes(tab), 0,
                              &win[3]));
    vkf_pc_kvstore pc;
    memset(&pc, 0, sizeof pc);
#define OFF(t, w) (uint32_t)(((t)->buf->offset + (t)->offset - (w).off) / 4)
    pc.rows = (uint32_t)rows;
    pc.seq = (uint32_t)f->seq;
    pc.head_dim = hd;
    pc.qh = qh;
    pc.kh = kh;
    if (rk) {
        pc.n_rot = (uint32_t)rk->p.rope.n_rot;
        pc.mode = (uint32_t)rk->p.rope.mode;
        pc.pos0 = rk->p.rope.pos0;
        pc.flags |= VKF_KV_ROPE_K | (rk->p.rope.dyn ? VKF_KV_ROPE_DYN : 0);
    }
    if (write_kr) {
        pc.flags |= VKF_KV_WRITE_KR;
        pc.kr_off = OFF(kr, win[0]);
        pc.kr_stride = (uint32_t)kr->row_stride;
    }
    if (rq) {
        pc.q_off = OFF(q, win[0]);
        pc.q_stride = (uint32_t)q->row_stride;
        pc.qr_off = OFF(qr, win[0]);
        pc.qr_stride = (uint32_t)qr->row_stride;
    }
    pc.k_off = OFF(K, win[0]);
    pc.k_stride = (uint32_t)K->row_stride;
    pc.v_off = OFF(V, win[0]);
    pc.v_stride = (uint32_t)V->row_stride;
    /* cache offsets in elements: floats, or halves */
    pc.kc_off = f16 ? (uint32_t)((f->kc->buf->offset + f->kc->offset - win[1].off) / 2)
                    : OFF(f->kc, win[1]);
    pc.kc_stride = (uint32_t)f->kc->row_stride;
    pc.vc_off = f16 ? (uint32_t)((f->vc->buf->offset + f->vc->offset - win[2].off) / 2)
                    : OFF(f->vc, win[2]);
    pc.vc_stride = (uint32_t)f->vc->row_stride;
    pc.c_seq = (uint32_t)f->c_seq;
    pc.c_row0 = (uint32_t)f->c_row0;
    pc.c_rows = (uint32_t)(f->kc->rows < f->vc->rows ? f->kc->rows : f->vc->rows);
    if (tab) {
        pc.t_off = OFF(tab, win[3]);
        pc.t_stride = (uint32_t)tab->row_stride;
        pc.t_rows = (uint32_t)tab->rows;
    } else {
        pc.t_rows = 1;
    }
#undef OFF
    uint32_t gx = ((f16 ? hd / 4 : hd / 2) + wg - 1) / wg;
    r->op = rk ? VKF_OP_ROPE : VKF_OP_COPY_ROWS;
    VKF_TRY(vkf_vk_dispatch(r, pl, win, 4, &pc, sizeof pc, gx, (uint32_t)rows, qh + 2 * kh));
    *ok = 1;
    return VKF_OK;
}

vkf_status vkf_vk_fuse_record(vkf_vk_rec *r, const vkf_graph *g, int i, int *used) {
    *used = 0;
    if (!vkf_vk_plan_fusion(r->vb)) return VKF_OK;
    const vkf_node *n = &g->nodes[i];
    vkf_vk_mm_group gr;

    /* norm folded into the matmuls that read it */
    if (n->op == VKF_OP_RMSNORM && vkf_vk_is_mm(g, i + 1) && g->nodes[i + 1].src[0] == n->dst) {
        int k = vkf_vk_match_mms(r, g, i + 1, n->dst, n, &gr);
        if (k > 0 && vkf_vk_dead_after(g, n->dst, i, i + k)) {
            r->op = VKF_OP_MATMUL;
            VKF_TRY(vkf_vk_mm_group_record(r, &gr));
            *used = 1 + k;
            return VKF_OK;
        }
        /* the readers fall into consecutive groups (q/k/v of two weight types: Q4_K_M's Q6_K
         * v beside Q4_K q and k): the norm folded into each group, recomputed by each, instead
         * of one dispatch more that writes h (and a barrier) */
        if (k > 0) {
            vkf_vk_mm_group grs[3];
            int n_gr = 0, at = i + 1;
            while (n_gr < 3 && vkf_vk_is_mm(g, at) && g->nodes[at].src[0] == n->dst) {
                int kk = vkf_vk_match_mms(r, g, at, n->dst, n, &grs[n_gr]);
                if (kk <= 0) break;
                n_gr++;
                at += kk;
            }
            if (n_gr > 1 && vkf_vk_dead_after(g, n->dst, i, at - 1)) {
                r->op = VKF_OP_MATMUL;
                for (int j = 0; j < n_gr; j++)
                    VKF_TRY(vkf_vk_mm_group_record(r, &grs[j]));
                *used = at - i;
                return VKF_OK;
            }
        }
    }
    /* post-norm + residual add: y = x + norm(o) */
    if ((n->op == VKF_OP_RMSNORM || n->op == VKF_OP_LAYERNORM) && i + 1 < g->n_nodes &&
        g->nodes[i + 1].op == VKF_OP_ADD) {
        const vkf_node *ad = &g->nodes[i + 1];
        const vkf_tensor *o = n->dst, *y = ad->dst;
        const vkf_tensor *x = ad->src[0] == o ? ad->src[1] : ad->src[1] == o ? ad->src[0] : NULL;
        /* y may be x itself or the norm's input itself (in place: one subgroup takes a row,
         * its statistics are reduced before the last pass, and each lane reads every element it
         * writes first), but must not overlap either partly (the arena gives y the bytes of
         * the dead norm input at real sizes: gemma-3-1b's post-attention norms) */
        if (x && x != o && x->rows == o->rows && x->cols == o->cols && y->rows == o->rows &&
            y->cols == o->cols && x->dtype == VKF_DTYPE_F32 && vkf_vk_dead_after(g, o, i, i + 1) &&
            (vkf_vk_same_rows(y, n->src[0]) || !vkf_vk_overlap(y, n->src[0])) &&
            !vkf_vk_overlap(y, n->src[1]) && !vkf_vk_overlap(y, n->src[2]) &&
            (vkf_vk_same_rows(y, x) || !vkf_vk_overlap(y, x))) {
            vkf_status st = VKF_OK;
            r->op = n->op;
            if (vkf_vk_norm_res_record(r, n, x, y, &st)) {
                *used = 2;
                return st;
            }
        }
    }
    /* two independent norms (per-head q and k norms), unless the second would fold into the
     * matmuls that follow it */
    if (n->op == VKF_OP_RMSNORM && i + 1 < g->n_nodes && g->nodes[i + 1].op == VKF_OP_RMSNORM &&
        !(vkf_vk_is_mm(g, i + 2) && g->nodes[i + 2].src[0] == g->nodes[i + 1].dst)) {
        const vkf_node *n2 = &g->nodes[i + 1];
        if (!vkf_vk_overlap(n->dst, n2->src[0]) && !vkf_vk_overlap(n->dst, n2->src[1]) &&
            !vkf_vk_overlap(n2->dst, n->src[0]) && !vkf_vk_overlap(n2->dst, n->src[1]) &&
            !vkf_vk_overlap(n->dst, n2->dst)) {
            vkf_status st = VKF_OK;
            r->op = VKF_OP_RMSNORM;
            if (vkf_vk_norm_pair_record(r, n, n2, &st)) {
                *used = 2;
                return st;
            }
        }
    }
    /* rope q, rope k, store k and v; or the stores alone */
    if (n->op == VKF_OP_ROPE || n->op == VKF_OP_COPY_ROWS) {
        vkf_vk_kvfuse f;
        memset(&f, 0, sizeof f);
        int nc = 0, first = i;
        if (n->op == VKF_OP_ROPE && i + 1 < g->n_nodes && g->nodes[i + 1].op == VKF_OP_ROPE) {
            f.rq = n;
            f.rk = &g->nodes[i + 1];
            first = i + 2;
            nc = vkf_vk_match_copies(g, first, f.rk->dst, f.rk->p.rope.seq_len, &f);
        } else if (n->op == VKF_OP_COPY_ROWS) {
            nc = vkf_vk_match_copies(g, i, NULL, (int32_t)n->src[0]->rows, &f);
        }
        if (nc >= 2) {
            int ok = 0;
            VKF_TRY(vkf_vk_kv_record(r, g, &f, first + nc - 1, &ok));
            if (ok) {
                *used = first - i + nc;
                return VKF_OK;
            }
        }
        return VKF_OK;
    }
    if (n->op != VKF_OP_MATMUL) return VKF_OK;

    /* gate/up + swiglu, or q/k/v (with or without biases) */
    {
        int k = vkf_vk_match_mms(r, g, i, n->src[0], NULL, &gr);
        if (k > 1) {
            r->op = VKF_OP_MATMUL;
            VKF_TRY(vkf_vk_mm_group_record(r, &gr));
            *used = k;
            return VKF_OK;
        }
    }

    /* matmul (+ bias) + activation */
    if (i + 1 < g->n_nodes && g->nodes[i + 1].op == VKF_OP_UNARY &&
        g->nodes[i + 1].src[0] == n->dst && g->nodes[i + 1].p.unary.act >= 0 &&
        g->nodes[i + 1].p.unary.act < VKF_UNARY_COUNT && vkf_vk_dead_after(g, n->dst, i, i + 1)) {
        memset(&gr, 0, sizeof gr);
        gr.a = n->src[0];
        gr.w[0] = n->src[1];
        gr.d[0] = g->nodes[i + 1].dst;
        gr.n_mats = 1;
        gr.bias[0] = n->src[2];
        gr.act = 1 + g->nodes[i + 1].p.unary.act;
        if (gr.d[0]->rows == n->dst->rows && gr.d[0]->cols == n->dst->cols &&
            vkf_vk_group_disjoint(&gr) && vkf_vk_plan_mm_group_ok(r->vb, &gr, NULL)) {
            r->op = VKF_OP_MATMUL;
            VKF_TRY(vkf_vk_mm_group_record(r, &gr));
            *used = 2;
            return VKF_OK;
        }
    }

    /* matmul + residual add */
    if (i + 1 < g->n_nodes && g->nodes[i + 1].op == VKF_OP_ADD) {
        const vkf_node *ad = &g->nodes[i + 1];
        const vkf_tensor *o = n->dst;
        const vkf_tensor *x = ad->src[0] == o ? ad->src[1] : ad->src[1] == o ? ad->src[0] : NULL;
        if (x && x != o && x->rows == o->rows && x->cols == o->cols && ad->dst->rows == o->rows &&
            vkf_vk_dead_after(g, o, i, i + 1)) {
            memset(&gr, 0, sizeof gr);
            gr.a = n->src[0];
            gr.w[0] = n->src[1];
            gr.d[0] = ad->dst;
            gr.n_mats = 1;
            gr.bias[0] = n->src[2];
            gr.res = x;
            if (vkf_vk_group_disjoint(&gr) && vkf_vk_plan_mm_group_ok(r->vb, &gr, NULL)) {
                r->op = VKF_OP_MATMUL;
                VKF_TRY(vkf_vk_mm_group_record(r, &gr));
                *used = 2;
                return VKF_OK;
            }
        }
    }
    return VKF_OK;
}
