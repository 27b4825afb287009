/* vkformer embed: vectors of texts from an encoder-only model (vkf_embed), as JSON (OpenAI's
 * embeddings response), JSON lines or a NumPy .npy array on stdout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "frontend/args.h"

static int parse_pooling(void *dst, const char *v, char *err, size_t n) {
    static const vkf_pooling all[] = {VKF_POOLING_NONE, VKF_POOLING_MEAN, VKF_POOLING_CLS,
                                      VKF_POOLING_LAST, VKF_POOLING_RANK};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(v, vkf_pooling_name(all[i]))) {
            *(vkf_pooling *)dst = all[i];
            return 0;
        }
    snprintf(err, n, "expected none, mean, cls, last or rank, got '%s'", v);
    return -1;
}

static int parse_format(void *dst, const char *v, char *err, size_t n) {
    if (strcmp(v, "json") && strcmp(v, "jsonl") && strcmp(v, "npy")) {
        snprintf(err, n, "expected json, jsonl or npy, got '%s'", v);
        return -1;
    }
    *(const char **)dst = v;
    return 0;
}

static int set_on(void *dst, const char *v, char *err, size_t n) {
    (void)v, (void)err, (void)n;
    *(vkf_normalize *)dst = VKF_NORMALIZE_ON;
    return 0;
}

static int set_off(void *dst, const char *v, char *err, size_t n) {
    (void)v, (void)err, (void)n;
    *(vkf_normalize *)dst = VKF_NORMALIZE_OFF;
    return 0;
}

static void print_vec(const float *v, int32_t dim) {
    putchar('[');
    for (int32_t c = 0; c < dim; c++)
        printf("%s%.9g", c ? "," : "", (double)v[c]);
    putchar(']');
}

/* One input's value: a vector (pooled) or a list of token vectors. */
static void print_input(const vkf_embeddings *e, int32_t i) {
    const float *v = e->data + (size_t)e->first[i] * e->dim;
    if (e->pooling != VKF_POOLING_NONE) {
        print_vec(v, e->dim);
        return;
    }
    putchar('[');
    for (int32_t t = 0; t < e->n_tokens[i]; t++) {
        if (t) putchar(',');
        print_vec(v + (size_t)t * e->dim, e->dim);
    }
    putchar(']');
}

/* NumPy's .npy format 1.0: magic, header length, a Python dict literal padded to 64 bytes. */
static int write_npy(const vkf_embeddings *e) {
    char hdr[160];
    int n =
        snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }",
                 e->n_vectors, e->dim);
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    memset(hdr + n, ' ', pad);
    hdr[n + pad] = '\n';
    uint16_t hl = (uint16_t)(n + pad + 1);
    unsigned char magic[10] = {
        0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff), (unsigned char)(hl >> 8)};
    fwrite(magic, 1, sizeof magic, stdout);
    fwrite(hdr, 1, hl, stdout);
    fwrite(e->data, sizeof(float), (size_t)e->n_vectors * e->dim, stdout);
    return 0;
}

int vkf_cmd_embed(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *file = NULL, *format = "json";
    vkf_embed_params ep = {0};
    vkf_context_params cp = {0};
    int32_t n_batch = 0;
    int verbose = 0;
    vkf_arg args[] = {
        {"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH", .required = 1,
         .help = "an encoder-only model: HF BertModel directory (sentence-transformers layout) or "
                 "a bert / nomic-bert GGUF"},
        {"-p|--prompt", VKF_ARG_STR, &prompt, .metavar = "TEXT", .help = "one input"},
        {"-f|--file", VKF_ARG_STR, &file, .metavar = "FILE",
         .help = "one input per line of FILE ('-': stdin)"},
        {"--pooling", VKF_ARG_CALL, &ep.pooling, .metavar = "P", .call = parse_pooling,
         .help = "none (a vector per token), mean, cls, last or rank (a cross-encoder's scores) "
                 "(default: the model's)"},
        {"--normalize", VKF_ARG_CALL0, &ep.normalize, .call = set_on,
         .help = "L2-normalize the vectors (default: as the model; GGUF: on)"},
        {"--no-normalize", VKF_ARG_CALL0, &ep.normalize, .call = set_off,
         .help = "leave the vectors as the pooling gives them"},
        {"-o|--output-format", VKF_ARG_CALL, &format, .metavar = "FMT", .call = parse_format,
         .help = "json (OpenAI's embeddings response, default), jsonl (one array per input) or "
                 "npy (float32 [vectors, dim])"},
        {"-b|--batch-size", VKF_ARG_INT, &n_batch, .min = 1, .max = 4096, .metavar = "N",
         .help = "inputs per batched graph (default 32)"},
        {"-v|--verbose", VKF_ARG_SET, &verbose, .help = "token counts and timing on stderr"},
        VKF_ARGS_BACKEND(&cp),
        {0}};
    vkf_cmd_spec spec = {
        "embed",
        "-m MODEL (-p TEXT | -f FILE) [--pooling P] [--normalize | --no-normalize] "
        "[-o json|jsonl|npy]",
        "Prints the embedding of each input: inputs of different lengths run together in "
        "batched graphs, each giving the vector it gets alone. Inputs longer than the model "
        "takes are truncated as sentence-transformers does (a notice on stderr).",
        args, .epilog = "example: vkformer embed -m all-MiniLM-L6-v2 -p \"A man is eating food.\""};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (!prompt == !file)
        return vkf_usage_error("embed", "give exactly one of -p TEXT and -f FILE");
    if (!strcmp(format, "npy") && isatty(STDOUT_FILENO))
        return vkf_usage_error("embed", "-o npy writes binary: redirect stdout to a file");
    char *text = NULL, **lines = NULL;
    const char *one[1] = {prompt};
    const char *const *inputs = one;
    int32_t n_inputs = 1;
    if (file) {
        if (!(text = vkf_cli_read_text("embed", "-f", file))) return 1;
        if (vkf_cli_split_lines(text, &lines, &n_inputs)) {
            free(text);
            fprintf(stderr, "vkformer: embed: out of memory\n");
            return 1;
        }
        inputs = (const char *const *)lines;
    }
    vkf_context *ctx = NULL;
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    vkf_embeddings *e = NULL;
    rc = 1;
    if (vkf_cli_context(&cp, &ctx) != VKF_OK) {
        rc = vkf_cli_fail("embed");
        goto done;
    }
    vkf_model_params mp = {.path = model, .progress = vkf_cli_progress, .progress_user = "loading"};
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        rc = vkf_cli_fail("embed");
        goto done;
    }
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    if (!d.encoder_only) {
        fprintf(stderr, "vkformer: embed: %s is a %s model, not an encoder-only (embedding) one\n",
                model, d.architecture);
        goto done;
    }
    vkf_session_params sp = {.n_batch = n_batch};
    if (vkf_session_create(m, &sp, &s) != VKF_OK) {
        rc = vkf_cli_fail("embed");
        goto done;
    }
    vkf_set_shader_compile_callback(vkf_cli_compile_progress, NULL);
    double t0 = 0;
    {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        t0 = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
    }
    vkf_status st = vkf_embed(s, inputs, n_inputs, &ep, &e);
    vkf_cli_progress_clear();
    if (st != VKF_OK) {
        rc = vkf_cli_fail("embed");
        goto done;
    }
    for (int32_t i = 0; i < e->n_inputs; i++)
        if (e->truncated[i])
            fprintf(stderr,
                    "vkformer: embed: input %d: %d tokens, truncated to the model's %d "
                    "(sentence-transformers' rule: the first tokens, the specials kept)\n",
                    i + 1, e->n_tokens[i] + e->truncated[i], e->n_tokens[i]);
    if (verbose) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double ms = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6 - t0;
        fprintf(stderr,
                "vkformer: embed: %d inputs, %lld tokens, pooling %s, %snormalized, %d floats "
                "each: %.1f ms (%.1f inputs/s) on %s\n",
                e->n_inputs, (long long)e->total_tokens, vkf_pooling_name(e->pooling),
                e->normalized ? "" : "not ", e->dim, ms, ms > 0 ? e->n_inputs * 1e3 / ms : 0.0,
                vkf_context_device_name(ctx));
    }
    if (!strcmp(format, "npy")) {
        write_npy(e);
    } else if (!strcmp(format, "jsonl")) {
        for (int32_t i = 0; i < e->n_inputs; i++) {
            print_input(e, i);
            putchar('\n');
        }
    } else {
        const char *base = strrchr(model, '/');
        base = base && base[1] ? base + 1 : model;
        printf("{\"object\":\"list\",\"data\":[");
        for (int32_t i = 0; i < e->n_inputs; i++) {
            printf("%s{\"object\":\"embedding\",\"index\":%d,\"embedding\":", i ? "," : "", i);
            print_input(e, i);
            putchar('}');
        }
        printf("],\"model\":\"");
        for (const char *c = base; *c; c++) /* a path: escape what JSON needs */
            if (*c == '"' || *c == '\\')
                printf("\\%c", *c);
            else if ((unsigned char)*c >= 0x20)
                putchar(*c);
        printf("\",\"usage\":{\"prompt_tokens\":%lld,\"total_tokens\":%lld}}\n",
               (long long)e->total_tokens, (long long)e->total_tokens);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "vkformer: embed: writing to stdout: %s\n", strerror(errno ? errno : EIO));
        goto done;
    }
    rc = 0;
done:
    vkf_embeddings_free(e);
    vkf_session_free(s);
    vkf_model_free(m);
    vkf_context_free(ctx);
    free(lines);
    free(text);
    return rc;
}
