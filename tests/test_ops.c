/* The op harness on Vulkan (lavapipe in CI) against the CPU reference: every op x dtype x
 * shape of the full table, validation layer on. Prints every case and the worst one.
 * VKT_OPS_ONLY=NAME runs one op's cases (the profiles that only change one kernel's paths);
 * VKT_OPS_QUICK=1 the harness's representative subset (every op and type, fewer shapes: the
 * sanitizer pass, which checks the host code, not the kernels the full table already ran). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/op_harness.h"
#include "runtime/context.h"
#include "testutil.h"

int main(void) {
    vkf_context_params cp = {.backend = VKF_BACKEND_VULKAN, .validate = 1};
    vkf_context *ctx = NULL;
    vkf_backend *ref = NULL;
    VKT_OK(vkf_context_create(&cp, &ctx));
    VKT_OK(vkf_backend_cpu_create(&ref));
    if (!ctx || !ref) return vkt_finish();
    printf("device: %s\n", vkf_context_device_name(ctx));

    vkf_harness_case *cases = NULL;
    const char *q = getenv("VKT_OPS_QUICK");
    int quick = q && strcmp(q, "0") != 0;
    int n = vkf_harness_cases(quick, &cases);
    VKT_CHECK(n > (quick ? 100 : 200), "harness table has %d cases", n);
    int per_op[VKF_OP_COUNT] = {0};
    double worst_ratio = 0;
    char worst[512] = "";
    const char *only = getenv("VKT_OPS_ONLY");
    int only_op = -1;
    for (int o = 0; only && o < VKF_OP_COUNT; o++)
        if (strcmp(only, vkf_op_name((vkf_op)o)) == 0) only_op = o;
    VKT_CHECK(!only || only_op >= 0, "VKT_OPS_ONLY=%s names no op", only);
    for (int i = 0; i < n; i++) {
        if (only_op >= 0 && (int)cases[i].op != only_op) continue;
        vkf_harness_result r;
        char desc[256];
        vkf_harness_describe(&cases[i], desc, sizeof desc);
        vkf_status s = vkf_harness_run(ref, ctx->be, &cases[i], &r);
        VKT_CHECK(s == VKF_OK, "%s: %s", desc, vkf_last_error());
        if (s != VKF_OK) continue;
        per_op[cases[i].op]++;
        VKT_CHECK(r.pass,
                  "%s: nmse %.3e (threshold %.0e: %s), max|d| %.3e at %lld, nonfinite %d, index "
                  "mismatches %d",
                  desc, r.nmse, cases[i].thr, cases[i].why, r.max_abs, (long long)r.worst,
                  r.nonfinite, r.index_mismatch);
        printf("%-4s %-70s nmse %.2e max|d| %.2e\n", r.pass ? "ok" : "FAIL", desc, r.nmse,
               r.max_abs);
        double ratio = cases[i].thr > 0 ? r.nmse / cases[i].thr : 0;
        if (ratio >= worst_ratio) {
            worst_ratio = ratio;
            snprintf(worst, sizeof worst, "%s (nmse %.2e, %.1f%% of its threshold)", desc, r.nmse,
                     100 * ratio);
        }
    }
    printf("cases per op:");
    for (int o = 0; o < VKF_OP_COUNT; o++) {
        printf(" %s=%d", vkf_op_name((vkf_op)o), per_op[o]);
        VKT_CHECK(per_op[o] > 0 || (only_op >= 0 && o != only_op), "op %s has no harness case",
                  vkf_op_name((vkf_op)o));
    }
    printf("\nworst case relative to its threshold: %s\n", worst);
    free(cases);
    vkf_backend_free(ref);
    vkf_context_free(ctx);
    return vkt_finish();
}
