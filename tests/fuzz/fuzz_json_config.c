/* libFuzzer entry: the input is a config.json, parsed from memory (vkf_json_config_parse); when
 * it parses, typed getters run over the keys the model loaders read. */
#include <stdint.h>
#include <stdlib.h>

#include "io/json_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vkf_json_config *c = NULL;
    if (vkf_json_config_parse((const char *)data, size, "fuzz.json", &c) != VKF_OK) {
        if (c) abort();
        return 0;
    }
    static const char *const keys[] = {"n_embd",
                                       "n_layer",
                                       "hidden_size",
                                       "vocab_size",
                                       "model_type",
                                       "layer_norm_epsilon",
                                       "tie_word_embeddings",
                                       "rope_theta",
                                       "architectures",
                                       ""};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int64_t iv;
        double fv;
        int bv;
        const char *sv;
        (void)vkf_json_config_get_int(c, keys[i], 0, &iv);
        (void)vkf_json_config_get_float(c, keys[i], 0, &fv);
        (void)vkf_json_config_get_bool(c, keys[i], 0, &bv);
        (void)vkf_json_config_get_str(c, keys[i], "", &sv);
    }
    vkf_json_config_free(c);
    return 0;
}
