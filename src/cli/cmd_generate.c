/* vkformer generate -m PATH -p "prompt" -n 64 [...]: streams the generated text to stdout as it
 * is produced (after the prompt unless --no-display-prompt); everything else (the seed, notices,
 * llama.cpp-style timings) goes to stderr. llama-cli's flags keep llama.cpp's meaning; the ones
 * vkformer does not implement are refused, never ignored. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/vulkan/vk_backend.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/cli_grammar.h"
#include "io/gguf.h"
#include "model/context.h"

#define MAX_REVERSE 8

typedef struct gen_opts {
    vkf_context_params cp;
    vkf_model_params mp;
    vkf_sampler_params sp;
    const char *prompt, *file;
    int32_t n_predict, n_ctx, n_threads, n_gpu_layers, n_batch, n_ubatch;
    int64_t seed;
    int seed_given, ngl_given, escape, no_display_prompt, verbose, list_devices, no_cnv;
    const char *reverse[MAX_REVERSE];
    int n_reverse;
    int cache_k, cache_v; /* vkf_cache_type from -ctk / -ctv (0: the device's default) */
    vkf_cli_grammar gr;   /* --grammar, --json-schema, ... */
} gen_opts;

/* -ctk / -ctv / --cache-type: f16 or f32 */
static int parse_cache_type(void *dst, const char *v, char *err, size_t n) {
    if (strcmp(v, "f16") && strcmp(v, "f32")) {
        snprintf(err, n, "expected f16 or f32 (the KV cache types vkformer has), got '%s'", v);
        return -1;
    }
    *(int *)dst = strcmp(v, "f16") == 0 ? VKF_CACHE_F16 : VKF_CACHE_F32;
    return 0;
}

static int add_reverse(void *dst, const char *v, char *err, size_t n) {
    gen_opts *o = dst;
    if (!*v) {
        snprintf(err, n, "expected a non-empty string");
        return -1;
    }
    if (o->n_reverse == MAX_REVERSE) {
        snprintf(err, n, "at most %d reverse prompts", MAX_REVERSE);
        return -1;
    }
    o->reverse[o->n_reverse++] = v;
    return 0;
}

/* -fa on|off|auto: attention is always one fused kernel (scores never leave the device's
 * shared memory per tile), which is what llama.cpp's flash attention means. */
static int set_fa(void *dst, const char *v, char *err, size_t n) {
    (void)dst;
    if (!strcmp(v, "on") || !strcmp(v, "auto") || !strcmp(v, "1") || !strcmp(v, "true")) return 0;
    if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "false")) {
        snprintf(err, n,
                 "'off' is not supported by vkformer (attention is always the fused kernel)");
        return -1;
    }
    snprintf(err, n, "expected on, off or auto, got '%s'", v);
    return -1;
}

/* ------------------------------------------------------------------ Ctrl-C */

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    if (g_interrupted) _exit(130); /* the second Ctrl-C exits at once */
    g_interrupted = 1;
}

/* ------------------------------------------------------------------ output */

typedef struct gen_out {
    int write_failed;
    const gen_opts *o;
    char tail[512]; /* the end of the generated text, for the reverse prompts */
    size_t tail_len;
    int reverse_hit;
    const char *prompt; /* printed before the first token (nothing on stdout before that) */
    double (*compile_now)(void *ctx); /* pipeline compilation so far, ms */
    void *ctx;
    double compile_first; /* ... when the first token came: the prompt pass's part ends there */
    int have_first;
} gen_out;

static void out_write(gen_out *g, const char *p, size_t len) {
    if (g->write_failed) return;
    if (fwrite(p, 1, len, stdout) != len || fflush(stdout) != 0)
        g->write_failed = errno ? errno : EIO;
}

static int on_token(void *user, int32_t token, const char *piece, size_t len) {
    gen_out *g = user;
    (void)token;
    if (!g->have_first && g->compile_now) {
        g->compile_first = g->compile_now(g->ctx);
        g->have_first = 1;
    }
    vkf_cli_progress_clear();
    if (g->prompt) {
        out_write(g, g->prompt, strlen(g->prompt));
        g->prompt = NULL;
    }
    out_write(g, piece, len);
    /* -r: stop once the generated text ends with a reverse prompt (llama-cli without -i) */
    if (g->o->n_reverse) {
        if (len >= sizeof g->tail) {
            memcpy(g->tail, piece + len - (sizeof g->tail - 1), sizeof g->tail - 1);
            g->tail_len = sizeof g->tail - 1;
        } else {
            if (g->tail_len + len >= sizeof g->tail) {
                size_t drop = g->tail_len + len - (sizeof g->tail - 1);
                memmove(g->tail, g->tail + drop, g->tail_len - drop);
                g->tail_len -= drop;
            }
            memcpy(g->tail + g->tail_len, piece, len);
            g->tail_len += len;
        }
        for (int i = 0; i < g->o->n_reverse; i++) {
            size_t rl = strlen(g->o->reverse[i]);
            if (rl <= g->tail_len &&
                memcmp(g->tail + g->tail_len - rl, g->o->reverse[i], rl) == 0) {
                g->reverse_hit = 1;
                return 1;
            }
        }
    }
    return g->write_failed || g_interrupted;
}

/* -e: \n \t \r \\ \" \' \0 in the prompt, as llama.cpp's --escape. In place. */
static void unescape(char *s) {
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r != '\\' || !r[1]) {
            *w++ = *r;
            continue;
        }
        r++;
        switch (*r) {
        case 'n': *w++ = '\n'; break;
        case 't': *w++ = '\t'; break;
        case 'r': *w++ = '\r'; break;
        case '\\': *w++ = '\\'; break;
        case '"': *w++ = '"'; break;
        case '\'': *w++ = '\''; break;
        default: *w++ = '\\'; *w++ = *r;
        }
    }
    *w = 0;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* glslang + vkCreateComputePipelines time so far on ctx (0 on the CPU). */
static double compile_ms(vkf_context *ctx) {
    if (!vkf_backend_is_vulkan(ctx->be)) return 0;
    vkf_vk_stats st = vkf_backend_vulkan_stats(ctx->be);
    return st.compile_ms + st.pipeline_ms;
}

static double compile_ms_any(void *ctx) { return compile_ms(ctx); }

/* Pipelines are built on first use: those of the prompt pass (compile_prompt) and of the first
 * decoding steps (compile_eval) are reported apart and left out of the speeds. */
static void print_timings(double load_ms, double compile_load, double prompt_ms,
                          double compile_prompt, double compile_eval, int n_prompt,
                          const vkf_generate_stats *st, double total_ms) {
    double p = prompt_ms - compile_prompt; /* the prompt's speed without pipeline compilation */
    double e = st->gen_ms - compile_eval;
    if (p < 0) p = 0;
    if (e < 0) e = 0;
    fprintf(stderr, "\n");
    fprintf(stderr, "timings:        load time = %10.2f ms\n", load_ms);
    if (compile_load + compile_prompt + compile_eval > 0)
        fprintf(stderr,
                "timings: pipeline compile = %10.2f ms (shaders and pipelines; %.2f ms at load, "
                "%.2f ms in the prompt pass, %.2f ms in the first steps; not counted in the "
                "speeds)\n",
                compile_load + compile_prompt + compile_eval, compile_load, compile_prompt,
                compile_eval);
    fprintf(stderr,
            "timings: prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens "
            "per second)\n",
            p, n_prompt, n_prompt ? p / n_prompt : 0.0, p > 0 ? n_prompt / (p / 1e3) : 0.0);
    fprintf(stderr,
            "timings:        eval time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens "
            "per second)\n",
            e, st->n_generated, st->n_generated ? e / st->n_generated : 0.0,
            e > 0 ? st->n_generated / (e / 1e3) : 0.0);
    fprintf(stderr, "timings:       total time = %10.2f ms / %5d tokens\n", total_ms,
            n_prompt + st->n_generated);
}

/* Bytes the KV cache may take on ctx's backend: the largest device-local heap less the weights
 * (Vulkan), the host's available memory (CPU); 0 when unknown. */
static double kv_budget(vkf_context *ctx, const vkf_model_desc *md) {
    if (vkf_backend_is_vulkan(ctx->be)) {
        const vkf_vk_caps *c = vkf_backend_vulkan_caps(ctx->be);
        double best = 0;
        for (uint32_t i = 0; i < c->n_heaps; i++)
            if ((c->heap_flags[i] & 1 /* VK_MEMORY_HEAP_DEVICE_LOCAL_BIT */) &&
                (double)c->heap_size[i] > best)
                best = (double)c->heap_size[i];
        return best > (double)md->weight_bytes ? best - (double)md->weight_bytes : 0;
    }
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0;
}

static int kv_report(vkf_context *ctx, const vkf_model_desc *md, double need, int32_t n_ctx);

/* -c N that the KV cache cannot hold fails here, before the session allocates it. cache_type:
 * -ctk / -ctv (0: the device's default, which the model's info sizes). */
static int kv_fits(vkf_context *ctx, vkf_model *m, const vkf_model_desc *md, int32_t n_ctx,
                   int cache_type) {
    char *info = NULL;
    if (vkf_model_info(m, 1, &info) != VKF_OK) return 1;
    cJSON *j = cJSON_Parse(info);
    free(info);
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(j, "kv_bytes_per_sequence");
    const cJSON *kt = cJSON_GetObjectItemCaseSensitive(j, "kv_cache_type");
    double per_seq = cJSON_IsNumber(kv) ? kv->valuedouble : 0;
    int f16 = cJSON_IsString(kt) && !strcmp(kt->valuestring, "F16");
    cJSON_Delete(j);
    if (per_seq <= 0 || md->n_ctx <= 0) return 1;
    if (f16 && cache_type == VKF_CACHE_F32) per_seq *= 2;
    if (!f16 && cache_type == VKF_CACHE_F16 && !md->encoder_decoder) per_seq /= 2;
    return kv_report(ctx, md, per_seq / md->n_ctx * (n_ctx ? n_ctx : md->n_ctx),
                     n_ctx ? n_ctx : md->n_ctx);
}

/* Before loading: a GGUF's metadata gives the KV cache size at -c N, so a context the backend
 * cannot hold fails before the model (and its position tables) are allocated. */
static int kv_precheck(vkf_context *ctx, const char *path, int32_t n_ctx, int cache_type) {
    vkf_gguf *g;
    if (n_ctx <= 0 || vkf_gguf_open(path, &g) != VKF_OK) return 1; /* else checked after loading */
    const char *arch = vkf_gguf_architecture(g);
    uint32_t n_layer = 0, n_head = 0, n_kv = 0, n_embd = 0;
    char k[160];
    if (arch) { /* a value of the wrong type leaves 0: then the check after loading decides */
        snprintf(k, sizeof k, "%s.block_count", arch);
        (void)vkf_gguf_get_u32(g, k, 0, &n_layer);
        snprintf(k, sizeof k, "%s.attention.head_count", arch);
        (void)vkf_gguf_get_u32(g, k, 0, &n_head);
        snprintf(k, sizeof k, "%s.attention.head_count_kv", arch);
        (void)vkf_gguf_get_u32(g, k, n_head, &n_kv);
        snprintf(k, sizeof k, "%s.embedding_length", arch);
        (void)vkf_gguf_get_u32(g, k, 0, &n_embd);
    }
    vkf_gguf_close(g);
    if (!n_layer || !n_head || !n_kv || !n_embd) return 1;
    struct stat st;
    vkf_model_desc md = {.weight_bytes = stat(path, &st) == 0 ? (size_t)st.st_size : 0};
    /* K and V per layer and KV head, in the type the session will allocate (session.c): -ctk,
     * else the backend's default */
    int f16 = cache_type == VKF_CACHE_F16 || (cache_type == 0 && ctx->be->kv_f16_default);
    double need = 2.0 * n_layer * n_kv * (double)(n_embd / n_head) * (f16 ? 2 : 4) * n_ctx;
    return kv_report(ctx, &md, need, n_ctx);
}

static int kv_report(vkf_context *ctx, const vkf_model_desc *md, double need, int32_t n_ctx) {
    double have = kv_budget(ctx, md);
    if (have <= 0 || need <= have) return 1;
    fprintf(
        stderr,
        "vkformer: generate: KV cache for -c %d needs %.2f GiB, the %s has %.2f GiB%s; lower -c\n",
        n_ctx, need / 1073741824.0, vkf_backend_is_vulkan(ctx->be) ? "device" : "host",
        have / 1073741824.0, vkf_backend_is_vulkan(ctx->be) ? " beside the weights" : " available");
    return 0;
}

/* ------------------------------------------------------------------ the flags */

static const char *description =
    "Generates text with a decoder-only model (gpt2, llama) and streams it to stdout: the prompt, "
    "then\n"
    "the generated text (--no-display-prompt: only the generated text). Notices, the seed and the\n"
    "timings go to stderr. Stops at the model's end-of-sequence token, after -n tokens, at a "
    "reverse\n"
    "prompt (-r) or at Ctrl-C (which prints the timings; a second Ctrl-C exits).";

static const char *epilog =
    "examples:\n"
    "  vkformer generate -m models/kjv-gpt -p \"And God said\" -n 100\n"
    "  vkformer generate -m model.gguf -f prompt.txt -n -1 --temp 0 -s 42\n"
    "  echo \"In the beginning\" | vkformer generate -m models/kjv-gpt -f - --no-display-prompt";

int vkf_cmd_generate(int argc, char **argv) {
    /* llama-cli's habit: generate -cnv is the chat command (the other flags go with it), and a
     * system prompt (-sys) means conversation mode too */
    int help = 0;
    for (int i = 1; i < argc; i++)
        help |= !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help");
    for (int i = 1; i < argc && !help; i++) {
        if (strcmp(argv[i], "-cnv") == 0 || strcmp(argv[i], "--conversation") == 0) {
            for (int j = i; j + 1 < argc; j++)
                argv[j] = argv[j + 1];
            argv[0] = "chat";
            return vkf_cmd_chat(argc - 1, argv);
        }
        if (strcmp(argv[i], "-sys") == 0 || strcmp(argv[i], "--system-prompt") == 0 ||
            strncmp(argv[i], "--system-prompt=", 16) == 0) {
            argv[0] = "chat";
            return vkf_cmd_chat(argc, argv);
        }
    }
    int cnv = 0;                   /* handled above; listed in --help */
    const char *sys_unused = NULL; /* the same */
    gen_opts o = {.sp = {.temp = 0.8f, .top_k = 40, .top_p = 0.95f},
                  .n_predict = 64,
                  .seed = -1,
                  .n_threads = 1};
    vkf_arg args[] = {
        {"-m|--model", VKF_ARG_STR, &o.mp.path, .metavar = "PATH",
         .help = "model directory (config.json + model.safetensors) or .gguf file"},
        {"-p|--prompt", VKF_ARG_STR, &o.prompt, .metavar = "TEXT",
         .help = "prompt (default: empty, start from BOS)"},
        {"-f|--file", VKF_ARG_STR, &o.file, .metavar = "FILE",
         .help = "read the prompt from FILE ('-': stdin)"},
        {"-e|--escape", VKF_ARG_SET, &o.escape,
         .help = "process \\n \\t \\r \\\\ \\\" \\' in the prompt"},
        {"-n|--n-predict", VKF_ARG_INT, &o.n_predict, .min = -1, .max = 1 << 24, .metavar = "N",
         .help = "tokens to generate (default 64; -1 = until end of sequence or a full context)"},
        {"-c|--ctx-size", VKF_ARG_INT, &o.n_ctx, .min = 0, .max = 1 << 24, .metavar = "N",
         .help =
             "context in tokens (default 0: the model's); more for RoPE / sinusoidal positions"},
        {"--temp", VKF_ARG_FLOAT, &o.sp.temp, .min = 0, .max = 1000, .metavar = "T",
         .help = "temperature, 0 = greedy (default 0.8)"},
        {"--top-k", VKF_ARG_INT, &o.sp.top_k, .min = 0, .max = 1 << 30, .metavar = "K",
         .help = "sample among the K most likely tokens, 0 = all (default 40)"},
        {"--top-p", VKF_ARG_FLOAT, &o.sp.top_p, .min = 0, .max = 1, .metavar = "P",
         .help = "nucleus sampling threshold, 1 = off (default 0.95)"},
        {"-s|--seed", VKF_ARG_I64, &o.seed, .min = -1, .max = (double)INT64_MAX, .metavar = "SEED",
         .seen = &o.seed_given,
         .help = "random seed, -1 = random (default; the seed used is printed on stderr)"},
        {"--tokenizer", VKF_ARG_STR, &o.mp.tokenizer, .metavar = "PATH",
         .help = "use this tokenizer instead of the model's"},
        {"-r|--reverse-prompt", VKF_ARG_CALL, &o, .metavar = "TEXT", .call = add_reverse,
         .help = "stop when the output ends with TEXT (repeatable)"},
        {"--no-display-prompt", VKF_ARG_SET, &o.no_display_prompt,
         .help = "print only the generated text"},
        {"-b|--batch-size", VKF_ARG_INT, &o.n_batch, .min = 1, .max = 1 << 24, .metavar = "N",
         .help = "evaluate the prompt in chunks of N tokens (default: all in one pass)"},
        {"-ub|--ubatch-size", VKF_ARG_INT, &o.n_ubatch, .min = 1, .max = 1 << 24, .metavar = "N",
         .help =
             "the same limit (vkformer has no separate physical batch): the smaller of -b, -ub"},
        {"-t|--threads", VKF_ARG_INT, &o.n_threads, .min = 1, .max = 1024, .metavar = "N",
         .help = "CPU threads: the CPU backend runs one thread; a Vulkan device needs none (a note "
                 "if N > 1)"},
        {"-ngl|--gpu-layers|--n-gpu-layers", VKF_ARG_INT, &o.n_gpu_layers, .min = -1,
         .max = 1 << 20, .metavar = "N", .seen = &o.ngl_given,
         .help = "vkformer keeps a whole model on one backend: 0 = the CPU backend, any other = "
                 "all on the device"},
        {"-fa|--flash-attn", VKF_ARG_CALL, &o, .metavar = "on|off|auto", .call = set_fa,
         .help = "accepted as on/auto: attention is always one fused kernel here"},
        {"-no-cnv|--no-conversation", VKF_ARG_SET, &o.no_cnv,
         .help = "accepted: generate never enters a chat"},
        {"-v|--verbose", VKF_ARG_SET, &o.verbose,
         .help = "more detail on stderr (device, tokens, stop reason)"},
        {"--list-devices", VKF_ARG_SET, &o.list_devices,
         .help = "list the Vulkan devices and exit"},
        VKF_ARGS_BACKEND(&o.cp),
        {"--repeat-penalty", VKF_ARG_FLOAT, &o.sp.repeat_penalty, .min = 0, .max = 100,
         .metavar = "X", .help = "penalize repeated tokens (default 1.0 = off)"},
        {"--repeat-last-n", VKF_ARG_INT, &o.sp.penalty_last_n, .min = -1, .max = 1 << 30,
         .metavar = "N", .help = "tokens the penalties look back (default 64, -1 = all)"},
        {"--presence-penalty", VKF_ARG_FLOAT, &o.sp.presence_penalty, .min = -100, .max = 100,
         .metavar = "X", .help = "subtracted from the logit of every token seen (default 0)"},
        {"--frequency-penalty", VKF_ARG_FLOAT, &o.sp.frequency_penalty, .min = -100, .max = 100,
         .metavar = "X", .help = "subtracted per occurrence of a token seen (default 0)"},
        {"--min-p", VKF_ARG_FLOAT, &o.sp.min_p, .min = 0, .max = 1, .metavar = "P",
         .help = "keep tokens with p >= P * p(best) (default 0 = off)"},
        {"--typical", VKF_ARG_FLOAT, &o.sp.typical_p, .min = 0, .max = 1, .metavar = "P",
         .help = "locally typical sampling (default 1 = off)"},
        /* ---- WIRING POINT (the lead, after merging serve / arch / perf / chat): these are
         *      llama.cpp's flags whose library fields do not exist on this branch yet. Wiring
         *      one = replacing VKF_ARG_PENDING by its kind and destination, e.g.
         *        (--min-p, --typical and the penalties are wired above: serve's
         *        vkf_sampler_params)
         *        -ctk/-ctv: VKF_ARG_CALL "f32"|"f16" into one vkf_cache_type (arch's
         *        cache_type; refuse -ctk and -ctv that differ), then sesp.cache_type below
         *        {"--no-mmap", VKF_ARG_SET, &o.mp.no_mmap, ...} (perf's vkf_model_params)
         *        --ignore-eos needs a library flag (none yet); -sys/-cnv: `vkformer chat`
         *      plus, for -ctk/-ctv and --no-mmap, passing the value into sesp / mp below
         *      (marked "pending flags"). tests/cli/test_cli.sh lists them as refused "yet". */
        {"--ignore-eos", VKF_ARG_SET, &o.sp.ignore_eos,
         .help = "never stop at an end-of-generation token (they are not drawn)"},
        {"-ctk|--cache-type-k|--cache-type", VKF_ARG_CALL, &o.cache_k, .metavar = "T",
         .call = parse_cache_type,
         .help = "KV cache f16 or f32 (default: f16 on Vulkan devices, f32 on the CPU backend); "
                 "--cache-type sets both"},
        {"-ctv|--cache-type-v", VKF_ARG_CALL, &o.cache_v, .metavar = "T", .call = parse_cache_type,
         .help = "the same for V: vkformer keeps K and V in one type"},
        {"--no-mmap", VKF_ARG_SET, &o.mp.no_mmap,
         .help = "read the model file into memory instead of mapping it"},
        {"-sys|--system-prompt", VKF_ARG_STR, &sys_unused, .metavar = "TEXT",
         .help =
             "system prompt: conversation mode, as llama-cli (the same as `vkformer chat -sys`)"},
        {"-cnv|--conversation", VKF_ARG_SET, &cnv,
         .help = "chat mode: the same as `vkformer chat`"},
        VKF_ARGS_GRAMMAR(&o.gr),
        /* ---- llama.cpp flags vkformer does not implement */
        {"-i|--interactive|--interactive-first", VKF_ARG_REFUSED,
         .help = "no interactive mode in generate"},
        {"--mlock", VKF_ARG_REFUSED, .help = "weights live on the device"},
        {"-mg|--main-gpu", VKF_ARG_REFUSED, .takes_value = 1,
         .help = "one device per run: use -dev"},
        {"-ts|--tensor-split", VKF_ARG_REFUSED, .takes_value = 1,
         .help = "one device per run: use -dev"},
        {"-sm|--split-mode", VKF_ARG_REFUSED, .takes_value = 1,
         .help = "one device per run: use -dev"},
        {"-tb|--threads-batch", VKF_ARG_REFUSED, .takes_value = 1,
         .help = "the CPU backend runs one thread"},
        {"--lora|--lora-scaled|--control-vector", VKF_ARG_REFUSED, .takes_value = 1,
         .help = "no adapters"},
        {"--mirostat|--mirostat-lr|--mirostat-ent|--typical|--xtc-probability|--xtc-threshold|--"
         "dry-multiplier",
         VKF_ARG_REFUSED, .takes_value = 1, .help = "this sampler is not implemented"},
        {"-l|--logit-bias", VKF_ARG_REFUSED, .takes_value = 1, .help = "no logit bias"},
        {"--keep|--prompt-cache|--rope-scaling|--rope-freq-base|--rope-freq-scale|--numa|-np|--"
         "parallel",
         VKF_ARG_REFUSED, .takes_value = 1},
        {"--color|--prompt-cache-all|--no-warmup|--no-kv-offload|-nkvo", VKF_ARG_REFUSED,
         .help = NULL},
        {0}};
    vkf_cmd_spec spec = {"generate", "-m PATH [-p PROMPT | -f FILE] [-n N] [options]", description,
                         args, .epilog = epilog};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (o.prompt && o.file)
        return vkf_usage_error("generate", "-p and -f both give the prompt: use one");
    if (o.list_devices) return vkf_cmd_devices(1, argv);
    if (!o.mp.path)
        return vkf_usage_error("generate",
                               "--model PATH is required (a model directory or .gguf file)");
    if (o.ngl_given && o.n_gpu_layers == 0) {
        if (o.cp.backend == VKF_BACKEND_VULKAN)
            return vkf_usage_error("generate",
                                   "-ngl 0 (the CPU) and -dev %s (a device) contradict each other",
                                   o.cp.device);
        o.cp.backend = VKF_BACKEND_CPU;
    }
    /* pending flags: wire them here once the library has the fields (see the table above) */
    if (o.cache_k && o.cache_v && o.cache_k != o.cache_v)
        return vkf_usage_error("generate",
                               "-ctk and -ctv differ: vkformer keeps K and V in one type");
    int cache_type = o.cache_k ? o.cache_k : o.cache_v;
    if ((rc = vkf_cli_grammar_load("generate", &o.gr)) >= 0) return rc;
    o.sp.grammar = o.gr.text;

    char *file_text = NULL;
    const char *prompt = o.prompt ? o.prompt : "";
    if (o.file && !(file_text = vkf_cli_read_text("generate", "-f", o.file))) return 1;
    if (file_text) prompt = file_text;
    char *prompt_buf = strdup(prompt);
    if (!prompt_buf) {
        free(file_text);
        fprintf(stderr, "vkformer: generate: out of memory\n");
        return 1;
    }
    if (o.escape) unescape(prompt_buf);
    if (!o.seed_given || o.seed < 0) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        o.sp.seed = r >> 1; /* fits a non-negative -s, so the run can be repeated with it */
    } else {
        o.sp.seed = (uint64_t)o.seed;
    }
    o.mp.n_ctx = o.n_ctx;

    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    vkf_set_shader_compile_callback(vkf_cli_compile_progress, NULL);
    double t_start = now_ms();
    vkf_context *ctx = NULL;
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    int32_t *toks = NULL;
    rc = 1;
    vkf_model_desc md;
    if (vkf_cli_context(&o.cp, &ctx) != VKF_OK) {
        vkf_cli_fail("generate");
        goto done;
    }
    if (o.n_threads > 1 && vkf_context_backend(ctx) == VKF_BACKEND_CPU)
        fprintf(stderr, "vkformer: generate: -t %d: the CPU backend runs on one thread\n",
                o.n_threads);
    o.mp.progress = vkf_cli_progress;
    o.mp.progress_user = "loading the model";
    if (!kv_precheck(ctx, o.mp.path, o.n_ctx, cache_type)) goto done;
    if (vkf_model_load(ctx, &o.mp, &m) != VKF_OK) {
        vkf_cli_fail("generate");
        goto done;
    }
    vkf_model_describe(m, &md);
    if (md.encoder_decoder) {
        fprintf(stderr,
                "vkformer: generate: %s is an encoder-decoder model; use `vkformer translate`\n",
                o.mp.path);
        goto done;
    }
    if (md.n_ctx > md.n_ctx_train)
        fprintf(stderr,
                "vkformer: generate: context %d tokens, past the %d the model was trained on\n",
                md.n_ctx, md.n_ctx_train);
    if (!kv_fits(ctx, m, &md, o.n_ctx, cache_type)) goto done;
    vkf_session_params sesp = {.n_ctx = o.n_ctx, .cache_type = cache_type};
    if (vkf_session_create(m, &sesp, &s) != VKF_OK) {
        vkf_cli_fail("generate");
        goto done;
    }
    double load_ms = now_ms() - t_start, compile_load = compile_ms(ctx);
    if (g_interrupted) {
        fprintf(stderr, "vkformer: generate: interrupted\n");
        rc = 130;
        goto done;
    }
    int32_t n = 0;
    if (vkf_cli_tokenize(m, prompt_buf, VKF_TOKENIZE_ADD_SPECIAL, &toks, &n) != VKF_OK) {
        vkf_cli_fail("generate: tokenizing the prompt");
        goto done;
    }
    vkf_cli_warn_unknown_chars("generate", o.mp.tokenizer ? o.mp.tokenizer : o.mp.path, prompt_buf);
    if (n == 0) { /* an empty prompt starts from BOS (GPT-2: <|endoftext|>) */
        if (md.bos_id < 0) {
            fprintf(stderr, "vkformer: generate: empty prompt and the model has no BOS token\n");
            goto done;
        }
        toks[n++] = md.bos_id;
    }
    int32_t n_ctx = vkf_session_n_ctx(s);
    if (n > n_ctx) {
        fprintf(stderr,
                "vkformer: generate: context full: the prompt has %d tokens but the context holds "
                "%d (raise -c)\n",
                n, n_ctx);
        goto done;
    }
    int32_t n_predict = o.n_predict < 0 ? n_ctx - n : o.n_predict;
    fprintf(stderr, "vkformer: generate: %s on %s, %d prompt tokens, seed %llu%s\n", o.mp.path,
            vkf_context_device_name(ctx), n, (unsigned long long)o.sp.seed,
            o.seed_given && o.seed >= 0 ? "" : " (random)");
    if (o.verbose) {
        fprintf(stderr, "vkformer: generate: prompt tokens:");
        for (int32_t i = 0; i < n; i++)
            fprintf(stderr, " %d", toks[i]);
        fprintf(stderr,
                "\nvkformer: generate: context %d, temp %g, top-k %d, top-p %g, n_predict %d\n",
                n_ctx, (double)o.sp.temp, o.sp.top_k, (double)o.sp.top_p, n_predict);
    }
    gen_out g = {.o = &o,
                 .prompt = o.no_display_prompt ? NULL : prompt_buf,
                 .compile_now = compile_ms_any,
                 .ctx = ctx};

    /* -b / -ub: all but the last chunk of the prompt here, the last one in vkf_generate */
    int32_t chunk = o.n_batch ? o.n_batch : n;
    if (o.n_ubatch && o.n_ubatch < chunk) chunk = o.n_ubatch;
    double c0 = compile_ms(ctx), t0 = now_ms();
    int32_t done_tok = 0;
    while (n - done_tok > chunk && !g_interrupted) {
        if (vkf_session_eval(s, toks + done_tok, chunk, NULL) != VKF_OK) {
            vkf_cli_fail("generate");
            goto done;
        }
        done_tok += chunk;
    }
    double chunk_ms = now_ms() - t0;
    vkf_generate_stats st = {0};
    vkf_status gs = VKF_OK;
    double c1 = 0;
    if (!g_interrupted) {
        gs = vkf_generate(s, toks + done_tok, n - done_tok, n_predict, &o.sp, on_token, &g, &st);
        c1 = compile_ms(ctx);
    }
    double prompt_ms = chunk_ms + st.prompt_ms;
    vkf_cli_progress_clear();
    int ok = gs == VKF_OK || st.stop == VKF_STOP_CONTEXT_FULL;
    if (g.prompt && ok) { /* nothing generated: the prompt alone */
        out_write(&g, g.prompt, strlen(g.prompt));
        g.prompt = NULL;
    }
    if (ok && (!o.no_display_prompt || st.n_generated)) out_write(&g, "\n", 1);
    if (g.write_failed) {
        fprintf(stderr, "vkformer: generate: writing to stdout: %s\n", strerror(g.write_failed));
        goto done;
    }
    if (gs != VKF_OK && st.stop != VKF_STOP_CONTEXT_FULL) {
        vkf_cli_fail("generate");
        goto done;
    }
    if (st.stop == VKF_STOP_CONTEXT_FULL)
        fprintf(stderr, "vkformer: generate: stopped early: %s\n", vkf_last_error());
    if (o.verbose && st.stop == VKF_STOP_EOS)
        fprintf(stderr, "vkformer: generate: end of sequence\n");
    if (o.verbose && st.stop == VKF_STOP_GRAMMAR)
        fprintf(stderr, "vkformer: generate: the grammar is complete\n");
    if (g.reverse_hit && o.verbose) fprintf(stderr, "vkformer: generate: reverse prompt reached\n");
    if (g_interrupted) fprintf(stderr, "vkformer: generate: interrupted\n");
    /* compilation during the prompt pass (pipelines built on first use) is reported apart */
    double cf = g.have_first ? g.compile_first : c1; /* the prompt pass ended at the first token */
    print_timings(load_ms, compile_load, prompt_ms, cf > c0 ? cf - c0 : 0, c1 > cf ? c1 - cf : 0,
                  done_tok + st.n_prompt, &st, now_ms() - t_start);
    vkf_memory_info mi;
    if (vkf_session_memory(s, &mi) == VKF_OK)
        fprintf(stderr,
                "memory:     weights %.1f MiB (%.1f MiB used in place from the file), KV cache "
                "%.1f MiB, activations %.1f MiB\n",
                (double)mi.weights / 1048576.0, (double)mi.weights_in_place / 1048576.0,
                (double)mi.kv_cache / 1048576.0, (double)mi.activations / 1048576.0);
    rc = g_interrupted ? 130 : 0;
done:
    vkf_cli_grammar_free(&o.gr);
    free(toks);
    free(prompt_buf);
    free(file_text);
    vkf_session_free(s);
    vkf_model_free(m);
    vkf_context_free(ctx);
    return rc;
}
