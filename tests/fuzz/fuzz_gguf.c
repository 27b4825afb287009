/* libFuzzer entry: the input is a GGUF file, parsed from memory (vkf_gguf_open_memory); when it
 * parses, every key and tensor is visited and the tokenizer metadata, if any, is loaded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vkf_gguf *g = NULL;
    if (vkf_gguf_open_memory(data, size, "fuzz.gguf", &g) != VKF_OK) {
        if (g) abort();
        return 0;
    }
    volatile uint64_t sink = 0;
    for (size_t i = 0; vkf_gguf_kv_at(g, i); i++) {
        const vkf_gguf_kv *kv = vkf_gguf_kv_at(g, i);
        if (vkf_gguf_find(g, kv->key) == NULL) abort();
        sink += kv->value.type;
    }
    for (size_t i = 0; vkf_gguf_tensor_at(g, i); i++) {
        const vkf_gguf_tensor *t = vkf_gguf_tensor_at(g, i);
        if (vkf_gguf_find_tensor(g, t->name) == NULL) abort();
        /* touch the first and last byte of the tensor's data: it must lie inside the input */
        if (t->nbytes)
            sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->nbytes - 1];
    }
    vkf_tokenizer *tok = NULL;
    if (vkf_tokenizer_from_gguf(g, &tok) == VKF_OK) {
        int32_t *ids = NULL;
        size_t n = 0;
        if (vkf_tokenizer_encode(tok, "Hello world <s>", 15, 1, &ids, &n) == VKF_OK) {
            char *out = NULL;
            size_t len;
            if (vkf_tokenizer_decode(tok, ids, n, &out, &len) == VKF_OK) free(out);
            free(ids);
        }
        vkf_tokenizer_free(tok);
    }
    vkf_gguf_close(g);
    (void)sink;
    return 0;
}
