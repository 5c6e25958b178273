/* SPDX-License-Identifier: Apache-2.0 */
/* Option parsing shared by the vg subcommands: one table per command, one set of messages.
 * Every error names the option and what it accepts (a range, or the values). */
#ifndef VG_CLI_ARGS_H
#define VG_CLI_ARGS_H

#include <stddef.h>
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

/* A comma list of integers, "1,2,3": one rule for every list option (--capture-sizes, --batch,
 * --prompt-ids). Items are decimal integers without sign or spaces in [lo, hi]; no item is empty
 * (no "1,,2", no trailing comma); with `ascending` each is larger than the one before. */
typedef struct vg_int_list {
    int64_t lo, hi;
    int ascending;
    int max;  /* items at most */
    char end; /* a character that ends the list like the string's end (';' between prompts), or 0 */
} vg_int_list;

/* Parse the list at the start of text into out (room for rule->max): the number of items
 * (>= 1), *stop (may be NULL) pointing at what ended it ('\0' or rule->end); -1 with what is
 * wrong in why ("item 4 is empty", "8 is not above 8: the sizes must ascend"). */
int vg_int_list_parse(const char *text, const vg_int_list *rule, int64_t *out, const char **stop,
                      char *why, size_t cap);

#define VG_CLI_MAX_CAPTURE_SIZES 256

/* --capture-sizes of the commands that take token counts: up to VG_CLI_MAX_CAPTURE_SIZES
 * positive ascending integers into sizes, their number into *n; 0, or 2 after the usage message. */
int vg_capture_sizes_parse(const char *cmd, const char *text, int64_t *sizes, int *n);

#endif
