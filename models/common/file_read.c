/* SPDX-License-Identifier: Apache-2.0 */
/* Regular files only, checked on the descriptor (no window between a check and the open). */
#include "file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vg/vg.h"

static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a plain file";
}

vg_status vg_file_open_read(const char *path, int *fd_out, size_t *size)
{
    /* O_NONBLOCK: a FIFO opens at once instead of waiting for a writer, and is then refused */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return vg_error_set(errno == ENOENT ? VG_ERR_NOT_FOUND : VG_ERR_IO, "%s: cannot open: %s",
                            path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return vg_error_set(VG_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return vg_error_set(VG_ERR_IO, "%s: not a regular file (%s)", path, kind_of(sb.st_mode));
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    *fd_out = fd;
    *size = (size_t)sb.st_size;
    return VG_OK;
}

vg_status vg_file_read_text(const char *path, size_t limit, char **text, size_t *len)
{
    int fd;
    size_t size;
    vg_status st = vg_file_open_read(path, &fd, &size);
    if (st != VG_OK) return st;
    if (size > limit) {
        close(fd);
        return vg_error_set(VG_ERR_FORMAT, "%s: %zu bytes, larger than the accepted %zu", path,
                            size, limit);
    }
    char *buf = malloc(size + 1);
    size_t n = 0;
    while (buf && n < size) { /* the file may shrink meanwhile: stop at its end */
        ssize_t r = read(fd, buf + n, size - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            free(buf);
            return vg_error_set(VG_ERR_IO, "%s: read failed: %s", path, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    buf[n] = '\0';
    *text = buf;
    if (len) *len = n;
    return VG_OK;
}
