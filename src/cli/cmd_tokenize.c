/* vkformer tokenize / detokenize: the tokenizer of a model directory, GGUF or tokenizer file,
 * through the public tokenizer API (vkf_tokenizer_open), from the command line. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/args.h"

static int open_tok(const char *cmd, const char *model, const char *tok_path, vkf_tokenizer **t) {
    const char *path = tok_path ? tok_path : model;
    if (!path)
        return vkf_usage_error(cmd, "-m MODEL or --tokenizer PATH is required (a model directory, "
                                    ".gguf or tokenizer file)");
    if (vkf_tokenizer_open(path, t) != VKF_OK) return vkf_cli_fail(cmd);
    return 0;
}

static int flush_stdout(const char *cmd) { return vkf_cli_stdout_flush(cmd); }

int vkf_cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *tok_path = NULL, *prompt = NULL, *file = NULL;
    int json = 0, special = 1;
    vkf_arg args[] = {{"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH",
                       .help = "model directory, .gguf or tokenizer file"},
                      {"-p|--prompt", VKF_ARG_STR, &prompt, .metavar = "TEXT", .help = "the text"},
                      {"-f|--file", VKF_ARG_STR, &file, .metavar = "FILE",
                       .help = "the text of FILE ('-': stdin)"},
                      {"--tokenizer", VKF_ARG_STR, &tok_path, .metavar = "PATH",
                       .help = "a tokenizer file or directory (instead of -m)"},
                      {"--json", VKF_ARG_SET, &json,
                       .help = "{\"ids\": [...], \"tokens\": [...], \"tokenizer\": KIND}"},
                      {"--no-special", VKF_ARG_CLEAR, &special,
                       .help = "add no BOS/EOS/[CLS]... and read special-token text as text"},
                      {0}};
    vkf_cmd_spec spec = {
        "tokenize", "-m MODEL (-p TEXT | -f FILE) [--json] [--no-special] [--tokenizer PATH]",
        "Prints the token ids of a text, with the special tokens generate adds (BOS where the "
        "model's config asks for it).",
        args, .epilog = NULL};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (!prompt == !file)
        return vkf_usage_error("tokenize", "give exactly one of -p TEXT and -f FILE");
    char *text = NULL;
    if (file && !(text = vkf_cli_read_text("tokenize", "-f", file))) return 1;
    vkf_tokenizer *t;
    if ((rc = open_tok("tokenize", model, tok_path, &t))) {
        free(text);
        return rc;
    }
    const char *in = file ? text : prompt;
    vkf_cli_warn_unknown_chars("tokenize", tok_path ? tok_path : model, in);
    int32_t *ids = NULL;
    size_t n = 0;
    int flags = special ? VKF_TOKENIZE_ADD_SPECIAL | VKF_TOKENIZE_PARSE_SPECIAL : 0;
    if (vkf_tokenizer_tokenize(t, in, strlen(in), flags, &ids, &n) != VKF_OK) {
        free(text);
        vkf_tokenizer_close(t);
        return vkf_cli_fail("tokenize");
    }
    if (json) {
        cJSON *o = cJSON_CreateObject(), *ja = cJSON_AddArrayToObject(o, "ids"),
              *jt = cJSON_AddArrayToObject(o, "tokens");
        for (size_t i = 0; i < n; i++) {
            cJSON_AddItemToArray(ja, cJSON_CreateNumber(ids[i]));
            /* the vocabulary string of the token ("Ġthe", "▁the", "##ing", "<0x0A>") */
            const char *s = vkf_tokenizer_piece(t, ids[i]);
            cJSON_AddItemToArray(jt, cJSON_CreateString(s ? s : ""));
        }
        cJSON_AddStringToObject(o, "tokenizer", vkf_tokenizer_algorithm(t));
        char *s = cJSON_PrintUnformatted(o);
        printf("%s\n", s ? s : "{}");
        free(s);
        cJSON_Delete(o);
    } else {
        for (size_t i = 0; i < n; i++)
            printf("%s%d", i ? " " : "", ids[i]);
        printf("\n");
    }
    free(ids);
    free(text);
    vkf_tokenizer_close(t);
    return flush_stdout("tokenize");
}

/* "1,2,3" or "1 2 3" into *ids (malloc'ed). */
static int parse_id_list(void *dst, const char *list, char *err, size_t errn) {
    struct {
        int32_t *ids;
        size_t n;
    } *out = dst;
    size_t cap = 16, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    for (const char *p = list; ids && *p;) {
        if (*p == ',' || *p == ' ') {
            p++;
            continue;
        }
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX || (*end && *end != ',' && *end != ' ')) {
            snprintf(err, errn,
                     "expected token ids (integers >= 0) separated by commas, found \"%s\"", p);
            free(ids);
            return -1;
        }
        if (n == cap) {
            int32_t *q = realloc(ids, (cap *= 2) * sizeof *ids);
            if (!q) free(ids);
            ids = q;
            if (!ids) break;
        }
        ids[n++] = (int32_t)v;
        p = end;
    }
    if (!ids) {
        snprintf(err, errn, "out of memory");
        return -1;
    }
    free(out->ids);
    out->ids = ids;
    out->n = n;
    return 0;
}

int vkf_cmd_detokenize(int argc, char **argv) {
    const char *model = NULL, *tok_path = NULL;
    int special = 0;
    struct {
        int32_t *ids;
        size_t n;
    } list = {0};
    int have_ids = 0;
    vkf_arg args[] = {{"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH",
                       .help = "model directory, .gguf or tokenizer file"},
                      {"--ids", VKF_ARG_CALL, &list, .metavar = "1,2,3", .call = parse_id_list,
                       .required = 1, .seen = &have_ids, .help = "the token ids"},
                      {"--tokenizer", VKF_ARG_STR, &tok_path, .metavar = "PATH",
                       .help = "a tokenizer file or directory (instead of -m)"},
                      {"--special", VKF_ARG_SET, &special,
                       .help = "show special tokens (BOS, [CLS], ...) as text"},
                      {0}};
    vkf_cmd_spec spec = {"detokenize", "-m MODEL --ids 1,2,3 [--special] [--tokenizer PATH]",
                         "Prints the text of token ids.", args, .epilog = NULL};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) {
        free(list.ids);
        return rc;
    }
    vkf_tokenizer *t;
    if ((rc = open_tok("detokenize", model, tok_path, &t))) {
        free(list.ids);
        return rc;
    }
    char *out = NULL;
    size_t len = 0;
    vkf_status s = vkf_tokenizer_detokenize(t, list.ids, list.n,
                                            special ? VKF_DETOKENIZE_SPECIAL : 0, &out, &len);
    free(list.ids);
    vkf_tokenizer_close(t);
    if (s != VKF_OK) return vkf_cli_fail("detokenize");
    fwrite(out, 1, len, stdout);
    printf("\n");
    free(out);
    return flush_stdout("detokenize");
}
