/* SPV_NV_cooperative_matrix -> SPV_KHR_cooperative_matrix, on SPIR-V words (issue 31).
 *
 * Debian 12's glslang (12.0) compiles GL_NV_cooperative_matrix but not GL_KHR_cooperative_matrix
 * (13.1+), while AMD RDNA3+, Intel Arc and current NVIDIA drivers expose
 * VK_KHR_cooperative_matrix. The two SPIR-V extensions differ in form, not in meaning:
 *   capability CooperativeMatrixNV (5357)    -> CooperativeMatrixKHR (6022), and the extension;
 *   OpTypeCooperativeMatrixNV (5358) R Comp Scope Rows Cols
 *                                            -> OpTypeCooperativeMatrixKHR (4456) ... Use, where
 *       Use (MatrixAKHR 0, MatrixBKHR 1, MatrixAccumulatorKHR 2) comes from how the values of the
 *       type reach OpCooperativeMatrixMulAddNV: A, B, or C / result (values used nowhere there,
 *       e.g. only loaded and stored, are accumulators). A type whose values play two roles
 *       (glslang gives the 16 x 16 f16 A and B operands one type) is split into one type per
 *       role, and so are the arrays and pointers built on it;
 *   OpCooperativeMatrixLoadNV (5359) RT R Pointer Stride ColumnMajor [MemoryAccess]
 *                                            -> LoadKHR (4457) RT R Pointer Layout Stride [...];
 *   OpCooperativeMatrixStoreNV (5360) Pointer Object Stride ColumnMajor [MemoryAccess]
 *                                            -> StoreKHR (4458) Pointer Object Layout Stride [...]
 *       where Layout is a 32-bit constant RowMajorKHR 0 / ColumnMajorKHR 1 (the NV operand is a
 *       boolean constant);
 *   OpCooperativeMatrixMulAddNV (5361) RT R A B C
 *                                            -> MulAddKHR (4459) RT R A B C [Operands], the
 *       signedness bits (MatrixASigned 1, B 2, C 4, Result 8) for signed integer components;
 *   OpCooperativeMatrixLengthNV (5362)       -> LengthKHR (4460) (the accumulator's type where
 *       the NV type was split).
 * Roles are found by joining every value with the values it is loaded from, stored to,
 * indexed from or computed from (union-find), so a role reaches the variables, arrays and
 * temporaries glslang routes matrices through. What the pass does not know (a matrix crossing a
 * function call, a struct holding one, a column-major flag that is not a constant, one value
 * in two roles) is refused with a message rather than rewritten wrongly. The output is checked
 * by spirv-val (SPIRV-Tools 2023.4+ knows the KHR form) in tests/test_vk_coopmat_khr.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"

enum {
    OP_NAME = 5,
    OP_EXTENSION = 10,
    OP_TYPE_INT = 21,
    OP_TYPE_ARRAY = 28,
    OP_TYPE_RUNTIME_ARRAY = 29,
    OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32,
    OP_TYPE_FUNCTION = 33,
    OP_CONSTANT_TRUE = 41,
    OP_CONSTANT_FALSE = 42,
    OP_CONSTANT = 43,
    OP_FUNCTION = 54,
    OP_FUNCTION_PARAMETER = 55,
    OP_FUNCTION_CALL = 57,
    OP_STORE = 62,
    OP_DECORATE = 71,
    OP_MEMBER_DECORATE = 72,
    OP_CAPABILITY = 17,
    CAP_COOPMAT_NV = 5357,
    CAP_COOPMAT_KHR = 6022,
    OP_TYPE_CM_KHR = 4456,
    OP_CM_LOAD_KHR = 4457,
    OP_CM_STORE_KHR = 4458,
    OP_CM_MULADD_KHR = 4459,
    OP_CM_LENGTH_KHR = 4460,
    OP_TYPE_CM_NV = 5358,
    OP_CM_LOAD_NV = 5359,
    OP_CM_STORE_NV = 5360,
    OP_CM_MULADD_NV = 5361,
    OP_CM_LENGTH_NV = 5362,
};

enum { ROLE_NONE = -1, ROLE_A = 0, ROLE_B = 1, ROLE_ACC = 2, N_ROLES = 3 };

typedef struct cm_pass {
    const uint32_t *w;
    size_t n;
    uint32_t bound;          /* the output's bound (grows as the pass adds ids) */
    uint32_t ids;            /* the input's bound: the size of the arrays below */
    uint32_t *def;           /* id -> word offset of the instruction that defines it (0: none) */
    uint32_t *type;          /* value id -> its result type id (0: not a value) */
    uint8_t *has_cm;         /* type id -> 1 where it is or holds a cooperative matrix */
    uint32_t *parent;        /* union-find over value ids */
    int8_t *role;            /* at each root: the class's role */
    uint32_t *map;           /* (type id, role) -> the KHR-form type id (0: not needed) */
    uint32_t uint_t;         /* OpTypeInt 32 0 */
    uint32_t konst[N_ROLES]; /* the constants 0, 1, 2 (Use; layout 0 and 1) */
    uint32_t made[N_ROLES];  /* 1 where the pass adds that constant */
    int seen_cm;             /* the scan has met a cooperative matrix type */
    char err[256];
} cm_pass;

static uint32_t cm_find(cm_pass *p, uint32_t x) {
    while (p->parent[x] != x) {
        p->parent[x] = p->parent[p->parent[x]];
        x = p->parent[x];
    }
    return x;
}

static int cm_fail(cm_pass *p, const char *msg, uint32_t id) {
    if (!p->err[0]) snprintf(p->err, sizeof p->err, "%s (id %u)", msg, id);
    return 0;
}

static int cm_join(cm_pass *p, uint32_t a, uint32_t b) {
    a = cm_find(p, a);
    b = cm_find(p, b);
    if (a == b) return 1;
    if (p->role[a] != ROLE_NONE && p->role[b] != ROLE_NONE && p->role[a] != p->role[b])
        return cm_fail(p, "a cooperative matrix value is used in two roles", b);
    if (p->role[b] == ROLE_NONE) p->role[b] = p->role[a];
    p->parent[a] = b;
    return 1;
}

static int cm_tag(cm_pass *p, uint32_t v, int role) {
    if (v >= p->ids || !p->type[v] || !p->has_cm[p->type[v]])
        return cm_fail(p, "OpCooperativeMatrixMulAddNV operand is not a cooperative matrix", v);
    uint32_t r = cm_find(p, v);
    if (p->role[r] != ROLE_NONE && p->role[r] != role)
        return cm_fail(p, "a cooperative matrix value is used in two roles", v);
    p->role[r] = (int8_t)role;
    return 1;
}

/* does opcode op define a result type in word 1? (every instruction with both a result type
 * and a result, as far as this pass needs: not types, names, decorations, stores) */
static int cm_has_result_type(uint32_t op, uint32_t wc) {
    if (wc < 3) return 0;
    if ((op >= 19 && op <= 39) || op == OP_TYPE_CM_NV || op == OP_TYPE_CM_KHR) return 0;
    switch (op) {
    case OP_NAME:
    case 6: /* OpMemberName */
    case OP_EXTENSION:
    case 11: /* OpExtInstImport */
    case 14: /* OpMemoryModel */
    case 15: /* OpEntryPoint */
    case 16: /* OpExecutionMode */
    case OP_CAPABILITY:
    case OP_STORE:
    case 63: /* OpCopyMemory */
    case OP_DECORATE:
    case OP_MEMBER_DECORATE:
    case 332:  /* OpDecorateId */
    case 5632: /* OpDecorateString */
    case 5633: /* OpMemberDecorateString */
    case 331:  /* OpExecutionModeId */
    case 2:    /* OpSourceContinued */
    case 3:    /* OpSource */
    case 330:  /* OpModuleProcessed */
    case 4:    /* OpSourceExtension */
    case 7:    /* OpString */
    case 8:    /* OpLine */
    case 248:  /* OpLabel */
    case 246:  /* OpLoopMerge */
    case 247:  /* OpSelectionMerge */
    case 249:  /* OpBranch */
    case 250:  /* OpBranchConditional */
    case 251:  /* OpSwitch */
    case 224:  /* OpControlBarrier */
    case 225:  /* OpMemoryBarrier */
    case OP_CM_STORE_NV:
    case OP_CM_STORE_KHR: return 0;
    default: return 1;
    }
}

static int cm_scan(cm_pass *p) {
    for (size_t i = 5; i < p->n;) {
        uint32_t wc = p->w[i] >> 16, op = p->w[i] & 0xffff;
        if (wc == 0 || i + wc > p->n) return cm_fail(p, "truncated instruction", (uint32_t)i);
        const uint32_t *in = p->w + i;
        uint32_t res = 0;
        if ((op >= 19 && op <= 39) || op == OP_TYPE_CM_NV) {
            if (wc < 2) return cm_fail(p, "a type declaration without its id", (uint32_t)i);
            res = in[1];
            if (res >= p->bound) return cm_fail(p, "id beyond the bound", res);
            p->def[res] = (uint32_t)i;
            if (op == OP_TYPE_CM_NV && wc != 6)
                return cm_fail(p, "OpTypeCooperativeMatrixNV of the wrong length", res);
            if ((op == OP_TYPE_ARRAY && wc != 4) || (op == OP_TYPE_POINTER && wc != 4) ||
                (op == OP_TYPE_INT && wc != 4))
                return cm_fail(p, "a type declaration of the wrong length", res);
            if (op == OP_TYPE_CM_NV) p->has_cm[res] = p->seen_cm = 1;
            if ((op == OP_TYPE_ARRAY || op == OP_TYPE_RUNTIME_ARRAY) && in[2] < p->bound)
                p->has_cm[res] = p->has_cm[in[2]];
            if (op == OP_TYPE_POINTER && wc >= 4 && in[3] < p->bound)
                p->has_cm[res] = p->has_cm[in[3]];
            if (op == OP_TYPE_STRUCT || op == OP_TYPE_FUNCTION)
                for (uint32_t k = 2; k < wc; k++)
                    if (in[k] < p->bound && p->has_cm[in[k]])
                        return cm_fail(p,
                                       "a cooperative matrix inside a struct or a function "
                                       "signature is not supported",
                                       res);
            if (op == OP_TYPE_INT && wc >= 4 && in[2] == 32 && in[3] == 0 && !p->uint_t)
                p->uint_t = res;
        } else if (cm_has_result_type(op, wc)) {
            res = in[2];
            if (res >= p->bound || in[1] >= p->bound) { /* not ids: an opcode this pass misreads */
                i += wc;
                continue;
            }
            p->def[res] = (uint32_t)i;
            p->type[res] = in[1];
            /* 0, 1, 2 declared before the first matrix type serve as Use and layout */
            if (op == OP_CONSTANT && wc == 4 && in[1] == p->uint_t && in[3] < N_ROLES &&
                !p->seen_cm && !p->konst[in[3]])
                p->konst[in[3]] = res;
            if (p->has_cm[in[1]] && op == OP_FUNCTION_PARAMETER)
                return cm_fail(p, "a cooperative matrix function parameter is not supported", res);
        }
        i += wc;
    }
    return 1;
}

/* join each cooperative-matrix value with the cooperative-matrix values it is made from or
 * stored into; tag the roles OpCooperativeMatrixMulAddNV gives */
static int cm_roles(cm_pass *p) {
    for (size_t i = 5; i < p->n; i += p->w[i] >> 16) {
        uint32_t wc = p->w[i] >> 16, op = p->w[i] & 0xffff;
        const uint32_t *in = p->w + i;
        if (op == OP_CM_MULADD_NV) {
            if (wc != 6)
                return cm_fail(p, "OpCooperativeMatrixMulAddNV of the wrong length", in[2]);
            if (!cm_tag(p, in[3], ROLE_A) || !cm_tag(p, in[4], ROLE_B) ||
                !cm_tag(p, in[5], ROLE_ACC) || !cm_tag(p, in[2], ROLE_ACC) ||
                !cm_join(p, in[2], in[5]))
                return 0;
            continue;
        }
        if (op == OP_CM_LOAD_NV || op == OP_CM_STORE_NV || op == OP_CM_LENGTH_NV) continue;
        uint32_t first;
        if (cm_has_result_type(op, wc) && !(op >= 19 && op <= 39)) {
            if (in[1] >= p->ids || in[2] >= p->ids || !p->has_cm[in[1]])
                continue; /* e.g. an element of a matrix */
            if (op == OP_FUNCTION_CALL)
                return cm_fail(p,
                               "a cooperative matrix returned by a function call is not "
                               "supported",
                               in[2]);
            first = 3;
        } else if (op == OP_STORE) {
            first = 1;
        } else {
            continue;
        }
        uint32_t anchor = first == 3 ? in[2] : 0;
        for (uint32_t k = first; k < wc; k++) {
            uint32_t v = in[k];
            if (v >= p->ids || !p->type[v] || !p->has_cm[p->type[v]]) continue;
            if (!anchor)
                anchor = v;
            else if (!cm_join(p, anchor, v))
                return 0;
        }
    }
    return 1;
}

static uint32_t *cm_map(cm_pass *p, uint32_t t, int role) { return &p->map[t * N_ROLES + role]; }

/* marks (t, role) and what t is built on as needed */
static void cm_need(cm_pass *p, uint32_t t, int role) {
    if (t >= p->ids || !p->has_cm[t] || *cm_map(p, t, role)) return;
    *cm_map(p, t, role) = 1;
    const uint32_t *in = p->w + p->def[t];
    uint32_t op = in[0] & 0xffff;
    if (op == OP_TYPE_ARRAY || op == OP_TYPE_RUNTIME_ARRAY) cm_need(p, in[2], role);
    if (op == OP_TYPE_POINTER) cm_need(p, in[3], role);
}

/* (type, role) pairs the values need -> ids: the first role of a type keeps its id */
static int cm_assign(cm_pass *p) {
    for (uint32_t v = 1; v < p->ids; v++) {
        if (!p->type[v] || !p->has_cm[p->type[v]]) continue;
        int r = p->role[cm_find(p, v)];
        cm_need(p, p->type[v], r == ROLE_NONE ? ROLE_ACC : r);
    }
    for (uint32_t t = 1; t < p->ids; t++) {
        if (!p->has_cm[t]) continue;
        int any = 0;
        for (int r = 0; r < N_ROLES; r++)
            any |= *cm_map(p, t, r) != 0;
        if (!any) cm_need(p, t, ROLE_ACC); /* declared, never used: keep it, as accumulator */
    }
    uint32_t next = p->bound;
    for (uint32_t t = 1; t < p->ids; t++) {
        if (!p->has_cm[t]) continue;
        int kept = 0;
        for (int r = 0; r < N_ROLES; r++) {
            uint32_t *m = cm_map(p, t, r);
            if (!*m) continue;
            *m = kept ? next++ : t;
            kept = 1;
        }
    }
    for (int r = 0; r < N_ROLES; r++)
        if (!p->konst[r]) {
            p->konst[r] = next++;
            p->made[r] = 1;
        }
    p->bound = next;
    return 1;
}

static uint32_t cm_type_of(cm_pass *p, uint32_t t, uint32_t value) {
    if (t >= p->ids || !p->has_cm[t] || value >= p->ids) return t;
    int r = p->role[cm_find(p, value)];
    return *cm_map(p, t, r == ROLE_NONE ? ROLE_ACC : r);
}

/* the role-mapped type for a type operand (LengthNV): the accumulator's where it exists */
static uint32_t cm_type_any(cm_pass *p, uint32_t t) {
    if (t >= p->ids) return t;
    for (int r = ROLE_ACC; r >= 0; r--)
        if (*cm_map(p, t, r)) return *cm_map(p, t, r);
    return t;
}

typedef struct cm_out {
    uint32_t *w;
    size_t n, cap;
} cm_out;

static int cm_put(cm_out *o, const uint32_t *w, size_t n) {
    if (o->n + n > o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 4096;
        while (cap < o->n + n)
            cap *= 2;
        uint32_t *nw = realloc(o->w, cap * 4);
        if (!nw) return 0;
        o->w = nw;
        o->cap = cap;
    }
    memcpy(o->w + o->n, w, n * 4);
    o->n += n;
    return 1;
}

/* the 32-bit constant ColumnMajor (1) or RowMajor (0) for the NV boolean operand */
static int cm_layout(cm_pass *p, uint32_t b, uint32_t *out) {
    uint32_t op = b < p->ids && p->def[b] ? p->w[p->def[b]] & 0xffff : 0;
    if (op == OP_CONSTANT_TRUE) {
        *out = p->konst[1];
        return 1;
    }
    if (op == OP_CONSTANT_FALSE) {
        *out = p->konst[0];
        return 1;
    }
    return cm_fail(p, "the column-major operand is not a boolean constant", b);
}

/* bit for a signed integer component type of cooperative matrix type t */
static uint32_t cm_signed(cm_pass *p, uint32_t t, uint32_t bit) {
    if (t >= p->ids || !p->def[t]) return 0;
    const uint32_t *in = p->w + p->def[t];
    uint32_t c = in[2];
    if (c >= p->ids || !p->def[c]) return 0;
    const uint32_t *ct = p->w + p->def[c];
    return (ct[0] & 0xffff) == OP_TYPE_INT && ct[3] == 1 ? bit : 0;
}

static int cm_emit_type(cm_pass *p, cm_out *o, const uint32_t *in) {
    uint32_t op = in[0] & 0xffff, t = in[1];
    for (int r = 0; r < N_ROLES; r++) {
        uint32_t id = *cm_map(p, t, r);
        if (!id) continue;
        if (op == OP_TYPE_CM_NV) {
            uint32_t k[7] = {
                (7u << 16) | OP_TYPE_CM_KHR, id, in[2], in[3], in[4], in[5], p->konst[r]};
            if (!cm_put(o, k, 7)) return 0;
        } else if (op == OP_TYPE_ARRAY || op == OP_TYPE_RUNTIME_ARRAY) {
            uint32_t k[4] = {in[0], id, *cm_map(p, in[2], r), op == OP_TYPE_ARRAY ? in[3] : 0};
            if (!cm_put(o, k, op == OP_TYPE_ARRAY ? 4 : 3)) return 0;
        } else { /* pointer */
            uint32_t k[4] = {in[0], id, in[2], *cm_map(p, in[3], r)};
            if (!cm_put(o, k, 4)) return 0;
        }
    }
    return 1;
}

static int cm_emit(cm_pass *p, cm_out *o) {
    uint32_t head[5] = {p->w[0], p->w[1], p->w[2], p->bound, p->w[4]};
    if (!cm_put(o, head, 5)) return 0;
    for (size_t i = 5; i < p->n; i += p->w[i] >> 16) {
        const uint32_t *in = p->w + i;
        uint32_t wc = in[0] >> 16, op = in[0] & 0xffff;
        uint32_t k[64];
        int ok = 1;
        if (op == OP_CAPABILITY && wc == 2 && in[1] == CAP_COOPMAT_NV) {
            uint32_t c[2] = {in[0], CAP_COOPMAT_KHR};
            ok = cm_put(o, c, 2);
        } else if (op == OP_EXTENSION && strncmp((const char *)(in + 1),
                                                 "SPV_NV_cooperative_matrix", (wc - 1) * 4) == 0) {
            static const char ext[28] = "SPV_KHR_cooperative_matrix"; /* 26 + NUL, padded */
            k[0] = (8u << 16) | OP_EXTENSION;
            memcpy(k + 1, ext, 28);
            ok = cm_put(o, k, 8);
        } else if (((op >= 19 && op <= 39) || op == OP_TYPE_CM_NV) && in[1] < p->ids &&
                   p->has_cm[in[1]]) {
            ok = cm_emit_type(p, o, in);
        } else if (op == OP_CM_LOAD_NV) {
            if (wc < 6 || wc > 60) return cm_fail(p, "malformed OpCooperativeMatrixLoadNV", in[2]);
            k[0] = (wc << 16) | OP_CM_LOAD_KHR;
            k[1] = cm_type_of(p, in[1], in[2]);
            k[2] = in[2];
            k[3] = in[3];
            if (!cm_layout(p, in[5], &k[4])) return 0;
            k[5] = in[4];
            memcpy(k + 6, in + 6, (wc - 6) * 4);
            ok = cm_put(o, k, wc);
        } else if (op == OP_CM_STORE_NV) {
            if (wc < 5 || wc > 60) return cm_fail(p, "malformed OpCooperativeMatrixStoreNV", in[1]);
            k[0] = (wc << 16) | OP_CM_STORE_KHR;
            k[1] = in[1];
            k[2] = in[2];
            if (!cm_layout(p, in[4], &k[3])) return 0;
            k[4] = in[3];
            memcpy(k + 5, in + 5, (wc - 5) * 4);
            ok = cm_put(o, k, wc);
        } else if (op == OP_CM_MULADD_NV) {
            if (wc != 6 || in[3] >= p->ids || in[4] >= p->ids || in[5] >= p->ids)
                return cm_fail(p, "malformed OpCooperativeMatrixMulAddNV", in[2]);
            uint32_t ops = cm_signed(p, p->type[in[3]], 0x1) | cm_signed(p, p->type[in[4]], 0x2) |
                           cm_signed(p, p->type[in[5]], 0x4) | cm_signed(p, in[1], 0x8);
            uint32_t n = ops ? 7 : 6;
            k[0] = (n << 16) | OP_CM_MULADD_KHR;
            k[1] = cm_type_of(p, in[1], in[2]);
            memcpy(k + 2, in + 2, 4 * 4);
            k[6] = ops;
            ok = cm_put(o, k, n);
        } else if (op == OP_CM_LENGTH_NV) {
            if (wc != 4) return cm_fail(p, "malformed OpCooperativeMatrixLengthNV", in[2]);
            uint32_t c[4] = {(4u << 16) | OP_CM_LENGTH_KHR, in[1], in[2], cm_type_any(p, in[3])};
            ok = cm_put(o, c, 4);
        } else if (cm_has_result_type(op, wc) && in[1] < p->ids && p->has_cm[in[1]]) {
            if (!cm_put(o, in, wc)) return 0;
            o->w[o->n - wc + 1] = cm_type_of(p, in[1], in[2]);
        } else {
            ok = cm_put(o, in, wc);
        }
        if (!ok) return cm_fail(p, "out of memory", 0);
        /* the Use and layout constants right after the 32-bit unsigned integer type */
        if (op == OP_TYPE_INT && in[1] == p->uint_t)
            for (uint32_t r = 0; r < N_ROLES; r++) {
                if (!p->made[r]) continue;
                uint32_t c[4] = {(4u << 16) | OP_CONSTANT, p->uint_t, p->konst[r], r};
                if (!cm_put(o, c, 4)) return cm_fail(p, "out of memory", 0);
            }
    }
    return 1;
}

vkf_status vkf_spv_coopmat_nv_to_khr(const uint32_t *words, size_t n_words, uint32_t **out,
                                     size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (n_words < 5 || words[0] != 0x07230203u || words[3] == 0 || words[3] > (1u << 22))
        return vkf_error(VKF_ERROR_SHADER, "cooperative-matrix rewrite: not a SPIR-V module");
    cm_pass p;
    memset(&p, 0, sizeof p);
    p.w = words;
    p.n = n_words;
    p.bound = p.ids = words[3];
    size_t b = p.bound;
    p.def = calloc(b, sizeof *p.def);
    p.type = calloc(b, sizeof *p.type);
    p.has_cm = calloc(b, 1);
    p.parent = malloc(b * sizeof *p.parent);
    p.role = malloc(b);
    p.map = calloc(b * N_ROLES, sizeof *p.map);
    cm_out o = {0};
    int ok = p.def && p.type && p.has_cm && p.parent && p.role && p.map;
    if (!ok) cm_fail(&p, "out of memory", 0);
    for (size_t i = 0; ok && i < b; i++) {
        p.parent[i] = (uint32_t)i;
        p.role[i] = ROLE_NONE;
    }
    ok = ok && cm_scan(&p);
    if (ok && !p.uint_t) ok = cm_fail(&p, "no 32-bit unsigned integer type", 0);
    ok = ok && cm_roles(&p) && cm_assign(&p) && cm_emit(&p, &o);
    free(p.def);
    free(p.type);
    free(p.has_cm);
    free(p.parent);
    free(p.role);
    free(p.map);
    if (!ok) {
        free(o.w);
        return vkf_error(VKF_ERROR_SHADER, "cooperative-matrix rewrite (NV -> KHR): %s", p.err);
    }
    *out = o.w;
    *n_out = o.n;
    return VKF_OK;
}
