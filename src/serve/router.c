/* One server, several models (llama-server's router habits): the models are known by name
 * (serve -m A -m B, or the files of --models-dir), requests name theirs in "model", a model
 * loads on its first request and the least recently used loaded one unloads when a load would
 * pass --models-max. An unload waits until no connection holds the model (its requests in
 * flight finish first), then stops its engine (which finishes what it holds) and frees it.
 *
 * Every model moves unloaded -> loading -> loaded -> unloading -> unloaded under the router's
 * mutex; the loads and unloads themselves (seconds) run outside it, on the thread of the
 * request that needed them, and whoever waits for a model in motion sleeps on the condition
 * variable. A connection holds a model by a reference (srv_router_acquire / release); a loaded
 * model with references is never freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "serve/serve.h"

typedef enum { ST_UNLOADED, ST_LOADING, ST_LOADED, ST_UNLOADING } state;

struct srv_model {
    char *name, *path;
    char *error;      /* the file cannot be served (unreadable, not GGUF): never loaded */
    char *load_error; /* the last load failed: why (tried again on the next request) */
    state st;
    int refs;      /* connections holding it */
    uint64_t used; /* the router's clock at its last use (LRU) */
    long n_loads;  /* times loaded */
    srv_loaded l;  /* while loaded */
};

struct srv_router {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    srv_router_params p;
    srv_model **ms;
    int n, cap;
    uint64_t clock;
};

static const char *state_name(state s) {
    return s == ST_LOADED      ? "loaded"
           : s == ST_LOADING   ? "loading"
           : s == ST_UNLOADING ? "unloading"
                               : "unloaded";
}

srv_router *srv_router_new(const srv_router_params *p) {
    srv_router *rt = calloc(1, sizeof *rt);
    if (!rt) return NULL;
    rt->p = *p;
    if (rt->p.models_max < 1) rt->p.models_max = 1;
    pthread_mutex_init(&rt->mu, NULL);
    pthread_cond_init(&rt->cv, NULL);
    return rt;
}

int srv_router_add(srv_router *rt, const char *name, const char *path, const char *error) {
    for (int i = 0; i < rt->n; i++)
        if (strcmp(rt->ms[i]->name, name) == 0) return -2;
    if (rt->n == rt->cap) {
        int nc = rt->cap ? rt->cap * 2 : 8;
        srv_model **g = realloc(rt->ms, (size_t)nc * sizeof *g);
        if (!g) return -1;
        rt->ms = g;
        rt->cap = nc;
    }
    srv_model *m = calloc(1, sizeof *m);
    if (!m) return -1;
    m->name = strdup(name);
    m->path = strdup(path);
    m->error = error ? strdup(error) : NULL;
    if (!m->name || !m->path || (error && !m->error)) {
        free(m->name), free(m->path), free(m->error), free(m);
        return -1;
    }
    rt->ms[rt->n++] = m;
    return 0;
}

int srv_router_count(const srv_router *rt) { return rt->n; }

static srv_model *find(srv_router *rt, const char *name) {
    for (int i = 0; name && i < rt->n; i++)
        if (strcmp(rt->ms[i]->name, name) == 0) return rt->ms[i];
    return NULL;
}

/* "a, b, c": the models a request may name */
static void names(srv_router *rt, char *out, size_t n) {
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < rt->n && k < n; i++)
        k += (size_t)snprintf(out + k, n - k, "%s%s", i ? ", " : "", rt->ms[i]->name);
}

/* Unloads m (loaded): no new reference from now on, waits for the held ones, then frees it
 * outside the mutex. Called and returns with the mutex held. */
static void unload_locked(srv_router *rt, srv_model *m) {
    m->st = ST_UNLOADING;
    while (m->refs > 0)
        pthread_cond_wait(&rt->cv, &rt->mu);
    srv_loaded l = m->l;
    memset(&m->l, 0, sizeof m->l);
    pthread_mutex_unlock(&rt->mu);
    srv_log_notice("unloading %s", m->name);
    rt->p.unload(rt->p.ud, &l); /* stops its engine: whatever it still holds finishes first */
    pthread_mutex_lock(&rt->mu);
    m->st = ST_UNLOADED;
    pthread_cond_broadcast(&rt->cv);
}

/* Makes m loaded (loading it, and unloading the least recently used ones to stay within
 * models_max); 0, or the HTTP status of the failure with its message in err. Called and
 * returns with the mutex held. */
static int ensure_loaded(srv_router *rt, srv_model *m, char *err, size_t en) {
    for (;;) {
        if (m->error) {
            snprintf(err, en, "model '%s' cannot be served: %s", m->name, m->error);
            return 400;
        }
        if (m->st == ST_LOADED) return 0;
        if (m->st != ST_UNLOADED) { /* loading or unloading: wait for it to settle */
            pthread_cond_wait(&rt->cv, &rt->mu);
            continue;
        }
        int live = 0;
        srv_model *lru = NULL;
        for (int i = 0; i < rt->n; i++) {
            srv_model *o = rt->ms[i];
            if (o->st != ST_UNLOADED) live++;
            if (o->st == ST_LOADED && (!lru || o->used < lru->used)) lru = o;
        }
        if (live >= rt->p.models_max) {
            if (lru) {
                srv_log_notice("%s is needed and %d model%s loaded (--models-max): %s was used "
                               "least recently",
                               m->name, live, live == 1 ? " is" : "s are", lru->name);
                unload_locked(rt, lru);
            } else { /* every place is loading or unloading: wait for one */
                pthread_cond_wait(&rt->cv, &rt->mu);
            }
            continue;
        }
        m->st = ST_LOADING;
        pthread_mutex_unlock(&rt->mu);
        srv_log_notice("loading %s (%s)", m->name, m->path);
        srv_loaded l;
        memset(&l, 0, sizeof l);
        char lerr[512] = "";
        int rc = rt->p.load(rt->p.ud, m->path, m->name, &l, lerr, sizeof lerr);
        pthread_mutex_lock(&rt->mu);
        free(m->load_error);
        m->load_error = NULL;
        if (rc == 0) {
            m->l = l;
            m->st = ST_LOADED;
            m->n_loads++;
            m->used = ++rt->clock;
        } else {
            m->st = ST_UNLOADED;
            m->load_error = strdup(lerr);
        }
        pthread_cond_broadcast(&rt->cv);
        if (rc) {
            snprintf(err, en, "model '%s' failed to load: %s", m->name, lerr);
            return 500;
        }
        return 0;
    }
}

srv_model *srv_router_acquire(srv_router *rt, const char *name, int load, int *status, char *err,
                              size_t en) {
    pthread_mutex_lock(&rt->mu);
    srv_model *m = find(rt, name);
    if (!m) {
        char av[1024];
        names(rt, av, sizeof av);
        if (!name)
            snprintf(err, en, "the request names no \"model\" (this server has several: %s)", av);
        else
            snprintf(err, en, "model '%.200s' not found; the available models are: %s", name, av);
        *status = name ? 404 : 400;
        pthread_mutex_unlock(&rt->mu);
        return NULL;
    }
    if (!load) {
        while (m->st == ST_LOADING || m->st == ST_UNLOADING)
            pthread_cond_wait(&rt->cv, &rt->mu);
        if (m->st != ST_LOADED) {
            snprintf(err, en, "model '%s' is not loaded", m->name);
            *status = 400;
            pthread_mutex_unlock(&rt->mu);
            return NULL;
        }
    } else if ((*status = ensure_loaded(rt, m, err, en)) != 0) {
        pthread_mutex_unlock(&rt->mu);
        return NULL;
    }
    m->refs++;
    m->used = ++rt->clock;
    pthread_mutex_unlock(&rt->mu);
    return m;
}

void srv_router_retain(srv_router *rt, srv_model *m) {
    pthread_mutex_lock(&rt->mu);
    m->refs++;
    pthread_mutex_unlock(&rt->mu);
}

void srv_router_release(srv_router *rt, srv_model *m) {
    if (!m) return;
    pthread_mutex_lock(&rt->mu);
    m->refs--;
    m->used = ++rt->clock;
    if (m->refs == 0) pthread_cond_broadcast(&rt->cv);
    pthread_mutex_unlock(&rt->mu);
}

const srv_config *srv_model_config(const srv_model *m) { return m->l.cfg; }
srv_engine *srv_model_engine(const srv_model *m) { return m->l.e; }

/* one model of /v1/models: OpenAI's fields and llama-server's router status */
static cJSON *model_json(const srv_model *m) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", m->name);
    cJSON_AddStringToObject(o, "object", "model");
    cJSON_AddNumberToObject(o, "created", 0);
    cJSON_AddStringToObject(o, "owned_by", "vkformer");
    cJSON_AddStringToObject(o, "path", m->path);
    cJSON *s = cJSON_AddObjectToObject(o, "status");
    cJSON_AddStringToObject(s, "value", state_name(m->st));
    cJSON_AddNumberToObject(s, "loads", (double)m->n_loads);
    const char *e = m->error ? m->error : m->load_error;
    if (e) {
        cJSON_AddBoolToObject(s, "failed", 1);
        cJSON_AddStringToObject(s, "error", e);
    }
    return o;
}

char *srv_router_models_json(srv_router *rt) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *a = cJSON_AddArrayToObject(o, "data");
    pthread_mutex_lock(&rt->mu);
    for (int i = 0; i < rt->n; i++)
        cJSON_AddItemToArray(a, model_json(rt->ms[i]));
    pthread_mutex_unlock(&rt->mu);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

char *srv_router_model_json(srv_router *rt, const char *id, int *status) {
    pthread_mutex_lock(&rt->mu);
    srv_model *m = find(rt, id);
    cJSON *o = m ? model_json(m) : NULL;
    char av[1024], msg[1400];
    if (!m) names(rt, av, sizeof av);
    pthread_mutex_unlock(&rt->mu);
    if (!o) {
        *status = 404;
        snprintf(msg, sizeof msg, "model '%.200s' not found; the available models are: %s", id, av);
        return srv_api_error(404, msg);
    }
    *status = 200;
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

char *srv_router_control(srv_router *rt, int unload, const char *body, size_t len, int *status) {
    cJSON *j = cJSON_ParseWithLength(body, len);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "model");
    char err[1400];
    if (!cJSON_IsObject(j) || !cJSON_IsString(name)) {
        cJSON_Delete(j);
        *status = 400;
        return srv_api_error(400, "expected {\"model\": NAME}");
    }
    pthread_mutex_lock(&rt->mu);
    srv_model *m = find(rt, name->valuestring);
    int st = 0;
    if (!m) {
        char av[1024];
        names(rt, av, sizeof av);
        snprintf(err, sizeof err, "model '%.200s' not found; the available models are: %s",
                 name->valuestring, av);
        st = 404;
    } else if (!unload) {
        st = ensure_loaded(rt, m, err, sizeof err);
        if (!st) m->used = ++rt->clock;
    } else {
        while (m->st == ST_LOADING || m->st == ST_UNLOADING)
            pthread_cond_wait(&rt->cv, &rt->mu);
        if (m->st != ST_LOADED) {
            snprintf(err, sizeof err, "model '%s' is not loaded", m->name);
            st = 400;
        } else {
            unload_locked(rt, m); /* waits for its requests in flight */
        }
    }
    pthread_mutex_unlock(&rt->mu);
    cJSON_Delete(j);
    *status = st ? st : 200;
    return st ? srv_api_error(st, err) : strdup("{\"success\":true}");
}

void srv_router_load(srv_router *rt, int *busy, int *queued) {
    *busy = *queued = 0;
    pthread_mutex_lock(&rt->mu);
    for (int i = 0; i < rt->n; i++) {
        srv_model *m = rt->ms[i];
        if (m->st == ST_LOADING || m->st == ST_UNLOADING || m->refs) (*busy)++;
        if (m->st == ST_LOADED && m->l.e) {
            int b, q;
            srv_engine_load(m->l.e, &b, &q);
            *busy += b, *queued += q;
        }
    }
    pthread_mutex_unlock(&rt->mu);
}

void srv_router_free(srv_router *rt) {
    if (!rt) return;
    pthread_mutex_lock(&rt->mu);
    for (int i = 0; i < rt->n; i++) {
        srv_model *m = rt->ms[i];
        while (m->st == ST_LOADING || m->st == ST_UNLOADING)
            pthread_cond_wait(&rt->cv, &rt->mu);
        if (m->st == ST_LOADED) unload_locked(rt, m);
    }
    pthread_mutex_unlock(&rt->mu);
    for (int i = 0; i < rt->n; i++) {
        free(rt->ms[i]->name), free(rt->ms[i]->path), free(rt->ms[i]->error);
        free(rt->ms[i]->load_error), free(rt->ms[i]);
    }
    free(rt->ms);
    pthread_cond_destroy(&rt->cv);
    pthread_mutex_destroy(&rt->mu);
    free(rt);
}
