/* SPDX-License-Identifier: Apache-2.0 */
/* Opening the text files a command reads line by line (--peer, --stream-from). A regular file
 * opens as usual; a FIFO or a pipe (`--peer <(cat a b)`) is read as it comes, and when nothing
 * has come within a moment vg says that it waits for it (opening a FIFO without one blocks
 * silently); anything else (a directory, a device such as /dev/zero that never ends) is refused
 * by name before it is read. Their lines are JSON values, parsed strictly here. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vg_cli.h"

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m) ? "it is a directory" : S_ISCHR(m) ? "not a regular file (a character device)"
         : S_ISBLK(m) ? "not a regular file (a block device)" : S_ISSOCK(m) ? "not a regular file (a socket)"
                      : "not a regular file";
}

FILE *vg_cli_open_text(const char *cmd, const char *path, char *why, size_t cap)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, cap, "%s", strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
        snprintf(why, cap, "%s", kind_of(st.st_mode));
        return NULL;
    }
    int fd = open(path, O_RDONLY | (S_ISFIFO(st.st_mode) ? O_NONBLOCK : 0));
    if (fd >= 0 && S_ISFIFO(st.st_mode)) {
        /* opened without blocking: wait here, with a word, for the first data (or a writer that
         * came and went), then read blocking to the end */
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 200) == 0) {
            fprintf(stderr, "vg %s: waiting for data on the FIFO %s (nothing written to it yet)\n", cmd,
                    path);
            while (poll(&p, 1, -1) < 0 && errno == EINTR) {}
        }
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
            close(fd);
            fd = -1;
        }
    }
    FILE *fp = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!fp) {
        snprintf(why, cap, "%s", strerror(errno));
        if (fd >= 0) close(fd);
    }
    return fp;
}

int vg_cli_blank(const char *line)
{
    return line[strspn(line, " \t\r\n")] == '\0';
}

cJSON *vg_cli_json_line(const char *line)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithOpts(line, &end, 0);
    if (j && end && !vg_cli_blank(end)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

int vg_cli_json_whole(const cJSON *v, double lo, double hi)
{
    return cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= hi &&
           v->valuedouble == floor(v->valuedouble);
}
