/* SPDX-License-Identifier: Apache-2.0 */
/* vg: the command-line front end. Subcommands live in cmd_*.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg_cli.h"

static const vg_cli_command k_commands[] = {
    {"info", "list backends, their devices and capabilities", vg_cmd_info},
    {"bench", "measure launch and replay costs on a backend", vg_cmd_bench},
    {"vit", "run a vision encoder (vg vit encode ...)", vg_cmd_vit},
    {"lm", "run a language model (vg lm generate ...)", vg_cmd_lm},
};

static void vfail(const char *cmd, const char *fmt, va_list ap)
{
    fprintf(stderr, "vg %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int vg_cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(cmd, fmt, ap);
    va_end(ap);
    return 1;
}

int vg_cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(cmd, fmt, ap);
    va_end(ap);
    return 2;
}

int vg_cli_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

const char *vg_cli_bytes(unsigned long long bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) v /= 1024.0, u++;
    snprintf(buf, cap, u ? "%.2f %s" : "%.0f %s", v, units[u]);
    return buf;
}

int vg_cli_print_json(cJSON *doc, int indented)
{
    char *text = !doc ? NULL : indented ? cJSON_Print(doc) : cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (!text) return vg_cli_fail("json", "out of memory");
    puts(text);
    free(text);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: vg <command> [options]\n       vg --version\n\ncommands:\n");
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        fprintf(f, "  %-8s %s\n", k_commands[i].name, k_commands[i].summary);
    fprintf(f, "\n'vg <command> --help' describes a command. Environment: VG_BACKEND (name or\n"
               "path of a backend), VG_BACKEND_PATH (plugin directories), VG_LOG_LEVEL.\n");
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (vg_cli_is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        uint32_t major = 0, minor = 0;
        vg_abi_version(&major, &minor);
        printf("vg %s (plugin ABI %u.%u)\n", VG_VERSION_STRING, major, minor);
        return 0;
    }
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        if (strcmp(argv[1], k_commands[i].name) == 0) return k_commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "vg: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    int rc = dispatch(argc, argv);
    /* what went to stdout was asked for too: a full disk or a closed pipe is a failure */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "vg: cannot write standard output: %s\n", strerror(errno));
        return rc ? rc : 1;
    }
    return rc;
}
