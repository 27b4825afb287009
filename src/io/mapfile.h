/* Read-only memory mapping of a whole file: the loaders slice tensors out of it by pointer. */
#ifndef VKF_IO_MAPFILE_H
#define VKF_IO_MAPFILE_H

#include <stddef.h>
#include <stdint.h>

#include "vkformer.h"

typedef struct vkf_mapfile {
    const uint8_t *data; /* the file's bytes; NULL when size == 0 */
    size_t size;         /* bytes */
} vkf_mapfile;

/* Maps path read-only. Fails with VKF_ERROR_IO naming the path and the system error. An empty
 * file maps to {NULL, 0}. The mapping stays valid if the file is unlinked afterwards. */
vkf_status vkf_mapfile_open(const char *path, vkf_mapfile *out);

/* How vkf_mapfile_open_ex brings the file into memory. */
typedef enum vkf_map_mode {
    VKF_MAP_MMAP = 0, /* a read-only file mapping (pages come from the page cache on demand) */
    VKF_MAP_READ,     /* read into anonymous, page-aligned memory (llama.cpp's --no-mmap): the
                         bytes stay resident and no longer depend on the file */
} vkf_map_mode;

/* As vkf_mapfile_open, in the given mode. Either way data is page-aligned and released by
 * vkf_mapfile_close. */
vkf_status vkf_mapfile_open_ex(const char *path, vkf_map_mode mode, vkf_mapfile *out);
/* Unmaps; safe on a zeroed struct. Resets *m to {NULL, 0}. */
void vkf_mapfile_close(vkf_mapfile *m);

#endif
