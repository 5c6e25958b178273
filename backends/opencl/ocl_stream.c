/* SPDX-License-Identifier: Apache-2.0 */
/* opencl streams, events and kernel launches. A stream is an in-order command queue with
 * profiling (events time the device); an event is a marker. A launch binds its arguments to a
 * kernel object and enqueues it, or, while the stream captures, records it into the stream's
 * command buffer with a kernel object of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

void ocl_capture_invalidate(vg_bk_stream *s, const char *why)
{
    if (s->capture != OCL_CAPTURE_ACTIVE) return;
    s->capture = OCL_CAPTURE_INVALID;
    snprintf(s->capture_error, sizeof s->capture_error, "%s", why);
}

/* Work that cannot be recorded, asked of a capturing stream: the capture is invalidated. */
static vg_status refuse_while_capturing(vg_bk_stream *s, const char *what)
{
    char why[256];
    snprintf(why, sizeof why, "%s was called on the capturing stream (not permitted)", what);
    ocl_capture_invalidate(s, why);
    return OCL_ERR(VG_ERR_CAPTURE, "opencl: %s is not permitted on a capturing stream; the "
                                   "capture is invalidated", what);
}

/* ---- kernel launches ---------------------------------------------------------------------------- */

static vg_status bind_args(vg_bk_stream *s, cl_kernel kern, const char *op, int nargs,
                           const ocl_arg *args)
{
    vg_bk_device *dev = s->dev;
    cl_uint at = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < nargs && err == CL_SUCCESS; i++) {
        const ocl_arg *a = &args[i];
        switch (a->kind) {
        case OCL_ARG_PTR: {
            cl_mem mem = dev->dummy; /* an absent optional buffer: the kernel is told by a flag */
            size_t off = 0;
            if (a->v.p && !ocl_find(dev, a->v.p, &mem, &off)) {
                char what[96];
                snprintf(what, sizeof what, "%s: %s", op, a->name);
                return ocl_resolve(dev, a->v.p, 1, what, &mem, &off); /* says why */
            }
            cl_ulong off64 = off;
            err = clSetKernelArg(kern, at++, sizeof mem, &mem);
            if (err == CL_SUCCESS) err = clSetKernelArg(kern, at++, sizeof off64, &off64);
            break;
        }
        case OCL_ARG_I32: {
            cl_int v = a->v.i;
            err = clSetKernelArg(kern, at++, sizeof v, &v);
            break;
        }
        case OCL_ARG_I64: {
            cl_long v = a->v.l;
            err = clSetKernelArg(kern, at++, sizeof v, &v);
            break;
        }
        case OCL_ARG_F32: {
            cl_float v = a->v.f;
            err = clSetKernelArg(kern, at++, sizeof v, &v);
            break;
        }
        case OCL_ARG_LOCAL: err = clSetKernelArg(kern, at++, (size_t)a->v.l, NULL); break;
        }
    }
    if (err != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "%s: clSetKernelArg %u", op, at - 1);
        return ocl_fail(err, what);
    }
    return VG_OK;
}

vg_status ocl_launch(vg_bk_stream *s, ocl_kernel_id k, const char *op, cl_uint dims,
                     const size_t *global, const size_t *local, int nargs, const ocl_arg *args)
{
    if (s->capture == OCL_CAPTURE_INVALID)
        return OCL_ERR(VG_ERR_CAPTURE, "opencl: %s on a stream whose capture was invalidated: %s",
                       op, s->capture_error);
    size_t rounded[3];
    for (cl_uint d = 0; d < dims; d++) {
        if (global[d] == 0) return VG_OK; /* nothing to do */
        rounded[d] = ocl_round_up(global[d], local[d]);
    }
    cl_int err = CL_SUCCESS;
    int recording = s->capture == OCL_CAPTURE_ACTIVE;
    cl_kernel kern = recording ? NULL : s->kernels[k];
    if (!kern) { /* a recorded launch keeps a kernel object, and so its arguments, of its own */
        kern = clCreateKernel(s->dev->sh->prog, ocl_kernel_names[k], &err);
        if (err != CL_SUCCESS) return ocl_fail(err, ocl_kernel_names[k]);
        if (!recording) s->kernels[k] = kern;
    }
    vg_status st = bind_args(s, kern, op, nargs, args);
    if (recording) {
        if (st != VG_OK) {
            clReleaseKernel(kern);
            return st;
        }
        return ocl_record_kernel(s, kern, op, dims, rounded, local);
    }
    if (st != VG_OK) return st;
    err = clEnqueueNDRangeKernel(s->q, kern, dims, NULL, rounded, local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "%s: clEnqueueNDRangeKernel(%s)", op, ocl_kernel_names[k]);
        return ocl_fail(err, what);
    }
    return VG_OK;
}

/* ---- streams ------------------------------------------------------------------------------------ */

vg_status ocl_stream_create(vg_bk_device *dev, vg_bk_stream **out)
{
    if (!dev || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: stream_create: NULL");
    *out = NULL;
    vg_bk_stream *s = calloc(1, sizeof *s);
    if (!s) return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: stream_create: out of host memory");
    cl_int err = CL_SUCCESS;
    if (dev->cl_version >= 20) {
        cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
        s->q = clCreateCommandQueueWithProperties(dev->sh->ctx, dev->id, props, &err);
    } else {
        s->q = clCreateCommandQueue(dev->sh->ctx, dev->id, CL_QUEUE_PROFILING_ENABLE, &err);
    }
    if (err != CL_SUCCESS) {
        free(s);
        return ocl_fail(err, "stream_create: clCreateCommandQueue");
    }
    s->dev = dev;
    *out = s;
    return VG_OK;
}

vg_status ocl_stream_destroy(vg_bk_device *dev, vg_bk_stream *s)
{
    (void)dev;
    if (!s) return VG_OK;
    if (s->rec) ocl_recording_unref(s->rec);
    clFinish(s->q); /* pending work completes first */
    for (int k = 0; k < OCL_K_COUNT; k++)
        if (s->kernels[k]) clReleaseKernel(s->kernels[k]);
    clReleaseCommandQueue(s->q);
    free(s);
    return VG_OK;
}

vg_status ocl_stream_sync(vg_bk_device *dev, vg_bk_stream *s)
{
    if (!dev || !s) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: stream_sync: NULL");
    /* the core refuses a sync while this thread captures (vg_capture_forbid) */
    cl_int err = clFinish(s->q);
    return err == CL_SUCCESS ? VG_OK : ocl_fail(err, "stream_sync: clFinish");
}

/* ---- events ------------------------------------------------------------------------------------- */

vg_status ocl_event_create(vg_bk_device *dev, vg_bk_event **out)
{
    if (!dev || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: event_create: NULL");
    *out = calloc(1, sizeof **out);
    return *out ? VG_OK : OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: event_create: out of host memory");
}

vg_status ocl_event_destroy(vg_bk_device *dev, vg_bk_event *e)
{
    (void)dev;
    if (!e) return VG_OK;
    if (e->ev) clReleaseEvent(e->ev);
    free(e);
    return VG_OK;
}

vg_status ocl_event_record(vg_bk_device *dev, vg_bk_event *e, vg_bk_stream *s)
{
    if (!dev || !e || !s) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: event_record: NULL");
    if (s->capture != OCL_CAPTURE_NONE) return refuse_while_capturing(s, "event_record");
    cl_event ev = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(s->q, 0, NULL, &ev);
    if (err != CL_SUCCESS) return ocl_fail(err, "event_record: clEnqueueMarkerWithWaitList");
    if (e->ev) clReleaseEvent(e->ev);
    e->ev = ev;
    return VG_OK;
}

vg_status ocl_event_sync(vg_bk_device *dev, vg_bk_event *e)
{
    if (!dev || !e) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: event_sync: NULL");
    /* the core refuses it while this thread captures */
    if (!e->ev) return VG_OK; /* never recorded: nothing to wait for */
    cl_int err = clWaitForEvents(1, &e->ev);
    return err == CL_SUCCESS ? VG_OK : ocl_fail(err, "event_sync: clWaitForEvents");
}

vg_status ocl_event_elapsed_ms(vg_bk_device *dev, vg_bk_event *a, vg_bk_event *b, float *ms)
{
    if (!dev || !a || !b || !ms)
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: event_elapsed_ms: NULL");
    if (!a->ev || !b->ev)
        return OCL_ERR(VG_ERR_STATE, "opencl: event_elapsed_ms: event not recorded");
    cl_event both[2] = {a->ev, b->ev};
    cl_int err = clWaitForEvents(2, both); /* profiling data exists once they are complete */
    cl_ulong t0 = 0, t1 = 0;
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(a->ev, CL_PROFILING_COMMAND_END, sizeof t0, &t0, NULL);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(b->ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    if (err != CL_SUCCESS) return ocl_fail(err, "event_elapsed_ms: clGetEventProfilingInfo");
    *ms = (float)((double)((int64_t)(t1 - t0)) * 1e-6);
    return VG_OK;
}

vg_status ocl_stream_wait_event(vg_bk_device *dev, vg_bk_stream *s, vg_bk_event *e)
{
    if (!dev || !s || !e) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: stream_wait_event: NULL");
    if (s->capture != OCL_CAPTURE_NONE) /* a command buffer's commands wait for sync points only */
        return refuse_while_capturing(s, "stream_wait_event");
    if (!e->ev) return VG_OK;
    cl_int err = clEnqueueBarrierWithWaitList(s->q, 1, &e->ev, NULL);
    return err == CL_SUCCESS ? VG_OK : ocl_fail(err, "stream_wait_event: clEnqueueBarrierWithWaitList");
}
