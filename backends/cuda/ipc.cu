/* SPDX-License-Identifier: Apache-2.0 */
/* The IPC section of the CUDA backend (ABI 1.2; HIP through vendor.h): legacy CUDA IPC memory
 * handles over cudaMalloc'ed allocations.
 *
 * cudaIpcGetMemHandle names an allocation for other processes; cudaIpcOpenMemHandle maps it into
 * this one (taking the driver's lock and mapping memory: the cost vg's core avoids by opening
 * each pool once and caching it), with lazy peer access when the importer runs on another GPU.
 * Whether the driver lets one process open a handle a second time while the first mapping is
 * open has changed across versions (older ones refuse: "already mapped"), and the core may do it
 * (a cached mapping and an uncached retry of the same pool, or two runtimes), so this file counts
 * opens per device and handle itself: a second open returns the same mapping, the last close
 * closes it. A process cannot open its own handles. The size of
 * what was mapped comes from the driver (cuMemGetAddressRange on the new mapping), never from
 * the descriptor that carried the handle, so the core's bounds check holds against a forged
 * pool size.
 *
 * VMM (cuMemCreate with a shareable POSIX fd) would also work, but needs an fd passed over a
 * Unix socket: the legacy handle travels in the descriptor's 64 bytes as it is. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"

static_assert(sizeof(cudaIpcMemHandle_t) == VG_IPC_HANDLE_BYTES,
              "a vendor IPC handle fills vg_ipc_handle exactly");

extern "C" vg_status vgc_mem_alloc(vg_bk_device *, size_t, void **);

/* cudaMalloc'ed memory is exportable as it is. */
extern "C" vg_status vgc_ipc_alloc(vg_bk_device *dev, size_t bytes, void **out)
{
    return vgc_mem_alloc(dev, bytes, out);
}

extern "C" vg_status vgc_ipc_export(vg_bk_device *dev, void *base, vg_ipc_handle *out)
{
    if (!dev || !base || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": ipc_export: NULL");
    memset(out, 0, sizeof *out);
    VGC_CHECK(cudaSetDevice(dev->index));
    cudaIpcMemHandle_t h;
    VGC_CHECK(cudaIpcGetMemHandle(&h, base));
    memcpy(out->bytes, &h, sizeof h);
    return VG_OK;
}

/* The mappings this process holds: one per device and handle, with a count of opens. */
typedef struct mapping {
    int device;
    vg_ipc_handle handle;
    void *ptr;
    size_t size;
    long opens;
} mapping;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static mapping *g_maps;
static size_t g_nmaps, g_cap;

static mapping *find_handle(int device, const vg_ipc_handle *h)
{
    for (size_t i = 0; i < g_nmaps; i++)
        if (g_maps[i].device == device && !memcmp(&g_maps[i].handle, h, sizeof *h)) return &g_maps[i];
    return NULL;
}

/* Open and size a mapping. */
static vg_status open_mapping(const vg_ipc_handle *handle, void **out, size_t *bytes)
{
    cudaIpcMemHandle_t h;
    memcpy(&h, handle->bytes, sizeof h);
    void *p = NULL;
    VGC_CHECK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
    void *base = NULL;
    size_t size = 0;
    cudaError_t e = vgc_mem_address_range(p, &base, &size);
    if (e == cudaSuccess && base != p) e = cudaErrorInvalidValue; /* a mapping starts its range */
    if (e != cudaSuccess) {
        vg_status st = vgc_fail(e, "querying the size of an opened IPC mapping", __FILE__, __LINE__);
        (void)cudaIpcCloseMemHandle(p);
        return st;
    }
    *out = p;
    *bytes = size;
    return VG_OK;
}

/* The lock is held across the driver's open: the driver serialises opens anyway, and two
 * threads must not open one handle at once. The core opens each pool once per runtime, so this
 * is rare. */
extern "C" vg_status vgc_ipc_open(vg_bk_device *dev, const vg_ipc_handle *handle, void **out,
                                  size_t *bytes)
{
    if (!dev || !handle || !out || !bytes)
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": ipc_open: NULL");
    *out = NULL;
    *bytes = 0;
    pthread_mutex_lock(&g_lock);
    mapping *m = find_handle(dev->index, handle);
    vg_status st = VG_OK;
    if (!m && g_nmaps == g_cap) {
        size_t ncap = g_cap ? 2 * g_cap : 16;
        mapping *v = (mapping *)realloc(g_maps, ncap * sizeof *v);
        if (v) g_maps = v, g_cap = ncap;
        else st = VGC_ERR(VG_ERR_OUT_OF_MEMORY, VG_VENDOR_NAME ": ipc_open: out of host memory");
    }
    if (!m && st == VG_OK) {
        cudaError_t e = cudaSetDevice(dev->index);
        void *p = NULL;
        size_t size = 0;
        st = e == cudaSuccess ? open_mapping(handle, &p, &size)
                              : vgc_fail(e, "cudaSetDevice", __FILE__, __LINE__);
        if (st == VG_OK) {
            m = &g_maps[g_nmaps++];
            *m = mapping{dev->index, *handle, p, size, 0};
        }
    }
    if (m) {
        m->opens++;
        *out = m->ptr;
        *bytes = m->size;
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

extern "C" vg_status vgc_ipc_close(vg_bk_device *dev, void *ptr)
{
    if (!dev) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": ipc_close: NULL device");
    if (!ptr) return VG_OK;
    pthread_mutex_lock(&g_lock);
    size_t i = 0;
    while (i < g_nmaps && !(g_maps[i].device == dev->index && g_maps[i].ptr == ptr)) i++;
    if (i == g_nmaps) {
        pthread_mutex_unlock(&g_lock);
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": ipc_close(%p): not an address "
                                          "ipc_open returned on device %d", ptr, dev->index);
    }
    int last = --g_maps[i].opens == 0;
    if (last) g_maps[i] = g_maps[--g_nmaps];
    pthread_mutex_unlock(&g_lock);
    if (!last) return VG_OK;
    VGC_CHECK(cudaSetDevice(dev->index));
    VGC_CHECK(cudaIpcCloseMemHandle(ptr));
    return VG_OK;
}
