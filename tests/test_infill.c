/* Fill-in-the-middle prompts against llama.cpp (the infill set, tools/refs/make_infill.py):
 *   - the FIM token ids of real vocabularies (GGUF keys, llama.cpp's detection by token text)
 *     equal llama_vocab_fim_pre/suf/mid/pad/rep/sep of the pinned libllama;
 *   - the prompt of each case (llama-server's /infill fields, n_batch, n_predict, n_ctx, spm)
 *     equals, id for id, the sequence of llama-server's format_prompt_infill assembled from
 *     llama_tokenize (the repo / file-separator pattern, the snippet separator, the prefix /
 *     suffix / extra budgets, spm order, BOS, the prompt's control-token text);
 *   - a vocabulary without FIM prefix, suffix or middle tokens is refused, naming them. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "generate/infill.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

static const char *const k_fim_names[VKF_FIM_COUNT] = {"pre", "suf", "mid", "pad", "rep", "sep"};

static int32_t num(const cJSON *o, const char *key) {
    return (int32_t)cJSON_GetObjectItemCaseSensitive(o, key)->valuedouble;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_case(vkf_tokenizer *tok, const char *vocab, const cJSON *c) {
    const char *name = str(c, "name");
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(c, "input_extra");
    int n_extra = cJSON_GetArraySize(ex);
    vkf_infill_chunk chunks[8];
    VKT_CHECK(n_extra <= 8, "%s/%s: %d extra chunks", vocab, name, n_extra);
    if (n_extra > 8) return;
    for (int i = 0; i < n_extra; i++) {
        const cJSON *ch = cJSON_GetArrayItem(ex, i);
        chunks[i].filename = str(ch, "filename"); /* absent: NULL, llama-server's "tmp" */
        chunks[i].text = str(ch, "text");
    }
    vkf_infill_params p = {
        .prefix = str(c, "input_prefix"),
        .suffix = str(c, "input_suffix"),
        .extra = chunks,
        .n_extra = n_extra,
        .prompt = str(c, "prompt"),
        .n_batch = num(c, "n_batch"),
        .n_predict = num(c, "n_predict"),
        .spm = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "spm")),
    };
    int32_t *ids = NULL, n = 0;
    VKT_OK(vkf_infill_tokens(tok, &p, num(c, "n_ctx"), &ids, &n));
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(c, "tokens");
    int nw = cJSON_GetArraySize(want), first_diff = -1;
    for (int i = 0; i < nw && i < n && first_diff < 0; i++)
        if (ids[i] != (int32_t)cJSON_GetArrayItem(want, i)->valuedouble) first_diff = i;
    if (first_diff < 0 && n != nw) first_diff = n < nw ? n : nw;
    VKT_CHECK(
        first_diff < 0, "%s/%s: %d tokens, llama.cpp's %d; first difference at %d (%d vs %d)",
        vocab, name, n, nw, first_diff, first_diff >= 0 && first_diff < n ? ids[first_diff] : -1,
        first_diff >= 0 && first_diff < nw ? (int)cJSON_GetArrayItem(want, first_diff)->valuedouble
                                           : -1);
    free(ids);
}

int main(void) {
    if (!vkt_need_fixtures("infill")) return vkt_finish();
    char path[1200];
    snprintf(path, sizeof path, "%s/infill.json", vkt_fixture("infill"));
    size_t len = 0;
    char *js = vkt_read_file(path, &len);
    cJSON *root = js ? cJSON_Parse(js) : NULL;
    free(js);
    VKT_CHECK(root != NULL, "%s: cannot read", path);
    if (!root) return vkt_finish();
    int n_cases = 0, n_refused = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "vocabs")) {
        const char *vocab = str(v, "vocab");
        snprintf(path, sizeof path, "%s/%s", vkt_fixture("infill"), vocab);
        vkf_tokenizer *tok = NULL;
        VKT_OK(vkf_tokenizer_open_auto(path, &tok));
        if (!tok) continue;
        const cJSON *fim = cJSON_GetObjectItemCaseSensitive(v, "fim");
        for (int k = 0; k < VKF_FIM_COUNT; k++) {
            int32_t want = num(fim, k_fim_names[k]);
            int32_t got = vkf_tokenizer_fim(tok, (vkf_fim_kind)k);
            VKT_CHECK(got == want, "%s: FIM %s token %d, llama.cpp's %d", vocab, k_fim_names[k],
                      got, want);
        }
        VKT_CHECK(vkf_tokenizer_add_bos(tok) == cJSON_IsTrue(cJSON_GetObjectItem(v, "add_bos")),
                  "%s: add_bos differs from llama.cpp's", vocab);
        const cJSON *cases = cJSON_GetObjectItemCaseSensitive(v, "cases"), *c;
        if (cases) {
            cJSON_ArrayForEach(c, cases) {
                test_case(tok, vocab, c);
                n_cases++;
            }
        } else { /* llama-server: "Infill is not supported by this model" */
            vkf_infill_params p = {.prefix = "a", .suffix = "b"};
            int32_t *ids = NULL, n = 0;
            vkf_status s = vkf_infill_tokens(tok, &p, 4096, &ids, &n);
            VKT_CHECK(s == VKF_ERROR_UNSUPPORTED && !ids, "%s: infill not refused (%d)", vocab, s);
            VKT_CHECK(strstr(vkf_last_error(), "prefix suffix middle") != NULL,
                      "%s: the refusal does not name the missing tokens: %s", vocab,
                      vkf_last_error());
            n_refused++;
        }
        vkf_tokenizer_free(tok);
    }
    printf("infill: %d cases equal llama.cpp's prompts, %d vocabularies refused\n", n_cases,
           n_refused);
    VKT_CHECK(n_cases >= 20 && n_refused >= 2, "only %d cases, %d refusals", n_cases, n_refused);
    cJSON_Delete(root);
    return vkt_finish();
}
