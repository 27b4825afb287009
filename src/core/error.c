#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char g_msg[2048];

const char *vkf_last_error(void) { return g_msg; }

void vkf_error_clear(void) { g_msg[0] = 0; }

vkf_status vkf_error(vkf_status s, const char *fmt, ...) {
    /* formatted aside first: an argument may be vkf_last_error() itself (the message being
     * replaced), which vsnprintf into g_msg would overwrite while reading it */
    char msg[sizeof g_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(g_msg, msg, sizeof g_msg);
    return s;
}

vkf_status vkf_error_prefix(vkf_status s, const char *fmt, ...) {
    char prefix[512], old[sizeof g_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, g_msg, sizeof old);
    size_t n = strlen(prefix);
    if (n > sizeof g_msg - 3) n = sizeof g_msg - 3;
    memcpy(g_msg, prefix, n);
    memcpy(g_msg + n, ": ", 2);
    size_t m = strlen(old);
    if (m > sizeof g_msg - n - 3)
        m = sizeof g_msg - n - 3; /* keep the tail of the old message cut, not the context */
    memcpy(g_msg + n + 2, old, m);
    g_msg[n + 2 + m] = 0;
    return s;
}

const char *vkf_status_name(vkf_status s) {
    switch (s) {
    case VKF_OK: return "VKF_OK";
    case VKF_ERROR_INVALID_ARGUMENT: return "VKF_ERROR_INVALID_ARGUMENT";
    case VKF_ERROR_IO: return "VKF_ERROR_IO";
    case VKF_ERROR_FORMAT: return "VKF_ERROR_FORMAT";
    case VKF_ERROR_UNSUPPORTED: return "VKF_ERROR_UNSUPPORTED";
    case VKF_ERROR_OUT_OF_MEMORY: return "VKF_ERROR_OUT_OF_MEMORY";
    case VKF_ERROR_NO_VULKAN: return "VKF_ERROR_NO_VULKAN";
    case VKF_ERROR_NO_DEVICE: return "VKF_ERROR_NO_DEVICE";
    case VKF_ERROR_VULKAN: return "VKF_ERROR_VULKAN";
    case VKF_ERROR_SHADER: return "VKF_ERROR_SHADER";
    case VKF_ERROR_TOKEN: return "VKF_ERROR_TOKEN";
    case VKF_ERROR_CONTEXT_FULL: return "VKF_ERROR_CONTEXT_FULL";
    case VKF_ERROR_VALIDATION: return "VKF_ERROR_VALIDATION";
    case VKF_ERROR_INTERNAL: return "VKF_ERROR_INTERNAL";
    case VKF_ERROR_ABORTED: return "VKF_ERROR_ABORTED";
    }
    return "VKF_ERROR_UNKNOWN";
}
