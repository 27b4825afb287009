/* Graph-building helpers (see build.h). */
#include "model/build.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

/* ------------------------------------------------------------------ tensors */

vkf_tensor *vkf_gb_new(vkf_gb *b, int64_t rows, int64_t cols, const char *fmt, ...) {
    if (b->s != VKF_OK) return NULL;
    char name[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    vkf_tensor *t = vkf_graph_tensor(b->g, VKF_DTYPE_F32, rows, cols, name);
    if (!t) b->s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "graph %s: out of host memory", b->g->name);
    return t;
}

vkf_tensor *vkf_gb_view(vkf_gb *b, vkf_tensor *t, int64_t r0, int64_t n, int64_t c0, int64_t nc) {
    if (b->s != VKF_OK) return NULL;
    vkf_tensor *v = vkf_graph_view(b->g, t, r0, n, c0, nc, NULL);
    if (!v) b->s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "graph %s: out of host memory", b->g->name);
    return v;
}

void vkf_gb_node(vkf_gb *b, vkf_op op, vkf_tensor *dst, vkf_tensor *s0, vkf_tensor *s1,
                 vkf_tensor *s2, vkf_tensor *s3, const vkf_op_params *p) {
    if (b->s != VKF_OK) return;
    b->s = vkf_graph_add(b->g, op, dst, s0, s1, s2, s3, p);
}

/* A new [rows, cols] destination and one node writing it. */
static vkf_tensor *gb_op(vkf_gb *b, vkf_op op, int64_t rows, int64_t cols, const char *name,
                         vkf_tensor *s0, vkf_tensor *s1, vkf_tensor *s2, vkf_tensor *s3,
                         const vkf_op_params *p) {
    vkf_tensor *d = vkf_gb_new(b, rows, cols, "%s", name);
    vkf_gb_node(b, op, d, s0, s1, s2, s3, p);
    return b->s == VKF_OK ? d : NULL;
}

/* ------------------------------------------------------------------ ops */

vkf_tensor *vkf_gb_matmul(vkf_gb *b, vkf_tensor *x, vkf_tensor *w, vkf_tensor *bias,
                          const char *name) {
    if (b->s != VKF_OK) return NULL;
    return gb_op(b, VKF_OP_MATMUL, x->rows, w->rows, name, x, w, bias ? vkf_opt(bias) : NULL, NULL,
                 NULL);
}

vkf_tensor *vkf_gb_layernorm(vkf_gb *b, vkf_tensor *x, vkf_tensor *w, vkf_tensor *bias, float eps,
                             const char *name) {
    if (b->s != VKF_OK) return NULL;
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.norm.eps = eps;
    return gb_op(b, VKF_OP_LAYERNORM, x->rows, x->cols, name, x, w ? vkf_opt(w) : NULL,
                 bias ? vkf_opt(bias) : NULL, NULL, &p);
}

vkf_tensor *vkf_gb_rmsnorm(vkf_gb *b, vkf_tensor *x, vkf_tensor *w, float eps, const char *name) {
    if (b->s != VKF_OK) return NULL;
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.norm.eps = eps;
    return gb_op(b, VKF_OP_RMSNORM, x->rows, x->cols, name, x, w ? vkf_opt(w) : NULL, NULL, NULL,
                 &p);
}

vkf_tensor *vkf_gb_add(vkf_gb *b, vkf_tensor *x, vkf_tensor *y, const char *name) {
    if (b->s != VKF_OK) return NULL;
    return gb_op(b, VKF_OP_ADD, x->rows, x->cols, name, x, y, NULL, NULL, NULL);
}

vkf_tensor *vkf_gb_scale(vkf_gb *b, vkf_tensor *x, float s, const char *name) {
    if (b->s != VKF_OK) return NULL;
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.scale.scale = s;
    return gb_op(b, VKF_OP_SCALE, x->rows, x->cols, name, x, NULL, NULL, NULL, &p);
}

vkf_tensor *vkf_gb_unary(vkf_gb *b, vkf_tensor *x, int act, const char *name) {
    if (b->s != VKF_OK) return NULL;
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.unary.act = act;
    return gb_op(b, VKF_OP_UNARY, x->rows, x->cols, name, x, NULL, NULL, NULL, &p);
}

vkf_tensor *vkf_gb_swiglu(vkf_gb *b, vkf_tensor *gate, vkf_tensor *up, const char *name) {
    if (b->s != VKF_OK) return NULL;
    return gb_op(b, VKF_OP_SWIGLU, gate->rows, gate->cols, name, gate, up, NULL, NULL, NULL);
}

vkf_tensor *vkf_gb_attention(vkf_gb *b, vkf_tensor *q, vkf_tensor *k, vkf_tensor *v,
                             vkf_tensor *lens, const vkf_attn_params *ap, const char *name) {
    return vkf_gb_attention_sinks(b, q, k, v, lens, NULL, ap, name);
}

vkf_tensor *vkf_gb_attention_sinks(vkf_gb *b, vkf_tensor *q, vkf_tensor *k, vkf_tensor *v,
                                   vkf_tensor *lens, vkf_tensor *sinks, const vkf_attn_params *ap,
                                   const char *name) {
    if (b->s != VKF_OK) return NULL;
    vkf_node n;
    memset(&n, 0, sizeof n);
    n.op = VKF_OP_ATTENTION;
    n.dst = vkf_gb_new(b, q->rows, q->cols, "%s", name);
    n.src[0] = q;
    n.src[1] = k;
    n.src[2] = v;
    n.src[3] = lens;
    n.src[4] = sinks ? vkf_opt(sinks) : NULL;
    n.p.attn = *ap;
    if (b->s == VKF_OK) b->s = vkf_graph_add_node(b->g, &n);
    return b->s == VKF_OK ? n.dst : NULL;
}

void vkf_gb_copy_rows(vkf_gb *b, vkf_tensor *dst, vkf_tensor *src, int32_t row0, int dyn) {
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.copy.dst_row0 = row0;
    p.copy.dyn = dyn;
    vkf_gb_node(b, VKF_OP_COPY_ROWS, dst, src, NULL, NULL, NULL, &p);
}
