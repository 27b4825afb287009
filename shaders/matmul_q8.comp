#version 450
/* MATMUL with integer dot products (decode and small batches, M <= 8; GPUs with
 * shaderIntegerDotProduct, vk_plan.c): dst[M,N] = a[M,K] . w[N,K]^T for quantized weights, with
 * a quantized by quantize_q8.comp to 32-value int8 blocks (ggml's Q8_0 / Q8_1 / Q8_K, the
 * weight type's activation type) in the same recording. Each unit of 32 weights is unpacked to
 * eight int8x4 words (shaders/q8dot.glsl) and dotted with the activation block's words by
 * OpSDot (SPV_KHR_integer_dot_product through GL_EXT_spirv_intrinsics: glslang 12 has no
 * GL_EXT_integer_dot_product), or with DOT_PLAIN=1 by plain integer arithmetic (the fallback and
 * its switch, VKF_INT_DOT=plain): integer sums are exact, so both give the same bits. The
 * reference is the CPU backend's ggml-activation mode (docs/DESIGN.md, 'Precision'), which
 * quantizes the activations the same way; only the float combination runs in another order.
 *
 * Decomposition as matmul_texel.comp's split-K: a workgroup is WG / S subgroups, each owning R
 * consecutive weight rows and TM activation rows (workgroup z); lane l takes the units l, l + S,
 * ... of each row, loads TM activation blocks (three 16-byte words each) and R weight units per
 * step, and the R * TM partial sums are reduced with subgroupAdd at the end. The fusions of
 * matmul_texel.comp that vk_fuse.c builds are all here: n_mats 2..3 (q/k/v), SWIGLU (gate/up),
 * bias, ACT, the residual; the RMSNorm of NORM groups is applied by quantize_q8.comp instead.
 *
 * Bindings: 1 dst (f32), 2 a (the activation blocks), 3 w (16-byte vectors), 4 bias (f32; bound to
 * dst and ignored without VKF_MM_BIAS), 5 residual (f32; likewise). Push constants: vkf_pc_mm,
 * a_off and a_stride in 16-byte words of the blocks. */
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#ifndef DOT_PLAIN
#define DOT_PLAIN 0
#endif
#if !DOT_PLAIN
#extension GL_EXT_spirv_intrinsics : require
#endif
#include "common.glsl"
#include "math.glsl"
#ifndef WTYPE
#define WTYPE VKF_W_Q4_0 /* the build's syntax check compiles each shader without defines */
#endif

#ifndef SWIGLU
#define SWIGLU 0
#endif
#ifndef ACT
#define ACT -1
#endif
#if SWIGLU
#define NW 2u
#else
#define NW 1u
#endif

#if DOT_PLAIN
/* four signed bytes of a times those of b, summed in int32 */
int vkf_sdot4(uint a, uint b) {
    ivec4 x = ivec4(uvec4(a) << uvec4(24u, 16u, 8u, 0u)) >> 24; /* sign-extended bytes */
    ivec4 y = ivec4(uvec4(b) << uvec4(24u, 16u, 8u, 0u)) >> 24;
    return x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
}
#else
/* OpSDot (4450) on 32-bit words as 4 x 8-bit packed vectors (format 0): capabilities
 * DotProduct (6019), DotProductInput4x8BitPacked (6018) */
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int vkf_spv_sdot(int a, int b, spirv_literal int fmt);
int vkf_sdot4(uint a, uint b) { return vkf_spv_sdot(int(a), int(b), 0); }
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint R = 2;  /* weight rows per subgroup */
layout(constant_id = 2) const uint TM = 1; /* activation rows per workgroup */

layout(push_constant) uniform PC {
    vkf_pc_mm p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer A4 { uvec4 a4[]; };
layout(set = 0, binding = 3) readonly buffer W4 { uvec4 w4[]; };
layout(set = 0, binding = 4) readonly buffer Bias { float bias[]; };
layout(set = 0, binding = 5) readonly buffer Res { float res[]; };

/* a word is one component of a 16-byte vector (a scalar load: the access chain reaches the
 * component); W_ALIGN16 (Q4_K, Q5_K in rows that start on 16 bytes: the host checks) reads the
 * 32-byte runs of a unit as two 16-byte loads (wq_quad) */
#ifndef W_ALIGN16
#define W_ALIGN16 0
#endif
uint w_word(uint byte) { return w4[byte >> 4][(byte >> 2) & 3u]; }
uvec4 wq_quad(uint byte) { return w4[byte >> 4]; }
#include "dtypes.glsl"
#include "q8dot.glsl"
#ifndef WQ_OK
#error "matmul_q8: no integer-dot unpacking for this WTYPE"
#endif

#if SWIGLU == 2
float glu_gate(float g) { return vkf_gelu_tanh(g); }
#else
float glu_gate(float g) { return vkf_silu(g); }
#endif

/* output element (row m, column n) = s (+ bias) (activation) (+ residual) */
void mm_store(uint doff, uint dstr, uint boff, uint n, uint m, float s) {
    if ((p.flags & VKF_MM_BIAS) != 0u) s += bias[boff + n];
#if ACT == 0
    s = max(s, 0.0);
#elif ACT == 1
    s = vkf_gelu_erf(s);
#elif ACT == 2
    s = vkf_gelu_tanh(s);
#elif ACT == 3
    s = vkf_silu(s);
#elif ACT == 4
    s = vkf_sigmoid(s);
#elif ACT == 5
    s = vkf_tanh(s);
#endif
    if ((p.flags & VKF_MM_RESIDUAL) != 0u) s += res[p.r_off + m * p.r_stride + n];
    d[doff + m * dstr + n] = s;
}

void main() {
    uint blk = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint S = gl_SubgroupSize, l = gl_SubgroupInvocationID;
    uint n0 = (blk * gl_NumSubgroups + gl_SubgroupID) * R;
    /* which matrix this subgroup's rows belong to: row blocks are padded to R per matrix */
    uint N = p.N, wb = p.w_boff, doff = p.d_off, dstr = p.d_stride, boff = p.b_off;
    uint P0 = (p.N + R - 1u) / R * R, P1 = (p.N1 + R - 1u) / R * R;
#if !SWIGLU
    if (p.n_mats > 1u && n0 >= P0) {
        if (p.n_mats > 2u && n0 >= P0 + P1) {
            n0 -= P0 + P1;
            N = p.N2;
            wb = p.w_boff2;
            doff = p.d_off2;
            dstr = p.d_stride2;
            boff = p.b_off2;
        } else {
            n0 -= P0;
            N = p.N1;
            wb = p.w_boff1;
            doff = p.d_off1;
            dstr = p.d_stride1;
            boff = p.b_off1;
        }
    }
#endif
    if (n0 >= N) return; /* the whole subgroup: no barriers follow */
    uint m0 = gl_WorkGroupID.z * TM;
    uint arow[TM];
    for (uint m = 0u; m < TM; m++) arow[m] = p.a_off + min(m0 + m, p.M - 1u) * p.a_stride;
    uint wrow[NW][R];
    for (uint r = 0u; r < R; r++) {
        wrow[0][r] = wb + min(n0 + r, N - 1u) * p.w_bstride;
#if SWIGLU
        wrow[1][r] = p.w_boff1 + min(n0 + r, N - 1u) * p.w_bstride;
#endif
    }
    float acc[NW][R][TM];
    for (uint v = 0u; v < NW; v++)
        for (uint r = 0u; r < R; r++)
            for (uint m = 0u; m < TM; m++) acc[v][r][m] = 0.0;

    uint units = p.K / 32u;
    for (uint u = l; u < units; u += S) {
        uvec4 a0[TM], a1[TM], am[TM];
        for (uint m = 0u; m < TM; m++) {
            uint ab = arow[m] + 3u * u;
            a0[m] = a4[ab];
            a1[m] = a4[ab + 1u];
            am[m] = a4[ab + 2u];
        }
        for (uint v = 0u; v < NW; v++)
            for (uint r = 0u; r < R; r++) {
                uint wq[8];
                vec4 wm;
                float wmin;
                int woff;
                wq_unit(wrow[v][r], u, wq, wm, wmin, woff);
                for (uint m = 0u; m < TM; m++) {
                    int bs0 = int(am[m].z), bs1 = int(am[m].w);
                    int s0 = vkf_sdot4(wq[0], a0[m].x) + vkf_sdot4(wq[1], a0[m].y) +
                             vkf_sdot4(wq[2], a0[m].z) + vkf_sdot4(wq[3], a0[m].w) - woff * bs0;
                    int s1 = vkf_sdot4(wq[4], a1[m].x) + vkf_sdot4(wq[5], a1[m].y) +
                             vkf_sdot4(wq[6], a1[m].z) + vkf_sdot4(wq[7], a1[m].w) - woff * bs1;
                    float da = uintBitsToFloat(am[m].x), sa = uintBitsToFloat(am[m].y);
                    acc[v][r][m] += da * (wm.x * float(s0) + wm.y * float(s1) - wm.z * float(bs0) -
                                          wm.w * float(bs1)) +
                                    wmin * sa;
                }
            }
    }

    /* reduce each partial sum across the subgroup; lane (r*TM + m) % S stores it */
    uint mc = min(TM, p.M - m0);
    for (uint r = 0u; r < R; r++) {
        uint n = n0 + r;
        for (uint m = 0u; m < TM; m++) {
            float s = subgroupAdd(acc[0][r][m]);
#if SWIGLU
            s = glu_gate(s) * subgroupAdd(acc[1][r][m]);
#endif
            if (l == (r * TM + m) % S && n < N && m < mc) mm_store(doff, dstr, boff, n, m0 + m, s);
        }
    }
}
