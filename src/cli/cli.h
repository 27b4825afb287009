/* The vkformer CLI: one function per subcommand, each returning the process exit code. The CLI
 * is the only layer that prints for users and exits. */
#ifndef VKF_CLI_H
#define VKF_CLI_H

#include "vkformer.h"

typedef struct vkf_cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
    const char *help;                  /* one line */
} vkf_cli_cmd;

int vkf_cmd_devices(int argc, char **argv);
int vkf_cmd_selftest(int argc, char **argv);
int vkf_cmd_generate(int argc, char **argv);
int vkf_cmd_translate(int argc, char **argv);
int vkf_cmd_info(int argc, char **argv);
int vkf_cmd_verify(int argc, char **argv);
int vkf_cmd_bench(int argc, char **argv);
int vkf_cmd_tune(int argc, char **argv);
int vkf_cmd_tokenize(int argc, char **argv);
int vkf_cmd_detokenize(int argc, char **argv);
int vkf_cmd_template(int argc, char **argv);
int vkf_cmd_quantize(int argc, char **argv);

/* Shared option parsing: --device N|NAME, --cpu, --validate. Returns 1 if argv[*i] was one of
 * them (advancing *i past its value), 0 if not, -1 on a missing value. */
int vkf_cli_backend_opt(int argc, char **argv, int *i, vkf_context_params *cp);
/* vkf_context_create, plus a one-line notice on stderr when AUTO fell back to the CPU. */
vkf_status vkf_cli_context(const vkf_context_params *cp, vkf_context **out);
/* Prints "vkformer: <what>: <vkf_last_error()>" to stderr and returns 1. */
int vkf_cli_fail(const char *what);

#endif
