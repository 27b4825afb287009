/* vkformer rerank: a query against documents (one per line of a file) through a cross-encoder
 * (vkf_rerank), most relevant first: text lines or JSON in /v1/rerank's shape on stdout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/args.h"

static int parse_format(void *dst, const char *v, char *err, size_t n) {
    if (strcmp(v, "text") && strcmp(v, "json")) {
        snprintf(err, n, "expected text or json, got '%s'", v);
        return -1;
    }
    *(const char **)dst = v;
    return 0;
}

static const float *g_scores;
static int by_score(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (g_scores[x] != g_scores[y]) return g_scores[x] > g_scores[y] ? -1 : 1;
    return (x > y) - (x < y);
}

int vkf_cmd_rerank(int argc, char **argv) {
    const char *model = NULL, *query = NULL, *file = NULL, *format = "text";
    int32_t top_n = 0;
    vkf_context_params cp = {0};
    vkf_arg args[] = {
        {"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH", .required = 1,
         .help = "a cross-encoder: a bert GGUF with pooling_type 4 (rank) and its classifier "
                 "head (cls, cls.output)"},
        {"-q|--query", VKF_ARG_STR, &query, .metavar = "TEXT", .required = 1, .help = "the query"},
        {"-f|--file", VKF_ARG_STR, &file, .metavar = "FILE", .required = 1,
         .help = "the documents, one per line of FILE ('-': stdin)"},
        {"--top-n", VKF_ARG_INT, &top_n, .min = 1, .max = 1 << 30, .metavar = "N",
         .help = "print the N most relevant only (default: all)"},
        {"-o|--output-format", VKF_ARG_CALL, &format, .metavar = "FMT", .call = parse_format,
         .help = "text (score, line number and document per line, most relevant first; "
                 "default) or json (POST /v1/rerank's response with the documents)"},
        VKF_ARGS_BACKEND(&cp),
        {0}};
    vkf_cmd_spec spec = {
        "rerank", "-m MODEL -q QUERY -f DOCS [--top-n N] [-o text|json]",
        "Scores each document's relevance to the query with a cross-encoder, as llama-server's "
        "/rerank does (the pair [CLS] query [SEP] document, XLM-RoBERTa's <s> query </s> </s> "
        "document </s>, through the model's classifier head; "
        "the score is its logit), and prints the documents most relevant first.",
        args,
        .epilog = "example: vkformer rerank -m reranker.gguf -q \"what is a GPU?\" -f docs.txt"};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    char *text = vkf_cli_read_text("rerank", "-f", file), **docs = NULL;
    int32_t n = 0;
    if (!text) return 1;
    if (vkf_cli_split_lines(text, &docs, &n)) {
        free(text);
        fprintf(stderr, "vkformer: rerank: out of memory\n");
        return 1;
    }
    vkf_context *ctx = NULL;
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    float *scores = calloc((size_t)n + 1, sizeof *scores);
    int32_t *ntok = calloc((size_t)n + 1, sizeof *ntok), *order = calloc((size_t)n + 1, 4);
    rc = 1;
    if (!scores || !ntok || !order) {
        fprintf(stderr, "vkformer: rerank: out of memory\n");
        goto done;
    }
    if (n == 0) {
        fprintf(stderr, "vkformer: rerank: %s has no documents (one per line)\n", file);
        goto done;
    }
    if (vkf_cli_context(&cp, &ctx) != VKF_OK) {
        rc = vkf_cli_fail("rerank");
        goto done;
    }
    vkf_model_params mp = {.path = model, .progress = vkf_cli_progress, .progress_user = "loading"};
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK || vkf_session_create(m, NULL, &s) != VKF_OK) {
        rc = vkf_cli_fail("rerank");
        goto done;
    }
    vkf_set_shader_compile_callback(vkf_cli_compile_progress, NULL);
    vkf_status st = vkf_rerank(s, query, (const char *const *)docs, n, scores, ntok);
    vkf_cli_progress_clear();
    if (st != VKF_OK) {
        rc = vkf_cli_fail("rerank");
        goto done;
    }
    for (int32_t i = 0; i < n; i++)
        order[i] = i;
    g_scores = scores;
    qsort(order, (size_t)n, sizeof *order, by_score);
    int32_t shown = top_n > 0 && top_n < n ? top_n : n;
    if (!strcmp(format, "json")) {
        long tokens = 0;
        for (int32_t i = 0; i < n; i++)
            tokens += ntok[i];
        printf("{\"object\":\"list\",\"usage\":{\"prompt_tokens\":%ld,\"total_tokens\":%ld},"
               "\"results\":[",
               tokens, tokens);
        for (int32_t k = 0; k < shown; k++) {
            printf("%s{\"index\":%d,\"relevance_score\":%.9g,\"document\":{\"text\":", k ? "," : "",
                   order[k], (double)scores[order[k]]);
            vkf_cli_json_str(docs[order[k]]);
            printf("}}");
        }
        printf("]}\n");
    } else {
        for (int32_t k = 0; k < shown; k++)
            printf("%.6f\t%d\t%s\n", (double)scores[order[k]], order[k] + 1, docs[order[k]]);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "vkformer: rerank: writing to stdout: %s\n", strerror(errno ? errno : EIO));
        goto done;
    }
    rc = 0;
done:
    free(scores);
    free(ntok);
    free(order);
    vkf_session_free(s);
    vkf_model_free(m);
    vkf_context_free(ctx);
    free(docs);
    free(text);
    return rc;
}
