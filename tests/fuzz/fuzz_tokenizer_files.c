/* libFuzzer entry: the input is a tokenizer file, read from memory: tokenizer.json when it
 * starts with '{', else a SentencePiece .model protobuf. A file that loads must also encode and
 * decode a fixed text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vkf_tokenizer *t = NULL;
    vkf_status s = size && data[0] == '{'
                       ? vkf_tokenizer_from_hf_json_memory((const char *)data, size, "fuzz", &t)
                       : vkf_tokenizer_from_spm_memory(data, size, "fuzz", &t);
    if (s != VKF_OK) {
        if (t) abort(); /* failure leaves *out NULL */
        return 0;
    }
    static const char text[] = "In the beginning, God's \xe4\xb8\xad\xe6\x96\x87 <s> 123 \xff ";
    int32_t *ids = NULL;
    size_t n = 0;
    if (vkf_tokenizer_encode(t, text, sizeof text - 1, 1, &ids, &n) == VKF_OK) {
        char *out = NULL;
        size_t len;
        if (vkf_tokenizer_decode(t, ids, n, &out, &len) == VKF_OK) free(out);
        free(ids);
    }
    vkf_tokenizer_free(t);
    return 0;
}
