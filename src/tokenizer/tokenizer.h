/* Tokenizers behind one interface: GPT-2 byte-level BPE (vocab.json + merges.txt, or a GGUF with
 * tokenizer.ggml.model = "gpt2" and any tokenizer.ggml.pre llama.cpp knows: pretok.c),
 * SentencePiece-style BPE (a GGUF with tokenizer.ggml.model = "llama"), WordPiece (GGUF "bert":
 * tok_wpm.c), Unigram (GGUF "t5": tok_spm.c), a character-level vocabulary (char_vocab.json),
 * Hugging Face tokenizer.json files (BPE, WordPiece, Unigram, WordLevel models with their
 * normalizers, pre-tokenizers, post-processors and decoders: see tok_hf.c) and SentencePiece
 * .model files (BPE, Unigram: see tok_spm.c). vkf_tokenizer_open_auto() picks one from a model
 * directory or file; the model loader uses it too. One BPE merge loop (bpe.c) and one Unigram
 * search (unigram.c) serve every front end; regex pre-tokenizers run on regex.c.
 *
 * The gpt2 / llama / char kinds follow llama.cpp as described below; tokenizer.json kinds follow
 * the Hugging Face `tokenizers` library and .model kinds the sentencepiece library, id for id
 * (tests/test_tokenizer_ref.c checks every id of a corpus against both libraries).
 *
 * Usage:
 *     vkf_tokenizer *tok;
 *     VKF_TRY(vkf_tokenizer_from_gguf(g, &tok));          // g may be closed afterwards
 *     int32_t *ids; size_t n;
 *     VKF_TRY(vkf_tokenizer_encode(tok, text, strlen(text), 1, &ids, &n));  // BOS if add_bos
 *     char *out; size_t len;
 *     VKF_TRY(vkf_tokenizer_decode(tok, ids, n, &out, &len));  // == text for plain text
 *     free(ids); free(out);
 *     vkf_tokenizer_free(tok);
 *
 * Encoding follows llama.cpp's llama_tokenize(add_special, parse_special):
 * - Special tokens are cut out of the text first, longest first: control, unknown and
 *   user-defined tokens of a GGUF vocabulary, "<|endoftext|>" for vocab.json files, the named
 *   specials of a char vocabulary. With parse_special = 0 only user-defined tokens are matched
 *   (control text such as "<s>" is then tokenized as ordinary text).
 * - add_special adds BOS in front when the tokenizer's add_bos is set (llama: default true,
 *   gpt2: default false, GGUF keys tokenizer.ggml.add_bos_token / add_eos_token override) and EOS
 *   at the end when add_eos is set.
 * - GPT-2: each text piece is split with the GPT-2 regex
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   (or the regex list of the GGUF's tokenizer.ggml.pre, as llama.cpp's unicode_regex_split)
 *   then byte-level BPE merges by rank (lowest rank first, leftmost on ties); with
 *   ignore_merges (Llama-3) a piece that is a whole token is taken as is.
 * - bert (WordPiece) and t5 (Unigram) GGUFs follow llama.cpp's WPM and UGM tokenizers.
 * - llama: spaces become U+2581 and one U+2581 is prepended to each text piece at the start of
 *   the text or after a special token (tokenizer.ggml.add_space_prefix, default true); adjacent
 *   symbols merge by the highest score of the merged piece, leftmost on ties; a symbol with no
 *   piece becomes byte tokens <0xNN>.
 * - char: one token per UTF-8 character.
 *
 * Invalid UTF-8 in the input is never an error and is never dropped:
 * - GPT-2 byte-level BPE: the bytes pass through as bytes (each invalid byte is a character of
 *   class [^\s\p{L}\p{N}] for the regex, then byte-level BPE as usual), and decode gives back
 *   the exact input bytes;
 * - llama: each invalid byte is its own symbol and becomes the byte token <0xNN> (unk when the
 *   vocabulary has no byte tokens); decode gives back the exact bytes;
 * - char: each invalid byte maps to unk (VKF_ERROR_TOKEN if the vocabulary has no unk).
 *
 * Decoding renders ordinary tokens as text (GPT-2: byte-level decode; llama: U+2581 -> space,
 * <0xNN> -> the byte, and the space that encode prepended is dropped at the start and after
 * each special token). Control tokens (BOS, EOS, <|endoftext|>, ...) are skipped and the unknown
 * token renders as U+FFFD, unless VKF_DECODE_SPECIAL is given, which renders their text.
 *
 * tokenizer.json: added tokens are cut out first (special ones only with parse_special); for
 * add_special the post-processor's tokens are added ([CLS] ... [SEP], <s> ...); decode skips
 * special added tokens unless VKF_DECODE_SPECIAL. Invalid UTF-8: each invalid byte is a
 * character of its own; byte-level and byte-fallback models encode it as its byte and decode
 * gives it back; other models map it like any unknown character (usually to unk, or drop it
 * where the normalizer drops control characters, as BertNormalizer does).
 * SentencePiece .model: as the sentencepiece library: each invalid byte becomes U+FFFD while
 * normalizing; control tokens in the text are plain text whatever parse_special says;
 * add_special adds bos (trainer_spec.bos_id).
 *
 * A tokenizer keeps a cache of pre-token results and scratch buffers, so encode is not
 * thread-safe on one tokenizer (use one per thread); decode and the accessors are. */
#ifndef VKF_TOKENIZER_TOKENIZER_H
#define VKF_TOKENIZER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "io/gguf.h"
#include "vkformer.h"

typedef struct vkf_tokenizer vkf_tokenizer;

/* Token types, numbered as llama.cpp's tokenizer.ggml.token_type. */
typedef enum vkf_token_type {
    VKF_TOKEN_NORMAL = 1,
    VKF_TOKEN_UNKNOWN = 2,
    VKF_TOKEN_CONTROL = 3,
    VKF_TOKEN_USER_DEFINED = 4,
    VKF_TOKEN_UNUSED = 5,
    VKF_TOKEN_BYTE = 6,
} vkf_token_type;

/* Decode flags. */
enum {
    VKF_DECODE_SPECIAL = 1,  /* render control and unknown tokens as their text */
    VKF_DECODE_NO_STRIP = 2, /* llama: keep the leading space (decoding a continuation) */
};

/* ------------------------------------------------------------------ constructors */

/* GPT-2 byte-level BPE from Hugging Face files: vocab.json ({"token": id}, ids dense 0..n-1)
 * and merges.txt (optional "#version" line, then "left right" per line, rank = line order).
 * "<|endoftext|>", when present, is the control token and bos = eos = unk; add_bos = 0. */
vkf_status vkf_tokenizer_from_gpt2_files(const char *vocab_json_path, const char *merges_txt_path,
                                         vkf_tokenizer **out);
/* From GGUF metadata: tokenizer.ggml.model "gpt2" (tokens, merges, token_type, pre), "llama"
 * (tokens, scores, token_type), "bert" (tokens) or "t5" (tokens, scores, token_type,
 * precompiled_charsmap); bos/eos/unk/pad ids from tokenizer.ggml.*_token_id. Everything is
 * copied: g may be closed afterwards. Other models, and pre-tokenizer names llama.cpp does not
 * know, are VKF_ERROR_UNSUPPORTED naming them. */
vkf_status vkf_tokenizer_from_gguf(const vkf_gguf *g, vkf_tokenizer **out);
/* Character-level vocabulary from a JSON file:
 *   {"type": "char", "tokens": ["<pad>", "<bos>", "<eos>", "<unk>", "a", ...],
 *    "bos": 1, "eos": 2, "pad": 0, "unk": 3, "add_bos": false, "add_eos": false}
 * id = index in tokens; the named specials are control tokens (bos/eos/pad/unk and the add_*
 * flags are optional: -1 / false when absent); every other token is exactly one UTF-8
 * character, without duplicates. */
vkf_status vkf_tokenizer_char_from_file(const char *path, vkf_tokenizer **out);
/* Hugging Face tokenizer.json. tokenizer_config.json / special_tokens_map.json beside it, when
 * present, name the bos/eos/unk/pad tokens (bos_token or cls_token, eos_token or sep_token);
 * else the post-processor's first and last tokens, else common names (<s>, </s>, ...). */
vkf_status vkf_tokenizer_from_hf_json(const char *path, vkf_tokenizer **out);
/* The same from a tokenizer.json held in memory (no config files); name is for messages. */
vkf_status vkf_tokenizer_from_hf_json_memory(const char *json, size_t len, const char *name,
                                             vkf_tokenizer **out);
/* A BERT vocab.txt (one token per line, id = line) in dir, with tokenizer_config.json beside it
 * when present (do_lower_case, tokenize_chinese_chars, strip_accents, the special tokens), as
 * transformers' BertTokenizer converts it to a tokenizer.json: BertNormalizer,
 * BertPreTokenizer, WordPiece ("##", at most 100 characters a word), [CLS] $A [SEP]. */
vkf_status vkf_tokenizer_from_bert_vocab(const char *dir, vkf_tokenizer **out);
/* SentencePiece model (the ModelProto protobuf the sentencepiece library writes). */
vkf_status vkf_tokenizer_from_spm_file(const char *path, vkf_tokenizer **out);
vkf_status vkf_tokenizer_from_spm_memory(const void *data, size_t size, const char *name,
                                         vkf_tokenizer **out);
/* Opens the tokenizer of a model directory or file. A directory: the first of tokenizer.json,
 * tokenizer.model, vocab.json + merges.txt, char_vocab.json, then the metadata of the first
 * *.gguf (by name). A file: by name (*.gguf, *.model, char_vocab.json, vocab.json with
 * merges.txt beside it, other *.json as tokenizer.json), else by content. */
vkf_status vkf_tokenizer_open_auto(const char *path, vkf_tokenizer **out);
void vkf_tokenizer_free(vkf_tokenizer *tok);

/* ------------------------------------------------------------------ encode / decode */

/* Tokenizes text[0..len) with special-token parsing on (like the fixtures). *ids is malloc'ed
 * (never NULL on success, even when *n == 0); the caller frees it. */
vkf_status vkf_tokenizer_encode(vkf_tokenizer *tok, const char *text, size_t len, int add_special,
                                int32_t **ids, size_t *n);
/* Same, choosing whether control-token text in the input is parsed as the token. */
vkf_status vkf_tokenizer_encode_ex(vkf_tokenizer *tok, const char *text, size_t len,
                                   int add_special, int parse_special, int32_t **ids, size_t *n);
/* Detokenizes ids[0..n) into a malloc'ed NUL-terminated string of *len bytes (the caller frees
 * it). An id outside [0, n_vocab) is VKF_ERROR_TOKEN. */
vkf_status vkf_tokenizer_decode(const vkf_tokenizer *tok, const int32_t *ids, size_t n, char **text,
                                size_t *len);
vkf_status vkf_tokenizer_decode_ex(const vkf_tokenizer *tok, const int32_t *ids, size_t n,
                                   int flags, char **text, size_t *len);

/* ------------------------------------------------------------------ vocabulary */

int32_t vkf_tokenizer_n_vocab(const vkf_tokenizer *tok);
/* The token's vocabulary string as stored ("Ġthe", "▁the", "<0x0A>", "<s>"), NUL-terminated;
 * NULL if id is out of range. */
const char *vkf_tokenizer_token_text(const vkf_tokenizer *tok, int32_t id);
/* VKF_TOKEN_*; 0 if id is out of range. */
int vkf_tokenizer_token_type(const vkf_tokenizer *tok, int32_t id);
/* The id of the exact vocabulary string text[0..len), -1 if none. */
int32_t vkf_tokenizer_find(const vkf_tokenizer *tok, const char *text, size_t len);
/* Special ids, -1 if none. */
int32_t vkf_tokenizer_bos(const vkf_tokenizer *tok);
int32_t vkf_tokenizer_eos(const vkf_tokenizer *tok);
int32_t vkf_tokenizer_unk(const vkf_tokenizer *tok);
int32_t vkf_tokenizer_pad(const vkf_tokenizer *tok);
/* Fill-in-the-middle tokens, as llama.cpp's vocabulary finds them: a GGUF's
 * tokenizer.ggml.fim_{pre,suf,mid,pad,rep,sep}_token_id (or the older prefix / suffix /
 * middle_token_id), else the first of llama.cpp's spellings the vocabulary has (<|fim_prefix|>,
 * <fim-prefix>, <fim_prefix>, <｜fim▁begin｜>, <PRE>, ▁<PRE>, ... ; <|file_sep|> for sep). -1:
 * none. */
typedef enum vkf_fim_kind {
    VKF_FIM_PRE,
    VKF_FIM_SUF,
    VKF_FIM_MID,
    VKF_FIM_PAD,
    VKF_FIM_REP,
    VKF_FIM_SEP,
    VKF_FIM_COUNT
} vkf_fim_kind;
int32_t vkf_tokenizer_fim(const vkf_tokenizer *tok, vkf_fim_kind k);
/* End-of-generation tokens, as llama.cpp's vocabulary collects them: eos, the GGUF eot / eom
 * ids, and every token spelled <|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>,
 * <|eom_id|>, <|end_of_text|>, <EOT>, <|return|>, <|call|>, ... Generation stops at any of them.
 * Returns the count; *ids (may be NULL) points into the tokenizer. */
size_t vkf_tokenizer_eog(const vkf_tokenizer *tok, const int32_t **ids);
int vkf_tokenizer_is_eog(const vkf_tokenizer *tok, int32_t id);
/* Whether encode(add_special = 1) adds BOS / EOS. */
int vkf_tokenizer_add_bos(const vkf_tokenizer *tok);
int vkf_tokenizer_add_eos(const vkf_tokenizer *tok);
/* A GGUF t5 (UGM) vocabulary's separator (tokenizer.ggml.seperator_token_id, -1 if none) and
 * tokenizer.ggml.add_sep_token (default off): llama.cpp puts it between a rerank pair's texts
 * (XLM-RoBERTa's <s> query </s> </s> document </s>). Encoding never adds it. */
int32_t vkf_tokenizer_sep(const vkf_tokenizer *tok);
int vkf_tokenizer_add_sep(const vkf_tokenizer *tok);
/* "gpt2", "llama", "bert", "char", "hf-bpe", "hf-wordpiece", "hf-unigram", "hf-wordlevel",
 * "spm-bpe", "spm-unigram", "spm-char" or "spm-word". */
const char *vkf_tokenizer_kind(const vkf_tokenizer *tok);

#endif
