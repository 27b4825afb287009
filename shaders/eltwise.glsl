/* The element-wise skeleton shared by scale, binary (add/mul), unary and swiglu: row-strided
 * views, workgroups over (column blocks, rows). The includer defines
 *     float vkf_apply(float a, float b)   (b is 0 without a second operand)
 * and HAS_B when binding 3 carries a second operand (b_stride 0 broadcasts its one row). */
#ifndef VKF_ELTWISE_GLSL
#define VKF_ELTWISE_GLSL

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform PC {
    vkf_pc_eltwise p;
};

#ifndef VEC4
#define VEC4 0
#endif
#if VEC4
/* VEC4=1: cols, offsets and strides are multiples of 4 (host-checked); 16-byte accesses */
#define FT vec4
#define W 4u
#else
#define FT float
#define W 1u
#endif
layout(set = 0, binding = 1) writeonly buffer D { FT d[]; };
layout(set = 0, binding = 2) readonly buffer A { FT a[]; };
#ifdef HAS_B
layout(set = 0, binding = 3) readonly buffer B { FT b[]; };
#endif

float vkf_apply(float x, float y);

void main() {
    /* x covers columns, y rows: no per-element division (lavapipe scalarizes integer division);
     * contiguous operands arrive flattened as one long row */
    uint step = gl_NumWorkGroups.x * WG;
    uint cols = p.cols / W;
    for (uint r = gl_WorkGroupID.y; r < p.rows; r += gl_NumWorkGroups.y) {
        uint ao = (p.a_off + r * p.a_stride) / W, dof = (p.d_off + r * p.d_stride) / W;
#ifdef HAS_B
        uint bo = (p.b_off + r * p.b_stride) / W;
#endif
        for (uint c = gl_GlobalInvocationID.x; c < cols; c += step) {
            FT x = a[ao + c];
#ifdef HAS_B
            FT y = b[bo + c];
#else
            FT y = FT(0.0);
#endif
#if VEC4
            d[dof + c] = vec4(vkf_apply(x.x, y.x), vkf_apply(x.y, y.y), vkf_apply(x.z, y.z), vkf_apply(x.w, y.w));
#else
            d[dof + c] = vkf_apply(x, y);
#endif
        }
    }
}

#endif
