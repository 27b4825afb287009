/* F32 weights (see dtypes.glsl for the interface) */
#if WTYPE == VKF_W_F32
#define W_UNIT 4u
float w_at(uint rowb, uint k) { return uintBitsToFloat(w_word(rowb + 4u * k)); }
vec4 w_at4(uint rowb, uint k) { return uintBitsToFloat(w_quad2(rowb + 4u * k)); }
float w_unit(uint rowb, uint u, out vec4 w[1]) {
    w[0] = uintBitsToFloat(w_quad(rowb + 16u * u));
    return 1.0;
}
#endif
