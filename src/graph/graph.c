#include "graph/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/backend.h"

/* ------------------------------------------------------------------ create / free */

vkf_status vkf_graph_create(vkf_backend *be, const char *name, vkf_graph **out) {
    vkf_graph *g = calloc(1, sizeof *g);
    if (!g) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "graph %s: out of host memory", name);
    g->backend = be;
    snprintf(g->name, sizeof g->name, "%s", name ? name : "graph");
    *out = g;
    return VKF_OK;
}

void vkf_graph_free(vkf_graph *g) {
    if (!g) return;
    if (g->exec && g->backend) g->backend->i->graph_release(g->backend, g);
    if (g->arena && g->backend) g->backend->i->buffer_free(g->backend, g->arena);
    for (int i = 0; i < g->n_tensors; i++)
        free(g->tensors[i]);
    free(g->tensors);
    free(g->parent);
    free(g->view_offset);
    free(g->nodes);
    free(g);
}

static int graph_push_tensor(vkf_graph *g, vkf_tensor *t, int parent, size_t off) {
    if (g->n_tensors == g->cap_tensors) {
        int cap = g->cap_tensors ? 2 * g->cap_tensors : 64;
        vkf_tensor **nt = realloc(g->tensors, (size_t)cap * sizeof *nt);
        if (nt) g->tensors = nt;
        int *np = realloc(g->parent, (size_t)cap * sizeof *np);
        if (np) g->parent = np;
        size_t *no = realloc(g->view_offset, (size_t)cap * sizeof *no);
        if (no) g->view_offset = no;
        if (!nt || !np || !no) return -1;
        g->cap_tensors = cap;
    }
    g->tensors[g->n_tensors] = t;
    g->parent[g->n_tensors] = parent;
    g->view_offset[g->n_tensors] = off;
    return g->n_tensors++;
}

vkf_tensor *vkf_graph_tensor(vkf_graph *g, vkf_dtype dtype, int64_t rows, int64_t cols,
                             const char *name) {
    vkf_tensor *t = malloc(sizeof *t);
    if (!t) return NULL;
    *t = vkf_tensor_make(dtype, rows, cols, name);
    if (graph_push_tensor(g, t, -1, 0) < 0) {
        free(t);
        return NULL;
    }
    return t;
}

static int graph_index(const vkf_graph *g, const vkf_tensor *t) {
    for (int i = 0; i < g->n_tensors; i++)
        if (g->tensors[i] == t) return i;
    return -1;
}

vkf_tensor *vkf_graph_view(vkf_graph *g, vkf_tensor *parent, int64_t r0, int64_t n, int64_t c0,
                           int64_t nc, const char *name) {
    vkf_tensor *t = malloc(sizeof *t);
    if (!t) return NULL;
    *t = vkf_tensor_view(parent, r0, n, c0, nc);
    if (name) snprintf(t->name, sizeof t->name, "%s", name);
    int pi = graph_index(g, parent); /* -1: parent is external, the view is already placed */
    if (graph_push_tensor(g, t, pi < 0 ? -2 : pi, t->offset - parent->offset) < 0) {
        free(t);
        return NULL;
    }
    return t;
}

/* ------------------------------------------------------------------ node checks */

static int is_weight_dtype(vkf_dtype t) { return vkf_wtype_is_weight(t); }

#define SHAPE(t) (long long)(t)->rows, (long long)(t)->cols

/* The dtype a KV cache operand t may have: its own when it is a KV cache type (F16, BF16, or a
 * 32-element block type whose blocks fit whole in a head of head_dim), else F32. */
static vkf_dtype kv_dtype(const vkf_tensor *t, int64_t head_dim) {
    if (!t) return VKF_DTYPE_F32;
    switch (t->dtype) {
    case VKF_DTYPE_F16:
    case VKF_DTYPE_BF16: return t->dtype;
    case VKF_DTYPE_Q8_0:
    case VKF_DTYPE_Q4_0:
    case VKF_DTYPE_Q4_1:
    case VKF_DTYPE_IQ4_NL:
    case VKF_DTYPE_Q5_0:
    case VKF_DTYPE_Q5_1: return head_dim % 32 == 0 ? t->dtype : VKF_DTYPE_F32;
    default: return VKF_DTYPE_F32;
    }
}

static vkf_status expect(const vkf_node *n, const vkf_tensor *t, const char *what, vkf_dtype dt,
                         int64_t rows, int64_t cols) {
    if (!t)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "%s: missing operand %s", vkf_op_name(n->op),
                         what);
    if ((dt != VKF_DTYPE_COUNT && t->dtype != dt) || (rows >= 0 && t->rows != rows) ||
        (cols >= 0 && t->cols != cols))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "%s: operand %s (%s): expected %s [%lld, %lld], found %s [%lld, %lld]",
                         vkf_op_name(n->op), what, t->name,
                         vkf_dtype_name(dt == VKF_DTYPE_COUNT ? t->dtype : dt),
                         (long long)(rows >= 0 ? rows : t->rows),
                         (long long)(cols >= 0 ? cols : t->cols), vkf_dtype_name(t->dtype),
                         SHAPE(t));
    return VKF_OK;
}

vkf_status vkf_node_check(const vkf_node *n) {
    const vkf_tensor *d = n->dst, *a = n->src[0], *b = n->src[1], *c = n->src[2];
    if (!d) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "%s: no destination", vkf_op_name(n->op));
    if (!a) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "%s: no source", vkf_op_name(n->op));
    switch (n->op) {
    case VKF_OP_MATMUL:
        VKF_TRY(expect(n, a, "x", VKF_DTYPE_F32, -1, -1));
        VKF_TRY(expect(n, b, "w", VKF_DTYPE_COUNT, -1, a->cols));
        if (!is_weight_dtype(b->dtype))
            return vkf_error(VKF_ERROR_UNSUPPORTED, "matmul: weight %s has dtype %s", b->name,
                             vkf_dtype_name(b->dtype));
        if (c) VKF_TRY(expect(n, c, "bias", VKF_DTYPE_F32, 1, b->rows));
        return expect(n, d, "dst", VKF_DTYPE_F32, a->rows, b->rows);
    case VKF_OP_EMBED:
        if (!is_weight_dtype(a->dtype))
            return vkf_error(VKF_ERROR_UNSUPPORTED, "embed: table %s has dtype %s", a->name,
                             vkf_dtype_name(a->dtype));
        VKF_TRY(expect(n, b, "ids", VKF_DTYPE_I32, 1, -1));
        return expect(n, d, "dst", VKF_DTYPE_F32, b->cols, a->cols);
    case VKF_OP_ADD_POS:
        VKF_TRY(expect(n, a, "x", VKF_DTYPE_F32, -1, -1));
        VKF_TRY(expect(n, b, "table", VKF_DTYPE_F32, -1, a->cols));
        if (n->p.pos.seq_len <= 0 || a->rows % n->p.pos.seq_len)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "add_pos: seq_len %d does not divide %lld rows", n->p.pos.seq_len,
                             (long long)a->rows);
        return expect(n, d, "dst", VKF_DTYPE_F32, a->rows, a->cols);
    case VKF_OP_ROPE:
        VKF_TRY(
            expect(n, a, "x", VKF_DTYPE_F32, -1, (int64_t)n->p.rope.n_head * n->p.rope.head_dim));
        VKF_TRY(expect(n, b, "rope table", VKF_DTYPE_F32, -1, n->p.rope.n_rot));
        if (n->p.rope.n_rot <= 0 || n->p.rope.n_rot % 2 || n->p.rope.n_rot > n->p.rope.head_dim ||
            n->p.rope.head_dim > VKF_MAX_HEAD_DIM || n->p.rope.seq_len <= 0 ||
            a->rows % n->p.rope.seq_len)
            return vkf_error(
                VKF_ERROR_INVALID_ARGUMENT,
                "rope: n_rot %d must be even and <= head_dim %d; seq_len %d must divide %lld rows",
                n->p.rope.n_rot, n->p.rope.head_dim, n->p.rope.seq_len, (long long)a->rows);
        return expect(n, d, "dst", VKF_DTYPE_F32, a->rows, a->cols);
    case VKF_OP_ADD:
    case VKF_OP_MUL:
        VKF_TRY(expect(n, a, "a", VKF_DTYPE_F32, -1, -1));
        VKF_TRY(expect(n, b, "b", VKF_DTYPE_F32, b && b->rows == 1 ? 1 : a->rows, a->cols));
        return expect(n, d, "dst", VKF_DTYPE_F32, a->rows, a->cols);
    case VKF_OP_SCALE:
    case VKF_OP_UNARY:
    case VKF_OP_LOG_SOFTMAX:
        if (n->op == VKF_OP_UNARY && (unsigned)n->p.unary.act >= VKF_UNARY_COUNT)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "unary: unknown activation %d",
                             n->p.unary.act);
        VKF_TRY(expect(n, a, "x", VKF_DTYPE_F32, -1, -1));
        return expect(n, d, "dst", VKF_DTYPE_F32, a->rows, a->cols);
    case VKF_OP_LAYERNORM:
    case VKF_OP_RMSNORM:
        VKF_TRY(expect(n, a, "x", VKF_DTYPE_F32, -1, -1));
        if (b) VKF_TRY(expect(n, b, "weight", VKF_DTYPE_F32, 1, a->cols));
        if (c) VKF_TRY(expect(n, c, "bias", VKF_DTYPE_F32, 1, a->cols));
        return expect(n, d, "dst", VKF_DTYPE_F32, a->rows, a->cols);
    case VKF_OP_SWIGLU:
        VKF_TRY(expect(n, a, "gate", VKF_DTYPE_F32, -1, -1));
        VKF_TRY(expect(n, b, "up", VKF_DTYPE_F32, a->rows, a->cols));
        return expect(n, d, "dst", VKF_DTYPE_F32, a->rows, a->cols);
    case VKF_OP_SOFTMAX:
        VKF_TRY(expect(n, a, "x", VKF_DTYPE_F32, -1, -1));
        if (b) VKF_TRY(expect(n, b, "mask", VKF_DTYPE_F32, a->rows, a->cols));
        return expect(n, d, "dst", VKF_DTYPE_F32, a->rows, a->cols);
    case VKF_OP_ATTENTION: {
        const vkf_attn_params *p = &n->p.attn;
        if (p->batch <= 0 || p->n_q <= 0 || p->n_kv <= 0 || p->n_head <= 0 || p->n_kv_head <= 0 ||
            p->head_dim <= 0 || p->head_dim > VKF_MAX_HEAD_DIM || p->n_head % p->n_kv_head ||
            p->kv_stride < p->n_kv || p->window < 0 || !(p->softcap >= 0))
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "attention: bad parameters batch %d n_q %d n_kv %d kv_stride %d heads "
                             "%d/%d head_dim %d window %d softcap %g",
                             p->batch, p->n_q, p->n_kv, p->kv_stride, p->n_head, p->n_kv_head,
                             p->head_dim, p->window, (double)p->softcap);
        int64_t kv_rows = (int64_t)(p->batch - 1) * p->kv_stride + p->n_kv;
        VKF_TRY(expect(n, a, "q", VKF_DTYPE_F32, (int64_t)p->batch * p->n_q,
                       (int64_t)p->n_head * p->head_dim));
        /* K and V: F32, or a KV cache type each (a block type's blocks within a head); which
         * of them a backend reads is its kv_dtypes (graph/backend.h) */
        VKF_TRY(
            expect(n, b, "k", kv_dtype(b, p->head_dim), -1, (int64_t)p->n_kv_head * p->head_dim));
        VKF_TRY(
            expect(n, c, "v", kv_dtype(c, p->head_dim), -1, (int64_t)p->n_kv_head * p->head_dim));
        if (b->rows < kv_rows || c->rows < kv_rows)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "attention: k/v have %lld/%lld rows, need %lld", (long long)b->rows,
                             (long long)c->rows, (long long)kv_rows);
        if (n->src[3]) VKF_TRY(expect(n, n->src[3], "key lengths", VKF_DTYPE_I32, 1, p->batch));
        if (n->src[4]) VKF_TRY(expect(n, n->src[4], "sinks", VKF_DTYPE_F32, 1, p->n_head));
        return expect(n, d, "dst", VKF_DTYPE_F32, a->rows, a->cols);
    }
    case VKF_OP_COPY_ROWS:
        VKF_TRY(expect(n, a, "src", VKF_DTYPE_F32, -1, -1));
        VKF_TRY(expect(n, d, "dst", kv_dtype(d, a->cols), -1, a->cols));
        if (b) VKF_TRY(expect(n, b, "row offset", VKF_DTYPE_I32, 1, 1));
        if (n->p.copy.dst_row0 < 0 || n->p.copy.dst_row0 + a->rows > d->rows)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "copy_rows: rows %d..%lld outside %s (%lld rows)", n->p.copy.dst_row0,
                             (long long)(n->p.copy.dst_row0 + a->rows), d->name,
                             (long long)d->rows);
        return VKF_OK;
    case VKF_OP_ARGMAX:
        VKF_TRY(expect(n, a, "x", VKF_DTYPE_F32, -1, -1));
        return expect(n, d, "dst", VKF_DTYPE_I32, a->rows, 1);
    case VKF_OP_TOPK:
        VKF_TRY(expect(n, a, "x", VKF_DTYPE_F32, -1, -1));
        if (n->p.topk.k <= 0 || n->p.topk.k > a->cols)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "topk: k = %d outside [1, %lld]",
                             n->p.topk.k, (long long)a->cols);
        return expect(n, d, "dst", VKF_DTYPE_I32, a->rows, n->p.topk.k);
    case VKF_OP_POOL: {
        int32_t L = n->p.pool.seq_len, mode = n->p.pool.mode;
        if (L <= 0 || mode < VKF_POOL_MEAN || mode > VKF_POOL_LAST || !d || d->rows <= 0)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "pool: seq_len %d, mode %d", L, mode);
        VKF_TRY(expect(n, a, "x", VKF_DTYPE_F32, d->rows * L, -1));
        VKF_TRY(expect(n, b, "lengths", VKF_DTYPE_I32, 1, d->rows));
        return expect(n, d, "dst", VKF_DTYPE_F32, -1, a->cols);
    }
    case VKF_OP_MUL_MAT_ID: {
        const vkf_tensor *ids = c;
        int32_t E = n->p.moe.n_expert;
        VKF_TRY(expect(n, c, "ids", VKF_DTYPE_I32, -1, -1));
        VKF_TRY(expect(n, b, "experts", VKF_DTYPE_COUNT, -1, a->cols));
        if (!is_weight_dtype(b->dtype))
            return vkf_error(VKF_ERROR_UNSUPPORTED, "mul_mat_id: experts %s have dtype %s", b->name,
                             vkf_dtype_name(b->dtype));
        if (E <= 0 || b->rows % E || ids->cols > E)
            return vkf_error(
                VKF_ERROR_INVALID_ARGUMENT,
                "mul_mat_id: %s has %lld rows, not %d experts of equal size (k = %lld)", b->name,
                (long long)b->rows, E, (long long)ids->cols);
        if (a->rows != ids->rows && a->rows != ids->rows * ids->cols)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "mul_mat_id: x has %lld rows, expected %lld tokens or %lld "
                             "token-expert pairs",
                             (long long)a->rows, (long long)ids->rows,
                             (long long)(ids->rows * ids->cols));
        return expect(n, d, "dst", VKF_DTYPE_F32, ids->rows * ids->cols, b->rows / E);
    }
    case VKF_OP_MOE_WEIGHTS:
        VKF_TRY(expect(n, a, "probs", VKF_DTYPE_F32, -1, -1));
        VKF_TRY(expect(n, b, "ids", VKF_DTYPE_I32, a->rows, -1));
        if (b->cols > a->cols)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "moe_weights: k = %lld > %lld experts",
                             (long long)b->cols, (long long)a->cols);
        return expect(n, d, "dst", VKF_DTYPE_F32, a->rows, b->cols);
    case VKF_OP_MOE_SUM:
        VKF_TRY(expect(n, b, "weights", VKF_DTYPE_F32, -1, -1));
        VKF_TRY(expect(n, a, "experts", VKF_DTYPE_F32, b->rows * b->cols, -1));
        return expect(n, d, "dst", VKF_DTYPE_F32, b->rows, a->cols);
    case VKF_OP_MOE_GROUP_MASK:
        VKF_TRY(expect(n, a, "x", VKF_DTYPE_F32, -1, -1));
        if (n->p.moe.n_group <= 0 || a->cols % n->p.moe.n_group || n->p.moe.n_group_used <= 0 ||
            n->p.moe.n_group_used > n->p.moe.n_group)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "moe_group_mask: %d groups (%d used) for %lld experts",
                             n->p.moe.n_group, n->p.moe.n_group_used, (long long)a->cols);
        return expect(n, d, "dst", VKF_DTYPE_F32, a->rows, a->cols);
    default: break;
    }
    return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "unknown op %d", (int)n->op);
}

vkf_status vkf_graph_add(vkf_graph *g, vkf_op op, vkf_tensor *dst, vkf_tensor *s0, vkf_tensor *s1,
                         vkf_tensor *s2, vkf_tensor *s3, const vkf_op_params *p) {
    vkf_node n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.dst = dst;
    n.src[0] = s0;
    n.src[1] = s1;
    n.src[2] = s2;
    n.src[3] = s3;
    if (p) n.p = *p;
    return vkf_graph_add_node(g, &n);
}

vkf_status vkf_graph_add_node(vkf_graph *g, const vkf_node *node) {
    vkf_node n = *node;
    vkf_status s = vkf_node_check(&n);
    if (s != VKF_OK) return vkf_error_prefix(s, "graph %s, node %d", g->name, g->n_nodes);
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
        vkf_node *nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "graph %s: out of host memory", g->name);
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    g->nodes[g->n_nodes++] = n;
    return VKF_OK;
}

/* ------------------------------------------------------------------ memory plan */

/* Intermediates get [first use, last use] intervals; a greedy first-fit over offsets sorted by
 * size places each so that no two live ranges that overlap in time overlap in memory. */

#define VKF_ALIGN 256 /* >= minStorageBufferOffsetAlignment on every device we know */

typedef struct plan_item {
    int idx, first, last;
    size_t size, off;
} plan_item;

static int cmp_size_desc(const void *x, const void *y) {
    const plan_item *a = x, *b = y;
    return a->size < b->size ? 1 : a->size > b->size ? -1 : a->idx - b->idx;
}

static int root_of(const vkf_graph *g, int i) {
    while (g->parent[i] >= 0)
        i = g->parent[i];
    return i;
}

vkf_status vkf_graph_plan(vkf_graph *g) {
    int nt = g->n_tensors;
    plan_item *items = calloc((size_t)nt + 1, sizeof *items);
    if (!items) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "graph %s: plan: out of memory", g->name);
    for (int i = 0; i < nt; i++) {
        items[i].idx = i;
        items[i].first = g->n_nodes;
        items[i].last = -1;
        items[i].size = (vkf_tensor_nbytes(g->tensors[i]) + VKF_ALIGN - 1) / VKF_ALIGN * VKF_ALIGN;
    }
    for (int ni = 0; ni < g->n_nodes; ni++) {
        vkf_node *n = &g->nodes[ni];
        vkf_tensor *ops[1 + VKF_MAX_SRC] = {n->dst,    n->src[0], n->src[1],
                                            n->src[2], n->src[3], n->src[4]};
        for (int k = 0; k < 1 + VKF_MAX_SRC; k++) {
            int i = ops[k] ? graph_index(g, ops[k]) : -1;
            if (i < 0) continue;
            int r = root_of(g, i);
            if (ni < items[r].first) items[r].first = ni;
            if (ni > items[r].last) items[r].last = ni;
        }
    }
    /* roots only, by size */
    int nr = 0;
    plan_item *roots = calloc((size_t)nt + 1, sizeof *roots);
    if (!roots) {
        free(items);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "graph %s: plan: out of memory", g->name);
    }
    for (int i = 0; i < nt; i++)
        if (g->parent[i] == -1 && items[i].last >= 0) roots[nr++] = items[i];
    qsort(roots, (size_t)nr, sizeof *roots, cmp_size_desc);
    size_t total = 0;
    for (int i = 0; i < nr; i++) {
        size_t off = 0;
        for (int again = 1; again;) { /* bump past every placed, time-overlapping block */
            again = 0;
            for (int j = 0; j < i; j++) {
                int t_overlap = roots[j].first <= roots[i].last && roots[i].first <= roots[j].last;
                int m_overlap =
                    roots[j].off < off + roots[i].size && off < roots[j].off + roots[j].size;
                if (t_overlap && m_overlap) {
                    off = roots[j].off + roots[j].size;
                    again = 1;
                }
            }
        }
        roots[i].off = off;
        if (off + roots[i].size > total) total = off + roots[i].size;
        items[roots[i].idx].off = off;
    }
    free(roots);
    g->arena_bytes = total ? total : VKF_ALIGN;
    vkf_status s =
        g->backend->i->buffer_alloc(g->backend, g->arena_bytes, VKF_BUFFER_ACTIVATIONS, &g->arena);
    if (s != VKF_OK) {
        free(items);
        return vkf_error_prefix(s, "graph %s: activation arena of %zu bytes", g->name,
                                g->arena_bytes);
    }
    for (int i = 0; i < nt; i++) { /* parents precede their views in creation order */
        vkf_tensor *t = g->tensors[i];
        if (g->parent[i] == -2) continue; /* view of an external tensor */
        if (g->parent[i] == -1) {
            t->buf = g->arena;
            t->offset = items[i].off;
        } else {
            vkf_tensor *p = g->tensors[g->parent[i]];
            t->buf = p->buf;
            t->offset = p->offset + g->view_offset[i];
        }
    }
    free(items);
    return VKF_OK;
}
