/* vkformer template: renders a chat template (a model's or a file) with messages from a JSON
 * file and prints exactly the result: no newline is added. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/chat.h"

static char *read_text(const char *path) {
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
    if (p) p[len] = 0;
    return p;
}

static int usage(void) {
    fprintf(stderr,
            "usage: vkformer template (-m MODEL | -t TEMPLATE_FILE) --messages FILE.json [--tools "
            "FILE.json]\n"
            "                         [--context FILE.json] [--bos S] [--eos S] "
            "[--no-generation-prompt]\n"
            "  prints the rendered text exactly (no newline added); --context: a JSON object of "
            "further\n"
            "  variables; a model without a template falls back to ChatML (llama.cpp's default)\n");
    return 2;
}

int vkf_cmd_template(int argc, char **argv) {
    const char *model = NULL, *tfile = NULL, *mfile = NULL, *tools_file = NULL, *ctx_file = NULL;
    const char *bos = NULL, *eos = NULL;
    int add_gen = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has)
            model = argv[++i];
        else if ((!strcmp(a, "-t") || !strcmp(a, "--template")) && has)
            tfile = argv[++i];
        else if (!strcmp(a, "--messages") && has)
            mfile = argv[++i];
        else if (!strcmp(a, "--tools") && has)
            tools_file = argv[++i];
        else if (!strcmp(a, "--context") && has)
            ctx_file = argv[++i];
        else if (!strcmp(a, "--bos") && has)
            bos = argv[++i];
        else if (!strcmp(a, "--eos") && has)
            eos = argv[++i];
        else if (!strcmp(a, "--no-generation-prompt"))
            add_gen = 0;
        else
            return usage();
    }
    if (!mfile || (!model) == (!tfile)) return usage();
    char *tmpl = NULL, *mbos = NULL, *meos = NULL, *messages = NULL, *tools = NULL, *ctx = NULL,
         *out = NULL;
    int rc = 0;
    if (model) {
        if (vkf_chat_model_files(model, &tmpl, &mbos, &meos) != VKF_OK) {
            rc = vkf_cli_fail(model);
            goto done;
        }
        char *tool_use = NULL; /* with tools, the model's "tool_use" template if it has one */
        if (tools_file && vkf_chat_model_named_template(model, "tool_use", &tool_use) == VKF_OK &&
            tool_use) {
            free(tmpl);
            tmpl = tool_use;
        }
    } else if (!(tmpl = read_text(tfile))) {
        fprintf(stderr, "vkformer: cannot read template file %s\n", tfile);
        rc = 1;
        goto done;
    }
    const char *files[3] = {mfile, tools_file, ctx_file};
    char **texts[3] = {&messages, &tools, &ctx};
    for (int i = 0; i < 3; i++)
        if (files[i] && !(*texts[i] = read_text(files[i]))) {
            fprintf(stderr, "vkformer: cannot read %s\n", files[i]);
            rc = 1;
            goto done;
        }
    for (int i = 0; i < 3; i++) { /* name the file of a JSON error */
        if (!*texts[i]) continue;
        const char *end = NULL;
        cJSON *j = cJSON_ParseWithOpts(*texts[i], &end, 0);
        if (!j) {
            fprintf(stderr, "vkformer: %s: not valid JSON (at byte %zu)\n", files[i],
                    end ? (size_t)(end - *texts[i]) : 0);
            rc = 1;
            goto done;
        }
        cJSON_Delete(j);
    }
    vkf_status s;
    if (!tmpl) {
        fprintf(stderr, "vkformer: %s has no chat template: using ChatML, llama.cpp's default\n",
                model);
        s = vkf_chat_chatml(messages, add_gen, &out);
    } else {
        s = vkf_chat_template_render(tmpl, messages, tools, ctx, bos ? bos : mbos, eos ? eos : meos,
                                     add_gen, &out);
    }
    if (s != VKF_OK) {
        rc = vkf_cli_fail("template");
        goto done;
    }
    fwrite(out, 1, strlen(out), stdout);
    if (fflush(stdout) != 0) rc = 1;
done:
    free(tmpl);
    free(mbos);
    free(meos);
    free(messages);
    free(tools);
    free(ctx);
    free(out);
    return rc;
}
