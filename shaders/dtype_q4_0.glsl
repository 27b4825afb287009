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
/* the 18-byte block as 16 bytes + 2: d and the quant words realigned by 2 bytes */
float vkf_blk18(uint bb, out uvec4 q) {
    uint e;
    uvec4 h = w_quad2e(bb, e);
    q = uvec4((h.x >> 16) | (h.y << 16), (h.y >> 16) | (h.z << 16), (h.z >> 16) | (h.w << 16), (h.w >> 16) | (e << 16));
    return vkf_f16(h.x & 0xffffu);
}
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uvec4 q;
    float d = vkf_blk18(rowb + u * 18u, q);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_nlo(q[i]) - 8.0;
        w[i + 4u] = vkf_nhi(q[i]) - 8.0;
    }
    return d;
}
/* the raw quants of unit u and x = al * q + be (one group; see W_HAVE_RAW in dtypes.glsl) */
#define W_HAVE_RAW 1
#define W_NG 1u
#define W_RAWP_SCALE(j) ((j) < 4u ? VKF_LO_S : VKF_HI_S)
void w_unit_raw(uint rowb, uint u, out vec4 w[8], out vec4 al, out vec4 be) {
    uvec4 q;
    float d = vkf_blk18(rowb + u * 18u, q);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_nlo_r(q[i]);
        w[i + 4u] = vkf_nhi_r(q[i]);
    }
    al = vec4(d);
    be = vec4(-8.0 * d);
}
#endif
