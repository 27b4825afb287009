/* Internal pieces of vkf_model_quantize (src/quantize/quantize.c, quantize_hf.c). */
#ifndef VKF_MODEL_QUANTIZE_H
#define VKF_MODEL_QUANTIZE_H

#include "io/gguf_write.h"
#include "vkformer.h"

/* Writes the Hugging Face GPT-2 directory dir (config.json with model_type "gpt2",
 * model.safetensors, vocab.json, merges.txt) as an F32 GGUF the way llama.cpp's
 * convert_hf_to_gguf.py lays it out: gpt2.* hyperparameters, the BPE vocabulary and merges,
 * token_embd / position_embd / blk.N.{attn_norm, attn_qkv, attn_output, ffn_norm, ffn_up,
 * ffn_down} / output_norm / output tensors, Conv1D weights transposed to [out, in] rows. */
vkf_status vkf_hf_gpt2_to_gguf(const char *dir, const char *out_path);

/* Writes a Hugging Face directory the engine loads as an F32/F16/BF16 GGUF (the checkpoint's
 * dtypes kept): gpt2 through vkf_hf_gpt2_to_gguf, the llama family (model/load_hf.c: Llama,
 * Mistral, Qwen2, Qwen3, Gemma2, Gemma3, Phi3; one file or shards) as llama.cpp's
 * convert_hf_to_gguf.py does (quantize/quantize_hf_llama.c). */
vkf_status vkf_hf_to_gguf(const char *dir, const char *out_path);

/* The tokenizer.* keys of dir/tokenizer.json (and tokenizer_config.json) as llama.cpp's
 * converter writes them, for byte-level BPE tokenizers whose pre-tokenizer it names
 * (quantize/quantize_hf_tok.c); n_vocab tokens (<= 0: the largest id + 1). *written is 0 when
 * there is no tokenizer.json or it is of another kind (nothing written then). */
vkf_status vkf_hf_tokenizer_keys(vkf_gguf_writer *w, const char *dir, int64_t n_vocab,
                                 int *written);

/* The keys of an encoder-only (bert) model loaded from an HF directory, as llama.cpp's converter
 * writes them: {arch}.* hyperparameters, pooling_type, the WordPiece vocabulary in its phantom-
 * space form and the special ids (quantize/quantize_hf_bert.c). */
struct vkf_model;
vkf_status vkf_hf_encoder_keys(vkf_gguf_writer *w, const struct vkf_model *m, const char *dir);

#endif
