/* SPDX-License-Identifier: Apache-2.0 */
/* vg: definitions shared by the core API (vg.h) and the plugin ABI.
 * Plain C, no dependencies, safe to include from C++ and from CUDA/HIP sources. */
#ifndef VG_TYPES_H
#define VG_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define VG_API __attribute__((visibility("default")))
#define VG_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define VG_API
#define VG_PRINTF(fmt, args)
#endif

/* Every public function and every plugin member that can fail returns one of these.
 * Values are stable: new codes are only appended. */
typedef enum vg_status {
    VG_OK = 0,
    VG_ERR_INVALID_ARG = 1,   /* a caller passed something malformed */
    VG_ERR_OUT_OF_MEMORY = 2, /* device or host allocation failed */
    VG_ERR_NOT_FOUND = 3,     /* a file, plugin, tensor or key does not exist */
    VG_ERR_LOAD = 4,          /* dlopen or dlsym failed */
    VG_ERR_ABI = 5,           /* plugin ABI version, size or mandatory member problem */
    VG_ERR_NO_DEVICE = 6,     /* the backend loaded but has no usable device */
    VG_ERR_UNSUPPORTED = 7,   /* optional feature or op absent on this backend */
    VG_ERR_CAPTURE = 8,       /* graph capture or instantiation failed */
    VG_ERR_DEVICE = 9,        /* any other device runtime error */
    VG_ERR_FORMAT = 10,       /* malformed file or input data */
    VG_ERR_IO = 11,           /* reading or writing a file failed */
    VG_ERR_STATE = 12,        /* call not valid in the object's current state */
    VG_ERR_INTERNAL = 13      /* a bug in vg: please report it */
} vg_status;

typedef enum vg_dtype {
    VG_DTYPE_F32 = 0,
    VG_DTYPE_F16 = 1,
    VG_DTYPE_BF16 = 2,
    VG_DTYPE_I32 = 3,
    VG_DTYPE_I64 = 4,
    VG_DTYPE_U8 = 5,
    VG_DTYPE_COUNT_ = 6
} vg_dtype;

typedef enum vg_log_level {
    VG_LOG_ERROR = 0,
    VG_LOG_WARN = 1,
    VG_LOG_INFO = 2,
    VG_LOG_DEBUG = 3,
    VG_LOG_TRACE = 4
} vg_log_level;

/* ---- device capabilities ------------------------------------------------------------------ */

#define VG_CAP_GRAPH (1ull << 0)        /* capture/instantiate/launch work */
#define VG_CAP_GRAPH_UPDATE (1ull << 1) /* a graph exec can be updated in place */
#define VG_CAP_IPC (1ull << 2)          /* memory can be shared across processes (ABI 1.2) */
#define VG_CAP_PINNED_HOST (1ull << 3)  /* host_alloc returns page-locked memory */
/* Native handles, wrapped streams and registered memory (ABI 1.3, vg_native.h). */
#define VG_CAP_NATIVE (1ull << 4)
/* Work that others enqueue on a vg stream's native stream while vg captures it (an engine's own
 * kernels, a library call) is recorded into vg's graph and replayed with it (ABI 1.3). True where
 * capture records the stream (CUDA, HIP); false where graphs record only the backend's own
 * launches (OpenCL command buffers, kunlun_stub). */
#define VG_CAP_FOREIGN_CAPTURE (1ull << 5)
#define VG_CAP_GRAPH_LOOP (1ull << 6) /* a graph can loop on the device (ABI 1.4) */
/* Communicators for tensor parallelism (ABI 1.5, vg_comm.h), and their collectives inside a
 * capture (replayed with the graph). */
#define VG_CAP_COMM (1ull << 7)
#define VG_CAP_COMM_CAPTURE (1ull << 8)

/* An exported allocation, as bytes another process can receive (ABI 1.2, vg_ipc.h): what they
 * mean is the backend's own (CUDA: a cudaIpcMemHandle_t; kunlun_stub: a process id, a file
 * descriptor number and the file's identity). 64 bytes: the size of CUDA's and HIP's handles. */
#define VG_IPC_HANDLE_BYTES 64
typedef struct vg_ipc_handle {
    unsigned char bytes[VG_IPC_HANDLE_BYTES];
} vg_ipc_handle;

/* ---- native handles (ABI 1.3; applications use vg_native.h) ------------------------------ */

/* The vendor API behind a device's native handles. */
typedef enum vg_native_api {
    VG_NATIVE_NONE = 0,   /* the backend has no native handles */
    VG_NATIVE_HOST = 1,   /* host memory and the calling thread (kunlun_stub) */
    VG_NATIVE_CUDA = 2,   /* cudaStream_t, device ordinal, device pointers */
    VG_NATIVE_HIP = 3,    /* hipStream_t, device ordinal, device pointers */
    VG_NATIVE_OPENCL = 4, /* cl_command_queue, cl_platform_id/cl_device_id/cl_context, cl_mem */
    VG_NATIVE_VENDOR = 5  /* another vendor's: see its documentation */
} vg_native_api;

/* The native objects behind an open device. Filled up to struct_size; fields an API has no
 * object for are NULL. */
typedef struct vg_native_device {
    uint32_t struct_size;
    vg_native_api api;
    int32_t ordinal;  /* CUDA/HIP device ordinal; OpenCL and kunlun_stub: vg's device index */
    void *platform;   /* OpenCL: cl_platform_id */
    void *device;     /* OpenCL: cl_device_id */
    void *context;    /* OpenCL: cl_context */
} vg_native_device;

/* The native memory behind a vg device address. */
typedef struct vg_native_mem {
    uint32_t struct_size;
    /* CUDA, HIP, kunlun_stub: the address itself (a device pointer; host memory for the stub);
     * OpenCL: the cl_mem holding it. */
    void *handle;
    uint64_t offset;   /* of the address inside `handle` (OpenCL); 0 for pointer APIs */
    uint64_t bytes;    /* from the address to the end of its allocation; 0 when unknown */
    int32_t registered; /* 1: inside caller-owned memory registered with vg_mem_register */
} vg_native_mem;

/* A named backend option for vg_runtime_open: a tuning knob the backend otherwise reads from
 * the environment variable of the same name (VG_CUDA_GEMM, VG_OPENCL_PLATFORM, ...). */
typedef struct vg_option {
    const char *name;
    const char *value;
} vg_option;

/* What a device is. Filled by the backend's device_info (and vg_runtime_device_info): the
 * caller sets struct_size, and only the fields inside it are written, so old callers stay
 * safe. */
typedef struct vg_device_info {
    uint32_t struct_size;
    char name[128];
    uint64_t mem_total;      /* bytes */
    uint64_t mem_free;       /* bytes, at the time of the call */
    uint64_t caps;           /* VG_CAP_* */
    /* ABI 1.0's capturable-op mask, bit (1 << vg_op_id) for ops below 64. Read only from
     * plugins without op_caps; ask vg_runtime_op_support instead. */
    uint64_t capturable_ops;
    int32_t arch_major;      /* vendor architecture (CUDA compute capability, gfx major), or 0 */
    int32_t arch_minor;
    int32_t compute_units;   /* SMs, CUs, or host cores for a CPU stand-in */
    int32_t index;           /* device index within the backend */
} vg_device_info;

#ifdef __cplusplus
}
#endif
#endif /* VG_TYPES_H */
