/* Workgroup reductions. The includer declares the workgroup size as the specialization
 * constant WG (a power of two) before including this file. With subgroups: subgroup
 * reduction, then one partial per subgroup in shared memory; without: a shared-memory tree. */
#ifndef VKF_REDUCE_GLSL
#define VKF_REDUCE_GLSL

shared float vkf_red[WG];

float vkf_wg_sum(float v) {
#if VKF_HAS_SUBGROUP
    v = subgroupAdd(v);
    if (subgroupElect()) vkf_red[gl_SubgroupID] = v;
    barrier();
    float s = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; i++) s += vkf_red[i];
    barrier();
    return s;
#else
    uint t = gl_LocalInvocationIndex;
    vkf_red[t] = v;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (t < s) vkf_red[t] += vkf_red[t + s];
        barrier();
    }
    float r = vkf_red[0];
    barrier();
    return r;
#endif
}

float vkf_wg_max(float v) {
#if VKF_HAS_SUBGROUP
    v = subgroupMax(v);
    if (subgroupElect()) vkf_red[gl_SubgroupID] = v;
    barrier();
    float s = vkf_red[0];
    for (uint i = 1; i < gl_NumSubgroups; i++) s = max(s, vkf_red[i]);
    barrier();
    return s;
#else
    uint t = gl_LocalInvocationIndex;
    vkf_red[t] = v;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (t < s) vkf_red[t] = max(vkf_red[t], vkf_red[t + s]);
        barrier();
    }
    float r = vkf_red[0];
    barrier();
    return r;
#endif
}

#endif
