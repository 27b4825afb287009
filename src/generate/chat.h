/* Chat templates: rendering a conversation with the model's template (public API:
 * vkf_chat_template_render, vkf_chat_apply); the template is read from the model's files by
 * model/model_chat.h. */
#ifndef VKF_GENERATE_CHAT_H
#define VKF_GENERATE_CHAT_H

#include "vkformer.h"

/* llama.cpp's default template, ChatML, for a model without one: "<|im_start|>ROLE\nCONTENT
 * <|im_end|>\n" per message (no newline before <|im_end|>), then "<|im_start|>assistant\n" when
 * add_generation_prompt. *out is malloc'ed. */
vkf_status vkf_chat_chatml(const char *messages_json, int add_generation_prompt, char **out);

/* The conversation as template tmpl (NULL: the ChatML default) wants it, or *out = NULL when
 * it needs no change: tool_calls arguments given as JSON strings (as OpenAI sends them) become
 * objects for templates that write them with tojson; a template that does not render
 * tool_calls gets them as the generic JSON answer in content; tools (a JSON array, may be NULL)
 * are described in the system message when the template does not render them
 * (generate/tool_chat.c). */
vkf_status vkf_tool_messages_prepare(const char *tmpl, const char *bos, const char *eos,
                                     const char *messages_json, const char *tools_json, char **out);

#endif
