/* SPDX-License-Identifier: Apache-2.0 */
#include "cli_output.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vg_cli.h"

/* "a/b/c" -> "a/b", "c" -> ".", "/c" -> "/" (malloc'd). */
static char *dir_of(const char *p)
{
    const char *slash = strrchr(p, '/');
    if (!slash) return strdup(".");
    size_t n = slash == p ? 1 : (size_t)(slash - p);
    char *d = malloc(n + 1);
    if (d) memcpy(d, p, n), d[n] = '\0';
    return d;
}

/* Follow symbolic links (a dangling last one too) to the name that is finally written. */
static char *resolve(const char *path)
{
    char *p = strdup(path);
    errno = 0;
    for (int hops = 0; p && hops < 40; hops++) {
        struct stat st;
        if (lstat(p, &st) != 0) {
            if (errno == ENOENT) return p; /* a new file */
            break;
        }
        if (!S_ISLNK(st.st_mode)) return p;
        char link[PATH_MAX];
        ssize_t n = readlink(p, link, sizeof link - 1);
        if (n < 0) break;
        link[n] = '\0';
        char *dir = link[0] == '/' ? NULL : dir_of(p), *next = malloc(strlen(link) + (dir ? strlen(dir) : 0) + 2);
        if (next) sprintf(next, "%s%s%s", dir ? dir : "", dir ? "/" : "", link);
        free(dir);
        free(p);
        p = next;
    }
    if (p && errno == 0) errno = ELOOP;
    free(p);
    return NULL;
}

/* The descriptor number of /dev/fd/N or /proc/self/fd/N, open or not; -1 for other names. */
static long fd_name(const char *path)
{
    const char *num = !strncmp(path, "/dev/fd/", 8)          ? path + 8
                      : !strncmp(path, "/proc/self/fd/", 14) ? path + 14
                                                             : NULL;
    if (!num || *num < '0' || *num > '9') return -1;
    char *end = NULL;
    long n = strtol(num, &end, 10);
    return *end || n > INT_MAX ? -1 : n;
}

/* N when path names a descriptor this process already holds (/dev/stdout, /dev/stderr,
 * /dev/fd/N, /proc/self/fd/N), else -1. Such a name must be written through that descriptor:
 * when stdout is redirected to a file, /dev/stdout resolves to the file, and replacing it by a
 * rename would drop what the shell wrote there before (and after). */
static int inherited_fd(const char *path)
{
    if (!strcmp(path, "/dev/stdout")) return 1;
    if (!strcmp(path, "/dev/stderr")) return 2;
    long n = fd_name(path);
    return n < 0 || fcntl((int)n, F_GETFD) < 0 ? -1 : (int)n;
}

static int fail(const vg_out *o, const char *why)
{
    return vg_cli_fail(o->cmd, "cannot write %s: %s", o->path, why);
}

/* A file can be created beside target and renamed over it: made and removed at once, so that a
 * directory that vanished, a read-only or pseudo file system (/proc) fails before the work. */
static int probe_dir(const vg_out *o, const char *dir)
{
    const char *base = strrchr(o->target, '/');
    char *tmp = malloc(strlen(dir) + strlen(base ? base + 1 : o->target) + 16);
    if (!tmp) return fail(o, "out of memory");
    sprintf(tmp, "%s/.%s.vg-XXXXXX", dir, base ? base + 1 : o->target);
    int fd = mkstemp(tmp), e = errno;
    if (fd >= 0) close(fd), unlink(tmp);
    free(tmp);
    if (fd >= 0) return 0;
    char why[PATH_MAX + 64];
    snprintf(why, sizeof why, "cannot create a file in %s: %s", dir, strerror(e));
    return fail(o, why);
}

/* Decide how to write: fills o->target and sets *through for devices and FIFOs. *mode is the
 * mode for a new file. 0, or 1 after the message. */
static int plan(vg_out *o, int *through, mode_t *mode)
{
    struct stat st;
    *through = 0;
    if (!*o->path) return vg_cli_fail(o->cmd, "cannot write '': the name is empty");
    if (inherited_fd(o->path) >= 0) {
        *through = 1;
        return 0;
    }
    if (fd_name(o->path) >= 0) {
        char why[64];
        snprintf(why, sizeof why, "descriptor %ld is not open", fd_name(o->path));
        return fail(o, why);
    }
    if (stat(o->path, &st) == 0) {
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
            *through = 1;
            if (access(o->path, W_OK) != 0) return fail(o, strerror(errno));
            return 0;
        }
        if (S_ISDIR(st.st_mode)) return fail(o, "it is a directory");
        if (!S_ISREG(st.st_mode)) return fail(o, "not a regular file, character device or FIFO");
        if (access(o->path, W_OK) != 0) return fail(o, strerror(errno));
        *mode = st.st_mode & 07777;
    } else if (errno != ENOENT) {
        return fail(o, strerror(errno));
    } else {
        mode_t mask = umask(0);
        umask(mask);
        *mode = 0666 & ~mask;
    }
    o->target = resolve(o->path);
    if (!o->target) return fail(o, strerror(errno));
    char *dir = dir_of(o->target);
    if (!dir) return fail(o, "out of memory");
    int rc = 0;
    char why[PATH_MAX + 64];
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT) snprintf(why, sizeof why, "directory %s does not exist", dir);
        else snprintf(why, sizeof why, "directory %s: %s", dir, strerror(errno));
        rc = fail(o, why);
    } else if (!S_ISDIR(st.st_mode)) {
        snprintf(why, sizeof why, "%s is not a directory", dir);
        rc = fail(o, why);
    } else if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, sizeof why, "directory %s: %s", dir, strerror(errno));
        rc = fail(o, why);
    }
    free(dir);
    return rc;
}

int vg_out_check(const char *cmd, const char *path)
{
    vg_out o = {.cmd = cmd, .path = path};
    int through;
    mode_t mode;
    int rc = plan(&o, &through, &mode);
    char *dir = !rc && !through ? dir_of(o.target) : NULL;
    if (!rc && !through) rc = dir ? probe_dir(&o, dir) : fail(&o, "out of memory");
    free(dir);
    free(o.target);
    return rc;
}

int vg_out_check_distinct(const char *cmd, const char *out_opt, const char *path, const char *opt,
                          const char *other)
{
    struct stat a, b;
    if (!other || stat(path, &a) != 0 || stat(other, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        return 0;
    return vg_cli_usage(cmd, "%s %s is the same file as %s %s: it would be replaced; write the "
                             "output elsewhere", out_opt, path, opt, other);
}

int vg_out_check_not_in(const char *cmd, const char *path, const char *dir)
{
    struct stat a, b;
    DIR *d = path && dir && stat(path, &a) == 0 && S_ISREG(a.st_mode) ? opendir(dir) : NULL;
    if (!d) return 0;
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        char *p = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!p) break;
        sprintf(p, "%s/%s", dir, e->d_name);
        if (stat(p, &b) == 0 && S_ISREG(b.st_mode) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            rc = vg_cli_usage(cmd, "--output %s is the model's file %s: it would be replaced; write the "
                                   "output elsewhere", path, p);
        free(p);
    }
    closedir(d);
    return rc;
}

int vg_out_check_result(const char *cmd, const char *path, const char *model, const char *input,
                        const char *expected)
{
    int rc = vg_out_check_distinct(cmd, "--output", path, "--expected", expected);
    if (!rc) rc = vg_out_check_distinct(cmd, "--output", path, "--input", input);
    if (!rc) rc = vg_out_check_not_in(cmd, path, model);
    return rc ? rc : vg_out_check(cmd, path);
}

int vg_out_divert_stdout(const char *path)
{
    struct stat a, b;
    int same = inherited_fd(path) == 1 ||
               (stat(path, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 && !S_ISCHR(a.st_mode) &&
                a.st_dev == b.st_dev && a.st_ino == b.st_ino);
    if (!same) return 0;
    fflush(stdout);
    return dup2(STDERR_FILENO, STDOUT_FILENO) >= 0;
}

int vg_out_open(vg_out *o, const char *cmd, const char *path)
{
    *o = (vg_out){.cmd = cmd, .path = path};
    int through, fd;
    mode_t mode;
    if (plan(o, &through, &mode)) {
        vg_out_abort(o);
        return 1;
    }
    int inherited = inherited_fd(path);
    if (inherited >= 0) {
        fd = dup(inherited); /* the descriptor as the shell set it up (O_APPEND included) */
    } else if (through) {
        /* no O_CREAT, no O_TRUNC: a device or a FIFO stays one. A FIFO nobody reads would block
         * the open silently: tried without blocking first, to say what vg waits for */
        fd = open(path, O_WRONLY | O_NONBLOCK);
        if (fd < 0 && errno == ENXIO) {
            fprintf(stderr, "vg %s: waiting for a reader of the FIFO %s\n", cmd, path);
            fd = open(path, O_WRONLY);
        } else if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
            close(fd);
            fd = -1;
        }
    } else {
        const char *base = strrchr(o->target, '/');
        char *dir = dir_of(o->target);
        o->tmp = dir ? malloc(strlen(o->target) + 16) : NULL;
        if (o->tmp) sprintf(o->tmp, "%s/.%s.vg-XXXXXX", dir, base ? base + 1 : o->target);
        free(dir);
        if (!o->tmp) {
            vg_out_abort(o);
            return fail(o, "out of memory");
        }
        fd = mkstemp(o->tmp);
        if (fd < 0) {
            free(o->tmp); /* nothing was created */
            o->tmp = NULL;
        } else if (fchmod(fd, mode) != 0) {
            close(fd);
            fd = -1;
        }
    }
    o->fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!o->fp) {
        int e = errno;
        if (fd >= 0) close(fd);
        vg_out_abort(o);
        return fail(o, strerror(e));
    }
    errno = 0; /* so that commit reports the error of a failed write, not an older one */
    return 0;
}

int vg_out_commit(vg_out *o)
{
    int e = 0;
    if (fflush(o->fp) != 0) e = errno;
    else if (ferror(o->fp)) e = errno ? errno : EIO; /* an earlier write failed (errno was
                                                         cleared when the file was opened) */
    if (!e && o->tmp && fsync(fileno(o->fp)) != 0) e = errno;
    if (fclose(o->fp) != 0 && !e) e = errno;
    o->fp = NULL;
    if (!e && o->tmp && rename(o->tmp, o->target) != 0) e = errno;
    if (e) {
        vg_out_abort(o);
        return fail(o, strerror(e));
    }
    free(o->tmp);
    free(o->target);
    o->tmp = o->target = NULL;
    return 0;
}

void vg_out_abort(vg_out *o)
{
    if (o->fp) fclose(o->fp);
    if (o->tmp) unlink(o->tmp);
    free(o->tmp);
    free(o->target);
    o->fp = NULL;
    o->tmp = o->target = NULL;
}
