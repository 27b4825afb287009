/* The flag table of generate and chat (gen_opts.h). */
#include "cli/gen_opts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

const char *vkf_plural(long n, const char *one, const char *many) {
    return n == 1 || n == -1 ? one : many;
}

void vkf_gen_defaults(vkf_gen_opts *o, vkf_gen_mode mode) {
    memset(o, 0, sizeof *o);
    o->sp.temp = 0.8f;
    o->sp.top_k = 40;
    o->sp.top_p = 0.95f;
    o->sp.min_p = 0.05f; /* llama.cpp's, as chat, serve and the Python package */
    o->n_predict = mode == VKF_GEN_CHAT ? 256 : 64;
    o->seed = -1;
    o->n_threads = 1;
    vkf_spec_params sp;
    vkf_spec_params_default(&sp);
    o->draft_max = sp.n_max;
    o->draft_min = sp.n_min;
    o->draft_p_min = sp.p_min;
    o->ngram_n = sp.ngram_n;
}

/* --lora FNAME[,FNAME...] (scale 1) and --lora-scaled FNAME:SCALE[,...] (llama.cpp's forms;
 * the scale after the last ':'), appended to the opts' list */
static int lora_add(vkf_gen_opts *o, const char *v, int scaled, char *err, size_t n) {
    const char *p = v;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *item = strndup(p, len);
        if (!item || o->n_lora == VKF_GEN_MAX_LORA) {
            snprintf(err, n, "at most %d adapters", VKF_GEN_MAX_LORA);
            free(item);
            return -1;
        }
        float sc = 1.0f;
        if (scaled) {
            char *colon = strrchr(item, ':'), *end = NULL;
            if (colon) sc = strtof(colon + 1, &end);
            if (!colon || colon == item || end == colon + 1 || *end || !isfinite(sc)) {
                snprintf(err, n, "expected FNAME:SCALE with a finite SCALE, got '%s'", item);
                free(item);
                return -1;
            }
            *colon = 0;
        }
        if (!*item) {
            snprintf(err, n, "an empty adapter path in '%s'", v);
            free(item);
            return -1;
        }
        o->lora_path[o->n_lora] = item;
        o->lora_scale[o->n_lora++] = sc;
        p += len + (e != NULL);
    }
    return 0;
}
int vkf_gen_lora_arg(void *dst, const char *v, char *err, size_t n) {
    return lora_add(dst, v, 0, err, n);
}
int vkf_gen_lora_scaled_arg(void *dst, const char *v, char *err, size_t n) {
    return lora_add(dst, v, 1, err, n);
}

/* --spec-type: llama.cpp's names of the two kinds vkformer has */
static int parse_spec_type(void *dst, const char *v, char *err, size_t n) {
    int *t = dst;
    if (!strcmp(v, "none"))
        *t = VKF_SPEC_NONE;
    else if (!strcmp(v, "ngram") || !strcmp(v, "ngram-simple") || !strcmp(v, "lookup"))
        *t = VKF_SPEC_NGRAM;
    else if (!strcmp(v, "draft") || !strcmp(v, "draft-simple"))
        *t = VKF_SPEC_DRAFT;
    else {
        snprintf(err, n,
                 "expected none, ngram (n-gram prompt lookup; also ngram-simple) or draft (a "
                 "draft model, -md; also draft-simple), got '%s'",
                 v);
        return -1;
    }
    return 0;
}

/* --cache-type: K and V in one type */
static int parse_cache_both(void *dst, const char *v, char *err, size_t n) {
    vkf_gen_opts *o = dst;
    if (vkf_parse_cache_type(&o->mp.cache_type_k, v, err, n) < 0) return -1;
    o->mp.cache_type_v = o->mp.cache_type_k;
    return 0;
}

static int add_reverse(void *dst, const char *v, char *err, size_t n) {
    vkf_gen_opts *o = dst;
    if (!*v) {
        snprintf(err, n, "expected a non-empty string");
        return -1;
    }
    if (o->n_reverse == VKF_GEN_MAX_REVERSE) {
        snprintf(err, n, "at most %d reverse prompts", VKF_GEN_MAX_REVERSE);
        return -1;
    }
    o->reverse[o->n_reverse++] = v;
    return 0;
}

/* Appends one entry; a generate-only flag is refused in chat with why_not_chat. */
#define ADD(...) (args[n++] = (vkf_arg){__VA_ARGS__})

int vkf_gen_args(vkf_gen_opts *o, vkf_gen_mode mode, vkf_arg *args) {
    const int chat = mode == VKF_GEN_CHAT;
    int n = 0;
    snprintf(o->help_n, sizeof o->help_n,
             chat ? "longest answer in tokens (default %d; -1 or -2 = until end of generation; the "
                    "room kept for it is capped at half the context)"
                  : "tokens to generate (default %d; -1 = until end of sequence or a full context; "
                    "-2 = the same: no context shift here)",
             o->n_predict);
    snprintf(o->help_min_p, sizeof o->help_min_p,
             "keep tokens with p >= P * p(best) (default %g; 0 = off)", (double)o->sp.min_p);
    ADD("-m|--model", VKF_ARG_STR, &o->mp.path, .metavar = "PATH",
        .help = "model directory (config.json + model.safetensors) or .gguf file");
    ADD("-p|--prompt", VKF_ARG_STR, &o->prompt, .metavar = "TEXT",
        .help = chat ? "the first user message (then the next ones from stdin), as llama-cli -cnv"
                     : "prompt (default: empty, start from BOS)");
    ADD("-f|--file", VKF_ARG_STR, &o->file, .metavar = "FILE",
        .help =
            chat ? "the first user message from FILE" : "read the prompt from FILE ('-': stdin)");
    ADD("-sys|--system-prompt", VKF_ARG_STR, &o->sys, .metavar = "TEXT",
        .help = chat ? "system prompt (kept when the context fills)"
                     : "system prompt: conversation mode, as llama-cli (the same as `vkformer "
                       "chat -sys`)");
    ADD("-cnv|--conversation", VKF_ARG_SET, &o->cnv,
        .help = chat ? "accepted: chat is the conversation mode"
                     : "conversation mode: the same as `vkformer chat` (with these flags)");
    ADD("-e|--escape", VKF_ARG_SET, &o->escape,
        .help = chat ? "process \\n \\t \\r \\\\ \\\" \\' in -p, -sys and every message"
                     : "process \\n \\t \\r \\\\ \\\" \\' in the prompt");
    ADD("-n|--n-predict", VKF_ARG_INT, &o->n_predict, .min = -2, .max = 1 << 24, .metavar = "N",
        .help = o->help_n);
    ADD("-c|--ctx-size", VKF_ARG_INT, &o->n_ctx, .min = 0, .max = 1 << 24, .metavar = "N",
        .help = "context in tokens (default 0: the model's training context, at most 4096 where "
                "positions are computed, as llama.cpp); more works for RoPE / sinusoidal "
                "positions");
    ADD("--temp", VKF_ARG_FLOAT, &o->sp.temp, .min = -1000, .max = 1000, .metavar = "T",
        .help = "temperature, 0 or below = greedy, as llama.cpp (default 0.8)");
    ADD("--top-k", VKF_ARG_INT, &o->sp.top_k, .min = 0, .max = 1 << 30, .metavar = "K",
        .help = "sample among the K most likely tokens, 0 = all (default 40)");
    ADD("--top-p", VKF_ARG_FLOAT, &o->sp.top_p, .min = 0, .max = 1, .metavar = "P",
        .help = "nucleus sampling threshold, 1 = off (default 0.95)");
    ADD("--min-p", VKF_ARG_FLOAT, &o->sp.min_p, .min = 0, .max = 1, .metavar = "P",
        .help = o->help_min_p);
    ADD("--typical", VKF_ARG_FLOAT, &o->sp.typical_p, .min = 0, .max = 1, .metavar = "P",
        .help = "locally typical sampling (default 1 = off)");
    ADD("--repeat-penalty", VKF_ARG_FLOAT, &o->sp.repeat_penalty, .min = 0, .max = 100,
        .metavar = "X", .help = "penalize repeated tokens (default 1.0 = off)");
    ADD("--repeat-last-n", VKF_ARG_INT, &o->sp.penalty_last_n, .min = -1, .max = 1 << 30,
        .metavar = "N", .help = "tokens the penalties look back (default 64, -1 = all)");
    ADD("--presence-penalty", VKF_ARG_FLOAT, &o->sp.presence_penalty, .min = -100, .max = 100,
        .metavar = "X", .help = "subtracted from the logit of every token seen (default 0)");
    ADD("--frequency-penalty", VKF_ARG_FLOAT, &o->sp.frequency_penalty, .min = -100, .max = 100,
        .metavar = "X", .help = "subtracted per occurrence of a token seen (default 0)");
    ADD("--ignore-eos", VKF_ARG_SET, &o->sp.ignore_eos,
        .help = chat ? "never end an answer at an end-of-generation token (they are not drawn)"
                     : "never stop at an end-of-generation token (they are not drawn)");
    ADD("-s|--seed", VKF_ARG_I64, &o->seed, .min = -1, .max = (double)INT64_MAX, .metavar = "SEED",
        .seen = &o->seed_given,
        .help = "random seed, -1 = random (default; the seed used is printed on stderr)");
    ADD("-r|--reverse-prompt", VKF_ARG_CALL, o, .metavar = "TEXT", .call = add_reverse,
        .help = chat ? "end an answer when it ends with TEXT (repeatable)"
                     : "stop when the output ends with TEXT (repeatable)");
    ADD("--tokenizer", VKF_ARG_STR, &o->mp.tokenizer, .metavar = "PATH",
        .help = "use this tokenizer instead of the model's");
    ADD("-b|--batch-size", VKF_ARG_INT, &o->n_batch, .min = 1, .max = 1 << 24, .metavar = "N",
        .help = chat ? "evaluate each message in passes of N tokens (default: the device's, 512 "
                       "on GPUs, 64 on CPU devices; Ctrl-C stops between passes)"
                     : "evaluate the prompt in passes of N tokens (default: the device's, 512 on "
                       "GPUs, 64 on CPU devices; Ctrl-C stops between passes)");
    ADD("-ub|--ubatch-size", VKF_ARG_INT, &o->n_ubatch, .min = 1, .max = 1 << 24, .metavar = "N",
        .help = "the same limit (vkformer has no separate physical batch): the smaller of -b, -ub");
    ADD("-t|--threads", VKF_ARG_INT, &o->n_threads, .min = 1, .max = 1024, .metavar = "N",
        .seen = &o->threads_given,
        .help = "CPU threads: the CPU backend runs one thread; a Vulkan device needs none (a note "
                "says so)");
    ADD("-ngl|--gpu-layers|--n-gpu-layers", VKF_ARG_INT, &o->n_gpu_layers, .min = -1,
        .max = 1 << 20, .metavar = "N", .seen = &o->ngl_given,
        .help = "vkformer keeps a whole model on one backend: 0 = the CPU backend, any other = "
                "all on the device");
    ADD("-fa|--flash-attn", VKF_ARG_CALL, o, .metavar = "[on|off|auto]",
        .call = vkf_args_flash_attn, .optional_value = 1,
        .help = "accepted alone or as on/auto: attention is always one fused kernel here");
    ADD("-ctk|--cache-type-k", VKF_ARG_CALL, &o->mp.cache_type_k, .metavar = "T",
        .call = vkf_parse_cache_type, .help = VKF_CACHE_TYPE_HELP);
    ADD("-ctv|--cache-type-v", VKF_ARG_CALL, &o->mp.cache_type_v, .metavar = "T",
        .call = vkf_parse_cache_type, .help = "the same for the V cache");
    ADD("--cache-type", VKF_ARG_CALL, o, .metavar = "T", .call = parse_cache_both,
        .help = "sets -ctk and -ctv together");
    ADD("--no-mmap", VKF_ARG_SET, &o->mp.no_mmap,
        .help = "read the model file into memory instead of mapping it");
    ADD("-v|--verbose", VKF_ARG_SET, &o->verbose,
        .help = chat ? "more detail on stderr (device, settings, why each answer stopped, its "
                       "timings)"
                     : "more detail on stderr (device, tokens, settings, why generation stopped)");
    if (chat)
        ADD("--show-timings", VKF_ARG_SET, &o->show_timings,
            .help = "a timing line after every answer (also with -v); the summary comes at exit "
                    "either way");
    ADD("--list-devices", VKF_ARG_SET, &o->list_devices,
        .help = "list the Vulkan devices and exit");
    args[n++] = (vkf_arg)VKF_ARG_DEVICE(&o->cp);
    args[n++] = (vkf_arg)VKF_ARG_CPU(&o->cp);
    args[n++] = (vkf_arg)VKF_ARG_VALIDATE(&o->cp);
    const vkf_arg split[] = {VKF_ARGS_SPLIT(&o->cp)};
    for (size_t i = 0; i < sizeof split / sizeof split[0]; i++)
        args[n++] = split[i];
    const vkf_arg grammar[] = {VKF_ARGS_GRAMMAR(&o->gr)};
    for (size_t i = 0; i < sizeof grammar / sizeof grammar[0]; i++)
        args[n++] = grammar[i];
    /* ---- generate's own: refused in a chat, with the reason */
    if (chat) {
        ADD("--no-display-prompt", VKF_ARG_REFUSED,
            .help = "generate's: a chat prints only the answers");
        ADD("-no-cnv|--no-conversation", VKF_ARG_REFUSED,
            .help = "chat is the conversation mode: use `vkformer generate`");
        ADD("--fim-prefix|--fim-suffix|--spm-infill", VKF_ARG_REFUSED,
            .help = "generate's: fill in the middle is one completion, not a chat");
    } else {
        ADD("--no-display-prompt", VKF_ARG_SET, &o->no_display_prompt,
            .help = "print only the generated text");
        ADD("-no-cnv|--no-conversation", VKF_ARG_SET, &o->no_cnv,
            .help = "accepted: generate never enters a chat");
        ADD("--fim-prefix", VKF_ARG_STR, &o->fim_prefix, .metavar = "TEXT",
            .help = "fill in the middle: the code before the cursor (the model's FIM tokens, "
                    "llama-server's /infill prompt; -p continues it; only the middle is printed)");
        ADD("--fim-suffix", VKF_ARG_STR, &o->fim_suffix, .metavar = "TEXT",
            .help = "fill in the middle: the code after the cursor");
        ADD("--spm-infill", VKF_ARG_SET, &o->spm_infill,
            .help =
                "fill in the middle: the suffix part first (llama-server's Suffix/Prefix/Middle "
                "order)");
    }
    /* ---- llama.cpp flags vkformer does not implement: refused, never ignored */
    ADD("-i|--interactive|--interactive-first", VKF_ARG_REFUSED,
        .help =
            chat ? "a chat is interactive already" : "no interactive mode: use `vkformer chat`");
    ADD("--mlock", VKF_ARG_REFUSED, .help = "weights live on the device");
    ADD("-tb|--threads-batch|--numa", VKF_ARG_REFUSED, .takes_value = 1,
        .help = "the CPU backend runs one thread");
    ADD("--control-vector", VKF_ARG_REFUSED, .takes_value = 1, .help = "no control vectors");
    ADD("--mirostat|--mirostat-lr|--mirostat-ent|--xtc-probability|--xtc-threshold|--dry-"
        "multiplier",
        VKF_ARG_REFUSED, .takes_value = 1, .help = "this sampler is not implemented");
    ADD("-l|--logit-bias", VKF_ARG_REFUSED, .takes_value = 1, .help = "no logit bias");
    ADD("--keep", VKF_ARG_REFUSED, .takes_value = 1,
        .help = chat ? "no context shift: a full chat drops its oldest turns"
                     : "no context shift: a full context ends the generation");
    ADD("--prompt-cache|--prompt-cache-all|--prompt-cache-ro", VKF_ARG_REFUSED,
        .help = "no prompt cache file (vkformer serve keeps its prompt caches in memory)");
    ADD("--rope-scaling|--rope-freq-base|--rope-freq-scale", VKF_ARG_REFUSED, .takes_value = 1,
        .help = "RoPE settings come from the model file");
    ADD("-np|--parallel", VKF_ARG_REFUSED, .takes_value = 1,
        .help = "one sequence here: `vkformer serve -np N` decodes several");
    ADD("-hff|--hf-file|-hft|--hf-token", VKF_ARG_REFUSED, .takes_value = 1,
        .help = "-hf NAME takes a model `vkformer pull --list` names (its file is known); no "
                "Hugging Face downloads");
    ADD("-co|--color", VKF_ARG_REFUSED,
        .help = "plain text: stdout carries exactly the model's text");
    /* ---- speculative decoding (llama.cpp's flags) */
    ADD("-md|--model-draft|--spec-draft-model", VKF_ARG_STR, &o->draft_path, .metavar = "PATH",
        .help = "draft model for speculative decoding (its vocabulary must be the model's)");
    ADD("--spec-type", VKF_ARG_CALL, &o->spec_type, .metavar = "TYPE", .call = parse_spec_type,
        .seen = &o->spec_type_given,
        .help = "speculative decoding: none, ngram (prompt lookup, no second model) or draft "
                "(-md) (default: draft with -md, else none)");
    ADD("--draft-max|--draft|--draft-n|--spec-draft-n-max", VKF_ARG_INT, &o->draft_max,
        .min = -(1 << 30), .max = 1 << 20, .metavar = "N", .seen = &o->spec_given,
        .help = "most tokens drafted per step (default 16)");
    ADD("--draft-min|--spec-draft-n-min", VKF_ARG_INT, &o->draft_min, .min = -(1 << 30),
        .max = 1 << 20, .metavar = "N", .seen = &o->spec_given,
        .help = "fewer drafted tokens are not checked (default 0)");
    ADD("--draft-p-min|--spec-draft-p-min", VKF_ARG_FLOAT, &o->draft_p_min, .min = 0, .max = 1,
        .metavar = "P", .seen = &o->spec_given,
        .help = "draft model: stop drafting after a token it gives p < P (default 0.75)");
    ADD("--spec-ngram-size-n|--spec-ngram-simple-size-n", VKF_ARG_INT, &o->ngram_n, .min = 1,
        .max = 1024, .metavar = "N", .seen = &o->spec_given,
        .help = "n-gram lookup: the longest run of last tokens looked up (default 3)");
    /* ---- LoRA adapters (llama.cpp's flags) */
    ADD("--lora", VKF_ARG_CALL, o, .metavar = "FNAME", .call = vkf_gen_lora_arg,
        .help = "LoRA adapter (a GGUF adapter or a PEFT directory), scale 1; repeatable, or "
                "comma-separated");
    ADD("--lora-scaled", VKF_ARG_CALL, o, .metavar = "FNAME:SCALE", .call = vkf_gen_lora_scaled_arg,
        .help = "LoRA adapter with its scale; repeatable, or comma-separated");
    ADD("--lora-merge", VKF_ARG_SET, &o->lora_merge,
        .help = "add the adapters into the weights at load (F32/F16/BF16 weights) instead of "
                "applying them at every matmul");
    ADD("--lora-init-without-apply", VKF_ARG_SET, &o->lora_no_apply,
        .help = "load the adapters without applying them (serve: apply via POST /lora-adapters "
                "or a request's \"lora\")");
    /* ---- llama.cpp flags that change nothing here: accepted, said so in the help */
    ADD("--no-warmup", VKF_ARG_SET, &o->noop,
        .help = "accepted: vkformer runs no warm-up pass (pipelines are built on first use)");
    ADD("--log-disable", VKF_ARG_SET, &o->noop,
        .help = "accepted: notices go to stderr only (stdout is the text either way)");
    ADD("--simple-io", VKF_ARG_SET, &o->noop,
        .help = "accepted: input is read plainly whenever stdin is not a terminal");
    ADD("--verbose-prompt", VKF_ARG_SET, &o->verbose_prompt,
        .help = "the prompt's token ids on stderr before generating (also with -v)");
    ADD("--samplers|--sampling-seq|--sampler-seq", VKF_ARG_REFUSED, .takes_value = 1,
        .help = "the sampler order is fixed: penalties, top-k, typical-p, top-p, min-p, "
                "temperature (llama.cpp's default)");
    ADD("--min-keep", VKF_ARG_REFUSED, .takes_value = 1,
        .help = "not implemented: every filter keeps at least the most likely token");
    ADD("--dynatemp-range|--dynatemp-exp", VKF_ARG_REFUSED, .takes_value = 1,
        .help = "dynamic temperature is not implemented");
    ADD("-dkvc|--dump-kv-cache", VKF_ARG_REFUSED,
        .help = "no KV cache dump (-v says how much of the cache a prompt reuses in chat)");
    ADD("--no-kv-offload|-nkvo", VKF_ARG_REFUSED,
        .help = "the KV cache lives with the model on one backend");
    args[n] = (vkf_arg){0};
    return n;
}

int vkf_gen_check(vkf_gen_opts *o, const char *cmd) {
    if (o->prompt && o->file)
        return vkf_usage_error(cmd, "-p and -f both give the %s: use one",
                               strcmp(cmd, "chat") ? "prompt" : "first message");
    if (o->ngl_given && o->n_gpu_layers == 0) {
        if (o->cp.backend == VKF_BACKEND_VULKAN)
            return vkf_usage_error(
                cmd, "-ngl 0 (the CPU) and -dev %s (a device) contradict each other", o->cp.device);
        o->cp.backend = VKF_BACKEND_CPU;
    }
    if (o->n_predict == -2)
        o->n_predict = -1;              /* llama.cpp's "until the context is full": with
                                           no context shift that is what -1 does here */
    if (o->sp.temp < 0) o->sp.temp = 0; /* llama.cpp: a negative temperature samples greedily */
    if (!o->seed_given || o->seed < 0) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        o->sp.seed = r >> 1; /* fits a non-negative -s, so the run can be repeated with it */
    } else {
        o->sp.seed = (uint64_t)o->seed;
    }
    o->mp.n_ctx = o->n_ctx;
    if (o->draft_path && !o->spec_type_given) o->spec_type = VKF_SPEC_DRAFT;
    if (o->draft_path && o->spec_type != VKF_SPEC_DRAFT)
        return vkf_usage_error(cmd, "-md %s is a draft model, but --spec-type is not draft",
                               o->draft_path);
    if (o->spec_type == VKF_SPEC_DRAFT && !o->draft_path)
        return vkf_usage_error(cmd, "--spec-type draft needs a draft model: -md PATH");
    if (o->spec_given && o->spec_type == VKF_SPEC_NONE && !o->draft_path)
        return vkf_usage_error(cmd, "--draft-* and --spec-* flags need -md PATH (a draft model) "
                                    "or --spec-type ngram");
    if (o->spec_type != VKF_SPEC_NONE && o->draft_max < 1)
        return vkf_usage_error(cmd, "--draft-max %d: at least 1 token must be drafted per step",
                               o->draft_max);
    if (o->spec_type != VKF_SPEC_NONE && (o->draft_min < 0 || o->draft_min > o->draft_max))
        return vkf_usage_error(cmd, "--draft-min %d must be in [0, --draft-max %d]", o->draft_min,
                               o->draft_max);
    int rc = vkf_cli_grammar_load(cmd, &o->gr);
    if (rc >= 0) return rc;
    o->sp.grammar = o->gr.text;
    return -1;
}

int vkf_gen_spec_open(const vkf_gen_opts *o, const char *cmd, vkf_context *ctx, vkf_model *m,
                      vkf_model **draft, vkf_spec **spec) {
    *draft = NULL;
    *spec = NULL;
    if (o->spec_type == VKF_SPEC_NONE) return 0;
    vkf_spec_params p;
    vkf_spec_params_default(&p);
    p.type = o->spec_type;
    p.n_max = o->draft_max;
    p.n_min = o->draft_min;
    p.p_min = o->draft_p_min;
    p.ngram_n = o->ngram_n;
    if (o->draft_path) {
        vkf_model_params dp = {.path = o->draft_path,
                               .n_ctx = o->mp.n_ctx,
                               .cache_type_k = o->mp.cache_type_k,
                               .cache_type_v = o->mp.cache_type_v,
                               .progress = vkf_cli_progress,
                               .progress_user = "loading the draft model"};
        if (vkf_model_load(ctx, &dp, draft) != VKF_OK) {
            vkf_cli_progress_clear();
            fprintf(stderr, "vkformer: %s: -md %s: %s\n", cmd, o->draft_path, vkf_last_error());
            return 1;
        }
        vkf_cli_progress_clear();
        p.draft = *draft;
    }
    if (vkf_spec_create(m, &p, spec) != VKF_OK) {
        fprintf(stderr, "vkformer: %s: %s\n", cmd, vkf_last_error());
        vkf_model_free(*draft);
        *draft = NULL;
        return 1;
    }
    return 0;
}

void vkf_gen_spec_report(const char *what, int64_t drafted, int64_t accepted) {
    fprintf(stderr, "%s drafted %lld, accepted %lld (%.1f%%)\n", what, (long long)drafted,
            (long long)accepted, drafted ? 100.0 * (double)accepted / (double)drafted : 0.0);
}

int vkf_gen_lora_open(vkf_gen_opts *o, const char *cmd, vkf_model *m) {
    char what[160];
    for (int i = 0; i < o->n_lora; i++) {
        if (vkf_lora_load(m, o->lora_path[i], &o->lora[i]) != VKF_OK) {
            snprintf(what, sizeof what, "%s: --lora", cmd);
            return vkf_cli_fail(what), 1;
        }
        if (o->lora_merge && vkf_lora_merge(m, o->lora[i], o->lora_scale[i]) != VKF_OK) {
            snprintf(what, sizeof what, "%s: --lora-merge", cmd);
            return vkf_cli_fail(what), 1;
        }
    }
    return 0;
}

int vkf_gen_lora_apply(const vkf_gen_opts *o, const char *cmd, vkf_session *s) {
    if (o->n_lora == 0 || o->lora_merge || o->lora_no_apply) return 0;
    if (vkf_session_set_lora(s, o->lora, o->lora_scale, o->n_lora) == VKF_OK) return 0;
    char what[160];
    snprintf(what, sizeof what, "%s: --lora", cmd);
    return vkf_cli_fail(what), 1;
}

void vkf_gen_lora_free(vkf_gen_opts *o) {
    for (int i = 0; i < VKF_GEN_MAX_LORA; i++) {
        vkf_lora_free(o->lora[i]);
        o->lora[i] = NULL;
    }
}

void vkf_gen_free(vkf_gen_opts *o) {
    for (int i = 0; i < o->n_lora; i++) { /* the flags' copies (the adapters: vkf_gen_lora_free) */
        free(o->lora_path[i]);
        o->lora_path[i] = NULL;
    }
    vkf_cli_grammar_free(&o->gr);
    o->sp.grammar = NULL;
}

void vkf_gen_notes(const vkf_gen_opts *o, const char *cmd, vkf_context *ctx) {
    if (!o->threads_given) return;
    if (vkf_context_backend(ctx) == VKF_BACKEND_CPU) {
        if (o->n_threads > 1)
            fprintf(stderr, "vkformer: %s: -t %d: the CPU backend runs on one thread\n", cmd,
                    o->n_threads);
    } else {
        fprintf(stderr,
                "vkformer: %s: -t %d: the Vulkan device needs no CPU threads (-t matters to "
                "--cpu only)\n",
                cmd, o->n_threads);
    }
}

void vkf_gen_unescape(char *s) {
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
