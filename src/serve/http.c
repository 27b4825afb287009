/* HTTP for vkformer serve over libmicrohttpd: one thread per connection (a request blocks its
 * own thread while the engine generates), bodies bounded (413), an optional API key (401),
 * OpenAI-style JSON errors, and server-sent events for stream: true.
 *
 * The port is served from before the model loads: until srv_http_ready, /health answers 503
 * {"status": "loading model"} and every other endpoint 503 (llama-server's behaviour), so a
 * load balancer sends nothing here yet. Every request ends in one srv_access record: the
 * access log line and the request counters of /metrics.
 *
 * A client that goes away is noticed two ways: a failed write (libmicrohttpd then frees the
 * streaming response, which cancels the request) and, while waiting, a peek at the socket that
 * reads end-of-file. Either cancels the request; the engine frees its slot at the next step. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "serve/serve.h"

struct srv_http {
    struct MHD_Daemon *d;
    srv_http_params p;
    const srv_config *c; /* NULL until ready */
    srv_engine *e;       /* NULL until ready */
    int ready;           /* c and e are set (atomic: written once, read by every connection) */
    volatile int draining;
    pthread_mutex_t id_mu;
    unsigned long next_id;
    srv_metrics *metrics;
    srv_router *rt; /* several models (srv_http_ready_router), else NULL */
};

/* per connection request state (libmicrohttpd's con_cls) */
typedef struct conn {
    srv_http *h;
    char *body;
    size_t len, cap;
    int too_large;
    int fd;
    srv_access acc; /* logged when the request completes */
    int acc_handed; /* acc went out with a whole answer, or a stream took it over (it logs when
                       the stream ends) */
    /* the model this request is for: the server's one, or the router's model it names (held
     * through lease until the request completes) */
    const srv_config *cfg;
    srv_engine *eng;
    srv_model *lease;
} conn;

/* The request being answered on this thread (libmicrohttpd runs each connection on its own
 * thread: MHD_USE_THREAD_PER_CONNECTION), for the status of its access record. */
static _Thread_local conn *tl_conn;

/* a streaming response: owned by libmicrohttpd's response (freed by sse_free) */
typedef struct stream {
    srv_http *h;
    const srv_config *cfg; /* the request's model */
    srv_engine *e;
    srv_model *lease; /* its hold on a router's model (released when the stream ends), or NULL */
    srv_req *r;
    int fd;
    int next_ev; /* events formatted so far */
    int sent_final;
    int sent_any; /* a chunk went out (the role rides on the first) */
    char *out;    /* formatted bytes not yet handed to libmicrohttpd */
    size_t out_len, out_off, out_cap;
    srv_access acc; /* the request's access record, logged when the stream ends */
    int logged;     /* acc went out */
} stream;

/* ------------------------------------------------------------------ access records */

static void access_done(srv_http *h, const srv_access *a) {
    srv_metrics_count(h->metrics, a->route, a->status);
    srv_log_access(a);
}

/* the counts of r (done, or cancelled by the connection) into a */
static void access_tokens(srv_access *a, const srv_req *r) {
    a->has_tokens = 1;
    a->stream = r->stream;
    snprintf(a->id, sizeof a->id, "%s", r->id);
    a->n_prompt = r->n_prompt;
    a->n_cached = r->pub_cached;
    a->n_gen = r->pub_gen;
    a->finish = r->done ? r->finish : SRV_FINISH_CANCELLED;
}

/* A whole answer was queued on this thread's connection: its access record goes out now, before
 * libmicrohttpd sends it (a client that has the answer finds it counted in /metrics). */
static void answered(int status, const char *body) {
    conn *c = tl_conn;
    if (!c || c->acc_handed) return;
    c->acc.status = status;
    if (status >= 400) { /* the reason the client was given: {"error": {"message": ...}} */
        cJSON *j = cJSON_Parse(body);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(j, "error"), "message");
        snprintf(c->acc.reason, sizeof c->acc.reason, "%s",
                 cJSON_IsString(m) ? m->valuestring : "");
        cJSON_Delete(j);
    }
    c->acc_handed = 1;
    access_done(c->h, &c->acc);
}

/* ------------------------------------------------------------------ responses */

static enum MHD_Result send_json(struct MHD_Connection *mc, int status, char *json) {
    if (!json)
        json = strdup(
            "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"code\":500}}");
    if (!json) return MHD_NO;
    struct MHD_Response *res =
        MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_MUST_FREE);
    if (!res) {
        free(json);
        return MHD_NO;
    }
    MHD_add_response_header(res, "Content-Type", "application/json");
    MHD_add_response_header(res, "Access-Control-Allow-Origin", "*");
    answered(status, json); /* before the response owns (and may free) the body */
    enum MHD_Result ok = MHD_queue_response(mc, (unsigned)status, res);
    MHD_destroy_response(res);
    return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *mc, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum MHD_Result send_error(struct MHD_Connection *mc, int status, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return send_json(mc, status, srv_api_error(status, msg));
}

/* 1 when the peer has closed its side (end-of-file on a peek) or the socket failed */
static int peer_gone(int fd) {
    if (fd < 0) return 0;
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return 1;
    return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

/* ------------------------------------------------------------------ server-sent events */

static int append_out(stream *c, const char *s) {
    if (!s) return -1;
    size_t n = strlen(s);
    if (c->out_off == c->out_len) c->out_off = c->out_len = 0;
    if (c->out_len + n > c->out_cap) {
        size_t nc = (c->out_len + n) * 2;
        char *o = realloc(c->out, nc);
        if (!o) return -1;
        c->out = o;
        c->out_cap = nc;
    }
    memcpy(c->out + c->out_len, s, n);
    c->out_len += n;
    return 0;
}

/* the stream's access record, once: at its end of stream, before libmicrohttpd sends the last
 * chunk (a client that has the whole stream finds it in /metrics), or when it is freed */
static void stream_log(stream *c) {
    if (c->logged) return;
    c->logged = 1;
    srv_engine_lock(c->e);
    access_tokens(&c->acc, c->r);
    srv_engine_unlock(c->e);
    access_done(c->h, &c->acc);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream *c = cls;
    srv_engine *e = c->e;
    while (c->out_off == c->out_len) {
        if (c->sent_final) {
            stream_log(c);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        srv_engine_wait(e, c->r, 100); /* returns with the engine locked */
        srv_req *r = c->r;
        int fail = 0;
        for (; c->next_ev < r->n_ev && !fail; c->next_ev++) {
            if (r->ev[c->next_ev].len == 0 && !r->logprobs) continue;
            char *ev = srv_api_chunk(c->cfg, r, c->next_ev, !c->sent_any);
            c->sent_any = 1;
            fail = append_out(c, ev) != 0;
            free(ev);
        }
        if (r->done && !fail) {
            char *ev = NULL;
            if (r->finish == SRV_FINISH_ERROR) {
                char *js = srv_api_error(500, r->err);
                size_t n = js ? strlen(js) + 16 : 0;
                ev = js ? malloc(n) : NULL;
                if (ev) snprintf(ev, n, "data: %s\n\n", js);
                free(js);
            } else {
                ev = srv_api_chunk(c->cfg, r, -1, !c->sent_any);
            }
            /* llama-server's /completion stream ends at its stop: true event, no [DONE] */
            fail = append_out(c, ev) != 0 ||
                   (!r->native && !r->infill && append_out(c, "data: [DONE]\n\n") != 0);
            free(ev);
            c->sent_final = 1;
        }
        srv_engine_unlock(e);
        if (fail) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (c->out_off == c->out_len && peer_gone(c->fd)) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = c->out_len - c->out_off < max ? c->out_len - c->out_off : max;
    memcpy(buf, c->out + c->out_off, n);
    c->out_off += n;
    return (ssize_t)n;
}

/* libmicrohttpd is done with the stream (finished, or the client went away): cancel */
static void sse_free(void *cls) {
    stream *c = cls;
    stream_log(c);
    srv_req_release(c->e, c->r);
    if (c->lease) srv_router_release(c->h->rt, c->lease);
    free(c->out);
    free(c);
}

/* ------------------------------------------------------------------ several prompts */

/* "prompt": [p0, p1, ...] (OpenAI: one choice per prompt): one request per prompt, submitted
 * together (they share the slots as separate requests would), answered as one response or one
 * stream whose chunks carry each choice's index; the usage, summed, comes last. */
typedef struct multi {
    srv_http *h;
    const srv_config *cfg; /* the request's model */
    srv_engine *e;
    srv_req **rs;
    int n, fd;
    int *next_ev, *final; /* per request: events formatted; final chunk sent */
    int sent_done;        /* the usage and [DONE] went */
    stream out;           /* only its output buffer is used */
} multi;

static void multi_free(multi *m, int release) {
    for (int i = 0; release && i < m->n; i++)
        if (m->rs[i]) srv_req_release(m->e, m->rs[i]);
    free(m->rs);
    free(m->next_ev);
    free(m->final);
    free(m->out.out);
    if (m->out.lease) srv_router_release(m->h->rt, m->out.lease);
    free(m);
}

/* waits for news on the first request not yet done; returns with the engine locked */
static void multi_wait(multi *m, int timeout_ms) {
    int k = 0;
    srv_engine_lock(m->e);
    while (k < m->n - 1 && m->rs[k]->done)
        k++;
    srv_engine_unlock(m->e);
    srv_engine_wait(m->e, m->rs[k], timeout_ms);
}

/* the counts of every prompt's request, summed, into a (the engine locked) */
static void access_tokens_multi(srv_access *a, const multi *m) {
    access_tokens(a, m->rs[0]);
    for (int i = 1; i < m->n; i++) {
        const srv_req *r = m->rs[i];
        a->n_prompt += r->n_prompt;
        a->n_cached += r->pub_cached;
        a->n_gen += r->pub_gen;
        if (!r->done) a->finish = SRV_FINISH_CANCELLED;
    }
}

/* the stream's access record, once (as stream_log) */
static void multi_log(multi *m) {
    if (m->out.logged) return;
    m->out.logged = 1;
    srv_engine_lock(m->e);
    access_tokens_multi(&m->out.acc, m);
    srv_engine_unlock(m->e);
    access_done(m->h, &m->out.acc);
}

static ssize_t sse_read_multi(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    multi *m = cls;
    stream *o = &m->out;
    while (o->out_off == o->out_len) {
        if (m->sent_done) {
            multi_log(m);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        multi_wait(m, 100);
        int fail = 0, all = 1;
        for (int i = 0; i < m->n && !fail; i++) {
            srv_req *r = m->rs[i];
            for (; m->next_ev[i] < r->n_ev && !fail; m->next_ev[i]++) {
                if (r->ev[m->next_ev[i]].len == 0 && !r->logprobs) continue;
                char *ev = srv_api_chunk(m->cfg, r, m->next_ev[i], 0);
                fail = append_out(o, ev) != 0;
                free(ev);
            }
            if (r->done && !m->final[i] && !fail) {
                char *ev = NULL;
                if (r->finish == SRV_FINISH_ERROR) {
                    char *js = srv_api_error(500, r->err);
                    size_t n = js ? strlen(js) + 16 : 0;
                    if ((ev = js ? malloc(n) : NULL)) snprintf(ev, n, "data: %s\n\n", js);
                    free(js);
                } else {
                    ev = srv_api_chunk(m->cfg, r, -1, 0);
                }
                fail = append_out(o, ev) != 0;
                free(ev);
                m->final[i] = 1;
            }
            all &= m->final[i];
        }
        if (all && !fail) {
            char *ev = srv_api_usage_chunk(m->cfg, m->rs, m->n);
            fail = append_out(o, ev) != 0 || append_out(o, "data: [DONE]\n\n") != 0;
            free(ev);
            m->sent_done = 1;
        }
        srv_engine_unlock(m->e);
        if (fail) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (o->out_off == o->out_len && peer_gone(m->fd)) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = o->out_len - o->out_off < max ? o->out_len - o->out_off : max;
    memcpy(buf, o->out + o->out_off, n);
    o->out_off += n;
    return (ssize_t)n;
}

static void sse_free_multi(void *cls) {
    multi *m = cls;
    multi_log(m);
    multi_free(m, 1);
}

/* r0: prompt 0, parsed; r0->n_choices > 1 */
static enum MHD_Result completion_multi(struct MHD_Connection *mc, conn *c, srv_req *r0) {
    srv_http *h = c->h;
    int n = r0->n_choices, submitted = 0;
    multi *m = calloc(1, sizeof *m);
    if (m) {
        m->rs = calloc((size_t)n, sizeof *m->rs);
        m->next_ev = calloc((size_t)n, sizeof *m->next_ev);
        m->final = calloc((size_t)n, sizeof *m->final);
    }
    if (!m || !m->rs || !m->next_ev || !m->final) {
        srv_req_release(c->eng, r0);
        srv_req_release(c->eng, r0);
        if (m) multi_free(m, 0);
        return send_error(mc, 500, "out of host memory");
    }
    m->h = h, m->cfg = c->cfg, m->e = c->eng, m->n = n, m->fd = c->fd, m->rs[0] = r0;
    char err[768];
    enum MHD_Result res = MHD_NO;
    int status = 0;
    for (int i = 1; i < n && !status; i++) {
        srv_req *r = srv_req_new();
        if (!r) {
            status = 500, snprintf(err, sizeof err, "out of host memory");
            break;
        }
        m->rs[i] = r;
        r->index = i;
        if (srv_api_parse(c->cfg, 0, c->body ? c->body : "", c->len, r, err, sizeof err) != 0)
            status = 400;
        snprintf(r->id, sizeof r->id, "%s", r0->id); /* one request, one id */
        r->created = r0->created;
        r->task = r0->task;
    }
    for (int i = 0; i < n && !status; i++) {
        int q = h->draining ? -2 : srv_engine_submit(c->eng, m->rs[i]);
        if (q == 0) submitted++;
        if (q != 0) {
            status = 503;
            snprintf(err, sizeof err, "%s",
                     q == -2 ? "the server is shutting down"
                             : "every slot is busy and the queue is full for this request's "
                               "prompts; retry later");
        }
    }
    if (status) { /* the engine's references of the requests it never saw go too */
        for (int i = submitted; i < n; i++)
            if (m->rs[i]) srv_req_release(c->eng, m->rs[i]);
        multi_free(m, 1);
        return send_error(mc, status, "%s", err);
    }
    if (r0->stream) {
        struct MHD_Response *sr = MHD_create_response_from_callback(
            MHD_SIZE_UNKNOWN, 4096, sse_read_multi, m, sse_free_multi);
        if (!sr) {
            multi_free(m, 1);
            return MHD_NO;
        }
        MHD_add_response_header(sr, "Content-Type", "text/event-stream");
        MHD_add_response_header(sr, "Cache-Control", "no-cache");
        MHD_add_response_header(sr, "X-Accel-Buffering", "no"); /* nginx: unbuffered */
        MHD_add_response_header(sr, "Access-Control-Allow-Origin", "*");
        m->out.acc = c->acc; /* logged by sse_free_multi when the stream ends */
        if (c->lease) srv_router_retain(h->rt, m->out.lease = c->lease);
        m->out.acc.status = MHD_HTTP_OK;
        c->acc_handed = 1;
        res = MHD_queue_response(mc, MHD_HTTP_OK, sr);
        MHD_destroy_response(sr);
        return res;
    }
    for (;;) { /* whole response: wait for every choice, watching for a client that leaves */
        multi_wait(m, 100);
        int done = 1, failed = -1;
        for (int i = 0; i < n; i++) {
            done &= m->rs[i]->done;
            if (m->rs[i]->done && m->rs[i]->finish == SRV_FINISH_ERROR) failed = i;
        }
        if (failed >= 0) snprintf(err, sizeof err, "%s", m->rs[failed]->err);
        int gone = !done && peer_gone(c->fd);
        if (done || gone) access_tokens_multi(&c->acc, m);
        srv_engine_unlock(c->eng);
        if (done) {
            res = failed >= 0 ? send_error(mc, 500, "generation failed: %s", err)
                              : send_json(mc, 200, srv_api_response_multi(c->cfg, m->rs, n));
            break;
        }
        if (gone) {
            c->acc.status = 499; /* nginx's "client closed request": nothing was sent */
            break;               /* MHD_NO: close the connection */
        }
    }
    multi_free(m, 1);
    return res;
}

/* ------------------------------------------------------------------ completions */

/* chat 1: /v1/chat/completions, 0: /v1/completions, 2: /completion (llama-server's shape);
 * infill: /infill's completion (its prompt built by serve/infill.c) */
static enum MHD_Result completion(struct MHD_Connection *mc, conn *c, int chat, int infill) {
    srv_http *h = c->h;
    srv_req *r = srv_req_new();
    if (!r) return send_error(mc, 500, "out of host memory");
    char err[768];
    const char *body = c->body ? c->body : "";
    if ((chat == 2 ? srv_native_parse(c->cfg, body, c->len, r, err, sizeof err)
                   : srv_api_parse(c->cfg, chat, body, c->len, r, err, sizeof err)) != 0) {
        srv_req_release(c->eng, r); /* the engine's reference too: it never saw r */
        srv_req_release(c->eng, r);
        return send_error(mc, 400, "%s", err);
    }
    r->infill = infill;
    pthread_mutex_lock(&h->id_mu);
    unsigned long id = ++h->next_id;
    pthread_mutex_unlock(&h->id_mu);
    snprintf(r->id, sizeof r->id, "%s-%lx%lu", chat == 1 ? "chatcmpl" : "cmpl",
             (unsigned long)time(NULL), id);
    r->created = (long)time(NULL);
    r->task = (long)id;
    if (r->n_choices > 1) return completion_multi(mc, c, r);
    int q = h->draining ? -2 : srv_engine_submit(c->eng, r);
    if (q != 0) {
        srv_req_release(c->eng, r);
        srv_req_release(c->eng, r);
        return send_error(mc, 503,
                          q == -2 ? "the server is shutting down"
                                  : "every slot is busy and the queue is full; retry later");
    }
    if (r->stream) {
        stream *st = calloc(1, sizeof *st);
        struct MHD_Response *res =
            st ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, st, sse_free)
               : NULL;
        if (!res) {
            free(st);
            srv_req_release(c->eng, r);
            return MHD_NO;
        }
        st->h = h;
        st->cfg = c->cfg;
        st->e = c->eng;
        if (c->lease) srv_router_retain(h->rt, st->lease = c->lease);
        st->r = r;
        st->fd = c->fd;
        st->acc = c->acc;
        st->acc.status = MHD_HTTP_OK;
        c->acc_handed = 1;
        MHD_add_response_header(res, "Content-Type", "text/event-stream");
        MHD_add_response_header(res, "Cache-Control", "no-cache");
        /* nginx: pass the events on as they come (deploy/nginx.conf turns buffering off too) */
        MHD_add_response_header(res, "X-Accel-Buffering", "no");
        MHD_add_response_header(res, "Access-Control-Allow-Origin", "*");
        enum MHD_Result ok = MHD_queue_response(mc, MHD_HTTP_OK, res);
        MHD_destroy_response(res);
        return ok;
    }
    /* whole response: wait, watching for a client that leaves */
    for (;;) {
        srv_engine_wait(c->eng, r, 100);
        int done = r->done;
        srv_engine_unlock(c->eng);
        if (done) break;
        if (peer_gone(c->fd)) {
            srv_engine_lock(c->eng);
            access_tokens(&c->acc, r);
            srv_engine_unlock(c->eng);
            c->acc.status = 499; /* nginx's "client closed request": nothing was sent */
            srv_req_release(c->eng, r);
            return MHD_NO; /* close the connection */
        }
    }
    access_tokens(&c->acc, r); /* r is done: its fields no longer change */
    enum MHD_Result ok;
    if (r->finish == SRV_FINISH_ERROR)
        ok = send_error(mc, 500, "generation failed: %s", r->err);
    else
        ok = send_json(mc, 200, srv_api_response(c->cfg, r));
    srv_req_release(c->eng, r);
    return ok;
}

/* ------------------------------------------------------------------ endpoints */

static int authorized(srv_http *h, struct MHD_Connection *mc) {
    if (!h->p.api_key) return 1;
    const char *a = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Authorization");
    const char *x = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "X-Api-Key");
    if (x && strcmp(x, h->p.api_key) == 0) return 1;
    if (!a || strncmp(a, "Bearer ", 7) != 0) return 0;
    return strcmp(a + 7, h->p.api_key) == 0;
}

/* whether the query string has key (with or without a value, as llama-server's has_param) */
typedef struct arg_find {
    const char *key;
    int found;
} arg_find;

static enum MHD_Result find_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value) {
    (void)kind;
    (void)value;
    arg_find *f = cls;
    if (key && strcmp(key, f->key) == 0) {
        f->found = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

static int has_arg(struct MHD_Connection *mc, const char *key) {
    arg_find f = {key, 0};
    MHD_get_connection_values(mc, MHD_GET_ARGUMENT_KIND, find_arg, &f);
    return f.found;
}

/* Every handler answers one row of the route table below: url is the path as the client sent
 * it, id the rest of the path after a prefix row's path ("org/name" of /v1/models/org/name),
 * else NULL. The router has checked the API key, readiness, the method and the body's size. */

/* GET /health (public, answered while the model loads) */
static enum MHD_Result on_health(struct MHD_Connection *mc, conn *c, const char *url,
                                 const char *id) {
    (void)url, (void)id;
    srv_http *h = c->h;
    int ready = __atomic_load_n(&h->ready, __ATOMIC_ACQUIRE), no_slot = 0;
    char *js = srv_health_json(ready ? h->c : NULL, ready ? h->e : NULL, ready, h->draining,
                               !h->p.no_slots && has_arg(mc, "include_slots"), &no_slot);
    int unavailable = !ready || h->draining || (no_slot && has_arg(mc, "fail_on_no_slot"));
    return send_json(mc, unavailable ? 503 : 200, js);
}

/* GET /metrics (llama-server's: off unless --metrics, 501 when off) */
static enum MHD_Result on_metrics(struct MHD_Connection *mc, conn *c, const char *url,
                                  const char *id) {
    (void)url, (void)id;
    srv_http *h = c->h;
    if (!h->p.metrics)
        return send_error(mc, 501,
                          "This server does not support metrics endpoint. Start it "
                          "with `--metrics`");
    char *text = srv_metrics_render(h->metrics, c->eng, h->draining);
    if (!text) return send_error(mc, 500, "out of host memory");
    struct MHD_Response *res =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!res) {
        free(text);
        return MHD_NO;
    }
    char start[32];
    snprintf(start, sizeof start, "%.0f", srv_metrics_start(h->metrics));
    MHD_add_response_header(res, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    MHD_add_response_header(res, "Process-Start-Time-Unix", start); /* as llama-server */
    enum MHD_Result ok = MHD_queue_response(mc, MHD_HTTP_OK, res);
    MHD_destroy_response(res);
    answered(MHD_HTTP_OK, NULL);
    return ok;
}

/* GET /slots (llama-server's: on unless --no-slots, 501 when off) */
static enum MHD_Result on_slots(struct MHD_Connection *mc, conn *c, const char *url,
                                const char *id) {
    (void)url, (void)id;
    srv_http *h = c->h;
    if (h->p.no_slots)
        return send_error(mc, 501,
                          "This server does not support slots endpoint (it was started "
                          "with `--no-slots`)");
    if (!c->eng)
        return send_error(mc, 501, "this server serves an embedding model: it has no slots");
    if (has_arg(mc, "fail_on_no_slot")) {
        int busy, queued;
        srv_engine_load(c->eng, &busy, &queued);
        if (busy == srv_engine_n_slots(c->eng)) return send_error(mc, 503, "no slot available");
    }
    char *js = srv_slots_json(c->cfg, c->eng);
    return js ? send_json(mc, 200, js) : send_error(mc, 500, "out of host memory");
}

/* POST /slots/{id}?action=save|restore|erase (slot_files.c) */
static enum MHD_Result on_slot_action(struct MHD_Connection *mc, conn *c, const char *url,
                                      const char *id) {
    (void)url;
    srv_http *h = c->h;
    if (h->p.no_slots)
        return send_error(mc, 501,
                          "This server does not support slots endpoint (it was started "
                          "with `--no-slots`)");
    int status = 500;
    const char *action = MHD_lookup_connection_value(mc, MHD_GET_ARGUMENT_KIND, "action");
    char *js = srv_slot_request(c->eng, h->p.slot_save_path, id, action, c->body, c->len, &status);
    return send_json(mc, status, js);
}

static enum MHD_Result on_models(struct MHD_Connection *mc, conn *c, const char *url,
                                 const char *id) {
    (void)url, (void)id;
    if (c->h->rt) return send_json(mc, 200, srv_router_models_json(c->h->rt));
    return send_json(mc, 200, srv_api_models(c->h->c));
}

/* GET /v1/models/{id}: the id may hold slashes ("org/name", an --alias) */
static enum MHD_Result on_model(struct MHD_Connection *mc, conn *c, const char *url,
                                const char *id) {
    (void)url;
    int status = 500;
    char *js = c->h->rt ? srv_router_model_json(c->h->rt, id, &status)
                        : srv_api_model(c->h->c, id, &status);
    return send_json(mc, status, js);
}

static enum MHD_Result generation(struct MHD_Connection *mc, conn *c, const char *url, int chat) {
    if (c->cfg->emb) /* a 400: the request is wrong for this model (OpenAI's SDKs retry a 5xx) */
        return send_error(mc, 400, "%s: this server serves an embedding model: use /v1/embeddings",
                          url);
    return completion(mc, c, chat, 0);
}

static enum MHD_Result on_chat(struct MHD_Connection *mc, conn *c, const char *url,
                               const char *id) {
    (void)id;
    return generation(mc, c, url, 1);
}

static enum MHD_Result on_completions(struct MHD_Connection *mc, conn *c, const char *url,
                                      const char *id) {
    (void)id;
    return generation(mc, c, url, 0);
}

static enum MHD_Result on_completion_native(struct MHD_Connection *mc, conn *c, const char *url,
                                            const char *id) {
    (void)id;
    return generation(mc, c, url, 2);
}

static enum MHD_Result on_apply_template(struct MHD_Connection *mc, conn *c, const char *url,
                                         const char *id) {
    (void)id;
    if (c->cfg->emb)
        return send_error(mc, 400, "%s: this server serves an embedding model (no chat template)",
                          url);
    int status = 500;
    char *js = srv_api_apply_template(c->cfg, c->body ? c->body : "", c->len, &status);
    return send_json(mc, status, js);
}

/* POST /infill (llama-server's): the prompt from the FIM fields (serve/infill.c), then a
 * completion of its tokens answered in llama-server's shape */
static enum MHD_Result on_infill(struct MHD_Connection *mc, conn *c, const char *url,
                                 const char *id) {
    (void)id;
    if (c->cfg->emb)
        return send_error(mc, 400, "%s: this server serves an embedding model: use /v1/embeddings",
                          url);
    int status = 500;
    char *body = srv_infill_body(c->cfg, c->body, c->len, &status);
    if (status != 200) return send_json(mc, status, body);
    free(c->body); /* the completion request replaces the one received */
    c->body = body;
    c->len = strlen(body);
    c->cap = c->len + 1;
    return completion(mc, c, 0, 1);
}

/* POST /v1/rerank (llama-server's /rerank): a cross-encoder in embedding mode */
static enum MHD_Result on_rerank(struct MHD_Connection *mc, conn *c, const char *url,
                                 const char *id) {
    (void)id;
    if (!c->cfg->emb)
        return send_error(mc, 400,
                          "%s: this server generates text; reranking needs a cross-encoder "
                          "(vkformer serve -m RERANKER, a model with a classifier head)",
                          url);
    int status = 500;
    char *js = srv_rerank(c->cfg->emb, c->cfg->model_name, c->body, c->len, &status);
    return send_json(mc, status, js);
}

static enum MHD_Result on_embeddings(struct MHD_Connection *mc, conn *c, const char *url,
                                     const char *id) {
    (void)id;
    /* the request, not the server, is wrong for this model: a 400 (OpenAI's SDKs retry a 5xx) */
    if (!c->cfg->emb)
        return send_error(mc, 400,
                          "%s: this server generates text; embeddings need an "
                          "encoder-only model (vkformer serve --embedding -m MODEL)",
                          url);
    int status = 500;
    char *js = srv_embeddings(c->cfg->emb, c->cfg->model_name, c->body, c->len, &status);
    return send_json(mc, status, js);
}

static enum MHD_Result on_tokenize(struct MHD_Connection *mc, conn *c, const char *url,
                                   const char *id) {
    (void)url, (void)id;
    int status = 500;
    char *js = srv_api_tokenize(c->cfg, c->body ? c->body : "", c->len, &status);
    return send_json(mc, status, js);
}

static enum MHD_Result on_detokenize(struct MHD_Connection *mc, conn *c, const char *url,
                                     const char *id) {
    (void)url, (void)id;
    int status = 500;
    char *js = srv_api_detokenize(c->cfg, c->body ? c->body : "", c->len, &status);
    return send_json(mc, status, js);
}

/* GET /lora-adapters lists the adapters and their scales; POST sets the scales (serve/lora.c) */
static enum MHD_Result on_lora_adapters(struct MHD_Connection *mc, conn *c, const char *url,
                                        const char *id) {
    (void)url, (void)id;
    if (!c->eng) return send_error(mc, 501, "this server serves an embedding model: no adapters");
    if (strcmp(c->acc.method, "POST") != 0) return send_json(mc, 200, srv_lora_list(c->eng));
    int status = 500;
    char *js = srv_lora_set(c->eng, c->body ? c->body : "", c->len, &status);
    return send_json(mc, status, js);
}

/* POST /models/load and /models/unload (several models) */
static enum MHD_Result on_models_control(struct MHD_Connection *mc, conn *c, const char *url,
                                         int unload) {
    if (!c->h->rt)
        return send_error(mc, 404,
                          "%s: this server serves one model (several: --models-dir DIR or "
                          "repeated -m)",
                          url);
    int status = 500;
    char *js = srv_router_control(c->h->rt, unload, c->body ? c->body : "", c->len, &status);
    return send_json(mc, status, js);
}

static enum MHD_Result on_models_load(struct MHD_Connection *mc, conn *c, const char *url,
                                      const char *id) {
    (void)id;
    return on_models_control(mc, c, url, 0);
}

static enum MHD_Result on_models_unload(struct MHD_Connection *mc, conn *c, const char *url,
                                        const char *id) {
    (void)id;
    return on_models_control(mc, c, url, 1);
}

/* ------------------------------------------------------------------ the route table */

enum { M_GET = 1, M_POST = 2, M_OTHER = 4, M_ANY = M_GET | M_POST | M_OTHER };

enum {
    R_PUBLIC = 1,  /* no API key, and answered while the model loads (its handler says so) */
    R_PREFIX = 2,  /* path (or an alias) followed by a non-empty id: the handler's id */
    R_BODY = 4,    /* takes a request body: 413 past --max-body before the handler runs */
    R_MODEL = 8,   /* acts on a model (conn's cfg, eng): with several models, the one the
                      request names ("model" in the body, ?model= on a GET), loaded first for a
                      POST; a row with neither R_MODEL nor R_ROUTER answers 501 there */
    R_ROUTER = 16, /* answers by itself with several models (the model list, load, unload) */
};

typedef enum MHD_Result (*route_fn)(struct MHD_Connection *mc, conn *c, const char *url,
                                    const char *id);

typedef struct route {
    const char *path;     /* as OpenAI and llama-server document it */
    const char *alias[2]; /* other spellings answered the same (llama-server's); unused: NULL */
    unsigned methods;     /* M_*: another method is answered 405 */
    unsigned flags;       /* R_* */
    route_fn fn;          /* the answer */
    const char *label;    /* the endpoint label of vkformer:requests_total in /metrics (NULL:
                             the path) */
} route;

/* Every endpoint of the server: the router answers by it, /metrics counts by it (a new
 * endpoint is its handler and one row). Before any row: OPTIONS on any path is 200 {} (CORS
 * preflight), and a path no row has is 404 (after the API key and readiness). */
/* clang-format off */
static const route routes[] = {
    /* path                   aliases                methods flags     handler         label */
    {"/health",              {"/v1/health"},        M_ANY,  R_PUBLIC | R_ROUTER, on_health, NULL},
    {"/metrics",             {NULL},                M_GET,  R_MODEL,  on_metrics,     NULL},
    {"/slots",               {NULL},                M_GET,  R_MODEL,  on_slots,       NULL},
    {"/slots/",              {NULL},                M_POST, R_PREFIX | R_BODY | R_MODEL, on_slot_action, "/slots"},
    {"/v1/chat/completions", {"/chat/completions"}, M_POST, R_BODY | R_MODEL, on_chat, NULL},
    {"/v1/completions",      {"/completions"},      M_POST, R_BODY | R_MODEL, on_completions, NULL},
    {"/completion",          {NULL},                M_POST, R_BODY | R_MODEL, on_completion_native, NULL},
    {"/apply-template",      {NULL},                M_POST, R_BODY | R_MODEL, on_apply_template, NULL},
    /* before /models/{id}: its alias would take them */
    {"/models/load",         {NULL},                M_POST, R_BODY | R_ROUTER, on_models_load, NULL},
    {"/models/unload",       {NULL},                M_POST, R_BODY | R_ROUTER, on_models_unload, NULL},
    {"/v1/models",           {"/models"},           M_GET,  R_ROUTER, on_models,      NULL},
    {"/v1/models/",          {"/models/"},          M_GET,  R_PREFIX | R_ROUTER, on_model, "/v1/models"},
    {"/v1/embeddings",       {"/embeddings"},       M_POST, R_BODY | R_MODEL, on_embeddings, NULL},
    {"/tokenize",            {NULL},                M_POST, R_BODY | R_MODEL, on_tokenize, NULL},
    {"/detokenize",          {NULL},                M_POST, R_BODY | R_MODEL, on_detokenize, NULL},
    {"/lora-adapters",       {NULL},                M_GET | M_POST, R_BODY | R_MODEL, on_lora_adapters, NULL},
    {"/infill",              {NULL},                M_POST, R_BODY | R_MODEL, on_infill, NULL},
    {"/v1/rerank",           {"/rerank", "/reranking"}, M_POST, R_BODY | R_MODEL, on_rerank, NULL},
};
/* clang-format on */
#define N_ROUTES (int)(sizeof routes / sizeof routes[0])

static const char *route_match(const route *r, const char *spelling, const char *path) {
    if (!(r->flags & R_PREFIX)) return strcmp(path, spelling) == 0 ? path : NULL;
    size_t n = strlen(spelling);
    return strncmp(path, spelling, n) == 0 && path[n] ? path + n : NULL;
}

int srv_route_find(const char *path, const char **id) {
    for (int i = 0; i < N_ROUTES; i++) {
        const route *r = &routes[i];
        const char *m = route_match(r, r->path, path);
        for (int k = 0; !m && k < 2 && r->alias[k]; k++)
            m = route_match(r, r->alias[k], path);
        if (m) {
            if (id) *id = r->flags & R_PREFIX ? m : NULL;
            return i;
        }
    }
    return -1;
}

int srv_route_count(void) { return N_ROUTES; }

const char *srv_route_label(int row) {
    if (row < 0 || row >= N_ROUTES) return "other";
    return routes[row].label ? routes[row].label : routes[row].path;
}

static unsigned method_bit(const char *method) {
    return strcmp(method, "GET") == 0 ? M_GET : strcmp(method, "POST") == 0 ? M_POST : M_OTHER;
}

static enum MHD_Result route_request(struct MHD_Connection *mc, conn *c, const char *url,
                                     const char *method) {
    srv_http *h = c->h;
    if (strcmp(method, "OPTIONS") == 0) return send_json(mc, 200, strdup("{}"));
    const char *id = NULL;
    int row = srv_route_find(url, &id);
    const route *r = row >= 0 ? &routes[row] : NULL;
    if (!r || !(r->flags & R_PUBLIC)) {
        if (!authorized(h, mc))
            return send_error(mc, 401, "invalid or missing API key (Authorization: Bearer KEY)");
        if (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE))
            return send_error(mc, 503, "Loading model");
    }
    if (!r) return send_error(mc, 404, "no endpoint %s %s", method, url);
    if (!(r->methods & method_bit(method)))
        return send_error(mc, 405, "%s takes %s, not %s", url,
                          r->methods == (M_GET | M_POST) ? "GET or POST"
                          : r->methods == M_GET          ? "GET"
                                                         : "POST",
                          method);
    if ((r->flags & R_BODY) && c->too_large)
        return send_error(mc, 413, "the request body exceeds the limit of %zu bytes",
                          h->p.max_body);
    c->cfg = h->c;
    c->eng = h->e;
    if (h->rt && (r->flags & R_MODEL)) { /* several models: the one the request names */
        char name[512] = "", err[1400];
        int named = 0, status = 500;
        if (strcmp(method, "GET") == 0) {
            const char *q = MHD_lookup_connection_value(mc, MHD_GET_ARGUMENT_KIND, "model");
            if (q) named = 1, snprintf(name, sizeof name, "%s", q);
        } else {
            cJSON *j = cJSON_ParseWithLength(c->body ? c->body : "", c->len);
            const cJSON *mo = cJSON_GetObjectItemCaseSensitive(j, "model");
            if (cJSON_IsString(mo)) named = 1, snprintf(name, sizeof name, "%s", mo->valuestring);
            cJSON_Delete(j);
        }
        c->lease = srv_router_acquire(h->rt, named ? name : NULL, strcmp(method, "POST") == 0,
                                      &status, err, sizeof err);
        if (!c->lease) return send_error(mc, status, "%s", err);
        c->cfg = srv_model_config(c->lease);
        c->eng = srv_model_engine(c->lease);
    } else if (h->rt && !(r->flags & R_ROUTER)) {
        return send_error(mc, 501, "%s: not available with several models", url);
    }
    return r->fn(mc, c, url, id);
}

static void access_begin(srv_access *a, struct MHD_Connection *mc, const char *url,
                         const char *method) {
    a->t0 = srv_now();
    snprintf(a->method, sizeof a->method, "%s", method);
    snprintf(a->path, sizeof a->path, "%s", url);
    a->route = srv_route_find(url, NULL);
    snprintf(a->remote, sizeof a->remote, "?");
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, a->remote,
                  sizeof a->remote);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, a->remote,
                  sizeof a->remote);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    (void)version;
    srv_http *h = cls;
    conn *c = *con_cls;
    if (!c) { /* first call: headers only */
        c = calloc(1, sizeof *c);
        if (!c) return MHD_NO;
        c->h = h;
        c->fd = -1;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) c->fd = ci->connect_fd;
        *con_cls = c;
        tl_conn = c;
        access_begin(&c->acc, mc, url, method);
        const char *cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > h->p.max_body) {
            c->too_large = 1;
            return send_error(mc, 413, "the request body (%s bytes) exceeds the limit of %zu bytes",
                              cl, h->p.max_body);
        }
        return MHD_YES;
    }
    tl_conn = c;
    if (*upload_size) { /* a piece of the body */
        if (!c->too_large && c->len + *upload_size <= h->p.max_body) {
            if (c->len + *upload_size + 1 > c->cap) {
                size_t nc = (c->len + *upload_size + 1) * 2;
                char *b = realloc(c->body, nc);
                if (!b) return MHD_NO;
                c->body = b;
                c->cap = nc;
            }
            memcpy(c->body + c->len, upload, *upload_size);
            c->len += *upload_size;
            c->body[c->len] = '\0';
        } else {
            c->too_large = 1; /* keep reading, answer 413 at the end */
        }
        *upload_size = 0;
        return MHD_YES;
    }
    return route_request(mc, c, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)mc;
    (void)toe;
    conn *c = *con_cls;
    if (!c) return;
    if (!c->acc_handed) {
        if (!c->acc.status) { /* the client left before an answer */
            c->acc.status = 499;
            snprintf(c->acc.reason, sizeof c->acc.reason, "the client closed the connection");
        }
        access_done(c->h, &c->acc);
    }
    if (tl_conn == c) tl_conn = NULL;
    if (c->lease) srv_router_release(c->h->rt, c->lease);
    free(c->body);
    free(c);
    *con_cls = NULL;
}

/* ------------------------------------------------------------------ start / stop */

vkf_status srv_http_bind(const char *host, int port, int *fd, char *err, size_t errsize) {
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    struct sockaddr *sa;
    socklen_t len;
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)port);
        sa = (struct sockaddr *)&a4, len = sizeof a4;
    } else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)port);
        sa = (struct sockaddr *)&a6, len = sizeof a6;
    } else {
        snprintf(err, errsize, "--host %s is not an IPv4 or IPv6 address", host);
        return VKF_ERROR_INVALID_ARGUMENT;
    }
    int s = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (s < 0) {
        snprintf(err, errsize, "socket: %s", strerror(errno));
        return VKF_ERROR_IO;
    }
    /* as libmicrohttpd does: a port left in TIME_WAIT by a previous run may be taken again */
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(s, sa, len) != 0 || listen(s, 128) != 0) {
        int e = errno;
        snprintf(err, errsize, "cannot listen on %s port %d: %s%s", host, port, strerror(e),
                 e == EADDRINUSE ? " (another server has it: pick another --port, or 0 for any)"
                 : e == EACCES   ? " (ports below 1024 need privileges)"
                                 : "");
        close(s);
        return VKF_ERROR_IO;
    }
    *fd = s;
    return VKF_OK;
}

vkf_status srv_http_start(const srv_http_params *p, const srv_config *c, srv_engine *e,
                          srv_http **out) {
    srv_http *h = calloc(1, sizeof *h);
    if (!h) return VKF_ERROR_OUT_OF_MEMORY;
    h->p = *p;
    h->metrics = srv_metrics_new();
    if (!h->metrics) {
        free(h);
        return VKF_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_init(&h->id_mu, NULL);
    if (c) srv_http_ready(h, c, e); /* e NULL: embedding mode, no slots */
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    struct sockaddr *sa;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
    if (inet_pton(AF_INET, p->host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)p->port);
        sa = (struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, p->host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)p->port);
        sa = (struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        pthread_mutex_destroy(&h->id_mu);
        srv_metrics_free(h->metrics);
        free(h);
        return VKF_ERROR_INVALID_ARGUMENT;
    }
    unsigned timeout = (unsigned)(p->timeout_s > 0 ? p->timeout_s : 600);
    if (p->listen_fd > 0) /* bound already (srv_http_bind) */
        h->d = MHD_start_daemon(
            flags, (uint16_t)p->port, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET,
            p->listen_fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_CONNECTION_LIMIT,
            (unsigned)p->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_END);
    else
        h->d = MHD_start_daemon(flags, (uint16_t)p->port, NULL, NULL, on_request, h,
                                MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                                h, MHD_OPTION_CONNECTION_LIMIT, (unsigned)p->max_connections,
                                MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_END);
    if (!h->d) {
        pthread_mutex_destroy(&h->id_mu);
        srv_metrics_free(h->metrics);
        free(h);
        return VKF_ERROR_IO;
    }
    *out = h;
    return VKF_OK;
}

int srv_http_port(const srv_http *h) {
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : -1;
}

void srv_http_ready(srv_http *h, const srv_config *c, srv_engine *e) {
    h->c = c;
    h->e = e;
    __atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
}

void srv_http_ready_router(srv_http *h, srv_router *rt) {
    h->rt = rt;
    __atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
}

void srv_http_drain(srv_http *h) { h->draining = 1; }

void srv_http_stop(srv_http *h) {
    if (!h) return;
    MHD_stop_daemon(h->d);
    pthread_mutex_destroy(&h->id_mu);
    srv_metrics_free(h->metrics);
    free(h);
}
