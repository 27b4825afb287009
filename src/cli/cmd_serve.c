/* vkformer serve: an OpenAI-compatible HTTP server. Loads the model, starts the engine (slots)
 * and libmicrohttpd, prints the address, then waits for SIGINT/SIGTERM: it stops taking
 * requests (503), lets those in flight and queued finish, and exits 0. A second signal exits
 * at once. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cli.h"
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

/* Embedding mode: an encoder-only model, POST /v1/embeddings (serve/embeddings.c), no slots. */
static int serve_embeddings(vkf_model *m, vkf_context *ctx, const char *model,
                            const vkf_model_desc *d, const char *alias, const char *host,
                            int32_t port, const char *api_key, int32_t max_body_kib,
                            sigset_t *sigs) {
    int rc = 1;
    srv_embedder *emb = NULL;
    srv_http *h = NULL;
    if (!d->encoder_only) {
        fprintf(stderr,
                "vkformer: serve: --embedding: %s is a %s model; vkformer computes embeddings "
                "with encoder-only models (bert, nomic-bert)\n",
                model, d->architecture);
        goto done;
    }
    if (srv_embedder_create(m, &emb) != VKF_OK) {
        rc = vkf_cli_fail("serve: embeddings");
        goto done;
    }
    srv_config cfg = {.m = m, .emb = emb, .model_name = alias ? alias : base_name(model)};
    srv_http_params hp = {.host = host,
                          .port = port,
                          .api_key = api_key,
                          .max_body = (size_t)max_body_kib * 1024,
                          .max_connections = 64};
    vkf_status st = srv_http_start(&hp, &cfg, NULL, &h);
    if (st != VKF_OK) {
        fprintf(stderr, "vkformer: serve: cannot listen on %s port %d (%s)\n", host, port,
                st == VKF_ERROR_INVALID_ARGUMENT ? "not an IPv4 or IPv6 address"
                                                 : "in use, or not allowed");
        goto done;
    }
    fprintf(stderr,
            "vkformer: serve: %s on %s: listening on http://%s:%d (embeddings: %d floats, "
            "pooling %s, %snormalized, inputs up to %d tokens)\n",
            cfg.model_name, vkf_context_device_name(ctx), host, srv_http_port(h), d->d_model,
            vkf_pooling_name((vkf_pooling)d->pooling), d->normalize ? "" : "not ", d->n_embd_max);
    fflush(stderr);
    int sig = 0;
    sigwait(sigs, &sig);
    fprintf(stderr, "vkformer: serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv_http_drain(h);
    sleep_ms(200);
    srv_http_stop(h);
    fprintf(stderr, "vkformer: serve: stopped\n");
    rc = 0;
done:
    srv_embedder_free(emb);
    vkf_model_free(m);
    vkf_context_free(ctx);
    return rc;
}

int vkf_cmd_serve(int argc, char **argv) {
    const char *model = NULL, *host = "127.0.0.1", *api_key = NULL, *alias = NULL;
    int32_t port = 8080, np = 1, n_ctx = 0, max_tokens = 4096, queue = 16, max_body_kib = 1024;
    int embedding = 0;
    vkf_context_params cp = {0};
    vkf_arg args[] = {
        {"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH", .required = 1,
         .help = "model directory or .gguf file"},
        {"--host", VKF_ARG_STR, &host, .metavar = "ADDR",
         .help = "address to listen on (default 127.0.0.1; 0.0.0.0 or :: for every interface)"},
        {"--port", VKF_ARG_INT, &port, .min = 0, .max = 65535, .metavar = "N",
         .help = "TCP port (default 8080; 0: any free port, printed at start)"},
        {"-np|--parallel", VKF_ARG_INT, &np, .min = 1, .max = 64, .metavar = "N",
         .help = "slots: requests decoded together in one batched step (default 1)"},
        {"-c|--ctx-size", VKF_ARG_INT, &n_ctx, .min = 0, .max = 1 << 24, .metavar = "N",
         .help = "context of all slots together, tokens, as llama-server: each slot gets N / np "
                 "(default 0: the model's context per slot)"},
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
        {"--embedding|--embeddings", VKF_ARG_SET, &embedding,
         .help = "serve POST /v1/embeddings (on by itself for an encoder-only model such as "
                 "bert)"},
        VKF_ARGS_BACKEND(&cp),
        {0}};
    vkf_cmd_spec spec = {
        "serve", "-m MODEL [--host 127.0.0.1] [--port 8080] [-np N] [-c N] [--api-key KEY]",
        "An OpenAI-compatible HTTP server: POST /v1/chat/completions and /v1/completions "
        "(stream: server-sent events), GET /v1/models, GET /health, POST /tokenize and "
        "/detokenize; with an encoder-only model (or --embedding) POST /v1/embeddings instead "
        "of the completions. Requests run in -np slots decoded together (continuous batching); a "
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

    /* the signals go to sigwait below, not to any thread */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that leaves mid-stream is a failed write, not a death */

    /* the port first: one in use is said at once, not after the model has loaded */
    int listen_fd = -1;
    char berr[256];
    if (srv_http_bind(host, port, &listen_fd, berr, sizeof berr) != VKF_OK) {
        fprintf(stderr, "vkformer: serve: %s\n", berr);
        return 1;
    }
    vkf_context *ctx;
    if (vkf_cli_context(&cp, &ctx) != VKF_OK) {
        close(listen_fd);
        return vkf_cli_fail("serve");
    }
    /* -c over the slots: positions per slot, past the training context where they are computed
     * (RoPE), as generate's -c */
    vkf_model_params mp = {.path = model, .n_ctx = n_ctx ? n_ctx / np : 0};
    vkf_model *m;
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        vkf_context_free(ctx);
        close(listen_fd);
        return vkf_cli_fail("serve: loading the model");
    }
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    if (d.encoder_only || embedding)
        return serve_embeddings(m, ctx, model, &d, alias, host, port, api_key, max_body_kib, &sigs);
    if (d.encoder_decoder || !d.has_tokenizer) {
        fprintf(stderr,
                "vkformer: serve: %s is %s; serve needs a decoder-only model with a tokenizer\n",
                model, d.encoder_decoder ? "an encoder-decoder model" : "without a tokenizer");
        vkf_model_free(m);
        vkf_context_free(ctx);
        close(listen_fd);
        return 1;
    }
    int32_t slot_ctx = n_ctx ? n_ctx / np : d.n_ctx;
    if (slot_ctx > d.n_ctx) slot_ctx = d.n_ctx;
    if (slot_ctx < 2) {
        vkf_model_free(m);
        vkf_context_free(ctx);
        close(listen_fd);
        return vkf_usage_error("serve", "-c %d over %d slots leaves %d tokens per slot", n_ctx, np,
                               slot_ctx);
    }
    srv_config cfg = {.m = m,
                      .model_name = alias ? alias : base_name(model),
                      .max_tokens = max_tokens,
                      .n_ctx = slot_ctx,
                      .default_template = vkf_model_chat_template(m) == NULL};
    if (cfg.default_template)
        fprintf(stderr,
                "vkformer: serve: %s has no chat template: /v1/chat/completions uses ChatML "
                "(llama.cpp's default)\n",
                model);
    srv_engine_params ep = {.n_slots = np, .n_ctx = slot_ctx, .queue_max = queue};
    srv_engine *e;
    if (srv_engine_start(m, &ep, &e) != VKF_OK) {
        vkf_model_free(m);
        vkf_context_free(ctx);
        close(listen_fd);
        return vkf_cli_fail("serve: starting the slots");
    }
    srv_http_params hp = {.host = host,
                          .port = port,
                          .listen_fd = listen_fd,
                          .api_key = api_key,
                          .max_body = (size_t)max_body_kib * 1024,
                          .max_connections = np + queue + 64};
    srv_http *h;
    vkf_status st = srv_http_start(&hp, &cfg, e, &h);
    if (st != VKF_OK) {
        fprintf(stderr, "vkformer: serve: starting the HTTP server on %s port %d failed\n", host,
                port);
        srv_engine_stop(e);
        vkf_model_free(m);
        vkf_context_free(ctx);
        close(listen_fd);
        return 1;
    }
    fprintf(stderr,
            "vkformer: serve: %s on %s: listening on http://%s:%d (%d slot%s of %d tokens)\n",
            cfg.model_name, vkf_context_device_name(ctx), host, srv_http_port(h), np,
            np > 1 ? "s" : "", slot_ctx);
    fflush(stderr);

    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr,
            "vkformer: serve: %s: finishing the requests in flight (again to stop at once)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv_http_drain(h);
    /* drain: wait for the slots and the queue to empty, a second signal cuts it short */
    struct timespec zero = {0, 0};
    for (;;) {
        int busy, queued;
        srv_engine_load(e, &busy, &queued);
        if (!busy && !queued) break;
        if (sigtimedwait(&sigs, NULL, &zero) > 0) {
            fprintf(stderr, "vkformer: serve: stopping now\n");
            _exit(1);
        }
        sleep_ms(20);
    }
    sleep_ms(200); /* the last events reach their clients */
    srv_http_stop(h);
    srv_engine_stop(e);
    vkf_model_free(m);
    vkf_context_free(ctx);
    fprintf(stderr, "vkformer: serve: stopped\n");
    return 0;
}
