/* Q4_0 weights: 18-byte blocks of f16 d + 16 bytes of nibbles (byte j: element j low, j + 16
 * high); x = d * (q - 8) (see dtypes.glsl) */
#if WTYPE == VKF_W_Q4_0
#define W_UNIT 32u
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 18u, j = k & 31u;
    uint q = (vkf_u8(bb + 2u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u;
    return vkf_f16(vkf_u16(bb)) * (float(q) - 8.0);
}
vec4 w_at4(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 18u, j = k & 31u;
    uint u = vkf_u32h(bb + 2u + (j & 15u)) >> ((j >> 4) * 4u);
    return vkf_f16(vkf_u16(bb)) * (vkf_nlo(u) - 8.0);
}
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + u * 18u;
    uvec4 q = w_quad2(bb + 2u);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_nlo(q[i]) - 8.0;
        w[i + 4u] = vkf_nhi(q[i]) - 8.0;
    }
    return vkf_f16(vkf_u16(bb));
}
#endif
