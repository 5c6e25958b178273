/* SPDX-License-Identifier: Apache-2.0 */
/* Shared pieces of the vg command's subcommands. */
#ifndef VG_CLI_H
#define VG_CLI_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "vg/vg.h"

typedef struct vg_cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
} vg_cli_command;

int vg_cmd_info(int argc, char **argv);
int vg_cmd_bench(int argc, char **argv);
int vg_cmd_vit(int argc, char **argv);
int vg_cmd_vit_encode(int argc, char **argv);
int vg_cmd_vit_bench(int argc, char **argv);
int vg_cmd_lm(int argc, char **argv);
int vg_cmd_lm_generate(int argc, char **argv);
int vg_cmd_lm_bench(int argc, char **argv);
int vg_bench_launch(vg_runtime *rt, int kernels, int elems, int iters, int json);
int vg_bench_runner(vg_runtime *rt, int ops, int iters, int json);
/* vg bench ipc: its own processes, so it opens no runtime here (argv[1] is "ipc") */
int vg_cmd_bench_ipc(int argc, char **argv);

/* Print "vg <cmd>: <message>" to stderr; returns 1 (a failure), or 2 for vg_cli_usage (a
 * wrong command line). */
int vg_cli_fail(const char *cmd, const char *fmt, ...) VG_PRINTF(2, 3);
int vg_cli_usage(const char *cmd, const char *fmt, ...) VG_PRINTF(2, 3);
int vg_cli_is_help(const char *arg);
/* A text file to read line by line: a regular file, or a FIFO or pipe (after saying on stderr
 * that vg waits when nothing has been written to it yet); NULL with the reason in why (a
 * directory, a device) otherwise. */
FILE *vg_cli_open_text(const char *cmd, const char *path, char *why, size_t cap);
/* Whether a line of a text file holds nothing but whitespace (skipped in JSON-lines files). */
int vg_cli_blank(const char *line);
/* The JSON value of one line of a JSON-lines file, with nothing after it but whitespace
 * (cJSON_Parse stops after the first value, so "{...}{...}" would silently lose the second):
 * the value (cJSON_Delete it), or NULL. */
cJSON *vg_cli_json_line(const char *line);
/* Whether v is a number with a whole value in [lo, hi] (checked before any cast to an integer). */
int vg_cli_json_whole(const cJSON *v, double lo, double hi);
/* Format bytes as "1.50 GiB". */
const char *vg_cli_bytes(unsigned long long bytes, char *buf, size_t cap);
/* Print the command's one JSON document on stdout, indented or on one line, and delete it: 0,
 * or 1 when out of memory. */
int vg_cli_print_json(cJSON *doc, int indented);

#endif
