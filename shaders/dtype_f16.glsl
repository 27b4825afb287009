/* F16 weights (see dtypes.glsl for the interface) */
#if WTYPE == VKF_W_F16
#define W_UNIT 8u
float w_at(uint rowb, uint k) { return vkf_f16(vkf_u16(rowb + 2u * k)); }
vec4 w_at4(uint rowb, uint k) {
    uint b = rowb + 2u * k;
    return vec4(unpackHalf2x16(vkf_u32h(b)), unpackHalf2x16(vkf_u32h(b + 4u)));
}
float w_unit(uint rowb, uint u, out vec4 w[2]) {
    uvec4 q = w_quad(rowb + 16u * u);
    w[0] = vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y));
    w[1] = vec4(unpackHalf2x16(q.z), unpackHalf2x16(q.w));
    return 1.0;
}
#endif
