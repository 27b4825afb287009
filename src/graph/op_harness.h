/* The op harness: every op x dtype x shape, run on a backend and compared with the CPU
 * reference by NMSE against a per-case threshold (docs/DESIGN.md, 'One op set, two backends'). Used
 * by the test suite (tests/test_ops.c) and by `vkformer selftest` on a user's device. */
#ifndef VKF_GRAPH_OP_HARNESS_H
#define VKF_GRAPH_OP_HARNESS_H

#include "graph/backend.h"

enum {
    VKF_HC_BIAS = 1,      /* matmul: with bias */
    VKF_HC_STRIDED = 2,   /* inputs are row-strided views into wider buffers */
    VKF_HC_MASK = 4,      /* softmax: additive mask with -inf entries (some rows fully masked) */
    VKF_HC_BCAST = 8,     /* add/mul: src1 is a single broadcast row */
    VKF_HC_LENS = 16,     /* attention: per-sequence key lengths */
    VKF_HC_TIES = 32,     /* argmax/topk: integer-valued inputs with many ties */
    VKF_HC_NOAFFINE = 64, /* norms: no weight/bias */
    VKF_HC_FACTORS = 128, /* rope: table with frequency factors, linear scaling, attention factor */
    VKF_HC_HUGE = 256,    /* matmul: activations past f16's range (sd 1e5) */
    VKF_HC_SINKS = 512    /* attention: a sink logit per head (gpt-oss) */
};

typedef struct vkf_harness_case {
    vkf_op op;
    vkf_dtype wtype; /* weight / table type (matmul, embed) */
    int64_t m, n, k; /* matmul: M, N, K; row ops: rows m, cols n; embed: ids m, vocab n, dim k;
                        add_pos/rope: rows m, (cols n), positions table k */
    int flags;       /* VKF_HC_* */
    int32_t n_past;
    vkf_op_params p;
    double thr;      /* NMSE threshold (0 for index outputs: exact match) */
    const char *why; /* the threshold's reason */
} vkf_harness_case;

typedef struct vkf_harness_result {
    double nmse;        /* normalized mean squared error vs the CPU: sum (a-b)² / sum b² */
    double max_abs;     /* largest absolute difference */
    int64_t worst;      /* element index of max_abs */
    int nonfinite;      /* NaN/Inf in one result but not at the same place in the other */
    int index_mismatch; /* argmax/topk: differing indices */
    int pass;
} vkf_harness_result;

/* The case table; quick = a representative subset. */
int vkf_harness_cases(int quick, vkf_harness_case **out);
/* One-line description, e.g. "matmul Q4_0 M=7 N=33 K=128 bias". */
void vkf_harness_describe(const vkf_harness_case *c, char *buf, size_t n);
/* Runs c on `be` and on `ref` (the CPU) with identical inputs and compares. */
vkf_status vkf_harness_run(vkf_backend *ref, vkf_backend *be, const vkf_harness_case *c,
                           vkf_harness_result *r);

#endif
