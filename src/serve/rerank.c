/* POST /v1/rerank (also /rerank and /reranking, llama-server's spellings) on a cross-encoder
 * served in embedding mode, through vkf_rerank.
 *
 * Request (llama-server's handler, the Jina / Cohere shape): "query" a string, "documents" a
 * non-empty list of strings, "top_n" (default: every document), "return_documents" (Jina's and
 * Cohere's: each result carries "document": {"text": ...}; default false, as llama-server
 * never returns them); "model" accepted. Response: {"model", "object": "list", "usage":
 * {"prompt_tokens", "total_tokens"}, "results": [{"index", "relevance_score"}, ...]} sorted by
 * the score, highest first, cut to top_n. With "texts" instead of "documents" (Hugging Face
 * TEI's shape, as llama-server detects it) the answer is TEI's: a bare list of {"index",
 * "score"} (with "text" when "return_text"). The score is the model's first classifier output,
 * a logit as llama.cpp returns it. A model without a classifier head is answered 400. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

#define RR_MAX_DOCS 4096

static char *rr_error(int *status, int code, const char *msg) {
    *status = code;
    return srv_api_error(code, msg);
}

typedef struct rr_item {
    int index;
    float score;
} rr_item;

static int rr_cmp(const void *a, const void *b) { /* score descending, then index (stable) */
    const rr_item *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

char *srv_rerank(srv_embedder *e, const char *model_name, const char *body, size_t len,
                 int *status) {
    cJSON *j = cJSON_ParseWithLength(body ? body : "", len);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return rr_error(status, 400, "the request body is not a JSON object");
    }
    char *out = NULL;
    const char **docs = NULL;
    float *scores = NULL;
    int32_t *ntok = NULL;
    rr_item *items = NULL;
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(j, "query");
    const cJSON *tei = cJSON_GetObjectItemCaseSensitive(j, "texts");
    const cJSON *dl = tei ? tei : cJSON_GetObjectItemCaseSensitive(j, "documents");
    int n = cJSON_IsArray(dl) ? cJSON_GetArraySize(dl) : 0;
    if (!q) {
        out = rr_error(status, 400, "\"query\" must be provided");
        goto done;
    }
    if (!cJSON_IsString(q)) {
        out = rr_error(status, 400, "\"query\" must be a string");
        goto done;
    }
    if (n < 1) {
        out = rr_error(status, 400, "\"documents\" must be a non-empty string array");
        goto done;
    }
    if (n > RR_MAX_DOCS) {
        char msg[96];
        snprintf(msg, sizeof msg, "\"documents\": %d documents; at most %d in one request", n,
                 RR_MAX_DOCS);
        out = rr_error(status, 400, msg);
        goto done;
    }
    int top_n = n, ret_docs = 0;
    const cJSON *tn = cJSON_GetObjectItemCaseSensitive(j, "top_n");
    if (tn && !cJSON_IsNull(tn)) {
        if (!cJSON_IsNumber(tn) || tn->valuedouble != (double)(int)tn->valuedouble ||
            tn->valuedouble < 0) {
            out = rr_error(status, 400, "\"top_n\" must be a non-negative integer");
            goto done;
        }
        if (tn->valuedouble < n) top_n = (int)tn->valuedouble;
    }
    const cJSON *rd = cJSON_GetObjectItemCaseSensitive(j, tei ? "return_text" : "return_documents");
    if (rd && !cJSON_IsBool(rd) && !cJSON_IsNull(rd)) {
        out = rr_error(status, 400,
                       tei ? "\"return_text\" must be a boolean"
                           : "\"return_documents\" must be a boolean");
        goto done;
    }
    ret_docs = cJSON_IsTrue(rd);
    docs = calloc((size_t)n, sizeof *docs);
    scores = calloc((size_t)n, sizeof *scores);
    ntok = calloc((size_t)n, sizeof *ntok);
    items = calloc((size_t)n, sizeof *items);
    if (!docs || !scores || !ntok || !items) {
        out = rr_error(status, 500, "out of host memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const cJSON *d = cJSON_GetArrayItem(dl, i);
        if (!cJSON_IsString(d)) {
            char msg[96];
            snprintf(msg, sizeof msg, "\"%s\"[%d] must be a string", tei ? "texts" : "documents",
                     i);
            out = rr_error(status, 400, msg);
            goto done;
        }
        docs[i] = d->valuestring;
    }
    vkf_session *s = srv_embedder_lock(e);
    vkf_status st = vkf_rerank(s, q->valuestring, docs, n, scores, ntok);
    srv_embedder_unlock(e);
    if (st != VKF_OK) {
        out =
            rr_error(status, st == VKF_ERROR_INVALID_ARGUMENT || st == VKF_ERROR_TOKEN ? 400 : 500,
                     vkf_last_error());
        goto done;
    }
    long tokens = 0;
    for (int i = 0; i < n; i++) {
        items[i] = (rr_item){i, scores[i]};
        tokens += ntok[i];
    }
    qsort(items, (size_t)n, sizeof *items, rr_cmp);
    cJSON *results = cJSON_CreateArray();
    for (int i = 0; results && i < top_n; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "index", items[i].index);
        cJSON_AddNumberToObject(r, tei ? "score" : "relevance_score", items[i].score);
        if (ret_docs && tei) cJSON_AddStringToObject(r, "text", docs[items[i].index]);
        if (ret_docs && !tei)
            cJSON_AddStringToObject(cJSON_AddObjectToObject(r, "document"), "text",
                                    docs[items[i].index]);
        cJSON_AddItemToArray(results, r);
    }
    cJSON *o = results;
    if (!tei && results) {
        o = cJSON_CreateObject();
        const cJSON *mn = cJSON_GetObjectItemCaseSensitive(j, "model");
        cJSON_AddStringToObject(o, "model", cJSON_IsString(mn) ? mn->valuestring : model_name);
        cJSON_AddStringToObject(o, "object", "list");
        cJSON *u = cJSON_AddObjectToObject(o, "usage");
        cJSON_AddNumberToObject(u, "prompt_tokens", (double)tokens);
        cJSON_AddNumberToObject(u, "total_tokens", (double)tokens);
        cJSON_AddItemToObject(o, "results", results);
    }
    out = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    *status = out ? 200 : 500;
    if (!out) out = srv_api_error(500, "out of host memory");
done:
    free(docs);
    free(scores);
    free(ntok);
    free(items);
    cJSON_Delete(j);
    return out;
}
