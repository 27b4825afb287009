/* Q4_K weights: 144-byte super-blocks of 256 = 8 sub-blocks of 32: f16 d, f16 dmin, 12 bytes of
 * packed 6-bit scales and mins, 128 bytes of nibbles (sub-block s: bytes 32 (s / 2).., low
 * nibble for even s, high for odd); x = d * sc[s] * q - dmin * m[s] (see dtypes.glsl). Also the
 * scale unpacking of Q5_K. */
#if WTYPE == VKF_W_Q4_K || WTYPE == VKF_W_Q5_K
/* (d * sc[s], dmin * m[s]) from a block's first 16 bytes hd (d, dmin, 12 scale bytes) */
vec2 vkf_k4_sm_h(uvec4 hd, uint s) {
    vec2 dm = unpackHalf2x16(hd.x);
    /* byte s & 3 of each scale word (one shift each, not a select of words then a shift): the
     * 6-bit scale and min of s < 4, or the nibbles of byte s + 4 and the top bits of bytes s - 4
     * and s for s >= 4 */
    uint sh = (s & 3u) * 8u, x = hd.y >> sh, y = hd.z >> sh, z = hd.w >> sh;
    bool lo = s < 4u;
    uint sc = lo ? x & 63u : (z & 15u) | (((x >> 6) & 3u) << 4);
    uint m = lo ? y & 63u : ((z >> 4) & 15u) | (((y >> 6) & 3u) << 4);
    return vec2(dm.x * float(sc), dm.y * float(m));
}
vec2 vkf_k4_sm(uint bb, uint s) { return vkf_k4_sm_h(w_quad2(bb), s); }
#endif
#if WTYPE == VKF_W_Q4_K
/* a unit is the 64 elements of sub-blocks 2j and 2j + 1, which share the 32 bytes 32j..: one
 * 16-byte header read and two 16-byte quant reads per 64 weights */
#if W_SMALL
#define W_UNIT 32u
#else
#define W_UNIT 64u
#endif
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 8) * 144u, s = (k >> 5) & 7u;
    uint q = (vkf_u8(bb + 16u + 32u * (s >> 1) + (k & 31u)) >> (4u * (s & 1u))) & 15u;
    vec2 sm = vkf_k4_sm(bb, s);
    return sm.x * float(q) - sm.y;
}
#define W_GENERIC_AT4
#if W_SMALL
/* 32-element units (rows of few super-blocks: enough units for every lane) */
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + (u >> 3) * 144u, s = u & 7u;
    vec2 sm = vkf_k4_sm(bb, s);
    uint qb = bb + 16u + 32u * (s >> 1);
    uvec4 q0 = w_quad2(qb), q1 = w_quad2(qb + 16u);
    uint sh = 4u * (s & 1u);
    for (uint i = 0; i < 4u; i++) {
        w[i] = sm.x * vec4((uvec4(q0[i]) >> (uvec4(0u, 8u, 16u, 24u) + sh)) & 15u) - sm.y;
        w[i + 4u] = sm.x * vec4((uvec4(q1[i]) >> (uvec4(0u, 8u, 16u, 24u) + sh)) & 15u) - sm.y;
    }
    return 1.0;
}
#else
/* w_unit from w_unit_raw (dtypes.glsl, W_UNIT_FROM_RAW); the raw nibbles and x = al[g] * q + be[g] for the unit's two sub-blocks (texels 0-7, 8-15) */
#define W_HAVE_RAW 1
#define W_UNIT_FROM_RAW 1
#define W_NG 2u
#define W_RAWP_SCALE(j) ((j) < 8u ? VKF_LO_S : VKF_HI_S)
/* the texel units 2k and 2k + 1 share (W_HAVE_PAIRLOAD, dtypes.glsl): the super-block's header */
#define W_HAVE_PAIRLOAD 1
struct w_pl {
    uvec4 hd;
};
void w_pair_load(uint rowb, uint u, out w_pl pl) { pl.hd = w_quad2(rowb + (u >> 2) * 144u); }
void w_unit_raw_pl(uint rowb, uint u, w_pl pl, out vec4 w[16], out vec4 al, out vec4 be) {
    uint bb = rowb + (u >> 2) * 144u, j = u & 3u;
    uvec4 hd = pl.hd;
    vec2 lo = vkf_k4_sm_h(hd, 2u * j), hi = vkf_k4_sm_h(hd, 2u * j + 1u);
    uint qb = bb + 16u + 32u * j;
    uvec4 q0 = w_quad2(qb), q1 = w_quad2(qb + 16u);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_nlo_r(q0[i]);
        w[i + 4u] = vkf_nlo_r(q1[i]);
        w[i + 8u] = vkf_nhi_r(q0[i]);
        w[i + 12u] = vkf_nhi_r(q1[i]);
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
