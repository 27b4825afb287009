/* Q5_K weights: 176-byte super-blocks: Q4_K's d, dmin, scales, then 32 bytes of high bits
 * (element l of sub-block s: bit s of qh[l]), then the 128 bytes of nibbles;
 * x = d * sc[s] * (q + 16 h) - dmin * m[s] (scales: dtype_q4_k.glsl; see dtypes.glsl) */
#if WTYPE == VKF_W_Q5_K
/* a unit is the 64 elements of sub-blocks 2j and 2j + 1 (as Q4_K) */
#if W_SMALL
#define W_UNIT 32u
#else
#define W_UNIT 64u
#endif
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 8) * 176u, s = (k >> 5) & 7u, l = k & 31u;
    uint q = (vkf_u8(bb + 48u + 32u * (s >> 1) + l) >> (4u * (s & 1u))) & 15u;
    q |= ((vkf_u8(bb + 16u + l) >> s) & 1u) << 4;
    vec2 sm = vkf_k4_sm(bb, s);
    return sm.x * float(q) - sm.y;
}
#define W_GENERIC_AT4
#if W_SMALL
/* 32-element units (rows of few super-blocks: enough units for every lane) */
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + (u >> 3) * 176u, s = u & 7u;
    vec2 sm = vkf_k4_sm(bb, s);
    uvec4 h0 = w_quad2(bb + 16u), h1 = w_quad2(bb + 32u);
    uint qb = bb + 48u + 32u * (s >> 1);
    uvec4 q0 = w_quad2(qb), q1 = w_quad2(qb + 16u);
    uint sh = 4u * (s & 1u);
    for (uint i = 0; i < 4u; i++) { /* each word's four quants assembled in its bytes */
        uvec4 v0 = vkf_bytes(((q0[i] >> sh) & 0x0F0F0F0Fu) | (((h0[i] >> s) & 0x01010101u) << 4));
        uvec4 v1 = vkf_bytes(((q1[i] >> sh) & 0x0F0F0F0Fu) | (((h1[i] >> s) & 0x01010101u) << 4));
        w[i] = sm.x * vec4(v0) - sm.y;
        w[i + 4u] = sm.x * vec4(v1) - sm.y;
    }
    return 1.0;
}
#else
/* w_unit from w_unit_raw (dtypes.glsl, W_UNIT_FROM_RAW); the raw 5-bit quants and x = al[g] * q + be[g] for the unit's two sub-blocks (see Q4_K) */
#define W_HAVE_RAW 1
#define W_UNIT_FROM_RAW 1
#define W_NG 2u
#define W_RAWP_SCALE(j) VKF_B_S
/* the texels units 2k and 2k + 1 share (W_HAVE_PAIRLOAD, dtypes.glsl): the super-block's
 * header and its 32 high-bit bytes */
#define W_HAVE_PAIRLOAD 1
struct w_pl {
    uvec4 hd, h0, h1;
};
void w_pair_load(uint rowb, uint u, out w_pl pl) {
    uint bb = rowb + (u >> 2) * 176u;
    pl.hd = w_quad2(bb);
    pl.h0 = w_quad2(bb + 16u);
    pl.h1 = w_quad2(bb + 32u);
}
void w_unit_raw_pl(uint rowb, uint u, w_pl pl, out vec4 w[16], out vec4 al, out vec4 be) {
    uint bb = rowb + (u >> 2) * 176u, j = u & 3u;
    vec2 lo = vkf_k4_sm_h(pl.hd, 2u * j), hi = vkf_k4_sm_h(pl.hd, 2u * j + 1u);
    uvec4 h0 = pl.h0, h1 = pl.h1;
    uint qb = bb + 48u + 32u * j;
    uvec4 q0 = w_quad2(qb), q1 = w_quad2(qb + 16u);
    uint s0 = 2u * j, s1 = s0 + 1u;
    for (uint i = 0; i < 4u; i++) { /* each word's four quants assembled in its bytes */
        w[i] = vkf_bytes_r((q0[i] & 0x0F0F0F0Fu) | (((h0[i] >> s0) & 0x01010101u) << 4));
        w[i + 4u] = vkf_bytes_r((q1[i] & 0x0F0F0F0Fu) | (((h1[i] >> s0) & 0x01010101u) << 4));
        w[i + 8u] = vkf_bytes_r(((q0[i] >> 4) & 0x0F0F0F0Fu) | (((h0[i] >> s1) & 0x01010101u) << 4));
        w[i + 12u] = vkf_bytes_r(((q1[i] >> 4) & 0x0F0F0F0Fu) | (((h1[i] >> s1) & 0x01010101u) << 4));
    }
    al = vec4(lo.x, hi.x, 0.0, 0.0);
    be = vec4(-lo.y, -hi.y, 0.0, 0.0);
}
void w_unit_raw(uint rowb, uint u, out vec4 w[16], out vec4 al, out vec4 be) {
    w_pl pl;
    w_pair_load(rowb, u, pl);
    w_unit_raw_pl(rowb, u, pl, w, al, be);
}
#endif
#endif
