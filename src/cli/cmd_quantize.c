/* vkformer quantize IN OUT TYPE: llama-quantize's file types without an importance matrix
 * (vkf_model_quantize). A progress bar on stderr when it is a terminal, then a summary of the
 * tensor types and sizes on stdout. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cli.h"

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
    int quiet = 0, requant = 0;
    vkf_arg args[] = {{"-q|--quiet", VKF_ARG_SET, &quiet, .help = "no progress bar and no summary"},
                      {"--allow-requantize", VKF_ARG_SET, &requant,
                       .help = "accept a quantized IN (each tensor dequantized, then quantized "
                               "again; llama-quantize's flag)"},
                      {0}};
    vkf_cmd_spec spec = {
        "quantize",
        "IN OUT.gguf TYPE [--quiet] [--allow-requantize]",
        "Writes a quantized GGUF as llama.cpp's llama-quantize does (no importance matrix): "
        "per-tensor\n"
        "types by llama.cpp's rules, blocks bit-identical to ggml's reference quantizers. A "
        "progress\n"
        "bar on stderr when it is a terminal, then a summary of the sizes on stdout.\n"
        "  IN: an F32/F16/BF16 GGUF or a Hugging Face directory (gpt2, llama family)\n"
        "  TYPE: Q4_K_M Q4_K_S Q5_K_M Q5_K_S Q6_K Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q3_K_L Q3_K_M Q3_K_S\n"
        "        Q2_K IQ4_NL IQ4_XS F16 BF16 F32",
        args,
        .positional = "IN OUT.gguf TYPE",
        .pos_dst = pos,
        .pos_required = 3,
        .pos_max = 3};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    vkf_quantize_params qp = {
        .input = pos[0], .output = pos[1], .type = pos[2], .allow_requantize = requant};
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
    if (quiet) return 0;
    printf("%s -> %s (%s): %d tensors, %d quantized, %d with a fallback type, %.2f s\n", pos[0],
           pos[1], pos[2], st.n_tensors, st.n_quantized, st.n_fallback, sec);
    printf("  %-7s %8s %12s\n", "type", "tensors", "MiB");
    for (int t = 0; t < VKF_DTYPE_COUNT; t++)
        if (st.n_by_type[t])
            printf("  %-7s %8d %12.2f\n", vkf_dtype_name((vkf_dtype)t), st.n_by_type[t],
                   mib(st.bytes_by_type[t]));
    printf("  tensor data %.2f MiB -> %.2f MiB (%.2fx smaller), file %.2f MiB\n", mib(st.in_bytes),
           mib(st.out_bytes), st.out_bytes ? (double)st.in_bytes / (double)st.out_bytes : 0.0,
           mib(st.file_bytes));
    return 0;
}
