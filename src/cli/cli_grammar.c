/* --grammar, --grammar-file, -j/--json-schema, -jf/--json-schema-file (cli_grammar.h). */
#include "cli/cli_grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int vkf_cli_grammar_load(const char *cmd, vkf_cli_grammar *g) {
    int n = (g->grammar != NULL) + (g->grammar_file != NULL) + (g->schema != NULL) +
            (g->schema_file != NULL);
    g->text = NULL;
    if (n == 0) return -1;
    if (n > 1)
        return vkf_usage_error(cmd, "--grammar, --grammar-file, --json-schema and "
                                    "--json-schema-file: give one");
    const char *flag = g->grammar        ? "--grammar"
                       : g->grammar_file ? "--grammar-file"
                       : g->schema       ? "--json-schema"
                                         : "--json-schema-file";
    char *file = NULL;
    if (g->grammar_file && !(file = vkf_cli_read_text(cmd, flag, g->grammar_file))) return 1;
    if (g->schema_file && !(file = vkf_cli_read_text(cmd, flag, g->schema_file))) return 1;
    const char *src = file ? file : g->grammar ? g->grammar : g->schema;
    int is_schema = g->schema || g->schema_file;
    vkf_status st;
    if (is_schema) {
        st = vkf_json_schema_to_grammar(src, &g->text);
    } else {
        st = vkf_grammar_check(src, NULL);
        if (st == VKF_OK && !(g->text = strdup(src))) st = VKF_ERROR_OUT_OF_MEMORY;
    }
    free(file);
    if (st == VKF_OK) return -1;
    if (st == VKF_ERROR_OUT_OF_MEMORY) return vkf_cli_fail(cmd);
    return vkf_usage_error(cmd, "%s: %s", flag, vkf_last_error());
}

void vkf_cli_grammar_free(vkf_cli_grammar *g) {
    free(g->text);
    g->text = NULL;
}
