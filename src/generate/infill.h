/* Fill-in-the-middle prompts (public API: vkf_model_infill): the token sequence llama-server's
 * /infill builds (tools/server/server-common.cpp, format_prompt_infill), on any tokenizer. */
#ifndef VKF_GENERATE_INFILL_H
#define VKF_GENERATE_INFILL_H

#include "tokenizer/tokenizer.h"
#include "vkformer.h"

/* The prompt of p for tok (the caller serializes encode calls on tok); n_ctx: the context the
 * prompt goes into. *out is malloc'ed. VKF_ERROR_UNSUPPORTED when tok has no FIM prefix,
 * suffix or middle token (the message names the missing ones). */
vkf_status vkf_infill_tokens(vkf_tokenizer *tok, const vkf_infill_params *p, int32_t n_ctx,
                             int32_t **out, int32_t *n);

#endif
