/* Weight reads for every storage type, dequantized to f32 inside the kernel (DESIGN 5).
 * The includer declares the weight buffer as `uint wq[]` (byte-addressed through 32-bit words,
 * so no 8/16-bit storage feature is needed) and defines WTYPE (VKF_W_*). `rowb` is the byte
 * offset of a row inside the bound window. ggml blocks: Q8_0 = f16 d + 32 x int8 (34 bytes),
 * Q4_0 = f16 d + 16 bytes of nibbles (18 bytes; low nibbles are elements 0..15). */
#ifndef VKF_WEIGHTS_GLSL
#define VKF_WEIGHTS_GLSL

#ifndef WTYPE
#define WTYPE VKF_W_F32
#endif

uint vkf_u8(uint byte) { return (wq[byte >> 2] >> ((byte & 3u) * 8u)) & 0xffu; }

/* 16-bit value at an even byte offset */
uint vkf_u16(uint byte) { return (wq[byte >> 2] >> ((byte & 2u) * 8u)) & 0xffffu; }

/* 32 bits at a 2-byte aligned offset (reads the next word only when the value straddles it) */
uint vkf_u32h(uint byte) {
    uint lo = wq[byte >> 2];
    if ((byte & 2u) == 0u) return lo;
    return (lo >> 16) | (wq[(byte >> 2) + 1u] << 16);
}

float vkf_f16(uint bits) { return unpackHalf2x16(bits).x; }

/* one weight element k of the row at byte rowb */
float w_at(uint rowb, uint k) {
#if WTYPE == VKF_W_F32
    return uintBitsToFloat(wq[(rowb >> 2) + k]);
#elif WTYPE == VKF_W_F16
    return vkf_f16(vkf_u16(rowb + 2u * k));
#elif WTYPE == VKF_W_BF16
    return uintBitsToFloat(vkf_u16(rowb + 2u * k) << 16);
#elif WTYPE == VKF_W_Q8_0
    uint bb = rowb + (k >> 5) * 34u;
    int q = int(vkf_u8(bb + 2u + (k & 31u)) << 24) >> 24;
    return vkf_f16(vkf_u16(bb)) * float(q);
#else /* Q4_0 */
    uint bb = rowb + (k >> 5) * 18u, j = k & 31u;
    uint q = (vkf_u8(bb + 2u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u;
    return vkf_f16(vkf_u16(bb)) * (float(q) - 8.0);
#endif
}

/* four weight elements k..k+3 (k a multiple of 4) */
vec4 w_at4(uint rowb, uint k) {
#if WTYPE == VKF_W_F32
    uint i = (rowb >> 2) + k;
    return vec4(uintBitsToFloat(wq[i]), uintBitsToFloat(wq[i + 1u]), uintBitsToFloat(wq[i + 2u]),
                uintBitsToFloat(wq[i + 3u]));
#elif WTYPE == VKF_W_F16
    uint b = rowb + 2u * k;
    return vec4(unpackHalf2x16(vkf_u32h(b)), unpackHalf2x16(vkf_u32h(b + 4u)));
#elif WTYPE == VKF_W_BF16
    uint b = rowb + 2u * k;
    uint u0 = vkf_u32h(b), u1 = vkf_u32h(b + 4u);
    return vec4(uintBitsToFloat(u0 << 16), uintBitsToFloat(u0 & 0xffff0000u),
                uintBitsToFloat(u1 << 16), uintBitsToFloat(u1 & 0xffff0000u));
#elif WTYPE == VKF_W_Q8_0
    uint bb = rowb + (k >> 5) * 34u;
    uint u = vkf_u32h(bb + 2u + (k & 31u));
    ivec4 q = ivec4(int(u << 24) >> 24, int(u << 16) >> 24, int(u << 8) >> 24, int(u) >> 24);
    return vkf_f16(vkf_u16(bb)) * vec4(q);
#else /* Q4_0 */
    uint bb = rowb + (k >> 5) * 18u, j = k & 31u;
    uint u = vkf_u32h(bb + 2u + (j & 15u)) >> ((j >> 4) * 4u);
    vec4 q = vec4(float(u & 15u), float((u >> 8) & 15u), float((u >> 16) & 15u), float((u >> 24) & 15u));
    return vkf_f16(vkf_u16(bb)) * (q - 8.0);
#endif
}

#endif
