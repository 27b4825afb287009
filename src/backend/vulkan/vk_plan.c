/* The planner: every kernel choice of the Vulkan backend, from the device's capabilities, the
 * switches, the tuning table (vk_tune.c) and the decode kernel's rules for CPU drivers
 * (vk_rowseq.c), per op family. What each choice buys is measured in bench/RESULTS.md. */
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/dtype.h"
#include "core/quant_dot.h"
#include "core/wtype.h"
#include "vkf_abi.h"

int vkf_vk_plan_cpu(const vkf_vk_backend *vb) {
    return vb->caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU && !vb->xp.gpu_table;
}

int vkf_vk_plan_fusion(const vkf_vk_backend *vb) { return !vb->sw.no_fuse; }

static vkf_vk_kplan vkf_vk_kp(vkf_vk_kernel_id id, uint32_t wg) {
    vkf_vk_kplan k = vkf_vk_kplan_of(id);
    k.spec[0] = wg;
    k.n_spec = 1;
    return k;
}

/* the device runs subgroup kernels on texels */
static int vkf_vk_texel_subgroups(const vkf_vk_caps *c) {
    return c->texel && c->has_subgroup && c->subgroup_min;
}

/* ---------------------------------------------------------------- element-wise */

vkf_status vkf_vk_plan_elt(const vkf_vk_backend *vb, const vkf_node *n, vkf_vk_elt_plan *p) {
    memset(p, 0, sizeof *p);
    vkf_vk_kplan k;
    switch (n->op) {
    case VKF_OP_SCALE:
        k = vkf_vk_kp(VKF_VK_K_SCALE, VKF_VK_ELT_WG);
        p->k = p->k1 = k;
        p->k.v.scale.vec4 = 1;
        break;
    case VKF_OP_ADD:
    case VKF_OP_MUL:
        k = vkf_vk_kp(VKF_VK_K_BINARY, VKF_VK_ELT_WG);
        k.v.binary.op_mul = n->op == VKF_OP_MUL;
        p->k = p->k1 = k;
        p->k.v.binary.vec4 = 1;
        break;
    case VKF_OP_UNARY:
        k = vkf_vk_kp(VKF_VK_K_UNARY, VKF_VK_ELT_WG);
        k.v.unary.act = n->p.unary.act;
        p->k = p->k1 = k;
        p->k.v.unary.vec4 = 1;
        break;
    case VKF_OP_SWIGLU:
        k = vkf_vk_kp(VKF_VK_K_SWIGLU, VKF_VK_ELT_WG);
        k.v.swiglu.gelu = n->p.glu.gelu ? 1 : 0;
        k.v.swiglu.oai = n->p.glu.oai ? 1 : 0; /* alpha and limit in the push constants */
        p->k = p->k1 = k;
        p->k.v.swiglu.vec4 = 1;
        break;
    default: return vkf_error(VKF_ERROR_INTERNAL, "eltwise: op %d", (int)n->op);
    }
    p->vec4_ok = !vb->sw.no_vec4;
    return VKF_OK;
}

/* ---------------------------------------------------------------- rows */

/* workgroups of the texel row kernels for rows rows, one subgroup a row: sized for the largest
 * subgroup size, which gives a workgroup the fewest rows */
static uint64_t vkf_vk_row_groups(const vkf_vk_caps *c, uint64_t rows) {
    uint32_t smax = c->subgroup_max > c->subgroup_min ? c->subgroup_max : c->subgroup_min;
    return (rows * smax + VKF_VK_NORM_TEXEL_WG - 1) / VKF_VK_NORM_TEXEL_WG;
}

/* norm_texel.comp needs texels and subgroups, rows of whole texels that start on one, and every
 * row of x, dst (and res) in one texel window */
static int vkf_vk_norm_texel_ok(const vkf_vk_backend *vb, const vkf_node *n, const vkf_tensor *res,
                                const vkf_tensor *d) {
    const vkf_tensor *x = n->src[0], *w = n->src[1], *b = n->src[2];
    if (!vkf_vk_texel_subgroups(&vb->caps) || vb->xp.no_texel_norm) return 0;
    if (x->cols % 4 || x->offset % 16 || d->offset % 16 || x->row_stride % 4 || d->row_stride % 4)
        return 0;
    if ((w && w->offset % 16) || (b && b->offset % 16)) return 0;
    uint64_t tb = vkf_vk_texel_budget(vb) - 32;
    if (vkf_vk_rows_fit(x, tb) < x->rows || vkf_vk_rows_fit(d, tb) < x->rows) return 0;
    return !res || (res->offset % 16 == 0 && res->row_stride % 4 == 0 &&
                    vkf_vk_rows_fit(res, tb) >= x->rows);
}

void vkf_vk_plan_norm(const vkf_vk_backend *vb, const vkf_node *n, const vkf_tensor *res,
                      const vkf_tensor *dst, vkf_vk_rows_plan *p) {
    const vkf_vk_caps *c = &vb->caps;
    const vkf_tensor *x = n->src[0];
    memset(p, 0, sizeof *p);
    int rms = n->op == VKF_OP_RMSNORM;
    if (vkf_vk_norm_texel_ok(vb, n, res, dst)) {
        uint32_t rows_per_group = VKF_VK_NORM_TEXEL_WG / c->subgroup_min;
        uint64_t groups = ((uint64_t)x->rows + rows_per_group - 1) / rows_per_group;
        if (c->subgroup_max > c->subgroup_min) groups = vkf_vk_row_groups(c, (uint64_t)x->rows);
        if (groups <= c->max_wg_count[0]) {
            p->texel = 1;
            p->groups = groups;
            p->k = vkf_vk_kp(VKF_VK_K_NORM_TEXEL, VKF_VK_NORM_TEXEL_WG);
            p->k.v.norm_texel.rms = rms;
            p->k.v.norm_texel.res = res != NULL;
            return;
        }
    }
    p->k = vkf_vk_kp(VKF_VK_K_NORM, VKF_VK_ROW_WG);
    p->k.v.norm.rms = rms;
}

/* [lo, hi): the absolute bytes tensors a and b span in their (one) block */
static int vkf_vk_pair_span(const vkf_tensor *a, const vkf_tensor *b, uint64_t *lo, uint64_t *hi) {
    if (!a->buf || !b->buf || a->buf->block != b->buf->block) return 0;
    const vkf_tensor *t[2] = {a, b};
    vkf_vk_tensors_span(t, 2, lo, hi);
    return 1;
}

int vkf_vk_plan_norm_pair(const vkf_vk_backend *vb, const vkf_node *n1, const vkf_node *n2,
                          vkf_vk_rows_plan *p) {
    const vkf_tensor *x1 = n1->src[0], *x2 = n2->src[0], *d1 = n1->dst, *d2 = n2->dst;
    const vkf_tensor *w1 = n1->src[1], *w2 = n2->src[1];
    const vkf_vk_caps *c = &vb->caps;
    memset(p, 0, sizeof *p);
    if (!vkf_vk_texel_subgroups(c) || vb->xp.no_texel_norm) return 0;
    if (n1->op != VKF_OP_RMSNORM || n2->op != VKF_OP_RMSNORM || n1->src[2] || n2->src[2] || !w1 ||
        !w2 || n1->p.norm.eps != n2->p.norm.eps || x1->cols != x2->cols || x1->cols % 4 ||
        x1->row_stride != x2->row_stride || d1->row_stride != d2->row_stride ||
        x1->row_stride % 4 || d1->row_stride % 4 || w1->cols != x1->cols || w2->cols != x1->cols ||
        x1->dtype != VKF_DTYPE_F32 || x2->dtype != VKF_DTYPE_F32 || w1->dtype != VKF_DTYPE_F32 ||
        w2->dtype != VKF_DTYPE_F32)
        return 0;
    uint64_t xlo, xhi, dlo, dhi, wlo, whi, tb = vkf_vk_texel_budget(vb) - 32;
    if (!vkf_vk_pair_span(x1, x2, &xlo, &xhi) || !vkf_vk_pair_span(d1, d2, &dlo, &dhi) ||
        !vkf_vk_pair_span(w1, w2, &wlo, &whi) || xhi - xlo > tb || dhi - dlo > tb || whi - wlo > tb)
        return 0;
    uint64_t groups = vkf_vk_row_groups(c, (uint64_t)x1->rows + (uint64_t)x2->rows);
    if (groups > c->max_wg_count[0]) return 0;
    p->texel = 1;
    p->groups = groups;
    p->k = vkf_vk_kp(VKF_VK_K_NORM_TEXEL, VKF_VK_NORM_TEXEL_WG);
    p->k.v.norm_texel.rms = 1;
    p->k.v.norm_texel.pair = 1;
    return 1;
}

void vkf_vk_plan_softmax(const vkf_vk_backend *vb, const vkf_node *n, vkf_vk_rows_plan *p) {
    const vkf_tensor *d = n->dst, *x = n->src[0];
    const vkf_tensor *m = n->op == VKF_OP_SOFTMAX ? n->src[1] : NULL;
    const vkf_vk_caps *c = &vb->caps;
    int log = n->op == VKF_OP_LOG_SOFTMAX;
    memset(p, 0, sizeof *p);
    uint64_t tb = vkf_vk_texel_budget(vb) - 32;
    int ok = vkf_vk_texel_subgroups(c) && !vb->xp.no_texel_softmax && x->cols % 4 == 0 &&
             x->offset % 16 == 0 && d->offset % 16 == 0 && x->row_stride % 4 == 0 &&
             d->row_stride % 4 == 0 && (!m || (m->offset % 16 == 0 && m->row_stride % 4 == 0));
    ok = ok && vkf_vk_rows_fit(x, tb) >= x->rows &&
         vkf_vk_rows_fit(d, vkf_vk_window_budget(vb)) >= x->rows &&
         (!m || vkf_vk_rows_fit(m, tb) >= x->rows);
    uint64_t groups = ok ? vkf_vk_row_groups(c, (uint64_t)x->rows) : 0;
    if (ok && groups <= c->max_wg_count[0]) {
        p->texel = 1;
        p->groups = groups;
        p->k = vkf_vk_kp(VKF_VK_K_SOFTMAX_TEXEL, VKF_VK_NORM_TEXEL_WG);
        p->k.v.softmax_texel.log = log;
        return;
    }
    p->k = vkf_vk_kp(VKF_VK_K_SOFTMAX, VKF_VK_ROW_WG);
    p->k.v.softmax.log = log;
}

/* ---------------------------------------------------------------- one kernel per op */

vkf_vk_kplan vkf_vk_plan_simple(const vkf_vk_backend *vb, const vkf_node *n) {
    (void)vb;
    vkf_vk_kplan k;
    switch (n->op) {
    case VKF_OP_ARGMAX: return vkf_vk_kp(VKF_VK_K_ARGMAX, VKF_VK_ROW_WG);
    case VKF_OP_TOPK: return vkf_vk_kp(VKF_VK_K_TOPK, VKF_VK_ROW_WG);
    case VKF_OP_POOL: return vkf_vk_kp(VKF_VK_K_POOL, VKF_VK_ROW_WG);
    case VKF_OP_EMBED:
        k = vkf_vk_kp(VKF_VK_K_EMBED, VKF_VK_ELT_WG);
        k.v.embed.wtype = vkf_vk_wtype(n->src[0]->dtype);
        return k;
    case VKF_OP_ROPE: return vkf_vk_kp(VKF_VK_K_ROPE, VKF_VK_ELT_WG);
    case VKF_OP_ADD_POS: return vkf_vk_kp(VKF_VK_K_ADD_POS, VKF_VK_ELT_WG);
    case VKF_OP_MUL_MAT_ID:
        k = vkf_vk_kp(VKF_VK_K_MUL_MAT_ID, VKF_VK_ELT_WG);
        k.v.mul_mat_id.wtype = vkf_vk_wtype(n->src[1]->dtype);
        return k;
    case VKF_OP_MOE_WEIGHTS: return vkf_vk_kp(VKF_VK_K_MOE_WEIGHTS, VKF_VK_ELT_WG);
    case VKF_OP_MOE_SUM: return vkf_vk_kp(VKF_VK_K_MOE_SUM, VKF_VK_ELT_WG);
    case VKF_OP_MOE_GROUP_MASK: return vkf_vk_kp(VKF_VK_K_MOE_GROUP_MASK, 64);
    default: /* COPY_ROWS: into an F16 KV cache as pairs of halves; bf16 and the block types
                quantized (copy_rows.comp's KVQ) */
        k = vkf_vk_kp(VKF_VK_K_COPY_ROWS, VKF_VK_ELT_WG);
        k.v.copy_rows.f16 = n->dst->dtype == VKF_DTYPE_F16;
        k.v.copy_rows.kvq = vkf_vk_kvq(n->dst->dtype);
        return k;
    }
}

vkf_vk_kplan vkf_vk_plan_kv_store(const vkf_vk_backend *vb, int kv_f16) {
    (void)vb;
    vkf_vk_kplan k = vkf_vk_kp(VKF_VK_K_KV_STORE, 32);
    k.v.kv_store.kv_f16 = kv_f16 ? 1 : 0;
    return k;
}

/* ---------------------------------------------------------------- matmul */

/* The rows a choice of kernel is made for: M, or more while a graph of serve's batched step is
 * recorded (vkf_graph.plan_batch, one row per sequence). A step of fewer busy sequences then
 * runs the kernels a step of all of them runs, only over fewer rows, and each row is the same
 * arithmetic in both (test_serve_batch: bit for bit); kernels that sum a row in another order
 * for another row count (the kernel class of a tuning, the GPU route, integer dot products)
 * would otherwise make a sequence's logits depend on how many others are busy. The workgroup's
 * activation rows (TM) still follow M, so fewer rows cost less. ROWSEQ, the one-row kernel of
 * CPU drivers, is the exception: vkf_vk_plan_rowseq. */
static int64_t vkf_vk_plan_m(const vkf_vk_backend *vb, int64_t M) {
    return vb->plan_batch > M ? vb->plan_batch : M;
}

vkf_status vkf_vk_plan_mm_cfg(const vkf_vk_backend *vb, int64_t M, int64_t N, int64_t K,
                              vkf_dtype wtype, vkf_vk_mm_cfg *out) {
    M = vkf_vk_plan_m(vb, M);
    VKF_TRY(vkf_vk_tune_matmul(vb, M, N, K, wtype, out));
    if (vb->tune_force) return VKF_OK; /* the tuner times exactly this candidate */
    const vkf_switches_xp *xp = &vb->xp;
    uint64_t v;
    if ((v = xp->mm_r) > 0 && v <= 32) out->r = (uint32_t)v;
    if ((v = xp->mm_tm) > 0 && v <= 64) out->tm = (uint32_t)v;
    if ((v = xp->mm_wg) > 0 && v <= vb->caps.max_wg_invocations) out->wg = (uint32_t)v;
    if ((v = xp->mm_lanes) > 0) out->lanes = v == 1;
    if (xp->no_texel_matmul && out->kind == VKF_VK_MM_TEXEL) out->kind = VKF_VK_MM_TILED;
    /* VKF_MM_TILE=BMxBNxBKxTT: that tiled kernel for M > 8 (experiments) */
    unsigned bm = xp->mm_tile[0], bn = xp->mm_tile[1], bk = xp->mm_tile[2], tt = xp->mm_tile[3];
    if (M > 8 && (tt == 4 || tt == 8) && bm % tt == 0 && bn % tt == 0 && bk >= 4 && bk <= 64 &&
        bk % 4 == 0 && 2 * bk * (bm + bn) * 4 + 1024 <= vb->caps.max_shared &&
        (bm / tt) * (bn / tt) <= vb->caps.max_wg_invocations) {
        out->kind = VKF_VK_MM_TILED;
        out->bm = bm;
        out->bn = bn;
        out->bk = bk;
        out->tt = tt;
        out->wg = (bm / tt) * (bn / tt);
    }
    return VKF_OK;
}

/* rows of t span one texel window */
static int vkf_vk_texel_fits(const vkf_vk_backend *vb, const vkf_tensor *t) {
    return vkf_vk_rows_fit(t, vkf_vk_texel_budget(vb) - 32) >= t->rows;
}

/* t can be read as whole 16-byte texels of f32 (rows start 16-byte aligned, cols % 4 == 0) */
static int vkf_vk_f32_texel_ok(const vkf_tensor *t) {
    return t->dtype == VKF_DTYPE_F32 && t->offset % 16 == 0 && t->row_stride % 4 == 0 &&
           t->cols % 4 == 0;
}

/* the group's weights: one type and row length, one block, rows aligned for the texel reads */
static const char *vkf_vk_mm_weights_ok(const vkf_vk_mm_group *g) {
    const vkf_tensor *w0 = g->w[0];
    int quant = vkf_wtype_is_quant(w0->dtype);
    for (int i = 0; i < g->n_mats; i++) {
        const vkf_tensor *w = g->w[i];
        if (w->dtype != w0->dtype || w->cols != g->a->cols || !w->buf ||
            w->buf->block != w0->buf->block || vkf_vk_stride_bytes(w) != vkf_vk_stride_bytes(w0))
            return "weights differ";
        if (quant ? w->offset % vkf_vk_walign(w->dtype)
                  : (w->offset % 16 || vkf_vk_stride_bytes(w) % 16))
            return "weight alignment";
    }
    return NULL;
}

/* outputs in one block with the activations' rows; a norm weight of whole texels; biases F32
 * rows of each matrix's width, all or none, in one block (one window) */
static const char *vkf_vk_mm_operands_ok(const vkf_vk_mm_group *g) {
    int n_out = g->swiglu ? 1 : g->n_mats;
    for (int i = 0; i < n_out; i++)
        if (!g->d[i]->buf || g->d[i]->buf->block != g->d[0]->buf->block ||
            g->d[i]->rows != g->a->rows)
            return "outputs differ";
    if (g->norm_w && !vkf_vk_f32_texel_ok(g->norm_w)) return "norm weight alignment";
    for (int i = 0; i < g->n_mats; i++) {
        const vkf_tensor *b = g->bias[i];
        if (!b != !g->bias[0] || (b && (g->swiglu || b->dtype != VKF_DTYPE_F32 || b->rows != 1 ||
                                        b->cols != g->w[i]->rows || !b->buf ||
                                        b->buf->block != g->bias[0]->buf->block || b->offset % 4)))
            return "biases";
    }
    return NULL;
}

/* a fused group binds each operand set as one window */
static const char *vkf_vk_mm_windows_ok(const vkf_vk_backend *vb, const vkf_vk_mm_group *g) {
    int n_out = g->swiglu ? 1 : g->n_mats;
    uint64_t tb = vkf_vk_texel_budget(vb) - 32, sb = vkf_vk_window_budget(vb);
    uint64_t wlo, whi, dlo, dhi, blo = 0, bhi = 0;
    vkf_vk_tensors_span(g->w, g->n_mats, &wlo, &whi);
    vkf_vk_tensors_span(g->d, n_out, &dlo, &dhi);
    if (g->bias[0]) vkf_vk_tensors_span(g->bias, g->n_mats, &blo, &bhi);
    if (bhi - blo > sb) return "bias windows";
    if (whi - wlo > tb || dhi - dlo > sb || !vkf_vk_texel_fits(vb, g->a) ||
        (g->res && vkf_vk_rows_fit(g->res, sb) < g->res->rows))
        return "windows";
    if (g->a->rows > (int64_t)vb->caps.max_wg_count[2]) return "rows";
    return NULL;
}

int vkf_vk_plan_mm_group_ok(const vkf_vk_backend *vb, const vkf_vk_mm_group *g, const char **why) {
    const char *dummy;
    if (!why) why = &dummy;
    *why = NULL;
    if (!vb->caps.texel || !vb->caps.has_subgroup || vb->xp.no_texel_matmul) {
        *why = "no texels or subgroups";
        return 0;
    }
    const vkf_tensor *a = g->a, *w0 = g->w[0];
    int64_t K = a->cols;
    if (!vkf_vk_weight_ok(w0->dtype) || K % vkf_vk_wunit(w0->dtype) || a->offset % 16 ||
        a->row_stride % 4) {
        *why = "alignment";
        return 0;
    }
    /* the group kernel is the texel one: where the table or the tuner picks the tiled kernel
     * for this shape (GPU prefill), the ops run unfused on it (its config has no R/TM) */
    int64_t Ntot = 0;
    for (int i = 0; i < g->n_mats; i++)
        Ntot += g->w[i]->rows;
    vkf_vk_mm_cfg cfg;
    if (vkf_vk_plan_mm_cfg(vb, a->rows, Ntot, K, w0->dtype, &cfg) != VKF_OK ||
        cfg.kind != VKF_VK_MM_TEXEL || !cfg.r || !cfg.tm || !cfg.wg) {
        *why = "the tiled kernel serves this shape";
        return 0;
    }
    if ((*why = vkf_vk_mm_weights_ok(g)) || (*why = vkf_vk_mm_operands_ok(g))) return 0;
    if (g->n_mats == 1 && !g->swiglu && !g->norm_w) return 1; /* plain: chunked as needed */
    return !(*why = vkf_vk_mm_windows_ok(vb, g));
}

/* the quantized types whose blocks fill whole texels (Q4_K: 144 bytes, Q5_K: 176) */
static int vkf_vk_quant_bytes16(vkf_dtype t) {
    return vkf_wtype_is_quant(t) && vkf_dtype_block_bytes(t) % 16 == 0;
}

/* activation rows per workgroup: the configured count, or the next power of two >= M when M is
 * smaller (a few pipelines per variant, not one per prompt length: each costs a compile) */
static uint32_t vkf_vk_mm_tm(uint32_t tm_cfg, int64_t M) {
    uint32_t tm = tm_cfg;
    if ((int64_t)tm > M) {
        for (tm = 1; (int64_t)tm < M;)
            tm *= 2;
        if (tm > tm_cfg) tm = tm_cfg;
    }
    return tm;
}

/* The decode kernel's layout on CPU drivers (ROWSEQ, vk_rowseq.c): units per lane, rows a step,
 * rows per subgroup, chunks of whole-texel blocks, unit pairs; zero where it is not taken.
 * ROWSEQ is a one-row kernel: in serve's batched step (vkf_vk_plan_m) it is chosen as for one
 * row and, where taken, runs once per activation row (*row_each), so a lone sequence runs what
 * a one-slot server runs and a step of several the same arithmetic per row. */
static void vkf_vk_plan_rowseq(const vkf_vk_backend *vb, const vkf_vk_mm_group *g,
                               vkf_vk_mm_cfg *cfg, vkf_vk_matmul_texel_v *v, uint32_t *R,
                               int *row_each) {
    const vkf_vk_caps *c = &vb->caps;
    const vkf_tensor *w0 = g->w[0];
    int64_t M = vb->plan_batch > 0 ? 1 : g->a->rows, K = g->a->cols;
    *row_each = 0;
    int rs_p = 1;
    v->rowseq = vkf_vk_mm_rowseq(vb, cfg, M, K, w0->dtype, v->w_small, &rs_p);
    v->rs_p = rs_p;
    v->rs_ct = 1;
    if (!v->rowseq) return;
    *row_each = g->a->rows > 1;
    /* whole steps of rs_p rows */
    int64_t n[3];
    int n_rows = g->swiglu ? 1 : g->n_mats;
    for (int i = 0; i < n_rows; i++)
        n[i] = g->w[i]->rows;
    *R = cfg->r =
        vkf_vk_rowseq_rows(c, &vb->xp, cfg, n, n_rows, K, g->swiglu ? 2 : 1, (uint32_t)rs_p);
    int rs_ct = 1;
    v->rs_ch = vkf_vk_rowseq_chunk(c, &vb->xp, g, K, &rs_ct);
    v->rs_ct = rs_ct;
    v->rawp = !vb->xp.no_rawp;
    /* K-quant unit pairs share texels (RS_PAIRU in matmul_texel.comp): where taking the units in
     * pairs leaves a lane no more slots than taking them one by one (K = 2048, 6912, 8192; not
     * 5632: 12 slots instead of 11). VKF_NO_RS_PAIRU=1 turns it off. */
    int64_t wu = vkf_vk_wunit(w0->dtype), sgs = c->subgroup_size, wun = K / wu;
    v->rs_pairu = !v->rs_ch && rs_p == 1 && vkf_wtype_of(w0->dtype)->gpu_pairload && sgs &&
                  wun % 2 == 0 && 2 * ((wun + 2 * sgs - 1) / (2 * sgs)) == v->rowseq &&
                  !vb->xp.no_rs_pairu;
}

/* The integer-dot path for a group (docs/DESIGN.md, 'Precision'): the activations quantized to int8
 * blocks by quantize_q8.comp as ggml quantizes them for the weight type (Q8_0, Q8_1 or Q8_K: the
 * CPU backend's ggml-activation mode, the reference), then matmul_q8.comp. For quantized weights
 * and M <= 8 where K is a multiple of the activation block; the default where the table (GPUs with
 * shaderIntegerDotProduct: vk_tune.c) or `vkformer tune` chose it, VKF_NO_INT_DOT=1 or
 * VKF_INT_DOT=off turn it off, VKF_INT_DOT=on / plain force it (plain: without OpSDot). Returns 0
 * (not taken), 1 (OpSDot) or 2 (plain integer arithmetic: the device lacks the feature or the
 * switch asks); *qk gets the activation block. */
static int vkf_vk_plan_int_dot(const vkf_vk_backend *vb, const vkf_vk_mm_group *g,
                               const vkf_vk_mm_cfg *cfg, uint32_t *qk) {
    const vkf_switches *sw = &vb->sw;
    const vkf_switches_xp *xp = &vb->xp;
    const vkf_tensor *a = g->a, *w0 = g->w[0];
    vkf_act_type at = vkf_act_type_of(w0->dtype);
    if (!vkf_wtype_is_quant(w0->dtype) ||
        (at != VKF_ACT_Q8_0 && at != VKF_ACT_Q8_1 && at != VKF_ACT_Q8_K))
        return 0;
    *qk = at == VKF_ACT_Q8_K ? 256u : 32u;
    if (vkf_vk_plan_m(vb, a->rows) > VKF_VK_MV_MAXM || a->cols % *qk || cfg->lanes ||
        !vb->caps.has_subgroup)
        return 0;
    int on = vb->tune_force                         ? (int)cfg->int_dot
             : sw->no_int_dot || xp->int_dot == 3   ? 0
             : xp->int_dot == 1 || xp->int_dot == 2 ? 1
                                                    : cfg->int_dot && vb->caps.int_dot;
    if (!on) return 0;
    /* its windows are storage windows: the quantized rows, and a fused group's weights whole */
    uint64_t sb = vkf_vk_window_budget(vb), wlo, whi;
    if ((uint64_t)a->rows * (uint64_t)(a->cols / 32) * 48u > sb) return 0;
    vkf_vk_tensors_span(g->w, g->n_mats, &wlo, &whi);
    int plain = g->n_mats == 1 && !g->swiglu && !g->norm_w;
    if (!plain && whi - wlo > sb) return 0;
    return vb->caps.int_dot && xp->int_dot != 2 ? 1 : 2;
}

vkf_status vkf_vk_plan_mm_group(const vkf_vk_backend *vb, const vkf_vk_mm_group *g,
                                vkf_vk_mm_group_plan *p) {
    const vkf_tensor *a = g->a, *w0 = g->w[0];
    const vkf_vk_caps *c = &vb->caps;
    int64_t M = a->rows, K = a->cols, Ntot = 0;
    for (int i = 0; i < g->n_mats; i++)
        Ntot += g->w[i]->rows;
    vkf_vk_mm_cfg cfg;
    VKF_TRY(vkf_vk_plan_mm_cfg(vb, M, Ntot, K, w0->dtype, &cfg));
    memset(p, 0, sizeof *p);
    p->k = vkf_vk_kplan_of(VKF_VK_K_MATMUL_TEXEL);
    vkf_vk_matmul_texel_v *v = &p->k.v.matmul_texel;
    uint32_t R = cfg.r;
    if (g->swiglu && R > 1) R /= 2; /* two accumulator sets */
    uint32_t tm = vkf_vk_mm_tm(cfg.tm, M);
    /* 32-element units (W_SMALL) where a type's unit is larger: split-K over rows of few
     * 64-element units (K = 256: 4) would idle lanes; and with rows per lane (prefill on CPU
     * drivers) each lane holds TM activation units, half the registers with 32-element units:
     * 512x2048x2048, ms, 64 -> 32: Q4_K 85.4 -> 71.4, Q5_K 95.3 -> 85.4, Q6_K 111.0 -> 103.4,
     * Q3_K 126.6 -> 113.5, IQ4_XS 91.0 -> 85.6, Q2_K 79.4 -> 80.0; 32x2048x2048 Q4_K 8.0 -> 5.5
     * (bench/RESULTS.md). VKF_NO_LANES_SMALL=1 keeps the large units with rows per lane. */
    int64_t sg = c->subgroup_size ? c->subgroup_size : 32;
    v->w_small = vkf_vk_wunit(w0->dtype) > 32 &&
                 (cfg.lanes ? !vb->xp.no_lanes_small : K / vkf_vk_wunit(w0->dtype) < sg);
    uint32_t qk = 32;
    int idot = vkf_vk_plan_int_dot(vb, g, &cfg, &qk);
    if (idot) {
        vkf_vk_matmul_q8_v *q = &p->k.v.matmul_q8;
        p->k = vkf_vk_kplan_of(VKF_VK_K_MATMUL_Q8);
        q->wtype = vkf_vk_wtype(w0->dtype);
        q->swiglu = g->swiglu;
        q->act = g->act - 1;
        q->plain = idot == 2;
        /* Q4_K / Q5_K rows on 16 bytes: their 32-byte runs as 16-byte loads (as W_ALIGN16 of
         * matmul_texel.comp; VKF_NO_ALIGN16=1 turns both off) */
        q->align16 = vkf_vk_quant_bytes16(w0->dtype) && vkf_vk_stride_bytes(w0) % 16 == 0 &&
                     !vb->xp.no_align16;
        for (int i = 0; i < g->n_mats; i++)
            if ((g->w[i]->buf->offset + g->w[i]->offset) % 16) q->align16 = 0;
        p->aligned16 = q->align16;
        p->k.spec[0] = cfg.wg;
        p->k.spec[1] = R;
        p->k.spec[2] = tm;
        p->k.n_spec = 3;
        p->kq = vkf_vk_kp(VKF_VK_K_QUANTIZE_Q8, 64);
        p->kq.v.quantize_q8.qk = (int32_t)qk;
        p->kq.v.quantize_q8.norm = g->norm_w ? 1 : 0;
        p->wg = cfg.wg;
        p->R = R;
        p->tm = tm;
        p->int_dot = 1;
        p->qk = qk;
        p->ssbo = 1;
        return VKF_OK;
    }
    vkf_vk_plan_rowseq(vb, g, &cfg, v, &R, &p->row_each);
    if (v->rowseq) tm = 1;
    /* blocks of a multiple of 16 bytes in rows that all start on a texel (texel windows start on
     * 16 bytes at least, vkf_vk_window_block): the kernel reads them without realigning */
    v->align16 =
        vkf_vk_quant_bytes16(w0->dtype) && vkf_vk_stride_bytes(w0) % 16 == 0 && !vb->xp.no_align16;
    for (int i = 0; i < g->n_mats; i++)
        if ((g->w[i]->buf->offset + g->w[i]->offset) % 16) v->align16 = 0;
    v->wtype = vkf_vk_wtype(w0->dtype);
    v->norm = g->norm_w ? 1 : 0;
    v->swiglu = g->swiglu;
    v->act = g->act - 1;
    v->lanes = cfg.lanes ? 1 : 0;
    p->k.spec[0] = cfg.wg;
    p->k.spec[1] = R;
    p->k.spec[2] = tm;
    p->k.n_spec = 3;
    p->wg = cfg.wg;
    p->R = R;
    p->tm = tm;
    p->lanes = v->lanes;
    p->aligned16 = v->align16 || v->rs_ch;
    /* GPUs' decode (M <= 8, split-K): vector loads from storage buffers instead of texels
     * (W_SSBO), the general memory path GPU matrix-vector kernels read through (llama.cpp's
     * mul_mat_vec); CPU drivers keep texels (their gathers; shaders/matmul_texel.comp) */
    v->ssbo = p->ssbo = !vkf_vk_plan_cpu(vb) && vkf_vk_plan_m(vb, M) <= VKF_VK_MV_MAXM &&
                        !v->lanes && !vb->xp.no_ssbo_matvec;
    return VKF_OK;
}

/* The cooperative-matrix kernel (shaders/matmul_coopmat.comp) for weights w and depth K: its
 * plan, workgroup size and output tile, or 0 where it cannot run. It reads each weight row in
 * units of at most 32 elements (W_SMALL), so K must be a multiple of that unit, and rows must
 * start where the unit's reads may (4-byte words for the 2-byte float types). The workgroup has
 * WSM x WSN = 2 x 2 subgroup tiles of SM x SN matrices; shared memory: activations hi and lo and
 * weights hi (and lo, but for F16) as f16 in BK + 8 padded rows, and one f32 matrix per
 * subgroup. */
static int vkf_vk_plan_coopmat(const vkf_vk_backend *vb, const vkf_tensor *w, int64_t K,
                               vkf_vk_kplan *k, uint32_t *bm, uint32_t *bn) {
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
    *k = vkf_vk_kp(VKF_VK_K_MATMUL_COOPMAT, nsg * sg);
    vkf_vk_matmul_coopmat_v *v = &k->v.matmul_coopmat;
    v->nv = c->coopmat_kind == VKF_VK_COOPMAT_NV;
    /* KHR device, glslang without GL_KHR_cooperative_matrix: NV GLSL, SPIR-V rewritten */
    v->khr_spv = c->coopmat_kind == VKF_VK_COOPMAT_KHR && !vkf_vk_glslang_has_coopmat();
    v->emu = c->coopmat_kind == VKF_VK_COOPMAT_EMU;
    v->wtype = vkf_vk_wtype(w->dtype);
    v->w_small = 1;
    v->cm_m = (int32_t)cm_m;
    v->cm_n = (int32_t)cm_n;
    v->cm_k = (int32_t)cm_k;
    v->sm = v->sn = (int32_t)sm;
    v->tps = (int32_t)tps;
    v->sgs = (int32_t)sg;
    *bm = 2 * sm * cm_m;
    *bn = 2 * sm * cm_n;
    return 1;
}

/* matmul.comp's matrix-vector variant (FAST: 16-byte loads, whole blocks; ROWLANE: one weight
 * row per lane) */
static vkf_vk_kplan vkf_vk_matvec_kp(int wtype, int mv_m, int fast, int rowlane) {
    vkf_vk_kplan k = vkf_vk_kp(VKF_VK_K_MATMUL, rowlane ? VKF_VK_RL_WG : VKF_VK_MV_WG);
    vkf_vk_matmul_v *v = &k.v.matmul;
    v->wtype = wtype;
    v->matvec = 1;
    v->mv_m = mv_m;
    v->nout = VKF_VK_MV_NOUT;
    v->fast = fast;
    v->rowlane = rowlane;
    v->tt = 4;
    return k;
}

/* matmul.comp tiled: the configured tile, or 32 x 32 where shared memory or invocations do not
 * hold it (2 * BK * (BM + BN) floats of shared memory, plus slack) */
static vkf_vk_kplan vkf_vk_tiled_kp(const vkf_vk_caps *c, const vkf_vk_mm_cfg *cfg, int wtype,
                                    uint32_t *bm_out, uint32_t *bn_out) {
    uint32_t bm = cfg->bm ? cfg->bm : 64, bn = cfg->bn ? cfg->bn : 64, bk = cfg->bk ? cfg->bk : 16;
    uint32_t tt = cfg->tt ? cfg->tt : 4;
    if (c->max_shared < 2 * bk * (bm + bn) * 4 + 1024 ||
        (bm / tt) * (bn / tt) > c->max_wg_invocations || bm % tt || bn % tt) {
        bm = bn = 32;
        tt = 4;
    }
    vkf_vk_kplan k = vkf_vk_kp(VKF_VK_K_MATMUL, (bm / tt) * (bn / tt));
    k.spec[1] = bm;
    k.spec[2] = bn;
    k.spec[3] = bk;
    k.n_spec = 4;
    k.v.matmul.wtype = wtype;
    k.v.matmul.tt = (int32_t)tt;
    *bm_out = bm;
    *bn_out = bn;
    return k;
}

/* a [M,K] F32, w [N,K] any weight type, optional bias [1,N]; dst [M,N].
 * Variants (docs/DESIGN.md, 'Cross-vendor by data'; each with an off switch):
 *   FAST (VKF_NO_FAST_MATVEC=1 turns off): 16-byte loads, whole quant blocks, when aligned;
 *   ROWLANE on CPU devices (VKF_NO_ROWLANE=1): one weight row per SIMD lane, any M;
 *   else split-K matrix-vector for M <= 8 and the shared-memory tiled kernel for M > 8. */
vkf_status vkf_vk_plan_matmul(const vkf_vk_backend *vb, const vkf_node *n, vkf_vk_mm_plan *p) {
    const vkf_tensor *d = n->dst, *a = n->src[0], *w = n->src[1], *bias = n->src[2];
    if (!vkf_vk_weight_ok(w->dtype))
        return vkf_error(VKF_ERROR_UNSUPPORTED, "matmul: weight %s has dtype %s", w->name,
                         vkf_dtype_name(w->dtype));
    memset(p, 0, sizeof *p);
    int64_t M = a->rows, N = w->rows, K = a->cols;
    vkf_vk_mm_cfg cfg;
    VKF_TRY(vkf_vk_plan_mm_cfg(vb, M, N, K, w->dtype, &cfg));
    if (cfg.kind == VKF_VK_MM_TEXEL) {
        vkf_vk_mm_group grp = {.a = a, .w = {w}, .d = {d}, .n_mats = 1, .bias = {bias}};
        if (vkf_vk_plan_mm_group_ok(vb, &grp, NULL)) return VKF_OK; /* route TEXEL */
    }
    const vkf_vk_caps *c = &vb->caps;
    int wt = vkf_vk_wtype(w->dtype);
    int64_t Mp = vkf_vk_plan_m(vb, M); /* the route: as for a whole batched step */
    int matvec = Mp <= VKF_VK_MV_MAXM;
    int mv_m = (int)(M < VKF_VK_MV_MAXM ? M : VKF_VK_MV_MAXM);
    int tiled_forced = vb->tune_force != NULL; /* the tuner is timing a tiled variant */
    p->fast_ok = K % vkf_vk_wunit(w->dtype) == 0 && (Mp == 1 || a->row_stride % 4 == 0) &&
                 !vb->xp.no_fast_matvec;
    /* ROWLANE stands in for the texel kernel on CPU devices when that cannot run; a tiled
     * kernel chosen explicitly (tuning) is used as chosen */
    p->rowlane = p->fast_ok && c->type == VK_PHYSICAL_DEVICE_TYPE_CPU && !vb->xp.no_rowlane &&
                 !(cfg.kind == VKF_VK_MM_TILED && !matvec && tiled_forced);
    if (!matvec && !p->rowlane) p->fast_ok = 0;
    if (matvec) {
        p->route = VKF_VK_MM_ROUTE_MATVEC;
        p->k = vkf_vk_matvec_kp(wt, mv_m, 0, 0);
    } else {
        p->route = VKF_VK_MM_ROUTE_TILED;
        p->k = vkf_vk_tiled_kp(c, &cfg, wt, &p->bm, &p->bn);
    }
    /* cooperative matrices for prefill on allow-listed devices (vk_caps.c) */
    if (!matvec && c->coopmat_use && !tiled_forced &&
        vkf_vk_plan_coopmat(vb, w, K, &p->k, &p->bm, &p->bn)) {
        p->route = VKF_VK_MM_ROUTE_COOPMAT;
        p->fast_ok = p->rowlane = 0;
    }
    if (p->fast_ok) p->fast = vkf_vk_matvec_kp(wt, mv_m, 1, p->rowlane);
    return VKF_OK;
}

/* ---------------------------------------------------------------- attention */

int vkf_vk_kvq(vkf_dtype t) {
    switch (t) {
    case VKF_DTYPE_BF16:
    case VKF_DTYPE_Q8_0:
    case VKF_DTYPE_Q4_0:
    case VKF_DTYPE_Q4_1:
    case VKF_DTYPE_IQ4_NL:
    case VKF_DTYPE_Q5_0:
    case VKF_DTYPE_Q5_1: return vkf_vk_wtype(t);
    default: return 0;
    }
}

/* llvmpipe (gallivm) ends every loop of an invocation once the invocation's loops have run
 * 65535 iterations in all (its loop limiter, LP_MAX_TGSI_LOOP_ITERATIONS), silently: decode or
 * prefill attention with one invocation walking more keys than that gave wrong results on
 * lavapipe (op harness, n_q = 16 at 131072 keys: NMSE 1e-2; bench/RESULTS.md). On CPU drivers
 * no invocation walks more than this many keys: the texel kernel's lanes-take-keys and
 * lanes-take-query-rows layouts split the keys across workgroups and merge the parts
 * (vkf_vk_attn_layout), the rest goes to the general kernel in chunks of this size (its
 * invocations walk them WG at a time, a few hundred loop iterations per block at most). */
#define VKF_VK_CPU_KEYS_MAX 16384u

/* attention_texel.comp's layout for a node (one query head per workgroup): who takes keys or
 * query rows, the workgroup size, the key parts; 0 where a CPU driver's invocation would walk
 * more keys than is safe (the general kernel then runs in chunks) */
static int vkf_vk_attn_layout(const vkf_vk_backend *vb, const vkf_attn_params *ap,
                              vkf_vk_attn_plan *o) {
    const vkf_vk_caps *c = &vb->caps;
    const vkf_switches_xp *xp = &vb->xp;
    uint32_t hw = (uint32_t)ap->head_dim / 4u, S = c->subgroup_min;
    /* one query head per workgroup: several heads sharing a KV head (GQA, the shader's HG) lost
     * on lavapipe (its register arrays spill) and on the H200 (bench/RESULTS.md) */
    /* CPU drivers' choices, unless VKF_GPU_TABLE=1 (lavapipe taking the GPUs') */
    int cpu = vkf_vk_plan_cpu(vb);
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
    uint32_t kl_hw = cpu || xp->attn_keylanes ? 32u : 16u;
    int keylanes = ap->n_q == 1 && hw <= kl_hw && !xp->no_keylanes;
    /* prefill on CPU drivers: lanes take whole query rows (K/V read once per tile of queries),
     * up to head_dim 256 there (qwen3's 128 and gemma's 256 spill registers, and still beat the
     * subgroup layout: pp512 attention ms per token, qwen3-0.6b 10.0 -> 2.4, gemma-3-1b 3.3 ->
     * 1.1; bench/RESULTS.md); not on GPUs (H200 pp512 at depth 128 / 2048: 4,533 / 1,736 t/s
     * against 7,192 / 3,778 with subgroups splitting a query's keys) */
    int qlanes = ap->n_q > 1 && hw <= 64u && cpu && !xp->no_qlanes;
    /* with qlanes, 4 (or 2) query rows per lane where every sequence's row count is a multiple
     * (a lane's rows then share one sequence's K/V): each K/V load serves all of them. pp512
     * on TinyLlama's attention shape, ms per layer: 1 row 80.5, 2 rows 54.2, 4 rows 44.0, 8 rows
     * 42.3 (bench/RESULTS.md). VKF_ATTN_QR=N sets it (1 turns it off). */
    uint64_t qre = xp->attn_qr;
    uint32_t qr = qre >= 1 && qre <= 8 ? (uint32_t)qre : ap->n_q % 4 == 0 ? 4 : 2;
    if (!qlanes || ap->n_q % qr) qr = 1;
    /* decode split over the keys across workgroups (flash-decoding), then merged: an
     * experiment for GPUs, whose decode attention runs one workgroup per head (VKF_ATTN_SPLIT=P,
     * 2..64 parts; lanes taking keys only) */
    uint64_t spe = xp->attn_split;
    uint32_t split = keylanes && spe >= 2 && spe <= 64 ? (uint32_t)spe : 1u;
    /* CPU drivers: one subgroup per workgroup (no shared-memory merge; their barriers are
     * expensive) except decode in the subgroup layout (split-K over the cache, 64). GPUs: the
     * subgroups of 256 invocations split the keys of a query row (prefill, decode with lanes
     * taking keys), 512 in decode's subgroup layout; on the H200, pp512 t/s at depth 128 / 2048:
     * one subgroup 6905 / 3313, 256 invocations 7192 / 3778 (attention.comp: 4892 / 1555) */
    uint32_t wg = cpu ? (ap->n_q > 1 || keylanes ? S : VKF_VK_ATTN_TEXEL_WG)
                      : (ap->n_q == 1 && !keylanes ? 512u : 256u);
    uint64_t wge = xp->attn_wg;
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
    if (c->type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
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
 * dispatch binds everything; its layout in p (else 0: the general kernel). In serve's batched
 * step the checks are made for all of its sequences (vkf_vk_plan_m), so that a step of fewer
 * takes the same kernel. */
static int vkf_vk_span_fits(const vkf_tensor *t, int64_t rows, uint64_t budget) {
    return (uint64_t)(rows - 1) * vkf_vk_stride_bytes(t) + vkf_vk_row_bytes(t) <= budget;
}

static int vkf_vk_attn_texel(const vkf_vk_backend *vb, const vkf_node *n, vkf_vk_attn_plan *p) {
    const vkf_attn_params *ap = &n->p.attn;
    const vkf_tensor *d = n->dst, *q = n->src[0], *k = n->src[1], *v = n->src[2];
    const vkf_vk_caps *c = &vb->caps;
    int64_t nb = vb->plan_batch > ap->batch ? vb->plan_batch : ap->batch;
    if (!vkf_vk_texel_subgroups(c) || vb->xp.no_texel_attention) return 0;
    if (!vkf_vk_attn_layout(vb, ap, p)) return 0;
    /* key parts: their states must fit one window */
    if (p->split > 1 &&
        (uint64_t)nb * ap->n_q * ap->n_head * p->split * (ap->head_dim / 4 + 1) * 16u >
            vkf_vk_window_budget(vb))
        return 0;
    int kvu = k->dtype == VKF_DTYPE_F16 ? 2 : 1; /* 4-wide units per K/V texel */
    if ((k->dtype != VKF_DTYPE_F32 && k->dtype != VKF_DTYPE_F16) || v->dtype != k->dtype ||
        q->dtype != VKF_DTYPE_F32 || d->dtype != VKF_DTYPE_F32)
        return 0;
    if (ap->head_dim % (4 * kvu) || d->row_stride % 4 || q->row_stride % 4 ||
        k->row_stride % (4 * kvu) || v->row_stride % (4 * kvu))
        return 0;
    if (d->offset % 16 || q->offset % 16 || k->offset % 16 || v->offset % 16) return 0;
    if ((uint32_t)ap->n_head > c->max_wg_count[0] || nb * ap->n_q > (int64_t)c->max_wg_count[1])
        return 0;
    uint64_t budget = vkf_vk_texel_budget(vb) - 32;
    int64_t kv_rows = (nb - 1) * ap->kv_stride + ap->n_kv;
    int64_t q_rows = nb * ap->n_q;
    return vkf_vk_span_fits(q, q_rows, budget) &&
           vkf_vk_span_fits(d, q_rows, vkf_vk_window_budget(vb)) &&
           vkf_vk_span_fits(k, kv_rows, budget) && vkf_vk_span_fits(v, kv_rows, budget);
}

/* rows spanned by nb sequences of kv_stride rows with n_kv used rows each */
static int vkf_vk_kv_fits(const vkf_tensor *t, int64_t nb, int64_t kv_stride, int64_t n_kv,
                          uint64_t budget) {
    uint64_t rows = (uint64_t)(nb - 1) * (uint64_t)kv_stride + (uint64_t)n_kv;
    return (rows - 1) * vkf_vk_stride_bytes(t) + vkf_vk_row_bytes(t) <= budget;
}

vkf_status vkf_vk_plan_attention(const vkf_vk_backend *vb, const vkf_node *n, vkf_vk_attn_plan *p) {
    const vkf_attn_params *ap = &n->p.attn;
    const vkf_tensor *d = n->dst, *q = n->src[0], *k = n->src[1], *v = n->src[2];
    const vkf_vk_caps *c = &vb->caps;
    int kv_f16 = k->dtype == VKF_DTYPE_F16;
    memset(p, 0, sizeof *p);
    /* attention sinks (gpt-oss): the general kernel only */
    if (!n->src[4] && vkf_vk_attn_texel(vb, n, p)) {
        uint32_t kvu = kv_f16 ? 2u : 1u, hw = (uint32_t)ap->head_dim / 4u, S = c->subgroup_min;
        p->texel = 1;
        p->k = vkf_vk_kp(VKF_VK_K_ATTENTION_TEXEL, p->wg);
        vkf_vk_attention_texel_v *t = &p->k.v.attention_texel;
        t->maxt = (int32_t)((hw / kvu + S - 1) / S); /* K/V texels of a head per lane */
        t->hwmax = (int32_t)hw;
        t->keylanes = p->keylanes;
        t->qlanes = p->qlanes;
        t->qr = (int32_t)p->qr;
        t->kv_f16 = kv_f16;
        t->split = (int32_t)p->split;
        p->merge = vkf_vk_kp(VKF_VK_K_ATTENTION_MERGE, 64);
        p->merge.v.attention_merge.split = (int32_t)p->split;
        p->merge.v.attention_merge.hwmax = (int32_t)hw;
        return VKF_OK;
    }
    /* the general kernel: sequences per dispatch (Q/dst rows nb*n_q, K/V rows (nb-1)*kv_stride +
     * n_kv), else key chunks */
    if ((uint32_t)ap->n_head > c->max_wg_count[0])
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "attention: %d heads exceed the workgroup count limit", ap->n_head);
    uint64_t budget = vkf_vk_window_budget(vb);
    int64_t nb = ap->batch;
    int64_t qfit = vkf_vk_min64(vkf_vk_rows_fit(q, budget), vkf_vk_rows_fit(d, budget));
    nb = vkf_vk_min64(nb, qfit / ap->n_q);
    while (nb > 0 && !(vkf_vk_kv_fits(k, nb, ap->kv_stride, ap->n_kv, budget) &&
                       vkf_vk_kv_fits(v, nb, ap->kv_stride, ap->n_kv, budget)))
        nb--;
    /* the general kernel's loops per key grow with head_dim (a dot product over the head's
     * texels): 16384-key chunks hold up to head_dim 128 (270000 keys in the op harness), and at
     * 256 (gemma) 20000 keys in two chunks read NMSE 1e-3 on lavapipe, so the chunks shrink with
     * wider heads */
    p->kmax = c->type == VK_PHYSICAL_DEVICE_TYPE_CPU
                  ? (int64_t)VKF_VK_CPU_KEYS_MAX * 128 / (ap->head_dim > 128 ? ap->head_dim : 128)
                  : (int64_t)ap->n_kv;
    p->nb = nb;
    p->chunked = nb == 0 || ap->n_kv > p->kmax;
    /* 16-byte loads where every q/k/v/dst offset and stride and head_dim are multiples of 4
     * (VKF_NO_VEC4=1 turns them off) */
    int kvq = vkf_vk_kvq(k->dtype); /* bf16 and the block types: decoded element by element */
    p->vec4_ok = !kv_f16 && !kvq && ap->head_dim % 4 == 0 && !vb->sw.no_vec4;
    p->gen = vkf_vk_kp(VKF_VK_K_ATTENTION, VKF_VK_ATTN_WG);
    p->gen.v.attention.chunked = p->chunked;
    p->gen.v.attention.kv_f16 = kv_f16;
    p->gen.v.attention.sinks = n->src[4] != NULL;
    p->gen.v.attention.kvq = kvq;
    p->gen1 = p->gen;
    p->gen.v.attention.vec4 = 1;
    return VKF_OK;
}
