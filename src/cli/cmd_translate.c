/* vkformer translate -m PATH -s "source text" [--beam N]: encoder-decoder models. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "frontend/args.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* "3 17 2" or "3,17,2" into ids; returns the count, -1 on a bad entry. */
static int parse_ids(const char *s, int32_t *ids, int cap) {
    int n = 0;
    while (*s) {
        if (*s == ' ' || *s == ',') {
            s++;
            continue;
        }
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || n == cap || errno || v < 0 || v > INT32_MAX ||
            (*end && *end != ' ' && *end != ','))
            return -1;
        ids[n++] = (int32_t)v;
        s = end;
    }
    return n;
}

/* --ids: checked when parsed, before anything loads */
static int check_ids(void *dst, const char *v, char *err, size_t n) {
    size_t cap = strlen(v) / 2 + 1;
    int32_t *tmp = malloc(cap * sizeof *tmp);
    int k = tmp ? parse_ids(v, tmp, (int)cap) : -1;
    free(tmp);
    if (k <= 0) {
        snprintf(err, n,
                 "expected token ids (integers >= 0) separated by spaces or commas, got '%s'", v);
        return -1;
    }
    *(const char **)dst = v;
    return 0;
}

int vkf_cmd_translate(int argc, char **argv) {
    vkf_context_params cp = {0};
    vkf_model_params mp = {0};
    vkf_translate_params tp = {.beam = 1};
    const char *source = NULL, *ids = NULL;
    vkf_arg args[] = {{"-m|--model", VKF_ARG_STR, &mp.path, .metavar = "PATH", .required = 1,
                       .help = "encoder-decoder model directory"},
                      {"-s|--source", VKF_ARG_STR, &source, .metavar = "TEXT",
                       .help = "source text, tokenized with the source tokenizer"},
                      {"--ids", VKF_ARG_CALL, &ids, .call = check_ids, .metavar = "\"ID ID ...\"",
                       .help = "source token ids instead of text"},
                      {"--beam", VKF_ARG_INT, &tp.beam, .min = 0, .max = 64, .metavar = "N",
                       .help = "beam width (default 1; 0 or 1: greedy)"},
                      {"--max-len", VKF_ARG_INT, &tp.max_len, .min = 0, .max = 1 << 24,
                       .metavar = "N",
                       .help = "most target tokens (default 0: the model's maximum length)"},
                      {"--length-penalty", VKF_ARG_FLOAT, &tp.length_penalty, .min = -10, .max = 10,
                       .metavar = "A", .help = "beam ranking by log-prob / length^A (default 0)"},
                      {"--tokenizer", VKF_ARG_STR, &mp.tokenizer, .metavar = "PATH",
                       .help = "tokenizer replacing the model's"},
                      VKF_ARGS_BACKEND(&cp),
                      {0}};
    vkf_cmd_spec spec = {
        "translate", "-m PATH (-s TEXT | --ids \"ID ID ...\") [--beam N] [--max-len N]",
        "Encoder-decoder models: translates the source text (greedy or beam search) and prints the "
        "target text\n(the ids when the model has no target tokenizer).",
        args,
        .epilog = "example:\n  vkformer translate -m models/dates-transformer -s \"the third of "
                  "march, nineteen ninety-nine\""};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (!source == !ids)
        return vkf_usage_error("translate", "give exactly one of -s TEXT and --ids LIST");
    vkf_context *ctx;
    if (vkf_cli_context(&cp, &ctx) != VKF_OK) return vkf_cli_fail("translate");
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    int32_t *src = NULL, *out = NULL;
    char *text = NULL;
    rc = 1;
    vkf_model_desc md;
    mp.progress = vkf_cli_progress;
    mp.progress_user = "loading the model";
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        vkf_cli_fail("translate: loading the model");
        goto done;
    }
    vkf_model_describe(m, &md);
    if (!md.encoder_decoder) {
        fprintf(stderr,
                "vkformer: translate: %s is a decoder-only model; use `vkformer generate`\n",
                mp.path);
        goto done;
    }
    int32_t cap = (int32_t)strlen(source ? source : ids) + 8, n = 0;
    src = ids ? malloc((size_t)cap * sizeof *src) : NULL;
    out = malloc((size_t)md.n_ctx * sizeof *out);
    if ((ids && !src) || !out) {
        fprintf(stderr, "vkformer: translate: out of memory\n");
        goto done;
    }
    if (ids) {
        n = parse_ids(ids, src, cap);
        if (n <= 0) {
            fprintf(stderr,
                    "vkformer: translate: --ids expects token ids separated by spaces or commas\n");
            goto done;
        }
    } else if (vkf_cli_tokenize(m, source, VKF_TOKENIZE_SOURCE | VKF_TOKENIZE_ADD_SPECIAL, &src,
                                &n) != VKF_OK) {
        vkf_cli_fail("translate: tokenizing the source");
        goto done;
    }
    vkf_session_params sesp = {.n_batch = tp.beam > 1 ? tp.beam : 1};
    if (vkf_session_create(m, &sesp, &s) != VKF_OK) {
        vkf_cli_fail("translate");
        goto done;
    }
    int32_t n_out = 0;
    float score = 0;
    double t0 = now_ms();
    if (vkf_translate(s, src, n, &tp, out, md.n_ctx, &n_out, &score) != VKF_OK) {
        vkf_cli_fail("translate");
        goto done;
    }
    double ms = now_ms() - t0;
    if (md.has_tokenizer) {
        if (vkf_model_detokenize(m, out, n_out, 0, &text) != VKF_OK) {
            vkf_cli_fail("translate: detokenizing");
            goto done;
        }
        printf("%s\n", text);
    } else { /* no target tokenizer: print the ids */
        for (int32_t i = 0; i < n_out; i++)
            printf("%s%d", i ? " " : "", out[i]);
        printf("\n");
    }
    fprintf(stderr,
            "translate: %d source tokens -> %d target tokens (beam %d, log-prob %.4f) in %.1f ms, "
            "%.1f tokens/s\n",
            n, n_out, tp.beam > 1 ? tp.beam : 1, (double)score, ms,
            ms > 0 ? n_out / (ms / 1e3) : 0.0);
    rc = 0;
done:
    free(text);
    free(src);
    free(out);
    vkf_session_free(s);
    vkf_model_free(m);
    vkf_context_free(ctx);
    return rc;
}
