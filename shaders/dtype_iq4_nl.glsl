/* IQ4_NL weights: 18-byte blocks (2-byte aligned) of f16 d, 16 bytes of nibbles (byte j:
 * element j low, j + 16 high) indexing a 16-value table; x = d * table[q] (see dtypes.glsl) */
#if WTYPE == VKF_W_IQ4_NL || WTYPE == VKF_W_IQ4_XS
/* ggml's kvalues_iq4nl (src/core/dtype.c vkf_iq4nl_values) as int8 bytes in four words, read
 * with selects and shifts: a constant array indexed per lane becomes a gather on CPU drivers */
#define VKF_IQ4_W0 0xBFAD9881u /* -127 -104 -83 -65 */
#define VKF_IQ4_W1 0xF6EADDCFu /* -49 -35 -22 -10 */
#define VKF_IQ4_W2 0x26190D01u /* 1 13 25 38 */
#define VKF_IQ4_W3 0x71594535u /* 53 69 89 113 */
vec4 vkf_iq4(uvec4 q) {
    uvec4 w = mix(mix(uvec4(VKF_IQ4_W0), uvec4(VKF_IQ4_W1), greaterThan(q, uvec4(3u))),
                  mix(uvec4(VKF_IQ4_W2), uvec4(VKF_IQ4_W3), greaterThan(q, uvec4(11u))), greaterThan(q, uvec4(7u)));
    return vec4(ivec4(w << (24u - 8u * (q & 3u))) >> 24);
}
float vkf_iq4s(uint q) { return vkf_iq4(uvec4(q)).x; }
#endif
#if WTYPE == VKF_W_IQ4_NL
#define W_UNIT 32u
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 18u, j = k & 31u;
    uint q = (vkf_u8(bb + 2u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u;
    return vkf_f16(vkf_u16(bb)) * vkf_iq4s(q);
}
#define W_GENERIC_AT4
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + u * 18u, e;
    uvec4 h = w_quad2e(bb, e); /* the whole block: d, then the quant words 2 bytes on */
    uvec4 q = uvec4((h.x >> 16) | (h.y << 16), (h.y >> 16) | (h.z << 16), (h.z >> 16) | (h.w << 16), (h.w >> 16) | (e << 16));
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_iq4(vkf_nlo_u(q[i]));
        w[i + 4u] = vkf_iq4(vkf_nhi_u(q[i]));
    }
    return vkf_f16(h.x & 0xffffu);
}
#endif
