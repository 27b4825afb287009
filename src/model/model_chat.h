/* A model's chat template and bos/eos texts from its files (model/model_chat.c); rendering a
 * conversation with them is generate/chat.h. */
#ifndef VKF_MODEL_MODEL_CHAT_H
#define VKF_MODEL_MODEL_CHAT_H

#include "vkformer.h"

/* Reads the chat template and the bos/eos token texts of a model file or directory without
 * loading its weights: a GGUF file (tokenizer.chat_template, tokenizer.ggml.tokens at
 * bos/eos_token_id) or a Hugging Face directory (tokenizer_config.json "chat_template", a
 * string or a list of {"name","template"} of which "default" is taken, else chat_template.jinja;
 * "bos_token"/"eos_token" as strings or {"content": ...}). Each output is malloc'ed or NULL
 * when absent; any output pointer may be NULL. A file that cannot be read or parsed is an error. */
vkf_status vkf_chat_model_files(const char *path, char **tmpl, char **bos, char **eos);
/* Another named template of the model (e.g. "tool_use", which transformers and llama.cpp use
 * when tools are given): GGUF tokenizer.chat_template.NAME, tokenizer_config.json's list entry of
 * that name, or additional_chat_templates/NAME.jinja. *tmpl NULL when absent. */
vkf_status vkf_chat_model_named_template(const char *path, const char *name, char **tmpl);

/* Fills m->chat_template / chat_template_tool_use / chat_bos / chat_eos from the model path, then
 * from the tokenizer path (may be NULL) for what is still missing; bos/eos fall back to the
 * tokenizer's token texts. A template is optional: a file that cannot be read leaves the fields
 * NULL. */
typedef struct vkf_model vkf_model;
void vkf_chat_model_load(vkf_model *m, const char *path, const char *tokenizer);

#endif
