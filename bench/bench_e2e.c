/* End-to-end benchmark with llama-bench's flags and fields, through the public API only
 * (vkf_context_create, vkf_model_load, vkf_session_*):
 *
 *   pp N: one vkf_session_eval_last of N prompt tokens (logits of the last position only),
 *         tokens/s = N / time;
 *   tg N: N single-token vkf_session_eval_last calls, each reading back the logits (as a
 *         generation loop must), tokens/s = N / time.
 *
 * Both start after D tokens of context (--depth, default 0) that are evaluated untimed after a
 * session reset. Every test runs once untimed (warm-up: pipelines, graph recording) and then
 * -r times; the report gives the mean and sample standard deviation of the per-repetition
 * tokens/s, like llama-bench's avg_ts / stddev_ts. Prompt tokens are pseudo-random ids drawn
 * from a fixed seed (the speed does not depend on them; llama-bench does the same).
 *
 * --profile (Vulkan only) adds the device time per op from timestamps around each dispatch;
 * that part reads the backend behind the context (runtime/context.h), nothing else does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend/vulkan/vk_backend.h"
#include "bench.h"
#include "core/error.h"
#include "frontend/args.h"
#include "runtime/context.h"
#include "vkformer.h"

#define VKF_BENCH_MAX_LIST 16
#define VKF_BENCH_MAX_MODELS 8

typedef struct vkf_bench_result {
    char model[512];     /* file as given */
    char model_type[96]; /* "llama F32" */
    double model_size;   /* bytes of weights on the backend */
    double model_n_params;
    char backend[16]; /* "Vulkan" or "CPU" */
    char device[256];
    char driver[256];
    char wtype[16];
    int n_prompt, n_gen, n_depth;
    int reps;
    double samples_ns[64];
    double samples_ts[64];
    double avg_ns, stddev_ns, avg_ts, stddev_ts;
    double cpu_ms_per_token; /* process CPU time per token (mean over the repetitions) */
    char test_time[32];
} vkf_bench_result;

typedef struct vkf_bench_opts {
    const char *models[VKF_BENCH_MAX_MODELS];
    int n_models;
    char *model_lists[VKF_BENCH_MAX_MODELS]; /* the -m values the models point into (freed) */
    int n_model_lists;
    int pp[VKF_BENCH_MAX_LIST], n_pp;
    int tg[VKF_BENCH_MAX_LIST], n_tg;
    int depth[VKF_BENCH_MAX_LIST], n_depth;
    int reps;
    int fmt;
    vkf_backend_kind backends[4];
    int n_backends;
    const char *device;
    vkf_context_params split; /* -ts / -sm / -mg (the layer split over -dev A,B,...) */
    int profile;
    int warmup;
    int quiet;                /* no progress lines on stderr */
    int no_mmap;              /* vkf_model_params.no_mmap */
    int32_t cache_k, cache_v; /* vkf_cache_type (-ctk / -ctv; --cache-type both) */
} vkf_bench_opts;

/* ---------------------------------------------------------------- one test */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static int32_t vkf_bench_rand_token(int32_t n_vocab) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (int32_t)(g_rng % (uint64_t)n_vocab);
}

/* Fills the session with `depth` untimed tokens after a reset. */
static vkf_status vkf_bench_fill_depth(vkf_session *s, const int32_t *toks, int depth,
                                       float *logits) {
    vkf_session_reset(s);
    if (depth <= 0) return VKF_OK;
    return vkf_session_eval_last(s, toks, depth, logits);
}

/* One timed run of pp N or tg N; *ms gets its wall time. With prof (a Vulkan backend), the timed
 * part is profiled and only it: profiling is off while the context is filled to the depth, and
 * turning it on clears the previous repetition's times (the caller prints and turns it off). */
static vkf_status vkf_bench_run_once(vkf_session *s, const int32_t *toks, int depth, int n_prompt,
                                     int n_gen, int32_t n_vocab, float *logits, double *ms,
                                     double *cpu, vkf_backend *prof) {
    if (prof) VKF_TRY(vkf_backend_vulkan_profile(prof, 0));
    VKF_TRY(vkf_bench_fill_depth(s, toks, depth, logits));
    if (prof) VKF_TRY(vkf_backend_vulkan_profile(prof, 1));
    const int32_t *t = toks + depth;
    double c0 = vkf_bench_cpu_ms();
    double t0 = vkf_bench_now_ms();
    if (n_prompt > 0) {
        VKF_TRY(vkf_session_eval_last(s, t, n_prompt, logits));
    } else {
        int32_t tok = t[0];
        for (int i = 0; i < n_gen; i++) {
            VKF_TRY(vkf_session_eval_last(s, &tok, 1, logits));
            tok = vkf_bench_rand_token(n_vocab);
        }
    }
    *ms = vkf_bench_now_ms() - t0;
    if (cpu) *cpu = vkf_bench_cpu_ms() - c0;
    return VKF_OK;
}

/* ---------------------------------------------------------------- output */

static const char *vkf_bench_test_name(const vkf_bench_result *r, char *buf, size_t n) {
    if (r->n_prompt > 0)
        snprintf(buf, n, "pp%d", r->n_prompt);
    else
        snprintf(buf, n, "tg%d", r->n_gen);
    if (r->n_depth > 0) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, " @ d%d", r->n_depth);
    }
    return buf;
}

static void vkf_bench_print_md(const vkf_bench_result *res, int n) {
    printf("| model | size | params | backend | device | test | t/s |\n");
    printf("| ----- | ---: | -----: | ------- | ------ | ---: | --: |\n");
    for (int i = 0; i < n; i++) {
        const vkf_bench_result *r = &res[i];
        char sz[32], np[32], tn[48];
        vkf_bench_fmt_bytes(r->model_size, sz, sizeof sz);
        vkf_bench_fmt_count(r->model_n_params, np, sizeof np);
        printf("| %s | %s | %s | %s | %s | %s | %.2f ± %.2f |\n", r->model_type, sz, np, r->backend,
               r->device, vkf_bench_test_name(r, tn, sizeof tn), r->avg_ts, r->stddev_ts);
    }
}

static void vkf_bench_print_csv(const vkf_bench_result *res, int n) {
    printf("model,model_type,model_size,model_n_params,backend,device,driver,weight_type,n_prompt,"
           "n_gen,n_depth,"
           "test_time,avg_ns,stddev_ns,avg_ts,stddev_ts\n");
    for (int i = 0; i < n; i++) {
        const vkf_bench_result *r = &res[i];
        printf("\"%s\",\"%s\",%.0f,%.0f,\"%s\",\"%s\",\"%s\",%s,%d,%d,%d,%s,%.0f,%.0f,%.6f,%.6f\n",
               r->model, r->model_type, r->model_size, r->model_n_params, r->backend, r->device,
               r->driver, r->wtype, r->n_prompt, r->n_gen, r->n_depth, r->test_time, r->avg_ns,
               r->stddev_ns, r->avg_ts, r->stddev_ts);
    }
}

static void vkf_bench_print_json(const vkf_bench_result *res, int n) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        const vkf_bench_result *r = &res[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "model", r->model);
        cJSON_AddStringToObject(o, "model_type", r->model_type);
        cJSON_AddNumberToObject(o, "model_size", r->model_size);
        cJSON_AddNumberToObject(o, "model_n_params", r->model_n_params);
        cJSON_AddStringToObject(o, "backend", r->backend);
        cJSON_AddStringToObject(o, "device", r->device);
        cJSON_AddStringToObject(o, "driver", r->driver);
        cJSON_AddStringToObject(o, "weight_type", r->wtype);
        cJSON_AddNumberToObject(o, "n_prompt", r->n_prompt);
        cJSON_AddNumberToObject(o, "n_gen", r->n_gen);
        cJSON_AddNumberToObject(o, "n_depth", r->n_depth);
        cJSON_AddStringToObject(o, "test_time", r->test_time);
        cJSON_AddNumberToObject(o, "avg_ns", r->avg_ns);
        cJSON_AddNumberToObject(o, "stddev_ns", r->stddev_ns);
        cJSON_AddNumberToObject(o, "avg_ts", r->avg_ts);
        cJSON_AddNumberToObject(o, "stddev_ts", r->stddev_ts);
        cJSON_AddNumberToObject(o, "cpu_ms_per_token", r->cpu_ms_per_token);
        cJSON_AddItemToObject(o, "samples_ns", cJSON_CreateDoubleArray(r->samples_ns, r->reps));
        cJSON_AddItemToObject(o, "samples_ts", cJSON_CreateDoubleArray(r->samples_ts, r->reps));
        cJSON_AddItemToArray(arr, o);
    }
    char *txt = cJSON_Print(arr);
    if (txt) printf("%s\n", txt);
    free(txt);
    cJSON_Delete(arr);
}

/* ---------------------------------------------------------------- profile */

/* The profile of the last repetition (wall_ms: its wall time, tokens its tokens): per token,
 * the dispatches and hazard barriers of the command buffers submitted, the device's busy time
 * (first to last timestamp of each submission) against the wall time, then per op. */
static void vkf_bench_profile_print(vkf_backend *be, const char *what, int tokens, double wall_ms) {
    vkf_vk_stats st = vkf_backend_vulkan_stats(be);
    double total = 0;
    uint64_t nd = 0;
    for (int o = 0; o < VKF_OP_COUNT; o++) {
        total += st.prof_ms[o];
        nd += st.prof_dispatches[o];
    }
    if (st.prof_submits == 0 || tokens <= 0) return;
    double nt = (double)tokens;
    fprintf(stderr,
            "profile %s per token: %.1f dispatches, %.1f barriers, %.3f ms GPU-busy of %.3f ms "
            "wall (%.0f%%)\n",
            what, (double)st.prof_rec_dispatches / nt, (double)st.prof_rec_barriers / nt,
            st.prof_busy_ms / nt, wall_ms / nt, wall_ms > 0 ? 100 * st.prof_busy_ms / wall_ms : 0);
    fprintf(stderr,
            "profile %s: %llu submissions, %.3f ms wall per submission, %.3f ms of dispatches, "
            "%.1f dispatches per submission\n",
            what, (unsigned long long)st.prof_submits, st.prof_submit_ms / (double)st.prof_submits,
            total / (double)st.prof_submits, (double)nd / (double)st.prof_submits);
    for (int o = 0; o < VKF_OP_COUNT; o++) {
        if (!st.prof_dispatches[o]) continue;
        fprintf(stderr,
                "  %-12s %6.1f%%  %8.3f ms/submission  %6.1f dispatches  %7.1f us/dispatch\n",
                vkf_op_name((vkf_op)o), total > 0 ? 100 * st.prof_ms[o] / total : 0,
                st.prof_ms[o] / (double)st.prof_submits,
                (double)st.prof_dispatches[o] / (double)st.prof_submits,
                1e3 * st.prof_ms[o] / (double)st.prof_dispatches[o]);
    }
}

/* ---------------------------------------------------------------- driver */

/* llama.cpp's name of a general.file_type value (llama_ftype_name: what llama-bench's
 * model_type column says), or NULL for a value it has no name for */
static const char *vkf_bench_ftype_name(int ft) {
    static const struct {
        int ft;
        const char *name;
    } k[] = {
        {0, "all F32"},
        {1, "F16"},
        {2, "Q4_0"},
        {3, "Q4_1"},
        {7, "Q8_0"},
        {8, "Q5_0"},
        {9, "Q5_1"},
        {10, "Q2_K - Medium"},
        {11, "Q3_K - Small"},
        {12, "Q3_K - Medium"},
        {13, "Q3_K - Large"},
        {14, "Q4_K - Small"},
        {15, "Q4_K - Medium"},
        {16, "Q5_K - Small"},
        {17, "Q5_K - Medium"},
        {18, "Q6_K"},
        {19, "IQ2_XXS - 2.0625 bpw"},
        {20, "IQ2_XS - 2.3125 bpw"},
        {21, "Q2_K - Small"},
        {22, "IQ3_XS - 3.3 bpw"},
        {23, "IQ3_XXS - 3.0625 bpw"},
        {24, "IQ1_S - 1.5625 bpw"},
        {25, "IQ4_NL - 4.5 bpw"},
        {26, "IQ3_S - 3.4375 bpw"},
        {27, "IQ3_S mix - 3.66 bpw"},
        {28, "IQ2_S - 2.5 bpw"},
        {29, "IQ2_M - 2.7 bpw"},
        {30, "IQ4_XS - 4.25 bpw"},
        {31, "IQ1_M - 1.75 bpw"},
        {32, "BF16"},
        {36, "TQ1_0 - 1.69 bpw ternary"},
        {37, "TQ2_0 - 2.06 bpw ternary"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (k[i].ft == ft) return k[i].name;
    return NULL;
}

/* The file's type as llama-bench labels it: general.file_type when the GGUF has it (a Q4_K_M
 * file keeps some matrices in Q5_0 or Q6_K, so its matrices' type would mislabel it); NULL for a
 * model directory, a GGUF without the key, or a value llama.cpp has no name for. */
static const char *vkf_bench_file_type(const char *path) {
    char *js = NULL;
    if (vkf_gguf_describe(path, 1, &js) != VKF_OK) return NULL;
    cJSON *j = cJSON_Parse(js);
    free(js);
    const cJSON *ft = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(j, "metadata"), "general.file_type");
    const char *name = cJSON_IsNumber(ft) ? vkf_bench_ftype_name(ft->valueint) : NULL;
    cJSON_Delete(j);
    return name;
}

static const char *vkf_bench_backend_label(vkf_backend_kind k) {
    return k == VKF_BACKEND_CPU ? "CPU" : "Vulkan";
}

/* ---------------------------------------------------------------- options (frontend/args.h) */

typedef struct vkf_bench_list {
    int *v, *n;
} vkf_bench_list;

/* "64,512": each in [0, 2^24] */
static int vkf_bench_opt_list(void *dst, const char *value, char *err, size_t n) {
    vkf_bench_list *l = dst;
    int k = vkf_bench_parse_ints(value, l->v, VKF_BENCH_MAX_LIST);
    if (k < 1) {
        snprintf(err, n, "expected a comma list of up to %d integers in [0, 16777216], got '%s'",
                 VKF_BENCH_MAX_LIST, value);
        return -1;
    }
    *l->n = k;
    return 0;
}

static int vkf_bench_opt_models(void *dst, const char *value, char *err, size_t n) {
    vkf_bench_opts *o = dst;
    if (o->n_model_lists == VKF_BENCH_MAX_MODELS) {
        snprintf(err, n, "at most %d models", VKF_BENCH_MAX_MODELS);
        return -1;
    }
    char *dup = strdup(value); /* the list points into it: freed by vkf_bench_opts_free */
    if (!dup) {
        snprintf(err, n, "out of memory");
        return -1;
    }
    o->model_lists[o->n_model_lists++] = dup;
    for (char *tok = strtok(dup, ","); tok; tok = strtok(NULL, ",")) {
        if (o->n_models == VKF_BENCH_MAX_MODELS) {
            snprintf(err, n, "at most %d models", VKF_BENCH_MAX_MODELS);
            return -1;
        }
        o->models[o->n_models++] = tok;
    }
    return 0;
}

static int vkf_bench_opt_fmt(void *dst, const char *value, char *err, size_t n) {
    int f = vkf_bench_parse_fmt(value);
    if (f < 0) {
        snprintf(err, n, "expected md, json or csv, got '%s'", value);
        return -1;
    }
    *(int *)dst = f;
    return 0;
}

static int vkf_bench_opt_backends(void *dst, const char *value, char *err, size_t n) {
    vkf_bench_opts *o = dst;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", value);
    o->n_backends = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (o->n_backends == 4) break;
        if (!strcmp(tok, "cpu"))
            o->backends[o->n_backends++] = VKF_BACKEND_CPU;
        else if (!strcmp(tok, "vulkan") || !strcmp(tok, "vk"))
            o->backends[o->n_backends++] = VKF_BACKEND_VULKAN;
        else {
            snprintf(err, n, "expected cpu and/or vulkan, got '%s'", tok);
            return -1;
        }
    }
    if (!o->n_backends) {
        snprintf(err, n, "expected cpu and/or vulkan");
        return -1;
    }
    return 0;
}

/* --cache-type: K and V in one type */
static int vkf_bench_opt_cache(void *dst, const char *value, char *err, size_t n) {
    vkf_bench_opts *o = dst;
    if (vkf_parse_cache_type(&o->cache_k, value, err, n) < 0) return -1;
    o->cache_v = o->cache_k;
    return 0;
}

static int vkf_bench_opt_cpu(void *dst, const char *value, char *err, size_t n) {
    (void)value, (void)err, (void)n;
    vkf_bench_opts *o = dst;
    o->backends[0] = VKF_BACKEND_CPU;
    o->n_backends = 1;
    return 0;
}

/* -ngl N[,N...] (llama-bench's habit): a model runs whole on one backend, so 0 is the CPU
 * backend and any other count the device; a list with both runs both, as --backends cpu,vulkan */
static int vkf_bench_opt_ngl(void *dst, const char *value, char *err, size_t n) {
    vkf_bench_opts *o = dst;
    int list[VKF_BENCH_MAX_LIST], n_list = 0;
    vkf_bench_list l = {list, &n_list};
    if (vkf_bench_opt_list(&l, value, err, n)) return -1;
    int cpu = 0, dev = 0;
    for (int i = 0; i < n_list; i++)
        list[i] == 0 ? (cpu = 1) : (dev = 1);
    o->n_backends = 0;
    if (cpu) o->backends[o->n_backends++] = VKF_BACKEND_CPU;
    if (dev) o->backends[o->n_backends++] = VKF_BACKEND_AUTO; /* as generate: the device, if any */
    return 0;
}

static int vkf_bench_parse(int argc, char **argv, vkf_bench_opts *o) {
    memset(o, 0, sizeof *o);
    o->pp[0] = 512;
    o->n_pp = 1;
    o->tg[0] = 128;
    o->n_tg = 1;
    o->n_depth = 1;
    o->reps = 5;
    o->warmup = 1;
    int no_warmup = 0, threads = 1, threads_given = 0;
    vkf_bench_list pp = {o->pp, &o->n_pp}, tg = {o->tg, &o->n_tg}, depth = {o->depth, &o->n_depth};
    vkf_arg args[] = {
        {"-m|--model", VKF_ARG_CALL, o, .metavar = "FILE", .call = vkf_bench_opt_models,
         .required = 1, .help = "model (repeatable, or a comma list)"},
        {"-p|--n-prompt", VKF_ARG_CALL, &pp, .metavar = "N,..", .call = vkf_bench_opt_list,
         .help = "prompt lengths (default 512; 0 = none)"},
        {"-n|--n-gen", VKF_ARG_CALL, &tg, .metavar = "N,..", .call = vkf_bench_opt_list,
         .help = "generation lengths (default 128; 0 = none)"},
        {"-d|--depth|--n-depth", VKF_ARG_CALL, &depth, .metavar = "D,..",
         .call = vkf_bench_opt_list,
         .help = "context already in the cache before the test (default 0)"},
        {"-ctk|--cache-type-k", VKF_ARG_CALL, &o->cache_k, .metavar = "T",
         .call = vkf_parse_cache_type, .help = VKF_CACHE_TYPE_HELP},
        {"-ctv|--cache-type-v", VKF_ARG_CALL, &o->cache_v, .metavar = "T",
         .call = vkf_parse_cache_type, .help = "the same for the V cache"},
        {"--cache-type", VKF_ARG_CALL, o, .metavar = "T", .call = vkf_bench_opt_cache,
         .help = "sets -ctk and -ctv together"},
        {"-r|--repetitions", VKF_ARG_INT, &o->reps, .min = 1, .max = 64, .metavar = "N",
         .help = "timed runs per test (default 5)"},
        {"-o|--output", VKF_ARG_CALL, &o->fmt, .metavar = "FMT", .call = vkf_bench_opt_fmt,
         .help = "md (default), json or csv"},
        {"--backends|--backend", VKF_ARG_CALL, o, .metavar = "LIST", .call = vkf_bench_opt_backends,
         .help = "cpu,vulkan (default: vulkan if a device is present, else cpu)"},
        {"-dev|--device", VKF_ARG_STR, &o->device, .metavar = "N|NAME", .help = "Vulkan device"},
        {"--cpu", VKF_ARG_CALL0, o, .call = vkf_bench_opt_cpu, .help = "the CPU backend only"},
        {"--no-warmup", VKF_ARG_SET, &no_warmup, .help = "skip the untimed warm-up run"},
        {"--no-mmap", VKF_ARG_SET, &o->no_mmap,
         .help = "read the model file into memory instead of mapping it"},
        {"--profile", VKF_ARG_SET, &o->profile,
         .help = "per-op device time (Vulkan timestamps) on stderr"},
        {"-q|--quiet", VKF_ARG_SET, &o->quiet, .help = "no progress lines on stderr"},
        {"-ngl|--n-gpu-layers", VKF_ARG_CALL, o, .metavar = "N,..", .call = vkf_bench_opt_ngl,
         .help = "a model runs whole on one backend: 0 = the CPU backend, any other = the "
                 "device (both in a list: 0,99)"},
        {"-fa|--flash-attn", VKF_ARG_CALL, o, .metavar = "[on|1]", .optional_value = 1,
         .call = vkf_args_flash_attn, .help = "accepted: attention is always one fused kernel"},
        {"-t|--threads", VKF_ARG_INT, &threads, .min = 1, .max = 1024, .metavar = "N",
         .seen = &threads_given,
         .help = "CPU threads: the CPU backend runs one thread; a Vulkan device needs none"},
        VKF_ARGS_SPLIT(&o->split),
        {"-b|--batch-size|-ub|--ubatch-size|-mmp", VKF_ARG_REFUSED, .takes_value = 1,
         .help = "llama-bench sweeps that do not apply: a prompt is one pass"},
        {"-pg", VKF_ARG_REFUSED, .takes_value = 1,
         .help =
             "no combined prompt+generation test: -p N with -d N times generation after an N-token "
             "prompt (-n)"},
        {0}};
    vkf_cmd_spec spec = {
        "bench", "-m MODEL [options] | --kernels | --startup | --plot DIR | --tokenizer",
        "End-to-end prompt / generation speed with llama-bench's flags and output. The other "
        "benchmarks:\n"
        "  vkformer bench --kernels [--quick]          kernel sweeps against measured peaks\n"
        "  vkformer bench --startup -m MODEL [-r N]    cold / warm time to the first token\n"
        "  vkformer bench --plot DIR -m MODEL          SVG charts: t/s vs context, matmul "
        "roofline\n"
        "  vkformer bench --compare [DIR]              vkformer vs llama.cpp, every device "
        "measured\n"
        "  vkformer bench --tokenizer ...              tokenizer throughput\n"
        "(each with --help)",
        args, .epilog = NULL};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc == 0 ? 1 : rc;
    if (no_warmup) o->warmup = 0;
    if (o->n_backends == 0) {
        o->backends[0] = VKF_BACKEND_AUTO;
        o->n_backends = 1;
    }
    int gpu = o->backends[0] != VKF_BACKEND_CPU || o->n_backends > 1;
    if (threads_given && (gpu || threads > 1))
        fprintf(stderr, "note: -t %d: %s\n", threads,
                gpu ? "a Vulkan device needs no CPU threads (-t matters to --cpu only, which runs "
                      "one thread)"
                    : "the CPU backend runs on one thread");
    return 0;
}

/* Runs every test of one model on one backend, appending to res. */
static int vkf_bench_model(const vkf_bench_opts *o, vkf_context *ctx, const char *path,
                           vkf_bench_result *res, int *n_res, int cap) {
    int max_need = 0;
    for (int d = 0; d < o->n_depth; d++) {
        for (int i = 0; i < o->n_pp; i++)
            if (o->depth[d] + o->pp[i] > max_need) max_need = o->depth[d] + o->pp[i];
        for (int i = 0; i < o->n_tg; i++)
            if (o->depth[d] + o->tg[i] > max_need) max_need = o->depth[d] + o->tg[i];
    }
    vkf_model_params mp = {.path = path, .no_mmap = o->no_mmap};
    vkf_model *m = NULL;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        fprintf(stderr, "vkformer bench: loading %s: %s\n", path, vkf_last_error());
        return 1;
    }
    vkf_model_desc md;
    vkf_model_describe(m, &md);
    if (md.encoder_decoder) {
        fprintf(stderr,
                "vkformer bench: %s is an encoder-decoder model; the benchmark runs decoder-only "
                "models\n",
                path);
        vkf_model_free(m);
        return 1;
    }
    if (max_need > md.n_ctx && md.ctx_extendable) {
        /* as llama-bench: the context the tests need, past the training context (RoPE) */
        vkf_model_free(m);
        m = NULL;
        mp.n_ctx = max_need;
        if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
            fprintf(stderr, "vkformer bench: loading %s with a %d-token context: %s\n", path,
                    max_need, vkf_last_error());
            return 1;
        }
        vkf_model_describe(m, &md);
        if (!o->quiet)
            fprintf(stderr,
                    "note: context %d tokens, past the %d the model was trained on (positions are "
                    "computed)\n",
                    md.n_ctx, md.n_ctx_train);
    }
    int n_ctx = max_need < md.n_ctx ? max_need : md.n_ctx;
    if (n_ctx < 1) n_ctx = 1;
    vkf_session_params sp = {
        .n_ctx = n_ctx, .n_batch = 1, .cache_type_k = o->cache_k, .cache_type_v = o->cache_v};
    vkf_session *s = NULL;
    if (vkf_session_create(m, &sp, &s) != VKF_OK) {
        fprintf(stderr, "vkformer bench: session: %s\n", vkf_last_error());
        vkf_model_free(m);
        return 1;
    }
    int32_t *toks = malloc(sizeof *toks * (size_t)(max_need + 1));
    float *logits = malloc(sizeof *logits * (size_t)md.n_vocab);
    if (!toks || !logits) {
        fprintf(stderr, "vkformer bench: out of memory\n");
        free(toks);
        free(logits);
        vkf_session_free(s);
        vkf_model_free(m);
        return 1;
    }
    for (int i = 0; i <= max_need; i++)
        toks[i] = vkf_bench_rand_token(md.n_vocab);

    vkf_backend_kind kind = vkf_context_backend(ctx);
    const char *dev = vkf_context_device_name(ctx);
    char driver[256] = "";
    if (kind == VKF_BACKEND_VULKAN) vkf_bench_driver_of(dev, driver, sizeof driver);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *ftype = vkf_bench_file_type(path);
    if (!o->quiet)
        fprintf(stderr,
                "model %s: %s %s%s%s%s, %d layers, d_model %d, context %d; backend %s; device "
                "%s%s%s\n",
                base, md.architecture, ftype ? ftype : vkf_dtype_name(md.wtype),
                ftype ? " (matrices " : "", ftype ? vkf_dtype_name(md.wtype) : "", ftype ? ")" : "",
                md.n_layer, md.d_model, md.n_ctx, vkf_bench_backend_label(kind), dev,
                driver[0] ? "; driver " : "", driver);

    int rc = 0;
    for (int d = 0; d < o->n_depth && !rc; d++) {
        for (int kindi = 0; kindi < 2 && !rc; kindi++) {
            int nl = kindi == 0 ? o->n_pp : o->n_tg;
            for (int li = 0; li < nl && !rc; li++) {
                int n_prompt = kindi == 0 ? o->pp[li] : 0, n_gen = kindi == 1 ? o->tg[li] : 0;
                if (n_prompt + n_gen == 0) continue;
                int depth = o->depth[d];
                if (depth + n_prompt + n_gen > md.n_ctx) {
                    fprintf(stderr,
                            "vkformer bench: skipping %s%d at depth %d: exceeds the model's "
                            "context of %d\n",
                            n_prompt ? "pp" : "tg", n_prompt ? n_prompt : n_gen, depth, md.n_ctx);
                    continue;
                }
                if (*n_res == cap) break;
                vkf_bench_result *r = &res[(*n_res)];
                memset(r, 0, sizeof *r);
                snprintf(r->model, sizeof r->model, "%s", path);
                snprintf(r->model_type, sizeof r->model_type, "%s %s", md.architecture,
                         ftype ? ftype : vkf_dtype_name(md.wtype));
                r->model_size = (double)md.weight_bytes;
                r->model_n_params = (double)md.n_params;
                snprintf(r->backend, sizeof r->backend, "%s", vkf_bench_backend_label(kind));
                snprintf(r->device, sizeof r->device, "%s", dev);
                snprintf(r->driver, sizeof r->driver, "%s", driver);
                snprintf(r->wtype, sizeof r->wtype, "%s", vkf_dtype_name(md.wtype));
                r->n_prompt = n_prompt;
                r->n_gen = n_gen;
                r->n_depth = depth;
                r->reps = o->reps;
                vkf_bench_iso_time(r->test_time, sizeof r->test_time);
                double ms;
                double cpu = 0, cpu_sum = 0;
                if (o->warmup && vkf_bench_run_once(s, toks, depth, n_prompt, n_gen, md.n_vocab,
                                                    logits, &ms, NULL, NULL) != VKF_OK) {
                    fprintf(stderr, "vkformer bench: %s\n", vkf_last_error());
                    rc = 1;
                    break;
                }
                vkf_backend *prof = o->profile && kind == VKF_BACKEND_VULKAN ? ctx->be : NULL;
                for (int rep = 0; rep < o->reps; rep++) {
                    vkf_status st = vkf_bench_run_once(s, toks, depth, n_prompt, n_gen, md.n_vocab,
                                                       logits, &ms, &cpu, prof);
                    cpu_sum += cpu;
                    if (st != VKF_OK) {
                        fprintf(stderr, "vkformer bench: %s\n", vkf_last_error());
                        rc = 1;
                        break;
                    }
                    r->samples_ns[rep] = ms * 1e6;
                    r->samples_ts[rep] = (n_prompt + n_gen) / (ms * 1e-3);
                }
                if (rc) break;
                r->cpu_ms_per_token = cpu_sum / r->reps / (n_prompt + n_gen);
                vkf_bench_stats(r->samples_ns, r->reps, &r->avg_ns, &r->stddev_ns);
                vkf_bench_stats(r->samples_ts, r->reps, &r->avg_ts, &r->stddev_ts);
                if (prof) { /* the last repetition's profile */
                    char tn[48];
                    vkf_bench_profile_print(ctx->be, vkf_bench_test_name(r, tn, sizeof tn),
                                            n_prompt + n_gen, ms);
                    vkf_backend_vulkan_profile(ctx->be, 0);
                }
                if (!o->quiet) {
                    char tn[48];
                    fprintf(stderr, "  %-12s %10.2f ± %.2f t/s  (%.3f ms CPU per token)\n",
                            vkf_bench_test_name(r, tn, sizeof tn), r->avg_ts, r->stddev_ts,
                            r->cpu_ms_per_token);
                }
                (*n_res)++;
            }
        }
    }
    vkf_memory_info mi;
    if (!o->quiet && vkf_session_memory(s, &mi) == VKF_OK)
        fprintf(stderr,
                "memory: weights %.1f MiB (%.1f MiB used in place from the file), KV cache %.1f "
                "MiB (%llu bytes for %d tokens, K %s, V %s), activations %.1f MiB\n",
                (double)mi.weights / 1048576.0, (double)mi.weights_in_place / 1048576.0,
                (double)mi.kv_cache / 1048576.0, (unsigned long long)mi.kv_cache, n_ctx,
                vkf_dtype_name((vkf_dtype)mi.kv_type_k), vkf_dtype_name((vkf_dtype)mi.kv_type_v),
                (double)mi.activations / 1048576.0);
    free(toks);
    free(logits);
    vkf_session_free(s);
    vkf_model_free(m);
    return rc;
}

static void vkf_bench_opts_free(vkf_bench_opts *o) {
    for (int i = 0; i < o->n_model_lists; i++)
        free(o->model_lists[i]);
    o->n_model_lists = 0;
    o->n_models = 0;
}

int vkf_bench_e2e(int argc, char **argv) {
    vkf_bench_opts o;
    int prc = vkf_bench_parse(argc, argv, &o);
    if (prc) {
        vkf_bench_opts_free(&o);
        return prc == 1 ? 0 : prc;
    }
    int cap = o.n_models * o.n_backends * o.n_depth * (o.n_pp + o.n_tg);
    vkf_bench_result *res = calloc((size_t)(cap ? cap : 1), sizeof *res);
    if (!res) {
        vkf_bench_opts_free(&o);
        fprintf(stderr, "vkformer bench: out of memory\n");
        return 1;
    }
    double load;
    int ncpu;
    vkf_bench_load(&load, &ncpu);
    if (!o.quiet) fprintf(stderr, "machine: %d CPUs online, load average %.2f\n", ncpu, load);
    int n_res = 0, rc = 0;
    for (int b = 0; b < o.n_backends && !rc; b++) {
        vkf_context_params cp = o.split;
        cp.backend = o.backends[b];
        cp.device = o.device;
        vkf_context *ctx = NULL;
        if (vkf_context_create(&cp, &ctx) != VKF_OK) {
            fprintf(stderr, "vkformer bench: backend %s: %s\n",
                    o.backends[b] == VKF_BACKEND_CPU ? "cpu" : "vulkan", vkf_last_error());
            rc = 1;
            break;
        }
        for (int mi = 0; mi < o.n_models && !rc; mi++)
            rc = vkf_bench_model(&o, ctx, o.models[mi], res, &n_res, cap);
        vkf_context_free(ctx);
    }
    if (o.fmt == VKF_BENCH_JSON)
        vkf_bench_print_json(res, n_res);
    else if (o.fmt == VKF_BENCH_CSV)
        vkf_bench_print_csv(res, n_res);
    else
        vkf_bench_print_md(res, n_res);
    vkf_bench_load(&load, &ncpu);
    if (!o.quiet) fprintf(stderr, "load average after the run: %.2f\n", load);
    free(res);
    vkf_bench_opts_free(&o);
    return rc;
}
