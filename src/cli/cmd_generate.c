/* vkformer generate -m PATH -p "prompt" -n 64 [...]: streams the generated text to stdout as it
 * is produced (after the prompt unless --no-display-prompt); everything else (the seed, notices,
 * llama.cpp-style timings) goes to stderr. llama-cli's flags keep llama.cpp's meaning; the ones
 * vkformer does not implement are refused, never ignored. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/gen_opts.h"
#include "frontend/args.h"

typedef vkf_gen_opts gen_opts;

/* ------------------------------------------------------------------ Ctrl-C */

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    if (g_interrupted) _exit(130); /* the second Ctrl-C exits at once */
    g_interrupted = 1;
}

/* the session's abort callback: heard between the prompt's passes and between tokens */
static int interrupted(void *user) {
    (void)user;
    return g_interrupted != 0;
}

/* ------------------------------------------------------------------ output */

/* One-time costs on a Vulkan device so far, ms (0 on the CPU): compile, glslang and pipeline
 * creation; record, the rest of recording graphs into command buffers (descriptor sets, SPIR-V
 * cache reads); first_dispatch, the submissions that ran new pipelines for the first time
 * (drivers may finish compiling there: lavapipe JIT-compiles each shader variant; the pass's
 * own work is in it too). */
typedef struct once_ms {
    double compile, record, first_dispatch;
} once_ms;

static once_ms once_now(vkf_context *ctx) {
    once_ms o = {0, 0, 0};
    vkf_device_stats st;
    if (vkf_context_device_stats(ctx, &st) != VKF_OK) return o;
    o.compile = st.compile_ms + st.pipeline_ms;
    o.record = st.record_ms - o.compile;
    o.first_dispatch = st.first_dispatch_ms;
    return o;
}

static once_ms once_diff(once_ms a, once_ms b) {
    once_ms d = {b.compile - a.compile, b.record - a.record, b.first_dispatch - a.first_dispatch};
    if (d.compile < 0) d.compile = 0;
    if (d.record < 0) d.record = 0;
    if (d.first_dispatch < 0) d.first_dispatch = 0;
    return d;
}

typedef struct gen_out {
    int write_failed;
    const gen_opts *o;
    char tail[512]; /* the end of the generated text, for the reverse prompts */
    size_t tail_len;
    int reverse_hit;
    const char *prompt; /* printed before the first token (nothing on stdout before that) */
    vkf_context *ctx;
    once_ms first; /* one-time costs when the first token came: the prompt pass ends there */
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
    /* after Ctrl-C nothing more prints: the terminal has echoed ^C, and a token after it (the
     * one computed meanwhile) reads as the generation going on */
    if (g_interrupted) return 1;
    if (!g->have_first) {
        g->first = once_now(g->ctx);
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

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* -v: why the generation ended, in words */
static const char *stop_reason(const vkf_generate_stats *st, const gen_out *g, int32_t n_predict) {
    static char why[160];
    switch (st->stop) {
    case VKF_STOP_EOS: return "end of sequence (the model's end-of-generation token)";
    case VKF_STOP_CONTEXT_FULL: return "context full";
    case VKF_STOP_GRAMMAR: return "the grammar is complete";
    case VKF_STOP_ABORTED: return "interrupted";
    case VKF_STOP_CALLBACK:
        if (g->reverse_hit) return "reverse prompt (-r) reached";
        if (g->write_failed) return "writing to stdout failed";
        return "interrupted";
    case VKF_STOP_LENGTH:
    default:
        snprintf(why, sizeof why, "-n limit: %d %s generated", n_predict,
                 vkf_plural(n_predict, "token", "tokens"));
        return why;
    }
}

/* Pipelines and command buffers are built on first use: those of the prompt pass and of the
 * first decoding steps are reported apart and left out of the speeds; the first run of new
 * pipelines stays in them (it is also the pass itself) and is named. */
static void print_timings(double load_ms, once_ms load, double prompt_ms, once_ms prompt,
                          once_ms eval, int n_prompt, const vkf_generate_stats *st,
                          double total_ms) {
    double p = prompt_ms - prompt.compile - prompt.record; /* the prompt's own time */
    double e = st->gen_ms - eval.compile - eval.record;
    if (p < 0) p = 0;
    if (e < 0) e = 0;
    fprintf(stderr, "timings:        load time = %10.2f ms\n", load_ms);
    if (load.compile + prompt.compile + eval.compile > 0)
        fprintf(stderr,
                "timings: pipeline compile = %10.2f ms (shaders and pipelines; %.2f ms at load, "
                "%.2f ms in the prompt pass, %.2f ms in the first steps; not counted in the "
                "speeds)\n",
                load.compile + prompt.compile + eval.compile, load.compile, prompt.compile,
                eval.compile);
    if (load.record + prompt.record + eval.record > 0)
        fprintf(stderr,
                "timings: graph recording  = %10.2f ms (command buffers, descriptor sets and "
                "SPIR-V cache reads, once per graph shape; %.2f ms in the prompt pass; not "
                "counted in the speeds)\n",
                load.record + prompt.record + eval.record, prompt.record);
    fprintf(stderr,
            "timings: prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens "
            "per second)\n",
            p, n_prompt, n_prompt ? p / n_prompt : 0.0, p > 0 ? n_prompt / (p / 1e3) : 0.0);
    if (prompt.first_dispatch > 0)
        fprintf(stderr,
                "timings:                    %10.2f ms of it ran new pipelines for the first time "
                "(a driver may finish compiling them there: lavapipe does)\n",
                prompt.first_dispatch);
    fprintf(stderr,
            "timings:        eval time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens "
            "per second)\n",
            e, st->n_generated, st->n_generated ? e / st->n_generated : 0.0,
            e > 0 ? st->n_generated / (e / 1e3) : 0.0);
    fprintf(stderr, "timings:       total time = %10.2f ms / %5d tokens\n", total_ms,
            n_prompt + st->n_generated);
}

/* ------------------------------------------------------------------ the flags */

/* the architectures from the library's table (src/model/arch), never a list kept by hand */
static const char *description(void) {
    static char d[768];
    snprintf(d, sizeof d,
             "Generates text with a decoder-only model (%s) and streams it to stdout:\n"
             "the prompt, then the generated text, byte for byte, nothing added "
             "(--no-display-prompt: only\n"
             "the generated text). Notices, the seed and the timings go to stderr. Stops at the "
             "model's\n"
             "end-of-generation token, after -n tokens, at a full context, at a reverse prompt "
             "(-r) or at\n"
             "Ctrl-C (which prints the timings; a second Ctrl-C exits); -v says which. -cnv or "
             "-sys: `vkformer chat`\n"
             "with these flags.",
             vkf_architectures());
    return d;
}

static const char *epilog =
    "examples:\n"
    "  vkformer generate -m models/kjv-gpt -p \"And God said\" -n 100\n"
    "  vkformer generate -m model.gguf -f prompt.txt -n -1 --temp 0 -s 42\n"
    "  echo \"In the beginning\" | vkformer generate -m models/kjv-gpt -f - --no-display-prompt\n"
    "  vkformer generate -m coder.gguf --fim-prefix 'def add(a, b):\\n    ' --fim-suffix "
    "'\\n    return c\\n' -e --temp 0";

int vkf_cmd_generate(int argc, char **argv) {
    /* llama-cli's habit: generate -cnv (or a system prompt, -sys) is the chat command, with
     * every flag of this table (chat shares it) */
    int help = 0;
    for (int i = 1; i < argc; i++)
        help |= !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help");
    for (int i = 1; i < argc && !help; i++)
        if (!strcmp(argv[i], "-cnv") || !strcmp(argv[i], "--conversation") ||
            !strcmp(argv[i], "-sys") || !strcmp(argv[i], "--system-prompt") ||
            !strncmp(argv[i], "--system-prompt=", 16)) {
            argv[0] = "chat";
            return vkf_cmd_chat(argc, argv);
        }
    gen_opts o;
    vkf_gen_defaults(&o, VKF_GEN_GENERATE);
    vkf_arg args[VKF_GEN_MAX_ARGS];
    vkf_gen_args(&o, VKF_GEN_GENERATE, args);
    const char *fim_prefix = NULL, *fim_suffix = NULL;
    int spm_infill = 0;
    vkf_cmd_spec cspec = {"generate", "-m PATH [-p PROMPT | -f FILE] [-n N] [options]",
                          description(), args, .epilog = epilog};
    int rc = vkf_args_parse(&cspec, argc, argv);
    if (rc >= 0) return rc;
    if (o.list_devices) return vkf_cmd_devices(1, argv);
    if (!o.mp.path)
        return vkf_usage_error(
            "generate", "--model PATH (a model directory or .gguf file) or -hf NAME (a model of "
                        "vkformer's registry: vkformer pull --list) is required");
    if ((rc = vkf_gen_check(&o, "generate")) >= 0) return rc;
    fim_prefix = o.fim_prefix, fim_suffix = o.fim_suffix, spm_infill = o.spm_infill;
    int infill = fim_prefix || fim_suffix;
    if (!infill && spm_infill) {
        vkf_gen_free(&o);
        return vkf_usage_error("generate", "--spm-infill needs --fim-prefix or --fim-suffix");
    }

    char *file_text = NULL;
    const char *prompt = o.prompt ? o.prompt : "";
    if (o.file && !(file_text = vkf_cli_read_text("generate", "-f", o.file))) {
        vkf_gen_free(&o);
        return 1;
    }
    if (file_text) prompt = file_text;
    char *prompt_buf = strdup(prompt);
    if (!prompt_buf) {
        free(file_text);
        vkf_gen_free(&o);
        fprintf(stderr, "vkformer: generate: out of memory\n");
        return 1;
    }
    if (o.escape) vkf_gen_unescape(prompt_buf);
    char *fim_pre = fim_prefix ? strdup(fim_prefix) : NULL;
    char *fim_suf = fim_suffix ? strdup(fim_suffix) : NULL;
    if ((fim_prefix && !fim_pre) || (fim_suffix && !fim_suf)) {
        free(fim_pre);
        free(fim_suf);
        free(prompt_buf);
        free(file_text);
        vkf_gen_free(&o);
        fprintf(stderr, "vkformer: generate: out of memory\n");
        return 1;
    }
    if (o.escape && fim_pre) vkf_gen_unescape(fim_pre);
    if (o.escape && fim_suf) vkf_gen_unescape(fim_suf);

    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    o.cp.shader_compiled = vkf_cli_compile_progress; /* the context carries it */
    double t_start = now_ms();
    vkf_context *ctx = NULL;
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    vkf_model *draft = NULL;
    vkf_spec *spec = NULL;
    int32_t *toks = NULL;
    rc = 1;
    vkf_model_desc md;
    if (vkf_cli_context(&o.cp, &ctx) != VKF_OK) {
        vkf_cli_fail("generate");
        goto done;
    }
    vkf_gen_notes(&o, "generate", ctx);
    o.mp.progress = vkf_cli_progress;
    o.mp.progress_user = "loading the model";
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
    if (vkf_gen_lora_open(&o, "generate", m)) goto done;
    if (vkf_gen_spec_open(&o, "generate", ctx, m, &draft, &spec)) goto done;
    if (md.n_ctx > md.n_ctx_train)
        fprintf(stderr,
                "vkformer: generate: context %d tokens, past the %d the model was trained on\n",
                md.n_ctx, md.n_ctx_train);
    /* a context the backend cannot hold is refused before anything is allocated: by the load
     * when -c asks for one (from the file's metadata), else by the session */
    /* -b / -ub: the prompt in passes of the smaller (0: the device's own size); Ctrl-C stops it
     * between two passes */
    int32_t ub = o.n_batch;
    if (o.n_ubatch && (!ub || o.n_ubatch < ub)) ub = o.n_ubatch;
    vkf_session_params sesp = {.n_ctx = o.n_ctx,
                               .cache_type_k = o.mp.cache_type_k,
                               .cache_type_v = o.mp.cache_type_v,
                               .n_ubatch = ub,
                               .abort_callback = interrupted};
    if (vkf_session_create(m, &sesp, &s) != VKF_OK) {
        vkf_cli_fail("generate");
        goto done;
    }
    if (vkf_gen_lora_apply(&o, "generate", s)) goto done;
    double load_ms = now_ms() - t_start;
    once_ms at_load = once_now(ctx);
    if (g_interrupted) {
        fprintf(stderr, "vkformer: generate: interrupted\n");
        rc = 130;
        goto done;
    }
    int32_t n = 0;
    if (!md.has_tokenizer) { /* the flag, not the library's field */
        fprintf(stderr,
                "vkformer: generate: %s has no tokenizer: pass one with --tokenizer PATH (a "
                "tokenizer file, or the directory the model came from)\n",
                o.mp.path);
        goto done;
    }
    if (infill) { /* llama-server's /infill prompt; -p continues the prefix */
        vkf_infill_params ip = {.prefix = fim_pre,
                                .suffix = fim_suf,
                                .prompt = prompt_buf,
                                .n_batch = 2048, /* llama-server's -b and -n */
                                .n_predict = -1,
                                .n_ctx = vkf_session_n_ctx(s),
                                .spm = spm_infill};
        if (vkf_model_infill(m, &ip, &toks, &n) != VKF_OK) {
            vkf_cli_fail("generate: --fim-prefix / --fim-suffix");
            goto done;
        }
    } else if (vkf_cli_tokenize(m, prompt_buf, VKF_TOKENIZE_ADD_SPECIAL, &toks, &n) != VKF_OK) {
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
                "%d (%s)\n",
                n, n_ctx,
                md.ctx_extendable || n_ctx < md.n_ctx_train
                    ? "raise -c"
                    : "shorten the prompt: the model's learned positions end there");
        goto done;
    }
    int32_t n_predict = o.n_predict < 0 ? n_ctx - n : o.n_predict;
    fprintf(stderr, "vkformer: generate: %s on %s, %d prompt %s, seed %llu%s\n", o.mp.path,
            vkf_context_device_name(ctx), n, vkf_plural(n, "token", "tokens"),
            (unsigned long long)o.sp.seed, o.seed_given && o.seed >= 0 ? "" : " (random)");
    vkf_cli_print_split("generate", m);
    if (o.verbose || o.verbose_prompt) {
        fprintf(stderr, "vkformer: generate: prompt tokens:");
        for (int32_t i = 0; i < n; i++)
            fprintf(stderr, " %d", toks[i]);
        fputc('\n', stderr);
    }
    if (o.verbose) {
        fprintf(stderr,
                "vkformer: generate: context %d, temp %g, top-k %d, top-p %g, min-p %g, "
                "n_predict %d\n",
                n_ctx, (double)o.sp.temp, o.sp.top_k, (double)o.sp.top_p, (double)o.sp.min_p,
                n_predict);
    }
    gen_out g = {.o = &o, .prompt = o.no_display_prompt || infill ? NULL : prompt_buf, .ctx = ctx};

    once_ms c0 = once_now(ctx);
    vkf_generate_stats st = {0};
    vkf_status gs = vkf_generate_spec(s, spec, toks, n, n_predict, &o.sp, on_token, &g, &st);
    once_ms c1 = once_now(ctx);
    vkf_cli_progress_clear();
    int ok = gs == VKF_OK || st.stop == VKF_STOP_CONTEXT_FULL || st.stop == VKF_STOP_ABORTED;
    if (g.prompt && ok) { /* nothing generated: the prompt alone */
        out_write(&g, g.prompt, strlen(g.prompt));
        g.prompt = NULL;
    }
    /* stdout is exactly the prompt and what the model generated: no newline is added (the
     * timings on stderr begin with one, so a terminal still shows them on their own line) */
    if (g.write_failed) {
        vkf_cli_stdout_failed("generate", g.write_failed);
        goto done;
    }
    if (!ok) {
        vkf_cli_fail("generate");
        goto done;
    }
    fprintf(stderr, "\n"); /* the text on a terminal ends where stderr's report begins */
    if (st.stop == VKF_STOP_CONTEXT_FULL)
        fprintf(stderr, "vkformer: generate: stopped early: %s\n", vkf_last_error());
    if (st.stop == VKF_STOP_ABORTED && st.n_prompt < n)
        fprintf(stderr,
                "vkformer: generate: interrupted in the prompt, after %d of its %d tokens\n",
                st.n_prompt, n);
    else if (g_interrupted)
        fprintf(stderr, "vkformer: generate: interrupted\n");
    else if (o.verbose) /* -v: why it stopped, whatever the reason */
        fprintf(stderr, "vkformer: generate: stopped: %s\n", stop_reason(&st, &g, n_predict));
    /* compilation during the prompt pass (pipelines built on first use) is reported apart */
    once_ms cf = g.have_first ? g.first : c1; /* the prompt pass ended at the first token */
    print_timings(load_ms, at_load, st.prompt_ms, once_diff(c0, cf), once_diff(cf, c1), st.n_prompt,
                  &st, now_ms() - t_start);
    if (spec) vkf_gen_spec_report("speculative:", st.n_drafted, st.n_accepted);
    vkf_memory_info mi;
    if (vkf_session_memory(s, &mi) == VKF_OK)
        fprintf(stderr,
                "memory:     weights %.1f MiB (%.1f MiB used in place from the file), KV cache "
                "%.1f MiB (K %s, V %s), activations %.1f MiB\n",
                (double)mi.weights / 1048576.0, (double)mi.weights_in_place / 1048576.0,
                (double)mi.kv_cache / 1048576.0, vkf_dtype_name((vkf_dtype)mi.kv_type_k),
                vkf_dtype_name((vkf_dtype)mi.kv_type_v), (double)mi.activations / 1048576.0);
    rc = g_interrupted ? 130 : 0;
done:
    vkf_gen_free(&o);
    free(toks);
    free(fim_pre);
    free(fim_suf);
    free(prompt_buf);
    free(file_text);
    vkf_session_free(s);
    vkf_gen_lora_free(&o);
    vkf_spec_free(spec);
    vkf_model_free(draft);
    vkf_model_free(m);
    vkf_context_free(ctx);
    return rc;
}
