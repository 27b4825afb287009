/* `vkformer bench --compare [DIR]`: every side-by-side run in DIR (default bench/results), one
 * JSON file per device and call as bench/gpu-check.sh `peer` writes them:
 *
 *   {"device": "NVIDIA H100", "driver": "...", "date": "2026-11-28T07:00:00Z",
 *    "probes": {"copy_gbs": 2600.0, "fma_gflops": 51000.0},
 *    "runs": [{"engine": "vkformer" | "llama.cpp", "model": "tinyllama-1.1b", "type": "Q4_0",
 *              "test": "pp512" | "tg128", "depth": 0, "ts": 410.2, "model_bytes": 636790976}]}
 *
 * rendered as one markdown table (stdout): per device, model, type and test, both engines'
 * tokens/s, their ratio (vkformer / llama.cpp) and, for generation, the fraction of the copy
 * probe's bandwidth each reaches (model_bytes * t/s / copy_gbs: a decode step reads every weight
 * once); and one SVG chart of the same (t/s on a log axis above, the fraction of copy below).
 * A file that does not have this shape is refused with its name and the field. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "bench_svg.h"
#include "frontend/args.h"

#define CMP_ENGINES 2
static const char *const cmp_engines[CMP_ENGINES] = {"vkformer", "llama.cpp"};

/* one table row: a (device run, model, type, test, depth) and both engines' figures */
typedef struct cmp_row {
    const char *device, *date, *model, *type, *test; /* strings of the parsed JSON */
    int depth;
    double copy_gbs;
    double ts[CMP_ENGINES];          /* 0: not measured */
    double model_bytes[CMP_ENGINES]; /* of that engine's run */
} cmp_row;

typedef struct cmp_set {
    cJSON **docs;
    int n_docs;
    cmp_row *rows;
    int n_rows, cap_rows;
} cmp_set;

static void cmp_free(cmp_set *c) {
    for (int i = 0; i < c->n_docs; i++)
        cJSON_Delete(c->docs[i]);
    free(c->docs);
    free(c->rows);
}

/* ---------------------------------------------------------------- reading and checking */

static char *cmp_slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *t = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long l = ftell(f);
        if (l >= 0 && fseek(f, 0, SEEK_SET) == 0 && (t = malloc((size_t)l + 1)) != NULL) {
            if (fread(t, 1, (size_t)l, f) != (size_t)l) {
                free(t);
                t = NULL;
            } else {
                t[l] = 0;
                *len = (size_t)l;
            }
        }
    }
    fclose(f);
    return t;
}

/* a string field of o, or NULL after printing "PATH: FIELD: expected a string" */
static const char *cmp_str(const char *path, const cJSON *o, const char *key, const char *where) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v) && v->valuestring[0]) return v->valuestring;
    fprintf(stderr, "vkformer: bench --compare: %s: %s%s: expected a non-empty string, %s\n", path,
            where, key, v ? "found another type" : "missing");
    return NULL;
}

/* a number field of o within [lo, hi] (and an integer if integral), or NAN after printing */
static double cmp_num(const char *path, const cJSON *o, const char *key, const char *where,
                      double lo, int integral) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (isfinite(x) && x >= lo && (!integral || x == floor(x))) return x;
    fprintf(stderr, "vkformer: bench --compare: %s: %s%s: expected %s >= %g, %s\n", path, where,
            key, integral ? "an integer" : "a number", lo,
            !v                  ? "missing"
            : cJSON_IsNumber(v) ? "out of range"
                                : "found another type");
    return NAN;
}

static cmp_row *cmp_row_get(cmp_set *c, const cmp_row *key) {
    for (int i = 0; i < c->n_rows; i++) {
        cmp_row *r = &c->rows[i];
        if (r->device == key->device && r->date == key->date && !strcmp(r->model, key->model) &&
            !strcmp(r->type, key->type) && !strcmp(r->test, key->test) && r->depth == key->depth)
            return r;
    }
    if (c->n_rows == c->cap_rows) {
        int cap = c->cap_rows ? 2 * c->cap_rows : 32;
        cmp_row *n = realloc(c->rows, sizeof *n * (size_t)cap);
        if (!n) return NULL;
        c->rows = n;
        c->cap_rows = cap;
    }
    c->rows[c->n_rows] = *key;
    return &c->rows[c->n_rows++];
}

/* Checks one file's shape and adds its runs; 1 (after printing why) if it is malformed. */
static int cmp_add_file(cmp_set *c, const char *path) {
    size_t len = 0;
    char *txt = cmp_slurp(path, &len);
    if (!txt) {
        fprintf(stderr, "vkformer: bench --compare: %s: cannot read it\n", path);
        return 1;
    }
    const char *end = NULL;
    cJSON *doc = strlen(txt) == len ? cJSON_ParseWithOpts(txt, &end, 1) : NULL; /* no NUL inside */
    if (!doc) {
        fprintf(stderr, "vkformer: bench --compare: %s: not JSON (at byte %ld)\n", path,
                end ? (long)(end - txt) : 0L);
        free(txt);
        return 1;
    }
    free(txt);
    cJSON **docs = realloc(c->docs, sizeof *docs * (size_t)(c->n_docs + 1));
    if (!docs) {
        cJSON_Delete(doc);
        return 1;
    }
    c->docs = docs;
    c->docs[c->n_docs++] = doc;
    if (!cJSON_IsObject(doc)) {
        fprintf(stderr, "vkformer: bench --compare: %s: expected an object at the top\n", path);
        return 1;
    }
    const char *device = cmp_str(path, doc, "device", "");
    const char *driver = cmp_str(path, doc, "driver", "");
    const char *date = cmp_str(path, doc, "date", "");
    if (!device || !driver || !date) return 1;
    const cJSON *probes = cJSON_GetObjectItemCaseSensitive(doc, "probes");
    if (!cJSON_IsObject(probes)) {
        fprintf(stderr, "vkformer: bench --compare: %s: probes: expected an object, %s\n", path,
                probes ? "found another type" : "missing");
        return 1;
    }
    /* the copy probe divides every fraction: a zero would make them infinite */
    double copy = cmp_num(path, probes, "copy_gbs", "probes.", 1e-9, 0);
    if (isnan(copy) || isnan(cmp_num(path, probes, "fma_gflops", "probes.", 0, 0))) return 1;
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(doc, "runs");
    if (!cJSON_IsArray(runs) || cJSON_GetArraySize(runs) == 0) {
        fprintf(stderr, "vkformer: bench --compare: %s: runs: expected a non-empty array, %s\n",
                path,
                !runs                 ? "missing"
                : cJSON_IsArray(runs) ? "found []"
                                      : "found another type");
        return 1;
    }
    int i = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, runs) {
        char where[32];
        snprintf(where, sizeof where, "runs[%d].", i++);
        if (!cJSON_IsObject(r)) {
            fprintf(stderr, "vkformer: bench --compare: %s: %.*s: expected an object\n", path,
                    (int)strlen(where) - 1, where);
            return 1;
        }
        const char *engine = cmp_str(path, r, "engine", where);
        const char *model = cmp_str(path, r, "model", where);
        const char *type = cmp_str(path, r, "type", where);
        const char *test = cmp_str(path, r, "test", where);
        if (!engine || !model || !type || !test) return 1;
        int e = -1;
        for (int k = 0; k < CMP_ENGINES; k++)
            if (!strcmp(engine, cmp_engines[k])) e = k;
        if (e < 0) {
            fprintf(stderr,
                    "vkformer: bench --compare: %s: %sengine: expected \"vkformer\" or "
                    "\"llama.cpp\", found \"%s\"\n",
                    path, where, engine);
            return 1;
        }
        int n = 0, used = 0;
        if (!((!strncmp(test, "pp", 2) || !strncmp(test, "tg", 2)) &&
              sscanf(test + 2, "%d%n", &n, &used) == 1 && n > 0 && test[2 + used] == 0)) {
            fprintf(stderr,
                    "vkformer: bench --compare: %s: %stest: expected ppN or tgN (pp512, tg128), "
                    "found \"%s\"\n",
                    path, where, test);
            return 1;
        }
        double depth = cmp_num(path, r, "depth", where, 0, 1);
        double ts = cmp_num(path, r, "ts", where, 1e-12, 0);
        double bytes = cmp_num(path, r, "model_bytes", where, 1, 1);
        if (isnan(depth) || isnan(ts) || isnan(bytes)) return 1;
        cmp_row key = {.device = device,
                       .date = date,
                       .model = model,
                       .type = type,
                       .test = test,
                       .depth = (int)depth,
                       .copy_gbs = copy};
        cmp_row *row = cmp_row_get(c, &key);
        if (!row) return 1;
        if (row->ts[e] > 0) {
            fprintf(stderr,
                    "vkformer: bench --compare: %s: %s: a second %s run of %s %s %s at depth %d\n",
                    path, where, engine, model, type, test, (int)depth);
            return 1;
        }
        row->ts[e] = ts;
        row->model_bytes[e] = bytes;
    }
    return 0;
}

static int cmp_strcmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* every *.json of dir in name order; 1 after printing if one is malformed or none is there */
static int cmp_read_dir(cmp_set *c, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "vkformer: bench --compare: %s: cannot open the directory\n", dir);
        return 1;
    }
    char **names = NULL;
    int n = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json") != 0 || e->d_name[0] == '.') continue;
        char **nn = realloc(names, sizeof *nn * (size_t)(n + 1));
        if (!nn) break;
        names = nn;
        names[n] = malloc(strlen(dir) + l + 2);
        if (!names[n]) break;
        sprintf(names[n++], "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n == 0) {
        fprintf(stderr, "vkformer: bench --compare: %s: no .json results in it\n", dir);
        rc = 1;
    }
    qsort(names, (size_t)n, sizeof *names, cmp_strcmp);
    for (int i = 0; i < n && !rc; i++)
        rc = cmp_add_file(c, names[i]);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* ---------------------------------------------------------------- table and chart */

/* the fraction of the copy probe a generation run reaches, in %; -1 for prompt runs */
static double cmp_copy_pct(const cmp_row *r, int e) {
    if (strncmp(r->test, "tg", 2) != 0 || !(r->ts[e] > 0)) return -1;
    return 100.0 * r->model_bytes[e] * r->ts[e] / (r->copy_gbs * 1e9);
}

static void cmp_test_name(const cmp_row *r, char *out, size_t n) {
    if (r->depth > 0)
        snprintf(out, n, "%s @ d%d", r->test, r->depth);
    else
        snprintf(out, n, "%s", r->test);
}

static void cmp_print_table(const cmp_set *c) {
    printf("| device | date | model | type | test | vkformer t/s | llama.cpp t/s | ratio | "
           "vkformer %% of copy | llama.cpp %% of copy |\n");
    printf("| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; i < c->n_rows; i++) {
        const cmp_row *r = &c->rows[i];
        char ts[CMP_ENGINES][32], pct[CMP_ENGINES][32], ratio[32] = "-", test[64];
        for (int e = 0; e < CMP_ENGINES; e++) {
            snprintf(ts[e], sizeof ts[e], r->ts[e] > 0 ? "%.2f" : "-", r->ts[e]);
            double p = cmp_copy_pct(r, e);
            snprintf(pct[e], sizeof pct[e], p >= 0 ? "%.1f%%" : "-", p);
        }
        if (r->ts[0] > 0 && r->ts[1] > 0)
            snprintf(ratio, sizeof ratio, "%.2f", r->ts[0] / r->ts[1]);
        cmp_test_name(r, test, sizeof test);
        printf("| %s | %.10s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r->device, r->date,
               r->model, r->type, test, ts[0], ts[1], ratio, pct[0], pct[1]);
    }
}

static void cmp_xml(FILE *f, const char *t) {
    for (; *t; t++) {
        if (*t == '<')
            fputs("&lt;", f);
        else if (*t == '&')
            fputs("&amp;", f);
        else
            fputc(*t, f);
    }
}

static void cmp_bar(const vkf_svg *s, double xc, double bw, double y, const char *color,
                    const char *tip) {
    double base = s->ylog ? s->ymin : 0, top = vkf_svg_ty(s, y), bot = vkf_svg_ty(s, base);
    fprintf(s->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
            xc - bw / 2, top, bw, bot - top > 0 ? bot - top : 0, color);
    cmp_xml(s->f, tip);
    fputs("</title></rect>\n", s->f);
}

/* t/s of both engines per row (log axis) above, the fraction of copy of generation below */
static int cmp_svg(const cmp_set *c, const char *path) {
    static const char *const colors[CMP_ENGINES] = {"#1f77b4", "#ff7f0e"};
    int n = c->n_rows;
    double slot = 34, plot_w = slot * n > 360 ? slot * n : 360;
    vkf_svg top = {.x0 = 90, .y0 = 50, .w = plot_w, .h = 260, .ylog = 1, .no_xticks = 1};
    vkf_svg bot = {.x0 = 90, .y0 = 370, .w = plot_w, .h = 180, .no_xticks = 1};
    if (!vkf_svg_open(NULL, path, &top, plot_w + 260, 830)) return 1;
    bot.f = top.f;
    double tmin = 1e300, tmax = 0, pmax = 0;
    for (int i = 0; i < n; i++)
        for (int e = 0; e < CMP_ENGINES; e++) {
            const cmp_row *r = &c->rows[i];
            if (r->ts[e] > 0) tmin = fmin(tmin, r->ts[e]), tmax = fmax(tmax, r->ts[e]);
            pmax = fmax(pmax, cmp_copy_pct(r, e));
        }
    top.xmin = bot.xmin = 0;
    top.xmax = bot.xmax = n;
    top.ymin = pow(10, floor(log10(tmin)));
    top.ymax = pow(10, ceil(log10(tmax * 1.01)));
    bot.ymin = 0;
    bot.ymax = pmax > 0 ? fmin(100, pmax * 1.2) : 1;
    if (pmax > 100) bot.ymax = pmax * 1.1; /* a cache-resident model can beat the copy probe */
    vkf_svg_axes(&top, "vkformer and llama.cpp (Vulkan) side by side", "", "tokens/s");
    vkf_svg_axes(&bot, "generation: weights read per second, % of the copy probe", "", "% of copy");
    double bw = slot * 0.38;
    for (int i = 0; i < n; i++) {
        const cmp_row *r = &c->rows[i];
        char test[64], tip[512];
        cmp_test_name(r, test, sizeof test);
        for (int e = 0; e < CMP_ENGINES; e++) {
            double xc = vkf_svg_tx(&top, i + 0.5) + (e ? bw / 2 : -bw / 2);
            if (r->ts[e] > 0) {
                snprintf(tip, sizeof tip, "%s %s %s %s on %s: %.2f t/s", cmp_engines[e], r->model,
                         r->type, test, r->device, r->ts[e]);
                cmp_bar(&top, xc, bw, r->ts[e], colors[e], tip);
            }
            double p = cmp_copy_pct(r, e);
            if (p >= 0) {
                snprintf(tip, sizeof tip, "%s %s %s %s on %s: %.1f%% of copy", cmp_engines[e],
                         r->model, r->type, test, r->device, p);
                cmp_bar(&bot, xc, bw, p, colors[e], tip);
            }
        }
        /* the row's label under the lower panel, slanted */
        double lx = vkf_svg_tx(&bot, i + 0.5), ly = bot.y0 + bot.h + 12;
        fprintf(top.f,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" "
                "transform=\"rotate(-50 %.1f %.1f)\">",
                lx, ly, lx, ly);
        snprintf(tip, sizeof tip, "%s %s %s %s", r->device, r->model, r->type, test);
        cmp_xml(top.f, tip);
        fputs("</text>\n", top.f);
    }
    for (int e = 0; e < CMP_ENGINES; e++) {
        double ly = top.y0 + 14 + 18 * e;
        fprintf(top.f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
                top.x0 + top.w + 16, ly - 10, colors[e]);
        vkf_svg_text(&top, top.x0 + top.w + 34, ly, "start", 12, cmp_engines[e]);
    }
    return vkf_svg_close(&top) != 0;
}

/* ---------------------------------------------------------------- entry */

static int cmp_opt_dir(void *dst, const char *value, char *err, size_t n) {
    (void)err;
    (void)n;
    if (value) *(const char **)dst = value;
    return 0;
}

int vkf_bench_compare(int argc, char **argv) {
    const char *dir = "bench/results", *svg = NULL;
    vkf_arg args[] = {{"--compare", VKF_ARG_CALL, &dir, .metavar = "DIR", .call = cmp_opt_dir,
                       .optional_value = 1,
                       .help = "the directory of result files (default bench/results)"},
                      {"--svg", VKF_ARG_STR, &svg, .metavar = "FILE",
                       .help = "where the chart goes (default DIR/compare.svg)"},
                      {0}};
    vkf_cmd_spec spec = {
        "bench --compare", "[DIR] [--svg FILE]",
        "vkformer against llama.cpp's Vulkan backend on every device measured: the JSON files "
        "of bench/gpu-check.sh peer as one markdown table (t/s, their ratio, generation's "
        "weights read per second as a fraction of the copy probe) and one SVG chart.",
        args, .epilog = NULL};
    int prc = vkf_args_parse(&spec, argc, argv);
    if (prc >= 0) return prc;
    cmp_set c = {0};
    int rc = cmp_read_dir(&c, dir);
    if (!rc) {
        cmp_print_table(&c);
        if (fflush(stdout) != 0 || ferror(stdout)) rc = 1;
        char def[1200];
        snprintf(def, sizeof def, "%s/compare.svg", dir);
        if (!svg) svg = def;
        if (cmp_svg(&c, svg)) {
            fprintf(stderr, "vkformer: bench --compare: cannot write %s\n", svg);
            rc = 1;
        } else {
            fprintf(stderr, "wrote %s (%d rows from %d files)\n", svg, c.n_rows, c.n_docs);
        }
    }
    cmp_free(&c);
    return rc;
}
