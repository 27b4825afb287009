/* serve's lines on stderr: its notices (start, ready, drain, stop) and, with --log-format, one
 * access line per request.
 *
 *   text: vkformer: serve: 127.0.0.1 POST /v1/completions 200 84.1 ms, 13 prompt tokens (0
 *         cached), 16 generated, length, cmpl-6b07837d2
 *   json: {"time":"2026-11-30T09:12:44.201Z","level":"info","remote":"127.0.0.1",
 *          "method":"POST","path":"/v1/completions","status":200,"duration_ms":84.1,
 *          "id":"cmpl-6b07837d2","stream":false,"prompt_tokens":13,"cached_tokens":0,
 *          "completion_tokens":16,"finish_reason":"length"}
 *
 * A 4xx or 5xx line ends with the reason the client got (text: ": REASON"; json: "error").
 *
 * With json every line serve writes after its options are read is one JSON object (notices
 * carry "msg"), so a log collector can parse stderr line by line. A line is written whole under
 * the stream's lock: the connection threads never interleave. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "serve/serve.h"

/* set once by the command before any thread starts, read after */
static srv_log_format log_format = SRV_LOG_NONE;

void srv_log_set_format(srv_log_format f) { log_format = f; }
srv_log_format srv_log_get_format(void) { return log_format; }

double srv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void put_line(const char *s) {
    flockfile(stderr);
    fputs(s, stderr);
    fputc('\n', stderr);
    fflush(stderr);
    funlockfile(stderr);
}

/* "2026-11-30T09:12:44.201Z" (UTC, milliseconds) */
static void iso_time(char *buf, size_t n) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, n, "%s.%03ldZ", day, ts.tv_nsec / 1000000L);
}

static cJSON *json_head(const char *level) {
    char t[48];
    iso_time(t, sizeof t);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "time", t);
    cJSON_AddStringToObject(o, "level", level);
    return o;
}

static void put_json(cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    if (s) put_line(s);
    free(s);
    cJSON_Delete(o);
}

static void log_msg(const char *level, const char *fmt, va_list ap) {
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (log_format != SRV_LOG_JSON) {
        char line[2100];
        snprintf(line, sizeof line, "vkformer: serve: %s", msg);
        put_line(line);
        return;
    }
    cJSON *o = json_head(level);
    char *clean =
        vkf_frontend_utf8_dup(msg, strlen(msg)); /* a path in the message may be any bytes */
    cJSON_AddStringToObject(o, "msg", clean ? clean : "");
    free(clean);
    put_json(o);
}

void srv_log_notice(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_msg("info", fmt, ap);
    va_end(ap);
}

int srv_log_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_msg("error", fmt, ap);
    va_end(ap);
    return 1;
}

static const char *finish_name(srv_finish f) {
    switch (f) {
    case SRV_FINISH_STOP: return "stop";
    case SRV_FINISH_LENGTH: return "length";
    case SRV_FINISH_CANCELLED: return "cancelled";
    case SRV_FINISH_ERROR: return "error";
    default: return NULL;
    }
}

void srv_log_access(const srv_access *a) {
    if (log_format == SRV_LOG_NONE) return;
    double ms = 1000.0 * (srv_now() - a->t0);
    const char *fin = a->has_tokens ? finish_name(a->finish) : NULL;
    char *path = vkf_frontend_utf8_dup(a->path, strlen(a->path)); /* the client's bytes */
    if (log_format == SRV_LOG_TEXT) {
        char line[1024];
        int n = snprintf(line, sizeof line, "vkformer: serve: %s %s %s %d %.1f ms", a->remote,
                         a->method, path ? path : "?", a->status, ms);
        if (a->has_tokens && n > 0 && (size_t)n < sizeof line)
            n += snprintf(line + n, sizeof line - (size_t)n,
                          ", %d prompt tokens (%d cached), %d generated%s%s%s%s", a->n_prompt,
                          a->n_cached, a->n_gen, fin ? ", " : "", fin ? fin : "",
                          a->id[0] ? ", " : "", a->id);
        if (a->reason[0] && n > 0 && (size_t)n < sizeof line) {
            char *why = vkf_frontend_utf8_dup(a->reason, strlen(a->reason)); /* may echo input */
            snprintf(line + n, sizeof line - (size_t)n, ": %s", why ? why : "?");
            free(why);
        }
        put_line(line);
        free(path);
        return;
    }
    cJSON *o = json_head("info");
    cJSON_AddStringToObject(o, "remote", a->remote);
    cJSON_AddStringToObject(o, "method", a->method);
    cJSON_AddStringToObject(o, "path", path ? path : "");
    cJSON_AddNumberToObject(o, "status", a->status);
    cJSON_AddNumberToObject(o, "duration_ms", (double)(long long)(ms * 10.0 + 0.5) / 10.0);
    if (a->id[0]) cJSON_AddStringToObject(o, "id", a->id);
    cJSON_AddBoolToObject(o, "stream", a->stream);
    cJSON_AddNumberToObject(o, "prompt_tokens", a->has_tokens ? a->n_prompt : 0);
    cJSON_AddNumberToObject(o, "cached_tokens", a->has_tokens ? a->n_cached : 0);
    cJSON_AddNumberToObject(o, "completion_tokens", a->has_tokens ? a->n_gen : 0);
    if (fin)
        cJSON_AddStringToObject(o, "finish_reason", fin);
    else
        cJSON_AddNullToObject(o, "finish_reason");
    if (a->reason[0]) {
        char *why = vkf_frontend_utf8_dup(a->reason, strlen(a->reason));
        cJSON_AddStringToObject(o, "error", why ? why : "");
        free(why);
    }
    put_json(o);
    free(path);
}
