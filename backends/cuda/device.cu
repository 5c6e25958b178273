/* SPDX-License-Identifier: Apache-2.0 */
/* Devices, error mapping and the memory section of the CUDA backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"

vg_status vgc_fail(cudaError_t err, const char *what, const char *file, int line)
{
    vg_status st = VG_ERR_DEVICE;
    switch (err) {
    case cudaErrorMemoryAllocation: st = VG_ERR_OUT_OF_MEMORY; break;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: st = VG_ERR_NO_DEVICE; break;
    case cudaErrorInvalidValue: st = VG_ERR_INVALID_ARG; break;
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorStreamCaptureWrongThread: st = VG_ERR_CAPTURE; break;
    default: break;
    }
    const char *base = strrchr(file, '/');
    /* the shared sources spell every runtime call cuda*: name the vendor's own */
    const char *prefix = "";
    if (strncmp(what, "cuda", 4) == 0 && strcmp(VG_VENDOR_NAME, "cuda") != 0) {
        prefix = VG_VENDOR_NAME;
        what += 4;
    }
    vgc_host->set_error(st, VG_VENDOR_NAME ": %s%s failed: %s: %s (%s:%d)", prefix, what,
                        cudaGetErrorName(err), cudaGetErrorString(err), base ? base + 1 : file,
                        line);
    (void)cudaGetLastError(); /* clear a non-sticky error so the next call starts clean */
    return st;
}

static int default_index(void)
{
    const char *v = vgc_option("VG_CUDA_DEVICE");
    if (!v || !*v) return 0;
    char *end = NULL;
    long i = strtol(v, &end, 10);
    if (*end || i < 0 || i > 1024) {
        vgc_host->log(VG_LOG_WARN, VG_VENDOR_NAME ": VG_CUDA_DEVICE=%s is not a device index; "
                                   "using 0", v);
        return 0;
    }
    return (int)i;
}

extern "C" vg_status vgc_device_count(int *count)
{
    if (!count) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": device_count: NULL");
    *count = 0;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
        /* the usual case on a machine without the vendor's GPU: say so plainly (the runtime
         * reports a missing driver as an insufficient one) */
        (void)cudaGetLastError();
        if (e == cudaErrorNoDevice)
            vgc_host->set_error(VG_ERR_NO_DEVICE, VG_VENDOR_NAME ": no " VG_VENDOR_HARDWARE
                                " GPU found (%s)", cudaGetErrorName(e));
        else
            vgc_host->set_error(VG_ERR_NO_DEVICE, VG_VENDOR_NAME ": no " VG_VENDOR_HARDWARE
                                " driver or GPU found, or the driver is too old for this "
                                "runtime (%s)", cudaGetErrorName(e));
        return VG_ERR_NO_DEVICE;
    }
    if (e != cudaSuccess) {
        vgc_fail(e, "cudaGetDeviceCount", __FILE__, __LINE__);
        return VG_ERR_NO_DEVICE; /* never a harder failure than "no device" */
    }
    *count = n;
    return VG_OK;
}

extern "C" vg_status vgc_device_open(int index, vg_bk_device **out)
{
    if (!out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": device_open: NULL");
    *out = NULL;
    if (index < 0) index = default_index();
    int n = 0;
    vg_status st = vgc_device_count(&n);
    if (st != VG_OK) return st;
    if (index >= n)
        return VGC_ERR(VG_ERR_NO_DEVICE, VG_VENDOR_NAME ": device %d requested, %d present", index,
                       n);
    vg_bk_device *dev = (vg_bk_device *)calloc(1, sizeof *dev);
    if (!dev) return VGC_ERR(VG_ERR_OUT_OF_MEMORY, VG_VENDOR_NAME ": out of host memory");
    dev->index = index;
    if (pthread_mutex_init(&dev->spare_lock, NULL) != 0) {
        free(dev);
        return VGC_ERR(VG_ERR_DEVICE, VG_VENDOR_NAME ": pthread_mutex_init failed");
    }
    cudaError_t e = cudaSetDevice(index);
    if (e == cudaSuccess) e = cudaGetDeviceProperties(&dev->prop, index);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&dev->upload_stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        st = vgc_fail(e, "opening the device", __FILE__, __LINE__);
        pthread_mutex_destroy(&dev->spare_lock);
        free(dev);
        return st;
    }
    const char *att = vgc_option("VG_CUDA_ATTENTION");
    dev->simple_attention = att && strcmp(att, "simple") == 0;
    dev->wgmma_attention_off = att && strcmp(att, "mma") == 0;
    const char *tune = vgc_option("VG_CUDA_GEMM_TUNE");
    dev->gemm_tune = tune && strcmp(tune, "0") == 0   ? VGC_TUNE_OFF
                     : tune && strcmp(tune, "2") == 0 ? VGC_TUNE_WIDE : VGC_TUNE_CANDIDATES;
    const char *gemm = vgc_option("VG_CUDA_GEMM");
    dev->gemm_tiled = gemm && strcmp(gemm, "tiled") == 0;
    snprintf(dev->gemm_choice, sizeof dev->gemm_choice, "%s", gemm ? gemm : "");
    const char *pdl = vgc_option("VG_CUDA_PDL");
    dev->pdl = !vgc_pdl_capable(&dev->prop) || (pdl && strcmp(pdl, "0") == 0) ? VGC_PDL_OFF
               : pdl && strcmp(pdl, "eager") == 0 ? VGC_PDL_EAGER : VGC_PDL_ALWAYS;
    const char *dheads = vgc_option("VG_CUDA_DECODE_HEADS");
    dev->decode_heads = dheads && atoi(dheads) >= 1 && atoi(dheads) <= 8 ? atoi(dheads) : 0;
    const char *dtc = vgc_option("VG_CUDA_DECODE_TC");
    dev->decode_tc_off = dtc && strcmp(dtc, "0") == 0;
    const char *arows = vgc_option("VG_CUDA_ATTENTION_ROWS");
    dev->attention_rows = arows && (strcmp(arows, "64") == 0 || strcmp(arows, "128") == 0) ? atoi(arows) : 0;
    st = vgc_attention_tc_prepare();
    if (st == VG_OK) st = vgc_decode_tc_prepare(dev);
    if (st == VG_OK) st = vgc_attention_wg_prepare(dev);
    if (st == VG_OK) st = vgc_gemm_device_init(dev);
    if (st != VG_OK) {
        (void)cudaStreamDestroy(dev->upload_stream);
        pthread_mutex_destroy(&dev->spare_lock);
        free(dev);
        return st;
    }
    *out = dev;
    return VG_OK;
}

extern "C" vg_status vgc_device_close(vg_bk_device *dev)
{
    if (!dev) return VG_OK;
    (void)cudaSetDevice(dev->index);
    vgc_gemm_device_fini(dev);
    vgc_stream_spares_fini(dev);
    cudaError_t e = cudaStreamDestroy(dev->upload_stream);
    pthread_mutex_destroy(&dev->spare_lock);
    free(dev);
    VGC_CHECK(e);
    return VG_OK;
}

/* What every device of this backend offers. */
/* Stream capture records whatever runs on the stream: foreign work is captured too. */
static const uint64_t k_caps = VG_CAP_GRAPH | VG_CAP_GRAPH_UPDATE | VG_CAP_PINNED_HOST | VG_CAP_IPC |
                               VG_CAP_NATIVE | VG_CAP_FOREIGN_CAPTURE;

/* ABI 1.1. Every op is captured as plain kernel launches (GEMM plans are tuned only outside
 * capture; inside it cuBLASLt's first pick is used), so each is capturable. */
extern "C" vg_status vgc_op_caps(vg_bk_device *dev, uint32_t op, vg_op_caps *out)
{
    if (!dev || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": op_caps: NULL");
    /* every op of the catalogue this backend was built against, in every dtype it allows; an op
     * appended to the catalogue stops the build here until vgc_ops (ops.cu) implements it */
    static_assert(VG_OP_COUNT_ == VG_OP_ROTARY_PAGED_ATTENTION_NORM_X + 1,
                  "a new op in vg_ops.h: implement it in vgc_ops, then extend this assertion");
    int known = op < VG_OP_COUNT_;
    /* VG_CUDA_FUSE=0: not op table version 6's, 8's, 9's and 10's fusions, so a model takes its
     * separate ops (to compare the two in one build) */
    const char *fuse = getenv("VG_CUDA_FUSE");
    if (fuse && strcmp(fuse, "0") == 0 &&
        (op == VG_OP_ROTARY_KV_STORE || op == VG_OP_GEMM_SILU_GATE || op == VG_OP_GEMM_RMSNORM_A ||
         op == VG_OP_ROTARY_PAGED_ATTENTION || op == VG_OP_GEMM_RMSNORM_A_UNIT ||
         op == VG_OP_ROTARY_PAGED_ATTENTION_NORM_X))
        known = 0;
    out->flags = known ? VG_OP_SUPPORTED | ((k_caps & VG_CAP_GRAPH) ? VG_OP_CAPTURABLE : 0u) : 0u;
    out->dtypes = 0;
    return VG_OK;
}

extern "C" vg_status vgc_device_info(vg_bk_device *dev, vg_device_info *info)
{
    if (!dev || !info) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": device_info: NULL");
    VGC_CHECK(cudaSetDevice(dev->index));
    size_t free_b = 0, total_b = 0;
    VGC_CHECK(cudaMemGetInfo(&free_b, &total_b));
    vg_device_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    snprintf(full.name, sizeof full.name, "%s", dev->prop.name);
    full.mem_total = total_b;
    full.mem_free = free_b;
    full.caps = k_caps | vgc_loop_caps(); /* WHILE nodes: by runtime and driver version */
    full.caps |= vgc_comm_caps();         /* when NCCL (RCCL) loads */
    for (uint32_t op = 0; op < 64; op++) { /* for ABI 1.0 consumers; op_caps says the same */
        vg_op_caps c = {sizeof c, 0, 0};
        if (vgc_op_caps(dev, op, &c) == VG_OK && (c.flags & VG_OP_CAPTURABLE))
            full.capturable_ops |= 1ull << op;
    }
    full.arch_major = dev->prop.major;
    full.arch_minor = dev->prop.minor;
    full.compute_units = dev->prop.multiProcessorCount;
    full.index = dev->index;
    vg_backend_copy_out(info, &full);
    return VG_OK;
}

/* ---- memory ------------------------------------------------------------------------------ */

extern "C" vg_status vgc_mem_alloc(vg_bk_device *dev, size_t bytes, void **out)
{
    if (!dev || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": mem_alloc: NULL");
    *out = NULL;
    VGC_CHECK(cudaSetDevice(dev->index));
    VGC_CHECK(cudaMalloc(out, bytes ? bytes : 1));
    return VG_OK;
}

extern "C" vg_status vgc_mem_free(vg_bk_device *dev, void *ptr)
{
    if (!dev) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": mem_free: NULL device");
    if (!ptr) return VG_OK;
    VGC_CHECK(cudaSetDevice(dev->index));
    VGC_CHECK(cudaFree(ptr));
    return VG_OK;
}

extern "C" vg_status vgc_host_alloc(vg_bk_device *dev, size_t bytes, void **out)
{
    if (!dev || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": host_alloc: NULL");
    *out = NULL;
    VGC_CHECK(cudaSetDevice(dev->index));
    VGC_CHECK(cudaHostAlloc(out, bytes ? bytes : 1, cudaHostAllocDefault));
    return VG_OK;
}

extern "C" vg_status vgc_host_free(vg_bk_device *dev, void *ptr)
{
    (void)dev;
    if (!ptr) return VG_OK;
    VGC_CHECK(cudaFreeHost(ptr));
    return VG_OK;
}

static vg_status copy(vg_bk_stream *s, void *dst, const void *src, size_t bytes,
                      cudaMemcpyKind kind, const char *name)
{
    if (!s || ((!dst || !src) && bytes))
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": %s: NULL argument", name);
    if (!bytes) return VG_OK;
    VGC_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s->s));
    return VG_OK;
}

extern "C" vg_status vgc_copy_h2d(vg_bk_device *, vg_bk_stream *s, void *d, const void *h, size_t n)
{
    return copy(s, d, h, n, cudaMemcpyHostToDevice, "copy_h2d");
}

extern "C" vg_status vgc_copy_d2h(vg_bk_device *, vg_bk_stream *s, void *h, const void *d, size_t n)
{
    return copy(s, h, d, n, cudaMemcpyDeviceToHost, "copy_d2h");
}

extern "C" vg_status vgc_copy_d2d(vg_bk_device *, vg_bk_stream *s, void *d, const void *x, size_t n)
{
    return copy(s, d, x, n, cudaMemcpyDeviceToDevice, "copy_d2d");
}

extern "C" vg_status vgc_memset(vg_bk_device *, vg_bk_stream *s, void *dst, int v, size_t n)
{
    if (!s || (!dst && n)) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": memset: NULL");
    if (!n) return VG_OK;
    VGC_CHECK(cudaMemsetAsync(dst, v, n, s->s));
    return VG_OK;
}
