/* `vkformer pull NAME` and `-hf NAME` in the CLI: the library's registry (vkf_pull in
 * vkformer.h) with a progress bar on a terminal and the errors printed. */
#ifndef VKF_CLI_PULL_H
#define VKF_CLI_PULL_H

#include <stddef.h>

#include "vkformer.h"

/* vkf_pull with a bar on stderr when it is a terminal and quiet is 0; 0 on success, else prints
 * "vkformer: CMD: ..." on stderr and returns 1 (2 for a name the registry does not hold). */
int vkf_cli_pull(const char *cmd, const char *name, const vkf_pull_params *p, int quiet, char *path,
                 size_t n, int *fetched);

/* The rest of the line "no model named 'NAME' in vkformer's registry; known: a b" on stderr. */
void vkf_cli_pull_unknown(const char *name);

/* llama.cpp's habit: `-hf NAME` (or --hf-repo NAME) anywhere in argv[1..argc) becomes `-m PATH`
 * after pulling NAME (a registry name or its Hugging Face repository; a `:QUANT` tail must name
 * the registry's file). Returns 0 (argv rewritten in place or untouched), else an exit code. */
int vkf_pull_rewrite_hf(int argc, char **argv);

#endif
