/* SPDX-License-Identifier: Apache-2.0 */
/* opencl graphs: the static graph wrapper on cl_khr_command_buffer.
 *
 * capture_begin creates a command buffer on the stream's queue; every kernel launch on the stream
 * is then recorded into it (clCommandNDRangeKernelKHR) instead of enqueued, each waiting on the
 * sync point of the one before, so the recording keeps the stream's order. capture_end hands the
 * recording over as the graph; graph_instantiate finalizes it; exec_launch enqueues it. The graph
 * and its executables share the one command buffer (instantiating twice finalizes once).
 *
 * Each recorded launch owns a kernel object carrying its arguments: the specification says a
 * command captures the arguments at record time, but PoCL 3.1 reads them at enqueue time, so a
 * kernel object shared with later launches would replay the wrong arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

struct vg_bk_graph {
    ocl_recording *rec;
};

struct vg_bk_exec {
    ocl_recording *rec;
};

static vg_status recording_new(vg_bk_device *dev, cl_command_queue q, ocl_recording **out)
{
    *out = NULL;
    ocl_recording *r = calloc(1, sizeof *r);
    if (!r) return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: capture_begin: out of host memory");
    cl_properties props[] = {OCL_CB_FLAGS, OCL_CB_SIMULTANEOUS_USE, 0};
    cl_int err = CL_SUCCESS;
    r->cb = dev->cb.create(1, &q, dev->simultaneous ? props : NULL, &err);
    if (err != CL_SUCCESS || !r->cb) {
        free(r);
        return OCL_ERR(VG_ERR_CAPTURE, "opencl: capture_begin: clCreateCommandBufferKHR: %s (%d)",
                       ocl_error_name(err), (int)err);
    }
    clRetainCommandQueue(q);
    pthread_mutex_init(&r->lock, NULL);
    r->refs = 1;
    r->dev = dev;
    r->queue = q;
    *out = r;
    return VG_OK;
}

void ocl_recording_unref(ocl_recording *r)
{
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    int left = --r->refs;
    pthread_mutex_unlock(&r->lock);
    if (left) return;
    if (r->pending) { /* launches still in flight complete first */
        clWaitForEvents(1, &r->pending);
        clReleaseEvent(r->pending);
    }
    r->dev->cb.release(r->cb);
    for (size_t i = 0; i < r->nkernels; i++) clReleaseKernel(r->kernels[i]);
    free(r->kernels);
    clReleaseCommandQueue(r->queue);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

vg_status ocl_record_kernel(vg_bk_stream *s, cl_kernel k, const char *op, cl_uint dims,
                            const size_t *global, const size_t *local)
{
    ocl_recording *r = s->rec;
    char why[256];
    if (r->nkernels == r->cap_kernels) {
        size_t cap = r->cap_kernels ? 2 * r->cap_kernels : 32;
        cl_kernel *grown = realloc(r->kernels, cap * sizeof *grown);
        if (!grown) {
            clReleaseKernel(k);
            snprintf(why, sizeof why, "out of host memory while recording %s", op);
            ocl_capture_invalidate(s, why);
            return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: %s", why);
        }
        r->kernels = grown;
        r->cap_kernels = cap;
    }
    r->kernels[r->nkernels++] = k;
    ocl_sync_point sp = 0;
    int after = r->nkernels > 1; /* the stream's order: wait for the command recorded before */
    cl_int err = s->dev->cb.ndrange(r->cb, NULL, NULL, k, dims, NULL, global, local, after ? 1 : 0,
                                    after ? &r->last : NULL, &sp, NULL);
    if (err != CL_SUCCESS) {
        snprintf(why, sizeof why, "%s could not be recorded: clCommandNDRangeKernelKHR: %s (%d)", op,
                 ocl_error_name(err), (int)err);
        ocl_capture_invalidate(s, why);
        return OCL_ERR(VG_ERR_CAPTURE, "opencl: %s; the capture is invalidated", why);
    }
    r->last = sp;
    return VG_OK;
}

vg_status ocl_capture_begin(vg_bk_device *dev, vg_bk_stream *s)
{
    if (!dev || !s) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: capture_begin: NULL");
    if (!dev->graphs)
        return OCL_ERR(VG_ERR_UNSUPPORTED, "opencl: %s has no usable command buffers (%s): no "
                                           "graphs", dev->name, dev->cb_version);
    if (s->capture != OCL_CAPTURE_NONE)
        return OCL_ERR(VG_ERR_STATE, "opencl: capture_begin: the stream is capturing already");
    vg_status st = recording_new(dev, s->q, &s->rec);
    if (st != VG_OK) return st;
    s->capture = OCL_CAPTURE_ACTIVE;
    s->capture_error[0] = '\0';
    return VG_OK;
}

vg_status ocl_capture_end(vg_bk_device *dev, vg_bk_stream *s, vg_bk_graph **out)
{
    if (!dev || !s || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: capture_end: NULL");
    *out = NULL;
    if (s->capture == OCL_CAPTURE_NONE)
        return OCL_ERR(VG_ERR_STATE, "opencl: capture_end: the stream is not capturing");
    ocl_recording *r = s->rec;
    ocl_capture_state state = s->capture;
    s->rec = NULL;
    s->capture = OCL_CAPTURE_NONE; /* ended in every case: the stream takes eager work again */
    if (state == OCL_CAPTURE_INVALID) {
        ocl_recording_unref(r);
        return OCL_ERR(VG_ERR_CAPTURE, "opencl: the capture was invalidated: %s", s->capture_error);
    }
    vg_bk_graph *g = malloc(sizeof *g);
    if (!g) {
        ocl_recording_unref(r);
        return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: capture_end: out of host memory");
    }
    g->rec = r;
    *out = g;
    return VG_OK;
}

vg_status ocl_graph_destroy(vg_bk_device *dev, vg_bk_graph *g)
{
    (void)dev;
    if (!g) return VG_OK;
    ocl_recording_unref(g->rec);
    free(g);
    return VG_OK;
}

vg_status ocl_graph_instantiate(vg_bk_device *dev, vg_bk_graph *g, vg_bk_exec **out)
{
    if (!dev || !g || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: instantiate: NULL");
    *out = NULL;
    vg_bk_exec *x = malloc(sizeof *x);
    if (!x) return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: instantiate: out of host memory");
    ocl_recording *r = g->rec;
    pthread_mutex_lock(&r->lock);
    cl_int err = r->finalized ? CL_SUCCESS : dev->cb.finalize(r->cb);
    if (err == CL_SUCCESS) {
        r->finalized = 1;
        r->refs++;
    }
    pthread_mutex_unlock(&r->lock);
    if (err != CL_SUCCESS) {
        free(x);
        return OCL_ERR(err == CL_OUT_OF_HOST_MEMORY || err == CL_OUT_OF_RESOURCES
                           ? VG_ERR_OUT_OF_MEMORY : VG_ERR_CAPTURE,
                       "opencl: instantiate: clFinalizeCommandBufferKHR: %s (%d)",
                       ocl_error_name(err), (int)err);
    }
    x->rec = r;
    *out = x;
    return VG_OK;
}

/* Enqueue the command buffer on the queue it was recorded for. Replayed on another stream, it is
 * fenced both ways: it waits for that stream's earlier work, and the stream's later work waits
 * for it (a marker before, a barrier after), which keeps the stream's order without relying on
 * queue substitution, which drivers need not offer. */
vg_status ocl_exec_launch(vg_bk_device *dev, vg_bk_exec *x, vg_bk_stream *s)
{
    if (!dev || !x || !s) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: exec_launch: NULL");
    if (s->capture != OCL_CAPTURE_NONE)
        return OCL_ERR(VG_ERR_STATE, "opencl: exec_launch on a capturing stream");
    ocl_recording *r = x->rec;
    cl_int err = CL_SUCCESS;
    cl_event before = NULL, done = NULL;
    const char *what = "clEnqueueCommandBufferKHR";
    pthread_mutex_lock(&r->lock);
    /* without simultaneous use a command buffer may not be enqueued while a launch is pending */
    if (!dev->simultaneous && r->pending) err = clWaitForEvents(1, &r->pending);
    if (err == CL_SUCCESS && s->q != r->queue) {
        err = clEnqueueMarkerWithWaitList(s->q, 0, NULL, &before);
        what = "clEnqueueMarkerWithWaitList";
    }
    if (err == CL_SUCCESS) {
        err = dev->cb.enqueue(0, NULL, r->cb, before ? 1 : 0, before ? &before : NULL, &done);
        what = "clEnqueueCommandBufferKHR";
    }
    if (err == CL_SUCCESS && s->q != r->queue) {
        err = clEnqueueBarrierWithWaitList(s->q, 1, &done, NULL);
        what = "clEnqueueBarrierWithWaitList";
    }
    if (done) {
        if (r->pending) clReleaseEvent(r->pending);
        r->pending = done;
    }
    pthread_mutex_unlock(&r->lock);
    if (before) clReleaseEvent(before);
    if (err != CL_SUCCESS) {
        char msg[96];
        snprintf(msg, sizeof msg, "exec_launch: %s", what);
        return ocl_fail(err, msg);
    }
    return VG_OK;
}

vg_status ocl_exec_destroy(vg_bk_device *dev, vg_bk_exec *x)
{
    (void)dev;
    if (!x) return VG_OK;
    ocl_recording_unref(x->rec);
    free(x);
    return VG_OK;
}
