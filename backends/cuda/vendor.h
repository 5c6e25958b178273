/* SPDX-License-Identifier: Apache-2.0 */
/* One kernel source, two vendors: the CUDA backend's sources are written against the CUDA
 * runtime, and compiled for AMD by the hip backend with VG_VENDOR_HIP defined. This header maps
 * every CUDA name those sources use to its HIP equivalent, and papers over the places where
 * HIP's graph API still has the CUDA 11 forms. Add a mapping here, never an #ifdef in a kernel:
 * this is the one file of the shared sources that may branch on VG_VENDOR_HIP.
 *
 * Besides the name mappings, each vendor defines:
 *   VG_VENDOR_NAME          the backend's name ("cuda", "hip")
 *   VG_VENDOR_SCORE         its auto-selection score (vg_backend_iface.score)
 *   VG_VENDOR_HARDWARE      whose GPUs it drives, for messages ("NVIDIA", "AMD")
 *   VG_VENDOR_NCCL_*        the collective library: its header, its file, its name (NCCL, RCCL)
 *   vg_bf16, vg_f16         the 16-bit float types
 *   vg_runtime_version_text the version line of the interface table
 *   vg_graph_exec_update, vg_graph_upload   the graph calls whose forms differ
 *   vg_pdl_capable(prop)    whether a device can take programmatic dependent launches
 *   vg_launch_programmatic  a kernel launch that may overlap the previous kernel's tail
 *   vg_pdl_wait_release()   the device side: wait for the previous kernel, release the next
 *   vg_mem_address_range    the base and size of the allocation holding a device address
 *   vg_load_coherent(p)     read what another block of the same kernel wrote (after its fence):
 *                           past a possibly stale L1 line */
#ifndef VG_VENDOR_H
#define VG_VENDOR_H

#if defined(VG_VENDOR_HIP)
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdio.h>
#if __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>
typedef __hip_bfloat16 vg_bf16;
#else
/* ROCm before 5.7 (Debian 12 ships 5.2) has only hip_bfloat16, a class with conversions. */
#include <hip/hip_bfloat16.h>
typedef hip_bfloat16 vg_bf16;
static __host__ __device__ inline float __bfloat162float(hip_bfloat16 x) { return (float)x; }
static __host__ __device__ inline hip_bfloat16 __float2bfloat16(float f) { return hip_bfloat16(f); }
#endif

#define VG_VENDOR_NAME "hip"
#define VG_VENDOR_SCORE 800
#define VG_VENDOR_HARDWARE "AMD"
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaErrorNoDevice hipErrorNoDevice
#define cudaErrorInsufficientDriver hipErrorInsufficientDriver
#define cudaErrorInvalidValue hipErrorInvalidValue
#define cudaErrorStreamCaptureUnsupported hipErrorStreamCaptureUnsupported
#define cudaErrorStreamCaptureInvalidated hipErrorStreamCaptureInvalidated
#define cudaErrorStreamCaptureUnjoined hipErrorStreamCaptureUnjoined
#define cudaErrorStreamCaptureImplicit hipErrorStreamCaptureImplicit
#define cudaErrorStreamCaptureWrongThread hipErrorStreamCaptureWrongThread
#define cudaErrorGraphExecUpdateFailure hipErrorGraphExecUpdateFailure
#define cudaGetErrorName hipGetErrorName
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaSetDevice hipSetDevice
#define cudaDeviceProp hipDeviceProp_t
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaMemGetInfo hipMemGetInfo
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaHostAlloc hipHostMalloc
#define cudaHostAllocDefault hipHostMallocDefault
#define cudaFreeHost hipHostFree
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemsetAsync hipMemsetAsync
#define cudaStream_t hipStream_t
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamWaitEvent hipStreamWaitEvent
#define cudaEvent_t hipEvent_t
#define cudaEventCreate hipEventCreate
#define cudaEventDestroy hipEventDestroy
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaStreamCaptureStatus hipStreamCaptureStatus
#define cudaStreamCaptureStatusNone hipStreamCaptureStatusNone
#define cudaStreamCaptureStatusActive hipStreamCaptureStatusActive
#define cudaStreamIsCapturing hipStreamIsCapturing
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define cudaGraphGetNodes hipGraphGetNodes
#define cudaGraphNode_t hipGraphNode_t
#define cudaMemcpyKind hipMemcpyKind
#define cudaIpcMemHandle_t hipIpcMemHandle_t
#define cudaIpcGetMemHandle hipIpcGetMemHandle
#define cudaIpcOpenMemHandle hipIpcOpenMemHandle
#define cudaIpcCloseMemHandle hipIpcCloseMemHandle
#define cudaIpcMemLazyEnablePeerAccess hipIpcMemLazyEnablePeerAccess
#define cudaStreamQuery hipStreamQuery
#define cudaEventQuery hipEventQuery
#define cudaErrorNotReady hipErrorNotReady
/* Communicators (comm.cu): RCCL, NCCL's API under its header, loaded at run time. */
#define VG_VENDOR_NCCL_HEADER <rccl/rccl.h>
#define VG_VENDOR_NCCL_LIBRARY "librccl.so.1"
#define VG_VENDOR_NCCL_NAME "RCCL"
typedef __half vg_f16;
/* HIP's shuffles take no mask; vg's kernels use 32-lane groups, which wave64 hardware runs as
 * two independent halves (the xor offsets stay below 32). */
#define __shfl_xor_sync(mask, value, offset) __shfl_xor((value), (offset))
/* A wavefront runs in lockstep, so a warp barrier only has to keep the compiler from moving
 * shared-memory accesses across it. */
#define __syncwarp() __builtin_amdgcn_wave_barrier()

static inline void vg_runtime_version_text(char *buf, size_t cap)
{
    int rt = 0, drv = 0;
    (void)hipRuntimeGetVersion(&rt);
    (void)hipDriverGetVersion(&drv); /* 0 when no driver is installed */
    snprintf(buf, cap, "vg hip backend, HIP runtime %d.%d.%d, driver %d", rt / 10000000,
             (rt / 100000) % 100, rt % 100000, drv);
}

/* HIP keeps CUDA 11's cudaGraphExecUpdate(exec, graph, &errorNode, &result). */
static inline hipError_t vg_graph_exec_update(hipGraphExec_t exec, hipGraph_t graph)
{
    hipGraphNode_t node = nullptr;
    hipGraphExecUpdateResult result;
    return hipGraphExecUpdate(exec, graph, &node, &result);
}
/* hipGraphUpload is absent from older ROCm: the first launch then pays the upload. */
#if defined(HIP_VERSION) && HIP_VERSION >= 50300000
#define vg_graph_upload(exec, stream) hipGraphUpload((exec), (stream))
#else
#define vg_graph_upload(exec, stream) hipSuccess
#endif

static inline hipError_t vg_mem_address_range(void *ptr, void **base, size_t *size)
{
    return hipMemGetAddressRange(base, size, ptr);
}

/* ABI 1.3 native handles: what a pointer is, and which device a caller's stream runs on. */
#define VG_VENDOR_NATIVE_API VG_NATIVE_HIP
enum { VG_PTR_UNKNOWN = 0, VG_PTR_DEVICE, VG_PTR_HOST, VG_PTR_MANAGED };
static inline int vg_pointer_kind(const void *p, int *device)
{
    hipPointerAttribute_t a;
    if (hipPointerGetAttributes(&a, p) != hipSuccess) {
        (void)hipGetLastError(); /* older ROCm fails for memory HIP never saw */
        return VG_PTR_UNKNOWN;
    }
    *device = a.device;
    return a.isManaged ? VG_PTR_MANAGED
           : a.memoryType == hipMemoryTypeDevice ? VG_PTR_DEVICE
           : a.memoryType == hipMemoryTypeHost ? VG_PTR_HOST : VG_PTR_UNKNOWN;
}
/* HIP of Debian 12 (ROCm 5.2) has no hipStreamGetDevice: a stream is checked to be one only. */
static inline hipError_t vg_stream_device(hipStream_t s, int *device)
{
    unsigned flags = 0;
    *device = -1;
    return hipStreamGetFlags(s, &flags);
}

/* No programmatic dependent launch on HIP: every launch is a plain one, and kernels do not wait. */
static inline int vg_pdl_capable(const hipDeviceProp_t *prop)
{
    (void)prop;
    return 0;
}
template <typename... KArgs, typename... Args>
static inline void vg_launch_programmatic(void (*kern)(KArgs...), dim3 grid, dim3 block, size_t smem,
                                          hipStream_t stream, Args... args)
{
    kern<<<grid, block, smem, stream>>>(args...);
}
__device__ __forceinline__ void vg_pdl_wait_release() {}
/* A volatile load is device-coherent on AMD (older ROCm has no __ldcg for float). */
template <typename T> __device__ __forceinline__ T vg_load_coherent(const T *p) { return *(const volatile T *)p; }

#else /* CUDA */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdio.h>

#define VG_VENDOR_NAME "cuda"
#define VG_VENDOR_SCORE 900
#define VG_VENDOR_HARDWARE "NVIDIA"
/* Communicators (comm.cu): NCCL, loaded at run time. */
#define VG_VENDOR_NCCL_HEADER <nccl.h>
#define VG_VENDOR_NCCL_LIBRARY "libnccl.so.2"
#define VG_VENDOR_NCCL_NAME "NCCL"
typedef __nv_bfloat16 vg_bf16;
typedef __half vg_f16;

static inline void vg_runtime_version_text(char *buf, size_t cap)
{
    int rt = 0, drv = 0;
    (void)cudaRuntimeGetVersion(&rt);
    (void)cudaDriverGetVersion(&drv); /* 0 when no driver is installed */
    snprintf(buf, cap, "vg cuda backend, runtime %d.%d, driver %d.%d", rt / 1000, (rt % 1000) / 10,
             drv / 1000, (drv % 1000) / 10);
}

static inline cudaError_t vg_graph_exec_update(cudaGraphExec_t exec, cudaGraph_t graph)
{
    cudaGraphExecUpdateResultInfo info;
    return cudaGraphExecUpdate(exec, graph, &info);
}
#define vg_graph_upload(exec, stream) cudaGraphUpload((exec), (stream))

/* The runtime API has no cuMemGetAddressRange: the driver's, reached through the runtime (so the
 * backend does not link libcuda, and loads on machines without a driver). */
static inline cudaError_t vg_mem_address_range(void *ptr, void **base, size_t *size)
{
    typedef int (*range_fn)(unsigned long long *base, size_t *size, unsigned long long ptr);
    void *fn = NULL;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000,
                                                     cudaEnableDefault, &found);
#else
    cudaError_t e = cudaGetDriverEntryPoint("cuMemGetAddressRange", &fn, cudaEnableDefault, &found);
#endif
    if (e != cudaSuccess) return e;
    if (found != cudaDriverEntryPointSuccess || !fn) return cudaErrorNotSupported;
    unsigned long long b = 0;
    size_t n = 0;
    if (((range_fn)fn)(&b, &n, (unsigned long long)(uintptr_t)ptr) != 0) return cudaErrorInvalidValue;
    *base = (void *)(uintptr_t)b;
    *size = n;
    return cudaSuccess;
}

/* ABI 1.3 native handles: what a pointer is, and which device a caller's stream runs on. */
#define VG_VENDOR_NATIVE_API VG_NATIVE_CUDA
enum { VG_PTR_UNKNOWN = 0, VG_PTR_DEVICE, VG_PTR_HOST, VG_PTR_MANAGED };
static inline int vg_pointer_kind(const void *p, int *device)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return VG_PTR_UNKNOWN;
    }
    *device = a.device;
    return a.type == cudaMemoryTypeDevice    ? VG_PTR_DEVICE
           : a.type == cudaMemoryTypeHost    ? VG_PTR_HOST
           : a.type == cudaMemoryTypeManaged ? VG_PTR_MANAGED : VG_PTR_UNKNOWN;
}
static inline cudaError_t vg_stream_device(cudaStream_t s, int *device)
{
#if CUDART_VERSION >= 12080
    return cudaStreamGetDevice(s, device);
#else
    unsigned flags = 0;
    *device = -1; /* before 12.8 the runtime cannot tell: a stream is checked to be one only */
    return cudaStreamGetFlags(s, &flags);
#endif
}

/* Programmatic dependent launch: sm_90 and newer. */
static inline int vg_pdl_capable(const cudaDeviceProp *prop) { return prop->major >= 9; }

/* Launch kern so that the GPU may schedule its blocks while the previous kernel on the stream is
 * finishing; the kernel waits for that kernel's writes with vg_pdl_wait_release(). Errors surface
 * through cudaGetLastError, as with <<<>>>. */
template <typename... KArgs, typename... Args>
static inline void vg_launch_programmatic(void (*kern)(KArgs...), dim3 grid, dim3 block, size_t smem,
                                          cudaStream_t stream, Args... args)
{
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = stream;
    cfg.attrs = &attr, cfg.numAttrs = 1;
    (void)cudaLaunchKernelEx(&cfg, kern, args...);
}

/* Device side: wait until the kernel before this one on the stream has completed and its writes
 * are visible, then allow the next kernel to be scheduled. A no-op before sm_90 and without a
 * programmatic launch. */
__device__ __forceinline__ void vg_pdl_wait_release()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
/* From L2 (ld.global.cg): L1 is not coherent between blocks. */
template <typename T> __device__ __forceinline__ T vg_load_coherent(const T *p) { return __ldcg(p); }
#endif

#endif /* VG_VENDOR_H */
