/* Embedding throughput (`vkformer bench --embedding`), through the public API only (vkf_embed):
 *
 *   for each batch size B (-b 1,32,256): B sentences of about T tokens (--tokens 30, specials
 *   included), embedded by one vkf_embed call; embeddings/s = B / time, tokens/s likewise.
 *
 * The sentences are drawn from a fixed word list with a fixed seed and grown word by word until
 * the model's tokenizer gives T tokens (--sentences FILE writes them, one per line, so
 * sentence-transformers and llama.cpp can be timed on the very same inputs:
 * bench/embed_ref.py). Each size runs once untimed (graphs and pipelines), then -r times; the
 * report gives the mean and sample standard deviation of embeddings/s, and the process CPU
 * time per embedding (on a CPU device, the work done, which a busy machine does not inflate). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "frontend/args.h"
#include "vkformer.h"

#define EMB_MAX_SIZES 8

static const char *const words[] = {
    "the",      "model",    "search", "people",  "quickly",  "vector",    "answers",   "question",
    "library",  "running",  "small",  "river",   "mountain", "engine",    "graphics",  "card",
    "finds",    "similar",  "text",   "between", "two",      "sentences", "retrieval", "local",
    "document", "weather",  "city",   "history", "green",    "table",     "music",     "written",
    "computer", "language", "under",  "morning", "after",    "before",    "while",     "because"};

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t next_u32(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* A sentence of about `tokens` tokens (specials included) by the model's tokenizer. */
static char *make_sentence(vkf_model *m, int tokens) {
    char *s = calloc(1, 4096);
    size_t n = 0;
    for (int w = 0; s && w < 400; w++) {
        const char *x = words[next_u32() % (sizeof words / sizeof words[0])];
        n += (size_t)snprintf(s + n, 4096 - n, "%s%s", w ? " " : "", x);
        int32_t buf[1024], k = 0;
        if (vkf_model_tokenize(m, s, VKF_TOKENIZE_ADD_SPECIAL, buf, 1024, &k) != VKF_OK) break;
        if (k >= tokens || n > 3500) break;
    }
    return s;
}

static int parse_list(void *dst, const char *v, char *err, size_t n) {
    int *out = dst;
    int k = vkf_bench_parse_ints(v, out + 1, EMB_MAX_SIZES);
    if (k <= 0) {
        snprintf(err, n, "expected a list of positive counts like 1,32,256, got '%s'", v);
        return -1;
    }
    for (int i = 1; i <= k; i++)
        if (out[i] < 1 || out[i] > 65536) {
            snprintf(err, n, "%d is outside [1, 65536]", out[i]);
            return -1;
        }
    out[0] = k;
    return 0;
}

int vkf_bench_embed(int argc, char **argv) {
    const char *model = NULL, *sentences = NULL, *fmt_s = "md";
    int sizes[EMB_MAX_SIZES + 1] = {3, 1, 32, 256};
    int32_t tokens = 30, reps = 5, batch = 0;
    int embedding = 0;
    vkf_context_params cp = {0};
    vkf_arg args[] = {
        {"--embedding", VKF_ARG_SET, &embedding, .help = "this benchmark"},
        {"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH", .required = 1,
         .help = "an encoder-only model (HF directory or GGUF)"},
        {"-b|--batches", VKF_ARG_CALL, sizes, .metavar = "N,...", .call = parse_list,
         .help = "sentences per vkf_embed call (default 1,32,256)"},
        {"--tokens", VKF_ARG_INT, &tokens, .min = 3, .max = 512, .metavar = "T",
         .help = "tokens per sentence, specials included (default 30)"},
        {"-r|--repetitions", VKF_ARG_INT, &reps, .min = 1, .max = 64, .metavar = "N",
         .help = "timed runs per size (default 5)"},
        {"--batch-size", VKF_ARG_INT, &batch, .min = 1, .max = 4096, .metavar = "N",
         .help = "inputs per batched graph (vkf_session_params.n_batch; default 32)"},
        {"--sentences", VKF_ARG_STR, &sentences, .metavar = "FILE",
         .help = "also write the sentences of the largest size to FILE, one per line"},
        {"-o|--output", VKF_ARG_STR, &fmt_s, .metavar = "FMT", .help = "md (default), json or csv"},
        VKF_ARGS_BACKEND(&cp),
        {0}};
    vkf_cmd_spec spec = {"bench", "--embedding -m MODEL [-b 1,32,256] [--tokens 30] [-r 5]",
                         "Embeddings per second of an encoder-only model for batches of "
                         "sentences of about --tokens tokens.",
                         args, .epilog = NULL};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    int fmt = vkf_bench_parse_fmt(fmt_s);
    if (fmt < 0) return vkf_usage_error("bench", "-o: expected md, json or csv, got '%s'", fmt_s);
    vkf_context *ctx = NULL;
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    char **sent = NULL;
    int max_b = 0;
    for (int i = 1; i <= sizes[0]; i++)
        if (sizes[i] > max_b) max_b = sizes[i];
    rc = 1;
    if (vkf_context_create(&cp, &ctx) != VKF_OK) goto fail;
    vkf_model_params mp = {.path = model};
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) goto fail;
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    if (!d.encoder_only) {
        fprintf(stderr, "vkformer: bench: --embedding: %s is not an encoder-only model\n", model);
        goto done;
    }
    vkf_session_params sp = {.n_batch = batch};
    if (vkf_session_create(m, &sp, &s) != VKF_OK) goto fail;
    sent = calloc((size_t)max_b, sizeof *sent);
    for (int i = 0; sent && i < max_b; i++)
        if (!(sent[i] = make_sentence(m, tokens))) goto fail;
    if (sentences) {
        FILE *f = fopen(sentences, "w");
        if (!f) {
            fprintf(stderr, "vkformer: bench: --sentences %s: cannot write\n", sentences);
            goto done;
        }
        for (int i = 0; i < max_b; i++)
            fprintf(f, "%s\n", sent[i]);
        fclose(f);
    }
    double load;
    int ncpu;
    vkf_bench_load(&load, &ncpu);
    char when[32], driver[256] = "";
    vkf_bench_iso_time(when, sizeof when);
    const char *dev = vkf_context_device_name(ctx);
    if (vkf_context_backend(ctx) == VKF_BACKEND_VULKAN)
        vkf_bench_driver_of(dev, driver, sizeof driver);
    if (fmt == VKF_BENCH_MD) {
        printf("<!-- %s, load %.2f on %d CPUs, %s %s -->\n", when, load, ncpu, dev, driver);
        printf("| model | device | sentences | tokens | embeddings/s | tokens/s | ms/call | CPU "
               "ms/embedding |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
    } else if (fmt == VKF_BENCH_CSV) {
        printf("model,device,sentences,tokens,embd_per_s,stddev,tokens_per_s,ms_per_call,"
               "cpu_ms_per_embd,load\n");
    } else {
        printf("[");
    }
    for (int k = 1; k <= sizes[0]; k++) {
        int B = sizes[k];
        vkf_embeddings *e = NULL;
        if (vkf_embed(s, (const char *const *)sent, B, NULL, &e) != VKF_OK) goto fail; /* warm */
        int64_t ntok = e->total_tokens;
        vkf_embeddings_free(e);
        double eps[64], ms_sum = 0, cpu0 = vkf_bench_cpu_ms();
        for (int r = 0; r < reps; r++) {
            double t0 = vkf_bench_now_ms();
            if (vkf_embed(s, (const char *const *)sent, B, NULL, &e) != VKF_OK) goto fail;
            double ms = vkf_bench_now_ms() - t0;
            vkf_embeddings_free(e);
            eps[r] = B * 1e3 / ms;
            ms_sum += ms;
        }
        double cpu = (vkf_bench_cpu_ms() - cpu0) / reps / B, mean, sd;
        vkf_bench_stats(eps, reps, &mean, &sd);
        double tps = mean * (double)ntok / B, mspc = ms_sum / reps;
        const char *base = strrchr(model, '/');
        base = base && base[1] ? base + 1 : model;
        if (fmt == VKF_BENCH_MD)
            printf("| %s | %s | %d | %.1f | %.2f ± %.2f | %.0f | %.1f | %.2f |\n", base, dev, B,
                   (double)ntok / B, mean, sd, tps, mspc, cpu);
        else if (fmt == VKF_BENCH_CSV)
            printf("%s,\"%s\",%d,%.1f,%.3f,%.3f,%.1f,%.2f,%.3f,%.2f\n", base, dev, B,
                   (double)ntok / B, mean, sd, tps, mspc, cpu, load);
        else
            printf("%s{\"model\":\"%s\",\"device\":\"%s\",\"sentences\":%d,\"tokens\":%.1f,"
                   "\"embd_per_s\":%.3f,\"stddev\":%.3f,\"tokens_per_s\":%.1f,\"ms_per_call\":%.2f,"
                   "\"cpu_ms_per_embd\":%.3f,\"load\":%.2f}",
                   k > 1 ? "," : "", base, dev, B, (double)ntok / B, mean, sd, tps, mspc, cpu,
                   load);
        fflush(stdout);
    }
    if (fmt == VKF_BENCH_JSON) printf("]\n");
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "vkformer: bench: %s\n", vkf_last_error());
done:
    for (int i = 0; sent && i < max_b; i++)
        free(sent[i]);
    free(sent);
    vkf_session_free(s);
    vkf_model_free(m);
    vkf_context_free(ctx);
    return rc;
}
