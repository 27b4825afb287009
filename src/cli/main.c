#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const vkf_cli_cmd commands[] = {
    {"devices", vkf_cmd_devices, "list Vulkan devices and their capabilities [--json]"},
    {"selftest", vkf_cmd_selftest, "run every op on a device against the CPU reference [--quick] [--device N]"},
    {"generate", vkf_cmd_generate, "generate text: -m MODEL -p PROMPT [-n N --temp T --top-k K --top-p P --seed S]"},
    {"translate", vkf_cmd_translate, "encoder-decoder models: -m MODEL -s SOURCE [--beam N]"},
    {"info", vkf_cmd_info, "describe a model: -m MODEL [--json]"},
    {"bench", vkf_cmd_bench, "benchmarks: -m MODEL [-p 512 -n 128 -r 5 -o md|json|csv], --kernels, --startup, --plot DIR, --tokenizer"},
    {"tune", vkf_cmd_tune, "time kernel variants on this device and cache the fastest [--device N] [--quick]"},
    {"verify", vkf_cmd_verify, "run a fixture directory against the engine: FIXTURE_DIR [--cpu | --device N]"},
    {"tokenize", vkf_cmd_tokenize, "print token ids: -m MODEL (-p TEXT | -f FILE) [--json] [--no-special] [--tokenizer PATH]"},
    {"template", vkf_cmd_template, "render a chat template: (-m MODEL | -t FILE) --messages FILE.json [--tools F --context F --bos S --eos S --no-generation-prompt]"},
    {"quantize", vkf_cmd_quantize, "write a quantized GGUF like llama-quantize: IN (GGUF or HF dir) OUT.gguf TYPE (Q4_K_M, Q8_0, ...)"},
    {"detokenize", vkf_cmd_detokenize, "print the text of ids: -m MODEL --ids 1,2,3 [--special] [--tokenizer PATH]"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: vkformer <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\ncommon options: --device N|NAME (or env VKF_DEVICE), --cpu, --validate (or env VKF_VALIDATE=1)\n");
}

int vkf_cli_backend_opt(int argc, char **argv, int *i, vkf_context_params *cp) {
    const char *a = argv[*i];
    if (strcmp(a, "--cpu") == 0) {
        cp->backend = VKF_BACKEND_CPU;
        return 1;
    }
    if (strcmp(a, "--validate") == 0) {
        cp->validate = 1;
        return 1;
    }
    if (strcmp(a, "--device") == 0 || strcmp(a, "-d") == 0) {
        if (*i + 1 >= argc) return -1;
        cp->device = argv[++*i];
        cp->backend = VKF_BACKEND_VULKAN;
        return 1;
    }
    return 0;
}

vkf_status vkf_cli_context(const vkf_context_params *cp, vkf_context **out) {
    vkf_status s = vkf_context_create(cp, out);
    if (s == VKF_OK && cp->backend == VKF_BACKEND_AUTO && vkf_context_backend(*out) == VKF_BACKEND_CPU)
        fprintf(stderr, "vkformer: %s\n", vkf_last_error()); /* says why Vulkan was not used */
    return s;
}

int vkf_cli_fail(const char *what) {
    fprintf(stderr, "vkformer: %s: %s\n", what, vkf_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "vkformer: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
