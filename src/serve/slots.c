/* GET /health and GET /slots, in llama-server's shapes.
 *
 * /health is what a load balancer or an orchestrator asks: 503 {"status": "loading model"}
 * while the model loads (the port is served from the start), 200 {"status": "ok", ...} with the
 * load (idle and busy slots, queued requests), {"status": "no slot available", ...} when every
 * slot is busy (200, or 503 with the query parameter fail_on_no_slot, as llama-server), and
 * 503 {"status": "shutting down"} while draining. include_slots adds the slots.
 *
 * /slots is llama-server's array of slots: id, n_ctx, is_processing, id_task, the prompt's
 * token counts, the sampling params and next_token of the request the slot holds (or held
 * last), its prompt and the text generated so far. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "serve/serve.h"

static char *print_free(cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

/* vkformer's sampler order (vkformer.h), in llama-server's names */
static const char *const samplers[] = {"penalties", "top_k", "typ_p",
                                       "top_p",     "min_p", "temperature"};

static cJSON *slot_params(const srv_slot_info *s) {
    cJSON *p = cJSON_CreateObject();
    const vkf_sampler_params *sp = &s->sp;
    cJSON_AddNumberToObject(p, "n_predict", s->max_tokens);
    cJSON_AddNumberToObject(p, "seed", (double)sp->seed);
    cJSON_AddNumberToObject(p, "temperature", sp->temp);
    cJSON_AddNumberToObject(p, "top_k", sp->top_k);
    cJSON_AddNumberToObject(p, "top_p", sp->top_p);
    cJSON_AddNumberToObject(p, "min_p", sp->min_p);
    cJSON_AddNumberToObject(p, "typical_p", sp->typical_p == 0.0f ? 1.0 : sp->typical_p);
    cJSON_AddNumberToObject(p, "repeat_last_n", sp->penalty_last_n ? sp->penalty_last_n : 64);
    cJSON_AddNumberToObject(p, "repeat_penalty",
                            sp->repeat_penalty == 0.0f ? 1.0 : sp->repeat_penalty);
    cJSON_AddNumberToObject(p, "presence_penalty", sp->presence_penalty);
    cJSON_AddNumberToObject(p, "frequency_penalty", sp->frequency_penalty);
    cJSON_AddNumberToObject(p, "mirostat", 0);
    cJSON *stop = cJSON_AddArrayToObject(p, "stop");
    for (int i = 0; i < s->n_stops; i++)
        cJSON_AddItemToArray(stop, cJSON_CreateString(s->stops[i]));
    cJSON_AddNumberToObject(p, "max_tokens", s->max_tokens);
    cJSON_AddNumberToObject(p, "n_keep", 0);
    cJSON_AddNumberToObject(p, "n_discard", 0);
    cJSON_AddBoolToObject(p, "ignore_eos", sp->ignore_eos);
    cJSON_AddBoolToObject(p, "stream", s->stream);
    cJSON_AddNumberToObject(p, "n_probs", s->n_probs);
    cJSON_AddNumberToObject(p, "min_keep", 0);
    cJSON *smp = cJSON_AddArrayToObject(p, "samplers");
    for (size_t i = 0; i < sizeof samplers / sizeof samplers[0]; i++)
        cJSON_AddItemToArray(smp, cJSON_CreateString(samplers[i]));
    return p;
}

static cJSON *slot_json(const srv_config *c, const srv_slot_info *s) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", s->id);
    cJSON_AddNumberToObject(o, "n_ctx", s->n_ctx);
    if (c->kv_bytes_slot) { /* its KV cache as allocated, in the -ctk / -ctv types */
        cJSON_AddStringToObject(o, "cache_type_k", vkf_dtype_name((vkf_dtype)c->kv_type_k));
        cJSON_AddStringToObject(o, "cache_type_v", vkf_dtype_name((vkf_dtype)c->kv_type_v));
        cJSON_AddNumberToObject(o, "kv_cache_bytes", (double)c->kv_bytes_slot);
    }
    cJSON_AddBoolToObject(o, "speculative", s->speculative);
    cJSON_AddBoolToObject(o, "is_processing", s->busy);
    if (s->task < 0) return o; /* llama-server: the task fields only once the slot had one */
    cJSON_AddNumberToObject(o, "id_task", (double)s->task);
    cJSON_AddNumberToObject(o, "n_prompt_tokens", s->n_prompt);
    cJSON_AddNumberToObject(o, "n_prompt_tokens_processed", s->n_prompt - s->n_cached);
    cJSON_AddNumberToObject(o, "n_prompt_tokens_cache", s->n_cached);
    cJSON_AddItemToObject(o, "params", slot_params(s));
    cJSON *next = cJSON_AddArrayToObject(o, "next_token"), *n = cJSON_CreateObject();
    size_t glen = s->generated ? strlen(s->generated) : 0;
    cJSON_AddBoolToObject(n, "has_next_token", s->busy);
    cJSON_AddBoolToObject(n, "has_new_line", glen && memchr(s->generated, '\n', glen) != NULL);
    cJSON_AddNumberToObject(n, "n_remain", s->max_tokens - s->n_gen);
    cJSON_AddNumberToObject(n, "n_decoded", s->n_gen);
    /* speculative decoding: the request's drafted tokens checked, and those kept */
    cJSON_AddNumberToObject(n, "n_draft_total", s->n_drafted);
    cJSON_AddNumberToObject(n, "n_draft_accepted", s->n_accepted);
    cJSON_AddItemToArray(next, n);
    char *text = NULL;
    if (vkf_model_detokenize(c->m, s->prompt, s->n_prompt, VKF_DETOKENIZE_SPECIAL, &text) ==
        VKF_OK) {
        char *clean = vkf_frontend_utf8_dup(text, strlen(text));
        cJSON_AddStringToObject(o, "prompt", clean ? clean : "");
        free(clean);
        free(text);
    }
    cJSON_AddStringToObject(o, "generated", s->generated ? s->generated : "");
    return o;
}

static cJSON *slots_array(const srv_config *c, srv_engine *e) {
    int n = srv_engine_n_slots(e);
    srv_slot_info *s = srv_engine_slots(e);
    if (!s) return NULL;
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, slot_json(c, &s[i]));
    srv_slot_info_free(s, n);
    return a;
}

char *srv_slots_json(const srv_config *c, srv_engine *e) { return print_free(slots_array(c, e)); }

char *srv_health_json(const srv_config *c, srv_engine *e, int ready, int draining,
                      int include_slots, int *no_slot) {
    *no_slot = 0;
    if (!ready) return strdup("{\"status\":\"loading model\"}"); /* llama-server's body */
    srv_stats st;
    memset(&st, 0, sizeof st);
    st.n_slots = 1; /* embedding mode: requests one at a time, never refused for a slot */
    long done = 0, cancelled = 0;
    if (e) {
        srv_engine_stats(e, &st, 0);
        srv_engine_counts(e, &done, &cancelled);
    }
    *no_slot = st.busy == st.n_slots;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status",
                            draining   ? "shutting down"
                            : *no_slot ? "no slot available"
                                       : "ok");
    cJSON_AddNumberToObject(o, "slots_idle", st.n_slots - st.busy);
    cJSON_AddNumberToObject(o, "slots_processing", st.busy);
    cJSON_AddNumberToObject(o, "queued", st.queued);
    cJSON_AddNumberToObject(o, "requests_done", (double)done);
    cJSON_AddNumberToObject(o, "requests_cancelled", (double)cancelled);
    if (include_slots && e) {
        cJSON *a = slots_array(c, e);
        if (a) cJSON_AddItemToObject(o, "slots", a);
    }
    return print_free(o);
}
