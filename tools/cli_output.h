/* SPDX-License-Identifier: Apache-2.0 */
/* Writing an output file the user named, without ever destroying what the name points at.
 *
 *   regular file or new path  written to a temporary file in the same directory, fsync'd, then
 *                             renamed over it: readers see the old file or the whole new one
 *   symbolic link             resolved (a chain too, a dangling one included); the file it
 *                             points to is written as above, the link stays a link
 *   /dev/stdout, /dev/stderr, written through that descriptor of this process, never reopened:
 *   /dev/fd/N, /proc/self/fd/N  stdout redirected to a file stays that file, appended as set up
 *   character device, FIFO    written through (/dev/null, a pipe); never replaced; a FIFO
 *                             without a reader: "waiting for a reader" on stderr, then blocks
 *   directory, anything else  refused with a message
 *
 * Every failure (a missing directory, a full disk, a close that fails) is reported as
 * "vg <cmd>: cannot write PATH: reason", naming the path as the user gave it. */
#ifndef VG_CLI_OUTPUT_H
#define VG_CLI_OUTPUT_H

#include <stdio.h>

typedef struct vg_out {
    const char *cmd;  /* for messages */
    const char *path; /* as the user gave it */
    char *target;     /* the file written in the end: path with its links resolved */
    char *tmp;        /* the temporary beside target; NULL when writing through */
    FILE *fp;         /* write here between open and commit */
} vg_out;

/* Whether path can be written, checked before long work (a file is created beside it and
 * removed): 0, or 1 after printing why not. */
int vg_out_check(const char *cmd, const char *path);
/* 0, or 2 after a usage message when path (an output, given with option out_opt) and `other` (an
 * input, given with option opt; may be NULL) are one file, by device and inode: through links too. */
int vg_out_check_distinct(const char *cmd, const char *out_opt, const char *path, const char *opt,
                          const char *other);
/* 0, or 2 after a usage message when path is one of the regular files of directory dir (the
 * model's weights or configuration), by device and inode. */
int vg_out_check_not_in(const char *cmd, const char *path, const char *dir);
/* The checks above for a command's --output beside its --model directory, --input and --expected
 * reference (either may be NULL), in that order: 0, or the first one's exit code after its
 * message. */
int vg_out_check_result(const char *cmd, const char *path, const char *model, const char *input,
                        const char *expected);
/* When path is this process's standard output (/dev/stdout, /dev/fd/1, the file or pipe stdout
 * is), point stdout at stderr: the text printed after the binary output must not follow it
 * there. Call after the output is committed. 1 when diverted. */
int vg_out_divert_stdout(const char *path);
/* 0 with o->fp ready, or 1 after printing why not. */
int vg_out_open(vg_out *o, const char *cmd, const char *path);
/* Flush, sync, close and move into place: 0, or 1 after printing why not (the temporary is
 * removed then). */
int vg_out_commit(vg_out *o);
/* Drop what was written (a no-op on a closed vg_out). */
void vg_out_abort(vg_out *o);

#endif
