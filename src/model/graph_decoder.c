/* The decoder-only forward pass (gpt2, llama) as one graph of the foundation's ops.
 *
 * One graph per (tokens per step n, sequences B, last-only head). Positions come from n_past
 * (ADD_POS / ROPE / COPY_ROWS / ATTENTION kv_dyn), token ids and key lengths from input
 * tensors rewritten before each compute, so the same graph replays for every decoding step.
 *
 *   gpt2:  x = wte[ids] + wpe[pos];  per layer: x += attn(LN1 x);  x += W2 act(W1 LN2 x)
 *   llama: x = embd[ids];            per layer: x += attn(RMS1 x); x += down(silu(gate h) * up h)
 *   logits = head(norm(x)) */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "model/build.h"
#include "model/model.h"

/* ------------------------------------------------------------------ serve batching
 * Sequences at their own positions
 * (VKF_SG_PERSEQ, one token per sequence). Positions come from the input tensor pos: the rows
 * of a position table (RoPE, learned) are gathered with EMBED, so ROPE / ADD see row r at
 * position pos[r]; each sequence's K/V row goes to the cache row kvrow[b] (COPY_ROWS with a
 * row offset source). */

static vkf_status dec_perseq_inputs(vkf_session *s, vkf_sgraph *sg) {
    sg->pos = vkf_tensor_make(VKF_DTYPE_I32, 1, sg->batch, "positions");
    sg->kvrow = vkf_tensor_make(VKF_DTYPE_I32, 1, sg->batch, "kv_rows");
    VKF_TRY(vkf_tensor_alloc(s->m->be, &sg->pos, VKF_BUFFER_IO, NULL));
    return vkf_tensor_alloc(s->m->be, &sg->kvrow, VKF_BUFFER_IO, NULL);
}

/* rows pos[0..batch) of a position table */
static vkf_tensor *dec_perseq_table(vkf_gb *b, vkf_tensor *table, vkf_sgraph *sg,
                                    const char *name) {
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.embed.scale = 1.0f;
    vkf_tensor *t = vkf_gb_new(b, sg->batch, table->cols, "%s", name);
    vkf_gb_node(b, VKF_OP_EMBED, t, table, &sg->pos, NULL, NULL, &p);
    return t;
}

static void dec_store_kv_perseq(vkf_gb *b, vkf_session *s, vkf_sgraph *sg, int l, vkf_tensor *k,
                                vkf_tensor *v) {
    int64_t kvd = k->cols;
    vkf_op_params p;
    memset(&p, 0, sizeof p);
    for (int32_t q = 0; q < sg->batch; q++) {
        vkf_tensor *row = vkf_gb_view(b, &sg->kvrow, 0, 1, q, 1);
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

static vkf_tensor *dec_norm(vkf_gb *b, const vkf_model *m, vkf_tensor *x, vkf_tensor *w, vkf_tensor *bias,
                            const char *name) {
    if (m->arch == VKF_ARCH_LLAMA) return vkf_gb_rmsnorm(b, x, w, m->hp.eps, name);
    return vkf_gb_layernorm(b, x, w, bias, m->hp.eps, name);
}

static vkf_tensor *dec_layer(vkf_gb *b, vkf_session *s, vkf_sgraph *sg, int l, vkf_tensor *x,
                             vkf_tensor *lens, int32_t B, int32_t n) {
    vkf_model *m = s->m;
    const vkf_hparams *hp = &m->hp;
    vkf_layer_w *L = &m->w.dec[l];
    int64_t rows = (int64_t)B * n, qd = (int64_t)hp->n_head * hp->head_dim, kvd = (int64_t)hp->n_kv_head * hp->head_dim;
    char nm[64];
#define NM(what) (snprintf(nm, sizeof nm, "l%d.%s", l, what), nm)
    vkf_tensor *h = dec_norm(b, m, x, &L->norm1_w, &L->norm1_b, NM("attn_norm"));
    vkf_tensor *q, *k, *v;
    if (vkf_tensor_present(&L->self.wqkv)) { /* fused Q|K|V: one matmul, three column views */
        vkf_tensor *qkv = vkf_gb_matmul(b, h, &L->self.wqkv, &L->self.bqkv, NM("qkv"));
        q = vkf_gb_view(b, qkv, 0, rows, 0, qd);
        k = vkf_gb_view(b, qkv, 0, rows, qd, kvd);
        v = vkf_gb_view(b, qkv, 0, rows, qd + kvd, kvd);
    } else {
        q = vkf_gb_matmul(b, h, &L->self.wq, &L->self.bq, NM("q"));
        k = vkf_gb_matmul(b, h, &L->self.wk, &L->self.bk, NM("k"));
        v = vkf_gb_matmul(b, h, &L->self.wv, &L->self.bv, NM("v"));
    }
    if (m->arch == VKF_ARCH_LLAMA) {
        vkf_op_params p;
        memset(&p, 0, sizeof p);
        p.rope.seq_len = n;
        p.rope.dyn = 1;
        vkf_tensor *rope = &m->w.rope;
        if (sg->flags & VKF_SG_PERSEQ) { /* serve: row r's rotation gathered at pos[r] */
            rope = dec_perseq_table(b, &m->w.rope, sg, NM("rope_rows"));
            p.rope.seq_len = B;
            p.rope.dyn = 0;
        }
        p.rope.head_dim = hp->head_dim;
        p.rope.n_rot = hp->n_rot;
        p.rope.mode = VKF_ROPE_NORMAL; /* GGUF llama: adjacent pairs (x[2i], x[2i+1]) */
        p.rope.n_head = hp->n_head;
        vkf_tensor *qr = vkf_gb_new(b, rows, qd, "l%d.q_rope", l);
        vkf_gb_node(b, VKF_OP_ROPE, qr, q, rope, NULL, NULL, &p);
        p.rope.n_head = hp->n_kv_head;
        vkf_tensor *kr = vkf_gb_new(b, rows, kvd, "l%d.k_rope", l);
        vkf_gb_node(b, VKF_OP_ROPE, kr, k, rope, NULL, NULL, &p);
        q = qr;
        k = kr;
    }
    if (b->s != VKF_OK) return NULL;
    dec_store_kv(b, s, sg, l, k, v, B, n);
    vkf_attn_params ap = {
        .batch = B, .n_q = n, .n_kv = s->n_ctx, .kv_stride = s->n_ctx,
        .n_head = hp->n_head, .n_kv_head = hp->n_kv_head, .head_dim = hp->head_dim,
        .causal = 1, .kv_dyn = 1,
        .scale = hp->attn_scale_by_layer ? hp->attn_scale / (float)(l + 1) : hp->attn_scale,
    };
    vkf_tensor *kc = &s->kc[l], *vc = &s->vc[l];
    if (sg->seq0 > 0) { /* serve: one sequence's prompt, in its own region of the caches */
        kc = vkf_gb_view(b, kc, (int64_t)sg->seq0 * s->n_ctx, (int64_t)B * s->n_ctx, 0, kvd);
        vc = vkf_gb_view(b, vc, (int64_t)sg->seq0 * s->n_ctx, (int64_t)B * s->n_ctx, 0, kvd);
    }
    /* serve's batched step: sequence b sees its first key_lens[b] keys, with a static key count
     * so that its result does not depend on the other sequences' positions */
    if (sg->flags & VKF_SG_PERSEQ) ap.kv_dyn = 0;
    vkf_tensor *a = vkf_gb_attention(b, q, kc, vc, lens, &ap, NM("attn"));
    vkf_tensor *o = vkf_gb_matmul(b, a, &L->self.wo, &L->self.bo, NM("attn_out"));
    x = vkf_gb_add(b, x, o, NM("res1"));

    h = dec_norm(b, m, x, &L->norm2_w, &L->norm2_b, NM("ffn_norm"));
    vkf_tensor *f;
    if (m->arch == VKF_ARCH_LLAMA) {
        vkf_tensor *g = vkf_gb_matmul(b, h, &L->w_gate, NULL, NM("gate"));
        vkf_tensor *u = vkf_gb_matmul(b, h, &L->w_up, NULL, NM("up"));
        f = vkf_gb_swiglu(b, g, u, NM("swiglu"));
    } else {
        vkf_tensor *u = vkf_gb_matmul(b, h, &L->w_up, &L->b_up, NM("up"));
        f = vkf_gb_unary(b, u, hp->act, NM("act"));
    }
    vkf_tensor *dn = vkf_gb_matmul(b, f, &L->w_down, &L->b_down, NM("down"));
    return vkf_gb_add(b, x, dn, NM("res2"));
#undef NM
}

vkf_status vkf_build_decoder_graph(vkf_session *s, vkf_sgraph *sg) {
    vkf_model *m = s->m;
    const vkf_hparams *hp = &m->hp;
    int32_t B = sg->batch, n = sg->n;
    int64_t rows = (int64_t)B * n, d = hp->d_model;
    int last_only = (sg->flags & VKF_SG_LAST_ONLY) != 0;
    char name[64];
    snprintf(name, sizeof name, "%s n%d b%d%s", vkf_arch_name(m->arch), n, B, last_only ? " last" : "");
    vkf_gb b = {NULL, VKF_OK};
    VKF_TRY(vkf_graph_create(m->be, name, &b.g));
    sg->g = b.g;

    sg->ids = vkf_tensor_make(VKF_DTYPE_I32, 1, rows, "ids");
    sg->lens = vkf_tensor_make(VKF_DTYPE_I32, 1, B, "key_lens");
    sg->out = vkf_tensor_make(VKF_DTYPE_F32, last_only ? B : rows, hp->n_vocab, "logits");
    VKF_TRY(vkf_tensor_alloc(m->be, &sg->ids, VKF_BUFFER_IO, NULL));
    VKF_TRY(vkf_tensor_alloc(m->be, &sg->lens, VKF_BUFFER_IO, NULL));
    VKF_TRY(vkf_tensor_alloc(m->be, &sg->out, VKF_BUFFER_IO, NULL));

    vkf_op_params p;
    memset(&p, 0, sizeof p);
    p.embed.scale = 1.0f;
    vkf_tensor *x = vkf_gb_new(&b, rows, d, "embd");
    vkf_gb_node(&b, VKF_OP_EMBED, x, &m->w.tok_embd, &sg->ids, NULL, NULL, &p);
    if (sg->flags & VKF_SG_PERSEQ) VKF_TRY(dec_perseq_inputs(s, sg));
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
    for (int l = 0; l < hp->n_layer && b.s == VKF_OK; l++)
        x = dec_layer(&b, s, sg, l, x, &sg->lens, B, n);
    VKF_TRY(b.s);

    if (last_only) { /* the head on row n-1 of each sequence: a strided view, one row per sequence */
        vkf_tensor *xl = vkf_gb_view(&b, x, n - 1, 1, 0, d);
        if (xl) {
            xl->rows = B;
            xl->row_stride = x->row_stride * n;
        }
        x = xl;
    }
    vkf_tensor *h = dec_norm(&b, m, x, &m->w.out_norm_w, &m->w.out_norm_b, "out_norm");
    vkf_gb_node(&b, VKF_OP_MATMUL, &sg->out, h, &m->w.output, vkf_tensor_present(&m->w.output_b) ? &m->w.output_b : NULL,
                NULL, NULL);
    VKF_TRY(b.s);
    return vkf_graph_plan(b.g);
}
