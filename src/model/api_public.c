/* Public wrappers (include/vkformer.h, "versions and standalone tokenizers"): the runtime
 * versions and the tokenizer API over the private tokenizer; kept thin on purpose. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <glslang/build_info.h>
#include <volk.h>

#include "core/error.h"
#include "model/arch.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
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

/* The decoder-only descriptors of vkf_arch_list (encoder-only models embed: vkf_embed). */
const char *vkf_architectures(void) {
    static char buf[256];
    if (!buf[0]) {
        size_t n = 0;
        for (int i = 0; vkf_arch_list[i]; i++)
            if (!vkf_arch_list[i]->encoder && n < sizeof buf)
                n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", n ? ", " : "",
                                      vkf_arch_list[i]->name);
    }
    return buf;
}

/* A model directory's config.json may ask for BOS (add_bos_token, bos_token_id) where its
 * tokenizer file does not: the model adds it (vkf_model_tokenize), so the tokenizer opened on
 * the directory does too, and `tokenize` agrees with `generate`. A bare SentencePiece .model
 * adds no BOS by default, like the sentencepiece library's encode. */
static void apply_model_conventions(const char *path, vkf_tokenizer *t) {
    size_t n = strlen(path);
    if (n > 6 && strcmp(path + n - 6, ".model") == 0) {
        t->add_bos = 0;
        return;
    }
    char cfg[1200];
    snprintf(cfg, sizeof cfg, "%s/config.json", path);
    FILE *f = fopen(cfg, "rb");
    if (!f) return;
    char *buf = malloc(1 << 16);
    size_t len = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (!buf) return;
    buf[len] = 0;
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    const cJSON *add = cJSON_GetObjectItemCaseSensitive(j, "add_bos_token");
    const cJSON *bos = cJSON_GetObjectItemCaseSensitive(j, "bos_token_id");
    if (cJSON_IsBool(add)) {
        t->add_bos = cJSON_IsTrue(add);
        if (t->add_bos && t->bos < 0 && cJSON_IsNumber(bos)) t->bos = (int32_t)bos->valuedouble;
    }
    cJSON_Delete(j);
}

static int gguf_files_in(const char *dir);
vkf_status vkf_model_path_check(const char *path);

vkf_status vkf_tokenizer_open(const char *path, vkf_tokenizer **out) {
    /* a folder of several GGUF files (and no tokenizer file): which one is meant is not ours
     * to guess; refused as vkf_model_load refuses it, naming them */
    static const char *const files[] = {"tokenizer.json", "tokenizer.model", "vocab.json",
                                        "char_vocab.json"};
    int own = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0] && !own; i++) {
        char f[1200];
        struct stat st;
        snprintf(f, sizeof f, "%s/%s", path, files[i]);
        own = stat(f, &st) == 0;
    }
    if (!own && gguf_files_in(path) > 1) {
        *out = NULL;
        VKF_TRY(vkf_model_path_check(path));
    }
    vkf_status s = vkf_tokenizer_open_auto(path, out);
    if (s == VKF_OK) apply_model_conventions(path, *out);
    return s;
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

/* ---------------------------------------------------------------- model path mistakes */

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The *.gguf files in dir (0 when it is not a directory). */
static int gguf_files_in(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));)
        n += ends_with(e->d_name, ".gguf");
    closedir(d);
    return n;
}

/* Called by vkf_model_load before anything is read: the common path mistakes get a message
 * that says what to pass instead. VKF_OK when the path looks like a model. */
vkf_status vkf_model_path_check(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return VKF_OK; /* the loader names the missing path */
    if (S_ISREG(st.st_mode)) {
        static const char *const in_dir[] = {
            ".safetensors",   "model.safetensors.index.json", "config.json",
            "tokenizer.json", "tokenizer_config.json",        "generation_config.json"};
        for (size_t i = 0; i < sizeof in_dir / sizeof in_dir[0]; i++) {
            if (!ends_with(path, in_dir[i])) continue;
            char dir[1024];
            snprintf(dir, sizeof dir, "%s", path);
            char *slash = strrchr(dir, '/');
            if (slash)
                *slash = 0;
            else
                snprintf(dir, sizeof dir, ".");
            return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                             "%s is a file of a Hugging Face model directory: pass the directory "
                             "%s (config.json and "
                             "model.safetensors are read from it)",
                             path, dir);
        }
        return VKF_OK;
    }
    if (!S_ISDIR(st.st_mode)) return VKF_OK;
    char cfg[1200];
    snprintf(cfg, sizeof cfg, "%s/config.json", path);
    if (stat(cfg, &st) == 0) return VKF_OK;
    /* no config.json: a folder of .gguf files? name them */
    DIR *d = opendir(path);
    if (!d) return VKF_OK;
    char list[1024] = "";
    size_t len = 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!ends_with(e->d_name, ".gguf")) continue;
        if (n++ < 8 && len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s/%s", n > 1 ? ", " : "",
                                    path, e->d_name);
    }
    closedir(d);
    if (n == 0) return VKF_OK;
    return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                     "%s has no config.json but %d GGUF file%s: pass one of them: %s%s", path, n,
                     n > 1 ? "s" : "", list, n > 8 ? ", ..." : "");
}

/* ---------------------------------------------------------------- load progress */

/* The load in progress on this thread (vkf_model_load is synchronous): weights.c reports every
 * upload here. */
static _Thread_local struct {
    void (*cb)(void *user, double done, double total);
    void *user;
    double done, total;
} g_progress;

static double path_bytes(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    if (!S_ISDIR(st.st_mode)) return (double)st.st_size;
    double sum = 0; /* a model directory: its *.safetensors (every shard) */
    DIR *d = opendir(path);
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!ends_with(e->d_name, ".safetensors")) continue;
        char f[1400];
        snprintf(f, sizeof f, "%s/%s", path, e->d_name);
        if (stat(f, &st) == 0) sum += (double)st.st_size;
    }
    closedir(d);
    return sum;
}

void vkf_load_progress_begin(const vkf_model_params *p);
void vkf_load_progress_step(size_t bytes);
void vkf_load_progress_end(int ok);

void vkf_load_progress_begin(const vkf_model_params *p) {
    g_progress.cb = p->progress;
    g_progress.user = p->progress_user;
    g_progress.done = 0;
    g_progress.total = p->progress ? path_bytes(p->path) : 0;
    if (g_progress.cb) g_progress.cb(g_progress.user, 0, g_progress.total);
}

void vkf_load_progress_step(size_t bytes) {
    if (!g_progress.cb) return;
    g_progress.done += (double)bytes;
    /* vectors are uploaded as F32 and tables are computed: never past the total before the end */
    if (g_progress.done > g_progress.total) g_progress.done = g_progress.total;
    g_progress.cb(g_progress.user, g_progress.done, g_progress.total);
}

void vkf_load_progress_end(int ok) {
    if (g_progress.cb && ok) g_progress.cb(g_progress.user, g_progress.total, g_progress.total);
    g_progress.cb = NULL;
}
