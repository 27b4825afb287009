/* KV cache rows in bf16 or in one of ggml's 32-element block types (llama.cpp's -ctk / -ctv):
 * their block size and the decoder the attention kernel reads them with (copy_rows.comp holds
 * the quantizer). KVQ names the type (its VKF_W_* code of vkf_abi.h; 0: none). A row is
 * addressed by the byte where one head's blocks begin; blocks are 2-byte aligned (34, 18, 20, 22, 24 bytes),
 * so halves and bytes are read out of 32-bit words.
 *
 * Before including: uint kvq_word(uint buf, uint i), word i of buffer buf (the includer's K and
 * V, say); the decoder is float kvq_at(uint buf, uint head_byte, uint e), element e of the head
 * whose blocks begin at head_byte. */
#ifndef KVQ
#define KVQ 0
#endif

/* bytes of a 32-element block (bf16: 64) */
#if KVQ == VKF_W_BF16
#define KVQ_BS 64u
#elif KVQ == VKF_W_Q8_0
#define KVQ_BS 34u
#elif KVQ == VKF_W_Q4_0 || KVQ == VKF_W_IQ4_NL
#define KVQ_BS 18u
#elif KVQ == VKF_W_Q4_1
#define KVQ_BS 20u
#elif KVQ == VKF_W_Q5_0
#define KVQ_BS 22u
#else
#define KVQ_BS 24u
#endif
/* bytes of a head of hd elements (a block type's: whole blocks) */
#if KVQ == VKF_W_BF16
#define KVQ_HEAD_BYTES(hd) ((hd)*2u)
#else
#define KVQ_HEAD_BYTES(hd) ((hd) / 32u * KVQ_BS)
#endif
#if KVQ == VKF_W_IQ4_NL
const float kvq_iq4[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0,
                                    13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);
#endif

#ifndef KVQ_NO_DECODER
#define KVQ_U16(b) ((kvq_word(buf, (b) >> 2) >> (((b)&2u) * 8u)) & 0xffffu)
#define KVQ_U8(b) ((kvq_word(buf, (b) >> 2) >> (((b)&3u) * 8u)) & 0xffu)

float kvq_at(uint buf, uint hb, uint e) {
#if KVQ == VKF_W_BF16
    return uintBitsToFloat(KVQ_U16(hb + 2u * e) << 16);
#else
    uint bb = hb + (e >> 5) * KVQ_BS, j = e & 31u;
    float d = unpackHalf2x16(KVQ_U16(bb)).x;
#if KVQ == VKF_W_Q8_0
    return d * float(int(KVQ_U8(bb + 2u + j) << 24) >> 24);
#elif KVQ == VKF_W_Q4_0
    return d * float(int((KVQ_U8(bb + 2u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u) - 8);
#elif KVQ == VKF_W_IQ4_NL
    return d * kvq_iq4[(KVQ_U8(bb + 2u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u];
#elif KVQ == VKF_W_Q4_1
    float m = unpackHalf2x16(KVQ_U16(bb + 2u)).x;
    return d * float((KVQ_U8(bb + 4u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u) + m;
#elif KVQ == VKF_W_Q5_0
    uint qh = KVQ_U16(bb + 2u) | (KVQ_U16(bb + 4u) << 16);
    uint q = ((KVQ_U8(bb + 6u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u) | (((qh >> j) & 1u) << 4);
    return d * float(int(q) - 16);
#else /* Q5_1 */
    float m = unpackHalf2x16(KVQ_U16(bb + 2u)).x;
    uint qh = KVQ_U16(bb + 4u) | (KVQ_U16(bb + 6u) << 16);
    uint q = ((KVQ_U8(bb + 8u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u) | (((qh >> j) & 1u) << 4);
    return d * float(q) + m;
#endif
#endif
}
#endif

#undef KVQ_U16
#undef KVQ_U8
