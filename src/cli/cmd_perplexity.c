/* vkformer perplexity -m MODEL -f TEXT [-c 512] [--chunks N]: the perplexity of a text as
 * llama-perplexity computes it (tools/perplexity/perplexity.cpp of llama.cpp), and its KL
 * divergence mode.
 *
 * The text is tokenized once (BOS where the model adds one, control-token text kept as text),
 * then cut into chunks of -c tokens; the tail that does not fill a chunk is dropped. Each chunk
 * is evaluated from an empty cache, its first token replaced by BOS where the model adds one,
 * and only the second half of it is scored (positions c/2 .. c-2 predict the tokens after
 * them), so every scored token has at least c/2 tokens of context. The running perplexity
 * after each chunk prints as "[1]x,[2]y,..." and the end as "Final estimate: PPL = x +/- e",
 * where e is the standard error of the mean negative log-likelihood times the perplexity.
 *
 * --kl-divergence-base FILE writes the log-probabilities of every scored position to FILE in
 * llama-perplexity's format, so its files and ours read each other:
 *     "_logits_", int32 n_ctx, int32 n_vocab, int32 n_chunk, int32 tokens[n_chunk * n_ctx],
 *     then per chunk, per scored row (n_ctx - 1 - n_ctx/2 rows): nv = 2*((n_vocab+1)/2) + 4
 *     uint16: float scale, float min_log_prob (4 uint16), then n_vocab log-probs quantized as
 *     round((logit - min_logit) / scale), min_logit = max(min logit, max logit - 16),
 *     scale = (max - min_logit) / 65535 (padding to nv: unspecified)
 * followed by a record llama-perplexity never reads (it stops after the last row): "_vkfmeta",
 * uint32 length, then "key=value\n" lines naming the model (architecture, layers, width, heads,
 * vocabulary size and a hash of the vocabulary's texts). --kl-divergence reads such a file
 * (the tokens come from it; -f, when given, must tokenize to them) and compares this run
 * against it: mean KL divergence with its error, its maximum and percentiles, the agreement of
 * the most likely token ("same top p"), and the statistics of PPL(Q) against PPL(base). A file
 * from another model or context size is refused by name; a file llama-perplexity wrote (no
 * record) is checked by its vocabulary size and tokens only. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/gen_opts.h"
#include "frontend/args.h"

#define PPL_MAGIC "_logits_"
#define META_MAGIC "_vkfmeta"

/* ------------------------------------------------------------------ Ctrl-C */

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    if (g_interrupted) _exit(130);
    g_interrupted = 1;
}

static int interrupted(void *user) {
    (void)user;
    return g_interrupted != 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ progress on a terminal */

static int g_progress_shown;

static void progress(double done, double total, double t0) {
    if (!isatty(STDERR_FILENO) || total <= 0) return;
    double el = now_s() - t0, frac = done / total;
    char bar[31];
    int fill = (int)(frac * 30);
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = 0;
    fprintf(stderr, "\r\033[Kperplexity [%s] %3d%% %.0f/%.0f tokens", bar, (int)(frac * 100), done,
            total);
    if (done > 0 && frac < 1) fprintf(stderr, ", %.0f s left", el / frac - el);
    fflush(stderr);
    g_progress_shown = 1;
}

static void progress_clear(void) {
    if (!g_progress_shown) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    g_progress_shown = 0;
}

/* ------------------------------------------------------------------ llama-perplexity's math */

/* -log p(tok) from one row of logits, as perplexity.cpp's log_softmax: float max, a double
 * sum of expf(logit - max) */
static double row_nll(const float *logits, int32_t n_vocab, int32_t tok) {
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; i++)
        if (logits[i] > max) max = logits[i];
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        sum += expf(logits[i] - max);
    return -((double)(logits[tok] - max) - log(sum));
}

static int nearest_int(float f) {
    float v = f + 12582912.f;
    int i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* The base file's row of a position (perplexity.cpp's log_softmax with log_prob): nv uint16. */
static void row_quantize(const float *logits, int32_t n_vocab, uint16_t *out) {
    float max = logits[0], min = logits[0];
    for (int32_t i = 1; i < n_vocab; i++) {
        if (logits[i] > max) max = logits[i];
        if (logits[i] < min) min = logits[i];
    }
    if (min < max - 16) min = max - 16;
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        sum += expf(logits[i] - max);
    const float log_sum = (float)log(sum);
    const float min_log_prob = min - max - log_sum;
    const float scale = (max - min) / 65535.f;
    float d[2] = {scale, min_log_prob};
    memcpy(out, d, sizeof d);
    uint16_t *q = out + 4;
    if (scale) {
        const float inv = 1 / scale;
        for (int32_t i = 0; i < n_vocab; i++)
            q[i] = logits[i] > min ? (uint16_t)nearest_int(inv * (logits[i] - min)) : 0;
    } else {
        memset(q, 0, (size_t)n_vocab * sizeof *q);
    }
    if (n_vocab & 1) q[n_vocab] = 0; /* the padding to an even count: written as 0 */
}

typedef struct kld_sums {
    double nll, nll2, nll_base, nll_base2, nll_nll_base, kld, kld2, p_diff, p_diff2, p_diff4;
    float max_p_diff;
    size_t same_top, count;
} kld_sums;

/* One position against the base row (perplexity.cpp's log_softmax with base_log_prob); *kld
 * and *p_diff get the position's KL divergence and p - p_base of the right token. */
static void row_kld(const float *logits, int32_t n_vocab, const uint16_t *base, int32_t tok,
                    kld_sums *k, float *kld, float *p_diff) {
    float max = logits[0];
    int32_t imax = 0;
    for (int32_t i = 1; i < n_vocab; i++)
        if (logits[i] > max) {
            max = logits[i];
            imax = i;
        }
    double sum_exp = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        sum_exp += expf(logits[i] - max);
    const float log_sum = (float)log(sum_exp);
    float d[2];
    memcpy(d, base, sizeof d);
    const float scale = d[0], min_log_prob = d[1];
    base += 4;
    const float nll = max + log_sum - logits[tok];
    k->nll += nll;
    k->nll2 += (double)nll * nll;
    const float nll_base = -(scale * base[tok] + min_log_prob);
    k->nll_base += nll_base;
    k->nll_base2 += (double)nll_base * nll_base;
    k->nll_nll_base += (double)nll * nll_base;
    max += log_sum;
    double sum = 0;
    int32_t imax_base = -1;
    float lp_base_max = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        const float lp_base = scale * base[i] + min_log_prob;
        if (i == 0 || lp_base > lp_base_max) {
            lp_base_max = lp_base;
            imax_base = i;
        }
        if (lp_base > -16.f) sum += expf(lp_base) * (lp_base - logits[i] + max);
    }
    k->kld += sum;
    k->kld2 += sum * sum;
    k->count++;
    if (imax == imax_base) k->same_top++;
    const float p = expf(-nll), p_base = expf(-nll_base), dp = p - p_base;
    k->p_diff += dp;
    k->p_diff2 += (double)dp * dp;
    k->p_diff4 += (double)dp * dp * dp * dp;
    if (fabsf(dp) > k->max_p_diff) k->max_p_diff = fabsf(dp);
    *kld = (float)sum;
    *p_diff = dp;
}

typedef struct mean_err {
    double mean, err;
} mean_err;

/* perplexity.cpp's mean_and_uncertainty: the standard error once there are more than 10 */
static mean_err mean_and_err(double sum, double sum2, size_t n) {
    mean_err r = {0, 0};
    if (n < 1) return r;
    r.mean = sum / n;
    double v = sum2 / n - r.mean * r.mean;
    r.err = v > 0 && n > 10 ? sqrt(v / (n - 1)) : 0;
    return r;
}

static double covariance(double a, double b, double ab, size_t n) {
    if (n < 10) return 0;
    return (ab / n - (a / n) * (b / n)) / (n - 1);
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* perplexity.cpp's percentile of sorted values (linear between neighbours) */
static float percentile(const float *v, size_t n, float frac) {
    if (frac <= 0) return v[0];
    if (frac >= 1) return v[n - 1];
    float p = frac * (n - 1);
    size_t ip = (size_t)p;
    p -= ip;
    return (1 - p) * v[ip] + p * v[ip + 1 < n ? ip + 1 : n - 1];
}

static float median(const float *v, size_t n) {
    return n % 2 == 0 ? 0.5f * (v[n / 2] + v[n / 2 - 1]) : v[n / 2];
}

/* ------------------------------------------------------------------ the model's record */

/* FNV-1a over every token's text (specials rendered) and its length: another tokenizer gives
 * another hash even where the vocabulary sizes agree */
static uint64_t vocab_hash(const vkf_model *m, int32_t n_vocab) {
    uint64_t h = 1469598103934665603ull;
    for (int32_t id = 0; id < n_vocab; id++) {
        char *t = NULL;
        if (vkf_model_detokenize(m, &id, 1, VKF_DETOKENIZE_SPECIAL, &t) != VKF_OK) t = NULL;
        size_t len = t ? strlen(t) : 0;
        for (size_t i = 0; i < len; i++)
            h = (h ^ (unsigned char)t[i]) * 1099511628211ull;
        h = (h ^ (len & 0xff)) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;
        free(t);
    }
    return h;
}

/* "key=value\n" lines: what makes two files of one model comparable (the weight type may
 * differ: that is what the comparison measures) */
static int model_record(const vkf_model *m, const char *path, char *out, size_t n) {
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    return snprintf(out, n,
                    "architecture=%s\nn_layer=%d\nd_model=%d\nn_head=%d\nn_vocab=%d\n"
                    "vocab_hash=%016llx\nmodel=%s\nweights=%s\n",
                    d.architecture, d.n_layer, d.d_model, d.n_head, d.n_vocab,
                    (unsigned long long)vocab_hash(m, d.n_vocab), base, vkf_dtype_name(d.wtype));
}

/* The value of key in a record ("" when absent), into v. */
static void record_get(const char *rec, const char *key, char *v, size_t n) {
    size_t kl = strlen(key);
    v[0] = 0;
    for (const char *p = rec; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            size_t vl = len - kl - 1 < n - 1 ? len - kl - 1 : n - 1;
            memcpy(v, p + kl + 1, vl);
            v[vl] = 0;
            return;
        }
        p = nl ? nl + 1 : NULL;
    }
}

/* ------------------------------------------------------------------ output helpers */

static int write_all(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n ? 0 : -1; }

/* ------------------------------------------------------------------ the command */

typedef struct ppl_opts {
    vkf_context_params cp;
    const char *model, *file, *base_path;
    int32_t n_ctx, n_chunks, n_batch;
    int32_t cache_type_k, cache_type_v; /* vkf_cache_type (0: the device's default) */
    int kl, json, ctx_given;
} ppl_opts;

typedef struct base_file {
    FILE *f;
    int32_t n_ctx, n_vocab, n_chunk;
    int32_t *tokens;
    char record[1024]; /* "" for a file llama-perplexity wrote */
    long data_at;      /* offset of the first row */
} base_file;

/* Reads and checks the header of a base file against the model; 0 or 1 after printing why. */
static int base_open(base_file *b, const char *path, vkf_model *m, const vkf_model_desc *md,
                     const ppl_opts *o) {
    memset(b, 0, sizeof *b);
    struct stat st;
    if (stat(path, &st) != 0 || !(b->f = fopen(path, "rb"))) {
        fprintf(stderr, "vkformer: perplexity: --kl-divergence-base %s: %s\n", path,
                strerror(errno));
        return 1;
    }
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr,
                "vkformer: perplexity: --kl-divergence-base %s: is a directory (a file of "
                "log-probabilities expected)\n",
                path);
        return 1;
    }
    char magic[8];
    int32_t h[3];
    if (fread(magic, 1, 8, b->f) != 8 || memcmp(magic, PPL_MAGIC, 8) ||
        fread(h, sizeof h[0], 3, b->f) != 3) {
        fprintf(stderr,
                "vkformer: perplexity: --kl-divergence-base %s: not a file of log-probabilities "
                "(expected llama-perplexity's \"_logits_\" header)\n",
                path);
        return 1;
    }
    b->n_ctx = h[0], b->n_vocab = h[1], b->n_chunk = h[2];
    if (b->n_ctx < 4 || b->n_vocab < 1 || b->n_chunk < 1) {
        fprintf(stderr,
                "vkformer: perplexity: --kl-divergence-base %s: a damaged header (context %d, "
                "vocabulary %d, %d chunks)\n",
                path, b->n_ctx, b->n_vocab, b->n_chunk);
        return 1;
    }
    const long long nv = 2 * ((b->n_vocab + 1LL) / 2) + 4;
    const long long rows = (long long)b->n_chunk * (b->n_ctx - 1 - b->n_ctx / 2);
    const long long need = 20 + 4LL * b->n_chunk * b->n_ctx + 2 * nv * rows;
    if ((long long)st.st_size < need) {
        fprintf(stderr,
                "vkformer: perplexity: --kl-divergence-base %s: truncated: %d chunks of %d "
                "tokens over %d-token rows need %lld bytes, the file has %lld\n",
                path, b->n_chunk, b->n_ctx, b->n_vocab, need, (long long)st.st_size);
        return 1;
    }
    /* the record after the rows, where this program wrote the file */
    if ((long long)st.st_size >= need + 12 && fseek(b->f, (long)need, SEEK_SET) == 0) {
        uint32_t len = 0;
        if (fread(magic, 1, 8, b->f) == 8 && !memcmp(magic, META_MAGIC, 8) &&
            fread(&len, 4, 1, b->f) == 1 && len < sizeof b->record &&
            fread(b->record, 1, len, b->f) == len)
            b->record[len] = 0;
        else
            b->record[0] = 0;
    }
    if (b->n_vocab != md->n_vocab) {
        char name[256];
        record_get(b->record, "model", name, sizeof name);
        fprintf(stderr,
                "vkformer: perplexity: --kl-divergence-base %s was made by another model%s%s%s: "
                "a vocabulary of %d tokens, %s has %d\n",
                path, name[0] ? " (" : "", name, name[0] ? ")" : "", b->n_vocab, o->model,
                md->n_vocab);
        return 1;
    }
    if (b->record[0]) {
        char mine[1024];
        model_record(m, o->model, mine, sizeof mine);
        static const char *keys[] = {"architecture", "n_layer", "d_model",
                                     "n_head",       "n_vocab", "vocab_hash"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            char a[256], c[256], name[256];
            record_get(b->record, keys[i], a, sizeof a);
            record_get(mine, keys[i], c, sizeof c);
            if (strcmp(a, c)) {
                record_get(b->record, "model", name, sizeof name);
                fprintf(stderr,
                        "vkformer: perplexity: --kl-divergence-base %s was made by another model "
                        "(%s): its %s is %s, %s's is %s\n",
                        path, name, keys[i], a, o->model, c);
                return 1;
            }
        }
    } else {
        fprintf(stderr,
                "vkformer: perplexity: %s has no model record (llama-perplexity wrote it): only "
                "its vocabulary size and tokens are checked\n",
                path);
    }
    if (o->ctx_given && o->n_ctx != b->n_ctx) {
        fprintf(stderr,
                "vkformer: perplexity: --kl-divergence-base %s was made with a context of %d "
                "tokens, -c asks for %d: use -c %d (or leave -c out)\n",
                path, b->n_ctx, o->n_ctx, b->n_ctx);
        return 1;
    }
    size_t nt = (size_t)b->n_chunk * b->n_ctx;
    if (fseek(b->f, 20, SEEK_SET) != 0 || !(b->tokens = malloc(nt * sizeof *b->tokens)) ||
        fread(b->tokens, sizeof *b->tokens, nt, b->f) != nt) {
        fprintf(stderr, "vkformer: perplexity: --kl-divergence-base %s: reading its tokens: %s\n",
                path, b->tokens ? "read error" : "out of memory");
        return 1;
    }
    for (size_t i = 0; i < nt; i++)
        if (b->tokens[i] < 0 || b->tokens[i] >= md->n_vocab) {
            fprintf(stderr,
                    "vkformer: perplexity: --kl-divergence-base %s: token %zu is %d, outside "
                    "%s's vocabulary of %d\n",
                    path, i, b->tokens[i], o->model, md->n_vocab);
            return 1;
        }
    b->data_at = 20 + 4L * (long)nt;
    return 0;
}

static void base_close(base_file *b) {
    if (b->f) fclose(b->f);
    free(b->tokens);
}

static const char *description(void) {
    return "The perplexity of a text, as llama-perplexity computes it: the text is tokenized once "
           "(BOS where the model adds one), cut into chunks of -c tokens (the tail that does "
           "not fill one is dropped), each chunk evaluated from an empty cache with its first "
           "token replaced by BOS where the model adds one, and the second half of each chunk "
           "scored. stdout gets the running perplexity after each chunk ([1]x,[2]y,...) and "
           "\"Final estimate: PPL = x +/- e\" (e: the standard error of the mean log-likelihood "
           "times PPL); stderr the counts, the time per chunk and, on a terminal, a progress "
           "bar.\n\nKL divergence: a run with --kl-divergence-base FILE saves the "
           "log-probabilities of every scored position to FILE in llama-perplexity's format "
           "(plus a record naming the model, which llama-perplexity skips); a later run with "
           "--kl-divergence --kl-divergence-base FILE (another weight type of the same model) "
           "compares against them: mean KL divergence with its error, maximum and percentiles, "
           "how often the most likely token agrees (same top p), and PPL(Q) against PPL(base).";
}

static const char *epilog =
    "examples:\n"
    "  vkformer perplexity -m model-f16.gguf -f bench/data/genesis.txt --kl-divergence-base "
    "f16.kld\n"
    "  vkformer perplexity -m model-q4_0.gguf --kl-divergence --kl-divergence-base f16.kld\n";

int vkf_cmd_perplexity(int argc, char **argv) {
    ppl_opts o = {.n_ctx = 512, .n_chunks = -1};
    vkf_arg args[] = {
        {"-m|--model", VKF_ARG_STR, &o.model, .metavar = "PATH",
         .help = "model directory or .gguf file (-hf NAME: a model `vkformer pull --list` names)"},
        {"-f|--file", VKF_ARG_STR, &o.file, .metavar = "FILE",
         .help = "the text ('-': stdin); with --kl-divergence optional (the tokens come from "
                 "the base file; a text given must tokenize to them)"},
        {"-c|--ctx-size", VKF_ARG_INT, &o.n_ctx, .min = 4, .max = 1 << 20, .metavar = "N",
         .seen = &o.ctx_given,
         .help = "tokens per chunk (default 512, llama-perplexity's; --kl-divergence: the base "
                 "file's)"},
        {"--chunks", VKF_ARG_INT, &o.n_chunks, .min = -1, .max = 1 << 30, .metavar = "N",
         .help = "evaluate at most N chunks (default -1: all the text fills)"},
        {"-b|--batch-size", VKF_ARG_INT, &o.n_batch, .min = 1, .max = 1 << 24, .metavar = "N",
         .help = "evaluate each chunk in passes of at most N tokens (default: the device's, 512 "
                 "on GPUs, 64 on CPU devices); llama.cpp's N > -c, several chunks per batch, "
                 "runs them one after another here (the same numbers)"},
        {"--kl-divergence-base", VKF_ARG_STR, &o.base_path, .metavar = "FILE",
         .help = "save the log-probabilities to FILE (llama-perplexity's format); with "
                 "--kl-divergence, read them from FILE"},
        {"--kl-divergence", VKF_ARG_SET, &o.kl,
         .help = "compare against --kl-divergence-base FILE (a base run of the same model)"},
        {"-ctk|--cache-type-k", VKF_ARG_CALL, &o.cache_type_k, .metavar = "T",
         .call = vkf_parse_cache_type, .help = VKF_CACHE_TYPE_HELP},
        {"-ctv|--cache-type-v", VKF_ARG_CALL, &o.cache_type_v, .metavar = "T",
         .call = vkf_parse_cache_type, .help = "the same for the V cache"},
        {"--json", VKF_ARG_SET, &o.json,
         .help = "one JSON object on stdout at the end instead of the text report"},
        VKF_ARGS_BACKEND(&o.cp),
        {"--ppl-stride|--ppl-output-type|--hellaswag|--winogrande|--multiple-choice",
         VKF_ARG_REFUSED, .takes_value = 0,
         .help = "llama-perplexity's strided and task modes are not implemented"},
        {0}};
    vkf_cmd_spec spec = {"perplexity",
                         "-m MODEL -f TEXT [-c 512] [--chunks N] [-b N] [-ctk T] [-ctv T] [--json] "
                         "[--kl-divergence-base FILE [--kl-divergence]]",
                         description(), args, .epilog = epilog};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (!o.model)
        return vkf_usage_error("perplexity", "--model PATH (a model directory or .gguf file) or "
                                             "-hf NAME is required");
    if (o.kl && !o.base_path)
        return vkf_usage_error("perplexity", "--kl-divergence needs --kl-divergence-base FILE "
                                             "(the log-probabilities of a base run)");
    if (!o.kl && !o.file) return vkf_usage_error("perplexity", "-f FILE (the text) is required");

    char *text = NULL, *tmp_path = NULL;
    vkf_context *ctx = NULL;
    vkf_model *m = NULL;
    vkf_session *s = NULL;
    int32_t *tokens = NULL, *chunk = NULL;
    float *logits = NULL, *kld_values = NULL, *p_diff_values = NULL;
    double *running = NULL;
    uint16_t *rows = NULL;
    FILE *out = NULL;
    base_file base = {0};
    rc = 1;

    if (o.file && !(text = vkf_cli_read_text("perplexity", "-f", o.file))) return 1;

    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    o.cp.shader_compiled = vkf_cli_compile_progress;
    if (vkf_cli_context(&o.cp, &ctx) != VKF_OK) {
        vkf_cli_fail("perplexity");
        goto done;
    }
    vkf_model_params mp = {
        .path = o.model, .progress = vkf_cli_progress, .progress_user = "loading the model"};
    if (vkf_model_load(ctx, &mp, &m) != VKF_OK) {
        vkf_cli_fail("perplexity");
        goto done;
    }
    vkf_model_desc md;
    vkf_model_describe(m, &md);
    if (md.encoder_decoder || md.encoder_only) {
        fprintf(stderr,
                "vkformer: perplexity: %s is an %s model: perplexity needs a decoder-only one\n",
                o.model, md.encoder_only ? "encoder-only" : "encoder-decoder");
        goto done;
    }
    if (!md.has_tokenizer) {
        fprintf(stderr, "vkformer: perplexity: %s has no tokenizer\n", o.model);
        goto done;
    }
    const int32_t n_vocab = md.n_vocab;

    /* BOS as llama_vocab_get_add_bos: what tokenizing "" with the specials gives */
    int add_bos = 0;
    {
        int32_t sp[8], nsp = 0;
        if (vkf_model_tokenize(m, "", VKF_TOKENIZE_ADD_SPECIAL | VKF_TOKENIZE_LITERAL, sp, 8,
                               &nsp) != VKF_OK) {
            vkf_cli_fail("perplexity: tokenizing");
            goto done;
        }
        add_bos = nsp > 0 && md.bos_id >= 0 && sp[0] == md.bos_id;
        for (int32_t i = 0; i < nsp; i++)
            if (md.eos_id >= 0 && sp[i] == md.eos_id && md.eos_id != md.bos_id) {
                fprintf(stderr,
                        "vkformer: perplexity: %s's tokenizer appends EOS to every text; "
                        "llama-perplexity refuses such a model too\n",
                        o.model);
                goto done;
            }
    }

    int32_t n_tok = 0;
    if (text && vkf_cli_tokenize(m, text, VKF_TOKENIZE_ADD_SPECIAL | VKF_TOKENIZE_LITERAL, &tokens,
                                 &n_tok) != VKF_OK) {
        vkf_cli_fail("perplexity: tokenizing the text");
        goto done;
    }
    if (text) vkf_cli_warn_unknown_chars("perplexity", o.model, text);

    int32_t n_ctx = o.n_ctx, n_chunk;
    if (o.kl) {
        if (base_open(&base, o.base_path, m, &md, &o)) goto done;
        n_ctx = base.n_ctx;
        n_chunk = base.n_chunk;
        if (o.n_chunks >= 0 && o.n_chunks < n_chunk) n_chunk = o.n_chunks;
        if (tokens) {
            size_t nt = (size_t)n_chunk * n_ctx;
            size_t i = 0;
            while (i < nt && i < (size_t)n_tok && tokens[i] == base.tokens[i])
                i++;
            if (i < nt) {
                fprintf(stderr,
                        "vkformer: perplexity: -f %s is not the text of the base run %s: token "
                        "%zu is %d here, %d there\n",
                        o.file, o.base_path, i, i < (size_t)n_tok ? tokens[i] : -1, base.tokens[i]);
                goto done;
            }
            free(tokens);
        }
        tokens = base.tokens;
        base.tokens = NULL;
        n_tok = n_chunk * n_ctx;
    } else {
        if (n_tok < 2 * n_ctx) {
            fprintf(stderr,
                    "vkformer: perplexity: -f %s tokenizes to only %d tokens; a context of %d "
                    "needs at least %d (two chunks, the second half of each scored): give a "
                    "longer text or a smaller -c\n",
                    o.file, n_tok, n_ctx, 2 * n_ctx);
            goto done;
        }
        n_chunk = n_tok / n_ctx;
        if (o.n_chunks >= 0 && o.n_chunks < n_chunk) n_chunk = o.n_chunks;
        if (n_chunk < 1) {
            fprintf(stderr, "vkformer: perplexity: --chunks 0: nothing to evaluate\n");
            goto done;
        }
    }
    if (n_ctx > md.n_ctx) {
        fprintf(stderr,
                "vkformer: perplexity: a context of %d tokens is past %s's %d: use a smaller "
                "-c\n",
                n_ctx, o.model, md.n_ctx);
        goto done;
    }

    const int32_t first = n_ctx / 2, n_scored = n_ctx - 1 - first;
    const int32_t pass = o.n_batch && o.n_batch < n_ctx ? o.n_batch : n_ctx;
    /* logits of at most this many positions at once (rows of n_vocab floats) */
    const int32_t piece = pass < n_ctx - first ? pass : n_ctx - first;
    const size_t nv = 2 * (((size_t)n_vocab + 1) / 2) + 4;
    vkf_session_params sesp = {.n_ctx = n_ctx,
                               .n_ubatch = pass,
                               .cache_type_k = o.cache_type_k,
                               .cache_type_v = o.cache_type_v,
                               .abort_callback = interrupted};
    if (!o.n_batch) sesp.n_ubatch = 0; /* the device's own */
    if (vkf_session_create(m, &sesp, &s) != VKF_OK) {
        vkf_cli_fail("perplexity");
        goto done;
    }
    chunk = malloc((size_t)n_ctx * sizeof *chunk);
    logits = malloc((size_t)piece * n_vocab * sizeof *logits);
    running = malloc((size_t)n_chunk * sizeof *running);
    if (o.kl || o.base_path) rows = malloc((size_t)n_scored * nv * sizeof *rows);
    if (o.kl) {
        kld_values = malloc((size_t)n_chunk * n_scored * sizeof *kld_values);
        p_diff_values = malloc((size_t)n_chunk * n_scored * sizeof *p_diff_values);
    }
    if (!chunk || !logits || !running || ((o.kl || o.base_path) && !rows) ||
        (o.kl && (!kld_values || !p_diff_values))) {
        fprintf(stderr, "vkformer: perplexity: out of memory (%d-token rows of %d positions)\n",
                n_vocab, piece);
        goto done;
    }

    if (o.base_path && !o.kl) { /* written beside FILE, renamed over it when complete */
        size_t len = strlen(o.base_path) + 16;
        tmp_path = malloc(len);
        if (tmp_path) snprintf(tmp_path, len, "%s.tmp%ld", o.base_path, (long)getpid());
        if (!tmp_path || !(out = fopen(tmp_path, "wb"))) {
            fprintf(stderr, "vkformer: perplexity: --kl-divergence-base %s: %s\n", o.base_path,
                    tmp_path ? strerror(errno) : "out of memory");
            free(tmp_path);
            tmp_path = NULL;
            goto done;
        }
        int32_t h[4] = {n_ctx, n_vocab, n_chunk};
        if (write_all(out, PPL_MAGIC, 8) || write_all(out, h, 12) ||
            write_all(out, tokens, (size_t)n_chunk * n_ctx * sizeof *tokens))
            goto write_failed;
    }
    if (o.kl && fseek(base.f, base.data_at, SEEK_SET) != 0) {
        fprintf(stderr, "vkformer: perplexity: --kl-divergence-base %s: %s\n", o.base_path,
                strerror(errno));
        goto done;
    }

    fprintf(stderr,
            "vkformer: perplexity: %s on %s: %d tokens, %d %s of %d (%d scored each), %s, "
            "passes of %s%d\n",
            o.model, vkf_context_device_name(ctx), n_tok, n_chunk,
            vkf_plural(n_chunk, "chunk", "chunks"), n_ctx, n_scored,
            add_bos ? "BOS first in each chunk" : "no BOS (the model adds none)",
            o.n_batch ? "" : "up to ", o.n_batch ? pass : n_ctx);
    if (n_ctx > md.n_ctx_train)
        fprintf(stderr, "vkformer: perplexity: the model was trained on only %d context tokens\n",
                md.n_ctx_train);

    kld_sums k = {0};
    double nll = 0, nll2 = 0;
    size_t count = 0;
    const double t0 = now_s(), total = (double)n_chunk * n_ctx;
    if (o.kl && !o.json)
        printf("chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence"
               "              \xce\x94p RMS            Same top p\n");
    for (int32_t c = 0; c < n_chunk; c++) {
        vkf_session_reset(s);
        memcpy(chunk, tokens + (size_t)c * n_ctx, (size_t)n_ctx * sizeof *chunk);
        if (add_bos) chunk[0] = md.bos_id;
        if (o.kl &&
            fread(rows, sizeof *rows, (size_t)n_scored * nv, base.f) != (size_t)n_scored * nv) {
            progress_clear();
            fprintf(stderr, "vkformer: perplexity: --kl-divergence-base %s: reading chunk %d\n",
                    o.base_path, c + 1);
            goto done;
        }
        for (int32_t p = 0; p < n_ctx;) {
            /* the first half without logits, the rest in pieces that fit the buffer */
            int32_t n = p < first ? (first - p < pass ? first - p : pass) : n_ctx - p;
            if (p >= first && n > piece) n = piece;
            progress((double)c * n_ctx + p, total, t0);
            vkf_status st = vkf_session_eval(s, chunk + p, n, p < first ? NULL : logits);
            if (st != VKF_OK) {
                progress_clear();
                if (st == VKF_ERROR_ABORTED) {
                    fprintf(stderr, "vkformer: perplexity: interrupted at chunk %d of %d\n", c + 1,
                            n_chunk);
                    rc = 130;
                } else {
                    vkf_cli_fail("perplexity");
                }
                goto done;
            }
            for (int32_t r = 0; p >= first && r < n; r++) {
                const int32_t j = p + r; /* predicts the token at j + 1 */
                if (j >= n_ctx - 1) break;
                const float *row = logits + (size_t)r * n_vocab;
                const int32_t next = tokens[(size_t)c * n_ctx + j + 1];
                const size_t at = (size_t)c * n_scored + (j - first);
                if (o.kl) {
                    row_kld(row, n_vocab, rows + (size_t)(j - first) * nv, next, &k,
                            &kld_values[at], &p_diff_values[at]);
                } else {
                    double v = row_nll(row, n_vocab, next);
                    nll += v;
                    nll2 += v * v;
                    count++;
                    if (out) row_quantize(row, n_vocab, rows + (size_t)(j - first) * nv);
                }
            }
            p += n;
        }
        if (out && write_all(out, rows, (size_t)n_scored * nv * sizeof *rows)) goto write_failed;
        if (c == 0) {
            double t = now_s() - t0;
            progress_clear();
            fprintf(stderr, "vkformer: perplexity: %.2f seconds per chunk - ETA %.2f minutes\n", t,
                    t * (n_chunk - 1) / 60.0);
        }
        progress_clear();
        if (o.kl) {
            mean_err lp = mean_and_err(k.nll, k.nll2, k.count);
            running[c] = exp(lp.mean);
            if (!o.json) {
                mean_err lb = mean_and_err(k.nll_base, k.nll_base2, k.count);
                double cov = covariance(k.nll, k.nll_base, k.nll_nll_base, k.count);
                double ratio_err = sqrt(lp.err * lp.err + lb.err * lb.err - 2 * cov);
                mean_err kd = mean_and_err(k.kld, k.kld2, k.count);
                mean_err mse = mean_and_err(k.p_diff2, k.p_diff4, k.count);
                double rms = sqrt(mse.mean), rms_err = rms > 0 ? 0.5 / rms * mse.err : 0;
                double top = (double)k.same_top / k.count;
                double top_err = k.count > 1 ? sqrt(top * (1 - top) / (k.count - 1)) : 0;
                printf("%4d    %9.4f \xc2\xb1 %9.4f    %10.5f \xc2\xb1 %10.5f    %10.5f \xc2\xb1 "
                       "%10.5f    %6.3f \xc2\xb1 %6.3f %%    %6.3f \xc2\xb1 %6.3f %%\n",
                       c + 1, running[c], running[c] * lp.err, lp.mean - lb.mean, ratio_err,
                       kd.mean, kd.err, 100 * rms, 100 * rms_err, 100 * top, 100 * top_err);
            }
        } else {
            running[c] = exp(nll / count);
            if (!o.json) printf("[%d]%.4f,", c + 1, running[c]);
        }
        if (!o.json && vkf_cli_stdout_flush("perplexity")) goto done;
    }
    progress_clear();
    const double seconds = now_s() - t0;

    if (out) { /* the model's record, then the file in place */
        char rec[1024];
        int len = model_record(m, o.model, rec, sizeof rec);
        uint32_t l32 = (uint32_t)len;
        if (write_all(out, META_MAGIC, 8) || write_all(out, &l32, 4) ||
            write_all(out, rec, (size_t)len) || fflush(out) != 0 || ferror(out))
            goto write_failed;
        if (fclose(out) != 0) {
            out = NULL;
            goto write_failed;
        }
        out = NULL;
        if (rename(tmp_path, o.base_path) != 0) {
            fprintf(stderr, "vkformer: perplexity: --kl-divergence-base %s: %s\n", o.base_path,
                    strerror(errno));
            goto done;
        }
        free(tmp_path);
        tmp_path = NULL;
        fprintf(stderr, "vkformer: perplexity: saved the log-probabilities to %s\n", o.base_path);
    }

    if (!o.kl) {
        const double mean = nll / count, ppl = exp(mean);
        double var = nll2 / count - mean * mean;
        double err = var > 0 ? sqrt(var / (count - 1)) * ppl : 0;
        if (o.json) {
            printf("{\"model\":");
            vkf_cli_json_str(o.model);
            printf(",\"file\":");
            vkf_cli_json_str(o.file);
            printf(",\"device\":");
            vkf_cli_json_str(vkf_context_device_name(ctx));
            printf(",\"n_ctx\":%d,\"n_chunks\":%d,\"n_tokens\":%d,\"n_scored\":%zu,\"add_bos\":%s,"
                   "\"ppl\":%.6f,\"ppl_error\":%.6f,\"mean_nll\":%.8f,\"chunks\":[",
                   n_ctx, n_chunk, n_tok, count, add_bos ? "true" : "false", ppl, err, mean);
            for (int32_t c = 0; c < n_chunk; c++)
                printf("%s%.6f", c ? "," : "", running[c]);
            printf("],\"seconds\":%.3f}\n", seconds);
        } else {
            printf("\n");
            if (var > 0)
                printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, err);
            else
                printf("Final estimate: PPL = %.4f (no spread: every token scored alike)\n", ppl);
        }
        rc = 0;
        goto done;
    }

    /* ---- KL divergence statistics, as llama-perplexity prints them */
    const size_t nk = k.count;
    qsort(kld_values, nk, sizeof *kld_values, cmp_float);
    qsort(p_diff_values, nk, sizeof *p_diff_values, cmp_float);
    mean_err lp = mean_and_err(k.nll, k.nll2, nk), lb = mean_and_err(k.nll_base, k.nll_base2, nk);
    const double ppl = exp(lp.mean), ppl_err = ppl * lp.err;
    const double ppl_base = exp(lb.mean), ppl_base_err = ppl_base * lb.err;
    const double cov = covariance(k.nll, k.nll_base, k.nll_nll_base, nk);
    const double cor = lp.err * lb.err > 0 ? cov / (lp.err * lb.err) : 0;
    const double ratio = lp.mean - lb.mean;
    const double ratio_err = sqrt(fmax(0, lp.err * lp.err + lb.err * lb.err - 2 * cov));
    const double diff_err =
        sqrt(fmax(0, ppl_err * ppl_err + ppl_base_err * ppl_base_err - 2 * ppl * ppl_base * cov));
    mean_err kd = mean_and_err(k.kld, k.kld2, nk), dp = mean_and_err(k.p_diff, k.p_diff2, nk);
    mean_err mse = mean_and_err(k.p_diff2, k.p_diff4, nk);
    const double rms = sqrt(mse.mean), rms_err = rms > 0 ? 0.5 / rms * mse.err : 0;
    const double top = (double)k.same_top / nk;
    const double top_err = nk > 1 ? sqrt(top * (1 - top) / (nk - 1)) : 0;
    static const float kfr[] = {0.999f, 0.99f, 0.95f, 0.9f, 0.1f, 0.05f, 0.01f, 0.001f};
    static const char *kname[] = {"99.9", "99.0", "95.0", "90.0", "10.0", " 5.0", " 1.0", " 0.1"};
    if (o.json) {
        printf("{\"model\":");
        vkf_cli_json_str(o.model);
        printf(",\"base\":");
        vkf_cli_json_str(o.base_path);
        printf(",\"device\":");
        vkf_cli_json_str(vkf_context_device_name(ctx));
        printf(",\"n_ctx\":%d,\"n_chunks\":%d,\"n_scored\":%zu,\"ppl\":%.6f,\"ppl_error\":%.6f,"
               "\"ppl_base\":%.6f,\"ppl_base_error\":%.6f,\"ln_ppl_ratio\":%.8f,"
               "\"ln_ppl_ratio_error\":%.8f,\"ppl_ratio\":%.8f,\"ppl_diff\":%.6f,"
               "\"ppl_diff_error\":%.6f,\"kld\":{\"mean\":%.8g,\"error\":%.8g,\"max\":%.8g,",
               n_ctx, n_chunk, nk, ppl, ppl_err, ppl_base, ppl_base_err, ratio, ratio_err,
               exp(ratio), ppl - ppl_base, diff_err, kd.mean, kd.err, (double)kld_values[nk - 1]);
        for (size_t i = 0; i < 8; i++)
            printf("\"p%g\":%.8g,", 100.0 * kfr[i], (double)percentile(kld_values, nk, kfr[i]));
        printf("\"median\":%.8g,\"min\":%.8g},\"same_top_p\":%.8f,\"same_top_p_error\":%.8f,"
               "\"delta_p\":{\"mean\":%.8g,\"error\":%.8g,\"rms\":%.8g,\"rms_error\":%.8g,"
               "\"max\":%.8g,\"median\":%.8g,\"min\":%.8g},\"chunks\":[",
               (double)median(kld_values, nk), (double)kld_values[0], top, top_err, dp.mean, dp.err,
               rms, rms_err, (double)p_diff_values[nk - 1], (double)median(p_diff_values, nk),
               (double)p_diff_values[0]);
        for (int32_t c = 0; c < n_chunk; c++)
            printf("%s%.6f", c ? "," : "", running[c]);
        printf("],\"seconds\":%.3f}\n", seconds);
        rc = 0;
        goto done;
    }
    printf("\n====== Perplexity statistics ======\n");
    printf("Mean PPL(Q)                   : %10.6f \xc2\xb1 %10.6f\n", ppl, ppl_err);
    printf("Mean PPL(base)                : %10.6f \xc2\xb1 %10.6f\n", ppl_base, ppl_base_err);
    printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100.0 * cor);
    printf("Mean ln(PPL(Q)/PPL(base))     : %10.6f \xc2\xb1 %10.6f\n", ratio, ratio_err);
    printf("Mean PPL(Q)/PPL(base)         : %10.6f \xc2\xb1 %10.6f\n", exp(ratio),
           exp(ratio) * ratio_err);
    printf("Mean PPL(Q)-PPL(base)         : %10.6f \xc2\xb1 %10.6f\n", ppl - ppl_base, diff_err);
    printf("\n====== KL divergence statistics ======\n");
    printf("Mean    KLD: %10.6f \xc2\xb1 %10.6f\n", kd.mean, kd.err);
    printf("Maximum KLD: %10.6f\n", (double)kld_values[nk - 1]);
    for (size_t i = 0; i < 4; i++)
        printf("%s%%   KLD: %10.6f\n", kname[i], (double)percentile(kld_values, nk, kfr[i]));
    printf("Median  KLD: %10.6f\n", (double)median(kld_values, nk));
    for (size_t i = 4; i < 8; i++)
        printf("%s%%   KLD: %10.6f\n", kname[i], (double)percentile(kld_values, nk, kfr[i]));
    printf("Minimum KLD: %10.6f\n", (double)kld_values[0]);
    printf("\n====== Token probability statistics ======\n");
    printf("Mean    \xce\x94p: %6.3f \xc2\xb1 %5.3f %%\n", 100 * dp.mean, 100 * dp.err);
    printf("Maximum \xce\x94p: %6.3f%%\n", 100.0 * p_diff_values[nk - 1]);
    static const float pfr[] = {0.999f, 0.99f, 0.95f, 0.9f,  0.75f,
                                0.25f,  0.1f,  0.05f, 0.01f, 0.001f};
    static const char *pname[] = {"99.9", "99.0", "95.0", "90.0", "75.0",
                                  "25.0", "10.0", " 5.0", " 1.0", " 0.1"};
    for (size_t i = 0; i < 10; i++) {
        if (i == 5) printf("Median  \xce\x94p: %6.3f%%\n", 100.0 * median(p_diff_values, nk));
        printf("%s%%   \xce\x94p: %6.3f%%\n", pname[i],
               100.0 * percentile(p_diff_values, nk, pfr[i]));
    }
    printf("Minimum \xce\x94p: %6.3f%%\n", 100.0 * p_diff_values[0]);
    printf("RMS \xce\x94p    : %6.3f \xc2\xb1 %5.3f %%\n", 100 * rms, 100 * rms_err);
    printf("Same top p: %6.3f \xc2\xb1 %5.3f %%\n", 100 * top, 100 * top_err);
    rc = 0;
    goto done;

write_failed:
    progress_clear();
    fprintf(stderr, "vkformer: perplexity: writing --kl-divergence-base %s: %s\n", o.base_path,
            strerror(errno ? errno : EIO));
    rc = 1;
done:
    if (out) fclose(out);
    if (tmp_path) { /* nothing half-written is left behind */
        remove(tmp_path);
        free(tmp_path);
    }
    base_close(&base);
    free(rows);
    free(running);
    free(kld_values);
    free(p_diff_values);
    free(logits);
    free(chunk);
    free(tokens);
    vkf_session_free(s);
    vkf_model_free(m);
    vkf_context_free(ctx);
    free(text);
    return rc;
}
