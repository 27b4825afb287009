/* Q6_K weights: 210-byte super-blocks of 256 (2-byte aligned): 128 bytes of low nibbles ql, 64
 * bytes of 2-bit highs qh, 16 int8 scales, f16 d. Element e: n = e / 128, g = e % 128 / 32,
 * l = e % 32: q = ((ql[64n + 32 (g & 1) + l] >> 4 (g >> 1)) & 15) | (((qh[32n + l] >> 2g) & 3) << 4);
 * x = d * scales[e / 16] * (q - 32). A unit is one (n, g): 32 elements (see dtypes.glsl). */
#if WTYPE == VKF_W_Q6_K
#define W_UNIT 32u
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 8) * 210u, e = k & 255u, n = e >> 7, g = (e >> 5) & 3u, l = e & 31u;
    uint q = (vkf_u8(bb + 64u * n + 32u * (g & 1u) + l) >> (4u * (g >> 1))) & 15u;
    q |= ((vkf_u8(bb + 128u + 32u * n + l) >> (2u * g)) & 3u) << 4;
    float sc = float(int(vkf_u8(bb + 192u + (e >> 4)) << 24) >> 24);
    return vkf_f16(vkf_u16(bb + 208u)) * sc * (float(q) - 32.0);
}
#define W_GENERIC_AT4
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + (u >> 3) * 210u, s = u & 7u, n = s >> 2, g = s & 3u;
    uint scw = vkf_u16(bb + 192u + 2u * s);
    float s0 = float(int(scw << 24) >> 24), s1 = float(int(scw << 16) >> 24);
    uint lb = bb + 64u * n + 32u * (g & 1u), hb = bb + 128u + 32u * n;
    uvec4 l0 = w_quad2(lb), l1 = w_quad2(lb + 16u), h0 = w_quad2(hb), h1 = w_quad2(hb + 16u);
    uint sl = 4u * (g >> 1), sh = 2u * g;
    uvec4 o = uvec4(0u, 8u, 16u, 24u);
    for (uint i = 0; i < 4u; i++) {
        uvec4 v0 = ((uvec4(l0[i]) >> (o + sl)) & 15u) | (((uvec4(h0[i]) >> (o + sh)) & 3u) << 4);
        uvec4 v1 = ((uvec4(l1[i]) >> (o + sl)) & 15u) | (((uvec4(h1[i]) >> (o + sh)) & 3u) << 4);
        w[i] = s0 * (vec4(v0) - 32.0);
        w[i + 4u] = s1 * (vec4(v1) - 32.0);
    }
    return vkf_f16(vkf_u16(bb + 208u));
}
#endif
