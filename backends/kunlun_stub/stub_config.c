/* SPDX-License-Identifier: Apache-2.0 */
/* Environment knobs of kunlun_stub. Each is documented in docs/kunlun-stub.md.
 *   VG_STUB_DEVICES=N           devices reported (default 1; 0 simulates a machine without one)
 *   VG_STUB_MEM_CAPACITY=B[K|M|G]  device memory capacity (default 8G)
 *   VG_STUB_POISON=1            fill fresh and freed memory with NaN bytes; keep freed memory
 *                               mapped (quarantined, up to VG_STUB_QUARANTINE, default 256M)
 *   VG_STUB_LAUNCH_US=N         simulated host cost of each launch (eager op or graph launch)
 *   VG_STUB_CAPS=tok,...        nograph | noupdate | noipc | noloop | nocomm | nocommcapture |
 *                               nocapture:<op name> | noop:<op name>
 *   VG_STUB_FAULT=point[:n[+]],...  fail the n-th call (n+ : and all later ones) of a point:
 *                               device_open mem_alloc capture_begin capture_end instantiate
 *                               launch update ipc_open   (no :n means every call) */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stub_internal.h"

static const char *const k_fault_names[STUB_FAULT_COUNT_] = {
    "device_open", "mem_alloc", "capture_begin", "capture_end", "instantiate", "launch", "update",
    "ipc_open",
};

static const char *const k_op_names[VG_OP_COUNT_] = {VG_OP_LIST(VG_OP_LIST_NAME_AT)};

/* The configuration is read at every device_count and device_open (vg info reads it half a
 * dozen times): each warning about it is given once per process; a changed value makes a new
 * message, which is given. */
static void warn_once(const char *fmt, ...)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char said[16][256];
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&lock);
    int seen = 0, i = 0;
    for (; i < 16 && said[i][0] && !seen; i++) seen = !strcmp(said[i], msg);
    if (!seen && i < 16) memcpy(said[i], msg, sizeof msg); /* when full: said again, never lost */
    pthread_mutex_unlock(&lock);
    if (!seen) STUB_LOG(VG_LOG_WARN, "%s", msg);
}

static int parse_bytes(const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    unsigned long long mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm') mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g') mul = 1ull << 30, end++;
    if (*end) return -1;
    if (v > UINT64_MAX / mul) return -1;
    *out = v * mul;
    return 0;
}

static void env_bytes(const char *name, uint64_t *dst)
{
    const char *v = stub_option(name);
    if (v && *v && parse_bytes(v, dst) != 0)
        warn_once("kunlun_stub: %s=%s is not a size (e.g. 512M); ignored", name, v);
}

/* A comma-separated setting copied into buf for strtok_r; 0 (with a warning, nothing taken) where
 * it does not fit, rather than acting on a cut-off part of it. */
static int spec_copy(const char *what, const char *spec, char *buf, size_t size)
{
    if (strlen(spec) >= size) {
        warn_once("kunlun_stub: %s is longer than %zu bytes: ignored", what, size - 1);
        return 0;
    }
    memcpy(buf, spec, strlen(spec) + 1);
    return 1;
}

#define SPEC_BYTES 4096 /* every op's name with a prefix fits several times */

static void parse_caps(stub_config *cfg, const char *spec)
{
    char buf[SPEC_BYTES];
    if (!spec_copy("VG_STUB_CAPS", spec, buf, sizeof buf)) return;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "nograph") == 0) {
            cfg->caps &= ~(VG_CAP_GRAPH | VG_CAP_GRAPH_UPDATE | VG_CAP_GRAPH_LOOP);
        } else if (strcmp(tok, "noloop") == 0) {
            cfg->caps &= ~VG_CAP_GRAPH_LOOP;
        } else if (strcmp(tok, "noipc") == 0) {
            cfg->caps &= ~VG_CAP_IPC;
        } else if (strcmp(tok, "nocomm") == 0) {
            cfg->caps &= ~(VG_CAP_COMM | VG_CAP_COMM_CAPTURE);
        } else if (strcmp(tok, "nocommcapture") == 0) {
            cfg->caps &= ~VG_CAP_COMM_CAPTURE;
        } else if (strcmp(tok, "noupdate") == 0) {
            cfg->caps &= ~VG_CAP_GRAPH_UPDATE;
        } else if (strncmp(tok, "nocapture:", 10) == 0 || strncmp(tok, "noop:", 5) == 0) {
            /* nocapture: the op is not capturable; noop: not offered at all (a device without it) */
            int noop = tok[2] == 'o', found = 0;
            const char *name = tok + (noop ? 5 : 10);
            for (int i = 0; i < STUB_OP_COUNT; i++)
                if (strcmp(name, k_op_names[i]) == 0) {
                    if (noop) cfg->noop[i] = 1;
                    else cfg->nocapture[i] = 1;
                    found = 1;
                }
            if (!found) warn_once("kunlun_stub: VG_STUB_CAPS: unknown op '%s'", name);
        } else {
            warn_once("kunlun_stub: VG_STUB_CAPS: unknown token '%s'", tok);
        }
    }
}

static void parse_faults(stub_config *cfg, const char *spec)
{
    char buf[SPEC_BYTES];
    if (!spec_copy("VG_STUB_FAULT", spec, buf, sizeof buf)) return;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        long long nth = 1;
        int sticky = 1;
        if (colon) {
            *colon = '\0';
            char *end = NULL;
            nth = strtoll(colon + 1, &end, 10);
            sticky = end && *end == '+';
            if (nth < 1 || !end || (*end && strcmp(end, "+") != 0)) {
                warn_once("kunlun_stub: VG_STUB_FAULT: bad count in '%s'", tok);
                continue;
            }
        }
        int found = 0;
        for (int i = 0; i < STUB_FAULT_COUNT_; i++)
            if (strcmp(tok, k_fault_names[i]) == 0) {
                cfg->faults[i].first = nth;
                cfg->faults[i].sticky = sticky;
                found = 1;
            }
        if (!found) warn_once("kunlun_stub: VG_STUB_FAULT: unknown point '%s'", tok);
    }
}

void stub_config_load(stub_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->devices = 1;
    cfg->capacity = 8ull << 30;
    cfg->quarantine_cap = 256ull << 20;
    cfg->caps = VG_CAP_GRAPH | VG_CAP_GRAPH_UPDATE | VG_CAP_IPC | VG_CAP_NATIVE | VG_CAP_GRAPH_LOOP |
                VG_CAP_COMM | VG_CAP_COMM_CAPTURE;
    const char *v = stub_option("VG_STUB_DEVICES");
    if (v && *v) {
        char *end = NULL;
        long n = strtol(v, &end, 10);
        if (*end || n < 0 || n > 64)
            warn_once("kunlun_stub: VG_STUB_DEVICES=%s not in 0..64; ignored", v);
        else
            cfg->devices = (int)n;
    }
    env_bytes("VG_STUB_MEM_CAPACITY", &cfg->capacity);
    env_bytes("VG_STUB_QUARANTINE", &cfg->quarantine_cap);
    v = stub_option("VG_STUB_POISON");
    cfg->poison = v && *v && strcmp(v, "0") != 0;
    v = stub_option("VG_STUB_LAUNCH_US");
    if (v && *v) {
        char *end = NULL;
        double us = strtod(v, &end);
        if (*end || us < 0 || us > 1e6)
            warn_once("kunlun_stub: VG_STUB_LAUNCH_US=%s not in 0..1e6; ignored", v);
        else
            cfg->launch_ns = (long long)(us * 1000.0);
    }
    v = stub_option("VG_STUB_CAPS");
    if (v && *v) parse_caps(cfg, v);
    v = stub_option("VG_STUB_FAULT");
    if (v && *v) parse_faults(cfg, v);
}

int stub_fault_hit(vg_bk_device *dev, stub_fault_point point)
{
    stub_fault *f = &dev->cfg.faults[point];
    if (f->first == 0) return 0;
    pthread_mutex_lock(&dev->lock);
    long long n = ++f->calls;
    pthread_mutex_unlock(&dev->lock);
    int hit = n == f->first || (f->sticky && n > f->first);
    if (hit)
        STUB_LOG(VG_LOG_INFO, "kunlun_stub: injected fault at %s (call %lld)", k_fault_names[point],
                 n);
    return hit;
}
