/* The switches (vkf_switches in vkformer.h) and the one place that reads the process
 * environment: vkf_switches_from_env, vkf_switches_set and the default cache directory. Every
 * other file takes the switches a context was created with (docs/DESIGN.md, 'Switches read once').
 *
 * The kernel experiments and the finer off switches live here, not in vkformer.h: their struct
 * is kept in vkf_switches.experiments, whose size is fixed, so that adding or retiring one
 * changes neither the public struct nor the ABI. Each is set from its environment variable or
 * by its key (vkf_switches_set: the field's name); bench/README.md documents them. */
#ifndef VKF_CORE_SWITCHES_H
#define VKF_CORE_SWITCHES_H

#include <stddef.h>
#include <stdint.h>

#include "vkformer.h"

typedef struct vkf_switches_xp {
    /* --- off switches of single kernel variants (1 = off) */
    int no_texel_matmul;    /* VKF_NO_TEXEL_MATMUL: matmul_texel.comp */
    int no_texel_attention; /* VKF_NO_TEXEL_ATTENTION: attention_texel.comp */
    int no_texel_norm;      /* VKF_NO_TEXEL_NORM: norm_texel.comp */
    int no_texel_softmax;   /* VKF_NO_TEXEL_SOFTMAX: softmax_texel.comp */
    int no_moe_grouped;     /* VKF_NO_MOE_GROUPED: prefill's tokens grouped by expert
                               (mul_mat_id.comp GROUPED) */
    int no_fast_matvec;     /* VKF_NO_FAST_MATVEC: 16-byte / whole-block loads in matmul.comp */
    int no_ssbo_matvec;     /* VKF_NO_SSBO_MATVEC: GPU decode in matmul_texel.comp reading a and
                               w as storage buffers of 16-byte vectors (texels instead) */
    int no_rowlane;         /* VKF_NO_ROWLANE: one weight row per lane (matmul.comp, CPU
                               drivers) */
    int no_align16;         /* VKF_NO_ALIGN16: texel-aligned block reads (Q4_K, Q5_K) */
    int no_lanes_small;     /* VKF_NO_LANES_SMALL: 32-element units with rows per lane */
    int no_rowseq;          /* VKF_NO_ROWSEQ: rows in sequence, decode on CPU drivers */
    int no_rowseq_ch;       /* VKF_NO_ROWSEQ_CH: chunks of blocks filling whole texels */
    int no_rspair;          /* VKF_NO_RSPAIR: two rows a step */
    int no_rs_pairu;        /* VKF_NO_RS_PAIRU: K-quant unit pairs sharing texels */
    int no_rawp;            /* VKF_NO_RAWP: quants left in place in their bytes */
    int no_rs_balance;      /* VKF_NO_RS_BALANCE: rows per subgroup fitted to the driver's
                               threads (powers of two instead) */
    int no_keylanes;        /* VKF_NO_KEYLANES: decode attention with lanes taking keys */
    int no_qlanes;          /* VKF_NO_QLANES: prefill attention with lanes taking query rows */
    int force_staging;      /* VKF_FORCE_STAGING: transfers through staging on unified memory */
    /* --- the GPUs' table and experiments (bench/README.md) */
    int gpu_table;        /* VKF_GPU_TABLE: a CPU driver takes the GPUs' kernel choices */
    int coopmat;          /* VKF_COOPMAT: cooperative matrices outside the allow-list; 2
                             (VKF_COOPMAT=nv): and VK_NV_ where a device has both NV and KHR */
    uint32_t coopmat_emu; /* VKF_COOPMAT_EMU: 1 (16 x 16 x 16) or 8 (8 x 8 x 8): the
                             cooperative-matrix kernel with its matrix operations emulated */
    int rowseq;           /* VKF_ROWSEQ: rows in sequence on any device */
    uint32_t rowseq_r;    /* VKF_ROWSEQ_R: its rows per subgroup, 2..256 */
    uint32_t mm_r, mm_tm; /* VKF_MM_R, VKF_MM_TM: texel matmul rows per subgroup (or lane),
                             activation rows */
    uint32_t mm_wg;       /* VKF_MM_WG: texel matmul workgroup size */
    uint32_t mm_lanes;    /* VKF_MM_LANES: 1 rows per lane on, 2 off */
    uint32_t mm_tile[4];  /* VKF_MM_TILE=BMxBNxBKxTT: the tiled prefill kernel's tile */
    int attn_keylanes;    /* VKF_ATTN_KEYLANES: GPUs take keylanes up to head_dim 128 */
    uint32_t attn_qr;     /* VKF_ATTN_QR: query rows per lane with qlanes, 1..8 */
    uint32_t attn_split;  /* VKF_ATTN_SPLIT: decode split in 2..64 key parts, then merged */
    uint32_t attn_wg;     /* VKF_ATTN_WG: attention_texel.comp's workgroup size */
    int int_dot;          /* VKF_INT_DOT: 1 ("on") integer dot products for quantized M <= 8
                             wherever valid (OpSDot where the device has it, else plain integer
                             arithmetic), 2 ("plain") the same without OpSDot, 3 ("off") none */
    /* --- tests */
    uint64_t simulate_device_lost; /* VKF_SIMULATE_DEVICE_LOST: the Nth graph submission and
                                      every later one fail as a lost device */
} vkf_switches_xp;

_Static_assert(sizeof(vkf_switches_xp) <= sizeof(((vkf_switches *)0)->experiments),
               "the experiments outgrew vkf_switches.experiments (vkformer.h): retire some, or "
               "grow the area with a new soname (README's ABI policy)");

/* The experiments of sw, copied out of (into) its opaque area. */
void vkf_switches_xp_get(const vkf_switches *sw, vkf_switches_xp *out);
void vkf_switches_xp_put(vkf_switches *sw, const vkf_switches_xp *x);

/* The cache directory of sw: sw->cache_dir, else $XDG_CACHE_HOME/vkformer, else
 * $HOME/.cache/vkformer; "" when none can be named. */
void vkf_switches_cache_dir(const vkf_switches *sw, char *out, size_t n);

/* The directory for temporary files: $TMPDIR, else /tmp. */
const char *vkf_switches_tmpdir(void);

#endif
