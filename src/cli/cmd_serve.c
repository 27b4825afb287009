/* vkformer serve: an OpenAI-compatible HTTP server. Binds the port and serves /health at once
 * (503 "loading model"), loads the model and starts the engine (slots) on a loader thread,
 * then serves everything, prints the address, and waits for SIGINT/SIGTERM: it stops taking
 * requests (503), lets those in flight and queued finish, and exits 0. A second signal exits
 * at once; a signal while the model loads exits at once (nothing is in flight). */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/gen_opts.h"
#include "frontend/args.h"
#include "serve/serve.h"

static const char *base_name(const char *p) {
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        n--;
    static char buf[256];
    size_t i = n;
    while (i > 0 && p[i - 1] != '/')
        i--;
    snprintf(buf, sizeof buf, "%.*s", (int)(n - i), p + i);
    return buf;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* What the loader thread builds (the model, the engine or the embedder) from the options. */
typedef struct loader {
    const char *model, *alias;
    vkf_context_params cp;
    int32_t np, n_ctx, max_tokens, queue;
    int32_t ctk, ctv; /* -ctk / -ctv: vkf_cache_type */
    int embedding;    /* --embedding */
    int spm_infill;   /* --spm-infill */
    int spec_ngram;   /* --spec-type ngram */
    int32_t draft_max, draft_min, ngram_n;
    const char *draft_path; /* -md: a draft model (--spec-type draft) */
    float draft_p_min;
    vkf_model *dm;
    vkf_context *ctx;
    vkf_model *m;
    vkf_model_desc d;
    srv_engine *e;     /* generation */
    srv_embedder *emb; /* embedding mode: an encoder-only model, POST /v1/embeddings, no slots */
    srv_config cfg;
    vkf_gen_opts *lo; /* --lora, --lora-scaled, --lora-init-without-apply (their fields only;
                         none with several models) */
    int shared_ctx;   /* ctx is the server's (several models): not made nor freed here */
    char err[512];    /* why the load failed (also logged) */
    int rc;           /* 0, or the command's exit status */
    int done;         /* atomic: the thread has finished */
} loader;

static int load_fail(loader *l, int rc) {
    vkf_gen_lora_free(l->lo); /* after the slots' session (never started here), before the model */
    vkf_model_free(l->dm);
    vkf_model_free(l->m);
    l->dm = NULL;
    if (!l->shared_ctx) vkf_context_free(l->ctx);
    l->m = NULL;
    if (!l->shared_ctx) l->ctx = NULL;
    return rc;
}

/* the load's error: logged, and kept in l->err (the router's /v1/models shows it) */
static int lerr(loader *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int lerr(loader *l, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->err, sizeof l->err, fmt, ap);
    va_end(ap);
    return srv_log_error("%s", l->err);
}

static int load(loader *l) {
    if (!l->shared_ctx && vkf_cli_context(&l->cp, &l->ctx) != VKF_OK)
        return lerr(l, "%s", vkf_last_error());
    /* -c over the slots: positions per slot, past the training context where they are computed
     * (RoPE), as generate's -c */
    vkf_model_params mp = {.path = l->model,
                           .n_ctx = l->n_ctx ? l->n_ctx / l->np : 0,
                           .cache_type_k = l->ctk,
                           .cache_type_v = l->ctv};
    if (vkf_model_load(l->ctx, &mp, &l->m) != VKF_OK)
        return load_fail(l, lerr(l, "loading the model: %s", vkf_last_error()));
    vkf_model_describe(l->m, &l->d);
    const vkf_model_desc d = l->d;
    if (d.encoder_only || l->embedding) {
        if (!d.encoder_only)
            return load_fail(l, lerr(l,
                                     "--embedding: %s is a %s model; vkformer computes "
                                     "embeddings with encoder-only models (bert, "
                                     "nomic-bert)",
                                     l->model, d.architecture));
        if (srv_embedder_create(l->m, &l->emb) != VKF_OK)
            return load_fail(l, lerr(l, "embeddings: %s", vkf_last_error()));
        l->cfg = (srv_config){
            .m = l->m, .emb = l->emb, .model_name = l->alias ? l->alias : base_name(l->model)};
        return 0;
    }
    if (d.encoder_decoder || !d.has_tokenizer)
        return load_fail(
            l, lerr(l, "%s is %s; serve needs a decoder-only model with a tokenizer", l->model,
                    d.encoder_decoder ? "an encoder-decoder model" : "without a tokenizer"));
    int32_t slot_ctx = l->n_ctx ? l->n_ctx / l->np : d.n_ctx;
    if (slot_ctx > d.n_ctx) slot_ctx = d.n_ctx;
    if (slot_ctx < 2) {
        snprintf(l->err, sizeof l->err, "-c %d over %d slots leaves %d tokens per slot", l->n_ctx,
                 l->np, slot_ctx);
        return load_fail(l, vkf_usage_error("serve", "%s", l->err));
    }
    l->cfg = (srv_config){.m = l->m,
                          .model_name = l->alias ? l->alias : base_name(l->model),
                          .max_tokens = l->max_tokens,
                          .n_ctx = slot_ctx,
                          .default_template = vkf_model_chat_template(l->m) == NULL,
                          .spm_infill = l->spm_infill};
    if (l->cfg.default_template)
        srv_log_notice("%s has no chat template: /v1/chat/completions uses ChatML (llama.cpp's "
                       "default)",
                       l->model);
    /* -md: the draft model, loaded once (each slot gets its own draft session), with the
     * target's vocabulary (generate's check: the first difference is named) */
    if (l->draft_path) {
        vkf_model_params dp = {.path = l->draft_path,
                               .n_ctx = slot_ctx,
                               .cache_type_k = l->ctk,
                               .cache_type_v = l->ctv};
        if (vkf_model_load(l->ctx, &dp, &l->dm) != VKF_OK)
            return load_fail(l, lerr(l, "loading the draft model: %s", vkf_last_error()));
        if (vkf_spec_check_vocab(l->m, l->dm) != VKF_OK)
            return load_fail(l, lerr(l, "-md %s: %s", l->draft_path, vkf_last_error()));
    }
    /* LoRA adapters: the server's initial scales are the flags' (0 with
     * --lora-init-without-apply); requests and POST /lora-adapters change them */
    if (vkf_gen_lora_open(l->lo, "serve", l->m)) return load_fail(l, 1);
    float lsc[SRV_MAX_LORA] = {0};
    int n_lora = l->lo->lora_merge ? 0 : l->lo->n_lora;
    if (n_lora > SRV_MAX_LORA)
        return load_fail(l, srv_log_error("at most %d LoRA adapters", SRV_MAX_LORA));
    for (int i = 0; i < n_lora; i++)
        lsc[i] = l->lo->lora_no_apply ? 0.0f : l->lo->lora_scale[i];
    l->cfg.n_lora = n_lora;
    srv_engine_params ep = {.n_slots = l->np,
                            .lora = l->lo->lora,
                            .lora_path = (const char *const *)l->lo->lora_path,
                            .lora_scale = lsc,
                            .n_lora = n_lora,
                            .n_ctx = slot_ctx,
                            .queue_max = l->queue,
                            .cache_type_k = l->ctk,
                            .cache_type_v = l->ctv,
                            .spec_ngram = l->spec_ngram,
                            .draft_max = l->draft_max,
                            .draft_min = l->draft_min,
                            .ngram_n = l->ngram_n,
                            .draft = l->dm,
                            .draft_p_min = l->draft_p_min};
    if (srv_engine_start(l->m, &ep, &l->e) != VKF_OK)
        return load_fail(l, lerr(l, "starting the slots: %s", vkf_last_error()));
    uint64_t kv = 0;
    srv_engine_kv(l->e, &kv, &l->cfg.kv_type_k, &l->cfg.kv_type_v);
    l->cfg.kv_bytes_slot = kv / (uint64_t)l->np;
    return 0;
}

/* ------------------------------------------------------------------ several models */

#define MAX_MODEL_ARGS 64

typedef struct model_list { /* -m, repeated */
    const char *v[MAX_MODEL_ARGS];
    int n;
} model_list;

static int model_arg(void *dst, const char *v, char *err, size_t n) {
    model_list *l = dst;
    if (l->n == MAX_MODEL_ARGS) {
        snprintf(err, n, "at most %d models (more: --models-dir DIR)", MAX_MODEL_ARGS);
        return -1;
    }
    l->v[l->n++] = v;
    return 0;
}

/* the router's loads: a loader made from the options (tmpl) on the server's context */
typedef struct router_ud {
    loader tmpl;
    vkf_context *ctx;
} router_ud;

static int router_load(void *ud, const char *path, const char *name, srv_loaded *out, char *err,
                       size_t n) {
    router_ud *u = ud;
    loader *l = malloc(sizeof *l);
    if (!l) {
        snprintf(err, n, "out of host memory");
        return -1;
    }
    *l = u->tmpl;
    l->model = path;
    l->alias = name;
    l->ctx = u->ctx;
    l->shared_ctx = 1;
    if (load(l) != 0) {
        snprintf(err, n, "%s", l->err[0] ? l->err : "see the server's log");
        free(l);
        return -1;
    }
    out->cfg = &l->cfg;
    out->e = l->e;
    out->handle = l;
    return 0;
}

static void router_unload(void *ud, srv_loaded *ld) {
    (void)ud;
    loader *l = ld->handle;
    if (!l) return;
    if (l->e) srv_engine_stop(l->e); /* finishes what its slots and queue hold */
    srv_embedder_free(l->emb);
    vkf_model_free(l->m);
    free(l);
}

/* a model's name: its file or directory name, less a .gguf suffix */
static void model_name_of(const char *path, char *out, size_t n) {
    snprintf(out, n, "%s", base_name(path));
    size_t k = strlen(out);
    if (k > 5 && strcmp(out + k - 5, ".gguf") == 0) out[k - 5] = '\0';
}

/* why path cannot be served (unreadable, not GGUF, a directory without config.json), or NULL */
static const char *model_file_error(const char *path, char *buf, size_t n) {
    DIR *d = opendir(path);
    if (d) { /* a Hugging Face directory */
        closedir(d);
        char cfg[4200];
        snprintf(cfg, sizeof cfg, "%s/config.json", path);
        FILE *f = fopen(cfg, "rb");
        if (!f) {
            snprintf(buf, n, "a directory without config.json (not a model directory)");
            return buf;
        }
        fclose(f);
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(buf, n, "cannot read it: %s", strerror(errno));
        return buf;
    }
    char magic[4] = {0};
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    if (got != 4 || memcmp(magic, "GGUF", 4) != 0) {
        snprintf(buf, n, "not a GGUF file (it does not begin with the bytes GGUF)");
        return buf;
    }
    return NULL;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* adds path as a model (a file that cannot be served: listed with its error, and a warning) */
static int router_add(srv_router *rt, const char *path, int *n_bad) {
    char name[256], eb[256];
    model_name_of(path, name, sizeof name);
    const char *e = model_file_error(path, eb, sizeof eb);
    if (e) srv_log_notice("warning: skipping %s: %s", path, e);
    *n_bad += e != NULL;
    int rc = srv_router_add(rt, name, path, e);
    if (rc == -2) return srv_log_error("two models are named %s (%s): rename one", name, path);
    if (rc) return srv_log_error("out of host memory");
    return 0;
}

/* every entry of dir but the hidden ones, by name */
static int router_add_dir(srv_router *rt, const char *dir, int *n_bad) {
    DIR *d = opendir(dir);
    if (!d) return srv_log_error("--models-dir %s: %s", dir, strerror(errno));
    char **paths = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **g = realloc(paths, (size_t)cap * sizeof *g);
            if (!g) break;
            paths = g;
        }
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        if (!(paths[n] = malloc(len))) break;
        snprintf(paths[n++], len, "%s/%s", dir, de->d_name);
    }
    closedir(d);
    if (n) qsort(paths, (size_t)n, sizeof *paths, cmp_str);
    for (int i = 0; i < n; i++) {
        if (!rc) rc = router_add(rt, paths[i], n_bad);
        free(paths[i]);
    }
    free(paths);
    return rc;
}

static void *loader_main(void *arg) {
    loader *l = arg;
    l->rc = load(l);
    __atomic_store_n(&l->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* serve several models: the router over them, until SIGINT/SIGTERM; then the requests in
 * flight finish and every model unloads */
static int serve_router(srv_http *h, sigset_t *sigs, const loader *tmpl, const model_list *ml,
                        const char *dir, int models_max, const char *host) {
    router_ud u = {.tmpl = *tmpl};
    if (vkf_cli_context(&u.tmpl.cp, &u.ctx) != VKF_OK) {
        srv_http_stop(h);
        return srv_log_error("%s", vkf_last_error());
    }
    srv_router_params rp = {
        .models_max = models_max, .load = router_load, .unload = router_unload, .ud = &u};
    srv_router *rt = srv_router_new(&rp);
    int rc = rt ? 0 : srv_log_error("out of host memory"), n_bad = 0;
    for (int i = 0; !rc && i < ml->n; i++)
        rc = router_add(rt, ml->v[i], &n_bad);
    if (!rc && dir) rc = router_add_dir(rt, dir, &n_bad);
    if (!rc && srv_router_count(rt) == n_bad)
        rc = srv_log_error("no model to serve (%d file%s that cannot be served)", n_bad,
                           n_bad == 1 ? "" : "s");
    if (rc) {
        srv_http_stop(h);
        srv_router_free(rt);
        vkf_context_free(u.ctx);
        return rc;
    }
    srv_http_ready_router(h, rt);
    srv_log_notice("%d models (and %d that cannot be served) on %s, at most %d loaded at once: "
                   "listening on http://%s:%d",
                   srv_router_count(rt) - n_bad, n_bad, vkf_context_device_name(u.ctx), models_max,
                   host, srv_http_port(h));
    int sig = 0;
    sigwait(sigs, &sig);
    srv_log_notice("%s: finishing the requests in flight (again to stop at once)",
                   sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv_http_drain(h);
    struct timespec zero = {0, 0};
    for (;;) {
        int busy, queued;
        srv_router_load(rt, &busy, &queued);
        if (!busy && !queued) break;
        if (sigtimedwait(sigs, NULL, &zero) > 0) {
            srv_log_notice("stopping now");
            _exit(1);
        }
        sleep_ms(20);
    }
    sleep_ms(200); /* the last events reach their clients */
    srv_http_stop(h);
    srv_router_free(rt);
    vkf_context_free(u.ctx);
    srv_log_notice("stopped");
    return 0;
}

static int log_format_arg(void *dst, const char *v, char *err, size_t n) {
    srv_log_format *f = dst;
    if (strcmp(v, "text") == 0)
        *f = SRV_LOG_TEXT;
    else if (strcmp(v, "json") == 0)
        *f = SRV_LOG_JSON;
    else {
        snprintf(err, n, "expected text or json, got '%s'", v);
        return -1;
    }
    return 0;
}

/* --spec-type: llama.cpp's names */
static int spec_type_arg(void *dst, const char *v, char *err, size_t n) {
    if (!strcmp(v, "none"))
        *(int *)dst = VKF_SPEC_NONE;
    else if (!strcmp(v, "ngram") || !strcmp(v, "ngram-simple"))
        *(int *)dst = VKF_SPEC_NGRAM;
    else if (!strcmp(v, "draft") || !strcmp(v, "draft-simple"))
        *(int *)dst = VKF_SPEC_DRAFT;
    else {
        snprintf(err, n,
                 "expected none, ngram (prompt lookup; also ngram-simple) or draft (a draft "
                 "model, -md; also draft-simple), got '%s'",
                 v);
        return -1;
    }
    return 0;
}

int vkf_cmd_serve(int argc, char **argv) {
    const char *model = NULL, *host = "127.0.0.1", *api_key = NULL, *alias = NULL;
    const char *models_dir = NULL, *slot_save_path = NULL;
    model_list models = {{0}, 0};
    int32_t models_max = 4;
    int32_t port = 8080, np = 1, n_ctx = 0, max_tokens = 4096, queue = 16, max_body_kib = 1024;
    int32_t timeout_s = 600, ctk = 0, ctv = 0;
    int spm_infill = 0;
    int metrics = 0, slots = 1, embedding = 0, spec_type = VKF_SPEC_NONE, spec_given = 0;
    int spec_type_given = 0;
    const char *draft_path = NULL;
    vkf_spec_params spd;
    vkf_spec_params_default(&spd);
    srv_log_format log_format = SRV_LOG_NONE;
    vkf_context_params cp = {0};
    static vkf_gen_opts lo; /* the LoRA flags' fields (cli/gen_opts.c parses them) */
    vkf_arg args[] = {
        {"--lora", VKF_ARG_CALL, &lo, .metavar = "FNAME", .call = vkf_gen_lora_arg,
         .help = "LoRA adapter (a GGUF adapter or a PEFT directory), scale 1; repeatable, or "
                 "comma-separated; ids 0, 1, ... in order (GET /lora-adapters)"},
        {"--lora-scaled", VKF_ARG_CALL, &lo, .metavar = "FNAME:SCALE",
         .call = vkf_gen_lora_scaled_arg,
         .help = "LoRA adapter with its scale; repeatable, or comma-separated"},
        {"--lora-merge", VKF_ARG_SET, &lo.lora_merge,
         .help = "add the adapters into the weights at load (F32/F16/BF16 weights): no "
                 "/lora-adapters to rescale them then"},
        {"--lora-init-without-apply", VKF_ARG_SET, &lo.lora_no_apply,
         .help = "load the adapters at scale 0 (apply them with POST /lora-adapters or a "
                 "request's \"lora\")"},
        {"-m|--model", VKF_ARG_CALL, &models, .metavar = "PATH", .call = model_arg,
         .help = "model directory or .gguf file; given again, one server for several models "
                 "(requests name theirs in \"model\")"},
        {"--models-dir", VKF_ARG_STR, &models_dir, .metavar = "DIR",
         .help = "serve every model in DIR (.gguf files and model directories), each loaded "
                 "on its first request; files that are not GGUF are listed as errors"},
        {"--models-max", VKF_ARG_INT, &models_max, .min = 1, .max = 1024, .metavar = "N",
         .help = "several models: at most N loaded at once, the least recently used one "
                 "unloads when another must load (default 4, llama-server's)"},
        {"--host", VKF_ARG_STR, &host, .metavar = "ADDR",
         .help = "address to listen on (default 127.0.0.1; 0.0.0.0 or :: for every interface)"},
        {"--port", VKF_ARG_INT, &port, .min = 0, .max = 65535, .metavar = "N",
         .help = "TCP port (default 8080; 0: any free port, printed at start)"},
        {"-np|--parallel", VKF_ARG_INT, &np, .min = 1, .max = 64, .metavar = "N",
         .help = "slots: requests decoded together in one batched step (default 1)"},
        {"-c|--ctx-size", VKF_ARG_INT, &n_ctx, .min = 0, .max = 1 << 24, .metavar = "N",
         .help = "context of all slots together, tokens, as llama-server: each slot gets N / np "
                 "(default 0: the model's context per slot)"},
        {"-ctk|--cache-type-k", VKF_ARG_CALL, &ctk, .metavar = "T", .call = vkf_parse_cache_type,
         .help = VKF_CACHE_TYPE_HELP},
        {"-ctv|--cache-type-v", VKF_ARG_CALL, &ctv, .metavar = "T", .call = vkf_parse_cache_type,
         .help = "the same for the V cache"},
        {"--api-key", VKF_ARG_STR, &api_key, .metavar = "KEY",
         .help = "require \"Authorization: Bearer KEY\" (every endpoint but /health)"},
        {"-a|--alias", VKF_ARG_STR, &alias, .metavar = "NAME",
         .help = "model name in responses and /v1/models (default: the file name)"},
        {"--max-tokens", VKF_ARG_INT, &max_tokens, .min = 1, .max = 1 << 24, .metavar = "N",
         .help = "largest max_tokens a request may ask for, and the default (4096)"},
        {"--queue", VKF_ARG_INT, &queue, .min = 0, .max = 4096, .metavar = "N",
         .help = "requests that may wait for a slot; more get 503 (default 16)"},
        {"--max-body", VKF_ARG_INT, &max_body_kib, .min = 1, .max = 1 << 20, .metavar = "KIB",
         .help = "largest request body, KiB; larger ones get 413 (default 1024)"},
        {"-to|--timeout", VKF_ARG_INT, &timeout_s, .min = 1, .max = 1 << 24, .metavar = "S",
         .help = "close a connection idle for S seconds: no request, or a client that reads "
                 "nothing (default 600, llama-server's)"},
        {"--metrics", VKF_ARG_SET, &metrics,
         .help = "serve GET /metrics (Prometheus text; off by default, as llama-server)"},
        {"--slots", VKF_ARG_SET, &slots, .help = "serve GET /slots (the default)"},
        {"--no-slots", VKF_ARG_CLEAR, &slots, .help = "refuse GET /slots (501)"},
        {"--slot-save-path", VKF_ARG_STR, &slot_save_path, .metavar = "DIR",
         .help = "POST /slots/{id}?action=save|restore {\"filename\": NAME} keeps a slot's "
                 "prompt cache (its tokens and KV cache) in DIR/NAME; action=erase empties it "
                 "(default: off, 501)"},
        {"--embedding|--embeddings", VKF_ARG_SET, &embedding,
         .help = "serve POST /v1/embeddings (on by itself for an encoder-only model such as "
                 "bert)"},
        {"--spm-infill", VKF_ARG_SET, &spm_infill,
         .help = "POST /infill puts the suffix part first (llama-server's Suffix/Prefix/Middle "
                 "order, for models trained so)"},
        {"--reranking|--rerank", VKF_ARG_SET, &embedding,
         .help = "serve POST /v1/rerank (llama-server's flag; on by itself for a cross-encoder: "
                 "an encoder with a classifier head)"},
        {"--log-format", VKF_ARG_CALL, &log_format, .metavar = "text|json", .call = log_format_arg,
         .help = "one access line per request on stderr (method, path, status, duration, "
                 "tokens); json: every line of serve's a JSON object (default: no access log)"},
        {"--spec-type", VKF_ARG_CALL, &spec_type, .metavar = "none|ngram|draft",
         .call = spec_type_arg, .seen = &spec_type_given,
         .help = "speculative decoding in every slot: ngram drafts from the slot's own tokens "
                 "(prompt lookup), draft with the draft model (-md); checked in one pass "
                 "(default: draft with -md, else none)"},
        {"--draft-max|--draft|--draft-n|--spec-draft-n-max", VKF_ARG_INT, &spd.n_max,
         .min = -(1 << 30), .max = 1 << 20, .metavar = "N", .seen = &spec_given,
         .help = "most tokens drafted per step (default 16)"},
        {"--draft-min|--spec-draft-n-min", VKF_ARG_INT, &spd.n_min, .min = -(1 << 30),
         .max = 1 << 20, .metavar = "N", .seen = &spec_given,
         .help = "fewer drafted tokens are not checked (default 0)"},
        {"--spec-ngram-size-n|--spec-ngram-simple-size-n", VKF_ARG_INT, &spd.ngram_n, .min = 1,
         .max = 1024, .metavar = "N", .seen = &spec_given,
         .help = "n-gram lookup: the longest run of last tokens looked up (default 3)"},
        {"-md|--model-draft|--spec-draft-model", VKF_ARG_STR, &draft_path, .metavar = "PATH",
         .help = "draft model for speculative decoding, loaded once, a draft session per slot "
                 "(its vocabulary must be the model's)"},
        {"--draft-p-min|--spec-draft-p-min", VKF_ARG_FLOAT, &spd.p_min, .min = 0, .max = 1,
         .metavar = "P", .seen = &spec_given,
         .help = "draft model: stop drafting after a token it gives p < P (default 0.75)"},
        VKF_ARGS_BACKEND(&cp),
        VKF_ARGS_SPLIT(&cp),
        {0}};
    vkf_cmd_spec spec = {
        "serve",
        "-m MODEL [-m MODEL2 ... | --models-dir DIR] [--host 127.0.0.1] [--port 8080] [-np N] "
        "[-c N] [--api-key KEY]",
        "An OpenAI-compatible HTTP server: POST /v1/chat/completions and /v1/completions "
        "(stream: server-sent events), GET /v1/models, POST /tokenize and /detokenize, GET and "
        "POST "
        "/lora-adapters (adapters of --lora; a request's \"lora\" sets its own scales) (with an "
        "encoder-only model, or --embedding, POST /v1/embeddings instead of the completions); for "
        "operators GET /health (readiness and load: 503 while the model loads, with "
        "?fail_on_no_slot when every slot is busy, and while draining), GET /metrics "
        "(--metrics) and GET /slots, as llama-server; llama-server's POST /completion (n_probs), "
        "POST /apply-template and POST /slots/{id}?action=save|restore|erase "
        "(--slot-save-path). Several models (-m again, or --models-dir): requests name theirs "
        "in \"model\", each loads on first use, the least recently used unloads past "
        "--models-max; POST /models/load and /models/unload. The port answers /health from the "
        "start. Requests run in -np slots decoded together (continuous batching); a "
        "request gives the same tokens alone or with others (same seed). A prompt reuses the "
        "longest prefix a free slot's cache holds (request field cache_prompt, default true; "
        "usage.prompt_tokens_details.cached_tokens). SIGINT/SIGTERM stop "
        "taking requests, finish those in flight, and exit.",
        args,
        .epilog = "example: vkformer serve -m models/kjv-gpt -np 4 --port 8080\n"
                  "         curl http://127.0.0.1:8080/v1/completions -d '{\"prompt\": \"In the "
                  "beginning\", \"max_tokens\": 16}'"};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (!models.n && !models_dir)
        return vkf_usage_error("serve",
                               "--model PATH (or -hf NAME, or --models-dir DIR) is required");
    model = models.n ? models.v[0] : NULL;
    int router = models_dir || models.n > 1;
    if (slot_save_path) {
        DIR *sd = opendir(slot_save_path);
        if (!sd)
            return vkf_usage_error("serve", "--slot-save-path %s: %s (expected a directory)",
                                   slot_save_path, strerror(errno));
        closedir(sd);
    }
    if (router && lo.n_lora)
        return vkf_usage_error("serve", "--lora/--lora-scaled adapt one base model; a server for "
                                        "several models (-m given again, --models-dir) takes "
                                        "none: serve the adapted model on its own");
    if (router && alias)
        return vkf_usage_error("serve", "-a/--alias names one model; with several, each is "
                                        "named by its file (less .gguf)");
    if (draft_path && !spec_type_given) spec_type = VKF_SPEC_DRAFT;
    if (draft_path && spec_type != VKF_SPEC_DRAFT)
        return vkf_usage_error("serve", "-md %s is a draft model, but --spec-type is not draft",
                               draft_path);
    if (spec_type == VKF_SPEC_DRAFT && !draft_path)
        return vkf_usage_error("serve", "--spec-type draft needs a draft model: -md PATH");
    if (draft_path && router)
        return vkf_usage_error("serve", "-md drafts for one model; a server for several models "
                                        "(-m given again, --models-dir) takes none");
    if (spec_given && spec_type == VKF_SPEC_NONE)
        return vkf_usage_error("serve",
                               "--draft-* and --spec-* flags need --spec-type ngram or -md PATH");
    if (spec_type != VKF_SPEC_NONE && spd.n_max < 1)
        return vkf_usage_error("serve", "--draft-max %d: at least 1 token must be drafted per step",
                               spd.n_max);
    if (spec_type != VKF_SPEC_NONE && (spd.n_min < 0 || spd.n_min > spd.n_max))
        return vkf_usage_error("serve", "--draft-min %d must be in [0, --draft-max %d]", spd.n_min,
                               spd.n_max);
    srv_log_set_format(log_format);

    /* the signals go to sigwait below, not to any thread */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that leaves mid-stream is a failed write, not a death */

    /* the port first: one in use is said at once, and /health answers while the model loads */
    int listen_fd = -1;
    char berr[256];
    if (srv_http_bind(host, port, &listen_fd, berr, sizeof berr) != VKF_OK)
        return srv_log_error("%s", berr);
    srv_http_params hp = {.host = host,
                          .port = port,
                          .listen_fd = listen_fd,
                          .api_key = api_key,
                          .max_body = (size_t)max_body_kib * 1024,
                          .max_connections = np + queue + 64,
                          .timeout_s = timeout_s,
                          .metrics = metrics,
                          .no_slots = !slots,
                          .slot_save_path = slot_save_path};
    srv_http *h;
    if (srv_http_start(&hp, NULL, NULL, &h) != VKF_OK) {
        close(listen_fd);
        return srv_log_error("starting the HTTP server on %s port %d failed", host, port);
    }
    /* the options of a load (the router copies it per model, naming the model and its alias;
     * it takes no adapters nor draft model: refused above) */
    loader l = {.model = model,
                .lo = &lo,
                .alias = alias,
                .cp = cp,
                .np = np,
                .n_ctx = n_ctx,
                .ctk = ctk,
                .ctv = ctv,
                .max_tokens = max_tokens,
                .queue = queue,
                .embedding = embedding,
                .spm_infill = spm_infill,
                .spec_ngram = spec_type == VKF_SPEC_NGRAM,
                .draft_max = spd.n_max,
                .draft_min = spd.n_min,
                .ngram_n = spd.ngram_n,
                .draft_path = draft_path,
                .draft_p_min = spd.p_min};
    if (router) return serve_router(h, &sigs, &l, &models, models_dir, models_max, host);
    srv_log_notice("loading %s; http://%s:%d/health answers 503 until it is ready", model, host,
                   srv_http_port(h));
    pthread_t lt;
    if (pthread_create(&lt, NULL, loader_main, &l) != 0) {
        srv_http_stop(h);
        return srv_log_error("cannot start the loader thread");
    }
    /* a signal while the model loads: nothing is in flight, so stop at once */
    while (!__atomic_load_n(&l.done, __ATOMIC_ACQUIRE)) {
        struct timespec tick = {0, 50 * 1000000L};
        int sig = sigtimedwait(&sigs, NULL, &tick);
        if (sig > 0) {
            srv_log_notice("%s while loading the model: stopping",
                           sig == SIGINT ? "SIGINT" : "SIGTERM");
            _exit(0);
        }
    }
    pthread_join(lt, NULL);
    if (l.rc) {
        srv_http_stop(h);
        return l.rc;
    }
    /* generate's memory line: what the weights and the slots' KV cache take (activations
     * come as prompts of new lengths build their graphs) */
    vkf_memory_info mi;
    if (l.e && srv_engine_memory(l.e, &mi) == VKF_OK)
        srv_log_notice("memory: weights %.1f MiB (%.1f MiB used in place from the file), KV cache "
                       "%.1f MiB (%d slot%s x %d tokens)",
                       (double)mi.weights / 1048576.0, (double)mi.weights_in_place / 1048576.0,
                       (double)mi.kv_cache / 1048576.0, np, np == 1 ? "" : "s", l.cfg.n_ctx);
    else if (!l.e && vkf_model_memory(l.m, &mi) == VKF_OK)
        srv_log_notice("memory: weights %.1f MiB (%.1f MiB used in place from the file)",
                       (double)mi.weights / 1048576.0, (double)mi.weights_in_place / 1048576.0);
    srv_http_ready(h, &l.cfg, l.e);
    if (l.emb) { /* embedding mode: no slots to drain */
        srv_log_notice("%s on %s: listening on http://%s:%d (embeddings: %d floats, pooling %s, "
                       "%snormalized, inputs up to %d tokens%s)",
                       l.cfg.model_name, vkf_context_device_name(l.ctx), host, srv_http_port(h),
                       l.d.pooling == VKF_POOLING_RANK ? l.d.n_cls_out : l.d.d_model,
                       vkf_pooling_name((vkf_pooling)l.d.pooling), l.d.normalize ? "" : "not ",
                       l.d.n_embd_max, l.d.n_cls_out > 0 ? "; POST /v1/rerank" : "");
        int sig = 0;
        sigwait(&sigs, &sig);
        srv_log_notice("%s: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
        srv_http_drain(h);
        sleep_ms(200);
        srv_http_stop(h);
        srv_embedder_free(l.emb);
        vkf_gen_lora_free(&lo);
        vkf_gen_free(&lo);
        vkf_model_free(l.m);
        vkf_context_free(l.ctx);
        srv_log_notice("stopped");
        return 0;
    }
    srv_log_notice("%s on %s: listening on http://%s:%d (%d slot%s of %d tokens)", l.cfg.model_name,
                   vkf_context_device_name(l.ctx), host, srv_http_port(h), np, np > 1 ? "s" : "",
                   l.cfg.n_ctx);
    vkf_split_device sd[VKF_MAX_DEVICES]; /* a layer split (-dev A,B): what went where */
    int nsd = vkf_model_split(l.m, sd, VKF_MAX_DEVICES);
    for (int i = 0; nsd > 1 && i < nsd; i++)
        srv_log_notice("split device %d (%s): layers [%d, %d)%s%s, weights %.2f MiB", i,
                       sd[i].device, sd[i].layer0, sd[i].layer0 + sd[i].n_layers,
                       sd[i].embeddings ? ", embeddings" : "", sd[i].output ? ", output head" : "",
                       (double)sd[i].weight_bytes / 1048576.0);

    int sig = 0;
    sigwait(&sigs, &sig);
    srv_log_notice("%s: finishing the requests in flight (again to stop at once)",
                   sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv_http_drain(h);
    /* drain: wait for the slots and the queue to empty, a second signal cuts it short */
    struct timespec zero = {0, 0};
    for (;;) {
        int busy, queued;
        srv_engine_load(l.e, &busy, &queued);
        if (!busy && !queued) break;
        if (sigtimedwait(&sigs, NULL, &zero) > 0) {
            srv_log_notice("stopping now");
            _exit(1);
        }
        sleep_ms(20);
    }
    sleep_ms(200); /* the last events reach their clients */
    srv_http_stop(h);
    srv_engine_stop(l.e);
    vkf_gen_lora_free(&lo);
    vkf_gen_free(&lo);
    vkf_model_free(l.dm);
    vkf_model_free(l.m);
    vkf_context_free(l.ctx);
    srv_log_notice("stopped");
    return 0;
}
