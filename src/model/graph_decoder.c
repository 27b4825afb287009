/* The decoder-only forward pass of every architecture descriptor (model/arch.h) as one graph
 * of the foundation's ops.
 *
 * One graph per (tokens per step n, sequences B, last-only head). Positions come from n_past
 * (ADD_POS / ROPE / COPY_ROWS / ATTENTION kv_dyn), token ids and key lengths from input
 * tensors rewritten before each compute, so the same graph replays for every decoding step.
 *
 *   x = embd[ids] * emb_scale (+ pos[n_past + i] when learned)
 *   per layer: q, k, v = W h (+ b), h = norm1 x; q, k = head_norm(q, k); q, k = rope(q, k)
 *              x += r * post_attn_norm(Wo attn(q, K, V))   (window, soft-cap per layer)
 *              x += r * post_ffn_norm(down(ffn(norm2 x)))  (act(up), or act(gate) * up)
 *   logits = softcap(head(norm(x)) / logit_scale)           (r: residual_scale, else 1)
 * Every switch comes from the descriptor or the hyperparameters; absent post norms / q-k norms
 * / biases are skipped. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "model/build.h"
#include "model/lora.h"

/* a matmul of a layer's matrix, with the session's LoRA adapters of that matrix */
#define LMM(b, x, w, bias, name) vkf_lora_matmul((b), (b)->lora, (b)->n_lora, x, w, bias, name)
#include "model/model.h"

/* ------------------------------------------------------------------ serve batching
 * Sequences at their own positions
 * (VKF_SG_PERSEQ, one token per sequence). Positions come from the input tensor pos: the rows
 * of a position table (RoPE, learned) are gathered with EMBED, so ROPE / ADD see row r at
 * position pos[r]; each sequence's K/V row goes to the cache row kvrow[b] (COPY_ROWS with a
 * row offset source). */

static vkf_status dec_perseq_inputs(vkf_backend *be, vkf_sgraph *sg, vkf_tensor *pos,
                                    vkf_tensor *kvrow) {
    *pos = vkf_tensor_make(VKF_DTYPE_I32, 1, sg->batch, "positions");
    *kvrow = vkf_tensor_make(VKF_DTYPE_I32, 1, sg->batch, "kv_rows");
    VKF_TRY(vkf_tensor_alloc(be, pos, VKF_BUFFER_IO, NULL));
    return vkf_tensor_alloc(be, kvrow, VKF_BUFFER_IO, NULL);
}

/* The per-step inputs of the part being built (a split graph: each device its own copy; the
 * nodes keep these pointers, so they point into the part, never at sg's fields). */
static vkf_tensor *dec_pos(vkf_sgraph *sg) {
    return sg->n_parts ? &sg->part[sg->cur].pos : &sg->pos;
}
static vkf_tensor *dec_kvrow(vkf_sgraph *sg) {
    return sg->n_parts ? &sg->part[sg->cur].kvrow : &sg->kvrow;
}
static vkf_tensor *dec_lens(vkf_sgraph *sg) {
    return sg->n_parts ? &sg->part[sg->cur].lens : &sg->lens;
}

/* A step computes only its busy range of sequences (vkf_session_seq_decode): the graph of
 * sg->batch sequences from seq0; its kernels are those of a step of all the session's
 * sequences, so a sequence's logits do not depend on how many others are busy. */
static void dec_plan_batch(const vkf_session *s, const vkf_sgraph *sg, vkf_graph *g) {
    if (sg->flags & VKF_SG_PERSEQ) g->plan_batch = s->n_batch;
}

/* rows pos[0..batch) of a position table */
static vkf_tensor *dec_perseq_table(vkf_gb *b, vkf_tensor *table, vkf_sgraph *sg,
                                    const char *name) {
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.embed.scale = 1.0f;
    vkf_tensor *t = vkf_gb_new(b, sg->batch, table->cols, "%s", name);
    vkf_gb_node(b, VKF_OP_EMBED, t, table, dec_pos(sg), NULL, NULL, &p);
    return t;
}

static void dec_store_kv_perseq(vkf_gb *b, vkf_session *s, vkf_sgraph *sg, int l, vkf_tensor *k,
                                vkf_tensor *v) {
    int64_t kvd = k->cols;
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    for (int32_t q = 0; q < sg->batch; q++) {
        vkf_tensor *row = vkf_gb_view(b, dec_kvrow(sg), 0, 1, q, 1);
        vkf_gb_node(b, VKF_OP_COPY_ROWS, &s->kc[l], vkf_gb_view(b, k, q, 1, 0, kvd), row, NULL,
                    NULL, &p);
        vkf_gb_node(b, VKF_OP_COPY_ROWS, &s->vc[l], vkf_gb_view(b, v, q, 1, 0, kvd), row, NULL,
                    NULL, &p);
    }
}

/* ------------------------------------------------------------------ layers */

/* Writes the new K/V rows of each sequence into the caches (row (seq0+b)*n_ctx + n_past + i). */
static void dec_store_kv(vkf_gb *b, vkf_session *s, vkf_sgraph *sg, int l, vkf_tensor *k,
                         vkf_tensor *v, int32_t B, int32_t n) {
    int64_t kvd = k->cols;
    if (sg->flags & VKF_SG_PERSEQ) {
        dec_store_kv_perseq(b, s, sg, l, k, v);
        return;
    }
    for (int32_t q = 0; q < B; q++) {
        vkf_gb_copy_rows(b, &s->kc[l], vkf_gb_view(b, k, (int64_t)q * n, n, 0, kvd),
                         (sg->seq0 + q) * s->n_ctx, 1);
        vkf_gb_copy_rows(b, &s->vc[l], vkf_gb_view(b, v, (int64_t)q * n, n, 0, kvd),
                         (sg->seq0 + q) * s->n_ctx, 1);
    }
}

static vkf_tensor *dec_norm(vkf_gb *b, const vkf_model *m, vkf_tensor *x, vkf_tensor *w,
                            vkf_tensor *bias, const char *name) {
    if (m->desc->norm == VKF_NORM_RMS) return vkf_gb_rmsnorm(b, x, w, m->hp.eps, name);
    return vkf_gb_layernorm(b, x, w, bias, m->hp.eps, name);
}

/* Per-head RMSNorm of x [rows, n_head * head_dim] (contiguous): x viewed as [rows * n_head,
 * head_dim], normalized with the [1, head_dim] weight, viewed back. */
static vkf_tensor *dec_head_norm(vkf_gb *b, const vkf_model *m, vkf_tensor *x, vkf_tensor *w,
                                 int n_head, const char *name) {
    if (b->s != VKF_OK) return NULL;
    int64_t rows = x->rows, hd = m->hp.head_dim;
    if (x->row_stride != x->cols) {
        b->s = vkf_error(VKF_ERROR_INTERNAL, "%s: per-head norm of a strided tensor", name);
        return NULL;
    }
    vkf_tensor *v = vkf_gb_view(b, x, 0, rows, 0, x->cols);
    if (!v) return NULL;
    v->rows = rows * n_head;
    v->cols = v->row_stride = hd;
    vkf_tensor *y = vkf_gb_rmsnorm(b, v, w, m->hp.eps, name);
    vkf_tensor *r = y ? vkf_gb_view(b, y, 0, y->rows, 0, hd) : NULL;
    if (!r) return NULL;
    r->rows = rows;
    r->cols = r->row_stride = (int64_t)n_head * hd;
    return r;
}

static vkf_tensor *dec_rope(vkf_gb *b, vkf_session *s, vkf_sgraph *sg, int l, vkf_tensor *x,
                            int n_head, int32_t n, const char *name) {
    vkf_model *m = s->m;
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.rope.seq_len = n;
    p.rope.dyn = 1;
    p.rope.head_dim = m->hp.head_dim;
    p.rope.n_rot = m->hp.n_rot;
    p.rope.mode = m->desc->rope_mode;
    p.rope.n_head = n_head;
    int dev = vkf_model_layer_dev(m, l); /* the copy of the tables on the layer's device */
    int swa = vkf_layer_swa(&m->hp, l) && vkf_tensor_present(&m->w.rope_swa);
    vkf_tensor *table = m->n_dev > 1 ? (swa ? &m->dev_rope_swa[dev] : &m->dev_rope[dev])
                                     : (swa ? &m->w.rope_swa : &m->w.rope);
    /* the table's base: the CPU's ggml-activation mode recomputes the angles from it (and keeps
     * the table where scaling or frequency factors make them differ) */
    p.rope.freq_base = (float)(swa ? m->hp.rope_base_swa : m->hp.rope_base);
    if (sg->flags & VKF_SG_PERSEQ) { /* serve: row r's rotation gathered at pos[r] */
        char tn[64];
        snprintf(tn, sizeof tn, "l%d.%s_rows", l, name);
        table = dec_perseq_table(b, table, sg, tn);
        p.rope.seq_len = (int32_t)x->rows;
        p.rope.dyn = 0;
    }
    vkf_tensor *r = vkf_gb_new(b, x->rows, x->cols, "l%d.%s", l, name);
    vkf_gb_node(b, VKF_OP_ROPE, r, x, table, NULL, NULL, &p);
    return r;
}

static vkf_tensor *dec_ffn(vkf_gb *b, const vkf_model *m, vkf_layer_w *L, vkf_tensor *h, char *nm,
                           size_t nmsz, int l) {
    const vkf_hparams *hp = &m->hp;
#define NM(what) (snprintf(nm, nmsz, "l%d.%s", l, what), nm)
    if (m->desc->ffn == VKF_FFN_PLAIN) {
        vkf_tensor *u = LMM(b, h, &L->w_up, &L->b_up, NM("up"));
        return vkf_gb_unary(b, u, hp->act, NM("act"));
    }
    vkf_tensor *g, *u;
    if (m->desc->ffn == VKF_FFN_GLU_FUSED) { /* one matrix: gate outputs, then up outputs */
        vkf_tensor *gu = LMM(b, h, &L->w_up, &L->b_up, NM("gate_up"));
        g = gu ? vkf_gb_view(b, gu, 0, gu->rows, 0, hp->n_ff) : NULL;
        u = gu ? vkf_gb_view(b, gu, 0, gu->rows, hp->n_ff, hp->n_ff) : NULL;
    } else {
        g = LMM(b, h, &L->w_gate, NULL, NM("gate"));
        u = LMM(b, h, &L->w_up, &L->b_up, NM("up"));
    }
    if (b->s != VKF_OK || !g || !u) return NULL;
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.glu.gelu = hp->act == VKF_UNARY_GELU_TANH;
    vkf_tensor *f = vkf_gb_new(b, g->rows, g->cols, "l%d.glu", l);
    vkf_gb_node(b, VKF_OP_SWIGLU, f, g, u, NULL, NULL, &p);
    return f;
#undef NM
}

/* x[t * k + i, :] += bias[ids[t, i], :] (ggml_add_id: gpt-oss's expert biases) as the gathered
 * rows of the bias table (EMBED over the ids viewed as one row of T * k) added; no bias: x. */
static vkf_tensor *dec_moe_bias(vkf_gb *b, vkf_tensor *x, vkf_tensor *bias, vkf_tensor *ids, int l,
                                const char *what) {
    if (b->s != VKF_OK || !vkf_tensor_present(bias)) return x;
    vkf_tensor *flat = vkf_gb_view(b, ids, 0, ids->rows, 0, ids->cols);
    if (!flat) return NULL;
    flat->rows = 1;
    flat->cols = flat->row_stride = ids->rows * ids->cols;
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.embed.scale = 1.0f;
    vkf_tensor *g = vkf_gb_new(b, x->rows, x->cols, "l%d.%s_bias_rows", l, what);
    vkf_gb_node(b, VKF_OP_EMBED, g, bias, flat, NULL, NULL, &p);
    char nm[64];
    snprintf(nm, sizeof nm, "l%d.%s_biased", l, what);
    return vkf_gb_add(b, x, g, nm);
}

/* The routed FFN (docs/DESIGN.md, 'Experts are data too'), as llama.cpp's build_moe_ffn:
 *   probs = gating(router h): softmax, sigmoid, or the logits themselves (softmax over the k)
 *   ids = topk(probs, k); w = weights(probs, ids) (softmax over the k, renormalised, scaled)
 *   y = sum_i w[i] * down_e(silu(gate_e h) * up_e h), e = ids[i] (gpt-oss: the router and
 *   each expert matrix with its bias, swiglu_oai in place of silu(g) * u)
 *   + sigmoid(gate_inp_shexp · h) * down_s(silu(gate_s h) * up_s h) with a shared expert. */
static vkf_tensor *dec_moe(vkf_gb *b, const vkf_model *m, vkf_layer_w *L, vkf_tensor *h, int l) {
    const vkf_hparams *hp = &m->hp;
    if (b->s != VKF_OK) return NULL;
    int64_t T = h->rows, k = hp->n_expert_used;
    char nm[64];
#define NM(what) (snprintf(nm, sizeof nm, "l%d.%s", l, what), nm)
    vkf_op_params p;
    vkf_tensor *logits = vkf_gb_matmul(b, h, &L->gate_inp, &L->gate_inp_b, NM("moe_logits"));
    vkf_tensor *probs = logits;
    if (hp->gating == VKF_GATING_SOFTMAX) {
        memset(&p, 0, sizeof p);
        probs = vkf_gb_new(b, T, hp->n_expert, "l%d.moe_probs", l);
        vkf_gb_node(b, VKF_OP_SOFTMAX, probs, logits, NULL, NULL, NULL, &p);
    } else if (hp->gating == VKF_GATING_SIGMOID) {
        probs = vkf_gb_unary(b, logits, VKF_UNARY_SIGMOID, NM("moe_probs"));
    }
    if (b->s != VKF_OK) return NULL;
    vkf_tensor *ids = vkf_graph_tensor(b->g, VKF_DTYPE_I32, T, k, NM("moe_ids"));
    if (!ids) {
        b->s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "graph %s: out of host memory", b->g->name);
        return NULL;
    }
    memset(&p, 0, sizeof p);
    p.topk.k = (int32_t)k;
    vkf_gb_node(b, VKF_OP_TOPK, ids, probs, NULL, NULL, NULL, &p);
    memset(&p, 0, sizeof p);
    p.moe.softmax_w = hp->gating == VKF_GATING_SOFTMAX_WEIGHT;
    p.moe.norm = m->desc->moe_norm_w;
    p.moe.scale = hp->expert_weights_scale;
    vkf_tensor *w = vkf_gb_new(b, T, k, "l%d.moe_weights", l);
    vkf_gb_node(b, VKF_OP_MOE_WEIGHTS, w, probs, ids, NULL, NULL, &p);
    memset(&p, 0, sizeof p);
    p.moe.n_expert = hp->n_expert;
    vkf_tensor *up = vkf_gb_new(b, T * k, hp->n_ff_exp, "l%d.moe_up", l);
    vkf_gb_node(b, VKF_OP_MUL_MAT_ID, up, h, &L->up_exps, ids, NULL, &p);
    up = dec_moe_bias(b, up, &L->up_exps_b, ids, l, "moe_up");
    vkf_tensor *gate = vkf_gb_new(b, T * k, hp->n_ff_exp, "l%d.moe_gate", l);
    vkf_gb_node(b, VKF_OP_MUL_MAT_ID, gate, h, &L->gate_exps, ids, NULL, &p);
    gate = dec_moe_bias(b, gate, &L->gate_exps_b, ids, l, "moe_gate");
    vkf_op_params pg, po;
    memset(&pg, 0, sizeof pg);
    po = pg;
    if (m->desc->moe_swiglu_oai) { /* llama.cpp's constants (build_moe_ffn) */
        po.glu.oai = 1;
        po.glu.alpha = 1.702f;
        po.glu.limit = 7.0f;
    }
    vkf_tensor *f = vkf_gb_new(b, T * k, hp->n_ff_exp, "l%d.moe_glu", l);
    if (b->s == VKF_OK && (!up || !gate)) return NULL;
    vkf_gb_node(b, VKF_OP_SWIGLU, f, gate, up, NULL, NULL, &po);
    vkf_tensor *e = vkf_gb_new(b, T * k, hp->d_model, "l%d.moe_down", l);
    vkf_gb_node(b, VKF_OP_MUL_MAT_ID, e, f, &L->down_exps, ids, NULL, &p);
    e = dec_moe_bias(b, e, &L->down_exps_b, ids, l, "moe_down");
    if (b->s != VKF_OK || !e) return NULL;
    vkf_tensor *y = vkf_gb_new(b, T, hp->d_model, "l%d.moe_out", l);
    vkf_gb_node(b, VKF_OP_MOE_SUM, y, e, w, NULL, NULL, NULL);
    if (!vkf_tensor_present(&L->gate_shexp) || b->s != VKF_OK) return y;
    /* the shared expert: scaled by its gate where it has one (Qwen2-MoE; llama.cpp: silu(g) /
     * g), else added as it is (Granite MoE Shared) */
    vkf_tensor *sgt = vkf_gb_matmul(b, h, &L->gate_shexp, NULL, NM("shexp_gate"));
    vkf_tensor *sup = vkf_gb_matmul(b, h, &L->up_shexp, NULL, NM("shexp_up"));
    vkf_tensor *sf = vkf_gb_new(b, T, hp->n_ff_shexp, "l%d.shexp_glu", l);
    vkf_gb_node(b, VKF_OP_SWIGLU, sf, sgt, sup, NULL, NULL, &pg);
    vkf_tensor *sd = vkf_gb_matmul(b, sf, &L->down_shexp, NULL, NM("shexp_down"));
    if (!vkf_tensor_present(&L->gate_inp_shexp)) return vkf_gb_add(b, y, sd, NM("ffn_out"));
    vkf_tensor *sl = vkf_gb_matmul(b, h, &L->gate_inp_shexp, NULL, NM("shexp_gate_inp"));
    memset(&p, 0, sizeof p);
    p.unary.act = VKF_UNARY_SIGMOID;
    p.unary.silu_div = 1;
    vkf_tensor *sg = vkf_gb_new(b, T, 1, "l%d.shexp_gate", l);
    vkf_gb_node(b, VKF_OP_UNARY, sg, sl, NULL, NULL, NULL, &p);
    vkf_tensor *so = vkf_gb_new(b, T, hp->d_model, "l%d.shexp_out", l);
    vkf_gb_node(b, VKF_OP_MOE_SUM, so, sd, sg, NULL, NULL, NULL);
    return vkf_gb_add(b, y, so, NM("ffn_out"));
#undef NM
}

static vkf_tensor *dec_layer(vkf_gb *b, vkf_session *s, vkf_sgraph *sg, int l, vkf_tensor *x,
                             vkf_tensor *lens, int32_t B, int32_t n) {
    vkf_model *m = s->m;
    const vkf_hparams *hp = &m->hp;
    const vkf_arch_desc *a = m->desc;
    vkf_layer_w *L = &m->w.dec[l];
    int64_t rows = (int64_t)B * n, qd = (int64_t)hp->n_head * hp->head_dim,
            kvd = (int64_t)hp->n_kv_head * hp->head_dim;
    char nm[64];
#define NM(what) (snprintf(nm, sizeof nm, "l%d.%s", l, what), nm)
    vkf_tensor *h = dec_norm(b, m, x, &L->norm1_w, &L->norm1_b, NM("attn_norm"));
    vkf_tensor *q, *k, *v;
    if (vkf_tensor_present(&L->self.wqkv)) { /* fused Q|K|V: one matmul, three column views */
        vkf_tensor *qkv = LMM(b, h, &L->self.wqkv, &L->self.bqkv, NM("qkv"));
        q = vkf_gb_view(b, qkv, 0, rows, 0, qd);
        k = vkf_gb_view(b, qkv, 0, rows, qd, kvd);
        v = vkf_gb_view(b, qkv, 0, rows, qd + kvd, kvd);
    } else {
        q = LMM(b, h, &L->self.wq, &L->self.bq, NM("q"));
        k = LMM(b, h, &L->self.wk, &L->self.bk, NM("k"));
        v = LMM(b, h, &L->self.wv, &L->self.bv, NM("v"));
    }
    if (b->s != VKF_OK) return NULL;
    if (vkf_tensor_present(&L->q_norm))
        q = a->qk_norm_full ? vkf_gb_rmsnorm(b, q, &L->q_norm, hp->eps, NM("q_norm"))
                            : dec_head_norm(b, m, q, &L->q_norm, hp->n_head, NM("q_norm"));
    if (vkf_tensor_present(&L->k_norm))
        k = a->qk_norm_full ? vkf_gb_rmsnorm(b, k, &L->k_norm, hp->eps, NM("k_norm"))
                            : dec_head_norm(b, m, k, &L->k_norm, hp->n_kv_head, NM("k_norm"));
    if (a->pos == VKF_POS_ROPE && !(a->nope_period > 0 && (l + 1) % a->nope_period == 0)) {
        q = dec_rope(b, s, sg, l, q, hp->n_head, n, "q_rope");
        k = dec_rope(b, s, sg, l, k, hp->n_kv_head, n, "k_rope");
    }
    if (b->s != VKF_OK) return NULL;
    dec_store_kv(b, s, sg, l, k, v, B, n);
    vkf_attn_params ap = {
        .batch = B,
        .n_q = n,
        .n_kv = s->n_ctx,
        .kv_stride = s->n_ctx,
        .n_head = hp->n_head,
        .n_kv_head = hp->n_kv_head,
        .head_dim = hp->head_dim,
        .causal = 1,
        .kv_dyn = 1,
        .scale = hp->attn_scale_by_layer ? hp->attn_scale / (float)(l + 1) : hp->attn_scale,
        .window = vkf_layer_swa(hp, l) ? hp->swa_window : 0,
        .softcap = hp->attn_softcap,
        .scale_q = a->scale_q,
    };
    vkf_tensor *kc = &s->kc[l], *vc = &s->vc[l];
    if (sg->seq0 > 0) { /* serve: one sequence's prompt, or a step's busy range of sequences, in
                         * their own regions of the caches */
        kc = vkf_gb_view(b, kc, (int64_t)sg->seq0 * s->n_ctx, (int64_t)B * s->n_ctx, 0, kvd);
        vc = vkf_gb_view(b, vc, (int64_t)sg->seq0 * s->n_ctx, (int64_t)B * s->n_ctx, 0, kvd);
    }
    /* serve's batched step: sequence b sees its first key_lens[b] keys, with a static key count
     * so that its result does not depend on the other sequences' positions; its query sits at
     * position key_lens[b] - 1 (len_pos), where the sliding window is placed */
    if (sg->flags & VKF_SG_PERSEQ) {
        ap.kv_dyn = 0;
        ap.len_pos = 1;
    }
    vkf_tensor *at = vkf_gb_attention_sinks(b, q, kc, vc, lens, &L->attn_sinks, &ap, NM("attn"));
    vkf_tensor *o = LMM(b, at, &L->self.wo, &L->self.bo, NM("attn_out"));
    if (a->post_norms) o = vkf_gb_rmsnorm(b, o, &L->post_attn_norm, hp->eps, NM("post_attn_norm"));
    if (hp->res_scale != 0.0f) o = vkf_gb_scale(b, o, hp->res_scale, NM("attn_out_scaled"));
    x = vkf_gb_add(b, x, o, NM("res1"));

    h = dec_norm(b, m, x, &L->norm2_w, &L->norm2_b, NM("ffn_norm"));
    vkf_tensor *dn;
    if (hp->n_expert > 0) {
        dn = dec_moe(b, m, L, h, l);
    } else {
        vkf_tensor *f = dec_ffn(b, m, L, h, nm, sizeof nm, l);
        dn = LMM(b, f, &L->w_down, &L->b_down, NM("down"));
    }
    if (a->post_norms) dn = vkf_gb_rmsnorm(b, dn, &L->post_ffn_norm, hp->eps, NM("post_ffn_norm"));
    if (hp->res_scale != 0.0f) dn = vkf_gb_scale(b, dn, hp->res_scale, NM("down_scaled"));
    return vkf_gb_add(b, x, dn, NM("res2"));
#undef NM
}

/* ------------------------------------------------------------------ layer split
 * The graph of a split model is one graph per device (model/split.c), cut where the next layer
 * lives on the next device: the residual stream x is copied into the IO tensor xout of this
 * device, the session moves it through the host into xin of the next one (model/session.c),
 * where the next graph starts from it. The per-step inputs every layer reads (key lengths, and
 * serve's positions and cache rows) get one copy per device; sg's fields point at the current
 * device's while building. */

static vkf_status dec_part_begin(vkf_session *s, vkf_sgraph *sg, vkf_gb *b, int d,
                                 const char *name) {
    vkf_model *m = s->m;
    vkf_sgpart *pt = &sg->part[d];
    pt->be = vkf_model_dev_be(m, d);
    char nm[80];
    snprintf(nm, sizeof nm, "%s dev%d", name, d);
    VKF_TRY(vkf_graph_create(pt->be, nm, &b->g));
    dec_plan_batch(s, sg, b->g);
    pt->g = b->g;
    sg->n_parts = d + 1;
    sg->cur = d;
    if (d == 0) return VKF_OK; /* part 0's inputs are the sgraph's own */
    pt->lens = vkf_tensor_make(VKF_DTYPE_I32, 1, sg->batch, "key_lens");
    VKF_TRY(vkf_tensor_alloc(pt->be, &pt->lens, VKF_BUFFER_IO, NULL));
    if (sg->flags & VKF_SG_PERSEQ) VKF_TRY(dec_perseq_inputs(pt->be, sg, &pt->pos, &pt->kvrow));
    return VKF_OK;
}

/* Ends device d's graph with x copied out, starts device d + 1's from the copy. */
static vkf_tensor *dec_hand_off(vkf_session *s, vkf_sgraph *sg, vkf_gb *b, vkf_tensor *x, int d,
                                const char *name) {
    if (b->s != VKF_OK) return NULL;
    vkf_sgpart *pt = &sg->part[d], *nx = &sg->part[d + 1];
    pt->xout = vkf_tensor_make(VKF_DTYPE_F32, x->rows, x->cols, "residual_out");
    if ((b->s = vkf_tensor_alloc(pt->be, &pt->xout, VKF_BUFFER_IO, NULL)) != VKF_OK) return NULL;
    vkf_gb_copy_rows(b, &pt->xout, x, 0, 0);
    if (b->s == VKF_OK) b->s = vkf_graph_plan(b->g);
    if (b->s == VKF_OK) b->s = dec_part_begin(s, sg, b, d + 1, name);
    if (b->s != VKF_OK) return NULL;
    nx->xin = vkf_tensor_make(VKF_DTYPE_F32, x->rows, x->cols, "residual_in");
    if ((b->s = vkf_tensor_alloc(nx->be, &nx->xin, VKF_BUFFER_IO, NULL)) != VKF_OK) return NULL;
    return &nx->xin;
}

vkf_status vkf_build_decoder_graph(vkf_session *s, vkf_sgraph *sg) {
    vkf_model *m = s->m;
    const vkf_hparams *hp = &m->hp;
    int32_t B = sg->batch, n = sg->n;
    int64_t rows = (int64_t)B * n, d = hp->d_model;
    int last_only = (sg->flags & VKF_SG_LAST_ONLY) != 0;
    char name[64];
    snprintf(name, sizeof name, "%s n%d b%d%s", vkf_model_arch_name(m), n, B,
             last_only ? " last" : "");
    vkf_gb b = {NULL, VKF_OK, s->lora, s->n_lora};
    int split = m->n_dev > 1, dev = 0;
    if (split)
        VKF_TRY(dec_part_begin(s, sg, &b, 0, name));
    else
        VKF_TRY(vkf_graph_create(m->be, name, &b.g));
    dec_plan_batch(s, sg, b.g);
    sg->g = b.g;

    sg->ids = vkf_tensor_make(VKF_DTYPE_I32, 1, rows, "ids");
    sg->lens = vkf_tensor_make(VKF_DTYPE_I32, 1, B, "key_lens");
    sg->out = vkf_tensor_make(VKF_DTYPE_F32, last_only ? B : rows, hp->n_vocab, "logits");
    VKF_TRY(vkf_tensor_alloc(m->be, &sg->ids, VKF_BUFFER_IO, NULL));
    VKF_TRY(vkf_tensor_alloc(m->be, &sg->lens, VKF_BUFFER_IO, NULL));
    /* the logits come from the head, on the last device */
    VKF_TRY(vkf_tensor_alloc(vkf_model_dev_be(m, m->n_dev - 1), &sg->out, VKF_BUFFER_IO, NULL));
    sg->part[0].lens = sg->lens;

    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.embed.scale = hp->emb_scale; /* gemma: sqrt(d_model) */
    vkf_tensor *x = vkf_gb_new(&b, rows, d, "embd");
    vkf_gb_node(&b, VKF_OP_EMBED, x, &m->w.tok_embd, &sg->ids, NULL, NULL, &p);
    if (sg->flags & VKF_SG_PERSEQ) {
        VKF_TRY(dec_perseq_inputs(m->be, sg, &sg->pos, &sg->kvrow));
        sg->part[0].pos = sg->pos;
        sg->part[0].kvrow = sg->kvrow;
    }
    if (vkf_tensor_present(&m->w.pos_embd) &&
        (sg->flags & VKF_SG_PERSEQ)) { /* serve: wpe[pos[r]] */
        x = vkf_gb_add(&b, x, dec_perseq_table(&b, &m->w.pos_embd, sg, "embd_pos_rows"),
                       "embd_pos");
    } else if (vkf_tensor_present(&m->w.pos_embd)) { /* learned absolute positions at n_past + i */
        memset(&p, 0, sizeof p);
        p.pos.seq_len = n;
        p.pos.dyn = 1;
        vkf_tensor *xp = vkf_gb_new(&b, rows, d, "embd_pos");
        vkf_gb_node(&b, VKF_OP_ADD_POS, xp, x, &m->w.pos_embd, NULL, NULL, &p);
        x = xp;
    }
    for (int l = 0; l < hp->n_layer && b.s == VKF_OK; l++) {
        for (int ld = vkf_model_layer_dev(m, l); dev < ld && b.s == VKF_OK; dev++)
            x = dec_hand_off(s, sg, &b, x, dev, name);
        if (b.s == VKF_OK) x = dec_layer(&b, s, sg, l, x, dec_lens(sg), B, n);
    }
    while (split && dev < m->n_dev - 1 && b.s == VKF_OK) /* the head's device holds no layer */
        x = dec_hand_off(s, sg, &b, x, dev++, name);
    VKF_TRY(b.s);

    if (last_only) { /* the head on row n-1 of each sequence: a strided view, one row per sequence
                      */
        vkf_tensor *xl = vkf_gb_view(&b, x, n - 1, 1, 0, d);
        if (xl) {
            xl->rows = B;
            xl->row_stride = x->row_stride * n;
        }
        x = xl;
    }
    vkf_tensor *h = dec_norm(&b, m, x, &m->w.out_norm_w, &m->w.out_norm_b, "out_norm");
    vkf_tensor *bias = vkf_tensor_present(&m->w.output_b) ? &m->w.output_b : NULL;
    if (hp->final_softcap > 0 || hp->logit_scale != 0.0f || vkf_lora_adapts(&b, &m->w.output)) {
        /* logits c tanh(l / c) (gemma); l * (1 / logit_scale) (granite); an adapted head: its
         * sum copied out (times 1, exact) */
        vkf_tensor *lg = LMM(&b, h, &m->w.output, bias, "logits_raw");
        memset(&p, 0, sizeof p);
        p.scale.scale = hp->logit_scale != 0.0f ? 1.0f / hp->logit_scale : 1.0f;
        p.scale.softcap = hp->final_softcap;
        if (lg) vkf_gb_node(&b, VKF_OP_SCALE, &sg->out, lg, NULL, NULL, NULL, &p);
    } else {
        vkf_gb_node(&b, VKF_OP_MATMUL, &sg->out, h, &m->w.output, bias, NULL, NULL);
    }
    VKF_TRY(b.s);
    return vkf_graph_plan(b.g);
}
