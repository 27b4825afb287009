/* vkformer tokenize / detokenize: the tokenizer of a model directory, GGUF or tokenizer file
 * (vkf_tokenizer_open_auto), from the command line. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tokenizer/tokenizer.h"

static char *read_file(const char *path, size_t *n) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0, got;
    char *p = malloc(cap + 1);
    while (p && (got = fread(p + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *q = realloc(p, (cap *= 2) + 1);
            if (!q) free(p);
            p = q;
        }
    }
    if (f != stdin) fclose(f);
    if (p) {
        p[len] = 0;
        *n = len;
    }
    return p;
}

static int open_tok(const char *model, const char *tok_path, vkf_tokenizer **t) {
    const char *path = tok_path ? tok_path : model;
    if (!path) {
        fprintf(stderr, "vkformer: give -m MODEL (a model directory, .gguf or tokenizer file)\n");
        return 2;
    }
    if (vkf_tokenizer_open_auto(path, t) != VKF_OK) return vkf_cli_fail("tokenizer");
    return 0;
}

int vkf_cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *tok_path = NULL, *prompt = NULL, *file = NULL;
    int json = 0, special = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has) model = argv[++i];
        else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && has) prompt = argv[++i];
        else if ((!strcmp(a, "-f") || !strcmp(a, "--file")) && has) file = argv[++i];
        else if (!strcmp(a, "--tokenizer") && has) tok_path = argv[++i];
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--no-special")) special = 0;
        else {
            fprintf(stderr,
                    "usage: vkformer tokenize -m MODEL (-p TEXT | -f FILE) [--json] [--no-special] "
                    "[--tokenizer PATH]\n"
                    "  --no-special: add no BOS/EOS/[CLS]... and read special-token text as text\n");
            return 2;
        }
    }
    if (!prompt == !file) {
        fprintf(stderr, "vkformer tokenize: give exactly one of -p TEXT and -f FILE\n");
        return 2;
    }
    vkf_tokenizer *t;
    int rc = open_tok(model, tok_path, &t);
    if (rc) return rc;
    size_t len = 0;
    char *text = NULL;
    if (file) {
        if (!(text = read_file(file, &len))) {
            fprintf(stderr, "vkformer tokenize: %s: %s\n", file, strerror(errno));
            vkf_tokenizer_free(t);
            return 1;
        }
    } else {
        len = strlen(prompt);
    }
    int32_t *ids = NULL;
    size_t n = 0;
    if (vkf_tokenizer_encode_ex(t, file ? text : prompt, len, special, special, &ids, &n) != VKF_OK) {
        free(text);
        vkf_tokenizer_free(t);
        return vkf_cli_fail("tokenize");
    }
    if (json) {
        cJSON *o = cJSON_CreateObject(), *ja = cJSON_AddArrayToObject(o, "ids"),
              *jt = cJSON_AddArrayToObject(o, "tokens");
        for (size_t i = 0; i < n; i++) {
            cJSON_AddItemToArray(ja, cJSON_CreateNumber(ids[i]));
            /* the vocabulary string of the token ("Ġthe", "▁the", "##ing", "<0x0A>") */
            const char *s = vkf_tokenizer_token_text(t, ids[i]);
            cJSON_AddItemToArray(jt, cJSON_CreateString(s ? s : ""));
        }
        cJSON_AddStringToObject(o, "tokenizer", vkf_tokenizer_kind(t));
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
    vkf_tokenizer_free(t);
    return 0;
}

int vkf_cmd_detokenize(int argc, char **argv) {
    const char *model = NULL, *tok_path = NULL, *list = NULL;
    int flags = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has) model = argv[++i];
        else if (!strcmp(a, "--ids") && has) list = argv[++i];
        else if (!strcmp(a, "--tokenizer") && has) tok_path = argv[++i];
        else if (!strcmp(a, "--special")) flags |= VKF_DECODE_SPECIAL;
        else {
            fprintf(stderr, "usage: vkformer detokenize -m MODEL --ids 1,2,3 [--special] "
                            "[--tokenizer PATH]\n"
                            "  --special: show special tokens (BOS, [CLS], ...) as text\n");
            return 2;
        }
    }
    if (!list) {
        fprintf(stderr, "vkformer detokenize: give --ids 1,2,3\n");
        return 2;
    }
    size_t cap = 16, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    for (const char *p = list; ids && *p;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < INT32_MIN || v > INT32_MAX || (*end && *end != ',' && *end != ' ')) {
            fprintf(stderr, "vkformer detokenize: --ids: expected comma-separated integers, found "
                            "\"%s\"\n", p);
            free(ids);
            return 2;
        }
        if (n == cap) {
            int32_t *q = realloc(ids, (cap *= 2) * sizeof *ids);
            if (!q) free(ids);
            ids = q;
            if (!ids) break;
        }
        ids[n++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (!ids) {
        fprintf(stderr, "vkformer detokenize: out of memory\n");
        return 1;
    }
    vkf_tokenizer *t;
    int rc = open_tok(model, tok_path, &t);
    if (rc) {
        free(ids);
        return rc;
    }
    char *out = NULL;
    size_t len = 0;
    if (vkf_tokenizer_decode_ex(t, ids, n, flags, &out, &len) != VKF_OK) {
        free(ids);
        vkf_tokenizer_free(t);
        return vkf_cli_fail("detokenize");
    }
    fwrite(out, 1, len, stdout);
    printf("\n");
    free(out);
    free(ids);
    vkf_tokenizer_free(t);
    return 0;
}
