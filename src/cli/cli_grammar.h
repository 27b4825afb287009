/* Constrained output for generate and chat: llama-cli's --grammar, --grammar-file,
 * -j/--json-schema and -jf/--json-schema-file, turned into one GBNF grammar for
 * vkf_sampler_params.grammar. */
#ifndef VKF_CLI_GRAMMAR_H
#define VKF_CLI_GRAMMAR_H

#include "frontend/args.h"

typedef struct vkf_cli_grammar {
    const char *grammar, *grammar_file, *schema, *schema_file; /* the flags */
    char *text; /* the grammar (malloc'ed) after vkf_cli_grammar_load, or NULL: none */
} vkf_cli_grammar;

#define VKF_ARGS_GRAMMAR(g)                                                                        \
    {"--grammar", VKF_ARG_STR, &(g)->grammar, .metavar = "GBNF",                                   \
     .help = "constrain the output to this grammar (llama.cpp's GBNF)"},                           \
        {"--grammar-file", VKF_ARG_STR, &(g)->grammar_file, .metavar = "FILE",                     \
         .help = "the same, from a file"},                                                         \
        {"-j|--json-schema", VKF_ARG_STR, &(g)->schema, .metavar = "SCHEMA",                       \
         .help = "constrain the output to JSON valid under this JSON Schema ('{}': any JSON)"},    \
    {                                                                                              \
        "-jf|--json-schema-file", VKF_ARG_STR, &(g)->schema_file, .metavar = "FILE",               \
                                                                  .help = "the same, from a file"  \
    }

/* Checks and reads the flags into g->text (a JSON Schema converted). Returns -1 when fine (text
 * may be NULL: no flag), else the exit code after a message naming the flag: 2 for a grammar
 * or schema that cannot be used (or two flags at once), 1 for an unreadable file. */
int vkf_cli_grammar_load(const char *cmd, vkf_cli_grammar *g);
void vkf_cli_grammar_free(vkf_cli_grammar *g);

#endif
