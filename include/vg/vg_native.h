/* SPDX-License-Identifier: Apache-2.0 */
/* vg: the native objects behind vg's, and the caller's objects adopted by vg (docs/engines.md).
 *
 * An engine that runs its own kernels beside vg's needs the vendor objects vg works with, and
 * needs vg to work with its own:
 *
 *   - the device:  vg_runtime_native_device  (CUDA/HIP ordinal; OpenCL platform, device,
 *                  context; kunlun_stub: the host);
 *   - a stream:    vg_stream_native  (cudaStream_t, hipStream_t, cl_command_queue; on
 *                  kunlun_stub its own stream object) and vg_stream_wrap, which makes a vg
 *                  stream of the caller's native stream: vg enqueues its ops and graph launches
 *                  there and never destroys it;
 *   - memory:      vg_mem_native  (the device pointer, or on OpenCL the cl_mem and offset
 *                  behind vg's device address) and vg_mem_register, which makes caller-owned
 *                  device memory usable by vg ops and graphs, after checking that it is memory
 *                  of this device.
 *
 * Whether work the caller enqueues on a vg stream's native stream while vg captures that stream
 * is recorded into the graph: VG_CAP_FOREIGN_CAPTURE (vg_types.h), vg_runtime_foreign_capture.
 * CUDA and HIP: yes (stream capture records whatever runs on the stream). OpenCL and
 * kunlun_stub: no (their graphs record only the backend's own launches); vg's runner runs a
 * piece flagged VG_PIECE_FOREIGN eagerly there.
 *
 * Everything here needs a device with VG_CAP_NATIVE (a plugin of ABI 1.3 or later that
 * implements it); elsewhere each call fails with VG_ERR_UNSUPPORTED and a message saying why. */
#ifndef VG_NATIVE_H
#define VG_NATIVE_H

#include "vg_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "cuda", "hip", "opencl", "host", "vendor", "none"; NULL for a value that is not an API. */
VG_API const char *vg_native_api_name(vg_native_api api);

/* ---- device ----------------------------------------------------------------------------------- */

/* The native objects behind rt's device (out->struct_size set by the caller; only the fields
 * inside it are written). The objects belong to vg: valid until vg_runtime_close. */
VG_API vg_status vg_runtime_native_device(vg_runtime *rt, vg_native_device *out);
/* 1 when foreign work enqueued on a capturing vg stream is captured (VG_CAP_FOREIGN_CAPTURE). */
VG_API int vg_runtime_foreign_capture(const vg_runtime *rt);

/* ---- streams ---------------------------------------------------------------------------------- */

/* The native stream behind s: a cudaStream_t / hipStream_t / cl_command_queue (kunlun_stub: its
 * stream object). Valid as long as s. Work the caller enqueues there is ordered with vg's work
 * on s; while s captures, it is recorded into the graph only with VG_CAP_FOREIGN_CAPTURE. */
VG_API vg_status vg_stream_native(vg_stream *s, void **out);
/* A vg stream over the caller's native stream `native` (same kinds as above, of rt's device
 * and context). vg does not own it: vg_stream_destroy waits for the work vg enqueued, frees
 * vg's wrapper and leaves `native` alive; the caller keeps it alive until then. The backend
 * checks what it can (CUDA: the stream's device; OpenCL: the queue's context and device;
 * kunlun_stub: a live stream of this device) and refuses the rest with a message. */
VG_API vg_status vg_stream_wrap(vg_runtime *rt, void *native, vg_stream **out);
/* 1 for a stream made by vg_stream_wrap, 0 for one vg owns (or NULL). */
VG_API int vg_stream_is_wrapped(const vg_stream *s);

/* ---- memory ----------------------------------------------------------------------------------- */

/* The native memory behind the device address ptr (from vg_mem_alloc, vg_mem_register, a runner
 * buffer; ptr may point inside one). VG_ERR_INVALID_ARG for an address the backend does not
 * know, where it can tell (OpenCL and kunlun_stub always can). */
VG_API vg_status vg_mem_native(vg_runtime *rt, const void *ptr, vg_native_mem *out);
/* Make `bytes` (>= 1) of caller-owned device memory usable by vg: `native` is a device pointer
 * (CUDA, HIP), a cl_mem (OpenCL: its first `bytes` bytes), or host memory (kunlun_stub). *out is
 * the vg device address of its first byte, for vg ops, copies and graphs (CUDA, HIP and the stub:
 * `native` itself; OpenCL: an address vg maps to the cl_mem). Checked: memory of another device,
 * host memory on a GPU, a range larger than the allocation, an unknown cl_mem are refused with
 * VG_ERR_INVALID_ARG and a message naming what was found. vg never frees it: the caller keeps it
 * alive until vg_mem_unregister, and until every graph that uses it is destroyed (the runner's
 * address check, VG_DEBUG_ADDRESSES=1, refuses to replay a graph captured over a registration
 * that was dropped since). Forbidden while capturing. */
VG_API vg_status vg_mem_register(vg_runtime *rt, void *native, size_t bytes, void **out);
/* Forget a registration by the address vg_mem_register returned. The memory is untouched. */
VG_API vg_status vg_mem_unregister(vg_runtime *rt, void *ptr);

#ifdef __cplusplus
}
#endif
#endif /* VG_NATIVE_H */
