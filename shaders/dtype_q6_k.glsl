/* Q6_K weights: 210-byte super-blocks of 256 (2-byte aligned): 128 bytes of low nibbles ql, 64
 * bytes of 2-bit highs qh, 16 int8 scales, f16 d. Element e: n = e / 128, g = e % 128 / 32,
 * l = e % 32: q = ((ql[64n + 32 (g & 1) + l] >> 4 (g >> 1)) & 15) | (((qh[32n + l] >> 2g) & 3) << 4);
 * x = d * scales[e / 16] * (q - 32) (see dtypes.glsl). */
#if WTYPE == VKF_W_Q6_K
#if W_SMALL
#define W_UNIT 32u
#else
#define W_UNIT 64u
#endif
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 8) * 210u, e = k & 255u, n = e >> 7, g = (e >> 5) & 3u, l = e & 31u;
    uint q = (vkf_u8(bb + 64u * n + 32u * (g & 1u) + l) >> (4u * (g >> 1))) & 15u;
    q |= ((vkf_u8(bb + 128u + 32u * n + l) >> (2u * g)) & 3u) << 4;
    float sc = float(int(vkf_u8(bb + 192u + (e >> 4)) << 24) >> 24);
    return vkf_f16(vkf_u16(bb + 208u)) * sc * (float(q) - 32.0);
}
#define W_GENERIC_AT4
#if W_SMALL
/* 32-element units (rows of few super-blocks: enough units for every lane) */
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + (u >> 3) * 210u, s = u & 7u, n = s >> 2, g = s & 3u;
    uint scw = vkf_u16(bb + 192u + 2u * s);
    float s0 = float(int(scw << 24) >> 24), s1 = float(int(scw << 16) >> 24);
    uint lb = bb + 64u * n + 32u * (g & 1u), hb = bb + 128u + 32u * n;
    uvec4 l0 = w_quad2(lb), l1 = w_quad2(lb + 16u), h0 = w_quad2(hb), h1 = w_quad2(hb + 16u);
    uint sl = 4u * (g >> 1), sh = 2u * g;
    for (uint i = 0; i < 4u; i++) { /* each word's four quants assembled in its bytes */
        uvec4 v0 = vkf_bytes(((l0[i] >> sl) & 0x0F0F0F0Fu) | (((h0[i] >> sh) & 0x03030303u) << 4));
        uvec4 v1 = vkf_bytes(((l1[i] >> sl) & 0x0F0F0F0Fu) | (((h1[i] >> sh) & 0x03030303u) << 4));
        w[i] = s0 * (vec4(v0) - 32.0);
        w[i + 4u] = s1 * (vec4(v1) - 32.0);
    }
    return vkf_f16(vkf_u16(bb + 208u));
}
#else
/* a unit is 64 elements, groups g0 = 2 (u & 1) and g0 + 1 of half-block n: their ql bytes
 * 64n..64n+63 (g0 the first 32, g0 + 1 the next), the shared 32 qh bytes, four scales; the 16
 * scales and d (18 bytes), the 64 low-nibble bytes and the 32 high-bit bytes are read as three
 * realigned runs of texels: 10 texel reads per 64 weights, not 15. The raw 6-bit quants and
 * x = al[g] * q + be[g] for the unit's four groups of 16 (texels 0-3, 4-7, 8-11, 12-15):
 * al = d * scale, be = -32 al; w_unit from w_unit_raw (dtypes.glsl, W_UNIT_FROM_RAW) */
#define W_HAVE_RAW 1
#define W_UNIT_FROM_RAW 1
#define W_NG 4u
#define W_RAWP_SCALE(j) VKF_B_S
/* the texels units 2k and 2k + 1 share (W_HAVE_PAIRLOAD, dtypes.glsl): all that they read,
 * their super-block's scales and d, their half-block's low nibbles and high bits */
#define W_HAVE_PAIRLOAD 1
struct w_pl {
    uvec4 sq, lq[4], h0, h1;
    uint de;
};
void w_pair_load(uint rowb, uint u, out w_pl pl) {
    uint bb = rowb + (u >> 2) * 210u, n = (u >> 1) & 1u;
    pl.sq = w_quad2e(bb + 192u, pl.de);
    w_hex2(bb + 64u * n, pl.lq);
    uint he;
    w_oct2e(bb + 128u + 32u * n, pl.h0, pl.h1, he);
}
void w_unit_raw_pl(uint rowb, uint u, w_pl pl, out vec4 w[16], out vec4 al, out vec4 be) {
    uint n = (u >> 1) & 1u, g0 = 2u * (u & 1u);
    uvec4 sq = pl.sq, h0 = pl.h0, h1 = pl.h1;
    uint de = pl.de;
    uint wi = 2u * n + (g0 >> 1);
    uint scw = wi == 0u ? sq.x : wi == 1u ? sq.y : wi == 2u ? sq.z : sq.w;
    al = vkf_f16(de) * vec4(ivec4(uvec4(scw) << uvec4(24u, 16u, 8u, 0u)) >> 24);
    be = -32.0 * al;
    uint sl = 4u * (g0 >> 1), sa = 2u * g0, sb = sa + 2u;
    /* each word's four 6-bit quants assembled in its bytes (vkf_bytes) */
    for (uint i = 0; i < 4u; i++) {
        uint q0 = ((pl.lq[0][i] >> sl) & 0x0F0F0F0Fu) | (((h0[i] >> sa) & 0x03030303u) << 4);
        uint q1 = ((pl.lq[1][i] >> sl) & 0x0F0F0F0Fu) | (((h1[i] >> sa) & 0x03030303u) << 4);
        uint q2 = ((pl.lq[2][i] >> sl) & 0x0F0F0F0Fu) | (((h0[i] >> sb) & 0x03030303u) << 4);
        uint q3 = ((pl.lq[3][i] >> sl) & 0x0F0F0F0Fu) | (((h1[i] >> sb) & 0x03030303u) << 4);
        w[i] = vkf_bytes_r(q0);
        w[i + 4u] = vkf_bytes_r(q1);
        w[i + 8u] = vkf_bytes_r(q2);
        w[i + 12u] = vkf_bytes_r(q3);
    }
}
void w_unit_raw(uint rowb, uint u, out vec4 w[16], out vec4 al, out vec4 be) {
    w_pl pl;
    w_pair_load(rowb, u, pl);
    w_unit_raw_pl(rowb, u, pl, w, al, be);
}
#endif
#endif
