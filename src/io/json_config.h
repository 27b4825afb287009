/* config.json helpers over cJSON: typed reads of top-level keys, with defaults for optional keys
 * and messages that name the file, the key and what was expected vs found:
 *     "config.json: key n_embd: expected a number, found string"
 *
 * Usage:
 *     vkf_json_config *c;
 *     VKF_TRY(vkf_json_config_load("hf/config.json", &c));
 *     int64_t n_embd, n_inner;
 *     VKF_TRY(vkf_json_config_require_int(c, "n_embd", &n_embd));
 *     VKF_TRY(vkf_json_config_get_int(c, "n_inner", 4 * n_embd, &n_inner)); // null -> default
 *     vkf_json_config_free(c);
 *
 * get_* return the default when the key is absent or null (HF writes "n_inner": null for
 * "use the default"); require_* fail with VKF_ERROR_FORMAT when it is absent or null. A present
 * key of the wrong type is always an error. */
#ifndef VKF_IO_JSON_CONFIG_H
#define VKF_IO_JSON_CONFIG_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "vkformer.h"

typedef struct vkf_json_config vkf_json_config;

/* Reads and parses path; the root must be a JSON object. */
vkf_status vkf_json_config_load(const char *path, vkf_json_config **out);
/* Parses text[0..len); name is used in messages in place of a path. */
vkf_status vkf_json_config_parse(const char *text, size_t len, const char *name,
                                 vkf_json_config **out);
void vkf_json_config_free(vkf_json_config *c);

/* The path (or name) given at load, for messages. */
const char *vkf_json_config_path(const vkf_json_config *c);
/* The parsed root object, for anything the helpers do not cover. Owned by c. */
const cJSON *vkf_json_config_root(const vkf_json_config *c);
/* 1 if key is present and not null. */
int vkf_json_config_has(const vkf_json_config *c, const char *key);

/* Integers: a JSON number with no fractional part, |x| <= 2^53. */
vkf_status vkf_json_config_get_int(const vkf_json_config *c, const char *key, int64_t def,
                                   int64_t *out);
vkf_status vkf_json_config_require_int(const vkf_json_config *c, const char *key, int64_t *out);
/* An integer hyperparameter as int32: key (else alt, another name of it; may be NULL) must lie
 * in [lo, hi]. Required when def is VKF_JSON_REQUIRED, else def when absent or null (def
 * is not range-checked). The one reader of the loaders' config.json integers, with one message
 * naming the file, the key read and the range:
 *     "config.json: key n_head: expected an integer in [1, 2147483647], found 0" */
#define VKF_JSON_REQUIRED INT64_MIN
vkf_status vkf_json_config_int32(const vkf_json_config *c, const char *key, const char *alt,
                                 int64_t def, int64_t lo, int64_t hi, int32_t *out);
/* Numbers (integers are accepted). */
vkf_status vkf_json_config_get_float(const vkf_json_config *c, const char *key, double def,
                                     double *out);
vkf_status vkf_json_config_require_float(const vkf_json_config *c, const char *key, double *out);
/* Booleans: true/false only. */
vkf_status vkf_json_config_get_bool(const vkf_json_config *c, const char *key, int def, int *out);
vkf_status vkf_json_config_require_bool(const vkf_json_config *c, const char *key, int *out);
/* Strings: *out points into c (valid until free); def may be NULL. */
vkf_status vkf_json_config_get_str(const vkf_json_config *c, const char *key, const char *def,
                                   const char **out);
vkf_status vkf_json_config_require_str(const vkf_json_config *c, const char *key, const char **out);

#endif
