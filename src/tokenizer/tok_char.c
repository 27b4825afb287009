/* Character-level vocabulary: one token per UTF-8 character, read from char_vocab.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/json_config.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

vkf_status vkf_char_encode_text(vkf_tokenizer *t, const char *s, size_t n, vkf_ids *out) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = vkf_utf8_decode(s + i, n - i, &cp);
        int32_t id = cp == VKF_UTF8_INVALID ? -1 : vkf_strmap_get(&t->vocab, s + i, l);
        if (id >= 0 && t->type[id] != VKF_TOKEN_NORMAL) id = -1; /* specials only via splitting */
        if (id < 0) {
            if (t->unk < 0)
                return vkf_error(VKF_ERROR_TOKEN,
                                 "%s: character \"%.*s\" at byte %zu is not in the vocabulary "
                                 "and there is no unk token",
                                 t->name, cp == VKF_UTF8_INVALID ? 0 : (int)l, s + i, i);
            id = t->unk;
        }
        if (!vkf_ids_push(out, id))
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory while tokenizing",
                             t->name);
        i += l;
    }
    return VKF_OK;
}

/* Reads an optional special id key ("bos", ...) into *id, checking its range. */
static vkf_status char_special(const vkf_json_config *c, const char *key, int n, int32_t *id) {
    *id = -1; /* written on every path: none, until the file says otherwise */
    int64_t v;
    VKF_TRY(vkf_json_config_get_int(c, key, -1, &v));
    if (v < -1 || v >= n)
        return vkf_error(VKF_ERROR_FORMAT, "%s: key %s: id %lld is out of range [0, %d)",
                         vkf_json_config_path(c), key, (long long)v, n);
    *id = (int32_t)v;
    return VKF_OK;
}

vkf_status vkf_tokenizer_char_from_file(const char *path, vkf_tokenizer **out) {
    *out = NULL;
    vkf_json_config *c;
    VKF_TRY(vkf_json_config_load(path, &c));
    vkf_tokenizer *t = NULL;
    vkf_status s;
    const char *type;
    if ((s = vkf_json_config_require_str(c, "type", &type)) != VKF_OK) goto done;
    if (strcmp(type, "char") != 0) {
        s = vkf_error(VKF_ERROR_FORMAT, "%s: key type: expected \"char\", found \"%s\"", path,
                      type);
        goto done;
    }
    const cJSON *toks = cJSON_GetObjectItemCaseSensitive(vkf_json_config_root(c), "tokens");
    if (!cJSON_IsArray(toks) || cJSON_GetArraySize(toks) == 0) {
        s = vkf_error(VKF_ERROR_FORMAT, "%s: key tokens: expected a non-empty array of strings",
                      path);
        goto done;
    }
    int n = cJSON_GetArraySize(toks), i = 0;
    size_t pool = 0;
    for (const cJSON *e = toks->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e)) {
            s = vkf_error(VKF_ERROR_FORMAT, "%s: key tokens: entry %d: expected a string", path, i);
            goto done;
        }
        pool += strlen(e->valuestring);
    }
    int32_t bos, eos, pad, unk;
    int add_bos, add_eos;
    if ((s = char_special(c, "bos", n, &bos)) || (s = char_special(c, "eos", n, &eos)) ||
        (s = char_special(c, "pad", n, &pad)) || (s = char_special(c, "unk", n, &unk)) ||
        (s = vkf_json_config_get_bool(c, "add_bos", 0, &add_bos)) ||
        (s = vkf_json_config_get_bool(c, "add_eos", 0, &add_eos)))
        goto done;
    if ((s = vkf_tok_create(VKF_TOK_CHAR, path, n, pool, &t)) != VKF_OK) goto done;
    t->bos = bos, t->eos = eos, t->pad = pad, t->unk = unk;
    t->add_bos = add_bos, t->add_eos = add_eos;
    i = 0;
    for (const cJSON *e = toks->child; e; e = e->next, i++) {
        const char *str = e->valuestring;
        size_t len = strlen(str);
        int special = i == bos || i == eos || i == pad || i == unk;
        if (!special) {
            uint32_t cp = VKF_UTF8_INVALID;
            size_t l = len ? vkf_utf8_decode(str, len, &cp) : 0;
            if (!len || cp == VKF_UTF8_INVALID || l != len) {
                s = vkf_error(VKF_ERROR_FORMAT,
                              "%s: key tokens: entry %d: expected one UTF-8 character, found "
                              "\"%.32s\"",
                              path, i, str);
                goto done;
            }
        } else if (!len) {
            s = vkf_error(VKF_ERROR_FORMAT, "%s: key tokens: entry %d: special token is empty",
                          path, i);
            goto done;
        }
        vkf_tok_set(t, i, str, len,
                    !special   ? VKF_TOKEN_NORMAL
                    : i == unk ? VKF_TOKEN_UNKNOWN
                               : VKF_TOKEN_CONTROL);
    }
    if ((s = vkf_tok_finish(t)) != VKF_OK) goto done;
    if (t->vocab.n != (size_t)n) { /* some string occurs twice: find it for the message */
        for (int32_t k = 0; k < n; k++) {
            int32_t id = vkf_strmap_get(&t->vocab, vkf_tok_str(t, k), t->len[k]);
            if (id != k) {
                s = vkf_error(VKF_ERROR_FORMAT,
                              "%s: key tokens: \"%s\" occurs twice (entries %d "
                              "and %d)",
                              path, vkf_tok_str(t, k), k, id);
                goto done;
            }
        }
    }
done:
    if (s != VKF_OK) {
        vkf_tokenizer_free(t);
        t = NULL;
    }
    vkf_json_config_free(c);
    *out = t;
    return s;
}
