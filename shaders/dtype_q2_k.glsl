/* Q2_K weights: 84-byte super-blocks of 256: 16 scale bytes (per 16 elements: low nibble scale,
 * high nibble min), 64 bytes of 2-bit quants, f16 d, f16 dmin. Element e: n = e / 128,
 * j = e % 128 / 32, l = e % 32: q = (qs[32n + l] >> 2j) & 3; x = d * sc * q - dmin * m with
 * sc|m = scales[e / 16]. A unit is the 32 elements of one (n, j) (see dtypes.glsl). */
#if WTYPE == VKF_W_Q2_K
#define W_UNIT 32u
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 8) * 84u, e = k & 255u;
    uint q = (vkf_u8(bb + 16u + 32u * (e >> 7) + (e & 31u)) >> (2u * ((e >> 5) & 3u))) & 3u;
    uint sc = vkf_u8(bb + (e >> 4));
    vec2 dm = unpackHalf2x16(w_word(bb + 80u));
    return dm.x * float(sc & 15u) * float(q) - dm.y * float(sc >> 4);
}
#define W_GENERIC_AT4
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + (u >> 3) * 84u, s = u & 7u, sh = 2u * (s & 3u);
    vec2 dm = unpackHalf2x16(w_word(bb + 80u));
    uint sc = vkf_u16(bb + 2u * s);
    float d0 = dm.x * float(sc & 15u), m0 = dm.y * float((sc >> 4) & 15u);
    float d1 = dm.x * float((sc >> 8) & 15u), m1 = dm.y * float(sc >> 12);
    uint qb = bb + 16u + 32u * (s >> 2);
    uvec4 q0 = w_quad2(qb), q1 = w_quad2(qb + 16u);
    for (uint i = 0; i < 4u; i++) {
        w[i] = d0 * vec4(vkf_crumbs(q0[i], sh)) - m0;
        w[i + 4u] = d1 * vec4(vkf_crumbs(q1[i], sh)) - m1;
    }
    return 1.0;
}
#endif
