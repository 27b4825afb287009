/* `vkformer bench`: picks the benchmark by its mode flag and hands over to bench/ (bench.h):
 * --kernels, --startup, --plot, --tokenizer, --embedding, --grammar, --speculative, --first-token
 * (internal, used by --startup), else the end-to-end benchmark (llama-bench's flags). Each parses
 * its options with frontend/args.h. */
#include <string.h>

#include "bench.h" /* bench/: the vkformer_bench library */
#include "cli/cli.h"

int vkf_cmd_bench(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kernels") == 0) return vkf_bench_kernels(argc, argv);
        if (strcmp(argv[i], "--startup") == 0) return vkf_bench_startup(argc, argv);
        if (strcmp(argv[i], "--plot") == 0 || strncmp(argv[i], "--plot=", 7) == 0)
            return vkf_bench_plot(argc, argv);
        if (strcmp(argv[i], "--tokenizer") == 0) return vkf_bench_tokenizer(argc, argv);
        if (strcmp(argv[i], "--compare") == 0 || strncmp(argv[i], "--compare=", 10) == 0)
            return vkf_bench_compare(argc, argv);
        if (strcmp(argv[i], "--embedding") == 0) return vkf_bench_embed(argc, argv);
        if (strcmp(argv[i], "--grammar") == 0) return vkf_bench_grammar(argc, argv);
        if (strcmp(argv[i], "--speculative") == 0) return vkf_bench_spec(argc, argv);
        if (strcmp(argv[i], "--first-token") == 0) return vkf_bench_first_token(argc, argv);
    }
    return vkf_bench_e2e(argc, argv);
}
