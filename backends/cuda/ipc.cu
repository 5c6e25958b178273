/* SPDX-License-Identifier: Apache-2.0 */
/* The IPC section of the CUDA backend (ABI 1.2; HIP through vendor.h): legacy CUDA IPC memory
 * handles over cudaMalloc'ed allocations.
 *
 * cudaIpcGetMemHandle names an allocation for other processes; cudaIpcOpenMemHandle maps it into
 * this one (taking the driver's lock and mapping memory: the cost vg's core avoids by opening
 * each pool once and caching it), with lazy peer access when the importer runs on another GPU.
 * Repeated opens of one handle are reference-counted by the driver, each closed once. A process
 * cannot open its own handles. The size of
 * what was mapped comes from the driver (cuMemGetAddressRange on the new mapping), never from
 * the descriptor that carried the handle, so the core's bounds check holds against a forged
 * pool size.
 *
 * VMM (cuMemCreate with a shareable POSIX fd) would also work, but needs an fd passed over a
 * Unix socket: the legacy handle travels in the descriptor's 64 bytes as it is. */
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

extern "C" vg_status vgc_ipc_open(vg_bk_device *dev, const vg_ipc_handle *handle, void **out,
                                  size_t *bytes)
{
    if (!dev || !handle || !out || !bytes)
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": ipc_open: NULL");
    *out = NULL;
    *bytes = 0;
    VGC_CHECK(cudaSetDevice(dev->index));
    cudaIpcMemHandle_t h;
    memcpy(&h, handle->bytes, sizeof h);
    void *p = NULL;
    VGC_CHECK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
    void *base = NULL;
    size_t size = 0;
    cudaError_t e = vg_mem_address_range(p, &base, &size);
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

extern "C" vg_status vgc_ipc_close(vg_bk_device *dev, void *ptr)
{
    if (!dev) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": ipc_close: NULL device");
    if (!ptr) return VG_OK;
    VGC_CHECK(cudaSetDevice(dev->index));
    VGC_CHECK(cudaIpcCloseMemHandle(ptr));
    return VG_OK;
}
