/* vkf_switches_from_env and vkf_switches_set: the environment, read in one place (docs/DESIGN.md,
 * 'Switches read once'), and the same switches by key. One table maps each variable to its key and
 * field, in vkf_switches (vkformer.h) or in the experiments (switches.h); bench/README.md documents
 * every switch. */
#include "core/switches.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
/* a count as the environment has always been read: a number with K/M/G suffixes (bytes); 0 when
 * it is not a number */
static uint64_t env_u64_text(const char *s) {
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

/* ------------------------------------------------------------------ the table */

typedef enum sw_kind {
    SW_FLAG,    /* int: on when set, non-empty and not "0" (set: "0" or "1") */
    SW_COUNT,   /* an unsigned field: a number, K/M/G suffixes (bytes) */
    SW_STR,     /* char[]: the text */
    SW_COOPMAT, /* int: a flag, 2 for "nv" */
    SW_INT_DOT, /* int: "on" / "1" 1, "plain" 2, "off" / "0" 3 */
    SW_PROFILE, /* vkf_device_profile: "mobile" */
    SW_TIMEOUT, /* int64_t ms: a count; 0 is stored as -1 (the shortest wait) */
    SW_TILE,    /* uint32_t[4]: BMxBNxBKxTT */
} sw_kind;

typedef struct sw_key {
    const char *env; /* its environment variable */
    const char *key; /* its vkf_switches_set key: the field's name */
    sw_kind kind;
    int xp;      /* 1: a field of vkf_switches_xp, 0: of vkf_switches */
    size_t off;  /* the field's offset */
    size_t size; /* and size */
} sw_key;

#define PUB(env, kind, f)                                                                          \
    { env, #f, kind, 0, offsetof(vkf_switches, f), sizeof(((vkf_switches *)0)->f) }
#define XP(env, kind, f)                                                                           \
    { env, #f, kind, 1, offsetof(vkf_switches_xp, f), sizeof(((vkf_switches_xp *)0)->f) }

static const sw_key k_keys[] = {
    PUB("VKF_DEVICE", SW_STR, device),
    PUB("VKF_VALIDATE", SW_FLAG, validate),
    PUB("VKF_CACHE_DIR", SW_STR, cache_dir),
    PUB("VKF_GPU_TIMEOUT_MS", SW_TIMEOUT, gpu_timeout_ms),
    PUB("VKF_PROFILE", SW_FLAG, profile),
    PUB("VKF_DEVICE_PROFILE", SW_PROFILE, device_profile),
    PUB("VKF_MAX_STORAGE_BUFFER_RANGE", SW_COUNT, max_storage_buffer_range),
    PUB("VKF_MAX_ALLOC", SW_COUNT, max_alloc),
    PUB("VKF_MAX_SHARED_MEMORY", SW_COUNT, max_shared_memory),
    PUB("VKF_MAX_DEVICE_MEMORY", SW_COUNT, max_device_memory),
    PUB("LP_NUM_THREADS", SW_COUNT, driver_threads),
    PUB("VKF_NO_FP16", SW_FLAG, no_fp16),
    PUB("VKF_NO_SUBGROUP", SW_FLAG, no_subgroup),
    PUB("VKF_NO_TEXEL", SW_FLAG, no_texel),
    PUB("VKF_NO_VEC4", SW_FLAG, no_vec4),
    PUB("VKF_NO_INT_DOT", SW_FLAG, no_int_dot),
    PUB("VKF_NO_COOPMAT", SW_FLAG, no_coopmat),
    PUB("VKF_NO_FUSE", SW_FLAG, no_fuse),
    PUB("VKF_NO_TUNE", SW_FLAG, no_tune),
    PUB("VKF_NO_IMPORT", SW_FLAG, no_import),
    PUB("VKF_NO_UPLOAD_RING", SW_FLAG, no_upload_ring),
    PUB("VKF_MODELS_DIR", SW_STR, models_dir),
    PUB("VKF_PYPI_URL", SW_STR, pypi_url),
    XP("VKF_NO_TEXEL_MATMUL", SW_FLAG, no_texel_matmul),
    XP("VKF_NO_TEXEL_ATTENTION", SW_FLAG, no_texel_attention),
    XP("VKF_NO_TEXEL_NORM", SW_FLAG, no_texel_norm),
    XP("VKF_NO_TEXEL_SOFTMAX", SW_FLAG, no_texel_softmax),
    XP("VKF_NO_MOE_GROUPED", SW_FLAG, no_moe_grouped),
    XP("VKF_NO_FAST_MATVEC", SW_FLAG, no_fast_matvec),
    XP("VKF_NO_SSBO_MATVEC", SW_FLAG, no_ssbo_matvec),
    XP("VKF_NO_ROWLANE", SW_FLAG, no_rowlane),
    XP("VKF_NO_ALIGN16", SW_FLAG, no_align16),
    XP("VKF_NO_LANES_SMALL", SW_FLAG, no_lanes_small),
    XP("VKF_NO_ROWSEQ", SW_FLAG, no_rowseq),
    XP("VKF_NO_ROWSEQ_CH", SW_FLAG, no_rowseq_ch),
    XP("VKF_NO_RSPAIR", SW_FLAG, no_rspair),
    XP("VKF_NO_RS_PAIRU", SW_FLAG, no_rs_pairu),
    XP("VKF_NO_RAWP", SW_FLAG, no_rawp),
    XP("VKF_NO_RS_BALANCE", SW_FLAG, no_rs_balance),
    XP("VKF_NO_KEYLANES", SW_FLAG, no_keylanes),
    XP("VKF_NO_QLANES", SW_FLAG, no_qlanes),
    XP("VKF_FORCE_STAGING", SW_FLAG, force_staging),
    XP("VKF_GPU_TABLE", SW_FLAG, gpu_table),
    XP("VKF_COOPMAT", SW_COOPMAT, coopmat),
    XP("VKF_COOPMAT_EMU", SW_COUNT, coopmat_emu),
    XP("VKF_ROWSEQ", SW_FLAG, rowseq),
    XP("VKF_ROWSEQ_R", SW_COUNT, rowseq_r),
    XP("VKF_MM_R", SW_COUNT, mm_r),
    XP("VKF_MM_TM", SW_COUNT, mm_tm),
    XP("VKF_MM_WG", SW_COUNT, mm_wg),
    XP("VKF_MM_LANES", SW_COUNT, mm_lanes),
    XP("VKF_MM_TILE", SW_TILE, mm_tile),
    XP("VKF_ATTN_KEYLANES", SW_FLAG, attn_keylanes),
    XP("VKF_ATTN_QR", SW_COUNT, attn_qr),
    XP("VKF_ATTN_SPLIT", SW_COUNT, attn_split),
    XP("VKF_ATTN_WG", SW_COUNT, attn_wg),
    XP("VKF_INT_DOT", SW_INT_DOT, int_dot),
    XP("VKF_SIMULATE_DEVICE_LOST", SW_COUNT, simulate_device_lost),
};
#define N_KEYS (sizeof k_keys / sizeof k_keys[0])

void vkf_switches_xp_get(const vkf_switches *sw, vkf_switches_xp *out) {
    memcpy(out, sw->experiments, sizeof *out);
}

void vkf_switches_xp_put(vkf_switches *sw, const vkf_switches_xp *x) {
    memcpy(sw->experiments, x, sizeof *x);
}

/* ------------------------------------------------------------------ values */

static void put_int(void *dst, size_t size, uint64_t v) {
    if (size == sizeof(uint64_t)) {
        memcpy(dst, &v, sizeof v);
    } else {
        uint32_t w = (uint32_t)v; /* int and uint32_t fields: size checked by the callers */
        memcpy(dst, &w, sizeof w);
    }
}

/* the largest value an unsigned field of size bytes holds */
static uint64_t count_max(size_t size) { return size >= 8 ? UINT64_MAX : (1ull << (8 * size)) - 1; }

/* a count as vkf_switches_set takes it: a whole number (0x for hex), one optional K/M/G suffix */
static int parse_count(const char *s, uint64_t max, uint64_t *out) {
    if (!*s || *s == '-' || *s == '+' || *s == ' ') return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 0);
    if (end == s || errno) return -1;
    int shift = *end == 'k' || *end == 'K'   ? 10
                : *end == 'm' || *end == 'M' ? 20
                : *end == 'g' || *end == 'G' ? 30
                                             : 0;
    if (shift) end++;
    if (*end || v > (max >> shift)) return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* Value v of switch k into the struct at base (vkf_switches or vkf_switches_xp). strict (the
 * setter): 0, or -1 with what the switch takes in err. Not strict (the environment): as the
 * variables have always been read, anything unreadable leaves the default. */
static int sw_parse(const sw_key *k, const char *v, int strict, unsigned char *base, char *err,
                    size_t en) {
    void *dst = base + k->off;
    if (!*v) { /* "": the default */
        memset(dst, 0, k->size);
        return 0;
    }
    switch (k->kind) {
    case SW_FLAG:
    case SW_COOPMAT: {
        int on = strcmp(v, "0") != 0, val = on;
        if (k->kind == SW_COOPMAT && strcmp(v, "nv") == 0) val = 2;
        if (strict && strcmp(v, "0") != 0 && strcmp(v, "1") != 0 && val != 2) {
            snprintf(err, en, "takes 0 or 1%s", k->kind == SW_COOPMAT ? " or nv" : "");
            return -1;
        }
        memcpy(dst, &val, sizeof val);
        return 0;
    }
    case SW_COUNT:
    case SW_TIMEOUT: {
        uint64_t max = k->kind == SW_TIMEOUT ? (uint64_t)INT64_MAX : count_max(k->size), n = 0;
        if (strict && parse_count(v, max, &n) != 0) {
            snprintf(err, en, "takes a whole number from 0 to %llu (K, M or G: times 1024^1..3)",
                     (unsigned long long)max);
            return -1;
        }
        if (!strict) {
            n = env_u64_text(v);
            if (k->kind == SW_COUNT && n > max) n = 0; /* out of the field's range: unset */
        }
        if (k->kind == SW_TIMEOUT) {
            int64_t ms = n ? (int64_t)(n < (uint64_t)INT64_MAX ? n : (uint64_t)INT64_MAX) : -1;
            memcpy(dst, &ms, sizeof ms);
        } else {
            put_int(dst, k->size, n);
        }
        return 0;
    }
    case SW_STR:
        if (strict && strlen(v) >= k->size) {
            snprintf(err, en, "takes at most %zu bytes", k->size - 1);
            return -1;
        }
        snprintf(dst, k->size, "%s", v);
        return 0;
    case SW_INT_DOT: {
        int val = !strcmp(v, "on") || !strcmp(v, "1")    ? 1
                  : !strcmp(v, "plain")                  ? 2
                  : !strcmp(v, "off") || !strcmp(v, "0") ? 3
                                                         : 0;
        if (strict && !val) {
            snprintf(err, en, "takes on (1), plain or off (0)");
            return -1;
        }
        memcpy(dst, &val, sizeof val);
        return 0;
    }
    case SW_PROFILE: {
        vkf_device_profile p =
            strcmp(v, "mobile") == 0 ? VKF_DEVICE_PROFILE_MOBILE : VKF_DEVICE_PROFILE_NONE;
        if (strict && p == VKF_DEVICE_PROFILE_NONE) {
            snprintf(err, en, "takes mobile");
            return -1;
        }
        memcpy(dst, &p, sizeof p);
        return 0;
    }
    case SW_TILE: {
        unsigned t[4];
        int used = -1;
        if (sscanf(v, "%ux%ux%ux%u%n", &t[0], &t[1], &t[2], &t[3], &used) != 4 ||
            (strict && (used < 0 || v[used] || !(v[0] >= '0' && v[0] <= '9')))) {
            if (!strict) return 0; /* checked against the device where it is used */
            snprintf(err, en, "takes BMxBNxBKxTT (e.g. 64x64x16x4)");
            return -1;
        }
        uint32_t u[4] = {t[0], t[1], t[2], t[3]};
        memcpy(dst, u, sizeof u);
        return 0;
    }
    }
    return 0;
}

/* ------------------------------------------------------------------ the API */

void vkf_switches_from_env(vkf_switches *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    vkf_switches_xp xp;
    memset(&xp, 0, sizeof xp);
    for (size_t i = 0; i < N_KEYS; i++) {
        const char *v = getenv(k_keys[i].env);
        if (v)
            sw_parse(&k_keys[i], v, 0, k_keys[i].xp ? (unsigned char *)&xp : (unsigned char *)out,
                     NULL, 0);
    }
    vkf_switches_xp_put(out, &xp);
}

vkf_status vkf_switches_set(vkf_switches *sw, const char *key, const char *value) {
    if (!sw || !key || !value)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vkf_switches_set: %s is NULL",
                         !sw    ? "sw"
                         : !key ? "key"
                                : "value");
    const sw_key *k = NULL;
    for (size_t i = 0; i < N_KEYS && !k; i++)
        if (strcmp(k_keys[i].key, key) == 0) k = &k_keys[i];
    if (!k) {
        char keys[1536];
        size_t n = 0;
        keys[0] = 0;
        for (size_t i = 0; i < N_KEYS && n < sizeof keys; i++)
            n += (size_t)snprintf(keys + n, sizeof keys - n, "%s%s", i ? ", " : "", k_keys[i].key);
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "vkf_switches_set: unknown switch \"%s\" (a key is the name of its "
                         "environment variable in lower case without VKF_); the keys: %s",
                         key, keys);
    }
    vkf_switches_xp xp;
    vkf_switches_xp_get(sw, &xp);
    vkf_switches tmp = *sw;
    char why[128];
    if (sw_parse(k, value, 1, k->xp ? (unsigned char *)&xp : (unsigned char *)&tmp, why,
                 sizeof why) != 0)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "vkf_switches_set: switch %s (%s) %s, not \"%s\"", key, k->env, why,
                         value);
    if (k->xp)
        vkf_switches_xp_put(sw, &xp);
    else
        *sw = tmp;
    return VKF_OK;
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
