/* Q4_1 weights: 20-byte blocks of f16 d, f16 m, 16 bytes of nibbles (byte j: element j low,
 * j + 16 high); x = d * q + m (see dtypes.glsl) */
#if WTYPE == VKF_W_Q4_1
#define W_UNIT 32u
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 20u, j = k & 31u;
    vec2 dm = unpackHalf2x16(w_word(bb));
    uint q = (vkf_u8(bb + 4u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u;
    return dm.x * float(q) + dm.y;
}
#define W_GENERIC_AT4
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + u * 20u;
    vec2 dm = unpackHalf2x16(w_word(bb));
    uvec4 q = w_quad2(bb + 4u);
    for (uint i = 0; i < 4u; i++) {
        w[i] = dm.x * vkf_nlo(q[i]) + dm.y;
        w[i + 4u] = dm.x * vkf_nhi(q[i]) + dm.y;
    }
    return 1.0;
}
/* the raw quants (see W_HAVE_RAW and W_RAWP in dtypes.glsl): x = d * q + m */
#define W_HAVE_RAW 1
#define W_NG 1u
#define W_RAWP_SCALE(j) ((j) < 4u ? VKF_LO_S : VKF_HI_S)
void w_unit_raw(uint rowb, uint u, out vec4 w[8], out vec4 al, out vec4 be) {
    uint bb = rowb + u * 20u;
    vec2 dm = unpackHalf2x16(w_word(bb));
    uvec4 q = w_quad2(bb + 4u);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_nlo_r(q[i]);
        w[i + 4u] = vkf_nhi_r(q[i]);
    }
    al = vec4(dm.x);
    be = vec4(dm.y);
}
#endif
