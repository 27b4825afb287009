/* libFuzzer entry: the input is a safetensors file, parsed from memory
 * (vkf_safetensors_open_memory); when it parses, every tensor is looked up by name and its data
 * range touched, and a few metadata keys are read. */
#include <stdint.h>
#include <stdlib.h>

#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vkf_safetensors *st = NULL;
    if (vkf_safetensors_open_memory(data, size, "fuzz.safetensors", &st) != VKF_OK) {
        if (st) abort();
        return 0;
    }
    volatile uint64_t sink = 0;
    for (size_t i = 0; i < vkf_safetensors_count(st); i++) {
        const vkf_st_tensor *t = vkf_safetensors_tensor(st, i);
        if (vkf_safetensors_find(st, t->name) != t) abort();
        if (t->nbytes) {
            const uint8_t *p = t->data;
            if (p < data || p + t->nbytes > data + size) abort();
            sink += p[0] + p[t->nbytes - 1];
        }
        const vkf_st_tensor *out;
        (void)vkf_safetensors_get(st, t->name, -1, t->rank, t->shape, &out);
    }
    (void)vkf_safetensors_metadata(st, "format");
    vkf_safetensors_close(st);
    (void)sink;
    return 0;
}
