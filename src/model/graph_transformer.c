/* The encoder-decoder Transformer as graphs of the foundation's ops
 * (the seed-transformer sets' README.md, "Exact model definition", written by
 * tools/refs/make_seed_transformer.py).
 *
 * Encoder graph (once per source): x = E_src[ids] * scale + PE; per layer (post-LN)
 *     x = LN1(x + MHA(x, x, source padding));  x = LN2(x + W2 act(W1 x))
 * memory = LN_enc(x); then, for every decoder layer, the cross-attention K|V of the memory
 * (one [2d, d] matmul) is copied into the session's cross caches, so decoding never recomputes
 * it. Decoder graph (per step, replayed with n_past):
 *     x = E_tgt[ids] * scale + PE[n_past + i]; per layer
 *     x = LN1(x + MHA(x, cache, causal, target padding));  x = LN2(x + MHA(x, memory K/V,
 *     source padding));  x = LN3(x + FF(x));  log_softmax(generator(LN_dec(x)))
 * norm_first (pre-LN) moves each norm to the sublayer input: x = x + SA(LN1(x)), ... */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "model/build.h"
#include "model/model.h"

/* Residual sublayer: post-LN gives norm(x + f), pre-LN gives x + f with f computed on norm(x);
 * `in` returns the sublayer's input. */
static vkf_tensor *tf_sub_in(vkf_gb *b, const vkf_model *m, vkf_tensor *x, vkf_tensor *nw,
                             vkf_tensor *nb, const char *name) {
    return m->hp.norm_first ? vkf_gb_layernorm(b, x, nw, nb, m->hp.eps, name) : x;
}

static vkf_tensor *tf_sub_out(vkf_gb *b, const vkf_model *m, vkf_tensor *x, vkf_tensor *f,
                              vkf_tensor *nw, vkf_tensor *nb, const char *name) {
    vkf_tensor *r = vkf_gb_add(b, x, f, name);
    return m->hp.norm_first ? r : vkf_gb_layernorm(b, r, nw, nb, m->hp.eps, name);
}

static vkf_tensor *tf_ffn(vkf_gb *b, const vkf_model *m, const vkf_layer_w *L, vkf_tensor *x, int l,
                          const char *side) {
    char nm[64];
    snprintf(nm, sizeof nm, "%s%d.ff1", side, l);
    vkf_tensor *u = vkf_gb_matmul(b, x, (vkf_tensor *)&L->w_up, (vkf_tensor *)&L->b_up, nm);
    snprintf(nm, sizeof nm, "%s%d.act", side, l);
    u = vkf_gb_unary(b, u, m->hp.act, nm);
    snprintf(nm, sizeof nm, "%s%d.ff2", side, l);
    return vkf_gb_matmul(b, u, (vkf_tensor *)&L->w_down, (vkf_tensor *)&L->b_down, nm);
}

/* x = E[ids] * emb_scale + PE[pos] */
static vkf_tensor *tf_embed(vkf_gb *b, const vkf_model *m, vkf_tensor *table, vkf_tensor *ids,
                            int64_t rows, int32_t n, int dyn) {
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.embed.scale = m->hp.emb_scale;
    vkf_tensor *x = vkf_gb_new(b, rows, m->hp.d_model, "embd");
    vkf_gb_node(b, VKF_OP_EMBED, x, table, ids, NULL, NULL, &p);
    memset(&p, 0, sizeof p);
    p.pos.seq_len = n;
    p.pos.dyn = dyn;
    vkf_tensor *xp = vkf_gb_new(b, rows, m->hp.d_model, "embd_pos");
    vkf_gb_node(b, VKF_OP_ADD_POS, xp, x, (vkf_tensor *)&m->w.pos_embd, NULL, NULL, &p);
    return xp;
}

/* Multi-head attention of B sequences of n queries over n_kv keys each (kv_stride = n_kv rows
 * apart in K and V), every head with its own K/V; causal + kv_dyn: the decoder's masked
 * self-attention through the cache, neither: the encoder's and the cross-attention. */
static vkf_attn_params tf_attn(const vkf_hparams *hp, int32_t B, int32_t n, int32_t n_kv,
                               int causal, int kv_dyn) {
    vkf_attn_params ap = {
        .batch = B,
        .n_q = n,
        .n_kv = n_kv,
        .kv_stride = n_kv,
        .n_head = hp->n_head,
        .n_kv_head = hp->n_head,
        .head_dim = hp->head_dim,
        .causal = causal,
        .kv_dyn = kv_dyn,
        .scale = hp->attn_scale,
    };
    return ap;
}

/* the graph's ids, lengths and output in IO buffers (the host writes and reads them) */
static vkf_status tf_alloc_io(vkf_model *m, vkf_sgraph *sg) {
    VKF_TRY(vkf_tensor_alloc(m->be, &sg->ids, VKF_BUFFER_IO, NULL));
    VKF_TRY(vkf_tensor_alloc(m->be, &sg->lens, VKF_BUFFER_IO, NULL));
    return vkf_tensor_alloc(m->be, &sg->out, VKF_BUFFER_IO, NULL);
}

/* ------------------------------------------------------------------ encoder */

vkf_status vkf_build_encoder_graph(vkf_session *s, vkf_sgraph *sg) {
    vkf_model *m = s->m;
    const vkf_hparams *hp = &m->hp;
    int32_t B = sg->batch, n = sg->n, rep = sg->rep;
    int64_t rows = (int64_t)B * n, d = hp->d_model;
    char name[64], nm[64];
    snprintf(name, sizeof name, "transformer encoder n%d b%d x%d", n, B, rep);
    vkf_gb b = {.g = NULL, .s = VKF_OK};
    VKF_TRY(vkf_graph_create(m->be, name, &b.g));
    sg->g = b.g;
    sg->ids = vkf_tensor_make(VKF_DTYPE_I32, 1, rows, "src_ids");
    sg->lens = vkf_tensor_make(VKF_DTYPE_I32, 1, B, "src_lens");
    sg->out = vkf_tensor_make(VKF_DTYPE_F32, rows, d, "memory");
    VKF_TRY(tf_alloc_io(m, sg));

    vkf_tensor *x = tf_embed(&b, m, &m->w.src_embd, &sg->ids, rows, n, 0);
    vkf_attn_params ap = tf_attn(hp, B, n, n, 0, 0);
    for (int l = 0; l < hp->n_enc_layer && b.s == VKF_OK; l++) {
        vkf_layer_w *L = &m->w.enc[l];
        snprintf(nm, sizeof nm, "e%d.norm1", l);
        vkf_tensor *h = tf_sub_in(&b, m, x, &L->norm1_w, &L->norm1_b, nm);
        snprintf(nm, sizeof nm, "e%d.qkv", l);
        vkf_tensor *qkv = vkf_gb_matmul(&b, h, &L->self.wqkv, &L->self.bqkv, nm);
        if (!qkv) break;
        vkf_tensor *q = vkf_gb_view(&b, qkv, 0, rows, 0, d);
        vkf_tensor *k = vkf_gb_view(&b, qkv, 0, rows, d, d);
        vkf_tensor *v = vkf_gb_view(&b, qkv, 0, rows, 2 * d, d);
        snprintf(nm, sizeof nm, "e%d.attn", l);
        vkf_tensor *a = vkf_gb_attention(&b, q, k, v, &sg->lens, &ap, nm); /* source key padding */
        snprintf(nm, sizeof nm, "e%d.attn_out", l);
        vkf_tensor *o = vkf_gb_matmul(&b, a, &L->self.wo, &L->self.bo, nm);
        snprintf(nm, sizeof nm, "e%d.res1", l);
        x = tf_sub_out(&b, m, x, o, &L->norm1_w, &L->norm1_b, nm);
        snprintf(nm, sizeof nm, "e%d.norm2", l);
        h = tf_sub_in(&b, m, x, &L->norm2_w, &L->norm2_b, nm);
        vkf_tensor *f = tf_ffn(&b, m, L, h, l, "e");
        snprintf(nm, sizeof nm, "e%d.res2", l);
        x = tf_sub_out(&b, m, x, f, &L->norm2_w, &L->norm2_b, nm);
    }
    VKF_TRY(b.s);
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.norm.eps = hp->eps;
    vkf_gb_node(&b, VKF_OP_LAYERNORM, &sg->out, x, &m->w.enc_norm_w, &m->w.enc_norm_b, NULL, &p);

    /* cross-attention K|V of the memory for every decoder layer, rep copies per source */
    for (int l = 0; l < hp->n_layer && b.s == VKF_OK; l++) {
        vkf_layer_w *L = &m->w.dec[l];
        snprintf(nm, sizeof nm, "d%d.cross_kv", l);
        vkf_tensor *kv = vkf_gb_matmul(&b, &sg->out, &L->cross.wkv, &L->cross.bkv, nm);
        if (!kv) break;
        for (int32_t q = 0; q < B; q++) {
            vkf_tensor *k = vkf_gb_view(&b, kv, (int64_t)q * n, n, 0, d);
            vkf_tensor *v = vkf_gb_view(&b, kv, (int64_t)q * n, n, d, d);
            for (int32_t r = 0; r < rep; r++) {
                int32_t slot = q * rep + r;
                vkf_gb_copy_rows(&b, &s->xk[l], k, slot * s->n_src_max, 0);
                vkf_gb_copy_rows(&b, &s->xv[l], v, slot * s->n_src_max, 0);
            }
        }
    }
    VKF_TRY(b.s);
    return vkf_graph_plan(b.g);
}

/* ------------------------------------------------------------------ decoder */

vkf_status vkf_build_encdec_decoder_graph(vkf_session *s, vkf_sgraph *sg) {
    vkf_model *m = s->m;
    const vkf_hparams *hp = &m->hp;
    int32_t B = sg->batch, n = sg->n;
    int64_t rows = (int64_t)B * n, d = hp->d_model;
    char name[64], nm[64];
    snprintf(name, sizeof name, "transformer decoder n%d b%d%s", n, B,
             (sg->flags & VKF_SG_LAST_ONLY) ? " last" : "");
    vkf_gb b = {.g = NULL, .s = VKF_OK};
    VKF_TRY(vkf_graph_create(m->be, name, &b.g));
    sg->g = b.g;
    sg->ids = vkf_tensor_make(VKF_DTYPE_I32, 1, rows, "tgt_ids");
    sg->lens = vkf_tensor_make(VKF_DTYPE_I32, 1, B, "tgt_lens");
    int last_only = (sg->flags & VKF_SG_LAST_ONLY) != 0;
    sg->out = vkf_tensor_make(VKF_DTYPE_F32, last_only ? B : rows, hp->n_vocab, "logprobs");
    VKF_TRY(tf_alloc_io(m, sg));
    /* the first B entries of the session's source lengths (written by the encoder) */
    vkf_tensor *src_lens = vkf_gb_view(&b, &s->src_lens, 0, 1, 0, B);

    vkf_tensor *x = tf_embed(&b, m, &m->w.tok_embd, &sg->ids, rows, n, 1);
    vkf_attn_params self = tf_attn(hp, B, n, s->n_ctx, 1, 1);
    /* cross-attention reads n_src_max memory rows per sequence; the source lengths mask the
     * rest, so one decoder graph serves every source length */
    vkf_attn_params cross = tf_attn(hp, B, n, s->n_src_max, 0, 0);
    for (int l = 0; l < hp->n_layer && b.s == VKF_OK; l++) {
        vkf_layer_w *L = &m->w.dec[l];
        /* masked self-attention through the KV cache */
        snprintf(nm, sizeof nm, "d%d.norm1", l);
        vkf_tensor *h = tf_sub_in(&b, m, x, &L->norm1_w, &L->norm1_b, nm);
        snprintf(nm, sizeof nm, "d%d.qkv", l);
        vkf_tensor *qkv = vkf_gb_matmul(&b, h, &L->self.wqkv, &L->self.bqkv, nm);
        if (!qkv) break;
        vkf_tensor *q = vkf_gb_view(&b, qkv, 0, rows, 0, d);
        for (int32_t sq = 0; sq < B; sq++) {
            vkf_gb_copy_rows(&b, &s->kc[l], vkf_gb_view(&b, qkv, (int64_t)sq * n, n, d, d),
                             sq * s->n_ctx, 1);
            vkf_gb_copy_rows(&b, &s->vc[l], vkf_gb_view(&b, qkv, (int64_t)sq * n, n, 2 * d, d),
                             sq * s->n_ctx, 1);
        }
        snprintf(nm, sizeof nm, "d%d.self_attn", l);
        vkf_tensor *a = vkf_gb_attention(&b, q, &s->kc[l], &s->vc[l], &sg->lens, &self, nm);
        snprintf(nm, sizeof nm, "d%d.self_out", l);
        vkf_tensor *o = vkf_gb_matmul(&b, a, &L->self.wo, &L->self.bo, nm);
        snprintf(nm, sizeof nm, "d%d.res1", l);
        x = tf_sub_out(&b, m, x, o, &L->norm1_w, &L->norm1_b, nm);
        /* cross-attention over the memory */
        snprintf(nm, sizeof nm, "d%d.norm2", l);
        h = tf_sub_in(&b, m, x, &L->norm2_w, &L->norm2_b, nm);
        snprintf(nm, sizeof nm, "d%d.cross_q", l);
        vkf_tensor *cq = vkf_gb_matmul(&b, h, &L->cross.wq, &L->cross.bq, nm);
        snprintf(nm, sizeof nm, "d%d.cross_attn", l);
        a = vkf_gb_attention(&b, cq, &s->xk[l], &s->xv[l], src_lens, &cross, nm);
        snprintf(nm, sizeof nm, "d%d.cross_out", l);
        o = vkf_gb_matmul(&b, a, &L->cross.wo, &L->cross.bo, nm);
        snprintf(nm, sizeof nm, "d%d.res2", l);
        x = tf_sub_out(&b, m, x, o, &L->norm2_w, &L->norm2_b, nm);
        /* feed-forward */
        snprintf(nm, sizeof nm, "d%d.norm3", l);
        h = tf_sub_in(&b, m, x, &L->norm3_w, &L->norm3_b, nm);
        vkf_tensor *f = tf_ffn(&b, m, L, h, l, "d");
        snprintf(nm, sizeof nm, "d%d.res3", l);
        x = tf_sub_out(&b, m, x, f, &L->norm3_w, &L->norm3_b, nm);
    }
    VKF_TRY(b.s);
    if (last_only) { /* the generator on row n-1 of each sequence: a strided view */
        vkf_tensor *xl = vkf_gb_view(&b, x, n - 1, 1, 0, d);
        if (xl) {
            xl->rows = B;
            xl->row_stride = x->row_stride * n;
        }
        x = xl;
    }
    vkf_tensor *y =
        vkf_gb_layernorm(&b, x, &m->w.out_norm_w, &m->w.out_norm_b, hp->eps, "dec_norm");
    vkf_tensor *logits = vkf_gb_matmul(&b, y, &m->w.output, &m->w.output_b, "generator");
    vkf_gb_node(&b, VKF_OP_LOG_SOFTMAX, &sg->out, logits, NULL, NULL, NULL, NULL);
    VKF_TRY(b.s);
    return vkf_graph_plan(b.g);
}
