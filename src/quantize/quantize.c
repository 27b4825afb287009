/* vkf_model_quantize: llama.cpp's llama-quantize without an importance matrix (see vkformer.h).
 * The per-tensor type rules follow llama.cpp's llama_tensor_get_type for the file types below;
 * the blocks come from the reference quantizers in core/quant_*.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/quant.h"
#include "core/switches.h"
#include "core/wtype.h"
#include "io/gguf.h"
#include "io/gguf_write.h"
#include "quantize/quantize.h"

#define QNT_VERSION 2 /* general.quantization_version ggml writes */

/* llama.cpp's file types (llama_ftype values, as general.file_type stores them). */
typedef enum ftype {
    FT_F32 = 0,
    FT_F16 = 1,
    FT_Q4_0 = 2,
    FT_Q4_1 = 3,
    FT_Q8_0 = 7,
    FT_Q5_0 = 8,
    FT_Q5_1 = 9,
    FT_Q2_K = 10,
    FT_Q3_K_S = 11,
    FT_Q3_K_M = 12,
    FT_Q3_K_L = 13,
    FT_Q4_K_S = 14,
    FT_Q4_K_M = 15,
    FT_Q5_K_S = 16,
    FT_Q5_K_M = 17,
    FT_Q6_K = 18,
    FT_IQ4_NL = 25,
    FT_IQ4_XS = 30,
    FT_BF16 = 32,
    FT_MXFP4_MOE = 38,
} ftype;

static const struct {
    const char *name;
    ftype ft;
    vkf_dtype def;
} k_ftypes[] = {
    {"F32", FT_F32, VKF_DTYPE_F32},          {"F16", FT_F16, VKF_DTYPE_F16},
    {"BF16", FT_BF16, VKF_DTYPE_BF16},       {"Q8_0", FT_Q8_0, VKF_DTYPE_Q8_0},
    {"Q4_0", FT_Q4_0, VKF_DTYPE_Q4_0},       {"Q4_1", FT_Q4_1, VKF_DTYPE_Q4_1},
    {"Q5_0", FT_Q5_0, VKF_DTYPE_Q5_0},       {"Q5_1", FT_Q5_1, VKF_DTYPE_Q5_1},
    {"Q2_K", FT_Q2_K, VKF_DTYPE_Q2_K},       {"Q3_K_S", FT_Q3_K_S, VKF_DTYPE_Q3_K},
    {"Q3_K_M", FT_Q3_K_M, VKF_DTYPE_Q3_K},   {"Q3_K_L", FT_Q3_K_L, VKF_DTYPE_Q3_K},
    {"Q4_K_S", FT_Q4_K_S, VKF_DTYPE_Q4_K},   {"Q4_K_M", FT_Q4_K_M, VKF_DTYPE_Q4_K},
    {"Q5_K_S", FT_Q5_K_S, VKF_DTYPE_Q5_K},   {"Q5_K_M", FT_Q5_K_M, VKF_DTYPE_Q5_K},
    {"Q6_K", FT_Q6_K, VKF_DTYPE_Q6_K},       {"IQ4_NL", FT_IQ4_NL, VKF_DTYPE_IQ4_NL},
    {"IQ4_XS", FT_IQ4_XS, VKF_DTYPE_IQ4_XS}, {"MXFP4_MOE", FT_MXFP4_MOE, VKF_DTYPE_MXFP4},
};

static uint32_t ggml_id(vkf_dtype t) {
    const vkf_wtype *w = vkf_wtype_of(t);
    return w && w->gguf_type >= 0 ? (uint32_t)w->gguf_type : UINT32_MAX;
}

static int is_quantized(vkf_dtype t) { return vkf_dtype_block_elems(t) > 1; }

/* ------------------------------------------------------------------ llama.cpp's per-tensor rules
 */

typedef struct qstate {
    ftype ft;
    int n_attn_v, i_attn_v, n_layer, i_ffn_down;
    int has_output, n_gqa, n_expert, is_70b, is_falcon;
    int n_fallback;
} qstate;

static int use_more_bits(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static int has(const char *name, const char *part) { return strstr(name, part) != NULL; }

/* The layer of an expert tensor from its name (llama.cpp does this only for MoE models). */
static int ffn_layer(const qstate *q, const char *name, int counter) {
    int l;
    if (q->n_expert > 1 && sscanf(name, "blk.%d.", &l) == 1) return l;
    return counter;
}

/* A row length that is not a multiple of the block: llama.cpp's fallback types
 * (tensor_type_fallback; --pure takes these too). */
static vkf_dtype fallback_type(qstate *q, vkf_dtype t, int64_t ne0) {
    if (ne0 % vkf_dtype_block_elems(t) != 0) {
        switch (t) {
        case VKF_DTYPE_Q2_K:
        case VKF_DTYPE_Q3_K:
        case VKF_DTYPE_IQ4_XS: t = VKF_DTYPE_IQ4_NL; break;
        case VKF_DTYPE_Q4_K: t = VKF_DTYPE_Q5_0; break;
        case VKF_DTYPE_Q5_K: t = VKF_DTYPE_Q5_1; break;
        case VKF_DTYPE_Q6_K: t = VKF_DTYPE_Q8_0; break;
        default: break; /* a 32-block type: F16 below */
        }
        if (ne0 % vkf_dtype_block_elems(t) != 0) t = VKF_DTYPE_F16;
        q->n_fallback++;
    }
    return t;
}

/* ne2: the tensor's third dimension (> 1: a stack of experts) */
static vkf_dtype tensor_type(qstate *q, vkf_dtype t, const char *name, int64_t ne0, int64_t ne2) {
    const ftype ft = q->ft;
    int is_output =
        !strcmp(name, "output.weight") || (!q->has_output && !strcmp(name, "token_embd.weight"));
    if (ft == FT_MXFP4_MOE) /* expert tensors MXFP4, every other matrix (output too) Q8_0 */
        return fallback_type(q, !is_output && ne2 > 1 ? VKF_DTYPE_MXFP4 : VKF_DTYPE_Q8_0, ne0);
    if (is_output) {
        if (q->is_falcon || ne0 % vkf_dtype_block_elems(t) != 0)
            t = VKF_DTYPE_Q8_0;
        else if (t != VKF_DTYPE_Q8_0)
            t = VKF_DTYPE_Q6_K;
    } else if (!strcmp(name, "token_embd.weight")) {
        /* unchanged for these file types */
    } else if (has(name, "attn_v.weight")) {
        if (ft == FT_Q2_K)
            t = q->n_gqa >= 4 ? VKF_DTYPE_Q4_K : VKF_DTYPE_Q3_K;
        else if (ft == FT_Q3_K_M)
            t = q->i_attn_v < 2 ? VKF_DTYPE_Q5_K : VKF_DTYPE_Q4_K;
        else if (ft == FT_Q3_K_L)
            t = VKF_DTYPE_Q5_K;
        else if ((ft == FT_IQ4_NL || ft == FT_IQ4_XS) && q->n_gqa >= 4)
            t = VKF_DTYPE_Q5_K;
        else if ((ft == FT_Q4_K_M || ft == FT_Q5_K_M) && use_more_bits(q->i_attn_v, q->n_attn_v))
            t = VKF_DTYPE_Q6_K;
        else if (ft == FT_Q4_K_S && q->i_attn_v < 4)
            t = VKF_DTYPE_Q5_K;
        if (q->is_70b && (t == VKF_DTYPE_Q3_K || t == VKF_DTYPE_Q4_K)) t = VKF_DTYPE_Q5_K;
        if (q->n_expert == 8) t = VKF_DTYPE_Q8_0;
        ++q->i_attn_v;
    } else if (has(name, "attn_k.weight")) {
        if (q->n_expert == 8) t = VKF_DTYPE_Q8_0;
    } else if (has(name, "ffn_down")) {
        int il = ffn_layer(q, name, q->i_ffn_down), nl = q->n_layer;
        if (ft == FT_Q2_K)
            t = VKF_DTYPE_Q3_K;
        else if (ft == FT_Q3_K_M)
            t = il < nl / 16                             ? VKF_DTYPE_Q5_K
                : !q->is_falcon || use_more_bits(il, nl) ? VKF_DTYPE_Q4_K
                                                         : VKF_DTYPE_Q3_K;
        else if (ft == FT_Q3_K_L)
            t = q->is_falcon ? VKF_DTYPE_Q4_K : VKF_DTYPE_Q5_K;
        else if (ft == FT_Q4_K_M) {
            if (q->is_falcon)
                t = il < nl / 16            ? VKF_DTYPE_Q6_K
                    : use_more_bits(il, nl) ? VKF_DTYPE_Q5_K
                                            : VKF_DTYPE_Q4_K;
            else if (use_more_bits(il, nl))
                t = VKF_DTYPE_Q6_K;
        } else if (il < nl / 8 && (ft == FT_IQ4_NL || ft == FT_IQ4_XS))
            t = VKF_DTYPE_Q5_K;
        else if (ft == FT_Q5_K_M && use_more_bits(il, nl))
            t = VKF_DTYPE_Q6_K;
        else if (ft == FT_Q4_K_S && !q->is_falcon && il < nl / 8)
            t = VKF_DTYPE_Q5_K;
        ++q->i_ffn_down;
    } else if (has(name, "attn_output.weight")) {
        if (!q->is_falcon) {
            if (q->n_expert == 8) {
                if (ft == FT_Q2_K || ft == FT_Q3_K_S || ft == FT_Q3_K_M || ft == FT_IQ4_NL ||
                    ft == FT_Q4_K_S || ft == FT_Q4_K_M || ft == FT_IQ4_XS)
                    t = VKF_DTYPE_Q5_K;
            } else {
                if (ft == FT_Q2_K)
                    t = VKF_DTYPE_Q3_K;
                else if (ft == FT_Q3_K_M)
                    t = VKF_DTYPE_Q4_K;
                else if (ft == FT_Q3_K_L)
                    t = VKF_DTYPE_Q5_K;
            }
        } else if (ft == FT_Q3_K_L) {
            t = VKF_DTYPE_Q4_K;
        }
    } else if (has(name, "attn_qkv.weight")) {
        if (ft == FT_Q3_K_M || ft == FT_Q3_K_L)
            t = VKF_DTYPE_Q4_K;
        else if (ft == FT_Q4_K_M)
            t = VKF_DTYPE_Q5_K;
        else if (ft == FT_Q5_K_M)
            t = VKF_DTYPE_Q6_K;
    }
    return fallback_type(q, t, ne0);
}

/* Whether llama.cpp quantizes this tensor at all (else it is copied as it is). */
static int wants_quantize(const vkf_gguf_tensor *t) {
    const char *n = t->name;
    size_t len = strlen(n);
    if (len < 6 || strcmp(n + len - 6, "weight")) return 0;
    if (t->n_dims < 2) return 0;
    static const char *const skip[] = {"_norm.weight",
                                       "ffn_gate_inp.weight",
                                       "ssm_conv1d.weight",
                                       "ssm_x.weight",
                                       "ssm_dt.weight",
                                       "time_mix_first.weight",
                                       "time_mix_w1.weight",
                                       "time_mix_w2.weight",
                                       "time_mix_decay_w1.weight",
                                       "time_mix_decay_w2.weight",
                                       "time_mix_lerp_fused.weight",
                                       "attn_rel_b.weight"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strstr(n, skip[i])) return 0;
    return strcmp(n, "position_embd.weight") && strcmp(n, "token_types.weight");
}

/* llama.cpp's tensor order: tensors outside layers first, then by layer number, by name within. */
static int layer_of(const char *name) {
    int l = -1;
    if (sscanf(name, "blk.%d.", &l) != 1) l = -1;
    return l;
}

static int cmp_tensors(const void *a, const void *b) {
    const vkf_gguf_tensor *x = *(const vkf_gguf_tensor *const *)a,
                          *y = *(const vkf_gguf_tensor *const *)b;
    int lx = layer_of(x->name), ly = layer_of(y->name);
    if (lx != ly) return lx < ly ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* ------------------------------------------------------------------ the file */

typedef struct plan {
    const vkf_gguf_tensor *src;
    vkf_dtype type;
    uint64_t nbytes;
} plan;

static vkf_status to_f32(const vkf_gguf_tensor *t, int64_t row, float *dst) {
    size_t rb = vkf_quant_row_bytes(t->dtype, t->cols);
    vkf_dequantize_row(t->dtype, (const char *)t->data + (size_t)row * rb, dst, t->cols);
    return VKF_OK;
}

static vkf_status write_tensor(vkf_gguf_writer *w, const plan *p, void **buf, size_t *cap,
                               float *row) {
    const vkf_gguf_tensor *t = p->src;
    if (p->type == t->dtype) return vkf_gguf_writer_write(w, t->data, p->nbytes);
    if (*cap < p->nbytes) {
        void *nb = realloc(*buf, (size_t)p->nbytes);
        if (!nb)
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "quantize: tensor %s: out of memory",
                             t->name);
        *buf = nb;
        *cap = (size_t)p->nbytes;
    }
    size_t orb = vkf_quant_row_bytes(p->type, t->cols);
    for (int64_t r = 0; r < t->rows; r++) {
        VKF_TRY(to_f32(t, r, row));
        vkf_quantize_rows(p->type, row, (char *)*buf + (size_t)r * orb, 1, t->cols);
    }
    return vkf_gguf_writer_write(w, *buf, p->nbytes);
}

static vkf_status quantize_gguf(const vkf_quantize_params *p, ftype ft, vkf_dtype def, vkf_gguf *g,
                                vkf_quantize_stats *st) {
    size_t n = vkf_gguf_tensor_count(g);
    const vkf_gguf_tensor **order = calloc(n ? n : 1, sizeof *order);
    plan *pl = calloc(n ? n : 1, sizeof *pl);
    vkf_gguf_writer *w = NULL;
    void *buf = NULL;
    size_t cap = 0;
    float *row = NULL;
    vkf_status s = VKF_OK;
    if (!order || !pl) {
        s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "quantize: out of memory");
        goto done;
    }
    qstate q = {.ft = ft};
    const char *arch = vkf_gguf_architecture(g);
    char key[160];
    uint32_t n_layer = 0, n_head = 0, n_head_kv = 0, n_expert = 0;
    int64_t max_cols = 1;
    if (arch) {
        snprintf(key, sizeof key, "%s.block_count", arch);
        if ((s = vkf_gguf_get_u32(g, key, 0, &n_layer)) != VKF_OK) goto done;
        snprintf(key, sizeof key, "%s.attention.head_count", arch);
        if ((s = vkf_gguf_get_u32(g, key, 0, &n_head)) != VKF_OK) goto done;
        snprintf(key, sizeof key, "%s.attention.head_count_kv", arch);
        if ((s = vkf_gguf_get_u32(g, key, n_head, &n_head_kv)) != VKF_OK) goto done;
        snprintf(key, sizeof key, "%s.expert_count", arch);
        if ((s = vkf_gguf_get_u32(g, key, 0, &n_expert)) != VKF_OK) goto done;
    }
    q.n_layer = (int)n_layer;
    q.n_gqa = n_head_kv ? (int)(n_head / n_head_kv) : 0;
    q.n_expert = (int)n_expert;
    q.is_falcon = arch && !strcmp(arch, "falcon");
    q.is_70b = arch && !strcmp(arch, "llama") && n_layer == 80;

    for (size_t i = 0; i < n; i++) {
        const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
        order[i] = t;
        if (t->dtype != VKF_DTYPE_F32 && t->dtype != VKF_DTYPE_F16 && t->dtype != VKF_DTYPE_BF16 &&
            !p->allow_requantize) {
            s = vkf_error(VKF_ERROR_UNSUPPORTED,
                          "%s: tensor %s is %s: quantize needs F32, F16 or BF16 tensors "
                          "(requantizing a quantized file: allow_requantize, "
                          "--allow-requantize)",
                          p->input, t->name, vkf_dtype_name(t->dtype));
            goto done;
        }
        if (has(t->name, "attn_v.weight") || has(t->name, "attn_qkv.weight") ||
            has(t->name, "attn_kv_b.weight"))
            q.n_attn_v++;
        else if (!strcmp(t->name, "output.weight"))
            q.has_output = 1;
        if (t->cols > max_cols) max_cols = t->cols;
    }
    qsort(order, n, sizeof *order, cmp_tensors);

    for (size_t i = 0; i < n; i++) {
        const vkf_gguf_tensor *t = order[i];
        vkf_dtype nt = t->dtype;
        if (wants_quantize(t)) {
            nt = def;
            if (is_quantized(def))
                nt = p->pure ? fallback_type(&q, def, t->ne[0])
                             : tensor_type(&q, def, t->name, t->ne[0], t->ne[2]);
        }
        pl[i] = (plan){t, nt, (uint64_t)vkf_quant_row_bytes(nt, t->cols) * (uint64_t)t->rows};
    }

    if ((s = vkf_gguf_writer_create(&w)) != VKF_OK) goto done;
    for (size_t i = 0; i < vkf_gguf_kv_count(g) && s == VKF_OK; i++) {
        const vkf_gguf_kv *kv = vkf_gguf_kv_at(g, i);
        s = vkf_gguf_writer_copy_kv(w, kv);
    }
    if (s == VKF_OK) s = vkf_gguf_writer_set_u32(w, "general.quantization_version", QNT_VERSION);
    if (s == VKF_OK) s = vkf_gguf_writer_set_u32(w, "general.file_type", (uint32_t)ft);
    if (s != VKF_OK) goto done;
    vkf_gguf_writer_remove_kv(w, "split.no");
    vkf_gguf_writer_remove_kv(w, "split.count");
    vkf_gguf_writer_remove_kv(w, "split.tensors.count");
    for (size_t i = 0; i < n && s == VKF_OK; i++)
        s = vkf_gguf_writer_add_tensor(w, pl[i].src->name, ggml_id(pl[i].type), pl[i].src->n_dims,
                                       pl[i].src->ne, pl[i].nbytes);
    if (s == VKF_OK) s = vkf_gguf_writer_begin(w, p->output);
    if (s != VKF_OK) goto done;
    row = malloc((size_t)max_cols * sizeof *row);
    if (!row) {
        s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "quantize: out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (p->progress) p->progress(p->user, (int)i, (int)n, pl[i].src->name, pl[i].type);
        if ((s = write_tensor(w, &pl[i], &buf, &cap, row)) != VKF_OK) goto done;
        if (st) {
            st->n_tensors++;
            st->n_quantized += pl[i].type != pl[i].src->dtype;
            st->n_by_type[pl[i].type]++;
            st->bytes_by_type[pl[i].type] += pl[i].nbytes;
            st->in_bytes += pl[i].src->nbytes;
            st->out_bytes += pl[i].nbytes;
        }
    }
    if ((s = vkf_gguf_writer_finish(w)) != VKF_OK) goto done;
    if (st) {
        st->n_fallback = q.n_fallback;
        st->file_bytes = vkf_gguf_writer_file_size(w);
    }
done:
    vkf_gguf_writer_free(w);
    free(order);
    free(pl);
    free(buf);
    free(row);
    return s;
}

/* Where the F32 GGUF of a Hugging Face directory goes before it is quantized: beside OUT (same
 * file system, OUT's directory is writable), unless OUT is not a regular file (a device, a
 * FIFO): then in $TMPDIR (never a file created in /dev). malloc'ed. */
static char *hf_temp_path(const char *out) {
    struct stat st;
    char *tmp;
    if (stat(out, &st) == 0 && !S_ISREG(st.st_mode)) {
        const char *dir = vkf_switches_tmpdir();
        size_t n = strlen(dir) + 64;
        if ((tmp = malloc(n)))
            snprintf(tmp, n, "%s/vkformer-quantize-%ld.hf-f32.gguf", dir, (long)getpid());
        return tmp;
    }
    size_t n = strlen(out);
    if ((tmp = malloc(n + 16))) {
        memcpy(tmp, out, n);
        memcpy(tmp + n, ".hf-f32.gguf", 13);
    }
    return tmp;
}

vkf_status vkf_model_quantize(const vkf_quantize_params *p, vkf_quantize_stats *stats) {
    if (!p || !p->input || !p->output || !p->type)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "quantize: input, output and type are required");
    int k = -1;
    /* a number is llama-quantize's type id: the llama_ftype value ("15" = Q4_K_M) */
    char *end;
    long id = strtol(p->type, &end, 10);
    int numeric = *p->type >= '0' && *p->type <= '9' && !*end;
    for (size_t i = 0; i < sizeof k_ftypes / sizeof k_ftypes[0]; i++)
        if (numeric ? (long)k_ftypes[i].ft == id : !strcasecmp(p->type, k_ftypes[i].name))
            k = (int)i;
    if (k < 0) {
        char names[512] = "";
        for (size_t i = 0; i < sizeof k_ftypes / sizeof k_ftypes[0]; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s (%d)", i ? ", " : "", k_ftypes[i].name,
                     (int)k_ftypes[i].ft);
        }
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "quantize: unknown type '%s' (expected one of %s: a name, or "
                         "llama-quantize's number)",
                         p->type, names);
    }
    if (stats) memset(stats, 0, sizeof *stats);
    struct stat sb;
    char *tmp = NULL;
    const char *in = p->input;
    if (stat(p->input, &sb) == 0 &&
        S_ISDIR(sb.st_mode)) { /* a Hugging Face directory: F32 GGUF first */
        if (!(tmp = hf_temp_path(p->output)))
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "quantize: out of memory");
        vkf_status s = vkf_hf_to_gguf(p->input, tmp);
        if (s != VKF_OK) {
            free(tmp);
            return s;
        }
        in = tmp;
    }
    vkf_gguf *g;
    vkf_status s = vkf_gguf_open(in, &g);
    if (s == VKF_OK) {
        s = quantize_gguf(p, k_ftypes[k].ft, k_ftypes[k].def, g, stats);
        vkf_gguf_close(g);
    }
    if (tmp) {
        remove(tmp);
        free(tmp);
    }
    return s;
}
