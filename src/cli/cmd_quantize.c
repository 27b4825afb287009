/* vkformer quantize IN OUT TYPE: llama-quantize's file types without an importance matrix
 * (vkf_model_quantize). A progress bar on stderr when it is a terminal, then a summary of the
 * tensor types and sizes on stdout. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "frontend/args.h"

static void progress(void *user, int i, int n, const char *tensor, vkf_dtype type) {
    (void)user;
    const int width = 30;
    int fill = n ? (i + 1) * width / n : width;
    char bar[32];
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, '.', (size_t)(width - fill));
    bar[width] = 0;
    fprintf(stderr, "\r[%s] %4d/%-4d %-6s %-40.40s", bar, i + 1, n, vkf_dtype_name(type), tensor);
    fflush(stderr);
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

int vkf_cmd_quantize(int argc, char **argv) {
    const char *pos[3] = {NULL, NULL, NULL};
    int quiet = 0, requant = 0, pure = 0;
    vkf_arg args[] = {{"-q|--quiet", VKF_ARG_SET, &quiet, .help = "no progress bar and no summary"},
                      {"--allow-requantize", VKF_ARG_SET, &requant,
                       .help = "accept a quantized IN (each tensor dequantized, then quantized "
                               "again; llama-quantize's flag)"},
                      {"--pure", VKF_ARG_SET, &pure,
                       .help = "every matrix at TYPE's own block type, no per-tensor rules "
                               "(llama-quantize's flag; MXFP4_MOE --pure: a dense model in MXFP4)"},
                      {0}};
    vkf_cmd_spec spec = {
        "quantize",
        "IN OUT.gguf TYPE [--quiet] [--allow-requantize] [--pure]",
        "Writes a quantized GGUF as llama.cpp's llama-quantize does (no importance matrix): "
        "per-tensor\n"
        "types by llama.cpp's rules, blocks bit-identical to ggml's reference quantizers. A "
        "progress\n"
        "bar on stderr when it is a terminal, then a summary of the sizes on stdout.\n"
        "  IN: an F32/F16/BF16 GGUF or a Hugging Face directory (gpt2, llama family)\n"
        "  OUT: a new or regular file is replaced only once the new one is complete; a symbolic\n"
        "       link is followed; a device or FIFO (/dev/stdout, a pipe) is written through\n"
        "  TYPE: llama-quantize's name or number: Q4_K_M (15) Q4_K_S (14) Q5_K_M (17) Q5_K_S (16)\n"
        "        Q6_K (18) Q8_0 (7) Q4_0 (2) Q4_1 (3) Q5_0 (8) Q5_1 (9) Q3_K_L (13) Q3_K_M (12)\n"
        "        Q3_K_S (11) Q2_K (10) IQ4_NL (25) IQ4_XS (30) MXFP4_MOE (38) F16 (1) BF16 (32)\n"
        "        F32 (0)",
        args,
        .positional = "IN OUT.gguf TYPE",
        .pos_dst = pos,
        .pos_required = 3,
        .pos_max = 3};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    vkf_quantize_params qp = {.input = pos[0],
                              .output = pos[1],
                              .type = pos[2],
                              .allow_requantize = requant,
                              .pure = pure};
    int tty = isatty(STDERR_FILENO);
    if (tty && !quiet) qp.progress = progress;
    vkf_quantize_stats st;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    vkf_status s = vkf_model_quantize(&qp, &st);
    if (qp.progress) fprintf(stderr, "\n");
    if (s != VKF_OK) return vkf_cli_fail("quantize");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    struct stat in_st, out_st, so;
    int regular_out = stat(pos[1], &out_st) == 0 && S_ISREG(out_st.st_mode);
    /* a tokenizer the converter does not carry (SentencePiece-style): say how to run the file */
    vkf_tokenizer *tok;
    if (regular_out && stat(pos[0], &in_st) == 0 && S_ISDIR(in_st.st_mode)) {
        if (vkf_tokenizer_open(pos[1], &tok) == VKF_OK)
            vkf_tokenizer_close(tok);
        else if (vkf_tokenizer_open(pos[0], &tok) == VKF_OK) {
            fprintf(stderr,
                    "vkformer: quantize: note: %s has no tokenizer (only byte-level BPE "
                    "tokenizer.json is converted; %s's is %s): run it with --tokenizer %s\n",
                    pos[1], pos[0], vkf_tokenizer_algorithm(tok), pos[0]);
            vkf_tokenizer_close(tok);
        } else
            fprintf(stderr,
                    "vkformer: quantize: note: %s has no tokenizer, nor has %s: run it with "
                    "--tokenizer PATH (the model's tokenizer files)\n",
                    pos[1], pos[0]);
    }
    /* the file itself went to stdout (/dev/stdout, a pipe): the summary must not follow it */
    if (quiet || (fstat(STDOUT_FILENO, &so) == 0 && stat(pos[1], &out_st) == 0 &&
                  so.st_dev == out_st.st_dev && so.st_ino == out_st.st_ino))
        return 0;
    printf("%s -> %s (%s): %d %s, %d quantized, %d with a fallback type, %.2f s\n", pos[0], pos[1],
           pos[2], st.n_tensors, st.n_tensors == 1 ? "tensor" : "tensors", st.n_quantized,
           st.n_fallback, sec);
    printf("  %-7s %8s %12s\n", "type", "tensors", "MiB");
    for (int t = 0; t < VKF_DTYPE_COUNT; t++)
        if (st.n_by_type[t])
            printf("  %-7s %8d %12.2f\n", vkf_dtype_name((vkf_dtype)t), st.n_by_type[t],
                   mib(st.bytes_by_type[t]));
    /* a type wider than the input's (Q4_0 -> Q8_0) makes the data larger: say so */
    int larger = st.out_bytes > st.in_bytes;
    double ratio = larger ? (st.in_bytes ? (double)st.out_bytes / (double)st.in_bytes : 0.0)
                          : (st.out_bytes ? (double)st.in_bytes / (double)st.out_bytes : 0.0);
    printf("  tensor data %.2f MiB -> %.2f MiB (%.2fx %s), file %.2f MiB\n", mib(st.in_bytes),
           mib(st.out_bytes), ratio, larger ? "larger" : "smaller", mib(st.file_bytes));
    return 0;
}
