/* The options of `generate` and `chat`: one table of llama-cli's flags with llama.cpp's meaning,
 * shared by both commands (llama-cli -cnv takes every flag llama-cli takes). Each command puts
 * the shared entries into its own table, with its own defaults in the help texts; a flag that
 * means nothing in one of them (generate's --no-display-prompt in a chat) is refused there with
 * the reason, never ignored; llama.cpp's flags vkformer does not implement are refused in both.
 *
 *     vkf_gen_opts o;
 *     vkf_gen_defaults(&o, VKF_GEN_CHAT);
 *     vkf_arg args[VKF_GEN_MAX_ARGS + 4];
 *     int n = vkf_gen_args(&o, VKF_GEN_CHAT, args);   // the shared entries, {0}-terminated
 *     ... append the command's own entries at args[n] ...
 *     rc = vkf_args_parse(&spec, argc, argv);
 *     if (rc < 0) rc = vkf_gen_check(&o, "chat");      // cross-flag checks, the seed
 */
#ifndef VKF_CLI_GEN_OPTS_H
#define VKF_CLI_GEN_OPTS_H

#include <stdint.h>

#include "cli/cli_grammar.h"
#include "frontend/args.h"
#include "vkformer.h"

#define VKF_GEN_MAX_REVERSE 8
#define VKF_GEN_MAX_LORA 16
#define VKF_GEN_MAX_ARGS 108 /* entries vkf_gen_args may write, the {0} included */

typedef enum vkf_gen_mode { VKF_GEN_GENERATE, VKF_GEN_CHAT } vkf_gen_mode;

typedef struct vkf_gen_opts {
    vkf_context_params cp;
    vkf_model_params mp;
    vkf_sampler_params sp;
    const char *prompt, *file; /* -p / -f: generate's prompt; chat's first user message */
    const char *sys;           /* -sys: chat's system prompt (generate: conversation mode) */
    int32_t n_predict, n_ctx, n_threads, n_gpu_layers, n_batch, n_ubatch;
    int64_t seed;
    int seed_given, ngl_given, threads_given, escape, no_display_prompt, verbose, list_devices;
    int no_cnv, cnv;
    int show_timings;   /* chat --show-timings: a timing line after every answer (as -v) */
    int verbose_prompt; /* --verbose-prompt: the prompt's tokens on stderr (as -v) */
    /* generate's fill-in-the-middle: --fim-prefix / --fim-suffix, --spm-infill */
    const char *fim_prefix, *fim_suffix;
    int spm_infill;
    int noop; /* llama.cpp's flags accepted as no-ops (--no-warmup, --log-disable) */
    const char *reverse[VKF_GEN_MAX_REVERSE];
    int n_reverse;
    /* speculative decoding: -md FILE (a draft model) or --spec-type ngram (prompt lookup) */
    const char *draft_path;
    int spec_type;                /* vkf_spec_type after vkf_gen_check */
    int32_t draft_max, draft_min; /* --draft-max, --draft-min */
    float draft_p_min;            /* --draft-p-min */
    int32_t ngram_n;              /* --spec-ngram-size-n */
    int spec_given;               /* a --draft-* or --spec-ngram-* flag was given */
    int spec_type_given;          /* --spec-type was given */
    /* LoRA adapters: --lora FILE, --lora-scaled FILE:SCALE (each repeatable, comma lists as
     * llama.cpp), --lora-merge, --lora-init-without-apply; loaded by vkf_gen_lora_open */
    char *lora_path[VKF_GEN_MAX_LORA];
    float lora_scale[VKF_GEN_MAX_LORA];
    int n_lora, lora_merge, lora_no_apply;
    vkf_lora *lora[VKF_GEN_MAX_LORA];
    vkf_cli_grammar gr; /* --grammar, --json-schema, ...: sp.grammar after vkf_gen_check */
    char help_n[128], help_min_p[96]; /* help texts with this command's defaults */
} vkf_gen_opts;

/* llama-cli's defaults (temp 0.8, top-k 40, top-p 0.95, min-p 0.05, seed -1, one thread), the
 * sampling ones also serve's and the Python package's; -n 64 for generate, -n 256 for chat. */
void vkf_gen_defaults(vkf_gen_opts *o, vkf_gen_mode mode);
/* Writes the shared entries to args (room for VKF_GEN_MAX_ARGS) and returns how many, the
 * terminating {0} not counted (it is written: append the command's own entries over it). */
int vkf_gen_args(vkf_gen_opts *o, vkf_gen_mode mode, vkf_arg *args);
/* After vkf_args_parse: -ngl 0 against -dev, -ctk against -ctv (usage errors, exit 2), the seed
 * (random when -s is absent or -1), the grammar flags read into sp.grammar (freed by
 * vkf_gen_free). Returns -1 when the command goes on. */
int vkf_gen_check(vkf_gen_opts *o, const char *cmd);
/* Speculative decoding from the flags: NULL *spec when none was asked for; else the draft model
 * (-md, loaded on ctx with the target's context) and the state. 0, or 1 after an error printed
 * (nothing is left allocated). */
int vkf_gen_spec_open(const vkf_gen_opts *o, const char *cmd, vkf_context *ctx, vkf_model *m,
                      vkf_model **draft, vkf_spec **spec);
/* One stderr line: tokens drafted and accepted, the acceptance rate. */
void vkf_gen_spec_report(const char *what, int64_t drafted, int64_t accepted);
/* --lora / --lora-scaled values (VKF_ARG_CALL; dst: the vkf_gen_opts), for serve's table too. */
int vkf_gen_lora_arg(void *dst, const char *v, char *err, size_t n);
int vkf_gen_lora_scaled_arg(void *dst, const char *v, char *err, size_t n);
/* The LoRA adapters of the flags, loaded for m (and merged into it with --lora-merge). 0, or 1
 * after an error printed. */
int vkf_gen_lora_open(vkf_gen_opts *o, const char *cmd, vkf_model *m);
/* Sets them on s with their scales (none with --lora-merge or --lora-init-without-apply). 0, or
 * 1 after an error printed. */
int vkf_gen_lora_apply(const vkf_gen_opts *o, const char *cmd, vkf_session *s);
/* Frees the adapters: after the sessions, before the model. */
void vkf_gen_lora_free(vkf_gen_opts *o);
/* Frees what vkf_gen_check allocated (the grammar) and the --lora paths. */
void vkf_gen_free(vkf_gen_opts *o);
/* Notes once the backend is known: -t on a Vulkan device (threads matter to --cpu only), -t > 1
 * on the CPU backend (it runs one thread). */
void vkf_gen_notes(const vkf_gen_opts *o, const char *cmd, vkf_context *ctx);
/* -e: \n \t \r \\ \" \' in s, as llama.cpp's --escape; in place. */
void vkf_gen_unescape(char *s);
/* "token" or "tokens" after n: the plural every message uses ("after 1 token"). */
const char *vkf_plural(long n, const char *one, const char *many);

#endif
