/* safetensors reader: parse the JSON header with cJSON, validate every tensor against the
 * mapped data section, and hand out pointers into the mapping (zero copy). */
#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "io/io_util.h"
#include "io/mapfile.h"

/* The reference implementation refuses headers above 100 MB; a larger "header" is garbage. */
#define VKF_ST_MAX_HEADER (100u * 1024u * 1024u)

typedef struct vkf_st_meta {
    char *key, *value;
} vkf_st_meta;

struct vkf_safetensors {
    char *path;
    vkf_mapfile map;
    int borrowed;           /* map points at the caller's memory (open_memory): not unmapped */
    vkf_st_tensor *tensors; /* header order */
    size_t n_tensors;
    size_t *by_name; /* indices sorted by name, for bsearch */
    vkf_st_meta *meta;
    size_t n_meta;
    char *strings; /* tensor names and dtype names, one allocation */
    /* sharded checkpoint (model.safetensors.index.json): the shards, whose tensors this handle
     * lists (names and data point into them) */
    struct vkf_safetensors **shards;
    size_t n_shards;
};

/* ------------------------------------------------------------------ dtypes */

typedef struct vkf_st_dtype_info {
    const char *name;
    size_t size;     /* bytes per element */
    vkf_dtype dtype; /* VKF_DTYPE_COUNT: known to the format, not supported here */
} vkf_st_dtype_info;

static const vkf_st_dtype_info g_dtypes[] = {
    {"F32", 4, VKF_DTYPE_F32},    {"F16", 2, VKF_DTYPE_F16},       {"BF16", 2, VKF_DTYPE_BF16},
    {"F64", 8, VKF_DTYPE_COUNT},  {"I64", 8, VKF_DTYPE_COUNT},     {"I32", 4, VKF_DTYPE_COUNT},
    {"I16", 2, VKF_DTYPE_COUNT},  {"I8", 1, VKF_DTYPE_COUNT},      {"U8", 1, VKF_DTYPE_COUNT},
    {"U16", 2, VKF_DTYPE_COUNT},  {"U32", 4, VKF_DTYPE_COUNT},     {"U64", 8, VKF_DTYPE_COUNT},
    {"BOOL", 1, VKF_DTYPE_COUNT}, {"F8_E4M3", 1, VKF_DTYPE_COUNT}, {"F8_E5M2", 1, VKF_DTYPE_COUNT},
};

static const vkf_st_dtype_info *st_dtype_lookup(const char *s) {
    for (size_t i = 0; i < sizeof g_dtypes / sizeof g_dtypes[0]; i++)
        if (strcmp(g_dtypes[i].name, s) == 0) return &g_dtypes[i];
    return NULL;
}

/* ------------------------------------------------------------------ header parsing */

/* A JSON number that is an exact non-negative integer below 2^53 (doubles are exact there). */
static int st_json_uint(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return 0;
    double v = j->valuedouble;
    if (!isfinite(v) || v < 0 || v > 9007199254740992.0 || floor(v) != v) return 0;
    *out = (uint64_t)v;
    return 1;
}

static const char *st_json_kind(const cJSON *j) {
    if (!j) return "nothing";
    if (cJSON_IsString(j)) return "a string";
    if (cJSON_IsNumber(j)) return "a number";
    if (cJSON_IsBool(j)) return "a bool";
    if (cJSON_IsNull(j)) return "null";
    if (cJSON_IsArray(j)) return "an array";
    if (cJSON_IsObject(j)) return "an object";
    return "an invalid value";
}

static int st_cmp_range(const void *a, const void *b, void *ctx) {
    const vkf_st_tensor *t = ctx;
    const vkf_st_tensor *x = &t[*(const size_t *)a], *y = &t[*(const size_t *)b];
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return 0;
}

/* the tensor names, for their sorted indices (by_name) */
static vkf_io_names st_names(const vkf_safetensors *st) {
    return (vkf_io_names){st->tensors, sizeof *st->tensors, offsetof(vkf_st_tensor, name)};
}

/* Parses one tensor entry into *t (names are filled in by the caller). */
static vkf_status st_parse_tensor(const char *path, const cJSON *e, uint64_t data_start,
                                  uint64_t data_size, vkf_st_tensor *t) {
    const char *name = e->string;
    if (!cJSON_IsObject(e))
        return vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s: expected an object, found %s", path,
                         name, st_json_kind(e));
    const cJSON *jd = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *jo = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(jd))
        return vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s: key dtype: expected a string, found %s",
                         path, name, st_json_kind(jd));
    const vkf_st_dtype_info *di = st_dtype_lookup(jd->valuestring);
    if (!di)
        return vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s: unknown dtype \"%s\"", path, name,
                         jd->valuestring);
    t->dtype = di->dtype;
    t->dtype_name = di->name; /* static string */
    if (!cJSON_IsArray(js))
        return vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s: key shape: expected an array, found %s",
                         path, name, st_json_kind(js));
    int rank = cJSON_GetArraySize(js);
    if (rank > VKF_ST_MAX_RANK)
        return vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s: rank %d exceeds the maximum of %d", path,
                         name, rank, VKF_ST_MAX_RANK);
    t->rank = rank;
    uint64_t n_elems = 1;
    for (int i = 0; i < VKF_ST_MAX_RANK; i++)
        t->shape[i] = 1;
    for (int i = 0; i < rank; i++) {
        const cJSON *d = cJSON_GetArrayItem(js, i);
        uint64_t v;
        if (!st_json_uint(d, &v))
            return vkf_error(VKF_ERROR_FORMAT,
                             "%s: tensor %s: shape[%d]: expected a non-negative integer", path,
                             name, i);
        t->shape[i] = (int64_t)v;
        if (!vkf_io_mul_u64(n_elems, v, &n_elems))
            return vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s: element count overflows", path,
                             name);
    }
    uint64_t want;
    if (!vkf_io_mul_u64(n_elems, di->size, &want) || n_elems > (uint64_t)INT64_MAX)
        return vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s: byte size overflows", path, name);
    t->n_elems = (int64_t)n_elems;
    if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: tensor %s: key data_offsets: expected [begin, end], found %s", path,
                         name, st_json_kind(jo));
    uint64_t begin, end;
    if (!st_json_uint(cJSON_GetArrayItem(jo, 0), &begin) ||
        !st_json_uint(cJSON_GetArrayItem(jo, 1), &end))
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: tensor %s: data_offsets must be non-negative integers", path, name);
    if (begin > end)
        return vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s: data_offsets begin %llu > end %llu",
                         path, name, (unsigned long long)begin, (unsigned long long)end);
    if (end > data_size)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: tensor %s: data_offsets [%llu, %llu] extend past the data section "
                         "(%llu bytes)",
                         path, name, (unsigned long long)begin, (unsigned long long)end,
                         (unsigned long long)data_size);
    if (end - begin != want) {
        char dims[128];
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: tensor %s: %s %s needs %llu bytes, data_offsets span %llu", path,
                         name, di->name, vkf_io_format_dims(dims, sizeof dims, rank, t->shape),
                         (unsigned long long)want, (unsigned long long)(end - begin));
    }
    t->offset = data_start + begin;
    t->nbytes = (size_t)(end - begin);
    return VKF_OK;
}

static vkf_status st_parse(vkf_safetensors *st) {
    const char *path = st->path;
    const uint8_t *p = st->map.data;
    size_t size = st->map.size;
    if (size < 8)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: file too small (%zu bytes) for the 8-byte header length", path, size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | p[i];
    if (n > size - 8)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: header length %llu exceeds the file (%zu bytes after the length)",
                         path, (unsigned long long)n, size - 8);
    if (n > VKF_ST_MAX_HEADER)
        return vkf_error(VKF_ERROR_FORMAT, "%s: header length %llu exceeds the 100 MB limit", path,
                         (unsigned long long)n);
    if (n < 2 || p[8] != '{')
        return vkf_error(VKF_ERROR_FORMAT, "%s: header does not start with a JSON object", path);
    const char *hdr = (const char *)p + 8, *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, (size_t)n, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = (at && at >= hdr && at <= hdr + n) ? (long)(at - hdr) : -1;
        return vkf_error(VKF_ERROR_FORMAT, "%s: header JSON is malformed (near byte %ld of %llu)",
                         path, off, (unsigned long long)n);
    }
    vkf_status s = VKF_OK;
    for (const char *q = end; q && q < hdr + n; q++) /* only padding may follow the object */
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r' && *q != 0) {
            s = vkf_error(VKF_ERROR_FORMAT, "%s: trailing bytes after the header JSON object",
                          path);
            goto done;
        }
    if (!cJSON_IsObject(root)) {
        s = vkf_error(VKF_ERROR_FORMAT, "%s: header is not a JSON object", path);
        goto done;
    }
    uint64_t data_start = 8 + n, data_size = size - data_start;

    /* count entries and the bytes for the name strings */
    size_t n_t = 0, n_m = 0, name_bytes = 0;
    const cJSON *meta = NULL;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if (meta) {
                s = vkf_error(VKF_ERROR_FORMAT, "%s: duplicate __metadata__", path);
                goto done;
            }
            meta = e;
            continue;
        }
        n_t++;
        name_bytes += strlen(e->string) + 1;
    }
    if (meta) {
        if (!cJSON_IsObject(meta)) {
            s = vkf_error(VKF_ERROR_FORMAT, "%s: __metadata__: expected an object, found %s", path,
                          st_json_kind(meta));
            goto done;
        }
        for (const cJSON *e = meta->child; e; e = e->next)
            n_m++;
    }
    st->tensors = calloc(n_t ? n_t : 1, sizeof *st->tensors);
    st->by_name = calloc(n_t ? n_t : 1, sizeof *st->by_name);
    st->strings = malloc(name_bytes ? name_bytes : 1);
    st->meta = calloc(n_m ? n_m : 1, sizeof *st->meta);
    if (!st->tensors || !st->by_name || !st->strings || !st->meta) {
        s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory for %zu tensors", path, n_t);
        goto done;
    }
    if (meta)
        for (const cJSON *e = meta->child; e; e = e->next) {
            if (!cJSON_IsString(e)) {
                s = vkf_error(VKF_ERROR_FORMAT,
                              "%s: __metadata__ key %s: expected a string, found %s", path,
                              e->string, st_json_kind(e));
                goto done;
            }
            vkf_st_meta *m = &st->meta[st->n_meta++];
            m->key = strdup(e->string);
            m->value = strdup(e->valuestring);
            if (!m->key || !m->value) {
                s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
                goto done;
            }
        }

    char *names = st->strings;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (e == meta) continue;
        if (!e->string[0]) {
            s = vkf_error(VKF_ERROR_FORMAT, "%s: a tensor has an empty name", path);
            goto done;
        }
        vkf_st_tensor *t = &st->tensors[st->n_tensors];
        size_t len = strlen(e->string) + 1;
        memcpy(names, e->string, len);
        t->name = names;
        names += len;
        if ((s = st_parse_tensor(path, e, data_start, data_size, t)) != VKF_OK) goto done;
        t->data = t->nbytes ? p + t->offset : NULL;
        st->by_name[st->n_tensors] = st->n_tensors;
        st->n_tensors++;
    }

    /* overlaps: sort by range; a non-empty tensor must start at or after every earlier end */
    qsort_r(st->by_name, st->n_tensors, sizeof *st->by_name, st_cmp_range, st->tensors);
    uint64_t max_end = 0;
    const vkf_st_tensor *max_t = NULL;
    for (size_t i = 0; i < st->n_tensors; i++) {
        const vkf_st_tensor *t = &st->tensors[st->by_name[i]];
        if (!t->nbytes) continue;
        if (max_t && t->offset < max_end) {
            s = vkf_error(VKF_ERROR_FORMAT,
                          "%s: tensors %s and %s overlap (data offsets %llu..%llu and %llu..%llu)",
                          path, max_t->name, t->name,
                          (unsigned long long)(max_t->offset - data_start),
                          (unsigned long long)(max_end - data_start),
                          (unsigned long long)(t->offset - data_start),
                          (unsigned long long)(t->offset - data_start + t->nbytes));
            goto done;
        }
        max_end = t->offset + t->nbytes;
        max_t = t;
    }
    /* names: sort for bsearch; cJSON keeps duplicate keys, which would make lookups ambiguous */
    vkf_io_names by_name = st_names(st);
    const char *dup = vkf_io_names_sort(&by_name, st->by_name, st->n_tensors);
    if (dup) s = vkf_error(VKF_ERROR_FORMAT, "%s: duplicate tensor %s", path, dup);
done:
    cJSON_Delete(root);
    return s;
}

/* ------------------------------------------------------------------ public API */

/* The handle over map, named `name` in errors; borrowed maps (open_memory) are not unmapped
 * at close. On failure map is released as close would. */
static vkf_status safetensors_from_map(const char *name, vkf_mapfile map, int borrowed,
                                       vkf_safetensors **out) {
    vkf_safetensors *st = calloc(1, sizeof *st);
    char *path = st ? strdup(name) : NULL;
    if (!path) {
        free(st);
        if (!borrowed) vkf_mapfile_close(&map);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    }
    st->path = path;
    st->map = map;
    st->borrowed = borrowed;
    vkf_status s = st_parse(st);
    if (s != VKF_OK) {
        vkf_safetensors_close(st);
        return s;
    }
    *out = st;
    return VKF_OK;
}

static vkf_status st_open_sharded(const char *path, const char *index, vkf_safetensors **out);

vkf_status vkf_safetensors_open(const char *path, vkf_safetensors **out) {
    *out = NULL;
    char index[1200];
    snprintf(index, sizeof index, "%s.index.json", path);
    if (access(path, F_OK) != 0 && access(index, F_OK) == 0)
        return st_open_sharded(path, index, out);
    vkf_mapfile map;
    VKF_TRY(vkf_mapfile_open(path, &map));
    return safetensors_from_map(path, map, 0, out);
}

vkf_status vkf_safetensors_open_memory(const void *data, size_t size, const char *name,
                                       vkf_safetensors **out) {
    *out = NULL;
    vkf_mapfile map = {size ? data : NULL, size};
    return safetensors_from_map(name ? name : "(memory)", map, 1, out);
}

void vkf_safetensors_close(vkf_safetensors *st) {
    if (!st) return;
    if (!st->borrowed) vkf_mapfile_close(&st->map);
    for (size_t i = 0; i < st->n_meta; i++) {
        free(st->meta[i].key);
        free(st->meta[i].value);
    }
    free(st->meta);
    free(st->tensors);
    free(st->by_name);
    free(st->strings);
    free(st->path);
    for (size_t i = 0; i < st->n_shards; i++)
        vkf_safetensors_close(st->shards[i]);
    free(st->shards);
    free(st);
}

const char *vkf_safetensors_path(const vkf_safetensors *st) { return st->path; }

size_t vkf_safetensors_count(const vkf_safetensors *st) { return st->n_tensors; }

const vkf_st_tensor *vkf_safetensors_tensor(const vkf_safetensors *st, size_t i) {
    return i < st->n_tensors ? &st->tensors[i] : NULL;
}

const vkf_st_tensor *vkf_safetensors_find(const vkf_safetensors *st, const char *name) {
    vkf_io_names names = st_names(st);
    size_t i = vkf_io_names_find(&names, st->by_name, st->n_tensors, name);
    return i < st->n_tensors ? &st->tensors[i] : NULL;
}

const char *vkf_safetensors_metadata(const vkf_safetensors *st, const char *key) {
    for (size_t i = 0; i < st->n_meta; i++)
        if (strcmp(st->meta[i].key, key) == 0) return st->meta[i].value;
    return NULL;
}

vkf_status vkf_safetensors_get(const vkf_safetensors *st, const char *name, int dtype, int rank,
                               const int64_t *dims, const vkf_st_tensor **out) {
    *out = NULL;
    const vkf_st_tensor *t = vkf_safetensors_find(st, name);
    if (!t) return vkf_error(VKF_ERROR_FORMAT, "%s: missing tensor %s", st->path, name);
    if (t->dtype == VKF_DTYPE_COUNT)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: tensor %s: dtype %s is not supported (F32, F16, BF16 are)", st->path,
                         name, t->dtype_name);
    int ok = (dtype < 0 || t->dtype == (vkf_dtype)dtype) && (rank < 0 || t->rank == rank);
    for (int i = 0; ok && rank > 0 && dims && i < rank; i++)
        if (dims[i] >= 0 && dims[i] != t->shape[i]) ok = 0;
    if (!ok) {
        char want[160], have[160];
        if (rank >= 0 && dims)
            vkf_io_format_dims(want, sizeof want, rank, dims);
        else if (rank >= 0)
            snprintf(want, sizeof want, "rank %d", rank);
        else
            snprintf(want, sizeof want, "any shape");
        vkf_io_format_dims(have, sizeof have, t->rank, t->shape);
        return vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s: expected %s %s, found %s %s", st->path,
                         name, dtype < 0 ? "any dtype" : vkf_dtype_name((vkf_dtype)dtype), want,
                         t->dtype_name, have);
    }
    *out = t;
    return VKF_OK;
}

/* ------------------------------------------------------------------ sharded checkpoints */

/* path.index.json: {"metadata": {...}, "weight_map": {"tensor":
 * "model-00001-of-00002.safetensors"}} (Hugging Face's layout). Opens every shard named in
 * weight_map (beside the index) and lists their tensors as one handle; each tensor must be in the
 * shard the map names, and no tensor may be in two shards. */
static vkf_status st_open_sharded(const char *path, const char *index, vkf_safetensors **out) {
    vkf_mapfile map;
    VKF_TRY(vkf_mapfile_open(index, &map));
    cJSON *root = cJSON_ParseWithLength((const char *)map.data, map.size);
    vkf_mapfile_close(&map);
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(wm)) {
        cJSON_Delete(root);
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: expected an object \"weight_map\" (tensor -> shard file)", index);
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    vkf_status s = VKF_OK;
    vkf_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(index))) {
        free(st);
        cJSON_Delete(root);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", index);
    }
    st->borrowed = 1; /* no mapping of its own */
    size_t n_entries = (size_t)cJSON_GetArraySize(wm);
    st->shards = calloc(n_entries ? n_entries : 1, sizeof *st->shards);
    if (!st->shards) s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", index);
    /* every shard once, in the order the map first names it */
    for (const cJSON *e = wm->child; s == VKF_OK && e; e = e->next) {
        if (!cJSON_IsString(e) || strchr(e->valuestring, '/')) {
            s = vkf_error(VKF_ERROR_FORMAT,
                          "%s: weight_map[\"%s\"]: expected a shard file name beside the index",
                          index, e->string);
            break;
        }
        size_t k = 0;
        while (k < st->n_shards &&
               strcmp(strrchr(st->shards[k]->path, '/') + 1, e->valuestring) != 0)
            k++;
        if (k < st->n_shards) continue;
        char shard[1400];
        snprintf(shard, sizeof shard, "%s/%s", dir, e->valuestring);
        s = vkf_safetensors_open(shard, &st->shards[st->n_shards]);
        if (s == VKF_OK) st->n_shards++;
    }
    size_t total = 0;
    for (size_t k = 0; k < st->n_shards; k++)
        total += st->shards[k]->n_tensors;
    if (s == VKF_OK) {
        st->tensors = calloc(total ? total : 1, sizeof *st->tensors);
        st->by_name = calloc(total ? total : 1, sizeof *st->by_name);
        if (!st->tensors || !st->by_name)
            s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", index);
    }
    for (size_t k = 0; s == VKF_OK && k < st->n_shards; k++)
        for (size_t i = 0; i < st->shards[k]->n_tensors; i++) {
            const vkf_st_tensor *t = &st->shards[k]->tensors[i];
            const cJSON *where = cJSON_GetObjectItemCaseSensitive(wm, t->name);
            const char *base = strrchr(st->shards[k]->path, '/') + 1;
            if (where && cJSON_IsString(where) && strcmp(where->valuestring, base) != 0) {
                s = vkf_error(VKF_ERROR_FORMAT,
                              "%s: tensor %s is in %s but the index puts it in %s", index, t->name,
                              base, where->valuestring);
                break;
            }
            st->by_name[st->n_tensors] = st->n_tensors;
            st->tensors[st->n_tensors++] = *t;
        }
    if (s == VKF_OK) {
        vkf_io_names names = st_names(st);
        const char *dup = vkf_io_names_sort(&names, st->by_name, st->n_tensors);
        if (dup) s = vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s is in two shards", index, dup);
    }
    for (const cJSON *e = wm->child; s == VKF_OK && e; e = e->next)
        if (!vkf_safetensors_find(st, e->string))
            s = vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s is in the index but not in %s", index,
                          e->string, e->valuestring);
    cJSON_Delete(root);
    if (s != VKF_OK) {
        vkf_safetensors_close(st);
        return s;
    }
    *out = st;
    return VKF_OK;
}
