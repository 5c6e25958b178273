/* SPDX-License-Identifier: Apache-2.0 */
/* Communicators (ABI 1.5, vg_comm.h) of the CUDA backend over NCCL, and of the hip backend over
 * RCCL (the same API; vendor.h names the header and the library).
 *
 * The library is dlopen()ed (VG_NCCL_LIBRARY, else libnccl.so.2 / librccl.so.1 on the loader's
 * path or beside the vendor runtime the plugin uses) the first time a device reports its
 * capabilities: the plugin loads and works without it, only without
 * VG_CAP_COMM, and comm_id_make then says what is missing. Built without the header (a toolkit
 * without nccl.h: CMake says so), the backend has no communicators at all.
 *
 * Bounded failure. A communicator is created non-blocking and polled against the deadline
 * (VG_COMM_TIMEOUT_MS, passed by the core). At creation the ranks exchange their process ids and
 * hosts (one all-gather), so that a waiting rank can tell which peer of its machine died. While
 * communicators live on a device, stream_sync and event_sync do not block in the driver: they
 * poll the work, the communicators' asynchronous errors and the peers' processes, and on an
 * error, a dead peer or the deadline they abort the device's communicators (which frees the
 * kernels waiting in them) and fail with a message naming the rank. An aborted communicator
 * refuses every later collective with VG_ERR_STATE. NCCL's own teardown (abort, destroy) runs on
 * a thread of its own, waited for within the deadline: it blocks until the graphs that captured
 * the communicator are destroyed (see reclaim below).
 *
 * NVLink multicast (NVLS) is off unless the environment says otherwise (NCCL_NVLS_ENABLE=0 is
 * set, never overwritten, before the library is first used), and so are lazy connections
 * (NCCL_RUNTIME_CONNECT=0, likewise). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.cuh"

#if VG_HAVE_NCCL
#include VG_VENDOR_NCCL_HEADER
#endif

#if VG_HAVE_NCCL && defined(NCCL_CONFIG_INITIALIZER)

static_assert(sizeof(ncclUniqueId) == VG_COMM_ID_BYTES, "vg's comm id holds NCCL's unique id");

/* ---- the library ---------------------------------------------------------------------------- */

static struct {
    decltype(&ncclGetVersion) GetVersion;
    decltype(&ncclGetUniqueId) GetUniqueId;
    decltype(&ncclCommInitRankConfig) CommInitRankConfig;
    decltype(&ncclCommGetAsyncError) CommGetAsyncError;
    decltype(&ncclCommFinalize) CommFinalize;
    decltype(&ncclCommDestroy) CommDestroy;
    decltype(&ncclCommAbort) CommAbort;
    decltype(&ncclAllReduce) AllReduce;
    decltype(&ncclAllGather) AllGather;
    decltype(&ncclGetErrorString) GetErrorString;
    int version; /* NCCL_VERSION_CODE of the loaded library */
    int loaded;
    char why[600]; /* why it did not load */
} g_nccl;
static pthread_once_t g_nccl_once = PTHREAD_ONCE_INIT;

static void nccl_load(void)
{
    /* NVLink multicast stays off on vg's machines unless the user asks for it; connections are
     * made at creation, not lazily inside a collective (which a non-blocking communicator would
     * do in the background, possibly while the stream captures) */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    setenv("NCCL_RUNTIME_CONNECT", "0", 0);
    const char *path = getenv("VG_NCCL_LIBRARY");
    int named = path && *path;
    if (!named) path = VG_VENDOR_NCCL_LIBRARY;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    char err[300], beside[1024];
    snprintf(err, sizeof err, "%s", h ? "" : dlerror());
    Dl_info rt;
    if (!h && !named && dladdr((void *)cudaRuntimeGetVersion, &rt) && rt.dli_fname &&
        strrchr(rt.dli_fname, '/')) {
        /* the toolkit's lib directory, where the runtime this plugin uses was found */
        int dir = (int)(strrchr(rt.dli_fname, '/') - rt.dli_fname);
        snprintf(beside, sizeof beside, "%.*s/%s", dir, rt.dli_fname, VG_VENDOR_NCCL_LIBRARY);
        h = dlopen(beside, RTLD_NOW | RTLD_LOCAL);
        if (h) path = beside;
    }
    if (!h) {
        snprintf(g_nccl.why, sizeof g_nccl.why, "cannot load " VG_VENDOR_NCCL_NAME " (%s): %s; "
                 "install it or set VG_NCCL_LIBRARY to its path", path, err);
        return;
    }
    struct {
        void **slot;
        const char *name;
    } syms[] = {
        {(void **)&g_nccl.GetVersion, "ncclGetVersion"},
        {(void **)&g_nccl.GetUniqueId, "ncclGetUniqueId"},
        {(void **)&g_nccl.CommInitRankConfig, "ncclCommInitRankConfig"},
        {(void **)&g_nccl.CommGetAsyncError, "ncclCommGetAsyncError"},
        {(void **)&g_nccl.CommFinalize, "ncclCommFinalize"},
        {(void **)&g_nccl.CommDestroy, "ncclCommDestroy"},
        {(void **)&g_nccl.CommAbort, "ncclCommAbort"},
        {(void **)&g_nccl.AllReduce, "ncclAllReduce"},
        {(void **)&g_nccl.AllGather, "ncclAllGather"},
        {(void **)&g_nccl.GetErrorString, "ncclGetErrorString"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot) {
            snprintf(g_nccl.why, sizeof g_nccl.why, "%s has no %s (" VG_VENDOR_NCCL_NAME " 2.14 "
                     "or newer is needed)", path, syms[i].name);
            dlclose(h);
            return;
        }
    }
    if (g_nccl.GetVersion(&g_nccl.version) != ncclSuccess) {
        snprintf(g_nccl.why, sizeof g_nccl.why, "%s: ncclGetVersion failed", path);
        dlclose(h);
        return;
    }
    g_nccl.loaded = 1; /* kept loaded for the life of the process */
}

static int nccl_ready(void)
{
    pthread_once(&g_nccl_once, nccl_load);
    return g_nccl.loaded;
}

uint64_t vgc_comm_caps(void)
{
    if (!nccl_ready()) return 0;
    /* collectives are capturable into CUDA graphs since NCCL 2.9 */
    return VG_CAP_COMM | (g_nccl.version >= 20900 ? VG_CAP_COMM_CAPTURE : 0);
}

/* ---- communicators ---------------------------------------------------------------------------- */

typedef struct peer {
    int32_t pid;
    uint32_t host; /* a hash of the host's name: pids mean something only on the same host */
} peer;

struct vg_bk_comm {
    vg_bk_device *dev;
    ncclComm_t nccl; /* NULL once aborted */
    int rank, nranks, timeout_ms;
    peer *peers;      /* every rank's, after creation */
    char broken[400]; /* why it was aborted; "" while it is usable */
    struct reclaim *teardown; /* NCCL's teardown on its thread, until comm_destroy waited */
    vg_bk_comm *next;
};

/* The live communicators of the process, for stream_sync and event_sync. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static vg_bk_comm *g_comms;
static int g_live; /* how many: read without the lock on every sync */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Between two polls: yield for the first 2 ms (a decode step's synchronisation must not pay a
 * sleep's granularity), then sleep 50 us at a time. */
static void nap(double waited_ms)
{
    if (waited_ms < 2.0) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
}

static uint32_t host_hash(void)
{
    char name[256] = {0};
    gethostname(name, sizeof name - 1);
    uint32_t h = 2166136261u;
    for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    return h;
}

/* Whether process `pid` has ended: gone, or a zombie its parent has not reaped yet. */
static int pid_dead(int32_t pid)
{
    if (kill(pid, 0) != 0) return errno == ESRCH;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close = strrchr(buf, ')');
    return close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

/* A peer of this host that died, as "rank 1 (pid 4242) died"; 0 when none did. */
static int dead_peer(const vg_bk_comm *c, char *out, size_t cap)
{
    if (!c->peers) return 0;
    for (int r = 0; r < c->nranks; r++) {
        const peer *p = &c->peers[r];
        if (r == c->rank || p->host != c->peers[c->rank].host || p->pid <= 0) continue;
        if (pid_dead(p->pid)) {
            snprintf(out, cap, "rank %d (pid %d) died", r, (int)p->pid);
            return 1;
        }
    }
    return 0;
}

/* NCCL's teardown runs on a thread of its own. ncclCommAbort raises the abort flag (the kernels
 * waiting in the communicator return) and then, like ncclCommDestroy, reclaims the communicator,
 * which since NCCL 2.26 blocks until every CUDA graph that captured its collectives is destroyed
 * (commDestroySync polls localPersistentRefs). An abort is wanted exactly while such a graph may
 * still exist: a replay failed and the caller still holds the graph. Called on the caller's
 * thread, the abort would never return (and the graph never be destroyed). On a thread of its
 * own it frees the kernels at once and finishes when the caller destroys the graph;
 * comm_destroy waits for it within the deadline. */
enum { RECLAIM_RUNNING, RECLAIM_DONE, RECLAIM_ORPHANED };

typedef struct reclaim {
    ncclComm_t nccl;
    int aborting;        /* ncclCommAbort, else ncclCommDestroy */
    int state;           /* RECLAIM_*, atomic */
    ncclResult_t result; /* NCCL's answer, once done */
    pthread_t thread;
} reclaim;

static void *reclaim_main(void *arg)
{
    reclaim *r = (reclaim *)arg;
    r->result = r->aborting ? g_nccl.CommAbort(r->nccl) : g_nccl.CommDestroy(r->nccl);
    int running = RECLAIM_RUNNING;
    /* nobody waits any more (the communicator was destroyed before its graphs): free it here */
    if (!__atomic_compare_exchange_n(&r->state, &running, RECLAIM_DONE, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        free(r);
    return NULL;
}

/* Start the teardown of `nccl`; NULL when it already ran here (no thread could be made: then it
 * runs on the caller's thread, as before). */
static reclaim *reclaim_start(ncclComm_t nccl, int aborting)
{
    reclaim *r = (reclaim *)calloc(1, sizeof *r);
    if (r) {
        r->nccl = nccl;
        r->aborting = aborting;
        r->state = RECLAIM_RUNNING;
        if (pthread_create(&r->thread, NULL, reclaim_main, r) == 0) return r;
        free(r);
    }
    (void)(aborting ? g_nccl.CommAbort(nccl) : g_nccl.CommDestroy(nccl));
    return NULL;
}

/* Wait for r until timeout_ms; 1 when it finished (r is freed), 0 when it still runs (it is left
 * to finish on its own, and frees itself). */
static int reclaim_finish(reclaim *r, int timeout_ms, ncclResult_t *result)
{
    *result = ncclSuccess;
    if (!r) return 1;
    double start = now_ms();
    while (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == RECLAIM_RUNNING &&
           now_ms() - start < timeout_ms)
        nap(now_ms() - start);
    int running = RECLAIM_RUNNING;
    if (__atomic_compare_exchange_n(&r->state, &running, RECLAIM_ORPHANED, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        (void)pthread_detach(r->thread);
        return 0;
    }
    (void)pthread_join(r->thread, NULL);
    *result = r->result;
    free(r);
    return 1;
}

/* Abort c (its kernels return; its resources go once no graph holds them) and remember why. */
static void comm_abort(vg_bk_comm *c, const char *why)
{
    if (!c->nccl) return;
    snprintf(c->broken, sizeof c->broken, "%s", why);
    c->teardown = reclaim_start(c->nccl, 1);
    c->nccl = NULL;
}

/* c's asynchronous error, as text; 0 while it has none (or is still working). */
static int comm_error(vg_bk_comm *c, char *out, size_t cap)
{
    if (!c->nccl) return 0;
    ncclResult_t st = ncclSuccess;
    ncclResult_t r = g_nccl.CommGetAsyncError(c->nccl, &st);
    if (r != ncclSuccess) st = r;
    if (st == ncclSuccess || st == ncclInProgress) return 0;
    snprintf(out, cap, VG_VENDOR_NCCL_NAME " reports %s", g_nccl.GetErrorString(st));
    return 1;
}

/* Wait until c's pending host-side operation (init, finalize, a non-blocking enqueue) is done. */
static vg_status comm_settle(vg_bk_comm *c, const char *what)
{
    double start = now_ms(), deadline = start + c->timeout_ms;
    for (;;) {
        ncclResult_t st = ncclSuccess;
        ncclResult_t r = g_nccl.CommGetAsyncError(c->nccl, &st);
        if (r != ncclSuccess) st = r;
        if (st == ncclSuccess) return VG_OK;
        char why[400], dead[120];
        if (st != ncclInProgress) {
            snprintf(why, sizeof why, VG_VENDOR_NAME ": rank %d of %d: %s: " VG_VENDOR_NCCL_NAME
                     " reports %s", c->rank, c->nranks, what, g_nccl.GetErrorString(st));
        } else if (dead_peer(c, dead, sizeof dead)) { /* not known while joining */
            snprintf(why, sizeof why, VG_VENDOR_NAME ": rank %d of %d: %s: %s", c->rank,
                     c->nranks, what, dead);
        } else if (now_ms() >= deadline) {
            char join[120] = "";
            if (!c->peers) /* the bootstrap cannot tell which ranks are missing */
                snprintf(join, sizeof join, " waiting for the other %d rank(s) to join ("
                         VG_VENDOR_NCCL_NAME " does not say which)", c->nranks - 1);
            snprintf(why, sizeof why, VG_VENDOR_NAME ": rank %d of %d: %s: timed out after %d ms "
                     "(VG_COMM_TIMEOUT_MS)%s", c->rank, c->nranks, what, c->timeout_ms, join);
        } else {
            nap(now_ms() - start);
            continue;
        }
        pthread_mutex_lock(&g_lock);
        comm_abort(c, why);
        pthread_mutex_unlock(&g_lock);
        return VGC_ERR(VG_ERR_DEVICE, "%s", why);
    }
}

static void comm_list(vg_bk_comm *c, int add)
{
    pthread_mutex_lock(&g_lock);
    vg_bk_comm **p = &g_comms;
    while (*p && *p != c) p = &(*p)->next;
    if (add && !*p) {
        c->next = g_comms;
        g_comms = c;
        __atomic_add_fetch(&g_live, 1, __ATOMIC_RELEASE);
    } else if (!add && *p) {
        *p = c->next;
        __atomic_sub_fetch(&g_live, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_lock);
}

/* One look at dev's communicators: an error or a dead peer aborts them all (the work that waits
 * may wait on any of them) and fills `why`; so does the deadline (`late`). Late with none left
 * to abort (they were aborted earlier, and the work still has not finished) is a failure too. */
static int comms_check(vg_bk_device *dev, int late, int elapsed_ms, const char *what, char *why,
                       size_t cap)
{
    char cause[200];
    int failed = 0, usable = 0;
    pthread_mutex_lock(&g_lock);
    vg_bk_comm *hit = NULL;
    for (vg_bk_comm *c = g_comms; c && !hit; c = c->next) {
        if (c->dev != dev || !c->nccl) continue;
        usable++;
        if (comm_error(c, cause, sizeof cause) || dead_peer(c, cause, sizeof cause)) hit = c;
    }
    if (hit) {
        snprintf(why, cap, VG_VENDOR_NAME ": %s: communicator rank %d of %d: %s; its "
                 "communicators on this device are aborted", what, hit->rank, hit->nranks, cause);
        failed = 1;
    } else if (late && !usable) {
        snprintf(why, cap, VG_VENDOR_NAME ": %s: the work did not finish within %d ms "
                 "(VG_COMM_TIMEOUT_MS) although the device's communicators were aborted", what,
                 elapsed_ms);
        failed = 1;
    } else if (late) {
        int n = snprintf(why, cap, VG_VENDOR_NAME ": %s: timed out after %d ms "
                         "(VG_COMM_TIMEOUT_MS) while communicators live on the device; aborted",
                         what, elapsed_ms);
        for (vg_bk_comm *c = g_comms; c && n > 0 && (size_t)n < cap; c = c->next) {
            if (c->dev != dev || !c->nccl) continue;
            n += snprintf(why + n, cap - (size_t)n, " rank %d of %d (peers alive but silent:",
                          c->rank, c->nranks);
            for (int r = 0; r < c->nranks && n > 0 && (size_t)n < cap; r++)
                if (r != c->rank) n += snprintf(why + n, cap - (size_t)n, " rank %d", r);
            if (n > 0 && (size_t)n < cap) n += snprintf(why + n, cap - (size_t)n, ")");
        }
        failed = 1;
    }
    if (failed)
        for (vg_bk_comm *c = g_comms; c; c = c->next)
            if (c->dev == dev) comm_abort(c, why);
    pthread_mutex_unlock(&g_lock);
    return failed;
}

/* While communicators live on dev (aborted ones too: their kernels return only once the abort
 * thread raised the flag), every wait polls against the longest of their deadlines. */
vg_status vgc_comm_wait(vg_bk_device *dev, cudaStream_t s, cudaEvent_t e, const char *what)
{
    int timeout = 0;
    if (!dev || __atomic_load_n(&g_live, __ATOMIC_ACQUIRE) == 0) { /* none anywhere: no lock taken */
        VGC_CHECK(s ? cudaStreamSynchronize(s) : cudaEventSynchronize(e));
        return VG_OK;
    }
    pthread_mutex_lock(&g_lock);
    for (vg_bk_comm *c = g_comms; c; c = c->next)
        if (c->dev == dev && c->timeout_ms > timeout) timeout = c->timeout_ms;
    pthread_mutex_unlock(&g_lock);
    if (timeout == 0) { /* none on this device: nothing to abort, nothing to bound */
        VGC_CHECK(s ? cudaStreamSynchronize(s) : cudaEventSynchronize(e));
        return VG_OK;
    }
    double start = now_ms(), checked = start;
    for (;;) {
        cudaError_t r = s ? cudaStreamQuery(s) : cudaEventQuery(e);
        if (r == cudaSuccess) return VG_OK;
        if (r != cudaErrorNotReady)
            return vgc_fail(r, s ? "cudaStreamQuery" : "cudaEventQuery", __FILE__, __LINE__);
        double now = now_ms();
        if (now - checked >= 2.0) {
            checked = now;
            char why[600];
            int late = now - start >= timeout;
            if (comms_check(dev, late, (int)(now - start), what, why, sizeof why))
                return VGC_ERR(VG_ERR_DEVICE, "%s", why);
        }
        nap(now - start);
    }
}

/* Run the enqueued work of `s` to completion the bounded way (creation's peer exchange). */
static vg_status comm_sync(vg_bk_comm *c, cudaStream_t s, const char *what)
{
    vg_status st = vgc_comm_wait(c->dev, s, NULL, what);
    if (st == VG_OK && !c->nccl) /* aborted meanwhile by another thread's wait */
        st = VGC_ERR(VG_ERR_DEVICE, VG_VENDOR_NAME ": %s: %s", what, c->broken);
    return st;
}

/* Every rank's process id and host, so that waits can name a peer that died. */
static vg_status comm_exchange_peers(vg_bk_comm *c)
{
    peer me = {(int32_t)getpid(), host_hash()};
    c->peers = (peer *)calloc((size_t)c->nranks, sizeof *c->peers);
    if (!c->peers) return VGC_ERR(VG_ERR_OUT_OF_MEMORY, VG_VENDOR_NAME ": out of host memory");
    peer *got = (peer *)calloc((size_t)c->nranks, sizeof *got); /* not c->peers: waits read it */
    if (!got) return VGC_ERR(VG_ERR_OUT_OF_MEMORY, VG_VENDOR_NAME ": out of host memory");
    cudaStream_t s = NULL;
    void *d = NULL;
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(got);
        return vgc_fail(e, "cudaStreamCreateWithFlags", __FILE__, __LINE__);
    }
    e = cudaMalloc(&d, sizeof(peer) * (size_t)(c->nranks + 1));
    vg_status st = VG_OK;
    if (e == cudaSuccess) e = cudaMemcpyAsync(d, &me, sizeof me, cudaMemcpyHostToDevice, s);
    if (e != cudaSuccess) {
        st = vgc_fail(e, "cudaMalloc/cudaMemcpyAsync (peer exchange)", __FILE__, __LINE__);
    } else {
        peer *all = (peer *)d + 1;
        ncclResult_t r = g_nccl.AllGather(d, all, sizeof me, ncclUint8, c->nccl, s);
        if (r != ncclSuccess && r != ncclInProgress)
            st = VGC_ERR(VG_ERR_DEVICE, VG_VENDOR_NAME ": rank %d of %d: joining: ncclAllGather: "
                         "%s", c->rank, c->nranks, g_nccl.GetErrorString(r));
        if (st == VG_OK) st = comm_settle(c, "joining");
        if (st == VG_OK) {
            e = cudaMemcpyAsync(got, all, sizeof(peer) * (size_t)c->nranks,
                                cudaMemcpyDeviceToHost, s);
            st = e == cudaSuccess ? comm_sync(c, s, "comm_create (peer exchange)")
                                  : vgc_fail(e, "cudaMemcpyAsync", __FILE__, __LINE__);
        }
    }
    if (st != VG_OK) {
        /* the all-gather may still wait for a peer: abort first (its kernels return), then the
         * wait is bounded; only then may cudaFree (which waits for the device) run */
        pthread_mutex_lock(&g_lock);
        comm_abort(c, "creation failed");
        pthread_mutex_unlock(&g_lock);
        (void)comm_sync(c, s, "comm_create (peer exchange)");
    }
    (void)cudaFree(d);
    (void)cudaStreamDestroy(s);
    if (st == VG_OK) {
        pthread_mutex_lock(&g_lock);
        memcpy(c->peers, got, sizeof(peer) * (size_t)c->nranks);
        pthread_mutex_unlock(&g_lock);
    }
    free(got);
    return st;
}

static vg_status vgc_comm_id_make(vg_bk_device *dev, unsigned char *id)
{
    if (!dev || !id) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": comm_id_make: NULL");
    if (!nccl_ready()) return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": %s", g_nccl.why);
    ncclUniqueId uid;
    ncclResult_t r = g_nccl.GetUniqueId(&uid);
    if (r != ncclSuccess)
        return VGC_ERR(VG_ERR_DEVICE, VG_VENDOR_NAME ": ncclGetUniqueId: %s",
                       g_nccl.GetErrorString(r));
    memcpy(id, &uid, sizeof uid);
    return VG_OK;
}

static vg_status vgc_comm_create(vg_bk_device *dev, const vg_bk_comm_args *a, vg_bk_comm **out)
{
    if (!dev || !a || !out || a->struct_size < sizeof *a)
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": comm_create: NULL or short arguments");
    *out = NULL;
    if (!nccl_ready()) return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": %s", g_nccl.why);
    VGC_CHECK(cudaSetDevice(dev->index));
    vg_bk_comm *c = (vg_bk_comm *)calloc(1, sizeof *c);
    if (!c) return VGC_ERR(VG_ERR_OUT_OF_MEMORY, VG_VENDOR_NAME ": out of host memory");
    c->dev = dev;
    c->rank = a->rank;
    c->nranks = a->nranks;
    c->timeout_ms = a->timeout_ms;
    ncclUniqueId uid;
    memcpy(&uid, a->id, sizeof uid);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0; /* polled below against the deadline */
    ncclResult_t r = g_nccl.CommInitRankConfig(&c->nccl, a->nranks, uid, a->rank, &cfg);
    vg_status st = VG_OK;
    if (r != ncclSuccess && r != ncclInProgress) {
        st = VGC_ERR(VG_ERR_DEVICE, VG_VENDOR_NAME ": rank %d of %d: ncclCommInitRankConfig: %s",
                     a->rank, a->nranks, g_nccl.GetErrorString(r)); /* aborted below */
    }
    if (st == VG_OK) st = comm_settle(c, "joining");
    if (st == VG_OK) {
        comm_list(c, 1);
        st = comm_exchange_peers(c);
        comm_list(c, st == VG_OK);
    }
    if (st != VG_OK) {
        pthread_mutex_lock(&g_lock);
        comm_abort(c, "creation failed");
        pthread_mutex_unlock(&g_lock);
        /* no graph holds a communicator that never was: its abort is quick, unless NCCL's
         * joining itself is stuck; then it is left behind rather than delay the error */
        ncclResult_t ignored;
        (void)reclaim_finish(c->teardown, c->timeout_ms < 1000 ? c->timeout_ms : 1000, &ignored);
        free(c->peers);
        free(c);
        return st;
    }
    *out = c;
    return VG_OK;
}

/* Flush and free a usable communicator (finalize, then destroy), or wait for an aborted one's
 * teardown; both within the deadline. A teardown still running then (a graph that captured the
 * communicator's collectives is still alive) is left to finish when that graph is destroyed. */
static vg_status vgc_comm_destroy(vg_bk_device *dev, vg_bk_comm *c)
{
    (void)dev;
    if (!c) return VG_OK;
    vg_status st = VG_OK;
    double start = now_ms(); /* the whole destroy waits VG_COMM_TIMEOUT_MS at most */
    if (c->nccl) {
        (void)cudaSetDevice(c->dev->index);
        ncclResult_t r = g_nccl.CommFinalize(c->nccl);
        if (r == ncclSuccess || r == ncclInProgress) st = comm_settle(c, "comm_destroy");
        pthread_mutex_lock(&g_lock);
        if (r != ncclSuccess && r != ncclInProgress) comm_abort(c, "finalize failed");
        if (c->nccl) c->teardown = reclaim_start(c->nccl, 0);
        c->nccl = NULL;
        pthread_mutex_unlock(&g_lock);
    }
    comm_list(c, 0);
    ncclResult_t r = ncclSuccess;
    /* A finalize that timed out (its error said only that) and a teardown that does not finish
     * have one usual cause, which the message names: NCCL waits for every graph holding the
     * communicator's collectives. What is left to the timeout goes to the teardown. */
    double left = c->timeout_ms - (now_ms() - start);
    if (!reclaim_finish(c->teardown, left > 100 ? (int)left : 100, &r))
        st = VGC_ERR(VG_ERR_DEVICE, VG_VENDOR_NAME ": comm_destroy: rank %d of %d: "
                     VG_VENDOR_NCCL_NAME "'s teardown did not finish within %d ms "
                     "(VG_COMM_TIMEOUT_MS): most likely a graph that captured the communicator's "
                     "collectives is still alive (destroy graphs before their communicator); the "
                     "teardown finishes when the graph is destroyed", c->rank, c->nranks, c->timeout_ms);
    else if (r != ncclSuccess && r != ncclInProgress && st == VG_OK)
        st = VGC_ERR(VG_ERR_DEVICE, VG_VENDOR_NAME ": comm_destroy: rank %d of %d: "
                     VG_VENDOR_NCCL_NAME " reports %s", c->rank, c->nranks,
                     g_nccl.GetErrorString(r));
    free(c->peers);
    free(c);
    return st;
}

static ncclDataType_t nccl_dtype(vg_dtype t)
{
    return t == VG_DTYPE_F16 ? ncclFloat16 : t == VG_DTYPE_BF16 ? ncclBfloat16 : ncclFloat32;
}

/* After an enqueue: a failure aborts the communicator (its ranks are out of step). */
static vg_status comm_enqueued(vg_bk_comm *c, ncclResult_t r, const char *what)
{
    if (r == ncclInProgress) return comm_settle(c, what);
    if (r == ncclSuccess) return VG_OK;
    char why[400];
    snprintf(why, sizeof why, VG_VENDOR_NAME ": rank %d of %d: %s: " VG_VENDOR_NCCL_NAME " reports "
             "%s", c->rank, c->nranks, what, g_nccl.GetErrorString(r));
    pthread_mutex_lock(&g_lock);
    comm_abort(c, why);
    pthread_mutex_unlock(&g_lock);
    return VGC_ERR(VG_ERR_DEVICE, "%s", why);
}

static vg_status comm_usable(vg_bk_comm *c, const char *what)
{
    if (c->nccl) return VG_OK;
    return VGC_ERR(VG_ERR_STATE, VG_VENDOR_NAME ": %s: communicator rank %d of %d is unusable "
                   "after an earlier failure: %s", what, c->rank, c->nranks, c->broken);
}

static vg_status vgc_comm_all_reduce(vg_bk_device *dev, vg_bk_comm *c, vg_bk_stream *s,
                                     vg_dtype dtype, const void *send, void *recv, size_t count)
{
    if (!dev || !c || !s) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": all_reduce: NULL");
    vg_status st = comm_usable(c, "all_reduce");
    if (st != VG_OK) return st;
    return comm_enqueued(c, g_nccl.AllReduce(send, recv, count, nccl_dtype(dtype), ncclSum,
                                             c->nccl, s->s), "ncclAllReduce");
}

static vg_status vgc_comm_all_gather(vg_bk_device *dev, vg_bk_comm *c, vg_bk_stream *s,
                                     vg_dtype dtype, const void *send, void *recv, size_t count)
{
    if (!dev || !c || !s) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": all_gather: NULL");
    vg_status st = comm_usable(c, "all_gather");
    if (st != VG_OK) return st;
    size_t esz = dtype == VG_DTYPE_I64 ? 8 : dtype == VG_DTYPE_U8 ? 1
                 : (dtype == VG_DTYPE_F16 || dtype == VG_DTYPE_BF16) ? 2 : 4;
    /* any dtype: the blocks are bytes */
    return comm_enqueued(c, g_nccl.AllGather(send, recv, count * esz, ncclUint8, c->nccl, s->s),
                         "ncclAllGather");
}

void vgc_comm_members(vg_backend_iface *t)
{
    t->comm_id_make = vgc_comm_id_make;
    t->comm_create = vgc_comm_create;
    t->comm_destroy = vgc_comm_destroy;
    t->comm_all_reduce = vgc_comm_all_reduce;
    t->comm_all_gather = vgc_comm_all_gather;
}

#else /* built without NCCL's header (or one older than 2.14): no communicators */

uint64_t vgc_comm_caps(void) { return 0; }
vg_status vgc_comm_wait(vg_bk_device *, cudaStream_t s, cudaEvent_t e, const char *)
{
    VGC_CHECK(s ? cudaStreamSynchronize(s) : cudaEventSynchronize(e));
    return VG_OK;
}
static vg_status vgc_comm_id_make(vg_bk_device *, unsigned char *)
{
    return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": this backend was built without "
                   VG_VENDOR_NCCL_NAME "'s header (2.14 or newer): no communicators");
}
void vgc_comm_members(vg_backend_iface *t) { t->comm_id_make = vgc_comm_id_make; }

#endif
