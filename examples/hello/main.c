/* Lists the Vulkan devices and runs the quick op self-test on the CPU backend. */
#include <stdio.h>
#include <stdlib.h>

#include <vkformer.h>

int main(void) {
    char *report = NULL;
    if (vkf_devices_report(0, &report) == VKF_OK) {
        fputs(report, stdout);
        free(report);
    } else {
        printf("no Vulkan devices: %s\n", vkf_last_error());
    }
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_context *ctx;
    if (vkf_context_create(&cp, &ctx) != VKF_OK) {
        fprintf(stderr, "%s\n", vkf_last_error());
        return 1;
    }
    printf("context on %s\n", vkf_context_device_name(ctx));
    vkf_context_free(ctx);
    return 0;
}
