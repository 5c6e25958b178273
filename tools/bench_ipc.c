/* SPDX-License-Identifier: Apache-2.0 */
/* vg bench ipc: resolving cross-process tensors (vg_ipc.h), through the pool cache and without.
 *
 * Three kinds of process: this one, which never opens a runtime (a process that initialised
 * CUDA cannot hand a working CUDA to the children it forks, and a process cannot open its own
 * CUDA IPC handles); one producer, which fills N tensors of assorted shapes and dtypes spread
 * over P pools and sends their descriptors here; and one consumer per mode (cache on, then off),
 * which receives the descriptors, times each import and release, then reads every tensor back
 * and compares it with what the producer wrote. The per-tensor times are the consumer's host
 * time around vg_ipc_import (a lookup when cached, a handle open when not) and vg_ipc_release
 * (a close when not cached). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_args.h"
#include "stats.h"
#include "vg/vg_device.h"
#include "vg/vg_ipc.h"
#include "vg_cli.h"

static const char k_help[] =
    "usage: vg bench ipc [--backend B] [--tensors N] [--pools P] [--json]\n"
    "\n"
    "A producer process puts N tensors of assorted shapes and dtypes (up to 64 KiB each) in P\n"
    "IPC pools; a consumer process imports each by its descriptor, once with the pool cache on\n"
    "and once with it off (VG_IPC_POOL_CACHE=0: one handle open and close per tensor). Reports\n"
    "us per tensor for the import (median, p90, mean) and the release (median, p90; its mean in\n"
    "--json), the cost of one open (the cache's misses), the cache's counters, and checks every\n"
    "byte the consumer reads.\n"
    "  --backend B   a backend name or the path of a plugin .so (its devices need IPC)\n"
    "  --tensors N   tensors, 1..1000000 (default 1000)\n"
    "  --pools P     pools, 1..4096 (default 4; at most --tensors): tensor i is in pool i mod P\n"
    "  --json        print the results as one JSON document\n";

#define MSG_BYTES 1024

/* ---- what the tensors hold ------------------------------------------------------------------ */

static void shape_of(uint32_t i, vg_dtype *dt, int *ndim, int64_t shape[4])
{
    static const vg_dtype dts[] = {VG_DTYPE_F32, VG_DTYPE_BF16, VG_DTYPE_U8, VG_DTYPE_I32,
                                   VG_DTYPE_F16, VG_DTYPE_I64};
    uint32_t r = (i + 1) * 2654435761u;
    *dt = dts[i % 6];
    int64_t elems = 1 + (int64_t)((r >> 8) % (65536 / vg_dtype_size(*dt)));
    *ndim = 1 + (int)(r >> 28) % 3;
    int64_t inner = *ndim > 1 ? 1 + (int64_t)((r >> 3) % 16) : 1;
    shape[0] = elems / inner > 0 ? elems / inner : 1;
    shape[1] = inner;
    shape[2] = 1;
}

static unsigned char pattern(uint32_t i, uint64_t j)
{
    uint32_t x = (i + 1) * 0x85EBCA6Bu ^ (uint32_t)j * 0xC2B2AE35u ^ (uint32_t)(j >> 32);
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    return (unsigned char)(x ^ x >> 12);
}

/* ---- messages ------------------------------------------------------------------------------- */

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k, n -= (size_t)k;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k, n -= (size_t)k;
    }
    return 0;
}

/* The producer's first message: whether it is ready, what it runs on, or why it failed. */
typedef struct hello {
    int ok;
    char backend[64], device[128], error[MSG_BYTES];
} hello;

/* A consumer's answer. */
typedef struct report {
    int ok;
    char error[MSG_BYTES];
    vg_sample_stats import_us, release_us;
    double import_mean_us, release_mean_us;
    double open_us; /* the median import that missed the cache */
    int misses;
    vg_ipc_stats ipc;
    uint64_t bytes_checked, mismatches;
} report;

/* ---- the producer ---------------------------------------------------------------------------- */

static int produce(const char *backend, uint32_t n, uint32_t npools, int sock)
{
    hello h = {0};
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = backend;
    vg_runtime *rt = NULL;
    vg_stream *s = NULL;
    vg_ipc_pool **pools = calloc(npools, sizeof *pools);
    uint64_t *need = calloc(npools, sizeof *need);
    vg_ipc_desc *d = calloc(n, sizeof *d);
    unsigned char *host = malloc(65536);
    vg_status st = pools && need && d && host ? vg_runtime_open(&o, &rt)
                                              : vg_error_set(VG_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == VG_OK) st = vg_stream_create(rt, &s);
    for (uint32_t i = 0; st == VG_OK && i < n; i++) {
        vg_dtype dt;
        int nd;
        int64_t shape[4];
        shape_of(i, &dt, &nd, shape);
        uint64_t b = vg_dtype_size(dt);
        for (int k = 0; k < nd; k++) b *= (uint64_t)shape[k];
        need[i % npools] += (b + 255) / 256 * 256;
    }
    for (uint32_t p = 0; st == VG_OK && p < npools; p++)
        st = vg_ipc_pool_create(rt, need[p] ? need[p] : 256, &pools[p]);
    for (uint32_t i = 0; st == VG_OK && i < n; i++) {
        vg_dtype dt;
        int nd;
        int64_t shape[4];
        void *ptr = NULL;
        shape_of(i, &dt, &nd, shape);
        st = vg_ipc_pool_alloc(pools[i % npools], dt, nd, shape, &d[i], &ptr);
        for (uint64_t j = 0; st == VG_OK && j < d[i].bytes; j++) host[j] = pattern(i, j);
        if (st == VG_OK) st = vg_mem_copy_h2d(s, ptr, host, d[i].bytes);
        if (st == VG_OK) st = vg_stream_sync(s); /* the host buffer is reused */
    }
    if (st == VG_OK) {
        vg_device_info info = {.struct_size = sizeof info};
        vg_runtime_device_info(rt, &info);
        h.ok = 1;
        snprintf(h.backend, sizeof h.backend, "%s", vg_runtime_backend_name(rt));
        snprintf(h.device, sizeof h.device, "%s", info.name);
    } else {
        snprintf(h.error, sizeof h.error, "%s", vg_last_error());
    }
    int rc = write_all(sock, &h, sizeof h);
    for (uint32_t i = 0; rc == 0 && h.ok && i < n; i++) {
        unsigned char buf[VG_IPC_DESC_BYTES];
        rc = vg_ipc_desc_encode(&d[i], buf) == VG_OK ? write_all(sock, buf, sizeof buf) : -1;
    }
    char done;
    if (rc == 0 && h.ok) rc = read_all(sock, &done, 1); /* the pools live until the end */
    for (uint32_t p = 0; pools && p < npools; p++) vg_ipc_pool_destroy(pools[p]);
    vg_stream_destroy(s);
    vg_runtime_close(rt);
    free(pools), free(need), free(d), free(host);
    return h.ok && rc == 0 ? 0 : 1;
}

/* ---- a consumer ------------------------------------------------------------------------------- */

static int fail_report(report *r, const char *what)
{
    r->ok = 0;
    snprintf(r->error, sizeof r->error, "%s: %s", what, vg_last_error());
    return 1;
}

static int consume(vg_runtime *rt, const vg_ipc_desc *d, uint32_t n, int cached, report *r)
{
    vg_ipc_cache_set_enabled(cached);
    double *t_imp = malloc(n * sizeof *t_imp), *t_rel = malloc(n * sizeof *t_rel);
    double *t_miss = malloc(n * sizeof *t_miss);
    unsigned char *host = malloc(65536);
    vg_stream *s = NULL;
    if (!t_imp || !t_rel || !t_miss || !host) {
        vg_error_set(VG_ERR_OUT_OF_MEMORY, "out of host memory");
        return fail_report(r, "consumer");
    }
    if (vg_stream_create(rt, &s) != VG_OK) return fail_report(r, "stream");
    vg_ipc_stats_reset();
    double sum = 0, rsum = 0;
    int misses = 0;
    for (uint32_t i = 0; i < n; i++) {
        vg_ipc_tensor x;
        uint64_t hits = 0;
        if (cached) {
            vg_ipc_stats st = {.struct_size = sizeof st};
            vg_ipc_stats_get(&st);
            hits = st.hits;
        }
        double t0 = vg_now_ms();
        vg_status e = vg_ipc_import(rt, &d[i], &x);
        double t1 = vg_now_ms();
        if (e != VG_OK) return fail_report(r, "import");
        vg_ipc_release(&x);
        double t2 = vg_now_ms();
        t_imp[i] = (t1 - t0) * 1e3, t_rel[i] = (t2 - t1) * 1e3;
        sum += t_imp[i], rsum += t_rel[i];
        if (cached) {
            vg_ipc_stats st = {.struct_size = sizeof st};
            vg_ipc_stats_get(&st);
            if (st.hits == hits) t_miss[misses++] = t_imp[i];
        }
    }
    r->ipc.struct_size = sizeof r->ipc;
    vg_ipc_stats_get(&r->ipc); /* before the checks below import again */
    r->import_mean_us = sum / n;
    r->release_mean_us = rsum / n;
    r->import_us = vg_stats_of(t_imp, n);
    r->release_us = vg_stats_of(t_rel, n);
    r->misses = misses;
    r->open_us = misses ? vg_stats_of(t_miss, (size_t)misses).median : 0;
    /* every byte, read back through the import (not timed) */
    for (uint32_t i = 0; i < n; i++) {
        vg_ipc_tensor x;
        if (vg_ipc_import(rt, &d[i], &x) != VG_OK) return fail_report(r, "import");
        vg_status e = vg_mem_copy_d2h(s, host, x.ptr, x.bytes);
        if (e == VG_OK) e = vg_stream_sync(s);
        vg_ipc_release(&x);
        if (e != VG_OK) return fail_report(r, "reading a tensor back");
        for (uint64_t j = 0; j < d[i].bytes; j++) r->mismatches += host[j] != pattern(i, j);
        r->bytes_checked += d[i].bytes;
    }
    vg_stream_destroy(s);
    free(t_imp), free(t_rel), free(t_miss), free(host);
    r->ok = 1;
    return 0;
}

/* The consumer process: the descriptors come from the parent, the report goes back. */
static int consumer_main(const char *backend, int sock)
{
    report r;
    memset(&r, 0, sizeof r);
    uint32_t hdr[2];
    vg_ipc_desc *d = NULL;
    vg_runtime *rt = NULL;
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = backend;
    if (read_all(sock, hdr, sizeof hdr) == 0 && (d = calloc(hdr[1], sizeof *d)) != NULL) {
        int bad = 0;
        for (uint32_t i = 0; i < hdr[1] && !bad; i++) {
            unsigned char buf[VG_IPC_DESC_BYTES];
            bad = read_all(sock, buf, sizeof buf) != 0 ||
                  vg_ipc_desc_decode(buf, sizeof buf, &d[i]) != VG_OK;
        }
        if (bad) fail_report(&r, "receiving descriptors");
        else if (vg_runtime_open(&o, &rt) != VG_OK) fail_report(&r, "opening the backend");
        else consume(rt, d, hdr[1], (int)hdr[0], &r);
    } else {
        snprintf(r.error, sizeof r.error, "no descriptors");
    }
    vg_runtime_close(rt);
    free(d);
    return write_all(sock, &r, sizeof r) == 0 && r.ok ? 0 : 1;
}

/* ---- this process ----------------------------------------------------------------------------- */

static pid_t spawn(int (*body)(const char *, uint32_t, uint32_t, int), const char *backend,
                   uint32_t n, uint32_t pools, int sock, int other)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(other);
        _exit(body(backend, n, pools, sock));
    }
    return pid;
}

static int consumer_body(const char *backend, uint32_t n, uint32_t pools, int sock)
{
    (void)n, (void)pools;
    return consumer_main(backend, sock);
}

static int reap(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* One consumer process in one mode; 0 with *r filled, or 1 after printing why. */
static int run_consumer(const char *backend, const unsigned char *descs, uint32_t n, int cached,
                        report *r)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return vg_cli_fail("bench ipc", "socketpair: %s", strerror(errno));
    pid_t pid = spawn(consumer_body, backend, n, 0, sv[1], sv[0]);
    close(sv[1]);
    uint32_t hdr[2] = {(uint32_t)cached, n};
    int rc = pid < 0 || write_all(sv[0], hdr, sizeof hdr) != 0 ||
             write_all(sv[0], descs, (size_t)n * VG_IPC_DESC_BYTES) != 0 ||
             read_all(sv[0], r, sizeof *r) != 0;
    close(sv[0]);
    int st = pid < 0 ? 1 : reap(pid);
    if (rc || !r->ok)
        return vg_cli_fail("bench ipc", "consumer (cache %s): %s", cached ? "on" : "off",
                           rc ? "died without a report" : r->error);
    return st ? vg_cli_fail("bench ipc", "consumer exited with status %d", st) : 0;
}

static void add_mode(cJSON *o, const char *key, const report *r)
{
    cJSON *m = cJSON_AddObjectToObject(o, key);
    cJSON_AddNumberToObject(m, "import_us_median", r->import_us.median);
    cJSON_AddNumberToObject(m, "import_us_p90", r->import_us.p90);
    cJSON_AddNumberToObject(m, "import_us_mean", r->import_mean_us);
    cJSON_AddNumberToObject(m, "release_us_median", r->release_us.median);
    cJSON_AddNumberToObject(m, "release_us_p90", r->release_us.p90);
    cJSON_AddNumberToObject(m, "release_us_mean", r->release_mean_us);
    cJSON_AddNumberToObject(m, "opens", (double)r->ipc.opens);
    cJSON_AddNumberToObject(m, "hits", (double)r->ipc.hits);
    cJSON_AddNumberToObject(m, "closes", (double)r->ipc.closes);
    cJSON_AddNumberToObject(m, "invalidations", (double)r->ipc.invalidations);
    cJSON_AddNumberToObject(m, "fallbacks", (double)r->ipc.fallbacks);
    cJSON_AddNumberToObject(m, "bytes_checked", (double)r->bytes_checked);
    cJSON_AddNumberToObject(m, "mismatches", (double)r->mismatches);
}

static int print(const hello *h, uint32_t n, uint32_t pools, const report *on, const report *off,
                 int json)
{
    uint64_t checked = on->bytes_checked + off->bytes_checked;
    uint64_t bad = on->mismatches + off->mismatches;
    double per_on = on->import_mean_us + on->release_mean_us;
    double per_off = off->import_mean_us + off->release_mean_us;
    double speedup = per_on > 0 ? per_off / per_on : 0;
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "bench", "ipc");
        cJSON_AddStringToObject(o, "backend", h->backend);
        cJSON_AddStringToObject(o, "device", h->device);
        cJSON_AddNumberToObject(o, "tensors", n);
        cJSON_AddNumberToObject(o, "pools", pools);
        cJSON_AddNumberToObject(o, "opens", (double)on->ipc.opens); /* the cached run's */
        cJSON_AddNumberToObject(o, "hits", (double)on->ipc.hits);
        cJSON_AddNumberToObject(o, "bytes_checked", (double)checked);
        cJSON_AddNumberToObject(o, "mismatches", (double)bad);
        cJSON_AddNumberToObject(o, "open_us", on->open_us);
        cJSON_AddNumberToObject(o, "speedup_mean", speedup);
        add_mode(o, "cache_on", on);
        add_mode(o, "cache_off", off);
        if (vg_cli_print_json(o, 1)) return 1;
    } else {
        printf("backend %s (%s): %u tensors in %u pools, %.2f MiB, producer and consumer "
               "processes\n", h->backend, h->device, n, pools, (double)on->bytes_checked / 1048576.0);
        printf("%-32s %28s %17s %6s %7s\n", "", "import, us per tensor", "release, us", "", "");
        printf("%-32s %8s %8s %10s %8s %8s %6s %7s\n", "", "median", "p90", "mean", "median", "p90",
               "opens", "hits");
        const report *r[2] = {on, off};
        const char *name[2] = {"cache on (default)", "cache off (VG_IPC_POOL_CACHE=0)"};
        for (int k = 0; k < 2; k++)
            printf("%-32s %8.3f %8.3f %10.3f %8.3f %8.3f %6llu %7llu\n", name[k],
                   r[k]->import_us.median, r[k]->import_us.p90, r[k]->import_mean_us,
                   r[k]->release_us.median, r[k]->release_us.p90,
                   (unsigned long long)r[k]->ipc.opens, (unsigned long long)r[k]->ipc.hits);
        printf("one open (a cache miss, the lookup included): %.3f us, median of %d\n", on->open_us,
               on->misses);
        printf("import + release, mean per tensor: %.3f us cached, %.3f us uncached (%.1fx)\n",
               per_on, per_off, speedup);
        printf("bytes checked: %llu, mismatches: %llu\n", (unsigned long long)checked,
               (unsigned long long)bad);
    }
    if (bad) return vg_cli_fail("bench ipc", "%llu bytes differ from what the producer wrote",
                                (unsigned long long)bad);
    return 0;
}

int vg_cmd_bench_ipc(int argc, char **argv)
{
    const char *backend = NULL;
    int tensors = 1000, pools = 4, json = 0;
    const vg_opt opts[] = {
        {"--backend", VG_OPT_STRING, &backend, 0, 0, "a backend name or the path of a plugin .so"},
        {"--tensors", VG_OPT_INT, &tensors, 1, 1000000, NULL},
        {"--pools", VG_OPT_INT, &pools, 1, 4096, NULL},
        {"--json", VG_OPT_FLAG, &json, 0, 0, NULL},
    };
    int prc = vg_opt_parse("bench ipc", k_help, opts, (int)(sizeof opts / sizeof opts[0]), argc,
                           argv, 2);
    if (prc) return prc == VG_OPT_HELP ? 0 : prc;
    if (pools > tensors) pools = tensors;
    signal(SIGPIPE, SIG_IGN); /* a child that dies is reported, not fatal here */
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return vg_cli_fail("bench ipc", "socketpair: %s", strerror(errno));
    uint32_t n = (uint32_t)tensors, np = (uint32_t)pools;
    pid_t producer = spawn(produce, backend, n, np, sv[1], sv[0]);
    close(sv[1]);
    hello h;
    unsigned char *descs = malloc((size_t)n * VG_IPC_DESC_BYTES);
    int rc = 1;
    if (producer < 0 || !descs) {
        vg_cli_fail("bench ipc", "cannot start the producer");
    } else if (read_all(sv[0], &h, sizeof h) != 0 || !h.ok) {
        vg_cli_fail("bench ipc", "producer: %s", producer < 0 ? "did not start" : h.ok ? "died" : h.error);
    } else if (read_all(sv[0], descs, (size_t)n * VG_IPC_DESC_BYTES) != 0) {
        vg_cli_fail("bench ipc", "producer: died while sending descriptors");
    } else {
        report on, off;
        memset(&on, 0, sizeof on);
        memset(&off, 0, sizeof off);
        rc = run_consumer(backend, descs, n, 1, &on);
        if (rc == 0) rc = run_consumer(backend, descs, n, 0, &off);
        if (rc == 0) rc = print(&h, n, np, &on, &off, json);
    }
    char done = 1;
    (void)write_all(sv[0], &done, 1);
    close(sv[0]);
    int pst = producer < 0 ? 1 : reap(producer);
    if (rc == 0 && pst) rc = vg_cli_fail("bench ipc", "the producer exited with status %d", pst);
    free(descs);
    return rc;
}
