/* The public API the CLI is built on (issue 15): the runtime version functions, the load
 * progress callback and the standalone tokenizer (vkf_tokenizer_*).
 * References: models/kjv-gpt/expected.json's tokens for "In the beginning" (PyTorch side,
 * [bos] + char ids), the model's config.json (vocab_size 67, bos 1, eos 2), and the size of
 * model.safetensors on disk (stat) for the progress total. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vkformer.h"

static int fails;
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

typedef struct prog {
    int calls, monotone;
    double last, total;
} prog;

static void on_progress(void *user, double done, double total) {
    prog *p = user;
    if (p->calls && (done < p->last || total != p->total)) p->monotone = 0;
    p->calls++;
    p->last = done;
    p->total = total;
}

int main(void) {
    char ver[32];
    snprintf(ver, sizeof ver, "%d.%d.%d", VKF_VERSION_MAJOR, VKF_VERSION_MINOR, VKF_VERSION_PATCH);
    CHECK(strcmp(vkf_version(), ver) == 0, "vkf_version %s, header %s", vkf_version(), ver);
    CHECK(vkf_git_revision() && *vkf_git_revision(), "empty git revision");
    CHECK(strchr(vkf_glslang_version(), '.') != NULL, "glslang version %s", vkf_glslang_version());

    const char *dir = VKF_SOURCE_DIR "/models/kjv-gpt";
    struct stat st;
    CHECK(stat(VKF_SOURCE_DIR "/models/kjv-gpt/model.safetensors", &st) == 0, "no kjv-gpt");
    vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
    vkf_context *ctx;
    CHECK(vkf_context_create(&cp, &ctx) == VKF_OK, "context: %s", vkf_last_error());
    prog pr = {.monotone = 1};
    vkf_model_params mp = {.path = dir, .progress = on_progress, .progress_user = &pr};
    vkf_model *m = NULL;
    CHECK(vkf_model_load(ctx, &mp, &m) == VKF_OK, "load: %s", vkf_last_error());
    CHECK(pr.calls >= 3, "progress called %d times", pr.calls);
    CHECK(pr.monotone, "progress went backwards or changed its total");
    CHECK(pr.total == (double)st.st_size && pr.last == pr.total,
          "progress ended at %.0f of %.0f, file %lld bytes", pr.last, pr.total,
          (long long)st.st_size);
    vkf_model_free(m);
    vkf_context_free(ctx);

    vkf_tokenizer *t = NULL;
    CHECK(vkf_tokenizer_open(dir, &t) == VKF_OK, "tokenizer: %s", vkf_last_error());
    if (t) {
        static const int32_t want[] = {1,  24, 54, 5,  60, 48, 45, 5, 42,
                                       45, 47, 49, 54, 54, 49, 54, 47};
        int32_t *ids = NULL;
        size_t n = 0;
        const char *text = "In the beginning";
        CHECK(vkf_tokenizer_tokenize(t, text, strlen(text),
                                     VKF_TOKENIZE_ADD_SPECIAL | VKF_TOKENIZE_PARSE_SPECIAL, &ids,
                                     &n) == VKF_OK,
              "tokenize: %s", vkf_last_error());
        CHECK(n == sizeof want / sizeof want[0] && memcmp(ids, want, sizeof want) == 0,
              "tokens differ (%zu)", n);
        char *back = NULL;
        size_t len = 0;
        CHECK(vkf_tokenizer_detokenize(t, ids, n, 0, &back, &len) == VKF_OK && back &&
                  strcmp(back, text) == 0,
              "detokenize gave '%s'", back ? back : "(null)");
        int32_t bad = 67;
        char *x = NULL;
        CHECK(vkf_tokenizer_detokenize(t, &bad, 1, 0, &x, &len) == VKF_ERROR_TOKEN,
              "id 67 accepted");
        free(x);
        free(back);
        free(ids);
        int32_t bos, eos;
        vkf_tokenizer_specials(t, &bos, &eos);
        CHECK(bos == 1 && eos == 2, "bos %d eos %d", bos, eos);
        CHECK(vkf_tokenizer_vocab_size(t) == 67, "vocab %d", vkf_tokenizer_vocab_size(t));
        CHECK(vkf_tokenizer_piece(t, 24) && strcmp(vkf_tokenizer_piece(t, 24), "I") == 0,
              "piece 24");
        CHECK(strcmp(vkf_tokenizer_algorithm(t), "char") == 0, "algorithm %s",
              vkf_tokenizer_algorithm(t));
        vkf_tokenizer_close(t);
    }
    CHECK(vkf_tokenizer_open("/nonexistent/tok", &t) != VKF_OK &&
              strstr(vkf_last_error(), "/nonexistent/tok"),
          "a missing path: %s", vkf_last_error());
    printf("test_cli_api: %s\n", fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}
