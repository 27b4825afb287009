/* POST /slots/{id}?action=save|restore|erase (llama-server's, with --slot-save-path DIR): a
 * slot's prompt cache to a file and back. The file holds the slot's tokens and its KV cache
 * rows as the session stores them (vkf_session_seq_state_get), so a restore puts back the cache
 * itself: a request whose prompt extends the restored tokens evaluates only its new tokens.
 *
 * File: "VKFSLOT1", then little-endian u32 header bytes, i32 n_vocab, i32 n_layer, u64 bytes of
 * one cache row over every layer (the cache types' widths), char[32] architecture, i32 tokens,
 * u64 cache bytes; the tokens (i32 each); the cache bytes. A restore refuses a file whose
 * vocabulary, layers, row width or architecture differ from the model's (another model or
 * another -ctk / -ctv). Filenames are plain names inside DIR: empty, '.', '..', a leading dot,
 * '/' or '\\', control characters and names over 255 bytes are refused (400). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "serve/serve.h"

#define MAGIC "VKFSLOT1"

typedef struct slot_header {
    char magic[8];
    uint32_t header_bytes;
    int32_t n_vocab, n_layer;
    uint64_t row_bytes;
    char arch[32];
    int32_t n_tokens;
    uint64_t state_bytes;
} slot_header;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + 1e-6 * (double)ts.tv_nsec;
}

static int fail(srv_slot_op *op, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(srv_slot_op *op, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(op->err, sizeof op->err, fmt, ap);
    va_end(ap);
    op->status = status;
    return -1;
}

static int header_of(vkf_model *m, vkf_session *s, int32_t n, slot_header *h, srv_slot_op *op) {
    vkf_model_desc d;
    vkf_model_describe(m, &d);
    size_t row = 0, all = 0;
    if (vkf_session_seq_state_size(s, 1, &row) != VKF_OK ||
        vkf_session_seq_state_size(s, n, &all) != VKF_OK)
        return fail(op, 500, "slot cache: %s", vkf_last_error());
    memset(h, 0, sizeof *h);
    memcpy(h->magic, MAGIC, 8);
    h->header_bytes = sizeof *h;
    h->n_vocab = d.n_vocab;
    h->n_layer = d.n_layer;
    h->row_bytes = row;
    snprintf(h->arch, sizeof h->arch, "%s", d.architecture ? d.architecture : "");
    h->n_tokens = n;
    h->state_bytes = all;
    return 0;
}

void srv_slot_save(vkf_model *m, vkf_session *s, int b, const int32_t *tokens, int32_t n,
                   srv_slot_op *op) {
    double t0 = now_ms();
    slot_header h;
    if (header_of(m, s, n, &h, op)) return;
    void *state = malloc(h.state_bytes ? h.state_bytes : 1);
    if (!state) {
        fail(op, 500, "out of host memory for %llu bytes", (unsigned long long)h.state_bytes);
        return;
    }
    if (vkf_session_seq_state_get(s, b, n, state, h.state_bytes) != VKF_OK) {
        fail(op, 500, "reading slot %d's cache: %s", b, vkf_last_error());
        free(state);
        return;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.part", op->path);
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(&h, sizeof h, 1, f) == 1 &&
             fwrite(tokens, sizeof *tokens, (size_t)n, f) == (size_t)n &&
             (h.state_bytes == 0 || fwrite(state, h.state_bytes, 1, f) == 1);
    int e = errno;
    if (f && fclose(f) != 0) ok = 0, e = errno;
    free(state);
    if (!ok || rename(tmp, op->path) != 0) {
        if (ok) e = errno;
        remove(tmp);
        fail(op, 500, "writing %s: %s", op->path, strerror(e ? e : EIO));
        return;
    }
    op->n_tokens = n;
    op->n_bytes = sizeof h + (size_t)n * sizeof *tokens + h.state_bytes;
    op->ms = now_ms() - t0;
}

void srv_slot_restore(vkf_model *m, vkf_session *s, int b, int32_t *tokens, int32_t cap,
                      srv_slot_op *op) {
    double t0 = now_ms();
    FILE *f = fopen(op->path, "rb");
    if (!f) {
        fail(op, errno == ENOENT ? 404 : 500, "cannot read %s: %s", op->path, strerror(errno));
        return;
    }
    slot_header h, want;
    void *state = NULL;
    if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, MAGIC, 8) != 0 ||
        h.header_bytes != sizeof h) {
        fail(op, 400, "%s is not a slot file vkformer saved", op->path);
        goto done;
    }
    if (h.n_tokens < 0 || h.n_tokens > cap) {
        fail(op, 400, "%s holds %d tokens; a slot here holds at most %d", op->path, h.n_tokens,
             cap);
        goto done;
    }
    if (header_of(m, s, h.n_tokens, &want, op)) goto done;
    if (h.n_vocab != want.n_vocab || h.n_layer != want.n_layer || h.row_bytes != want.row_bytes ||
        memcmp(h.arch, want.arch, sizeof h.arch) != 0 || h.state_bytes != want.state_bytes) {
        fail(op, 400,
             "%s was saved from another model or cache type (%.32s, %d layers, vocabulary %d, "
             "%llu bytes a row; this one: %.32s, %d, %d, %llu)",
             op->path, h.arch, h.n_layer, h.n_vocab, (unsigned long long)h.row_bytes, want.arch,
             want.n_layer, want.n_vocab, (unsigned long long)want.row_bytes);
        goto done;
    }
    state = malloc(h.state_bytes ? h.state_bytes : 1);
    if (!state) {
        fail(op, 500, "out of host memory for %llu bytes", (unsigned long long)h.state_bytes);
        goto done;
    }
    if (fread(tokens, sizeof *tokens, (size_t)h.n_tokens, f) != (size_t)h.n_tokens ||
        (h.state_bytes && fread(state, h.state_bytes, 1, f) != 1)) {
        fail(op, 400, "%s is cut short", op->path);
        goto done;
    }
    if (vkf_session_seq_state_set(s, b, h.n_tokens, state, h.state_bytes) != VKF_OK) {
        fail(op, 500, "writing slot %d's cache: %s", b, vkf_last_error());
        goto done;
    }
    op->n_tokens = h.n_tokens;
    op->n_bytes = sizeof h + (size_t)h.n_tokens * sizeof *tokens + h.state_bytes;
    op->ms = now_ms() - t0;
done:
    free(state);
    fclose(f);
}

/* llama-server's fs_validate_filename, in short: a plain file name */
static const char *bad_filename(const char *n) {
    if (!*n) return "empty";
    if (strlen(n) > 255) return "longer than 255 bytes";
    if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strstr(n, "..")) return "it holds '..'";
    if (n[0] == '.') return "it begins with a dot";
    for (const unsigned char *p = (const unsigned char *)n; *p; p++) {
        if (*p == '/' || *p == '\\') return "it holds a path separator (a name in the directory)";
        if (*p < 0x20 || *p == 0x7f) return "it holds a control character";
    }
    return NULL;
}

char *srv_slot_request(srv_engine *e, const char *dir, const char *id, const char *action,
                       const char *body, size_t len, int *status) {
    char msg[1024];
    *status = 400;
    if (!dir) {
        *status = 501;
        return srv_api_error(501, "This server does not support slots action. Start it with "
                                  "`--slot-save-path`");
    }
    if (!e) {
        *status = 501;
        return srv_api_error(501, "this model has no slots (an embedding model)");
    }
    char *end = NULL;
    long slot = strtol(id, &end, 10);
    if (!*id || *end || slot < 0 || slot > 1 << 20) return srv_api_error(400, "Invalid slot ID");
    srv_slot_op op;
    memset(&op, 0, sizeof op);
    op.slot = (int)slot;
    if (!action || (strcmp(action, "save") && strcmp(action, "restore") && strcmp(action, "erase")))
        return srv_api_error(400, "Invalid action (expected ?action=save, restore or erase)");
    op.action = action[0] == 's'   ? SRV_SLOT_SAVE
                : action[0] == 'r' ? SRV_SLOT_RESTORE
                                   : SRV_SLOT_ERASE;
    char path[4200], fname[512] = "";
    if (op.action != SRV_SLOT_ERASE) {
        cJSON *j = cJSON_ParseWithLength(body ? body : "", len);
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(j, "filename");
        if (!cJSON_IsString(fn)) {
            cJSON_Delete(j);
            return srv_api_error(400, "expected {\"filename\": NAME} (a file in --slot-save-path)");
        }
        const char *why = bad_filename(fn->valuestring);
        if (why) {
            snprintf(msg, sizeof msg, "Invalid filename '%.300s': %s", fn->valuestring, why);
            cJSON_Delete(j);
            return srv_api_error(400, msg);
        }
        snprintf(fname, sizeof fname, "%s", fn->valuestring);
        cJSON_Delete(j);
        snprintf(path, sizeof path, "%s/%s", dir, fname);
        op.path = path;
    }
    srv_engine_slot_op(e, &op);
    *status = op.status;
    if (op.status != 200) return srv_api_error(op.status, op.err);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id_slot", op.slot);
    if (op.action == SRV_SLOT_ERASE) {
        cJSON_AddNumberToObject(o, "n_erased", op.n_tokens);
    } else {
        int save = op.action == SRV_SLOT_SAVE;
        cJSON_AddStringToObject(o, "filename", fname);
        cJSON_AddNumberToObject(o, save ? "n_saved" : "n_restored", op.n_tokens);
        cJSON_AddNumberToObject(o, save ? "n_written" : "n_read", (double)op.n_bytes);
        cJSON *t = cJSON_AddObjectToObject(o, "timings");
        cJSON_AddNumberToObject(t, save ? "save_ms" : "restore_ms", op.ms);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}
