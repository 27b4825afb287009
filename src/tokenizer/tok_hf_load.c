/* tokenizer.json loading: the JSON of a tokenizer.json (and of tokenizer_config.json /
 * special_tokens_map.json beside it) into the pipeline structures of tok_hf.h; see tok_hf.c for
 * what the pipeline does. */
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/mapfile.h"
#include "tokenizer/pretok.h"
#include "tokenizer/regex.h"
#include "tokenizer/tok_charsmap.h"
#include "tokenizer/tok_hf.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

/* ------------------------------------------------------------------ free */

void vkf_hf_free(struct vkf_hf *h) {
    if (!h) return;
    for (size_t i = 0; i < h->n_norm; i++) {
        free(h->norm[i].pat);
        free(h->norm[i].rep);
        vkf_charsmap_free(&h->norm[i].charsmap);
    }
    free(h->norm);
    for (size_t i = 0; i < h->n_pre; i++) {
        free(h->pre[i].pat);
        vkf_regex_free(h->pre[i].re);
    }
    free(h->pre);
    vkf_cptext_free(&h->cpt);
    free(h->rx.v);
    for (size_t i = 0; i < h->n_dec; i++) {
        free(h->dec[i].a);
        free(h->dec[i].b);
    }
    free(h->dec);
    free(h->post.pre);
    free(h->post.post);
    for (size_t i = 0; i < h->n_added; i++)
        free(h->added[i].content);
    free(h->added);
    free(h->is_special);
    vkf_strmap_free(&h->mvocab);
    free(h->mkeys);
    free(h->prefix);
    free(h->suffix);
    vkf_trie_free(&h->trie);
    free(h->uscore);
    free(h->cp_a.v);
    free(h->cp_b.v);
    free(h->cp_c.v);
    free(h->s_a.p);
    free(h->s_b.p);
    free(h->s_c.p);
    free(h);
}

/* ------------------------------------------------------------------ loading */

typedef struct loader {
    const char *path;
    vkf_status st;
} loader;

static vkf_status lerr(const char *path, const char *where, const char *msg) {
    return vkf_error(VKF_ERROR_FORMAT, "%s: %s: %s", path, where, msg);
}

static const cJSON *jget(const cJSON *o, const char *k) {
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static const char *jstr(const cJSON *o, const char *k) {
    const cJSON *v = jget(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int jbool(const cJSON *o, const char *k, int def) {
    const cJSON *v = jget(o, k);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

static double jnum(const cJSON *o, const char *k, double def) {
    const cJSON *v = jget(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static split_behavior parse_behavior(const char *s, int *ok) {
    *ok = 1;
    if (!s) return SPLIT_ISOLATED;
    if (!strcmp(s, "Removed")) return SPLIT_REMOVED;
    if (!strcmp(s, "Isolated")) return SPLIT_ISOLATED;
    if (!strcmp(s, "MergedWithPrevious")) return SPLIT_MERGED_PREV;
    if (!strcmp(s, "MergedWithNext")) return SPLIT_MERGED_NEXT;
    if (!strcmp(s, "Contiguous")) return SPLIT_CONTIGUOUS;
    *ok = 0;
    return SPLIT_ISOLATED;
}

static const char k_gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* A {"String": s} or {"Regex": r} pattern as a literal; gpt2 is set for the GPT-2 regex. */
static vkf_status parse_pattern(const char *path, const char *where, const cJSON *p,
                                const char **lit, int *gpt2) {
    *gpt2 = 0;
    const char *s = jstr(p, "String");
    if (s) {
        *lit = s;
        return VKF_OK;
    }
    const char *r = jstr(p, "Regex");
    if (!r) return lerr(path, where, "expected a pattern {\"String\": ...} or {\"Regex\": ...}");
    if (!strcmp(r, k_gpt2_pattern)) {
        *gpt2 = 1;
        *lit = "";
        return VKF_OK;
    }
    if (strpbrk(r, "\\^$.|?*+()[]{}"))
        return vkf_error(VKF_ERROR_UNSUPPORTED,
                         "%s: %s: regular expression \"%.80s\" is not supported (literal patterns "
                         "and the GPT-2 pattern are)",
                         path, where, r);
    *lit = r;
    return VKF_OK;
}

static vkf_status add_norm(struct vkf_hf *h, const char *path, const cJSON *j) {
    if (!j || cJSON_IsNull(j)) return VKF_OK;
    const char *type = jstr(j, "type");
    if (!type) return lerr(path, "normalizer", "expected an object with a \"type\"");
    if (!strcmp(type, "Sequence")) {
        const cJSON *a = jget(j, "normalizers");
        if (!cJSON_IsArray(a))
            return lerr(path, "normalizer Sequence", "expected \"normalizers\": [...]");
        for (const cJSON *e = a->child; e; e = e->next)
            VKF_TRY(add_norm(h, path, e));
        return VKF_OK;
    }
    hf_norm op;
    memset(&op, 0, sizeof op);
    if (!strcmp(type, "NFD"))
        op.type = NORM_NFD;
    else if (!strcmp(type, "NFKD"))
        op.type = NORM_NFKD;
    else if (!strcmp(type, "NFC"))
        op.type = NORM_NFC;
    else if (!strcmp(type, "NFKC"))
        op.type = NORM_NFKC;
    else if (!strcmp(type, "Lowercase"))
        op.type = NORM_LOWERCASE;
    else if (!strcmp(type, "StripAccents"))
        op.type = NORM_STRIP_ACCENTS;
    else if (!strcmp(type, "Nmt"))
        op.type = NORM_NMT;
    else if (!strcmp(type, "Strip")) {
        op.type = NORM_STRIP;
        op.a = jbool(j, "strip_left", 1);
        op.b = jbool(j, "strip_right", 1);
    } else if (!strcmp(type, "BertNormalizer")) {
        op.type = NORM_BERT;
        op.a = jbool(j, "clean_text", 1);
        op.b = jbool(j, "handle_chinese_chars", 1);
        op.d = jbool(j, "lowercase", 1);
        op.c = jbool(j, "strip_accents", op.d); /* null: follows lowercase */
    } else if (!strcmp(type, "Replace")) {
        const char *lit;
        int gpt2;
        op.type = NORM_REPLACE;
        /* the one regular-expression form real files use here: a character repeated, " {2,}" */
        const char *rx = jstr(jget(j, "pattern"), "Regex");
        char run_ch[8];
        int min_run = 0;
        if (rx) {
            uint32_t c;
            size_t l = strlen(rx), cl = l ? vkf_utf8_decode(rx, l, &c) : 0;
            unsigned m = 0;
            char tail;
            if (cl && c != VKF_UTF8_INVALID && (c >= 0x80 || !strchr("\\^$.|?*+()[]{}", (int)c)) &&
                cl < sizeof run_ch) {
                if (!strcmp(rx + cl, "+"))
                    min_run = 1;
                else if (sscanf(rx + cl, "{%u,%c", &m, &tail) == 2 && tail == '}' && m >= 1 &&
                         m < 1000 && rx[l - 1] == '}' && strchr(rx + cl, ',') + 2 == rx + l)
                    min_run = (int)m;
            }
            if (min_run) {
                memcpy(run_ch, rx, cl);
                run_ch[cl] = 0;
            }
        }
        if (min_run) {
            lit = run_ch;
            gpt2 = 0;
            op.a = min_run;
        } else {
            VKF_TRY(parse_pattern(path, "normalizer Replace", jget(j, "pattern"), &lit, &gpt2));
        }
        const char *content = jstr(j, "content");
        if (gpt2 || !content)
            return lerr(path, "normalizer Replace", "expected a literal pattern and a \"content\"");
        op.pat = vkf_hf_utf8_cps(lit, strlen(lit), &op.n_pat);
        op.rep = vkf_hf_utf8_cps(content, strlen(content), &op.n_rep);
        if (!op.pat || !op.rep) goto oom;
    } else if (!strcmp(type, "Prepend")) {
        const char *p = jstr(j, "prepend");
        if (!p) return lerr(path, "normalizer Prepend", "expected \"prepend\": string");
        op.type = NORM_PREPEND;
        if (!(op.rep = vkf_hf_utf8_cps(p, strlen(p), &op.n_rep))) goto oom;
    } else if (!strcmp(type, "Precompiled")) {
        const char *b64 = jstr(j, "precompiled_charsmap");
        op.type = NORM_PRECOMPILED;
        if (!b64)
            return lerr(path, "normalizer Precompiled",
                        "expected \"precompiled_charsmap\": base64 string");
        VKF_TRY(vkf_charsmap_from_base64(b64, strlen(b64), path, &op.charsmap));
    } else {
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: normalizer \"%s\" is not supported", path,
                         type);
    }
    hf_norm *v = realloc(h->norm, (h->n_norm + 1) * sizeof *v);
    if (!v) goto oom;
    h->norm = v;
    h->norm[h->n_norm++] = op;
    return VKF_OK;
oom:
    free(op.pat);
    free(op.rep);
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
}

static vkf_status metaspace_fields(const char *path, const cJSON *j, const char *where,
                                   uint32_t *cp, char *rep, size_t *rep_len, prepend_scheme *ps,
                                   int *split) {
    const char *r = jstr(j, "replacement");
    if (!r) r = "\xe2\x96\x81";
    uint32_t c;
    size_t l = strlen(r);
    if (!l || vkf_utf8_decode(r, l, &c) != l || c == VKF_UTF8_INVALID)
        return lerr(path, where, "expected \"replacement\": one character");
    *cp = c;
    if (rep) {
        memcpy(rep, r, l);
        *rep_len = l;
    }
    const char *scheme = jstr(j, "prepend_scheme");
    if (scheme) {
        if (!strcmp(scheme, "always"))
            *ps = PREPEND_ALWAYS;
        else if (!strcmp(scheme, "first"))
            *ps = PREPEND_FIRST;
        else if (!strcmp(scheme, "never"))
            *ps = PREPEND_NEVER;
        else
            return lerr(path, where, "prepend_scheme must be always, first or never");
    } else { /* older files: add_prefix_space */
        *ps = jbool(j, "add_prefix_space", 1) ? PREPEND_ALWAYS : PREPEND_NEVER;
    }
    if (split) *split = jbool(j, "split", 1);
    return VKF_OK;
}

static vkf_status add_pre(struct vkf_hf *h, const char *path, const cJSON *j) {
    if (!j || cJSON_IsNull(j)) return VKF_OK;
    const char *type = jstr(j, "type");
    if (!type) return lerr(path, "pre_tokenizer", "expected an object with a \"type\"");
    if (!strcmp(type, "Sequence")) {
        const cJSON *a = jget(j, "pretokenizers");
        if (!cJSON_IsArray(a))
            return lerr(path, "pre_tokenizer Sequence", "expected \"pretokenizers\": [...]");
        for (const cJSON *e = a->child; e; e = e->next)
            VKF_TRY(add_pre(h, path, e));
        return VKF_OK;
    }
    hf_pre op;
    memset(&op, 0, sizeof op);
    int ok = 1;
    if (!strcmp(type, "ByteLevel")) {
        op.type = PRE_BYTELEVEL;
        op.add_prefix_space = jbool(j, "add_prefix_space", 1);
        op.use_regex = jbool(j, "use_regex", 1);
    } else if (!strcmp(type, "Metaspace")) {
        op.type = PRE_METASPACE;
        VKF_TRY(metaspace_fields(path, j, "pre_tokenizer Metaspace", &op.rep_cp, op.rep,
                                 &op.rep_len, &op.prepend, &op.split));
    } else if (!strcmp(type, "BertPreTokenizer")) {
        op.type = PRE_BERT;
    } else if (!strcmp(type, "Whitespace")) {
        op.type = PRE_WHITESPACE;
    } else if (!strcmp(type, "WhitespaceSplit")) {
        op.type = PRE_WHITESPACE_SPLIT;
    } else if (!strcmp(type, "Punctuation")) {
        op.type = PRE_PUNCTUATION;
        op.behavior = parse_behavior(jstr(j, "behavior"), &ok);
    } else if (!strcmp(type, "Digits")) {
        op.type = PRE_DIGITS;
        op.individual_digits = jbool(j, "individual_digits", 0);
    } else if (!strcmp(type, "CharDelimiterSplit")) {
        const char *d = jstr(j, "delimiter");
        uint32_t c;
        if (!d || !*d || vkf_utf8_decode(d, strlen(d), &c) != strlen(d))
            return lerr(path, "pre_tokenizer CharDelimiterSplit",
                        "expected \"delimiter\": one character");
        op.type = PRE_CHAR_DELIMITER;
        op.delim = c;
    } else if (!strcmp(type, "Split")) {
        const char *lit;
        op.type = PRE_SPLIT;
        const char *rx = jstr(jget(j, "pattern"), "Regex");
        if (rx && strcmp(rx, k_gpt2_pattern) != 0) { /* compiled once, here */
            char what[512];
            snprintf(what, sizeof what, "%s: pre_tokenizer Split", path);
            VKF_TRY(vkf_regex_compile(rx, strlen(rx), what, &op.re));
            lit = "";
        } else {
            VKF_TRY(parse_pattern(path, "pre_tokenizer Split", jget(j, "pattern"), &lit,
                                  &op.gpt2_regex));
        }
        op.behavior = parse_behavior(jstr(j, "behavior"), &ok);
        op.invert = jbool(j, "invert", 0);
        op.pat_len = strlen(lit);
        if (!(op.pat = vkf_hf_dup(lit, op.pat_len)))
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    } else {
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: pre-tokenizer \"%s\" is not supported", path,
                         type);
    }
    if (!ok) {
        free(op.pat);
        vkf_regex_free(op.re);
        return lerr(path, "pre_tokenizer", "unknown split behavior");
    }
    hf_pre *v = realloc(h->pre, (h->n_pre + 1) * sizeof *v);
    if (!v) {
        free(op.pat);
        vkf_regex_free(op.re);
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    h->pre = v;
    h->pre[h->n_pre++] = op;
    return VKF_OK;
}

static vkf_status add_dec(struct vkf_hf *h, const char *path, const cJSON *j) {
    const char *type = jstr(j, "type");
    if (!type) return lerr(path, "decoder", "expected an object with a \"type\"");
    if (!strcmp(type, "Sequence")) {
        const cJSON *a = jget(j, "decoders");
        if (!cJSON_IsArray(a))
            return lerr(path, "decoder Sequence", "expected \"decoders\": [...]");
        for (const cJSON *e = a->child; e; e = e->next)
            VKF_TRY(add_dec(h, path, e));
        return VKF_OK;
    }
    hf_dec d;
    memset(&d, 0, sizeof d);
    const char *a = NULL, *b = NULL;
    if (!strcmp(type, "ByteLevel")) {
        d.type = DEC_BYTELEVEL;
    } else if (!strcmp(type, "Metaspace")) {
        prepend_scheme ps;
        d.type = DEC_METASPACE;
        VKF_TRY(metaspace_fields(path, j, "decoder Metaspace", &d.cp, NULL, NULL, &ps, NULL));
        d.y = ps != PREPEND_NEVER;
    } else if (!strcmp(type, "WordPiece")) {
        d.type = DEC_WORDPIECE;
        a = jstr(j, "prefix");
        if (!a) a = "##";
        d.x = jbool(j, "cleanup", 1);
    } else if (!strcmp(type, "BPEDecoder")) {
        d.type = DEC_BPE;
        a = jstr(j, "suffix");
        if (!a) a = "</w>";
    } else if (!strcmp(type, "ByteFallback")) {
        d.type = DEC_BYTEFALLBACK;
    } else if (!strcmp(type, "Fuse")) {
        d.type = DEC_FUSE;
    } else if (!strcmp(type, "Strip")) {
        const char *c = jstr(j, "content");
        uint32_t cp;
        if (!c || !*c || vkf_utf8_decode(c, strlen(c), &cp) != strlen(c))
            return lerr(path, "decoder Strip", "expected \"content\": one character");
        d.type = DEC_STRIP;
        d.cp = cp;
        d.x = (int)jnum(j, "start", 0);
        d.y = (int)jnum(j, "stop", 0);
    } else if (!strcmp(type, "Replace")) {
        int gpt2;
        d.type = DEC_REPLACE;
        VKF_TRY(parse_pattern(path, "decoder Replace", jget(j, "pattern"), &a, &gpt2));
        b = jstr(j, "content");
        if (gpt2 || !b)
            return lerr(path, "decoder Replace", "expected a literal pattern and a \"content\"");
    } else {
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: decoder \"%s\" is not supported", path, type);
    }
    if (a) {
        d.na = strlen(a);
        if (!(d.a = vkf_hf_dup(a, d.na))) goto oom;
    }
    if (b) {
        d.nb = strlen(b);
        if (!(d.b = vkf_hf_dup(b, d.nb))) goto oom;
    }
    hf_dec *v = realloc(h->dec, (h->n_dec + 1) * sizeof *v);
    if (!v) goto oom;
    h->dec = v;
    h->dec[h->n_dec++] = d;
    return VKF_OK;
oom:
    free(d.a);
    free(d.b);
    return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
}

/* Token string -> id over the whole vocabulary (model and added tokens). */
static int32_t vocab_id(const vkf_tokenizer *t, const char *s) {
    return s ? vkf_strmap_get(&t->vocab, s, strlen(s)) : -1;
}

static int ids_append(int32_t **v, size_t *n, int32_t id) {
    int32_t *p = realloc(*v, (*n + 1) * sizeof *p);
    if (!p) return 0;
    p[(*n)++] = id;
    *v = p;
    return 1;
}

/* A post-processor's ids around a single sequence. */
static vkf_status add_post(vkf_tokenizer *t, const char *path, const cJSON *j) {
    struct vkf_hf *h = t->hf;
    if (!j || cJSON_IsNull(j)) return VKF_OK;
    const char *type = jstr(j, "type");
    if (!type) return lerr(path, "post_processor", "expected an object with a \"type\"");
    if (!strcmp(type, "Sequence")) {
        const cJSON *a = jget(j, "processors");
        if (!cJSON_IsArray(a))
            return lerr(path, "post_processor Sequence", "expected \"processors\": [...]");
        for (const cJSON *e = a->child; e; e = e->next)
            VKF_TRY(add_post(t, path, e));
        return VKF_OK;
    }
    if (!strcmp(type, "ByteLevel")) return VKF_OK; /* offsets only */
    if (!strcmp(type, "BertProcessing") || !strcmp(type, "RobertaProcessing")) {
        const cJSON *cls = jget(j, "cls"), *sep = jget(j, "sep");
        const cJSON *ci = cJSON_GetArrayItem(cls, 1), *si = cJSON_GetArrayItem(sep, 1);
        if (!cJSON_IsNumber(ci) || !cJSON_IsNumber(si) || ci->valuedouble < 0 ||
            ci->valuedouble >= t->n_vocab || si->valuedouble < 0 || si->valuedouble >= t->n_vocab)
            return lerr(path, type,
                        "expected \"cls\" and \"sep\": [token, id] with ids in the vocabulary");
        h->post.n_pre = h->post.n_post = 0;
        if (!ids_append(&h->post.pre, &h->post.n_pre, (int32_t)ci->valuedouble) ||
            !ids_append(&h->post.post, &h->post.n_post, (int32_t)si->valuedouble))
            return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
        return VKF_OK;
    }
    if (!strcmp(type, "TemplateProcessing")) {
        const cJSON *single = jget(j, "single"), *sp = jget(j, "special_tokens");
        if (!cJSON_IsArray(single))
            return lerr(path, "TemplateProcessing", "expected \"single\": [...]");
        h->post.n_pre = h->post.n_post = 0;
        int seen_a = 0;
        for (const cJSON *e = single->child; e; e = e->next) {
            const cJSON *st = jget(e, "SpecialToken");
            if (jget(e, "Sequence")) {
                seen_a = 1;
                continue;
            }
            const char *name = jstr(st, "id");
            const cJSON *spec = jget(sp, name ? name : "");
            const cJSON *ids = jget(spec, "ids");
            if (!name || !cJSON_IsArray(ids))
                return lerr(path, "TemplateProcessing",
                            "a special token of \"single\" is not in \"special_tokens\"");
            for (const cJSON *x = ids->child; x; x = x->next) {
                if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= t->n_vocab)
                    return lerr(path, "TemplateProcessing",
                                "special token id out of the vocabulary");
                int ok = seen_a
                             ? ids_append(&h->post.post, &h->post.n_post, (int32_t)x->valuedouble)
                             : ids_append(&h->post.pre, &h->post.n_pre, (int32_t)x->valuedouble);
                if (!ok) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
            }
        }
        return VKF_OK;
    }
    return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: post-processor \"%s\" is not supported", path,
                     type);
}

/* Reads a special token name from a config object: "tok" or {"content": "tok"}. */
static const char *config_token(const cJSON *cfg, const char *key) {
    const cJSON *v = jget(cfg, key);
    if (cJSON_IsString(v)) return v->valuestring;
    return jstr(v, "content");
}

static cJSON *load_json_file(const char *path) {
    vkf_mapfile m = {0};
    if (vkf_mapfile_open(path, &m) != VKF_OK) return NULL;
    cJSON *j = cJSON_ParseWithLength(m.data ? (const char *)m.data : "", m.size);
    vkf_mapfile_close(&m);
    return j;
}

/* One vocabulary entry being collected: id, string, and where it comes from. */
typedef struct ventry {
    const char *s;
    size_t len;
    int type;
    int set;
} ventry;

static vkf_status build(const char *path, const cJSON *root, const cJSON *cfg, const cJSON *stmap,
                        vkf_tokenizer **out) {
    *out = NULL;
    const cJSON *model = jget(root, "model");
    const char *mtype = jstr(model, "type");
    if (!model) return lerr(path, "model", "expected an object");
    const cJSON *vocab = jget(model, "vocab");
    if (!mtype) { /* older files leave the type out: guess it from the fields */
        if (jget(model, "merges"))
            mtype = "BPE";
        else if (cJSON_IsArray(vocab))
            mtype = "Unigram";
        else if (jget(model, "max_input_chars_per_word"))
            mtype = "WordPiece";
        else
            mtype = "WordLevel";
    }
    model_type mt;
    vkf_hf_byte_chars_init();
    if (!strcmp(mtype, "BPE"))
        mt = MODEL_BPE;
    else if (!strcmp(mtype, "WordPiece"))
        mt = MODEL_WORDPIECE;
    else if (!strcmp(mtype, "Unigram"))
        mt = MODEL_UNIGRAM;
    else if (!strcmp(mtype, "WordLevel"))
        mt = MODEL_WORDLEVEL;
    else
        return vkf_error(VKF_ERROR_UNSUPPORTED, "%s: model \"%s\" is not supported", path, mtype);
    if (mt == MODEL_UNIGRAM ? !cJSON_IsArray(vocab) : !cJSON_IsObject(vocab))
        return lerr(path, "model.vocab",
                    mt == MODEL_UNIGRAM ? "expected [[piece, score], ...]"
                                        : "expected {\"token\": id, ...}");
    /* ids: model vocabulary, then added tokens */
    const cJSON *added = jget(root, "added_tokens");
    int64_t n = 0;
    int idx = 0;
    for (const cJSON *e = vocab->child; e; e = e->next, idx++) {
        int64_t id;
        if (mt == MODEL_UNIGRAM) {
            if (!cJSON_IsString(cJSON_GetArrayItem(e, 0)) ||
                !cJSON_IsNumber(cJSON_GetArrayItem(e, 1)))
                return lerr(path, "model.vocab", "expected [piece, score] entries");
            id = idx;
        } else {
            if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > INT32_MAX - 1 ||
                e->valuedouble != (double)(int64_t)e->valuedouble)
                return lerr(path, "model.vocab", "expected non-negative integer ids");
            id = (int64_t)e->valuedouble;
        }
        if (id + 1 > n) n = id + 1;
    }
    for (const cJSON *e = cJSON_IsArray(added) ? added->child : NULL; e; e = e->next) {
        double id = jnum(e, "id", -1);
        if (!jstr(e, "content") || id < 0 || id > INT32_MAX - 1 || id != (double)(int64_t)id)
            return lerr(path, "added_tokens", "expected {\"id\": n, \"content\": s, ...} entries");
        if ((int64_t)id + 1 > n) n = (int64_t)id + 1;
    }
    if (n <= 0) return lerr(path, "model.vocab", "the vocabulary is empty");
    /* ids are dense in real files; bounding the holes bounds the memory by the file's size
     * (the fuzzer found a 4 KB file asking for 60M ids) */
    int64_t n_entries = cJSON_GetArraySize(vocab) + cJSON_GetArraySize(added);
    if (n > (int64_t)64 << 20 || n > 2 * n_entries + 65536) {
        char msg[128];
        snprintf(msg, sizeof msg, "ids up to %lld for %lld entries: too sparse (or over 2^26)",
                 (long long)n - 1, (long long)n_entries);
        return lerr(path, "model.vocab", msg);
    }
    ventry *ve = calloc((size_t)n, sizeof *ve);
    if (!ve) return vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    vkf_tokenizer *t = NULL;
    struct vkf_hf *h = NULL;
    vkf_status s = VKF_OK;
    idx = 0;
    for (const cJSON *e = vocab->child; e; e = e->next, idx++) {
        const char *str = mt == MODEL_UNIGRAM ? cJSON_GetArrayItem(e, 0)->valuestring : e->string;
        int64_t id = mt == MODEL_UNIGRAM ? idx : (int64_t)e->valuedouble;
        ve[id] = (ventry){str, strlen(str), VKF_TOKEN_NORMAL, 1};
    }
    for (const cJSON *e = cJSON_IsArray(added) ? added->child : NULL; e; e = e->next) {
        int64_t id = (int64_t)jnum(e, "id", -1);
        const char *str = jstr(e, "content");
        ve[id] = (ventry){str, strlen(str),
                          jbool(e, "special", 0) ? VKF_TOKEN_CONTROL : VKF_TOKEN_USER_DEFINED, 1};
    }
    size_t pool = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!ve[i].set) ve[i] = (ventry){"", 0, VKF_TOKEN_UNUSED, 1}; /* a hole in the ids */
        pool += ve[i].len;
    }
    if ((s = vkf_tok_create(VKF_TOK_HF, path, n, pool, &t)) != VKF_OK) goto fail;
    if (!(h = calloc(1, sizeof *h))) goto oom;
    t->hf = h;
    h->model = mt;
    h->unk = -1;
    for (int b = 0; b < 256; b++)
        h->byte_id[b] = -1;
    for (int64_t i = 0; i < n; i++)
        vkf_tok_set(t, (int32_t)i, ve[i].s, ve[i].len, ve[i].type);
    if (!(h->is_special = calloc((size_t)n, 1))) goto oom;

    /* the model vocabulary map (its own key copies: an added token may reuse an id) */
    {
        size_t mk = 0;
        for (const cJSON *e = vocab->child; e; e = e->next)
            mk +=
                strlen(mt == MODEL_UNIGRAM ? cJSON_GetArrayItem(e, 0)->valuestring : e->string) + 1;
        if (!(h->mkeys = malloc(mk + 1)) || !vkf_strmap_init(&h->mvocab, (size_t)n)) goto oom;
        size_t off = 0;
        idx = 0;
        for (const cJSON *e = vocab->child; e; e = e->next, idx++) {
            const char *str =
                mt == MODEL_UNIGRAM ? cJSON_GetArrayItem(e, 0)->valuestring : e->string;
            size_t l = strlen(str);
            memcpy(h->mkeys + off, str, l + 1);
            int32_t id = mt == MODEL_UNIGRAM ? idx : (int32_t)e->valuedouble;
            if (!vkf_strmap_put(&h->mvocab, h->mkeys + off, l, id)) goto oom;
            off += l + 1;
        }
    }

    /* model parameters */
    if (mt == MODEL_BPE) {
        const char *unk = jstr(model, "unk_token");
        const char *pre = jstr(model, "continuing_subword_prefix");
        const char *suf = jstr(model, "end_of_word_suffix");
        h->unk = unk ? vkf_hf_mvocab_get(h, unk, strlen(unk)) : -1;
        h->fuse_unk = jbool(model, "fuse_unk", 0);
        h->byte_fallback = jbool(model, "byte_fallback", 0);
        h->ignore_merges = jbool(model, "ignore_merges", 0);
        if (pre && *pre && !(h->prefix = vkf_hf_dup(pre, h->n_prefix = strlen(pre)))) goto oom;
        if (suf && *suf && !(h->suffix = vkf_hf_dup(suf, h->n_suffix = strlen(suf)))) goto oom;
        const cJSON *merges = jget(model, "merges");
        if (!cJSON_IsArray(merges)) {
            s = lerr(path, "model.merges", "expected an array");
            goto fail;
        }
        if (!vkf_u64map_init(&t->merges, (size_t)cJSON_GetArraySize(merges))) goto oom;
        vkf_sbuf tmp = {0};
        uint32_t rank = 0;
        for (const cJSON *e = merges->child; e; e = e->next, rank++) {
            const char *a, *b;
            size_t al, bl;
            if (cJSON_IsString(e)) { /* "left right" */
                const char *str = e->valuestring, *sp = strchr(str, ' ');
                if (!sp) {
                    free(tmp.p);
                    s = lerr(path, "model.merges", "expected \"left right\" entries");
                    goto fail;
                }
                a = str, al = (size_t)(sp - str), b = sp + 1, bl = strlen(sp + 1);
            } else if (cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
                       cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
                a = cJSON_GetArrayItem(e, 0)->valuestring, al = strlen(a);
                b = cJSON_GetArrayItem(e, 1)->valuestring, bl = strlen(b);
            } else {
                free(tmp.p);
                s = lerr(path, "model.merges", "expected \"left right\" or [left, right] entries");
                goto fail;
            }
            int32_t ia = vkf_hf_mvocab_get(h, a, al), ib = vkf_hf_mvocab_get(h, b, bl);
            size_t skip = h->n_prefix <= bl ? h->n_prefix : bl; /* the library drops the
                                                                    prefix length from b */
            tmp.n = 0;
            if (!vkf_sbuf_put(&tmp, a, al) || !vkf_sbuf_put(&tmp, b + skip, bl - skip)) {
                free(tmp.p);
                goto oom;
            }
            int32_t im = vkf_hf_mvocab_get(h, tmp.p, tmp.n);
            if (ia < 0 || ib < 0 || im < 0) {
                char msg[160];
                snprintf(msg, sizeof msg,
                         "merge %u (\"%.40s\" \"%.40s\"): a token is not in the vocabulary", rank,
                         a, b);
                free(tmp.p);
                s = lerr(path, "model.merges", msg);
                goto fail;
            }
            if (!vkf_u64map_put_first(&t->merges, (uint64_t)(uint32_t)ia << 32 | (uint32_t)ib,
                                      (uint64_t)rank << 32 | (uint32_t)im)) {
                free(tmp.p);
                goto oom;
            }
        }
        free(tmp.p);
    } else if (mt == MODEL_WORDPIECE) {
        const char *unk = jstr(model, "unk_token");
        const char *pre = jstr(model, "continuing_subword_prefix");
        h->unk = unk ? vkf_hf_mvocab_get(h, unk, strlen(unk)) : -1;
        if (!pre) pre = "##";
        if (!(h->prefix = vkf_hf_dup(pre, h->n_prefix = strlen(pre)))) goto oom;
        h->max_chars = (int)jnum(model, "max_input_chars_per_word", 100);
    } else if (mt == MODEL_WORDLEVEL) {
        const char *unk = jstr(model, "unk_token");
        h->unk = unk ? vkf_hf_mvocab_get(h, unk, strlen(unk)) : -1;
    } else {
        const cJSON *u = jget(model, "unk_id");
        h->unk = cJSON_IsNumber(u) && u->valuedouble >= 0 && u->valuedouble < n
                     ? (int32_t)u->valuedouble
                     : -1;
        h->byte_fallback = jbool(model, "byte_fallback", 0);
        size_t nv = (size_t)cJSON_GetArraySize(vocab);
        if (!(h->uscore = malloc((nv ? nv : 1) * sizeof *h->uscore)) ||
            !vkf_trie_init(&h->trie, 4 * nv))
            goto oom;
        h->min_score = INFINITY;
        idx = 0;
        for (const cJSON *e = vocab->child; e; e = e->next, idx++) {
            const char *str = cJSON_GetArrayItem(e, 0)->valuestring;
            double sc = cJSON_GetArrayItem(e, 1)->valuedouble;
            h->uscore[idx] = sc;
            if (sc < h->min_score) h->min_score = sc;
            /* the trie maps a string to the id the vocabulary map gives it (the last one) */
            if (!vkf_trie_insert(&h->trie, str, strlen(str),
                                 vkf_hf_mvocab_get(h, str, strlen(str))))
                goto oom;
        }
        if (!vkf_trie_freeze(&h->trie)) goto oom;
    }
    if (mt == MODEL_BPE && !h->ignore_merges && !h->prefix && !h->suffix &&
        vkf_hf_mvocab_get(h, "\xe2\x96\x81", 3) >= 0) {
        h->ws_split = 1; /* unless a token has U+2581 after some other character */
        for (const cJSON *e = vocab->child; e && h->ws_split; e = e->next) {
            const char *str = e->string;
            while (!strncmp(str, "\xe2\x96\x81", 3))
                str += 3;
            if (strstr(str, "\xe2\x96\x81")) h->ws_split = 0;
        }
    }
    if (h->unk >= 0 && t->type[h->unk] == VKF_TOKEN_NORMAL) t->type[h->unk] = VKF_TOKEN_UNKNOWN;
    if (h->byte_fallback)
        for (int b = 0; b < 256; b++) {
            char buf[8];
            snprintf(buf, sizeof buf, "<0x%02X>", b);
            h->byte_id[b] = vkf_hf_mvocab_get(h, buf, 6);
            if (h->byte_id[b] >= 0 && t->type[h->byte_id[b]] == VKF_TOKEN_NORMAL)
                t->type[h->byte_id[b]] = VKF_TOKEN_BYTE;
        }

    /* pipeline */
    if ((s = add_norm(h, path, jget(root, "normalizer"))) != VKF_OK ||
        (s = add_pre(h, path, jget(root, "pre_tokenizer"))) != VKF_OK)
        goto fail;
    const cJSON *dec = jget(root, "decoder");
    if (dec && !cJSON_IsNull(dec)) {
        h->has_decoder = 1;
        if ((s = add_dec(h, path, dec)) != VKF_OK) goto fail;
    }
    if ((s = vkf_tok_finish(t)) != VKF_OK) goto fail;
    if ((s = add_post(t, path, jget(root, "post_processor"))) != VKF_OK) goto fail;

    /* added tokens: normalized ones are matched in their normalized form */
    size_t na = cJSON_IsArray(added) ? (size_t)cJSON_GetArraySize(added) : 0;
    if (na) {
        if (!(h->added = calloc(na, sizeof *h->added))) goto oom;
        for (const cJSON *e = added->child; e; e = e->next) {
            added_token *a = &h->added[h->n_added];
            const char *str = jstr(e, "content");
            a->id = (int32_t)jnum(e, "id", 0);
            a->single_word = jbool(e, "single_word", 0);
            a->lstrip = jbool(e, "lstrip", 0);
            a->rstrip = jbool(e, "rstrip", 0);
            a->special = jbool(e, "special", 0);
            a->normalized = jbool(e, "normalized", !a->special);
            if (a->special) h->is_special[a->id] = 1;
            if (a->normalized) {
                if (!vkf_hf_normalize(h, str, strlen(str), &h->s_a)) goto oom;
                a->len = h->s_a.n;
                if (!(a->content = vkf_hf_dup(h->s_a.p ? h->s_a.p : "", a->len))) goto oom;
            } else {
                a->len = strlen(str);
                if (!(a->content = vkf_hf_dup(str, a->len))) goto oom;
            }
            if (a->len) h->added_first[(uint8_t)a->content[0]] = 1;
            h->n_added++;
        }
    }

    /* special ids: the config files, else the post-processor, else common names */
    const char *names[4][2] = {{"bos_token", "cls_token"},
                               {"eos_token", "sep_token"},
                               {"unk_token", NULL},
                               {"pad_token", NULL}};
    int32_t *dst[4] = {&t->bos, &t->eos, &t->unk, &t->pad};
    for (int k = 0; k < 4; k++)
        for (int q = 0; q < 2 && *dst[k] < 0; q++) {
            if (!names[k][q]) continue;
            int32_t id = vocab_id(t, config_token(cfg, names[k][q]));
            if (id < 0) id = vocab_id(t, config_token(stmap, names[k][q]));
            *dst[k] = id;
        }
    if (t->bos < 0 && h->post.n_pre) t->bos = h->post.pre[0];
    if (t->eos < 0 && h->post.n_post) t->eos = h->post.post[h->post.n_post - 1];
    static const char *const bos_names[] = {"<s>", "<|begin_of_text|>", "<|endoftext|>", "[CLS]",
                                            "<bos>"};
    static const char *const eos_names[] = {"</s>", "<|end_of_text|>", "<|endoftext|>", "[SEP]",
                                            "<eos>"};
    for (size_t k = 0; k < 5 && t->bos < 0; k++)
        t->bos = vocab_id(t, bos_names[k]);
    for (size_t k = 0; k < 5 && t->eos < 0; k++)
        t->eos = vocab_id(t, eos_names[k]);
    if (t->unk < 0) t->unk = h->unk;
    t->add_bos = h->post.n_pre > 0;
    t->add_eos = h->post.n_post > 0;
    free(ve);
    *out = t;
    return VKF_OK;
oom:
    s = vkf_error(VKF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
fail:
    free(ve);
    vkf_tokenizer_free(t);
    return s;
}

vkf_status vkf_tokenizer_from_hf_json_memory(const char *json, size_t len, const char *name,
                                             vkf_tokenizer **out) {
    *out = NULL;
    cJSON *root = cJSON_ParseWithLength(json ? json : "", len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return vkf_error(VKF_ERROR_FORMAT, "%s: not a JSON object (tokenizer.json)", name);
    }
    vkf_status s = build(name, root, NULL, NULL, out);
    cJSON_Delete(root);
    return s;
}

vkf_status vkf_tokenizer_from_hf_json(const char *path, vkf_tokenizer **out) {
    *out = NULL;
    vkf_mapfile m = {0};
    VKF_TRY(vkf_mapfile_open(path, &m));
    cJSON *root = cJSON_ParseWithLength(m.data ? (const char *)m.data : "", m.size);
    vkf_mapfile_close(&m);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return vkf_error(VKF_ERROR_FORMAT, "%s: not a JSON object (expected a tokenizer.json)",
                         path);
    }
    /* tokenizer_config.json / special_tokens_map.json beside it name the special tokens */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = 0;
    else
        dir[0] = 0;
    char cfgp[4200], stp[4200];
    snprintf(cfgp, sizeof cfgp, "%stokenizer_config.json", dir);
    snprintf(stp, sizeof stp, "%sspecial_tokens_map.json", dir);
    cJSON *cfg = load_json_file(cfgp), *st = load_json_file(stp);
    vkf_status s = build(path, root, cfg, st, out);
    cJSON_Delete(cfg);
    cJSON_Delete(st);
    cJSON_Delete(root);
    return s;
}

const char *vkf_hf_model_name(const struct vkf_hf *h) {
    switch (h->model) {
    case MODEL_BPE: return "hf-bpe";
    case MODEL_WORDPIECE: return "hf-wordpiece";
    case MODEL_UNIGRAM: return "hf-unigram";
    case MODEL_WORDLEVEL: return "hf-wordlevel";
    }
    return "hf";
}
