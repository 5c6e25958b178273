/* SPDX-License-Identifier: Apache-2.0 */
/* Cross-process tensors (vg_ipc.h) on the backend VG_BACKEND names: kunlun_stub in CI, cuda on
 * the GPU machine. Every device-side check runs in forked producer and consumer processes
 * (ipc_util.h says why); this process decodes descriptors and waits.
 *  - descriptors: encoding round trip, and every hostile field refused with its message;
 *  - the producer's pool: first fit, alignment, reuse, double free, exhaustion;
 *  - 1,000 tensors of assorted shapes through one pool: every byte checked, one open;
 *  - the cache switched off: one open (and one close) per tensor;
 *  - stale entries: a pool freed and created again, a producer that exits and a new one;
 *    invalidation; a cached mapping that does not fit its descriptor, and an open through the
 *    cache that fails, are both retried without the cache;
 *  - forged sizes and offsets, a descriptor of another backend: errors, never a pointer;
 *  - a runtime closed with tensors still imported. */
#include <stdlib.h>

#include "ipc_util.h"
#include "test_util.h"

static int g_stub; /* VG_BACKEND is kunlun_stub: fault injection and its messages */

/* ---- shapes ---------------------------------------------------------------------------------- */

typedef struct tshape {
    vg_dtype dtype;
    int ndim;
    int64_t shape[VG_IPC_MAX_DIMS];
} tshape;

/* Assorted shapes: every dtype, 0 to 4 dimensions, scalars, empty tensors, odd sizes. */
static void shape_of(uint32_t i, tshape *t)
{
    static const vg_dtype dts[] = {VG_DTYPE_F32, VG_DTYPE_BF16, VG_DTYPE_U8,
                                   VG_DTYPE_I32, VG_DTYPE_F16,  VG_DTYPE_I64};
    uint32_t r = i * 2654435761u + 12345u;
    memset(t, 0, sizeof *t);
    t->dtype = dts[i % 6];
    t->ndim = i % 97 == 3 ? 0 : 1 + (int)((r >> 7) % 4);
    int64_t budget = 1 + (int64_t)((r >> 11) % 3000);
    for (int d = 0; d < t->ndim; d++) {
        r = r * 1664525u + 1013904223u;
        int64_t dim = 1 + (int64_t)((r >> 9) % 37);
        if (d == t->ndim - 1) dim = budget > 0 ? budget : 1;
        else budget /= dim;
        t->shape[d] = dim;
    }
    if (i % 101 == 7 && t->ndim) t->shape[0] = 0; /* an empty tensor */
}

static uint64_t bytes_of(const tshape *t)
{
    uint64_t n = vg_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) n *= (uint64_t)t->shape[d];
    return n;
}

static uint64_t pool_bytes_for(uint32_t first, uint32_t count)
{
    uint64_t total = 0;
    for (uint32_t i = first; i < first + count; i++) {
        tshape t;
        shape_of(i, &t);
        uint64_t b = bytes_of(&t);
        total += b <= 256 ? 256 : (b + 255) / 256 * 256;
    }
    return total;
}

/* ---- roles: a producer of N tensors, a consumer that checks them --------------------------- */

typedef struct job {
    uint32_t tensors;   /* per pool */
    uint32_t pools;     /* pools made one after another (each destroyed before the next) */
    uint32_t seed;
    int cache_off;      /* the consumer expects the cache off ... */
    int set_off;        /* ... because it turns it off (else: VG_IPC_POOL_CACHE=0) */
    int fault_first;    /* the consumer's first open fails (kunlun_stub's VG_STUB_FAULT) */
} job;

/* Per pool: create, fill every tensor with its pattern, send the descriptors, wait for the
 * consumer's "done", destroy (so the next pool may reuse the fd number and address). */
static int produce(vg_runtime *rt, int sock, void *arg)
{
    const job *J = arg;
    vg_stream *s = NULL;
    CKV(vg_stream_create(rt, &s));
    for (uint32_t p = 0; p < J->pools; p++) {
        vg_ipc_pool *pool = NULL;
        CKV(vg_ipc_pool_create(rt, pool_bytes_for(0, J->tensors), &pool));
        for (uint32_t i = 0; i < J->tensors; i++) {
            tshape t;
            shape_of(i, &t);
            vg_ipc_desc d;
            void *ptr = NULL;
            CKV(vg_ipc_pool_alloc(pool, t.dtype, t.ndim, t.shape, &d, &ptr));
            CK(d.bytes == bytes_of(&t), "bytes %llu", (unsigned long long)d.bytes);
            CK((uintptr_t)ptr % 256 == 0, "tensor %u not 256-byte aligned", i);
            if (ipc_fill(s, ptr, d.bytes, J->seed + p, i)) return 1;
            CK(ipc_send_desc(sock, &d) == 0, "send");
        }
        uint32_t done = 0;
        CK(ipc_recv_u32(sock, &done) == 0 && done == p, "consumer did not finish pool %u", p);
        CKV(vg_ipc_pool_destroy(pool));
    }
    CKV(vg_stream_destroy(s));
    return 0;
}

static int consume(vg_runtime *rt, int sock, void *arg)
{
    const job *J = arg;
    if (J->set_off) vg_ipc_cache_set_enabled(0);
    CK(vg_ipc_cache_enabled() == !J->cache_off, "cache %s", J->cache_off ? "on" : "off");
    vg_stream *s = NULL;
    CKV(vg_stream_create(rt, &s));
    vg_ipc_stats_reset();
    uint64_t checked = 0;
    for (uint32_t p = 0; p < J->pools; p++) {
        for (uint32_t i = 0; i < J->tensors; i++) {
            vg_ipc_desc d;
            CK(ipc_recv_desc(sock, &d) == 0, "receive descriptor %u of pool %u", i, p);
            tshape t;
            shape_of(i, &t);
            CK(d.dtype == t.dtype && d.ndim == t.ndim, "tensor %u: dtype or ndim", i);
            vg_ipc_tensor x;
            CKV(vg_ipc_import(rt, &d, &x));
            CK(x.bytes == d.bytes, "bytes");
            uint64_t bad = 0;
            if (ipc_check(s, x.ptr, x.bytes, J->seed + p, i, &bad)) return 1;
            CK(bad == 0, "pool %u tensor %u: %llu of %llu bytes differ", p, i,
               (unsigned long long)bad, (unsigned long long)x.bytes);
            checked += x.bytes;
            /* with the first open failing, the first import has a mapping of its own */
            if (J->fault_first && p == 0 && i == 0) CK(!x.cached, "the fallback is uncached");
            else CK(x.cached == !J->cache_off, "tensor %u cached %d", i, x.cached);
            CKV(vg_ipc_release(&x));
        }
        CK(ipc_send_u32(sock, p) == 0, "send done");
    }
    vg_ipc_stats st = {.struct_size = sizeof st};
    vg_ipc_stats_get(&st);
    uint64_t n = (uint64_t)J->tensors * J->pools;
    printf("consumer: %llu tensors, %llu bytes checked; opens %llu, hits %llu, closes %llu, "
           "invalidations %llu, fallbacks %llu\n", (unsigned long long)st.imports,
           (unsigned long long)checked, (unsigned long long)st.opens, (unsigned long long)st.hits,
           (unsigned long long)st.closes, (unsigned long long)st.invalidations,
           (unsigned long long)st.fallbacks);
    CK(st.imports == n, "imports %llu", (unsigned long long)st.imports);
    if (J->cache_off) {
        CK(st.opens == n && st.closes == n && st.hits == 0, "cache off: one open per tensor");
        CK(st.entries == 0, "cache off: no entries");
    } else if (J->fault_first) {
        /* the failed open invalidated its entry; the retry had its own mapping (opened and
         * closed); the next import opened the pool through the cache again */
        CK(st.open_failures == 1 && st.fallbacks == 1 && st.invalidations == 1,
           "failures %llu", (unsigned long long)st.open_failures);
        CK(st.opens == 2 && st.closes == 1 && st.hits == n - 2, "opens %llu",
           (unsigned long long)st.opens);
    } else {
        /* one open per pool: the thousandth tensor of a pool costs a lookup */
        CK(st.opens == J->pools && st.hits == n - J->pools, "opens %llu, hits %llu",
           (unsigned long long)st.opens, (unsigned long long)st.hits);
        CK(st.fallbacks == 0 && st.invalidations == 0, "no fallback");
        CK(st.entries == J->pools, "entries %llu", (unsigned long long)st.entries);
    }
    CKV(vg_stream_destroy(s));
    return 0;
}

static void run(job *J, const char *const *consumer_env)
{
    int rc = ipc_pair(produce, consume, J, NULL, consumer_env);
    if (rc == VG_TEST_SKIP) skip();
    assert_int_equal(rc, 0);
}

static void test_thousand_tensors_one_open(void **state)
{
    (void)state;
    job J = {.tensors = 1000, .pools = 1, .seed = 7};
    run(&J, NULL);
}

static void test_cache_off(void **state)
{
    (void)state;
    job J = {.tensors = 120, .pools = 1, .seed = 9, .cache_off = 1, .set_off = 1};
    run(&J, NULL);
    /* and through the environment variable, as a deployment turns it off */
    static const char *const env[] = {"VG_IPC_POOL_CACHE=0", NULL};
    job K = {.tensors = 40, .pools = 2, .seed = 10, .cache_off = 1};
    run(&K, env);
}

/* A pool freed and created again in the same producer: the same size, likely the same fd
 * number (kunlun_stub) or the same device address (CUDA). The new pool's tensors must come from
 * the new pool (other patterns), through a new open. */
static void test_pool_recreated(void **state)
{
    (void)state;
    job J = {.tensors = 60, .pools = 3, .seed = 100};
    run(&J, NULL);
}

static void test_open_failure_falls_back(void **state)
{
    (void)state;
    if (!g_stub) skip(); /* fault injection is kunlun_stub's */
    static const char *const env[] = {"VG_STUB_FAULT=ipc_open:1", NULL};
    job J = {.tensors = 30, .pools = 1, .seed = 3, .fault_first = 1};
    run(&J, env);
}

/* ---- a producer that exits, and a new one ------------------------------------------------------ */

/* A producer of 20 tensors in one pool, seeded by arg; it exits after the consumer's "done". */
static int produce_once(vg_runtime *rt, int sock, void *arg)
{
    job J = {.tensors = 20, .pools = 1, .seed = (uint32_t)(uintptr_t)arg};
    return produce(rt, sock, &J);
}

typedef struct restart {
    int sock2; /* the second producer's socket */
} restart;

static int consume_restart(vg_runtime *rt, int sock, void *arg)
{
    const restart *R = arg;
    vg_stream *s = NULL;
    CKV(vg_stream_create(rt, &s));
    vg_ipc_stats_reset();
    vg_ipc_desc first[20];
    for (int round = 0; round < 2; round++) {
        int fd = round ? R->sock2 : sock;
        uint32_t seed = round ? 2000 : 1000;
        for (uint32_t i = 0; i < 20; i++) {
            vg_ipc_desc d;
            CK(ipc_recv_desc(fd, &d) == 0, "round %d: receive %u", round, i);
            if (!round) first[i] = d;
            else CK(memcmp(d.pool_id, first[0].pool_id, sizeof d.pool_id) != 0, "pool ids differ");
            vg_ipc_tensor x;
            CKV(vg_ipc_import(rt, &d, &x));
            uint64_t bad = 0;
            if (ipc_check(s, x.ptr, x.bytes, seed, i, &bad)) return 1;
            CK(bad == 0, "round %d tensor %u: %llu bytes from the wrong producer", round, i,
               (unsigned long long)bad);
            CKV(vg_ipc_release(&x));
        }
        CK(ipc_send_u32(fd, 0) == 0, "done");
        if (!round) { /* wait until the first producer is gone */
            uint32_t eof;
            CK(ipc_recv_u32(sock, &eof) != 0, "the first producer exited");
        }
    }
    vg_ipc_stats st = {.struct_size = sizeof st};
    vg_ipc_stats_get(&st);
    CK(st.opens == 2 && st.hits == 38 && st.entries == 2, "opens %llu hits %llu entries %llu",
       (unsigned long long)st.opens, (unsigned long long)st.hits, (unsigned long long)st.entries);
    /* told that the first pool is gone, the consumer drops its entry: the mapping closes */
    int dropped = 0;
    CKV(vg_ipc_cache_invalidate(&first[0], &dropped));
    vg_ipc_stats_get(&st);
    CK(dropped == 1 && st.invalidations == 1 && st.entries == 1, "invalidation: dropped %d",
       dropped);
    /* (a vendor may refuse to close a mapping whose exporter has exited: then it is gone) */
    CK(st.closes == 1 || !g_stub, "the mapping is closed: %llu", (unsigned long long)st.closes);
    /* a late descriptor of the dead producer's pool: an error, and no address */
    vg_ipc_tensor x;
    vg_status e = vg_ipc_import(rt, &first[3], &x);
    if (g_stub) {
        CK(e == VG_ERR_NOT_FOUND && x.ptr == NULL, "late descriptor: %s: %s", vg_status_name(e),
           vg_last_error());
        CK(strstr(vg_last_error(), "exited or freed") != NULL, "message: %s", vg_last_error());
    } else if (e == VG_OK) { /* the vendor may still map freed memory: nothing to check */
        CKV(vg_ipc_release(&x));
    }
    CKV(vg_stream_destroy(s));
    return 0;
}

static void test_producer_restarts(void **state)
{
    (void)state;
    int a[2], b[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
    restart R = {.sock2 = b[1]};
    pid_t c = ipc_spawn(consume_restart, a[1], a[0], &R, NULL);
    close(a[1]);
    close(b[1]);
    pid_t p1 = ipc_spawn(produce_once, a[0], b[0], (void *)(uintptr_t)1000, NULL);
    close(a[0]);
    int rc = ipc_wait(p1); /* exited: its pool and process are gone */
    pid_t p2 = ipc_spawn(produce_once, b[0], -1, (void *)(uintptr_t)2000, NULL);
    close(b[0]);
    rc = ipc_worst(rc, ipc_wait(p2));
    rc = ipc_worst(rc, ipc_wait(c));
    if (rc == VG_TEST_SKIP) skip();
    assert_int_equal(rc, 0);
}

/* ---- descriptors that lie -------------------------------------------------------------------- */

/* One pool of 64 KiB with one tensor at offset 0 and one at 4096, for the consumer to abuse. */
static int produce_small(vg_runtime *rt, int sock, void *arg)
{
    (void)arg;
    vg_stream *s = NULL;
    CKV(vg_stream_create(rt, &s));
    vg_ipc_pool *pool = NULL;
    CKV(vg_ipc_pool_create(rt, 65536, &pool));
    for (uint32_t i = 0; i < 2; i++) {
        vg_ipc_desc d;
        void *ptr = NULL;
        int64_t shape[1] = {i ? 1024 : 4096};
        CKV(vg_ipc_pool_alloc(pool, VG_DTYPE_U8, 1, shape, &d, &ptr));
        if (ipc_fill(s, ptr, d.bytes, 55, i)) return 1;
        CK(ipc_send_desc(sock, &d) == 0, "send");
    }
    uint32_t done;
    CK(ipc_recv_u32(sock, &done) == 0, "done");
    CKV(vg_ipc_pool_destroy(pool));
    CKV(vg_stream_destroy(s));
    return 0;
}

#define CK_FAILS(expr, want, needle)                                                          \
    do {                                                                                      \
        vg_ipc_tensor x_ = {.ptr = (void *)1};                                                \
        vg_error_clear();                                                                     \
        vg_status e_ = (expr);                                                                \
        CK(e_ == (want) && strstr(vg_last_error(), needle), "%s -> %s: '%s' (wanted %s, '%s')", \
           #expr, vg_status_name(e_), vg_last_error(), vg_status_name(want), needle);         \
        (void)x_;                                                                             \
    } while (0)

static int consume_lies(vg_runtime *rt, int sock, void *arg)
{
    (void)arg;
    vg_stream *s = NULL;
    CKV(vg_stream_create(rt, &s));
    vg_ipc_desc a, b;
    CK(ipc_recv_desc(sock, &a) == 0 && ipc_recv_desc(sock, &b) == 0, "receive");
    vg_ipc_stats_reset();
    vg_ipc_tensor x = {.ptr = (void *)1};

    /* a pool size the allocation does not have: refused against what the backend mapped, on
     * the first import (a fresh mapping: the descriptor is wrong, the entry stays) ... */
    vg_ipc_desc lie = b;
    lie.pool_bytes = 1ull << 40;
    lie.offset = (1ull << 40) - 1024; /* inside the claimed pool, far outside the real one */
    vg_error_clear();
    vg_status e = vg_ipc_import(rt, &lie, &x);
    CK(e == VG_ERR_FORMAT && x.ptr == NULL && strstr(vg_last_error(), "allocation mapped holds"),
       "forged pool size: %s: %s", vg_status_name(e), vg_last_error());
    vg_ipc_stats st = {.struct_size = sizeof st};
    vg_ipc_stats_get(&st);
    CK(st.opens == 1 && st.entries == 1 && st.invalidations == 0, "entry kept");
    /* ... and on a cached entry: invalidated, retried without the cache, refused again */
    e = vg_ipc_import(rt, &lie, &x);
    CK(e == VG_ERR_FORMAT && x.ptr == NULL && strstr(vg_last_error(), "retried without the cache"),
       "forged pool size, cached: %s: %s", vg_status_name(e), vg_last_error());
    vg_ipc_stats_get(&st);
    CK(st.invalidations == 1 && st.fallbacks == 1 && st.opens == 2 && st.entries == 0,
       "invalidated and retried: inv %llu fb %llu opens %llu", (unsigned long long)st.invalidations,
       (unsigned long long)st.fallbacks, (unsigned long long)st.opens);

    /* the honest descriptors still work (a new entry) */
    uint64_t bad = 0;
    CKV(vg_ipc_import(rt, &a, &x));
    if (ipc_check(s, x.ptr, x.bytes, 55, 0, &bad)) return 1;
    CK(bad == 0 && x.cached, "honest descriptor after lies");
    CKV(vg_ipc_release(&x));

    /* a handle that differs from the cached entry's: invalidated, retried on its own handle */
    lie = b;
    lie.handle.bytes[VG_IPC_HANDLE_BYTES - 1] ^= 0x5a;
    lie.handle.bytes[0] ^= 0xa5;
    vg_error_clear();
    e = vg_ipc_import(rt, &lie, &x);
    vg_ipc_stats_get(&st);
    CK(st.invalidations == 2 && st.fallbacks == 2, "altered handle invalidates");
    if (e == VG_OK) {
        /* a vendor may ignore the bytes altered (CUDA's handles have reserved ones): then the
         * retry's own mapping is the same memory */
        CK(!g_stub && !x.cached, "altered stub handles never open");
        if (ipc_check(s, x.ptr, x.bytes, 55, 1, &bad)) return 1;
        CK(bad == 0, "altered handle, same memory");
        CKV(vg_ipc_release(&x));
    } else {
        CK(x.ptr == NULL && strstr(vg_last_error(), "retried without the cache") &&
           strstr(vg_last_error(), "handle differs"), "altered handle: %s: %s",
           vg_status_name(e), vg_last_error());
    }

    /* a descriptor of another backend */
    lie = a;
    memset(lie.backend, 0, sizeof lie.backend);
    strcpy(lie.backend, g_stub ? "cuda" : "kunlun_stub");
    CK_FAILS(vg_ipc_import(rt, &lie, &x_), VG_ERR_UNSUPPORTED, "handles do not cross backends");
    /* descriptors built by hand are checked as decoding checks them */
    lie = a;
    lie.offset = a.pool_bytes - 8;
    CK_FAILS(vg_ipc_import(rt, &lie, &x_), VG_ERR_FORMAT, "lies outside its pool");
    lie = a;
    lie.version = 2;
    CK_FAILS(vg_ipc_import(rt, &lie, &x_), VG_ERR_FORMAT, "version 2");
    lie = a;
    lie.shape[0] = -4096;
    CK_FAILS(vg_ipc_import(rt, &lie, &x_), VG_ERR_FORMAT, "negative");
    /* none of these reached the backend */
    vg_ipc_stats st2 = {.struct_size = sizeof st2};
    vg_ipc_stats_get(&st2);
    CK(st2.opens + st2.open_failures == st.opens + st.open_failures, "refused before opening");
    CK(vg_ipc_import(rt, NULL, &x) == VG_ERR_INVALID_ARG, "NULL descriptor");
    CK(vg_ipc_import(rt, &a, NULL) == VG_ERR_INVALID_ARG, "NULL out");
    CK(vg_ipc_release(NULL) == VG_ERR_INVALID_ARG, "NULL release");
    vg_ipc_tensor none = {0};
    CKV(vg_ipc_release(&none)); /* a released or failed import: a no-op */

    CK(ipc_send_u32(sock, 0) == 0, "done");
    vg_ipc_cache_clear();
    vg_ipc_stats_get(&st);
    CK(st.entries == 0, "clear");
    CKV(vg_stream_destroy(s));
    return 0;
}

static void test_lying_descriptors(void **state)
{
    (void)state;
    int rc = ipc_pair(produce_small, consume_lies, NULL, NULL, NULL);
    if (rc == VG_TEST_SKIP) skip();
    assert_int_equal(rc, 0);
}

/* ---- a runtime closed with tensors imported -------------------------------------------------- */

static int consume_close_early(vg_runtime *rt, int sock, void *arg)
{
    (void)rt, (void)arg;
    vg_ipc_desc a, b;
    CK(ipc_recv_desc(sock, &a) == 0 && ipc_recv_desc(sock, &b) == 0, "receive");
    vg_runtime *rt2 = NULL;
    CKV(vg_runtime_open(NULL, &rt2));
    vg_ipc_stats_reset();
    vg_ipc_tensor x, y, z;
    CKV(vg_ipc_import(rt2, &a, &x));
    CKV(vg_ipc_import(rt2, &b, &y));
    vg_ipc_cache_set_enabled(0);
    CKV(vg_ipc_import(rt2, &b, &z)); /* a mapping of its own */
    vg_ipc_cache_set_enabled(1);
    CKV(vg_ipc_release(&y));
    /* x and z are still imported: closing the runtime closes their mappings, with a warning */
    CKV(vg_runtime_close(rt2));
    vg_ipc_stats st = {.struct_size = sizeof st};
    vg_ipc_stats_get(&st);
    CK(st.entries == 0 && st.closes == 2, "runtime close: entries %llu closes %llu",
       (unsigned long long)st.entries, (unsigned long long)st.closes);
    /* releasing afterwards touches no runtime */
    CKV(vg_ipc_release(&x));
    CKV(vg_ipc_release(&z));
    vg_ipc_stats_get(&st);
    CK(st.closes == 2, "no second close");
    /* the first runtime still imports */
    CKV(vg_ipc_import(rt, &a, &x));
    CKV(vg_ipc_release(&x));
    CK(ipc_send_u32(sock, 0) == 0, "done");
    return 0;
}

static void test_runtime_closed_with_imports(void **state)
{
    (void)state;
    int rc = ipc_pair(produce_small, consume_close_early, NULL, NULL, NULL);
    if (rc == VG_TEST_SKIP) skip();
    assert_int_equal(rc, 0);
}

/* ---- the producer's pool ------------------------------------------------------------------------ */

static int pool_role(vg_runtime *rt, int sock, void *arg)
{
    (void)sock, (void)arg;
    vg_ipc_pool *p = NULL;
    CK(vg_ipc_pool_create(rt, 0, &p) == VG_ERR_INVALID_ARG && !p, "0 bytes");
    CK(vg_ipc_pool_create(NULL, 64, &p) == VG_ERR_INVALID_ARG, "NULL runtime");
    CKV(vg_ipc_pool_create(rt, 4096 + 100, &p));
    CK(vg_ipc_pool_size(p) == 4196 && vg_ipc_pool_used(p) == 0 && vg_ipc_pool_base(p), "size");
    vg_ipc_desc d[8];
    void *ptr[8];
    int64_t n1k[1] = {1024}, n100[1] = {100}, n5000[1] = {5000};
    /* 4 x 1 KiB fill 4096 bytes, then 100 bytes fit the tail exactly */
    for (int i = 0; i < 4; i++) {
        CKV(vg_ipc_pool_alloc(p, VG_DTYPE_U8, 1, n1k, &d[i], &ptr[i]));
        CK(d[i].offset == (uint64_t)i * 1024, "first fit: offset %llu", (unsigned long long)d[i].offset);
        CK((char *)ptr[i] == (char *)vg_ipc_pool_base(p) + d[i].offset, "address");
    }
    CKV(vg_ipc_pool_alloc(p, VG_DTYPE_U8, 1, n100, &d[4], &ptr[4]));
    CK(d[4].offset == 4096, "tail");
    vg_error_clear();
    CK(vg_ipc_pool_alloc(p, VG_DTYPE_U8, 1, n100, &d[5], &ptr[5]) == VG_ERR_OUT_OF_MEMORY &&
       strstr(vg_last_error(), "no free range") && !ptr[5], "full: %s", vg_last_error());
    CK(vg_ipc_pool_alloc(p, VG_DTYPE_U8, 1, n5000, &d[5], &ptr[5]) == VG_ERR_OUT_OF_MEMORY,
       "larger than the pool");
    /* free the second: a 1 KiB hole that 256 floats fit, and 257 do not */
    CKV(vg_ipc_pool_free(p, &d[1]));
    CK(vg_ipc_pool_free(p, &d[1]) == VG_ERR_INVALID_ARG, "double free");
    int64_t f257[1] = {257}, f256[1] = {256};
    CK(vg_ipc_pool_alloc(p, VG_DTYPE_F32, 1, f257, &d[5], &ptr[5]) == VG_ERR_OUT_OF_MEMORY, "hole");
    CKV(vg_ipc_pool_alloc(p, VG_DTYPE_F32, 1, f256, &d[5], &ptr[5]));
    CK(d[5].offset == 1024, "the hole is reused");
    /* shapes the descriptor cannot hold */
    int64_t big[2] = {INT64_MAX / 2, 4}, neg[2] = {4, -1}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CK(vg_ipc_pool_alloc(p, VG_DTYPE_F32, 2, big, &d[6], &ptr[6]) == VG_ERR_INVALID_ARG, "overflow");
    CK(vg_ipc_pool_alloc(p, VG_DTYPE_F32, 2, neg, &d[6], &ptr[6]) == VG_ERR_INVALID_ARG, "negative");
    CK(vg_ipc_pool_alloc(p, VG_DTYPE_F32, 9, nine, &d[6], &ptr[6]) == VG_ERR_INVALID_ARG, "ndim 9");
    CK(vg_ipc_pool_alloc(p, VG_DTYPE_COUNT_, 1, n1k, &d[6], &ptr[6]) == VG_ERR_INVALID_ARG, "dtype");
    /* every descriptor it made encodes, and names the pool's backend and this process */
    unsigned char buf[VG_IPC_DESC_BYTES];
    CKV(vg_ipc_desc_encode(&d[5], buf));
    CK(strcmp(d[5].backend, vg_runtime_backend_name(rt)) == 0 && d[5].producer_pid == getpid(),
       "identity");
    /* a descriptor of another pool is refused */
    vg_ipc_pool *q = NULL;
    CKV(vg_ipc_pool_create(rt, 512, &q));
    CK(memcmp(d[0].pool_id, d[5].pool_id, VG_IPC_POOL_ID_BYTES) == 0, "one id per pool");
    vg_ipc_desc other;
    void *optr;
    CKV(vg_ipc_pool_alloc(q, VG_DTYPE_U8, 0, NULL, &other, &optr)); /* a scalar */
    CK(other.bytes == 1 && memcmp(other.pool_id, d[0].pool_id, VG_IPC_POOL_ID_BYTES) != 0, "ids");
    CK(vg_ipc_pool_free(p, &other) == VG_ERR_INVALID_ARG, "foreign descriptor");
    CKV(vg_ipc_pool_destroy(q));
    CKV(vg_ipc_pool_destroy(p)); /* with tensors still carved out */
    CKV(vg_ipc_pool_destroy(NULL));
    return 0;
}

static void test_pool_allocator(void **state)
{
    (void)state;
    pid_t pid = ipc_spawn(pool_role, -1, -1, NULL, NULL);
    int rc = ipc_wait(pid);
    if (rc == VG_TEST_SKIP) skip();
    assert_int_equal(rc, 0);
}

/* A device without IPC: a clear refusal on both sides. */
static int noipc_role(vg_runtime *rt, int sock, void *arg)
{
    (void)sock, (void)arg;
    CK(!(vg_runtime_caps(rt) & VG_CAP_IPC), "VG_STUB_CAPS=noipc");
    vg_ipc_pool *p = NULL;
    vg_error_clear();
    CK(vg_ipc_pool_create(rt, 4096, &p) == VG_ERR_UNSUPPORTED && !p &&
       strstr(vg_last_error(), "no IPC capability"), "pool: %s", vg_last_error());
    vg_ipc_desc d;
    memset(&d, 0, sizeof d);
    d.version = VG_IPC_DESC_VERSION;
    strcpy(d.backend, "kunlun_stub");
    d.producer_pid = 1, d.pool_bytes = 64, d.dtype = VG_DTYPE_U8;
    vg_ipc_tensor x;
    CK(vg_ipc_import(rt, &d, &x) == VG_ERR_UNSUPPORTED, "import");
    return 0;
}

static void test_no_ipc_capability(void **state)
{
    (void)state;
    if (!g_stub) skip();
    static const char *const env[] = {"VG_STUB_CAPS=noipc", NULL};
    assert_int_equal(ipc_wait(ipc_spawn(noipc_role, -1, -1, NULL, env)), 0);
}

/* ---- descriptors, in this process (no device) ------------------------------------------------- */

static vg_ipc_desc valid_desc(void)
{
    vg_ipc_desc d;
    memset(&d, 0, sizeof d);
    d.version = VG_IPC_DESC_VERSION;
    strcpy(d.backend, "kunlun_stub");
    for (int i = 0; i < VG_IPC_POOL_ID_BYTES; i++) d.pool_id[i] = (unsigned char)(17 * i + 3);
    d.producer_pid = 4242;
    d.device = 1;
    d.pool_bytes = 1 << 20;
    d.offset = 4096;
    d.dtype = VG_DTYPE_BF16;
    d.ndim = 3;
    d.shape[0] = 2, d.shape[1] = 3, d.shape[2] = 5;
    d.bytes = 2 * 3 * 5 * 2;
    for (int i = 0; i < VG_IPC_HANDLE_BYTES; i++) d.handle.bytes[i] = (unsigned char)(255 - i);
    return d;
}

static void expect_refused(const unsigned char *buf, size_t len, const char *needle)
{
    vg_ipc_desc d;
    memset(&d, 0x77, sizeof d);
    VG_CHECK_FAILS(vg_ipc_desc_decode(buf, len, &d), VG_ERR_FORMAT, needle);
    vg_ipc_desc zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&d, &zero, sizeof d); /* nothing half-parsed is left behind */
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void test_descriptor_round_trip(void **state)
{
    (void)state;
    vg_ipc_desc d = valid_desc(), back;
    unsigned char buf[VG_IPC_DESC_BYTES];
    VG_CHECK(vg_ipc_desc_encode(&d, buf));
    assert_memory_equal(buf, "vgipcdsc", 8);
    VG_CHECK(vg_ipc_desc_decode(buf, sizeof buf, &back));
    assert_memory_equal(&d, &back, sizeof d);
    /* the layout is fixed: offset 64 holds the tensor's offset, little-endian */
    assert_int_equal(buf[64], 0x00);
    assert_int_equal(buf[65], 0x10);
    /* a scalar and an empty tensor are descriptors too */
    d.ndim = 0, d.shape[0] = d.shape[1] = d.shape[2] = 0, d.bytes = 2;
    VG_CHECK(vg_ipc_desc_encode(&d, buf));
    VG_CHECK(vg_ipc_desc_decode(buf, sizeof buf, &back));
    d.ndim = 2, d.shape[0] = 0, d.shape[1] = 1ll << 62, d.bytes = 0, d.offset = d.pool_bytes;
    VG_CHECK(vg_ipc_desc_encode(&d, buf));
    VG_CHECK(vg_ipc_desc_decode(buf, sizeof buf, &back));
}

static void test_hostile_descriptors(void **state)
{
    (void)state;
    const vg_ipc_desc good = valid_desc();
    unsigned char ok[VG_IPC_DESC_BYTES], buf[VG_IPC_DESC_BYTES];
    VG_CHECK(vg_ipc_desc_encode(&good, ok));
#define MUTATE(stmt, needle)                                                                   \
    do {                                                                                       \
        memcpy(buf, ok, sizeof buf);                                                           \
        stmt;                                                                                  \
        expect_refused(buf, sizeof buf, needle);                                               \
    } while (0)
    expect_refused(ok, sizeof ok - 1, "256 bytes");
    expect_refused(ok, 10, "not a vg IPC descriptor");
    expect_refused(ok, 0, "not a vg IPC descriptor");
    MUTATE(buf[0] = 'X', "wrong magic");
    MUTATE(buf[8] = 2, "version 2 is not one this vg reads");
    MUTATE(buf[8] = 0, "version 0");
    MUTATE(buf[13] = 0, "size field of 0");
    MUTATE(buf[250] = 1, "reserved byte 250");
    MUTATE(memset(buf + 16, 'a', 16), "not NUL-terminated");
    MUTATE(buf[16] = 0, "backend name is empty");
    MUTATE(buf[18] = '/', "byte 0x2f");
    MUTATE(buf[30] = 'z', "after the backend name");
    MUTATE(put_u64(buf + 48, 0), "producer pid 0");
    MUTATE(buf[52 + 3] = 0x80, "device index");
    MUTATE(buf[80] = 6, "dtype 6 is unknown");
    MUTATE(buf[83] = 0x80, "is unknown");
    MUTATE(buf[84] = 9, "ndim 9");
    MUTATE(buf[87] = 0xff, "ndim -");
    MUTATE(put_u64(buf + 88 + 8, (uint64_t)-3), "shape[1] is negative");
    MUTATE(put_u64(buf + 88 + 24, 1), "shape[3] is 1 beyond ndim 3");
    /* overflowing shapes: the element count, then the byte count */
    MUTATE((put_u64(buf + 88, 1ull << 32), put_u64(buf + 96, 1ull << 32), put_u64(buf + 104, 16)),
           "element count overflows");
    MUTATE((put_u64(buf + 88, 1ull << 62), put_u64(buf + 96, 2), put_u64(buf + 104, 1)),
           "byte count overflows");
    MUTATE(put_u64(buf + 72, 61), "disagree with the shape");
    MUTATE(put_u64(buf + 56, 0), "pool size is 0");
    MUTATE(put_u64(buf + 64, (1 << 20) - 32), "lies outside its pool");
    MUTATE(put_u64(buf + 64, UINT64_MAX - 8), "lies outside its pool"); /* offset + bytes wraps */
    MUTATE(put_u64(buf + 56, 100), "lies outside its pool");
    MUTATE(put_u64(buf + 64, 4097), "not a multiple of the BF16 element size");
#undef MUTATE
    /* encode refuses what decode would */
    vg_ipc_desc d = good;
    d.bytes++;
    VG_CHECK_FAILS(vg_ipc_desc_encode(&d, buf), VG_ERR_FORMAT, "disagree");
    VG_CHECK_FAILS(vg_ipc_desc_encode(&good, NULL), VG_ERR_INVALID_ARG, "NULL");
    VG_CHECK_FAILS(vg_ipc_desc_decode(NULL, 256, &d), VG_ERR_INVALID_ARG, "NULL");
    VG_CHECK_FAILS(vg_ipc_desc_decode(ok, 256, NULL), VG_ERR_INVALID_ARG, "NULL");
    /* the cache's own entry points take anything */
    int dropped = 5;
    VG_CHECK(vg_ipc_cache_invalidate(&good, &dropped));
    assert_int_equal(dropped, 0);
    VG_CHECK_FAILS(vg_ipc_cache_invalidate(NULL, NULL), VG_ERR_INVALID_ARG, "NULL");
    vg_ipc_cache_clear();
    vg_ipc_stats st = {.struct_size = 12}; /* an older caller's smaller struct */
    vg_ipc_stats_get(&st);
    vg_ipc_stats_get(NULL);
}

int main(void)
{
    const char *req = getenv("VG_REQUIRE_DEVICE");
    char backend[64];
    int ready = ipc_device_ready(backend);
    if (ready == VG_TEST_SKIP && !(req && strcmp(req, "1") == 0)) {
        const char *asked = getenv("VG_BACKEND");
        printf("SKIP: no device with IPC (VG_BACKEND=%s%s)\n", asked ? asked : "",
               backend[0] ? ", it opened but offers no IPC" : "");
        return VG_TEST_SKIP;
    }
    if (ready != 0) return 1;
    g_stub = strcmp(backend, "kunlun_stub") == 0;
    printf("IPC tests on backend '%s'\n", backend);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptor_round_trip),
        cmocka_unit_test(test_hostile_descriptors),
        cmocka_unit_test(test_pool_allocator),
        cmocka_unit_test(test_thousand_tensors_one_open),
        cmocka_unit_test(test_cache_off),
        cmocka_unit_test(test_pool_recreated),
        cmocka_unit_test(test_producer_restarts),
        cmocka_unit_test(test_open_failure_falls_back),
        cmocka_unit_test(test_lying_descriptors),
        cmocka_unit_test(test_runtime_closed_with_imports),
        cmocka_unit_test(test_no_ipc_capability),
    };
    return cmocka_run_group_tests_name("ipc", tests, NULL, NULL) ? 1 : 0;
}
