/* libFuzzer entry: the input is a Jinja chat template, optionally followed by a NUL byte and a
 * JSON messages array (otherwise a fixed conversation with a tool is used). The render must
 * succeed or fail with a status and a message, within the interpreter's limits, never crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char default_messages[] = "[{\"role\":\"system\",\"content\":\"Be "
                                       "brief.\"},{\"role\":\"user\",\"content\":\"Hi \\u00e9\"},"
                                       "{\"role\":\"assistant\",\"content\":\"   Hello   "
                                       "\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
                                       "\"function\":{\"name\":\"f\",\"arguments\":{\"x\":1}}}]},{"
                                       "\"role\":\"tool\",\"content\":\"42\"},"
                                       "{\"role\":\"user\",\"content\":\"Thanks\"}]";
static const char default_tools[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\",\"parameters\":{"
    "\"type\":"
    "\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}},\"required\":[\"x\"]}}}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *tmpl = (const char *)data;
    size_t tlen = size;
    const void *nul = memchr(data, 0, size);
    char *msgs = NULL;
    if (nul) { /* the rest as messages, even when it is not valid JSON (the reader's errors) */
        tlen = (size_t)((const uint8_t *)nul - data);
        size_t rest = size - tlen - 1;
        msgs = malloc(rest + 1);
        if (!msgs) return 0;
        memcpy(msgs, data + tlen + 1, rest);
        msgs[rest] = 0;
    }
    vkf_jinja_var vars[] = {
        {"messages", msgs ? msgs : default_messages},
        {"tools", default_tools},
        {"documents", "null"},
        {"add_generation_prompt", "true"},
        {"bos_token", "\"<s>\""},
        {"eos_token", "\"</s>\""},
    };
    char *out = NULL;
    vkf_status s = vkf_jinja_render(tmpl, tlen, vars, (int)(sizeof vars / sizeof vars[0]), &out);
    if ((s == VKF_OK) != (out != NULL)) abort(); /* output exactly when it succeeds */
    if (out) (void)strlen(out);
    free(out);
    free(msgs);
    return 0;
}
