/* IQ4_XS weights: 136-byte super-blocks of 256: f16 d, u16 scales_h, 4 bytes scales_l, 128 bytes
 * of nibbles; sub-block s of 32 uses bytes 16s.. (element j low, j + 16 high) and the 6-bit
 * scale ls (low 4 bits: nibble s & 1 of scales_l[s / 2], high 2: bits 2s of scales_h);
 * x = d * (ls - 32) * table[q] (table in dtype_iq4_nl.glsl; see dtypes.glsl) */
#if WTYPE == VKF_W_IQ4_XS
#define W_UNIT 32u
float vkf_iq4xs_scale(uint bb, uint s) {
    uint h = w_word(bb), l = w_word(bb + 4u);
    uint ls = ((l >> (4u * s)) & 15u) | (((h >> (16u + 2u * s)) & 3u) << 4);
    return vkf_f16(h & 0xffffu) * (float(ls) - 32.0);
}
float w_at(uint rowb, uint k) {
    uint bb = rowb + (k >> 8) * 136u, s = (k >> 5) & 7u, j = k & 31u;
    uint q = (vkf_u8(bb + 8u + 16u * s + (j & 15u)) >> ((j >> 4) * 4u)) & 15u;
    return vkf_iq4xs_scale(bb, s) * vkf_iq4s(q);
}
#define W_GENERIC_AT4
float w_unit(uint rowb, uint u, out vec4 w[8]) {
    uint bb = rowb + (u >> 3) * 136u, s = u & 7u;
    uvec4 q = w_quad2(bb + 8u + 16u * s);
    for (uint i = 0; i < 4u; i++) {
        w[i] = vkf_iq4(vkf_nlo_u(q[i]));
        w[i + 4u] = vkf_iq4(vkf_nhi_u(q[i]));
    }
    return vkf_iq4xs_scale(bb, s);
}
#endif
