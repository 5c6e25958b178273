/* SPDX-License-Identifier: Apache-2.0 */
/* Two-process helpers for the IPC tests: a producer and a consumer, each a child of the test
 * program, talking over a socketpair.
 *
 * The test program itself never opens a runtime: a process that has initialised CUDA cannot
 * give a usable CUDA to the children it forks, and a process cannot open its own CUDA IPC
 * handles. So every role (producer, consumer) is a fresh child that opens its own runtime on
 * VG_BACKEND, and the parent only waits for them. A role returns 0 (passed), 1 (failed: it
 * printed why) or VG_TEST_SKIP (no device). Inside a role, CK and CKV check and return 1. */
#ifndef VG_TEST_IPC_UTIL_H
#define VG_TEST_IPC_UTIL_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vg/vg_device.h"
#include "vg/vg_ipc.h"

#ifndef VG_TEST_SKIP
#define VG_TEST_SKIP 77
#endif

#define CK(cond, ...)                                                                        \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);         \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fprintf(stderr, "\n");                                                           \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)
#define CKV(expr)                                                                            \
    do {                                                                                     \
        vg_status st_ = (expr);                                                              \
        if (st_ != VG_OK) {                                                                  \
            fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr,             \
                    vg_status_name(st_), vg_last_error());                                   \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

/* ---- socket I/O ---------------------------------------------------------------------------- */

static inline int ipc_write_all(int fd, const void *p, size_t n)
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

static inline int ipc_read_all(int fd, void *p, size_t n)
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

static inline int ipc_send_u32(int fd, uint32_t v) { return ipc_write_all(fd, &v, sizeof v); }
static inline int ipc_recv_u32(int fd, uint32_t *v) { return ipc_read_all(fd, v, sizeof *v); }

static inline int ipc_send_desc(int fd, const vg_ipc_desc *d)
{
    unsigned char buf[VG_IPC_DESC_BYTES];
    if (vg_ipc_desc_encode(d, buf) != VG_OK) {
        fprintf(stderr, "encode: %s\n", vg_last_error());
        return -1;
    }
    return ipc_write_all(fd, buf, sizeof buf);
}

static inline int ipc_recv_desc(int fd, vg_ipc_desc *d)
{
    unsigned char buf[VG_IPC_DESC_BYTES];
    if (ipc_read_all(fd, buf, sizeof buf) != 0) return -1;
    if (vg_ipc_desc_decode(buf, sizeof buf, d) != VG_OK) {
        fprintf(stderr, "decode: %s\n", vg_last_error());
        return -1;
    }
    return 0;
}

/* ---- contents -------------------------------------------------------------------------------- */

/* Byte j of tensor i of a producer seeded with `seed`: a different stream per tensor and seed. */
static inline unsigned char ipc_pattern(uint32_t seed, uint32_t i, uint64_t j)
{
    uint32_t x = seed * 0x9E3779B1u ^ (i + 1) * 0x85EBCA6Bu ^ (uint32_t)j * 0xC2B2AE35u ^
                 (uint32_t)(j >> 32);
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return (unsigned char)x;
}

/* Write the pattern into a device tensor (synchronously). */
static inline int ipc_fill(vg_stream *s, void *dst, uint64_t bytes, uint32_t seed, uint32_t i)
{
    if (!bytes) return 0;
    unsigned char *h = malloc(bytes);
    CK(h, "out of host memory");
    for (uint64_t j = 0; j < bytes; j++) h[j] = ipc_pattern(seed, i, j);
    vg_status st = vg_mem_copy_h2d(s, dst, h, bytes);
    if (st == VG_OK) st = vg_stream_sync(s);
    free(h);
    CKV(st);
    return 0;
}

/* Read a device tensor back and count the bytes that differ from the pattern. */
static inline int ipc_check(vg_stream *s, const void *src, uint64_t bytes, uint32_t seed,
                            uint32_t i, uint64_t *mismatches)
{
    *mismatches = 0;
    if (!bytes) return 0;
    unsigned char *h = malloc(bytes);
    CK(h, "out of host memory");
    vg_status st = vg_mem_copy_d2h(s, h, src, bytes);
    if (st == VG_OK) st = vg_stream_sync(s);
    if (st != VG_OK) {
        free(h);
        CKV(st);
    }
    for (uint64_t j = 0; j < bytes; j++) *mismatches += h[j] != ipc_pattern(seed, i, j);
    free(h);
    return 0;
}

/* ---- roles ------------------------------------------------------------------------------------ */

typedef int (*ipc_role_fn)(vg_runtime *rt, int sock, void *arg);

/* In a forked child: set each "NAME=value" of the NULL-terminated env (NULL: none); a malformed
 * entry ends the child with status 1. */
static inline void ipc_set_env(const char *const *env)
{
    for (int i = 0; env && env[i]; i++) {
        char name[128];
        const char *eq = strchr(env[i], '=');
        size_t n = eq ? (size_t)(eq - env[i]) : 0;
        if (!eq || n >= sizeof name) _exit(1);
        memcpy(name, env[i], n);
        name[n] = '\0';
        setenv(name, eq + 1, 1);
    }
}

/* Fork a child that sets `env` ("NAME=value" strings, NULL-terminated; may be NULL), opens a
 * runtime on VG_BACKEND and runs fn; its exit status is fn's. The child's socket is `sock`, and
 * it closes `other` (the parent's end) first. */
static inline pid_t ipc_spawn(ipc_role_fn fn, int sock, int other, void *arg, const char *const *env)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid != 0) return pid;
    if (other >= 0) close(other);
    ipc_set_env(env);
    vg_runtime *rt = NULL;
    vg_status st = vg_runtime_open(NULL, &rt);
    if (st != VG_OK) {
        fprintf(stderr, "role: no runtime: %s\n", vg_last_error());
        _exit(st == VG_ERR_NO_DEVICE ? VG_TEST_SKIP : 1);
    }
    int rc = fn(rt, sock, arg);
    if (vg_runtime_close(rt) != VG_OK && rc == 0) rc = 1;
    fflush(stdout);
    fflush(stderr);
    _exit(rc);
}

/* The exit status of a child: its code, or 1 when it died of a signal. */
static inline int ipc_wait(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    fprintf(stderr, "child %d died of signal %d\n", (int)pid, WTERMSIG(status));
    return 1;
}

/* Combine children's statuses: a failure wins over a skip, a skip over a pass. */
static inline int ipc_worst(int a, int b)
{
    if ((a != 0 && a != VG_TEST_SKIP) || (b != 0 && b != VG_TEST_SKIP)) return 1;
    return a == VG_TEST_SKIP || b == VG_TEST_SKIP ? VG_TEST_SKIP : 0;
}

/* Producer and consumer over one socketpair; the combined status. */
static inline int ipc_pair(ipc_role_fn producer, ipc_role_fn consumer, void *arg,
                           const char *const *producer_env, const char *const *consumer_env)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
    pid_t p = ipc_spawn(producer, sv[0], sv[1], arg, producer_env);
    pid_t c = ipc_spawn(consumer, sv[1], sv[0], arg, consumer_env);
    close(sv[0]);
    close(sv[1]);
    if (p < 0 || c < 0) return 1;
    int rc = ipc_worst(ipc_wait(c), 0);
    return ipc_worst(rc, ipc_wait(p));
}

/* Whether VG_BACKEND (or auto-selection) gives a device here that offers IPC: 0 (yes), with
 * the backend's name in name[64], VG_TEST_SKIP, or 1. Asked in a child, so that this process
 * stays uninitialised. */
static inline int ipc_probe_role(vg_runtime *rt, int sock, void *arg)
{
    (void)arg;
    char name[64] = {0};
    snprintf(name, sizeof name, "%s", vg_runtime_backend_name(rt));
    if (ipc_write_all(sock, name, sizeof name) != 0) return 1;
    if (vg_runtime_caps(rt) & VG_CAP_IPC) return 0;
    fprintf(stderr, "backend %s offers no IPC\n", name);
    return VG_TEST_SKIP;
}

static inline int ipc_device_ready(char *name)
{
    int fd[2];
    name[0] = '\0';
    if (pipe(fd) != 0) return 1;
    pid_t pid = ipc_spawn(ipc_probe_role, fd[1], fd[0], NULL, NULL);
    close(fd[1]);
    if (pid >= 0 && ipc_read_all(fd[0], name, 64) != 0) name[0] = '\0';
    close(fd[0]);
    name[63] = '\0';
    return pid < 0 ? 1 : ipc_wait(pid);
}

#endif
