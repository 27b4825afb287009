/* The matmul encoders: matmul_texel.comp for plain matmuls and the groups vk_fuse.c builds
 * (vkf_vk_mm_group), or for them quantize_q8.comp then matmul_q8.comp (the integer-dot path), and
 * MATMUL on matmul.comp (split-K matrix-vector, tiled, FAST / ROWLANE) or matmul_coopmat.comp, each
 * as the planner chose (vk_plan.c). Each binds windows of at most maxStorageBufferRange bytes and
 * splits the weight by output rows (and the activations by rows) where a tensor exceeds one. */
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/dtype.h"
#include "vkf_abi.h"

/* ---------------------------------------------------------------- matmul on texels */

/* One dispatch of a group: activation rows [m0, m0 + mc), weight rows [n0, n0 + nc) (a plain
 * matmul is chunked by both; a fused group takes every weight row at once) */
typedef struct vkf_vk_mm_chunk {
    int64_t m0, mc, n0, nc;
    int plain;
} vkf_vk_mm_chunk;

/* rows of t that fit one texel window */
static int64_t vkf_vk_rows_fit_texel(const vkf_vk_backend *vb, const vkf_tensor *t) {
    return vkf_vk_rows_fit(t, vkf_vk_texel_budget(vb) - 32);
}

/* the dispatch grid for `rows` padded output rows of R per subgroup */
static void vkf_vk_mm_grid(const vkf_vk_caps *c, const vkf_vk_mm_group_plan *p, uint64_t rows,
                           uint32_t *gx, uint32_t *gy) {
    /* size for the fewest subgroups a workgroup may have (the largest subgroup size): extra
     * subgroups find no rows and return; with lanes every invocation owns R rows */
    uint32_t smax = c->subgroup_max ? c->subgroup_max : 64;
    uint32_t nsg = p->wg / smax ? p->wg / smax : 1;
    uint64_t per = (uint64_t)p->R * (p->lanes ? p->wg : nsg);
    uint64_t groups = (rows + per - 1) / per;
    *gx = (uint32_t)(groups < c->max_wg_count[0] ? groups : c->max_wg_count[0]);
    *gy = (uint32_t)((groups + *gx - 1) / *gx);
}

/* the window over rows [r0, r0 + n) of t a plan reads in 16-byte units: a texel window, or with
 * W_SSBO the same bytes as a storage window */
static vkf_status vkf_vk_mm_rows_win(vkf_vk_rec *r, const vkf_tensor *t, int64_t r0, int64_t n,
                                     int ssbo, vkf_vk_win *w) {
    if (!ssbo) return vkf_vk_rows_texwin(r, t, r0, n, w);
    if (n <= 0) n = 1;
    uint64_t sb = vkf_vk_stride_bytes(t);
    uint64_t lo = t->buf->offset + t->offset + (uint64_t)r0 * sb;
    uint64_t hi = lo + (uint64_t)(n - 1) * sb + vkf_vk_row_bytes(t);
    if (hi > t->buf->offset + t->buf->size)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "tensor %s: rows outside its buffer", t->name);
    return vkf_vk_window_block(r, t->buf->block, lo, hi, 0, VKF_VK_WIN_VEC4, w);
}

/* outputs: one storage window over rows m0.. of every output (columns n0.. when plain), and the
 * element offset of each inside it */
static vkf_status vkf_vk_mm_out_win(vkf_vk_rec *r, const vkf_vk_mm_group *g,
                                    const vkf_vk_mm_chunk *ch, vkf_vk_win *win, uint32_t doff[3]) {
    int n_out = g->swiglu ? 1 : g->n_mats;
    uint64_t dlo = UINT64_MAX, dhi = 0, n0b = ch->plain ? (uint64_t)ch->n0 * 4 : 0;
    for (int i = 0; i < n_out; i++) {
        const vkf_tensor *d = g->d[i];
        uint64_t sb = vkf_vk_stride_bytes(d), base = d->buf->offset + d->offset;
        uint64_t lo = base + (uint64_t)ch->m0 * sb + n0b;
        uint64_t hi = base + (uint64_t)(ch->m0 + ch->mc - 1) * sb +
                      (ch->plain ? (uint64_t)(ch->n0 + ch->nc) : (uint64_t)d->cols) * 4;
        if (lo < dlo) dlo = lo;
        if (hi > dhi) dhi = hi;
    }
    VKF_TRY(vkf_vk_window_block(r, g->d[0]->buf->block, dlo, dhi, 1, 0, win));
    for (int i = 0; i < n_out; i++) {
        const vkf_tensor *d = g->d[i];
        uint64_t rel =
            d->buf->offset + d->offset + (uint64_t)ch->m0 * vkf_vk_stride_bytes(d) + n0b - win->off;
        if (rel % 4)
            return vkf_error(VKF_ERROR_INTERNAL, "matmul %s: output offset not a float", d->name);
        doff[i] = (uint32_t)(rel / 4);
    }
    return VKF_OK;
}

/* weights: one texel window over rows n0.. of every matrix, and each matrix's byte offset in it
 * (on a texel where the plan reads whole texels) */
static vkf_status vkf_vk_mm_w_win(vkf_vk_rec *r, const vkf_vk_mm_group *g,
                                  const vkf_vk_mm_chunk *ch, int aligned16, int ssbo,
                                  vkf_vk_win *win, uint32_t wboff[3]) {
    uint64_t wlo = UINT64_MAX, whi = 0;
    for (int i = 0; i < g->n_mats; i++) {
        const vkf_tensor *w = g->w[i];
        uint64_t sb = vkf_vk_stride_bytes(w), base = w->buf->offset + w->offset;
        uint64_t lo = base + (ch->plain ? (uint64_t)ch->n0 * sb : 0);
        uint64_t hi = base + (uint64_t)((ch->plain ? ch->n0 + ch->nc : w->rows) - 1) * sb +
                      vkf_vk_row_bytes(w);
        if (lo < wlo) wlo = lo;
        if (hi > whi) whi = hi;
    }
    VKF_TRY(
        vkf_vk_window_block(r, g->w[0]->buf->block, wlo, whi, 0, ssbo ? VKF_VK_WIN_VEC4 : 1, win));
    for (int i = 0; i < g->n_mats; i++) {
        const vkf_tensor *w = g->w[i];
        wboff[i] =
            (uint32_t)(w->buf->offset + w->offset +
                       (ch->plain ? (uint64_t)ch->n0 * vkf_vk_stride_bytes(w) : 0) - win->off);
        if (aligned16 && wboff[i] % 16)
            return vkf_error(VKF_ERROR_INTERNAL,
                             "matmul %s: weight rows not on a texel in their window", w->name);
    }
    return VKF_OK;
}

/* bias (columns n0.. of one, or every matrix's whole in one window), residual, norm weight:
 * windows 3, 4, 5 (bound to the outputs' or activations' window when absent) */
static vkf_status vkf_vk_mm_extra_wins(vkf_vk_rec *r, const vkf_vk_mm_group *g,
                                       const vkf_vk_mm_chunk *ch, int ssbo, vkf_vk_win *win,
                                       vkf_pc_mm *pc) {
    win[3] = win[4] = win[0];
    win[3].write = win[4].write = 0;
    win[5] = win[1];
    if (g->bias[0] && ch->plain) {
        const vkf_tensor *b = g->bias[0];
        uint64_t blo = b->offset + (uint64_t)ch->n0 * 4, bhi = blo + (uint64_t)ch->nc * 4;
        VKF_TRY(vkf_vk_window(r, b->buf, blo, bhi, 0, &win[3]));
        VKF_TRY(vkf_vk_elem_off(&win[3], b, &pc->b_off));
        pc->flags |= VKF_MM_BIAS;
    } else if (g->bias[0]) {
        uint64_t blo, bhi;
        vkf_vk_tensors_span(g->bias, g->n_mats, &blo, &bhi);
        VKF_TRY(vkf_vk_window_block(r, g->bias[0]->buf->block, blo, bhi, 0, 0, &win[3]));
        uint32_t *bo[3] = {&pc->b_off, &pc->b_off1, &pc->b_off2};
        for (int i = 0; i < g->n_mats; i++)
            *bo[i] = (uint32_t)((g->bias[i]->buf->offset + g->bias[i]->offset - win[3].off) / 4);
        pc->flags |= VKF_MM_BIAS;
    }
    if (g->res) {
        const vkf_tensor *res = g->res;
        uint64_t rsb = vkf_vk_stride_bytes(res);
        uint64_t rlo = res->offset + (uint64_t)ch->m0 * rsb + (uint64_t)ch->n0 * 4;
        uint64_t rhi =
            res->offset + (uint64_t)(ch->m0 + ch->mc - 1) * rsb + (uint64_t)(ch->n0 + ch->nc) * 4;
        VKF_TRY(vkf_vk_window(r, res->buf, rlo, rhi, 0, &win[4]));
        VKF_TRY(vkf_vk_elem_off(&win[4], res, &pc->r_off));
        pc->r_stride = (uint32_t)res->row_stride;
        pc->flags |= VKF_MM_RESIDUAL;
    }
    if (g->norm_w) {
        VKF_TRY(vkf_vk_mm_rows_win(r, g->norm_w, 0, 1, ssbo, &win[5]));
        pc->g_off = (uint32_t)(win[5].delta / 4);
        pc->eps = g->eps;
    }
    return VKF_OK;
}

/* the push constants of one chunk; returns the output rows padded to R, over every matrix
 * written */
static uint64_t vkf_vk_mm_pc(const vkf_vk_mm_group *g, const vkf_vk_mm_chunk *ch, uint32_t R,
                             const uint32_t doff[3], const uint32_t wboff[3], vkf_pc_mm *pc) {
    pc->M = (uint32_t)ch->mc;
    pc->N = (uint32_t)ch->nc;
    pc->K = (uint32_t)g->a->cols;
    pc->a_stride = (uint32_t)g->a->row_stride;
    pc->w_boff = wboff[0];
    pc->w_bstride = (uint32_t)vkf_vk_stride_bytes(g->w[0]);
    pc->d_off = doff[0];
    pc->d_stride = (uint32_t)g->d[0]->row_stride;
    pc->n_mats = (uint32_t)g->n_mats;
    uint64_t rows = ((uint64_t)ch->nc + R - 1) / R * R;
    if (g->n_mats > 1) {
        pc->N1 = (uint32_t)g->w[1]->rows;
        pc->w_boff1 = wboff[1];
        if (!g->swiglu) {
            pc->d_off1 = doff[1];
            pc->d_stride1 = (uint32_t)g->d[1]->row_stride;
            rows += ((uint64_t)pc->N1 + R - 1) / R * R;
        }
    }
    if (g->n_mats > 2) {
        pc->N2 = (uint32_t)g->w[2]->rows;
        pc->w_boff2 = wboff[2];
        pc->d_off2 = doff[2];
        pc->d_stride2 = (uint32_t)g->d[2]->row_stride;
        rows += ((uint64_t)pc->N2 + R - 1) / R * R;
    }
    return rows;
}

/* The integer-dot path's first dispatch (quantize_q8.comp): the rows of a, through the group's
 * RMSNorm where it has one, quantized to 48-byte blocks of 32 values in scratch; *qw gets
 * their window, which matmul_q8.comp reads in place of a. */
static vkf_status vkf_vk_mm_q8_quantize(vkf_vk_rec *r, const vkf_vk_mm_group *g,
                                        const vkf_vk_mm_group_plan *p, vkf_vk_win *qw) {
    const vkf_tensor *a = g->a;
    uint64_t rowq = (uint64_t)(a->cols / 32) * 3u; /* 16-byte words per row */
    uint64_t bytes = (uint64_t)a->rows * rowq * 16u;
    vkf_buffer *qb;
    VKF_TRY(vkf_vk_scratch(r, (size_t)bytes, &qb));
    vkf_vk_win win[3];
    VKF_TRY(vkf_vk_window(r, qb, 0, bytes, 1, &win[0]));
    if (win[0].delta % 16)
        return vkf_error(VKF_ERROR_INTERNAL, "matmul %s: quantized activations unaligned",
                         g->d[0]->name);
    vkf_pc_q8 pc;
    memset(&pc, 0, sizeof pc);
    VKF_TRY(vkf_vk_rows_win(r, a, 0, a->rows, 0, &win[1]));
    VKF_TRY(vkf_vk_elem_off(&win[1], a, &pc.x_off));
    win[2] = win[1];
    if (g->norm_w) {
        VKF_TRY(vkf_vk_rows_win(r, g->norm_w, 0, 1, 0, &win[2]));
        VKF_TRY(vkf_vk_elem_off(&win[2], g->norm_w, &pc.g_off));
        pc.eps = g->eps;
    }
    pc.M = (uint32_t)a->rows;
    pc.K = (uint32_t)a->cols;
    pc.x_stride = (uint32_t)a->row_stride;
    pc.q_off = (uint32_t)(win[0].delta / 16);
    pc.q_stride = (uint32_t)rowq;
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &p->kq, &pl));
    /* workgroups of 64 blocks along the row (up to 64 of them), but one per row for the
     * RMSNorm, whose sum of squares spans the row (the pipeline's workgroup size: vk_plan.c) */
    uint64_t nb = (uint64_t)(a->cols / 32), gx = g->norm_w ? 1 : (nb + 63) / 64;
    if (gx > 64) gx = 64;
    VKF_TRY(vkf_vk_dispatch(r, pl, win, 3, &pc, sizeof pc, (uint32_t)gx, (uint32_t)a->rows, 1));
    *qw = win[0];
    qw->write = 0;
    return VKF_OK;
}

/* binds one chunk's windows and records its dispatch; qw: the quantized activations of the
 * integer-dot path (NULL: a itself) */
static vkf_status vkf_vk_mm_chunk_record(vkf_vk_rec *r, const vkf_vk_mm_group *g,
                                         const vkf_vk_mm_group_plan *p, vkf_vk_pipeline *pl,
                                         const vkf_vk_mm_chunk *ch, const vkf_vk_win *qw) {
    vkf_vk_win win[6];
    vkf_pc_mm pc;
    memset(&pc, 0, sizeof pc);
    uint32_t doff[3] = {0, 0, 0}, wboff[3] = {0, 0, 0};
    VKF_TRY(vkf_vk_mm_out_win(r, g, ch, &win[0], doff));
    if (qw) {
        win[1] = *qw;
    } else {
        VKF_TRY(vkf_vk_mm_rows_win(r, g->a, ch->m0, ch->mc, p->ssbo, &win[1]));
        if (win[1].delta % 16)
            return vkf_error(VKF_ERROR_INTERNAL, "matmul %s: activation window not texel aligned",
                             g->d[0]->name);
        pc.a_off = (uint32_t)(win[1].delta / 4);
    }
    VKF_TRY(vkf_vk_mm_w_win(r, g, ch, p->aligned16, p->ssbo, &win[2], wboff));
    VKF_TRY(vkf_vk_mm_extra_wins(r, g, ch, p->ssbo, win, &pc));
    uint64_t rows = vkf_vk_mm_pc(g, ch, p->R, doff, wboff, &pc);
    if (qw) { /* 16-byte words of the blocks: 3 per 32 values */
        pc.a_stride = (uint32_t)(g->a->cols / 32 * 3);
        pc.a_off = (uint32_t)(qw->delta / 16 + (uint64_t)ch->m0 * pc.a_stride);
    }
    uint32_t gx, gy, gz = (uint32_t)(((uint64_t)ch->mc + p->tm - 1) / p->tm);
    vkf_vk_mm_grid(&r->vb->caps, p, rows, &gx, &gy);
    return vkf_vk_dispatch(r, pl, win, qw ? 5 : 6, &pc, sizeof pc, gx, gy, gz);
}

vkf_status vkf_vk_mm_group_record(vkf_vk_rec *r, const vkf_vk_mm_group *g) {
    const vkf_tensor *a = g->a, *w0 = g->w[0], *d0 = g->d[0];
    const vkf_vk_caps *c = &r->vb->caps;
    vkf_vk_mm_group_plan p;
    VKF_TRY(vkf_vk_plan_mm_group(r->vb, g, &p));
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, &p.k, &pl));
    vkf_vk_mm_chunk ch = {.plain = g->n_mats == 1 && !g->swiglu && !g->norm_w};
    uint64_t budget = vkf_vk_window_budget(r->vb);
    int64_t mper = a->rows, nper = w0->rows;
    if (ch.plain) {
        mper = vkf_vk_min64(vkf_vk_rows_fit_texel(r->vb, a), vkf_vk_rows_fit(d0, budget));
        nper = vkf_vk_rows_fit_texel(r->vb, w0);
        if (p.int_dot) nper = vkf_vk_min64(nper, vkf_vk_rows_fit(w0, budget)); /* storage */
        if (mper == 0) return vkf_vk_fit_error(r, vkf_vk_rows_fit(d0, budget) == 0 ? d0 : a);
        if (nper == 0) return vkf_vk_fit_error(r, w0);
        nper = vkf_vk_min64(nper, (int64_t)c->max_wg_count[0] * c->max_wg_count[1] * p.R);
        if (g->res) mper = vkf_vk_min64(mper, vkf_vk_rows_fit(g->res, budget));
    }
    vkf_vk_win qwin;
    memset(&qwin, 0, sizeof qwin);
    if (p.int_dot) VKF_TRY(vkf_vk_mm_q8_quantize(r, g, &p, &qwin));
    mper = vkf_vk_min64(mper, (int64_t)c->max_wg_count[2] * p.tm);
    if (mper > (int64_t)p.tm) mper = mper / p.tm * p.tm;
    if (p.row_each) mper = 1;
    for (ch.m0 = 0; ch.m0 < a->rows; ch.m0 += mper) {
        ch.mc = vkf_vk_min64(mper, a->rows - ch.m0);
        for (ch.n0 = 0; ch.n0 < w0->rows; ch.n0 += nper) {
            ch.nc = vkf_vk_min64(nper, w0->rows - ch.n0);
            VKF_TRY(vkf_vk_mm_chunk_record(r, g, &p, pl, &ch, p.int_dot ? &qwin : NULL));
        }
    }
    return VKF_OK;
}

/* ---------------------------------------------------------------- matmul.comp, coopmat */

/* the windows and push constants of one chunk: dst rows m0.., columns n0..n0+nc; a rows m0..;
 * w rows n0..; bias columns n0.. (bound to a when absent) */
static vkf_status vkf_vk_matmul_bind(vkf_vk_rec *r, const vkf_node *n, int64_t m0, int64_t mc,
                                     int64_t n0, int64_t nc, vkf_vk_win win[4], vkf_pc_matmul *pc) {
    const vkf_tensor *d = n->dst, *a = n->src[0], *w = n->src[1], *bias = n->src[2];
    memset(pc, 0, sizeof *pc);
    uint64_t dsb = vkf_vk_stride_bytes(d);
    uint64_t dlo = d->offset + (uint64_t)m0 * dsb + (uint64_t)n0 * 4;
    uint64_t dhi = d->offset + (uint64_t)(m0 + mc - 1) * dsb + (uint64_t)(n0 + nc) * 4;
    VKF_TRY(vkf_vk_window(r, d->buf, dlo, dhi, 1, &win[0]));
    VKF_TRY(vkf_vk_elem_off(&win[0], d, &pc->d_off));
    VKF_TRY(vkf_vk_rows_win(r, a, m0, mc, 0, &win[1]));
    VKF_TRY(vkf_vk_elem_off(&win[1], a, &pc->a_off));
    VKF_TRY(vkf_vk_rows_win(r, w, n0, nc, 0, &win[2]));
    VKF_TRY(vkf_vk_weight_off(&win[2], w, &pc->w_boff));
    win[3] = win[1];
    if (bias) {
        uint64_t blo = bias->offset + (uint64_t)n0 * 4, bhi = blo + (uint64_t)nc * 4;
        VKF_TRY(vkf_vk_window(r, bias->buf, blo, bhi, 0, &win[3]));
        VKF_TRY(vkf_vk_elem_off(&win[3], bias, &pc->b_off));
        pc->has_bias = 1;
    }
    pc->M = (uint32_t)mc;
    pc->N = (uint32_t)nc;
    pc->K = (uint32_t)a->cols;
    pc->a_stride = (uint32_t)a->row_stride;
    pc->w_bstride = (uint32_t)vkf_vk_stride_bytes(w);
    pc->d_stride = (uint32_t)d->row_stride;
    return VKF_OK;
}

/* the grid of one chunk: rows of NOUT (of RL_WG with ROWLANE) per workgroup, or output tiles */
static vkf_status vkf_vk_matmul_grid(const vkf_vk_caps *c, const vkf_node *n,
                                     const vkf_vk_mm_plan *p, int fast, int64_t mc, int64_t nc,
                                     uint32_t g[3]) {
    g[2] = 1;
    if (fast || p->route == VKF_VK_MM_ROUTE_MATVEC) {
        uint64_t per_group = fast && p->rowlane ? VKF_VK_RL_WG : VKF_VK_MV_NOUT;
        uint64_t groups = ((uint64_t)nc + per_group - 1) / per_group;
        g[0] = (uint32_t)(groups < c->max_wg_count[0] ? groups : c->max_wg_count[0]);
        g[1] = (uint32_t)((groups + g[0] - 1) / g[0]);
        if (fast && p->rowlane) g[2] = (uint32_t)((mc + VKF_VK_MV_MAXM - 1) / VKF_VK_MV_MAXM);
        return VKF_OK;
    }
    g[0] = (uint32_t)((nc + p->bn - 1) / p->bn);
    g[1] = (uint32_t)((mc + p->bm - 1) / p->bm);
    if (g[1] > c->max_wg_count[1] || g[0] > c->max_wg_count[0])
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "matmul %s: %lld x %lld output tiles exceed the workgroup count limit",
                         n->dst->name, (long long)g[1], (long long)g[0]);
    return VKF_OK;
}

/* a [M,K] F32, w [N,K] any weight type, optional bias [1,N]; dst [M,N], as planned */
vkf_status vkf_vk_op_matmul(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *a = n->src[0], *w = n->src[1], *bias = n->src[2];
    vkf_vk_mm_plan p;
    VKF_TRY(vkf_vk_plan_matmul(r->vb, n, &p));
    if (p.route == VKF_VK_MM_ROUTE_TEXEL) {
        vkf_vk_mm_group grp = {.a = a, .w = {w}, .d = {d}, .n_mats = 1, .bias = {bias}};
        return vkf_vk_mm_group_record(r, &grp);
    }
    const vkf_vk_caps *c = &r->vb->caps;
    vkf_vk_pipeline *pl, *pl_fast = NULL;
    VKF_TRY(vkf_vk_pipe(r, &p.k, &pl));
    if (p.fast_ok) VKF_TRY(vkf_vk_pipe(r, &p.fast, &pl_fast));
    /* M chunks bound a and dst; N chunks bound w, bias and dst columns */
    uint64_t budget = vkf_vk_window_budget(r->vb);
    int64_t M = a->rows, N = w->rows;
    int64_t mper = vkf_vk_min64(vkf_vk_rows_fit(a, budget), vkf_vk_rows_fit(d, budget));
    int64_t nper = vkf_vk_rows_fit(w, budget);
    if (mper == 0) return vkf_vk_fit_error(r, vkf_vk_rows_fit(a, budget) == 0 ? a : d);
    if (nper == 0) return vkf_vk_fit_error(r, w);
    nper = vkf_vk_min64(nper, (int64_t)c->max_wg_count[0] * c->max_wg_count[1] * VKF_VK_MV_NOUT);
    mper = vkf_vk_min64(mper, (int64_t)c->max_wg_count[2] * VKF_VK_MV_MAXM);
    int quant = vkf_wtype_is_quant(w->dtype);
    for (int64_t m0 = 0; m0 < M; m0 += mper) {
        int64_t mc = vkf_vk_min64(mper, M - m0);
        for (int64_t n0 = 0; n0 < N; n0 += nper) {
            int64_t nc = vkf_vk_min64(nper, N - n0);
            vkf_vk_win win[4];
            vkf_pc_matmul pc;
            VKF_TRY(vkf_vk_matmul_bind(r, n, m0, mc, n0, nc, win, &pc));
            /* the FAST variant where the bound offsets allow its loads */
            int fast = pl_fast && pc.a_off % 4 == 0 &&
                       (quant ? pc.w_boff % vkf_vk_walign(w->dtype) == 0
                              : pc.w_boff % 16 == 0 && pc.w_bstride % 16 == 0);
            uint32_t g[3];
            VKF_TRY(vkf_vk_matmul_grid(c, n, &p, fast, mc, nc, g));
            VKF_TRY(
                vkf_vk_dispatch(r, fast ? pl_fast : pl, win, 4, &pc, sizeof pc, g[0], g[1], g[2]));
        }
    }
    return VKF_OK;
}
