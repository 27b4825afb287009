/* The table-driven option parser of every command (args.h). */
#include "frontend/args.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "vkformer.h"

int vkf_usage_error(const char *cmd, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "vkformer: %s: %s\n", cmd, msg);
    return 2;
}

/* Whether `word` is one of the '|'-separated spellings in names. */
static int name_matches(const char *names, const char *word, size_t wlen) {
    for (const char *p = names; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == wlen && strncmp(p, word, len) == 0) return 1;
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

static const vkf_arg *find_arg(const vkf_arg *args, const char *word, size_t wlen) {
    for (const vkf_arg *a = args; a->kind != VKF_ARG_END; a++)
        if (name_matches(a->names, word, wlen)) return a;
    return NULL;
}

/* the -m / --model entry: -hf NAME stands for it */
static int is_model_flag(const vkf_arg *a) {
    return a->names && (!strncmp(a->names, "-m|", 3) || !strcmp(a->names, "-m") ||
                        !strcmp(a->names, "--model"));
}

static int takes_value(const vkf_arg *a) {
    switch (a->kind) {
    case VKF_ARG_SET:
    case VKF_ARG_CLEAR:
    case VKF_ARG_CALL0: return 0;
    case VKF_ARG_REFUSED:
    case VKF_ARG_PENDING: return a->takes_value;
    default: return 1;
    }
}

int vkf_args_int(const char *v, int64_t min, int64_t max, int64_t *out, char *err, size_t n) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno == ERANGE) {
        if (errno == ERANGE || (*end && strchr("eE.", *end) && end != v))
            snprintf(err, n, "expected an integer in [%lld, %lld], got '%s'", (long long)min,
                     (long long)max, v);
        else
            snprintf(err, n, "expected an integer, got '%s'", v);
        return -1;
    }
    if (x < min || x > max) {
        snprintf(err, n, "%s is out of range [%lld, %lld]", v, (long long)min, (long long)max);
        return -1;
    }
    *out = x;
    return 0;
}

int vkf_args_double(const char *v, double min, double max, double *out, char *err, size_t n) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end) {
        snprintf(err, n, "expected a number, got '%s'", v);
        return -1;
    }
    if (!isfinite(x)) {
        snprintf(err, n, "expected a finite number, got '%s'", v);
        return -1;
    }
    if (x < min || x > max) {
        snprintf(err, n, "%s is out of range [%g, %g]", v, min, max);
        return -1;
    }
    *out = x;
    return 0;
}

int vkf_args_device(void *dst, const char *value, char *err, size_t n) {
    vkf_context_params *cp = dst;
    if (!*value) {
        snprintf(err, n, "expected a device index or name, got ''");
        return -1;
    }
    cp->device = value;
    cp->backend = VKF_BACKEND_VULKAN;
    return 0;
}

int vkf_args_tensor_split(void *dst, const char *value, char *err, size_t n) {
    vkf_context_params *cp = dst;
    int k = 0;
    for (const char *c = value;;) {
        char *end;
        if (k == VKF_MAX_DEVICES) {
            snprintf(err, n, "more than %d proportions in '%s'", VKF_MAX_DEVICES, value);
            return -1;
        }
        double x = strtod(c, &end);
        if (end == c || (*end && *end != ',' && *end != '/') || !(x >= 0) || x > 1e9) {
            snprintf(err, n, "expected proportions >= 0 separated by commas (3,1), got '%s'",
                     value);
            return -1;
        }
        cp->tensor_split[k++] = (float)x;
        if (!*end) break;
        c = end + 1;
    }
    cp->n_tensor_split = k;
    return 0;
}

int vkf_args_split_mode(void *dst, const char *value, char *err, size_t n) {
    vkf_context_params *cp = dst;
    if (!strcmp(value, "none")) {
        cp->split_mode = VKF_SPLIT_NONE;
    } else if (!strcmp(value, "layer")) {
        cp->split_mode = VKF_SPLIT_LAYER;
    } else if (!strcmp(value, "row")) {
        snprintf(err, n,
                 "'row' is llama.cpp's tensor parallelism (each matrix split across the devices), "
                 "not implemented: use layer");
        return -1;
    } else {
        snprintf(err, n, "expected none or layer, got '%s'", value);
        return -1;
    }
    return 0;
}

int vkf_args_main_gpu(void *dst, const char *value, char *err, size_t n) {
    vkf_context_params *cp = dst;
    char *end;
    long v = strtol(value, &end, 10);
    if (end == value || *end || v < 0 || v >= VKF_MAX_DEVICES) {
        snprintf(err, n, "expected a device position in the -dev list, 0 to %d, got '%s'",
                 VKF_MAX_DEVICES - 1, value);
        return -1;
    }
    cp->main_device = (int)v;
    return 0;
}

int vkf_args_cpu(void *dst, const char *value, char *err, size_t n) {
    (void)value, (void)err, (void)n;
    ((vkf_context_params *)dst)->backend = VKF_BACKEND_CPU;
    return 0;
}

int vkf_parse_cache_type(void *dst, const char *v, char *err, size_t n) {
    int32_t t = vkf_cache_type_from_name(v);
    if (t <= VKF_CACHE_DEFAULT) {
        snprintf(err, n,
                 "expected f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0 or q5_1 (llama.cpp's KV "
                 "cache types), got '%s'",
                 v);
        return -1;
    }
    *(int32_t *)dst = t;
    return 0;
}

int vkf_args_flash_attn(void *dst, const char *v, char *err, size_t n) {
    (void)dst;
    if (!v || !strcmp(v, "on") || !strcmp(v, "auto") || !strcmp(v, "1") || !strcmp(v, "true"))
        return 0;
    if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "false")) {
        snprintf(err, n, "'%s' is not supported by vkformer (attention is always the fused kernel)",
                 v);
        return -1;
    }
    snprintf(err, n, "expected on, off or auto, got '%s'", v);
    return -1;
}

int vkf_args_validate(void *dst, const char *value, char *err, size_t n) {
    (void)value, (void)err, (void)n;
    ((vkf_context_params *)dst)->validate = 1;
    return 0;
}

/* The value's checks and the store. 0 ok, -1 with err set. */
static int store(const vkf_arg *a, const char *v, char *err, size_t n) {
    double lo = a->min, hi = a->max;
    if (lo == 0 && hi == 0) lo = -INFINITY, hi = INFINITY;
    switch (a->kind) {
    case VKF_ARG_SET: *(int *)a->dst = 1; return 0;
    case VKF_ARG_CLEAR: *(int *)a->dst = 0; return 0;
    case VKF_ARG_STR: *(const char **)a->dst = v; return 0;
    case VKF_ARG_INT:
    case VKF_ARG_I64: {
        int64_t lim_lo = a->kind == VKF_ARG_INT ? INT32_MIN : INT64_MIN;
        int64_t lim_hi = a->kind == VKF_ARG_INT ? INT32_MAX : INT64_MAX;
        if (isfinite(lo) && lo > (double)lim_lo) lim_lo = (int64_t)lo;
        if (isfinite(hi) && hi < (double)lim_hi) lim_hi = (int64_t)hi;
        int64_t x;
        if (vkf_args_int(v, lim_lo, lim_hi, &x, err, n)) return -1;
        if (a->kind == VKF_ARG_INT)
            *(int32_t *)a->dst = (int32_t)x;
        else
            *(int64_t *)a->dst = x;
        return 0;
    }
    case VKF_ARG_FLOAT: {
        double x;
        if (vkf_args_double(v, isfinite(lo) ? lo : -3.4e38, isfinite(hi) ? hi : 3.4e38, &x, err, n))
            return -1;
        *(float *)a->dst = (float)x;
        return 0;
    }
    case VKF_ARG_CALL:
    case VKF_ARG_CALL0: return a->call(a->dst, v, err, n);
    case VKF_ARG_REFUSED:
        snprintf(err, n, "not supported by vkformer%s%s%s", a->help ? " (" : "",
                 a->help ? a->help : "", a->help ? ")" : "");
        return -1;
    case VKF_ARG_PENDING:
        snprintf(err, n, "not supported by vkformer yet%s%s%s", a->help ? " (" : "",
                 a->help ? a->help : "", a->help ? ")" : "");
        return -1;
    case VKF_ARG_END: break;
    }
    snprintf(err, n, "internal error: bad option table");
    return -1;
}

/* The first spelling of an option, for messages about a required one. */
static void first_name(const char *names, char *out, size_t n) {
    const char *bar = strchr(names, '|');
    size_t len = bar ? (size_t)(bar - names) : strlen(names);
    /* prefer the long spelling in messages when there is one */
    const char *lng = strstr(names, "--");
    if (lng) {
        bar = strchr(lng, '|');
        names = lng;
        len = bar ? (size_t)(bar - lng) : strlen(lng);
    }
    snprintf(out, n, "%.*s", (int)len, names);
}

int vkf_args_parse(const vkf_cmd_spec *spec, int argc, char **argv) {
    const vkf_arg *args = spec->args;
    int n_args = 0;
    while (args[n_args].kind != VKF_ARG_END)
        n_args++;
    unsigned char given[256] = {0};
    int n_pos = 0;
    char err[512];
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (!strcmp(w, "-h") || !strcmp(w, "--help")) {
            vkf_args_usage(spec, stdout);
            return 0;
        }
    }
    int pos_cap = spec->pos_max > 1 ? spec->pos_max : 1;
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (w[0] != '-' || !w[1]) { /* a positional ("-" alone is stdin, a value) */
            if (!spec->positional) return vkf_usage_error(spec->cmd, "unexpected argument '%s'", w);
            if (n_pos >= pos_cap)
                return pos_cap == 1 ? vkf_usage_error(spec->cmd, "unexpected second %s '%s'",
                                                      spec->positional, w)
                                    : vkf_usage_error(spec->cmd, "unexpected argument '%s' (%s)", w,
                                                      spec->positional);
            spec->pos_dst[n_pos++] = w;
            continue;
        }
        if (!strcmp(w, "--")) { /* everything after is positional */
            for (i++; i < argc; i++) {
                if (!spec->positional || n_pos >= pos_cap)
                    return vkf_usage_error(spec->cmd, "unexpected argument '%s'", argv[i]);
                spec->pos_dst[n_pos++] = argv[i];
            }
            break;
        }
        const char *eq = w[1] == '-' ? strchr(w, '=') : NULL;
        size_t wlen = eq ? (size_t)(eq - w) : strlen(w);
        const vkf_arg *a = find_arg(args, w, wlen);
        if (!a)
            return vkf_usage_error(spec->cmd,
                                   "unknown option '%.*s' (vkformer %s --help lists them)",
                                   (int)wlen, w, spec->cmd);
        const char *v = NULL;
        if (a->optional_value && !eq) {
            if (i + 1 < argc && argv[i + 1][0] != '-') v = argv[++i];
        } else if (takes_value(a)) {
            if (eq) {
                v = eq + 1;
            } else {
                if (i + 1 >= argc)
                    return vkf_usage_error(spec->cmd, "%.*s needs a value", (int)wlen, w);
                const char *next = argv[i + 1];
                /* "-m --temp 1": the value is another option of the table, so it is missing */
                if (next[0] == '-' && next[1] &&
                    find_arg(args, next,
                             next[1] == '-' && strchr(next, '=')
                                 ? (size_t)(strchr(next, '=') - next)
                                 : strlen(next)))
                    return vkf_usage_error(spec->cmd, "%.*s needs a value", (int)wlen, w);
                v = argv[++i];
            }
        } else if (eq) {
            return vkf_usage_error(spec->cmd, "%.*s takes no value", (int)wlen, w);
        }
        if (store(a, v, err, sizeof err))
            return vkf_usage_error(spec->cmd, "%.*s: %s", (int)wlen, w, err);
        if (a->seen) *a->seen = 1;
        if (a - args < 256) given[a - args] = 1;
    }
    for (int k = 0; k < n_args && k < 256; k++) {
        if (args[k].required && !given[k]) {
            char name[64];
            first_name(args[k].names, name, sizeof name);
            return vkf_usage_error(spec->cmd, "%s %s%s is required%s%s%s", name,
                                   args[k].metavar ? args[k].metavar : "",
                                   is_model_flag(&args[k]) ? " (or -hf NAME)" : "",
                                   args[k].help ? " (" : "", args[k].help ? args[k].help : "",
                                   args[k].help ? ")" : "");
        }
    }
    if (spec->pos_count) *spec->pos_count = n_pos;
    if (spec->positional && n_pos < spec->pos_required)
        return vkf_usage_error(spec->cmd, "%s is required (usage: vkformer %s %s)",
                               spec->positional, spec->cmd, spec->synopsis);
    return -1;
}

void vkf_args_usage(const vkf_cmd_spec *spec, FILE *f) {
    fprintf(f, "usage: vkformer %s %s\n", spec->cmd, spec->synopsis ? spec->synopsis : "[options]");
    if (spec->description) fprintf(f, "\n%s\n", spec->description);
    int any_refused = 0;
    fprintf(f, "\noptions:\n");
    for (const vkf_arg *a = spec->args; a->kind != VKF_ARG_END; a++) {
        if (a->hidden) continue;
        if (a->kind == VKF_ARG_REFUSED || a->kind == VKF_ARG_PENDING) {
            any_refused = 1;
            continue;
        }
        char left[96];
        int k = 0;
        for (const char *p = a->names; *p && k < (int)sizeof left - 1; p++)
            left[k++] = *p == '|' ? ',' : *p;
        left[k] = 0;
        /* "-n,--n-predict" -> "-n, --n-predict" */
        char spaced[128];
        int m = 0;
        for (int j = 0; left[j] && m < (int)sizeof spaced - 2; j++) {
            spaced[m++] = left[j];
            if (left[j] == ',') spaced[m++] = ' ';
        }
        spaced[m] = 0;
        if (takes_value(a) && a->metavar)
            snprintf(spaced + m, sizeof spaced - (size_t)m, " %s", a->metavar);
        if (strlen(spaced) > 26) /* a long left column: the help on the next line */
            fprintf(f, "  %s\n  %-26s %s\n", spaced, "", a->help ? a->help : "");
        else
            fprintf(f, "  %-26s %s\n", spaced, a->help ? a->help : "");
        /* main() turns -hf NAME into -m PATH for every command (cli/pull.h): said beside -m */
        if (is_model_flag(a))
            fprintf(f, "  %-26s %s\n", "-hf, --hf-repo NAME",
                    "a registry model for -m (vkformer pull --list), pulled on first "
                    "use");
    }
    fprintf(f, "  %-26s %s\n", "-h, --help", "this help");
    if (any_refused) {
        fprintf(f, "\nllama.cpp flags refused here (an error, never ignored):\n");
        for (const vkf_arg *a = spec->args; a->kind != VKF_ARG_END; a++) {
            if (a->hidden || (a->kind != VKF_ARG_REFUSED && a->kind != VKF_ARG_PENDING)) continue;
            char names[256]; /* the whole list: --mirostat, ..., --dry-multiplier */
            int k = 0;
            for (const char *p = a->names; *p && k < (int)sizeof names - 2; p++) {
                names[k++] = *p == '|' ? ',' : *p;
                if (*p == '|') names[k++] = ' ';
            }
            names[k] = 0;
            const char *why = a->help ? a->help : "not implemented";
            if (strlen(names) > 26)
                fprintf(f, "  %s\n  %-26s %s%s\n", names, "",
                        a->kind == VKF_ARG_PENDING ? "not yet: " : "", why);
            else
                fprintf(f, "  %-26s %s%s\n", names, a->kind == VKF_ARG_PENDING ? "not yet: " : "",
                        why);
        }
    }
    if (spec->epilog) fprintf(f, "\n%s\n", spec->epilog);
}
