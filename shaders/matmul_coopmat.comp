#version 450
/* MATMUL with VK_KHR_cooperative_matrix (GL_KHR_cooperative_matrix): dst[M,N] = a[M,K] . w[N,K]^T
 * (+ bias) for F16 weights and M > 8, on allow-listed devices only (vk_device.c,
 * vkf_vk_coopmat_choose; VKF_NO_COOPMAT=1 turns it off). UNTESTED: no device available to this
 * project offers the extension (lavapipe does not), and the Debian glslang 12 cannot compile
 * GL_KHR_cooperative_matrix, so the host compiles this file only with glslang 13.1 or later.
 *
 * Workgroup tile BM x BN = (2 CM_M) x (2 CM_N), four coopmat tiles shared out over the
 * workgroup's subgroups; K in slices of CM_K staged in shared memory as f16. Precision: the
 * weights are exact in f16; each f32 activation is split into hi = f16(a) and lo = f16(a - hi),
 * and both products accumulate in f32 (acc += A_hi B + A_lo B), which keeps ~22 bits of the
 * activation, inside the op harness's f32-sum threshold. A tile holding an activation too large
 * for f16 (|a| > 65000) is recomputed with f32 FMAs instead (a sticky flag in shared memory).
 * Bindings: 1 dst (f32), 2 a (f32), 3 w (f16 rows as uint words), 4 bias (f32; bound to a and
 * ignored without bias). */
#extension GL_GOOGLE_include_directive : require
#if defined(VKF_BUILD_CHECK)
/* The build-time check runs a glslang without GL_KHR_cooperative_matrix: check the includes only. */
#include "common.glsl"
layout(local_size_x = 1) in;
void main() {}
#else
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;

#ifndef CM_M
#define CM_M 16
#define CM_N 16
#define CM_K 16
#endif
#define BM (2 * CM_M)
#define BN (2 * CM_N)
#define BK CM_K
#define WTYPE VKF_W_F16

layout(push_constant) uniform PC {
    vkf_pc_matmul p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer A { float a[]; };
layout(set = 0, binding = 3) readonly buffer Wq { uint wq[]; };
layout(set = 0, binding = 4) readonly buffer Bias { float bias[]; };

uint w_word(uint byte) { return wq[byte >> 2]; }
#include "dtypes.glsl"

shared float16_t As_hi[BM * BK], As_lo[BM * BK]; /* [m][k] */
shared float16_t Bs[BN * BK];                    /* [n][k]: read as column-major B [k][n] */
shared float Cs[BM * BN];                        /* [m][n] */
shared uint too_big;

float scalar_dot(uint m, uint n) {
    float s = 0.0;
    uint rowb = p.w_boff + n * p.w_bstride;
    for (uint k = 0; k < p.K; k++) s += a[p.a_off + m * p.a_stride + k] * w_at(rowb, k);
    return s;
}

void main() {
    uint t = gl_LocalInvocationIndex;
    uint n0 = gl_WorkGroupID.x * BN, m0 = gl_WorkGroupID.y * BM;
    if (t == 0u) too_big = 0u;
    coopmat<float, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator> acc[4];
    for (uint i = 0; i < 4u; i++) acc[i] = coopmat<float, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator>(0.0);
    barrier();
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        for (uint i = t; i < BM * BK; i += WG) {
            uint m = i / BK, k = i % BK;
            float v = 0.0;
            if (m0 + m < p.M && k0 + k < p.K) v = a[p.a_off + (m0 + m) * p.a_stride + k0 + k];
            if (abs(v) > 65000.0) atomicOr(too_big, 1u);
            float16_t hi = float16_t(clamp(v, -65000.0, 65000.0));
            As_hi[i] = hi;
            As_lo[i] = float16_t(v - float(hi));
        }
        for (uint i = t; i < BN * BK; i += WG) {
            uint n = i / BK, k = i % BK;
            float v = 0.0;
            if (n0 + n < p.N && k0 + k < p.K) v = w_at(p.w_boff + (n0 + n) * p.w_bstride, k0 + k);
            Bs[i] = float16_t(v);
        }
        barrier();
        /* tiles (tm, tn) in {0,1}^2 shared out over the subgroups */
        for (uint tile = gl_SubgroupID; tile < 4u; tile += gl_NumSubgroups) {
            uint tm = tile / 2u, tn = tile % 2u;
            coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_K, gl_MatrixUseA> ahi, alo;
            coopmat<float16_t, gl_ScopeSubgroup, CM_K, CM_N, gl_MatrixUseB> bm;
            coopMatLoad(ahi, As_hi, tm * CM_M * BK, BK, gl_CooperativeMatrixLayoutRowMajor);
            coopMatLoad(alo, As_lo, tm * CM_M * BK, BK, gl_CooperativeMatrixLayoutRowMajor);
            coopMatLoad(bm, Bs, tn * CM_N * BK, BK, gl_CooperativeMatrixLayoutColumnMajor);
            acc[tile] = coopMatMulAdd(ahi, bm, acc[tile]);
            acc[tile] = coopMatMulAdd(alo, bm, acc[tile]);
        }
        barrier();
    }
    for (uint tile = gl_SubgroupID; tile < 4u; tile += gl_NumSubgroups) {
        uint tm = tile / 2u, tn = tile % 2u;
        coopMatStore(acc[tile], Cs, tm * CM_M * BN + tn * CM_N, BN, gl_CooperativeMatrixLayoutRowMajor);
    }
    barrier();
    bool big = too_big != 0u;
    for (uint i = t; i < BM * BN; i += WG) {
        uint m = i / BN, n = i % BN;
        if (m0 + m >= p.M || n0 + n >= p.N) continue;
        float v = big ? scalar_dot(m0 + m, n0 + n) : Cs[i];
        if (p.has_bias != 0u) v += bias[p.b_off + n0 + n];
        d[p.d_off + (m0 + m) * p.d_stride + n0 + n] = v;
    }
}
#endif
