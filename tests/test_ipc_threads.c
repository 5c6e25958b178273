/* SPDX-License-Identifier: Apache-2.0 */
/* The IPC importer under concurrency (run under ThreadSanitizer by scripts/sanitize.sh): a
 * producer process exports POOLS pools of TENSORS tensors each; in a consumer process, THREADS
 * threads released together import every descriptor, each in its own order, and check the
 * bytes on their own stream.
 *  1. all at once, on an empty cache: exactly one open per pool, every other import a hit;
 *  2. again, while a ninth thread keeps invalidating the pools and clearing the cache (the
 *     workers go on until it has dropped 30 entries under them): more opens then, but every
 *     byte right, no mapping closed under a tensor in use, and every mapping closed once its
 *     last tensor is released. */
#include <pthread.h>
#include <sched.h>

#include "ipc_util.h"

enum { POOLS = 3, TENSORS = 40, THREADS = 8, BYTES = 3000 };

static int produce(vg_runtime *rt, int sock, void *arg)
{
    (void)arg;
    vg_stream *s = NULL;
    CKV(vg_stream_create(rt, &s));
    vg_ipc_pool *pools[POOLS];
    for (int p = 0; p < POOLS; p++) {
        CKV(vg_ipc_pool_create(rt, (size_t)TENSORS * 3072, &pools[p]));
        for (uint32_t i = 0; i < TENSORS; i++) {
            vg_ipc_desc d;
            void *ptr = NULL;
            int64_t shape[2] = {BYTES / 4, 4};
            CKV(vg_ipc_pool_alloc(pools[p], VG_DTYPE_U8, 2, shape, &d, &ptr));
            if (ipc_fill(s, ptr, d.bytes, (uint32_t)p, i)) return 1;
            CK(ipc_send_desc(sock, &d) == 0, "send");
        }
    }
    uint32_t done;
    CK(ipc_recv_u32(sock, &done) == 0, "consumer done");
    for (int p = 0; p < POOLS; p++) CKV(vg_ipc_pool_destroy(pools[p]));
    CKV(vg_stream_destroy(s));
    return 0;
}

typedef struct shared {
    vg_runtime *rt;
    vg_ipc_desc desc[POOLS * TENSORS];
    pthread_barrier_t go;
    int stop;       /* __atomic: the invalidator stops */
    int dropped;    /* __atomic: entries the invalidator dropped */
    int min_drops;  /* workers go on importing until the invalidator dropped this many */
    long imports;   /* __atomic: imports the workers made */
} shared;

typedef struct worker {
    shared *sh;
    int index;
    int failed;
} worker;

static int import_all(worker *w)
{
    shared *sh = w->sh;
    vg_stream *s = NULL;
    CKV(vg_stream_create(sh->rt, &s));
    const int n = POOLS * TENSORS;
    for (int k = 0; k < n; k++) {
        int j = (k * 7 + w->index * 13) % n; /* an order of its own: pools met in turns */
        const vg_ipc_desc *d = &sh->desc[j];
        vg_ipc_tensor x;
        CKV(vg_ipc_import(sh->rt, d, &x));
        uint64_t bad = 0;
        if (ipc_check(s, x.ptr, x.bytes, (uint32_t)(j / TENSORS), (uint32_t)(j % TENSORS), &bad))
            return 1;
        CK(bad == 0, "thread %d: tensor %d: %llu bytes differ", w->index, j, (unsigned long long)bad);
        CKV(vg_ipc_release(&x));
    }
    CKV(vg_stream_destroy(s));
    return 0;
}

static void *run_worker(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    pthread_barrier_wait(&sh->go);
    /* once at least; in round 2 until the invalidator has interfered enough (bounded) */
    for (int pass = 0; pass < 1000 && !w->failed; pass++) {
        w->failed = import_all(w);
        __atomic_add_fetch(&sh->imports, POOLS * TENSORS, __ATOMIC_RELAXED);
        if (__atomic_load_n(&sh->dropped, __ATOMIC_ACQUIRE) >= sh->min_drops) break;
    }
    return NULL;
}

/* Round 2's troublemaker: invalidates pool after pool, now and then clears everything. */
static void *run_invalidator(void *arg)
{
    shared *sh = arg;
    pthread_barrier_wait(&sh->go);
    for (unsigned k = 0; !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE); k++) {
        int n = 0;
        if (k % 5 == 4) {
            vg_ipc_stats before = {.struct_size = sizeof before}, after = before;
            vg_ipc_stats_get(&before);
            vg_ipc_cache_clear();
            vg_ipc_stats_get(&after);
            n = after.invalidations > before.invalidations; /* at least one of its own */
        } else {
            vg_ipc_cache_invalidate(&sh->desc[(k % POOLS) * TENSORS], &n);
        }
        __atomic_add_fetch(&sh->dropped, n, __ATOMIC_RELEASE);
        sched_yield();
    }
    return NULL;
}

static int round_of(shared *sh, int with_invalidator)
{
    pthread_t t[THREADS + 1];
    worker w[THREADS];
    int parties = THREADS + (with_invalidator ? 1 : 0);
    CK(pthread_barrier_init(&sh->go, NULL, (unsigned)parties) == 0, "barrier");
    __atomic_store_n(&sh->stop, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&sh->dropped, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&sh->imports, 0, __ATOMIC_RELEASE);
    sh->min_drops = with_invalidator ? 30 : 0;
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){sh, i, 0};
        CK(pthread_create(&t[i], NULL, run_worker, &w[i]) == 0, "thread");
    }
    if (with_invalidator) CK(pthread_create(&t[THREADS], NULL, run_invalidator, sh) == 0, "thread");
    int failed = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        failed |= w[i].failed;
    }
    __atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
    if (with_invalidator) pthread_join(t[THREADS], NULL);
    pthread_barrier_destroy(&sh->go);
    return failed;
}

static int consume(vg_runtime *rt, int sock, void *arg)
{
    (void)arg;
    static shared sh;
    sh.rt = rt;
    for (int j = 0; j < POOLS * TENSORS; j++)
        CK(ipc_recv_desc(sock, &sh.desc[j]) == 0, "receive %d", j);
    CK(vg_ipc_cache_enabled(), "the cache is on by default");

    vg_ipc_stats_reset();
    CK(round_of(&sh, 0) == 0, "round 1");
    vg_ipc_stats st = {.struct_size = sizeof st};
    vg_ipc_stats_get(&st);
    const uint64_t n = (uint64_t)THREADS * POOLS * TENSORS;
    printf("round 1: %llu imports by %d threads: %llu opens, %llu hits\n",
           (unsigned long long)st.imports, THREADS, (unsigned long long)st.opens,
           (unsigned long long)st.hits);
    CK(st.imports == n, "imports %llu", (unsigned long long)st.imports);
    CK(st.opens == POOLS && st.open_failures == 0, "one open per pool: %llu opens",
       (unsigned long long)st.opens);
    CK(st.hits == n - POOLS && st.fallbacks == 0 && st.entries == POOLS, "hits %llu",
       (unsigned long long)st.hits);

    vg_ipc_cache_clear();
    vg_ipc_stats_reset();
    CK(round_of(&sh, 1) == 0, "round 2");
    vg_ipc_cache_clear();
    vg_ipc_stats_get(&st);
    long imports = __atomic_load_n(&sh.imports, __ATOMIC_ACQUIRE);
    printf("round 2, %d entries invalidated meanwhile: %llu imports, %llu opens, %llu hits, %llu "
           "invalidations, %llu fallbacks, %llu closes\n", __atomic_load_n(&sh.dropped, __ATOMIC_ACQUIRE),
           (unsigned long long)st.imports, (unsigned long long)st.opens, (unsigned long long)st.hits,
           (unsigned long long)st.invalidations, (unsigned long long)st.fallbacks,
           (unsigned long long)st.closes);
    CK(st.imports == (uint64_t)imports && st.hits + st.opens - st.fallbacks == st.imports,
       "imports %llu of %ld", (unsigned long long)st.imports, imports);
    CK(st.opens > POOLS, "the invalidations made imports open pools again");
    CK(st.closes == st.opens && st.entries == 0, "every mapping closed once: %llu of %llu",
       (unsigned long long)st.closes, (unsigned long long)st.opens);
    CK(ipc_send_u32(sock, 0) == 0, "done");
    return 0;
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
    int rc = ipc_pair(produce, consume, NULL, NULL, NULL);
    printf("ipc threads: %s\n", rc == 0 ? "passed" : "FAILED");
    return rc;
}
