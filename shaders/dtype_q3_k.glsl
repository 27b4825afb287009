/* Q3_K weights: 110-byte super-blocks of 256 (2-byte aligned): 32 bytes of high-bit mask, 64
 * bytes of 2-bit quants, 12 bytes of packed 6-bit scales, f16 d. Element e: n = e / 128,
 * j = e % 128 / 32, l = e % 32: q = ((qs[32n + l] >> 2j) & 3) - (bit 4n + j of hmask[l] ? 0 : 4);
 * x = d * (scale[e / 16] - 32) * q; scale i: low 4 bits = nibble i / 8 of byte i % 8, high 2 bits
 * = bits 2 (i / 4) of byte 8 + i % 4 (see dtypes.glsl). */
#if WTYPE == VKF_W_Q3_K
#if W_SMALL
#define W_UNIT 32u
#else
#define W_UNIT 64u
#endif
float vkf_q3k_scale(uvec3 sw, uint i) {
    uint k = i & 3u, g = i >> 2;
    uint lo = (vkf_byte3(sw, k + 4u * (g & 1u)) >> (4u * (g >> 1))) & 15u;
    uint hi = (vkf_byte3(sw, 8u + k) >> (2u * g)) & 3u;
    return float(lo | (hi << 4)) - 32.0;
}
uvec3 vkf_q3k_sw(uint bb) { return uvec3(vkf_u32h(bb + 96u), vkf_u32h(bb + 100u), vkf_u32h(bb + 104u)); }
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 8) * 110u, e = k & 255u, l = e & 31u, s = e >> 5;
    float q = float((vkf_u8(bb + 32u + 32u * (s >> 2) + l) >> (2u * (s & 3u))) & 3u);
    if (((vkf_u8(bb + l) >> s) & 1u) == 0u) q -= 4.0;
    return vkf_f16(vkf_u16(bb + 108u)) * vkf_q3k_scale(vkf_q3k_sw(bb), e >> 4) * q;
}
#define W_GENERIC_AT4
#if W_SMALL
/* 32-element units (rows of few super-blocks: enough units for every lane) */
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + (u >> 3) * 110u, s = u & 7u, sh = 2u * (s & 3u);
    uvec3 sw = vkf_q3k_sw(bb);
    float s0 = vkf_q3k_scale(sw, 2u * s), s1 = vkf_q3k_scale(sw, 2u * s + 1u);
    uvec4 h0 = w_quad2(bb), h1 = w_quad2(bb + 16u);
    uint qb = bb + 32u + 32u * (s >> 2);
    uvec4 q0 = w_quad2(qb), q1 = w_quad2(qb + 16u);
    for (uint i = 0; i < 4u; i++) { /* each word's four 3-bit quants assembled in its bytes */
        uvec4 v0 = vkf_bytes(((q0[i] >> sh) & 0x03030303u) | (((h0[i] >> s) & 0x01010101u) << 2));
        uvec4 v1 = vkf_bytes(((q1[i] >> sh) & 0x03030303u) | (((h1[i] >> s) & 0x01010101u) << 2));
        w[i] = s0 * (vec4(v0) - 4.0);
        w[i + 4u] = s1 * (vec4(v1) - 4.0);
    }
    return vkf_f16(vkf_u16(bb + 108u));
}
#else
/* a unit is 64 elements: groups j0 = 2 (u & 1) and j0 + 1 of half n share their 32 quant bytes
 * (shifts 2j) and the 32 hmask bytes (bits 4n + j); the 12 scale bytes are read once */
float w_unit(uint rowb, uint u, out vec4 w[16]) {
    uint bb = rowb + (u >> 2) * 110u, n = (u >> 1) & 1u, j0 = 2u * (u & 1u);
    uint s0 = 4u * n + j0, s1 = s0 + 1u, sh0 = 2u * j0, sh1 = sh0 + 2u;
    uvec3 sw = vkf_q3k_sw(bb);
    float c0 = vkf_q3k_scale(sw, 2u * s0), c1 = vkf_q3k_scale(sw, 2u * s0 + 1u);
    float c2 = vkf_q3k_scale(sw, 2u * s1), c3 = vkf_q3k_scale(sw, 2u * s1 + 1u);
    uvec4 h0 = w_quad2(bb), h1 = w_quad2(bb + 16u);
    uint qb = bb + 32u + 32u * n;
    uvec4 q0 = w_quad2(qb), q1 = w_quad2(qb + 16u);
    for (uint i = 0; i < 4u; i++) { /* each word's four 3-bit quants assembled in its bytes */
        uvec4 v0 = vkf_bytes(((q0[i] >> sh0) & 0x03030303u) | (((h0[i] >> s0) & 0x01010101u) << 2));
        uvec4 v1 = vkf_bytes(((q1[i] >> sh0) & 0x03030303u) | (((h1[i] >> s0) & 0x01010101u) << 2));
        uvec4 v2 = vkf_bytes(((q0[i] >> sh1) & 0x03030303u) | (((h0[i] >> s1) & 0x01010101u) << 2));
        uvec4 v3 = vkf_bytes(((q1[i] >> sh1) & 0x03030303u) | (((h1[i] >> s1) & 0x01010101u) << 2));
        w[i] = c0 * (vec4(v0) - 4.0);
        w[i + 4u] = c1 * (vec4(v1) - 4.0);
        w[i + 8u] = c2 * (vec4(v2) - 4.0);
        w[i + 12u] = c3 * (vec4(v3) - 4.0);
    }
    return vkf_f16(vkf_u16(bb + 108u));
}
#endif
#endif
