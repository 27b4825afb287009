/* Error recording: every failing path sets a thread-local message and returns the status. */
#ifndef VKF_CORE_ERROR_H
#define VKF_CORE_ERROR_H

#include "vkformer.h"

#if defined(__GNUC__)
#define VKF_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VKF_PRINTF(a, b)
#endif

/* Records "msg" as this thread's last error and returns s, so callers write
 * `return vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s: expected F32, found %s", ...);` */
vkf_status vkf_error(vkf_status s, const char *fmt, ...) VKF_PRINTF(2, 3);
/* Prefixes the current message with "context: " (for adding a file name on the way up). */
vkf_status vkf_error_prefix(vkf_status s, const char *fmt, ...) VKF_PRINTF(2, 3);
void vkf_error_clear(void);

#define VKF_TRY(expr)                                                                              \
    do {                                                                                           \
        vkf_status vkf_try_s_ = (expr);                                                            \
        if (vkf_try_s_ != VKF_OK) return vkf_try_s_;                                               \
    } while (0)

#endif
