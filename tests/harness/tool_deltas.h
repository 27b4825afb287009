/* The streaming tool-call parser's deltas added up as an OpenAI client adds them (shared by
 * test_tool_calls and fuzz_tool_calls). */
#ifndef VKT_TOOL_DELTAS_H
#define VKT_TOOL_DELTAS_H

#include <stddef.h>

#include "vkformer.h"

/* Pushes text[0..len) through a vkf_tool_parser of format f in pieces of next(user) bytes (0
 * counts as 1), the last push with last set, and adds the deltas up into a message: content the
 * concatenated text deltas (null when there were none and calls were made), tool_calls each
 * call's id and name from its first delta and the concatenated arguments. Returns that message
 * (malloc'ed JSON text) and the parser's own message in *own (malloc'ed); *n_deltas counts the
 * deltas. NULL, with *why naming the rule broken, when a push fails, a delta list is not a JSON
 * array of objects, a call's first delta lacks its id or name, a later delta carries an id, or
 * an index skips a call. */
char *vkt_tool_stream(vkf_tool_format f, const char *text, size_t len, size_t (*next)(void *),
                      void *user, char **own, int *n_deltas, const char **why);

#endif
