#include "graph/ops.h"

#include <math.h>

const char *vkf_op_name(vkf_op op) {
    static const char *names[VKF_OP_COUNT] = {
        "matmul",      "embed",       "add_pos",   "rope",           "add",    "mul",
        "scale",       "layernorm",   "rmsnorm",   "unary",          "swiglu", "softmax",
        "log_softmax", "attention",   "copy_rows", "argmax",         "topk",   "pool",
        "mul_mat_id",  "moe_weights", "moe_sum",   "moe_group_mask",
    };
    return (unsigned)op < VKF_OP_COUNT ? names[op] : "?";
}

const char *vkf_unary_name(vkf_unary a) {
    static const char *names[VKF_UNARY_COUNT] = {"relu", "gelu_erf", "gelu_tanh",
                                                 "silu", "sigmoid",  "tanh"};
    return (unsigned)a < VKF_UNARY_COUNT ? names[a] : "?";
}

void vkf_sinusoidal_table(float *table, int n_pos, int d) {
    for (int pos = 0; pos < n_pos; pos++)
        for (int i = 0; 2 * i < d; i++) {
            /* double angle: float32 angles drift by ~2e-5 at position 300 */
            double angle = pos / pow(10000.0, (2.0 * i) / d);
            table[(size_t)pos * d + 2 * i] = (float)sin(angle);
            if (2 * i + 1 < d) table[(size_t)pos * d + 2 * i + 1] = (float)cos(angle);
        }
}

void vkf_rope_table(float *table, int n_pos, int n_rot, double freq_base) {
    vkf_rope_table_ext(table, n_pos, n_rot, freq_base, 1.0, NULL, 1.0);
}

void vkf_rope_table_ext(float *table, int n_pos, int n_rot, double freq_base, double pos_scale,
                        const float *factors, double mscale) {
    for (int pos = 0; pos < n_pos; pos++)
        for (int i = 0; i < n_rot / 2; i++) {
            double theta = pos * pos_scale * pow(freq_base, -2.0 * i / n_rot);
            if (factors) theta /= factors[i];
            table[(size_t)pos * n_rot + 2 * i] = (float)(cos(theta) * mscale);
            table[(size_t)pos * n_rot + 2 * i + 1] = (float)(sin(theta) * mscale);
        }
}
