/* GET /metrics: Prometheus text format 0.0.4, with llama-server's metric names (prefix
 * "llamacpp:") where llama-server has one, and vkformer's own under "vkformer:".
 *
 *   llamacpp:prompt_tokens_total            counter  prompt tokens evaluated (cache hits excluded)
 *   llamacpp:prompt_seconds_total           counter  seconds spent evaluating them
 *   llamacpp:tokens_predicted_total         counter  generated tokens (the usages'
 * completion_tokens) llamacpp:tokens_predicted_seconds_total counter  seconds of the batched decode
 * steps llamacpp:n_decode_total                 counter  batched decode steps
 *   llamacpp:n_busy_slots_per_decode        gauge    busy slots per step, on average
 *   llamacpp:prompt_tokens_seconds          gauge    prompt tokens/s since the previous scrape
 *   llamacpp:predicted_tokens_seconds       gauge    decoded tokens/s (all slots together) since
 *                                                    the previous scrape
 *   llamacpp:kv_cache_usage_ratio           gauge    KV-cache rows in use / all rows
 *   llamacpp:kv_cache_tokens                gauge    KV-cache rows in use
 *   llamacpp:requests_processing            gauge    busy slots
 *   llamacpp:requests_deferred              gauge    requests waiting for a slot
 *   vkformer:slots                          gauge    slots (-np)
 *   vkformer:draining                       gauge    1 after SIGTERM/SIGINT
 *   vkformer:requests_total{endpoint,code}  counter  HTTP requests answered, by the endpoint
 *                                                    label of the route table (http.c; aliases
 *                                                    count as their endpoint), "other" for a
 *                                                    path no endpoint has
 *   vkformer:requests_finished_total{reason} counter generations ended: stop, length, cancelled,
 *                                                    error
 *   process_start_time_seconds              gauge    (the Prometheus client libraries' name)
 *
 * As llama-server, the two throughput gauges cover the time since the previous /metrics
 * request (their bucket is reset by each one); rate() over the counters is the steady view.
 * Unlike llama-server, tokens_predicted_seconds_total is wall time of the batched steps (all
 * slots at once), not a sum over slots, so the gauge is the server's aggregate decode rate. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/serve.h"

#define N_CODES 500 /* 100..599 */

/* The request counters, one per endpoint label of the route table (http.c) and "other": a
 * request counts under the first row that carries its row's label. */
struct srv_metrics {
    pthread_mutex_t mu;
    double start_unix; /* process_start_time_seconds */
    int n_rows;        /* the route table's rows; counter n_rows is "other" */
    int *first;        /* per row: the first row with the same label */
    uint64_t (*count)[N_CODES];
};

srv_metrics *srv_metrics_new(void) {
    srv_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->n_rows = srv_route_count();
    m->first = calloc((size_t)m->n_rows + 1, sizeof *m->first);
    m->count = calloc((size_t)m->n_rows + 1, sizeof *m->count);
    if (!m->first || !m->count) {
        free(m->first);
        free(m->count);
        free(m);
        return NULL;
    }
    for (int i = 0; i <= m->n_rows; i++) {
        m->first[i] = i;
        for (int k = 0; k < i && i < m->n_rows && m->first[i] == i; k++)
            if (strcmp(srv_route_label(k), srv_route_label(i)) == 0) m->first[i] = k;
    }
    pthread_mutex_init(&m->mu, NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m->start_unix = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    return m;
}

void srv_metrics_free(srv_metrics *m) {
    if (!m) return;
    pthread_mutex_destroy(&m->mu);
    free(m->first);
    free(m->count);
    free(m);
}

void srv_metrics_count(srv_metrics *m, int route, int status) {
    if (!m || status < 100 || status >= 100 + N_CODES) return;
    int i = route >= 0 && route < m->n_rows ? m->first[route] : m->n_rows;
    pthread_mutex_lock(&m->mu);
    m->count[i][status - 100]++;
    pthread_mutex_unlock(&m->mu);
}

/* ------------------------------------------------------------------ rendering */

typedef struct text {
    char *s;
    size_t len, cap;
    int fail;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
    if (t->fail) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->fail = 1;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t nc = 2 * t->cap + (size_t)n + 1;
        char *s = realloc(t->s, nc);
        if (!s) {
            t->fail = 1;
            return;
        }
        t->s = s;
        t->cap = nc;
    }
}

static void family(text *t, const char *name, const char *type, const char *help) {
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(text *t, const char *name, const char *type, const char *help, double v) {
    family(t, name, type, help);
    put(t, "%s %.17g\n", name, v);
}

char *srv_metrics_render(srv_metrics *m, srv_engine *e, int draining) {
    text t = {malloc(4096), 0, 4096, 0};
    if (!t.s) return NULL;
    t.s[0] = '\0';
    srv_stats st;
    memset(&st, 0, sizeof st);
    if (e) srv_engine_stats(e, &st, 1);
    one(&t, "llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed.",
        (double)st.n_prompt);
    one(&t, "llamacpp:prompt_seconds_total", "counter", "Prompt process time", st.t_prompt);
    one(&t, "llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.",
        (double)st.n_predicted);
    one(&t, "llamacpp:tokens_predicted_seconds_total", "counter",
        "Predict process time (wall time of the batched decode steps)", st.t_decode);
    one(&t, "llamacpp:n_decode_total", "counter", "Total number of batched decode steps",
        (double)st.n_steps);
    one(&t, "llamacpp:n_busy_slots_per_decode", "gauge",
        "Average number of busy slots per batched decode step",
        st.n_steps ? (double)st.n_busy_total / (double)st.n_steps : 0.0);
    one(&t, "llamacpp:prompt_tokens_seconds", "gauge",
        "Average prompt throughput in tokens/s (since the previous /metrics request).",
        st.t_bucket_prompt > 0 ? (double)st.n_bucket_prompt / st.t_bucket_prompt : 0.0);
    one(&t, "llamacpp:predicted_tokens_seconds", "gauge",
        "Average generation throughput in tokens/s, all slots together (since the previous "
        "/metrics request).",
        st.t_bucket_decode > 0 ? (double)st.n_bucket_decoded / st.t_bucket_decode : 0.0);
    one(&t, "vkformer:draft_tokens_total", "counter",
        "Speculative decoding: drafted tokens checked by the model (--spec-type).",
        (double)st.n_drafted);
    one(&t, "vkformer:draft_tokens_accepted_total", "counter",
        "Speculative decoding: drafted tokens the model kept.", (double)st.n_accepted);
    one(&t, "llamacpp:kv_cache_usage_ratio", "gauge", "KV-cache usage. 1 means 100 percent usage.",
        st.kv_size ? (double)st.kv_tokens / (double)st.kv_size : 0.0);
    one(&t, "llamacpp:kv_cache_tokens", "gauge", "KV-cache tokens.", (double)st.kv_tokens);
    one(&t, "llamacpp:requests_processing", "gauge", "Number of requests processing.", st.busy);
    one(&t, "llamacpp:requests_deferred", "gauge", "Number of requests deferred.", st.queued);
    one(&t, "vkformer:slots", "gauge", "Slots (requests decoded together, -np).", st.n_slots);
    one(&t, "vkformer:draining", "gauge",
        "1 once SIGTERM or SIGINT was received: requests in flight finish, new ones get 503.",
        draining);
    family(&t, "vkformer:requests_finished_total", "counter",
           "Generations ended, by reason (stop, length, cancelled: the client left, error).");
    static const char *const reasons[] = {NULL, "stop", "length", "cancelled", "error"};
    for (int f = SRV_FINISH_STOP; f <= SRV_FINISH_ERROR; f++)
        put(&t, "vkformer:requests_finished_total{reason=\"%s\"} %llu\n", reasons[f],
            (unsigned long long)st.n_finished[f]);
    family(&t, "vkformer:requests_total", "counter",
           "HTTP requests answered, by endpoint and code.");
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i <= m->n_rows; i++)
        for (int k = 0; k < N_CODES; k++)
            if (m->count[i][k])
                put(&t, "vkformer:requests_total{endpoint=\"%s\",code=\"%d\"} %llu\n",
                    srv_route_label(i < m->n_rows ? i : -1), k + 100,
                    (unsigned long long)m->count[i][k]);
    double start = m->start_unix;
    pthread_mutex_unlock(&m->mu);
    one(&t, "process_start_time_seconds", "gauge",
        "Start time of the process since unix epoch in seconds.", start);
    if (t.fail) {
        free(t.s);
        return NULL;
    }
    return t.s;
}

double srv_metrics_start(const srv_metrics *m) { return m->start_unix; }
