/* Jinja evaluation (placeholder until the interpreter lands). */
#include "model/jinja.h"

#include "core/error.h"

vkf_status vkf_jinja_render(const char *tmpl, size_t len, const cJSON *vars, char **out) {
    *out = NULL;
    return vkf_error(VKF_ERROR_UNSUPPORTED,
                     "chat template: the Jinja interpreter is not built yet");
}
