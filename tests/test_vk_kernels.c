/* Kernels as typed variants (src/backend/vulkan/vk_kernels.h) and the planner that chooses them
 * (vk_plan.c):
 * - every define the host's lists name appears in its shader's source (a misspelled name in a
 *   list would otherwise be ignored silently), and a name missing from a source is caught;
 * - vkf_vk_defines spells a variant exactly as the kernels were told before the lists existed
 *   (the strings below are the old hand-written ones);
 * - descriptor bindings read from the compiled SPIR-V match the counts and texel masks the
 *   dispatch sites passed by hand before (the reference: those hand-written values, from
 *   reading the shaders), and a module outside the rules is refused;
 * - the planner answers the switches: the same node, different kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_backend.h"
#include "backend/vulkan/vk_internal.h"
#include "graph/backend.h"
#include "testutil.h"

static void test_names(void) {
    for (int id = 0; id < VKF_VK_K_COUNT; id++) {
        vkf_status s = vkf_vk_kernel_source_check((vkf_vk_kernel_id)id);
        VKT_CHECK(s == VKF_OK, "%s: %s", vkf_vk_kernels[id].shader, vkf_last_error());
    }
    /* teeth: a source that lacks one of the names */
    const char *missing = NULL;
    const char *src = "#ifndef RMS\n#define RMS 0\n#endif\n#if RES\n#endif\n/* PAIRS, XPAIR */\n";
    VKT_CHECK(!vkf_vk_defines_used(VKF_VK_K_NORM_TEXEL, src, &missing) && missing &&
                  strcmp(missing, "PAIR") == 0,
              "norm_texel without PAIR: missing %s", missing ? missing : "(none)");
}

static void test_spelling(void) {
    vkf_vk_kplan k = vkf_vk_kplan_of(VKF_VK_K_MATMUL_TEXEL);
    vkf_vk_matmul_texel_v *m = &k.v.matmul_texel;
    m->wtype = VKF_DTYPE_Q4_K;
    m->norm = 1;
    m->act = -1;
    m->rowseq = 16;
    m->rs_ct = 1;
    m->rawp = 1;
    m->rs_p = 1;
    m->rs_pairu = 1;
    char got[256];
    vkf_vk_defines(&k, got, sizeof got);
    char want[256];
    snprintf(want, sizeof want,
             "WTYPE=%d;NORM=1;SWIGLU=0;ACT=-1;LANES=0;W_SMALL=0;ROWSEQ=16;W_ALIGN16=0;"
             "ROWSEQ_CH=0;ROWSEQ_CT=1;W_RAWP=1;RS_P=1;RS_PAIRU=1;W_SSBO=0",
             (int)VKF_DTYPE_Q4_K);
    VKT_CHECK(strcmp(got, want) == 0, "matmul_texel: %s, want %s", got, want);
    k = vkf_vk_kplan_of(VKF_VK_K_ATTENTION_TEXEL);
    vkf_vk_attention_texel_v *a = &k.v.attention_texel;
    a->maxt = 2;
    a->hwmax = 16;
    a->keylanes = 1;
    a->qr = 1;
    a->kv_f16 = 1;
    a->split = 4;
    vkf_vk_defines(&k, got, sizeof got);
    const char *aw = "MAXT=2u;HWMAX=16u;KEYLANES=1;QLANES=0;QR=1u;KV_F16=1;SPLIT=4";
    VKT_CHECK(strcmp(got, aw) == 0, "attention_texel: %s, want %s", got, aw);
    /* truncation is reported by the length */
    VKT_CHECK(vkf_vk_defines(&k, got, 8) == (int)strlen(aw) && strlen(got) == 7,
              "truncated defines: %s", got);
}

/* the bindings of shader with defines, read from its SPIR-V */
static int reflect(vkf_vk_backend *vb, const char *shader, const char *defs, int *n,
                   uint32_t *mask) {
    uint32_t *w = NULL;
    size_t nw = 0;
    vkf_status s = vkf_vk_spirv_get(vb, shader, defs, &w, &nw);
    VKT_CHECK(s == VKF_OK, "%s {%s}: %s", shader, defs, vkf_last_error());
    if (s != VKF_OK) return 0;
    s = vkf_vk_reflect(w, nw, shader, n, mask);
    VKT_CHECK(s == VKF_OK, "reflect %s: %s", shader, vkf_last_error());
    free(w);
    return s == VKF_OK;
}

static void test_bindings(vkf_vk_backend *vb) {
    /* what the dispatch sites passed by hand before the bindings were read from the module */
    static const struct {
        const char *shader, *defs;
        int n;
        uint32_t mask;
    } cases[] = {
        {"matmul_texel", "", 7, (1u << 2) | (1u << 3) | (1u << 6)},
        {"matmul", "MATVEC=1", 5, 0},
        {"norm_texel", "RMS=1", 5, (1u << 2) | (1u << 3) | (1u << 4)},
        {"norm_texel", "RMS=1;RES=1", 6, (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5)},
        {"softmax_texel", "", 4, (1u << 2) | (1u << 3)},
        {"attention", "CHUNKED=0", 6, 0},
        {"attention", "CHUNKED=1", 7, 0},
        {"attention_texel", "", 6, (1u << 2) | (1u << 3) | (1u << 4)},
        {"attention_merge", "", 3, 0},
        {"kv_store", "", 5, 0},
        {"probe", "MODE=1", 3, 0},
        {"probe", "MODE=8", 3, 4u},
        {"probe", "MODE=9", 3, 6u},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int n = 0;
        uint32_t mask = 0;
        if (!reflect(vb, cases[i].shader, cases[i].defs, &n, &mask)) continue;
        VKT_CHECK(n == cases[i].n && mask == cases[i].mask,
                  "%s {%s}: %d bindings mask %#x, want %d %#x", cases[i].shader, cases[i].defs, n,
                  mask, cases[i].n, cases[i].mask);
    }
    /* teeth: a module whose binding sits in set 1, and a truncated one, are refused */
    uint32_t *w = NULL;
    size_t nw = 0;
    if (vkf_vk_spirv_get(vb, "softmax", "", &w, &nw) != VKF_OK) return;
    int n = 0, moved = 0;
    uint32_t mask = 0;
    for (size_t i = 5; i < nw && !moved;) {
        uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
        if (op == 71 && len >= 4 && w[i + 2] == 34) { /* OpDecorate id DescriptorSet 0 */
            w[i + 3] = 1;
            moved = 1;
        }
        i += len ? len : 1;
    }
    VKT_CHECK(moved, "softmax's module has no DescriptorSet decoration");
    vkf_status s = vkf_vk_reflect(w, nw, "softmax", &n, &mask);
    VKT_CHECK(s == VKF_ERROR_SHADER && strstr(vkf_last_error(), "set 1"),
              "a binding in set 1 gave %s: %s", vkf_status_name(s), vkf_last_error());
    s = vkf_vk_reflect(w, 3, "softmax", &n, &mask);
    VKT_CHECK(s == VKF_ERROR_SHADER, "a truncated module gave %s", vkf_status_name(s));
    free(w);
}

/* an ATTENTION node of decode shape (one query row, n_kv keys, 4 heads of head_dim over 2 KV
 * heads, an F16 cache), tensors in one buffer at aligned offsets */
typedef struct attn_node {
    vkf_tensor q, k, v, d;
    vkf_node n;
} attn_node;

static void attn_make(attn_node *a, vkf_buffer *buf, int n_kv, int head_dim) {
    memset(a, 0, sizeof *a);
    a->q = vkf_tensor_make(VKF_DTYPE_F32, 1, 4 * head_dim, "q");
    a->d = vkf_tensor_make(VKF_DTYPE_F32, 1, 4 * head_dim, "d");
    a->k = vkf_tensor_make(VKF_DTYPE_F16, n_kv, 2 * head_dim, "k");
    a->v = vkf_tensor_make(VKF_DTYPE_F16, n_kv, 2 * head_dim, "v");
    vkf_tensor *ts[4] = {&a->q, &a->d, &a->k, &a->v};
    size_t off = 0;
    for (int i = 0; i < 4; i++) {
        ts[i]->buf = buf;
        ts[i]->offset = off;
        off += (vkf_tensor_nbytes(ts[i]) + 255) / 256 * 256;
    }
    a->n.op = VKF_OP_ATTENTION;
    a->n.dst = &a->d;
    a->n.src[0] = &a->q;
    a->n.src[1] = &a->k;
    a->n.src[2] = &a->v;
    vkf_attn_params *p = &a->n.p.attn;
    p->batch = 1;
    p->n_q = 1;
    p->n_kv = n_kv;
    p->kv_stride = n_kv;
    p->n_head = 4;
    p->n_kv_head = 2;
    p->head_dim = head_dim;
    p->causal = 1;
    p->scale = 0.125f;
}

/* The planner under switches changed through the backend (vkf_backend_vulkan_experiments, as a
 * context created with them would have them): the layouts bench/README.md documents. */
static void test_planner(vkf_backend *be) {
    vkf_vk_backend *vb = vkf_vk(be);
    vkf_switches_xp *sw = vkf_backend_vulkan_experiments(be);
    const vkf_vk_caps *c = &vb->caps;
    vkf_buffer *buf = NULL;
    VKT_OK(be->i->buffer_alloc(be, 1 << 20, VKF_BUFFER_ACTIVATIONS, &buf));
    if (!buf || !c->texel || !c->has_subgroup) {
        if (buf) be->i->buffer_free(be, buf);
        VKT_CHECK(0, "%s has no texels or subgroups: the texel layouts cannot be planned", c->name);
        return;
    }
    attn_node a;
    attn_make(&a, buf, 512, 64);
    vkf_vk_attn_plan p;
    /* decode at head_dim 64: attention_texel.comp with lanes taking whole keys, on every device */
    VKT_OK(vkf_vk_plan_attention(vb, &a.n, &p));
    VKT_CHECK(p.texel && p.keylanes && p.split == 1 && p.k.v.attention_texel.keylanes == 1 &&
                  p.k.v.attention_texel.kv_f16 == 1 && p.k.v.attention_texel.hwmax == 16,
              "decode: texel %d keylanes %d split %u", p.texel, p.keylanes, p.split);
    sw->no_keylanes = 1; /* VKF_NO_KEYLANES: subgroups split the keys */
    VKT_OK(vkf_vk_plan_attention(vb, &a.n, &p));
    VKT_CHECK(p.texel && !p.keylanes && p.k.v.attention_texel.keylanes == 0,
              "no_keylanes: keylanes %d", p.keylanes);
    sw->no_keylanes = 0;
    sw->attn_split = 4; /* VKF_ATTN_SPLIT=4: four key parts, merged */
    VKT_OK(vkf_vk_plan_attention(vb, &a.n, &p));
    VKT_CHECK(p.texel && p.split == 4 && p.k.v.attention_texel.split == 4 &&
                  p.merge.id == VKF_VK_K_ATTENTION_MERGE && p.merge.v.attention_merge.split == 4,
              "attn_split 4: split %u merge split %d", p.split, p.merge.v.attention_merge.split);
    sw->attn_split = 0;
    sw->no_texel_attention = 1; /* VKF_NO_TEXEL_ATTENTION: attention.comp, no 16-byte loads for
                                   an F16 cache */
    VKT_OK(vkf_vk_plan_attention(vb, &a.n, &p));
    VKT_CHECK(!p.texel && p.gen.id == VKF_VK_K_ATTENTION && !p.vec4_ok &&
                  p.gen.v.attention.kv_f16 == 1,
              "no_texel_attention: texel %d kernel %d vec4 %d", p.texel, (int)p.gen.id, p.vec4_ok);
    sw->no_texel_attention = 0;
    be->i->buffer_free(be, buf);
}

int main(void) {
    test_names();
    test_spelling();
    if (getenv("VKF_TEST_NO_VULKAN")) return vkt_finish();
    vkf_backend_vulkan_params bp = {.validate = 1};
    vkf_backend *be = NULL;
    vkf_status st = vkf_backend_vulkan_create_ex(&bp, &be);
    VKT_CHECK(st == VKF_OK, "no Vulkan device: %s", vkf_last_error());
    if (!be) return vkt_finish();
    test_bindings(vkf_vk(be));
    test_planner(be);
    vkf_backend_free(be);
    return vkt_finish();
}
