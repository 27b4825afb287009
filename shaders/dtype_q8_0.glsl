/* Q8_0 weights: 34-byte blocks of f16 d + 32 x int8; x = d * q (see dtypes.glsl) */
#if WTYPE == VKF_W_Q8_0
#define W_UNIT 32u
vec4 vkf_i8x4(uint q) { return vec4(ivec4(uvec4(q) << uvec4(24u, 16u, 8u, 0u)) >> 24); }
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 34u;
    int q = int(vkf_u8(bb + 2u + (k & 31u)) << 24) >> 24;
    return vkf_f16(vkf_u16(bb)) * float(q);
}
vec4 w_at4(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 34u;
    return vkf_f16(vkf_u16(bb)) * vkf_i8x4(vkf_u32h(bb + 2u + (k & 31u)));
}
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + u * 34u;
    uvec4 q0 = w_quad2(bb + 2u), q1 = w_quad2(bb + 18u);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_i8x4(q0[i]);
        w[i + 4u] = vkf_i8x4(q1[i]);
    }
    return vkf_f16(vkf_u16(bb));
}
#endif
