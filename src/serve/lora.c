/* llama-server's LoRA endpoints and request field (tools/server of llama.cpp 0c1e570):
 *   GET  /lora-adapters   [{"id": 0, "path": "a.gguf", "scale": 1.0, "task_name": "",
 *                         "prompt_prefix": ""}, ...] (the last two from the GGUF's metadata)
 *   POST /lora-adapters   [{"id": 0, "scale": 0.5}]: the server's scales, the ids not listed 0
 *                         (construct_lora_list), for requests queued from then on
 *   "lora": [{"id": 0, "scale": 0.5}] in a completion request: that request's scales, the ids
 *                         not listed 0; absent: the server's scales
 * An id the server has not loaded is a 400 naming it (llama-server ignores it), as is a scale
 * that is not a finite number. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "serve/serve.h"

/* [{"id", "scale"}] -> scales[n] (ids not listed 0); -1 with err set when malformed */
static int lora_read(const cJSON *a, int n, float *scales, const char *what, char *err, size_t en) {
    if (!cJSON_IsArray(a)) {
        snprintf(err, en, "%s: expected an array of {\"id\": N, \"scale\": S}", what);
        return -1;
    }
    for (int i = 0; i < SRV_MAX_LORA; i++)
        scales[i] = 0.0f;
    const cJSON *x;
    cJSON_ArrayForEach(x, a) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(x, "id");
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(x, "scale");
        if (!cJSON_IsNumber(id) || id->valuedouble != floor(id->valuedouble)) {
            snprintf(err, en, "%s: each entry needs an integer \"id\"", what);
            return -1;
        }
        if (id->valuedouble < 0 || id->valuedouble >= n) {
            snprintf(err, en, "%s: adapter id %.0f does not exist (the server has %d adapter%s%s)",
                     what, id->valuedouble, n, n == 1 ? "" : "s",
                     n ? ", ids from 0" : ": start it with --lora");
            return -1;
        }
        double v = cJSON_IsNumber(sc) ? sc->valuedouble : 0.0; /* llama-server: default 0 */
        if (sc && !cJSON_IsNumber(sc)) {
            snprintf(err, en, "%s: adapter %.0f: \"scale\" must be a number", what,
                     id->valuedouble);
            return -1;
        }
        if (!isfinite(v) || !isfinite((float)v)) {
            snprintf(err, en, "%s: adapter %.0f: the scale %g is not finite", what, id->valuedouble,
                     v);
            return -1;
        }
        scales[(int)id->valuedouble] = (float)v;
    }
    return 0;
}

int srv_lora_parse(const srv_config *c, const cJSON *j, srv_req *r, char *err, size_t errsize) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "lora");
    if (!a || cJSON_IsNull(a)) return 0;
    if (lora_read(a, c->n_lora, r->lora, "lora", err, errsize) < 0) return -1;
    r->lora_given = 1;
    return 0;
}

char *srv_lora_list(srv_engine *e) {
    float sc[SRV_MAX_LORA];
    srv_engine_lora_get(e, sc);
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < srv_engine_n_lora(e); i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddNumberToObject(o, "id", i);
        cJSON_AddStringToObject(o, "path", srv_engine_lora_path(e, i));
        cJSON_AddNumberToObject(o, "scale", sc[i]);
        cJSON_AddStringToObject(o, "task_name", srv_engine_lora_meta(e, i, 0));
        cJSON_AddStringToObject(o, "prompt_prefix", srv_engine_lora_meta(e, i, 1));
        cJSON_AddItemToArray(a, o);
    }
    char *js = a ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    return js;
}

char *srv_lora_set(srv_engine *e, const char *body, size_t len, int *status) {
    cJSON *j = cJSON_ParseWithLength(body, len);
    char err[256];
    float sc[SRV_MAX_LORA];
    *status = 400;
    if (!j) return srv_api_error(400, "Request body must be an array (not valid JSON)");
    int rc = lora_read(j, srv_engine_n_lora(e), sc, "/lora-adapters", err, sizeof err);
    cJSON_Delete(j);
    if (rc < 0) return srv_api_error(400, err);
    srv_engine_lora_set(e, sc);
    *status = 200;
    return strdup("{\"success\":true}");
}
