/* Q5_1 weights: 24-byte blocks of f16 d, f16 m, 32 high bits, 16 bytes of low nibbles (as
 * Q5_0); x = d * q + m (see dtypes.glsl) */
#if WTYPE == VKF_W_Q5_1
#define W_UNIT 32u
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 24u, j = k & 31u;
    vec2 dm = unpackHalf2x16(w_word(bb));
    uint q = (vkf_u8(bb + 8u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u;
    q |= ((w_word(bb + 4u) >> j) & 1u) << 4;
    return dm.x * float(q) + dm.y;
}
#define W_GENERIC_AT4
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + u * 24u;
    vec2 dm = unpackHalf2x16(w_word(bb));
    uint qh = w_word(bb + 4u);
    uvec4 q = w_quad2(bb + 8u);
    for (uint i = 0; i < 4u; i++) {
        w[i] = dm.x * vec4(vkf_bytes(vkf_q5_lo(q, qh, i))) + dm.y;
        w[i + 4u] = dm.x * vec4(vkf_bytes(vkf_q5_hi(q, qh, i))) + dm.y;
    }
    return 1.0;
}
/* the raw 5-bit quants (see W_HAVE_RAW and W_RAWP in dtypes.glsl): x = d * q +
 * m */
#define W_HAVE_RAW 1
#define W_NG 1u
#define W_RAWP_SCALE(j) VKF_B_S
void w_unit_raw(uint rowb, uint u, out vec4 w[8], out vec4 al, out vec4 be) {
    uint bb = rowb + u * 24u;
    vec2 dm = unpackHalf2x16(w_word(bb));
    uint qh = w_word(bb + 4u);
    uvec4 q = w_quad2(bb + 8u);
    for (uint i = 0; i < 4u; i++) { /* each word's four 5-bit quants assembled in its bytes */
        w[i] = vkf_bytes_r(vkf_q5_lo(q, qh, i));
        w[i + 4u] = vkf_bytes_r(vkf_q5_hi(q, qh, i));
    }
    al = vec4(dm.x);
    be = vec4(dm.y);
}
#endif
