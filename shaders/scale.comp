#version 450
/* SCALE: dst = src0 * scale, soft-capped when cap > 0: cap * tanh(src0 * scale / cap) (tanh
 * of a clamped argument, as math.glsl's GELU: tanh(10) is 1 in f32). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "eltwise.glsl"

float vkf_apply(float x, float y) {
    float v = x * p.scale;
    return p.cap > 0.0 ? p.cap * tanh(clamp(v / p.cap, -10.0, 10.0)) : v;
}
