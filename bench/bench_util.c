/* Helpers shared by the benchmarks: option lists, statistics, clocks, machine load, device
 * driver lookup, size formatting. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "vkformer.h"

int vkf_bench_parse_fmt(const char *s) {
    if (!s) return -1;
    if (strcmp(s, "md") == 0) return VKF_BENCH_MD;
    if (strcmp(s, "json") == 0) return VKF_BENCH_JSON;
    if (strcmp(s, "csv") == 0) return VKF_BENCH_CSV;
    return -1;
}

int vkf_bench_parse_ints(const char *s, int *out, int cap) {
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 1 << 24 || n == cap) return -1;
        out[n++] = (int)v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return n;
}

double vkf_bench_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

double vkf_bench_cpu_ms(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
}

void vkf_bench_stats(const double *x, int n, double *mean, double *sd) {
    double s = 0, v = 0;
    for (int i = 0; i < n; i++)
        s += x[i];
    double m = n ? s / n : 0;
    for (int i = 0; i < n; i++)
        v += (x[i] - m) * (x[i] - m);
    *mean = m;
    *sd = n > 1 ? sqrt(v / (n - 1)) : 0;
}

static int vkf_bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double vkf_bench_median(double *x, int n) {
    if (n <= 0) return 0;
    qsort(x, (size_t)n, sizeof *x, vkf_bench_cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

void vkf_bench_load(double *load1, int *ncpu) {
    *load1 = -1;
    *ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", load1) != 1) *load1 = -1;
        fclose(f);
    }
}

void vkf_bench_iso_time(char *out, size_t n) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void vkf_bench_driver_of(const char *name, char *out, size_t n) {
    out[0] = 0;
    char *rep = NULL;
    if (vkf_devices_report(1, &rep) != VKF_OK || !rep) return;
    cJSON *root = cJSON_Parse(rep);
    free(rep);
    cJSON *devs = root ? cJSON_GetObjectItem(root, "devices") : NULL;
    cJSON *d;
    cJSON_ArrayForEach(d, devs) {
        cJSON *nm = cJSON_GetObjectItem(d, "name"), *info = cJSON_GetObjectItem(d, "driver_info");
        cJSON *dn = cJSON_GetObjectItem(d, "driver_name");
        if (cJSON_IsString(nm) && strcmp(nm->valuestring, name) == 0) {
            snprintf(out, n, "%s%s%s", cJSON_IsString(dn) ? dn->valuestring : "",
                     cJSON_IsString(dn) && cJSON_IsString(info) ? " " : "",
                     cJSON_IsString(info) ? info->valuestring : "");
            break;
        }
    }
    cJSON_Delete(root);
}

void vkf_bench_fmt_bytes(double b, char *out, size_t n) {
    if (b >= 1024.0 * 1024 * 1024)
        snprintf(out, n, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024)
        snprintf(out, n, "%.2f MiB", b / (1024.0 * 1024));
    else if (b >= 1024.0)
        snprintf(out, n, "%.2f KiB", b / 1024.0);
    else
        snprintf(out, n, "%.0f B", b);
}

void vkf_bench_fmt_count(double c, char *out, size_t n) {
    if (c >= 1e9)
        snprintf(out, n, "%.2f B", c / 1e9);
    else if (c >= 1e6)
        snprintf(out, n, "%.2f M", c / 1e6);
    else if (c >= 1e3)
        snprintf(out, n, "%.2f K", c / 1e3);
    else
        snprintf(out, n, "%.0f", c);
}
