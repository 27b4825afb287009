/* vkformer serve: structured output and tool calls (structured.c), on the public API.
 *
 * Request fields: response_format ({"type": "text" | "json_object" (optional "schema", as
 * llama-server) | "json_schema", "json_schema": {"schema", "strict", "name"}}), llama-server's
 * "json_schema" (a schema) and "grammar" (GBNF); for chat, "tools", "tool_choice" ("none",
 * "auto", "required", {"type": "function", "function": {"name"}}) and "parallel_tool_calls".
 * Answers with tools are parsed in the model's own format (vkf_model_tool_format) into
 * message.tool_calls with finish_reason "tool_calls"; streams send delta.tool_calls. */
#ifndef VKF_SERVE_STRUCTURED_H
#define VKF_SERVE_STRUCTURED_H

#include "serve/serve.h"

struct cJSON;

struct srv_structured {
    char *grammar;           /* the sampler's grammar (owned), or NULL */
    int tools;               /* tool calls are parsed from the answer */
    vkf_tool_format format;  /* the model's tool-call format */
    vkf_tool_parser *parser; /* streaming: the deltas so far (connection thread) */
    int role_sent;           /* streaming: the role went out */
};

/* Reads the fields above from request j into r (r->st, r->sp.grammar). 0, or -1 with a 400
 * message in err naming the field. */
int srv_structured_parse(const srv_config *c, const struct cJSON *j, int chat, srv_req *r,
                         char *err, size_t en);
void srv_structured_free(struct srv_structured *st);
/* 1 when a message's content should stay null (an assistant turn with tool_calls: templates
 * such as DeepSeek's test "content is none") */
int srv_structured_keep_null(const struct cJSON *message);
/* Chat answers with tools: fills choice ch's "message" from text and returns the
 * finish_reason to use ("tool_calls" when calls were found, else fin). */
const char *srv_structured_message(const srv_config *c, const srv_req *r, struct cJSON *ch,
                                   const char *text, const char *fin);
/* Streaming chat with tools: the server-sent events for event i (i < 0: the end, with
 * finish_reason and usage); "" when nothing is ready. malloc'ed. */
char *srv_structured_chunk(const srv_config *c, srv_req *r, int i, const char *fin);

#endif
