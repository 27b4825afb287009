/* Public wrappers (include/vkformer.h, "versions and standalone tokenizers"): the runtime
 * versions and the tokenizer API over the private tokenizer; kept thin on purpose. */
#include <stdio.h>

#include <glslang/build_info.h>
#include <volk.h>

#include "io/tokenizer.h"
#include "vkformer.h"

#ifndef VKF_GIT_REV
#define VKF_GIT_REV "unknown"
#endif

#define VKF_STR2(x) #x
#define VKF_STR(x) VKF_STR2(x)

const char *vkf_version(void) {
    return VKF_STR(VKF_VERSION_MAJOR) "." VKF_STR(VKF_VERSION_MINOR) "." VKF_STR(VKF_VERSION_PATCH);
}

const char *vkf_git_revision(void) { return VKF_GIT_REV; }

uint32_t vkf_vulkan_loader_version(void) {
    if (volkInitialize() != VK_SUCCESS) return 0;
    return volkGetInstanceVersion();
}

const char *vkf_glslang_version(void) {
    return VKF_STR(GLSLANG_VERSION_MAJOR) "." VKF_STR(GLSLANG_VERSION_MINOR) "." VKF_STR(
        GLSLANG_VERSION_PATCH);
}

vkf_status vkf_tokenizer_open(const char *path, vkf_tokenizer **out) {
    return vkf_tokenizer_open_auto(path, out);
}

void vkf_tokenizer_close(vkf_tokenizer *t) { vkf_tokenizer_free(t); }

vkf_status vkf_tokenizer_tokenize(vkf_tokenizer *t, const char *text, size_t len, int flags,
                                  int32_t **ids, size_t *n) {
    return vkf_tokenizer_encode_ex(t, text, len, (flags & VKF_TOKENIZE_ADD_SPECIAL) != 0,
                                   (flags & VKF_TOKENIZE_PARSE_SPECIAL) != 0, ids, n);
}

vkf_status vkf_tokenizer_detokenize(const vkf_tokenizer *t, const int32_t *ids, size_t n, int flags,
                                    char **text, size_t *len) {
    return vkf_tokenizer_decode_ex(
        t, ids, n, (flags & VKF_DETOKENIZE_SPECIAL) ? VKF_DECODE_SPECIAL : 0, text, len);
}

int32_t vkf_tokenizer_vocab_size(const vkf_tokenizer *t) { return vkf_tokenizer_n_vocab(t); }

const char *vkf_tokenizer_piece(const vkf_tokenizer *t, int32_t id) {
    return vkf_tokenizer_token_text(t, id);
}

const char *vkf_tokenizer_algorithm(const vkf_tokenizer *t) { return vkf_tokenizer_kind(t); }

void vkf_tokenizer_specials(const vkf_tokenizer *t, int32_t *bos, int32_t *eos) {
    if (bos) *bos = vkf_tokenizer_bos(t);
    if (eos) *eos = vkf_tokenizer_eos(t);
}
