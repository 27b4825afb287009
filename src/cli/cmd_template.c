/* vkformer template: renders a chat template (a model's or a file) with messages from a JSON
 * file and prints exactly the result: no newline is added. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/args.h"

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

int vkf_cmd_template(int argc, char **argv) {
    const char *model = NULL, *tfile = NULL, *mfile = NULL, *tools_file = NULL, *ctx_file = NULL;
    const char *bos = NULL, *eos = NULL;
    int add_gen = 1;
    vkf_arg args[] = {
        {"-m|--model", VKF_ARG_STR, &model, .metavar = "MODEL",
         .help = "the model's template (GGUF or HF directory)"},
        {"-t|--template", VKF_ARG_STR, &tfile, .metavar = "FILE",
         .help = "a template file instead"},
        {"--messages", VKF_ARG_STR, &mfile, .metavar = "FILE.json", .required = 1,
         .help = "the conversation: a JSON array of {\"role\", \"content\", ...}"},
        {"--tools", VKF_ARG_STR, &tools_file, .metavar = "FILE.json",
         .help = "tool schemas (a JSON array)"},
        {"--context", VKF_ARG_STR, &ctx_file, .metavar = "FILE.json",
         .help = "further template variables (a JSON object)"},
        {"--bos", VKF_ARG_STR, &bos, .metavar = "S", .help = "bos_token (default: the model's)"},
        {"--eos", VKF_ARG_STR, &eos, .metavar = "S", .help = "eos_token (default: the model's)"},
        {"--no-generation-prompt", VKF_ARG_CLEAR, &add_gen,
         .help = "add_generation_prompt = false"},
        {0}};
    vkf_cmd_spec spec = {
        "template", "(-m MODEL | -t TEMPLATE_FILE) --messages FILE.json [options]",
        "Renders a chat template as Hugging Face's apply_chat_template does and prints exactly "
        "the\n"
        "result on stdout (no newline added). A model without a template falls back to ChatML\n"
        "(llama.cpp's default), said on stderr. A template that raises exits 1 with its message.",
        args, .epilog = NULL};
    int prc = vkf_args_parse(&spec, argc, argv);
    if (prc >= 0) return prc;
    if ((!model) == (!tfile))
        return vkf_usage_error("template", "give exactly one of -m MODEL and -t TEMPLATE_FILE");
    char *tmpl = NULL, *mbos = NULL, *meos = NULL, *messages = NULL, *tools = NULL, *ctx = NULL,
         *out = NULL;
    int rc = 0;
    if (model) {
        if (vkf_chat_template_read(model, NULL, &tmpl, &mbos, &meos) != VKF_OK) {
            rc = vkf_cli_fail(model);
            goto done;
        }
        char *tool_use = NULL; /* with tools, the model's "tool_use" template if it has one */
        if (tools_file &&
            vkf_chat_template_read(model, "tool_use", &tool_use, NULL, NULL) == VKF_OK &&
            tool_use) {
            free(tmpl);
            tmpl = tool_use;
        }
    } else if (!(tmpl = read_text(tfile))) {
        fprintf(stderr, "vkformer: template: cannot read the template file %s\n", tfile);
        rc = 1;
        goto done;
    }
    const char *files[3] = {mfile, tools_file, ctx_file};
    char **texts[3] = {&messages, &tools, &ctx};
    for (int i = 0; i < 3; i++)
        if (files[i] && !(*texts[i] = read_text(files[i]))) {
            fprintf(stderr, "vkformer: template: cannot read %s\n", files[i]);
            rc = 1;
            goto done;
        }
    for (int i = 0; i < 3; i++) { /* name the file of a JSON error */
        if (!*texts[i]) continue;
        const char *end = NULL;
        cJSON *j = cJSON_ParseWithOpts(*texts[i], &end, 0);
        if (!j) {
            fprintf(stderr, "vkformer: template: %s: not valid JSON (at byte %zu)\n", files[i],
                    end ? (size_t)(end - *texts[i]) : 0);
            rc = 1;
            goto done;
        }
        cJSON_Delete(j);
    }
    vkf_status s;
    if (!tmpl) {
        fprintf(stderr,
                "vkformer: template: %s has no chat template: using ChatML, llama.cpp's default\n",
                model);
        s = vkf_chat_chatml_render(messages, add_gen, &out);
    } else {
        s = vkf_chat_template_render(tmpl, messages, tools, ctx, bos ? bos : mbos, eos ? eos : meos,
                                     add_gen, &out);
    }
    if (s != VKF_OK) {
        rc = vkf_cli_fail("template");
        goto done;
    }
    fwrite(out, 1, strlen(out), stdout);
    rc = vkf_cli_stdout_flush("template");
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
