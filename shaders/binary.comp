#version 450
/* ADD (OP_MUL undefined) and MUL (OP_MUL=1): dst = src0 (+|*) src1, src1 one row broadcast
 * when b_stride is 0. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define HAS_B 1
#include "eltwise.glsl"

#ifndef OP_MUL
#define OP_MUL 0
#endif

float vkf_apply(float x, float y) {
#if OP_MUL
    return x * y;
#else
    return x + y;
#endif
}
