/* The one option parser of every vkformer command (table-driven).
 *
 * A command describes its options as a table and calls vkf_args_parse once, before it loads
 * anything:
 *
 *     int32_t n = 64; float temp = 0.8f; const char *model = NULL; int json = 0;
 *     static const vkf_arg opts[] = {...};   // or non-static when .dst points at locals
 *     vkf_arg opts[] = {
 *         {"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH", .required = 1,
 *          .help = "model directory or .gguf file"},
 *         {"-n|--n-predict", VKF_ARG_INT, &n, .min = 0, .max = 1 << 20, .metavar = "N",
 *          .help = "tokens to generate (default 64)"},
 *         {"--temp", VKF_ARG_FLOAT, &temp, .min = 0, .max = 100, .metavar = "T", .help = "..."},
 *         {"--json", VKF_ARG_SET, &json, .help = "JSON output"},
 *         {"-fa|--flash-attn", VKF_ARG_REFUSED, .help = "attention is always fused here"},
 *         {0}};                                           // the table ends with {0}
 *     vkf_cmd_spec spec = {"generate", "-m PATH [-p PROMPT] [options]", "generate text", opts};
 *     int rc = vkf_args_parse(&spec, argc, argv);
 *     if (rc >= 0) return rc;                             // --help (0) or a usage error (2)
 *
 * What it does for every command, the same way:
 * - "--flag value" and "--flag=value" (long options), "-f value" (short ones);
 * - "-h", "--help" print the usage (stdout, exit 0); `vkformer help CMD` is CMD --help;
 * - a usage error prints ONE line on stderr, "vkformer: CMD: FLAG: reason", and returns 2:
 *   unknown option, missing value (the flag is last, or its value is another option of the
 *   table: "-m needs a value"), a number that is not entirely a number, out of range, NaN;
 *   a required option that is absent; a refused flag ("not supported by vkformer");
 * - numbers are strict: INT takes a base-10 integer only ("2.7", "1e12", "abc" refused) within
 *   [min, max]; FLOAT a finite number within [min, max].
 * Positional arguments: set spec.positional (the name shown in the usage, e.g. "FIXTURE_DIR")
 * and spec.pos_dst; more than one is an error, and pos_required makes one mandatory. Commands
 * with several (quantize IN OUT TYPE) set pos_max and give pos_dst an array.
 * A VKF_ARG_CALL entry runs .call(dst, value, err, errsize) for values that need their own
 * parsing (lists, seeds, enums); it returns 0, or -1 with a reason written to err.
 * .seen (optional) is set to 1 when the option was given. */
#ifndef VKF_FRONTEND_ARGS_H
#define VKF_FRONTEND_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum vkf_arg_kind {
    VKF_ARG_END = 0, /* terminates the table ({0}) */
    VKF_ARG_SET,     /* no value: *(int *)dst = 1 */
    VKF_ARG_CLEAR,   /* no value: *(int *)dst = 0 */
    VKF_ARG_STR,     /* *(const char **)dst = the value (argv's storage) */
    VKF_ARG_INT,     /* *(int32_t *)dst, base-10 integer in [min, max] */
    VKF_ARG_I64,     /* *(int64_t *)dst, base-10 integer in [min, max] */
    VKF_ARG_FLOAT,   /* *(float *)dst, finite, in [min, max] */
    VKF_ARG_CALL,    /* .call(dst, value, err, n): 0 ok, -1 with err set */
    VKF_ARG_CALL0,   /* .call(dst, NULL, err, n), no value (e.g. --cpu) */
    VKF_ARG_REFUSED, /* refused: "FLAG is not supported by vkformer (help)"; takes .takes_value */
    VKF_ARG_PENDING, /* refused: "FLAG is not supported by vkformer yet (help)" */
} vkf_arg_kind;

typedef struct vkf_arg {
    const char *names; /* "-n|--n-predict": every spelling, '|'-separated */
    vkf_arg_kind kind;
    void *dst;
    double min, max;     /* INT, I64, FLOAT: the accepted range (both 0: no limit) */
    const char *metavar; /* the value's name in the usage ("N", "PATH") */
    const char *help;    /* one line; for REFUSED / PENDING the reason */
    int required;        /* 1: absent is a usage error */
    int takes_value;     /* REFUSED / PENDING: whether llama.cpp's flag takes a value */
    int hidden;          /* 1: not listed in --help */
    int (*call)(void *dst, const char *value, char *err, size_t n);
    int *seen;          /* set to 1 when given */
    int optional_value; /* CALL: the value may be left out ("-fa" alone, "-fa on"): the next
                           word is the value unless it begins with '-'; .call gets NULL when
                           there is none */
} vkf_arg;

typedef struct vkf_cmd_spec {
    const char *cmd;         /* "generate" */
    const char *synopsis;    /* after "usage: vkformer generate " */
    const char *description; /* paragraph(s) printed under the usage line; may be NULL */
    const vkf_arg *args;     /* terminated by {0} */
    const char *positional;  /* NULL: no positional arguments; else its name in the usage */
    const char **pos_dst;    /* where the positional goes (an array of pos_max when pos_max > 1) */
    int pos_required;        /* how many positionals are required (0 or 1, or up to pos_max) */
    const char *epilog;      /* printed after the options (examples); may be NULL */
    int pos_max;             /* > 1: up to this many positionals, in order, into pos_dst[] */
    int *pos_count;          /* optional: how many positionals were given */
} vkf_cmd_spec;

/* Parses argv[1..argc) (argv[0] is the command name). Returns -1 on success; otherwise the
 * exit code the command must return at once: 0 after --help, 2 after a usage error (already
 * printed on stderr as one line). */
int vkf_args_parse(const vkf_cmd_spec *spec, int argc, char **argv);
/* Prints the usage of spec to f. */
void vkf_args_usage(const vkf_cmd_spec *spec, FILE *f);
/* Prints "vkformer: CMD: <message>" on stderr and returns 2 (a usage error found after
 * parsing, e.g. two options that exclude each other). */
int vkf_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Strict number parsing for VKF_ARG_CALL functions: 0 ok, -1 (err says why). */
int vkf_args_int(const char *v, int64_t min, int64_t max, int64_t *out, char *err, size_t n);
int vkf_args_double(const char *v, double min, double max, double *out, char *err, size_t n);

/* Entries shared by the commands that open a device: --device/-dev N|NAME, --cpu, --validate.
 * dst is a vkf_context_params. */
int vkf_args_device(void *dst, const char *value, char *err, size_t n);
int vkf_args_cpu(void *dst, const char *value, char *err, size_t n);
int vkf_args_validate(void *dst, const char *value, char *err, size_t n);
/* -ctk / --cache-type-k, -ctv / --cache-type-v T (llama.cpp's names; dst an int32_t
 * vkf_cache_type): f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1. */
int vkf_parse_cache_type(void *dst, const char *value, char *err, size_t n);
#define VKF_CACHE_TYPE_HELP                                                                        \
    "KV cache type of K: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0 or q5_1 (default: f16 "    \
    "on every Vulkan device, lavapipe included; f32 on the CPU backend)"
/* -fa / --flash-attn [on|off|auto] (an optional_value entry; dst unused): alone, on, auto, 1 and
 * true are accepted (attention is always one fused kernel here); off is refused. */
int vkf_args_flash_attn(void *dst, const char *value, char *err, size_t n);
#define VKF_ARG_DEVICE(cp)                                                                         \
    {                                                                                              \
        "-dev|--device", VKF_ARG_CALL, (cp),                                                       \
            .metavar = "N|NAME", .call = vkf_args_device,                                          \
            .help =                                                                                \
                "Vulkan device: index or name substring (default: env VKF_DEVICE, else the first " \
                "discrete GPU); A,B,...: a layer split over those devices (the same one twice: "   \
                "two logical devices)"                                                             \
    }
#define VKF_ARG_CPU(cp)                                                                            \
    {                                                                                              \
        "--cpu", VKF_ARG_CALL0, (cp), .call = vkf_args_cpu,                                        \
                                      .help = "run on the CPU reference backend"                   \
    }
#define VKF_ARG_VALIDATE(cp)                                                                       \
    {                                                                                              \
        "--validate", VKF_ARG_CALL0, (cp),                                                         \
            .call = vkf_args_validate,                                                             \
            .help = "Khronos validation layer on (also env VKF_VALIDATE=1)"                        \
    }
#define VKF_ARGS_BACKEND(cp) VKF_ARG_DEVICE(cp), VKF_ARG_CPU(cp), VKF_ARG_VALIDATE(cp)

/* The layer split's flags (llama.cpp's), into a vkf_context_params: -ts X,Y,... (proportions,
 * one per device of -dev A,B,...), -sm none|layer (row: refused, llama.cpp's tensor
 * parallelism is not implemented), -mg N (the one device of -sm none). */
int vkf_args_tensor_split(void *dst, const char *value, char *err, size_t n);
int vkf_args_split_mode(void *dst, const char *value, char *err, size_t n);
int vkf_args_main_gpu(void *dst, const char *value, char *err, size_t n);
#define VKF_ARGS_SPLIT(cp)                                                                         \
    {"-ts|--tensor-split",                                                                         \
     VKF_ARG_CALL,                                                                                 \
     (cp),                                                                                         \
     .metavar = "X,Y,...",                                                                         \
     .call = vkf_args_tensor_split,                                                                \
     .help = "layer split: proportions of the layers per device of -dev A,B,... (default: each "   \
             "device's free memory)"},                                                             \
        {"-sm|--split-mode",                                                                       \
         VKF_ARG_CALL,                                                                             \
         (cp),                                                                                     \
         .metavar = "none|layer",                                                                  \
         .call = vkf_args_split_mode,                                                              \
         .help = "several devices (-dev A,B,...): layer (default) gives each a block of layers; "  \
                 "none runs on one (-mg); row is not implemented"},                                \
    {                                                                                              \
        "-mg|--main-gpu", VKF_ARG_CALL, (cp),                                                      \
            .metavar = "N", .call = vkf_args_main_gpu,                                             \
            .help =                                                                                \
                "with -sm none: the device of the -dev list to run on (in layer mode the output "  \
                "head is on the last one)"                                                         \
    }

#endif
