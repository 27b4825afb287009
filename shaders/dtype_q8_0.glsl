/* Q8_0 weights: 34-byte blocks of f16 d + 32 x int8; x = d * q (see dtypes.glsl) */
#if WTYPE == VKF_W_Q8_0
#define W_UNIT 32u
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 34u;
    int q = int(vkf_u8(bb + 2u + (k & 31u)) << 24) >> 24;
    return vkf_f16(vkf_u16(bb)) * float(q);
}
vec4 w_at4(uint rowb, uint k) {
    uint bb = rowb + (k >> 5) * 34u;
    return vkf_f16(vkf_u16(bb)) * vkf_i8x4(vkf_u32h(bb + 2u + (k & 31u)));
}
/* block u of a row: its 32 quants as two texels of words, and d */
float vkf_q8_block(uint rowb, uint u, out uvec4 q0, out uvec4 q1) {
    uvec4 lo, hi;
    uint e;
    w_oct2e(rowb + u * 34u, lo, hi, e); /* the whole block: d, then the quants 2 bytes on */
    q0 = uvec4((lo.x >> 16) | (lo.y << 16), (lo.y >> 16) | (lo.z << 16), (lo.z >> 16) | (lo.w << 16), (lo.w >> 16) | (hi.x << 16));
    q1 = uvec4((hi.x >> 16) | (hi.y << 16), (hi.y >> 16) | (hi.z << 16), (hi.z >> 16) | (hi.w << 16), (hi.w >> 16) | (e << 16));
    return vkf_f16(lo.x & 0xffffu);
}
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uvec4 q0, q1;
    float d = vkf_q8_block(rowb, u, q0, q1);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_i8x4(q0[i]);
        w[i + 4u] = vkf_i8x4(q1[i]);
    }
    return d;
}
/* the raw quants (see W_HAVE_RAW and W_RAWP in dtypes.glsl): x = d * q, no offset */
#define W_HAVE_RAW 1
#define W_NG 1u
#define W_RAWP_SCALE(j) VKF_I8_S
void w_unit_raw(uint rowb, uint u, out vec4 w[8], out vec4 al, out vec4 be) {
    uvec4 q0, q1;
    float d = vkf_q8_block(rowb, u, q0, q1);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_i8x4_r(q0[i]);
        w[i + 4u] = vkf_i8x4_r(q1[i]);
    }
    al = vec4(d);
    be = vec4(0.0);
}
#endif
