#version 450
/* SCALE: dst = src0 * scale. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "eltwise.glsl"

float vkf_apply(float x, float y) { return x * p.scale; }
