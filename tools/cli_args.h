/* SPDX-License-Identifier: Apache-2.0 */
/* Option parsing shared by the vg subcommands: one table per command, one set of messages.
 * Every error names the option and what it accepts (a range, or the values). */
#ifndef VG_CLI_ARGS_H
#define VG_CLI_ARGS_H

#include <stdint.h>

typedef enum vg_opt_kind {
    VG_OPT_FLAG,   /* int *: set to 1 */
    VG_OPT_STRING, /* const char **: the next argument */
    VG_OPT_INT,    /* int *: an integer in [lo, hi] */
    VG_OPT_I64,    /* int64_t *: an integer in [lo, hi] */
    VG_OPT_DOUBLE, /* double *: a number in [lo, hi] */
    VG_OPT_STRINGS /* vg_opt_strings *: the next argument, appended; the option may repeat */
} vg_opt_kind;

/* The values of an option given several times, in command-line order. */
typedef struct vg_opt_strings {
    const char **items; /* room for max values */
    int count, max;
} vg_opt_strings;

typedef struct vg_opt {
    const char *name; /* "--iters" */
    vg_opt_kind kind;
    void *out;
    double lo, hi;    /* numbers: the allowed range */
    const char *what; /* strings: what the value is, for messages ("a model directory") */
} vg_opt;

#define VG_OPT_HELP (-1) /* the help was printed: exit 0 */

/* Parse argv[first..argc) against opts. "--help" or "-h" anywhere prints `help` to stdout and
 * returns VG_OPT_HELP; an unknown option, a missing value or one out of range prints
 * "vg <cmd>: ..." to stderr and returns 2; 0 when everything parsed. */
int vg_opt_parse(const char *cmd, const char *help, const vg_opt *opts, int nopts, int argc,
                 char **argv, int first);

#endif
