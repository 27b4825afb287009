/* vkf_switches_from_env: the environment, read in one place (docs/DESIGN.md, 'Switches read once').
 * A table maps each variable to its field; vkformer.h documents the fields, bench/README.md every
 * switch. */
#include "core/switches.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a flag: set, non-empty and not "0" */
static int env_flag(const char *name) {
    const char *s = getenv(name);
    return s && *s && strcmp(s, "0") != 0;
}

/* an unsigned count (K/M/G suffixes: bytes); 0 when unset or not a number */
static uint64_t env_u64(const char *name) {
    const char *s = getenv(name);
    if (!s || !*s) return 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 0);
    if (end == s) return 0;
    switch (*end) {
    case 'k':
    case 'K': v <<= 10; break;
    case 'm':
    case 'M': v <<= 20; break;
    case 'g':
    case 'G': v <<= 30; break;
    default: break;
    }
    return (uint64_t)v;
}

static void env_str(const char *name, char *out, size_t n) {
    const char *s = getenv(name);
    snprintf(out, n, "%s", s ? s : "");
}

/* The plain switches: flags, counts and byte sizes, one line each. */
#define VKF_SWITCH_FLAGS(X)                                                                        \
    X("VKF_VALIDATE", validate)                                                                    \
    X("VKF_PROFILE", profile)                                                                      \
    X("VKF_NO_FP16", no_fp16)                                                                      \
    X("VKF_NO_SUBGROUP", no_subgroup)                                                              \
    X("VKF_NO_TEXEL", no_texel)                                                                    \
    X("VKF_NO_TEXEL_MATMUL", no_texel_matmul)                                                      \
    X("VKF_NO_TEXEL_ATTENTION", no_texel_attention)                                                \
    X("VKF_NO_TEXEL_NORM", no_texel_norm)                                                          \
    X("VKF_NO_TEXEL_SOFTMAX", no_texel_softmax)                                                    \
    X("VKF_NO_VEC4", no_vec4)                                                                      \
    X("VKF_NO_FAST_MATVEC", no_fast_matvec)                                                        \
    X("VKF_NO_ROWLANE", no_rowlane)                                                                \
    X("VKF_NO_ALIGN16", no_align16)                                                                \
    X("VKF_NO_LANES_SMALL", no_lanes_small)                                                        \
    X("VKF_NO_SSBO_MATVEC", no_ssbo_matvec)                                                        \
    X("VKF_NO_ROWSEQ", no_rowseq)                                                                  \
    X("VKF_NO_ROWSEQ_CH", no_rowseq_ch)                                                            \
    X("VKF_NO_RSPAIR", no_rspair)                                                                  \
    X("VKF_NO_RS_PAIRU", no_rs_pairu)                                                              \
    X("VKF_NO_RAWP", no_rawp)                                                                      \
    X("VKF_NO_RS_BALANCE", no_rs_balance)                                                          \
    X("VKF_NO_KEYLANES", no_keylanes)                                                              \
    X("VKF_NO_QLANES", no_qlanes)                                                                  \
    X("VKF_NO_FUSE", no_fuse)                                                                      \
    X("VKF_NO_TUNE", no_tune)                                                                      \
    X("VKF_NO_COOPMAT", no_coopmat)                                                                \
    X("VKF_NO_IMPORT", no_import)                                                                  \
    X("VKF_NO_UPLOAD_RING", no_upload_ring)                                                        \
    X("VKF_FORCE_STAGING", force_staging)                                                          \
    X("VKF_GPU_TABLE", gpu_table)                                                                  \
    X("VKF_COOPMAT", coopmat)                                                                      \
    X("VKF_ROWSEQ", rowseq)                                                                        \
    X("VKF_ATTN_KEYLANES", attn_keylanes)                                                          \
    X("VKF_NO_INT_DOT", no_int_dot)

#define VKF_SWITCH_COUNTS(X)                                                                       \
    X("VKF_MAX_STORAGE_BUFFER_RANGE", max_storage_buffer_range)                                    \
    X("VKF_MAX_ALLOC", max_alloc)                                                                  \
    X("VKF_MAX_SHARED_MEMORY", max_shared_memory)                                                  \
    X("VKF_MAX_DEVICE_MEMORY", max_device_memory)                                                  \
    X("LP_NUM_THREADS", driver_threads)                                                            \
    X("VKF_COOPMAT_EMU", coopmat_emu)                                                              \
    X("VKF_ROWSEQ_R", rowseq_r)                                                                    \
    X("VKF_MM_R", mm_r)                                                                            \
    X("VKF_MM_TM", mm_tm)                                                                          \
    X("VKF_MM_WG", mm_wg)                                                                          \
    X("VKF_MM_LANES", mm_lanes)                                                                    \
    X("VKF_ATTN_QR", attn_qr)                                                                      \
    X("VKF_ATTN_SPLIT", attn_split)                                                                \
    X("VKF_ATTN_WG", attn_wg)                                                                      \
    X("VKF_SIMULATE_DEVICE_LOST", simulate_device_lost)

void vkf_switches_from_env(vkf_switches *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
#define VKF_READ_FLAG(env, field) out->field = env_flag(env);
#define VKF_READ_COUNT(env, field)                                                                 \
    {                                                                                              \
        uint64_t v_ = env_u64(env);                                                                \
        out->field = (__typeof__(out->field))v_;                                                   \
        if ((uint64_t)out->field != v_) out->field = 0; /* out of the field's range: unset */      \
    }
    VKF_SWITCH_FLAGS(VKF_READ_FLAG)
    VKF_SWITCH_COUNTS(VKF_READ_COUNT)
    const char *cm = getenv("VKF_COOPMAT");
    if (cm && strcmp(cm, "nv") == 0) out->coopmat = 2; /* and the NV spelling where both exist */
#undef VKF_READ_FLAG
#undef VKF_READ_COUNT
    env_str("VKF_DEVICE", out->device, sizeof out->device);
    env_str("VKF_CACHE_DIR", out->cache_dir, sizeof out->cache_dir);
    env_str("VKF_MODELS_DIR", out->models_dir, sizeof out->models_dir);
    env_str("VKF_PYPI_URL", out->pypi_url, sizeof out->pypi_url);
    const char *idot = getenv("VKF_INT_DOT");
    if (idot && (strcmp(idot, "on") == 0 || strcmp(idot, "1") == 0)) out->int_dot = 1;
    if (idot && strcmp(idot, "plain") == 0) out->int_dot = 2;
    if (idot && (strcmp(idot, "off") == 0 || strcmp(idot, "0") == 0)) out->int_dot = 3;
    const char *prof = getenv("VKF_DEVICE_PROFILE");
    if (prof && strcmp(prof, "mobile") == 0) out->device_profile = VKF_DEVICE_PROFILE_MOBILE;
    /* set to 0: the shortest wait there is (tests); unset: the default */
    const char *to = getenv("VKF_GPU_TIMEOUT_MS");
    if (to && *to) {
        uint64_t ms = env_u64("VKF_GPU_TIMEOUT_MS");
        out->gpu_timeout_ms =
            ms ? (int64_t)(ms < (uint64_t)INT64_MAX ? ms : (uint64_t)INT64_MAX) : -1;
    }
    /* VKF_MM_TILE=BMxBNxBKxTT (checked against the device where it is used) */
    const char *tile = getenv("VKF_MM_TILE");
    unsigned t[4];
    if (tile && sscanf(tile, "%ux%ux%ux%u", &t[0], &t[1], &t[2], &t[3]) == 4)
        for (int i = 0; i < 4; i++)
            out->mm_tile[i] = t[i];
}

void vkf_switches_cache_dir(const vkf_switches *sw, char *out, size_t n) {
    const char *d;
    if (sw && sw->cache_dir[0])
        snprintf(out, n, "%s", sw->cache_dir);
    else if ((d = getenv("XDG_CACHE_HOME")) && *d)
        snprintf(out, n, "%s/vkformer", d);
    else if ((d = getenv("HOME")) && *d)
        snprintf(out, n, "%s/.cache/vkformer", d);
    else if (n)
        out[0] = 0;
}

int vkf_switches_models_dir(const vkf_switches *sw, char *out, size_t n) {
    const char *d;
    if (sw && sw->models_dir[0])
        snprintf(out, n, "%s", sw->models_dir);
    else if ((d = getenv("XDG_CACHE_HOME")) && *d)
        snprintf(out, n, "%s/vkformer/models", d);
    else if ((d = getenv("HOME")) && *d)
        snprintf(out, n, "%s/.cache/vkformer/models", d);
    else
        return -1;
    return 0;
}

const char *vkf_switches_tmpdir(void) {
    const char *d = getenv("TMPDIR");
    return d && *d ? d : "/tmp";
}
