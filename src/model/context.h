/* The context: one backend (CPU, or one Vulkan device) that models and sessions run on. */
#ifndef VKF_MODEL_CONTEXT_H
#define VKF_MODEL_CONTEXT_H

#include "graph/backend.h"

struct vkf_context {
    vkf_backend *be;      /* the backend everything in this context runs on */
    vkf_backend_kind kind;
};

#endif
