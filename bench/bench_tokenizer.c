/* Tokenizer speed: MB/s of encode (and decode) on the 1 MiB test text for every tokenizer kind
 * under tests/data/tokenizers, the real Llama-3 and Qwen3 tokenizer.json files included
 * (real_*: tokenizer.json.xz, decompressed with xz) (the text is generated from seed.txt as
 * tools/tokenizers/big_text.py does). One thread; the best of --reps runs after one warm-up run
 * (the warm-up fills the pre-token cache, as a long-running process would have it).
 *
 *   vkformer bench --tokenizer [--data DIR] [--text FILE] [--kind NAME] [--reps N] [--json]
 *
 * The reference libraries' speeds on the same text come from tools/tokenizers/bench_ref.js and
 * bench_ref.py; bench/RESULTS.md records both. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench.h"
#include "frontend/args.h"
#include "tokenizer/tokenizer.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *p = malloc(cap);
    size_t got;
    while (p && (got = fread(p + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *q = realloc(p, cap *= 2);
            if (!q) {
                free(p);
                p = NULL;
            }
            p = q;
        }
    }
    fclose(f);
    if (p) *n = len;
    return p;
}

/* tools/tokenizers/big_text.py: seed lines drawn by xorshift64 until the text has 1 MiB. */
static char *big_text(const char *seed_path, size_t *len) {
    size_t n;
    char *seed = read_all(seed_path, &n);
    if (!seed) return NULL;
    size_t n_lines = 0;
    for (size_t i = 0; i < n; i++)
        n_lines += seed[i] == '\n';
    if (n && seed[n - 1] != '\n') n_lines++;
    if (!n_lines) {
        free(seed);
        return NULL;
    }
    const char **line = malloc(n_lines * sizeof *line);
    size_t *ll = malloc(n_lines * sizeof *ll);
    size_t cap = (1u << 20) + 65536, m = 0;
    char *out = malloc(cap);
    if (!line || !ll || !out) {
        free(line);
        free(ll);
        free(out);
        free(seed);
        return NULL;
    }
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n ? start < n : seed[i] == '\n') {
            line[k] = seed + start;
            ll[k++] = i - start;
            start = i + 1;
        }
    uint64_t x = 0x9E3779B97F4A7C15ull;
    while (m < (1u << 20)) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t j = (size_t)(x % n_lines);
        if (m + ll[j] + 1 > cap) break; /* lines are short: cannot happen with this seed */
        memcpy(out + m, line[j], ll[j]);
        m += ll[j];
        out[m++] = '\n';
    }
    free(line);
    free(ll);
    free(seed);
    *len = m;
    return out;
}

/* DIR/tokenizer.json.xz (the real Llama-3 and Qwen3 files), decompressed by the xz tool. */
static vkf_status open_xz(const char *dir, vkf_tokenizer **t) {
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "xz -dc '%s/tokenizer.json.xz'", dir);
    FILE *f = popen(cmd, "r");
    if (!f) return VKF_ERROR_IO;
    size_t cap = 1 << 24, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    int ok = pclose(f) == 0 && buf && n;
    vkf_status s = ok ? vkf_tokenizer_from_hf_json_memory(buf, n, dir, t) : VKF_ERROR_IO;
    free(buf);
    return s;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int vkf_bench_tokenizer(int argc, char **argv) {
    const char *data = "tests/data/tokenizers", *text_path = NULL, *only = NULL;
    int reps = 3, json = 0, mode = 0;
    vkf_arg args[] = {
        {"--tokenizer", VKF_ARG_SET, &mode, .hidden = 1},
        {"--data", VKF_ARG_STR, &data, .metavar = "DIR",
         .help = "tokenizer directories (tests/data/tokenizers)"},
        {"--text", VKF_ARG_STR, &text_path, .metavar = "FILE",
         .help = "the text (default: DIR/seed.txt, repeated)"},
        {"--kind", VKF_ARG_STR, &only, .metavar = "NAME", .help = "only this tokenizer directory"},
        {"--reps", VKF_ARG_INT, &reps, .min = 1, .max = 1000, .metavar = "N",
         .help = "runs (default 3)"},
        {"--json", VKF_ARG_SET, &json, .help = "JSON output"},
        {0}};
    vkf_cmd_spec spec = {
        "bench --tokenizer", "[--data DIR] [--text FILE] [--kind NAME] [--reps N] [--json]",
        "Tokenizer throughput (MB/s) of every tokenizer directory.", args, .epilog = NULL};
    int prc = vkf_args_parse(&spec, argc, argv);
    if (prc >= 0) return prc;
    if (reps < 1) reps = 1;
    size_t len = 0;
    char *text;
    if (text_path) {
        text = read_all(text_path, &len);
    } else {
        char seed[4096];
        snprintf(seed, sizeof seed, "%s/seed.txt", data);
        text = big_text(seed, &len);
    }
    if (!text) {
        fprintf(stderr,
                "vkformer bench: cannot read the text (%s); give --data DIR (the "
                "repository's tests/data/tokenizers) or --text FILE\n",
                text_path ? text_path : data);
        return 1;
    }
    DIR *d = opendir(data);
    if (!d) {
        fprintf(stderr, "vkformer bench: cannot open %s\n", data);
        free(text);
        return 1;
    }
    char **names = NULL;
    size_t n_names = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char p[4200];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", data, e->d_name);
        if (e->d_name[0] == '.' || stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (only && strcmp(only, e->d_name) != 0) continue;
        char **v = realloc(names, (n_names + 1) * sizeof *v);
        if (!v) break;
        names = v;
        names[n_names++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n_names, sizeof *names, cmp_name);
    cJSON *rows = json ? cJSON_CreateArray() : NULL;
    if (!json)
        printf("tokenizer on %.2f MB (1 thread, best of %d)\n%-16s %-13s %10s %10s %12s\n",
               (double)len / 1e6, reps, "name", "kind", "encode MB/s", "decode MB/s", "tokens");
    int rc = 0;
    for (size_t k = 0; k < n_names; k++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", data, names[k]);
        vkf_tokenizer *t;
        char xz[4300];
        struct stat xst;
        snprintf(xz, sizeof xz, "%s/tokenizer.json.xz", p);
        int is_xz = stat(xz, &xst) == 0;
        if ((is_xz ? open_xz(p, &t) : vkf_tokenizer_open_auto(p, &t)) != VKF_OK) {
            fprintf(stderr, "vkformer bench: %s: %s\n", p, vkf_last_error());
            rc = 1;
            continue;
        }
        int32_t *ids = NULL;
        size_t n = 0;
        double enc = 1e30, dec = 1e30;
        for (int r = 0; r <= reps; r++) { /* run 0 warms up */
            free(ids);
            double t0 = now_s();
            if (vkf_tokenizer_encode_ex(t, text, len, 0, 1, &ids, &n) != VKF_OK) {
                fprintf(stderr, "vkformer bench: %s: %s\n", names[k], vkf_last_error());
                rc = 1;
                ids = NULL;
                break;
            }
            double dt = now_s() - t0;
            if (r && dt < enc) enc = dt;
            char *out = NULL;
            size_t ol;
            t0 = now_s();
            if (vkf_tokenizer_decode(t, ids, n, &out, &ol) == VKF_OK) {
                dt = now_s() - t0;
                if (r && dt < dec) dec = dt;
            }
            free(out);
        }
        if (ids) {
            double emb = (double)len / 1e6 / enc, dmb = (double)len / 1e6 / dec;
            if (json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "name", names[k]);
                cJSON_AddStringToObject(o, "kind", vkf_tokenizer_kind(t));
                cJSON_AddNumberToObject(o, "encode_mb_per_s", emb);
                cJSON_AddNumberToObject(o, "decode_mb_per_s", dmb);
                cJSON_AddNumberToObject(o, "tokens", (double)n);
                cJSON_AddNumberToObject(o, "bytes", (double)len);
                cJSON_AddItemToArray(rows, o);
            } else {
                printf("%-16s %-13s %10.2f %10.2f %12zu\n", names[k], vkf_tokenizer_kind(t), emb,
                       dmb, n);
            }
        }
        free(ids);
        vkf_tokenizer_free(t);
    }
    if (json) {
        char *s = cJSON_PrintUnformatted(rows);
        printf("%s\n", s ? s : "[]");
        free(s);
        cJSON_Delete(rows);
    }
    for (size_t k = 0; k < n_names; k++)
        free(names[k]);
    free(names);
    free(text);
    return rc;
}
