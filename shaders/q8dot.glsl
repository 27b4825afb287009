/* The weight side of the integer-dot decode path (matmul_q8.comp): each quantized type's
 * 32-value unit as packed int8x4 words in the activation blocks' order (word i: values 4i..4i+3,
 * value 4i in the low byte), and how its integer sums become floats.
 *
 *   void wq_unit(rowb, u, out uint wq[8], out vec4 wm, out float wmin, out int woff)
 *
 * for unit u (values 32u..32u+31) of the row at byte rowb. The values are stored unsigned where
 * the type stores them so (Q4_0's q, not q - 8): woff is the offset to take off, done exactly
 * through the activations' 16-sums. With s0, s1 the integer dots of the unit's two halves (the
 * offset taken off) and bs0, bs1 the activations' 16-sums, the unit adds
 *   d_a * (wm.x * s0 + wm.y * s1 - wm.z * bs0 - wm.w * bs1) + wmin * s_a
 * (s_a = f16(d_a * sum q_a): the Q4_1 / Q5_1 min term as ggml takes it). Integer sums are exact,
 * so OpSDot and the plain fallback agree bit for bit; the float combination follows the math of
 * src/core/quant_dot.c and the type rows of src/core/types/, in another order.
 *
 * The includer defines uint w_word(uint byte), and uvec4 wq_quad(uint byte) (16 bytes at a
 * 16-byte aligned offset) where it sets W_ALIGN16, and includes dtypes.glsl first (vkf_u8,
 * vkf_u16, vkf_u32h, vkf_f16). */
#ifndef VKF_Q8DOT_GLSL
#define VKF_Q8DOT_GLSL

/* four nibbles (bytes of n, 0..15 each) through the IQ4 table */
const int vkf_kvalues_iq4[16] = int[16](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
uint vkf_iq4_map(uint n) {
    uint r = 0u;
    for (uint i = 0u; i < 4u; i++) r |= (uint(vkf_kvalues_iq4[(n >> (8u * i)) & 15u]) & 0xffu) << (8u * i);
    return r;
}

/* the fifth bits of four values (bits 0..3 of h) into bit 4 of each byte */
uint vkf_h4(uint h) { return ((h & 1u) << 4) | ((h & 2u) << 11) | ((h & 4u) << 18) | ((h & 8u) << 25); }

/* Q4_K / Q5_K: the 6-bit scale and min of sub-block j (ggml's get_scale_min_k4) */
void vkf_scale_min_k4(uint sb, uint j, out uint sc, out uint m) {
    if (j < 4u) {
        sc = vkf_u8(sb + j) & 63u;
        m = vkf_u8(sb + j + 4u) & 63u;
    } else {
        sc = (vkf_u8(sb + j + 4u) & 15u) | ((vkf_u8(sb + j - 4u) >> 6) << 4);
        m = (vkf_u8(sb + j + 4u) >> 4) | ((vkf_u8(sb + j) >> 6) << 4);
    }
}

/* Q3_K: the signed 6-bit scale s (0..15) of its 12 scale bytes at sb */
int vkf_q3k_scale(uint sb, uint s) {
    uint lo = s < 8u ? vkf_u8(sb + s) & 15u : vkf_u8(sb + s - 8u) >> 4;
    uint hi = (vkf_u8(sb + 8u + (s & 3u)) >> (2u * (s >> 2))) & 3u;
    return int(lo | (hi << 4)) - 32;
}

#if WTYPE == VKF_W_Q4_0 || WTYPE == VKF_W_IQ4_NL
/* 18 bytes: f16 d, 16 bytes of nibbles (byte j: value j low, j + 16 high) */
#define WQ_OK 1
void wq_unit(uint rowb, uint u, out uint wq[8], out vec4 wm, out float wmin, out int woff) {
    uint bb = rowb + u * 18u;
    float d = vkf_f16(vkf_u16(bb));
    for (uint i = 0u; i < 4u; i++) {
        uint w = vkf_u32h(bb + 2u + 4u * i);
#if WTYPE == VKF_W_IQ4_NL
        wq[i] = vkf_iq4_map(w & 0x0f0f0f0fu);
        wq[i + 4u] = vkf_iq4_map((w >> 4) & 0x0f0f0f0fu);
#else
        wq[i] = w & 0x0f0f0f0fu;
        wq[i + 4u] = (w >> 4) & 0x0f0f0f0fu;
#endif
    }
    wm = vec4(d, d, 0.0, 0.0);
    wmin = 0.0;
    woff = WTYPE == VKF_W_Q4_0 ? 8 : 0;
}
#elif WTYPE == VKF_W_MXFP4
/* 17 bytes (any byte offset): E8M0 e, 16 bytes of E2M1 nibbles; x = 2^(e - 128) * table[q] */
#define WQ_OK 1
/* four nibbles (bytes of n, 0..15 each) through the E2M1 table (doubled), as int8 bytes */
uint vkf_fp4_map(uint n) {
    uvec4 b = uvec4(ivec4(vkf_fp4(vkf_bytes(n)))) & 0xFFu;
    return b.x | (b.y << 8) | (b.z << 16) | (b.w << 24);
}
void wq_unit(uint rowb, uint u, out uint wq[8], out vec4 wm, out float wmin, out int woff) {
    uint bb = rowb + u * 17u;
    float d = vkf_e8m0_half(vkf_u8(bb));
    uvec4 q = vkf_quadb(bb + 1u);
    for (uint i = 0u; i < 4u; i++) {
        wq[i] = vkf_fp4_map(q[i] & 0x0f0f0f0fu);
        wq[i + 4u] = vkf_fp4_map((q[i] >> 4) & 0x0f0f0f0fu);
    }
    wm = vec4(d, d, 0.0, 0.0);
    wmin = 0.0;
    woff = 0;
}
#elif WTYPE == VKF_W_Q4_1
/* 20 bytes: f16 d, f16 m, 16 bytes of nibbles; x = d * q + m */
#define WQ_OK 1
void wq_unit(uint rowb, uint u, out uint wq[8], out vec4 wm, out float wmin, out int woff) {
    uint bb = rowb + u * 20u;
    uint dm = w_word(bb);
    for (uint i = 0u; i < 4u; i++) {
        uint w = w_word(bb + 4u + 4u * i);
        wq[i] = w & 0x0f0f0f0fu;
        wq[i + 4u] = (w >> 4) & 0x0f0f0f0fu;
    }
    float d = vkf_f16(dm & 0xffffu);
    wm = vec4(d, d, 0.0, 0.0);
    wmin = vkf_f16(dm >> 16);
    woff = 0;
}
#elif WTYPE == VKF_W_Q5_0
/* 22 bytes: f16 d, 32 fifth bits (value j: bit j), 16 bytes of nibbles; x = d * (q - 16) */
#define WQ_OK 1
void wq_unit(uint rowb, uint u, out uint wq[8], out vec4 wm, out float wmin, out int woff) {
    uint bb = rowb + u * 22u;
    float d = vkf_f16(vkf_u16(bb));
    uint qh = vkf_u32h(bb + 2u);
    for (uint i = 0u; i < 4u; i++) {
        uint w = vkf_u32h(bb + 6u + 4u * i);
        wq[i] = (w & 0x0f0f0f0fu) | vkf_h4((qh >> (4u * i)) & 15u);
        wq[i + 4u] = ((w >> 4) & 0x0f0f0f0fu) | vkf_h4((qh >> (16u + 4u * i)) & 15u);
    }
    wm = vec4(d, d, 0.0, 0.0);
    wmin = 0.0;
    woff = 16;
}
#elif WTYPE == VKF_W_Q5_1
/* 24 bytes: f16 d, f16 m, 32 fifth bits, 16 bytes of nibbles; x = d * q + m */
#define WQ_OK 1
void wq_unit(uint rowb, uint u, out uint wq[8], out vec4 wm, out float wmin, out int woff) {
    uint bb = rowb + u * 24u;
    uint dm = w_word(bb), qh = w_word(bb + 4u);
    for (uint i = 0u; i < 4u; i++) {
        uint w = w_word(bb + 8u + 4u * i);
        wq[i] = (w & 0x0f0f0f0fu) | vkf_h4((qh >> (4u * i)) & 15u);
        wq[i + 4u] = ((w >> 4) & 0x0f0f0f0fu) | vkf_h4((qh >> (16u + 4u * i)) & 15u);
    }
    float d = vkf_f16(dm & 0xffffu);
    wm = vec4(d, d, 0.0, 0.0);
    wmin = vkf_f16(dm >> 16);
    woff = 0;
}
#elif WTYPE == VKF_W_Q8_0
/* 34 bytes: f16 d, 32 int8 */
#define WQ_OK 1
void wq_unit(uint rowb, uint u, out uint wq[8], out vec4 wm, out float wmin, out int woff) {
    uint bb = rowb + u * 34u;
    float d = vkf_f16(vkf_u16(bb));
    for (uint i = 0u; i < 8u; i++) wq[i] = vkf_u32h(bb + 2u + 4u * i);
    wm = vec4(d, d, 0.0, 0.0);
    wmin = 0.0;
    woff = 0;
}
#elif WTYPE == VKF_W_Q2_K
/* 84 bytes: 16 scale bytes (low nibble scale, high nibble min, per 16 values), 64 bytes of
 * 2-bit values (byte l of each 32: values l, l + 32, l + 64, l + 96 of its 128), f16 d, f16 dmin */
#define WQ_OK 1
void wq_unit(uint rowb, uint u, out uint wq[8], out vec4 wm, out float wmin, out int woff) {
    uint j = u & 7u, n = j >> 2, t = j & 3u, bb = rowb + (u >> 3) * 84u;
    for (uint i = 0u; i < 8u; i++) wq[i] = (w_word(bb + 16u + 32u * n + 4u * i) >> (2u * t)) & 0x03030303u;
    uint dd = w_word(bb + 80u);
    float d = vkf_f16(dd & 0xffffu), dmin = vkf_f16(dd >> 16);
    uint sc0 = vkf_u8(bb + 8u * n + 2u * t), sc1 = vkf_u8(bb + 8u * n + 2u * t + 1u);
    wm = vec4(d * float(sc0 & 15u), d * float(sc1 & 15u), dmin * float(sc0 >> 4), dmin * float(sc1 >> 4));
    wmin = 0.0;
    woff = 0;
}
#elif WTYPE == VKF_W_Q3_K
/* 110 bytes: 32 bytes of high bits (value l of each 32: bit 4n + t of byte l), 64 bytes of
 * 2-bit values (as Q2_K), 12 bytes of 6-bit scales, f16 d; x = d * sc * (q - 4 * !h) */
#define WQ_OK 1
void wq_unit(uint rowb, uint u, out uint wq[8], out vec4 wm, out float wmin, out int woff) {
    uint j = u & 7u, n = j >> 2, t = j & 3u, bb = rowb + (u >> 3) * 110u;
    for (uint i = 0u; i < 8u; i++) {
        uint lo = (vkf_u32h(bb + 32u + 32u * n + 4u * i) >> (2u * t)) & 0x03030303u;
        uint hb = (vkf_u32h(bb + 4u * i) >> (4u * n + t)) & 0x01010101u;
        wq[i] = lo | (hb << 2);
    }
    float d = vkf_f16(vkf_u16(bb + 108u));
    uint s = 8u * n + 2u * t;
    wm = vec4(d * float(vkf_q3k_scale(bb + 96u, s)), d * float(vkf_q3k_scale(bb + 96u, s + 1u)), 0.0, 0.0);
    wmin = 0.0;
    woff = 4;
}
#elif WTYPE == VKF_W_Q4_K || WTYPE == VKF_W_Q5_K
/* Q4_K 144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles
 * (sub-blocks 2c and 2c + 1: the low and high nibbles of bytes 32c..32c+31); Q5_K 176 bytes:
 * the same with 32 bytes of fifth bits (value l of sub-block j: bit j of byte l) before the
 * nibbles; x = d * sc * q - dmin * m */
#define WQ_OK 1
void wq_unit(uint rowb, uint u, out uint wq[8], out vec4 wm, out float wmin, out int woff) {
    uint j = u & 7u;
#if WTYPE == VKF_W_Q5_K
    uint bb = rowb + (u >> 3) * 176u, qs = bb + 48u + 32u * (j >> 1);
#else
    uint bb = rowb + (u >> 3) * 144u, qs = bb + 16u + 32u * (j >> 1);
#endif
    uint q[8];
#if W_ALIGN16
    uvec4 q0 = wq_quad(qs), q1 = wq_quad(qs + 16u);
    q[0] = q0.x; q[1] = q0.y; q[2] = q0.z; q[3] = q0.w;
    q[4] = q1.x; q[5] = q1.y; q[6] = q1.z; q[7] = q1.w;
#else
    for (uint i = 0u; i < 8u; i++) q[i] = w_word(qs + 4u * i);
#endif
    for (uint i = 0u; i < 8u; i++) wq[i] = (q[i] >> (4u * (j & 1u))) & 0x0f0f0f0fu;
#if WTYPE == VKF_W_Q5_K
    uint h[8];
#if W_ALIGN16
    uvec4 h0 = wq_quad(bb + 16u), h1 = wq_quad(bb + 32u);
    h[0] = h0.x; h[1] = h0.y; h[2] = h0.z; h[3] = h0.w;
    h[4] = h1.x; h[5] = h1.y; h[6] = h1.z; h[7] = h1.w;
#else
    for (uint i = 0u; i < 8u; i++) h[i] = w_word(bb + 16u + 4u * i);
#endif
    for (uint i = 0u; i < 8u; i++) wq[i] |= ((h[i] >> j) & 0x01010101u) << 4;
#endif
    uint dd = w_word(bb), sc, m;
    vkf_scale_min_k4(bb + 4u, j, sc, m);
    float a = vkf_f16(dd & 0xffffu) * float(sc), b = vkf_f16(dd >> 16) * float(m);
    wm = vec4(a, a, b, b);
    wmin = 0.0;
    woff = 0;
}
#elif WTYPE == VKF_W_Q6_K
/* 210 bytes: 128 bytes of low nibbles, 64 of 2-bit highs, 16 int8 scales (per 16 values), f16
 * d; sub-block j = 4n + t: low nibbles of bytes 64n + 32(t & 1) + l (high nibble for t >= 2),
 * highs bits 2t of bytes 128 + 32n + l; x = d * sc * (q - 32) */
#define WQ_OK 1
void wq_unit(uint rowb, uint u, out uint wq[8], out vec4 wm, out float wmin, out int woff) {
    uint j = u & 7u, n = j >> 2, t = j & 3u, bb = rowb + (u >> 3) * 210u;
    uint ql = bb + 64u * n + 32u * (t & 1u), qh = bb + 128u + 32u * n;
    for (uint i = 0u; i < 8u; i++) {
        uint lo = (vkf_u32h(ql + 4u * i) >> (4u * (t >> 1))) & 0x0f0f0f0fu;
        uint hi = (vkf_u32h(qh + 4u * i) >> (2u * t)) & 0x03030303u;
        wq[i] = lo | (hi << 4);
    }
    float d = vkf_f16(vkf_u16(bb + 208u));
    uint s = bb + 192u + 8u * n + 2u * t;
    wm = vec4(d * float(int(vkf_u8(s) << 24) >> 24), d * float(int(vkf_u8(s + 1u) << 24) >> 24), 0.0, 0.0);
    wmin = 0.0;
    woff = 32;
}
#elif WTYPE == VKF_W_IQ4_XS
/* 136 bytes: f16 d, 16 bits of scale highs, 4 bytes of scale lows, 128 bytes of nibbles (16 per
 * sub-block, as IQ4_NL); x = d * (ls - 32) * table[q] */
#define WQ_OK 1
void wq_unit(uint rowb, uint u, out uint wq[8], out vec4 wm, out float wmin, out int woff) {
    uint j = u & 7u, bb = rowb + (u >> 3) * 136u;
    uint h = w_word(bb);
    for (uint i = 0u; i < 4u; i++) {
        uint w = w_word(bb + 8u + 16u * j + 4u * i);
        wq[i] = vkf_iq4_map(w & 0x0f0f0f0fu);
        wq[i + 4u] = vkf_iq4_map((w >> 4) & 0x0f0f0f0fu);
    }
    uint ls = ((vkf_u8(bb + 4u + (j >> 1)) >> (4u * (j & 1u))) & 15u) | (((h >> (16u + 2u * j)) & 3u) << 4);
    float d = vkf_f16(h & 0xffffu) * float(int(ls) - 32);
    wm = vec4(d, d, 0.0, 0.0);
    wmin = 0.0;
    woff = 0;
}
#endif

#endif
