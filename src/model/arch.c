/* The architecture registry, the tensor slots and what every decoder loader shares: loading
 * the slots a descriptor names, and the RoPE tables. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "graph/ops.h"
#include "model/arch.h"
#include "model/model.h"
#include "runtime/context.h"

extern const vkf_arch_desc vkf_arch_llama, vkf_arch_gpt2, vkf_arch_qwen2, vkf_arch_qwen3,
    vkf_arch_gemma2, vkf_arch_gemma3, vkf_arch_phi3, vkf_arch_smollm3, vkf_arch_bert,
    vkf_arch_nomic_bert, vkf_arch_qwen2moe, vkf_arch_qwen3moe, vkf_arch_olmoe, vkf_arch_granite,
    vkf_arch_gpt_oss, vkf_arch_granitemoe;

const vkf_arch_desc *const vkf_arch_list[] = {
    &vkf_arch_llama,
    &vkf_arch_gpt2,
    &vkf_arch_qwen2,
    &vkf_arch_qwen3,
    &vkf_arch_gemma2,
    &vkf_arch_gemma3,
    &vkf_arch_phi3,
    &vkf_arch_smollm3,
    &vkf_arch_bert,
    &vkf_arch_nomic_bert,
    &vkf_arch_qwen2moe,
    &vkf_arch_qwen3moe,
    &vkf_arch_olmoe,
    &vkf_arch_granite,
    &vkf_arch_gpt_oss,
    &vkf_arch_granitemoe,
    NULL,
};

const vkf_arch_desc *vkf_arch_by_gguf(const char *name) {
    for (int i = 0; name && vkf_arch_list[i]; i++)
        if (strcmp(vkf_arch_list[i]->name, name) == 0) return vkf_arch_list[i];
    return NULL;
}

const vkf_arch_desc *vkf_arch_by_hf(const char *hf_arch) {
    for (int i = 0; hf_arch && vkf_arch_list[i]; i++)
        for (int j = 0; j < 3 && vkf_arch_list[i]->hf_arch[j]; j++)
            if (strcmp(vkf_arch_list[i]->hf_arch[j], hf_arch) == 0) return vkf_arch_list[i];
    return NULL;
}

const char *vkf_arch_names(void) {
    static char buf[256];
    if (!buf[0]) {
        size_t n = 0;
        for (int i = 0; vkf_arch_list[i]; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "",
                                  vkf_arch_list[i]->name);
    }
    return buf;
}

const char *vkf_arch_hf_list(void) {
    static char buf[512];
    if (!buf[0]) {
        size_t n = 0;
        for (int i = 0; vkf_arch_list[i]; i++)
            for (int j = 0; j < 3 && vkf_arch_list[i]->hf_arch[j]; j++)
                if (vkf_arch_list[i]->pos == VKF_POS_ROPE || /* GPT-2 has its own loader */
                    vkf_arch_list[i]->encoder)
                    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", n ? ", " : "",
                                          vkf_arch_list[i]->hf_arch[j]);
    }
    return buf;
}

/* ------------------------------------------------------------------ tensor names */

#define L(x) "blk.%d." x
const char *const vkf_arch_gguf_names[VKF_T_COUNT] = {
    [VKF_T_ATTN_NORM] = L("attn_norm.weight"),
    [VKF_T_ATTN_NORM_B] = L("attn_norm.bias"),
    [VKF_T_ATTN_QKV] = L("attn_qkv.weight"),
    [VKF_T_ATTN_QKV_B] = L("attn_qkv.bias"),
    [VKF_T_ATTN_Q] = L("attn_q.weight"),
    [VKF_T_ATTN_Q_B] = L("attn_q.bias"),
    [VKF_T_ATTN_K] = L("attn_k.weight"),
    [VKF_T_ATTN_K_B] = L("attn_k.bias"),
    [VKF_T_ATTN_V] = L("attn_v.weight"),
    [VKF_T_ATTN_V_B] = L("attn_v.bias"),
    [VKF_T_ATTN_Q_NORM] = L("attn_q_norm.weight"),
    [VKF_T_ATTN_K_NORM] = L("attn_k_norm.weight"),
    [VKF_T_ATTN_OUT] = L("attn_output.weight"),
    [VKF_T_ATTN_OUT_B] = L("attn_output.bias"),
    [VKF_T_POST_ATTN_NORM] = L("post_attention_norm.weight"),
    [VKF_T_FFN_NORM] = L("ffn_norm.weight"),
    [VKF_T_FFN_NORM_B] = L("ffn_norm.bias"),
    [VKF_T_FFN_GATE] = L("ffn_gate.weight"),
    [VKF_T_FFN_UP] = L("ffn_up.weight"),
    [VKF_T_FFN_UP_B] = L("ffn_up.bias"),
    [VKF_T_FFN_DOWN] = L("ffn_down.weight"),
    [VKF_T_FFN_DOWN_B] = L("ffn_down.bias"),
    [VKF_T_POST_FFN_NORM] = L("post_ffw_norm.weight"),
    [VKF_T_FFN_GATE_INP] = L("ffn_gate_inp.weight"),
    [VKF_T_FFN_GATE_EXPS] = L("ffn_gate_exps.weight"),
    [VKF_T_FFN_UP_EXPS] = L("ffn_up_exps.weight"),
    [VKF_T_FFN_DOWN_EXPS] = L("ffn_down_exps.weight"),
    [VKF_T_FFN_GATE_INP_SHEXP] = L("ffn_gate_inp_shexp.weight"),
    [VKF_T_FFN_GATE_SHEXP] = L("ffn_gate_shexp.weight"),
    [VKF_T_FFN_UP_SHEXP] = L("ffn_up_shexp.weight"),
    [VKF_T_FFN_DOWN_SHEXP] = L("ffn_down_shexp.weight"),
    [VKF_T_ATTN_SINKS] = L("attn_sinks.weight"),
    [VKF_T_FFN_GATE_INP_B] = L("ffn_gate_inp.bias"),
    [VKF_T_FFN_GATE_EXPS_B] = L("ffn_gate_exps.bias"),
    [VKF_T_FFN_UP_EXPS_B] = L("ffn_up_exps.bias"),
    [VKF_T_FFN_DOWN_EXPS_B] = L("ffn_down_exps.bias"),
    [VKF_T_TOK_EMBD] = "token_embd.weight",
    [VKF_T_POS_EMBD] = "position_embd.weight",
    [VKF_T_OUT_NORM] = "output_norm.weight",
    [VKF_T_OUT_NORM_B] = "output_norm.bias",
    [VKF_T_OUTPUT] = "output.weight",
    [VKF_T_ROPE_FREQS] = "rope_freqs.weight",
    [VKF_T_ROPE_SHORT] = "rope_factors_short.weight",
    [VKF_T_ROPE_LONG] = "rope_factors_long.weight",
    [VKF_T_TOKEN_TYPES] = "token_types.weight",
    [VKF_T_TOK_NORM] = "token_embd_norm.weight",
    [VKF_T_TOK_NORM_B] = "token_embd_norm.bias",
};
#undef L

/* Llama's names (its pre-FFN norm is "post_attention_layernorm"; the Gemma-style post-norms
 * that share the name override their ffn_norm); no rope factor tensors in HF checkpoints; the
 * encoder-only slots Llama lacks under BERT's names. */
#define L(x) "layers.%d." x
const char *const vkf_arch_hf_names[VKF_T_COUNT] = {
    [VKF_T_ATTN_NORM] = L("input_layernorm.weight"),
    [VKF_T_ATTN_QKV] = L("self_attn.qkv_proj.weight"),
    [VKF_T_ATTN_QKV_B] = L("self_attn.qkv_proj.bias"),
    [VKF_T_ATTN_Q] = L("self_attn.q_proj.weight"),
    [VKF_T_ATTN_Q_B] = L("self_attn.q_proj.bias"),
    [VKF_T_ATTN_K] = L("self_attn.k_proj.weight"),
    [VKF_T_ATTN_K_B] = L("self_attn.k_proj.bias"),
    [VKF_T_ATTN_V] = L("self_attn.v_proj.weight"),
    [VKF_T_ATTN_V_B] = L("self_attn.v_proj.bias"),
    [VKF_T_ATTN_Q_NORM] = L("self_attn.q_norm.weight"),
    [VKF_T_ATTN_K_NORM] = L("self_attn.k_norm.weight"),
    [VKF_T_ATTN_OUT] = L("self_attn.o_proj.weight"),
    [VKF_T_ATTN_OUT_B] = L("self_attn.o_proj.bias"),
    [VKF_T_POST_ATTN_NORM] = L("post_attention_layernorm.weight"),
    [VKF_T_FFN_NORM] = L("post_attention_layernorm.weight"),
    [VKF_T_FFN_GATE] = L("mlp.gate_proj.weight"),
    [VKF_T_FFN_UP] = L("mlp.up_proj.weight"),
    [VKF_T_FFN_DOWN] = L("mlp.down_proj.weight"),
    [VKF_T_POST_FFN_NORM] = L("post_feedforward_layernorm.weight"),
    /* Qwen2/3-MoE and OLMoE: the router and one tensor per expert ("%%d": the expert, stacked
     * at load into the 3-D slot) */
    [VKF_T_FFN_GATE_INP] = L("mlp.gate.weight"),
    [VKF_T_FFN_GATE_EXPS] = L("mlp.experts.%%d.gate_proj.weight"),
    [VKF_T_FFN_UP_EXPS] = L("mlp.experts.%%d.up_proj.weight"),
    [VKF_T_FFN_DOWN_EXPS] = L("mlp.experts.%%d.down_proj.weight"),
    [VKF_T_FFN_GATE_INP_SHEXP] = L("mlp.shared_expert_gate.weight"),
    [VKF_T_FFN_GATE_SHEXP] = L("mlp.shared_expert.gate_proj.weight"),
    [VKF_T_FFN_UP_SHEXP] = L("mlp.shared_expert.up_proj.weight"),
    [VKF_T_FFN_DOWN_SHEXP] = L("mlp.shared_expert.down_proj.weight"),
    [VKF_T_TOK_EMBD] = "embed_tokens.weight",
    [VKF_T_OUT_NORM] = "norm.weight",
    [VKF_T_OUTPUT] = "lm_head.weight",
    [VKF_T_TOKEN_TYPES] = "embeddings.token_type_embeddings.weight",
    [VKF_T_TOK_NORM] = "embeddings.LayerNorm.weight",
    [VKF_T_TOK_NORM_B] = "embeddings.LayerNorm.bias",
};
#undef L

void vkf_arch_tensor_names_get(const vkf_arch_desc *a, vkf_arch_format f,
                               vkf_arch_tensor_names *out) {
    const char *const *def = f == VKF_ARCH_HF ? vkf_arch_hf_names : vkf_arch_gguf_names;
    const char *const *over = f == VKF_ARCH_HF ? a->hf : a->gguf;
    for (int t = 0; t < VKF_T_COUNT; t++) {
        int has = (a->tensors & VKF_TS(t)) != 0;
        out->name[t] = !has ? NULL : over[t] ? over[t] : def[t];
        out->opt[t] = has && (a->optional & VKF_TS(t)) != 0;
    }
}

/* ------------------------------------------------------------------ slots */

#define LW(f) offsetof(vkf_layer_w, f)
#define MW(f) offsetof(vkf_model_w, f)
#define HOST ((size_t)-1) /* read on the host by the loader (rope factors) */

const vkf_arch_slot vkf_arch_slots[VKF_T_COUNT] = {
    [VKF_T_ATTN_NORM] = {1, VKF_D_MODEL, VKF_D_0, LW(norm1_w)},
    [VKF_T_ATTN_NORM_B] = {1, VKF_D_MODEL, VKF_D_0, LW(norm1_b)},
    [VKF_T_ATTN_QKV] = {0, VKF_D_MODEL, VKF_D_QKV, LW(self.wqkv)},
    [VKF_T_ATTN_QKV_B] = {1, VKF_D_QKV, VKF_D_0, LW(self.bqkv)},
    [VKF_T_ATTN_Q] = {0, VKF_D_MODEL, VKF_D_Q, LW(self.wq)},
    [VKF_T_ATTN_Q_B] = {1, VKF_D_Q, VKF_D_0, LW(self.bq)},
    [VKF_T_ATTN_K] = {0, VKF_D_MODEL, VKF_D_KV, LW(self.wk)},
    [VKF_T_ATTN_K_B] = {1, VKF_D_KV, VKF_D_0, LW(self.bk)},
    [VKF_T_ATTN_V] = {0, VKF_D_MODEL, VKF_D_KV, LW(self.wv)},
    [VKF_T_ATTN_V_B] = {1, VKF_D_KV, VKF_D_0, LW(self.bv)},
    [VKF_T_ATTN_Q_NORM] = {1, VKF_D_HEAD, VKF_D_0, LW(q_norm)},
    [VKF_T_ATTN_K_NORM] = {1, VKF_D_HEAD, VKF_D_0, LW(k_norm)},
    [VKF_T_ATTN_OUT] = {0, VKF_D_Q, VKF_D_MODEL, LW(self.wo)},
    [VKF_T_ATTN_OUT_B] = {1, VKF_D_MODEL, VKF_D_0, LW(self.bo)},
    [VKF_T_POST_ATTN_NORM] = {1, VKF_D_MODEL, VKF_D_0, LW(post_attn_norm)},
    [VKF_T_FFN_NORM] = {1, VKF_D_MODEL, VKF_D_0, LW(norm2_w)},
    [VKF_T_FFN_NORM_B] = {1, VKF_D_MODEL, VKF_D_0, LW(norm2_b)},
    [VKF_T_FFN_GATE] = {0, VKF_D_MODEL, VKF_D_FF, LW(w_gate)},
    [VKF_T_FFN_UP] = {0, VKF_D_MODEL, VKF_D_FF, LW(w_up)}, /* VKF_D_FF2 for VKF_FFN_GLU_FUSED */
    [VKF_T_FFN_UP_B] = {1, VKF_D_FF, VKF_D_0, LW(b_up)},
    [VKF_T_FFN_DOWN] = {0, VKF_D_FF, VKF_D_MODEL, LW(w_down)},
    [VKF_T_FFN_DOWN_B] = {1, VKF_D_MODEL, VKF_D_0, LW(b_down)},
    [VKF_T_POST_FFN_NORM] = {1, VKF_D_MODEL, VKF_D_0, LW(post_ffn_norm)},
    [VKF_T_FFN_GATE_INP] = {0, VKF_D_MODEL, VKF_D_EXPERT, LW(gate_inp)},
    [VKF_T_FFN_GATE_EXPS] = {0, VKF_D_MODEL, VKF_D_FF_EXP, LW(gate_exps), 1},
    [VKF_T_FFN_UP_EXPS] = {0, VKF_D_MODEL, VKF_D_FF_EXP, LW(up_exps), 1},
    [VKF_T_FFN_DOWN_EXPS] = {0, VKF_D_FF_EXP, VKF_D_MODEL, LW(down_exps), 1},
    [VKF_T_FFN_GATE_INP_SHEXP] = {1, VKF_D_MODEL, VKF_D_0, LW(gate_inp_shexp)},
    [VKF_T_FFN_GATE_SHEXP] = {0, VKF_D_MODEL, VKF_D_FF_SHEXP, LW(gate_shexp)},
    [VKF_T_FFN_UP_SHEXP] = {0, VKF_D_MODEL, VKF_D_FF_SHEXP, LW(up_shexp)},
    [VKF_T_FFN_DOWN_SHEXP] = {0, VKF_D_FF_SHEXP, VKF_D_MODEL, LW(down_shexp)},
    [VKF_T_ATTN_SINKS] = {1, VKF_D_HEADS, VKF_D_0, LW(attn_sinks)},
    [VKF_T_FFN_GATE_INP_B] = {1, VKF_D_EXPERT, VKF_D_0, LW(gate_inp_b)},
    [VKF_T_FFN_GATE_EXPS_B] = {0, VKF_D_FF_EXP, VKF_D_EXPERT, LW(gate_exps_b)},
    [VKF_T_FFN_UP_EXPS_B] = {0, VKF_D_FF_EXP, VKF_D_EXPERT, LW(up_exps_b)},
    [VKF_T_FFN_DOWN_EXPS_B] = {0, VKF_D_MODEL, VKF_D_EXPERT, LW(down_exps_b)},
    [VKF_T_TOK_EMBD] = {0, VKF_D_MODEL, VKF_D_VOCAB, MW(tok_embd)},
    [VKF_T_POS_EMBD] = {0, VKF_D_MODEL, VKF_D_CTX, MW(pos_embd)},
    [VKF_T_OUT_NORM] = {1, VKF_D_MODEL, VKF_D_0, MW(out_norm_w)},
    [VKF_T_OUT_NORM_B] = {1, VKF_D_MODEL, VKF_D_0, MW(out_norm_b)},
    [VKF_T_OUTPUT] = {0, VKF_D_MODEL, VKF_D_VOCAB, MW(output)},
    [VKF_T_ROPE_FREQS] = {1, VKF_D_ROT2, VKF_D_0, HOST},
    [VKF_T_ROPE_SHORT] = {1, VKF_D_ROT2, VKF_D_0, HOST},
    [VKF_T_ROPE_LONG] = {1, VKF_D_ROT2, VKF_D_0, HOST},
    [VKF_T_TOKEN_TYPES] = {0, VKF_D_MODEL, VKF_D_TYPES, MW(type_embd)},
    [VKF_T_TOK_NORM] = {1, VKF_D_MODEL, VKF_D_0, MW(tok_norm_w)},
    [VKF_T_TOK_NORM_B] = {1, VKF_D_MODEL, VKF_D_0, MW(tok_norm_b)},
};

int64_t vkf_arch_dim_value(const vkf_model *m, vkf_arch_dim d) {
    const vkf_hparams *hp = &m->hp;
    switch (d) {
    case VKF_D_0: return 0;
    case VKF_D_MODEL: return hp->d_model;
    case VKF_D_Q: return (int64_t)hp->n_head * hp->head_dim;
    case VKF_D_KV: return (int64_t)hp->n_kv_head * hp->head_dim;
    case VKF_D_QKV: return (int64_t)(hp->n_head + 2 * hp->n_kv_head) * hp->head_dim;
    case VKF_D_HEAD: return hp->head_dim;
    case VKF_D_FF: return hp->n_ff;
    case VKF_D_FF2: return 2 * (int64_t)hp->n_ff;
    case VKF_D_VOCAB: return hp->n_vocab;
    case VKF_D_CTX: return hp->n_ctx_train; /* a learned table has the trained rows */
    case VKF_D_ROT2: return hp->n_rot / 2;
    case VKF_D_TYPES: return hp->n_types;
    case VKF_D_EXPERT: return hp->n_expert;
    case VKF_D_FF_EXP: return hp->n_ff_exp;
    case VKF_D_FF_SHEXP: return hp->n_ff_shexp;
    case VKF_D_HEADS: return hp->n_head;
    }
    return 0;
}

void vkf_arch_slot_shape(const vkf_model *m, vkf_arch_t t, int64_t *ne0, int64_t *ne1) {
    vkf_arch_dim out = vkf_arch_slots[t].out;
    vkf_arch_dim in = vkf_arch_slots[t].in;
    if (t == VKF_T_FFN_UP && m->desc->ffn == VKF_FFN_GLU_FUSED) out = VKF_D_FF2;
    if (m->desc->qk_norm_full && t == VKF_T_ATTN_Q_NORM) in = VKF_D_Q; /* OLMoE */
    if (m->desc->qk_norm_full && t == VKF_T_ATTN_K_NORM) in = VKF_D_KV;
    *ne0 = vkf_arch_dim_value(m, in);
    *ne1 = vkf_arch_dim_value(m, out);
}

/* One global slot (absent name or host-read rope factors: nothing). */
static vkf_status load_global(vkf_model *m, const vkf_arch_tensor_names *names, vkf_slot_get get,
                              void *user, int t) {
    const char *nm = names->name[t];
    if (!nm || vkf_arch_slots[t].offset == HOST) return VKF_OK;
    vkf_tensor *dst = (vkf_tensor *)((char *)&m->w + vkf_arch_slots[t].offset);
    return get(user, (vkf_arch_t)t, nm, dst, names->opt[t]);
}

vkf_status vkf_model_load_slots(vkf_model *m, const vkf_arch_tensor_names *names, vkf_slot_get get,
                                void *user) {
    const vkf_hparams *hp = &m->hp;
    VKF_TRY(vkf_model_split_assign(m));
    /* file order of the usual checkpoints: embeddings, layers, final norm and head */
    VKF_TRY(load_global(m, names, get, user, VKF_T_TOK_EMBD));
    VKF_TRY(load_global(m, names, get, user, VKF_T_POS_EMBD));
    m->w.dec = calloc((size_t)hp->n_layer, sizeof *m->w.dec);
    if (!m->w.dec) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
    char n[160];
    for (int l = 0; l < hp->n_layer; l++) {
        m->upload_dev = vkf_model_layer_dev(m, l); /* a layer's weights on its device */
        for (int t = 0; t < VKF_T_LAYER_COUNT; t++) {
            const char *nm = names->name[t];
            if (!nm) continue;
            snprintf(n, sizeof n, nm, l);
            vkf_tensor *dst = (vkf_tensor *)((char *)&m->w.dec[l] + vkf_arch_slots[t].offset);
            VKF_TRY(get(user, (vkf_arch_t)t, n, dst, names->opt[t]));
        }
    }
    m->upload_dev = m->n_dev - 1; /* the final norm and the head: the last device */
    for (int t = VKF_T_POS_EMBD + 1; t < VKF_T_COUNT; t++)
        VKF_TRY(load_global(m, names, get, user, t));
    if (!vkf_tensor_present(&m->w.output) && m->n_dev > 1) {
        /* tied embeddings, the head on another device than the embeddings: a second copy there
         * (not counted twice as parameters) */
        int64_t np = m->n_params;
        int nd[VKF_DTYPE_COUNT];
        memcpy(nd, m->n_by_dtype, sizeof nd);
        VKF_TRY(get(user, VKF_T_TOK_EMBD, names->name[VKF_T_TOK_EMBD], &m->w.output, 0));
        m->n_params = np;
        memcpy(m->n_by_dtype, nd, sizeof nd);
    }
    m->upload_dev = 0;
    if (!vkf_tensor_present(&m->w.output)) m->w.output = m->w.tok_embd; /* tied embeddings */
    const vkf_layer_w *L0 = &m->w.dec[0];
    m->wtype = vkf_tensor_present(&L0->self.wq) ? L0->self.wq.dtype : L0->self.wqkv.dtype;
    return VKF_OK;
}

int vkf_layer_swa(const vkf_hparams *hp, int l) {
    return hp->swa_window > 0 && hp->swa_period > 0 && l % hp->swa_period < hp->swa_period - 1;
}

/* The rotation table as llama.cpp's CPU backend computes its cache (ggml_rope_cache_init) for
 * the CPU's ggml-activation mode: in float, theta_scale = base^(-2 / n_rot), the angle of pair i
 * multiplied up from the position one float step at a time, divided by the frequency factor,
 * times the linear scale, cos / sin times the attention factor. Every rotation of that mode then
 * uses llama.cpp's own values (the float path keeps the double-precision table: ggml's angles
 * drift by ~1e-6 per unit). */
static void rope_table_ggml(float *t, int n_pos, int n_rot, float base, float freq_scale,
                            const float *factors, float mscale) {
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    for (int pos = 0; pos < n_pos; pos++) {
        float theta = (float)pos;
        for (int i = 0; i < n_rot / 2; i++) {
            const float ff = factors ? factors[i] : 1.0f;
            const float th = freq_scale * (theta / ff);
            t[(size_t)pos * n_rot + 2 * i] = cosf(th) * mscale;
            t[(size_t)pos * n_rot + 2 * i + 1] = sinf(th) * mscale;
            theta *= theta_scale;
        }
    }
}

/* YaRN (gpt-oss) as llama.cpp computes it: the correction dims of ggml_rope_yarn_corr_dims
 * (float), the context's attention factor get_mscale(f) / (1 + 0.1 ln f) (llama_context, f =
 * 1 / freq_scale), and per pair rope_yarn: theta = interp (1 - ramp) + extrap ramp, cos and sin
 * times that factor and 1 + 0.1 ln(1 / freq_scale) (ggml-cpu, built with FMA: GCC contracts
 * the first product of each sum, as in the rotation of ggml_rope). ext_factor is 1 (llama.cpp's
 * default for "yarn"). */
static float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return n_dims * logf(n_ctx_orig / (n_rot * 2 * (float)M_PI)) / (2 * logf(base));
}

static void rope_table_yarn_ggml(float *t, const vkf_hparams *hp, float base) {
    const int n_rot = hp->n_rot, n_orig = hp->n_ctx_orig > 0 ? hp->n_ctx_orig : hp->n_ctx_train;
    const float fs = 1.0f / hp->yarn_factor, factor = 1.0f / fs;
    float attn = 0.1f * 1.0f * logf(factor) + 1.0f;
    attn *= 1.0f / (1.0f + 0.1f * logf(factor));
    attn *= (float)hp->rope_attn_factor;
    const float ms = attn * fmaf(0.1f, logf(1.0f / fs), 1.0f);
    float lo = floorf(yarn_corr_dim(n_rot, n_orig, hp->yarn_beta_fast, base));
    float hi = ceilf(yarn_corr_dim(n_rot, n_orig, hp->yarn_beta_slow, base));
    lo = lo > 0 ? lo : 0;
    hi = hi < (float)(n_rot - 1) ? hi : (float)(n_rot - 1);
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    for (int pos = 0; pos < hp->n_ctx; pos++) {
        float theta = (float)pos;
        for (int i = 0; i < n_rot / 2; i++) {
            const float y = ((float)i - lo) / fmaxf(0.001f, hi - lo);
            const float ramp = 1 - fminf(1, fmaxf(0, y)); /* times ext_factor 1 */
            const float interp = fs * theta;
            const float th = fmaf(interp, 1 - ramp, theta * ramp);
            t[(size_t)pos * n_rot + 2 * i] = cosf(th) * ms;
            t[(size_t)pos * n_rot + 2 * i + 1] = sinf(th) * ms;
            theta *= theta_scale;
        }
    }
}

/* The same in double (the float path): cos and sin times 1 + 0.1 ln(factor) (the attention
 * factor's two terms cancel but for the file's rope.scaling.attn_factor). */
static void rope_table_yarn(float *t, const vkf_hparams *hp, double base) {
    const int n_rot = hp->n_rot, n_orig = hp->n_ctx_orig > 0 ? hp->n_ctx_orig : hp->n_ctx_train;
    const double f = hp->yarn_factor, ms = hp->rope_attn_factor * (1.0 + 0.1 * log(f));
    double lo = floor(n_rot * log(n_orig / (hp->yarn_beta_fast * 2 * M_PI)) / (2 * log(base)));
    double hi = ceil(n_rot * log(n_orig / (hp->yarn_beta_slow * 2 * M_PI)) / (2 * log(base)));
    lo = lo > 0 ? lo : 0;
    hi = hi < n_rot - 1 ? hi : n_rot - 1;
    for (int pos = 0; pos < hp->n_ctx; pos++)
        for (int i = 0; i < n_rot / 2; i++) {
            const double extrap = pos * pow(base, -2.0 * i / n_rot);
            const double y = (i - lo) / fmax(0.001, hi - lo);
            const double ramp = 1 - fmin(1, fmax(0, y));
            const double th = extrap / f * (1 - ramp) + extrap * ramp;
            t[(size_t)pos * n_rot + 2 * i] = (float)(cos(th) * ms);
            t[(size_t)pos * n_rot + 2 * i + 1] = (float)(sin(th) * ms);
        }
}

static void rope_table(const vkf_model *m, float *rt, double base, double scale,
                       const float *factors, double mscale) {
    const vkf_hparams *hp = &m->hp;
    if (hp->rope_yarn && m->ctx && m->ctx->ggml_activations)
        rope_table_yarn_ggml(rt, hp, (float)base);
    else if (hp->rope_yarn)
        rope_table_yarn(rt, hp, base);
    else if (m->ctx && m->ctx->ggml_activations)
        rope_table_ggml(rt, hp->n_ctx, hp->n_rot, (float)base, (float)scale, factors,
                        (float)mscale);
    else
        vkf_rope_table_ext(rt, hp->n_ctx, hp->n_rot, base, scale, factors, mscale);
}

vkf_status vkf_model_rope_tables(vkf_model *m, const float *factors) {
    const vkf_hparams *hp = &m->hp;
    size_t n = (size_t)hp->n_ctx * (size_t)hp->n_rot;
    float *rt = malloc(n * sizeof *rt);
    if (!rt) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", m->path);
    rope_table(m, rt, hp->rope_base, hp->rope_scale, factors, hp->rope_attn_factor);
    vkf_status s = VKF_OK;
    /* one copy per device of a layer split (each device's layers read their own) */
    for (int d = 0; d < m->n_dev && s == VKF_OK; d++) {
        m->upload_dev = d;
        s = vkf_model_upload_table(m, &m->dev_rope[d], "rope_table", hp->n_ctx, hp->n_rot, rt);
    }
    int local = 0;
    for (int l = 0; l < hp->n_layer; l++)
        local |= vkf_layer_swa(hp, l);
    if (s == VKF_OK && local &&
        m->desc->swa_rope_unscaled) { /* gemma3: local layers' own base, no scaling */
        rope_table(m, rt, hp->rope_base_swa, 1.0, NULL, 1.0);
        for (int d = 0; d < m->n_dev && s == VKF_OK; d++) {
            m->upload_dev = d;
            s = vkf_model_upload_table(m, &m->dev_rope_swa[d], "rope_table_swa", hp->n_ctx,
                                       hp->n_rot, rt);
        }
    }
    m->upload_dev = 0;
    m->w.rope = m->dev_rope[0];
    m->w.rope_swa = m->dev_rope_swa[0];
    free(rt);
    return s;
}
