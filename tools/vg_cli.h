/* Shared pieces of the vg command's subcommands. */
#ifndef VG_CLI_H
#define VG_CLI_H

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
int vg_vit_bench(int argc, char **argv);
int vg_bench_runner(vg_runtime *rt, int ops, int iters, int json);

/* Print "vg <cmd>: <message>" (plus vg_last_error() when with_last) to stderr; returns 1. */
int vg_cli_fail(const char *cmd, const char *fmt, ...) VG_PRINTF(2, 3);
int vg_cli_is_help(const char *arg);
/* Format bytes as "1.50 GiB". */
const char *vg_cli_bytes(unsigned long long bytes, char *buf, size_t cap);

#endif
