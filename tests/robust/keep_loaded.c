/* LD_PRELOAD shim for the sanitizer suite: dlclose() does nothing, so the Vulkan driver and
 * layers the loader unloads at vkDestroyInstance stay mapped until exit. LeakSanitizer can then
 * name their frames (lavapipe, LLVM, the validation layer) and tests/robust/lsan.supp can
 * suppress what they keep; without it their leaks show as "<unknown module>" and cannot be told
 * apart. ASan needs ASAN_OPTIONS=verify_asan_link_order=0 to accept a preload before it. */
int dlclose(void *handle);

int dlclose(void *handle) {
    (void)handle;
    return 0;
}
