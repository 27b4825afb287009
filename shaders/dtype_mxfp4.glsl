/* MXFP4 weights: 17-byte blocks (any byte offset) of an E8M0 scale byte e and 16 bytes of E2M1
 * nibbles (byte j: element j low, j + 16 high); x = 2^(e - 128) * table[q], the table ggml's
 * kvalues_mxfp4 (E2M1 doubled: 0 1 2 3 4 6 8 12, bit 3 the sign; src/core/types/mxfp4.c) */
#if WTYPE == VKF_W_MXFP4
/* the magnitudes 0 1 2 3 | 4 6 8 12 as bytes of two words, read with a select and a shift (a
 * constant array indexed per lane becomes a gather on CPU drivers) */
vec4 vkf_fp4(uvec4 q) {
    uvec4 m = q & 7u;
    uvec4 w = mix(uvec4(0x03020100u), uvec4(0x0C080604u), greaterThan(m, uvec4(3u)));
    vec4 v = vec4((w >> (8u * (m & 3u))) & 0xFFu);
    return mix(v, -v, greaterThan(q, uvec4(7u)));
}
/* 2^(e - 128) (ggml_e8m0_to_fp32_half; e < 2 are subnormals, which a device may flush) */
float vkf_e8m0_half(uint e) { return uintBitsToFloat(e < 2u ? (0x00200000u << e) : ((e - 1u) << 23)); }
/* 16 bytes at any byte offset (the fifth word only when they straddle it) */
uvec4 vkf_quadb(uint byte) {
    uint b = byte & ~3u, sh = (byte & 3u) * 8u;
    uvec4 x = uvec4(w_word(b), w_word(b + 4u), w_word(b + 8u), w_word(b + 12u));
    if (sh == 0u) return x;
    return (x >> sh) | (uvec4(x.y, x.z, x.w, w_word(b + 16u)) << (32u - sh));
}
#define W_UNIT 32u
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 17u, j = k & 31u;
    uint q = (vkf_u8(bb + 1u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u;
    return vkf_e8m0_half(vkf_u8(bb)) * vkf_fp4(uvec4(q)).x;
}
#define W_GENERIC_AT4
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + u * 17u;
    uvec4 q = vkf_quadb(bb + 1u);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_fp4(vkf_nlo_u(q[i]));
        w[i + 4u] = vkf_fp4(vkf_nhi_u(q[i]));
    }
    return vkf_e8m0_half(vkf_u8(bb));
}
#endif
