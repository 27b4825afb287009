/* vkformer chat: an interactive conversation (llama-cli -cnv). `generate -cnv` comes here too.
 *
 * Each turn renders the whole conversation with the model's chat template (ChatML, llama.cpp's
 * default, when it has none), tokenizes it, keeps the longest common token prefix with what the
 * KV cache holds (vkf_session_truncate) and evaluates only the rest: the history is not
 * processed again. The answer streams as it is sampled and ends at the model's end-of-generation
 * token, at the template's end-of-turn text, at -n tokens, or with Ctrl-C (the conversation
 * goes on; Ctrl-C at the prompt leaves).
 *
 * Context policy (llama.cpp's): when the conversation and the room reserved for the answer do
 * not fit, the oldest turns are dropped, the system prompt is kept, and a notice says so. The
 * room reserved is -n tokens, capped at half the context.
 *
 * With stdin not a terminal, each line is one user message (for scripts and tests); the
 * answers go to stdout one per line, notices to stderr. Commands: /exit, /clear, /save FILE,
 * /load FILE (a JSON array of {"role", "content"}, the shape the OpenAI API uses). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/cli_grammar.h"
#include "serve/serve.h" /* srv_utf8_dup */

static volatile sig_atomic_t g_stop; /* Ctrl-C: stop the answer */

static void on_sigint(int sig) {
    (void)sig;
    g_stop = 1;
}

typedef struct chat {
    vkf_model *m;
    vkf_session *s;
    vkf_model_desc d;
    int32_t n_ctx, n_predict, reserve;
    vkf_sampler_params sp;
    cJSON *msgs;    /* the conversation */
    int32_t *cache; /* tokens in the KV cache, [n_ctx] */
    int32_t n_cache;
    int default_template;
    int tty;
    float *logits;
} chat;

/* ------------------------------------------------------------------ prompt building */

static void add_msg(cJSON *msgs, const char *role, const char *content) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "role", role);
    cJSON_AddStringToObject(o, "content", content);
    cJSON_AddItemToArray(msgs, o);
}

/* the conversation rendered and tokenized (with the generation prompt); *out malloc'ed */
static vkf_status render(chat *c, int32_t **out, int32_t *n) {
    char *js = cJSON_PrintUnformatted(c->msgs), *text = NULL;
    if (!js) return VKF_ERROR_OUT_OF_MEMORY;
    vkf_status st = vkf_chat_apply(c->m, js, 1, &text, NULL);
    free(js);
    if (st != VKF_OK) return st;
    st = vkf_cli_tokenize(c->m, text, VKF_TOKENIZE_ADD_SPECIAL, out, n);
    free(text);
    return st;
}

/* drops the oldest turn after the system prompt: a user message and what follows up to the
 * next user message; returns 0 when nothing can be dropped but the last user message */
static int drop_oldest_turn(cJSON *msgs) {
    int first = 0, n = cJSON_GetArraySize(msgs);
    const cJSON *f = cJSON_GetArrayItem(msgs, 0);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(f, "role");
    if (cJSON_IsString(role) && strcmp(role->valuestring, "system") == 0) first = 1;
    int users = 0;
    for (int i = first; i < n; i++) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, i), "role");
        users += cJSON_IsString(r) && strcmp(r->valuestring, "user") == 0;
    }
    if (users < 2) return 0;
    cJSON_DeleteItemFromArray(msgs, first); /* the user message */
    while (first < cJSON_GetArraySize(msgs)) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, first), "role");
        if (cJSON_IsString(r) && strcmp(r->valuestring, "user") == 0) break;
        cJSON_DeleteItemFromArray(msgs, first); /* its answer(s) */
    }
    return 1;
}

/* ------------------------------------------------------------------ one turn */

static int write_out(const char *s, size_t n) {
    if (n && fwrite(s, 1, n, stdout) != n) return -1;
    return fflush(stdout);
}

/* shows s[0..n) and appends it to the answer, as valid UTF-8 (a model may emit any bytes; the
 * stopper holds back an unfinished character, so each piece is whole); nonzero on a failure */
static int append(char **a, size_t *len, size_t *cap, const char *raw, size_t rn) {
    if (!rn) return 0;
    char *s = srv_utf8_dup(raw, rn);
    if (!s) return vkf_cli_fail("chat: out of memory");
    size_t n = strlen(s);
    int rc = 0;
    if (write_out(s, n)) {
        fprintf(stderr, "vkformer: chat: writing to stdout: %s\n", strerror(errno ? errno : EIO));
        rc = 1;
    } else if (*len + n + 1 > *cap) {
        size_t nc = 2 * (*len + n + 1);
        char *b = realloc(*a, nc);
        if (!b) rc = vkf_cli_fail("chat: out of memory");
        if (b) *a = b, *cap = nc;
    }
    if (!rc) {
        memcpy(*a + *len, s, n);
        *len += n;
        (*a)[*len] = '\0';
    }
    free(s);
    return rc;
}

/* Evaluates the rendered conversation (reusing the cache) and streams the answer; the answer
 * text is appended to the conversation. Returns 0, or 1 on a runtime error (printed). */
static int turn(chat *c) {
    int32_t *toks = NULL, n = 0;
    vkf_status st;
    int dropped = 0;
    for (;;) { /* context policy: drop the oldest turns until prompt + answer room fit */
        if ((st = render(c, &toks, &n)) != VKF_OK) return vkf_cli_fail("chat: the chat template");
        if (n + c->reserve <= c->n_ctx) break;
        free(toks);
        if (!drop_oldest_turn(c->msgs)) {
            fprintf(
                stderr,
                "vkformer: chat: context full: the system prompt and this message take %d tokens; "
                "with %d reserved for the answer they exceed the context of %d (use -c or a "
                "shorter "
                "message); the message is dropped\n",
                n, c->reserve, c->n_ctx);
            cJSON_DeleteItemFromArray(c->msgs, cJSON_GetArraySize(c->msgs) - 1);
            return 0;
        }
        dropped++;
    }
    if (dropped)
        fprintf(stderr,
                "vkformer: chat: context full: dropped the %d oldest turn%s (the system prompt is "
                "kept)\n",
                dropped, dropped > 1 ? "s" : "");
    /* reuse the longest common prefix of what the cache holds; at least one token to evaluate */
    int32_t keep = 0;
    while (keep < n && keep < c->n_cache && toks[keep] == c->cache[keep])
        keep++;
    if (keep == n) keep = n - 1;
    if ((st = vkf_session_truncate(c->s, keep)) == VKF_OK)
        st = vkf_session_eval_last(c->s, toks + keep, n - keep, c->logits);
    if (st != VKF_OK) {
        free(toks);
        c->n_cache = 0;
        vkf_session_reset(c->s);
        return vkf_cli_fail("chat: evaluating the conversation");
    }
    memcpy(c->cache, toks, (size_t)n * sizeof *toks);
    c->n_cache = n;
    free(toks);
    fprintf(stderr, "[prompt: %d tokens, %d reused from the cache, %d evaluated]\n", n, keep,
            n - keep);

    /* the answer */
    const char *stops[1] = {"<|im_end|>"};
    vkf_stopper *stopper = NULL;
    vkf_sampler *smp = NULL;
    int rc = 0;
    if (vkf_stopper_create(stops, c->default_template ? 1 : 0, &stopper) != VKF_OK ||
        vkf_sampler_create_ex(c->m, &c->sp, &smp) != VKF_OK)
        rc = vkf_cli_fail("chat");
    int32_t *gen = malloc((size_t)c->n_ctx * sizeof *gen), n_gen = 0;
    size_t text_done = 0, ans_len = 0, ans_cap = 256;
    char *answer = malloc(ans_cap);
    if (!gen || !answer) rc = vkf_cli_fail("chat: out of memory");
    if (answer) answer[0] = '\0';
    g_stop = 0;
    const char *why = NULL;
    while (rc == 0) {
        int32_t tok;
        if (vkf_sampler_sample(smp, c->logits, c->d.n_vocab, &tok) != VKF_OK ||
            vkf_sampler_accept(smp, tok) != VKF_OK) {
            rc = vkf_cli_fail("chat: sampling");
            break;
        }
        int eos = vkf_model_is_eog(c->m, tok), stopped = 0;
        if (!eos) {
            gen[n_gen++] = tok;
            char *all = NULL;
            if (vkf_model_detokenize(c->m, gen, n_gen, 0, &all) == VKF_OK) {
                const char *emit;
                size_t emit_len, len = strlen(all), from = text_done < len ? text_done : len;
                stopped = vkf_stopper_push(stopper, all + from, len - from, &emit, &emit_len);
                text_done = len;
                if (append(&answer, &ans_len, &ans_cap, emit, emit_len)) rc = 1;
                free(all);
            }
        }
        int end = eos || stopped || n_gen >= c->n_predict || g_stop || c->n_cache >= c->n_ctx ||
                  vkf_sampler_grammar_state(smp) == VKF_GRAMMAR_MUST_END;
        if (end && !stopped) { /* the text held back for a possible end-of-turn string */
            const char *rest;
            size_t rest_len;
            vkf_stopper_flush(stopper, &rest, &rest_len);
            if (append(&answer, &ans_len, &ans_cap, rest, rest_len)) rc = 1;
            if (!eos)
                why = g_stop ? "interrupted" : c->n_cache >= c->n_ctx ? "context full" : "length";
        }
        if (end || rc) break;
        if (vkf_session_eval_last(c->s, &tok, 1, c->logits) != VKF_OK) {
            rc = vkf_cli_fail("chat: decoding");
            break;
        }
        c->cache[c->n_cache++] = tok;
    }
    if (answer) answer[ans_len] = '\0';
    write_out("\n", 1);
    if (why && strcmp(why, "length") != 0)
        fprintf(stderr, "[answer stopped: %s%s]\n", why,
                strcmp(why, "context full") == 0 ? "; the oldest turns go at the next message"
                                                 : "");
    if (answer) add_msg(c->msgs, "assistant", answer);
    free(answer);
    free(gen);
    vkf_sampler_free(smp);
    vkf_stopper_free(stopper);
    return rc;
}

/* ------------------------------------------------------------------ commands */

static int save_conv(const chat *c, const char *path) {
    char *js = cJSON_Print(c->msgs);
    FILE *f = js ? fopen(path, "w") : NULL;
    int ok = f && fputs(js, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = 0;
    free(js);
    if (!ok)
        fprintf(stderr, "vkformer: chat: /save %s: %s\n", path, strerror(errno ? errno : EIO));
    else
        fprintf(stderr, "[saved %d messages to %s]\n", cJSON_GetArraySize(c->msgs), path);
    return ok;
}

static void load_conv(chat *c, const char *path) {
    char *text = vkf_cli_read_text("chat", "/load", path);
    if (!text) return;
    cJSON *j = cJSON_Parse(text);
    free(text);
    int ok = cJSON_IsArray(j);
    const cJSON *m;
    cJSON_ArrayForEach(m, j) {
        if (!ok) break;
        ok = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "role")) &&
             cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "content"));
    }
    if (!ok) {
        fprintf(stderr,
                "vkformer: chat: /load %s: expected a JSON array of {\"role\": string, "
                "\"content\": string}\n",
                path);
        cJSON_Delete(j);
        return;
    }
    cJSON_Delete(c->msgs);
    c->msgs = j;
    fprintf(stderr, "[loaded %d messages from %s]\n", cJSON_GetArraySize(j), path);
}

int vkf_cmd_chat(int argc, char **argv) {
    const char *model = NULL, *sys = NULL;
    int32_t n_predict = 256, n_ctx = 0;
    int64_t seed = -1;
    vkf_sampler_params sp = {.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f};
    vkf_context_params cp = {0};
    vkf_cli_grammar gr = {0}; /* every answer constrained */
    vkf_arg args[] = {
        {"-m|--model", VKF_ARG_STR, &model, .metavar = "PATH", .required = 1,
         .help = "model directory or .gguf file"},
        {"-sys|--system-prompt", VKF_ARG_STR, &sys, .metavar = "TEXT",
         .help = "system prompt (kept when the context fills)"},
        {"-n|--n-predict", VKF_ARG_INT, &n_predict, .min = 1, .max = 1 << 20, .metavar = "N",
         .help = "longest answer, tokens (default 256; the room reserved is capped at half the "
                 "context)"},
        {"-c|--ctx-size", VKF_ARG_INT, &n_ctx, .min = 0, .max = 1 << 24, .metavar = "N",
         .help = "context, tokens (default 0: the model's)"},
        {"--temp", VKF_ARG_FLOAT, &sp.temp, .min = 0, .max = 100, .metavar = "T",
         .help = "temperature (0.8; 0: greedy)"},
        {"--top-k", VKF_ARG_INT, &sp.top_k, .min = 0, .max = 1 << 30, .metavar = "K",
         .help = "top-k (40; 0: off)"},
        {"--top-p", VKF_ARG_FLOAT, &sp.top_p, .min = 0, .max = 1, .metavar = "P",
         .help = "top-p (0.95; 1: off)"},
        {"--min-p", VKF_ARG_FLOAT, &sp.min_p, .min = 0, .max = 1, .metavar = "P",
         .help = "min-p (0.05; 0: off)"},
        {"--repeat-penalty", VKF_ARG_FLOAT, &sp.repeat_penalty, .min = 0, .max = 100,
         .metavar = "X", .help = "repeat penalty (1: off)"},
        {"--repeat-last-n", VKF_ARG_INT, &sp.penalty_last_n, .min = -1, .max = 1 << 30,
         .metavar = "N", .help = "penalty window, tokens (64; -1: all)"},
        {"-s|--seed", VKF_ARG_I64, &seed, .min = -1, .max = 9007199254740991.0, .metavar = "SEED",
         .help = "random seed (-1: random)"},
        VKF_ARGS_BACKEND(&cp),
        VKF_ARGS_GRAMMAR(&gr),
        {0}};
    vkf_cmd_spec spec = {
        "chat", "-m MODEL [-sys TEXT] [-n N] [-c N] [--temp T] [...]",
        "An interactive conversation with the model's chat template (ChatML when it has "
        "none). The cache is reused between turns. Commands: /exit, /clear, /save FILE, "
        "/load FILE. Ctrl-C stops an answer; at the prompt it leaves. With stdin not a "
        "terminal, each line is one message.",
        args, .epilog = NULL};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if ((rc = vkf_cli_grammar_load("chat", &gr)) >= 0) return rc;
    sp.grammar = gr.text;
    sp.seed = seed >= 0 ? (uint64_t)seed : (uint64_t)time(NULL) ^ (uint64_t)getpid();

    chat c;
    memset(&c, 0, sizeof c);
    c.sp = sp;
    c.tty = isatty(0);
    vkf_context *ctx;
    if (vkf_cli_context(&cp, &ctx) != VKF_OK) return vkf_cli_fail("chat");
    vkf_model_params mp = {.path = model};
    if (vkf_model_load(ctx, &mp, &c.m) != VKF_OK) {
        vkf_context_free(ctx);
        return vkf_cli_fail("chat: loading the model");
    }
    vkf_model_describe(c.m, &c.d);
    vkf_session_params ssp = {.n_ctx = n_ctx};
    if (c.d.encoder_decoder || !c.d.has_tokenizer ||
        vkf_session_create(c.m, &ssp, &c.s) != VKF_OK) {
        if (c.d.encoder_decoder || !c.d.has_tokenizer)
            fprintf(stderr,
                    "vkformer: chat: %s: chat needs a decoder-only model with a tokenizer\n",
                    model);
        else
            vkf_cli_fail("chat");
        vkf_model_free(c.m);
        vkf_context_free(ctx);
        return 1;
    }
    c.n_ctx = vkf_session_n_ctx(c.s);
    c.n_predict = n_predict;
    c.reserve = n_predict < c.n_ctx / 2 ? n_predict : c.n_ctx / 2;
    c.default_template = vkf_model_chat_template(c.m) == NULL;
    if (c.default_template)
        fprintf(stderr,
                "vkformer: chat: %s has no chat template: using ChatML (llama.cpp's default)\n",
                model);
    c.cache = malloc((size_t)c.n_ctx * sizeof *c.cache);
    c.logits = malloc((size_t)c.d.n_vocab * sizeof *c.logits);
    c.msgs = cJSON_CreateArray();
    if (!c.cache || !c.logits || !c.msgs) {
        rc = vkf_cli_fail("chat: out of memory");
        goto done;
    }
    if (sys) add_msg(c.msgs, "system", sys);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint; /* no SA_RESTART: Ctrl-C at the prompt ends the read */
    sigaction(SIGINT, &sa, NULL);
    if (c.tty)
        fprintf(stderr,
                "[chat with %s: %d tokens of context; /exit, /clear, /save FILE, /load FILE; "
                "Ctrl-C stops "
                "an answer]\n",
                model, c.n_ctx);
    char line[65536];
    rc = 0;
    for (;;) {
        if (c.tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        g_stop = 0;
        if (!fgets(line, sizeof line, stdin)) break; /* EOF, or Ctrl-C at the prompt */
        size_t len = strlen(line);
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0) continue;
        if (strcmp(line, "/exit") == 0 || strcmp(line, "/quit") == 0) break;
        if (strcmp(line, "/clear") == 0) {
            cJSON_Delete(c.msgs);
            c.msgs = cJSON_CreateArray();
            if (sys) add_msg(c.msgs, "system", sys);
            fprintf(stderr, "[conversation cleared]\n");
            continue;
        }
        if (strncmp(line, "/save ", 6) == 0) {
            save_conv(&c, line + 6);
            continue;
        }
        if (strncmp(line, "/load ", 6) == 0) {
            load_conv(&c, line + 6);
            continue;
        }
        if (line[0] == '/' && strncmp(line, "//", 2) != 0) {
            fprintf(stderr,
                    "vkformer: chat: unknown command %s (/exit, /clear, /save FILE, /load FILE; "
                    "start with // to send a message beginning with /)\n",
                    line);
            continue;
        }
        add_msg(c.msgs, "user", line[0] == '/' ? line + 1 : line);
        if ((rc = turn(&c)) != 0) break;
    }
    if (c.tty) fputc('\n', stdout);
done:
    vkf_cli_grammar_free(&gr);
    cJSON_Delete(c.msgs);
    free(c.cache);
    free(c.logits);
    vkf_session_free(c.s);
    vkf_model_free(c.m);
    vkf_context_free(ctx);
    return rc;
}
