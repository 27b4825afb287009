/* The matmul encoders: matmul_texel.comp for plain matmuls and the groups vk_fuse.c builds
 * (vkf_vk_mm_group), and MATMUL on matmul.comp (split-K matrix-vector, tiled, FAST / ROWLANE) or
 * matmul_coopmat.comp. Each binds windows of at most maxStorageBufferRange bytes and splits the
 * weight by output rows (and the activations by rows) where a tensor exceeds one. */
#include <stdio.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/dtype.h"
#include "vkf_abi.h"

static int vkf_vk_is_quant(vkf_dtype t) { return vkf_wtype_is_quant(t); }

/* ---------------------------------------------------------------- matmul on texels */

/* rows of t that fit one texel window */
static int64_t vkf_vk_rows_fit_texel(const vkf_vk_backend *vb, const vkf_tensor *t) {
    return vkf_vk_rows_fit(t, vkf_vk_texel_budget(vb) - 32);
}

/* rows of t span one texel window / storage window */
static int vkf_vk_texel_fits(const vkf_vk_backend *vb, const vkf_tensor *t) {
    return vkf_vk_rows_fit_texel(vb, t) >= t->rows;
}

/* t can be read as whole 16-byte texels of f32 (rows start 16-byte aligned, cols % 4 == 0) */
static int vkf_vk_f32_texel_ok(const vkf_tensor *t) {
    return t->dtype == VKF_DTYPE_F32 && t->offset % 16 == 0 && t->row_stride % 4 == 0 &&
           t->cols % 4 == 0;
}

int vkf_vk_mm_group_ok(vkf_vk_rec *r, const vkf_vk_mm_group *g, const char **why) {
    const vkf_vk_backend *vb = r->vb;
    const char *dummy;
    if (!why) why = &dummy;
    *why = NULL;
    if (!vb->caps.texel || !vb->caps.has_subgroup || vb->sw.no_texel_matmul) {
        *why = "no texels or subgroups";
        return 0;
    }
    const vkf_tensor *a = g->a, *w0 = g->w[0];
    int64_t K = a->cols;
    int quant = vkf_vk_is_quant(w0->dtype);
    int64_t unit = vkf_vk_wunit(w0->dtype);
    if (!vkf_vk_weight_ok(w0->dtype) || K % unit || a->offset % 16 || a->row_stride % 4) {
        *why = "alignment";
        return 0;
    }
    /* the group kernel is the texel one: where the table or the tuner picks the tiled kernel
     * for this shape (GPU prefill), the ops run unfused on it (its config has no R/TM) */
    int64_t Ntot = 0;
    for (int i = 0; i < g->n_mats; i++)
        Ntot += g->w[i]->rows;
    vkf_vk_mm_cfg cfg;
    if (vkf_vk_tune_matmul(r->vb, a->rows, Ntot, K, w0->dtype, &cfg) != VKF_OK ||
        cfg.kind != VKF_VK_MM_TEXEL || !cfg.r || !cfg.tm || !cfg.wg) {
        *why = "the tiled kernel serves this shape";
        return 0;
    }
    int n_out = g->swiglu ? 1 : g->n_mats;
    for (int i = 0; i < g->n_mats; i++) {
        const vkf_tensor *w = g->w[i];
        if (w->dtype != w0->dtype || w->cols != K || !w->buf || w->buf->block != w0->buf->block ||
            vkf_vk_stride_bytes(w) != vkf_vk_stride_bytes(w0)) {
            *why = "weights differ";
            return 0;
        }
        if (quant ? w->offset % vkf_vk_walign(w->dtype)
                  : (w->offset % 16 || vkf_vk_stride_bytes(w) % 16)) {
            *why = "weight alignment";
            return 0;
        }
    }
    for (int i = 0; i < n_out; i++)
        if (!g->d[i]->buf || g->d[i]->buf->block != g->d[0]->buf->block ||
            g->d[i]->rows != a->rows) {
            *why = "outputs differ";
            return 0;
        }
    if (g->norm_w && !vkf_vk_f32_texel_ok(g->norm_w)) {
        *why = "norm weight alignment";
        return 0;
    }
    /* biases: F32 rows of each matrix's width, all or none, in one block (one window) */
    for (int i = 0; i < g->n_mats; i++) {
        const vkf_tensor *b = g->bias[i];
        if (!b != !g->bias[0] ||
            (b &&
             (g->swiglu || b->dtype != VKF_DTYPE_F32 || b->rows != 1 || b->cols != g->w[i]->rows ||
              !b->buf || b->buf->block != g->bias[0]->buf->block || b->offset % 4))) {
            *why = "biases";
            return 0;
        }
    }
    if (g->n_mats == 1 && !g->swiglu && !g->norm_w) return 1; /* plain: chunked as needed */
    /* fused groups bind each operand set as one window */
    uint64_t tb = vkf_vk_texel_budget(vb) - 32, sb = vkf_vk_window_budget(vb);
    uint64_t wlo, whi, dlo, dhi, blo = 0, bhi = 0;
    vkf_vk_tensors_span(g->w, g->n_mats, &wlo, &whi);
    vkf_vk_tensors_span(g->d, n_out, &dlo, &dhi);
    if (g->bias[0]) vkf_vk_tensors_span(g->bias, g->n_mats, &blo, &bhi);
    if (bhi - blo > sb) {
        *why = "bias windows";
        return 0;
    }
    if (whi - wlo > tb || dhi - dlo > sb || !vkf_vk_texel_fits(vb, a) ||
        (g->res && vkf_vk_rows_fit(g->res, sb) < g->res->rows)) {
        *why = "windows";
        return 0;
    }
    const vkf_vk_caps *c = &vb->caps;
    if (a->rows > (int64_t)c->max_wg_count[2]) {
        *why = "rows";
        return 0;
    }
    return 1;
}

/* the dispatch grid for `rows` padded output rows of R per subgroup */
static void vkf_vk_mm_grid(const vkf_vk_caps *c, const vkf_vk_mm_cfg *cfg, uint32_t R,
                           uint64_t rows, uint32_t *gx, uint32_t *gy) {
    /* size for the fewest subgroups a workgroup may have (the largest subgroup size): extra
     * subgroups find no rows and return; with lanes every invocation owns R rows */
    uint32_t smax = c->subgroup_max ? c->subgroup_max : 64;
    uint32_t nsg = cfg->wg / smax ? cfg->wg / smax : 1;
    uint64_t per = (uint64_t)R * (cfg->lanes ? cfg->wg : nsg);
    uint64_t groups = (rows + per - 1) / per;
    *gx = (uint32_t)(groups < c->max_wg_count[0] ? groups : c->max_wg_count[0]);
    *gy = (uint32_t)((groups + *gx - 1) / *gx);
}

/* the quantized types whose blocks fill whole texels (Q4_K: 144 bytes, Q5_K: 176) */
static int quant_bytes16(vkf_dtype t) {
    return vkf_vk_is_quant(t) && vkf_dtype_block_bytes(t) % 16 == 0;
}

vkf_status vkf_vk_mm_group_record(vkf_vk_rec *r, const vkf_vk_mm_group *g) {
    const vkf_tensor *a = g->a, *w0 = g->w[0], *d0 = g->d[0];
    const vkf_vk_caps *c = &r->vb->caps;
    int64_t M = a->rows, K = a->cols;
    int64_t Ntot = 0;
    for (int i = 0; i < g->n_mats; i++)
        Ntot += g->w[i]->rows;
    vkf_vk_mm_cfg cfg;
    VKF_TRY(vkf_vk_tune_matmul(r->vb, M, Ntot, K, w0->dtype, &cfg));
    uint32_t R = cfg.r;
    if (g->swiglu && R > 1) R /= 2; /* two accumulator sets */
    /* activation rows per workgroup: the configured count, or the next power of two >= M when M
     * is smaller (a few pipelines per variant, not one per prompt length: each costs a compile) */
    uint32_t tm = cfg.tm;
    if ((int64_t)tm > M) {
        for (tm = 1; (int64_t)tm < M;)
            tm *= 2;
        if (tm > cfg.tm) tm = cfg.tm;
    }
    uint32_t spec[3] = {cfg.wg, R, tm};
    /* 32-element units (W_SMALL) where a type's unit is larger: split-K over rows of few
     * 64-element units (K = 256: 4) would idle lanes; and with rows per lane (prefill on CPU
     * drivers) each lane holds TM activation units, half the registers with 32-element units:
     * 512x2048x2048, ms, 64 -> 32: Q4_K 85.4 -> 71.4, Q5_K 95.3 -> 85.4, Q6_K 111.0 -> 103.4,
     * Q3_K 126.6 -> 113.5, IQ4_XS 91.0 -> 85.6, Q2_K 79.4 -> 80.0; 32x2048x2048 Q4_K 8.0 -> 5.5
     * (bench/RESULTS.md). VKF_NO_LANES_SMALL=1 keeps the large units with rows per lane. */
    int64_t sg = c->subgroup_size ? c->subgroup_size : 32;
    int small = vkf_vk_wunit(w0->dtype) > 32 &&
                (cfg.lanes ? !r->vb->sw.no_lanes_small : K / vkf_vk_wunit(w0->dtype) < sg);
    int rs_p = 1, rowseq = vkf_vk_mm_rowseq(r->vb, &cfg, M, K, w0->dtype, small, &rs_p);
    if (rowseq) { /* whole steps of rs_p rows */
        int64_t n[3];
        int n_rows = g->swiglu ? 1 : g->n_mats;
        for (int i = 0; i < n_rows; i++)
            n[i] = g->w[i]->rows;
        spec[1] = R = cfg.r = vkf_vk_rowseq_rows(c, &r->vb->sw, &cfg, n, n_rows, K,
                                                 g->swiglu ? 2 : 1, (uint32_t)rs_p);
    }
    /* blocks of a multiple of 16 bytes in rows that all start on a texel (texel windows start on
     * 16 bytes at least, vkf_vk_window_block): the kernel reads them without realigning */
    int align16 =
        quant_bytes16(w0->dtype) && vkf_vk_stride_bytes(w0) % 16 == 0 && !r->vb->sw.no_align16;
    for (int i = 0; i < g->n_mats; i++)
        if ((g->w[i]->buf->offset + g->w[i]->offset) % 16) align16 = 0;
    int rs_ct = 1, rs_ch = rowseq ? vkf_vk_rowseq_chunk(c, &r->vb->sw, g, K, &rs_ct) : 0;
    /* K-quant unit pairs share texels (RS_PAIRU in matmul_texel.comp): where taking the units in
     * pairs leaves a lane no more slots than taking them one by one (K = 2048, 6912, 8192; not
     * 5632: 12 slots instead of 11). VKF_NO_RS_PAIRU=1 turns it off. */
    int64_t wu = vkf_vk_wunit(w0->dtype), sgs = c->subgroup_size, wun = K / wu;
    int rs_pairu = rowseq && !rs_ch && rs_p == 1 && vkf_wtype_of(w0->dtype)->gpu_pairload && sgs &&
                   wun % 2 == 0 && 2 * ((wun + 2 * sgs - 1) / (2 * sgs)) == rowseq &&
                   !r->vb->sw.no_rs_pairu;
    char defs[192];
    snprintf(defs, sizeof defs,
             "WTYPE=%d;NORM=%d;SWIGLU=%d;ACT=%d;LANES=%d;W_SMALL=%d;ROWSEQ=%d;W_ALIGN16=%d;"
             "ROWSEQ_CH=%d;ROWSEQ_CT=%d;W_RAWP=%d;RS_P=%d;RS_PAIRU=%d",
             vkf_vk_wtype(w0->dtype), g->norm_w ? 1 : 0, g->swiglu, g->act - 1, cfg.lanes ? 1 : 0,
             small, rowseq, align16, rs_ch, rs_ct, rowseq && !r->vb->sw.no_rawp, rs_p, rs_pairu);
    vkf_vk_pipeline *pl;
    VKF_TRY(vkf_vk_pipe(r, "matmul_texel", defs, spec, 3, &pl));
    int plain = g->n_mats == 1 && !g->swiglu && !g->norm_w;
    uint64_t budget = vkf_vk_window_budget(r->vb);
    int64_t mper = M, nper = w0->rows;
    if (plain) {
        mper = vkf_vk_min64(vkf_vk_rows_fit_texel(r->vb, a), vkf_vk_rows_fit(d0, budget));
        nper = vkf_vk_rows_fit_texel(r->vb, w0);
        if (mper == 0) return vkf_vk_fit_error(r, vkf_vk_rows_fit(d0, budget) == 0 ? d0 : a);
        if (nper == 0) return vkf_vk_fit_error(r, w0);
        nper = vkf_vk_min64(nper, (int64_t)c->max_wg_count[0] * c->max_wg_count[1] * R);
        if (g->res) mper = vkf_vk_min64(mper, vkf_vk_rows_fit(g->res, budget));
    }
    mper = vkf_vk_min64(mper, (int64_t)c->max_wg_count[2] * tm);
    if (mper > (int64_t)tm) mper = mper / tm * tm;
    int n_out = g->swiglu ? 1 : g->n_mats;
    for (int64_t m0 = 0; m0 < M; m0 += mper) {
        int64_t mc = vkf_vk_min64(mper, M - m0);
        for (int64_t n0 = 0; n0 < w0->rows; n0 += nper) {
            int64_t nc = vkf_vk_min64(nper, w0->rows - n0);
            vkf_vk_win win[6];
            vkf_pc_mm pc;
            memset(&pc, 0, sizeof pc);
            /* outputs: one storage window over rows m0.. of every output (columns n0.. when plain)
             */
            uint64_t dlo = UINT64_MAX, dhi = 0;
            for (int i = 0; i < n_out; i++) {
                const vkf_tensor *d = g->d[i];
                uint64_t sb = vkf_vk_stride_bytes(d), base = d->buf->offset + d->offset;
                uint64_t lo = base + (uint64_t)m0 * sb + (plain ? (uint64_t)n0 * 4 : 0);
                uint64_t hi = base + (uint64_t)(m0 + mc - 1) * sb +
                              (plain ? (uint64_t)(n0 + nc) : (uint64_t)d->cols) * 4;
                if (lo < dlo) dlo = lo;
                if (hi > dhi) dhi = hi;
            }
            VKF_TRY(vkf_vk_window_block(r, d0->buf->block, dlo, dhi, 1, 0, &win[0]));
            /* element offsets of each output inside the window (rows m0.., column 0 of the chunk)
             */
            uint32_t doff[3] = {0, 0, 0};
            for (int i = 0; i < n_out; i++) {
                const vkf_tensor *d = g->d[i];
                uint64_t at = d->buf->offset + d->offset + (uint64_t)m0 * vkf_vk_stride_bytes(d) +
                              (plain ? (uint64_t)n0 * 4 : 0);
                uint64_t rel = at - win[0].off;
                if (rel % 4)
                    return vkf_error(VKF_ERROR_INTERNAL, "matmul %s: output offset not a float",
                                     d->name);
                doff[i] = (uint32_t)(rel / 4);
            }
            VKF_TRY(vkf_vk_rows_texwin(r, a, m0, mc, &win[1]));
            if (win[1].delta % 16)
                return vkf_error(VKF_ERROR_INTERNAL,
                                 "matmul %s: activation window not texel aligned", d0->name);
            pc.a_off = (uint32_t)(win[1].delta / 4);
            /* weights: one texel window over rows n0.. of every matrix */
            uint64_t wlo = UINT64_MAX, whi = 0;
            for (int i = 0; i < g->n_mats; i++) {
                const vkf_tensor *w = g->w[i];
                uint64_t sb = vkf_vk_stride_bytes(w), base = w->buf->offset + w->offset;
                uint64_t lo = base + (plain ? (uint64_t)n0 * sb : 0);
                uint64_t hi =
                    base + (uint64_t)((plain ? n0 + nc : w->rows) - 1) * sb + vkf_vk_row_bytes(w);
                if (lo < wlo) wlo = lo;
                if (hi > whi) whi = hi;
            }
            VKF_TRY(vkf_vk_window_block(r, w0->buf->block, wlo, whi, 0, 1, &win[2]));
            uint32_t wboff[3] = {0, 0, 0};
            for (int i = 0; i < g->n_mats; i++) {
                const vkf_tensor *w = g->w[i];
                wboff[i] =
                    (uint32_t)(w->buf->offset + w->offset +
                               (plain ? (uint64_t)n0 * vkf_vk_stride_bytes(w) : 0) - win[2].off);
                if ((align16 || rs_ch) && wboff[i] % 16)
                    return vkf_error(VKF_ERROR_INTERNAL,
                                     "matmul %s: weight rows not on a texel in their window",
                                     w->name);
            }
            win[3] = win[4] = win[0];
            win[3].write = win[4].write = 0;
            win[5] = win[1];
            if (g->bias[0] && plain) { /* columns n0.. of the one bias */
                const vkf_tensor *b = g->bias[0];
                uint64_t blo = b->offset + (uint64_t)n0 * 4, bhi = blo + (uint64_t)nc * 4;
                VKF_TRY(vkf_vk_window(r, b->buf, blo, bhi, 0, &win[3]));
                VKF_TRY(vkf_vk_elem_off(&win[3], b, &pc.b_off));
                pc.flags |= VKF_MM_BIAS;
            } else if (g->bias[0]) { /* every matrix's bias, whole, in one window of their block */
                uint64_t blo, bhi;
                vkf_vk_tensors_span(g->bias, g->n_mats, &blo, &bhi);
                VKF_TRY(vkf_vk_window_block(r, g->bias[0]->buf->block, blo, bhi, 0, 0, &win[3]));
                uint32_t *bo[3] = {&pc.b_off, &pc.b_off1, &pc.b_off2};
                for (int i = 0; i < g->n_mats; i++)
                    *bo[i] =
                        (uint32_t)((g->bias[i]->buf->offset + g->bias[i]->offset - win[3].off) / 4);
                pc.flags |= VKF_MM_BIAS;
            }
            if (g->res) {
                const vkf_tensor *res = g->res;
                uint64_t rsb = vkf_vk_stride_bytes(res);
                uint64_t rlo = res->offset + (uint64_t)m0 * rsb + (uint64_t)n0 * 4;
                uint64_t rhi =
                    res->offset + (uint64_t)(m0 + mc - 1) * rsb + (uint64_t)(n0 + nc) * 4;
                VKF_TRY(vkf_vk_window(r, res->buf, rlo, rhi, 0, &win[4]));
                VKF_TRY(vkf_vk_elem_off(&win[4], res, &pc.r_off));
                pc.r_stride = (uint32_t)res->row_stride;
                pc.flags |= VKF_MM_RESIDUAL;
            }
            if (g->norm_w) {
                VKF_TRY(vkf_vk_rows_texwin(r, g->norm_w, 0, 1, &win[5]));
                pc.g_off = (uint32_t)(win[5].delta / 4);
                pc.eps = g->eps;
            }
            pc.M = (uint32_t)mc;
            pc.N = (uint32_t)nc;
            pc.K = (uint32_t)K;
            pc.a_stride = (uint32_t)a->row_stride;
            pc.w_boff = wboff[0];
            pc.w_bstride = (uint32_t)vkf_vk_stride_bytes(w0);
            pc.d_off = doff[0];
            pc.d_stride = (uint32_t)d0->row_stride;
            pc.n_mats = (uint32_t)g->n_mats;
            uint64_t rows = ((uint64_t)nc + R - 1) / R * R;
            if (g->n_mats > 1) {
                pc.N1 = (uint32_t)g->w[1]->rows;
                pc.w_boff1 = wboff[1];
                if (!g->swiglu) {
                    pc.d_off1 = doff[1];
                    pc.d_stride1 = (uint32_t)g->d[1]->row_stride;
                    rows += ((uint64_t)pc.N1 + R - 1) / R * R;
                }
            }
            if (g->n_mats > 2) {
                pc.N2 = (uint32_t)g->w[2]->rows;
                pc.w_boff2 = wboff[2];
                pc.d_off2 = doff[2];
                pc.d_stride2 = (uint32_t)g->d[2]->row_stride;
                rows += ((uint64_t)pc.N2 + R - 1) / R * R;
            }
            uint32_t gx, gy;
            vkf_vk_mm_grid(c, &cfg, R, rows, &gx, &gy);
            uint32_t gz = (uint32_t)(((uint64_t)mc + tm - 1) / tm);
            VKF_TRY(vkf_vk_dispatch(r, pl, win, 6, &pc, sizeof pc, gx, gy, gz));
        }
    }
    return VKF_OK;
}

/* ---------------------------------------------------------------- matmul */

#define VKF_VK_MV_MAXM 8
#define VKF_VK_MV_WG 64
#define VKF_VK_MV_NOUT 4
#define VKF_VK_RL_WG 32 /* rows per workgroup of the ROWLANE matvec */

/* The cooperative-matrix kernel (shaders/matmul_coopmat.comp) for weights w and depth K: its
 * defines, workgroup size and output tile, or 0 where it cannot run. It reads each weight row in
 * units of at most 32 elements (W_SMALL), so K must be a multiple of that unit, and rows must
 * start where the unit's reads may (4-byte words for the 2-byte float types). The workgroup has
 * WSM x WSN = 2 x 2 subgroup tiles of SM x SN matrices; shared memory: activations hi and lo and
 * weights hi (and lo, but for F16) as f16 in BK + 8 padded rows, and one f32 matrix per
 * subgroup. */
static int vkf_vk_coopmat_defs(const vkf_vk_backend *vb, const vkf_tensor *w, int64_t K, char *defs,
                               size_t n_defs, uint32_t *wg, uint32_t *bm, uint32_t *bn) {
    const vkf_vk_caps *c = &vb->caps;
    int64_t unit = vkf_vk_wunit(w->dtype);
    if (unit > 32) unit = 32;
    int two_byte = w->dtype == VKF_DTYPE_F16 || w->dtype == VKF_DTYPE_BF16;
    if (K % unit || (two_byte && ((w->buf->offset + w->offset) % 4 || w->row_stride % 2))) return 0;
    uint32_t cm_m = c->coopmat_m, cm_n = c->coopmat_n, cm_k = c->coopmat_k;
    uint32_t sg = c->subgroup_size, nsg = 4, bk = 2 * cm_k, bkp = bk + 8;
    uint32_t halves_b = w->dtype == VKF_DTYPE_F16 ? 1 : 2;
    uint32_t sm = 2;
    for (;; sm = 1) {
        uint64_t shared = 2ull * (2 * 2 * sm * cm_m + halves_b * 2 * sm * cm_n) * bkp +
                          4ull * nsg * cm_m * cm_n + 16;
        if (c->coopmat_kind == VKF_VK_COOPMAT_EMU) /* its accumulators */
            shared += 4ull * nsg * sm * sm * (c->subgroup_max / sg) * cm_m * cm_n;
        if (shared <= c->max_shared) break;
        if (sm == 1) return 0;
    }
    if (nsg * sg > c->max_wg_invocations || bk % unit || (cm_m * cm_n) % sg) return 0;
    uint32_t tps = (c->subgroup_max + sg - 1) / sg;
    if (tps < 1) tps = 1;
    if (c->coopmat_kind == VKF_VK_COOPMAT_EMU) {
        /* llvmpipe stops an invocation's loops after 65535 iterations in all (the shader's
         * note): bound them, counted generously (a unit's inner loops as if not unrolled) */
        uint64_t wgn = (uint64_t)nsg * sg, bmn = 2ull * sm * cm_m;
        uint64_t per_slice = (bmn * bk + wgn - 1) / wgn + 2 +
                             (bmn * (bk / unit) + wgn - 1) / wgn * (1 + (uint64_t)unit) +
                             2ull * sm * sm * 3 * (cm_m * cm_n / sg + 1) + 8;
        if ((uint64_t)(K + bk - 1) / bk * per_slice > 50000) return 0;
    }
    const char *kind = c->coopmat_kind == VKF_VK_COOPMAT_NV    ? "COOPMAT_NV=1"
                       : c->coopmat_kind == VKF_VK_COOPMAT_EMU ? "COOPMAT_EMU=1"
                                                               : "COOPMAT_KHR=1";
    char buf[192]; /* defs stays the tiled kernel's unless this one can run */
    int len = snprintf(buf, sizeof buf,
                       "%s;WTYPE=%d;W_SMALL=1;CM_M=%u;CM_N=%u;CM_K=%u;SM=%u;SN=%u;TPS=%u;SGS=%u",
                       kind, vkf_vk_wtype(w->dtype), cm_m, cm_n, cm_k, sm, sm, tps, sg);
    if (len < 0 || (size_t)len >= n_defs) return 0;
    memcpy(defs, buf, (size_t)len + 1);
    *wg = nsg * sg;
    *bm = 2 * sm * cm_m;
    *bn = 2 * sm * cm_n;
    return 1;
}

/* the tuner is timing a tiled variant: run it even where ROWLANE would stand in */
static int vb_tiled_forced(const vkf_vk_backend *vb) { return vb->tune_force != NULL; }

/* a [M,K] F32, w [N,K] any weight type, optional bias [1,N]; dst [M,N].
 * Variants (DESIGN 6, each with an env off switch):
 *   FAST (VKF_NO_FAST_MATVEC=1 turns off): 16-byte loads, whole quant blocks, when aligned;
 *   ROWLANE on CPU devices (VKF_NO_ROWLANE=1): one weight row per SIMD lane, any M;
 *   else split-K matrix-vector for M <= 8 and the shared-memory tiled kernel for M > 8. */
vkf_status vkf_vk_op_matmul(vkf_vk_rec *r, const vkf_node *n) {
    const vkf_tensor *d = n->dst, *a = n->src[0], *w = n->src[1], *bias = n->src[2];
    if (!vkf_vk_weight_ok(w->dtype))
        return vkf_error(VKF_ERROR_UNSUPPORTED, "matmul: weight %s has dtype %s", w->name,
                         vkf_dtype_name(w->dtype));
    int64_t M = a->rows, N = w->rows, K = a->cols;
    vkf_vk_mm_cfg cfg;
    VKF_TRY(vkf_vk_tune_matmul(r->vb, M, N, K, w->dtype, &cfg));
    if (cfg.kind == VKF_VK_MM_TEXEL) {
        vkf_vk_mm_group grp = {.a = a, .w = {w}, .d = {d}, .n_mats = 1, .bias = {bias}};
        if (vkf_vk_mm_group_ok(r, &grp, NULL)) return vkf_vk_mm_group_record(r, &grp);
    }
    const vkf_vk_caps *c = &r->vb->caps;
    uint64_t budget = vkf_vk_window_budget(r->vb);
    int wt = vkf_vk_wtype(w->dtype);
    int matvec = M <= VKF_VK_MV_MAXM;
    int mv_m = (int)(M < VKF_VK_MV_MAXM ? M : VKF_VK_MV_MAXM);
    int quant = vkf_vk_is_quant(w->dtype);
    int64_t unit = vkf_vk_wunit(w->dtype);
    int fast_ok = K % unit == 0 && (M == 1 || a->row_stride % 4 == 0) && !r->vb->sw.no_fast_matvec;
    /* ROWLANE stands in for the texel kernel on CPU devices when that cannot run; a tiled
     * kernel chosen explicitly (tuning) is used as chosen */
    int rowlane = fast_ok && c->type == VK_PHYSICAL_DEVICE_TYPE_CPU && !r->vb->sw.no_rowlane &&
                  !(cfg.kind == VKF_VK_MM_TILED && !matvec && vb_tiled_forced(r->vb));
    if (!matvec && !rowlane) fast_ok = 0;

    /* the general pipeline (any alignment) */
    char defs[192];
    uint32_t spec[4];
    int n_spec;
    uint32_t bm = cfg.bm ? cfg.bm : 64, bn = cfg.bn ? cfg.bn : 64, bk = cfg.bk ? cfg.bk : 16;
    uint32_t tt = cfg.tt ? cfg.tt : 4;
    if (matvec) {
        snprintf(defs, sizeof defs, "WTYPE=%d;MATVEC=1;MV_M=%d;NOUT=%du", wt, mv_m, VKF_VK_MV_NOUT);
        spec[0] = VKF_VK_MV_WG;
        n_spec = 1;
    } else {
        /* 2*BK*(BM+BN) floats of shared memory, plus slack */
        if (c->max_shared < 2 * bk * (bm + bn) * 4 + 1024 ||
            (bm / tt) * (bn / tt) > c->max_wg_invocations || bm % tt || bn % tt) {
            bm = bn = 32;
            tt = 4;
        }
        snprintf(defs, sizeof defs, "WTYPE=%d;TT=%u", wt, tt);
        spec[0] = (bm / tt) * (bn / tt);
        spec[1] = bm;
        spec[2] = bn;
        spec[3] = bk;
        n_spec = 4;
    }
    vkf_vk_pipeline *pl, *pl_fast = NULL;
    /* cooperative matrices for prefill on allow-listed devices (vk_device.c) */
    int coop = !matvec && c->coopmat_use && !vb_tiled_forced(r->vb) &&
               vkf_vk_coopmat_defs(r->vb, w, K, defs, sizeof defs, &spec[0], &bm, &bn);
    if (coop) {
        n_spec = 1;
        fast_ok = rowlane = 0;
    }
    VKF_TRY(vkf_vk_pipe(r, coop ? "matmul_coopmat" : "matmul", defs, spec, n_spec, &pl));
    uint32_t fast_wg = rowlane ? VKF_VK_RL_WG : VKF_VK_MV_WG;
    if (fast_ok) {
        char fdefs[128];
        snprintf(fdefs, sizeof fdefs, "WTYPE=%d;MATVEC=1;MV_M=%d;NOUT=%du;FAST=1%s", wt, mv_m,
                 VKF_VK_MV_NOUT, rowlane ? ";ROWLANE=1" : "");
        VKF_TRY(vkf_vk_pipe(r, "matmul", fdefs, &fast_wg, 1, &pl_fast));
    }

    /* M chunks bound a and dst; N chunks bound w, bias and dst columns */
    int64_t mper = vkf_vk_min64(vkf_vk_rows_fit(a, budget), vkf_vk_rows_fit(d, budget));
    int64_t nper = vkf_vk_rows_fit(w, budget);
    if (mper == 0) return vkf_vk_fit_error(r, vkf_vk_rows_fit(a, budget) == 0 ? a : d);
    if (nper == 0) return vkf_vk_fit_error(r, w);
    nper = vkf_vk_min64(nper, (int64_t)c->max_wg_count[0] * c->max_wg_count[1] * VKF_VK_MV_NOUT);
    mper = vkf_vk_min64(mper, (int64_t)c->max_wg_count[2] * VKF_VK_MV_MAXM);
    for (int64_t m0 = 0; m0 < M; m0 += mper) {
        int64_t mc = vkf_vk_min64(mper, M - m0);
        for (int64_t n0 = 0; n0 < N; n0 += nper) {
            int64_t nc = vkf_vk_min64(nper, N - n0);
            vkf_vk_win win[4];
            vkf_pc_matmul pc;
            memset(&pc, 0, sizeof pc);
            /* dst: rows m0.., columns n0..n0+nc */
            uint64_t dsb = vkf_vk_stride_bytes(d);
            uint64_t dlo = d->offset + (uint64_t)m0 * dsb + (uint64_t)n0 * 4;
            uint64_t dhi = d->offset + (uint64_t)(m0 + mc - 1) * dsb + (uint64_t)(n0 + nc) * 4;
            VKF_TRY(vkf_vk_window(r, d->buf, dlo, dhi, 1, &win[0]));
            VKF_TRY(vkf_vk_elem_off(&win[0], d, &pc.d_off));
            VKF_TRY(vkf_vk_rows_win(r, a, m0, mc, 0, &win[1]));
            VKF_TRY(vkf_vk_elem_off(&win[1], a, &pc.a_off));
            VKF_TRY(vkf_vk_rows_win(r, w, n0, nc, 0, &win[2]));
            VKF_TRY(vkf_vk_weight_off(&win[2], w, &pc.w_boff));
            win[3] = win[1];
            if (bias) {
                uint64_t blo = bias->offset + (uint64_t)n0 * 4, bhi = blo + (uint64_t)nc * 4;
                VKF_TRY(vkf_vk_window(r, bias->buf, blo, bhi, 0, &win[3]));
                VKF_TRY(vkf_vk_elem_off(&win[3], bias, &pc.b_off));
                pc.has_bias = 1;
            }
            pc.M = (uint32_t)mc;
            pc.N = (uint32_t)nc;
            pc.K = (uint32_t)K;
            pc.a_stride = (uint32_t)a->row_stride;
            pc.w_bstride = (uint32_t)vkf_vk_stride_bytes(w);
            pc.d_stride = (uint32_t)d->row_stride;
            int fast = pl_fast && pc.a_off % 4 == 0 &&
                       (quant ? pc.w_boff % vkf_vk_walign(w->dtype) == 0
                              : pc.w_boff % 16 == 0 && pc.w_bstride % 16 == 0);
            uint32_t gx, gy, gz = 1;
            if (fast || matvec) {
                uint64_t per_group = fast && rowlane ? VKF_VK_RL_WG : VKF_VK_MV_NOUT;
                uint64_t groups = ((uint64_t)nc + per_group - 1) / per_group;
                gx = (uint32_t)(groups < c->max_wg_count[0] ? groups : c->max_wg_count[0]);
                gy = (uint32_t)((groups + gx - 1) / gx);
                if (fast && rowlane) gz = (uint32_t)((mc + VKF_VK_MV_MAXM - 1) / VKF_VK_MV_MAXM);
            } else {
                gx = (uint32_t)((nc + bn - 1) / bn);
                gy = (uint32_t)((mc + bm - 1) / bm);
                if (gy > c->max_wg_count[1] || gx > c->max_wg_count[0])
                    return vkf_error(VKF_ERROR_UNSUPPORTED,
                                     "matmul %s: %lld x %lld output tiles exceed "
                                     "the workgroup count limit",
                                     d->name, (long long)gy, (long long)gx);
            }
            VKF_TRY(vkf_vk_dispatch(r, fast ? pl_fast : pl, win, 4, &pc, sizeof pc, gx, gy, gz));
        }
    }
    return VKF_OK;
}
