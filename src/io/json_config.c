#include "io/json_config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/mapfile.h"

struct vkf_json_config {
    char *path;
    cJSON *root;
};

/* ------------------------------------------------------------------ load */

vkf_status vkf_json_config_parse(const char *text, size_t len, const char *name,
                                 vkf_json_config **out) {
    *out = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = (at && at >= text && at <= text + len) ? (long)(at - text) : -1;
        return vkf_error(VKF_ERROR_FORMAT, "%s: malformed JSON near byte %ld", name, off);
    }
    for (const char *q = end; q && q < text + len; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
            cJSON_Delete(root);
            return vkf_error(VKF_ERROR_FORMAT, "%s: trailing bytes after the JSON value", name);
        }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return vkf_error(VKF_ERROR_FORMAT, "%s: expected a JSON object at the top level", name);
    }
    vkf_json_config *c = calloc(1, sizeof *c);
    if (c) c->path = strdup(name);
    if (!c || !c->path) {
        free(c);
        cJSON_Delete(root);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    }
    c->root = root;
    *out = c;
    return VKF_OK;
}

vkf_status vkf_json_config_load(const char *path, vkf_json_config **out) {
    *out = NULL;
    vkf_mapfile m;
    VKF_TRY(vkf_mapfile_open(path, &m));
    vkf_status s = vkf_json_config_parse(m.data ? (const char *)m.data : "", m.size, path, out);
    vkf_mapfile_close(&m);
    return s;
}

void vkf_json_config_free(vkf_json_config *c) {
    if (!c) return;
    cJSON_Delete(c->root);
    free(c->path);
    free(c);
}

const char *vkf_json_config_path(const vkf_json_config *c) { return c->path; }

const cJSON *vkf_json_config_root(const vkf_json_config *c) { return c->root; }

/* ------------------------------------------------------------------ typed reads */

static const char *json_kind(const cJSON *j) {
    if (cJSON_IsString(j)) return "string";
    if (cJSON_IsNumber(j)) return "number";
    if (cJSON_IsBool(j)) return "bool";
    if (cJSON_IsNull(j)) return "null";
    if (cJSON_IsArray(j)) return "array";
    if (cJSON_IsObject(j)) return "object";
    return "invalid value";
}

/* The item for key; NULL when absent or null (both mean "use the default"). */
static const cJSON *json_item(const vkf_json_config *c, const char *key) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(c->root, key);
    return (j && !cJSON_IsNull(j)) ? j : NULL;
}

static vkf_status json_missing(const vkf_json_config *c, const char *key, const char *what) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(c->root, key);
    return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: expected %s, found %s", c->path, key, what,
                     j ? "null" : "nothing (missing)");
}

static vkf_status json_wrong(const vkf_json_config *c, const char *key, const char *what,
                             const cJSON *j) {
    return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: expected %s, found %s", c->path, key, what,
                     json_kind(j));
}

int vkf_json_config_has(const vkf_json_config *c, const char *key) {
    return json_item(c, key) != NULL;
}

static vkf_status json_int(const vkf_json_config *c, const char *key, const cJSON *j,
                           int64_t *out) {
    if (!cJSON_IsNumber(j)) return json_wrong(c, key, "an integer", j);
    double v = j->valuedouble;
    if (!isfinite(v) || floor(v) != v || fabs(v) > 9007199254740992.0)
        return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: expected an integer, found %g", c->path,
                         key, v);
    *out = (int64_t)v;
    return VKF_OK;
}

vkf_status vkf_json_config_get_int(const vkf_json_config *c, const char *key, int64_t def,
                                   int64_t *out) {
    const cJSON *j = json_item(c, key);
    if (!j) {
        *out = def;
        return VKF_OK;
    }
    return json_int(c, key, j, out);
}

vkf_status vkf_json_config_require_int(const vkf_json_config *c, const char *key, int64_t *out) {
    const cJSON *j = json_item(c, key);
    return j ? json_int(c, key, j, out) : json_missing(c, key, "an integer");
}

vkf_status vkf_json_config_int32(const vkf_json_config *c, const char *key, const char *alt,
                                 int64_t def, int64_t lo, int64_t hi, int32_t *out) {
    if (alt && !json_item(c, key) && json_item(c, alt)) key = alt;
    const cJSON *j = json_item(c, key);
    int64_t v = def;
    if (j)
        VKF_TRY(json_int(c, key, j, &v));
    else if (def == VKF_JSON_REQUIRED)
        return json_missing(c, key, "an integer");
    else if (def < INT32_MIN || def > INT32_MAX)
        return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: its default %lld is not an int32", c->path,
                         key, (long long)def);
    if (j && (v < lo || v > hi))
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: key %s: expected an integer in [%lld, %lld], found %lld", c->path,
                         key, (long long)lo, (long long)hi, (long long)v);
    *out = (int32_t)v;
    return VKF_OK;
}

static vkf_status json_float(const vkf_json_config *c, const char *key, const cJSON *j,
                             double *out) {
    if (!cJSON_IsNumber(j)) return json_wrong(c, key, "a number", j);
    *out = j->valuedouble;
    return VKF_OK;
}

vkf_status vkf_json_config_get_float(const vkf_json_config *c, const char *key, double def,
                                     double *out) {
    const cJSON *j = json_item(c, key);
    if (!j) {
        *out = def;
        return VKF_OK;
    }
    return json_float(c, key, j, out);
}

vkf_status vkf_json_config_require_float(const vkf_json_config *c, const char *key, double *out) {
    const cJSON *j = json_item(c, key);
    return j ? json_float(c, key, j, out) : json_missing(c, key, "a number");
}

static vkf_status json_bool(const vkf_json_config *c, const char *key, const cJSON *j, int *out) {
    if (!cJSON_IsBool(j)) return json_wrong(c, key, "a bool", j);
    *out = cJSON_IsTrue(j) ? 1 : 0;
    return VKF_OK;
}

vkf_status vkf_json_config_get_bool(const vkf_json_config *c, const char *key, int def, int *out) {
    const cJSON *j = json_item(c, key);
    if (!j) {
        *out = def;
        return VKF_OK;
    }
    return json_bool(c, key, j, out);
}

vkf_status vkf_json_config_require_bool(const vkf_json_config *c, const char *key, int *out) {
    const cJSON *j = json_item(c, key);
    return j ? json_bool(c, key, j, out) : json_missing(c, key, "a bool");
}

static vkf_status json_str(const vkf_json_config *c, const char *key, const cJSON *j,
                           const char **out) {
    if (!cJSON_IsString(j)) return json_wrong(c, key, "a string", j);
    *out = j->valuestring;
    return VKF_OK;
}

vkf_status vkf_json_config_get_str(const vkf_json_config *c, const char *key, const char *def,
                                   const char **out) {
    const cJSON *j = json_item(c, key);
    if (!j) {
        *out = def;
        return VKF_OK;
    }
    return json_str(c, key, j, out);
}

vkf_status vkf_json_config_require_str(const vkf_json_config *c, const char *key,
                                       const char **out) {
    const cJSON *j = json_item(c, key);
    return j ? json_str(c, key, j, out) : json_missing(c, key, "a string");
}
