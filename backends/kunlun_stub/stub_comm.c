/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub communicators (ABI 1.5): the ranks are processes of this machine that share one
 * POSIX shared-memory segment.
 *
 * The id names the segment ("/vg_stub_comm.<pid>.<random nonce>"); every rank opens (or
 * creates) it and claims its rank in the header. The header holds, per rank, its pid, its state
 * and how many barriers it has reached; after it come one data slot per rank. A barrier is
 * "raise my count to g, wait until every count is >= g": counts only grow, so no reset races.
 * Waiting sleeps on a futex word every arrival bumps, and every few milliseconds checks that the
 * ranks it waits for are alive, so a dead (or failed, or departed) rank ends the wait with a
 * message naming it, and a silent one ends it at the deadline.
 *
 * all-reduce, per chunk of at most one slot: write my slot, barrier, sum every slot in rank
 * order (every rank computes the same sum in the same order: bit-identical results), barrier
 * (nobody overwrites a slot before all have read it). all-gather is the same with copies.
 *
 * The segment's name is unlinked as soon as every rank has joined (or a rank gave up joining),
 * so nothing stays in /dev/shm once the processes are gone, however they end.
 *
 * A collective is a stream command like an op: it runs at once, or is recorded while capturing
 * and runs at every replay. A failure while it runs is left on the stream (stub_stream_fail)
 * and reported by the submission, exec_launch or stream_sync. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "stub_internal.h"
#include "stub_kernels.h"

#define COMM_MAGIC 0x6d6d6f63u /* "comm" */
#define COMM_VERSION 1u
#define COMM_NAME_PREFIX "/vg_stub_comm."
#define COMM_MAX_RANKS 64
/* A collective moves at most this many bytes per rank per step; larger ones go in chunks. */
#define COMM_SLOT_BYTES (256u << 10)
/* How often a waiting rank checks that the ranks it waits for are alive. */
#define COMM_CHECK_MS 5

/* The id's bytes (VG_COMM_ID_BYTES): what rank 0 sends the others. */
typedef struct comm_id {
    uint32_t magic, version;
    char name[64]; /* the segment's name, NUL-terminated */
} comm_id;
_Static_assert(sizeof(comm_id) <= VG_COMM_ID_BYTES, "the stub's id must fit vg's");

enum { RANK_FREE = 0, RANK_JOINED, RANK_LEFT, RANK_FAILED };

typedef struct comm_rank {
    _Atomic int32_t pid;     /* 0 until a process claims the rank */
    _Atomic uint32_t state;  /* RANK_* */
    _Atomic uint64_t arrive; /* barriers reached */
} comm_rank;

/* The segment's header; the ftruncate that creates the segment zero-fills it, which is its
 * initial state. Its size does not depend on nranks, so every rank sizes the segment alike. */
typedef struct comm_shm {
    _Atomic uint32_t nranks; /* set by the first rank to join; the others must agree */
    _Atomic uint32_t seq;    /* the futex word: bumped at every arrival and state change */
    comm_rank rank[COMM_MAX_RANKS];
} comm_shm;

#define COMM_DATA_OFFSET ((sizeof(comm_shm) + 4095u) & ~(size_t)4095u)
#define COMM_SHM_BYTES (COMM_DATA_OFFSET + (size_t)COMM_MAX_RANKS * COMM_SLOT_BYTES)

struct vg_bk_comm {
    comm_shm *shm;
    int nranks, rank;
    int timeout_ms;
    uint64_t gen;     /* barriers this rank has passed */
    char broken[400]; /* why it is unusable; "" while it is not */
};

static unsigned char *slot(const vg_bk_comm *c, int r)
{
    return (unsigned char *)c->shm + COMM_DATA_OFFSET + (size_t)r * COMM_SLOT_BYTES;
}

/* Wake every waiter of the segment: the futex word is shared between processes, so the
 * operations are the non-private ones. */
static void comm_bump(comm_shm *h)
{
    atomic_fetch_add(&h->seq, 1u);
    syscall(SYS_futex, &h->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void comm_sleep(comm_shm *h, uint32_t seen, double ms)
{
    struct timespec ts = {(time_t)(ms / 1e3), (long)(((long long)(ms * 1e6)) % 1000000000ll)};
    syscall(SYS_futex, &h->seq, FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* Whether process `pid` has ended: gone (ESRCH), or a zombie its parent has not reaped yet. */
static int pid_dead(int32_t pid)
{
    if (kill(pid, 0) != 0) return errno == ESRCH;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0; /* no /proc: alive as far as anyone can tell */
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close = strrchr(buf, ')'); /* "pid (comm) S ...": comm may hold spaces */
    return close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

/* Mark this rank failed (peers waiting for it stop at once) and remember why. */
static vg_status comm_fail(vg_bk_comm *c, vg_status st, const char *msg)
{
    snprintf(c->broken, sizeof c->broken, "%s", msg);
    atomic_store(&c->shm->rank[c->rank].state, RANK_FAILED);
    comm_bump(c->shm);
    return STUB_ERR(st, "%s", msg);
}

/* Reach barrier c->gen + 1 and wait for every rank to reach it, within the timeout. */
static vg_status comm_barrier(vg_bk_comm *c, const char *what)
{
    comm_shm *h = c->shm;
    uint64_t g = ++c->gen;
    atomic_store(&h->rank[c->rank].arrive, g);
    comm_bump(h);
    double start = stub_now_ms(), deadline = start + c->timeout_ms, checked = start;
    char msg[400];
    for (;;) {
        uint32_t seen = atomic_load(&h->seq);
        int missing = 0;
        for (int r = 0; r < c->nranks; r++) {
            if (atomic_load(&h->rank[r].arrive) >= g) continue;
            missing++;
            uint32_t state = atomic_load(&h->rank[r].state);
            if (state == RANK_FAILED || state == RANK_LEFT) {
                snprintf(msg, sizeof msg, "kunlun_stub: rank %d of %d: %s: rank %d %s", c->rank,
                         c->nranks, what, r, state == RANK_FAILED ? "failed (its own error says "
                                                                    "why)"
                                                                  : "left the communicator");
                return comm_fail(c, VG_ERR_DEVICE, msg);
            }
        }
        if (!missing) return VG_OK;
        double now = stub_now_ms();
        if (now - checked >= COMM_CHECK_MS) {
            checked = now;
            for (int r = 0; r < c->nranks; r++) {
                int32_t pid = atomic_load(&h->rank[r].pid);
                if (atomic_load(&h->rank[r].arrive) >= g || pid == 0 || !pid_dead(pid)) continue;
                snprintf(msg, sizeof msg, "kunlun_stub: rank %d of %d: %s: rank %d (pid %d) died",
                         c->rank, c->nranks, what, r, (int)pid);
                return comm_fail(c, VG_ERR_DEVICE, msg);
            }
        }
        if (now >= deadline) {
            int n = snprintf(msg, sizeof msg, "kunlun_stub: rank %d of %d: %s: timed out after %d "
                                              "ms (VG_COMM_TIMEOUT_MS) waiting for rank",
                             c->rank, c->nranks, what, c->timeout_ms);
            const char *sep = missing > 1 ? "s " : " ";
            for (int r = 0; r < c->nranks && n > 0 && (size_t)n < sizeof msg; r++) {
                if (atomic_load(&h->rank[r].arrive) >= g) continue;
                n += snprintf(msg + n, sizeof msg - (size_t)n, "%s%d%s", sep, r,
                              atomic_load(&h->rank[r].pid) ? "" : " (never joined)");
                sep = ", ";
            }
            return comm_fail(c, VG_ERR_DEVICE, msg);
        }
        double left = deadline - now;
        comm_sleep(h, seen, left < COMM_CHECK_MS ? left : COMM_CHECK_MS);
    }
}

/* ---- ids and membership --------------------------------------------------------------------- */

static int comm_enabled(vg_bk_device *dev, const char *fn)
{
    if (dev->cfg.caps & VG_CAP_COMM) return 1;
    (void)STUB_ERR(VG_ERR_UNSUPPORTED, "kunlun_stub: %s: communicators are disabled (VG_STUB_CAPS=nocomm)",
             fn);
    return 0;
}

vg_status stub_comm_id_make(vg_bk_device *dev, unsigned char id[VG_COMM_ID_BYTES])
{
    if (!dev || !id) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: comm_id_make: NULL");
    if (!comm_enabled(dev, "comm_id_make")) return VG_ERR_UNSUPPORTED;
    unsigned char nonce[16];
    if (getrandom(nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce)
        return STUB_ERR(VG_ERR_DEVICE, "kunlun_stub: comm_id_make: getrandom: %s", strerror(errno));
    comm_id c;
    memset(&c, 0, sizeof c);
    c.magic = COMM_MAGIC;
    c.version = COMM_VERSION;
    int n = snprintf(c.name, sizeof c.name, COMM_NAME_PREFIX "%d.", (int)getpid());
    for (size_t i = 0; i < sizeof nonce; i++)
        n += snprintf(c.name + n, sizeof c.name - (size_t)n, "%02x", nonce[i]);
    memset(id, 0, VG_COMM_ID_BYTES);
    memcpy(id, &c, sizeof c);
    return VG_OK;
}

/* An id's bytes are untrusted: the name must be one comm_id_make could have made. */
static int id_valid(const comm_id *c)
{
    if (c->magic != COMM_MAGIC || c->version != COMM_VERSION) return 0;
    size_t n = strnlen(c->name, sizeof c->name), p = strlen(COMM_NAME_PREFIX);
    if (n == sizeof c->name || n <= p || strncmp(c->name, COMM_NAME_PREFIX, p) != 0) return 0;
    for (size_t i = p; i < n; i++)
        if (!((c->name[i] >= '0' && c->name[i] <= '9') || (c->name[i] >= 'a' && c->name[i] <= 'f') ||
              c->name[i] == '.'))
            return 0;
    return 1;
}

vg_status stub_comm_create(vg_bk_device *dev, const vg_bk_comm_args *a, vg_bk_comm **out)
{
    if (!dev || !a || !out || a->struct_size < sizeof *a)
        return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: comm_create: NULL or short arguments");
    *out = NULL;
    if (!comm_enabled(dev, "comm_create")) return VG_ERR_UNSUPPORTED;
    if (a->nranks > COMM_MAX_RANKS)
        return STUB_ERR(VG_ERR_UNSUPPORTED, "kunlun_stub: comm_create: %d ranks, at most %d",
                        a->nranks, COMM_MAX_RANKS);
    comm_id id;
    memcpy(&id, a->id, sizeof id);
    if (!id_valid(&id))
        return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: comm_create: the id is not one "
                                            "comm_id_make made (bad magic, version or name)");
    vg_bk_comm *c = calloc(1, sizeof *c);
    if (!c) return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: comm_create: out of memory");
    c->nranks = a->nranks;
    c->rank = a->rank;
    c->timeout_ms = a->timeout_ms;
    int fd = shm_open(id.name, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)COMM_SHM_BYTES) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        free(c);
        return STUB_ERR(VG_ERR_DEVICE, "kunlun_stub: comm_create: shared memory %s: %s", id.name,
                        strerror(e));
    }
    c->shm = mmap(NULL, COMM_SHM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (c->shm == MAP_FAILED) {
        shm_unlink(id.name);
        free(c);
        return STUB_ERR(VG_ERR_DEVICE, "kunlun_stub: comm_create: mmap of %s: %s", id.name,
                        strerror(e));
    }
    comm_shm *h = c->shm;
    uint32_t n = 0;
    int32_t pid = 0;
    vg_status st = VG_OK;
    if (!atomic_compare_exchange_strong(&h->nranks, &n, (uint32_t)a->nranks) &&
        n != (uint32_t)a->nranks) {
        st = STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: comm_create: rank %d says %d ranks, the "
                                          "communicator's first rank said %u", a->rank, a->nranks,
                      n);
    } else if (!atomic_compare_exchange_strong(&h->rank[a->rank].pid, &pid, (int32_t)getpid())) {
        st = STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: comm_create: rank %d of %d is taken "
                                          "already (by pid %d)", a->rank, a->nranks, (int)pid);
    } else {
        atomic_store(&h->rank[a->rank].state, RANK_JOINED);
        st = comm_barrier(c, "joining");
    }
    /* everyone has opened the segment (or this rank gives up): its name can go */
    shm_unlink(id.name);
    if (st != VG_OK) {
        munmap(c->shm, COMM_SHM_BYTES);
        free(c);
        return st;
    }
    *out = c;
    return VG_OK;
}

vg_status stub_comm_destroy(vg_bk_device *dev, vg_bk_comm *c)
{
    (void)dev;
    if (!c) return VG_OK;
    if (!c->broken[0]) { /* a failed rank stays failed for its peers */
        atomic_store(&c->shm->rank[c->rank].state, RANK_LEFT);
        comm_bump(c->shm);
    }
    munmap(c->shm, COMM_SHM_BYTES);
    free(c);
    return VG_OK;
}

/* ---- collectives ------------------------------------------------------------------------------ */

typedef struct coll_args {
    vg_bk_comm *comm;
    vg_dtype dtype;
    const void *send;
    void *recv;
    size_t count;
} coll_args;

/* A collective on a broken comm fails at once: its ranks are out of step. */
static int comm_usable(vg_bk_stream *s, vg_bk_comm *c, const char *what)
{
    if (!c->broken[0]) return 1;
    stub_stream_fail(s, VG_ERR_STATE, "kunlun_stub: %s on rank %d: the communicator is unusable "
                                      "after an earlier failure: %s", what, c->rank, c->broken);
    return 0;
}

/* A collective in chunks of a slot: each rank puts its chunk of send in its slot, all meet, each
 * combines the ranks' slots into its recv (`combine`, the collective's own step), all meet again
 * before the slots are reused. */
static void run_chunks(vg_bk_stream *s, const coll_args *a, const char *what,
                       void (*combine)(const coll_args *a, size_t off, size_t n, size_t esz))
{
    vg_bk_comm *c = a->comm;
    if (!comm_usable(s, c, what)) return;
    size_t esz = dtype_size(a->dtype), per = COMM_SLOT_BYTES / esz;
    for (size_t off = 0; off < a->count; off += per) {
        size_t n = a->count - off < per ? a->count - off : per;
        memcpy(slot(c, c->rank), (const unsigned char *)a->send + off * esz, n * esz);
        if (comm_barrier(c, what) != VG_OK) break;
        combine(a, off, n, esz);
        if (comm_barrier(c, what) != VG_OK) break;
    }
    if (c->broken[0]) stub_stream_fail(s, VG_ERR_DEVICE, "%s", c->broken);
}

/* all-reduce: the sum over ranks, in rank order (every rank gets bit-identical results) */
static void sum_slots(const coll_args *a, size_t off, size_t n, size_t esz)
{
    (void)esz;
    for (size_t i = 0; i < n; i++) {
        float acc = 0.0f;
        for (int r = 0; r < a->comm->nranks; r++) acc += load_f(slot(a->comm, r), a->dtype, i);
        store_f(a->recv, a->dtype, off + i, acc);
    }
}

/* all-gather: rank r's chunk into block r of recv */
static void gather_slots(const coll_args *a, size_t off, size_t n, size_t esz)
{
    for (int r = 0; r < a->comm->nranks; r++)
        memcpy((unsigned char *)a->recv + ((size_t)r * a->count + off) * esz, slot(a->comm, r),
               n * esz);
}

static void run_all_reduce(vg_bk_stream *s, const void *p) { run_chunks(s, p, "all_reduce", sum_slots); }
static void run_all_gather(vg_bk_stream *s, const void *p) { run_chunks(s, p, "all_gather", gather_slots); }

static vg_status submit(vg_bk_device *dev, vg_bk_comm *c, vg_bk_stream *s, vg_dtype dtype,
                        const void *send, void *recv, size_t count, int gather)
{
    if (!dev || !c || !s) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: collective: NULL");
    coll_args a = {c, dtype, send, recv, count};
    return gather ? stub_submit(s, STUB_NOT_AN_OP, "all_gather", run_all_gather, &a, sizeof a)
                  : stub_submit(s, STUB_NOT_AN_OP, "all_reduce", run_all_reduce, &a, sizeof a);
}

vg_status stub_comm_all_reduce(vg_bk_device *dev, vg_bk_comm *c, vg_bk_stream *s, vg_dtype dtype,
                               const void *send, void *recv, size_t count)
{
    return submit(dev, c, s, dtype, send, recv, count, 0);
}

vg_status stub_comm_all_gather(vg_bk_device *dev, vg_bk_comm *c, vg_bk_stream *s, vg_dtype dtype,
                               const void *send, void *recv, size_t count)
{
    return submit(dev, c, s, dtype, send, recv, count, 1);
}
