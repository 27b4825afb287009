/* Chat templates: every case of the chat-templates set (tools/refs/make_chat_templates.py: real
 * models' templates from the pinned llama.cpp tree, rendered by Hugging Face transformers'
 * apply_chat_template code with jinja2 3.1.6) must match byte for byte, through the library
 * (vkf_chat_template_render) and through the CLI (`vkformer template`). Cases that raise must
 * fail; raise_exception() messages must match exactly (other error texts are jinja2's or
 * Python's and are not compared, as the set's README.md says). Plus the ChatML default of
 * vkf_chat_apply and error positions. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

typedef struct tcase {
    const char *name;
    char *tmpl;
    char *messages, *tools, *context; /* JSON texts; tools/context NULL when absent */
    const char *bos, *eos;
    int add_gen;
    int error;
    const char *error_type, *error_message, *expected;
    char tmpl_path[1024];
} tcase;

static void load_case(const cJSON *c, tcase *t) {
    memset(t, 0, sizeof *t);
    t->name = cJSON_GetObjectItem(c, "name")->valuestring;
    snprintf(t->tmpl_path, sizeof t->tmpl_path, "%s",
             vkt_fixture(cJSON_GetObjectItem(c, "template_file")->valuestring));
    /* vkt_fixture's buffer is static: the template file is relative to the fixture directory */
    char rel[512];
    snprintf(rel, sizeof rel, "chat-templates/%s",
             cJSON_GetObjectItem(c, "template_file")->valuestring);
    snprintf(t->tmpl_path, sizeof t->tmpl_path, "%s", vkt_fixture(rel));
    size_t n;
    t->tmpl = vkt_read_file(t->tmpl_path, &n);
    if (t->tmpl) {
        char *z = realloc(t->tmpl, n + 1);
        if (z) {
            z[n] = 0;
            t->tmpl = z;
        }
    }
    t->messages = cJSON_PrintUnformatted(cJSON_GetObjectItem(c, "messages"));
    const cJSON *tools = cJSON_GetObjectItem(c, "tools");
    t->tools = tools && !cJSON_IsNull(tools) ? cJSON_PrintUnformatted(tools) : NULL;
    const cJSON *ctx = cJSON_GetObjectItem(c, "extra_context");
    t->context = ctx && cJSON_IsObject(ctx) && ctx->child ? cJSON_PrintUnformatted(ctx) : NULL;
    t->bos = cJSON_GetObjectItem(c, "bos_token")->valuestring;
    t->eos = cJSON_GetObjectItem(c, "eos_token")->valuestring;
    t->add_gen = cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt"));
    t->error = cJSON_IsTrue(cJSON_GetObjectItem(c, "error"));
    if (t->error) {
        t->error_type = cJSON_GetObjectItem(c, "error_type")->valuestring;
        t->error_message = cJSON_GetObjectItem(c, "error_message")->valuestring;
    } else {
        t->expected = cJSON_GetObjectItem(c, "expected")->valuestring;
    }
}

static void free_case(tcase *t) {
    free(t->tmpl);
    free(t->messages);
    free(t->tools);
    free(t->context);
}

/* First differing byte, for the failure message. */
static size_t first_diff(const char *a, const char *b) {
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    return i;
}

static int lib_case(const tcase *t) {
    char *out = NULL;
    vkf_status s = vkf_chat_template_render(t->tmpl, t->messages, t->tools, t->context, t->bos,
                                            t->eos, t->add_gen, &out);
    int ok;
    if (t->error) {
        ok = s == VKF_ERROR_FORMAT;
        VKT_CHECK(ok, "%s: expected a %s error, got %s", t->name, t->error_type,
                  vkf_status_name(s));
        if (ok && strcmp(t->error_type, "TemplateError") == 0) {
            ok = strcmp(vkf_last_error(), t->error_message) == 0;
            VKT_CHECK(ok, "%s: raise_exception message '%s', expected '%s'", t->name,
                      vkf_last_error(), t->error_message);
        }
    } else {
        ok = s == VKF_OK && strcmp(out, t->expected) == 0;
        if (s != VKF_OK)
            VKT_CHECK(ok, "%s: %s", t->name, vkf_last_error());
        else
            VKT_CHECK(ok, "%s: differs at byte %zu:\n--- got\n%s\n--- expected\n%s", t->name,
                      first_diff(out, t->expected), out, t->expected);
    }
    free(out);
    return ok;
}

/* ------------------------------------------------------------------ CLI */

static int cli_case(const tcase *t, const char *dir) {
    char mp[1200], tp[1200], cp[1200], op[1200], ep[1200];
    snprintf(mp, sizeof mp, "%s/messages.json", dir);
    snprintf(tp, sizeof tp, "%s/tools.json", dir);
    snprintf(cp, sizeof cp, "%s/context.json", dir);
    snprintf(op, sizeof op, "%s/out.txt", dir);
    snprintf(ep, sizeof ep, "%s/err.txt", dir);
    vkt_write_file(mp, t->messages);
    char *argv[20];
    int k = 0;
    argv[k++] = "./vkformer";
    argv[k++] = "template";
    argv[k++] = "-t";
    argv[k++] = (char *)t->tmpl_path;
    argv[k++] = "--messages";
    argv[k++] = mp;
    if (t->tools) {
        vkt_write_file(tp, t->tools);
        argv[k++] = "--tools";
        argv[k++] = tp;
    }
    if (t->context) {
        vkt_write_file(cp, t->context);
        argv[k++] = "--context";
        argv[k++] = cp;
    }
    argv[k++] = "--bos";
    argv[k++] = (char *)t->bos;
    argv[k++] = "--eos";
    argv[k++] = (char *)t->eos;
    if (!t->add_gen) argv[k++] = "--no-generation-prompt";
    argv[k] = NULL;
    int rc = vkt_run(argv, op, ep);
    size_t n = 0, en = 0;
    char *out = vkt_read_file(op, &n), *err = vkt_read_file(ep, &en);
    int ok;
    if (t->error) {
        ok = rc != 0 && rc != -1;
        VKT_CHECK(ok, "cli %s: expected failure, exit %d", t->name, rc);
        if (ok && strcmp(t->error_type, "TemplateError") == 0) {
            ok = err && memmem(err, en, t->error_message, strlen(t->error_message)) != NULL;
            VKT_CHECK(ok, "cli %s: stderr lacks '%s'", t->name, t->error_message);
        }
    } else {
        ok = rc == 0 && out && n == strlen(t->expected) && memcmp(out, t->expected, n) == 0;
        VKT_CHECK(ok, "cli %s: exit %d, %zu bytes (expected %zu)%s%.*s", t->name, rc, n,
                  strlen(t->expected), err && en ? ": " : "", (int)en, err ? err : "");
    }
    free(out);
    free(err);
    return ok;
}

/* ------------------------------------------------------------------ other checks */

static void check_errors(void) {
    char *out = NULL;
    /* an unknown tag names its line and column */
    VKT_CHECK(vkf_chat_template_render("hello\n  {% frobnicate %}", "[]", NULL, NULL, NULL, NULL, 1,
                                       &out) == VKF_ERROR_FORMAT,
              "unknown tag accepted");
    VKT_CHECK(strstr(vkf_last_error(), "line 2, column 6") != NULL, "position missing: %s",
              vkf_last_error());
    VKT_CHECK(vkf_chat_template_render("{{ messages[0]['content'] }", "[]", NULL, NULL, NULL, NULL,
                                       1, &out) == VKF_ERROR_FORMAT,
              "unclosed print accepted");
    VKT_CHECK(strstr(vkf_last_error(), "line 1") != NULL, "position missing: %s", vkf_last_error());
    VKT_CHECK(vkf_chat_template_render("{% for m in messages %}", "[]", NULL, NULL, NULL, NULL, 1,
                                       &out) == VKF_ERROR_FORMAT,
              "missing endfor accepted");
    VKT_CHECK(strstr(vkf_last_error(), "endfor") != NULL, "endfor not named: %s", vkf_last_error());
    VKT_CHECK(vkf_chat_template_render("{{ x }}", "{not json", NULL, NULL, NULL, NULL, 1, &out) ==
                  VKF_ERROR_FORMAT,
              "bad messages JSON accepted");
    VKT_CHECK(out == NULL, "output set on error");
    /* context variables are visible; a later key replaces the default of the same name */
    VKT_OK(vkf_chat_template_render("{{ bos_token }}{{ x }}|{{ add_generation_prompt }}", "[]",
                                    NULL, "{\"x\": [1, \"a\"], \"bos_token\": \"B\"}", "<s>", NULL,
                                    0, &out));
    VKT_CHECK(out && strcmp(out, "B[1, 'a']|False") == 0, "context: got '%s'",
              out ? out : "(null)");
    free(out);
}

/* tests/data/jinja/cases.json: features beyond the fixtures, rendered by jinja2 3.1.6 with
 * transformers' settings (tools/make_jinja_cases.py). */
static void feature_cases(void) {
    size_t n;
    char *text = vkt_read_file(VKF_SOURCE_DIR "/tests/data/jinja/cases.json", &n);
    VKT_CHECK(text != NULL, "cannot read tests/data/jinja/cases.json");
    if (!text) return;
    char *z = realloc(text, n + 1);
    z[n] = 0;
    cJSON *root = cJSON_Parse(z);
    free(z);
    const cJSON *c;
    int total = 0, ok_n = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *tmpl = cJSON_GetObjectItem(c, "template")->valuestring;
        /* context_json: Python's own JSON text of the context (floats like 1.0 stay floats) */
        char *ctx = strdup(cJSON_GetObjectItem(c, "context_json")->valuestring);
        char *out = NULL;
        vkf_status s = vkf_chat_template_render(tmpl, "[]", NULL, ctx, "<s>", "</s>", 1, &out);
        int ok;
        total++;
        if (cJSON_IsTrue(cJSON_GetObjectItem(c, "error"))) {
            const char *type = cJSON_GetObjectItem(c, "error_type")->valuestring;
            const char *msg = cJSON_GetObjectItem(c, "error_message")->valuestring;
            ok = s == VKF_ERROR_FORMAT &&
                 (strcmp(type, "TemplateError") != 0 || strcmp(vkf_last_error(), msg) == 0);
            VKT_CHECK(ok, "jinja %s: expected %s '%s', got %s '%s' (output '%s')", name, type, msg,
                      vkf_status_name(s), s == VKF_OK ? "" : vkf_last_error(), out ? out : "");
        } else {
            const char *exp = cJSON_GetObjectItem(c, "expected")->valuestring;
            ok = s == VKF_OK && strcmp(out, exp) == 0;
            VKT_CHECK(ok, "jinja %s: got '%s' (%s), expected '%s'", name, out ? out : "",
                      s == VKF_OK ? "ok" : vkf_last_error(), exp);
        }
        ok_n += ok;
        free(out);
        free(ctx);
    }
    cJSON_Delete(root);
    printf("jinja feature cases: %d/%d match jinja2\n", ok_n, total);
}

int main(void) {
    check_errors();
    feature_cases();
    if (!vkt_need_fixtures("chat-templates")) return vkt_finish();
    size_t n;
    char *text = vkt_read_file(vkt_fixture("chat-templates/cases.json"), &n);
    VKT_CHECK(text != NULL, "cannot read chat-templates/cases.json");
    if (!text) return vkt_finish();
    char *z = realloc(text, n + 1);
    z[n] = 0;
    cJSON *cases = cJSON_Parse(z);
    free(z);
    VKT_CHECK(cJSON_IsArray(cases), "cases.json is not an array");
    char dir[] = "/tmp/vkf_chattpl_XXXXXX";
    int have_dir = mkdtemp(dir) != NULL;
    int have_cli = access("./vkformer", X_OK) == 0;
    VKT_CHECK(have_cli, "./vkformer not found in the working directory (the CLI half needs it)");
    int total = 0, lib_ok = 0, cli_ok = 0;
    const cJSON *c;
    const char *only = getenv("VKT_CHAT_ONLY");
    cJSON_ArrayForEach(c, cases) {
        tcase t;
        load_case(c, &t);
        if (only && !strstr(t.name, only)) {
            free_case(&t);
            continue;
        }
        VKT_CHECK(t.tmpl != NULL, "%s: cannot read %s", t.name, t.tmpl_path);
        if (t.tmpl) {
            total++;
            lib_ok += lib_case(&t);
            if (have_cli && have_dir) cli_ok += cli_case(&t, dir);
        }
        free_case(&t);
    }
    cJSON_Delete(cases);
    if (have_dir) {
        char p[1200];
        const char *files[] = {"messages.json", "tools.json", "context.json", "out.txt", "err.txt"};
        for (int i = 0; i < 5; i++) {
            snprintf(p, sizeof p, "%s/%s", dir, files[i]);
            unlink(p);
        }
        rmdir(dir);
    }
    printf("chat templates: %d/%d cases match through the library, %d/%d through the CLI\n", lib_ok,
           total, cli_ok, total);
    return vkt_finish();
}
