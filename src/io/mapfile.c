#include "io/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

/* Reads fd's size bytes into a fresh anonymous mapping (page-aligned, so a device may import it).
 */
static vkf_status map_read(const char *path, int fd, size_t size, void **out) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return vkf_error(VKF_ERROR_OUT_OF_MEMORY,
                         "%s: cannot allocate %zu bytes to read the file into: %s", path, size,
                         strerror(errno));
    for (size_t done = 0; done < size;) {
        size_t k = size - done < ((size_t)1 << 30) ? size - done : ((size_t)1 << 30);
        ssize_t r = pread(fd, (char *)p + done, k, (off_t)done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            munmap(p, size);
            return vkf_error(VKF_ERROR_IO, "%s: read failed at byte %zu of %zu: %s", path, done,
                             size, e ? strerror(e) : "unexpected end of file");
        }
        done += (size_t)r;
    }
    *out = p;
    return VKF_OK;
}

vkf_status vkf_mapfile_open(const char *path, vkf_mapfile *out) {
    return vkf_mapfile_open_ex(path, VKF_MAP_MMAP, out);
}

vkf_status vkf_mapfile_open_ex(const char *path, vkf_map_mode mode, vkf_mapfile *out) {
    out->data = NULL;
    out->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return vkf_error(VKF_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return vkf_error(VKF_ERROR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return vkf_error(VKF_ERROR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size == 0) { /* mmap of length 0 is EINVAL; an empty file is a valid (empty) map */
        close(fd);
        return VKF_OK;
    }
    if ((uint64_t)sb.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return vkf_error(VKF_ERROR_IO, "%s: file too large to map (%lld bytes)", path,
                         (long long)sb.st_size);
    }
    if (mode == VKF_MAP_READ) {
        void *p = NULL;
        vkf_status s = map_read(path, fd, (size_t)sb.st_size, &p);
        close(fd);
        if (s != VKF_OK) return s;
        out->data = p;
        out->size = (size_t)sb.st_size;
        return VKF_OK;
    }
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd); /* the mapping keeps its own reference to the file */
    if (p == MAP_FAILED)
        return vkf_error(VKF_ERROR_IO, "%s: mmap of %lld bytes failed: %s", path,
                         (long long)sb.st_size, strerror(e));
    out->data = p;
    out->size = (size_t)sb.st_size;
    return VKF_OK;
}

void vkf_mapfile_close(vkf_mapfile *m) {
    if (m->data) munmap((void *)m->data, m->size);
    m->data = NULL;
    m->size = 0;
}
