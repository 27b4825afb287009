/* The context: one backend (CPU, or one Vulkan device) that models and sessions run on. */
#ifndef VKF_MODEL_CONTEXT_H
#define VKF_MODEL_CONTEXT_H

#include <pthread.h>

#include "graph/backend.h"

struct vkf_context {
    vkf_backend *be; /* the backend everything in this context runs on */
    vkf_backend_kind kind;
    /* Serializes the backend calls of models and sessions that share this context (a Vulkan
     * device has one queue, one fence, one staging buffer and a recording state); recursive,
     * since public calls nest (vkf_translate -> vkf_session_step). Not taken for the CPU
     * backend, which keeps no shared mutable state: its sessions run in parallel. */
    pthread_mutex_t lock;
    int serialize;        /* 1: take `lock` around backend work */
    char fallback[512];   /* AUTO fell back to the CPU: why ("" otherwise) */
    int ggml_activations; /* a vkf_ggml_target: the CPU backend computes as llama.cpp's
                             (cpu_ggml.c); 0 off */
    vkf_switches sw;      /* read once at creation (params or environment) */
    /* layer split (vkf_context_params.n_devices >= 2): dev_be[0] == be, then one backend per
     * further device; prop: the normalized share of the layers each device takes */
    int n_dev;
    vkf_backend *dev_be[VKF_MAX_DEVICES];
    double prop[VKF_MAX_DEVICES];
    char dev_names[VKF_MAX_DEVICES][128]; /* a comma-separated device list, split up */
};

/* Taken around every backend call made on behalf of a model or session of ctx. */
void vkf_context_lock(vkf_context *ctx);
void vkf_context_unlock(vkf_context *ctx);

#endif
