/* vkformer bench --speculative -m MODEL [-f PROMPT_FILE] [-n 128] [-r 3] [--draft-max 16]
 *                               [--spec-ngram-size-n 3] [-md DRAFT] [--device N]
 *
 * Decode speed with speculative decoding against without, in one process and one run: the model
 * and its session are made once, one untimed round builds every graph shape and pipeline, then
 * each repetition generates greedily (temperature 0) n tokens from the prompt without
 * speculation, with n-gram lookup and, with -md, with the draft model, in turn. Reports the
 * decode time (the prompt pass excluded: vkf_generate_stats.gen_ms), the process CPU time of the
 * whole generation (on lavapipe the work done, which a loaded machine does not inflate), the
 * medians' ratios, the drafted and accepted tokens, and whether each run's tokens are those
 * without speculation (they must be: the run fails otherwise). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "vkformer.h"

#define MAX_REP 32

typedef struct toks {
    int32_t *t;
    int n, cap;
} toks;

static int on_tok(void *user, int32_t tok, const char *piece, size_t len) {
    (void)piece;
    (void)len;
    toks *o = user;
    if (o->n < o->cap) o->t[o->n++] = tok;
    return 0;
}

typedef struct run_stats {
    double gen_ms[MAX_REP], cpu_ms[MAX_REP];
    int64_t drafted, accepted;
    int n_gen, same;
} run_stats;

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

/* one generation into out; spec NULL: none */
static int gen_once(vkf_session *s, vkf_spec *spec, const int32_t *p, int np, int n, toks *out,
                    vkf_generate_stats *st, double *cpu_ms) {
    vkf_sampler_params sp = {.temp = 0};
    vkf_session_reset(s);
    out->n = 0;
    double c0 = vkf_bench_cpu_ms();
    vkf_status rc = vkf_generate_spec(s, spec, p, np, n, &sp, on_tok, out, st);
    *cpu_ms = vkf_bench_cpu_ms() - c0;
    if (rc != VKF_OK) fprintf(stderr, "vkformer: bench: generate: %s\n", vkf_last_error());
    return rc == VKF_OK;
}

int vkf_bench_spec(int argc, char **argv) {
    const char *model = NULL, *file = NULL, *draft_path = NULL, *device = NULL;
    int n = 128, reps = 3, dmax = 16, ngram = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--speculative")) continue;
        if (!v) {
            fprintf(stderr, "vkformer: bench --speculative: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "-m"))
            model = v;
        else if (!strcmp(a, "-f"))
            file = v;
        else if (!strcmp(a, "-md"))
            draft_path = v;
        else if (!strcmp(a, "--device"))
            device = v;
        else if (!strcmp(a, "-n"))
            n = atoi(v);
        else if (!strcmp(a, "-r"))
            reps = atoi(v);
        else if (!strcmp(a, "--draft-max"))
            dmax = atoi(v);
        else if (!strcmp(a, "--spec-ngram-size-n"))
            ngram = atoi(v);
        else {
            fprintf(stderr, "vkformer: bench --speculative: unknown flag %s\n", a);
            return 2;
        }
        i++;
    }
    if (!model || n < 2 || reps < 1 || reps > MAX_REP || dmax < 1) {
        fprintf(stderr, "usage: vkformer bench --speculative -m MODEL [-f PROMPT_FILE] [-n N >= 2] "
                        "[-r 1..32] [--draft-max N >= 1] [--spec-ngram-size-n N] [-md DRAFT] "
                        "[--device N]\n");
        return 2;
    }
    const char *dflt = "Correct the spelling in this paragraph.\n\nThe quick brown fox jumpd over "
                       "the lazy dog.\n\nCorrected: The quick brown fox";
    char *text = file ? read_file(file) : NULL;
    if (file && !text) {
        fprintf(stderr, "vkformer: bench --speculative: -f %s: cannot read it\n", file);
        return 1;
    }
    vkf_context_params cp = {.device = device};
    vkf_context *ctx = NULL;
    vkf_model *m = NULL, *dm = NULL;
    vkf_session *s = NULL;
    vkf_spec *sg = NULL, *sd = NULL;
    int32_t *prompt = malloc(8192 * sizeof *prompt);
    toks base = {malloc((size_t)n * sizeof(int32_t)), 0, n};
    toks got = {malloc((size_t)n * sizeof(int32_t)), 0, n};
    int rc = 1, np = 0;
    vkf_model_params mp = {.path = model};
    if (!prompt || !base.t || !got.t || vkf_context_create(&cp, &ctx) != VKF_OK ||
        vkf_model_load(ctx, &mp, &m) != VKF_OK ||
        vkf_model_tokenize(m, text ? text : dflt, VKF_TOKENIZE_ADD_SPECIAL, prompt, 8192, &np) !=
            VKF_OK) {
        fprintf(stderr, "vkformer: bench --speculative: %s\n", vkf_last_error());
        goto done;
    }
    vkf_session_params sesp = {.n_ctx = np + n + dmax + 8};
    vkf_spec_params p;
    vkf_spec_params_default(&p);
    p.type = VKF_SPEC_NGRAM;
    p.n_max = dmax;
    p.ngram_n = ngram;
    if (vkf_session_create(m, &sesp, &s) != VKF_OK || vkf_spec_create(m, &p, &sg) != VKF_OK) {
        fprintf(stderr, "vkformer: bench --speculative: %s\n", vkf_last_error());
        goto done;
    }
    if (draft_path) {
        vkf_model_params dp = {.path = draft_path};
        p.type = VKF_SPEC_DRAFT;
        if (vkf_model_load(ctx, &dp, &dm) != VKF_OK || (p.draft = dm, 0) ||
            vkf_spec_create(m, &p, &sd) != VKF_OK) {
            fprintf(stderr, "vkformer: bench --speculative: -md %s: %s\n", draft_path,
                    vkf_last_error());
            goto done;
        }
    }
    char when[32];
    double load1;
    int ncpu;
    vkf_bench_iso_time(when, sizeof when);
    vkf_bench_load(&load1, &ncpu);
    printf("speculative decoding, %s on %s, %s, load %.1f (%d CPUs)\n", model,
           vkf_context_device_name(ctx), when, load1, ncpu);
    printf("prompt %d tokens, %d generated greedily, %d repetitions (+1 warm-up), draft-max %d, "
           "n-gram key <= %d\n",
           np, n, reps, dmax, ngram);
    vkf_spec *specs[3] = {NULL, sg, sd};
    const char *names[3] = {"none", "n-gram lookup", "draft model"};
    int nk = sd ? 3 : 2;
    run_stats rs[3];
    memset(rs, 0, sizeof rs);
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up (graphs, pipelines), not counted */
        for (int k = 0; k < nk; k++) {
            vkf_generate_stats st;
            double cpu;
            int64_t d0 = 0, a0 = 0, d1 = 0, a1 = 0;
            vkf_spec_counts(specs[k], &d0, &a0);
            if (!gen_once(s, specs[k], prompt, np, n, k ? &got : &base, &st, &cpu)) goto done;
            vkf_spec_counts(specs[k], &d1, &a1);
            if (k > 0 && (got.n != base.n || memcmp(got.t, base.t, sizeof(int32_t) * got.n))) {
                fprintf(stderr, "vkformer: bench --speculative: %s changed the tokens\n", names[k]);
                goto done;
            }
            if (r < 0) continue;
            rs[k].gen_ms[r] = st.gen_ms;
            rs[k].cpu_ms[r] = cpu;
            rs[k].drafted += d1 - d0;
            rs[k].accepted += a1 - a0;
            rs[k].n_gen = st.n_generated;
            rs[k].same = 1;
        }
    }
    printf("\n| speculation | decode t/s (median) | decode ms | CPU ms per token | speed-up "
           "(decode) | speed-up (CPU) | drafted | accepted | rate | tokens |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n");
    double base_ms = vkf_bench_median(rs[0].gen_ms, reps);
    double base_cpu = vkf_bench_median(rs[0].cpu_ms, reps);
    for (int k = 0; k < nk; k++) {
        double ms = k ? vkf_bench_median(rs[k].gen_ms, reps) : base_ms;
        double cpu = k ? vkf_bench_median(rs[k].cpu_ms, reps) : base_cpu;
        /* the first token comes from the prompt pass: n_gen - 1 decode steps' worth */
        int steps = rs[k].n_gen > 1 ? rs[k].n_gen - 1 : 1;
        printf("| %s | %.2f | %.0f | %.1f | %.2fx | %.2fx | %lld | %lld | %.1f%% | %s |\n",
               names[k], ms > 0 ? steps / (ms / 1e3) : 0.0, ms, cpu / rs[k].n_gen, base_ms / ms,
               base_cpu / cpu, (long long)rs[k].drafted, (long long)rs[k].accepted,
               rs[k].drafted ? 100.0 * (double)rs[k].accepted / (double)rs[k].drafted : 0.0,
               k ? "same as none" : "-");
    }
    rc = 0;
done:
    vkf_spec_free(sg);
    vkf_spec_free(sd);
    vkf_session_free(s);
    vkf_model_free(dm);
    vkf_model_free(m);
    vkf_context_free(ctx);
    free(prompt);
    free(base.t);
    free(got.t);
    free(text);
    return rc;
}
