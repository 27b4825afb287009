/* Q5_0 weights: 22-byte blocks (2-byte aligned) of f16 d, 32 high bits (bit j: element j), 16
 * bytes of low nibbles (byte j: element j low, j + 16 high); x = d * (q - 16) (see dtypes.glsl) */
#if WTYPE == VKF_W_Q5_0
#define W_UNIT 32u
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 22u, j = k & 31u;
    uint q = (vkf_u8(bb + 6u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u;
    q |= ((vkf_u32h(bb + 2u) >> j) & 1u) << 4;
    return vkf_f16(vkf_u16(bb)) * (float(q) - 16.0);
}
#define W_GENERIC_AT4
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + u * 22u;
    uint qh = vkf_u32h(bb + 2u);
    uvec4 q = w_quad2(bb + 6u);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vec4(vkf_bytes(vkf_q5_lo(q, qh, i))) - 16.0;
        w[i + 4u] = vec4(vkf_bytes(vkf_q5_hi(q, qh, i))) - 16.0;
    }
    return vkf_f16(vkf_u16(bb));
}
/* the raw 5-bit quants (see W_HAVE_RAW and W_RAWP in dtypes.glsl): x = d * q -
 * 16 d */
#define W_HAVE_RAW 1
#define W_NG 1u
#define W_RAWP_SCALE(j) VKF_B_S
void w_unit_raw(uint rowb, uint u, out vec4 w[8], out vec4 al, out vec4 be) {
    uint bb = rowb + u * 22u;
    uint qh = vkf_u32h(bb + 2u);
    uvec4 q = w_quad2(bb + 6u);
    for (uint i = 0; i < 4u; i++) { /* each word's four 5-bit quants assembled in its bytes */
        w[i] = vkf_bytes_r(vkf_q5_lo(q, qh, i));
        w[i + 4u] = vkf_bytes_r(vkf_q5_hi(q, qh, i));
    }
    float d = vkf_f16(vkf_u16(bb));
    al = vec4(d);
    be = vec4(-16.0 * d);
}
#endif
