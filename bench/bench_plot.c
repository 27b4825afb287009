/* Charts (`vkformer bench --plot DIR -m MODEL`), written as SVG by this file:
 *   DIR/tg_vs_context.svg   generation tokens/s (and prompt tokens/s) against the context
 *                           already in the KV cache, measured through the public API;
 *   DIR/matmul_roofline.svg the matmul kernels on a roofline: GFLOP/s against arithmetic
 *                           intensity (flop per byte of weights + activations), under the
 *                           measured FMA peak and read-bandwidth roof of the same device.
 * The roofline comes from a fresh quick kernel sweep, or from a `bench --kernels --json-out`
 * file (--kernels-json FILE). DIR/plot_data.json keeps the numbers plotted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "bench_svg.h"
#include "frontend/args.h"
#include "vkformer.h"

/* ---------------------------------------------------------------- svg helpers */

double vkf_svg_tx(const vkf_svg *s, double x) {
    double t = s->xlog ? (log10(x) - log10(s->xmin)) / (log10(s->xmax) - log10(s->xmin))
                       : (x - s->xmin) / (s->xmax - s->xmin);
    return s->x0 + t * s->w;
}

double vkf_svg_ty(const vkf_svg *s, double y) {
    double t = s->ylog ? (log10(y) - log10(s->ymin)) / (log10(s->ymax) - log10(s->ymin))
                       : (y - s->ymin) / (s->ymax - s->ymin);
    return s->y0 + s->h - t * s->h;
}

void vkf_svg_text(const vkf_svg *s, double x, double y, const char *anchor, int size,
                  const char *txt) {
    fprintf(s->f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\">", x, y, anchor,
            size);
    for (const char *p = txt; *p; p++) {
        if (*p == '<')
            fputs("&lt;", s->f);
        else if (*p == '>')
            fputs("&gt;", s->f);
        else if (*p == '&')
            fputs("&amp;", s->f);
        else
            fputc(*p, s->f);
    }
    fputs("</text>\n", s->f);
}

/* nice linear ticks */
static double vkf_svg_step(double range) {
    double raw = range / 6, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

void vkf_svg_axes(const vkf_svg *s, const char *title, const char *xlabel, const char *ylabel) {
    fprintf(s->f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#444\"/>\n",
            s->x0, s->y0, s->w, s->h);
    char buf[64];
    for (int axis = s->no_xticks ? 1 : 0; axis < 2; axis++) {
        int lg = axis ? s->ylog : s->xlog;
        double lo = axis ? s->ymin : s->xmin, hi = axis ? s->ymax : s->xmax;
        double v = lg ? pow(10, ceil(log10(lo) - 1e-9))
                      : ceil(lo / vkf_svg_step(hi - lo)) * vkf_svg_step(hi - lo);
        double step = lg ? 10 : vkf_svg_step(hi - lo);
        for (; v <= hi * (1 + 1e-9); v = lg ? v * step : v + step) {
            if (fabs(v) < 1e-12 * step) v = 0;
            snprintf(buf, sizeof buf, "%g", v);
            if (axis == 0) {
                double x = vkf_svg_tx(s, v);
                fprintf(s->f,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                        x, s->y0, x, s->y0 + s->h);
                vkf_svg_text(s, x, s->y0 + s->h + 16, "middle", 11, buf);
            } else {
                double y = vkf_svg_ty(s, v);
                fprintf(s->f,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                        s->x0, y, s->x0 + s->w, y);
                vkf_svg_text(s, s->x0 - 6, y + 4, "end", 11, buf);
            }
        }
    }
    vkf_svg_text(s, s->x0 + s->w / 2, s->y0 - 14, "middle", 14, title);
    vkf_svg_text(s, s->x0 + s->w / 2, s->y0 + s->h + 36, "middle", 12, xlabel);
    fprintf(s->f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\" "
            "transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n",
            s->x0 - 48, s->y0 + s->h / 2, s->x0 - 48, s->y0 + s->h / 2, ylabel);
}

FILE *vkf_svg_open(const char *dir, const char *name, vkf_svg *s, double width, double height) {
    char path[1200];
    snprintf(path, sizeof path, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
    s->f = fopen(path, "w");
    if (!s->f) return NULL;
    fprintf(
        s->f,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
        "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
        width, height);
    return s->f;
}

int vkf_svg_close(vkf_svg *s) {
    fputs("</svg>\n", s->f);
    return fclose(s->f);
}

/* ---------------------------------------------------------------- tokens/s vs context */

typedef struct vkf_plot_pt {
    int depth;
    double tg_ts, tg_sd, pp_ts;
} vkf_plot_pt;

static uint64_t g_prng = 0x853c49e6748fea9bull;
static int32_t vkf_plot_tok(int32_t n) {
    g_prng ^= g_prng << 13;
    g_prng ^= g_prng >> 7;
    g_prng ^= g_prng << 17;
    return (int32_t)(g_prng % (uint64_t)n);
}

/* tg n_gen at each depth (reps runs, mean and sd of tokens/s) and the prompt speed of filling
 * the depth, through the public API */
static int vkf_plot_measure(const char *model, const char *device, int cpu, const int *depths,
                            int nd, int n_gen, int reps, vkf_plot_pt *pts, char *devname,
                            size_t dn) {
    vkf_context_params cp = {.backend = cpu ? VKF_BACKEND_CPU : VKF_BACKEND_AUTO, .device = device};
    vkf_context *ctx = NULL;
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    int32_t *toks = NULL;
    float *logits = NULL;
    int rc = 1;
    if (vkf_context_create(&cp, &ctx) != VKF_OK) goto done;
    snprintf(devname, dn, "%s", vkf_context_device_name(ctx));
    int maxd = 0;
    for (int i = 0; i < nd; i++)
        maxd = depths[i] > maxd ? depths[i] : maxd;
    /* past the training context where positions are computed (RoPE), as bench -d does */
    vkf_model_params mp = {.path = model, .n_ctx = maxd + n_gen};
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        mp.n_ctx = 0;
        if (vkf_model_load(ctx, &mp, &m) != VKF_OK) goto done;
    }
    vkf_model_desc md;
    vkf_model_describe(m, &md);
    if (maxd + n_gen > md.n_ctx) {
        fprintf(stderr,
                "vkformer bench --plot: depth %d + %d tokens exceed %s's context of %d (learned "
                "positions)\n",
                maxd, n_gen, model, md.n_ctx);
        goto done;
    }
    vkf_session_params sp = {.n_ctx = maxd + n_gen <= md.n_ctx ? maxd + n_gen : md.n_ctx,
                             .n_batch = 1};
    if (vkf_session_create(m, &sp, &s) != VKF_OK) goto done;
    toks = malloc(sizeof *toks * (size_t)(maxd + 1));
    logits = malloc(sizeof *logits * (size_t)md.n_vocab);
    if (!toks || !logits) goto done;
    for (int i = 0; i <= maxd; i++)
        toks[i] = vkf_plot_tok(md.n_vocab);
    for (int di = 0; di < nd; di++) {
        double ts[64];
        pts[di].depth = depths[di];
        pts[di].pp_ts = 0;
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
            vkf_session_reset(s);
            double t0 = vkf_bench_now_ms();
            if (depths[di] > 0 && vkf_session_eval_last(s, toks, depths[di], logits) != VKF_OK)
                goto done;
            double t1 = vkf_bench_now_ms();
            if (r >= 0 && depths[di] > 0) pts[di].pp_ts += depths[di] / ((t1 - t0) * 1e-3) / reps;
            int32_t tok = toks[depths[di]];
            for (int i = 0; i < n_gen; i++) {
                if (vkf_session_eval_last(s, &tok, 1, logits) != VKF_OK) goto done;
                tok = vkf_plot_tok(md.n_vocab);
            }
            if (r >= 0) ts[r] = n_gen / ((vkf_bench_now_ms() - t1) * 1e-3);
        }
        vkf_bench_stats(ts, reps, &pts[di].tg_ts, &pts[di].tg_sd);
        fprintf(stderr, "  depth %4d: tg%d %8.2f ± %.2f t/s, prompt of %d: %.2f t/s\n", depths[di],
                n_gen, pts[di].tg_ts, pts[di].tg_sd, depths[di], pts[di].pp_ts);
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "vkformer bench --plot: %s\n", vkf_last_error());
    free(toks);
    free(logits);
    vkf_session_free(s);
    vkf_model_free(m);
    vkf_context_free(ctx);
    return rc;
}

static int vkf_plot_context_svg(const char *dir, const char *model, const char *dev,
                                const vkf_plot_pt *p, int n, int n_gen) {
    vkf_svg s = {.x0 = 80, .y0 = 50, .w = 620, .h = 340};
    if (!vkf_svg_open(dir, "tg_vs_context.svg", &s, 760, 460)) return 1;
    double ymax = 0;
    for (int i = 0; i < n; i++)
        ymax = p[i].tg_ts + p[i].tg_sd > ymax ? p[i].tg_ts + p[i].tg_sd : ymax;
    s.xmin = 0;
    s.xmax = p[n - 1].depth > 0 ? p[n - 1].depth : 1;
    s.ymin = 0;
    s.ymax = ymax > 0 ? ymax * 1.15 : 1;
    const char *base = strrchr(model, '/');
    char title[512], xl[64];
    snprintf(title, sizeof title, "generation speed vs context: %s on %s", base ? base + 1 : model,
             dev);
    snprintf(xl, sizeof xl, "tokens already in the KV cache (depth)");
    vkf_svg_axes(&s, title, xl, "tokens/s");
    fputs("<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"", s.f);
    for (int i = 0; i < n; i++)
        fprintf(s.f, "%.1f,%.1f ", vkf_svg_tx(&s, p[i].depth), vkf_svg_ty(&s, p[i].tg_ts));
    fputs("\"/>\n", s.f);
    for (int i = 0; i < n; i++) {
        double x = vkf_svg_tx(&s, p[i].depth);
        fprintf(s.f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1f77b4\"/>\n",
                x, vkf_svg_ty(&s, p[i].tg_ts - p[i].tg_sd > 0 ? p[i].tg_ts - p[i].tg_sd : 0), x,
                vkf_svg_ty(&s, p[i].tg_ts + p[i].tg_sd));
        fprintf(s.f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#1f77b4\"/>\n", x,
                vkf_svg_ty(&s, p[i].tg_ts));
    }
    char leg[64];
    snprintf(leg, sizeof leg, "tg%d (mean ± sd)", n_gen);
    vkf_svg_text(&s, s.x0 + s.w - 8, s.y0 + 18, "end", 12, leg);
    return vkf_svg_close(&s) != 0;
}

/* ---------------------------------------------------------------- roofline */

static int vkf_plot_roofline_svg(const char *dir, cJSON *kj) {
    cJSON *pk = cJSON_GetObjectItem(kj, "peaks"), *ks = cJSON_GetObjectItem(kj, "kernels");
    cJSON *dev = cJSON_GetObjectItem(kj, "device");
    double fma = cJSON_GetNumberValue(cJSON_GetObjectItem(pk, "fma_f32_gflops"));
    double bw = cJSON_GetNumberValue(cJSON_GetObjectItem(pk, "read_best_gbs"));
    if (!(fma > 0) || !(bw > 0)) return 1;
    vkf_svg s = {.x0 = 80, .y0 = 50, .w = 640, .h = 380, .xlog = 1, .ylog = 1};
    if (!vkf_svg_open(dir, "matmul_roofline.svg", &s, 900, 500)) return 1;
    double xmin = 0.1, xmax = 1000, ymin = 0.1, ymax = fma * 3;
    cJSON *k;
    cJSON_ArrayForEach(k, ks) {
        double f = cJSON_GetNumberValue(cJSON_GetObjectItem(k, "flop")),
               b = cJSON_GetNumberValue(cJSON_GetObjectItem(k, "bytes"));
        double g = cJSON_GetNumberValue(cJSON_GetObjectItem(k, "gflops"));
        if (!(f > 0) || !(b > 0) || !(g > 0)) continue;
        if (f / b < xmin) xmin = f / b / 2;
        if (f / b > xmax) xmax = f / b * 2;
        if (g < ymin) ymin = g / 2;
    }
    s.xmin = pow(10, floor(log10(xmin)));
    s.xmax = pow(10, ceil(log10(xmax)));
    s.ymin = pow(10, floor(log10(ymin)));
    s.ymax = pow(10, ceil(log10(ymax)));
    char title[512];
    snprintf(title, sizeof title, "matmul roofline on %s",
             cJSON_IsString(dev) ? dev->valuestring : "?");
    vkf_svg_axes(&s, title, "arithmetic intensity (flop / byte)", "GFLOP/s");
    /* roof: min(bw * ai, fma) */
    double knee = fma / bw;
    fprintf(s.f,
            "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" points=\"%.1f,%.1f "
            "%.1f,%.1f %.1f,%.1f\"/>\n",
            vkf_svg_tx(&s, s.xmin), vkf_svg_ty(&s, bw * s.xmin > s.ymin ? bw * s.xmin : s.ymin),
            vkf_svg_tx(&s, knee), vkf_svg_ty(&s, fma), vkf_svg_tx(&s, s.xmax), vkf_svg_ty(&s, fma));
    char buf[128];
    snprintf(buf, sizeof buf, "FMA peak %.1f GFLOP/s (measured)", fma);
    vkf_svg_text(&s, vkf_svg_tx(&s, s.xmax) - 4, vkf_svg_ty(&s, fma) - 6, "end", 11, buf);
    snprintf(buf, sizeof buf, "read %.1f GB/s (measured)", bw);
    vkf_svg_text(&s, vkf_svg_tx(&s, knee) - 6, vkf_svg_ty(&s, fma) + 14, "end", 11, buf);
    static const char *const colors[] = {"#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd"};
    static const char *const dts[] = {"F32", "F16", "Q8_0", "Q4_0"};
    cJSON_ArrayForEach(k, ks) {
        cJSON *name = cJSON_GetObjectItem(k, "kernel"), *dt = cJSON_GetObjectItem(k, "dtype"),
              *sh = cJSON_GetObjectItem(k, "shape");
        if (!cJSON_IsString(name) || strcmp(name->valuestring, "matmul") != 0) continue;
        double f = cJSON_GetNumberValue(cJSON_GetObjectItem(k, "flop")),
               b = cJSON_GetNumberValue(cJSON_GetObjectItem(k, "bytes"));
        double g = cJSON_GetNumberValue(cJSON_GetObjectItem(k, "gflops"));
        if (!(f > 0) || !(b > 0) || !(g > 0)) continue;
        int ci = 0;
        for (int i = 0; i < 4; i++)
            if (cJSON_IsString(dt) && strcmp(dt->valuestring, dts[i]) == 0) ci = i;
        double x = vkf_svg_tx(&s, f / b), y = vkf_svg_ty(&s, g);
        fprintf(s.f,
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>%s %s: %.2f "
                "GFLOP/s</title></circle>\n",
                x, y, colors[ci], cJSON_IsString(sh) ? sh->valuestring : "", dts[ci], g);
        const char *mpos = cJSON_IsString(sh) ? strstr(sh->valuestring, "M=") : NULL;
        if (mpos) {
            char lab[16];
            snprintf(lab, sizeof lab, "%.*s", (int)strcspn(mpos, " "), mpos);
            vkf_svg_text(&s, x + 6, y + 4, "start", 9, lab);
        }
    }
    for (int i = 0; i < 4; i++) {
        double ly = s.y0 + 14 + 16 * i;
        fprintf(s.f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", s.x0 + s.w + 20,
                ly - 4, colors[i]);
        vkf_svg_text(&s, s.x0 + s.w + 30, ly, "start", 11, dts[i]);
    }
    return vkf_svg_close(&s) != 0;
}

/* ---------------------------------------------------------------- entry */

static int vkf_plot_opt_list(void *dst, const char *value, char *err, size_t n) {
    struct {
        int *v, *n;
    } *l = dst;
    int k = vkf_bench_parse_ints(value, l->v, 32);
    if (k < 1) {
        snprintf(err, n, "expected a comma list of up to 32 integers, got '%s'", value);
        return -1;
    }
    *l->n = k;
    return 0;
}

int vkf_bench_plot(int argc, char **argv) {
    const char *dir = NULL, *model = NULL, *device = NULL, *kjson = NULL;
    int depths[32], nd = 0, n_gen = 16, reps = 3, cpu = 0, quick = 1;
    int full = 0;
    struct {
        int *v, *n;
    } dl = {depths, &nd};
    vkf_arg args[] = {
        {"--plot", VKF_ARG_STR, &dir, .metavar = "DIR", .required = 1,
         .help = "where the SVG files go"},
        {"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH", .required = 1, .help = "model"},
        {"-dev|--device", VKF_ARG_STR, &device, .metavar = "N|NAME", .help = "Vulkan device"},
        {"--cpu", VKF_ARG_SET, &cpu, .help = "the CPU backend"},
        {"--full", VKF_ARG_SET, &full, .help = "the full kernel sweep (default: quick)"},
        {"-d|--depths", VKF_ARG_CALL, &dl, .metavar = "D,..", .call = vkf_plot_opt_list,
         .help = "context depths (default 16 up to the model's context, doubling)"},
        {"-n|--n-gen", VKF_ARG_INT, &n_gen, .min = 1, .max = 1 << 20, .metavar = "N",
         .help = "tokens per point (16)"},
        {"-r|--repetitions", VKF_ARG_INT, &reps, .min = 1, .max = 64, .metavar = "N",
         .help = "runs per point (3)"},
        {"--kernels-json", VKF_ARG_STR, &kjson, .metavar = "FILE",
         .help = "the roofline from a --kernels JSON report"},
        {0}};
    vkf_cmd_spec spec = {"bench --plot",
                         "DIR -m MODEL [-d 16,64,...] [-n 16] [-r 3] [-dev N | --cpu]",
                         "SVG charts: tokens/s against the context depth, and the matmul roofline.",
                         args, .epilog = NULL};
    int prc = vkf_args_parse(&spec, argc, argv);
    if (prc >= 0) return prc;
    if (full) quick = 0;
    mkdir(dir, 0755);
    /* default depths: 16 up to the model's context, doubling */
    vkf_plot_pt pts[32];
    char dev[256] = "";
    if (nd == 0) {
        vkf_context_params cp = {.backend = VKF_BACKEND_CPU};
        vkf_context *ctx = NULL;
        vkf_model *m = NULL;
        int n_ctx = 512;
        vkf_model_params mp = {.path = model};
        if (vkf_context_create(&cp, &ctx) == VKF_OK && vkf_model_load(ctx, &mp, &m) == VKF_OK) {
            vkf_model_desc md;
            vkf_model_describe(m, &md);
            n_ctx = md.n_ctx;
            /* the depth range (to 1024) where positions are computed */
            if (md.ctx_extendable && n_ctx < 1024 + n_gen) n_ctx = 1024 + n_gen;
        }
        vkf_model_free(m);
        vkf_context_free(ctx);
        for (int d = 16; d + n_gen <= n_ctx && nd < 16; d *= 2)
            depths[nd++] = d;
        if (nd < 16 && n_ctx - n_gen > depths[nd - 1]) depths[nd++] = n_ctx - n_gen;
    }
    fprintf(stderr, "tokens/s vs context (%s):\n", model);
    if (vkf_plot_measure(model, device, cpu, depths, nd, n_gen, reps, pts, dev, sizeof dev))
        return 1;
    int rc = vkf_plot_context_svg(dir, model, dev, pts, nd, n_gen);
    /* roofline */
    cJSON *kj = NULL;
    if (kjson) {
        FILE *f = fopen(kjson, "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            long l = ftell(f);
            fseek(f, 0, SEEK_SET);
            char *t = l > 0 ? malloc((size_t)l + 1) : NULL;
            if (t && fread(t, 1, (size_t)l, f) == (size_t)l) {
                t[l] = 0;
                kj = cJSON_Parse(t);
            }
            free(t);
            fclose(f);
        }
        if (!kj) fprintf(stderr, "vkformer bench --plot: cannot read %s\n", kjson);
    } else if (!cpu) {
        fprintf(stderr, "matmul sweep for the roofline (%s)...\n", quick ? "quick" : "full");
        char *t = vkf_bench_kernels_json(device, quick, "matmul");
        if (t) kj = cJSON_Parse(t);
        free(t);
        if (!kj)
            fprintf(stderr, "vkformer bench --plot: kernel sweep failed: %s\n", vkf_last_error());
    }
    if (kj) rc |= vkf_plot_roofline_svg(dir, kj);
    /* the numbers behind the charts */
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", model);
    cJSON_AddStringToObject(root, "device", dev);
    cJSON_AddNumberToObject(root, "n_gen", n_gen);
    cJSON *arr = cJSON_AddArrayToObject(root, "context");
    for (int i = 0; i < nd; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "n_depth", pts[i].depth);
        cJSON_AddNumberToObject(o, "tg_avg_ts", pts[i].tg_ts);
        cJSON_AddNumberToObject(o, "tg_stddev_ts", pts[i].tg_sd);
        cJSON_AddNumberToObject(o, "prompt_ts", pts[i].pp_ts);
        cJSON_AddItemToArray(arr, o);
    }
    if (kj) cJSON_AddItemToObject(root, "kernels", kj);
    char *t = cJSON_Print(root);
    char path[1200];
    snprintf(path, sizeof path, "%s/plot_data.json", dir);
    FILE *f = fopen(path, "w");
    if (!f || !t || fputs(t, f) < 0) rc = 1;
    if (f) fclose(f);
    free(t);
    cJSON_Delete(root);
    if (rc)
        fprintf(stderr, "vkformer bench --plot: could not write the charts in %s\n", dir);
    else
        printf("wrote %s/tg_vs_context.svg%s and %s/plot_data.json\n", dir,
               kj ? ", matmul_roofline.svg" : "", dir);
    return rc;
}
