/* Tool calls in a model's own format -> OpenAI's tool_calls (tool_calls.c, tool_messages.c); the
 * chat side of tools (template detection, tool_choice grammars, messages for templates) is
 * generate/tool_chat.c. */
#ifndef VKF_STRUCTURED_TOOL_CALLS_H
#define VKF_STRUCTURED_TOOL_CALLS_H

#include <stddef.h>

#include "structured/sbuf.h"
#include "vkformer.h"

/* One call as parsed so far. */
typedef struct vkf_tcall {
    char *id;     /* the model's own id, or NULL */
    char *name;   /* NULL until the name is complete */
    char *args;   /* the arguments' JSON text so far (a prefix while the call is open) */
    int complete; /* the call ended well-formed */
} vkf_tcall;

/* The text parsed as a whole: content (non-call text) and calls. */
typedef struct vkf_tparse {
    vkf_sb content; /* text outside calls; while partial, what cannot begin a call yet */
    vkf_tcall *calls;
    int n_calls, cap_calls;
    int open; /* partial: the last call (or a marker) is unfinished */
} vkf_tparse;

/* Parses text[0..len) in format f. partial: more text may follow (unfinished calls are kept
 * open and possible markers at the end held back); else unfinished or malformed calls are text.
 * 0, or -1 out of memory. */
int vkf_tool_parse_text(vkf_tool_format f, const char *text, size_t len, int partial,
                        vkf_tparse *out);
void vkf_tparse_free(vkf_tparse *p);

/* A fresh call id: "call_" + 24 letters and digits, or 9 letters and digits (Mistral). */
void vkf_tool_call_id(vkf_tool_format f, char *out, size_t n);

/* Strict JSON (RFC 8259) scan of s[0..n) from its start (leading whitespace skipped): 1 and
 * *end (one past the value) when a whole value is there, 0 when s is a valid unfinished prefix
 * of one, -1 when it cannot be JSON. */
int vkf_json_scan(const char *s, size_t n, size_t *end);

#endif
