/* SPDX-License-Identifier: Apache-2.0 */
/* vg: device tensors to and from other frameworks without a copy, through DLPack
 * (DLManagedTensorVersioned, DLPack >= 1.0). docs/engines.md has the lifetimes.
 *
 * The DLPack header: vg ships the upstream dlpack.h of release v1.1 next to this file
 * (include/vg/dlpack/dlpack.h, checked against its pinned checksum by the test suite), because
 * Debian 12's libdlpack-dev is DLPack 0.6, which has no versioned tensor. The quoted include below
 * finds that copy first. A program that includes another dlpack.h first must include one of
 * version 1.0 or later (the check below says so at compile time).
 *
 *   export: vg_dlpack_export(rt, &t, &m)  ->  hand m to the other framework, which calls
 *           m->deleter(m) when it is done. The memory stays vg's (or its owner's): the deleter
 *           frees only the DLPack structs, then calls t.release(t.release_user) if given.
 *   import: vg_dlpack_import(rt, m, &t)   ->  use t.ptr in vg ops and graphs  ->
 *           vg_dlpack_release(&t) calls m->deleter(m). On failure m stays the caller's.
 *
 * Devices: CUDA exports and imports kDLCUDA, HIP kDLROCM, OpenCL kDLOpenCL (data is the cl_mem,
 * byte_offset the offset inside it), kunlun_stub kDLCPU (its device memory is host memory), each
 * with device_id = the device's ordinal (vg_native_device). */
#ifndef VG_DLPACK_H
#define VG_DLPACK_H

#include "dlpack/dlpack.h"
#include "vg_native.h"

#if !defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION < 1
#error "vg_dlpack.h needs DLPack >= 1.0 (DLManagedTensorVersioned): include vg's include/vg/dlpack/dlpack.h, not an older dlpack.h (Debian 12's libdlpack-dev is 0.6)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* DLPack declares the versioned tensor as a struct tag only; C11 and C++ allow this typedef
 * even where another header repeats it. */
typedef struct DLManagedTensorVersioned DLManagedTensorVersioned;

#define VG_DLPACK_MAX_DIMS 8

/* A device tensor as vg sees it: what export reads and import writes. */
typedef struct vg_dlpack_tensor {
    uint32_t struct_size;
    void *ptr;      /* vg device address of element [0, ..., 0] */
    vg_dtype dtype; /* F32, F16, BF16, I32, I64, U8 */
    int32_t ndim;   /* 0 (a scalar) .. VG_DLPACK_MAX_DIMS */
    int64_t shape[VG_DLPACK_MAX_DIMS];
    /* In elements, like DLPack's. Export: used when has_strides is 1 (any non-negative values),
     * else the tensor is compact row-major. Import: always written (compact ones computed). */
    int64_t strides[VG_DLPACK_MAX_DIMS];
    int32_t has_strides;
    int32_t read_only; /* export: sets DLPACK_FLAG_BITMASK_READ_ONLY; import: the producer's flag */
    /* Export only, optional: called once from the DLPack deleter, after vg freed its structs
     * (e.g. to drop the engine's reference to the memory). */
    void (*release)(void *user);
    void *release_user;
    void *priv_; /* import: vg's bookkeeping, for vg_dlpack_release */
} vg_dlpack_tensor;

/* The DLPack device of rt's device: {kDLCUDA, ordinal}, {kDLOpenCL, index}, {kDLCPU, index} for
 * kunlun_stub (the stub's device index, 0 unless VG_STUB_DEVICES opens more than one).
 * VG_ERR_UNSUPPORTED without VG_CAP_NATIVE. */
VG_API vg_status vg_dlpack_device(vg_runtime *rt, DLDevice *out);

/* Wrap t (ptr a vg device address of rt: an allocation, a runner buffer, registered memory) as a
 * newly allocated DLManagedTensorVersioned (version {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION}).
 * No copy: the consumer reads and writes vg's memory, which must outlive the consumer's use (a
 * runner buffer is rewritten by the next vg_runner_run and moves when it grows). Refused: an
 * unknown dtype, ndim out of range, a negative shape or stride, an address the backend does not
 * know. */
VG_API vg_status vg_dlpack_export(vg_runtime *rt, const vg_dlpack_tensor *t,
                                  DLManagedTensorVersioned **out);

/* Adopt a tensor of another framework for use by vg ops and graphs. On success vg owns `in` until
 * vg_dlpack_release, and out->ptr is a vg device address: the range the tensor spans is
 * registered with rt (vg_mem_register, which checks it is this device's memory), so
 * VG_DEBUG_ADDRESSES covers it. Refused with VG_ERR_INVALID_ARG (the
 * message names the field): another device type or device id than rt's, a major version other
 * than 1, a dtype vg has no vg_dtype for (float64, bool, complex, lanes != 1), ndim above
 * VG_DLPACK_MAX_DIMS, negative or zero strides, strides other than row-major with an optional
 * padded leading dimension (the innermost stride 1, dimension 0's stride at least the size of one
 * row, every other dimension compact; dimensions of extent 1 may have any stride), an offset not
 * aligned to the dtype. On failure nothing is kept: `in` is still the caller's. */
VG_API vg_status vg_dlpack_import(vg_runtime *rt, DLManagedTensorVersioned *in,
                                  vg_dlpack_tensor *out);
/* Give an imported tensor back: unregister its memory and call the producer's deleter. After it
 * t->ptr must not be used; graphs that used it must be destroyed or invalidated first. */
VG_API vg_status vg_dlpack_release(vg_dlpack_tensor *t);

#ifdef __cplusplus
}
#endif
#endif /* VG_DLPACK_H */
