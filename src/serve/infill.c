/* POST /infill: llama-server's fill-in-the-middle endpoint (tools/server/server-context.cpp,
 * post_infill, of llama.cpp 0c1e570).
 *
 * The request carries input_prefix and input_suffix (required strings), input_extra (optional:
 * [{"filename": string, "text": string}]) and prompt (optional string), beside the completion
 * fields (n_predict / max_tokens, temperature, stop, stream, ...). The prompt tokens are
 * vkf_model_infill's (llama-server's format_prompt_infill with its default -b 2048 and -n -1,
 * the slot's context); the request then runs as a completion of those tokens. The answer has
 * llama-server's non-OpenAI shape: {"content", "tokens", "stop", "stop_type", "model",
 * "tokens_predicted", "tokens_evaluated", "timings", ...}; streamed, one such object per
 * server-sent event, the last with "stop": true. A model whose vocabulary has no FIM tokens is
 * answered 400 (llama-server: "Infill is not supported by this model"). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

cJSON *srv_api_timings(const srv_req *r);

static char *fail(int *status, int code, const char *fmt, const char *arg) {
    char msg[768];
    snprintf(msg, sizeof msg, fmt, arg ? arg : "");
    *status = code;
    return srv_api_error(code, msg);
}

char *srv_infill_body(const srv_config *c, const char *body, size_t len, int *status) {
    cJSON *j = cJSON_ParseWithLength(body ? body : "", len);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return fail(status, 400, "the request body is not a JSON object", NULL);
    }
    char *out = NULL;
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(j, "input_prefix");
    const cJSON *suf = cJSON_GetObjectItemCaseSensitive(j, "input_suffix");
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(j, "input_extra");
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(j, "prompt");
    vkf_infill_chunk *chunks = NULL;
    int n_extra = cJSON_IsArray(ex) ? cJSON_GetArraySize(ex) : 0;
    if (pr && !cJSON_IsString(pr)) {
        out = fail(status, 400, "\"prompt\" must be a string", NULL);
        goto done;
    }
    if (!cJSON_IsString(pre) || !cJSON_IsString(suf)) {
        out = fail(status, 400, "\"%s\" is required (a string)",
                   !cJSON_IsString(pre) ? "input_prefix" : "input_suffix");
        goto done;
    }
    if (ex && !cJSON_IsArray(ex)) {
        out = fail(status, 400,
                   "\"input_extra\" must be an array of {\"filename\": string, \"text\": string}",
                   NULL);
        goto done;
    }
    chunks = calloc((size_t)(n_extra ? n_extra : 1), sizeof *chunks);
    if (!chunks) {
        out = fail(status, 500, "out of host memory", NULL);
        goto done;
    }
    for (int i = 0; i < n_extra; i++) {
        const cJSON *ch = cJSON_GetArrayItem(ex, i);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(ch, "text");
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(ch, "filename");
        if (!cJSON_IsString(t)) {
            out =
                fail(status, 400,
                     "extra_context chunk must contain a \"text\" field with a string value", NULL);
            goto done;
        }
        if (f && !cJSON_IsString(f)) {
            out = fail(status, 400, "extra_context chunk's \"filename\" field must be a string",
                       NULL);
            goto done;
        }
        chunks[i].text = t->valuestring;
        chunks[i].filename = f ? f->valuestring : NULL;
    }
    vkf_infill_params p = {
        .prefix = pre->valuestring,
        .suffix = suf->valuestring,
        .extra = chunks,
        .n_extra = n_extra,
        .prompt = pr ? pr->valuestring : "",
        .n_batch = 2048, /* llama-server's defaults (-b, -n) */
        .n_predict = -1,
        .n_ctx = c->n_ctx,
        .spm = c->spm_infill,
    };
    int32_t *ids = NULL, n = 0;
    vkf_status s = vkf_model_infill(c->m, &p, &ids, &n);
    if (s != VKF_OK) {
        out = fail(status, s == VKF_ERROR_OUT_OF_MEMORY ? 500 : 400, "%s", vkf_last_error());
        goto done;
    }
    /* the completion request: the same fields, the prompt as its tokens */
    cJSON_DeleteItemFromObjectCaseSensitive(j, "input_prefix");
    cJSON_DeleteItemFromObjectCaseSensitive(j, "input_suffix");
    cJSON_DeleteItemFromObjectCaseSensitive(j, "input_extra");
    cJSON_DeleteItemFromObjectCaseSensitive(j, "prompt");
    cJSON *arr = cJSON_AddArrayToObject(j, "prompt");
    for (int32_t i = 0; arr && i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
    free(ids);
    out = arr ? cJSON_PrintUnformatted(j) : NULL;
    *status = out ? 200 : 500;
    if (!out) out = srv_api_error(500, "out of host memory");
done:
    free(chunks);
    cJSON_Delete(j);
    return out;
}

/* llama-server's stop_type: "eos" (an end-of-generation token), "word" (a stop string),
 * "limit" (n_predict or the context) */
static const char *stop_type(const srv_config *c, const srv_req *r) {
    if (r->finish == SRV_FINISH_LENGTH) return "limit";
    if (r->finish != SRV_FINISH_STOP) return "none";
    return r->n_gen > 0 && r->gen && vkf_model_is_eog(c->m, r->gen[r->n_gen - 1]) ? "eos" : "word";
}

static cJSON *result(const srv_config *c, const srv_req *r, const char *text, int final) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", r->index);
    cJSON_AddStringToObject(o, "content", text);
    cJSON_AddArrayToObject(o, "tokens");
    cJSON_AddNumberToObject(o, "id_slot", r->slot);
    cJSON_AddBoolToObject(o, "stop", final);
    cJSON_AddStringToObject(o, "model", c->model_name);
    cJSON_AddNumberToObject(o, "tokens_predicted", r->n_gen);
    cJSON_AddNumberToObject(o, "tokens_evaluated", r->n_prompt);
    if (final) {
        cJSON_AddNumberToObject(o, "tokens_cached", r->n_cached);
        cJSON_AddBoolToObject(o, "truncated", 0);
        cJSON_AddStringToObject(o, "stop_type", stop_type(c, r));
        cJSON_AddStringToObject(o, "stopping_word", "");
        cJSON_AddItemToObject(o, "timings", srv_api_timings(r));
    }
    return o;
}

char *srv_infill_response(const srv_config *c, const srv_req *r) {
    size_t len = 0;
    for (int i = 0; i < r->n_ev; i++)
        len += r->ev[i].len;
    char *text = malloc(len + 1);
    if (!text) return NULL;
    len = 0;
    for (int i = 0; i < r->n_ev; i++) {
        memcpy(text + len, r->ev[i].text ? r->ev[i].text : "", r->ev[i].len);
        len += r->ev[i].len;
    }
    text[len] = '\0';
    cJSON *o = result(c, r, text, 1);
    free(text);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

char *srv_infill_chunk(const srv_config *c, const srv_req *r, int i) {
    size_t n = i >= 0 ? r->ev[i].len : 0;
    char *t = malloc(n + 1);
    if (!t) return NULL;
    if (n) memcpy(t, r->ev[i].text, n);
    t[n] = '\0';
    cJSON *o = result(c, r, t, i < 0);
    free(t);
    char *js = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!js) return NULL;
    size_t l = strlen(js);
    char *ev = malloc(l + 9);
    if (ev) snprintf(ev, l + 9, "data: %s\n\n", js);
    free(js);
    return ev;
}
