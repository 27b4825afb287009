/* GGUF writer (see gguf_write.h). Metadata entries are kept serialized (key, type, value bytes)
 * so a copied value never refers back to its source file. */
#include "io/gguf_write.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

typedef struct wkv {
    char *key;
    uint8_t *bytes; /* serialized: key length, key, type, value */
    size_t n;
} wkv;

typedef struct wtensor {
    char *name;
    uint32_t type;
    int n_dims;
    int64_t ne[VKF_GGUF_MAX_DIMS];
    uint64_t nbytes, offset;
} wtensor;

struct vkf_gguf_writer {
    wkv *kvs;
    size_t n_kvs, cap_kvs;
    wtensor *ts;
    size_t n_ts, cap_ts;
    uint32_t alignment;
    FILE *f;
    char *path, *part; /* path: the file written (a symlink's target); part: path.part, or NULL
                          when path is written through in place (not a regular file) */
    size_t next;       /* next tensor to write */
    uint64_t pos, size;
};

/* ------------------------------------------------------------------ byte buffer */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} buf;

static void put(buf *b, const void *src, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_u32(buf *b, uint32_t v) {
    uint8_t s[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, s, 4);
}

static void put_u64(buf *b, uint64_t v) {
    uint8_t s[8];
    for (int i = 0; i < 8; i++)
        s[i] = (uint8_t)(v >> (8 * i));
    put(b, s, 8);
}

static void put_str(buf *b, const void *s, uint64_t n) {
    put_u64(b, n);
    put(b, s, (size_t)n);
}

static size_t scalar_size(vkf_gguf_type t) {
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

/* The value's bytes without its type tag (arrays: element type, count, elements). */
static void put_value(buf *b, const vkf_gguf_value *v) {
    if (v->type == VKF_GGUF_TYPE_STRING) {
        put_str(b, v->raw, v->count);
    } else if (v->type == VKF_GGUF_TYPE_ARRAY) {
        put_u32(b, (uint32_t)v->elem_type);
        put_u64(b, v->count);
        if (v->elem_type == VKF_GGUF_TYPE_STRING || v->elem_type == VKF_GGUF_TYPE_ARRAY) {
            for (uint64_t i = 0; i < v->count; i++)
                put_value(b, &v->elems[i]); /* no per-element tag */
        } else {
            put(b, v->raw, (size_t)(v->count * scalar_size(v->elem_type)));
        }
    } else {
        put(b, v->raw, scalar_size(v->type));
    }
}

/* ------------------------------------------------------------------ metadata */

vkf_status vkf_gguf_writer_create(vkf_gguf_writer **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "gguf writer: out of memory");
    (*out)->alignment = VKF_GGUF_DEFAULT_ALIGNMENT;
    return VKF_OK;
}

void vkf_gguf_writer_free(vkf_gguf_writer *w) {
    if (!w) return;
    if (w->f) {
        fclose(w->f);
        if (w->part) remove(w->part); /* a file written through is never removed */
    }
    for (size_t i = 0; i < w->n_kvs; i++) {
        free(w->kvs[i].key);
        free(w->kvs[i].bytes);
    }
    for (size_t i = 0; i < w->n_ts; i++)
        free(w->ts[i].name);
    free(w->kvs);
    free(w->ts);
    free(w->path);
    free(w->part);
    free(w);
}

void vkf_gguf_writer_remove_kv(vkf_gguf_writer *w, const char *key) {
    for (size_t i = 0; i < w->n_kvs; i++)
        if (!strcmp(w->kvs[i].key, key)) {
            free(w->kvs[i].key);
            free(w->kvs[i].bytes);
            memmove(&w->kvs[i], &w->kvs[i + 1], (w->n_kvs - i - 1) * sizeof *w->kvs);
            w->n_kvs--;
            return;
        }
}

/* Appends key with its serialized entry (takes b's memory). */
static vkf_status add_kv(vkf_gguf_writer *w, const char *key, buf *b) {
    if (b->oom) {
        free(b->p);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "gguf writer: out of memory (key %s)", key);
    }
    vkf_gguf_writer_remove_kv(w, key);
    if (w->n_kvs == w->cap_kvs) {
        size_t cap = w->cap_kvs ? w->cap_kvs * 2 : 32;
        wkv *p = realloc(w->kvs, cap * sizeof *p);
        if (!p) {
            free(b->p);
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "gguf writer: out of memory");
        }
        w->kvs = p;
        w->cap_kvs = cap;
    }
    char *k = strdup(key);
    if (!k) {
        free(b->p);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "gguf writer: out of memory");
    }
    w->kvs[w->n_kvs++] = (wkv){k, b->p, b->n};
    return VKF_OK;
}

vkf_status vkf_gguf_writer_copy_kv(vkf_gguf_writer *w, const vkf_gguf_kv *kv) {
    buf b = {0};
    put_str(&b, kv->key, strlen(kv->key));
    put_u32(&b, (uint32_t)kv->value.type);
    put_value(&b, &kv->value);
    if (!strcmp(kv->key, "general.alignment") && kv->value.type == VKF_GGUF_TYPE_UINT32) {
        const uint8_t *r = kv->value.raw;
        w->alignment =
            (uint32_t)r[0] | (uint32_t)r[1] << 8 | (uint32_t)r[2] << 16 | (uint32_t)r[3] << 24;
    }
    return add_kv(w, kv->key, &b);
}

vkf_status vkf_gguf_writer_set_u32(vkf_gguf_writer *w, const char *key, uint32_t v) {
    buf b = {0};
    put_str(&b, key, strlen(key));
    put_u32(&b, VKF_GGUF_TYPE_UINT32);
    put_u32(&b, v);
    if (!strcmp(key, "general.alignment")) w->alignment = v;
    return add_kv(w, key, &b);
}

vkf_status vkf_gguf_writer_set_str(vkf_gguf_writer *w, const char *key, const char *v) {
    buf b = {0};
    put_str(&b, key, strlen(key));
    put_u32(&b, VKF_GGUF_TYPE_STRING);
    put_str(&b, v, strlen(v));
    return add_kv(w, key, &b);
}

vkf_status vkf_gguf_writer_set_f32(vkf_gguf_writer *w, const char *key, float v) {
    buf b = {0};
    uint32_t bits;
    memcpy(&bits, &v, 4);
    put_str(&b, key, strlen(key));
    put_u32(&b, VKF_GGUF_TYPE_FLOAT32);
    put_u32(&b, bits);
    return add_kv(w, key, &b);
}

vkf_status vkf_gguf_writer_set_bool(vkf_gguf_writer *w, const char *key, int v) {
    buf b = {0};
    uint8_t one = v ? 1 : 0;
    put_str(&b, key, strlen(key));
    put_u32(&b, VKF_GGUF_TYPE_BOOL);
    put(&b, &one, 1);
    return add_kv(w, key, &b);
}

vkf_status vkf_gguf_writer_set_arr_str(vkf_gguf_writer *w, const char *key, const char *const *strs,
                                       const size_t *lens, uint64_t n) {
    buf b = {0};
    put_str(&b, key, strlen(key));
    put_u32(&b, VKF_GGUF_TYPE_ARRAY);
    put_u32(&b, VKF_GGUF_TYPE_STRING);
    put_u64(&b, n);
    for (uint64_t i = 0; i < n; i++)
        put_str(&b, strs[i], lens ? lens[i] : strlen(strs[i]));
    return add_kv(w, key, &b);
}

vkf_status vkf_gguf_writer_set_arr_i32(vkf_gguf_writer *w, const char *key, const int32_t *v,
                                       uint64_t n) {
    buf b = {0};
    put_str(&b, key, strlen(key));
    put_u32(&b, VKF_GGUF_TYPE_ARRAY);
    put_u32(&b, VKF_GGUF_TYPE_INT32);
    put_u64(&b, n);
    for (uint64_t i = 0; i < n; i++)
        put_u32(&b, (uint32_t)v[i]);
    return add_kv(w, key, &b);
}

/* ------------------------------------------------------------------ tensors and file */

vkf_status vkf_gguf_writer_add_tensor(vkf_gguf_writer *w, const char *name, uint32_t ggml_type,
                                      int n_dims, const int64_t *ne, uint64_t nbytes) {
    if (w->f)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "gguf writer: tensor %s added after begin",
                         name);
    if (n_dims < 1 || n_dims > VKF_GGUF_MAX_DIMS)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "gguf writer: tensor %s: %d dims", name,
                         n_dims);
    if (w->n_ts == w->cap_ts) {
        size_t cap = w->cap_ts ? w->cap_ts * 2 : 64;
        wtensor *p = realloc(w->ts, cap * sizeof *p);
        if (!p) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "gguf writer: out of memory");
        w->ts = p;
        w->cap_ts = cap;
    }
    wtensor *t = &w->ts[w->n_ts];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    if (!t->name) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "gguf writer: out of memory");
    t->type = ggml_type;
    t->n_dims = n_dims;
    for (int i = 0; i < n_dims; i++)
        t->ne[i] = ne[i];
    t->nbytes = nbytes;
    w->n_ts++;
    return VKF_OK;
}

static uint64_t pad_to(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static const char *writing(const vkf_gguf_writer *w) { return w->part ? w->part : w->path; }

static vkf_status write_bytes(vkf_gguf_writer *w, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, w->f) != n)
        return vkf_error(VKF_ERROR_IO, "%s: write failed: %s", writing(w), strerror(errno));
    w->pos += n;
    return VKF_OK;
}

static vkf_status write_zeros(vkf_gguf_writer *w, uint64_t n) {
    static const uint8_t z[64];
    while (n) {
        size_t k = n < sizeof z ? (size_t)n : sizeof z;
        VKF_TRY(write_bytes(w, z, k));
        n -= k;
    }
    return VKF_OK;
}

/* path with its symbolic links followed (a dangling link gives the path it points at), malloc'ed;
 * NULL with errno set after a loop or an unreadable link. */
static char *follow_links(const char *path) {
    char *cur = strdup(path);
    for (int hops = 0; cur; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
        char target[PATH_MAX];
        ssize_t n = hops < 40 ? readlink(cur, target, sizeof target - 1) : -1;
        if (n < 0) {
            if (hops >= 40) errno = ELOOP;
            free(cur);
            return NULL;
        }
        target[n] = 0;
        const char *slash = strrchr(cur, '/');
        size_t dir = target[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
        char *next = malloc(dir + (size_t)n + 1);
        if (next) {
            memcpy(next, cur, dir);
            memcpy(next + dir, target, (size_t)n + 1);
        }
        free(cur);
        cur = next;
    }
    errno = ENOMEM;
    return NULL;
}

/* Opens the output. A symbolic link is followed (the link keeps pointing at the new file). A
 * regular file, or nothing, is written to TARGET.part and renamed over TARGET at finish, so an
 * old file stays whole until the new one is complete. Anything else (a device such as
 * /dev/null, a FIFO) is written through in place: never renamed over, never removed. */
static vkf_status open_output(vkf_gguf_writer *w, const char *path) {
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return vkf_error(VKF_ERROR_IO, "%s: is a directory (expected a file name)", path);
        if (!S_ISREG(st.st_mode)) { /* opened by its own name: /dev/stdout's link is the kernel's */
            if (!(w->path = strdup(path)))
                return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "gguf writer: out of memory");
            if (!(w->f = fopen(path, "wb")))
                return vkf_error(VKF_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
            return VKF_OK;
        }
        w->path = realpath(path, NULL);
    } else if (errno != ENOENT) {
        return vkf_error(VKF_ERROR_IO, "%s: %s", path, strerror(errno));
    }
    if (!w->path && !(w->path = follow_links(path))) /* nothing there, or a dangling link */
        return errno == ENOMEM ? vkf_error(VKF_ERROR_OUT_OF_MEMORY, "gguf writer: out of memory")
                               : vkf_error(VKF_ERROR_IO, "%s: cannot follow the link: %s", path,
                                           strerror(errno));
    size_t n = strlen(w->path);
    if (!(w->part = malloc(n + 6)))
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "gguf writer: out of memory");
    memcpy(w->part, w->path, n);
    memcpy(w->part + n, ".part", 6);
    /* a stale .part file (an interrupted run) is replaced; a link there is not followed */
    if (lstat(w->part, &st) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) unlink(w->part);
    int fd = open(w->part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 || !(w->f = fdopen(fd, "wb"))) {
        vkf_status s = vkf_error(VKF_ERROR_IO, "%s: cannot create: %s", w->part, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(w->part);
        }
        free(w->part);
        w->part = NULL;
        return s;
    }
    return VKF_OK;
}

vkf_status vkf_gguf_writer_begin(vkf_gguf_writer *w, const char *path) {
    if (w->f) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "gguf writer: begun twice");
    if (!w->alignment || (w->alignment & (w->alignment - 1)))
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "gguf writer: alignment %u is not a power of two", w->alignment);
    buf b = {0};
    put(&b, "GGUF", 4);
    put_u32(&b, 3);
    put_u64(&b, w->n_ts);
    put_u64(&b, w->n_kvs);
    for (size_t i = 0; i < w->n_kvs; i++)
        put(&b, w->kvs[i].bytes, w->kvs[i].n);
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_ts; i++) {
        wtensor *t = &w->ts[i];
        t->offset = off;
        off += pad_to(t->nbytes, w->alignment);
        put_str(&b, t->name, strlen(t->name));
        put_u32(&b, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++)
            put_u64(&b, (uint64_t)t->ne[d]);
        put_u32(&b, t->type);
        put_u64(&b, t->offset);
    }
    if (b.oom) {
        free(b.p);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "gguf writer: out of memory");
    }
    vkf_status s = open_output(w, path);
    if (s != VKF_OK) {
        free(b.p);
        return s;
    }
    w->size = pad_to(b.n, w->alignment) + off;
    s = write_bytes(w, b.p, b.n);
    free(b.p);
    if (s == VKF_OK) s = write_zeros(w, pad_to(w->pos, w->alignment) - w->pos);
    return s;
}

vkf_status vkf_gguf_writer_write(vkf_gguf_writer *w, const void *data, uint64_t nbytes) {
    if (!w->f || w->next >= w->n_ts)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "gguf writer: no tensor left to write");
    wtensor *t = &w->ts[w->next];
    if (nbytes != t->nbytes)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "gguf writer: tensor %s: %llu bytes, expected %llu", t->name,
                         (unsigned long long)nbytes, (unsigned long long)t->nbytes);
    VKF_TRY(write_bytes(w, data, (size_t)nbytes));
    VKF_TRY(write_zeros(w, pad_to(nbytes, w->alignment) - nbytes));
    w->next++;
    return VKF_OK;
}

vkf_status vkf_gguf_writer_finish(vkf_gguf_writer *w) {
    if (!w->f) return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "gguf writer: not begun");
    if (w->next != w->n_ts)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "gguf writer: %s: %zu of %zu tensors written",
                         w->path, w->next, w->n_ts);
    errno = 0;
    int bad = fflush(w->f) != 0 || ferror(w->f);
    int err = errno;
    if (fclose(w->f) != 0 && !bad) bad = 1, err = errno;
    w->f = NULL;
    if (bad) {
        vkf_status s = vkf_error(VKF_ERROR_IO, "%s: write failed: %s", writing(w),
                                 err ? strerror(err) : "an I/O error");
        if (w->part) remove(w->part);
        return s;
    }
    if (!w->part) return VKF_OK; /* written through in place */
    if (rename(w->part, w->path) != 0) {
        vkf_status s = vkf_error(VKF_ERROR_IO, "%s: cannot rename to %s: %s", w->part, w->path,
                                 strerror(errno));
        remove(w->part);
        return s;
    }
    return VKF_OK;
}

uint64_t vkf_gguf_writer_file_size(const vkf_gguf_writer *w) { return w->size; }
