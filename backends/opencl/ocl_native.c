/* SPDX-License-Identifier: Apache-2.0 */
/* opencl, ABI 1.3: native handles. A stream's native handle is its cl_command_queue; the device's
 * are its cl_platform_id, cl_device_id and cl_context; a device address is backed by a cl_mem
 * and an offset. A caller's queue is wrapped by retaining it (OpenCL's reference counts make
 * "vg never destroys it" exact: destroying the wrapper drops vg's reference only). A caller's
 * cl_mem is registered under a fresh fake address range, retained likewise until unregistered.
 * Command buffers record only vg's own launches, so work others enqueue on the queue while vg
 * captures runs at once: no VG_CAP_FOREIGN_CAPTURE. */
#include <stdlib.h>

#include "ocl_internal.h"

/* The knobs this backend reads through ocl_option (named options or the environment). */
const char *const ocl_option_names[] = {
    "VG_OPENCL_PLATFORM", "VG_OPENCL_DEVICE", "VG_OPENCL_COMMAND_BUFFER", NULL,
};

vg_status ocl_native_device(vg_bk_device *dev, vg_native_device *out)
{
    if (!dev || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: native_device: NULL");
    out->api = VG_NATIVE_OPENCL;
    out->ordinal = dev->index;
    out->platform = dev->platform;
    out->device = dev->id;
    out->context = dev->sh->ctx;
    return VG_OK;
}

vg_status ocl_stream_native(vg_bk_device *dev, vg_bk_stream *s, void **out)
{
    if (!dev || !s || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: stream_native: NULL");
    *out = s->q;
    return VG_OK;
}

vg_status ocl_stream_wrap(vg_bk_device *dev, void *native, vg_bk_stream **out)
{
    if (!dev || !native || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: stream_wrap: NULL");
    *out = NULL;
    cl_command_queue q = (cl_command_queue)native;
    cl_context ctx = NULL;
    cl_device_id id = NULL;
    cl_command_queue_properties props = 0;
    cl_int err = clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err == CL_SUCCESS) err = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof id, &id, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
    if (err != CL_SUCCESS)
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: stream_wrap(%p): not a command queue "
                                           "(clGetCommandQueueInfo: %s)", native, ocl_error_name(err));
    if (ctx != dev->sh->ctx || id != dev->id)
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: stream_wrap(%p): the queue belongs to %s; "
                                           "vg's device %d is %s in context %p (make the queue in "
                                           "the context vg_runtime_native_device gives)", native,
                       ctx != dev->sh->ctx ? "another context" : "another device", dev->index,
                       dev->name, (void *)dev->sh->ctx);
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: stream_wrap(%p): an out-of-order queue (vg "
                                           "streams are in order)", native);
    vg_bk_stream *s = calloc(1, sizeof *s);
    if (!s) return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: stream_wrap: out of host memory");
    err = clRetainCommandQueue(q);
    if (err != CL_SUCCESS) {
        free(s);
        return ocl_fail(err, "stream_wrap: clRetainCommandQueue");
    }
    s->dev = dev;
    s->q = q; /* stream_destroy finishes it and drops this reference */
    *out = s;
    return VG_OK;
}

vg_status ocl_mem_native(vg_bk_device *dev, const void *ptr, vg_native_mem *out)
{
    if (!dev || !ptr || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: mem_native: NULL");
    cl_mem mem = NULL;
    size_t offset = 0;
    vg_status st = ocl_resolve(dev, ptr, 1, "mem_native", &mem, &offset);
    if (st != VG_OK) return st;
    size_t size = 0;
    cl_int err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != CL_SUCCESS) return ocl_fail(err, "mem_native: clGetMemObjectInfo");
    out->handle = mem;
    out->offset = offset;
    out->bytes = size > offset ? size - offset : 0;
    return VG_OK;
}

vg_status ocl_mem_register(vg_bk_device *dev, void *native, size_t bytes, void **out)
{
    if (!dev || !native || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: mem_register: NULL");
    *out = NULL;
    cl_mem mem = (cl_mem)native;
    cl_mem_object_type type = 0;
    cl_context ctx = NULL;
    size_t size = 0;
    cl_int err = clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, NULL);
    if (err == CL_SUCCESS) err = clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err == CL_SUCCESS) err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != CL_SUCCESS)
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: mem_register(%p): not a cl_mem "
                                           "(clGetMemObjectInfo: %s)", native, ocl_error_name(err));
    if (type != CL_MEM_OBJECT_BUFFER)
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: mem_register(%p): an image or pipe, not a "
                                           "buffer", native);
    if (ctx != dev->sh->ctx)
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: mem_register(%p): the buffer belongs to another "
                                           "context than device %d's (%s)", native, dev->index,
                       dev->name);
    if (bytes > size)
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: mem_register(%p, %zu bytes): the buffer holds "
                                           "only %zu bytes", native, bytes, size);
    err = clRetainMemObject(mem);
    if (err != CL_SUCCESS) return ocl_fail(err, "mem_register: clRetainMemObject");
    vg_status st = ocl_mem_name(dev, mem, bytes, 1, out);
    if (st != VG_OK) clReleaseMemObject(mem);
    return st;
}

vg_status ocl_mem_unregister(vg_bk_device *dev, void *ptr)
{
    if (!dev || !ptr) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: mem_unregister: NULL");
    ocl_alloc x;
    vg_status st = ocl_mem_unname(dev, ptr, 1, &x);
    if (st == VG_OK) clReleaseMemObject(x.mem); /* vg's reference; the caller's stays */
    return st;
}
