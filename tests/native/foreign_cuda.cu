/* SPDX-License-Identifier: Apache-2.0 */
/* The test's own CUDA kernel, compiled with the test: launched on a vg stream's cudaStream_t
 * beside vg's ops, it is what an engine's custom kernel is to vg's graphs. */
#include <cuda_runtime.h>
#include <stdlib.h>

#include "foreign.h"

struct foreign_ctx {
    vg_runtime *rt;
};

__global__ void scale_shift(const float *x, float *y, size_t n, float a, float b)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}

static vg_status cuda_init(vg_runtime *rt, foreign_ctx **out)
{
    vg_native_device nd = {};
    nd.struct_size = sizeof nd;
    vg_status st = vg_runtime_native_device(rt, &nd);
    if (st != VG_OK) return st;
    if (cudaSetDevice(nd.ordinal) != cudaSuccess)
        return vg_error_set(VG_ERR_DEVICE, "the test's CUDA code: cudaSetDevice(%d)", nd.ordinal);
    *out = (foreign_ctx *)calloc(1, sizeof **out);
    if (!*out) return VG_ERR_OUT_OF_MEMORY;
    (*out)->rt = rt;
    return VG_OK;
}

static void cuda_fini(foreign_ctx *c) { free(c); }

static vg_status cuda_scale(foreign_ctx *c, vg_stream *s, const float *x, float *y, size_t n,
                            float a, float b)
{
    (void)c;
    void *native = NULL;
    vg_status st = vg_stream_native(s, &native);
    if (st != VG_OK) return st;
    unsigned blocks = (unsigned)((n + 255) / 256);
    scale_shift<<<blocks ? blocks : 1, 256, 0, (cudaStream_t)native>>>(x, y, n, a, b);
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? VG_OK
                            : vg_error_set(VG_ERR_DEVICE, "the test's CUDA kernel: %s",
                                           cudaGetErrorString(e));
}

static void *cuda_stream_create(foreign_ctx *c)
{
    (void)c;
    cudaStream_t s = NULL;
    return cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess ? (void *)s : NULL;
}

static void cuda_stream_destroy(foreign_ctx *c, void *s)
{
    (void)c;
    cudaStreamDestroy((cudaStream_t)s);
}

static void *cuda_stream_foreign(foreign_ctx *c)
{
    (void)c;
    return NULL; /* another device's stream would do, where the machine has two GPUs */
}

static void *cuda_mem_alloc(foreign_ctx *c, size_t bytes)
{
    (void)c;
    void *p = NULL;
    return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

static void cuda_mem_free(foreign_ctx *c, void *p)
{
    (void)c;
    cudaFree(p);
}

extern "C" const foreign_impl foreign_cuda = {
    VG_NATIVE_CUDA, cuda_init, cuda_fini, cuda_scale, cuda_stream_create, cuda_stream_destroy,
    cuda_stream_foreign, cuda_mem_alloc, cuda_mem_free,
};
