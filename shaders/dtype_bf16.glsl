/* BF16 weights: the high halves of f32 (see dtypes.glsl for the interface) */
#if WTYPE == VKF_W_BF16
#define W_UNIT 8u
vec4 vkf_bf16x2(uint u0, uint u1) {
    return uintBitsToFloat(uvec4(u0 << 16, u0 & 0xffff0000u, u1 << 16, u1 & 0xffff0000u));
}
float w_at(uint rowb, uint k) { return uintBitsToFloat(vkf_u16(rowb + 2u * k) << 16); }
vec4 w_at4(uint rowb, uint k) {
    uint b = rowb + 2u * k;
    return vkf_bf16x2(vkf_u32h(b), vkf_u32h(b + 4u));
}
float w_unit(uint rowb, uint u, out vec4 w[2]) {
    uvec4 q = w_quad(rowb + 16u * u);
    w[0] = vkf_bf16x2(q.x, q.y);
    w[1] = vkf_bf16x2(q.z, q.w);
    return 1.0;
}
#endif
