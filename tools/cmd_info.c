/* SPDX-License-Identifier: Apache-2.0 */
/* vg info: what each backend is, whether it loaded, its auto-selection score, and what its
 * devices offer. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "vg_cli.h"

static const char k_help[] =
    "usage: vg info [--json] [--backend NAME|PATH]\n"
    "\n"
    "Without --backend and with VG_BACKEND unset, every candidate of auto-selection (the builtin\n"
    "backends cuda, hip, opencl and kunlun_stub, and each libvg_<name>.so on VG_BACKEND_PATH) is\n"
    "probed, with its score, and the one auto-selection picks is named: the usable one with the\n"
    "highest score. With a backend named (option or VG_BACKEND), only that one is probed, and the\n"
    "exit status is non-zero when it cannot be loaded or has no device; without one, when no\n"
    "candidate is usable.\n"
    "  --json      print the same information as one JSON document\n"
    "  --backend   a backend name or the path of a plugin .so (overrides VG_BACKEND)\n";

static void caps_text(uint64_t caps, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (int b = 0; b < 64; b++) {
        const char *n = (caps >> b) & 1u ? vg_cap_name(1ull << b) : NULL;
        if (n) snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? " " : "", n);
    }
    if (!buf[0]) snprintf(buf, cap, "none");
}

/* The ops device `dev` of the probed backend can capture, asked of a runtime opened on it: the
 * per-op query, with no limit on the number of ops. ops[i] for i < max; returns how many. */
static int capturable_ops(const vg_probe_report *r, int dev, vg_op_id *ops, int max)
{
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = r->path;
    o.device = dev;
    vg_runtime *rt = NULL;
    if (vg_runtime_open(&o, &rt) != VG_OK) return 0;
    int n = 0;
    for (int op = 0; op < VG_OP_COUNT_ && n < max; op++)
        if (vg_runtime_op_capturable(rt, (vg_op_id)op)) ops[n++] = (vg_op_id)op;
    vg_runtime_close(rt);
    return n;
}

static void ops_text(const vg_probe_report *r, int dev, char *buf, size_t cap)
{
    vg_op_id ops[VG_OP_COUNT_];
    int n = capturable_ops(r, dev, ops, VG_OP_COUNT_);
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", i ? " " : "", vg_op_name(ops[i]));
    if (!n) snprintf(buf, cap, "none");
}

static void print_text(const vg_probe_report *r)
{
    char b1[32], b2[32], caps[256], ops[512];
    if (!r->loaded) {
        printf("backend %s: not loaded\n  %s\n", r->request, r->error);
        return;
    }
    printf("backend %s: loaded %s\n  version: %s (plugin ABI %u.%u)\n  score: %d\n", r->name,
           r->path, r->version, r->abi_major, r->abi_minor, r->score);
    if (r->status == VG_ERR_NO_DEVICE && r->device_count == 0) {
        printf("  %s\n", r->error);
        return;
    }
    for (int i = 0; i < r->device_count && i < VG_PROBE_MAX_DEVICES; i++) {
        const vg_device_info *d = &r->devices[i];
        if (r->device_status[i] != VG_OK) {
            printf("  device %d: failed to open (%s)\n", i, vg_status_name(r->device_status[i]));
            continue;
        }
        caps_text(d->caps, caps, sizeof caps);
        ops_text(r, i, ops, sizeof ops);
        printf("  device %d: %s\n    memory: %s total, %s free\n", i, d->name,
               vg_cli_bytes(d->mem_total, b1, sizeof b1), vg_cli_bytes(d->mem_free, b2, sizeof b2));
        if (d->arch_major) printf("    arch: %d.%d\n", d->arch_major, d->arch_minor);
        printf("    compute units: %d\n    caps: %s\n    capturable ops: %s\n", d->compute_units,
               caps, ops);
    }
    if (r->status != VG_OK) printf("  error: %s\n", r->error);
}

static cJSON *report_json(const vg_probe_report *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "request", r->request);
    cJSON_AddBoolToObject(o, "loaded", r->loaded);
    cJSON_AddStringToObject(o, "status", vg_status_name(r->status));
    if (r->status != VG_OK) cJSON_AddStringToObject(o, "error", r->error);
    if (!r->loaded) return o;
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddStringToObject(o, "path", r->path);
    cJSON_AddStringToObject(o, "version", r->version);
    char abi[32];
    snprintf(abi, sizeof abi, "%u.%u", r->abi_major, r->abi_minor);
    cJSON_AddStringToObject(o, "abi", abi);
    cJSON_AddNumberToObject(o, "score", r->score);
    cJSON *devs = cJSON_AddArrayToObject(o, "devices");
    for (int i = 0; i < r->device_count && i < VG_PROBE_MAX_DEVICES; i++) {
        const vg_device_info *d = &r->devices[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "index", i);
        cJSON_AddStringToObject(j, "status", vg_status_name(r->device_status[i]));
        if (r->device_status[i] == VG_OK) {
            cJSON_AddStringToObject(j, "name", d->name);
            cJSON_AddNumberToObject(j, "mem_total", (double)d->mem_total);
            cJSON_AddNumberToObject(j, "mem_free", (double)d->mem_free);
            cJSON_AddNumberToObject(j, "arch_major", d->arch_major);
            cJSON_AddNumberToObject(j, "arch_minor", d->arch_minor);
            cJSON_AddNumberToObject(j, "compute_units", d->compute_units);
            cJSON *caps = cJSON_AddArrayToObject(j, "caps");
            for (int b = 0; b < 64; b++)
                if (((d->caps >> b) & 1u) && vg_cap_name(1ull << b))
                    cJSON_AddItemToArray(caps, cJSON_CreateString(vg_cap_name(1ull << b)));
            cJSON *ops = cJSON_AddArrayToObject(j, "capturable_ops");
            vg_op_id list[VG_OP_COUNT_];
            int n = capturable_ops(r, i, list, VG_OP_COUNT_);
            for (int k = 0; k < n; k++)
                cJSON_AddItemToArray(ops, cJSON_CreateString(vg_op_name(list[k])));
        }
        cJSON_AddItemToArray(devs, j);
    }
    return o;
}

#define MAX_CANDIDATES 64

/* What to probe: the backend asked for, or every auto-selection candidate (copies). */
static int request_names(const char *backend, char **out)
{
    const char *names[MAX_CANDIDATES] = {backend};
    int n = backend ? 1 : vg_backend_candidates(names, MAX_CANDIDATES);
    if (n > MAX_CANDIDATES) n = MAX_CANDIDATES;
    for (int i = 0; i < n; i++)
        if (!(out[i] = strdup(names[i]))) return -1;
    return n;
}

int vg_cmd_info(int argc, char **argv)
{
    int json = 0;
    const char *option = NULL, *env = getenv("VG_BACKEND");
    const vg_opt opts[] = {
        {"--json", VG_OPT_FLAG, &json, 0, 0, NULL},
        {"--backend", VG_OPT_STRING, &option, 0, 0, "a backend name or the path of a plugin .so"},
    };
    int prc = vg_opt_parse("info", k_help, opts, 2, argc, argv, 1);
    if (prc) return prc == VG_OPT_HELP ? 0 : prc;
    const char *backend = option ? option : env && *env ? env : NULL;
    const char *how = option ? "--backend" : backend ? "VG_BACKEND" : "auto";
    char *names[MAX_CANDIDATES] = {NULL};
    int n = request_names(backend, names);
    vg_probe_report *reports = n >= 0 ? calloc((size_t)(n ? n : 1), sizeof *reports) : NULL;
    if (!reports) {
        for (int i = 0; i < MAX_CANDIDATES; i++) free(names[i]);
        return vg_cli_fail("info", "out of memory");
    }
    int selected = -1; /* the usable one with the highest score; the first of equals */
    for (int i = 0; i < n; i++) {
        reports[i].struct_size = sizeof reports[i];
        vg_backend_probe(names[i], &reports[i]);
        if (reports[i].status == VG_OK && (selected < 0 || reports[i].score > reports[selected].score))
            selected = i;
    }
    int rc = 0;
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "vg_version", VG_VERSION_STRING);
        uint32_t major = 0, minor = 0;
        char abi[32];
        vg_abi_version(&major, &minor);
        snprintf(abi, sizeof abi, "%u.%u", major, minor);
        cJSON_AddStringToObject(root, "plugin_abi", abi);
        cJSON_AddStringToObject(root, "selection", how);
        cJSON *arr = cJSON_AddArrayToObject(root, "backends");
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, report_json(&reports[i]));
        if (selected >= 0)
            cJSON_AddStringToObject(root, "selected", reports[selected].name);
        else
            cJSON_AddNullToObject(root, "selected");
        rc = vg_cli_print_json(root, 1);
    } else {
        uint32_t major = 0, minor = 0;
        vg_abi_version(&major, &minor);
        printf("vg %s, plugin ABI %u.%u\n", VG_VERSION_STRING, major, minor);
        for (int i = 0; i < n; i++) print_text(&reports[i]);
        if (selected >= 0)
            printf("selected: %s (%s)\n", reports[selected].name,
                   backend ? how : "auto: the usable candidate with the highest score");
    }
    if (selected < 0) {
        if (backend)
            rc = vg_cli_fail("info", "backend '%s' is not usable: %s", backend, reports[0].error);
        else
            rc = vg_cli_fail("info", "no usable backend found");
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(reports);
    return rc;
}
