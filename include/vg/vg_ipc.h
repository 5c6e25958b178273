/* SPDX-License-Identifier: Apache-2.0 */
/* vg: device tensors shared across processes through pooled IPC handles (docs/ipc.md).
 *
 * A producer process carves tensors out of a pool: one device allocation exported once. Each
 * tensor travels to a consumer as a descriptor of fixed size: the pool's identity and handle,
 * the tensor's byte offset, dtype and shape. The consumer imports descriptors: the pool is
 * opened once per process and runtime and kept in a process-wide cache, so the thousandth tensor
 * of a pool costs a lookup, not a driver call.
 *
 *   producer                                   consumer
 *   vg_ipc_pool_create(rt, bytes, &pool)
 *   vg_ipc_pool_alloc(pool, dtype, ndim, shape, &desc, &ptr)   (write the tensor at ptr)
 *   vg_ipc_desc_encode(&desc, buf)  -- any channel: a socket, a pipe, shared memory -->
 *                                              vg_ipc_desc_decode(buf, len, &desc)
 *                                              vg_ipc_import(rt, &desc, &tensor)   (read at
 *                                              tensor.ptr) ... vg_ipc_release(&tensor)
 *
 * Descriptors are untrusted input: decoding checks every field (version, sizes, offsets, shape
 * overflow) and importing checks the tensor against the allocation the backend actually mapped,
 * so a malformed, forged or stale descriptor is an error with a message, never a wild pointer.
 *
 * The cache: its key is the pool's 128-bit random identity (with the importing runtime), which
 * a pool freed and created again, or a restarted producer, never repeats. Concurrent imports
 * of one pool open it once (double-checked locking). An import whose cached mapping does not
 * fit the descriptor, or whose open through the cache fails, invalidates the entry and retries
 * once without the cache. VG_IPC_POOL_CACHE=0 turns the cache off: every import opens the
 * handle and its release closes it.
 *
 * Ordering is the application's: the producer makes a tensor's contents complete on the device
 * (vg_stream_sync) before it sends the descriptor, and frees or reuses a tensor's space only
 * after the consumer says it is done with it. Needs a device with VG_CAP_IPC. */
#ifndef VG_IPC_H
#define VG_IPC_H

#include "vg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- descriptors --------------------------------------------------------------------------- */

#define VG_IPC_DESC_VERSION 1
#define VG_IPC_DESC_BYTES 256 /* the serialised form, every version */
#define VG_IPC_MAX_DIMS 8
#define VG_IPC_POOL_ID_BYTES 16
#define VG_IPC_BACKEND_NAME_BYTES 16

/* One tensor in a pool, decoded. vg_ipc_desc_encode writes it as VG_IPC_DESC_BYTES bytes in a
 * fixed little-endian layout (docs/ipc.md), the same on every machine and compiler. */
typedef struct vg_ipc_desc {
    uint32_t version;                             /* VG_IPC_DESC_VERSION */
    char backend[VG_IPC_BACKEND_NAME_BYTES];      /* the producer's backend, NUL-terminated */
    unsigned char pool_id[VG_IPC_POOL_ID_BYTES];  /* random at pool creation, never reused */
    int32_t producer_pid;                         /* for messages */
    int32_t device;                               /* the producer's device index */
    uint64_t pool_bytes;                          /* the exported allocation */
    uint64_t offset;                              /* of the tensor's first byte in the pool */
    uint64_t bytes;                               /* product(shape) x dtype size */
    vg_dtype dtype;
    int32_t ndim;                                 /* 0 (a scalar) .. VG_IPC_MAX_DIMS */
    int64_t shape[VG_IPC_MAX_DIMS];               /* unused dimensions are 0 */
    vg_ipc_handle handle;                         /* the pool's handle (vg_types.h) */
} vg_ipc_desc;

/* Serialise into out[VG_IPC_DESC_BYTES]; the descriptor is checked as decode checks it. */
VG_API vg_status vg_ipc_desc_encode(const vg_ipc_desc *desc, unsigned char *out);
/* Parse untrusted bytes. VG_ERR_FORMAT with a message naming the field for anything wrong:
 * length, magic, an unknown version, a backend name that is not terminated, an unknown dtype,
 * ndim, a negative or overflowing shape, bytes that disagree with the shape, an offset or size
 * outside the pool, an offset not aligned to the dtype, nonzero reserved bytes. */
VG_API vg_status vg_ipc_desc_decode(const void *buf, size_t len, vg_ipc_desc *out);

/* ---- producer: a pool ----------------------------------------------------------------------- */

typedef struct vg_ipc_pool vg_ipc_pool;

/* One exportable device allocation of `bytes` (>= 1) on rt's device, its handle computed once.
 * VG_ERR_UNSUPPORTED when the device has no VG_CAP_IPC. */
VG_API vg_status vg_ipc_pool_create(vg_runtime *rt, size_t bytes, vg_ipc_pool **out);
/* Free the pool. Consumers that still map it keep their mapping until they invalidate it, but
 * must not read it any more: what it holds then is the backend's business (kunlun_stub keeps the
 * pages; a GPU driver may not). Tell them (vg_ipc_cache_invalidate). NULL is a no-op. */
VG_API vg_status vg_ipc_pool_destroy(vg_ipc_pool *pool);
/* Carve a tensor of dtype and shape (ndim 0..VG_IPC_MAX_DIMS) out of the pool, 256-byte aligned:
 * its device address in *ptr and its descriptor in *desc. VG_ERR_OUT_OF_MEMORY when no free
 * range is large enough. Thread-safe. */
VG_API vg_status vg_ipc_pool_alloc(vg_ipc_pool *pool, vg_dtype dtype, int ndim,
                                   const int64_t *shape, vg_ipc_desc *desc, void **ptr);
/* Give a tensor's range back (by its descriptor); VG_ERR_INVALID_ARG for a descriptor that is
 * not a live tensor of this pool. Thread-safe. */
VG_API vg_status vg_ipc_pool_free(vg_ipc_pool *pool, const vg_ipc_desc *desc);
/* The pool's device address, size, and bytes in use (rounded up to the alignment). */
VG_API void *vg_ipc_pool_base(const vg_ipc_pool *pool);
VG_API size_t vg_ipc_pool_size(const vg_ipc_pool *pool);
VG_API size_t vg_ipc_pool_used(vg_ipc_pool *pool);

/* ---- consumer: imports through the cache -------------------------------------------------------- */

/* An imported tensor. Release it once with vg_ipc_release; `ptr` stays valid until then (even
 * when the cache entry is invalidated meanwhile). */
typedef struct vg_ipc_tensor {
    void *ptr;      /* the tensor's first byte, a device address of the importing runtime */
    uint64_t bytes; /* desc->bytes */
    int cached;     /* 1: served by a cache entry; 0: a mapping of its own */
    void *priv_;    /* vg's bookkeeping */
} vg_ipc_tensor;

/* Resolve a (decoded) descriptor into a device address on rt's device, through the cache.
 * Fails with VG_ERR_UNSUPPORTED when the device has no VG_CAP_IPC or the descriptor names
 * another backend, VG_ERR_FORMAT when the descriptor does not fit the allocation the backend
 * mapped, or the backend's status (VG_ERR_NOT_FOUND for a pool whose producer is gone, say).
 * Thread-safe. */
VG_API vg_status vg_ipc_import(vg_runtime *rt, const vg_ipc_desc *desc, vg_ipc_tensor *out);
VG_API vg_status vg_ipc_release(vg_ipc_tensor *tensor);

/* Drop the cache entry of desc's pool (every runtime's): the mapping is closed once the last
 * tensor imported through it is released. For a consumer told that a pool was destroyed.
 * *dropped (may be NULL) counts the entries dropped. */
VG_API vg_status vg_ipc_cache_invalidate(const vg_ipc_desc *desc, int *dropped);
/* Drop every entry. */
VG_API void vg_ipc_cache_clear(void);
/* Whether imports go through the cache: VG_IPC_POOL_CACHE (0 turns it off; default on), read at
 * the first import, unless vg_ipc_cache_set_enabled said otherwise. Turning it off does not
 * drop entries (vg_ipc_cache_clear does). */
VG_API int vg_ipc_cache_enabled(void);
VG_API void vg_ipc_cache_set_enabled(int on);

/* Process-wide counters since the start or the last reset. */
typedef struct vg_ipc_stats {
    uint32_t struct_size;
    uint64_t imports;       /* successful vg_ipc_import calls */
    uint64_t opens;         /* handles the backend opened (ipc_open calls that succeeded) */
    uint64_t open_failures; /* ipc_open calls that failed */
    uint64_t closes;        /* mappings closed */
    uint64_t hits;          /* imports served by an existing cache entry */
    uint64_t invalidations; /* cache entries dropped: invalidate, clear, a failed check */
    uint64_t fallbacks;     /* imports retried without the cache after a cache failure */
    uint64_t entries;       /* cache entries now */
} vg_ipc_stats;

/* Fill *out up to out->struct_size. */
VG_API void vg_ipc_stats_get(vg_ipc_stats *out);
VG_API void vg_ipc_stats_reset(void); /* every counter but entries */

#ifdef __cplusplus
}
#endif
#endif /* VG_IPC_H */
