/* SPDX-License-Identifier: Apache-2.0 */
/* The consumer's side: descriptors into device addresses, through a process-wide cache of open
 * pools.
 *
 * An entry is one pool opened on one runtime, keyed by (runtime, pool id). The pool id is 128
 * random bits drawn when the pool was created, so a pool freed and created again, or a producer
 * that restarted (with the same pid, the same fd numbers, even the same device address), never
 * finds another pool's entry. A runtime's entries are dropped when it closes, so a runtime
 * allocated later at the same address starts empty.
 *
 * Lookups take the table's lock shared; a miss takes it exclusively and looks again (the double
 * check), then inserts an entry in state OPENING and opens the handle outside the lock, so one
 * slow driver call never blocks imports of other pools. Concurrent importers of the same pool
 * find the OPENING entry and wait for it: one open per pool, however many threads ask.
 *
 * Entries are reference-counted: the table holds one reference while an entry is listed, every
 * imported tensor one more. Invalidating unlists an entry; its mapping is closed when the last
 * reference goes, so a tensor in use is never unmapped under its user. An import that does not
 * use the cache (VG_IPC_POOL_CACHE=0, or a retry after a cache failure) gets an entry of its own
 * that is never listed: releasing the tensor closes it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc_internal.h"

enum { OPENING = 0, READY = 1, FAILED = 2 };
#define BUCKETS 64

typedef struct entry {
    struct entry *next;               /* in its bucket, while listed */
    struct entry *all_prev, *all_next; /* every entry alive, listed or not */
    vg_runtime *rt;
    unsigned char pool_id[VG_IPC_POOL_ID_BYTES];
    vg_ipc_handle handle;
    void *base;
    size_t mapped;    /* the allocation's size as the backend mapped it */
    atomic_int refs;
    atomic_int state; /* written under g.wait_mu; read with acquire */
    int listed;       /* under g.lock */
    int closed;       /* under g.lock: its runtime closed it already */
} entry;

static struct {
    pthread_rwlock_t lock; /* the buckets, the all-list, entry.listed and entry.closed */
    pthread_mutex_t wait_mu;
    pthread_cond_t wait_cv;
    entry *buckets[BUCKETS];
    entry *all;
    atomic_int enabled; /* -1: not decided yet */
    atomic_uint_fast64_t imports, opens, open_failures, closes, hits, invalidations, fallbacks,
        entries;
} g = {
    .lock = PTHREAD_RWLOCK_INITIALIZER,
    .wait_mu = PTHREAD_MUTEX_INITIALIZER,
    .wait_cv = PTHREAD_COND_INITIALIZER,
    .enabled = -1,
};

#define COUNT(c) atomic_fetch_add_explicit(&g.c, 1, memory_order_relaxed)

/* ---- enabling --------------------------------------------------------------------------------- */

int vg_ipc_cache_enabled(void)
{
    int e = atomic_load_explicit(&g.enabled, memory_order_acquire);
    if (e >= 0) return e;
    const char *v = getenv("VG_IPC_POOL_CACHE");
    int want = !(v && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "false") == 0));
    int expected = -1;
    atomic_compare_exchange_strong(&g.enabled, &expected, want);
    return atomic_load_explicit(&g.enabled, memory_order_acquire);
}

void vg_ipc_cache_set_enabled(int on) { atomic_store(&g.enabled, on ? 1 : 0); }

/* ---- entries ---------------------------------------------------------------------------------- */

static size_t bucket_of(const unsigned char *id)
{
    size_t h = 0;
    for (int i = 0; i < 8; i++) h = h * 31 + id[i];
    return h % BUCKETS;
}

static entry *find_locked(vg_runtime *rt, const unsigned char *id)
{
    for (entry *e = g.buckets[bucket_of(id)]; e; e = e->next)
        if (e->rt == rt && memcmp(e->pool_id, id, VG_IPC_POOL_ID_BYTES) == 0) return e;
    return NULL;
}

static entry *entry_new(vg_runtime *rt, const vg_ipc_desc *d, int refs, int state)
{
    entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->rt = rt;
    memcpy(e->pool_id, d->pool_id, sizeof e->pool_id);
    e->handle = d->handle;
    atomic_init(&e->refs, refs);
    atomic_init(&e->state, state);
    return e;
}

static void all_link_locked(entry *e)
{
    e->all_prev = NULL;
    e->all_next = g.all;
    if (g.all) g.all->all_prev = e;
    g.all = e;
}

static void all_unlink_locked(entry *e)
{
    if (e->all_prev) e->all_prev->all_next = e->all_next;
    else g.all = e->all_next;
    if (e->all_next) e->all_next->all_prev = e->all_prev;
}

/* Take e out of its bucket; the caller then drops the table's reference. */
static void unlist_locked(entry *e)
{
    entry **pp = &g.buckets[bucket_of(e->pool_id)];
    while (*pp && *pp != e) pp = &(*pp)->next;
    if (*pp) *pp = e->next;
    e->listed = 0;
    atomic_fetch_sub_explicit(&g.entries, 1, memory_order_relaxed);
    COUNT(invalidations);
}

/* The last reference closes the mapping (unless its runtime did already) and frees the entry. */
static void entry_unref(entry *e)
{
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_rwlock_wrlock(&g.lock);
    all_unlink_locked(e);
    int close_it = !e->closed && e->base;
    pthread_rwlock_unlock(&g.lock);
    if (close_it) {
        vg_runtime *rt = e->rt;
        if (rt->iface.ipc_close(rt->dev, e->base) == VG_OK) COUNT(closes);
        else vg_log(VG_LOG_WARN, "IPC: closing a mapping failed: %s", vg_last_error());
    }
    free(e);
}

/* ---- opening ---------------------------------------------------------------------------------- */

/* Open d's handle into e (base, mapped). */
static vg_status backend_open(vg_runtime *rt, const vg_ipc_desc *d, entry *e)
{
    void *base = NULL;
    size_t mapped = 0;
    vg_error_clear();
    vg_status st = rt->iface.ipc_open(rt->dev, &d->handle, &base, &mapped);
    if (st == VG_OK && !base) {
        st = vg_error_set(VG_ERR_INTERNAL, "backend '%s' returned no address", rt->iface.name);
    } else if (st != VG_OK) {
        if (!vg_error_is_set()) vg_error_set(st, "(the backend gave no reason)");
        base = NULL;
    }
    if (st != VG_OK) {
        COUNT(open_failures);
        char id[17];
        vg_hex_encode(d->pool_id, 8, id);
        return vg_error_prefix("IPC import: opening pool %s of process %d failed: ", id,
                               d->producer_pid);
    }
    COUNT(opens);
    e->base = base;
    e->mapped = mapped;
    return VG_OK;
}

/* Whether the tensor of d lies inside what e maps (the descriptor's own numbers were checked
 * already; these are checked against the allocation the backend knows). */
static vg_status fits(const entry *e, const vg_ipc_desc *d)
{
    if (memcmp(e->handle.bytes, d->handle.bytes, VG_IPC_HANDLE_BYTES) != 0)
        return vg_error_set(VG_ERR_FORMAT, "IPC import: the descriptor's handle differs from the "
                                           "one its pool was opened with");
    if (d->pool_bytes > e->mapped)
        return vg_error_set(VG_ERR_FORMAT, "IPC import: the descriptor says its pool holds %llu "
                                           "bytes, but the allocation mapped holds %zu: refusing "
                                           "the tensor (offset %llu, %llu bytes)",
                            (unsigned long long)d->pool_bytes, e->mapped,
                            (unsigned long long)d->offset, (unsigned long long)d->bytes);
    return VG_OK;
}

static void hand_out(entry *e, const vg_ipc_desc *d, int cached, vg_ipc_tensor *out)
{
    out->ptr = (char *)e->base + d->offset;
    out->bytes = d->bytes;
    out->cached = cached;
    out->priv_ = e;
    COUNT(imports);
}

/* An import with a mapping of its own, closed by its release. */
static vg_status import_uncached(vg_runtime *rt, const vg_ipc_desc *d, vg_ipc_tensor *out)
{
    entry *e = entry_new(rt, d, 1, READY);
    if (!e) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "IPC import: out of host memory");
    vg_status st = backend_open(rt, d, e);
    if (st == VG_OK) st = fits(e, d);
    pthread_rwlock_wrlock(&g.lock);
    all_link_locked(e);
    pthread_rwlock_unlock(&g.lock);
    if (st != VG_OK) {
        /* closes what was opened, keeping this thread's message */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", vg_last_error());
        entry_unref(e);
        return vg_error_set(st, "%s", msg);
    }
    hand_out(e, d, 0, out);
    return VG_OK;
}

/* After a failure through the cache: the entry is dropped (when still listed) and the import
 * tried once more on a mapping of its own. */
static vg_status fall_back(vg_runtime *rt, const vg_ipc_desc *d, entry *e, vg_ipc_tensor *out)
{
    char why[1024];
    snprintf(why, sizeof why, "%s", vg_last_error());
    pthread_rwlock_wrlock(&g.lock);
    int drop = e->listed;
    if (drop) unlist_locked(e);
    pthread_rwlock_unlock(&g.lock);
    if (drop) entry_unref(e); /* the table's reference */
    entry_unref(e);           /* this import's */
    COUNT(fallbacks);
    vg_log(VG_LOG_INFO, "IPC: the cached import failed (%s); entry invalidated, retrying without "
                        "the cache", why);
    vg_status st = import_uncached(rt, d, out);
    if (st != VG_OK) vg_error_prefix("retried without the cache after '%s': ", why);
    return st;
}

vg_status vg_ipc_import(vg_runtime *rt, const vg_ipc_desc *d, vg_ipc_tensor *out)
{
    if (!out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_import: out is NULL");
    memset(out, 0, sizeof *out);
    vg_status st = vg_ipc_require(rt, "vg_ipc_import");
    if (st == VG_OK) st = vg_ipc_desc_check(d);
    if (st == VG_OK) st = vg_capture_forbid("vg_ipc_import"); /* it may map the pool */
    if (st != VG_OK) return st;
    if (strcmp(d->backend, rt->iface.name) != 0)
        return vg_error_set(VG_ERR_UNSUPPORTED, "vg_ipc_import: the descriptor's pool belongs to "
                                                "backend '%s', this runtime's backend is '%s' "
                                                "(handles do not cross backends)",
                            d->backend, rt->iface.name);
    if (!vg_ipc_cache_enabled()) return import_uncached(rt, d, out);

    /* first check: shared */
    pthread_rwlock_rdlock(&g.lock);
    entry *e = find_locked(rt, d->pool_id);
    if (e) atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    pthread_rwlock_unlock(&g.lock);
    int opener = 0;
    if (!e) { /* second check: exclusive; insert the entry others will wait on */
        pthread_rwlock_wrlock(&g.lock);
        e = find_locked(rt, d->pool_id);
        if (e) {
            atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
        } else if ((e = entry_new(rt, d, 2, OPENING)) != NULL) {
            size_t b = bucket_of(e->pool_id);
            e->next = g.buckets[b];
            g.buckets[b] = e;
            e->listed = 1;
            all_link_locked(e);
            atomic_fetch_add_explicit(&g.entries, 1, memory_order_relaxed);
            opener = 1;
        }
        pthread_rwlock_unlock(&g.lock);
        if (!e) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "IPC import: out of host memory");
    }

    if (opener) {
        st = backend_open(rt, d, e);
        pthread_mutex_lock(&g.wait_mu);
        atomic_store_explicit(&e->state, st == VG_OK ? READY : FAILED, memory_order_release);
        pthread_cond_broadcast(&g.wait_cv);
        pthread_mutex_unlock(&g.wait_mu);
        if (st != VG_OK) return fall_back(rt, d, e, out);
        /* a fresh mapping the descriptor does not fit: the descriptor is wrong, not the entry */
        st = fits(e, d);
        if (st != VG_OK) {
            entry_unref(e);
            return st;
        }
        hand_out(e, d, 1, out);
        return VG_OK;
    }

    if (atomic_load_explicit(&e->state, memory_order_acquire) == OPENING) {
        pthread_mutex_lock(&g.wait_mu);
        while (atomic_load_explicit(&e->state, memory_order_acquire) == OPENING)
            pthread_cond_wait(&g.wait_cv, &g.wait_mu);
        pthread_mutex_unlock(&g.wait_mu);
    }
    if (atomic_load_explicit(&e->state, memory_order_acquire) == FAILED) {
        char id[17];
        vg_hex_encode(d->pool_id, 8, id);
        vg_error_set(VG_ERR_DEVICE, "IPC import: another thread's open of pool %s failed", id);
        return fall_back(rt, d, e, out);
    }
    if (fits(e, d) != VG_OK) return fall_back(rt, d, e, out);
    COUNT(hits);
    hand_out(e, d, 1, out);
    return VG_OK;
}

vg_status vg_ipc_release(vg_ipc_tensor *t)
{
    if (!t) return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_release: tensor is NULL");
    entry *e = t->priv_;
    memset(t, 0, sizeof *t);
    if (e) entry_unref(e);
    return VG_OK;
}

/* ---- invalidation ----------------------------------------------------------------------------- */

/* Unlist every entry `match` accepts, then drop the table's references outside the lock. */
static int drop_where(int (*match)(const entry *e, const void *arg), const void *arg)
{
    entry *dropped = NULL;
    int n = 0;
    pthread_rwlock_wrlock(&g.lock);
    for (int b = 0; b < BUCKETS; b++) {
        for (entry *e = g.buckets[b], *next; e; e = next) {
            next = e->next;
            if (!match(e, arg)) continue;
            unlist_locked(e);
            e->next = dropped; /* no longer in a bucket: reuse the link */
            dropped = e;
            n++;
        }
    }
    pthread_rwlock_unlock(&g.lock);
    for (entry *e = dropped, *next; e; e = next) {
        next = e->next;
        entry_unref(e);
    }
    return n;
}

static int match_pool(const entry *e, const void *id)
{
    return memcmp(e->pool_id, id, VG_IPC_POOL_ID_BYTES) == 0;
}

static int match_all(const entry *e, const void *arg)
{
    (void)e, (void)arg;
    return 1;
}

vg_status vg_ipc_cache_invalidate(const vg_ipc_desc *d, int *dropped)
{
    if (dropped) *dropped = 0;
    if (!d) return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_cache_invalidate: desc is NULL");
    int n = drop_where(match_pool, d->pool_id);
    if (dropped) *dropped = n;
    return VG_OK;
}

void vg_ipc_cache_clear(void) { drop_where(match_all, NULL); }

void vg_ipc_runtime_closing(vg_runtime *rt)
{
    if (!rt || !(rt->info.caps & VG_CAP_IPC)) return;
    entry *dropped = NULL;
    int in_use = 0;
    pthread_rwlock_wrlock(&g.lock);
    for (entry *e = g.all; e; e = e->all_next) {
        if (e->rt != rt) continue;
        /* mappings still referenced by tensors are closed now: the device goes away */
        int refs = atomic_load(&e->refs) - (e->listed ? 1 : 0);
        if (e->listed) {
            unlist_locked(e);
            e->next = dropped;
            dropped = e;
        }
        if (refs > 0 && !e->closed && e->base &&
            atomic_load_explicit(&e->state, memory_order_acquire) == READY) {
            in_use += refs;
            if (rt->iface.ipc_close(rt->dev, e->base) == VG_OK) COUNT(closes);
            e->closed = 1;
        }
    }
    pthread_rwlock_unlock(&g.lock);
    if (in_use)
        vg_log(VG_LOG_WARN, "vg_runtime_close: %d imported IPC tensor%s not released; their "
                            "mappings are closed now", in_use, in_use == 1 ? "" : "s");
    for (entry *e = dropped, *next; e; e = next) {
        next = e->next;
        entry_unref(e);
    }
}

/* ---- counters --------------------------------------------------------------------------------- */

void vg_ipc_stats_get(vg_ipc_stats *out)
{
    if (!out || out->struct_size < sizeof(uint32_t)) return;
    vg_ipc_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = out->struct_size;
#define GET(c) s.c = atomic_load_explicit(&g.c, memory_order_relaxed)
    GET(imports), GET(opens), GET(open_failures), GET(closes), GET(hits), GET(invalidations),
        GET(fallbacks), GET(entries);
#undef GET
    size_t n = out->struct_size < sizeof s ? out->struct_size : sizeof s;
    memcpy(out, &s, n);
}

void vg_ipc_stats_reset(void)
{
    atomic_store(&g.imports, 0);
    atomic_store(&g.opens, 0);
    atomic_store(&g.open_failures, 0);
    atomic_store(&g.closes, 0);
    atomic_store(&g.hits, 0);
    atomic_store(&g.invalidations, 0);
    atomic_store(&g.fallbacks, 0);
}
