/* Helpers shared by the commands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

char *vkf_cli_read_text(const char *cmd, const char *flag, const char *path) {
    struct stat st;
    if (strcmp(path, "-") != 0) {
        if (stat(path, &st) != 0) {
            fprintf(stderr, "vkformer: %s: %s %s: %s\n", cmd, flag, path, strerror(errno));
            return NULL;
        }
        if (S_ISDIR(st.st_mode)) {
            fprintf(stderr, "vkformer: %s: %s %s: is a directory (%s takes a text file)\n", cmd,
                    flag, path, flag);
            return NULL;
        }
    }
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "vkformer: %s: %s %s: %s\n", cmd, flag, path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 12, len = 0, got;
    char *p = malloc(cap + 1);
    while (p && (got = fread(p + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *q = realloc(p, (cap *= 2) + 1);
            if (!q) free(p);
            p = q;
        }
    }
    int bad = ferror(f);
    if (f != stdin) fclose(f);
    if (!p || bad) {
        fprintf(stderr, "vkformer: %s: %s %s: %s\n", cmd, flag, path,
                p ? "read error" : "out of memory");
        free(p);
        return NULL;
    }
    p[len] = 0;
    if (strlen(p) != len) {
        fprintf(stderr, "vkformer: %s: %s %s: the file contains NUL bytes (not text)\n", cmd, flag,
                path);
        free(p);
        return NULL;
    }
    return p;
}

void vkf_cli_warn_unknown_chars(const char *cmd, const char *tok_path, const char *text) {
    vkf_tokenizer *t;
    if (!tok_path || vkf_tokenizer_open(tok_path, &t) != VKF_OK) return;
    if (strcmp(vkf_tokenizer_algorithm(t), "char") != 0) {
        vkf_tokenizer_close(t);
        return;
    }
    char list[256] = "";
    size_t len = 0;
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        size_t k = *p < 0x80 ? 1 : *p < 0xe0 ? 2 : *p < 0xf0 ? 3 : 4;
        size_t avail = strnlen((const char *)p, k);
        int32_t *ids = NULL;
        size_t nid = 0;
        /* a char-level vocabulary has one token per character: a character maps to itself or
         * to <unk> */
        int known = vkf_tokenizer_tokenize(t, (const char *)p, avail, 0, &ids, &nid) == VKF_OK &&
                    nid == 1 && vkf_tokenizer_piece(t, ids[0]) &&
                    strlen(vkf_tokenizer_piece(t, ids[0])) == avail &&
                    memcmp(vkf_tokenizer_piece(t, ids[0]), p, avail) == 0;
        free(ids);
        if (!known && !strstr(list, "...")) {
            char ch[8];
            snprintf(ch, sizeof ch, "%.*s", (int)avail, (const char *)p);
            if (!strstr(list, ch) || (avail == 1 && *p < 0x20)) {
                if (len + 16 >= sizeof list)
                    len += (size_t)snprintf(list + len, sizeof list - len, " ...");
                else if (*p < 0x20 || *p == 0x7f)
                    len += (size_t)snprintf(list + len, sizeof list - len, "%sU+%04X", n ? " " : "",
                                            *p);
                else
                    len +=
                        (size_t)snprintf(list + len, sizeof list - len, "%s'%s'", n ? " " : "", ch);
                n++;
            }
        }
        p += avail ? avail : 1;
    }
    vkf_tokenizer_close(t);
    if (n)
        fprintf(stderr,
                "vkformer: %s: warning: characters outside the model's character vocabulary (read "
                "as <unk>): %s\n",
                cmd, list);
}

void vkf_cli_progress(void *user, double done, double total) {
    static int last = -1;
    if (!isatty(STDERR_FILENO) || total <= 0) return;
    int pct = (int)(100.0 * done / total);
    if (done >= total) { /* finished: the line disappears */
        fprintf(stderr, "\r\033[K");
        last = -1;
        return;
    }
    if (pct == last) return;
    last = pct;
    char bar[31];
    int fill = pct * 30 / 100;
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = 0;
    fprintf(stderr, "\r%s [%s] %3d%% %.1f/%.1f MiB", user ? (const char *)user : "loading", bar,
            pct, done / 1048576.0, total / 1048576.0);
    fflush(stderr);
}

static int g_compile_shown;

void vkf_cli_compile_progress(void *user, int n_compiled, const char *shader) {
    (void)user;
    if (!isatty(STDERR_FILENO)) return;
    fprintf(stderr, "\r\033[Kcompiling shaders (a cold cache: the first run here): %d, %s",
            n_compiled, shader);
    fflush(stderr);
    g_compile_shown = 1;
}

void vkf_cli_progress_clear(void) {
    if (!g_compile_shown) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    g_compile_shown = 0;
}

/* the commands' answer to a failed allocation: say so and exit (only the CLI may) */
static void cli_oom(void) {
    fprintf(stderr, "vkformer: out of memory\n");
    exit(1);
}

vkf_status vkf_cli_tokenize(vkf_model *m, const char *text, int flags, int32_t **out, int32_t *n) {
    int32_t cap = (int32_t)strlen(text) + 8;
    int32_t *t = malloc((size_t)cap * sizeof *t);
    *out = NULL;
    if (!t) cli_oom();
    vkf_status st = vkf_model_tokenize(m, text, flags, t, cap, n);
    if (st == VKF_ERROR_INVALID_ARGUMENT && *n >= cap) { /* more tokens than bytes + 8 */
        int32_t *g = realloc(t, ((size_t)*n + 1) * sizeof *t);
        if (!g) cli_oom();
        t = g;
        st = vkf_model_tokenize(m, text, flags, t, *n + 1, n);
    }
    if (st != VKF_OK) {
        free(t);
        return st;
    }
    *out = t;
    return VKF_OK;
}

/* ------------------------------------------------------------------ stdout */

static int g_stdout_reported; /* a command said why stdout failed: main adds nothing */

void vkf_cli_stdout_begin(void) {
    /* a pipe or file: one buffer large enough for any report, so the write that fails is the
     * flush below, whose errno names the reason (glibc forgets it after an earlier failure) */
    static char buf[1 << 16]; /* glibc ignores the size when it allocates the buffer itself */
    if (!isatty(STDOUT_FILENO)) setvbuf(stdout, buf, _IOFBF, sizeof buf);
}

int vkf_cli_stdout_failed(const char *cmd, int err) {
    if (!g_stdout_reported)
        fprintf(stderr, "vkformer: %s: writing to stdout: %s\n", cmd,
                err ? strerror(err) : "failed (output lost)");
    g_stdout_reported = 1;
    return 1;
}

int vkf_cli_stdout_flush(const char *cmd) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    return vkf_cli_stdout_failed(cmd, errno);
}

int vkf_cli_stdout_end(const char *cmd, int rc) {
    errno = 0;
    int err = fflush(stdout) != 0 ? (errno ? errno : EIO) : 0;
    int bad = err || ferror(stdout);
    errno = 0;
    if (fclose(stdout) != 0) {
        if (!err) err = errno ? errno : EIO;
        bad = 1;
    }
    if (!bad) return rc;
    vkf_cli_stdout_failed(cmd, err);
    return rc ? rc : 1;
}

void vkf_cli_print_split(const char *cmd, const vkf_model *m) {
    vkf_split_device d[VKF_MAX_DEVICES];
    int n = vkf_model_split(m, d, VKF_MAX_DEVICES);
    for (int i = 0; n > 1 && i < n; i++) {
        fprintf(stderr, "vkformer: %s: split device %d (%s): ", cmd, i, d[i].device);
        if (d[i].n_layers == 1)
            fprintf(stderr, "layer %d", d[i].layer0);
        else if (d[i].n_layers > 1)
            fprintf(stderr, "layers %d-%d", d[i].layer0, d[i].layer0 + d[i].n_layers - 1);
        else
            fprintf(stderr, "no layers");
        fprintf(stderr, "%s%s, weights %.2f MiB, KV cache %zu bytes per token\n",
                d[i].embeddings ? ", embeddings" : "", d[i].output ? ", output head" : "",
                (double)d[i].weight_bytes / 1048576.0, d[i].kv_bytes_per_token);
    }
}

int vkf_cli_split_lines(char *text, char ***out, int32_t *n) {
    size_t cap = 16, k = 0;
    char **v = malloc(cap * sizeof *v);
    for (char *p = text; v && *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        size_t len = strlen(p);
        if (len && p[len - 1] == '\r') p[len - 1] = 0;
        if (k == cap) {
            char **q = realloc(v, (cap *= 2) * sizeof *v);
            if (!q) {
                free(v);
                v = NULL;
                break;
            }
            v = q;
        }
        v[k++] = p;
        if (!nl) break;
        p = nl + 1;
    }
    if (!v) return -1;
    *out = v;
    *n = (int32_t)k;
    return 0;
}

void vkf_cli_json_str(const char *s) {
    putchar('"');
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else if (*c == '\n')
            printf("\\n");
        else if (*c == '\t')
            printf("\\t");
        else if (*c < 0x20)
            printf("\\u%04x", *c);
        else
            putchar(*c);
    }
    putchar('"');
}
