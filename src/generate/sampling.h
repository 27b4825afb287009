/* Sampling helpers shared by the sampler (generate/sampling.c) and beam search
 * (generate/generate.c). */
#ifndef VKF_MODEL_SAMPLING_H
#define VKF_MODEL_SAMPLING_H

#include <stdint.h>

#include "vkformer.h"

typedef struct vkf_cand {
    float logit;
    int32_t id;
} vkf_cand;

/* The k best of v[0..n) into c[0..k), best first (logit descending, id ascending). */
void vkf_select_top_k(const float *v, int32_t n, int32_t k, vkf_cand *c);
/* Index of the largest of v[0..n); ties keep the lowest index. */
int32_t vkf_argmax_f32(const float *v, int32_t n);

#endif
