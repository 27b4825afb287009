/* Op encoders: one function per op family turns a node into dispatches of shaders/<op>.comp.
 *
 * Each encoder binds windows of at most maxStorageBufferRange bytes (vk_dispatch.c aligns their
 * start) and passes element offsets and row strides as push constants (shaders/vkf_abi.h).
 * A tensor larger than one window is processed in chunks: element-wise ops and norms split by
 * rows, embed and the position tables split the table by rows (each chunk writes only the rows
 * whose id/position falls in its window). Matmul: vk_matmul.c; attention: vk_attention.c. */
#include <stdio.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/dtype.h"
#include "vkf_abi.h"

/* ---------------------------------------------------------------- helpers */

static uint32_t vkf_vk_groups(uint64_t items, uint64_t per_group, uint32_t cap) {
    uint64_t g = (items + per_group - 1) / per_group;
    if (g < 1) g = 1;
    return g > cap ? cap : (uint32_t)g;
}

/* Groups of the element-wise kernels' shape (VKF_VK_ELT_WG threads, VKF_VK_ELT_PER_THREAD items
 * each) for `items` items, at most maxComputeWorkGroupCount[0]. */
static uint32_t vkf_vk_elt_groups(const vkf_vk_rec *r, uint64_t items) {
    return vkf_vk_groups(items, VKF_VK_ELT_WG * VKF_VK_ELT_PER_THREAD, r->vb->caps.max_wg_count[0]);
}

/* The windows of rows [r0, r0 + nr) of dst (written, win[0]) and of x (read, win[1]) and the
 * element offsets of both in them: the first two bindings of every row-wise kernel. */
static vkf_status vkf_vk_rows_dx(vkf_vk_rec *r, const vkf_tensor *d, const vkf_tensor *x,
                                 int64_t r0, int64_t nr, vkf_vk_win *win, uint32_t *d_off,
                                 uint32_t *x_off) {
    VKF_TRY(vkf_vk_rows_win(r, d, r0, nr, 1, &win[0]));
    VKF_TRY(vkf_vk_rows_win(r, x, r0, nr, 0, &win[1]));
    VKF_TRY(vkf_vk_elem_off(&win[0], d, d_off));
    return vkf_vk_elem_off(&win[1], x, x_off);
}

/* One workgroup a row for nr rows (at most maxComputeWorkGroupCount[0] groups; the row-wise
 * kernels loop over the rest). */
static vkf_status vkf_vk_rows_dispatch(vkf_vk_rec *r, vkf_vk_pipeline *pl, const vkf_vk_win *win,
                                       int n_win, const void *pc, uint32_t pc_size, int64_t nr) {
    uint32_t g = (uint32_t)vkf_vk_min64(nr, r->vb->caps.max_wg_count[0]);
    return vkf_vk_dispatch(r, pl, win, n_win, pc, pc_size, g, 1, 1);
}

/* The whole of dst (written, win[0], an element offset) and x as a texel window (win[1], its
 * offset in 4-byte elements): the first two bindings of the texel row kernels. */
static vkf_status vkf_vk_texel_dx(vkf_vk_rec *r, const vkf_tensor *d, const vkf_tensor *x,
                                  vkf_vk_win *win, uint32_t *d_off, uint32_t *x_off) {
    VKF_TRY(vkf_vk_rows_win(r, d, 0, x->rows, 1, &win[0]));
    VKF_TRY(vkf_vk_elem_off(&win[0], d, d_off));
    VKF_TRY(vkf_vk_rows_texwin(r, x, 0, x->rows, &win[1]));
    *x_off = (uint32_t)(win[1].delta / 4);
    return VKF_OK;
}

/* ---------------------------------------------------------------- element-wise */

static vkf_status vkf_vk_op_eltwise(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *a = n->src[0];
    const vkf_tensor *b =
        (n->op == VKF_OP_ADD || n->op == VKF_OP_MUL || n->op == VKF_OP_SWIGLU) ? n->src[1] : NULL;
    vkf_vk_elt_plan plan;
    VKF_TRY(vkf_vk_plan_elt(r->vb, n, &plan));
    if (b && !b->buf) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "operand b missing");
    int bcast = b && b->rows == 1 && a->rows != 1;
    uint64_t budget = vkf_vk_window_budget(r->vb);
    int64_t per = vkf_vk_min64(vkf_vk_rows_fit(d, budget), vkf_vk_rows_fit(a, budget));
    if (b && !bcast) per = vkf_vk_min64(per, vkf_vk_rows_fit(b, budget));
    if (per == 0)
        return vkf_vk_fit_error(r, vkf_vk_rows_fit(d, budget) == 0   ? d
                                   : vkf_vk_rows_fit(a, budget) == 0 ? a
                                                                     : b);
    if (bcast && vkf_vk_rows_fit(b, budget) == 0) return vkf_vk_fit_error(r, b);
    /* rows*cols must fit the 32-bit element index of a chunk */
    int64_t by_index = (int64_t)(0xffffffffu / (uint64_t)(a->cols ? a->cols : 1));
    per = vkf_vk_min64(per, by_index);

    vkf_vk_pipeline *pl;
    /* contiguous operands: one long row (more parallel columns, fewer row iterations) */
    int flat = d->row_stride == d->cols && a->row_stride == a->cols &&
               (!b || (!bcast && b->row_stride == b->cols));
    for (int64_t r0 = 0; r0 < a->rows; r0 += per) {
        int64_t nr = vkf_vk_min64(per, a->rows - r0);
        vkf_vk_win w[3];
        vkf_pc_eltwise pc;
        memset(&pc, 0, sizeof pc);
        VKF_TRY(vkf_vk_rows_dx(r, d, a, r0, nr, w, &pc.d_off, &pc.a_off));
        if (b) {
            VKF_TRY(vkf_vk_rows_win(r, b, bcast ? 0 : r0, bcast ? 1 : nr, 0, &w[2]));
            VKF_TRY(vkf_vk_elem_off(&w[2], b, &pc.b_off));
            pc.b_stride = bcast ? 0 : (uint32_t)b->row_stride;
        }
        pc.rows = flat ? 1 : (uint32_t)nr;
        pc.cols = flat ? (uint32_t)(nr * a->cols) : (uint32_t)a->cols;
        pc.d_stride = (uint32_t)d->row_stride;
        pc.a_stride = (uint32_t)a->row_stride;
        pc.scale = n->p.scale.scale;
        pc.act = n->p.unary.act;
        pc.cap = n->op == VKF_OP_SCALE ? n->p.scale.softcap : 0.0f;
        if (n->op == VKF_OP_SWIGLU && n->p.glu.oai) { /* swiglu_oai: alpha, limit */
            pc.scale = n->p.glu.alpha;
            pc.cap = n->p.glu.limit;
        }
        const vkf_vk_caps *c = &r->vb->caps;
        /* 16-byte accesses when every offset, stride and the row length allow */
        int v4 = plan.vec4_ok && pc.cols % 4 == 0 && pc.d_off % 4 == 0 && pc.a_off % 4 == 0 &&
                 pc.b_off % 4 == 0 &&
                 (pc.rows == 1 ||
                  (pc.d_stride % 4 == 0 && pc.a_stride % 4 == 0 && pc.b_stride % 4 == 0));
        VKF_TRY(vkf_vk_pipe(r, v4 ? &plan.k : &plan.k1, &pl));
        uint32_t gx = vkf_vk_elt_groups(r, pc.cols / (v4 ? 4 : 1));
        uint32_t gy = (uint32_t)vkf_vk_min64(pc.rows, c->max_wg_count[1]);
        VKF_TRY(vkf_vk_dispatch(r, pl, w, b ? 3 : 2, &pc, sizeof pc, gx, gy, 1));
    }
    return VKF_OK;
}

/* ---------------------------------------------------------------- row-wise reductions */

/* Largest row count n <= limit such that rows [r0, r0 + n) of t fit a window. */
static int64_t vkf_vk_fit_all(vkf_vk_rec *r, const vkf_tensor *const *ts, int nt, int64_t rows) {
    uint64_t budget = vkf_vk_window_budget(r->vb);
    int64_t per = rows;
    for (int i = 0; i < nt; i++)
        if (ts[i]) per = vkf_vk_min64(per, vkf_vk_rows_fit(ts[i], budget));
    return per;
}

static vkf_status vkf_vk_first_unfit(vkf_vk_rec *r, const vkf_tensor *const *ts, int nt) {
    uint64_t budget = vkf_vk_window_budget(r->vb);
    for (int i = 0; i < nt; i++)
        if (ts[i] && vkf_vk_rows_fit(ts[i], budget) == 0) return vkf_vk_fit_error(r, ts[i]);
    return vkf_error(VKF_ERROR_INTERNAL, "no rows fit a window");
}

/* norm_texel.comp: one subgroup per row on texels (see the shader); res: dst = res + norm(x),
 * in place or not (vkf_vk_norm_res_record). Returns 0 (nothing recorded) where the plan is not
 * the texel kernel, else 1 with the status in *st. */
static int vkf_vk_norm_texel_rec(vkf_vk_rec *r, const vkf_node *n, const vkf_tensor *d,
                                 const vkf_tensor *res, vkf_status *st) {
    const vkf_tensor *x = n->src[0], *w = n->src[1], *b = n->src[2];
    vkf_vk_rows_plan plan;
    vkf_vk_plan_norm(r->vb, n, res, d, &plan);
    if (!plan.texel) return 0;
    vkf_vk_pipeline *pl;
    *st = vkf_vk_pipe(r, &plan.k, &pl);
    if (*st != VKF_OK) return 1;
    vkf_vk_win win[5];
    vkf_pc_norm pc;
    memset(&pc, 0, sizeof pc);
    if ((*st = vkf_vk_texel_dx(r, d, x, win, &pc.d_off, &pc.x_off)) != VKF_OK) return 1;
    win[2] = win[3] = win[1];
    if (w) {
        if ((*st = vkf_vk_rows_texwin(r, w, 0, 1, &win[2])) != VKF_OK) return 1;
        pc.w_off = (uint32_t)(win[2].delta / 4);
        pc.has_w = 1;
    }
    if (b) {
        if ((*st = vkf_vk_rows_texwin(r, b, 0, 1, &win[3])) != VKF_OK) return 1;
        pc.b_off = (uint32_t)(win[3].delta / 4);
        pc.has_b = 1;
    }
    win[4] = win[1];
    if (res) {
        if ((*st = vkf_vk_rows_texwin(r, res, 0, x->rows, &win[4])) != VKF_OK) return 1;
        pc.r_off = (uint32_t)(win[4].delta / 4);
        pc.r_stride = (uint32_t)res->row_stride;
    }
    if (win[0].delta % 16 || win[1].delta % 16 || win[2].delta % 16 || win[3].delta % 16 ||
        win[4].delta % 16) {
        *st = vkf_error(VKF_ERROR_INTERNAL, "norm %s: windows not texel aligned", d->name);
        return 1;
    }
    pc.rows = (uint32_t)x->rows;
    pc.cols = (uint32_t)x->cols;
    pc.d_stride = (uint32_t)d->row_stride;
    pc.x_stride = (uint32_t)x->row_stride;
    pc.eps = n->p.norm.eps;
    *st = vkf_vk_dispatch(r, pl, win, res ? 5 : 4, &pc, sizeof pc, (uint32_t)plan.groups, 1, 1);
    return 1;
}

int vkf_vk_norm_res_record(vkf_vk_rec *r, const vkf_node *norm, const vkf_tensor *res,
                           const vkf_tensor *dst, vkf_status *st) {
    return vkf_vk_norm_texel_rec(r, norm, dst, res, st);
}

/* element offset of t inside window w, when it is a whole texel */
static int vkf_vk_texel_off(const vkf_vk_win *w, const vkf_tensor *t, uint32_t *out) {
    uint64_t rel = t->buf->offset + t->offset - w->off;
    *out = (uint32_t)(rel / 4);
    return rel % 16 == 0;
}

int vkf_vk_norm_pair_record(vkf_vk_rec *r, const vkf_node *n1, const vkf_node *n2, vkf_status *st) {
    const vkf_tensor *x1 = n1->src[0], *x2 = n2->src[0], *d1 = n1->dst, *d2 = n2->dst;
    const vkf_tensor *w1 = n1->src[1], *w2 = n2->src[1];
    *st = VKF_OK;
    vkf_vk_rows_plan plan;
    if (!vkf_vk_plan_norm_pair(r->vb, n1, n2, &plan)) return 0;
    uint64_t xlo, xhi, dlo, dhi, wlo, whi;
    const vkf_tensor *xs[2] = {x1, x2}, *ds[2] = {d1, d2}, *ws[2] = {w1, w2};
    vkf_vk_tensors_span(xs, 2, &xlo, &xhi);
    vkf_vk_tensors_span(ds, 2, &dlo, &dhi);
    vkf_vk_tensors_span(ws, 2, &wlo, &whi);
    vkf_vk_win win[4];
    vkf_pc_norm pc;
    memset(&pc, 0, sizeof pc);
    if (vkf_vk_window_block(r, d1->buf->block, dlo, dhi, 1, 0, &win[0]) != VKF_OK ||
        vkf_vk_window_block(r, x1->buf->block, xlo, xhi, 0, 1, &win[1]) != VKF_OK ||
        vkf_vk_window_block(r, w1->buf->block, wlo, whi, 0, 1, &win[2]) != VKF_OK) {
        vkf_error_clear();
        return 0;
    }
    win[3] = win[1];
    if (!vkf_vk_texel_off(&win[0], d1, &pc.d_off) || !vkf_vk_texel_off(&win[0], d2, &pc.d_off2) ||
        !vkf_vk_texel_off(&win[1], x1, &pc.x_off) || !vkf_vk_texel_off(&win[1], x2, &pc.x_off2) ||
        !vkf_vk_texel_off(&win[2], w1, &pc.w_off) || !vkf_vk_texel_off(&win[2], w2, &pc.w_off2))
        return 0;
    vkf_vk_pipeline *pl;
    *st = vkf_vk_pipe(r, &plan.k, &pl);
    if (*st != VKF_OK) return 1;
    pc.rows = (uint32_t)(x1->rows + x2->rows);
    pc.rows1 = (uint32_t)x1->rows;
    pc.cols = (uint32_t)x1->cols;
    pc.d_stride = (uint32_t)d1->row_stride;
    pc.x_stride = (uint32_t)x1->row_stride;
    pc.has_w = 1;
    pc.eps = n1->p.norm.eps;
    *st = vkf_vk_dispatch(r, pl, win, 4, &pc, sizeof pc, (uint32_t)plan.groups, 1, 1);
    return 1;
}

/* layernorm, rmsnorm: bindings dst, x, weight, bias */
static vkf_status vkf_vk_op_norm(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *x = n->src[0], *w = n->src[1], *b = n->src[2];
    vkf_status tst;
    if (vkf_vk_norm_texel_rec(r, n, n->dst, NULL, &tst)) return tst;
    vkf_vk_rows_plan plan;
    vkf_vk_plan_norm(r->vb, n, NULL, n->dst, &plan); /* the general kernel */
    const vkf_tensor *rowwise[] = {d, x};
    int64_t per = vkf_vk_fit_all(r, rowwise, 2, x->rows);
    if (per == 0) return vkf_vk_first_unfit(r, rowwise, 2);
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &plan.k, &pl));
    for (int64_t r0 = 0; r0 < x->rows; r0 += per) {
        int64_t nr = vkf_vk_min64(per, x->rows - r0);
        vkf_vk_win win[4];
        vkf_pc_norm pc;
        memset(&pc, 0, sizeof pc);
        VKF_TRY(vkf_vk_rows_dx(r, d, x, r0, nr, win, &pc.d_off, &pc.x_off));
        win[2] = win[3] = win[1];
        if (w) {
            VKF_TRY(vkf_vk_rows_win(r, w, 0, 1, 0, &win[2]));
            VKF_TRY(vkf_vk_elem_off(&win[2], w, &pc.w_off));
            pc.has_w = 1;
        }
        if (b) {
            VKF_TRY(vkf_vk_rows_win(r, b, 0, 1, 0, &win[3]));
            VKF_TRY(vkf_vk_elem_off(&win[3], b, &pc.b_off));
            pc.has_b = 1;
        }
        pc.rows = (uint32_t)nr;
        pc.cols = (uint32_t)x->cols;
        pc.d_stride = (uint32_t)d->row_stride;
        pc.x_stride = (uint32_t)x->row_stride;
        pc.eps = n->p.norm.eps;
        VKF_TRY(vkf_vk_rows_dispatch(r, pl, win, 4, &pc, sizeof pc, nr));
    }
    return VKF_OK;
}

/* softmax_texel.comp: one subgroup per row on texels (see the shader), as planned */
static vkf_status vkf_vk_softmax_texel(vkf_vk_rec *r, const vkf_node *n,
                                       const vkf_vk_rows_plan *plan) {
    const vkf_tensor *d = n->dst, *x = n->src[0];
    const vkf_tensor *m = n->op == VKF_OP_SOFTMAX ? n->src[1] : NULL;
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &plan->k, &pl));
    vkf_vk_win win[3];
    vkf_pc_softmax pc;
    memset(&pc, 0, sizeof pc);
    VKF_TRY(vkf_vk_texel_dx(r, d, x, win, &pc.d_off, &pc.x_off));
    win[2] = win[1];
    if (m) {
        VKF_TRY(vkf_vk_rows_texwin(r, m, 0, x->rows, &win[2]));
        pc.m_off = (uint32_t)(win[2].delta / 4);
        pc.m_stride = (uint32_t)m->row_stride;
        pc.has_mask = 1;
    }
    if (win[0].delta % 16 || win[1].delta % 16 || win[2].delta % 16)
        return vkf_error(VKF_ERROR_INTERNAL, "softmax %s: windows not texel aligned", d->name);
    pc.rows = (uint32_t)x->rows;
    pc.cols = (uint32_t)x->cols;
    pc.d_stride = (uint32_t)d->row_stride;
    pc.x_stride = (uint32_t)x->row_stride;
    pc.scale = n->op == VKF_OP_SOFTMAX && n->p.scale.scale != 0.0f ? n->p.scale.scale : 1.0f;
    return vkf_vk_dispatch(r, pl, win, 3, &pc, sizeof pc, (uint32_t)plan->groups, 1, 1);
}

/* softmax, log_softmax: bindings dst, x, mask */
static vkf_status vkf_vk_op_softmax(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *x = n->src[0];
    const vkf_tensor *m = n->op == VKF_OP_SOFTMAX ? n->src[1] : NULL;
    vkf_vk_rows_plan plan;
    vkf_vk_plan_softmax(r->vb, n, &plan);
    if (plan.texel) return vkf_vk_softmax_texel(r, n, &plan);
    const vkf_tensor *rowwise[] = {d, x, m};
    int64_t per = vkf_vk_fit_all(r, rowwise, 3, x->rows);
    if (per == 0) return vkf_vk_first_unfit(r, rowwise, 3);
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &plan.k, &pl));
    for (int64_t r0 = 0; r0 < x->rows; r0 += per) {
        int64_t nr = vkf_vk_min64(per, x->rows - r0);
        vkf_vk_win win[3];
        vkf_pc_softmax pc;
        memset(&pc, 0, sizeof pc);
        VKF_TRY(vkf_vk_rows_dx(r, d, x, r0, nr, win, &pc.d_off, &pc.x_off));
        win[2] = win[1];
        if (m) {
            VKF_TRY(vkf_vk_rows_win(r, m, r0, nr, 0, &win[2]));
            VKF_TRY(vkf_vk_elem_off(&win[2], m, &pc.m_off));
            pc.m_stride = (uint32_t)m->row_stride;
            pc.has_mask = 1;
        }
        pc.rows = (uint32_t)nr;
        pc.cols = (uint32_t)x->cols;
        pc.d_stride = (uint32_t)d->row_stride;
        pc.x_stride = (uint32_t)x->row_stride;
        pc.scale = n->op == VKF_OP_SOFTMAX && n->p.scale.scale != 0.0f ? n->p.scale.scale : 1.0f;
        VKF_TRY(vkf_vk_rows_dispatch(r, pl, win, 3, &pc, sizeof pc, nr));
    }
    return VKF_OK;
}

/* argmax, topk: bindings dst, x */
static vkf_status vkf_vk_op_select(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *x = n->src[0];
    const vkf_tensor *rowwise[] = {d, x};
    int64_t per = vkf_vk_fit_all(r, rowwise, 2, x->rows);
    if (per == 0) return vkf_vk_first_unfit(r, rowwise, 2);
    /* llvmpipe ends an invocation's loops after 65535 iterations in all: topk's k rounds each
     * walk cols / (WG * 8) iterations and a log2(WG)-step reduction (shaders/topk.comp) */
    uint64_t k = n->op == VKF_OP_TOPK ? (uint64_t)n->p.topk.k : 1;
    uint64_t iters = k * (((uint64_t)x->cols + VKF_VK_ROW_WG * 8 - 1) / (VKF_VK_ROW_WG * 8) + 12);
    if (r->vb->caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU && iters > 60000)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "topk %s: k = %llu over %lld columns needs %llu loop iterations in one "
                         "invocation; this CPU driver (llvmpipe) stops at 65535",
                         d->name, (unsigned long long)k, (long long)x->cols,
                         (unsigned long long)iters);
    vkf_vk_kplan kp = vkf_vk_plan_simple(r->vb, n);
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &kp, &pl));
    for (int64_t r0 = 0; r0 < x->rows; r0 += per) {
        int64_t nr = vkf_vk_min64(per, x->rows - r0);
        vkf_vk_win win[2];
        vkf_pc_select pc;
        memset(&pc, 0, sizeof pc);
        VKF_TRY(vkf_vk_rows_dx(r, d, x, r0, nr, win, &pc.d_off, &pc.x_off));
        pc.rows = (uint32_t)nr;
        pc.cols = (uint32_t)x->cols;
        pc.k = n->op == VKF_OP_TOPK ? (uint32_t)n->p.topk.k : 1;
        pc.d_stride = (uint32_t)d->row_stride;
        pc.x_stride = (uint32_t)x->row_stride;
        VKF_TRY(vkf_vk_rows_dispatch(r, pl, win, 2, &pc, sizeof pc, nr));
    }
    return VKF_OK;
}

/* pool: bindings dst, x, lengths; whole sequences per dispatch (x split by sequences where it
 * exceeds one window) */
static vkf_status vkf_vk_op_pool(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *x = n->src[0], *lens = n->src[1];
    int64_t L = n->p.pool.seq_len, B = d->rows;
    const vkf_tensor *rowwise[] = {x};
    int64_t per = vkf_vk_fit_all(r, rowwise, 1, x->rows) / L;
    if (per == 0) return vkf_vk_first_unfit(r, rowwise, 1);
    vkf_vk_kplan kp = vkf_vk_plan_simple(r->vb, n);
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &kp, &pl));
    for (int64_t b0 = 0; b0 < B; b0 += per) {
        int64_t nb = vkf_vk_min64(per, B - b0);
        vkf_vk_win win[3];
        vkf_pc_pool pc;
        memset(&pc, 0, sizeof pc);
        VKF_TRY(vkf_vk_rows_win(r, d, b0, nb, 1, &win[0]));
        VKF_TRY(vkf_vk_rows_win(r, x, b0 * L, nb * L, 0, &win[1]));
        VKF_TRY(vkf_vk_window(r, lens->buf, lens->offset + (uint64_t)b0 * 4,
                              lens->offset + (uint64_t)(b0 + nb) * 4, 0, &win[2]));
        VKF_TRY(vkf_vk_elem_off(&win[0], d, &pc.d_off));
        VKF_TRY(vkf_vk_elem_off(&win[1], x, &pc.x_off));
        pc.len_off = (uint32_t)(win[2].delta / 4);
        pc.rows = (uint32_t)nb;
        pc.cols = (uint32_t)x->cols;
        pc.seq_len = (uint32_t)L;
        pc.mode = (uint32_t)n->p.pool.mode;
        pc.d_stride = (uint32_t)d->row_stride;
        pc.x_stride = (uint32_t)x->row_stride;
        VKF_TRY(vkf_vk_rows_dispatch(r, pl, win, 3, &pc, sizeof pc, nb));
    }
    return VKF_OK;
}

/* ---------------------------------------------------------------- embed */

/* table [vocab, d] any weight type, ids I32 [1, n]; dst [n, d] */
static vkf_status vkf_vk_op_embed(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *tab = n->src[0], *ids = n->src[1];
    if (!vkf_vk_weight_ok(tab->dtype))
        return vkf_error(VKF_ERROR_UNSUPPORTED, "embed: table %s has dtype %s", tab->name,
                         vkf_dtype_name(tab->dtype));
    uint64_t budget = vkf_vk_window_budget(r->vb);
    int64_t nid = ids->cols;
    int64_t iper = vkf_vk_rows_fit(d, budget), tper = vkf_vk_rows_fit(tab, budget);
    if (iper == 0) return vkf_vk_fit_error(r, d);
    if (tper == 0) return vkf_vk_fit_error(r, tab);
    vkf_vk_kplan k = vkf_vk_plan_simple(r->vb, n);
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &k, &pl));
    for (int64_t i0 = 0; i0 < nid; i0 += iper) {
        int64_t ni = vkf_vk_min64(iper, nid - i0);
        for (int64_t t0 = 0; t0 < tab->rows; t0 += tper) {
            int64_t nt = vkf_vk_min64(tper, tab->rows - t0);
            vkf_vk_win win[3];
            vkf_pc_embed pc;
            memset(&pc, 0, sizeof pc);
            VKF_TRY(vkf_vk_rows_win(r, d, i0, ni, 1, &win[0]));
            VKF_TRY(vkf_vk_elem_off(&win[0], d, &pc.d_off));
            uint64_t ilo = ids->offset + (uint64_t)i0 * 4;
            VKF_TRY(vkf_vk_window(r, ids->buf, ilo, ilo + (uint64_t)ni * 4, 0, &win[1]));
            VKF_TRY(vkf_vk_elem_off(&win[1], ids, &pc.ids_off));
            VKF_TRY(vkf_vk_rows_win(r, tab, t0, nt, 0, &win[2]));
            VKF_TRY(vkf_vk_weight_off(&win[2], tab, &pc.w_boff));
            pc.n = (uint32_t)ni;
            pc.cols = (uint32_t)tab->cols;
            pc.w_bstride = (uint32_t)vkf_vk_stride_bytes(tab);
            pc.row0 = (uint32_t)t0;
            pc.nrows = (uint32_t)nt;
            pc.vocab = (uint32_t)tab->rows;
            pc.d_stride = (uint32_t)d->row_stride;
            pc.scale = n->p.embed.scale;
            uint32_t g = vkf_vk_elt_groups(r, (uint64_t)ni * (uint64_t)tab->cols);
            VKF_TRY(vkf_vk_dispatch(r, pl, win, 3, &pc, sizeof pc, g, 1, 1));
        }
    }
    return VKF_OK;
}

/* ---------------------------------------------------------------- positions */

/* add_pos (table [n_pos, cols]) and rope (table [n_pos, n_rot]): x/dst split by rows, the
 * table split by rows; each dispatch handles the positions inside its table window */
static vkf_status vkf_vk_op_pos(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *x = n->src[0], *tab = n->src[1];
    int rope = n->op == VKF_OP_ROPE;
    uint64_t budget = vkf_vk_window_budget(r->vb);
    const vkf_tensor *rowwise[] = {d, x};
    int64_t per = vkf_vk_fit_all(r, rowwise, 2, x->rows);
    if (per == 0) return vkf_vk_first_unfit(r, rowwise, 2);
    int64_t tper = vkf_vk_rows_fit(tab, budget);
    if (tper == 0) return vkf_vk_fit_error(r, tab);
    int32_t seq_len = rope ? n->p.rope.seq_len : n->p.pos.seq_len;
    if (seq_len <= 0) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "seq_len %d <= 0", seq_len);
    if (rope &&
        (n->p.rope.n_rot <= 0 || n->p.rope.n_rot % 2 || n->p.rope.n_rot > n->p.rope.head_dim ||
         (int64_t)n->p.rope.n_head * n->p.rope.head_dim > x->cols))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "rope: n_rot %d, head_dim %d, n_head %d for %lld cols", n->p.rope.n_rot,
                         n->p.rope.head_dim, n->p.rope.n_head, (long long)x->cols);
    vkf_vk_kplan k = vkf_vk_plan_simple(r->vb, n);
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &k, &pl));
    for (int64_t r0 = 0; r0 < x->rows; r0 += per) {
        int64_t nr = vkf_vk_min64(per, x->rows - r0);
        for (int64_t t0 = 0; t0 < tab->rows; t0 += tper) {
            int64_t nt = vkf_vk_min64(tper, tab->rows - t0);
            vkf_vk_win win[3];
            uint32_t d_off = 0, x_off = 0, t_off = 0;
            VKF_TRY(vkf_vk_rows_dx(r, d, x, r0, nr, win, &d_off, &x_off));
            VKF_TRY(vkf_vk_rows_win(r, tab, t0, nt, 0, &win[2]));
            VKF_TRY(vkf_vk_elem_off(&win[2], tab, &t_off));
            if (rope) {
                vkf_pc_rope pc;
                memset(&pc, 0, sizeof pc);
                pc.rows = (uint32_t)nr;
                pc.n_head = (uint32_t)n->p.rope.n_head;
                pc.head_dim = (uint32_t)n->p.rope.head_dim;
                pc.n_rot = (uint32_t)n->p.rope.n_rot;
                pc.mode = (uint32_t)n->p.rope.mode;
                pc.d_off = d_off;
                pc.d_stride = (uint32_t)d->row_stride;
                pc.x_off = x_off;
                pc.x_stride = (uint32_t)x->row_stride;
                pc.t_off = t_off;
                pc.t_stride = (uint32_t)tab->row_stride;
                pc.row0 = (uint32_t)t0;
                pc.nrows = (uint32_t)nt;
                pc.t_rows = (uint32_t)tab->rows;
                pc.seq_len = seq_len;
                pc.pos0 = n->p.rope.pos0;
                pc.dyn = n->p.rope.dyn;
                pc.r0 = (uint32_t)r0;
                uint64_t items =
                    (uint64_t)nr * (uint64_t)pc.n_head * (pc.n_rot / 2 + pc.head_dim - pc.n_rot);
                uint32_t g = vkf_vk_elt_groups(r, items);
                VKF_TRY(vkf_vk_dispatch(r, pl, win, 3, &pc, sizeof pc, g, 1, 1));
            } else {
                vkf_pc_addpos pc;
                memset(&pc, 0, sizeof pc);
                pc.rows = (uint32_t)nr;
                pc.cols = (uint32_t)x->cols;
                pc.d_off = d_off;
                pc.d_stride = (uint32_t)d->row_stride;
                pc.x_off = x_off;
                pc.x_stride = (uint32_t)x->row_stride;
                pc.t_off = t_off;
                pc.t_stride = (uint32_t)tab->row_stride;
                pc.row0 = (uint32_t)t0;
                pc.nrows = (uint32_t)nt;
                pc.t_rows = (uint32_t)tab->rows;
                pc.seq_len = seq_len;
                pc.pos0 = n->p.pos.pos0;
                pc.dyn = n->p.pos.dyn;
                pc.r0 = (uint32_t)r0;
                uint32_t g = vkf_vk_elt_groups(r, (uint64_t)nr * (uint64_t)x->cols);
                VKF_TRY(vkf_vk_dispatch(r, pl, win, 3, &pc, sizeof pc, g, 1, 1));
            }
        }
    }
    return VKF_OK;
}

/* ---------------------------------------------------------------- copy_rows */

static vkf_status vkf_vk_op_copy_rows(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *s = n->src[0];
    uint64_t budget = vkf_vk_window_budget(r->vb);
    int64_t sper = vkf_vk_rows_fit(s, budget), dper = vkf_vk_rows_fit(d, budget);
    if (sper == 0) return vkf_vk_fit_error(r, s);
    if (dper == 0) return vkf_vk_fit_error(r, d);
    /* static targets: only the rows written; dynamic ones (n_past, an index): all of dst */
    const vkf_tensor *ix = n->src[1];
    int64_t lo = 0, hi = d->rows;
    if (!n->p.copy.dyn && !ix) {
        lo = n->p.copy.dst_row0 < 0 ? 0 : n->p.copy.dst_row0;
        hi = vkf_vk_min64(d->rows, (int64_t)n->p.copy.dst_row0 + s->rows);
        if (hi <= lo) return VKF_OK;
    }
    vkf_vk_pipeline *pl;
    int f16 = d->dtype == VKF_DTYPE_F16; /* an F16 KV cache: pairs of halves */
    if (f16 && (s->cols % 2 || d->row_stride % 2 || d->offset % 4))
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "copy into F16 %s: %lld columns / stride %lld / offset %zu must be even",
                         d->name, (long long)s->cols, (long long)d->row_stride, d->offset);
    /* bf16 and the block types: quantized in the kernel, offsets and strides in bytes (bf16: a
     * word per pair; blocks: halves) */
    int kvq = vkf_vk_kvq(d->dtype), bf16 = d->dtype == VKF_DTYPE_BF16;
    uint64_t d_row_bytes = kvq ? vkf_vk_stride_bytes(d) : 0;
    if (kvq &&
        (s->cols % (bf16 ? 2 : 32) || d_row_bytes % (bf16 ? 4 : 2) || d->offset % (bf16 ? 4 : 2)))
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "copy into %s %s: %lld columns / row of %llu bytes / offset %zu do not "
                         "hold whole %s",
                         vkf_dtype_name(d->dtype), d->name, (long long)s->cols,
                         (unsigned long long)d_row_bytes, d->offset,
                         bf16 ? "words of two halves" : "32-element blocks at even bytes");
    vkf_vk_kplan k = vkf_vk_plan_simple(r->vb, n);
    VKF_TRY(vkf_vk_pipe(r, &k, &pl));
    for (int64_t s0 = 0; s0 < s->rows; s0 += sper) {
        int64_t ns = vkf_vk_min64(sper, s->rows - s0);
        for (int64_t t0 = lo; t0 < hi; t0 += dper) {
            int64_t nt = vkf_vk_min64(dper, hi - t0);
            vkf_vk_win win[3];
            vkf_pc_copy pc;
            memset(&pc, 0, sizeof pc);
            VKF_TRY(vkf_vk_rows_win(r, d, t0, nt, 1, &win[0]));
            VKF_TRY(vkf_vk_rows_win(r, s, s0, ns, 0, &win[1]));
            win[2] = win[1];
            if (ix) { /* the row offset: one I32 */
                VKF_TRY(vkf_vk_window(r, ix->buf, ix->offset, ix->offset + 4, 0, &win[2]));
                VKF_TRY(vkf_vk_elem_off(&win[2], ix, &pc.idx_off));
                pc.has_idx = 1;
            }
            if (kvq)
                pc.d_off = (uint32_t)win[0].delta;
            else
                VKF_TRY(vkf_vk_elem_off(&win[0], d, &pc.d_off));
            VKF_TRY(vkf_vk_elem_off(&win[1], s, &pc.s_off));
            pc.rows = (uint32_t)ns;
            pc.cols = (uint32_t)s->cols;
            pc.s_stride = (uint32_t)s->row_stride;
            pc.d_stride = kvq ? (uint32_t)d_row_bytes : (uint32_t)d->row_stride;
            pc.dst_row0 = n->p.copy.dst_row0 + (int32_t)s0;
            pc.dyn = n->p.copy.dyn;
            pc.row0 = (uint32_t)t0;
            pc.nrows = (uint32_t)nt;
            pc.d_rows = (uint32_t)d->rows;
            uint32_t g = vkf_vk_elt_groups(r, (uint64_t)ns * (uint64_t)s->cols);
            VKF_TRY(vkf_vk_dispatch(r, pl, win, 3, &pc, sizeof pc, g, 1, 1));
        }
    }
    return VKF_OK;
}

/* ---------------------------------------------------------------- mixture of experts
 * Activations, ids and weights of the gating are bound whole (a tensor beyond one storage window
 * is refused, naming it: they are [tokens, n_expert] or [tokens * k, d] wide); the expert
 * weights are split by experts where they exceed a window. */

static vkf_status vkf_vk_whole(vkf_vk_rec *r, const vkf_tensor *t, int write, vkf_vk_win *w) {
    if (vkf_vk_rows_fit(t, vkf_vk_window_budget(r->vb)) < t->rows)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "tensor %s: %lld rows of %llu bytes exceed the storage window of %llu "
                         "bytes (the mixture-of-experts kernels bind it whole)",
                         t->name, (long long)t->rows, (unsigned long long)vkf_vk_stride_bytes(t),
                         (unsigned long long)vkf_vk_window_budget(r->vb));
    return vkf_vk_rows_win(r, t, 0, t->rows, write, w);
}

/* mul_mat_id: bindings dst, x, experts, ids. An expert tensor larger than one storage window is
 * bound a range of its rows at a time (whole experts for the grouped kernel), one dispatch each
 * writing the outputs of its rows. Prefill groups the tokens by expert (mul_mat_id.comp GROUPED: a
 * workgroup row per expert); decode (one token) reads the chosen experts' rows only. llvmpipe ends
 * an invocation's loops after 65535 iterations in all: a grouped invocation takes T * k + (T / 8 +
 * 1) * (K / 4 + 1) * 9 at most, else the per-element kernel. */
static vkf_status vkf_vk_op_mul_mat_id(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *a = n->src[0], *w = n->src[1], *ids = n->src[2];
    if (!vkf_vk_weight_ok(w->dtype))
        return vkf_error(VKF_ERROR_UNSUPPORTED, "mul_mat_id: experts %s have dtype %s", w->name,
                         vkf_dtype_name(w->dtype));
    const int64_t E = n->p.moe.n_expert, N = w->rows / E;
    int64_t wrows = vkf_vk_rows_fit(w, vkf_vk_window_budget(r->vb)); /* weight rows a window */
    if (wrows == 0) return vkf_vk_fit_error(r, w);
    int64_t per = wrows / N; /* whole experts a window (0: an expert exceeds one) */
    uint64_t T = (uint64_t)ids->rows,
             iters = T * (uint64_t)ids->cols + (T / 8 + 1) * ((uint64_t)a->cols / 4 + 1) * 9;
    int grouped = T > 1 && per > 0 && !r->vb->xp.no_moe_grouped &&
                  (uint64_t)vkf_vk_min64(per, E) <= r->vb->caps.max_wg_count[1] &&
                  (r->vb->caps.type != VK_PHYSICAL_DEVICE_TYPE_CPU || iters <= 60000);
    int64_t step = grouped ? per * N : vkf_vk_min64(wrows, E * N); /* rows a dispatch */
    vkf_vk_kplan kp = vkf_vk_plan_simple(r->vb, n);
    if (grouped) {
        kp.v.mul_mat_id.grouped = 1;
        kp.spec[0] = 64;
    }
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &kp, &pl));
    vkf_vk_win win[4];
    vkf_pc_moe pc;
    memset(&pc, 0, sizeof pc);
    VKF_TRY(vkf_vk_whole(r, d, 1, &win[0]));
    VKF_TRY(vkf_vk_elem_off(&win[0], d, &pc.d_off));
    VKF_TRY(vkf_vk_whole(r, a, 0, &win[1]));
    VKF_TRY(vkf_vk_elem_off(&win[1], a, &pc.a_off));
    VKF_TRY(vkf_vk_whole(r, ids, 0, &win[3]));
    VKF_TRY(vkf_vk_elem_off(&win[3], ids, &pc.ids_off));
    pc.d_stride = (uint32_t)d->row_stride;
    pc.a_stride = (uint32_t)a->row_stride;
    pc.rows = (uint32_t)ids->rows;
    pc.k = (uint32_t)ids->cols;
    pc.ids_stride = (uint32_t)ids->row_stride;
    pc.cols = (uint32_t)N;
    pc.K = (uint32_t)a->cols;
    pc.n_expert = (uint32_t)E;
    pc.per_pair = a->rows != ids->rows;
    pc.w_bstride = (uint32_t)vkf_vk_stride_bytes(w);
    for (int64_t r0 = 0; r0 < E * N; r0 += step) {
        int64_t nr = vkf_vk_min64(step, E * N - r0);
        VKF_TRY(vkf_vk_rows_win(r, w, r0, nr, 0, &win[2]));
        VKF_TRY(vkf_vk_weight_off(&win[2], w, &pc.w_boff));
        pc.row0 = (uint32_t)r0;
        pc.nrows = (uint32_t)nr;
        if (grouped)
            VKF_TRY(vkf_vk_dispatch(r, pl, win, 4, &pc, sizeof pc, (pc.cols + 63) / 64,
                                    (uint32_t)(nr / N), 1));
        else
            VKF_TRY(vkf_vk_dispatch(r, pl, win, 4, &pc, sizeof pc,
                                    vkf_vk_elt_groups(r, (uint64_t)d->rows * (uint64_t)d->cols), 1,
                                    1));
    }
    return VKF_OK;
}

/* moe_weights (dst, probs, ids), moe_sum (dst, experts, weights), moe_group_mask (dst, x) */
static vkf_status vkf_vk_op_moe(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *a = n->src[0], *b = n->src[1];
    if (n->op == VKF_OP_MUL_MAT_ID) return vkf_vk_op_mul_mat_id(r, n);
    if (n->op == VKF_OP_MOE_GROUP_MASK && n->p.moe.n_group > 64)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "moe_group_mask: %d groups (this kernel: 64)",
                         n->p.moe.n_group);
    vkf_vk_kplan kp = vkf_vk_plan_simple(r->vb, n);
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &kp, &pl));
    vkf_vk_win win[3];
    vkf_pc_moe pc;
    memset(&pc, 0, sizeof pc);
    int nw = 2;
    VKF_TRY(vkf_vk_whole(r, d, 1, &win[0]));
    VKF_TRY(vkf_vk_elem_off(&win[0], d, &pc.d_off));
    VKF_TRY(vkf_vk_whole(r, a, 0, &win[1]));
    VKF_TRY(vkf_vk_elem_off(&win[1], a, &pc.a_off));
    pc.d_stride = (uint32_t)d->row_stride;
    pc.a_stride = (uint32_t)a->row_stride;
    uint64_t items = (uint64_t)a->rows; /* one invocation per row */
    switch (n->op) {
    case VKF_OP_MOE_WEIGHTS: /* 3 ids */
        VKF_TRY(vkf_vk_whole(r, b, 0, &win[2]));
        VKF_TRY(vkf_vk_elem_off(&win[2], b, &pc.ids_off));
        nw = 3;
        pc.rows = (uint32_t)a->rows;
        pc.cols = (uint32_t)a->cols;
        pc.k = (uint32_t)b->cols;
        pc.ids_stride = (uint32_t)b->row_stride;
        pc.softmax_w = (uint32_t)(n->p.moe.softmax_w != 0);
        pc.norm = (uint32_t)(n->p.moe.norm != 0);
        pc.scale = n->p.moe.scale;
        break;
    case VKF_OP_MOE_SUM: /* 3 weights; one invocation per output element */
        VKF_TRY(vkf_vk_whole(r, b, 0, &win[2]));
        VKF_TRY(vkf_vk_elem_off(&win[2], b, &pc.b_off));
        nw = 3;
        pc.rows = (uint32_t)b->rows;
        pc.k = (uint32_t)b->cols;
        pc.cols = (uint32_t)a->cols;
        pc.b_stride = (uint32_t)b->row_stride;
        items = (uint64_t)d->rows * (uint64_t)d->cols;
        break;
    default: /* MOE_GROUP_MASK */
        pc.rows = (uint32_t)a->rows;
        pc.cols = (uint32_t)a->cols;
        pc.n_group = (uint32_t)n->p.moe.n_group;
        pc.n_group_used = (uint32_t)n->p.moe.n_group_used;
        break;
    }
    return vkf_vk_dispatch(r, pl, win, nw, &pc, sizeof pc, vkf_vk_elt_groups(r, items), 1, 1);
}

/* ---------------------------------------------------------------- dispatch by op */

vkf_status vkf_vk_op_record(vkf_vk_rec *r, const vkf_node *n) {
    if (!n->dst || !n->src[0])
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "node without dst or src0");
    for (int i = -1; i < VKF_MAX_SRC; i++) {
        const vkf_tensor *t = i < 0 ? n->dst : n->src[i];
        if (t && !t->buf)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tensor %s has no buffer", t->name);
    }
    switch (n->op) {
    case VKF_OP_ADD:
    case VKF_OP_MUL:
    case VKF_OP_SCALE:
    case VKF_OP_UNARY:
    case VKF_OP_SWIGLU: return vkf_vk_op_eltwise(r, n);
    case VKF_OP_LAYERNORM:
    case VKF_OP_RMSNORM: return vkf_vk_op_norm(r, n);
    case VKF_OP_SOFTMAX:
    case VKF_OP_LOG_SOFTMAX: return vkf_vk_op_softmax(r, n);
    case VKF_OP_ARGMAX:
    case VKF_OP_TOPK: return vkf_vk_op_select(r, n);
    case VKF_OP_POOL: return vkf_vk_op_pool(r, n);
    case VKF_OP_MATMUL: return vkf_vk_op_matmul(r, n);
    case VKF_OP_EMBED: return vkf_vk_op_embed(r, n);
    case VKF_OP_ADD_POS:
    case VKF_OP_ROPE: return vkf_vk_op_pos(r, n);
    case VKF_OP_COPY_ROWS: return vkf_vk_op_copy_rows(r, n);
    case VKF_OP_ATTENTION: return vkf_vk_op_attention(r, n);
    case VKF_OP_MUL_MAT_ID:
    case VKF_OP_MOE_WEIGHTS:
    case VKF_OP_MOE_SUM:
    case VKF_OP_MOE_GROUP_MASK: return vkf_vk_op_moe(r, n);
    default: break;
    }
    return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vulkan: unknown op %d", (int)n->op);
}
