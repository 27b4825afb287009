/* IQ4_NL weights: 18-byte blocks (2-byte aligned) of f16 d, 16 bytes of nibbles (byte j:
 * element j low, j + 16 high) indexing a 16-value table; x = d * table[q] (see dtypes.glsl) */
#if WTYPE == VKF_W_IQ4_NL || WTYPE == VKF_W_IQ4_XS
/* ggml's kvalues_iq4nl (src/core/dtype.c vkf_iq4nl_values) */
const float vkf_iq4nl[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0,
                                      13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);
vec4 vkf_iq4(uvec4 q) { return vec4(vkf_iq4nl[q.x], vkf_iq4nl[q.y], vkf_iq4nl[q.z], vkf_iq4nl[q.w]); }
#endif
#if WTYPE == VKF_W_IQ4_NL
#define W_UNIT 32u
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 18u, j = k & 31u;
    uint q = (vkf_u8(bb + 2u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u;
    return vkf_f16(vkf_u16(bb)) * vkf_iq4nl[q];
}
#define W_GENERIC_AT4
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + u * 18u;
    uvec4 q = w_quad2(bb + 2u);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_iq4(vkf_nlo_u(q[i]));
        w[i + 4u] = vkf_iq4(vkf_nhi_u(q[i]));
    }
    return vkf_f16(vkf_u16(bb));
}
#endif
