/* SPDX-License-Identifier: Apache-2.0 */
/* ABI 1.3, native handles of the CUDA backend (and of HIP, through vendor.h): the device ordinal,
 * the cudaStream_t behind a stream, device pointers as they are. A caller's stream is wrapped
 * (never destroyed: stream.cu) after checking it is a stream of this device; a caller's memory is
 * registered after cudaPointerGetAttributes says it is device memory of this device and the
 * driver's address range says the whole range is one allocation. Stream capture records whatever
 * runs on the stream, so foreign work is captured (VG_CAP_FOREIGN_CAPTURE, device.cu). */
#include <stdlib.h>

#include "common.cuh"

/* The knobs device.cu reads through vgc_option (named options or the environment). */
const char *const vgc_option_names[] = {
    "VG_CUDA_DEVICE", "VG_CUDA_ATTENTION", "VG_CUDA_ATTENTION_ROWS", "VG_CUDA_GEMM",
    "VG_CUDA_GEMM_TUNE", "VG_CUDA_PDL", "VG_CUDA_DECODE_HEADS", "VG_CUDA_DECODE_TC", NULL,
};

extern "C" vg_status vgc_native_device(vg_bk_device *dev, vg_native_device *out)
{
    if (!dev || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": native_device: NULL");
    out->api = VG_VENDOR_NATIVE_API;
    out->ordinal = dev->index;
    out->platform = out->device = out->context = NULL;
    return VG_OK;
}

extern "C" vg_status vgc_stream_native(vg_bk_device *, vg_bk_stream *s, void **out)
{
    if (!s || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": stream_native: NULL");
    *out = (void *)s->s;
    s->native_given = 1; /* its owner may keep it or set its attributes: never handed to another */
    return VG_OK;
}

extern "C" vg_status vgc_stream_wrap(vg_bk_device *dev, void *native, vg_bk_stream **out)
{
    if (!dev || !native || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": stream_wrap: NULL");
    *out = NULL;
    VGC_CHECK(cudaSetDevice(dev->index));
    int device = -1;
    cudaError_t e = vgc_stream_device((cudaStream_t)native, &device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": stream_wrap(%p): not a stream (%s)",
                       native, cudaGetErrorName(e));
    }
    if (device >= 0 && device != dev->index)
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": stream_wrap(%p): a stream of device %d, "
                                           "vg's is device %d", native, device, dev->index);
    vg_bk_stream *s = (vg_bk_stream *)calloc(1, sizeof *s);
    if (!s) return VGC_ERR(VG_ERR_OUT_OF_MEMORY, VG_VENDOR_NAME ": out of host memory");
    s->dev = dev;
    s->s = (cudaStream_t)native;
    s->wrapped = 1;
    vg_status st = vgc_gemm_stream_init(s); /* vg's per-stream workspace, on the caller's stream */
    if (st != VG_OK) {
        free(s);
        return st;
    }
    *out = s;
    return VG_OK;
}

/* The allocation holding p, from the driver; *base NULL where it cannot tell. */
static void allocation_of(const void *p, char **base, size_t *size)
{
    void *b = NULL;
    *base = NULL;
    *size = 0;
    if (vgc_mem_address_range((void *)p, &b, size) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    *base = (char *)b;
}

extern "C" vg_status vgc_mem_native(vg_bk_device *dev, const void *ptr, vg_native_mem *out)
{
    if (!dev || !ptr || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": mem_native: NULL");
    int device = -1;
    if (vgc_pointer_kind(ptr, &device) != VG_PTR_DEVICE || device != dev->index)
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": mem_native(%p): not device memory of "
                                           "device %d", ptr, dev->index);
    char *base = NULL;
    size_t size = 0;
    allocation_of(ptr, &base, &size);
    out->handle = (void *)ptr;
    out->offset = 0;
    out->bytes = base ? size - (size_t)((const char *)ptr - base) : 0;
    return VG_OK;
}

extern "C" vg_status vgc_mem_register(vg_bk_device *dev, void *native, size_t bytes, void **out)
{
    if (!dev || !native || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": mem_register: NULL");
    *out = NULL;
    int device = -1;
    int kind = vgc_pointer_kind(native, &device);
    static const char *const kinds[] = {"memory the runtime does not know (a host pointer?)",
                                        "device memory", "page-locked host memory",
                                        "managed memory (vg uses device memory only)"};
    if (kind != VG_PTR_DEVICE)
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": mem_register(%p): not device memory: "
                                           "%s", native, kinds[kind]);
    if (device != dev->index)
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": mem_register(%p): memory of device %d, "
                                           "vg's is device %d", native, device, dev->index);
    char *base = NULL;
    size_t size = 0;
    allocation_of(native, &base, &size);
    if (base && (size_t)((char *)native - base) + bytes > size)
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": mem_register(%p, %zu bytes): the "
                                           "allocation holding it ends %zu bytes after it", native,
                       bytes, size - (size_t)((char *)native - base));
    *out = native;
    return VG_OK;
}

/* Pointer APIs keep nothing per registration: the core's table is the whole record. */
extern "C" vg_status vgc_mem_unregister(vg_bk_device *dev, void *ptr)
{
    if (!dev || !ptr) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": mem_unregister: NULL");
    return VG_OK;
}
