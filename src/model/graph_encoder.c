/* The encoder-only forward pass (embeddings: bert, nomic-bert) as one graph of the foundation's
 * ops, over B right-padded sequences of n rows each; the key lengths (an input tensor rewritten
 * before each compute) mask the padding in every attention and in the pooling, so a sequence's
 * result does not depend on what the other rows hold.
 *
 *   x = LN_emb(embd[ids] + types[0] (+ pos[i] when learned))
 *   per layer (post-LN): q, k, v = W x (+ b); q, k = rope(q, k) when rotary
 *                        x = LN1(x + Wo attn(q, K, V, key lengths))
 *                        x = LN2(x + down(ffn(x)))        (act(up), or act(gate) * up)
 *   out = pool(x, key lengths) [B, d] (mean / first / last row), or x itself [B * n, d]
 * Every switch comes from the descriptor (model/arch/) or the hyperparameters. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "model/build.h"
#include "model/model.h"
#include "vkformer.h"

/* The pooling's name (vkformer.h), as the graph's errors, info and the front ends show it. */
const char *vkf_pooling_name(vkf_pooling p) {
    static const char *const names[] = {"default", "none", "mean", "cls", "last", "rank"};
    return (unsigned)p < sizeof names / sizeof names[0] ? names[p] : NULL;
}

/* x = LN(embd[ids] + types[0] + pos[r % n]) */
static vkf_tensor *enc_embed(vkf_gb *b, vkf_model *m, vkf_sgraph *sg, int64_t rows, int32_t n) {
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.embed.scale = 1.0f;
    vkf_tensor *x = vkf_gb_new(b, rows, m->hp.d_model, "embd");
    vkf_gb_node(b, VKF_OP_EMBED, x, &m->w.tok_embd, &sg->ids, NULL, NULL, &p);
    if (vkf_tensor_present(&m->w.type_embd)) /* every token is of type 0 ("sentence A") */
        x = vkf_gb_add(b, x, vkf_gb_view(b, &m->w.type_embd, 0, 1, 0, m->hp.d_model), "embd_type");
    if (m->desc->pos == VKF_POS_LEARNED) {
        memset(&p, 0, sizeof p);
        p.pos.seq_len = n;
        vkf_tensor *xp = vkf_gb_new(b, rows, m->hp.d_model, "embd_pos");
        vkf_gb_node(b, VKF_OP_ADD_POS, xp, x, &m->w.pos_embd, NULL, NULL, &p);
        x = xp;
    }
    return vkf_gb_layernorm(b, x, &m->w.tok_norm_w, vkf_opt(&m->w.tok_norm_b), m->hp.eps,
                            "embd_norm");
}

/* rotary positions 0 .. n-1 of each sequence */
static vkf_tensor *enc_rope(vkf_gb *b, vkf_model *m, vkf_tensor *x, int32_t n, int l,
                            const char *what) {
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.rope.seq_len = n;
    p.rope.head_dim = m->hp.head_dim;
    p.rope.n_rot = m->hp.n_rot;
    p.rope.mode = m->desc->rope_mode;
    p.rope.n_head = (int32_t)(x->cols / m->hp.head_dim);
    p.rope.freq_base = (float)m->hp.rope_base;
    vkf_tensor *r = vkf_gb_new(b, x->rows, x->cols, "l%d.%s", l, what);
    vkf_gb_node(b, VKF_OP_ROPE, r, x, &m->w.rope, NULL, NULL, &p);
    return r;
}

static vkf_tensor *enc_ffn(vkf_gb *b, vkf_model *m, vkf_layer_w *L, vkf_tensor *x, int l) {
    char nm[64];
    snprintf(nm, sizeof nm, "l%d.ffn_up", l);
    vkf_tensor *u = vkf_gb_matmul(b, x, &L->w_up, vkf_opt(&L->b_up), nm);
    if (m->desc->ffn == VKF_FFN_GLU) {
        snprintf(nm, sizeof nm, "l%d.ffn_gate", l);
        vkf_tensor *g = vkf_gb_matmul(b, x, &L->w_gate, NULL, nm);
        snprintf(nm, sizeof nm, "l%d.ffn_glu", l);
        u = vkf_gb_swiglu(b, g, u, nm); /* silu(gate) * up */
    } else {
        snprintf(nm, sizeof nm, "l%d.ffn_act", l);
        u = vkf_gb_unary(b, u, m->hp.act, nm);
    }
    snprintf(nm, sizeof nm, "l%d.ffn_down", l);
    return vkf_gb_matmul(b, u, &L->w_down, vkf_opt(&L->b_down), nm);
}

vkf_status vkf_build_embed_graph(vkf_session *s, vkf_sgraph *sg) {
    vkf_model *m = s->m;
    const vkf_hparams *hp = &m->hp;
    int32_t B = sg->batch, n = sg->n;
    int64_t rows = (int64_t)B * n, d = hp->d_model;
    int64_t dq = (int64_t)hp->n_head * hp->head_dim, dkv = (int64_t)hp->n_kv_head * hp->head_dim;
    int pooling = sg->flags;
    char name[64], nm[64];
    snprintf(name, sizeof name, "%s embed n%d b%d %s", m->desc->name, n, B,
             vkf_pooling_name((vkf_pooling)pooling));
    vkf_gb b = {.g = NULL, .s = VKF_OK};
    VKF_TRY(vkf_graph_create(m->be, name, &b.g));
    sg->g = b.g;
    sg->ids = vkf_tensor_make(VKF_DTYPE_I32, 1, rows, "ids");
    sg->lens = vkf_tensor_make(VKF_DTYPE_I32, 1, B, "lengths");
    int64_t d_out = pooling == VKF_POOLING_RANK ? hp->n_cls_out : d;
    sg->out = vkf_tensor_make(VKF_DTYPE_F32, pooling == VKF_POOLING_NONE ? rows : B, d_out,
                              pooling == VKF_POOLING_RANK ? "scores" : "embeddings");
    VKF_TRY(vkf_tensor_alloc(m->be, &sg->ids, VKF_BUFFER_IO, NULL));
    VKF_TRY(vkf_tensor_alloc(m->be, &sg->lens, VKF_BUFFER_IO, NULL));
    VKF_TRY(vkf_tensor_alloc(m->be, &sg->out, VKF_BUFFER_IO, NULL));

    vkf_tensor *x = enc_embed(&b, m, sg, rows, n);
    vkf_attn_params ap = {
        .batch = B,
        .n_q = n,
        .n_kv = n,
        .kv_stride = n,
        .n_head = hp->n_head,
        .n_kv_head = hp->n_kv_head,
        .head_dim = hp->head_dim,
        .causal = 0,
        .kv_dyn = 0,
        .scale = hp->attn_scale,
    };
    for (int l = 0; l < hp->n_layer && b.s == VKF_OK; l++) {
        vkf_layer_w *L = &m->w.dec[l];
        vkf_tensor *q, *k, *v;
        if (vkf_tensor_present(&L->self.wqkv)) {
            snprintf(nm, sizeof nm, "l%d.qkv", l);
            vkf_tensor *qkv = vkf_gb_matmul(&b, x, &L->self.wqkv, vkf_opt(&L->self.bqkv), nm);
            q = vkf_gb_view(&b, qkv, 0, rows, 0, dq);
            k = vkf_gb_view(&b, qkv, 0, rows, dq, dkv);
            v = vkf_gb_view(&b, qkv, 0, rows, dq + dkv, dkv);
        } else {
            snprintf(nm, sizeof nm, "l%d.q", l);
            q = vkf_gb_matmul(&b, x, &L->self.wq, vkf_opt(&L->self.bq), nm);
            snprintf(nm, sizeof nm, "l%d.k", l);
            k = vkf_gb_matmul(&b, x, &L->self.wk, vkf_opt(&L->self.bk), nm);
            snprintf(nm, sizeof nm, "l%d.v", l);
            v = vkf_gb_matmul(&b, x, &L->self.wv, vkf_opt(&L->self.bv), nm);
        }
        if (b.s != VKF_OK) break;
        if (m->desc->pos == VKF_POS_ROPE) {
            q = enc_rope(&b, m, q, n, l, "q_rope");
            k = enc_rope(&b, m, k, n, l, "k_rope");
        }
        snprintf(nm, sizeof nm, "l%d.attn", l);
        vkf_tensor *a = vkf_gb_attention(&b, q, k, v, &sg->lens, &ap, nm);
        snprintf(nm, sizeof nm, "l%d.attn_out", l);
        vkf_tensor *o = vkf_gb_matmul(&b, a, &L->self.wo, vkf_opt(&L->self.bo), nm);
        snprintf(nm, sizeof nm, "l%d.res1", l);
        x = vkf_gb_add(&b, x, o, nm);
        snprintf(nm, sizeof nm, "l%d.attn_norm", l);
        x = vkf_gb_layernorm(&b, x, &L->norm1_w, vkf_opt(&L->norm1_b), hp->eps, nm);
        vkf_tensor *f = enc_ffn(&b, m, L, x, l);
        snprintf(nm, sizeof nm, "l%d.res2", l);
        vkf_tensor *r = vkf_gb_add(&b, x, f, nm);
        if (l == hp->n_layer - 1 && pooling == VKF_POOLING_NONE) { /* straight into the output */
            vkf_op_params p;
            memset(&p, 0, sizeof p);
            p.norm.eps = hp->eps;
            vkf_gb_node(&b, VKF_OP_LAYERNORM, &sg->out, r, &L->norm2_w, vkf_opt(&L->norm2_b), NULL,
                        &p);
            x = &sg->out;
        } else {
            snprintf(nm, sizeof nm, "l%d.out_norm", l);
            x = vkf_gb_layernorm(&b, r, &L->norm2_w, vkf_opt(&L->norm2_b), hp->eps, nm);
        }
    }
    VKF_TRY(b.s);
    if (pooling == VKF_POOLING_RANK) { /* llama.cpp's build_pooling, LLAMA_POOLING_TYPE_RANK */
        vkf_op_params p;
        memset(&p, 0, sizeof p);
        p.pool.seq_len = n;
        p.pool.mode = VKF_POOL_FIRST;
        vkf_tensor *h = vkf_gb_new(&b, B, d, "cls_pool");
        vkf_gb_node(&b, VKF_OP_POOL, h, x, &sg->lens, NULL, NULL, &p);
        if (vkf_tensor_present(&m->w.cls_w)) {
            h = vkf_gb_matmul(&b, h, &m->w.cls_w, vkf_opt(&m->w.cls_b), "cls");
            h = vkf_gb_unary(&b, h, VKF_UNARY_TANH, "cls_tanh");
        }
        if (b.s == VKF_OK && vkf_tensor_present(&m->w.cls_out_w)) {
            vkf_gb_node(&b, VKF_OP_MATMUL, &sg->out, h, &m->w.cls_out_w, vkf_opt(&m->w.cls_out_b),
                        NULL, NULL);
        } else if (b.s == VKF_OK) { /* no output layer: the head's vector is the output */
            memset(&p, 0, sizeof p);
            p.scale.scale = 1.0f;
            vkf_gb_node(&b, VKF_OP_SCALE, &sg->out, h, NULL, NULL, NULL, &p);
        }
    } else if (pooling != VKF_POOLING_NONE) {
        vkf_op_params p;
        memset(&p, 0, sizeof p);
        p.pool.seq_len = n;
        p.pool.mode = pooling == VKF_POOLING_CLS    ? VKF_POOL_FIRST
                      : pooling == VKF_POOLING_LAST ? VKF_POOL_LAST
                                                    : VKF_POOL_MEAN;
        vkf_gb_node(&b, VKF_OP_POOL, &sg->out, x, &sg->lens, NULL, NULL, &p);
    }
    VKF_TRY(b.s);
    return vkf_graph_plan(b.g);
}
