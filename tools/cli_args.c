/* SPDX-License-Identifier: Apache-2.0 */
#include "cli_args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg_cli.h"

/* "an integer in [1, 100000]", "a number in [0, 1e+06]", or the option's own description. */
static const char *accepts(const vg_opt *o, char *buf, size_t cap)
{
    if (o->kind == VG_OPT_INT || o->kind == VG_OPT_I64)
        snprintf(buf, cap, "an integer in [%.0f, %.0f]", o->lo, o->hi);
    else if (o->kind == VG_OPT_DOUBLE)
        snprintf(buf, cap, "a number in [%g, %g]", o->lo, o->hi);
    else
        snprintf(buf, cap, "%s", o->what ? o->what : "a value");
    return buf;
}

static int set_value(const char *cmd, const vg_opt *o, const char *v)
{
    if (o->kind == VG_OPT_STRING) {
        *(const char **)o->out = v;
        return 0;
    }
    if (o->kind == VG_OPT_STRINGS) {
        vg_opt_strings *list = o->out;
        if (list->count == list->max)
            return vg_cli_usage(cmd, "%s may be given at most %d times", o->name, list->max);
        list->items[list->count++] = v;
        return 0;
    }
    char *end = NULL, buf[96];
    errno = 0;
    double x = o->kind == VG_OPT_DOUBLE ? strtod(v, &end) : (double)strtoll(v, &end, 10);
    if (!*v || *end || errno || !isfinite(x) || x < o->lo || x > o->hi)
        return vg_cli_usage(cmd, "%s wants %s, got '%s'", o->name, accepts(o, buf, sizeof buf), v);
    if (o->kind == VG_OPT_INT) *(int *)o->out = (int)x;
    else if (o->kind == VG_OPT_I64) *(int64_t *)o->out = strtoll(v, NULL, 10);
    else *(double *)o->out = x;
    return 0;
}

int vg_opt_parse(const char *cmd, const char *help, const vg_opt *opts, int nopts, int argc,
                 char **argv, int first)
{
    for (int i = first; i < argc; i++)
        if (vg_cli_is_help(argv[i])) {
            fputs(help, stdout);
            return VG_OPT_HELP;
        }
    for (int i = first; i < argc; i++) {
        const vg_opt *o = NULL;
        for (int k = 0; k < nopts && !o; k++)
            if (!strcmp(argv[i], opts[k].name)) o = &opts[k];
        if (!o) {
            char names[512] = "";
            for (int k = 0; k < nopts; k++)
                snprintf(names + strlen(names), sizeof names - strlen(names), " %s", opts[k].name);
            return vg_cli_usage(cmd, "unknown option '%s'; the options are%s (see vg %s --help)",
                                argv[i], names, cmd);
        }
        if (o->kind == VG_OPT_FLAG) {
            *(int *)o->out = 1;
            continue;
        }
        char buf[96];
        if (i + 1 == argc) return vg_cli_usage(cmd, "%s needs a value: %s", o->name, accepts(o, buf, sizeof buf));
        if (set_value(cmd, o, argv[++i])) return 2;
    }
    return 0;
}

int vg_int_list_parse(const char *text, const vg_int_list *rule, int64_t *out, const char **stop,
                      char *why, size_t cap)
{
    int n = 0;
    const char *p = text;
    for (;;) {
        const char *q = p;
        int64_t v = 0;
        int big = 0;
        while (*q >= '0' && *q <= '9') {
            big |= v > (INT64_MAX - (*q - '0')) / 10;
            if (!big) v = v * 10 + (*q - '0');
            q++;
        }
        int ended = !*q || *q == ',' || (rule->end && *q == rule->end);
        if (q == p && ended) {
            snprintf(why, cap, "item %d is empty", n + 1);
            return -1;
        }
        if (q == p || !ended) {
            size_t len = strcspn(p, rule->end ? (char[]){',', rule->end, 0} : ",");
            snprintf(why, cap, "'%.*s' is not an integer", (int)(len < 40 ? len : 40), p);
            return -1;
        }
        if (big || v < rule->lo || v > rule->hi) {
            snprintf(why, cap, "%.*s is not in [%lld, %lld]", (int)(q - p < 40 ? q - p : 40), p,
                     (long long)rule->lo, (long long)rule->hi);
            return -1;
        }
        if (rule->ascending && n && v <= out[n - 1]) {
            snprintf(why, cap, "%lld is not above %lld: the list must ascend", (long long)v,
                     (long long)out[n - 1]);
            return -1;
        }
        if (n == rule->max) {
            snprintf(why, cap, "more than %d items", rule->max);
            return -1;
        }
        out[n++] = v;
        if (*q != ',') {
            if (stop) *stop = q;
            return n;
        }
        p = q + 1;
    }
}

int vg_capture_sizes_parse(const char *cmd, const char *text, int64_t *sizes, int *n)
{
    const vg_int_list rule = {1, INT32_MAX, 1, VG_CLI_MAX_CAPTURE_SIZES, 0};
    char why[96];
    *n = vg_int_list_parse(text, &rule, sizes, NULL, why, sizeof why);
    if (*n < 0)
        return vg_cli_usage(cmd, "--capture-sizes wants up to %d positive integers in ascending order, "
                                 "separated by commas, got '%s': %s", VG_CLI_MAX_CAPTURE_SIZES, text, why);
    return 0;
}
