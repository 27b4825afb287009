/* BERT vocab.txt as a tokenizer.json front end: the document transformers' BertConverter
 * (convert_slow_tokenizer.py) writes for a BertTokenizer is built here and handed to the
 * tokenizer.json loader, so WordPiece, the normalizer and the post-processor are the ones
 * tests/test_tokenizer_ref.c checks against the Hugging Face library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "io/mapfile.h"
#include "tokenizer/tokenizer.h"

/* tokenizer_config.json's value of key: a string (or {"content": ...}), else def */
static const char *cfg_token(const cJSON *cfg, const char *key, const char *def) {
    const cJSON *v = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, key) : NULL;
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? v->valuestring : def;
}

static int cfg_bool(const cJSON *cfg, const char *key, int def) {
    const cJSON *v = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, key) : NULL;
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

static cJSON *special(const char *tok) {
    cJSON *o = cJSON_CreateObject(), *st = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "SpecialToken", st);
    cJSON_AddStringToObject(st, "id", tok);
    cJSON_AddNumberToObject(st, "type_id", 0);
    return o;
}

vkf_status vkf_tokenizer_from_bert_vocab(const char *dir, vkf_tokenizer **out) {
    *out = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    cJSON *cfg = NULL;
    vkf_mapfile cf = {0};
    if (vkf_mapfile_open(path, &cf) == VKF_OK) {
        cfg = cJSON_ParseWithLength(cf.data ? (const char *)cf.data : "", cf.size);
        vkf_mapfile_close(&cf);
    }
    vkf_error_clear();
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    vkf_mapfile vf = {0};
    vkf_status s = vkf_mapfile_open(path, &vf);
    if (s != VKF_OK) {
        cJSON_Delete(cfg);
        return s;
    }
    const char *unk = cfg_token(cfg, "unk_token", "[UNK]"),
               *sep = cfg_token(cfg, "sep_token", "[SEP]"),
               *pad = cfg_token(cfg, "pad_token", "[PAD]"),
               *cls = cfg_token(cfg, "cls_token", "[CLS]"),
               *mask = cfg_token(cfg, "mask_token", "[MASK]");
    cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    const char *p = vf.data ? (const char *)vf.data : "", *end = p + vf.size;
    int id = 0;
    const char *specials[5] = {pad, unk, cls, sep, mask};
    int special_ids[5] = {-1, -1, -1, -1, -1};
    char *line = NULL;
    size_t cap = 0;
    while (p < end && s == VKF_OK) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n + 1 > cap) {
            char *q = realloc(line, n + 1);
            if (!q) {
                s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
                break;
            }
            line = q;
            cap = n + 1;
        }
        memcpy(line, p, n);
        line[n] = 0;
        /* BertTokenizer's load_vocab strips the newline only */
        cJSON_AddNumberToObject(vocab, line, id);
        for (int k = 0; k < 5; k++)
            if (!strcmp(line, specials[k])) special_ids[k] = id;
        id++;
        p = nl ? nl + 1 : end;
    }
    free(line);
    vkf_mapfile_close(&vf);
    if (s == VKF_OK && (special_ids[1] < 0 || special_ids[2] < 0 || special_ids[3] < 0))
        s = vkf_error(VKF_ERROR_FORMAT, "%s: the vocabulary lacks %s, %s or %s", path, unk, cls,
                      sep);
    if (s == VKF_OK) {
        for (int k = 0; k < 5; k++) {
            if (special_ids[k] < 0) continue;
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", special_ids[k]);
            cJSON_AddStringToObject(a, "content", specials[k]);
            cJSON_AddBoolToObject(a, "single_word", 0);
            cJSON_AddBoolToObject(a, "lstrip", 0);
            cJSON_AddBoolToObject(a, "rstrip", 0);
            cJSON_AddBoolToObject(a, "normalized", 0);
            cJSON_AddBoolToObject(a, "special", 1);
            cJSON_AddItemToArray(added, a);
        }
        cJSON_AddStringToObject(model, "type", "WordPiece");
        cJSON_AddStringToObject(model, "unk_token", unk);
        cJSON_AddStringToObject(model, "continuing_subword_prefix", "##");
        cJSON_AddNumberToObject(model, "max_input_chars_per_word", 100);
        cJSON *norm = cJSON_AddObjectToObject(root, "normalizer");
        cJSON_AddStringToObject(norm, "type", "BertNormalizer");
        cJSON_AddBoolToObject(norm, "clean_text", 1);
        cJSON_AddBoolToObject(norm, "handle_chinese_chars",
                              cfg_bool(cfg, "tokenize_chinese_chars", 1));
        const cJSON *sa = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, "strip_accents") : NULL;
        if (cJSON_IsBool(sa))
            cJSON_AddBoolToObject(norm, "strip_accents", cJSON_IsTrue(sa));
        else
            cJSON_AddNullToObject(norm, "strip_accents");
        cJSON_AddBoolToObject(norm, "lowercase", cfg_bool(cfg, "do_lower_case", 1));
        cJSON_AddStringToObject(cJSON_AddObjectToObject(root, "pre_tokenizer"), "type",
                                "BertPreTokenizer");
        cJSON *post = cJSON_AddObjectToObject(root, "post_processor");
        cJSON_AddStringToObject(post, "type", "TemplateProcessing");
        cJSON *single = cJSON_AddArrayToObject(post, "single");
        cJSON_AddItemToArray(single, special(cls));
        cJSON *seq = cJSON_CreateObject(), *sq = cJSON_AddObjectToObject(seq, "Sequence");
        cJSON_AddStringToObject(sq, "id", "A");
        cJSON_AddNumberToObject(sq, "type_id", 0);
        cJSON_AddItemToArray(single, seq);
        cJSON_AddItemToArray(single, special(sep));
        cJSON *sp = cJSON_AddObjectToObject(post, "special_tokens");
        for (int k = 2; k <= 3; k++) {
            cJSON *e = cJSON_AddObjectToObject(sp, specials[k]);
            cJSON_AddStringToObject(e, "id", specials[k]);
            cJSON *ids = cJSON_AddArrayToObject(e, "ids");
            cJSON_AddItemToArray(ids, cJSON_CreateNumber(special_ids[k]));
            cJSON *toks = cJSON_AddArrayToObject(e, "tokens");
            cJSON_AddItemToArray(toks, cJSON_CreateString(specials[k]));
        }
        cJSON *dec = cJSON_AddObjectToObject(root, "decoder");
        cJSON_AddStringToObject(dec, "type", "WordPiece");
        cJSON_AddStringToObject(dec, "prefix", "##");
        cJSON_AddBoolToObject(dec, "cleanup", 1);
    }
    char *text = s == VKF_OK ? cJSON_PrintUnformatted(root) : NULL;
    if (s == VKF_OK && !text) s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    cJSON_Delete(root);
    cJSON_Delete(cfg);
    if (s == VKF_OK) s = vkf_tokenizer_from_hf_json_memory(text, strlen(text), path, out);
    free(text);
    return s;
}
