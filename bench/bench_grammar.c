/* vkformer bench --grammar: what constrained sampling costs per token (structured/).
 *
 * For each vocabulary (real tokenizers: Llama-3's 128k, Qwen3's 151k, a model's): the trie is
 * built once (timed), then JSON documents of a fixed schema are tokenized and replayed token by
 * token through a grammar engine, as sampling would meet them: at each step the mask of allowed
 * tokens is computed and applied to a logits row (the -inf writes included), the document's
 * next token is checked to be allowed (it must be: the documents satisfy the schema) and
 * accepted. The first document runs on a fresh engine (cold: every mask computed), the others
 * on the same engine (warm: masks cached, as a server's next request with the same schema).
 * Reported: ms per token (mean, median, 95th percentile, max) cold and warm, next to a model's
 * decode step when -m is given (the same machine, the same run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench.h"
#include "frontend/args.h"
#include "structured/grammar.h"
#include "tokenizer/tokenizer.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* the masks are computed on the calling thread: its CPU time, which a machine shared with
 * other builds inflates far less than the wall clock */
static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char *k_schema =
    "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"age\": {\"type\": "
    "\"integer\", \"minimum\": 0, \"maximum\": 150}, \"email\": {\"type\": \"string\"}, "
    "\"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"maxItems\": 8}, "
    "\"address\": {\"type\": \"object\", \"properties\": {\"street\": {\"type\": \"string\"}, "
    "\"city\": {\"type\": \"string\"}, \"zip\": {\"type\": \"string\", \"pattern\": "
    "\"^[0-9]{5}$\"}}, \"required\": [\"street\", \"city\", \"zip\"], \"additionalProperties\": "
    "false}, \"active\": {\"type\": \"boolean\"}, \"score\": {\"type\": \"number\"}}, "
    "\"required\": [\"name\", \"age\", \"tags\", \"address\", \"active\"], "
    "\"additionalProperties\": false}";

/* (required properties first, then the optional ones: the order the grammar writes) */
static const char *k_docs[] = {
    "{\"name\": \"Ada Lovelace\", \"age\": 36, \"tags\": [\"mathematics\", \"poetry\", "
    "\"engines\"], \"address\": {\"street\": \"12 St James's Square\", \"city\": \"London\", "
    "\"zip\": \"10001\"}, \"active\": true, \"email\": \"ada@example.org\", \"score\": 98.5}",
    "{\n  \"name\": \"José Martínez\",\n  \"age\": 41,\n  \"tags\": [\"café\", \"música\"],\n  "
    "\"address\": {\n    \"street\": \"Calle Mayor 5\",\n    \"city\": \"Madrid\",\n    \"zip\": "
    "\"28013\"\n  },\n  \"active\": false\n}",
    "{\"name\": \"李小龙\", \"age\": 32, \"tags\": [\"功夫\", \"电影\", \"哲学\"], \"address\": "
    "{\"street\": \"Castle Peak Road 41\", \"city\": \"Hong Kong\", \"zip\": \"99077\"}, "
    "\"active\": true, \"score\": -3.25e2}",
    "{\"name\": \"Grace \\\"Amazing\\\" Hopper\", \"age\": 85, \"tags\": [], \"address\": "
    "{\"street\": \"1 Navy Way\", \"city\": \"Arlington\", \"zip\": \"22202\"}, \"active\": "
    "false, \"email\": \"grace@navy.mil\", \"score\": 0.001}",
};

typedef struct stats {
    double mean, median, p95, max;
    int n;
} stats;

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static stats summarize(double *t, int n) {
    stats s = {0};
    if (n == 0) return s;
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    for (int i = 0; i < n; i++)
        s.mean += t[i];
    s.mean /= n;
    s.median = t[n / 2];
    s.p95 = t[(int)(0.95 * (n - 1))];
    s.max = t[n - 1];
    s.n = n;
    return s;
}

/* pieces of every token as the grammar sees them (the text a token adds after others) */
static vkf_gvocab *vocab_of(const vkf_tokenizer *tok, double *ms) {
    double t0 = now_ms();
    int32_t n = vkf_tokenizer_n_vocab(tok), ref = -1;
    char **piece = calloc((size_t)n, sizeof *piece);
    size_t *len = calloc((size_t)n, sizeof *len);
    uint8_t *eog = calloc((size_t)n, 1);
    char *rtext = NULL;
    size_t rlen = 0;
    int32_t *ids = NULL;
    size_t k = 0;
    if (vkf_tokenizer_encode_ex((vkf_tokenizer *)tok, "a", 1, 0, 0, &ids, &k) == VKF_OK && k)
        ref = ids[k - 1];
    free(ids);
    int flags = VKF_DECODE_SPECIAL | VKF_DECODE_NO_STRIP;
    if (ref >= 0) vkf_tokenizer_decode_ex(tok, &ref, 1, flags, &rtext, &rlen);
    for (int32_t t = 0; t < n; t++) {
        int32_t pair[2] = {ref, t};
        char *txt = NULL;
        size_t tl = 0;
        if (ref >= 0 && rtext &&
            vkf_tokenizer_decode_ex(tok, pair, 2, flags, &txt, &tl) == VKF_OK && tl >= rlen &&
            !memcmp(txt, rtext, rlen)) {
            memmove(txt, txt + rlen, tl - rlen);
            tl -= rlen;
        } else {
            free(txt);
            txt = NULL;
            vkf_tokenizer_decode_ex(tok, &t, 1, flags, &txt, &tl);
        }
        piece[t] = txt ? txt : strdup("");
        len[t] = txt ? tl : 0;
        eog[t] = (uint8_t)vkf_tokenizer_is_eog(tok, t);
    }
    vkf_gvocab *v = NULL;
    if (vkf_gvocab_create(n, (const char *const *)piece, len, eog, &v) != VKF_OK) v = NULL;
    for (int32_t t = 0; t < n; t++)
        free(piece[t]);
    free(piece);
    free(len);
    free(eog);
    free(rtext);
    *ms = now_ms() - t0;
    return v;
}

/* DIR/tokenizer.json.xz through xz, else vkf_tokenizer_open_auto */
static vkf_status open_tok(const char *path, vkf_tokenizer **t) {
    char xz[4200];
    struct stat st;
    snprintf(xz, sizeof xz, "%s/tokenizer.json.xz", path);
    if (stat(xz, &st) != 0) return vkf_tokenizer_open_auto(path, t);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "xz -dc '%s'", xz);
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
    vkf_status s = ok ? vkf_tokenizer_from_hf_json_memory(buf, n, path, t) : VKF_ERROR_IO;
    free(buf);
    return s;
}

/* replays doc through e; per-token ms into t[*n..]; -1 when a token was not allowed */
static int replay(vkf_gengine *e, vkf_tokenizer *tok, const char *doc, float *logits,
                  int32_t n_vocab, double *t, int *n, int cap) {
    int32_t *ids = NULL;
    size_t k = 0;
    if (vkf_tokenizer_encode_ex(tok, doc, strlen(doc), 0, 0, &ids, &k) != VKF_OK) return -1;
    vkf_gstate st = vkf_gengine_start(e);
    int rc = 0;
    for (size_t i = 0; i < k; i++) {
        double t0 = cpu_ms();
        const uint64_t *mask;
        if (vkf_gengine_mask(e, &st, &mask) != VKF_OK) {
            rc = -1;
            break;
        }
        for (int32_t v = 0; v < n_vocab; v++) /* what the sampler does with the mask */
            if (!((mask[v >> 6] >> (v & 63)) & 1)) logits[v] = -INFINITY;
        double t1 = cpu_ms();
        if (*n < cap) t[(*n)++] = t1 - t0;
        if (!((mask[ids[i] >> 6] >> (ids[i] & 63)) & 1) ||
            vkf_gengine_accept(e, &st, ids[i]) != VKF_OK) {
            if (getenv("VKF_BENCH_DEBUG")) {
                char *p = NULL;
                size_t pl = 0;
                vkf_tokenizer_decode_ex(tok, &ids[i], 1, VKF_DECODE_NO_STRIP, &p, &pl);
                fprintf(stderr, "token %zu (id %d, '%.*s') refused after '%.*s': %s\n", i, ids[i],
                        (int)pl, p ? p : "", 40, doc, vkf_last_error());
                free(p);
            }
            rc = -1;
            break;
        }
    }
    free(ids);
    return rc;
}

int vkf_bench_grammar(int argc, char **argv) {
    const char *model = NULL, *vocabs = NULL;
    int reps = 3, mode = 0, depth = VKF_GRAMMAR_CTX_DEPTH;
    vkf_arg args[] = {{"--grammar", VKF_ARG_SET, &mode, .hidden = 1},
                      {"--vocab", VKF_ARG_STR, &vocabs, .metavar = "P1,P2",
                       .help = "tokenizers (default tests/data/tokenizers/real_llama3,real_qwen3)"},
                      {"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH",
                       .help = "also this model's vocabulary, and its decode step for comparison"},
                      {"-r|--reps", VKF_ARG_INT, &reps, .min = 1, .max = 100, .metavar = "N",
                       .help = "cold runs per vocabulary (default 3)"},
                      {"--depth", VKF_ARG_INT, &depth, .min = 0, .max = 64, .metavar = "K",
                       .help = "stack frames a cached mask depends on (default the library's)"},
                      {0}};
    vkf_cmd_spec spec = {"bench --grammar", "[--vocab P1,P2] [-m MODEL] [-r N] [--depth K]",
                         "Constrained sampling's cost per token: masks of a JSON Schema's grammar "
                         "over real vocabularies, cold and warm.",
                         args, .epilog = NULL};
    int prc = vkf_args_parse(&spec, argc, argv);
    if (prc >= 0) return prc;
    char *gbnf = NULL;
    if (vkf_json_schema_to_grammar(k_schema, &gbnf) != VKF_OK) {
        fprintf(stderr, "vkformer bench: %s\n", vkf_last_error());
        return 1;
    }
    char list[4096];
    snprintf(list, sizeof list, "%s%s%s",
             vocabs ? vocabs : "tests/data/tokenizers/real_llama3,tests/data/tokenizers/real_qwen3",
             model ? "," : "", model ? model : "");
    printf("grammar masks: a JSON Schema of 7 properties (nested object, array, pattern), %zu "
           "documents; context depth %d\n",
           sizeof k_docs / sizeof *k_docs, depth);
    printf("%-40s %7s %9s | %-34s | %-34s\n", "vocabulary", "tokens", "trie ms",
           "cold CPU ms/token mean med p95 max", "warm CPU ms/token mean med p95 max");
    int rc = 0;
    for (char *p = strtok(list, ","); p; p = strtok(NULL, ",")) {
        vkf_tokenizer *tok;
        if (open_tok(p, &tok) != VKF_OK) {
            fprintf(stderr, "vkformer bench: %s: %s\n", p, vkf_last_error());
            rc = 1;
            continue;
        }
        double trie_ms;
        vkf_gvocab *v = vocab_of(tok, &trie_ms);
        int32_t nv = vkf_tokenizer_n_vocab(tok);
        float *logits = calloc((size_t)nv, sizeof *logits);
        double *cold = malloc(100000 * sizeof *cold), *warm = malloc(100000 * sizeof *warm);
        int n_cold = 0, n_warm = 0, bad = 0;
        vkf_gengine_stats gs0 = {0}, gs1 = {0};
        for (int r = 0; r < reps && v && logits && cold && warm; r++) {
            vkf_gengine *e;
            if (vkf_gengine_create(v, gbnf, strlen(gbnf), NULL, NULL, NULL, depth, &e) != VKF_OK) {
                bad = 1;
                break;
            }
            if (replay(e, tok, k_docs[0], logits, nv, cold, &n_cold, 100000)) bad = 1;
            vkf_gengine_get_stats(e, &gs0);
            for (size_t d = 1; d < sizeof k_docs / sizeof *k_docs; d++)
                if (replay(e, tok, k_docs[d], logits, nv, warm, &n_warm, 100000)) bad = 1;
            vkf_gengine_get_stats(e, &gs1);
            vkf_gengine_free(e);
        }
        stats c = summarize(cold, n_cold), w = summarize(warm, n_warm);
        printf("%-40.40s %7d %9.1f | %7.3f %7.3f %7.3f %8.3f | %7.3f %7.3f %7.3f %8.3f%s\n", p, nv,
               trie_ms, c.mean, c.median, c.p95, c.max, w.mean, w.median, w.p95, w.max,
               bad ? "  (a document token was refused: a bug)" : "");
        printf("  cold document: %ld masks, %ld cached whole, %ld from a cached context, %ld "
               "trie walks, %ld tokens checked one by one; then %ld masks, %ld walks, %ld "
               "checked\n",
               gs0.masks, gs0.hits_full, gs0.hits_ctx, gs0.walks, gs0.uncertain_checked,
               gs1.masks - gs0.masks, gs1.walks - gs0.walks,
               gs1.uncertain_checked - gs0.uncertain_checked);
        rc |= bad;
        free(cold);
        free(warm);
        free(logits);
        vkf_gvocab_free(v);
        vkf_tokenizer_free(tok);
    }
    if (model) { /* the model's decode step on its default device, same machine */
        vkf_context *ctx;
        vkf_context_params cp = {0};
        vkf_model *m = NULL;
        vkf_session *s = NULL;
        vkf_model_params mp = {.path = model};
        if (vkf_context_create(&cp, &ctx) == VKF_OK && vkf_model_load(ctx, &mp, &m) == VKF_OK &&
            vkf_session_create(m, NULL, &s) == VKF_OK) {
            vkf_model_desc d;
            vkf_model_describe(m, &d);
            float *l = malloc((size_t)d.n_vocab * sizeof *l);
            int32_t tok = d.bos_id >= 0 ? d.bos_id : 0;
            double best = 1e30;
            for (int i = 0; i < 8 && l; i++) { /* the best of 8 one-token steps after warm-up */
                double t0 = now_ms();
                if (vkf_session_eval_last(s, &tok, 1, l) != VKF_OK) break;
                double dt = now_ms() - t0;
                if (i > 1 && dt < best) best = dt;
            }
            printf("decode step of %s on %s: %.2f ms (best of 6)\n", model,
                   vkf_context_device_name(ctx), best);
            free(l);
        }
        vkf_session_free(s);
        vkf_model_free(m);
        vkf_context_free(ctx);
    }
    free(gbnf);
    return rc;
}
