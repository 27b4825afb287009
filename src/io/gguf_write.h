/* GGUF writer (version 3, little-endian): metadata key/values (new, or copied from a vkf_gguf),
 * tensor infos, then the tensor data streamed tensor by tensor, each aligned to
 * general.alignment (default 32) with zero padding, as ggml's gguf writer lays files out.
 *
 * Usage:
 *     vkf_gguf_writer *w;
 *     VKF_TRY(vkf_gguf_writer_create(&w));
 *     vkf_gguf_writer_copy_kv(w, vkf_gguf_kv_at(src, i));        // every key of a source file
 *     vkf_gguf_writer_set_u32(w, "general.file_type", 15);        // replaces: moves to the end
 *     vkf_gguf_writer_add_tensor(w, "blk.0.attn_q.weight", 12, 2, ne, nbytes);
 *     VKF_TRY(vkf_gguf_writer_begin(w, "out.gguf"));             // writes the header
 *     vkf_gguf_writer_write(w, data, nbytes);                     // once per tensor, in order
 *     VKF_TRY(vkf_gguf_writer_finish(w));                         // renames out.gguf.part
 *     vkf_gguf_writer_free(w);                                    // removes a partial file
 */
#ifndef VKF_IO_GGUF_WRITE_H
#define VKF_IO_GGUF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "io/gguf.h"

typedef struct vkf_gguf_writer vkf_gguf_writer;

vkf_status vkf_gguf_writer_create(vkf_gguf_writer **out);
/* Frees w; a file begun and not finished is removed. */
void vkf_gguf_writer_free(vkf_gguf_writer *w);

/* Metadata. Setting a key that exists removes the old entry and appends the new one (ggml's
 * gguf_set_* order). copy_kv copies a key of a reader with its value (any type, nested arrays). */
vkf_status vkf_gguf_writer_copy_kv(vkf_gguf_writer *w, const vkf_gguf_kv *kv);
vkf_status vkf_gguf_writer_set_u32(vkf_gguf_writer *w, const char *key, uint32_t v);
vkf_status vkf_gguf_writer_set_str(vkf_gguf_writer *w, const char *key, const char *v);
vkf_status vkf_gguf_writer_set_f32(vkf_gguf_writer *w, const char *key, float v);
vkf_status vkf_gguf_writer_set_bool(vkf_gguf_writer *w, const char *key, int v);
/* Arrays: n strings (lens[i] bytes each, or strlen when lens is NULL); n int32. */
vkf_status vkf_gguf_writer_set_arr_str(vkf_gguf_writer *w, const char *key, const char *const *strs,
                                       const size_t *lens, uint64_t n);
vkf_status vkf_gguf_writer_set_arr_i32(vkf_gguf_writer *w, const char *key, const int32_t *v,
                                       uint64_t n);
void vkf_gguf_writer_remove_kv(vkf_gguf_writer *w, const char *key);

/* A tensor: name, ggml type number, dims in ggml order (ne[0] = row length) and its data size. */
vkf_status vkf_gguf_writer_add_tensor(vkf_gguf_writer *w, const char *name, uint32_t ggml_type,
                                      int n_dims, const int64_t *ne, uint64_t nbytes);

/* Opens path.part and writes the header, metadata and tensor infos. */
vkf_status vkf_gguf_writer_begin(vkf_gguf_writer *w, const char *path);
/* The next tensor's data: exactly its nbytes, in the order the tensors were added. */
vkf_status vkf_gguf_writer_write(vkf_gguf_writer *w, const void *data, uint64_t nbytes);
/* Checks every tensor was written, flushes, closes and renames path.part to path. */
vkf_status vkf_gguf_writer_finish(vkf_gguf_writer *w);
/* Total bytes of the file (valid after begin). */
uint64_t vkf_gguf_writer_file_size(const vkf_gguf_writer *w);

#endif
