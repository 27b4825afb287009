/* llama-server's own endpoints next to the OpenAI ones: POST /completion (its native request
 * fields n_predict and n_probs, its response shape with completion_probabilities) and POST
 * /apply-template (the chat template's prompt for a list of messages, no generation).
 *
 * /completion takes the request fields of /v1/completions (srv_api_parse) plus n_predict (the
 * token budget, -1: the server's --max-tokens) and n_probs (0..20: each generated token's
 * log-probability and the n_probs most likely tokens, from the softmax of the model's logits
 * before sampling, as llama-server's default post_sampling_probs false). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "serve/serve.h"

cJSON *srv_api_timings(const srv_req *r); /* api.c */

int srv_native_parse(const srv_config *c, const char *body, size_t len, srv_req *r, char *err,
                     size_t en) {
    cJSON *j = cJSON_ParseWithLength(body, len);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        snprintf(err, en, "the request body is not a JSON object");
        return -1;
    }
    int n_probs = 0;
    const cJSON *np = cJSON_GetObjectItemCaseSensitive(j, "n_probs");
    if (np && !cJSON_IsNull(np)) {
        if (!cJSON_IsNumber(np) || np->valuedouble != floor(np->valuedouble) ||
            np->valuedouble < 0 || np->valuedouble > SRV_MAX_TOP_LOGPROBS) {
            cJSON_Delete(j);
            snprintf(err, en, "n_probs: expected an integer in [0, %d]", SRV_MAX_TOP_LOGPROBS);
            return -1;
        }
        n_probs = (int)np->valuedouble;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(j, "n_probs");
    /* the OpenAI field logprobs means something else here: llama-server reads n_probs */
    cJSON_DeleteItemFromObjectCaseSensitive(j, "logprobs");
    const cJSON *npred = cJSON_GetObjectItemCaseSensitive(j, "n_predict");
    if (npred && !cJSON_GetObjectItemCaseSensitive(j, "max_tokens")) {
        if (!cJSON_IsNumber(npred) || npred->valuedouble != floor(npred->valuedouble) ||
            npred->valuedouble < -1) {
            cJSON_Delete(j);
            snprintf(err, en, "n_predict: expected an integer >= -1 (-1: no limit of its own)");
            return -1;
        }
        if (npred->valuedouble >= 0) cJSON_AddNumberToObject(j, "max_tokens", npred->valuedouble);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(j, "n_predict");
    char *js = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!js) {
        snprintf(err, en, "out of host memory");
        return -1;
    }
    int rc = srv_api_parse(c, 0, js, strlen(js), r, err, en);
    free(js);
    if (rc) return rc;
    if (r->n_choices > 1) {
        snprintf(err, en,
                 "prompt: /completion takes one prompt per request (a list of prompts: "
                 "/v1/completions)");
        return -1;
    }
    r->native = 1;
    r->logprobs = n_probs > 0;
    r->top_logprobs = n_probs;
    return 0;
}

static cJSON *bytes_of(const char *s) {
    cJSON *a = cJSON_CreateArray();
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(*p));
    return a;
}

static char *piece(const srv_config *c, int32_t id) {
    char *p = NULL;
    if (vkf_model_detokenize(c->m, &id, 1, VKF_DETOKENIZE_SPECIAL, &p) != VKF_OK) return strdup("");
    char *clean = vkf_frontend_utf8_dup(p, strlen(p));
    free(p);
    return clean;
}

/* llama-server's completion_probabilities over events [i0, i1): {id, token, bytes, logprob,
 * top_logprobs: [{id, token, bytes, logprob}]} (an end-of-generation token has none) */
static cJSON *probabilities(const srv_config *c, const srv_req *r, int i0, int i1) {
    cJSON *a = cJSON_CreateArray();
    for (int i = i0; i < i1; i++) {
        const srv_event *e = &r->ev[i];
        if (vkf_model_is_eog(c->m, e->id)) continue;
        cJSON *t = cJSON_CreateObject();
        char *tx = e->piece ? NULL : piece(c, e->id);
        const char *text = e->piece ? e->piece : tx ? tx : "";
        cJSON_AddNumberToObject(t, "id", e->id);
        cJSON_AddStringToObject(t, "token", text);
        cJSON_AddItemToObject(t, "bytes", bytes_of(text));
        cJSON_AddNumberToObject(t, "logprob", e->logprob);
        free(tx);
        cJSON *top = cJSON_AddArrayToObject(t, "top_logprobs");
        for (int k = 0; k < e->n_top; k++) {
            cJSON *o = cJSON_CreateObject();
            char *s = piece(c, e->top_id[k]);
            cJSON_AddNumberToObject(o, "id", e->top_id[k]);
            cJSON_AddStringToObject(o, "token", s ? s : "");
            cJSON_AddItemToObject(o, "bytes", bytes_of(s ? s : ""));
            cJSON_AddNumberToObject(o, "logprob", e->top_lp[k]);
            free(s);
            cJSON_AddItemToArray(top, o);
        }
        cJSON_AddItemToArray(a, t);
    }
    return a;
}

static cJSON *common(const srv_req *r, const char *content, int i0, int i1, int stop) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", r->index);
    cJSON_AddStringToObject(o, "content", content);
    cJSON *toks = cJSON_AddArrayToObject(o, "tokens");
    for (int i = i0; i < i1; i++)
        cJSON_AddItemToArray(toks, cJSON_CreateNumber(r->ev[i].id));
    cJSON_AddNumberToObject(o, "id_slot", r->id_slot);
    cJSON_AddBoolToObject(o, "stop", stop);
    cJSON_AddNumberToObject(o, "tokens_predicted", r->n_gen);
    cJSON_AddNumberToObject(o, "tokens_evaluated", r->n_prompt);
    return o;
}

/* the final object: the whole answer (stream false), or a stream's last chunk (no content) */
static char * final(const srv_config *c, const srv_req *r, int whole) {
    size_t len = 0;
    for (int i = 0; whole && i < r->n_ev; i++)
        len += r->ev[i].len;
    char *text = malloc(len + 1);
    if (!text) return NULL;
    len = 0;
    for (int i = 0; whole && i < r->n_ev; i++) {
        memcpy(text + len, r->ev[i].text ? r->ev[i].text : "", r->ev[i].len);
        len += r->ev[i].len;
    }
    text[len] = '\0';
    cJSON *o = common(r, text, 0, whole ? r->n_ev : 0, 1);
    free(text);
    cJSON_AddStringToObject(o, "model", c->model_name);
    cJSON_AddBoolToObject(o, "truncated", 0);
    cJSON_AddStringToObject(o, "stop_type",
                            r->finish == SRV_FINISH_LENGTH ? "limit"
                            : r->finish == SRV_FINISH_STOP ? "eos"
                                                           : "none");
    cJSON_AddNumberToObject(o, "tokens_cached", r->n_cached);
    cJSON_AddItemToObject(o, "timings", srv_api_timings(r));
    if (whole && r->logprobs)
        cJSON_AddItemToObject(o, "completion_probabilities", probabilities(c, r, 0, r->n_ev));
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

char *srv_native_response(const srv_config *c, const srv_req *r) { return final(c, r, 1); }

char *srv_native_chunk(const srv_config *c, const srv_req *r, int i) {
    char *js;
    if (i < 0) {
        js = final(c, r, 0);
    } else {
        cJSON *o = common(r, r->ev[i].text ? r->ev[i].text : "", i, i + 1, 0);
        if (r->logprobs)
            cJSON_AddItemToObject(o, "completion_probabilities", probabilities(c, r, i, i + 1));
        js = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
    }
    if (!js) return NULL;
    size_t n = strlen(js) + 16;
    char *ev = malloc(n);
    if (ev) snprintf(ev, n, "data: %s\n\n", js);
    free(js);
    return ev;
}
