/* POST /v1/embeddings (OpenAI's request and response) on an encoder-only model, through
 * vkf_embed / vkf_embed_tokens.
 *
 * Request: "input" a string, a list of strings, a list of token ids (one input) or a list of
 * lists of token ids; "encoding_format" "float" (default) or "base64" (the little-endian
 * float32 bytes, as OpenAI sends them); "dimensions" only when it is the model's own width
 * (the models served here do not shorten their vectors: anything else is a clear 400);
 * "model" and "user" are accepted and ignored. Response: {"object": "list", "data": [{"object":
 * "embedding", "index": i, "embedding": [...] or "base64..."}], "model", "usage":
 * {"prompt_tokens", "total_tokens"}}. The requests of all connections share one session under
 * a mutex; each request's inputs run as batched graphs. An input longer than the model takes is
 * truncated (sentence-transformers' rule) with a notice on stderr. */
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

/* OpenAI's limit on inputs per request */
#define EMB_MAX_INPUTS 2048

struct srv_embedder {
    vkf_model *m;
    vkf_session *s;
    pthread_mutex_t lock;
    vkf_model_desc d;
};

vkf_status srv_embedder_create(vkf_model *m, srv_embedder **out) {
    srv_embedder *e = calloc(1, sizeof *e);
    if (!e) return VKF_ERROR_OUT_OF_MEMORY;
    e->m = m;
    vkf_model_describe(m, &e->d);
    vkf_status st = vkf_session_create(m, NULL, &e->s);
    if (st != VKF_OK) {
        free(e);
        return st;
    }
    pthread_mutex_init(&e->lock, NULL);
    *out = e;
    return VKF_OK;
}

vkf_session *srv_embedder_lock(srv_embedder *e) {
    pthread_mutex_lock(&e->lock);
    return e->s;
}

void srv_embedder_unlock(srv_embedder *e) { pthread_mutex_unlock(&e->lock); }

void srv_embedder_free(srv_embedder *e) {
    if (!e) return;
    vkf_session_free(e->s);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

static char *emb_error(int *status, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static char *emb_error(int *status, int code, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    *status = code;
    return srv_api_error(code, msg);
}

static char *base64(const unsigned char *p, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc((n + 2) / 3 * 4 + 1), *q = o;
    if (!o) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        *q++ = tab[v >> 18 & 63];
        *q++ = tab[v >> 12 & 63];
        *q++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *q++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *q = 0;
    return o;
}

/* 1 when a is a list of token ids (numbers); ids checked against the vocabulary */
static int id_list(const cJSON *a) {
    return cJSON_IsArray(a) && cJSON_GetArraySize(a) > 0 && cJSON_IsNumber(a->child);
}

static int parse_ids(const cJSON *a, int idx, int32_t n_vocab, int32_t **out, int32_t *n, char *err,
                     size_t errn) {
    int k = cJSON_GetArraySize(a), i = 0;
    int32_t *ids = malloc((size_t)(k ? k : 1) * sizeof *ids);
    const cJSON *t;
    cJSON_ArrayForEach(t, a) {
        if (!ids || !cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) ||
            t->valuedouble < 0 || t->valuedouble >= n_vocab) {
            snprintf(err, errn, "input[%d][%d]: expected a token id in [0, %d)", idx, i, n_vocab);
            free(ids);
            return -1;
        }
        ids[i++] = (int32_t)t->valuedouble;
    }
    *out = ids;
    *n = k;
    return 0;
}

char *srv_embeddings(srv_embedder *e, const char *model_name, const char *body, size_t len,
                     int *status) {
    cJSON *j = cJSON_ParseWithLength(body ? body : "", len);
    char err[512] = "";
    char *resp = NULL;
    const char **texts = NULL;
    int32_t **ids = NULL, *lens = NULL;
    int n = 0, tokens = 0, b64 = 0;
    vkf_embeddings *res = NULL;
    if (!cJSON_IsObject(j)) {
        resp = emb_error(status, 400, "expected a JSON object with \"input\"");
        goto done;
    }
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "input");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "encoding_format");
    const cJSON *dim = cJSON_GetObjectItemCaseSensitive(j, "dimensions");
    const cJSON *mod = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (mod && !cJSON_IsString(mod)) {
        resp = emb_error(status, 400, "model: expected a string");
        goto done;
    }
    if (fmt && !cJSON_IsNull(fmt)) {
        if (!cJSON_IsString(fmt) ||
            (strcmp(fmt->valuestring, "float") && strcmp(fmt->valuestring, "base64"))) {
            resp = emb_error(status, 400, "encoding_format: expected \"float\" or \"base64\"");
            goto done;
        }
        b64 = !strcmp(fmt->valuestring, "base64");
    }
    if (dim && !cJSON_IsNull(dim)) {
        if (!cJSON_IsNumber(dim) || dim->valuedouble != floor(dim->valuedouble) ||
            dim->valuedouble < 1) {
            resp = emb_error(status, 400, "dimensions: expected a positive integer");
            goto done;
        }
        if ((int)dim->valuedouble != e->d.d_model) {
            resp = emb_error(status, 400,
                             "dimensions: %s gives %d-dimensional vectors and cannot shorten "
                             "them (%d asked); omit dimensions or ask for %d",
                             model_name, e->d.d_model, (int)dim->valuedouble, e->d.d_model);
            goto done;
        }
    }
    /* input: "text" | ["text", ...] | [id, ...] | [[id, ...], ...] */
    if (cJSON_IsString(in)) {
        n = 1;
    } else if (id_list(in)) {
        n = 1, tokens = 1;
    } else if (cJSON_IsArray(in) && cJSON_GetArraySize(in) > 0) {
        n = cJSON_GetArraySize(in);
        tokens = cJSON_IsArray(in->child);
    } else {
        resp = emb_error(status, 400,
                         "input: expected a string, a list of strings, a list of token ids or a "
                         "list of lists of token ids (not empty)");
        goto done;
    }
    if (n > EMB_MAX_INPUTS) {
        resp =
            emb_error(status, 400, "input: %d inputs, at most %d per request", n, EMB_MAX_INPUTS);
        goto done;
    }
    texts = calloc((size_t)n, sizeof *texts);
    ids = calloc((size_t)n, sizeof *ids);
    lens = calloc((size_t)n, sizeof *lens);
    if (!texts || !ids || !lens) {
        resp = emb_error(status, 500, "out of memory");
        goto done;
    }
    if (cJSON_IsString(in)) {
        texts[0] = in->valuestring;
    } else if (id_list(in)) {
        if (parse_ids(in, 0, e->d.n_vocab, &ids[0], &lens[0], err, sizeof err)) {
            resp = emb_error(status, 400, "%s", err);
            goto done;
        }
    } else {
        int i = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, in) {
            if (tokens ? !id_list(x) : !cJSON_IsString(x)) {
                resp = emb_error(status, 400, "input[%d]: expected %s, like input[0]", i,
                                 tokens ? "a non-empty list of token ids" : "a string");
                goto done;
            }
            if (tokens ? parse_ids(x, i, e->d.n_vocab, &ids[i], &lens[i], err, sizeof err) : 0) {
                resp = emb_error(status, 400, "%s", err);
                goto done;
            }
            if (!tokens) texts[i] = x->valuestring;
            i++;
        }
    }
    pthread_mutex_lock(&e->lock);
    vkf_status st = tokens
                        ? vkf_embed_tokens(e->s, (const int32_t *const *)ids, lens, n, NULL, &res)
                        : vkf_embed(e->s, texts, n, NULL, &res);
    if (st != VKF_OK) snprintf(err, sizeof err, "%s", vkf_last_error());
    pthread_mutex_unlock(&e->lock);
    if (st != VKF_OK) {
        int code = st == VKF_ERROR_TOKEN || st == VKF_ERROR_INVALID_ARGUMENT ? 400 : 500;
        resp = emb_error(status, code, "%s", err);
        goto done;
    }
    for (int i = 0; i < res->n_inputs; i++)
        if (res->truncated[i])
            fprintf(stderr,
                    "vkformer: serve: /v1/embeddings: input %d: %d tokens, truncated to the "
                    "model's %d\n",
                    i, res->n_tokens[i] + res->truncated[i], res->n_tokens[i]);
    /* the response, printed directly: cJSON's number formatting is not round-trip exact */
    size_t cap = 256 + (size_t)res->n_vectors * (size_t)res->dim * 16 + (size_t)n * 64, k = 0;
    resp = malloc(cap);
    if (!resp) {
        resp = emb_error(status, 500, "out of memory");
        goto done;
    }
    k += (size_t)snprintf(resp + k, cap - k, "{\"object\":\"list\",\"data\":[");
    for (int i = 0; i < res->n_inputs; i++) {
        const float *v = res->data + (size_t)res->first[i] * res->dim;
        k += (size_t)snprintf(
            resp + k, cap - k,
            "%s{\"object\":\"embedding\",\"index\":%d,\"embedding\":", i ? "," : "", i);
        if (b64) {
            char *s = base64((const unsigned char *)v, (size_t)res->dim * sizeof *v);
            if (!s) break;
            k += (size_t)snprintf(resp + k, cap - k, "\"%s\"}", s);
            free(s);
            continue;
        }
        resp[k++] = '[';
        for (int c = 0; c < res->dim; c++)
            k += (size_t)snprintf(resp + k, cap - k, "%s%.9g", c ? "," : "", (double)v[c]);
        k += (size_t)snprintf(resp + k, cap - k, "]}");
    }
    cJSON *tail = cJSON_CreateObject(), *usage = cJSON_AddObjectToObject(tail, "usage");
    cJSON_AddStringToObject(tail, "model", model_name);
    cJSON_AddNumberToObject(usage, "prompt_tokens", (double)res->total_tokens);
    cJSON_AddNumberToObject(usage, "total_tokens", (double)res->total_tokens);
    char *t = cJSON_PrintUnformatted(tail); /* {"usage":{...},"model":"..."} */
    cJSON_Delete(tail);
    if (t && k + strlen(t) + 8 < cap) k += (size_t)snprintf(resp + k, cap - k, "],%s", t + 1);
    free(t);
    *status = 200;
done:
    if (ids)
        for (int i = 0; i < n; i++)
            free(ids[i]);
    free(ids);
    free(lens);
    free(texts);
    vkf_embeddings_free(res);
    cJSON_Delete(j);
    return resp;
}
