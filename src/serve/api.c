/* OpenAI's request and response shapes (chat completions, completions, models) and llama.cpp's
 * /tokenize and /detokenize, over cJSON. Every field a request may carry is checked for its
 * type and range; a bad one is a 400 whose message names it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "serve/serve.h"
#include "serve/structured.h"

/* ------------------------------------------------------------------ request fields */

static int bad(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

/* a number for a message: whole numbers as integers ("100000000", never "1e+08") */
static const char *num_text(double v, char out[40]) {
    if (v == floor(v) && fabs(v) < 1e18)
        snprintf(out, 40, "%.0f", v);
    else
        snprintf(out, 40, "%g", v);
    return out;
}

/* absent or null: 0 (keep the default); a number in [lo, hi]: 1 with *out; else -1 */
static int get_num(const cJSON *o, const char *key, double lo, double hi, double *out, char *err,
                   size_t n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return bad(err, n, "%s: expected a number", key);
    if (v->valuedouble < lo || v->valuedouble > hi) {
        char a[40], b[40], c[40];
        return bad(err, n, "%s: %s is outside [%s, %s]", key, num_text(v->valuedouble, a),
                   num_text(lo, b), num_text(hi, c));
    }
    *out = v->valuedouble;
    return 1;
}

static int get_int(const cJSON *o, const char *key, double lo, double hi, int64_t *out, char *err,
                   size_t n) {
    double d = 0;
    int k = get_num(o, key, lo, hi, &d, err, n);
    if (k <= 0) return k;
    if (d != floor(d)) return bad(err, n, "%s: expected an integer, found %g", key, d);
    *out = (int64_t)d;
    return 1;
}

static int get_bool(const cJSON *o, const char *key, int *out, char *err, size_t n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return bad(err, n, "%s: expected true or false", key);
    *out = cJSON_IsTrue(v);
    return 1;
}

/* OpenAI content: a string, or an array of parts {"type": "text", "text": "..."} */
static char *content_text(const cJSON *c, int i, char *err, size_t n) {
    if (!c || cJSON_IsNull(c)) return strdup("");
    if (cJSON_IsString(c)) return strdup(c->valuestring);
    if (!cJSON_IsArray(c)) {
        bad(err, n, "messages[%d].content: expected a string or an array of text parts", i);
        return NULL;
    }
    size_t len = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, c) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsString(t)) {
            bad(err, n,
                "messages[%d].content: only parts {\"type\": \"text\", \"text\": ...} are "
                "supported",
                i);
            return NULL;
        }
        len += strlen(t->valuestring);
    }
    char *s = malloc(len + 1);
    if (!s) return NULL;
    s[0] = '\0';
    cJSON_ArrayForEach(p, c) strcat(s, cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring);
    return s;
}

/* OpenAI's roles (developer: the newer name of system; function: tool's predecessor) */
static int known_role(const char *r) {
    static const char *const roles[] = {"system",    "developer", "user",
                                        "assistant", "tool",      "function"};
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if (strcmp(r, roles[i]) == 0) return 1;
    return 0;
}

/* messages -> the prompt text through the model's chat template; tools (OpenAI tool schemas)
 * and chat_template_kwargs (llama-server's further template variables) go to the template */
static char *chat_prompt(const srv_config *c, const cJSON *msgs, const cJSON *tools,
                         const cJSON *kwargs, char *err, size_t n) {
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) {
        bad(err, n, "messages: expected a non-empty array of {\"role\", \"content\"}");
        return NULL;
    }
    cJSON *norm = cJSON_CreateArray();
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
            bad(err, n, "messages[%d]: expected an object with a string \"role\"", i);
            cJSON_Delete(norm);
            return NULL;
        }
        if (!known_role(role->valuestring)) {
            bad(err, n,
                "messages[%d].role: '%.100s' is not a role (expected system, developer, user, "
                "assistant, tool or function)",
                i, role->valuestring);
            cJSON_Delete(norm);
            return NULL;
        }
        char *text = content_text(cJSON_GetObjectItemCaseSensitive(m, "content"), i, err, n);
        if (!text) {
            cJSON_Delete(norm);
            return NULL;
        }
        cJSON *o = cJSON_Duplicate(m, 1);
        if (!srv_structured_keep_null(m)) /* a tool-call turn keeps content null */
            cJSON_ReplaceItemInObjectCaseSensitive(o, "content", cJSON_CreateString(text));
        if (!cJSON_GetObjectItemCaseSensitive(o, "content"))
            cJSON_AddStringToObject(o, "content", text);
        free(text);
        cJSON_AddItemToArray(norm, o);
        i++;
    }
    char *js = cJSON_PrintUnformatted(norm);
    cJSON_Delete(norm);
    if (tools && !cJSON_IsNull(tools) && !cJSON_IsArray(tools)) {
        free(js);
        bad(err, n, "tools: expected an array of tool schemas");
        return NULL;
    }
    if (kwargs && !cJSON_IsNull(kwargs) && !cJSON_IsObject(kwargs)) {
        free(js);
        bad(err, n, "chat_template_kwargs: expected an object");
        return NULL;
    }
    char *tj = cJSON_IsArray(tools) ? cJSON_PrintUnformatted(tools) : NULL;
    char *kj = cJSON_IsObject(kwargs) ? cJSON_PrintUnformatted(kwargs) : NULL;
    char *out = NULL;
    int used_default = 0;
    if (!js || vkf_chat_apply_ex(c->m, js, tj, kj, 1, &out, &used_default) != VKF_OK) {
        bad(err, n, "messages: the chat template failed: %s", vkf_last_error());
        out = NULL;
    }
    free(js);
    free(tj);
    free(kj);
    return out;
}

static int tokenize_text(const srv_config *c, const char *text, int add_special, int32_t **ids,
                         int32_t *n, char *err, size_t en) {
    int32_t cap = (int32_t)strlen(text) + 8, k = 0;
    int flags = add_special ? VKF_TOKENIZE_ADD_SPECIAL : 0;
    *ids = malloc((size_t)cap * sizeof **ids);
    if (!*ids) return bad(err, en, "out of host memory");
    vkf_status st = vkf_model_tokenize(c->m, text, flags, *ids, cap, &k);
    if (st == VKF_ERROR_INVALID_ARGUMENT && k > cap) { /* more tokens than bytes: retry */
        int32_t *g = realloc(*ids, (size_t)k * sizeof **ids);
        if (g) *ids = g, cap = k, st = vkf_model_tokenize(c->m, text, flags, *ids, cap, &k);
    }
    if (st != VKF_OK) {
        free(*ids);
        *ids = NULL;
        return bad(err, en, "the prompt cannot be tokenized: %s", vkf_last_error());
    }
    *n = k;
    return 0;
}

/* "prompt" as a list of prompts (OpenAI: one choice per prompt): strings, or lists of token
 * ids. *p becomes the one r->index names; r->n_choices gets how many there are (1 for a single
 * prompt, a one-string list, or one list of token ids). 0, or -1 with err set. */
static int pick_prompt(const cJSON **p, srv_req *r, char *err, size_t en) {
    r->n_choices = 1;
    if (!cJSON_IsArray(*p) || cJSON_GetArraySize(*p) == 0) return 0;
    const cJSON *first = cJSON_GetArrayItem(*p, 0);
    if (!cJSON_IsString(first) && !cJSON_IsArray(first)) return 0; /* token ids: one prompt */
    int n = cJSON_GetArraySize(*p), i = 0;
    if (n > SRV_MAX_PROMPTS)
        return bad(err, en, "prompt: %d prompts; at most %d in one request", n, SRV_MAX_PROMPTS);
    const cJSON *e;
    cJSON_ArrayForEach(e, *p) {
        if (!cJSON_IsString(e) && !cJSON_IsArray(e))
            return bad(err, en,
                       "prompt[%d]: expected a string or an array of token ids, like the other "
                       "prompts of the list",
                       i);
        i++;
    }
    if (r->index < 0 || r->index >= n)
        return bad(err, en, "prompt: no prompt %d in a list of %d", r->index, n);
    r->n_choices = n;
    *p = cJSON_GetArrayItem(*p, r->index);
    return 0;
}

int srv_api_parse(const srv_config *c, int chat, const char *body, size_t len, srv_req *r,
                  char *err, size_t en) {
    cJSON *j = cJSON_ParseWithLength(body, len);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return bad(err, en, "the request body is not a JSON object");
    }
    int rc = -1;
    char *text = NULL;
    vkf_model_desc d;
    vkf_model_describe(c->m, &d);
    r->chat = chat;
    /* the prompt */
    if (chat) {
        text = chat_prompt(c, cJSON_GetObjectItemCaseSensitive(j, "messages"),
                           cJSON_GetObjectItemCaseSensitive(j, "tools"),
                           cJSON_GetObjectItemCaseSensitive(j, "chat_template_kwargs"), err, en);
        if (!text) goto done;
        if (tokenize_text(c, text, 1, &r->prompt, &r->n_prompt, err, en)) goto done;
    } else {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "prompt");
        if (pick_prompt(&p, r, err, en)) goto done;
        if (cJSON_IsString(p)) {
            if (tokenize_text(c, p->valuestring, 1, &r->prompt, &r->n_prompt, err, en)) goto done;
        } else if (cJSON_IsArray(p) && cJSON_GetArraySize(p) > 0) { /* token ids */
            int n = cJSON_GetArraySize(p), i = 0;
            r->prompt = malloc((size_t)n * sizeof *r->prompt);
            if (!r->prompt) goto done;
            const cJSON *t;
            cJSON_ArrayForEach(t, p) {
                if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) ||
                    t->valuedouble < 0 || t->valuedouble >= d.n_vocab) {
                    if (r->n_choices > 1)
                        bad(err, en, "prompt[%d][%d]: expected a token id in [0, %d)", r->index, i,
                            d.n_vocab);
                    else
                        bad(err, en, "prompt[%d]: expected a token id in [0, %d)", i, d.n_vocab);
                    goto done;
                }
                r->prompt[i++] = (int32_t)t->valuedouble;
            }
            r->n_prompt = n;
        } else {
            bad(err, en,
                "prompt: expected a string, an array of token ids, or a list of them (one "
                "choice each)");
            goto done;
        }
    }
    if (r->n_prompt == 0 && d.bos_id >= 0) r->prompt[r->n_prompt++] = d.bos_id;
    if (r->n_prompt == 0) {
        bad(err, en, "prompt: empty (the model has no BOS token to start from)");
        goto done;
    }
    int32_t n_ctx = c->n_ctx;
    if (r->n_prompt >= n_ctx) {
        bad(err, en,
            "the prompt has %d tokens; a slot's context holds %d (leave room for one more)",
            r->n_prompt, n_ctx);
        goto done;
    }
    /* sampling */
    double v;
    int64_t iv;
    int k;
    r->sp.temp = 0.8f; /* llama-server's defaults */
    r->sp.top_k = 40;
    r->sp.top_p = 0.95f;
    r->sp.min_p = 0.05f;
    r->sp.seed = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)r;
    if ((k = get_num(j, "temperature", 0, 100, &v, err, en)) < 0) goto done;
    if (k) r->sp.temp = (float)v;
    if ((k = get_num(j, "top_p", 0, 1, &v, err, en)) < 0) goto done;
    if (k) r->sp.top_p = (float)v;
    if ((k = get_int(j, "top_k", 0, 1 << 30, &iv, err, en)) < 0) goto done;
    if (k) r->sp.top_k = (int32_t)iv;
    if ((k = get_num(j, "min_p", 0, 1, &v, err, en)) < 0) goto done;
    if (k) r->sp.min_p = (float)v;
    if ((k = get_num(j, "typical_p", 0, 1, &v, err, en)) < 0) goto done;
    if (k) r->sp.typical_p = (float)v;
    if ((k = get_num(j, "presence_penalty", -2, 2, &v, err, en)) < 0) goto done;
    if (k) r->sp.presence_penalty = (float)v;
    if ((k = get_num(j, "frequency_penalty", -2, 2, &v, err, en)) < 0) goto done;
    if (k) r->sp.frequency_penalty = (float)v;
    if ((k = get_num(j, "repeat_penalty", 0, 100, &v, err, en)) < 0) goto done;
    if (k) r->sp.repeat_penalty = (float)v;
    if ((k = get_int(j, "repeat_last_n", -1, 1 << 30, &iv, err, en)) < 0) goto done;
    if (k) r->sp.penalty_last_n = (int32_t)iv;
    if ((k = get_int(j, "seed", -9007199254740991.0, 9007199254740991.0, &iv, err, en)) < 0)
        goto done;
    if (k) r->sp.seed = (uint64_t)iv;
    /* length */
    int32_t room = n_ctx - r->n_prompt;
    r->max_tokens = c->max_tokens < room ? c->max_tokens : room;
    const char *mt_key = cJSON_GetObjectItemCaseSensitive(j, "max_completion_tokens")
                             ? "max_completion_tokens"
                         : cJSON_GetObjectItemCaseSensitive(j, "max_tokens") ? "max_tokens"
                                                                             : "n_predict";
    /* -1: llama-server's n_predict -1, no limit but the server's (-n) and the context */
    if ((k = get_int(j, mt_key, -1, c->max_tokens, &iv, err, en)) < 0) goto done;
    if (k && iv == 0) {
        bad(err, en, "%s: 0 is outside [1, %d] (or -1: the server's limit)", mt_key,
            (int)c->max_tokens);
        goto done;
    }
    if (k && iv > 0) r->max_tokens = iv < room ? (int32_t)iv : room;
    if ((k = get_int(j, "n", 1, 1, &iv, err, en)) < 0) {
        bad(err, en, "n: only n = 1 is supported");
        goto done;
    }
    if (get_bool(j, "stream", &r->stream, err, en) < 0) goto done;
    r->cache_prompt = 1; /* llama-server's field and default */
    if (get_bool(j, "cache_prompt", &r->cache_prompt, err, en) < 0) goto done;
    if (srv_lora_parse(c, j, r, err, en) < 0) goto done; /* serve/lora.c */
    /* stop strings */
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(j, "stop");
    if (cJSON_IsString(stop)) {
        r->stops[r->n_stops++] = strdup(stop->valuestring);
    } else if (cJSON_IsArray(stop)) {
        const cJSON *s;
        cJSON_ArrayForEach(s, stop) {
            if (!cJSON_IsString(s)) {
                bad(err, en, "stop: expected a string or an array of strings");
                goto done;
            }
            if (r->n_stops == SRV_MAX_STOPS - 1) {
                bad(err, en, "stop: at most %d strings", SRV_MAX_STOPS - 1);
                goto done;
            }
            r->stops[r->n_stops++] = strdup(s->valuestring);
        }
    } else if (stop && !cJSON_IsNull(stop)) {
        bad(err, en, "stop: expected a string or an array of strings");
        goto done;
    }
    if (chat && c->default_template) r->stops[r->n_stops++] = strdup("<|im_end|>");
    /* response_format, grammar, json_schema, tools (structured.c) */
    if (srv_structured_parse(c, j, chat, r, err, en)) goto done;
    for (int i = 0; i < r->n_stops; i++)
        if (!r->stops[i]) goto done;
    /* logprobs: chat takes logprobs (bool) + top_logprobs; completions logprobs (int) */
    if (chat) {
        if (get_bool(j, "logprobs", &r->logprobs, err, en) < 0) goto done;
        if ((k = get_int(j, "top_logprobs", 0, SRV_MAX_TOP_LOGPROBS, &iv, err, en)) < 0) goto done;
        if (k) r->top_logprobs = (int)iv;
    } else {
        if ((k = get_int(j, "logprobs", 0, 5, &iv, err, en)) < 0) goto done;
        if (k) r->logprobs = 1, r->top_logprobs = (int)iv;
    }
    rc = 0;
done:
    free(text);
    cJSON_Delete(j);
    return rc;
}

/* ------------------------------------------------------------------ responses */

static const char *finish_name(srv_finish f) { return f == SRV_FINISH_LENGTH ? "length" : "stop"; }

static cJSON *usage(const srv_req *r) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", r->n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", r->n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", r->n_prompt + r->n_gen);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details"); /* OpenAI's field */
    if (d) cJSON_AddNumberToObject(d, "cached_tokens", r->n_cached);
    return u;
}

/* llama-server's "timings" of a finished request: the prompt past its cached prefix and the
 * tokens generated, with its formulas (a count or time of 0 gives null, as its JSON writer
 * prints the infinity or NaN) */
cJSON *srv_api_timings(const srv_req *r) {
    cJSON *t = cJSON_CreateObject();
    double pn = r->n_prompt - r->n_cached, gn = r->n_gen;
    cJSON_AddNumberToObject(t, "prompt_n", pn);
    cJSON_AddNumberToObject(t, "prompt_ms", r->prompt_ms);
    cJSON_AddNumberToObject(t, "prompt_per_token_ms", r->prompt_ms / pn);
    cJSON_AddNumberToObject(t, "prompt_per_second", 1e3 / r->prompt_ms * pn);
    cJSON_AddNumberToObject(t, "predicted_n", gn);
    cJSON_AddNumberToObject(t, "predicted_ms", r->predicted_ms);
    cJSON_AddNumberToObject(t, "predicted_per_token_ms", r->predicted_ms / gn);
    cJSON_AddNumberToObject(t, "predicted_per_second", 1e3 / r->predicted_ms * gn);
    if (r->n_drafted > 0) { /* speculative decoding: llama-server's keys, as it adds them */
        cJSON_AddNumberToObject(t, "draft_n", r->n_drafted);
        cJSON_AddNumberToObject(t, "draft_n_accepted", r->n_accepted);
    }
    return t;
}

static char *token_text(const srv_config *c, int32_t id) {
    char *p = NULL;
    if (vkf_model_detokenize(c->m, &id, 1, VKF_DETOKENIZE_SPECIAL, &p) != VKF_OK) return strdup("");
    char *clean = vkf_frontend_utf8_dup(p, strlen(p));
    free(p);
    return clean;
}

static cJSON *bytes_of(const char *s) {
    cJSON *a = cJSON_CreateArray();
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(*p));
    return a;
}

/* chat: {"content": [{token, logprob, bytes, top_logprobs: [...]}]} over events [i0, i1) */
static cJSON *chat_logprobs(const srv_config *c, const srv_req *r, int i0, int i1) {
    cJSON *lp = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(lp, "content");
    for (int i = i0; i < i1; i++) {
        const srv_event *e = &r->ev[i];
        if (!e->piece) continue;
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "token", e->piece);
        cJSON_AddNumberToObject(t, "logprob", e->logprob);
        cJSON_AddItemToObject(t, "bytes", bytes_of(e->piece));
        cJSON *top = cJSON_AddArrayToObject(t, "top_logprobs");
        for (int k = 0; k < e->n_top; k++) {
            char *s = token_text(c, e->top_id[k]);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "token", s ? s : "");
            cJSON_AddNumberToObject(o, "logprob", e->top_lp[k]);
            cJSON_AddItemToObject(o, "bytes", bytes_of(s ? s : ""));
            cJSON_AddItemToArray(top, o);
            free(s);
        }
        cJSON_AddItemToArray(content, t);
    }
    return lp;
}

/* completions: {tokens, token_logprobs, top_logprobs: [{text: lp}], text_offset} */
static cJSON *completion_logprobs(const srv_config *c, const srv_req *r, int i0, int i1,
                                  size_t offset0) {
    cJSON *lp = cJSON_CreateObject();
    cJSON *toks = cJSON_AddArrayToObject(lp, "tokens"),
          *tlp = cJSON_AddArrayToObject(lp, "token_logprobs");
    cJSON *top = cJSON_AddArrayToObject(lp, "top_logprobs"),
          *off = cJSON_AddArrayToObject(lp, "text_offset");
    size_t o = offset0;
    for (int i = i0; i < i1; i++) {
        const srv_event *e = &r->ev[i];
        if (!e->piece) continue;
        cJSON_AddItemToArray(toks, cJSON_CreateString(e->piece));
        cJSON_AddItemToArray(tlp, cJSON_CreateNumber(e->logprob));
        cJSON *t = cJSON_CreateObject();
        for (int k = 0; k < e->n_top; k++) {
            char *s = token_text(c, e->top_id[k]);
            if (!cJSON_GetObjectItemCaseSensitive(t, s ? s : ""))
                cJSON_AddNumberToObject(t, s ? s : "", e->top_lp[k]);
            free(s);
        }
        cJSON_AddItemToArray(top, t);
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)o));
        o += e->len;
    }
    return lp;
}

static cJSON *head(const srv_config *c, const srv_req *r, const char *object) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", c->model_name);
    cJSON_AddStringToObject(o, "system_fingerprint", "vkformer");
    return o;
}

static char *print_free(cJSON *o) {
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

char *srv_api_response(const srv_config *c, const srv_req *r) {
    if (r->native) return srv_native_response(c, r);
    if (r->infill) return srv_infill_response(c, r);
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
    cJSON *o = head(c, r, r->chat ? "chat.completion" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices"), *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", r->index);
    const char *fin = finish_name(r->finish);
    if (r->chat && r->st && r->st->tools) { /* tool calls parsed (structured.c) */
        fin = srv_structured_message(c, r, ch, text, fin);
    } else if (r->chat) {
        cJSON *msg = cJSON_AddObjectToObject(ch, "message");
        cJSON_AddStringToObject(msg, "role", "assistant");
        cJSON_AddStringToObject(msg, "content", text);
    } else {
        cJSON_AddStringToObject(ch, "text", text);
    }
    if (!r->logprobs)
        cJSON_AddNullToObject(ch, "logprobs");
    else
        cJSON_AddItemToObject(ch, "logprobs",
                              r->chat ? chat_logprobs(c, r, 0, r->n_ev)
                                      : completion_logprobs(c, r, 0, r->n_ev, 0));
    cJSON_AddStringToObject(ch, "finish_reason", fin);
    cJSON_AddItemToArray(choices, ch);
    cJSON_AddItemToObject(o, "usage", usage(r));
    cJSON_AddItemToObject(o, "timings", srv_api_timings(r));
    free(text);
    return print_free(o);
}

char *srv_api_chunk(const srv_config *c, const srv_req *r, int i, int first) {
    if (r->native) return srv_native_chunk(c, r, i);
    if (r->infill) return srv_infill_chunk(c, r, i);
    if (r->chat && r->st && r->st->tools) /* tool-call deltas (structured.c) */
        return srv_structured_chunk(c, (srv_req *)r, i, finish_name(r->finish));
    cJSON *o = head(c, r, r->chat ? "chat.completion.chunk" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices"), *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", r->index);
    if (r->chat) {
        cJSON *delta = cJSON_AddObjectToObject(ch, "delta");
        if (first) cJSON_AddStringToObject(delta, "role", "assistant");
        if (i >= 0) {
            char *t = malloc(r->ev[i].len + 1);
            if (t) {
                memcpy(t, r->ev[i].text ? r->ev[i].text : "", r->ev[i].len);
                t[r->ev[i].len] = '\0';
                cJSON_AddStringToObject(delta, "content", t);
                free(t);
            }
        }
    } else {
        char *t = malloc(i >= 0 ? r->ev[i].len + 1 : 1);
        if (t) {
            size_t n = i >= 0 ? r->ev[i].len : 0;
            if (n) memcpy(t, r->ev[i].text, n);
            t[n] = '\0';
            cJSON_AddStringToObject(ch, "text", t);
            free(t);
        }
    }
    if (i >= 0 && r->logprobs)
        cJSON_AddItemToObject(ch, "logprobs",
                              r->chat ? chat_logprobs(c, r, i, i + 1)
                                      : completion_logprobs(c, r, i, i + 1, 0));
    else
        cJSON_AddNullToObject(ch, "logprobs");
    if (i < 0)
        cJSON_AddStringToObject(ch, "finish_reason", finish_name(r->finish));
    else
        cJSON_AddNullToObject(ch, "finish_reason");
    cJSON_AddItemToArray(choices, ch);
    if (i < 0 && r->n_choices <= 1) cJSON_AddItemToObject(o, "usage", usage(r));
    if (i < 0) cJSON_AddItemToObject(o, "timings", srv_api_timings(r)); /* the last chunk's */
    char *js = print_free(o);
    if (!js) return NULL;
    size_t n = strlen(js);
    char *ev = malloc(n + 9);
    if (ev) snprintf(ev, n + 9, "data: %s\n\n", js);
    free(js);
    return ev;
}

/* the usage of several choices, summed */
static cJSON *usage_sum(srv_req *const *rs, int n) {
    srv_req sum;
    memset(&sum, 0, sizeof sum);
    for (int i = 0; i < n; i++) {
        sum.n_prompt += rs[i]->n_prompt;
        sum.n_gen += rs[i]->n_gen;
        sum.n_cached += rs[i]->n_cached;
    }
    return usage(&sum);
}

char *srv_api_response_multi(const srv_config *c, srv_req *const *rs, int n) {
    char *js = srv_api_response(c, rs[0]);
    cJSON *o = js ? cJSON_Parse(js) : NULL;
    free(js);
    cJSON *choices = cJSON_GetObjectItemCaseSensitive(o, "choices");
    for (int i = 1; o && i < n; i++) { /* each choice as the one-prompt response has it */
        char *ji = srv_api_response(c, rs[i]);
        cJSON *oi = ji ? cJSON_Parse(ji) : NULL;
        free(ji);
        cJSON *ci = cJSON_DetachItemFromArray(cJSON_GetObjectItemCaseSensitive(oi, "choices"), 0);
        if (ci) cJSON_AddItemToArray(choices, ci);
        cJSON_Delete(oi);
    }
    if (o) cJSON_ReplaceItemInObjectCaseSensitive(o, "usage", usage_sum(rs, n));
    /* the prompts ran side by side in their slots: one choice's times are not the request's */
    if (o && n > 1) cJSON_DeleteItemFromObjectCaseSensitive(o, "timings");
    return o ? print_free(o) : NULL;
}

char *srv_api_usage_chunk(const srv_config *c, srv_req *const *rs, int n) {
    cJSON *o = head(c, rs[0], rs[0]->chat ? "chat.completion.chunk" : "text_completion");
    cJSON_AddArrayToObject(o, "choices");
    cJSON_AddItemToObject(o, "usage", usage_sum(rs, n));
    char *js = print_free(o);
    if (!js) return NULL;
    size_t len = strlen(js);
    char *ev = malloc(len + 9);
    if (ev) snprintf(ev, len + 9, "data: %s\n\n", js);
    free(js);
    return ev;
}

char *srv_api_error(int status, const char *message) {
    const char *type = status == 401   ? "authentication_error"
                       : status == 404 ? "not_found_error"
                       : status == 503 ? "unavailable_error"
                       : status == 501 ? "not_supported_error"
                       : status >= 500 ? "server_error"
                                       : "invalid_request_error";
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(e, "message", message);
    cJSON_AddStringToObject(e, "type", type);
    cJSON_AddNullToObject(e, "param");
    cJSON_AddNumberToObject(e, "code", status);
    return print_free(o);
}

/* The model object of /v1/models and /v1/models/{id} */
static cJSON *model_object(const srv_config *c) {
    vkf_model_desc d;
    vkf_model_describe(c->m, &d);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", c->model_name);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", 0);
    cJSON_AddStringToObject(m, "owned_by", "vkformer");
    cJSON *meta = cJSON_AddObjectToObject(m, "meta");
    cJSON_AddStringToObject(meta, "architecture", d.architecture);
    cJSON_AddNumberToObject(meta, "n_vocab", d.n_vocab);
    cJSON_AddNumberToObject(meta, "n_ctx_train", d.n_ctx_train);
    cJSON_AddNumberToObject(meta, "n_ctx_slot", c->n_ctx);
    if (c->kv_bytes_slot) { /* the KV cache as allocated, in its types (-ctk / -ctv) */
        cJSON_AddStringToObject(meta, "cache_type_k", vkf_dtype_name((vkf_dtype)c->kv_type_k));
        cJSON_AddStringToObject(meta, "cache_type_v", vkf_dtype_name((vkf_dtype)c->kv_type_v));
        cJSON_AddNumberToObject(meta, "kv_bytes_per_slot", (double)c->kv_bytes_slot);
    }
    cJSON_AddNumberToObject(meta, "n_params", (double)d.n_params);
    return m;
}

char *srv_api_models(const srv_config *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    cJSON_AddItemToArray(data, model_object(c));
    return print_free(o);
}

char *srv_api_model(const srv_config *c, const char *id, int *status) {
    if (strcmp(id, c->model_name) != 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "The model '%.300s' does not exist (this server has '%.150s')",
                 id, c->model_name);
        *status = 404;
        return srv_api_error(404, msg);
    }
    *status = 200;
    return print_free(model_object(c));
}

static char *err400(int *status, const char *msg) {
    *status = 400;
    return srv_api_error(400, msg);
}

char *srv_api_tokenize(const srv_config *c, const char *body, size_t len, int *status) {
    cJSON *j = cJSON_ParseWithLength(body, len);
    char err[512];
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(j, "content");
    if (!cJSON_IsObject(j) || !cJSON_IsString(content)) {
        cJSON_Delete(j);
        return err400(status, "content: expected a JSON object with a string \"content\"");
    }
    int add_special = 0, pieces = 0;
    if (get_bool(j, "add_special", &add_special, err, sizeof err) < 0 ||
        get_bool(j, "with_pieces", &pieces, err, sizeof err) < 0) {
        cJSON_Delete(j);
        return err400(status, err);
    }
    int32_t *ids = NULL, n = 0;
    if (tokenize_text(c, content->valuestring, add_special, &ids, &n, err, sizeof err)) {
        cJSON_Delete(j);
        return err400(status, err);
    }
    cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "tokens");
    for (int32_t i = 0; i < n; i++) {
        if (!pieces) {
            cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
            continue;
        }
        cJSON *t = cJSON_CreateObject();
        char *p = token_text(c, ids[i]);
        cJSON_AddNumberToObject(t, "id", ids[i]);
        cJSON_AddStringToObject(t, "piece", p ? p : "");
        free(p);
        cJSON_AddItemToArray(a, t);
    }
    free(ids);
    cJSON_Delete(j);
    *status = 200;
    return print_free(o);
}

char *srv_api_detokenize(const srv_config *c, const char *body, size_t len, int *status) {
    cJSON *j = cJSON_ParseWithLength(body, len);
    const cJSON *toks = cJSON_GetObjectItemCaseSensitive(j, "tokens");
    if (!cJSON_IsObject(j) || !cJSON_IsArray(toks)) {
        cJSON_Delete(j);
        return err400(status, "tokens: expected a JSON object with an array \"tokens\"");
    }
    vkf_model_desc d;
    vkf_model_describe(c->m, &d);
    int n = cJSON_GetArraySize(toks), i = 0;
    int32_t *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    const cJSON *t;
    cJSON_ArrayForEach(t, toks) {
        if (!ids || !cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) ||
            t->valuedouble < 0 || t->valuedouble >= d.n_vocab) {
            char err[128];
            snprintf(err, sizeof err, "tokens[%d]: expected a token id in [0, %d)", i, d.n_vocab);
            free(ids);
            cJSON_Delete(j);
            return err400(status, err);
        }
        ids[i++] = (int32_t)t->valuedouble;
    }
    char *text = NULL;
    if (vkf_model_detokenize(c->m, ids, n, 0, &text) != VKF_OK) {
        free(ids);
        cJSON_Delete(j);
        return err400(status, vkf_last_error());
    }
    cJSON *o = cJSON_CreateObject();
    char *clean = vkf_frontend_utf8_dup(text, strlen(text));
    cJSON_AddStringToObject(o, "content", clean ? clean : "");
    free(clean);
    free(text);
    free(ids);
    cJSON_Delete(j);
    *status = 200;
    return print_free(o);
}

/* for structured.c's chunks */
cJSON *srv_api_head(const srv_config *c, const srv_req *r, const char *object) {
    return head(c, r, object);
}
cJSON *srv_api_usage(const srv_req *r) { return usage(r); }

/* POST /apply-template (llama-server's): the chat request's messages through the model's
 * template, as /v1/chat/completions would prompt the model, without generating: {"prompt"} */
char *srv_api_apply_template(const srv_config *c, const char *body, size_t len, int *status) {
    cJSON *j = cJSON_ParseWithLength(body, len);
    char err[512];
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return err400(status, "the request body is not a JSON object");
    }
    char *text =
        chat_prompt(c, cJSON_GetObjectItemCaseSensitive(j, "messages"),
                    cJSON_GetObjectItemCaseSensitive(j, "tools"),
                    cJSON_GetObjectItemCaseSensitive(j, "chat_template_kwargs"), err, sizeof err);
    cJSON_Delete(j);
    if (!text) return err400(status, err);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "prompt", text);
    free(text);
    *status = 200;
    return print_free(o);
}
