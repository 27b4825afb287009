/* Start-up benchmark (`vkformer bench --startup -m MODEL`): wall time from process start to
 * the first token, measured by spawning this CLI as a subprocess (`vkformer bench
 * --first-token`): fork + exec + dynamic loading + instance and device + model load + the
 * first evaluation, until the child writes its "first_token" line.
 *   cold: an empty cache directory for every run (VKF_CACHE_DIR and Mesa's own shader cache,
 *         MESA_SHADER_CACHE_DIR, both fresh): every shader is compiled and every pipeline built;
 *   warm: the same directory again after one run filled it.
 * The child also reports its own phases (context, model load, first evaluation). */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "frontend/args.h"
#include "vkformer.h"

/* ---------------------------------------------------------------- the child */

int vkf_bench_first_token(int argc, char **argv) {
    double t0 = vkf_bench_now_ms();
    const char *model = NULL, *device = NULL;
    int cpu = 0;
    int mode = 0;
    vkf_arg args[] = {
        {"--first-token", VKF_ARG_SET, &mode, .hidden = 1},
        {"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH", .required = 1, .help = "model"},
        {"-dev|--device", VKF_ARG_STR, &device, .metavar = "N|NAME", .help = "Vulkan device"},
        {"--cpu", VKF_ARG_SET, &cpu, .help = "the CPU backend"},
        {0}};
    vkf_cmd_spec spec = {
        "bench --first-token", "-m MODEL [-dev N | --cpu]",
        "Loads the model, evaluates one token and prints the time since the process started "
        "(used by --startup).",
        args, .epilog = NULL};
    int prc = vkf_args_parse(&spec, argc, argv);
    if (prc >= 0) return prc;
    vkf_context_params cp = {.backend = cpu ? VKF_BACKEND_CPU : VKF_BACKEND_VULKAN,
                             .device = device};
    vkf_context *ctx = NULL;
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    float *logits = NULL;
    int rc = 1;
    if (vkf_context_create(&cp, &ctx) != VKF_OK) goto fail;
    double t1 = vkf_bench_now_ms();
    vkf_model_params mp = {.path = model};
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) goto fail;
    double t2 = vkf_bench_now_ms();
    vkf_model_desc md;
    vkf_model_describe(m, &md);
    vkf_session_params sp = {.n_ctx = md.n_ctx < 16 ? md.n_ctx : 16, .n_batch = 1};
    if (vkf_session_create(m, &sp, &s) != VKF_OK) goto fail;
    logits = malloc(sizeof *logits * (size_t)md.n_vocab);
    int32_t tok = md.bos_id >= 0 ? md.bos_id : 0;
    if (!logits || vkf_session_eval_last(s, &tok, 1, logits) != VKF_OK) goto fail;
    int32_t best = 0;
    for (int32_t i = 1; i < md.n_vocab; i++)
        if (logits[i] > logits[best]) best = i;
    double t3 = vkf_bench_now_ms();
    printf("first_token %d context_ms %.3f load_ms %.3f eval_ms %.3f total_ms %.3f\n", best,
           t1 - t0, t2 - t1, t3 - t2, t3 - t0);
    fflush(stdout);
    rc = 0;
fail:
    if (rc) fprintf(stderr, "vkformer bench --first-token: %s\n", vkf_last_error());
    free(logits);
    vkf_session_free(s);
    vkf_model_free(m);
    vkf_context_free(ctx);
    return rc;
}

/* ---------------------------------------------------------------- the parent */

static int vkf_su_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void vkf_su_rmtree(const char *dir) { nftw(dir, vkf_su_rm, 16, FTW_DEPTH | FTW_PHYS); }

typedef struct vkf_su_run {
    double wall_ms; /* fork to the first_token line */
    double context_ms, load_ms, eval_ms;
} vkf_su_run;

/* Spawns `exe bench --first-token ...` with VKF_CACHE_DIR=dir and MESA_SHADER_CACHE_DIR=dir/mesa.
 */
static int vkf_su_spawn(const char *exe, const char *model, const char *device, int cpu,
                        const char *dir, vkf_su_run *r) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    char mesa[1200];
    snprintf(mesa, sizeof mesa, "%s/mesa", dir);
    double t0 = vkf_bench_now_ms();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        setenv("VKF_CACHE_DIR", dir, 1);
        setenv("MESA_SHADER_CACHE_DIR", mesa, 1);
        const char *args[10];
        int n = 0;
        args[n++] = exe;
        args[n++] = "bench";
        args[n++] = "--first-token";
        args[n++] = "-m";
        args[n++] = model;
        if (device) {
            args[n++] = "--device";
            args[n++] = device;
        }
        if (cpu) args[n++] = "--cpu";
        args[n] = NULL;
        execv(exe, (char *const *)args);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[512];
    int got = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (!got && strncmp(line, "first_token ", 12) == 0) {
            r->wall_ms = vkf_bench_now_ms() - t0;
            int tok;
            double total;
            got = sscanf(line, "first_token %d context_ms %lf load_ms %lf eval_ms %lf total_ms %lf",
                         &tok, &r->context_ms, &r->load_ms, &r->eval_ms, &total) == 5;
        }
    }
    if (f)
        fclose(f);
    else
        close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return got && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void vkf_su_summary(const vkf_su_run *runs, int n, double *mean, double *sd, double *load,
                           double *eval) {
    double w[64];
    *load = *eval = 0;
    for (int i = 0; i < n; i++) {
        w[i] = runs[i].wall_ms;
        *load += runs[i].load_ms + runs[i].context_ms;
        *eval += runs[i].eval_ms;
    }
    vkf_bench_stats(w, n, mean, sd);
    *load /= n;
    *eval /= n;
}

static int vkf_su_opt_fmt(void *dst, const char *value, char *err, size_t n) {
    int f = vkf_bench_parse_fmt(value);
    if (f < 0) {
        snprintf(err, n, "expected md, json or csv, got '%s'", value);
        return -1;
    }
    *(int *)dst = f;
    return 0;
}

int vkf_bench_startup(int argc, char **argv) {
    const char *model = NULL, *device = NULL;
    int reps = 5, cpu = 0, fmt = VKF_BENCH_MD;
    int mode = 0;
    vkf_arg args[] = {
        {"--startup", VKF_ARG_SET, &mode, .hidden = 1},
        {"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH", .required = 1, .help = "model"},
        {"-r|--repetitions", VKF_ARG_INT, &reps, .min = 1, .max = 64, .metavar = "N",
         .help = "runs (default 5)"},
        {"-dev|--device", VKF_ARG_STR, &device, .metavar = "N|NAME", .help = "Vulkan device"},
        {"--cpu", VKF_ARG_SET, &cpu, .help = "the CPU backend"},
        {"-o|--output", VKF_ARG_CALL, &fmt, .metavar = "FMT", .call = vkf_su_opt_fmt,
         .help = "md (default), json or csv"},
        {0}};
    vkf_cmd_spec spec = {"bench --startup", "-m MODEL [-r N] [-dev N | --cpu] [-o md|json|csv]",
                         "Cold and warm time to the first token, each in a fresh process.", args,
                         .epilog = NULL};
    int prc = vkf_args_parse(&spec, argc, argv);
    if (prc >= 0) return prc;
    char exe[1024];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l <= 0) {
        fprintf(stderr, "vkformer bench --startup: cannot find this executable: %s\n",
                strerror(errno));
        return 1;
    }
    exe[l] = 0;
    double load0;
    int ncpu;
    vkf_bench_load(&load0, &ncpu);
    vkf_su_run cold[64], warm[64];
    int rc = 0;
    for (int i = 0; i < reps && !rc; i++) {
        char dir[] = "/tmp/vkf-startup-XXXXXX";
        if (!mkdtemp(dir)) {
            fprintf(stderr, "vkformer bench --startup: mkdtemp: %s\n", strerror(errno));
            return 1;
        }
        if (vkf_su_spawn(exe, model, device, cpu, dir, &cold[i]) != 0) {
            fprintf(stderr,
                    "vkformer bench --startup: the cold run failed (run `vkformer bench "
                    "--first-token -m %s`)\n",
                    model);
            rc = 1;
        }
        vkf_su_rmtree(dir);
    }
    char dir[] = "/tmp/vkf-startup-XXXXXX";
    if (!rc && !mkdtemp(dir)) rc = 1;
    vkf_su_run fill;
    if (!rc && vkf_su_spawn(exe, model, device, cpu, dir, &fill) != 0)
        rc = 1; /* fills the caches */
    for (int i = 0; i < reps && !rc; i++)
        if (vkf_su_spawn(exe, model, device, cpu, dir, &warm[i]) != 0) rc = 1;
    if (dir[strlen(dir) - 1] != 'X') vkf_su_rmtree(dir);
    if (rc) {
        fprintf(stderr, "vkformer bench --startup: a run failed\n");
        return rc;
    }
    double cm, csd, cl, ce, wm, wsd, wl, we, load1;
    vkf_su_summary(cold, reps, &cm, &csd, &cl, &ce);
    vkf_su_summary(warm, reps, &wm, &wsd, &wl, &we);
    vkf_bench_load(&load1, &ncpu);
    const char *base = strrchr(model, '/');
    base = base ? base + 1 : model;
    if (fmt == VKF_BENCH_JSON) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "model", model);
        cJSON_AddStringToObject(root, "backend", cpu ? "CPU" : "Vulkan");
        cJSON_AddNumberToObject(root, "reps", reps);
        cJSON_AddNumberToObject(root, "cold_ms", cm);
        cJSON_AddNumberToObject(root, "cold_sd_ms", csd);
        cJSON_AddNumberToObject(root, "cold_load_ms", cl);
        cJSON_AddNumberToObject(root, "cold_first_eval_ms", ce);
        cJSON_AddNumberToObject(root, "warm_ms", wm);
        cJSON_AddNumberToObject(root, "warm_sd_ms", wsd);
        cJSON_AddNumberToObject(root, "warm_load_ms", wl);
        cJSON_AddNumberToObject(root, "warm_first_eval_ms", we);
        cJSON_AddNumberToObject(root, "load_before", load0);
        cJSON_AddNumberToObject(root, "load_after", load1);
        char *t = cJSON_Print(root);
        if (t) printf("%s\n", t);
        free(t);
        cJSON_Delete(root);
    } else if (fmt == VKF_BENCH_CSV) {
        printf("model,backend,reps,cold_ms,cold_sd_ms,warm_ms,warm_sd_ms\n\"%s\",%s,%d,%.3f,%.3f,%."
               "3f,%.3f\n",
               model, cpu ? "CPU" : "Vulkan", reps, cm, csd, wm, wsd);
    } else {
        printf("| model | backend | start | process start to first token | context + model load | "
               "first eval |\n");
        printf("| --- | --- | --- | ---: | ---: | ---: |\n");
        printf("| %s | %s | cold (empty caches) | %.1f ± %.1f ms | %.1f ms | %.1f ms |\n", base,
               cpu ? "CPU" : "Vulkan", cm, csd, cl, ce);
        printf("| %s | %s | warm | %.1f ± %.1f ms | %.1f ms | %.1f ms |\n", base,
               cpu ? "CPU" : "Vulkan", wm, wsd, wl, we);
        printf("\n%d runs each; load average %.2f before, %.2f after (%d CPUs)\n", reps, load0,
               load1, ncpu);
    }
    return 0;
}
