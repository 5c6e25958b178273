/* SPDX-License-Identifier: Apache-2.0 */
/* The producer's pool: one exportable allocation (the backend's ipc_alloc), its handle exported
 * once, and tensors carved out of it first-fit at 256-byte alignment. The live tensors are kept
 * sorted by offset, so a gap search, an insertion and a free by offset are each one pass. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "ipc_internal.h"

#define POOL_ALIGN 256

typedef struct pool_range {
    uint64_t offset, size; /* size rounded up to POOL_ALIGN, at least POOL_ALIGN */
} pool_range;

struct vg_ipc_pool {
    vg_runtime *rt;
    void *base;
    size_t bytes;
    vg_ipc_desc proto; /* what every descriptor of the pool shares */
    pthread_mutex_t lock;
    pool_range *live;  /* sorted by offset */
    size_t nlive, cap;
    uint64_t used;
};

vg_status vg_ipc_require(const vg_runtime *rt, const char *fn)
{
    if (!rt) return vg_error_set(VG_ERR_INVALID_ARG, "%s: runtime is NULL", fn);
    if (!(rt->info.caps & VG_CAP_IPC))
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: backend '%s' (device %s) cannot share memory "
                                                "across processes (no IPC capability)",
                            fn, rt->iface.name, rt->info.name);
    return VG_OK;
}

/* 16 bytes no other pool will have: from the kernel's random source. */
static vg_status random_id(unsigned char *id, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = getrandom(id + got, n - got, 0);
        if (k > 0) got += (size_t)k;
        else if (k < 0 && errno == EINTR) continue;
        else break;
    }
    if (got == n) return VG_OK;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        got = 0;
        while (got < n) {
            ssize_t k = read(fd, id + got, n - got);
            if (k > 0) got += (size_t)k;
            else if (k < 0 && errno == EINTR) continue;
            else break;
        }
        close(fd);
    }
    return got == n ? VG_OK
                    : vg_error_set(VG_ERR_INTERNAL, "vg_ipc_pool_create: no random bytes for the "
                                                    "pool's identity (getrandom and /dev/urandom "
                                                    "failed)");
}

#define BK(rt, member, ...) ((rt)->iface.member((rt)->dev, __VA_ARGS__))

vg_status vg_ipc_pool_create(vg_runtime *rt, size_t bytes, vg_ipc_pool **out)
{
    if (!out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_pool_create: out is NULL");
    *out = NULL;
    vg_status st = vg_ipc_require(rt, "vg_ipc_pool_create");
    if (st == VG_OK) st = vg_capture_forbid("vg_ipc_pool_create");
    if (st != VG_OK) return st;
    if (bytes == 0)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_pool_create: bytes is 0 (a pool holds at "
                                                "least one byte)");
    if (strlen(rt->iface.name) >= VG_IPC_BACKEND_NAME_BYTES)
        return vg_error_set(VG_ERR_UNSUPPORTED, "vg_ipc_pool_create: backend name '%s' is longer "
                                                "than a descriptor holds (%d bytes)",
                            rt->iface.name, VG_IPC_BACKEND_NAME_BYTES - 1);
    vg_ipc_pool *p = calloc(1, sizeof *p);
    if (!p) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_ipc_pool_create: out of host memory");
    p->rt = rt;
    p->bytes = bytes;
    vg_ipc_desc *d = &p->proto;
    d->version = VG_IPC_DESC_VERSION;
    strcpy(d->backend, rt->iface.name);
    d->producer_pid = (int32_t)getpid();
    d->device = rt->info.index;
    d->pool_bytes = bytes;
    st = random_id(d->pool_id, sizeof d->pool_id);
    if (st == VG_OK) {
        vg_error_clear();
        st = BK(rt, ipc_alloc, bytes, &p->base);
        if (st == VG_OK && !p->base)
            st = vg_error_set(VG_ERR_INTERNAL, "backend '%s' returned no memory", rt->iface.name);
        if (st != VG_OK) {
            p->base = NULL;
            vg_error_prefix("vg_ipc_pool_create: %zu bytes: ", bytes);
        }
    }
    if (st == VG_OK) {
        st = BK(rt, ipc_export, p->base, &d->handle);
        if (st != VG_OK) vg_error_prefix("vg_ipc_pool_create: exporting the pool: ");
    }
    if (st != VG_OK) {
        if (p->base) BK(rt, mem_free, p->base);
        free(p);
        return st;
    }
    pthread_mutex_init(&p->lock, NULL);
    *out = p;
    return VG_OK;
}

vg_status vg_ipc_pool_destroy(vg_ipc_pool *p)
{
    if (!p) return VG_OK;
    if (p->nlive)
        vg_log(VG_LOG_DEBUG, "vg_ipc_pool_destroy: %zu tensors still carved out", p->nlive);
    vg_status st = BK(p->rt, mem_free, p->base);
    pthread_mutex_destroy(&p->lock);
    free(p->live);
    free(p);
    return st;
}

void *vg_ipc_pool_base(const vg_ipc_pool *p) { return p ? p->base : NULL; }
size_t vg_ipc_pool_size(const vg_ipc_pool *p) { return p ? p->bytes : 0; }

size_t vg_ipc_pool_used(vg_ipc_pool *p)
{
    if (!p) return 0;
    pthread_mutex_lock(&p->lock);
    size_t u = (size_t)p->used;
    pthread_mutex_unlock(&p->lock);
    return u;
}

vg_status vg_ipc_pool_alloc(vg_ipc_pool *p, vg_dtype dtype, int ndim, const int64_t *shape,
                            vg_ipc_desc *desc, void **ptr)
{
    if (ptr) *ptr = NULL;
    if (!p || !desc || !ptr || (ndim > 0 && !shape))
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_pool_alloc: %s is NULL",
                            !p ? "pool" : !desc ? "desc" : !ptr ? "ptr" : "shape");
    vg_ipc_desc d = p->proto;
    d.dtype = dtype;
    d.ndim = ndim;
    if ((unsigned)dtype >= VG_DTYPE_COUNT_)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_pool_alloc: dtype %d is unknown", (int)dtype);
    if (ndim < 0 || ndim > VG_IPC_MAX_DIMS)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_pool_alloc: ndim %d is outside 0..%d",
                            ndim, VG_IPC_MAX_DIMS);
    uint64_t n = vg_dtype_size(dtype);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_pool_alloc: shape[%d] is negative", i);
        d.shape[i] = shape[i];
        if (shape[i] && n > UINT64_MAX / (uint64_t)shape[i])
            return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_pool_alloc: the shape's size "
                                                    "overflows 64 bits");
        n *= (uint64_t)shape[i];
    }
    d.bytes = n;
    uint64_t size = n <= POOL_ALIGN ? POOL_ALIGN : (n + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
    if (n > p->bytes || size < n)
        return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_ipc_pool_alloc: a tensor of %llu bytes is "
                                                  "larger than the pool (%zu bytes)",
                            (unsigned long long)n, p->bytes);
    pthread_mutex_lock(&p->lock);
    if (p->nlive == p->cap) {
        size_t ncap = p->cap ? 2 * p->cap : 64;
        pool_range *v = realloc(p->live, ncap * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&p->lock);
            return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_ipc_pool_alloc: out of host memory");
        }
        p->live = v;
        p->cap = ncap;
    }
    /* first fit: the gap before live[i], for i = 0..nlive (the last gap ends at the pool's
     * end; a tensor's bytes may end there even when its rounded size would not) */
    uint64_t at = 0;
    size_t i = 0;
    for (;; i++) {
        uint64_t end = i < p->nlive ? p->live[i].offset : p->bytes;
        uint64_t need = i < p->nlive ? size : n;
        if (end >= at && end - at >= need) break;
        if (i == p->nlive) {
            uint64_t used = p->used;
            size_t count = p->nlive;
            pthread_mutex_unlock(&p->lock);
            return vg_error_set(VG_ERR_OUT_OF_MEMORY,
                                "vg_ipc_pool_alloc: no free range of %llu bytes in the pool "
                                "(%zu bytes, %llu in use by %zu tensors)",
                                (unsigned long long)n, p->bytes, (unsigned long long)used, count);
        }
        at = p->live[i].offset + p->live[i].size;
    }
    memmove(p->live + i + 1, p->live + i, (p->nlive - i) * sizeof *p->live);
    p->live[i] = (pool_range){at, size};
    p->nlive++;
    p->used += size;
    pthread_mutex_unlock(&p->lock);
    d.offset = at;
    *desc = d;
    *ptr = (char *)p->base + at;
    return VG_OK;
}

vg_status vg_ipc_pool_free(vg_ipc_pool *p, const vg_ipc_desc *d)
{
    if (!p || !d)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_pool_free: %s is NULL", p ? "desc" : "pool");
    if (memcmp(d->pool_id, p->proto.pool_id, sizeof d->pool_id) != 0)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_pool_free: the descriptor belongs to "
                                                "another pool");
    pthread_mutex_lock(&p->lock);
    size_t lo = 0, hi = p->nlive;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->live[mid].offset < d->offset) lo = mid + 1;
        else hi = mid;
    }
    if (lo == p->nlive || p->live[lo].offset != d->offset) {
        pthread_mutex_unlock(&p->lock);
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_pool_free: no live tensor at offset %llu "
                                                "(freed twice?)", (unsigned long long)d->offset);
    }
    p->used -= p->live[lo].size;
    memmove(p->live + lo, p->live + lo + 1, (p->nlive - lo - 1) * sizeof *p->live);
    p->nlive--;
    pthread_mutex_unlock(&p->lock);
    return VG_OK;
}
