/* LoRA adapters: loading (llama.cpp's GGUF adapters, Hugging Face PEFT directories), the graph's
 * adapted matmul and merging into the weights.
 *
 * An adapter holds pairs A [r, in], B [out, r] for some of the model's matrices W [out, in]:
 *   y = W x + scale B (A x),  scale = user_scale * alpha / r   (alpha 0: scale = user_scale)
 * llama.cpp's rule (llama-adapter.h get_scale; llama-graph.cpp build_lora_mm). A GGUF adapter
 * (convert_lora_to_gguf.py) names its pairs "<base tensor>.lora_a" / ".lora_b" with A and B in
 * PEFT's orientation, B's rows of attn_q / attn_k permuted as the converter permutes the base
 * weights; a PEFT directory (adapter_config.json: r, lora_alpha; adapter_model.safetensors)
 * names them "base_model.model.<HF module>.lora_A.weight" / ".lora_B.weight", mapped through the
 * HF loader's name table and given the same permutation here. */
#include "model/lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/wtype.h"
#include "io/gguf.h"
#include "io/json_config.h"
#include "io/safetensors.h"
#include "vkformer.h"

/* ------------------------------------------------------------------ the model's matrices */

/* The matrix slots an adapter may adapt: dense layer matrices and the LM head (llama.cpp's
 * build_lora_mm sites of a dense decoder). */
static int lora_slot_ok(int t) {
    return t == VKF_T_ATTN_QKV || t == VKF_T_ATTN_Q || t == VKF_T_ATTN_K || t == VKF_T_ATTN_V ||
           t == VKF_T_ATTN_OUT || t == VKF_T_FFN_GATE || t == VKF_T_FFN_UP || t == VKF_T_FFN_DOWN ||
           t == VKF_T_OUTPUT;
}

/* The model's tensor called name in format f (GGUF names, or HF names without the loader's
 * prefix), with its slot; NULL when no adaptable matrix has that name. */
static vkf_tensor *lora_find_base(const vkf_model *m, vkf_arch_format f, const char *name,
                                  int *slot, char *gguf_name, size_t cap) {
    vkf_arch_tensor_names nf, ng;
    vkf_arch_tensor_names_get(m->desc, f, &nf);
    vkf_arch_tensor_names_get(m->desc, VKF_ARCH_GGUF, &ng);
    char n[160];
    for (int t = 0; t < VKF_T_COUNT; t++) {
        if (!nf.name[t] || !lora_slot_ok(t)) continue;
        if (t == VKF_T_OUTPUT) {
            if (strcmp(nf.name[t], name) != 0) continue;
            snprintf(gguf_name, cap, "%s", ng.name[t] ? ng.name[t] : name);
            *slot = t;
            return (vkf_tensor *)&m->w.output;
        }
        for (int l = 0; l < m->hp.n_layer; l++) {
            snprintf(n, sizeof n, nf.name[t], l);
            if (strcmp(n, name) != 0) continue;
            if (ng.name[t])
                snprintf(gguf_name, cap, ng.name[t], l);
            else
                snprintf(gguf_name, cap, "%s", name);
            *slot = t;
            return (vkf_tensor *)((char *)&m->w.dec[l] + vkf_arch_slots[t].offset);
        }
    }
    return NULL;
}

static int lora_layer_of(const vkf_model *m, const vkf_tensor *base) {
    for (int l = 0; l < m->hp.n_layer; l++)
        if ((const char *)base >= (const char *)&m->w.dec[l] &&
            (const char *)base < (const char *)&m->w.dec[l + 1])
            return l;
    return -1;
}

/* ------------------------------------------------------------------ pairs */

/* Adds the pair for base (GGUF name gname) from host data of A [ra, ca] and B [rb, cb]: checks
 * the shapes against the base weight, uploads both to the base weight's device. */
static vkf_status lora_add_pair(vkf_lora *a, const vkf_tensor *base, const char *gname,
                                const char *an, vkf_dtype adt, int64_t ra, int64_t ca,
                                const void *ad, const char *bn, vkf_dtype bdt, int64_t rb,
                                int64_t cb, const void *bd) {
    const vkf_model *m = a->m;
    if (!vkf_tensor_present(base))
        return vkf_error(VKF_ERROR_FORMAT, "%s: %s adapts %s, which the base model %s lacks",
                         a->path, an, gname, m->path);
    if (base == &m->w.output && m->w.output.buf == m->w.tok_embd.buf)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: %s adapts the LM head, which %s ties to the token embeddings "
                         "(llama.cpp ignores such an adapter too)",
                         a->path, an, m->path);
    /* A [r, in], B [out, r] against W [out, in] (llama.cpp: a->ne[0] == W->ne[0], b->ne[1] ==
     * W->ne[1], a->ne[1] == b->ne[0]) */
    if (ca != base->cols || rb != base->rows || ra != cb)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "%s: tensor %s: the base model's %s is [%lld, %lld] (out, in); the "
                         "adapter's A %s is [%lld, %lld] and B %s is [%lld, %lld], expected A [r, "
                         "%lld] and B [%lld, r] (an adapter for another base model?)",
                         a->path, gname, gname, (long long)base->rows, (long long)base->cols, an,
                         (long long)ra, (long long)ca, bn, (long long)rb, (long long)cb,
                         (long long)base->cols, (long long)base->rows);
    if (!vkf_wtype_is_weight(adt) || !vkf_wtype_is_weight(bdt))
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: %s / %s have dtypes %s / %s; expected one of %s", a->path, an, bn,
                         vkf_dtype_name(adt), vkf_dtype_name(bdt), vkf_wtype_weight_list());
    vkf_lora_pair *np = realloc(a->pairs, (size_t)(a->n_pairs + 1) * sizeof *np);
    if (!np) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", a->path);
    a->pairs = np;
    vkf_lora_pair *p = &a->pairs[a->n_pairs];
    memset(p, 0, sizeof *p);
    p->base = base;
    snprintf(p->name, sizeof p->name, "%s", gname);
    int l = lora_layer_of(m, base);
    p->be = vkf_model_dev_be(m, l >= 0 ? vkf_model_layer_dev(m, l) : m->n_dev - 1);
    p->a = vkf_tensor_make(adt, ra, ca, an);
    p->b = vkf_tensor_make(bdt, rb, cb, bn);
    vkf_status s = vkf_tensor_alloc(p->be, &p->a, VKF_BUFFER_WEIGHTS, ad);
    if (s == VKF_OK) s = vkf_tensor_alloc(p->be, &p->b, VKF_BUFFER_WEIGHTS, bd);
    if (s != VKF_OK) {
        if (p->a.buf) p->be->i->buffer_free(p->be, p->a.buf);
        return vkf_error_prefix(s, "%s: uploading %s", a->path, an);
    }
    a->n_pairs++;
    return VKF_OK;
}

/* ------------------------------------------------------------------ GGUF adapters */

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

static vkf_status lora_gguf_meta(vkf_lora *a, const vkf_gguf *g) {
    const char *type, *atype, *arch;
    VKF_TRY(vkf_gguf_get_str(g, "general.type", "", &type));
    if (strcmp(type, "adapter") != 0)
        return vkf_error(VKF_ERROR_FORMAT, "%s: general.type is \"%s\", expected \"adapter\"",
                         a->path, type);
    VKF_TRY(vkf_gguf_get_str(g, "adapter.type", "", &atype));
    if (strcmp(atype, "lora") != 0)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: adapter.type is \"%s\", expected \"lora\"",
                         a->path, atype);
    VKF_TRY(vkf_gguf_get_str(g, "general.architecture", "", &arch));
    if (strcmp(arch, a->m->desc->name) != 0)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "%s: an adapter for architecture \"%s\", the model %s is \"%s\"", a->path,
                         arch, a->m->path, a->m->desc->name);
    if (vkf_gguf_find(g, "adapter.alora.invocation_tokens"))
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: an activated LoRA (adapter.alora.invocation_tokens) is not applied",
                         a->path);
    const char *tn, *pp; /* llama-server shows them in GET /lora-adapters (common.cpp) */
    VKF_TRY(vkf_gguf_get_str(g, "adapter.lora.task_name", "", &tn));
    VKF_TRY(vkf_gguf_get_str(g, "adapter.lora.prompt_prefix", "", &pp));
    snprintf(a->task_name, sizeof a->task_name, "%s", tn);
    snprintf(a->prompt_prefix, sizeof a->prompt_prefix, "%s", pp);
    return vkf_gguf_get_f32(g, "adapter.lora.alpha", 0.0f, &a->alpha);
}

static vkf_status lora_load_gguf(vkf_lora *a, const char *path) {
    vkf_gguf *g;
    VKF_TRY(vkf_gguf_open(path, &g));
    vkf_status s = lora_gguf_meta(a, g);
    char base[160], an[192], gname[96];
    for (size_t i = 0; s == VKF_OK && i < vkf_gguf_tensor_count(g); i++) {
        const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
        if (ends_with(t->name, "_norm.weight")) continue; /* as llama.cpp: norms not applied */
        if (ends_with(t->name, ".lora_b")) {
            snprintf(an, sizeof an, "%.*s.lora_a", (int)(strlen(t->name) - 7), t->name);
            if (!vkf_gguf_find_tensor(g, an))
                s = vkf_error(VKF_ERROR_FORMAT, "%s: %s has no %s", path, t->name, an);
            continue;
        }
        if (!ends_with(t->name, ".lora_a")) {
            s = vkf_error(VKF_ERROR_FORMAT,
                          "%s: tensor %s: expected a name ending in .lora_a or .lora_b", path,
                          t->name);
            break;
        }
        snprintf(base, sizeof base, "%.*s", (int)(strlen(t->name) - 7), t->name);
        char bn[192];
        snprintf(bn, sizeof bn, "%s.lora_b", base);
        const vkf_gguf_tensor *tb = vkf_gguf_find_tensor(g, bn);
        int slot;
        const vkf_tensor *w = lora_find_base(a->m, VKF_ARCH_GGUF, base, &slot, gname, sizeof gname);
        if (!tb)
            s = vkf_error(VKF_ERROR_FORMAT, "%s: %s has no %s", path, t->name, bn);
        else if (t->n_dims != 2 || tb->n_dims != 2)
            s = vkf_error(VKF_ERROR_FORMAT, "%s: %s / %s: expected 2-D tensors", path, t->name, bn);
        else if (!w)
            s = vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                          "%s: tensor %s adapts %s, which is no matrix of the %s model %s", path,
                          t->name, base, a->m->desc->name, a->m->path);
        else
            s = lora_add_pair(a, w, gname, t->name, t->dtype, t->rows, t->cols, t->data, bn,
                              tb->dtype, tb->rows, tb->cols, tb->data);
    }
    vkf_gguf_close(g);
    return s;
}

/* ------------------------------------------------------------------ PEFT directories */

#define PEFT_PREFIX "base_model.model."

static vkf_status lora_peft_config(vkf_lora *a, const char *dir, int64_t *r) {
    char p[1100];
    snprintf(p, sizeof p, "%s/adapter_config.json", dir);
    vkf_json_config *c;
    VKF_TRY(vkf_json_config_load(p, &c));
    double alpha = 0;
    int rs = 0, fifo = 0;
    vkf_status s = vkf_json_config_require_int(c, "r", r);
    if (s == VKF_OK) s = vkf_json_config_get_float(c, "lora_alpha", (double)*r, &alpha);
    if (s == VKF_OK) s = vkf_json_config_get_bool(c, "use_rslora", 0, &rs);
    if (s == VKF_OK) s = vkf_json_config_get_bool(c, "fan_in_fan_out", 0, &fifo);
    if (s == VKF_OK && (rs || fifo))
        s = vkf_error(VKF_ERROR_UNSUPPORTED,
                      "%s: %s is true; llama.cpp's scale (alpha / r, A x then B) assumes false", p,
                      rs ? "use_rslora" : "fan_in_fan_out");
    a->alpha = (float)alpha;
    vkf_json_config_free(c);
    return s;
}

/* The HF module name (without PEFT's prefix and the .lora_X.weight suffix) -> the model's
 * tensor, through the HF loader's names ("model.layers.0.self_attn.q_proj.weight"). */
static const vkf_tensor *lora_peft_base(const vkf_model *m, const char *module, int *slot,
                                        char *gname, size_t cap) {
    char full[272];
    snprintf(full, sizeof full, "%.255s.weight", module);
    const vkf_tensor *w = lora_find_base(m, VKF_ARCH_HF, full, slot, gname, cap);
    if (w && *slot == VKF_T_OUTPUT) return w; /* lm_head: no prefix */
    for (int i = -1; i < 3; i++) { /* the HF loader's prefixes: "model.", or the descriptor's */
        const char *pre = i < 0 ? "model." : m->desc->hf_prefix[i];
        size_t n = pre ? strlen(pre) : 0;
        if (!pre || strncmp(full, pre, n) != 0) continue;
        w = lora_find_base(m, VKF_ARCH_HF, full + n, slot, gname, cap);
        if (w && *slot != VKF_T_OUTPUT) return w;
    }
    return NULL;
}

static vkf_status lora_load_peft(vkf_lora *a, const char *dir) {
    int64_t r;
    VKF_TRY(lora_peft_config(a, dir, &r));
    char p[1100];
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
    vkf_safetensors *st;
    VKF_TRY(vkf_safetensors_open(p, &st));
    vkf_status s = VKF_OK;
    const vkf_model *m = a->m;
    int pairs_rope = m->desc->rope_mode == VKF_ROPE_NORMAL && m->desc->pos == VKF_POS_ROPE;
    char mod[256], bn[300], gname[96];
    for (size_t i = 0; s == VKF_OK && i < vkf_safetensors_count(st); i++) {
        const vkf_st_tensor *t = vkf_safetensors_tensor(st, i);
        if (ends_with(t->name, ".lora_B.weight")) continue; /* with its A */
        size_t np = strlen(PEFT_PREFIX);
        if (strncmp(t->name, PEFT_PREFIX, np) != 0 || !ends_with(t->name, ".lora_A.weight")) {
            s = vkf_error(VKF_ERROR_UNSUPPORTED,
                          "%s: tensor %s: expected " PEFT_PREFIX "<module>.lora_A.weight / "
                          ".lora_B.weight (only LoRA pairs of linear layers are applied)",
                          p, t->name);
            break;
        }
        snprintf(mod, sizeof mod, "%.*s", (int)(strlen(t->name) - np - 14), t->name + np);
        snprintf(bn, sizeof bn, PEFT_PREFIX "%s.lora_B.weight", mod);
        const vkf_st_tensor *tb = vkf_safetensors_find(st, bn);
        int slot = 0;
        const vkf_tensor *w = lora_peft_base(m, mod, &slot, gname, sizeof gname);
        if (!tb) {
            s = vkf_error(VKF_ERROR_FORMAT, "%s: %s has no %s", p, t->name, bn);
        } else if (t->rank != 2 || tb->rank != 2 || t->dtype == VKF_DTYPE_COUNT ||
                   tb->dtype == VKF_DTYPE_COUNT) {
            s = vkf_error(VKF_ERROR_FORMAT, "%s: %s / %s: expected 2-D F32, F16 or BF16", p,
                          t->name, bn);
        } else if (!w) {
            s = vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                          "%s: tensor %s adapts %s, which is no matrix of the %s model %s", p,
                          t->name, mod, m->desc->name, m->path);
        } else if (t->shape[0] != r) {
            s = vkf_error(VKF_ERROR_FORMAT, "%s: %s has %lld rows, adapter_config.json's r is %lld",
                          p, t->name, (long long)t->shape[0], (long long)r);
        } else {
            void *bd = NULL; /* a PEFT B of q_proj / k_proj: the base rows' permutation */
            int perm = pairs_rope && (slot == VKF_T_ATTN_Q || slot == VKF_T_ATTN_K);
            int64_t hd = m->hp.head_dim;
            if (perm && (hd % 2 || tb->shape[0] % hd))
                s = vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                              "%s: %s has %lld rows, not whole heads of %lld", p, bn,
                              (long long)tb->shape[0], (long long)hd);
            else if (perm &&
                     !(bd = vkf_hf_permute_rows(tb->data, tb->shape[0],
                                                vkf_dtype_row_bytes(tb->dtype, tb->shape[1]), hd)))
                s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", p);
            if (s == VKF_OK)
                s = lora_add_pair(a, w, gname, t->name, t->dtype, t->shape[0], t->shape[1], t->data,
                                  bn, tb->dtype, tb->shape[0], tb->shape[1], bd ? bd : tb->data);
            free(bd);
        }
    }
    vkf_safetensors_close(st);
    return s;
}

/* ------------------------------------------------------------------ public */

vkf_status vkf_lora_load(vkf_model *m, const char *path, vkf_lora **out) {
    if (!m || !path || !out)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vkf_lora_load: NULL argument");
    *out = NULL;
    if (m->arch != VKF_ARCH_DECODER || !m->desc)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: LoRA adapters apply to decoder-only models; %s is %s", path, m->path,
                         vkf_model_arch_name(m));
    vkf_lora *a = calloc(1, sizeof *a);
    if (!a) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", path);
    a->m = m;
    snprintf(a->path, sizeof a->path, "%s", path);
    struct stat sb;
    vkf_context_lock(m->ctx);
    vkf_status s;
    if (stat(path, &sb) != 0)
        s = vkf_error(VKF_ERROR_IO, "%s: no such file or directory", path);
    else if (S_ISDIR(sb.st_mode))
        s = lora_load_peft(a, path);
    else
        s = lora_load_gguf(a, path);
    if (s == VKF_OK && a->n_pairs == 0)
        s = vkf_error(VKF_ERROR_FORMAT, "%s: no LoRA pair in the adapter", path);
    if (s == VKF_OK && !isfinite(a->alpha))
        s = vkf_error(VKF_ERROR_FORMAT, "%s: alpha is not finite", path);
    vkf_context_unlock(m->ctx);
    if (s != VKF_OK) {
        vkf_lora_free(a);
        return s;
    }
    *out = a;
    return VKF_OK;
}

void vkf_lora_free(vkf_lora *a) {
    if (!a) return;
    vkf_context_lock(a->m->ctx);
    for (int i = 0; i < a->n_pairs; i++) {
        vkf_lora_pair *p = &a->pairs[i];
        if (p->a.buf) p->be->i->buffer_free(p->be, p->a.buf);
        if (p->b.buf) p->be->i->buffer_free(p->be, p->b.buf);
    }
    vkf_context_unlock(a->m->ctx);
    free(a->pairs);
    free(a);
}

int32_t vkf_lora_n_tensors(const vkf_lora *a) { return a ? a->n_pairs : 0; }
float vkf_lora_alpha(const vkf_lora *a) { return a ? a->alpha : 0.0f; }
const char *vkf_lora_path(const vkf_lora *a) { return a ? a->path : ""; }
const char *vkf_lora_task_name(const vkf_lora *a) { return a ? a->task_name : ""; }
const char *vkf_lora_prompt_prefix(const vkf_lora *a) { return a ? a->prompt_prefix : ""; }

float vkf_lora_pair_scale(const vkf_lora *a, const vkf_lora_pair *p, float user_scale) {
    const float rank = (float)p->b.cols;
    return a->alpha != 0.0f ? user_scale * a->alpha / rank : user_scale;
}

/* ------------------------------------------------------------------ the graph */

static int lora_set_adapts(const vkf_lora_use *set, int n, const vkf_tensor *w) {
    for (int i = 0; i < n; i++)
        for (int k = 0; k < set[i].a->n_pairs; k++)
            if (set[i].a->pairs[k].base == w && set[i].scale != 0.0f) return 1;
    return 0;
}

int vkf_lora_adapts(const vkf_gb *b, const vkf_tensor *w) {
    return lora_set_adapts(b->lora, b->n_lora, w);
}

vkf_tensor *vkf_lora_matmul(vkf_gb *b, const vkf_lora_use *set, int n, vkf_tensor *x, vkf_tensor *w,
                            vkf_tensor *bias, const char *name) {
    if (b->s != VKF_OK) return NULL;
    if (!lora_set_adapts(set, n, w)) return vkf_gb_matmul(b, x, w, bias, name);
    /* llama.cpp: res = W x; res += scale * (B (A x)) per adapter; then the bias */
    char nm[80];
    vkf_tensor *y = vkf_gb_matmul(b, x, w, NULL, name);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < set[i].a->n_pairs; k++) {
            vkf_lora_pair *p = &set[i].a->pairs[k];
            if (p->base != w || set[i].scale == 0.0f) continue;
            snprintf(nm, sizeof nm, "%s.lora%d_a", name, i);
            vkf_tensor *ax = vkf_gb_matmul(b, x, &p->a, NULL, nm);
            snprintf(nm, sizeof nm, "%s.lora%d_b", name, i);
            vkf_tensor *bax = ax ? vkf_gb_matmul(b, ax, &p->b, NULL, nm) : NULL;
            snprintf(nm, sizeof nm, "%s.lora%d_s", name, i);
            vkf_tensor *sc =
                bax ? vkf_gb_scale(b, bax, vkf_lora_pair_scale(set[i].a, p, set[i].scale), nm)
                    : NULL;
            snprintf(nm, sizeof nm, "%s.lora%d", name, i);
            y = sc ? vkf_gb_add(b, y, sc, nm) : NULL;
        }
    }
    if (y && bias && vkf_tensor_present(bias)) {
        snprintf(nm, sizeof nm, "%s.bias", name);
        y = vkf_gb_add(b, y, bias, nm);
    }
    return y;
}

/* ------------------------------------------------------------------ merging
 * W' = W + scale B A, each element computed in double over r in order and rounded once to F32
 * (then to the base's F16 / BF16, round to nearest even): the same bytes as an offline merge
 * that follows this recipe (tests/test_lora.py does it with numpy). */

static vkf_status lora_read_f32(vkf_backend *be, const vkf_tensor *t, float *out) {
    size_t nb = vkf_tensor_nbytes(t);
    void *raw = malloc(nb + 1);
    if (!raw) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", t->name);
    vkf_status s = vkf_tensor_read(be, t, raw);
    size_t rb = vkf_dtype_row_bytes(t->dtype, t->cols);
    for (int64_t r = 0; s == VKF_OK && r < t->rows; r++)
        vkf_dequantize_row(t->dtype, (const char *)raw + (size_t)r * rb, out + r * t->cols,
                           t->cols);
    free(raw);
    return s;
}

static vkf_status lora_merge_pair(vkf_model *m, const vkf_lora *a, const vkf_lora_pair *p,
                                  float scale) {
    vkf_tensor *w = (vkf_tensor *)p->base;
    vkf_dtype dt = w->dtype;
    if (dt != VKF_DTYPE_F32 && dt != VKF_DTYPE_F16 && dt != VKF_DTYPE_BF16)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: merging into %s of dtype %s: only F32, F16 and BF16 weights are "
                         "merged at load (apply the adapter on the fly instead)",
                         a->path, p->name, vkf_dtype_name(dt));
    int slot = -1;
    for (int i = 0; i < m->n_bufs; i++)
        if (m->bufs[i] == w->buf) slot = i;
    if (slot < 0 || w->offset != 0)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: %s is a view of another weight: not merged",
                         a->path, p->name);
    int64_t R = w->rows, C = w->cols, r = p->a.rows;
    float *wf = malloc((size_t)(R * C + r * C + R * r) * sizeof(float));
    if (!wf) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", a->path);
    float *af = wf + R * C, *bf = af + r * C;
    vkf_backend *be = m->buf_be[slot];
    vkf_status s = lora_read_f32(be, w, wf);
    if (s == VKF_OK) s = lora_read_f32(p->be, &p->a, af);
    if (s == VKF_OK) s = lora_read_f32(p->be, &p->b, bf);
    const double sc = (double)vkf_lora_pair_scale(a, p, scale);
    for (int64_t i = 0; s == VKF_OK && i < R; i++)
        for (int64_t j = 0; j < C; j++) {
            double acc = 0.0;
            for (int64_t k = 0; k < r; k++) {
                volatile double prod = (double)bf[i * r + k] * (double)af[k * C + j];
                acc = acc + prod; /* no fused multiply-add: the offline merge has none */
            }
            volatile double d = sc * acc;
            wf[i * C + j] = (float)((double)wf[i * C + j] + d);
        }
    void *out = wf;
    if (s == VKF_OK && dt != VKF_DTYPE_F32) { /* in place: 2 bytes per element */
        uint16_t *h = (uint16_t *)wf;
        for (int64_t i = 0; i < R * C; i++)
            h[i] = dt == VKF_DTYPE_F16 ? vkf_f32_to_f16(wf[i]) : vkf_f32_to_bf16(wf[i]);
    }
    vkf_tensor nt = vkf_tensor_make(dt, R, C, w->name);
    if (s == VKF_OK) s = vkf_tensor_alloc(be, &nt, VKF_BUFFER_WEIGHTS, out);
    free(wf);
    if (s != VKF_OK) return vkf_error_prefix(s, "%s: merging into %s", a->path, p->name);
    be->i->buffer_free(be, w->buf);
    m->bufs[slot] = nt.buf;
    w->buf = nt.buf;
    w->offset = nt.offset;
    return VKF_OK;
}

vkf_status vkf_lora_merge(vkf_model *m, const vkf_lora *a, float scale) {
    if (!m || !a || a->m != m)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "vkf_lora_merge: NULL, or an adapter loaded for another model");
    if (!isfinite(scale))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "%s: the scale %g is not finite", a->path,
                         (double)scale);
    vkf_context_lock(m->ctx);
    vkf_status s = VKF_OK;
    for (int i = 0; i < a->n_pairs && s == VKF_OK; i++)
        s = lora_merge_pair(m, a, &a->pairs[i], scale);
    vkf_context_unlock(m->ctx);
    return s;
}

/* ------------------------------------------------------------------ a session's set */

vkf_status vkf_session_set_lora(vkf_session *s, vkf_lora *const *adapters, const float *scales,
                                int32_t n) {
    if (!s || n < 0 || (n > 0 && (!adapters || !scales)))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vkf_session_set_lora: NULL or n < 0");
    for (int32_t i = 0; i < n; i++) {
        if (!adapters[i] || adapters[i]->m != s->m)
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "vkf_session_set_lora: adapter %d is NULL or loaded for another "
                             "model",
                             i);
        if (!isfinite(scales[i]))
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "%s: the scale %g is not finite",
                             adapters[i]->path, (double)scales[i]);
    }
    int same = n == s->n_lora;
    for (int32_t i = 0; same && i < n; i++)
        same = s->lora[i].a == adapters[i] && s->lora[i].scale == scales[i];
    if (same) return VKF_OK;
    vkf_lora_use *u = NULL;
    if (n > 0 && !(u = malloc((size_t)n * sizeof *u)))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "vkf_session_set_lora: out of host memory");
    for (int32_t i = 0; i < n; i++)
        u[i] = (vkf_lora_use){adapters[i], scales[i]};
    vkf_context_lock(s->m->ctx);
    vkf_session_drop_graphs(s); /* the scales are constants of the graphs */
    vkf_context_unlock(s->m->ctx);
    free(s->lora);
    s->lora = u;
    s->n_lora = n;
    return VKF_OK;
}
