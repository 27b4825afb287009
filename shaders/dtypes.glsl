/* Weight reads for every storage type, dequantized to f32 inside the kernels (docs/DESIGN.md,
 * 'Precision'): the GLSL half of src/core/wtype.c. One file per type (dtype_<t>.glsl) defines, for
 * WTYPE == its VKF_W_ value (= its vkf_dtype, vkf_abi.h):
 *   W_UNIT                      elements one step decodes (4, 8 or 32; K is a multiple of it
 *                               where w_unit is used, the host checks: wtype gpu_unit);
 *   float w_unit(rowb, u, w[])  decodes unit u of the row at byte rowb into w[0..W_UNIT/4);
 *                               the result multiplies the unit's dot product (a block scale
 *                               kept out of the per-element work, or 1.0);
 *   float w_at(rowb, k)         element k of the row (any k);
 *   vec4 w_at4(rowb, k)         elements k..k+3 (k a multiple of 4), unless W_GENERIC_AT4.
 *
 * The includer declares how weight bytes are read, then includes this file:
 *   uint w_word(uint byte)      the 32-bit word at a 4-byte aligned byte offset (required);
 *   W_HAVE_QUAD:  uvec4 w_quad(uint byte), 16 bytes at a 16-byte aligned offset;
 *   W_HAVE_QUAD2: uvec4 w_quad2(uint byte), 16 bytes at a 2-byte aligned offset, and
 *                 uvec4 w_quad2e(uint byte, out uint e), the same and e = the 16 bits at
 *                 byte + 16 (an 18-byte block in the reads of 16), and
 *                 void w_oct2e(uint byte, out uvec4 lo, out uvec4 hi, out uint e), 32 bytes
 *                 and the 16 bits after them (a 34-byte block).
 * Words are little-endian, so nothing needs 8- or 16-bit storage (mobile profile). Blocks of
 * 18, 22, 34, 110 and 210 bytes (Q4_0, IQ4_NL, Q5_0, Q8_0, Q3_K, Q6_K) are only 2-byte
 * aligned, MXFP4's 17-byte blocks only byte aligned; the other quantized types have 4-byte
 * aligned rows (the host checks all three: vkf_vk_walign). */
#ifndef VKF_DTYPES_GLSL
#define VKF_DTYPES_GLSL

#ifndef WTYPE
#define WTYPE VKF_W_F32
#endif
/* W_SMALL=1: the types whose step is 64 elements (Q3_K..Q6_K) decode 32 instead; vk_ops.c asks
 * for it when split-K rows are too short to give every lane of a subgroup a unit */
#ifndef W_SMALL
#define W_SMALL 0
#endif

uint vkf_u8(uint byte) { return (w_word(byte & ~3u) >> ((byte & 3u) * 8u)) & 0xffu; }

/* 16-bit value at an even byte offset */
uint vkf_u16(uint byte) { return (w_word(byte & ~3u) >> ((byte & 2u) * 8u)) & 0xffffu; }

/* 32 bits at a 2-byte aligned offset (reads the next word only when the value straddles it) */
uint vkf_u32h(uint byte) {
    uint lo = w_word(byte & ~3u);
    if ((byte & 2u) == 0u) return lo;
    return (lo >> 16) | (w_word((byte & ~3u) + 4u) << 16);
}

#ifndef W_HAVE_QUAD
uvec4 w_quad(uint byte) { return uvec4(w_word(byte), w_word(byte + 4u), w_word(byte + 8u), w_word(byte + 12u)); }
#endif
#ifndef W_HAVE_QUAD2
uvec4 w_quad2(uint byte) {
    if ((byte & 2u) == 0u) return uvec4(w_word(byte), w_word(byte + 4u), w_word(byte + 8u), w_word(byte + 12u));
    uint b = byte - 2u;
    uint x0 = w_word(b), x1 = w_word(b + 4u), x2 = w_word(b + 8u), x3 = w_word(b + 12u), x4 = w_word(b + 16u);
    return uvec4((x0 >> 16) | (x1 << 16), (x1 >> 16) | (x2 << 16), (x2 >> 16) | (x3 << 16), (x3 >> 16) | (x4 << 16));
}
uvec4 w_quad2e(uint byte, out uint e) {
    e = vkf_u16(byte + 16u);
    return w_quad2(byte);
}
void w_oct2e(uint byte, out uvec4 lo, out uvec4 hi, out uint e) {
    lo = w_quad2(byte);
    hi = w_quad2(byte + 16u);
    e = vkf_u16(byte + 32u);
}
#endif
#ifndef W_HAVE_HEX2
/* 64 bytes at a 2-byte aligned offset */
void w_hex2(uint byte, out uvec4 q[4]) {
    for (uint i = 0; i < 4u; i++) q[i] = w_quad2(byte + 16u * i);
}
#endif

float vkf_f16(uint bits) { return unpackHalf2x16(bits).x; }

/* the four low / high nibbles of the bytes of a word, and bits sh..sh+3 of h */
vec4 vkf_nlo(uint q) { return vec4((uvec4(q) >> uvec4(0u, 8u, 16u, 24u)) & 15u); }
vec4 vkf_nhi(uint q) { return vec4((uvec4(q) >> uvec4(4u, 12u, 20u, 28u)) & 15u); }
uvec4 vkf_nlo_u(uint q) { return (uvec4(q) >> uvec4(0u, 8u, 16u, 24u)) & 15u; }
/* the four bytes of a word; with quants of 5 or 6 bits assembled in place first (low nibbles
 * and high bits masked per byte, 0x0F0F0F0F and 0x01010101 / 0x03030303), a word's four
 * elements cost fewer operations than assembling each from its own shifts: Q6_K matrix-vector
 * 1x32000x2048 on lavapipe 17.5-29 -> 14.7-16.4 CPU ms (bench/RESULTS.md) */
uvec4 vkf_bytes(uint q) { return (uvec4(q) >> uvec4(0u, 8u, 16u, 24u)) & 0xFFu; }
uvec4 vkf_nhi_u(uint q) { return (uvec4(q) >> uvec4(4u, 12u, 20u, 28u)) & 15u; }
/* the four signed bytes of a word */
vec4 vkf_i8x4(uint q) { return vec4(ivec4(uvec4(q) << uvec4(24u, 16u, 8u, 0u)) >> 24); }
/* W_RAWP (matmul_texel.comp's decode, ROWSEQ, sets it): the raw units (W_HAVE_RAW below) leave
 * each quant where it sits in its word, q * 2^s, taken with one mask, or one shift for the top
 * one, instead of a shift and a mask; the kernel multiplies its activations by the powers of
 * two W_RAWP_SCALE(j) (texel j of a unit) once per dispatch, so every product is the same,
 * exactly. On lavapipe a weight costs mask, convert, multiply and add: 1x32000x2048 Q4_0 8.6-9.0
 * -> 8.0-8.5 CPU ms (bench/RESULTS.md). Without it the _r forms are the plain ones. */
#ifndef W_RAWP
#define W_RAWP 0
#endif
#if W_RAWP
vec4 vkf_nlo_r(uint q) { return vec4(uvec4(q) & uvec4(0xFu, 0xF00u, 0xF0000u, 0xF000000u)); }
vec4 vkf_nhi_r(uint q) { return vec4(uvec4(q & 0xF0u, q & 0xF000u, q & 0xF00000u, q >> 28)); }
vec4 vkf_bytes_r(uint q) { return vec4(uvec4(q & 0xFFu, q & 0xFF00u, q & 0xFF0000u, q >> 24)); }
/* signed bytes at the top of the word (q * 2^24, exact in a float: 8 significant bits) */
vec4 vkf_i8x4_r(uint q) {
    return vec4(ivec4(q << 24, (q << 16) & 0xFF000000u, (q << 8) & 0xFF000000u, q & 0xFF000000u));
}
#define VKF_LO_S vec4(1.0, 1.0 / 256.0, 1.0 / 65536.0, 1.0 / 16777216.0)
#define VKF_HI_S vec4(1.0 / 16.0, 1.0 / 4096.0, 1.0 / 1048576.0, 1.0)
#define VKF_B_S vec4(1.0, 1.0 / 256.0, 1.0 / 65536.0, 1.0)
#define VKF_I8_S vec4(1.0 / 16777216.0)
#else
vec4 vkf_nlo_r(uint q) { return vkf_nlo(q); }
vec4 vkf_nhi_r(uint q) { return vkf_nhi(q); }
vec4 vkf_bytes_r(uint q) { return vec4(vkf_bytes(q)); }
vec4 vkf_i8x4_r(uint q) { return vkf_i8x4(q); }
#define VKF_LO_S vec4(1.0)
#define VKF_HI_S vec4(1.0)
#define VKF_B_S vec4(1.0)
#define VKF_I8_S vec4(1.0)
#endif
uvec4 vkf_bits4(uint h, uint sh) { return (uvec4(h) >> (uvec4(0u, 1u, 2u, 3u) + sh)) & 1u; }
/* bits sh..sh+3 of h moved to bit 0 of the four bytes of a word (bit c lands at 8c: the
 * multiply's four shifted copies, by 0, 7, 14 and 21, never overlap, so nothing carries) */
uint vkf_spread4(uint h, uint sh) { return (((h >> sh) & 15u) * 0x00204081u) & 0x01010101u; }
/* Q5_0 / Q5_1: word i's four low-nibble and four high-nibble 5-bit quants assembled in their
 * bytes (the fifth bits from qh: bits 4i.. and 16 + 4i..) */
uint vkf_q5_lo(uvec4 q, uint qh, uint i) { return (q[i] & 0x0F0F0F0Fu) | (vkf_spread4(qh, 4u * i) << 4); }
uint vkf_q5_hi(uvec4 q, uint qh, uint i) {
    return ((q[i] >> 4) & 0x0F0F0F0Fu) | (vkf_spread4(qh, 16u + 4u * i) << 4);
}
/* the 2-bit fields at shift sh of the four bytes of a word */
uvec4 vkf_crumbs(uint q, uint sh) { return (uvec4(q) >> (uvec4(0u, 8u, 16u, 24u) + sh)) & 3u; }
/* byte i (0..11) of three words (selects: a dynamic component index can become a per-lane
 * memory access on CPU drivers) */
uint vkf_byte3(uvec3 w, uint i) {
    uint x = i < 4u ? w.x : i < 8u ? w.y : w.z;
    return (x >> ((i & 3u) * 8u)) & 0xffu;
}

#include "dtype_f32.glsl"
#include "dtype_f16.glsl"
#include "dtype_bf16.glsl"
#include "dtype_q8_0.glsl"
#include "dtype_q4_0.glsl"
#include "dtype_q4_1.glsl"
#include "dtype_q5_0.glsl"
#include "dtype_q5_1.glsl"
#include "dtype_iq4_nl.glsl"
#include "dtype_iq4_xs.glsl"
#include "dtype_q2_k.glsl"
#include "dtype_q3_k.glsl"
#include "dtype_q4_k.glsl"
#include "dtype_q5_k.glsl"
#include "dtype_q6_k.glsl"
#include "dtype_mxfp4.glsl"

#ifndef W_UNIT
#error "WTYPE names no weight type"
#endif
#define W_UV (W_UNIT / 4u)
/* W_HAVE_RAW (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K): w_unit_raw(rowb, u, q[W_UV], al, be) gives a
 * unit's raw quants and, for its W_NG groups of W_UV / W_NG texels, x = al[g] * q + be[g]; a dot
 * product with activations a is then al[g] * dot(q, a) + be[g] * sum(a), where sum(a) is
 * computed once for every weight row (decode, ROWSEQ in matmul_texel.comp): two operations per
 * weight fewer. With W_RAWP, texel j of q holds q / W_RAWP_SCALE(j) (see above). */
#ifndef W_HAVE_RAW
#define W_HAVE_RAW 0
#endif
/* W_HAVE_PAIRLOAD (Q4_K, Q5_K, Q6_K): units 2k and 2k + 1 share texels; w_pair_load(rowb, u, pl)
 * reads them into a w_pl and w_unit_raw_pl(rowb, u, pl, ...) is w_unit_raw from them (the decode's
 * RS_PAIRU in matmul_texel.comp) */
#ifndef W_HAVE_PAIRLOAD
#define W_HAVE_PAIRLOAD 0
#endif
#ifdef W_UNIT_FROM_RAW
/* the dequantized unit (scale 1) from the raw one: x = al[g] * q + be[g] */
float w_unit(uint rowb, uint u, out vec4 w[W_UV]) {
    vec4 al, be;
    w_unit_raw(rowb, u, w, al, be);
    for (uint j = 0; j < W_UV; j++)
        w[j] = al[j / (W_UV / W_NG)] * (w[j] * W_RAWP_SCALE(j)) + be[j / (W_UV / W_NG)];
    return 1.0;
}
#endif

#ifdef W_GENERIC_AT4
vec4 w_at4(uint rowb, uint k) { return vec4(w_at(rowb, k), w_at(rowb, k + 1u), w_at(rowb, k + 2u), w_at(rowb, k + 3u)); }
#endif

#endif
