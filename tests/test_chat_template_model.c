/* Chat templates of models: where they come from (GGUF tokenizer.chat_template with the
 * bos/eos token texts, Hugging Face tokenizer_config.json as a string or a list of named
 * templates, chat_template.jinja), the ChatML fallback of vkf_chat_apply for a model without a
 * template, and `vkformer template -m`. The GGUF references (llama.cpp's vocabulary files of the
 * real-vocab set, as llama.cpp's gguf-py reads them; see its README): ggml-vocab-phi-3.gguf carries
 * exactly the chat-templates set's Phi-3-mini.jinja with bos/eos "<s>" / "<|endoftext|>", and
 * ggml-vocab-llama-bpe.gguf carries no template (llama.cpp writes its vocabulary files without
 * one) beside bos/eos "<|begin_of_text|>" / "<|end_of_text|>". */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "generate/chat.h"
#include "model/model_chat.h"
#include "testutil.h"

static char *read_all(const char *path) {
    size_t n;
    char *p = vkt_read_file(path, &n);
    if (!p) return NULL;
    char *z = realloc(p, n + 1);
    if (!z) {
        free(p);
        return NULL;
    }
    z[n] = 0;
    return z;
}

/* tmpl_rel NULL: the GGUF has no tokenizer.chat_template */
static void check_gguf(const char *rel, const char *tmpl_rel, const char *bos, const char *eos) {
    char path[1024];
    snprintf(path, sizeof path, "%s", vkt_fixture(rel));
    char *want = tmpl_rel ? read_all(vkt_fixture(tmpl_rel)) : NULL;
    char *t = NULL, *b = NULL, *e = NULL;
    VKT_OK(vkf_chat_model_files(path, &t, &b, &e));
    if (tmpl_rel)
        VKT_CHECK(t && want && strcmp(t, want) == 0, "%s: template differs from %s", rel, tmpl_rel);
    else
        VKT_CHECK(t == NULL, "%s: a template where the file has none", rel);
    VKT_CHECK(b && strcmp(b, bos) == 0, "%s: bos '%s', expected '%s'", rel, b ? b : "(null)", bos);
    VKT_CHECK(e && strcmp(e, eos) == 0, "%s: eos '%s', expected '%s'", rel, e ? e : "(null)", eos);
    free(want);
    free(t);
    free(b);
    free(e);
}

static void check_hf_dirs(const char *dir) {
    char p[1200], q[1200];
    char *t, *b, *e;
    /* a string template, special tokens as a string and as an AddedToken object */
    snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
    vkt_write_file(
        p, "{\"chat_template\": \"{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor "
           "%}\", "
           "\"bos_token\": \"<s>\", \"eos_token\": {\"content\": \"</s>\", \"lstrip\": false}}");
    VKT_OK(vkf_chat_model_files(dir, &t, &b, &e));
    VKT_CHECK(t && strcmp(t, "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}") ==
                       0,
              "string template: %s", t ? t : "(null)");
    VKT_CHECK(b && !strcmp(b, "<s>") && e && !strcmp(e, "</s>"), "special tokens");
    free(t), free(b), free(e);
    /* named templates: "default" is used */
    vkt_write_file(p,
                   "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}, {\"name\": "
                   "\"default\", \"template\": \"D\"}]}");
    VKT_OK(vkf_chat_model_files(dir, &t, &b, &e));
    VKT_CHECK(t && strcmp(t, "D") == 0, "named templates: got %s", t ? t : "(null)");
    VKT_CHECK(!b && !e, "no special tokens expected");
    free(t), free(b), free(e);
    VKT_OK(vkf_chat_model_named_template(dir, "tool_use", &t));
    VKT_CHECK(t && strcmp(t, "T") == 0, "tool_use: got %s", t ? t : "(null)");
    free(t);
    /* transformers' additional_chat_templates/NAME.jinja */
    vkt_write_file(p, "{\"chat_template\": \"D\"}");
    snprintf(q, sizeof q, "%s/additional_chat_templates", dir);
    mkdir(q, 0700);
    snprintf(q, sizeof q, "%s/additional_chat_templates/tool_use.jinja", dir);
    vkt_write_file(q, "TU");
    VKT_OK(vkf_chat_model_named_template(dir, "tool_use", &t));
    VKT_CHECK(t && strcmp(t, "TU") == 0, "additional_chat_templates: got %s", t ? t : "(null)");
    free(t);
    unlink(q);
    snprintf(q, sizeof q, "%s/additional_chat_templates", dir);
    rmdir(q);
    /* no chat_template key: chat_template.jinja beside it */
    vkt_write_file(p, "{\"bos_token\": null}");
    snprintf(q, sizeof q, "%s/chat_template.jinja", dir);
    vkt_write_file(q, "J{{ messages | length }}\n");
    VKT_OK(vkf_chat_model_files(dir, &t, &b, &e));
    VKT_CHECK(t && strcmp(t, "J{{ messages | length }}\n") == 0, "chat_template.jinja: got %s",
              t ? t : "(null)");
    free(t), free(b), free(e);
    unlink(q);
    /* neither: no template, no error */
    VKT_OK(vkf_chat_model_files(dir, &t, &b, &e));
    VKT_CHECK(t == NULL, "template where there is none");
    free(t), free(b), free(e);
    /* malformed tokenizer_config.json names the file */
    vkt_write_file(p, "{\"chat_template\": ");
    VKT_CHECK(vkf_chat_model_files(dir, &t, &b, &e) == VKF_ERROR_FORMAT,
              "malformed config accepted");
    VKT_CHECK(strstr(vkf_last_error(), "tokenizer_config.json") != NULL, "file not named: %s",
              vkf_last_error());
    unlink(p);
}

/* llama.cpp's ChatML default for a model without a template (models/kjv-gpt has none). */
static void check_default(void) {
    vkf_context_params cp = {0};
    cp.backend = VKF_BACKEND_CPU;
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    if (!ctx) return;
    vkf_model_params mp = {0};
    mp.path = VKF_SOURCE_DIR "/models/kjv-gpt";
    vkf_model *m = NULL;
    VKT_OK(vkf_model_load(ctx, &mp, &m));
    if (m) {
        VKT_CHECK(vkf_model_chat_template(m) == NULL, "kjv-gpt has no template");
        char *out = NULL;
        int used_default = 0;
        VKT_OK(vkf_chat_apply(
            m, "[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"Hi\"}]",
            1, &out, &used_default));
        VKT_CHECK(used_default == 1, "used_default not set");
        VKT_CHECK(out && strcmp(out, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_"
                                     "end|>\n<|im_start|>assistant\n") == 0,
                  "ChatML: got '%s'", out ? out : "(null)");
        free(out);
        VKT_CHECK(vkf_chat_apply(m, "{\"role\":\"user\"}", 1, &out, &used_default) ==
                      VKF_ERROR_FORMAT,
                  "messages that are not an array accepted");
        vkf_model_free(m);
    }
    vkf_context_free(ctx);
}

/* A model directory with a tokenizer_config.json template: models/kjv-gpt's files linked into a
 * temporary directory beside one. vkf_chat_apply_ex passes tools and further variables. */
static void check_model_template(const char *dir) {
    char p[1200], l[1200];
    const char *files[] = {"config.json", "model.safetensors", "char_vocab.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, VKF_SOURCE_DIR "/models/kjv-gpt/%s", files[i]);
        snprintf(l, sizeof l, "%s/%s", dir, files[i]);
        VKT_CHECK(symlink(p, l) == 0, "symlink %s", l);
    }
    snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
    vkt_write_file(
        p, "{\"bos_token\": \"<B>\", \"eos_token\": \"<E>\", \"chat_template\": [{\"name\": "
           "\"default\", "
           "\"template\": \"{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{{ "
           "eos_token }}{% "
           "endfor %}{% if tools %}T{{ tools | length }}{% endif %}{{ extra | default('') }}{% if "
           "add_generation_prompt %}>{% endif %}\"}, {\"name\": \"tool_use\", \"template\": "
           "\"TOOLS{{ tools | "
           "length }}\"}]}");
    vkf_context_params cp = {0};
    cp.backend = VKF_BACKEND_CPU;
    vkf_context *ctx = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    vkf_model_params mp = {0};
    mp.path = dir;
    vkf_model *m = NULL;
    if (ctx) VKT_OK(vkf_model_load(ctx, &mp, &m));
    if (m) {
        VKT_CHECK(vkf_model_chat_template(m) && strstr(vkf_model_chat_template(m), "eos_token"),
                  "template not loaded");
        char *out = NULL;
        int used_default = 1;
        VKT_OK(
            vkf_chat_apply(m, "[{\"role\":\"user\",\"content\":\"Hi\"}]", 1, &out, &used_default));
        VKT_CHECK(used_default == 0 && out && strcmp(out, "<B>user:Hi<E>>") == 0, "apply: got '%s'",
                  out ? out : "(null)");
        free(out);
        VKT_OK(vkf_chat_apply_ex(m, "[{\"role\":\"user\",\"content\":\"Hi\"}]",
                                 "[{\"type\":\"function\"}]", "{\"extra\": \"X\"}", 0, &out,
                                 &used_default));
        VKT_CHECK(out && strcmp(out, "TOOLS1") == 0, "apply_ex with tools uses tool_use: got '%s'",
                  out ? out : "(null)");
        free(out);
        VKT_OK(vkf_chat_apply_ex(m, "[{\"role\":\"user\",\"content\":\"Hi\"}]", NULL,
                                 "{\"extra\": \"X\"}", 0, &out, &used_default));
        VKT_CHECK(out && strcmp(out, "<B>user:Hi<E>X") == 0, "apply_ex: got '%s'",
                  out ? out : "(null)");
        free(out);
        vkf_model_free(m);
    }
    vkf_context_free(ctx);
    unlink(p);
    for (int i = 0; i < 3; i++) {
        snprintf(l, sizeof l, "%s/%s", dir, files[i]);
        unlink(l);
    }
}

static void check_cli(const char *dir) {
    char mp[1200], op[1200], ep[1200], gguf[1024];
    snprintf(mp, sizeof mp, "%s/m.json", dir);
    snprintf(op, sizeof op, "%s/out.txt", dir);
    snprintf(ep, sizeof ep, "%s/err.txt", dir);
    snprintf(gguf, sizeof gguf, "%s", vkt_fixture("real-vocab/ggml-vocab-phi-3.gguf"));
    vkt_write_file(mp, "[{\"role\": \"user\", \"content\": \"Hello\"}]");
    /* Phi-3-mini.jinja on one user message (fixture Phi-3-mini/single_user renders it with
     * bos_token ""): "<|user|>\nHello<|end|>\n<|assistant|>\n"; -m adds the GGUF's "<s>" */
    const char *body = "<|user|>\nHello<|end|>\n<|assistant|>\n";
    char *argv1[] = {"./vkformer", "template", "-m", gguf, "--messages", mp, NULL};
    int rc = vkt_run(argv1, op, ep);
    char *out = read_all(op);
    VKT_CHECK(rc == 0 && out && strncmp(out, "<s>", 3) == 0 && strcmp(out + 3, body) == 0,
              "-m gguf: exit %d, '%s'", rc, out ? out : "(null)");
    free(out);
    char *argv2[] = {"./vkformer", "template", "-m", gguf, "--messages", mp, "--bos", "", NULL};
    rc = vkt_run(argv2, op, ep);
    out = read_all(op);
    VKT_CHECK(rc == 0 && out && strcmp(out, body) == 0, "--bos '': exit %d, '%s'", rc,
              out ? out : "(null)");
    free(out);
    /* no template: ChatML, and stderr says so */
    char *argv3[] = {"./vkformer",
                     "template",
                     "-m",
                     VKF_SOURCE_DIR "/models/kjv-gpt",
                     "--messages",
                     mp,
                     "--no-generation-prompt",
                     NULL};
    rc = vkt_run(argv3, op, ep);
    out = read_all(op);
    char *err = read_all(ep);
    VKT_CHECK(rc == 0 && out && strcmp(out, "<|im_start|>user\nHello<|im_end|>\n") == 0,
              "ChatML via CLI: exit %d, '%s'", rc, out ? out : "(null)");
    VKT_CHECK(err && strstr(err, "ChatML"), "no fallback note on stderr: '%s'",
              err ? err : "(null)");
    free(out);
    free(err);
    /* a raising template exits non-zero with its message on stderr and prints nothing */
    char tp[1200];
    snprintf(tp, sizeof tp, "%s/t.jinja", dir);
    vkt_write_file(tp, "x{{ raise_exception('no system role') }}");
    char *argv4[] = {"./vkformer", "template", "-t", tp, "--messages", mp, NULL};
    rc = vkt_run(argv4, op, ep);
    out = read_all(op);
    err = read_all(ep);
    VKT_CHECK(rc != 0 && out && !*out && err && strstr(err, "no system role"),
              "raise: exit %d, out '%s', err '%s'", rc, out ? out : "", err ? err : "");
    free(out);
    free(err);
    /* -m DIR with --tools takes the "tool_use" template (as transformers does) */
    char cfg[1200], tools[1200];
    snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", dir);
    snprintf(tools, sizeof tools, "%s/tools.json", dir);
    vkt_write_file(cfg,
                   "{\"chat_template\": [{\"name\": \"default\", \"template\": \"D\"}, {\"name\": "
                   "\"tool_use\", "
                   "\"template\": \"T{{ tools | length }}\"}]}");
    vkt_write_file(tools, "[{\"type\": \"function\"}, {\"type\": \"function\"}]");
    char *argv6[] = {"./vkformer", "template", "-m",  (char *)dir, "--messages",
                     mp,           "--tools",  tools, NULL};
    rc = vkt_run(argv6, op, ep);
    out = read_all(op);
    VKT_CHECK(rc == 0 && out && strcmp(out, "T2") == 0, "-m dir --tools: exit %d, '%s'", rc,
              out ? out : "(null)");
    free(out);
    char *argv7[] = {"./vkformer", "template", "-m", (char *)dir, "--messages", mp, NULL};
    rc = vkt_run(argv7, op, ep);
    out = read_all(op);
    VKT_CHECK(rc == 0 && out && strcmp(out, "D") == 0, "-m dir: exit %d, '%s'", rc,
              out ? out : "(null)");
    free(out);
    unlink(cfg);
    unlink(tools);
    /* bad usage */
    char *argv5[] = {"./vkformer", "template", "--messages", mp, NULL};
    VKT_CHECK(vkt_run(argv5, op, ep) == 2, "no -m/-t accepted");
    unlink(tp);
    unlink(mp);
    unlink(op);
    unlink(ep);
}

int main(void) {
    char dir[] = "/tmp/vkf_chatmodel_XXXXXX";
    VKT_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    check_hf_dirs(dir);
    check_default();
    check_model_template(dir);
    if (vkt_need_fixtures("real-vocab chat-templates")) {
        check_gguf("real-vocab/ggml-vocab-phi-3.gguf", "chat-templates/templates/Phi-3-mini.jinja",
                   "<s>", "<|endoftext|>");
        check_gguf("real-vocab/ggml-vocab-llama-bpe.gguf", NULL, "<|begin_of_text|>",
                   "<|end_of_text|>");
        if (access("./vkformer", X_OK) == 0)
            check_cli(dir);
        else
            VKT_CHECK(0, "./vkformer not found in the working directory");
    }
    rmdir(dir);
    return vkt_finish();
}
