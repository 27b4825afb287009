/* vkformer serve: an OpenAI-compatible HTTP server (libmicrohttpd) over one model.
 *
 *   http.c    connections, routing, API keys, size limits, errors, server-sent events
 *   api.c     OpenAI request parsing and response JSON (chat, completions, logprobs, usage)
 *   engine.c  the slots: a queue, one thread that prefills new requests and decodes every busy
 *             slot together in one batched graph per step (continuous batching)
 * and the `vkformer serve` command (options, start, SIGINT/SIGTERM drain) is
 * src/cli/cmd_serve.c, with the other commands.
 *
 * Threads: libmicrohttpd runs one thread per connection; each submits a request to the engine
 * and waits on the request's condition variable (the engine's mutex guards every request
 * field marked "engine"). The engine thread alone touches the session. */
#ifndef VKF_SERVE_H
#define VKF_SERVE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/utf8.h" /* vkf_cli_utf8_dup */
#include "vkformer.h"

#define SRV_MAX_STOPS 16
#define SRV_MAX_TOP_LOGPROBS 20
#define SRV_MAX_PROMPTS 64 /* completions: prompts in one request ("prompt": [...]) */

/* One generated token, as the client sees it. */
typedef struct srv_event {
    char *text; /* text released by this token (stop strings held back), malloc'ed */
    size_t len;
    int32_t id;  /* the token */
    char *piece; /* its own text (logprobs), malloc'ed, or NULL */
    float logprob;
    int n_top;
    int32_t top_id[SRV_MAX_TOP_LOGPROBS];
    float top_lp[SRV_MAX_TOP_LOGPROBS];
} srv_event;

typedef enum srv_finish {
    SRV_FINISH_NONE = 0,
    SRV_FINISH_STOP,      /* an end-of-generation token or a stop string */
    SRV_FINISH_LENGTH,    /* max_tokens, or the slot's context is full */
    SRV_FINISH_CANCELLED, /* the client went away */
    SRV_FINISH_ERROR,
} srv_finish;

typedef struct srv_req {
    /* input, set before submit */
    int chat; /* 1: /v1/chat/completions */
    int stream;
    int32_t *prompt; /* tokens, malloc'ed */
    int32_t n_prompt;
    vkf_sampler_params sp;
    int32_t max_tokens;
    char *stops[SRV_MAX_STOPS];
    int n_stops;
    int logprobs, top_logprobs;
    int cache_prompt; /* 1 (default): reuse the longest prefix of the prompt some free slot's
                         cache still holds (prompt cache) */
    char id[48];      /* "chatcmpl-..." / "cmpl-..." */
    long created;
    int index;     /* completions with a list of prompts: which one this is (its choice's index);
                      set before srv_api_parse */
    int n_choices; /* set by srv_api_parse: prompts in the request (one choice each; the usage
                      then goes in srv_api_usage_chunk, not in each final chunk) */
    /* engine (guarded by the engine mutex) */
    pthread_cond_t cv;
    srv_event *ev;
    int n_ev, cap_ev;
    int32_t n_gen;
    srv_finish finish;
    int done;
    int cancel; /* set by the connection: the client went away */
    char err[512];
    int refs;             /* the connection and the engine; freed at 0 */
    struct srv_req *next; /* queue link */
    /* engine thread only */
    int slot;
    int32_t pos;      /* tokens in the slot's cache: where last goes */
    int32_t last;     /* token to feed at pos */
    int32_t n_cached; /* prompt tokens taken from the slot's cache (usage.prompt_tokens_details) */
    int32_t *gen;     /* generated tokens, for incremental detokenization */
    int32_t cap_gen;
    size_t text_done; /* bytes of the detokenized generation already pushed to the stopper */
    vkf_sampler *smp;
    vkf_stopper *stopper;
    struct srv_structured *st; /* grammar, tool calls (structured.c), or NULL */
} srv_req;

typedef struct srv_engine srv_engine;

typedef struct srv_engine_params {
    int n_slots;   /* parallel sequences (-np) */
    int32_t n_ctx; /* tokens per slot */
    int queue_max; /* requests waiting for a slot beyond the busy ones */
} srv_engine_params;

vkf_status srv_engine_start(vkf_model *m, const srv_engine_params *p, srv_engine **out);
/* Stops taking requests, finishes those in flight and queued, joins the thread, frees. */
void srv_engine_stop(srv_engine *e);
/* 0: queued; -1: every slot and the queue are full (503); -2: shutting down (503). */
int srv_engine_submit(srv_engine *e, srv_req *r);
/* Waits (at most timeout_ms) for news on r; returns with the engine mutex held: call
 * srv_engine_unlock after reading r's fields. */
void srv_engine_wait(srv_engine *e, srv_req *r, int timeout_ms);
void srv_engine_lock(srv_engine *e);
void srv_engine_unlock(srv_engine *e);
/* The connection is done with r (after a cancel, the engine frees it when the slot stops). */
void srv_req_release(srv_engine *e, srv_req *r);
srv_req *srv_req_new(void);
int32_t srv_engine_n_ctx(const srv_engine *e);
int srv_engine_n_slots(const srv_engine *e);
/* busy slots and queued requests, for /health */
void srv_engine_load(srv_engine *e, int *busy, int *queued);
/* requests finished since the start, and how many of them because the client went away */
void srv_engine_counts(srv_engine *e, long *done, long *cancelled);

/* ------------------------------------------------------------------ api.c */

typedef struct srv_embedder srv_embedder;

typedef struct srv_config {
    vkf_model *m;
    srv_embedder *emb;      /* embedding mode (an encoder-only model): /v1/embeddings, no engine */
    const char *model_name; /* "id" in /v1/models and responses */
    int32_t max_tokens;     /* cap on max_tokens, and the default when absent */
    int32_t n_ctx;          /* tokens per slot */
    int default_template;   /* the model has no chat template: ChatML (llama.cpp's default) */
} srv_config;

/* Parses a completion request body into r (prompt tokens, sampling, stops, logprobs). On a bad
 * request returns 400's message in err and -1. */
int srv_api_parse(const srv_config *c, int chat, const char *body, size_t len, srv_req *r,
                  char *err, size_t errsize);
/* The whole response (stream false); malloc'ed. */
char *srv_api_response(const srv_config *c, const srv_req *r);
/* One server-sent event: "data: {...}\n\n" for event i (text delta), or the final chunk
 * (finish_reason and usage) when i < 0; first: the first chunk sent (chat: carries the role);
 * malloc'ed. */
char *srv_api_chunk(const srv_config *c, const srv_req *r, int i, int first);
/* A request of several prompts (rs[0..n), one choice each, rs[i]->index == i): the whole
 * response, choices in order and the usage summed; malloc'ed. */
char *srv_api_response_multi(const srv_config *c, srv_req *const *rs, int n);
/* Its stream's last chunk before [DONE]: no choices, the usage summed (OpenAI's shape). */
char *srv_api_usage_chunk(const srv_config *c, srv_req *const *rs, int n);
/* {"error": {...}} */
char *srv_api_error(int status, const char *message);
char *srv_api_models(const srv_config *c);
/* /v1/models/{id} (OpenAI's models.retrieve): the model object, or 404 when id is not ours. */
char *srv_api_model(const srv_config *c, const char *id, int *status);
/* /tokenize and /detokenize; on a bad request *status = 400 and the error JSON is returned. */
char *srv_api_tokenize(const srv_config *c, const char *body, size_t len, int *status);
char *srv_api_detokenize(const srv_config *c, const char *body, size_t len, int *status);

/* ------------------------------------------------------------------ embeddings.c */

vkf_status srv_embedder_create(vkf_model *m, srv_embedder **out);
void srv_embedder_free(srv_embedder *e);
/* POST /v1/embeddings: the response JSON (or an error's), *status its HTTP status. */
char *srv_embeddings(srv_embedder *e, const char *model_name, const char *body, size_t len,
                     int *status);

/* ------------------------------------------------------------------ http.c */

typedef struct srv_http_params {
    const char *host;
    int port;            /* 0: any free port */
    int listen_fd;       /* > 0: a socket srv_http_bind bound and listens on (host and port are
                            then only for messages); else srv_http_start binds */
    const char *api_key; /* NULL: none */
    size_t max_body;     /* bytes; larger bodies get 413 */
    int max_connections;
} srv_http_params;

typedef struct srv_http srv_http;

/* Binds host:port and listens, before anything slow (the model) is loaded, so that a port in
 * use is reported at once. *fd for srv_http_params.listen_fd (srv_http_stop closes it; close it
 * yourself if the server never starts). VKF_ERROR_INVALID_ARGUMENT: host is not an IPv4 or IPv6
 * address; VKF_ERROR_IO: bind or listen failed (the message says why: in use, not allowed). */
vkf_status srv_http_bind(const char *host, int port, int *fd, char *err, size_t errsize);
vkf_status srv_http_start(const srv_http_params *p, const srv_config *c, srv_engine *e,
                          srv_http **out);
int srv_http_port(const srv_http *h);
/* New requests get 503 from now on (draining). */
void srv_http_drain(srv_http *h);
void srv_http_stop(srv_http *h);

#endif
