/* The kernel table generated from vk_kernels.h's lists, and the one function that spells
 * defines. */
#include "backend/vulkan/vk_kernels.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define VKF_VK_NAME_(NAME, field, u) #NAME,
#define VKF_VK_UNSIGNED_(NAME, field, u) u,
#define VKF_VK_COUNT_(NAME, field, u) +1
#define VKF_VK_ROW_K_(ID, name, shader, LIST)                                                      \
    [VKF_VK_K_##                                                                                   \
        ID] = {shader, 0 LIST(VKF_VK_COUNT_), {LIST(VKF_VK_NAME_)}, {LIST(VKF_VK_UNSIGNED_)}},
#define VKF_VK_ROW_P_(ID, shader) [VKF_VK_K_##ID] = {shader, 0, {0}, {0}},
const vkf_vk_kernel vkf_vk_kernels[VKF_VK_K_COUNT] = {VKF_VK_KERNELS(VKF_VK_ROW_K_, VKF_VK_ROW_P_)};

/* every variant is an array of int32_t, one per define in the list's order */
#define VKF_VK_CHECK_(ID, name, shader, LIST)                                                      \
    _Static_assert(sizeof(vkf_vk_##name##_v) == sizeof(int32_t) * (0 LIST(VKF_VK_COUNT_)),         \
                   #name " variant is not one int32_t per define");                                \
    _Static_assert(0 LIST(VKF_VK_COUNT_) <= VKF_VK_MAX_DEFINES, #name " has too many defines");
#define VKF_VK_NOCHECK_(ID, shader)
VKF_VK_KERNELS(VKF_VK_CHECK_, VKF_VK_NOCHECK_)

vkf_vk_kplan vkf_vk_kplan_of(vkf_vk_kernel_id id) {
    vkf_vk_kplan k;
    memset(&k, 0, sizeof k);
    k.id = id;
    return k;
}

/* "A=1;B=2u" from names, their values and whether each is an unsigned literal */
static int vkf_vk_spell(const char *const *names, const uint8_t *u, const int32_t *v, int count,
                        char *out, size_t n) {
    int len = 0;
    if (n) out[0] = 0;
    for (int i = 0; i < count; i++) {
        size_t at = (size_t)len < n ? (size_t)len : n;
        len += u[i] ? snprintf(out + at, n - at, "%s%s=%uu", i ? ";" : "", names[i], (unsigned)v[i])
                    : snprintf(out + at, n - at, "%s%s=%d", i ? ";" : "", names[i], (int)v[i]);
    }
    return len;
}

int vkf_vk_defines(const vkf_vk_kplan *k, char *out, size_t n) {
    const vkf_vk_kernel *d = &vkf_vk_kernels[k->id];
    return vkf_vk_spell(d->names, d->unsigned_lit, (const int32_t *)&k->v, d->n_defines, out, n);
}

int vkf_vk_device_defines(const vkf_vk_device_v *v, char *out, size_t n) {
    static const char *const names[] = {VKF_VK_D_DEVICE(VKF_VK_NAME_)};
    static const uint8_t u[] = {VKF_VK_D_DEVICE(VKF_VK_UNSIGNED_)};
    _Static_assert(sizeof *v == sizeof names / sizeof *names * sizeof(int32_t),
                   "device variant is not one int32_t per define");
    return vkf_vk_spell(names, u, (const int32_t *)v, (int)(sizeof names / sizeof *names), out, n);
}

/* name occurs in src as a whole word */
static int vkf_vk_has_word(const char *src, const char *name) {
    size_t l = strlen(name);
    for (const char *p = strstr(src, name); p; p = strstr(p + 1, name)) {
        int before = p > src && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = isalnum((unsigned char)p[l]) || p[l] == '_';
        if (!before && !after) return 1;
    }
    return 0;
}

int vkf_vk_defines_used(vkf_vk_kernel_id id, const char *src, const char **missing) {
    const vkf_vk_kernel *d = &vkf_vk_kernels[id];
    for (int i = 0; i < d->n_defines; i++)
        if (!vkf_vk_has_word(src, d->names[i])) {
            *missing = d->names[i];
            return 0;
        }
    return 1;
}
