/* vkf_selftest: the op harness on the context's backend, for users to check their device. */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "graph/op_harness.h"
#include "runtime/context.h"

vkf_status vkf_selftest(vkf_context *ctx, int quick, void (*log)(void *user, const char *line),
                        void *user, vkf_selftest_result *out) {
    vkf_harness_case *cases = NULL;
    int n = vkf_harness_cases(quick, &cases);
    if (n < 0) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "selftest: out of memory");
    vkf_backend *ref = NULL;
    vkf_status s = vkf_backend_cpu_create(&ref);
    out->n_cases = out->n_failed = 0;
    for (int i = 0; s == VKF_OK && i < n; i++) {
        vkf_harness_result r;
        char desc[256], line[512];
        vkf_harness_describe(&cases[i], desc, sizeof desc);
        vkf_context_lock(ctx);
        s = vkf_harness_run(ref, ctx->be, &cases[i], &r);
        vkf_context_unlock(ctx);
        if (s != VKF_OK) {
            vkf_error_prefix(s, "selftest case %s", desc);
            break;
        }
        out->n_cases++;
        if (!r.pass) out->n_failed++;
        if (log) {
            if (cases[i].thr > 0 || !r.pass)
                snprintf(line, sizeof line,
                         "%-4s %-64s nmse %.2e (<= %.0e) max|d| %.2e at %lld%s%s",
                         r.pass ? "ok" : "FAIL", desc, r.nmse, cases[i].thr, r.max_abs,
                         (long long)r.worst, r.nonfinite ? " NaN/Inf mismatch" : "",
                         r.index_mismatch ? " index mismatch" : "");
            else
                snprintf(line, sizeof line, "%-4s %-64s indices equal", "ok", desc);
            log(user, line);
        }
    }
    vkf_backend_free(ref);
    free(cases);
    return s;
}
