/* vkformer chat: an interactive conversation (llama-cli -cnv). `generate -cnv` comes here too.
 *
 * Each turn renders the whole conversation with the model's chat template (ChatML, llama.cpp's
 * default, when it has none), tokenizes it, keeps the longest common token prefix with what the
 * KV cache holds (vkf_session_truncate) and evaluates only the rest: the history is not
 * processed again. The answer streams as it is sampled and ends at the model's end-of-generation
 * token, at the template's end-of-turn text, at -n tokens, or with Ctrl-C (the conversation
 * goes on; at the prompt Ctrl-C clears a half-typed line, and on an empty line it leaves, as
 * Ctrl-D does). On a terminal a paste is one message (bracketed paste), newlines kept.
 *
 * Context policy (llama.cpp's): when the conversation and the room reserved for the answer do
 * not fit, the oldest turns are dropped, the system prompt is kept, and a notice says so. The
 * room reserved is -n tokens, capped at half the context.
 *
 * With stdin not a terminal, each line is one user message (for scripts and tests); the
 * answers go to stdout one per line, notices to stderr. Commands: /exit, /clear, /save FILE,
 * /load FILE (a JSON array of {"role", "content"}, the shape the OpenAI API uses). */
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <editline/readline.h>

#include "cli/cli.h"
#include "cli/gen_opts.h"
#include "frontend/args.h"
#include "frontend/utf8.h"

static volatile sig_atomic_t g_stop; /* Ctrl-C: stop the answer */

static void on_sigint(int sig) {
    (void)sig;
    g_stop = 1;
}

/* the session's abort callback: Ctrl-C stops the prompt of a turn between two passes */
static int stop_requested(void *user) {
    (void)user;
    return g_stop != 0;
}

typedef struct chat {
    vkf_model *m;
    vkf_session *s;
    vkf_model *draft; /* -md */
    vkf_spec *spec;   /* speculative decoding (-md, --spec-type ngram), or NULL */
    vkf_model_desc d;
    int32_t n_ctx, n_predict, reserve; /* n_predict < 0: until end of generation */
    vkf_sampler_params sp;
    const vkf_gen_opts *o; /* -r, -v, -e */
    int32_t *eog;          /* --ignore-eos: the end-of-generation tokens, never drawn */
    int32_t n_eog;
    cJSON *msgs;    /* the conversation */
    int32_t *cache; /* tokens in the KV cache, [n_ctx] */
    int32_t n_cache;
    int default_template;
    int tty;
    float *logits;
    /* timings, for the summary at exit (llama-cli's) and -v / --show-timings after each answer */
    double prompt_ms, eval_ms; /* prompt passes; decoding steps */
    int64_t n_prompt, n_eval;  /* tokens evaluated in them */
} chat;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

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
    /* after Ctrl-C nothing more of the answer shows: the terminal has echoed ^C, and text after
     * it reads as the model going on (the token sampled meanwhile, text held back) */
    if (!rn || g_stop) return 0;
    char *s = vkf_frontend_utf8_dup(raw, rn);
    if (!s) return vkf_cli_fail("chat: out of memory");
    size_t n = strlen(s);
    int rc = 0;
    if (write_out(s, n)) {
        rc = vkf_cli_stdout_failed("chat", errno);
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

/* -r: whether the answer so far ends with a reverse prompt */
static int ends_with_reverse(const chat *c, const char *a, size_t len) {
    for (int i = 0; i < c->o->n_reverse; i++) {
        size_t rl = strlen(c->o->reverse[i]);
        if (rl <= len && memcmp(a + len - rl, c->o->reverse[i], rl) == 0) return 1;
    }
    return 0;
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
    double t0 = now_ms();
    if ((st = vkf_session_truncate(c->s, keep)) == VKF_OK)
        st = vkf_session_eval_last(c->s, toks + keep, n - keep, c->logits);
    double turn_prompt_ms = now_ms() - t0, turn_eval_ms = 0;
    c->prompt_ms += turn_prompt_ms;
    c->n_prompt += vkf_session_n_past(c->s) - keep;
    if (st == VKF_ERROR_ABORTED) { /* Ctrl-C in the prompt: the turn stops, back to the prompt */
        int32_t done = vkf_session_n_past(c->s); /* the passes that ran stay in the cache */
        memcpy(c->cache, toks, (size_t)done * sizeof *toks);
        c->n_cache = done;
        free(toks);
        cJSON_DeleteItemFromArray(c->msgs, cJSON_GetArraySize(c->msgs) - 1);
        fprintf(stderr,
                "[interrupted after %d of the prompt's %d tokens; the message is dropped]\n",
                done - keep, n - keep);
        return 0;
    }
    if (st != VKF_OK) {
        free(toks);
        c->n_cache = 0;
        vkf_session_reset(c->s);
        return vkf_cli_fail("chat: evaluating the conversation");
    }
    memcpy(c->cache, toks, (size_t)n * sizeof *toks);
    c->n_cache = n;
    free(toks);
    fprintf(stderr, "[prompt: %d %s, %d reused from the cache, %d evaluated]\n", n,
            vkf_plural(n, "token", "tokens"), keep, n - keep);

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
    const char *why = NULL;
    char why_n[64];
    int64_t dr0 = 0, ac0 = 0;
    vkf_spec_counts(c->spec, &dr0, &ac0);
    /* the drafter looks at the whole conversation the cache holds */
    if (rc == 0 && c->spec && vkf_spec_begin(c->spec, c->s, c->cache, c->n_cache) != VKF_OK)
        rc = vkf_cli_fail("chat: speculative decoding");
    while (rc == 0) {
        int32_t tok;
        for (int32_t i = 0; i < c->n_eog; i++) /* --ignore-eos: never drawn, as llama.cpp */
            c->logits[c->eog[i]] = -INFINITY;
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
        int reverse = !rc && ends_with_reverse(c, answer, ans_len);
        int length = c->n_predict >= 0 && n_gen >= c->n_predict;
        int end = eos || stopped || reverse || length || g_stop || c->n_cache >= c->n_ctx ||
                  vkf_sampler_grammar_state(smp) == VKF_GRAMMAR_MUST_END;
        if (end && !stopped) { /* the text held back for a possible end-of-turn string */
            const char *rest;
            size_t rest_len;
            vkf_stopper_flush(stopper, &rest, &rest_len);
            if (append(&answer, &ans_len, &ans_cap, rest, rest_len)) rc = 1;
        }
        if (end) {
            snprintf(why_n, sizeof why_n, "-n limit: %d %s", n_gen,
                     vkf_plural(n_gen, "token", "tokens"));
            why = eos       ? "end of generation (the model's end-of-generation token)"
                  : stopped ? "end of turn (ChatML's <|im_end|>)"
                  : reverse ? "reverse prompt (-r) reached"
                  : g_stop  ? "interrupted"
                  : length  ? why_n
                            : "context full";
        }
        if (end || rc) break;
        double e0 = now_ms();
        vkf_status es = c->spec ? vkf_spec_eval(c->spec, c->s, tok, c->logits)
                                : vkf_session_eval_last(c->s, &tok, 1, c->logits);
        turn_eval_ms += now_ms() - e0;
        c->n_eval += es == VKF_OK;
        if (es == VKF_ERROR_ABORTED) { /* Ctrl-C since the check above: the answer ends here */
            const char *rest;
            size_t rest_len;
            vkf_stopper_flush(stopper, &rest, &rest_len);
            if (append(&answer, &ans_len, &ans_cap, rest, rest_len)) rc = 1;
            why = "interrupted";
            break;
        }
        if (es != VKF_OK) {
            rc = vkf_cli_fail("chat: decoding");
            break;
        }
        c->cache[c->n_cache++] = tok;
    }
    /* the cache keeps the answer's tokens, not the drafts past them */
    if (c->spec && vkf_spec_end(c->spec) != VKF_OK && rc == 0) rc = vkf_cli_fail("chat");
    if (answer) answer[ans_len] = '\0';
    write_out("\n", 1);
    /* why the answer ended: always when it was cut short, for every answer with -v */
    int short_ = why && (!strcmp(why, "interrupted") || !strcmp(why, "context full"));
    if (why && (short_ || c->o->verbose))
        fprintf(stderr, "[answer stopped: %s%s]\n", why,
                strcmp(why, "context full") == 0 ? "; the oldest turns go at the next message"
                                                 : "");
    c->eval_ms += turn_eval_ms;
    if (c->o->verbose || c->o->show_timings) {
        /* the answer's n_gen tokens took n_gen - 1 decoding steps: the last is never evaluated */
        int32_t steps = n_gen > 1 ? n_gen - 1 : 0;
        fprintf(stderr,
                "[timings: prompt %d %s in %.2f ms (%.2f tokens/s); answer %d %s, %d decoding "
                "%s in %.2f ms (%.2f tokens/s)]\n",
                n - keep, vkf_plural(n - keep, "token", "tokens"), turn_prompt_ms,
                turn_prompt_ms > 0 ? (n - keep) / (turn_prompt_ms / 1e3) : 0.0, n_gen,
                vkf_plural(n_gen, "token", "tokens"), steps, vkf_plural(steps, "step", "steps"),
                turn_eval_ms, turn_eval_ms > 0 ? steps / (turn_eval_ms / 1e3) : 0.0);
        if (c->spec) {
            int64_t dr = 0, ac = 0;
            vkf_spec_counts(c->spec, &dr, &ac);
            fprintf(stderr, "[speculative: drafted %lld, accepted %lld]\n", (long long)(dr - dr0),
                    (long long)(ac - ac0));
        }
    }
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
        fprintf(stderr, "[saved %d %s to %s]\n", cJSON_GetArraySize(c->msgs),
                vkf_plural(cJSON_GetArraySize(c->msgs), "message", "messages"), path);
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
    fprintf(stderr, "[loaded %d %s from %s]\n", cJSON_GetArraySize(j),
            vkf_plural(cJSON_GetArraySize(j), "message", "messages"), path);
}

/* ------------------------------------------------------------------ the terminal */

/* Bracketed paste (xterm's, which terminals share): once ESC [?2004h is written, the terminal
 * wraps a paste in ESC [200~ ... ESC [201~, so it is told apart from typing. Its text goes to
 * libedit from a queue, as if typed; each newline of it ends libedit's line with g_paste_nl set,
 * and read_message goes on at the next line: the paste is one message. */
static const char k_paste_on[] = "\x1b[200~", k_paste_off[] = "\x1b[201~";
static int *g_queue; /* code points of a paste still to hand to libedit */
static size_t g_queue_n, g_queue_at;
static int g_paste_nl;          /* the line libedit returned ended at a pasted newline */
static unsigned char g_back[8]; /* bytes read ahead (an escape sequence that was no paste) */
static int g_n_back;

/* One byte from the terminal into *b: 1, 0 when timeout_ms (>= 0) passed first, -1 at the end
 * of input or once Ctrl-C was pressed. The wait is ppoll with SIGINT blocked outside it (the
 * caller blocks it): a Ctrl-C that lands after the prompt appeared but before the read began
 * (libedit still setting up the terminal) ends the read as well, instead of leaving it blocked
 * with the request noted. */
static int tty_byte(int fd, int timeout_ms, const sigset_t *wait_mask, unsigned char *b) {
    if (g_n_back) {
        *b = g_back[0];
        memmove(g_back, g_back + 1, (size_t)--g_n_back);
        return 1;
    }
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    for (;;) {
        if (g_stop) return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = ppoll(&p, 1, timeout_ms >= 0 ? &ts : NULL, wait_mask);
        if (r < 0 && errno == EINTR) continue; /* Ctrl-C: g_stop, checked above */
        if (r == 0) return 0;
        return r > 0 && read(fd, b, 1) == 1 ? 1 : -1;
    }
}

/* The code point of the UTF-8 character whose lead byte is b[0], reading the rest with next();
 * U+FFFD for a broken sequence or a stray byte. -1 when next() ends. */
static int utf8_char(unsigned char lead, int (*next)(void *u, unsigned char *b), void *u) {
    int need = lead >= 0xF0 && lead < 0xF8 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (need == 1) return lead < 0x80 ? lead : 0xFFFD;
    int ch = lead & (0x7F >> need);
    for (int i = 1; i < need; i++) {
        unsigned char c;
        if (next(u, &c) != 1) return -1;
        if ((c & 0xC0) != 0x80) return 0xFFFD; /* c is lost with the broken sequence */
        ch = ch << 6 | (c & 0x3F);
    }
    return ch;
}

typedef struct tty_src {
    int fd;
    const sigset_t *wait_mask;
} tty_src;

static int tty_next(void *u, unsigned char *b) {
    const tty_src *t = u;
    return tty_byte(t->fd, -1, t->wait_mask, b);
}

typedef struct buf_src {
    const unsigned char *p;
    size_t n, at;
} buf_src;

static int buf_next(void *u, unsigned char *b) {
    buf_src *s = u;
    if (s->at == s->n) return -1;
    *b = s->p[s->at++];
    return 1;
}

/* After ESC: whether "[200~" follows (a terminal sends a sequence's bytes together; 50 ms is
 * the wait editors give an escape sequence); the bytes read otherwise go back, first in line for
 * the next reads (libedit then reads the escape sequence it is, an arrow key). */
static int paste_starts(const tty_src *t) {
    const char *want = k_paste_on + 1;
    unsigned char got[sizeof k_paste_on];
    int n = 0;
    while (want[n] && tty_byte(t->fd, 50, t->wait_mask, &got[n]) == 1) {
        n++;
        if (got[n - 1] != (unsigned char)want[n - 1]) break;
    }
    if (!want[n] && memcmp(got, want, (size_t)n) == 0) return 1;
    memmove(g_back + n, g_back, (size_t)g_n_back);
    memcpy(g_back, got, (size_t)n);
    g_n_back += n;
    return 0;
}

/* Reads the paste up to ESC [201~ into g_queue as code points: CR and CR LF (what terminals send
 * for a pasted newline) become LF; tabs stay (bound to insert, not completion); other control
 * characters are dropped. 0, or -1 when the input ended or Ctrl-C came first. */
static int read_paste(const tty_src *t) {
    size_t n = 0, cap = 256, end = sizeof k_paste_off - 1;
    unsigned char *raw = malloc(cap);
    if (!raw) return -1;
    for (;;) {
        unsigned char c;
        if (tty_byte(t->fd, -1, t->wait_mask, &c) != 1) {
            free(raw);
            return -1;
        }
        if (n == cap) {
            unsigned char *r = realloc(raw, cap *= 2);
            if (!r) {
                free(raw);
                return -1;
            }
            raw = r;
        }
        raw[n++] = c;
        if (n >= end && memcmp(raw + n - end, k_paste_off, end) == 0) break;
    }
    n -= end;
    free(g_queue);
    g_queue = malloc((n + 1) * sizeof *g_queue);
    g_queue_n = g_queue_at = 0;
    buf_src s = {raw, n, 0};
    unsigned char lead;
    while (g_queue && buf_next(&s, &lead) == 1) {
        int ch = utf8_char(lead, buf_next, &s);
        if (ch == '\r' && s.at < n && raw[s.at] == '\n') continue; /* CR LF: the LF stands */
        if (ch == '\r') ch = '\n';
        if (ch < 0 || (ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7F) continue;
        g_queue[g_queue_n++] = ch;
    }
    free(raw);
    return 0;
}

/* libedit's character source on a terminal (rl_getc_function): one character, decoded from
 * UTF-8 into its code point (libedit widens what this returns, so a byte-wise reader would split
 * "é" into two characters); EOF at the end of input. Ctrl-C (before or during the read) ends the
 * line with a newline: read_message clears it, or leaves the chat when it is empty. */
static int tty_getc(FILE *in) {
    sigset_t block, wait_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &wait_mask);
    sigdelset(&wait_mask, SIGINT);
    tty_src t = {fileno(in), &wait_mask};
    int ch = EOF;
    for (;;) {
        if (g_stop) {
            g_queue_n = g_queue_at = 0;
            ch = '\n';
            break;
        }
        if (g_queue_at < g_queue_n) {
            ch = g_queue[g_queue_at++];
            if (ch == '\n') g_paste_nl = 1;
            break;
        }
        unsigned char b;
        int r = tty_byte(t.fd, -1, &wait_mask, &b);
        if (r != 1) {
            ch = g_stop ? '\n' : EOF;
            break;
        }
        if (b == 0x1b && paste_starts(&t)) {
            if (read_paste(&t) != 0 && !g_stop) break; /* the end of input: EOF */
            continue;
        }
        ch = utf8_char(b, tty_next, &t);
        if (ch < 0) ch = g_stop ? '\n' : EOF;
        break;
    }
    sigprocmask(SIG_UNBLOCK, &block, NULL);
    return ch;
}

/* the user's next message into line (without its newline); 0 at the end of input, or Ctrl-C on
 * an empty line. On a terminal libedit edits the line (arrows, Home/End, Ctrl-R) and keeps this
 * chat's history (up arrow: the previous message); otherwise a plain read, one message per line. */
static int read_message(chat *c, char *line, size_t cap) {
    if (c->tty) {
        /* the line being edited shows on the terminal: stdout, or stderr when stdout is a file */
        if (!isatty(STDOUT_FILENO) && isatty(STDERR_FILENO)) rl_outstream = stderr;
        FILE *term = rl_outstream ? rl_outstream : stdout;
        rl_getc_function = tty_getc;
        rl_bind_key('\t', rl_insert); /* a tab (pasted code) is text, not filename completion */
        const char *tn = getenv("TERM");
        int bracketed = isatty(fileno(term)) && (!tn || strcmp(tn, "dumb") != 0);
        if (bracketed) fputs("\x1b[?2004h", term), fflush(term);
        /* one message over several lines: a line ending with a backslash goes on at the next
         * (llama-cli's habit), /multiline takes lines until one holding only /end, and a paste's
         * newlines stay in the message */
        size_t len = 0;
        int multi = 0, more = 0, pasted = 0, ok = 1, n_lines = 0;
        line[0] = '\0';
        for (;;) {
            int was_pasted = pasted;
            g_paste_nl = 0;
            char *l = readline(more || multi || pasted ? "... " : "> ");
            pasted = g_paste_nl;
            if (g_stop) { /* Ctrl-C at the prompt: clears what was typed; leaves on nothing */
                int typed = (l && *l) || len || multi;
                free(l);
                if (!typed) {
                    ok = 0;
                    break;
                }
                g_stop = 0;
                len = 0;
                line[0] = '\0';
                multi = more = pasted = n_lines = 0;
                fprintf(stderr, "[cleared; Ctrl-C on an empty line or Ctrl-D leaves]\n");
                continue;
            }
            if (!l) { /* Ctrl-D */
                ok = 0;
                break;
            }
            size_t ll = strlen(l);
            if (!multi && !more && !was_pasted && !pasted && strcmp(l, "/multiline") == 0) {
                multi = 1;
                free(l);
                fprintf(stderr, "[multiline: a line holding only /end sends the message]\n");
                continue;
            }
            if (multi && !pasted && strcmp(l, "/end") == 0) {
                free(l);
                break;
            }
            /* Enter on the empty line after a paste that ended with a newline sends it */
            if (was_pasted && !pasted && !multi && ll == 0) {
                free(l);
                break;
            }
            more = !multi && !pasted && ll > 0 && l[ll - 1] == '\\';
            if (more) l[--ll] = '\0';
            if (len + ll + 2 > cap) { /* the message is cut at the buffer, said once */
                fprintf(stderr, "vkformer: chat: the message is longer than %zu bytes: cut\n",
                        cap - 1);
                free(l);
                g_queue_n = g_queue_at = 0;
                break;
            }
            if (n_lines++) line[len++] = '\n';
            memcpy(line + len, l, ll + 1);
            len += ll;
            free(l);
            if (!multi && !more && !pasted) break;
        }
        if (bracketed) fputs("\x1b[?2004l", term), fflush(term);
        if (!ok) return 0;
        if (*line) add_history(line);
        return 1;
    }
    if (g_stop || !fgets(line, (int)cap, stdin)) return 0; /* EOF, or Ctrl-C at the prompt */
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = '\0';
    return 1;
}

/* One line of input: a command, or a message that gets an answer. 1: leave the chat. */
static int handle_line(chat *c, char *line, int *rc) {
    const char *sys = c->o->sys;
    if (line[0] == '\0') return 0;
    if (strcmp(line, "/exit") == 0 || strcmp(line, "/quit") == 0) return 1;
    if (strcmp(line, "/help") == 0) {
        fprintf(stderr,
                "[/exit (or Ctrl-D), /clear, /save FILE, /load FILE, /help; on a terminal a "
                "line ending with \\ goes on at the next, /multiline takes lines until one "
                "holding only /end, and a paste is one message (Enter sends it); // starts a "
                "message beginning with /. Ctrl-C stops an answer; at the prompt it clears the "
                "line, and on an empty line it leaves]\n");
        return 0;
    }
    if (strcmp(line, "/clear") == 0) {
        cJSON_Delete(c->msgs);
        c->msgs = cJSON_CreateArray();
        if (sys) add_msg(c->msgs, "system", sys);
        fprintf(stderr, "[conversation cleared]\n");
        return 0;
    }
    if (strncmp(line, "/save ", 6) == 0) {
        save_conv(c, line + 6);
        return 0;
    }
    if (strncmp(line, "/load ", 6) == 0) {
        load_conv(c, line + 6);
        return 0;
    }
    if (line[0] == '/' && strncmp(line, "//", 2) != 0) {
        fprintf(stderr,
                "vkformer: chat: unknown command %s (/exit, /clear, /save FILE, /load FILE, "
                "/help; start with // to send a message beginning with /)\n",
                line);
        return 0;
    }
    if (c->o->escape) vkf_gen_unescape(line);
    add_msg(c->msgs, "user", line[0] == '/' ? line + 1 : line);
    return (*rc = turn(c)) != 0;
}

/* --ignore-eos: the ids the model ends a generation with */
static int collect_eog(chat *c) {
    c->eog = malloc((size_t)c->d.n_vocab * sizeof *c->eog);
    if (!c->eog) return -1;
    for (int32_t t = 0; t < c->d.n_vocab; t++)
        if (vkf_model_is_eog(c->m, t)) c->eog[c->n_eog++] = t;
    return 0;
}

static const char *chat_description =
    "An interactive conversation with the model's chat template (ChatML when it has none). The "
    "cache\nis reused between turns. Commands: /exit, /clear, /save FILE, /load FILE, /help. "
    "Ctrl-C stops an\nanswer; at the prompt it clears the line, and on an empty line it leaves, "
    "as Ctrl-D does. A\nline ending with \\, /multiline ... /end, or a paste is one message. "
    "With stdin not a terminal,\neach line is one message. Takes every flag of `vkformer "
    "generate` that means something in a\nchat (llama-cli -cnv): -p is the first message. At "
    "exit, llama-cli's performance summary goes to\nstderr; -v or --show-timings adds a line "
    "after every answer.";

int vkf_cmd_chat(int argc, char **argv) {
    vkf_gen_opts o;
    vkf_gen_defaults(&o, VKF_GEN_CHAT);
    vkf_arg args[VKF_GEN_MAX_ARGS];
    vkf_gen_args(&o, VKF_GEN_CHAT, args);
    vkf_cmd_spec spec = {"chat", "-m MODEL [-sys TEXT] [-p FIRST_MESSAGE] [-n N] [options]",
                         chat_description, args, .epilog = NULL};
    int rc = vkf_args_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (o.list_devices) return vkf_cmd_devices(1, argv);
    if (!o.mp.path)
        return vkf_usage_error(
            "chat", "--model PATH (a model directory or .gguf file) or -hf NAME (a model of "
                    "vkformer's registry: vkformer pull --list) is required");
    if ((rc = vkf_gen_check(&o, "chat")) >= 0) return rc;
    const char *model = o.mp.path;
    char *first = NULL; /* -p / -f: the first user message */
    if (o.file && !(first = vkf_cli_read_text("chat", "-f", o.file))) {
        vkf_gen_free(&o);
        return 1;
    }
    if (!first && o.prompt && !(first = strdup(o.prompt))) {
        vkf_gen_free(&o);
        return vkf_cli_fail("chat: out of memory");
    }
    char *sys = o.sys ? strdup(o.sys) : NULL;
    if (o.escape && sys) vkf_gen_unescape(sys);
    o.sys = sys;

    chat c;
    memset(&c, 0, sizeof c);
    c.sp = o.sp;
    c.o = &o;
    c.tty = isatty(0);
    /* libedit edits characters in the locale's encoding: the terminal's, when it is UTF-8 (the
     * text models read and write), else C.UTF-8 (glibc's built-in) */
    if (c.tty && (!setlocale(LC_CTYPE, "") || strcmp(nl_langinfo(CODESET), "UTF-8") != 0))
        setlocale(LC_CTYPE, "C.UTF-8");
    int32_t chunk = o.n_batch;
    if (o.n_ubatch && (!chunk || o.n_ubatch < chunk)) chunk = o.n_ubatch;
    vkf_context *ctx = NULL;
    rc = 1;
    if (vkf_cli_context(&o.cp, &ctx) != VKF_OK) {
        vkf_cli_fail("chat");
        goto done;
    }
    vkf_gen_notes(&o, "chat", ctx);
    double t_load = now_ms(), load_ms = 0;
    o.mp.progress = vkf_cli_progress;
    o.mp.progress_user = "loading the model";
    if (vkf_model_load(ctx, &o.mp, &c.m) != VKF_OK) {
        vkf_cli_fail("chat: loading the model");
        goto done;
    }
    vkf_model_describe(c.m, &c.d);
    load_ms = now_ms() - t_load;
    /* -b / -ub: a turn's new tokens in passes of the smaller (0: the device's own size); Ctrl-C
     * stops them between two passes (the session's abort callback) */
    vkf_session_params ssp = {.n_ctx = o.n_ctx,
                              .cache_type_k = o.mp.cache_type_k,
                              .cache_type_v = o.mp.cache_type_v,
                              .n_ubatch = chunk,
                              .abort_callback = stop_requested};
    if (c.d.encoder_decoder || !c.d.has_tokenizer) {
        fprintf(stderr, "vkformer: chat: %s: chat needs a decoder-only model with a tokenizer%s\n",
                model, c.d.encoder_decoder ? "" : " (pass one with --tokenizer PATH)");
        goto done;
    }
    if (vkf_gen_lora_open(&o, "chat", c.m)) goto done;
    if (vkf_session_create(c.m, &ssp, &c.s) != VKF_OK) {
        vkf_cli_fail("chat");
        goto done;
    }
    if (vkf_gen_lora_apply(&o, "chat", c.s)) goto done;
    if (vkf_gen_spec_open(&o, "chat", ctx, c.m, &c.draft, &c.spec)) goto done;
    c.n_ctx = vkf_session_n_ctx(c.s);
    c.n_predict = o.n_predict;
    c.reserve = o.n_predict >= 0 && o.n_predict < c.n_ctx / 2 ? o.n_predict : c.n_ctx / 2;
    c.default_template = vkf_model_chat_template(c.m) == NULL;
    if (c.default_template)
        fprintf(stderr,
                "vkformer: chat: %s has no chat template: using ChatML (llama.cpp's default)\n",
                model);
    if (o.verbose)
        fprintf(stderr,
                "vkformer: chat: %s on %s, context %d, seed %llu%s, temp %g, top-k %d, top-p %g, "
                "min-p %g, -n %d\n",
                model, vkf_context_device_name(ctx), c.n_ctx, (unsigned long long)o.sp.seed,
                o.seed_given && o.seed >= 0 ? "" : " (random)", (double)o.sp.temp, o.sp.top_k,
                (double)o.sp.top_p, (double)o.sp.min_p, o.n_predict);
    c.cache = malloc((size_t)c.n_ctx * sizeof *c.cache);
    c.logits = malloc((size_t)c.d.n_vocab * sizeof *c.logits);
    c.msgs = cJSON_CreateArray();
    if (!c.cache || !c.logits || !c.msgs || (o.sp.ignore_eos && collect_eog(&c))) {
        vkf_cli_fail("chat: out of memory");
        goto done;
    }
    if (sys) add_msg(c.msgs, "system", sys);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint; /* no SA_RESTART: Ctrl-C at the prompt ends the read */
    sigaction(SIGINT, &sa, NULL);
    if (c.tty) {
        /* the model's file or directory name, not its path: a model in the cache (-hf) has a
         * long one, and the banner must fit a terminal's line */
        char base[256];
        snprintf(base, sizeof base, "%s", model);
        size_t bl = strlen(base);
        while (bl > 1 && base[bl - 1] == '/')
            base[--bl] = 0;
        const char *b = strrchr(base, '/') ? strrchr(base, '/') + 1 : base;
        fprintf(stderr,
                "[chat with %.40s, %d tokens of context; /exit /clear /save F /load F /help]\n"
                "[Ctrl-C stops an answer or clears the line; on an empty line it leaves, as "
                "Ctrl-D does]\n",
                b, c.n_ctx);
    }
    rc = 0;
    if (first) { /* -p / -f: the first message, as llama-cli -cnv -p */
        if (o.escape) vkf_gen_unescape(first);
        add_msg(c.msgs, "user", first);
        rc = turn(&c);
        g_stop = 0; /* a Ctrl-C during that answer stopped only the answer */
    }
    static char line[65536];
    /* g_stop is cleared after each answer, never before a read: a Ctrl-C that lands between
     * the banner (or an answer's end) and the prompt leaves the chat, as one on an empty prompt */
    while (rc == 0) {
        if (!read_message(&c, line, sizeof line) || handle_line(&c, line, &rc)) break;
        g_stop = 0;
    }
    if (c.tty) fputc('\n', stdout);
    /* llama-cli's performance summary at exit: the whole chat's prompt passes and decoding */
    fprintf(stderr, "timings:        load time = %10.2f ms\n", load_ms);
    fprintf(stderr,
            "timings: prompt eval time = %10.2f ms / %5lld tokens (%8.2f ms per token, %8.2f "
            "tokens per second)\n",
            c.prompt_ms, (long long)c.n_prompt, c.n_prompt ? c.prompt_ms / (double)c.n_prompt : 0.0,
            c.prompt_ms > 0 ? (double)c.n_prompt / (c.prompt_ms / 1e3) : 0.0);
    fprintf(stderr,
            "timings:        eval time = %10.2f ms / %5lld runs   (%8.2f ms per token, %8.2f "
            "tokens per second)\n",
            c.eval_ms, (long long)c.n_eval, c.n_eval ? c.eval_ms / (double)c.n_eval : 0.0,
            c.eval_ms > 0 ? (double)c.n_eval / (c.eval_ms / 1e3) : 0.0);
    fprintf(stderr, "timings:       total time = %10.2f ms / %5lld tokens\n", now_ms() - t_load,
            (long long)(c.n_prompt + c.n_eval));
    if (c.spec) {
        int64_t dr = 0, ac = 0;
        vkf_spec_counts(c.spec, &dr, &ac);
        vkf_gen_spec_report("timings:      speculative =", dr, ac);
    }
done:
    vkf_gen_free(&o);
    cJSON_Delete(c.msgs);
    free(c.cache);
    free(c.logits);
    free(c.eog);
    free(first);
    free(sys);
    vkf_session_free(c.s);
    vkf_gen_lora_free(&o);
    vkf_spec_free(c.spec);
    vkf_model_free(c.draft);
    vkf_model_free(c.m);
    vkf_context_free(ctx);
    return rc;
}
