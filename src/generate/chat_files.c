/* A model's chat templates read from its files without loading its weights, and ChatML, for
 * the front ends (`vkformer template`) through the public API. */
#include "core/error.h"
#include "generate/chat.h"
#include "model/model_chat.h"
#include "vkformer.h"

vkf_status vkf_chat_template_read(const char *path, const char *name, char **tmpl, char **bos,
                                  char **eos) {
    if (!path) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "chat_template_read: NULL path");
    if (tmpl) *tmpl = NULL;
    if (bos) *bos = NULL;
    if (eos) *eos = NULL;
    if (!name) return vkf_chat_model_files(path, tmpl, bos, eos);
    VKF_TRY(vkf_chat_model_files(path, NULL, bos, eos));
    return tmpl ? vkf_chat_model_named_template(path, name, tmpl) : VKF_OK;
}

vkf_status vkf_chat_chatml_render(const char *messages_json, int add_generation_prompt,
                                  char **out) {
    return vkf_chat_chatml(messages_json, add_generation_prompt, out);
}
