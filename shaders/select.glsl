/* Workgroup arg-selection for argmax and topk: an element (v, i) ranks before (w, j) when
 * v > w, or v == w and i < j (ties: lowest index first, as the CPU reference). The includer
 * declares WG (a power of two) first. */
#ifndef VKF_SELECT_GLSL
#define VKF_SELECT_GLSL

shared float sel_v[WG];
shared uint sel_i[WG];

bool vkf_before(float v, uint i, float w, uint j) { return v > w || (v == w && i < j); }

/* The best (value, index) of the workgroup; every invocation gets it. Candidates with index
 * 0xffffffff are empty. */
void vkf_wg_best(inout float v, inout uint i) {
    uint t = gl_LocalInvocationIndex;
    sel_v[t] = v;
    sel_i[t] = i;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s && sel_i[t + s] != 0xffffffffu &&
            (sel_i[t] == 0xffffffffu || vkf_before(sel_v[t + s], sel_i[t + s], sel_v[t], sel_i[t]))) {
            sel_v[t] = sel_v[t + s];
            sel_i[t] = sel_i[t + s];
        }
        barrier();
    }
    v = sel_v[0];
    i = sel_i[0];
    barrier();
}

#endif
