/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub memory: host allocations with an accounted capacity, so out-of-memory paths are
 * testable, and optional poisoning so a graph that reads a stale buffer is caught. */
#include <stdlib.h>
#include <string.h>

#include "stub_internal.h"

/* 0xFF bytes are NaN as F32, BF16 and F16: any arithmetic on poisoned memory shows. */
#define STUB_POISON_BYTE 0xFF

vg_status stub_charge(vg_bk_device *dev, uint64_t bytes, const char *what)
{
    pthread_mutex_lock(&dev->lock);
    if (bytes > dev->cfg.capacity - dev->used) {
        uint64_t used = dev->used;
        pthread_mutex_unlock(&dev->lock);
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY,
                        "kunlun_stub: out of device memory: %s of %llu bytes, %llu of %llu in use",
                        what, (unsigned long long)bytes, (unsigned long long)used,
                        (unsigned long long)dev->cfg.capacity);
    }
    dev->used += bytes;
    pthread_mutex_unlock(&dev->lock);
    return VG_OK;
}

void stub_uncharge(vg_bk_device *dev, uint64_t bytes)
{
    pthread_mutex_lock(&dev->lock);
    dev->used -= bytes;
    pthread_mutex_unlock(&dev->lock);
}

int stub_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    void *p = realloc(*arr, nc * elem);
    if (!p) return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

vg_status stub_mem_alloc(vg_bk_device *dev, size_t bytes, void **out)
{
    if (!dev || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: mem_alloc: NULL");
    *out = NULL;
    if (bytes == 0) bytes = 1;
    if (stub_fault_hit(dev, STUB_FAULT_MEM_ALLOC))
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: mem_alloc of %zu bytes failed "
                                              "(injected fault)", bytes);
    vg_status st = stub_charge(dev, bytes, "mem_alloc");
    if (st != VG_OK) return st;
    /* 64-byte alignment, as device allocators give at least that. */
    size_t rounded = (bytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, rounded);
    if (!p) {
        stub_uncharge(dev, bytes);
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: host allocation of %zu bytes failed",
                        bytes);
    }
    if (dev->cfg.poison) memset(p, STUB_POISON_BYTE, rounded);
    pthread_mutex_lock(&dev->lock);
    if (stub_grow((void **)&dev->allocs, &dev->cap_allocs, dev->nallocs + 1, sizeof(stub_alloc))) {
        pthread_mutex_unlock(&dev->lock);
        free(p);
        stub_uncharge(dev, bytes);
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: allocation table full");
    }
    dev->allocs[dev->nallocs++] = (stub_alloc){.ptr = p, .bytes = bytes};
    pthread_mutex_unlock(&dev->lock);
    *out = p;
    return VG_OK;
}

/* Keep freed memory mapped but poisoned, releasing the oldest beyond the quarantine budget. */
static void quarantine_locked(vg_bk_device *dev, stub_alloc a)
{
    memset(a.ptr, STUB_POISON_BYTE, a.bytes);
    if (stub_grow((void **)&dev->quarantine, &dev->cap_quarantine, dev->nquarantine + 1,
             sizeof(stub_alloc))) {
        free(a.ptr);
        return;
    }
    dev->quarantine[dev->nquarantine++] = a;
    dev->quarantine_bytes += a.bytes;
    size_t drop = 0;
    while (dev->quarantine_bytes > dev->cfg.quarantine_cap && drop < dev->nquarantine) {
        dev->quarantine_bytes -= dev->quarantine[drop].bytes;
        free(dev->quarantine[drop].ptr);
        drop++;
    }
    if (drop) {
        memmove(dev->quarantine, dev->quarantine + drop,
                (dev->nquarantine - drop) * sizeof(stub_alloc));
        dev->nquarantine -= drop;
    }
}

vg_status stub_mem_free(vg_bk_device *dev, void *ptr)
{
    if (!dev) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: mem_free: NULL device");
    if (!ptr) return VG_OK;
    pthread_mutex_lock(&dev->lock);
    for (size_t i = dev->nallocs; i-- > 0;) {
        if (dev->allocs[i].ptr != ptr) continue;
        stub_alloc a = dev->allocs[i];
        dev->allocs[i] = dev->allocs[--dev->nallocs];
        dev->used -= a.bytes;
        if (a.shared) /* unmapped at once: another process may map it, quarantine is moot */
            stub_ipc_release(&a);
        else if (dev->cfg.poison)
            quarantine_locked(dev, a);
        else
            free(a.ptr);
        pthread_mutex_unlock(&dev->lock);
        return VG_OK;
    }
    pthread_mutex_unlock(&dev->lock);
    return STUB_ERR(VG_ERR_INVALID_ARG,
                    "kunlun_stub: mem_free(%p): not a live allocation of this device "
                    "(double free or foreign pointer)", ptr);
}

int stub_is_live(vg_bk_device *dev, const void *p, size_t bytes)
{
    const char *c = p;
    int ok = 0;
    pthread_mutex_lock(&dev->lock);
    for (size_t i = 0; i < dev->nallocs && !ok; i++) {
        const char *base = dev->allocs[i].ptr;
        ok = c >= base && bytes <= dev->allocs[i].bytes &&
             (size_t)(c - base) <= dev->allocs[i].bytes - bytes;
    }
    pthread_mutex_unlock(&dev->lock);
    return ok;
}

vg_status stub_host_alloc(vg_bk_device *dev, size_t bytes, void **out)
{
    if (!dev || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: host_alloc: NULL");
    *out = malloc(bytes ? bytes : 1);
    if (!*out)
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: host_alloc of %zu bytes failed",
                        bytes);
    return VG_OK;
}

vg_status stub_host_free(vg_bk_device *dev, void *ptr)
{
    (void)dev;
    free(ptr);
    return VG_OK;
}

/* Copies and memset are stream commands: recorded into a graph while capturing. */
typedef struct copy_args {
    void *dst;
    const void *src;
    size_t bytes;
} copy_args;

typedef struct set_args {
    void *dst;
    int value;
    size_t bytes;
} set_args;

static void run_copy(vg_bk_stream *s, const void *a)
{
    (void)s;
    const copy_args *c = a;
    memmove(c->dst, c->src, c->bytes);
}

static void run_set(vg_bk_stream *s, const void *a)
{
    (void)s;
    const set_args *c = a;
    memset(c->dst, c->value, c->bytes);
}

static vg_status copy(vg_bk_device *dev, vg_bk_stream *s, void *dst, const void *src,
                      size_t bytes, const char *name)
{
    if (!dev || !s || ((!dst || !src) && bytes))
        return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: %s: NULL argument", name);
    if (!bytes) return VG_OK;
    copy_args a = {dst, src, bytes};
    return stub_submit(s, STUB_NOT_AN_OP, name, run_copy, &a, sizeof a);
}

vg_status stub_copy_h2d(vg_bk_device *d, vg_bk_stream *s, void *dst, const void *src, size_t n)
{
    return copy(d, s, dst, src, n, "copy_h2d");
}

vg_status stub_copy_d2h(vg_bk_device *d, vg_bk_stream *s, void *dst, const void *src, size_t n)
{
    return copy(d, s, dst, src, n, "copy_d2h");
}

vg_status stub_copy_d2d(vg_bk_device *d, vg_bk_stream *s, void *dst, const void *src, size_t n)
{
    return copy(d, s, dst, src, n, "copy_d2d");
}

vg_status stub_memset(vg_bk_device *dev, vg_bk_stream *s, void *dst, int value, size_t bytes)
{
    if (!dev || !s || (!dst && bytes))
        return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: memset: NULL argument");
    if (!bytes) return VG_OK;
    set_args a = {dst, value, bytes};
    return stub_submit(s, STUB_NOT_AN_OP, "memset", run_set, &a, sizeof a);
}
