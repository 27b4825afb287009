#version 450
/* MATMUL with cooperative matrices: dst[M,N] = a[M,K] . w[N,K]^T (+ bias) for M > 8, any weight
 * type whose K is a multiple of its (32-element, W_SMALL) unit, on allow-listed devices only
 * (vk_device.c, vkf_vk_coopmat_choose; VKF_NO_COOPMAT=1 turns it off). One body, three
 * spellings of the matrix operations (CM_* below):
 *   COOPMAT_NV=1  GL_NV_cooperative_matrix (VK_NV_cooperative_matrix; Debian's glslang 12);
 *   COOPMAT_KHR=1 GL_KHR_cooperative_matrix (VK_KHR_cooperative_matrix; glslang 13.1+);
 *   COOPMAT_KHR_SPV=1 VK_KHR_cooperative_matrix with Debian's glslang 12: compiled as the NV
 *                 spelling, its SPIR-V rewritten into the KHR form by the host;
 *   COOPMAT_EMU=1 the same operations written out per invocation (element e of a matrix
 *                 belongs to invocation e % SGS of the subgroup): no hardware needs it, so
 *                 the op harness checks this file's tiling, staging, bounds and precision on
 *                 any device (lavapipe; ctest test_ops_coopmat_emu, _emu8). Only the vendor
 *                 intrinsics differ; test_vulkan_runtime checks that the NV spelling compiles
 *                 to valid SPIR-V for every weight type.
 *
 * Tiles: a workgroup computes BM x BN = (WSM SM CM_M) x (WSN SN CM_N) outputs: WSM x WSN
 * subgroup tiles, each SM x SN cooperative matrices of CM_M x CM_N. K advances BK = KS CM_K at a
 * time through shared memory (f16, rows padded to keep 16-byte alignment and spread banks). The
 * host sets TPS, the subgroup tiles one subgroup may have to take (the device may run fewer,
 * larger subgroups than the WSM WSN the workgroup size assumes).
 *
 * Precision: f16 x f16 products accumulated in f32. Each f32 activation is split as hi =
 * f16(a), lo = f16(a - hi), and so is each dequantized weight (exact in f16 only for F16
 * weights, which skip the lo part): acc += A_hi B_hi + A_lo B_hi + A_hi B_lo keeps ~22 bits of
 * each operand (the missing A_lo B_lo term is 2^-22 relative), inside the op harness's f32-sum
 * threshold. A tile that meets a value beyond f16's range (|x| > 65000) is recomputed with f32
 * FMAs (a sticky flag in shared memory), so nothing overflows silently.
 * Bindings: 1 dst (f32), 2 a (f32), 3 w (weight bytes as uint words), 4 bias (f32; bound to a
 * and ignored without bias). */
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require

#if defined(COOPMAT_KHR_SPV) && COOPMAT_KHR_SPV
/* VK_KHR_cooperative_matrix with a glslang older than 13.1: the NV spelling, whose SPIR-V the
 * host rewrites into the KHR form (src/backend/vulkan/spv_coopmat_khr.c) */
#undef COOPMAT_NV
#define COOPMAT_NV 1
#endif
#if defined(VKF_BUILD_CHECK) && !defined(COOPMAT_NV) && !defined(COOPMAT_EMU)
/* the build-time check compiles the NV spelling, which every supported glslang knows */
#define COOPMAT_NV 1
#endif
#ifndef COOPMAT_NV
#define COOPMAT_NV 0
#endif
#ifndef COOPMAT_EMU
#define COOPMAT_EMU 0
#endif
#if COOPMAT_NV
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#elif COOPMAT_EMU
#extension GL_EXT_control_flow_attributes : require
#else
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;

#ifndef CM_M
#define CM_M 16
#define CM_N 16
#define CM_K 16
#endif
#ifndef SM
#define SM 2 /* cooperative matrices per subgroup tile, rows */
#define SN 2 /* and columns */
#endif
#ifndef WSM
#define WSM 2 /* subgroup tiles per workgroup, rows */
#define WSN 2 /* and columns */
#endif
#ifndef KS
#define KS 2 /* CM_K steps per shared-memory slice */
#endif
#ifndef TPS
#define TPS 1 /* subgroup tiles one subgroup may take */
#endif
#ifndef SGS
#define SGS 32 /* COOPMAT_EMU: the subgroup size (fixed; the host checks) */
#endif
#define BM (WSM * SM * CM_M)
#define BN (WSN * SN * CM_N)
#define BK (KS * CM_K)
#define BKP (BK + 8) /* padded row: 16 more bytes */
#define NSG (WSM * WSN)
#define NACC (SM * SN)

layout(push_constant) uniform PC {
    vkf_pc_matmul p;
};

layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) readonly buffer A { float a[]; };
layout(set = 0, binding = 3) readonly buffer Wq { uint wq[]; };
layout(set = 0, binding = 4) readonly buffer Bias { float bias[]; };

uint w_word(uint byte) { return wq[byte >> 2]; }
#include "dtypes.glsl"

#if WTYPE == VKF_W_F16
#define B_LO 0 /* f16 weights are exact in f16 */
#else
#define B_LO 1
#endif

shared float16_t As_hi[BM * BKP], As_lo[BM * BKP]; /* [m][k] */
shared float16_t Bs_hi[BN * BKP];                  /* [n][k]: column-major B [k][n] */
#if B_LO
shared float16_t Bs_lo[BN * BKP];
#endif
shared float Cs[NSG * CM_M * CM_N]; /* one matrix per subgroup on its way out */
shared uint too_big;

/* ---------------------------------------------------------------- the matrix operations
 * CM_ACC(name): an array of NACC * TPS accumulators; CM_ZERO(acc, i);
 * CM_LOAD_A(x, arr, id, off, st) row-major A from shared arr at element off, row stride st;
 * CM_LOAD_B(x, arr, id, off, st) column-major B (column c at off + c st); id names arr to the
 * emulation; CM_MAD(acc, i, x, y): acc[i] += x y; CM_STORE(acc, i, off, st): row-major into Cs */
#if COOPMAT_NV
#define CM_A_T fcoopmatNV<16, gl_ScopeSubgroup, CM_M, CM_K>
#define CM_B_T fcoopmatNV<16, gl_ScopeSubgroup, CM_K, CM_N>
#define CM_C_T fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N>
#define CM_ACC(name) CM_C_T name[NACC * TPS]
#define CM_ZERO(acc, i) acc[i] = CM_C_T(0.0)
#define CM_LOAD_A(x, arr, id, off, st) coopMatLoadNV(x, arr, off, st, false)
#define CM_LOAD_B(x, arr, id, off, st) coopMatLoadNV(x, arr, off, st, true)
#define CM_MAD(acc, i, x, y) acc[i] = coopMatMulAddNV(x, y, acc[i])
#define CM_STORE(acc, i, off, st) coopMatStoreNV(acc[i], Cs, off, st, false)
#elif COOPMAT_EMU
/* a loaded operand is a reference (array id, offset, stride) to shared memory, which no
 * invocation writes while it is in use (barriers around each slice); the accumulators live in
 * shared memory too, NACC * TPS matrices per subgroup, element e owned by invocation e % SGS
 * (in registers, llvmpipe took minutes to compile one variant). llvmpipe ends every loop of an
 * invocation once its loops have run 65535 iterations in all (its loop limiter), so the
 * emulation's own loops are few (the host keeps K small enough: vkf_vk_plan_coopmat). */
#define CM_A_T uvec3
#define CM_B_T uvec3
#define CM_ACC(name) const uint name = 0u
#define CM_ZERO(acc, i) emu_zero(i)
#define CM_LOAD_A(x, arr, id, off, st) x = uvec3(id, off, st)
#define CM_LOAD_B(x, arr, id, off, st) x = uvec3(id, off, st)
#define CM_MAD(acc, i, ma, mb) emu_mad(i, ma, mb)
#define CM_STORE(acc, i, off, st) emu_store(i, off, st)
shared float Acc_emu[NSG * NACC * TPS * CM_M * CM_N];
uint emu_base(uint i) { return (gl_SubgroupID * (NACC * TPS) + i) * (CM_M * CM_N); }
float16_t emu_at(uint id, uint i) {
#if B_LO
    if (id == 3u) return Bs_lo[i];
#endif
    return id == 0u ? As_hi[i] : id == 1u ? As_lo[i] : Bs_hi[i];
}
void emu_zero(uint i) {
    [[dont_unroll]] for (uint e = gl_SubgroupInvocationID; e < CM_M * CM_N; e += SGS)
        Acc_emu[emu_base(i) + e] = 0.0;
}
void emu_mad(uint i, uvec3 ma, uvec3 mb) {
    [[dont_unroll]] for (uint e = gl_SubgroupInvocationID; e < CM_M * CM_N; e += SGS) {
        uint r = e / CM_N, col = e % CM_N;
        float s = 0.0;
        [[unroll]] for (uint k = 0; k < CM_K; k++)
            s += float(emu_at(ma.x, ma.y + r * ma.z + k)) * float(emu_at(mb.x, mb.y + col * mb.z + k));
        Acc_emu[emu_base(i) + e] += s;
    }
}
void emu_store(uint i, uint off, uint st) {
    [[dont_unroll]] for (uint e = gl_SubgroupInvocationID; e < CM_M * CM_N; e += SGS)
        Cs[off + (e / CM_N) * st + e % CM_N] = Acc_emu[emu_base(i) + e];
}
#else
#define CM_A_T coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_K, gl_MatrixUseA>
#define CM_B_T coopmat<float16_t, gl_ScopeSubgroup, CM_K, CM_N, gl_MatrixUseB>
#define CM_C_T coopmat<float, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator>
#define CM_ACC(name) CM_C_T name[NACC * TPS]
#define CM_ZERO(acc, i) acc[i] = CM_C_T(0.0)
#define CM_LOAD_A(x, arr, id, off, st) coopMatLoad(x, arr, off, st, gl_CooperativeMatrixLayoutRowMajor)
#define CM_LOAD_B(x, arr, id, off, st) coopMatLoad(x, arr, off, st, gl_CooperativeMatrixLayoutColumnMajor)
#define CM_MAD(acc, i, x, y) acc[i] = coopMatMulAdd(x, y, acc[i])
#define CM_STORE(acc, i, off, st) coopMatStore(acc[i], Cs, off, st, gl_CooperativeMatrixLayoutRowMajor)
#endif

/* hi/lo halves of an f32; flags values beyond f16's range */
float16_t split_hi(float v) {
    if (abs(v) > 65000.0) atomicOr(too_big, 1u);
    return float16_t(clamp(v, -65000.0, 65000.0));
}

float scalar_dot(uint m, uint n) {
    float s = 0.0;
    uint rowb = p.w_boff + n * p.w_bstride;
    for (uint k = 0; k < p.K; k++) s = fma(a[p.a_off + m * p.a_stride + k], w_at(rowb, k), s);
    return s;
}

void main() {
    uint t = gl_LocalInvocationIndex;
    uint n0 = gl_WorkGroupID.x * BN, m0 = gl_WorkGroupID.y * BM;
    if (t == 0u) too_big = 0u;
    CM_ACC(acc);
    for (uint i = 0; i < NACC * TPS; i++) CM_ZERO(acc, i);
    barrier();
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        /* activations: BM rows x BK, consecutive invocations along k */
        for (uint i = t; i < BM * BK; i += WG) {
            uint m = i / BK, k = i % BK;
            float v = 0.0;
            if (m0 + m < p.M && k0 + k < p.K) v = a[p.a_off + (m0 + m) * p.a_stride + k0 + k];
            float16_t hi = split_hi(v);
            As_hi[m * BKP + k] = hi;
            As_lo[m * BKP + k] = float16_t(v - float(hi));
        }
        /* weights: BN rows x BK in units of W_UNIT elements (K is a multiple of the unit) */
        for (uint i = t; i < BN * (BK / W_UNIT); i += WG) {
            uint n = i / (BK / W_UNIT), u = i % (BK / W_UNIT);
            uint ku = k0 + u * W_UNIT;
            vec4 w[W_UV];
            float sc = 0.0;
            if (n0 + n < p.N && ku < p.K) sc = w_unit(p.w_boff + (n0 + n) * p.w_bstride, ku / W_UNIT, w);
            for (uint j = 0; j < W_UV; j++)
                for (uint c = 0; c < 4u; c++) {
                    float v = sc == 0.0 ? 0.0 : sc * w[j][c];
                    float16_t hi = split_hi(v);
                    uint o = n * BKP + u * W_UNIT + 4u * j + c;
                    Bs_hi[o] = hi;
#if B_LO
                    Bs_lo[o] = float16_t(v - float(hi));
#endif
                }
        }
        barrier();
        for (uint r = 0; r < TPS; r++) {
            uint st = gl_SubgroupID + r * gl_NumSubgroups;
            if (st >= NSG) break;
            uint sm0 = (st / WSN) * SM * CM_M, sn0 = (st % WSN) * SN * CM_N;
            for (uint ks = 0; ks < KS; ks++) {
                CM_A_T ahi[SM], alo[SM];
                for (uint im = 0; im < SM; im++) {
                    uint off = (sm0 + im * CM_M) * BKP + ks * CM_K;
                    CM_LOAD_A(ahi[im], As_hi, 0u, off, BKP);
                    CM_LOAD_A(alo[im], As_lo, 1u, off, BKP);
                }
                for (uint in_ = 0; in_ < SN; in_++) {
                    uint off = (sn0 + in_ * CM_N) * BKP + ks * CM_K;
                    CM_B_T bhi;
                    CM_LOAD_B(bhi, Bs_hi, 2u, off, BKP);
#if B_LO
                    CM_B_T blo;
                    CM_LOAD_B(blo, Bs_lo, 3u, off, BKP);
#endif
                    for (uint im = 0; im < SM; im++) {
                        uint ai = r * NACC + im * SN + in_;
                        CM_MAD(acc, ai, ahi[im], bhi);
                        CM_MAD(acc, ai, alo[im], bhi);
#if B_LO
                        CM_MAD(acc, ai, ahi[im], blo);
#endif
                    }
                }
            }
        }
        barrier();
    }
    bool big = too_big != 0u; /* a staged value was past f16 range (split_hi): f32 dots */
    /* out through this subgroup's CM_M x CM_N of Cs, one matrix at a time */
    uint cs0 = gl_SubgroupID * CM_M * CM_N;
    for (uint r = 0; r < TPS; r++) {
        uint st = gl_SubgroupID + r * gl_NumSubgroups;
        if (st >= NSG) break;
        uint sm0 = (st / WSN) * SM * CM_M, sn0 = (st % WSN) * SN * CM_N;
        for (uint i = 0; i < NACC; i++) {
            uint mt = m0 + sm0 + (i / SN) * CM_M, nt = n0 + sn0 + (i % SN) * CM_N;
            uint ai = r * NACC + i;
            CM_STORE(acc, ai, cs0, CM_N);
#if !COOPMAT_EMU
            subgroupMemoryBarrierShared();
            subgroupBarrier();
#endif
            for (uint e = gl_SubgroupInvocationID; e < CM_M * CM_N; e += gl_SubgroupSize) {
                uint m = mt + e / CM_N, n = nt + e % CM_N;
                if (m >= p.M || n >= p.N) continue;
                float v = big ? scalar_dot(m, n) : Cs[cs0 + e];
                if (p.has_bias != 0u) v += bias[p.b_off + n];
                d[p.d_off + m * p.d_stride + n] = v;
            }
#if !COOPMAT_EMU
            subgroupBarrier();
#endif
        }
    }
}
