/* GGUF reader. Every read goes through a bounds-checked cursor over the mapping, so a corrupt or
 * truncated file ends in VKF_ERROR_FORMAT, never in a read past the end. Keys, names and value
 * tables live in one arena freed at close. */
#include "io/gguf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "io/io_util.h"
#include "io/mapfile.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_MAX_NAME 255  /* tensor name bytes; ggml itself allows 63 */
#define GGUF_MAX_KEY 65535 /* key bytes */
#define GGUF_MAX_DEPTH 8   /* array nesting */

/* ------------------------------------------------------------------ arena */

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char mem[];
} arena_chunk;

struct vkf_gguf {
    char *path;
    vkf_mapfile map;
    int borrowed; /* map points at the caller's memory (open_memory): not unmapped */
    uint32_t version, alignment;
    uint64_t data_offset;
    vkf_gguf_kv *kvs;
    size_t n_kvs;
    size_t *kv_sorted; /* indices sorted by key */
    vkf_gguf_tensor *tensors;
    size_t n_tensors;
    size_t *t_sorted; /* indices sorted by name */
    arena_chunk *arena;
};

static void *arena_alloc(vkf_gguf *g, size_t n) {
    n = (n + 15) & ~(size_t)15;
    arena_chunk *c = g->arena;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = g->arena;
        c->used = 0;
        c->cap = cap;
        g->arena = c;
    }
    void *p = c->mem + c->used;
    c->used += n;
    return p;
}

static char *arena_strndup(vkf_gguf *g, const uint8_t *s, size_t n) {
    char *p = arena_alloc(g, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

/* ------------------------------------------------------------------ bounds-checked cursor */

typedef struct reader {
    const char *path;
    const uint8_t *p;
    size_t size, pos;
    char what[320]; /* what is being read, for messages: "key tokenizer.ggml.tokens" */
} reader;

static vkf_status rd_fail(reader *r, const char *fmt, ...) VKF_PRINTF(2, 3);
static vkf_status rd_fail(reader *r, const char *fmt, ...) {
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return vkf_error(VKF_ERROR_FORMAT, "%s: %s: %s", r->path, r->what, detail);
}

static vkf_status rd_need(reader *r, uint64_t n) {
    if (n > r->size - r->pos)
        return rd_fail(r, "truncated: need %llu bytes at offset %zu, the file has %zu",
                       (unsigned long long)n, r->pos, r->size);
    return VKF_OK;
}

static uint64_t le_u(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static vkf_status rd_u32(reader *r, uint32_t *v) {
    VKF_TRY(rd_need(r, 4));
    *v = (uint32_t)le_u(r->p + r->pos, 4);
    r->pos += 4;
    return VKF_OK;
}

static vkf_status rd_u64(reader *r, uint64_t *v) {
    VKF_TRY(rd_need(r, 8));
    *v = le_u(r->p + r->pos, 8);
    r->pos += 8;
    return VKF_OK;
}

/* A gguf_string: u64 length + bytes; the length is checked against the bytes left. */
static vkf_status rd_str(reader *r, uint64_t max_len, const uint8_t **s, uint64_t *n) {
    VKF_TRY(rd_u64(r, n));
    if (*n > max_len)
        return rd_fail(r, "string length %llu exceeds the limit of %llu", (unsigned long long)*n,
                       (unsigned long long)max_len);
    VKF_TRY(rd_need(r, *n));
    *s = r->p + r->pos;
    r->pos += (size_t)*n;
    return VKF_OK;
}

/* ------------------------------------------------------------------ values */

static const char *g_type_names[VKF_GGUF_TYPE_COUNT] = {
    "uint8", "int8",   "uint16", "int16",  "uint32", "int32",   "float32",
    "bool",  "string", "array",  "uint64", "int64",  "float64",
};

const char *vkf_gguf_type_name(vkf_gguf_type t) {
    return (unsigned)t < VKF_GGUF_TYPE_COUNT ? g_type_names[t] : "invalid";
}

/* Bytes of a scalar type, 0 for STRING / ARRAY. */
static size_t type_size(vkf_gguf_type t) {
    switch (t) {
    case VKF_GGUF_TYPE_UINT8:
    case VKF_GGUF_TYPE_INT8:
    case VKF_GGUF_TYPE_BOOL: return 1;
    case VKF_GGUF_TYPE_UINT16:
    case VKF_GGUF_TYPE_INT16: return 2;
    case VKF_GGUF_TYPE_UINT32:
    case VKF_GGUF_TYPE_INT32:
    case VKF_GGUF_TYPE_FLOAT32: return 4;
    case VKF_GGUF_TYPE_UINT64:
    case VKF_GGUF_TYPE_INT64:
    case VKF_GGUF_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

/* Smallest encoding of one element of type t: bounds an array count before allocating. */
static uint64_t min_elem_size(vkf_gguf_type t) {
    if (t == VKF_GGUF_TYPE_STRING) return 8; /* u64 length */
    if (t == VKF_GGUF_TYPE_ARRAY) return 12; /* u32 type + u64 count */
    return type_size(t);
}

static vkf_status rd_value(vkf_gguf *g, reader *r, vkf_gguf_type type, int depth,
                           vkf_gguf_value *v) {
    memset(v, 0, sizeof *v);
    v->type = type;
    if (type == VKF_GGUF_TYPE_STRING) {
        const uint8_t *s;
        VKF_TRY(rd_str(r, UINT64_MAX, &s, &v->count));
        v->raw = s;
        return VKF_OK;
    }
    if (type != VKF_GGUF_TYPE_ARRAY) {
        size_t n = type_size(type);
        if (!n) return rd_fail(r, "invalid value type %u", (unsigned)type);
        VKF_TRY(rd_need(r, n));
        v->raw = r->p + r->pos;
        r->pos += n;
        return VKF_OK;
    }
    if (depth >= GGUF_MAX_DEPTH)
        return rd_fail(r, "arrays nested deeper than %d levels", GGUF_MAX_DEPTH);
    uint32_t et;
    VKF_TRY(rd_u32(r, &et));
    if (et >= VKF_GGUF_TYPE_COUNT) return rd_fail(r, "invalid array element type %u", et);
    v->elem_type = (vkf_gguf_type)et;
    VKF_TRY(rd_u64(r, &v->count));
    /* every element takes at least min_elem_size bytes: a count the rest of the file cannot
     * hold is rejected here, before the element table is allocated */
    uint64_t left = r->size - r->pos;
    if (v->count > left / min_elem_size(v->elem_type))
        return rd_fail(r, "array of %llu %s elements does not fit in the %llu bytes left",
                       (unsigned long long)v->count, g_type_names[et], (unsigned long long)left);
    if (et != VKF_GGUF_TYPE_STRING && et != VKF_GGUF_TYPE_ARRAY) {
        v->raw = r->p + r->pos;
        r->pos += (size_t)(v->count * type_size(v->elem_type));
        return VKF_OK;
    }
    vkf_gguf_value *elems = arena_alloc(g, (size_t)v->count * sizeof *elems + 1);
    if (!elems)
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: %s: out of memory for %llu elements",
                         r->path, r->what, (unsigned long long)v->count);
    for (uint64_t i = 0; i < v->count; i++)
        VKF_TRY(rd_value(g, r, v->elem_type, depth + 1, &elems[i]));
    v->elems = elems;
    return VKF_OK;
}

/* Scalar value as signed / unsigned 64-bit, with "is it an integer" and range info. */
static int value_is_int(const vkf_gguf_value *v) {
    switch (v->type) {
    case VKF_GGUF_TYPE_UINT8:
    case VKF_GGUF_TYPE_INT8:
    case VKF_GGUF_TYPE_UINT16:
    case VKF_GGUF_TYPE_INT16:
    case VKF_GGUF_TYPE_UINT32:
    case VKF_GGUF_TYPE_INT32:
    case VKF_GGUF_TYPE_UINT64:
    case VKF_GGUF_TYPE_INT64: return 1;
    default: return 0;
    }
}

static int type_is_signed(vkf_gguf_type t) {
    return t == VKF_GGUF_TYPE_INT8 || t == VKF_GGUF_TYPE_INT16 || t == VKF_GGUF_TYPE_INT32 ||
           t == VKF_GGUF_TYPE_INT64;
}

/* Reads a scalar of type t at p as int64 (negative flag for signed types) or uint64. */
static void scalar_int(vkf_gguf_type t, const uint8_t *p, int *neg, uint64_t *mag) {
    int n = (int)type_size(t);
    uint64_t u = le_u(p, n);
    *neg = 0;
    if (type_is_signed(t) && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~UINT64_C(0) << (8 * n);
    if (type_is_signed(t) && (int64_t)u < 0) {
        *neg = 1;
        *mag = (uint64_t)0 - u; /* |value| */
        return;
    }
    *mag = u;
}

static double scalar_float(vkf_gguf_type t, const uint8_t *p) {
    if (t == VKF_GGUF_TYPE_FLOAT32) {
        uint32_t u = (uint32_t)le_u(p, 4);
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    if (t == VKF_GGUF_TYPE_FLOAT64) {
        uint64_t u = le_u(p, 8);
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    if (t == VKF_GGUF_TYPE_BOOL) return p[0] != 0;
    int neg;
    uint64_t mag;
    scalar_int(t, p, &neg, &mag);
    return neg ? -(double)mag : (double)mag;
}

/* ------------------------------------------------------------------ parsing */

/* the keys and the tensor names, for their sorted indices (kv_sorted, t_sorted) */
static vkf_io_names kv_names(const vkf_gguf *g) {
    return (vkf_io_names){g->kvs, sizeof *g->kvs, offsetof(vkf_gguf_kv, key)};
}

static vkf_io_names tensor_names(const vkf_gguf *g) {
    return (vkf_io_names){g->tensors, sizeof *g->tensors, offsetof(vkf_gguf_tensor, name)};
}

static int cmp_tensor_off(const void *a, const void *b, void *ctx) {
    const vkf_gguf_tensor *t = ctx;
    const vkf_gguf_tensor *x = &t[*(const size_t *)a], *y = &t[*(const size_t *)b];
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static const char *ggml_type_name(uint32_t t) {
    static const char *names[] = {
        "F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
        "Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
        "Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
        "IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
        "F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
        "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",    "NVFP4",    "Q1_0",
        "Q2_0",
    };
    return t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* the storage types vkformer reads (src/core/wtype.c); I32 tensors are not model weights */
static int ggml_to_dtype(uint32_t t, vkf_dtype *d) {
    return vkf_wtype_from_gguf(t, d) && vkf_wtype_is_weight(*d);
}

static vkf_status gguf_parse_tensor_info(vkf_gguf *g, reader *r, size_t i, vkf_gguf_tensor *t) {
    snprintf(r->what, sizeof r->what, "tensor info #%zu", i);
    const uint8_t *s;
    uint64_t n;
    VKF_TRY(rd_str(r, GGUF_MAX_NAME, &s, &n));
    if (n == 0) return rd_fail(r, "empty tensor name");
    if (memchr(s, 0, (size_t)n)) return rd_fail(r, "tensor name contains a NUL byte");
    t->name = arena_strndup(g, s, (size_t)n);
    if (!t->name) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", g->path);
    snprintf(r->what, sizeof r->what, "tensor %s", t->name);
    uint32_t nd;
    VKF_TRY(rd_u32(r, &nd));
    if (nd > VKF_GGUF_MAX_DIMS) return rd_fail(r, "n_dims %u exceeds %d", nd, VKF_GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    uint64_t elems = 1;
    for (int d = 0; d < VKF_GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t v;
        VKF_TRY(rd_u64(r, &v));
        if (v == 0 || v > (uint64_t)INT64_MAX)
            return rd_fail(r, "ne[%u] = %llu is not a positive dimension", d,
                           (unsigned long long)v);
        if (!vkf_io_mul_u64(elems, v, &elems) || elems > (uint64_t)INT64_MAX)
            return rd_fail(r, "element count overflows");
        t->ne[d] = (int64_t)v;
    }
    t->n_elems = (int64_t)elems;
    t->cols = t->ne[0];
    t->rows = t->ne[1] * t->ne[2] * t->ne[3]; /* no overflow: bounded by n_elems */
    VKF_TRY(rd_u32(r, &t->ggml_type));
    if (!ggml_to_dtype(t->ggml_type, &t->dtype))
        return vkf_error(
            VKF_ERROR_UNSUPPORTED, "%s: tensor %s: ggml type %u (%s) is not supported (%s are)",
            g->path, t->name, t->ggml_type, ggml_type_name(t->ggml_type), vkf_wtype_weight_list());
    int be = vkf_dtype_block_elems(t->dtype);
    if (t->ne[0] % be)
        return rd_fail(r, "%s rows need ne[0] to be a multiple of %d, found %lld",
                       vkf_dtype_name(t->dtype), be, (long long)t->ne[0]);
    uint64_t nbytes;
    if (!vkf_io_mul_u64((uint64_t)(t->ne[0] / be) * vkf_dtype_block_bytes(t->dtype),
                        (uint64_t)t->rows, &nbytes) ||
        nbytes > SIZE_MAX)
        return rd_fail(r, "byte size overflows");
    t->nbytes = (size_t)nbytes;
    VKF_TRY(rd_u64(r, &t->offset)); /* relative to the data section until gguf_parse fixes it */
    return VKF_OK;
}

static vkf_status gguf_parse(vkf_gguf *g) {
    reader rd = {.path = g->path, .p = g->map.data, .size = g->map.size, .pos = 0};
    reader *r = &rd;
    snprintf(r->what, sizeof r->what, "header");
    VKF_TRY(rd_need(r, 4));
    if (memcmp(r->p, GGUF_MAGIC, 4) != 0)
        return rd_fail(r, "bad magic %02x %02x %02x %02x, expected \"GGUF\"", r->p[0], r->p[1],
                       r->p[2], r->p[3]);
    r->pos = 4;
    VKF_TRY(rd_u32(r, &g->version));
    if (g->version == 1)
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: GGUF version 1 is not supported (2 and 3 are)",
                         g->path);
    if ((g->version & 0xffff) == 0 && g->version != 0)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: big-endian GGUF (version field 0x%08x) is not supported", g->path,
                         g->version);
    if (g->version != 2 && g->version != 3)
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: GGUF version %u is not supported (2 and 3 are)", g->path, g->version);
    uint64_t n_tensors, n_kv;
    VKF_TRY(rd_u64(r, &n_tensors));
    VKF_TRY(rd_u64(r, &n_kv));
    /* a kv takes at least 8 (key len) + 1 + 4 (type) + 1 bytes, a tensor info 8 + 1 + 4 + 4 + 8 */
    uint64_t left = r->size - r->pos;
    if (n_kv > left / 14)
        return rd_fail(r, "%llu metadata entries cannot fit in the %llu bytes left",
                       (unsigned long long)n_kv, (unsigned long long)left);
    if (n_tensors > left / 25)
        return rd_fail(r, "%llu tensor infos cannot fit in the %llu bytes left",
                       (unsigned long long)n_tensors, (unsigned long long)left);
    g->kvs = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kvs);
    g->kv_sorted = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kv_sorted);
    g->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->tensors);
    g->t_sorted = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->t_sorted);
    if (!g->kvs || !g->kv_sorted || !g->tensors || !g->t_sorted)
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", g->path);

    /* metadata */
    for (uint64_t i = 0; i < n_kv; i++) {
        vkf_gguf_kv *kv = &g->kvs[i];
        snprintf(r->what, sizeof r->what, "key #%llu", (unsigned long long)i);
        const uint8_t *s;
        uint64_t n;
        VKF_TRY(rd_str(r, GGUF_MAX_KEY, &s, &n));
        if (n == 0) return rd_fail(r, "empty key");
        if (memchr(s, 0, (size_t)n)) return rd_fail(r, "key contains a NUL byte");
        kv->key = arena_strndup(g, s, (size_t)n);
        if (!kv->key) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", g->path);
        snprintf(r->what, sizeof r->what, "key %s", kv->key);
        uint32_t type;
        VKF_TRY(rd_u32(r, &type));
        if (type >= VKF_GGUF_TYPE_COUNT) return rd_fail(r, "invalid value type %u", type);
        VKF_TRY(rd_value(g, r, (vkf_gguf_type)type, 0, &kv->value));
        if (type == VKF_GGUF_TYPE_STRING) {
            kv->value.str = arena_strndup(g, kv->value.raw, (size_t)kv->value.count);
            if (!kv->value.str)
                return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", g->path);
        }
        g->kv_sorted[i] = (size_t)i;
        g->n_kvs++;
    }
    vkf_io_names kn = kv_names(g);
    const char *dup = vkf_io_names_sort(&kn, g->kv_sorted, g->n_kvs);
    if (dup) return vkf_error(VKF_ERROR_FORMAT, "%s: duplicate key %s", g->path, dup);

    g->alignment = VKF_GGUF_DEFAULT_ALIGNMENT;
    const vkf_gguf_kv *al = vkf_gguf_find(g, "general.alignment");
    if (al) {
        if (al->value.type != VKF_GGUF_TYPE_UINT32)
            return vkf_error(VKF_ERROR_FORMAT,
                             "%s: key general.alignment: expected uint32, found %s", g->path,
                             vkf_gguf_type_name(al->value.type));
        uint32_t a = (uint32_t)le_u(al->value.raw, 4);
        if (a == 0 || (a & (a - 1)))
            return vkf_error(VKF_ERROR_FORMAT,
                             "%s: key general.alignment: %u is not a power of two", g->path, a);
        g->alignment = a;
    }

    /* tensor infos */
    for (uint64_t i = 0; i < n_tensors; i++) {
        VKF_TRY(gguf_parse_tensor_info(g, r, (size_t)i, &g->tensors[i]));
        g->t_sorted[i] = (size_t)i;
        g->n_tensors++;
    }
    vkf_io_names tn = tensor_names(g);
    dup = vkf_io_names_sort(&tn, g->t_sorted, g->n_tensors);
    if (dup) return vkf_error(VKF_ERROR_FORMAT, "%s: duplicate tensor %s", g->path, dup);

    /* data section: starts at the next multiple of the alignment after the infos */
    uint64_t a = g->alignment, start = ((uint64_t)r->pos + a - 1) / a * a;
    g->data_offset = start;
    if (g->n_tensors && start > r->size)
        return vkf_error(VKF_ERROR_FORMAT,
                         "%s: truncated: the data section would start at %llu, the file has %zu",
                         g->path, (unsigned long long)start, r->size);
    for (size_t i = 0; i < g->n_tensors; i++) {
        vkf_gguf_tensor *t = &g->tensors[i];
        if (t->offset % a)
            return vkf_error(VKF_ERROR_FORMAT,
                             "%s: tensor %s: offset %llu is not a multiple of the alignment %u",
                             g->path, t->name, (unsigned long long)t->offset, g->alignment);
        uint64_t begin, end;
        if (!vkf_io_add_u64(start, t->offset, &begin) || !vkf_io_add_u64(begin, t->nbytes, &end) ||
            end > r->size)
            return vkf_error(VKF_ERROR_FORMAT,
                             "%s: tensor %s: data [%llu, +%zu) extends past the end of the file "
                             "(%zu bytes; %s: blocks of %d elements in %zu bytes)",
                             g->path, t->name, (unsigned long long)t->offset, t->nbytes, r->size,
                             vkf_dtype_name(t->dtype), vkf_dtype_block_elems(t->dtype),
                             vkf_dtype_block_bytes(t->dtype));
        t->offset = begin;
        t->data = g->map.data + begin;
    }
    /* overlaps: sorted by offset, each tensor must start at or after the previous end */
    size_t *by_off = malloc((g->n_tensors ? g->n_tensors : 1) * sizeof *by_off);
    if (!by_off) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", g->path);
    for (size_t i = 0; i < g->n_tensors; i++)
        by_off[i] = i;
    qsort_r(by_off, g->n_tensors, sizeof *by_off, cmp_tensor_off, g->tensors);
    for (size_t i = 1; i < g->n_tensors; i++) {
        const vkf_gguf_tensor *p = &g->tensors[by_off[i - 1]], *t = &g->tensors[by_off[i]];
        if (t->offset < p->offset + p->nbytes) {
            vkf_status s = vkf_error(
                VKF_ERROR_FORMAT,
                "%s: tensors %s [%llu, %llu) and %s [%llu, %llu) overlap (%s %s: blocks of %d "
                "elements in %zu bytes)",
                g->path, p->name, (unsigned long long)(p->offset - start),
                (unsigned long long)(p->offset - start + p->nbytes), t->name,
                (unsigned long long)(t->offset - start),
                (unsigned long long)(t->offset - start + t->nbytes), p->name,
                vkf_dtype_name(p->dtype), vkf_dtype_block_elems(p->dtype),
                vkf_dtype_block_bytes(p->dtype));
            free(by_off);
            return s;
        }
    }
    free(by_off);
    return VKF_OK;
}

/* ------------------------------------------------------------------ public: file */

/* The handle over map, named `name` in errors; borrowed maps (open_memory) are not unmapped
 * at close. On failure map is released as close would. */
static vkf_status gguf_from_map(const char *name, vkf_mapfile map, int borrowed, vkf_gguf **out) {
    vkf_gguf *g = calloc(1, sizeof *g);
    char *path = g ? strdup(name) : NULL;
    if (!path) {
        free(g);
        if (!borrowed) vkf_mapfile_close(&map);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    }
    g->path = path;
    g->map = map;
    g->borrowed = borrowed;
    vkf_status s = gguf_parse(g);
    if (s != VKF_OK) {
        vkf_gguf_close(g);
        return s;
    }
    *out = g;
    return VKF_OK;
}

vkf_status vkf_gguf_open(const char *path, vkf_gguf **out) {
    *out = NULL;
    vkf_mapfile map;
    VKF_TRY(vkf_mapfile_open(path, &map));
    return gguf_from_map(path, map, 0, out);
}

vkf_status vkf_gguf_open_memory(const void *data, size_t size, const char *name, vkf_gguf **out) {
    *out = NULL;
    vkf_mapfile map = {size ? data : NULL, size};
    return gguf_from_map(name ? name : "(memory)", map, 1, out);
}

void vkf_gguf_close(vkf_gguf *g) {
    if (!g) return;
    if (!g->borrowed) vkf_mapfile_close(&g->map);
    while (g->arena) {
        arena_chunk *c = g->arena;
        g->arena = c->next;
        free(c);
    }
    free(g->kvs);
    free(g->kv_sorted);
    free(g->tensors);
    free(g->t_sorted);
    free(g->path);
    free(g);
}

const char *vkf_gguf_path(const vkf_gguf *g) { return g->path; }
uint32_t vkf_gguf_version(const vkf_gguf *g) { return g->version; }
uint32_t vkf_gguf_alignment(const vkf_gguf *g) { return g->alignment; }
uint64_t vkf_gguf_data_offset(const vkf_gguf *g) { return g->data_offset; }

const char *vkf_gguf_architecture(const vkf_gguf *g) {
    const vkf_gguf_kv *kv = vkf_gguf_find(g, "general.architecture");
    return kv && kv->value.type == VKF_GGUF_TYPE_STRING ? kv->value.str : NULL;
}

/* ------------------------------------------------------------------ public: metadata */

size_t vkf_gguf_kv_count(const vkf_gguf *g) { return g->n_kvs; }

const vkf_gguf_kv *vkf_gguf_kv_at(const vkf_gguf *g, size_t i) {
    return i < g->n_kvs ? &g->kvs[i] : NULL;
}

const vkf_gguf_kv *vkf_gguf_find(const vkf_gguf *g, const char *key) {
    vkf_io_names kn = kv_names(g);
    size_t i = vkf_io_names_find(&kn, g->kv_sorted, g->n_kvs, key);
    return i < g->n_kvs ? &g->kvs[i] : NULL;
}

static vkf_status kv_missing(const vkf_gguf *g, const char *key) {
    return vkf_error(VKF_ERROR_FORMAT, "%s: missing key %s", g->path, key);
}

static vkf_status kv_wrong(const vkf_gguf *g, const char *key, const char *want,
                           const vkf_gguf_value *v) {
    if (v->type == VKF_GGUF_TYPE_ARRAY)
        return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: expected %s, found array of %s", g->path,
                         key, want, vkf_gguf_type_name(v->elem_type));
    return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: expected %s, found %s", g->path, key, want,
                     vkf_gguf_type_name(v->type));
}

/* Integer conversion with a range check: [lo, hi] given as sign + magnitude bounds. *neg and
 * *mag are written on every path (0 on a failure): the getters read them after VKF_TRY, which
 * the optimizer cannot see as a return on every failure. */
static vkf_status kv_int(const vkf_gguf *g, const char *key, const vkf_gguf_value *v,
                         const char *want, int64_t lo, uint64_t hi, int *neg, uint64_t *mag) {
    *neg = 0;
    *mag = 0;
    if (!value_is_int(v)) return kv_wrong(g, key, want, v);
    scalar_int(v->type, v->raw, neg, mag);
    int bad = *neg ? (lo >= 0 || *mag > (uint64_t)0 - (uint64_t)lo) : *mag > hi;
    if (bad)
        return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: expected %s, found %s%llu (out of range)",
                         g->path, key, want, *neg ? "-" : "", (unsigned long long)*mag);
    return VKF_OK;
}

#define GGUF_INT_GETTERS(suffix, T, want, lo, hi)                                                  \
    static vkf_status kv_##suffix(const vkf_gguf *g, const char *key, const vkf_gguf_kv *kv,       \
                                  T *out) {                                                        \
        int neg;                                                                                   \
        uint64_t mag;                                                                              \
        VKF_TRY(kv_int(g, key, &kv->value, want, lo, hi, &neg, &mag));                             \
        *out = neg ? (T)(0 - (int64_t)(mag - 1) - 1) : (T)mag;                                     \
        return VKF_OK;                                                                             \
    }                                                                                              \
    vkf_status vkf_gguf_get_##suffix(const vkf_gguf *g, const char *key, T def, T *out) {          \
        const vkf_gguf_kv *kv = vkf_gguf_find(g, key);                                             \
        if (!kv) {                                                                                 \
            *out = def;                                                                            \
            return VKF_OK;                                                                         \
        }                                                                                          \
        return kv_##suffix(g, key, kv, out);                                                       \
    }                                                                                              \
    vkf_status vkf_gguf_require_##suffix(const vkf_gguf *g, const char *key, T *out) {             \
        const vkf_gguf_kv *kv = vkf_gguf_find(g, key);                                             \
        return kv ? kv_##suffix(g, key, kv, out) : kv_missing(g, key);                             \
    }

GGUF_INT_GETTERS(u32, uint32_t, "uint32", 0, UINT32_MAX)
GGUF_INT_GETTERS(i32, int32_t, "int32", INT32_MIN, INT32_MAX)
GGUF_INT_GETTERS(u64, uint64_t, "uint64", 0, UINT64_MAX)
GGUF_INT_GETTERS(i64, int64_t, "int64", INT64_MIN, INT64_MAX)

static vkf_status kv_f64(const vkf_gguf *g, const char *key, const vkf_gguf_kv *kv, double *out) {
    const vkf_gguf_value *v = &kv->value;
    if (v->type != VKF_GGUF_TYPE_FLOAT32 && v->type != VKF_GGUF_TYPE_FLOAT64 && !value_is_int(v))
        return kv_wrong(g, key, "a number", v);
    *out = scalar_float(v->type, v->raw);
    return VKF_OK;
}

vkf_status vkf_gguf_get_f64(const vkf_gguf *g, const char *key, double def, double *out) {
    const vkf_gguf_kv *kv = vkf_gguf_find(g, key);
    if (!kv) {
        *out = def;
        return VKF_OK;
    }
    return kv_f64(g, key, kv, out);
}

vkf_status vkf_gguf_require_f64(const vkf_gguf *g, const char *key, double *out) {
    const vkf_gguf_kv *kv = vkf_gguf_find(g, key);
    return kv ? kv_f64(g, key, kv, out) : kv_missing(g, key);
}

vkf_status vkf_gguf_get_f32(const vkf_gguf *g, const char *key, float def, float *out) {
    double d;
    VKF_TRY(vkf_gguf_get_f64(g, key, def, &d));
    *out = (float)d;
    return VKF_OK;
}

vkf_status vkf_gguf_require_f32(const vkf_gguf *g, const char *key, float *out) {
    double d;
    VKF_TRY(vkf_gguf_require_f64(g, key, &d));
    *out = (float)d;
    return VKF_OK;
}

static vkf_status kv_bool(const vkf_gguf *g, const char *key, const vkf_gguf_kv *kv, int *out) {
    if (kv->value.type != VKF_GGUF_TYPE_BOOL) return kv_wrong(g, key, "bool", &kv->value);
    *out = kv->value.raw[0] != 0;
    return VKF_OK;
}

vkf_status vkf_gguf_get_bool(const vkf_gguf *g, const char *key, int def, int *out) {
    const vkf_gguf_kv *kv = vkf_gguf_find(g, key);
    if (!kv) {
        *out = def;
        return VKF_OK;
    }
    return kv_bool(g, key, kv, out);
}

vkf_status vkf_gguf_require_bool(const vkf_gguf *g, const char *key, int *out) {
    const vkf_gguf_kv *kv = vkf_gguf_find(g, key);
    return kv ? kv_bool(g, key, kv, out) : kv_missing(g, key);
}

vkf_status vkf_gguf_get_str(const vkf_gguf *g, const char *key, const char *def, const char **out) {
    const vkf_gguf_kv *kv = vkf_gguf_find(g, key);
    if (!kv) {
        *out = def;
        return VKF_OK;
    }
    if (kv->value.type != VKF_GGUF_TYPE_STRING) return kv_wrong(g, key, "string", &kv->value);
    *out = kv->value.str;
    return VKF_OK;
}

vkf_status vkf_gguf_require_str(const vkf_gguf *g, const char *key, const char **out) {
    if (!vkf_gguf_find(g, key)) return kv_missing(g, key);
    return vkf_gguf_get_str(g, key, NULL, out);
}

vkf_status vkf_gguf_get_arr(const vkf_gguf *g, const char *key, int elem_type,
                            const vkf_gguf_value **out) {
    *out = NULL;
    const vkf_gguf_kv *kv = vkf_gguf_find(g, key);
    if (!kv) return VKF_OK;
    const vkf_gguf_value *v = &kv->value;
    if (v->type != VKF_GGUF_TYPE_ARRAY ||
        (elem_type >= 0 && v->elem_type != (vkf_gguf_type)elem_type)) {
        char want[64];
        snprintf(want, sizeof want, "array of %s",
                 elem_type >= 0 ? vkf_gguf_type_name((vkf_gguf_type)elem_type) : "anything");
        return kv_wrong(g, key, want, v);
    }
    *out = v;
    return VKF_OK;
}

vkf_status vkf_gguf_require_arr(const vkf_gguf *g, const char *key, int elem_type,
                                const vkf_gguf_value **out) {
    *out = NULL;
    if (!vkf_gguf_find(g, key)) return kv_missing(g, key);
    return vkf_gguf_get_arr(g, key, elem_type, out);
}

int64_t vkf_gguf_arr_int(const vkf_gguf_value *a, uint64_t i) {
    if (a->type != VKF_GGUF_TYPE_ARRAY || i >= a->count) return 0;
    vkf_gguf_type t = a->elem_type;
    if (t == VKF_GGUF_TYPE_BOOL) return a->raw[i] != 0;
    vkf_gguf_value tmp = {.type = t};
    if (!value_is_int(&tmp)) return 0;
    size_t n = type_size(t);
    int neg;
    uint64_t mag;
    scalar_int(t, a->raw + i * n, &neg, &mag);
    return neg ? 0 - (int64_t)(mag - 1) - 1 : (int64_t)mag;
}

double vkf_gguf_arr_float(const vkf_gguf_value *a, uint64_t i) {
    if (a->type != VKF_GGUF_TYPE_ARRAY || i >= a->count) return 0;
    size_t n = type_size(a->elem_type);
    return n ? scalar_float(a->elem_type, a->raw + i * n) : 0;
}

const char *vkf_gguf_arr_str(const vkf_gguf_value *a, uint64_t i, size_t *len) {
    if (a->type != VKF_GGUF_TYPE_ARRAY || a->elem_type != VKF_GGUF_TYPE_STRING || i >= a->count) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = (size_t)a->elems[i].count;
    return (const char *)a->elems[i].raw;
}

const vkf_gguf_value *vkf_gguf_arr_elem(const vkf_gguf_value *a, uint64_t i) {
    if (a->type != VKF_GGUF_TYPE_ARRAY || !a->elems || i >= a->count) return NULL;
    return &a->elems[i];
}

/* ------------------------------------------------------------------ public: tensors */

size_t vkf_gguf_tensor_count(const vkf_gguf *g) { return g->n_tensors; }

const vkf_gguf_tensor *vkf_gguf_tensor_at(const vkf_gguf *g, size_t i) {
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const vkf_gguf_tensor *vkf_gguf_find_tensor(const vkf_gguf *g, const char *name) {
    vkf_io_names tn = tensor_names(g);
    size_t i = vkf_io_names_find(&tn, g->t_sorted, g->n_tensors, name);
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

vkf_status vkf_gguf_get_tensor(const vkf_gguf *g, const char *name, int dtype, int n_dims,
                               const int64_t *ne, const vkf_gguf_tensor **out) {
    *out = NULL;
    const vkf_gguf_tensor *t = vkf_gguf_find_tensor(g, name);
    if (!t) return vkf_error(VKF_ERROR_FORMAT, "%s: missing tensor %s", g->path, name);
    int ok = dtype < 0 || t->dtype == (vkf_dtype)dtype;
    if (n_dims > VKF_GGUF_MAX_DIMS) ok = 0;
    if (ok && n_dims >= 0) {
        /* compare over both ranks, a missing dim counting as 1 */
        for (int d = 0; d < VKF_GGUF_MAX_DIMS; d++) {
            int64_t want = d < n_dims ? (ne ? ne[d] : -1) : 1;
            if (want >= 0 && want != t->ne[d]) ok = 0;
        }
    }
    if (!ok) {
        char want[160], have[160];
        if (n_dims >= 0 && ne)
            vkf_io_format_dims(want, sizeof want, n_dims, ne);
        else if (n_dims >= 0)
            snprintf(want, sizeof want, "n_dims %d", n_dims);
        else
            snprintf(want, sizeof want, "any shape");
        vkf_io_format_dims(have, sizeof have, t->n_dims, t->ne);
        return vkf_error(VKF_ERROR_FORMAT, "%s: tensor %s: expected %s ne %s, found %s ne %s",
                         g->path, name, dtype < 0 ? "any type" : vkf_dtype_name((vkf_dtype)dtype),
                         want, vkf_dtype_name(t->dtype), have);
    }
    *out = t;
    return VKF_OK;
}
