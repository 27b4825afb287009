/* vkformer serve: an OpenAI-compatible HTTP server (libmicrohttpd) over one model, or several
 * (router.c).
 *
 *   http.c    connections, the route table, API keys, size limits, errors, server-sent events
 *   api.c     OpenAI request parsing and response JSON (chat, completions, logprobs, usage)
 *   engine.c  the slots: a queue, one thread that prefills new requests and decodes every busy
 *             slot together in one batched graph per step (continuous batching)
 *   metrics.c    GET /metrics (Prometheus text, llama-server's names) and the HTTP counters
 *   slots.c      GET /health (readiness and load) and GET /slots (llama-server's shape)
 *   access_log.c one line per request on stderr (--log-format text|json), and serve's notices
 *   native.c     llama-server's POST /completion (n_probs) and its response shape
 *   slot_files.c POST /slots/{id}?action=save|restore|erase (--slot-save-path)
 *   router.c     several models in one server: load on first use, LRU unload (--models-max)
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

#include "frontend/utf8.h" /* vkf_frontend_utf8_dup */
#include "vkformer.h"

#define SRV_MAX_STOPS 16
#define SRV_MAX_TOP_LOGPROBS 20
#define SRV_MAX_PROMPTS 64
#define SRV_MAX_LORA                                                                               \
    16 /* LoRA adapters a server loads (--lora, --lora-scaled) */ /* completions: prompts in one   \
                                                                     request ("prompt": [...]) */

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
    int chat;   /* 1: /v1/chat/completions */
    int native; /* 1: llama-server's POST /completion (native.c: its response shape) */
    int infill; /* 1: /infill (llama-server's response shape: serve/infill.c) */
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
    /* LoRA: the scale of each of the server's adapters for this request (llama-server's
     * "lora": [{"id", "scale"}], the ids not listed 0); lora_given 0: the server's current
     * scales (POST /lora-adapters), taken when the request is queued */
    float lora[SRV_MAX_LORA];
    int lora_given;
    char id[48]; /* "chatcmpl-..." / "cmpl-..." */
    long created;
    int index;     /* completions with a list of prompts: which one this is (its choice's index);
                      set before srv_api_parse */
    int n_choices; /* set by srv_api_parse: prompts in the request (one choice each; the usage
                      then goes in srv_api_usage_chunk, not in each final chunk) */
    long task;     /* the server's number for the request (/slots id_task) */
    /* engine (guarded by the engine mutex) */
    pthread_cond_t cv;
    srv_event *ev;
    int n_ev, cap_ev;
    int32_t n_gen;
    srv_finish finish;
    int done;
    int cancel; /* set by the connection: the client went away */
    char err[512];
    int refs; /* the connection, the engine, and the slot's last request (/slots);
                 freed at 0 */
    /* what /slots and /metrics show of the request, published under the engine mutex by the
     * engine thread (the engine-thread fields below change without it) */
    int32_t pub_gen, pub_cached, pub_pos;
    struct srv_req *next; /* queue link */
    /* engine thread only */
    int slot;
    int id_slot;      /* the slot it was given (stays after it finished: /completion's id_slot) */
    int32_t pos;      /* tokens in the slot's cache: where last goes */
    int32_t last;     /* token to feed at pos */
    int32_t n_cached; /* prompt tokens taken from the slot's cache (usage.prompt_tokens_details) */
    int32_t n_drafted, n_accepted; /* speculative decoding: drafted tokens checked, kept */
    int32_t *gen;                  /* generated tokens, for incremental detokenization */
    int32_t cap_gen;
    /* llama-server's timings (srv_api_timings), set by the engine thread before done */
    double prompt_ms;    /* evaluating the prompt past its cached prefix */
    double t_gen0;       /* when the prompt was evaluated (seconds, CLOCK_MONOTONIC); 0: never */
    double predicted_ms; /* from then to the last token */
    size_t text_done;    /* bytes of the detokenized generation already pushed to the stopper */
    vkf_sampler *smp;
    vkf_stopper *stopper;
    struct srv_structured *st; /* grammar, tool calls (structured.c), or NULL */
} srv_req;

typedef struct srv_engine srv_engine;

/* A slot's draft model (spec_draft.c): a draft session of n_ctx tokens on dm (its KV cache of
 * the types ctk / ctv, vkf_cache_type, as the target's). srv_draft_run
 * drafts at most max tokens after h[0..n) into out and returns how many (0 on an error: no
 * draft); it first cuts its cache back to the prefix it shares with h. */
typedef struct srv_draft srv_draft;
vkf_status srv_draft_new(vkf_model *dm, int32_t n_ctx, int32_t ctk, int32_t ctv,
                         int32_t target_vocab, float p_min, srv_draft **out);
int32_t srv_draft_run(srv_draft *dr, const int32_t *h, int32_t n, int32_t max, int32_t *out);
void srv_draft_free(srv_draft *dr);

typedef struct srv_engine_params {
    int n_slots;                        /* parallel sequences (-np) */
    int32_t n_ctx;                      /* tokens per slot */
    int queue_max;                      /* requests waiting for a slot beyond the busy ones */
    int32_t cache_type_k, cache_type_v; /* vkf_cache_type of the slots' KV cache (-ctk / -ctv) */
    /* speculative decoding, per slot: n-gram lookup in what the slot's cache holds (0: off);
     * drafts of at most draft_max tokens, none shorter than draft_min; keys of ngram_n..1 */
    int spec_ngram;
    int32_t draft_max, draft_min, ngram_n;
    /* or a draft model (serve -md; its vocabulary checked by the caller): each slot drafts
     * with its own draft session, stopping after a token of probability under draft_p_min */
    vkf_model *draft;
    float draft_p_min;
    /* LoRA adapters of the model (loaded by the caller, freed after srv_engine_stop), their
     * paths (GET /lora-adapters) and initial scales (--lora-init-without-apply: 0) */
    vkf_lora *const *lora;
    const char *const *lora_path;
    const float *lora_scale;
    int n_lora;
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
/* The slots' KV cache as allocated: bytes of all of them and the vkf_dtype of K and V. */
void srv_engine_kv(const srv_engine *e, uint64_t *bytes, int32_t *type_k, int32_t *type_v);
int srv_engine_n_slots(const srv_engine *e);
/* busy slots and queued requests, for /health */
void srv_engine_load(srv_engine *e, int *busy, int *queued);
/* The weights, the slots' KV cache and activations (vkf_session_memory of the slots' session);
 * at start, before requests come (the engine thread builds graphs as it steps). */
vkf_status srv_engine_memory(srv_engine *e, vkf_memory_info *out);
/* requests finished since the start, and how many of them because the client went away */
void srv_engine_counts(srv_engine *e, long *done, long *cancelled);

/* The engine's counters for /metrics (llama-server's server_metrics): totals since the start,
 * and a bucket since the previous read with reset_bucket (llama-server resets its throughput
 * gauges at every /metrics request). */
typedef struct srv_stats {
    uint64_t n_prompt;     /* prompt tokens evaluated (those taken from the cache excluded) */
    double t_prompt;       /* seconds spent evaluating them */
    uint64_t n_predicted;  /* generated tokens (the usage's completion_tokens, summed) */
    uint64_t n_decoded;    /* rows of the batched decode steps (one per busy slot per step) */
    double t_decode;       /* seconds spent in the batched decode steps */
    uint64_t n_steps;      /* batched decode steps */
    uint64_t n_busy_total; /* busy slots summed over the steps */
    uint64_t n_bucket_prompt, n_bucket_decoded; /* since the previous reset */
    double t_bucket_prompt, t_bucket_decode;
    uint64_t n_finished[SRV_FINISH_ERROR + 1]; /* requests finished, by srv_finish */
    uint64_t n_drafted, n_accepted;            /* speculative decoding: drafted, kept */
    int n_slots, busy, queued;
    int64_t kv_tokens; /* cache rows in use: each busy slot's position, each idle slot's
                          prompt cache */
    int64_t kv_size;   /* n_slots * n_ctx */
} srv_stats;
void srv_engine_stats(srv_engine *e, srv_stats *out, int reset_bucket);

/* POST /slots/{id}?action=save|restore|erase (slot_files.c): run by the engine thread between
 * its steps, on an idle slot. */
typedef enum srv_slot_action { SRV_SLOT_SAVE, SRV_SLOT_RESTORE, SRV_SLOT_ERASE } srv_slot_action;
typedef struct srv_slot_op {
    int slot;
    srv_slot_action action;
    const char *path; /* save / restore: the file */
    /* the result */
    int status;       /* HTTP status: 200; 400 busy slot or a file for another model; 404 no file */
    int32_t n_tokens; /* saved, restored or erased */
    size_t n_bytes;   /* written or read */
    double ms;
    char err[512];
    int done; /* guarded by the engine mutex */
    pthread_cond_t cv;
    struct srv_slot_op *next;
} srv_slot_op;
/* Runs op on the engine thread and waits for it (op->status and the counts are then set). */
void srv_engine_slot_op(srv_engine *e, srv_slot_op *op);
/* slot_files.c, on the engine thread: slot b's cache rows (n tokens) to / from path */
void srv_slot_save(vkf_model *m, vkf_session *s, int b, const int32_t *tokens, int32_t n,
                   srv_slot_op *op);
/* the tokens restored go to tokens[0..op->n_tokens) (at most cap) */
void srv_slot_restore(vkf_model *m, vkf_session *s, int b, int32_t *tokens, int32_t cap,
                      srv_slot_op *op);

/* POST /slots/{id}?action=...: the response JSON (llama-server's: id_slot, filename, n_saved /
 * n_restored, n_written / n_read, timings; n_erased) or the error's, *status its HTTP status.
 * dir: --slot-save-path (NULL: 501); e NULL: an embedding model (501). */
char *srv_slot_request(srv_engine *e, const char *dir, const char *id, const char *action,
                       const char *body, size_t len, int *status);

/* One slot as /slots shows it (a copy: no lock held while it is rendered). */
typedef struct srv_slot_info {
    int id;
    int busy;
    long task; /* the request it holds, or held last; -1: none yet */
    int32_t n_ctx;
    int32_t n_prompt, n_cached, n_gen, max_tokens;
    int32_t n_drafted, n_accepted; /* speculative decoding (the request's) */
    int speculative;               /* the server drafts */
    int stream, n_probs;
    vkf_sampler_params sp;
    char *stops[SRV_MAX_STOPS];
    int n_stops;
    int32_t *prompt; /* malloc'ed copy of the prompt tokens */
    char *generated; /* the text sent so far, malloc'ed */
} srv_slot_info;
/* A snapshot of every slot (n_slots entries, malloc'ed); NULL when out of memory. */
srv_slot_info *srv_engine_slots(srv_engine *e);
void srv_slot_info_free(srv_slot_info *s, int n);

/* ------------------------------------------------------------------ api.c */

typedef struct srv_embedder srv_embedder;

typedef struct srv_config {
    vkf_model *m;
    srv_embedder *emb;      /* embedding mode (an encoder-only model): /v1/embeddings, no engine */
    const char *model_name; /* "id" in /v1/models and responses */
    int32_t max_tokens;     /* cap on max_tokens, and the default when absent */
    int32_t n_ctx;          /* tokens per slot */
    int default_template;   /* the model has no chat template: ChatML (llama.cpp's default) */
    uint64_t kv_bytes_slot; /* one slot's KV cache, bytes (/v1/models, /slots) */
    int32_t kv_type_k, kv_type_v; /* its vkf_dtype of K and V */
    int n_lora;                   /* LoRA adapters loaded (ids 0 .. n_lora - 1) */
    int spm_infill;               /* --spm-infill: /infill puts the suffix part first */
} srv_config;

/* ------------------------------------------------------------------ lora.c
 * llama-server's LoRA endpoints and request field. The engine keeps the server's current scales
 * (engine.c); a request's set keys its slot's prompt cache. */

/* A request's "lora" (absent: nothing to do): 400's message in err and -1 for a value that is
 * not an array of {"id", "scale"}, an id the server has not loaded, a scale that is not finite. */
struct cJSON;
int srv_lora_parse(const srv_config *c, const struct cJSON *j, srv_req *r, char *err,
                   size_t errsize);
/* GET /lora-adapters: [{"id", "path", "scale", "task_name", "prompt_prefix"}] of the current
 * scales; malloc'ed. */
char *srv_lora_list(srv_engine *e);
/* POST /lora-adapters: body [{"id", "scale"}] sets the server's scales (the ids not listed 0)
 * for the requests queued from now on; {"success": true}, or the error with *status 400. */
char *srv_lora_set(srv_engine *e, const char *body, size_t len, int *status);
/* The engine's adapters (engine.c): count, path, and the current scales (copied under the
 * engine's mutex; set replaces them). */
int srv_engine_n_lora(const srv_engine *e);
const char *srv_engine_lora_path(const srv_engine *e, int i);
/* adapter i's task_name (what 0) or prompt_prefix (what 1) */
const char *srv_engine_lora_meta(const srv_engine *e, int i, int what);
void srv_engine_lora_get(srv_engine *e, float *scales);
void srv_engine_lora_set(srv_engine *e, const float *scales);

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

/* POST /apply-template: {"prompt": the messages through the chat template}; *status 200 or 400 */
char *srv_api_apply_template(const srv_config *c, const char *body, size_t len, int *status);

/* ------------------------------------------------------------------ native.c */

/* POST /completion (llama-server's own): srv_api_parse's completion fields plus n_predict and
 * n_probs (one prompt); sets r->native. */
int srv_native_parse(const srv_config *c, const char *body, size_t len, srv_req *r, char *err,
                     size_t errsize);
/* its whole response (completion_probabilities with n_probs), and its stream's events ("data:
 * {...}\n\n"; i < 0: the last one, stop true); malloc'ed. srv_api_response and srv_api_chunk
 * answer with these for a native request. */
char *srv_native_response(const srv_config *c, const srv_req *r);
char *srv_native_chunk(const srv_config *c, const srv_req *r, int i);

/* ------------------------------------------------------------------ router.c */

/* Several models in one server (serve --models-dir, repeated -m): see router.c. */
typedef struct srv_router srv_router;
typedef struct srv_model srv_model;

/* A loaded model as the loader made it (cfg and e stay valid until it is unloaded; e NULL: an
 * embedding model). */
typedef struct srv_loaded {
    const srv_config *cfg;
    srv_engine *e;
    void *handle; /* the loader's */
} srv_loaded;

typedef struct srv_router_params {
    int models_max; /* models loaded at once (--models-max) */
    /* loads path as model name; 0, or -1 with the reason in err */
    int (*load)(void *ud, const char *path, const char *name, srv_loaded *out, char *err,
                size_t errsize);
    /* stops its engine (finishing what it holds) and frees it */
    void (*unload)(void *ud, srv_loaded *l);
    void *ud;
} srv_router_params;

srv_router *srv_router_new(const srv_router_params *p);
/* A model the requests may name. error: why the file cannot be served (it is listed with the
 * error and never loaded), or NULL. 0; -2: the name is taken; -1: out of memory. */
int srv_router_add(srv_router *rt, const char *name, const char *path, const char *error);
int srv_router_count(const srv_router *rt);
/* The model name (NULL: the request named none), held until srv_router_release: loaded first
 * when load (unloading the least recently used to stay within models_max), else it must be
 * loaded already. NULL on failure: *status (400 no name / not loaded / a file that cannot be
 * served, 404 unknown: the message names the available ones, 500 the load failed) and err. */
srv_model *srv_router_acquire(srv_router *rt, const char *name, int load, int *status, char *err,
                              size_t errsize);
void srv_router_retain(srv_router *rt, srv_model *m); /* one more holder (a stream) */
void srv_router_release(srv_router *rt, srv_model *m);
const srv_config *srv_model_config(const srv_model *m);
srv_engine *srv_model_engine(const srv_model *m);
/* GET /v1/models: every model with its status {"value": loaded|loading|unloading|unloaded,
 * "loads", and "failed", "error" for a file that cannot be served or a failed load} */
char *srv_router_models_json(srv_router *rt);
char *srv_router_model_json(srv_router *rt, const char *id, int *status);
/* POST /models/load and /models/unload {"model": NAME}: {"success": true}, or the error (an
 * unload waits for the model's requests in flight) */
char *srv_router_control(srv_router *rt, int unload, const char *body, size_t len, int *status);
/* busy slots (and models loading or held) and queued requests over every model (draining) */
void srv_router_load(srv_router *rt, int *busy, int *queued);
/* unloads every model (each after its requests finish) and frees the router */
void srv_router_free(srv_router *rt);
/* The embedder's session, its mutex held (other endpoints on the same model: rerank.c) */
vkf_session *srv_embedder_lock(srv_embedder *e);
void srv_embedder_unlock(srv_embedder *e);

/* ------------------------------------------------------------------ rerank.c */

/* POST /v1/rerank: the response JSON (or an error's), *status its HTTP status. */
char *srv_rerank(srv_embedder *e, const char *model_name, const char *body, size_t len,
                 int *status);

/* ------------------------------------------------------------------ infill.c */

/* POST /infill's body as a completion request (input_prefix, input_suffix, input_extra and
 * prompt replaced by the prompt's tokens: vkf_model_infill): *status 200 and the new body, or
 * the error JSON and its status (400: bad fields, a model without FIM tokens). malloc'ed. */
char *srv_infill_body(const srv_config *c, const char *body, size_t len, int *status);
/* the whole answer, and one server-sent event (i < 0: the final one), in llama-server's shape */
char *srv_infill_response(const srv_config *c, const srv_req *r);
char *srv_infill_chunk(const srv_config *c, const srv_req *r, int i);

/* ------------------------------------------------------------------ embeddings.c */

vkf_status srv_embedder_create(vkf_model *m, srv_embedder **out);
void srv_embedder_free(srv_embedder *e);
/* POST /v1/embeddings: the response JSON (or an error's), *status its HTTP status. */
char *srv_embeddings(srv_embedder *e, const char *model_name, const char *body, size_t len,
                     int *status);

/* ------------------------------------------------------------------ slots.c */

/* GET /health's body. ready 0: the model is loading; e NULL when ready: embedding mode (no
 * slots). *no_slot: every slot is busy (503 where the client asked fail_on_no_slot). malloc'ed. */
char *srv_health_json(const srv_config *c, srv_engine *e, int ready, int draining,
                      int include_slots, int *no_slot);
/* GET /slots: llama-server's array of slots; malloc'ed, NULL when out of memory. */
char *srv_slots_json(const srv_config *c, srv_engine *e);

/* ------------------------------------------------------------------ metrics.c */

typedef struct srv_metrics srv_metrics;
srv_metrics *srv_metrics_new(void);
void srv_metrics_free(srv_metrics *m);
/* one HTTP request answered by route table row `route` (srv_route_find; -1: no endpoint) */
void srv_metrics_count(srv_metrics *m, int route, int status);
/* The Prometheus text of /metrics (resets the engine's throughput bucket; e NULL: embedding mode,
 * the engine's figures are 0); malloc'ed. */
char *srv_metrics_render(srv_metrics *m, srv_engine *e, int draining);
/* when the process started (unix seconds): the Process-Start-Time-Unix header */
double srv_metrics_start(const srv_metrics *m);

/* ------------------------------------------------------------------ access_log.c */

typedef enum srv_log_format {
    SRV_LOG_NONE = 0, /* notices as "vkformer: serve: ..." lines, no access log (the default) */
    SRV_LOG_TEXT,     /* and one text line per request */
    SRV_LOG_JSON,     /* every line a JSON object: notices {"msg"}, one per request */
} srv_log_format;

/* One request as the access log and the request counters see it. */
typedef struct srv_access {
    char method[16];
    char path[256];
    int route; /* its row of the route table (srv_route_find), -1: no endpoint */
    char remote[64];
    char id[48]; /* the completion's id, or "" */
    double t0;   /* srv_now() when its headers arrived */
    int status;
    int stream;
    int has_tokens; /* a completion: the counts and finish below are set */
    int32_t n_prompt, n_cached, n_gen;
    srv_finish finish;
    char reason[256]; /* a 4xx or 5xx: the error message the client got, or why none came */
} srv_access;

/* Set once, before any thread starts. */
void srv_log_set_format(srv_log_format f);
srv_log_format srv_log_get_format(void);
/* serve's own messages: "vkformer: serve: MSG", or {"time","level","msg"} with json */
void srv_log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* the same with level "error"; returns 1 (the command's exit status) */
int srv_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void srv_log_access(const srv_access *a);
double srv_now(void); /* monotonic seconds */

/* ------------------------------------------------------------------ http.c */

typedef struct srv_http_params {
    const char *host;
    int port;            /* 0: any free port */
    int listen_fd;       /* > 0: a socket srv_http_bind bound and listens on (host and port are
                            then only for messages); else srv_http_start binds */
    const char *api_key; /* NULL: none */
    size_t max_body;     /* bytes; larger bodies get 413 */
    int max_connections;
    int timeout_s;              /* a connection idle this long (no request, or a client that reads
                                   nothing) is closed (--timeout; 0: 600, llama-server's default) */
    int metrics;                /* 1: GET /metrics (--metrics; llama-server's default is off) */
    int no_slots;               /* 1: GET /slots refused (--no-slots) */
    const char *slot_save_path; /* --slot-save-path DIR: POST /slots/{id}?action=... (NULL: 501) */
} srv_http_params;

typedef struct srv_http srv_http;

/* The route table (http.c): one row per endpoint with its path, aliases, methods, handler and
 * the endpoint label /metrics counts its requests under.
 * srv_route_find: the row answering path (by its path or an alias; a prefix row's path followed
 * by an id sets *id to the id, else *id is NULL; id may be NULL); -1 when no endpoint has it. */
int srv_route_find(const char *path, const char **id);
int srv_route_count(void);
/* row's endpoint label in /metrics (rows may share one: /v1/models and /v1/models/{id});
 * "other" for -1 */
const char *srv_route_label(int row);

/* Binds host:port and listens, before anything slow (the model) is loaded, so that a port in
 * use is reported at once. *fd for srv_http_params.listen_fd (srv_http_stop closes it; close it
 * yourself if the server never starts). VKF_ERROR_INVALID_ARGUMENT: host is not an IPv4 or IPv6
 * address; VKF_ERROR_IO: bind or listen failed (the message says why: in use, not allowed). */
vkf_status srv_http_bind(const char *host, int port, int *fd, char *err, size_t errsize);
/* Binds (unless p->listen_fd) and serves. c NULL: the model is still loading; /health answers
 * 503 "loading model" and every other endpoint 503 until srv_http_ready. */
vkf_status srv_http_start(const srv_http_params *p, const srv_config *c, srv_engine *e,
                          srv_http **out);
/* The model is loaded and the engine runs (e NULL: embedding mode, no slots): serve every
 * endpoint (c and e outlive h). */
void srv_http_ready(srv_http *h, const srv_config *c, srv_engine *e);
/* Several models: every model endpoint takes the one its request names ("model" in the body,
 * or ?model= on a GET), through rt (which outlives h); POST /models/load and /models/unload. */
void srv_http_ready_router(srv_http *h, srv_router *rt);
int srv_http_port(const srv_http *h);
/* New requests get 503 from now on (draining). */
void srv_http_drain(srv_http *h);
void srv_http_stop(srv_http *h);

#endif
