/* SPDX-License-Identifier: Apache-2.0 */
/* Streams, events and the static graph wrapper of the CUDA backend. */
#include <stdlib.h>

#include "common.cuh"

/* Spare streams. The CUDA stream of a destroyed vg stream is kept (once its work is done) and
 * handed to the next vg stream created on the device, instead of a new one. On an H100 a graph
 * replayed on a CUDA stream created later in the process ran its kernels with ~3x longer gaps
 * between them (8x the gap time of a decode step's graph: 122 us a replay against 14), the kernels
 * themselves as fast: a language model's decode step 7% slower once it had been reconfigured (a
 * runner makes its own streams) or after another batch size had run; with the streams reused
 * every run was as fast as the first (docs/performance.md, eighth session). Only a stream whose
 * work is done (its destroy waited for it), with no capture open and whose native handle was
 * never handed out (the caller may hold it or have set its attributes) is kept. */
static cudaStream_t spare_take(vg_bk_device *dev)
{
    cudaStream_t s = NULL;
    pthread_mutex_lock(&dev->spare_lock);
    if (dev->nspare > 0) s = dev->spare[--dev->nspare];
    pthread_mutex_unlock(&dev->spare_lock);
    return s;
}

/* Keeps `s` for the next vg stream when it is idle (no wait here: a query), not capturing and
 * there is room; 0 when the caller must destroy it. */
static int spare_keep(vg_bk_device *dev, cudaStream_t s)
{
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusActive;
    if (cudaStreamIsCapturing(s, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone ||
        cudaStreamQuery(s) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    pthread_mutex_lock(&dev->spare_lock);
    const int kept = dev->nspare < VGC_SPARE_STREAMS;
    if (kept) dev->spare[dev->nspare++] = s;
    pthread_mutex_unlock(&dev->spare_lock);
    return kept;
}

void vgc_stream_spares_fini(vg_bk_device *dev)
{
    for (int i = 0; i < dev->nspare; i++) (void)cudaStreamDestroy(dev->spare[i]);
    dev->nspare = 0;
}

extern "C" vg_status vgc_stream_create(vg_bk_device *dev, vg_bk_stream **out)
{
    if (!dev || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": stream_create: NULL");
    *out = NULL;
    VGC_CHECK(cudaSetDevice(dev->index));
    vg_bk_stream *s = (vg_bk_stream *)calloc(1, sizeof *s);
    if (!s) return VGC_ERR(VG_ERR_OUT_OF_MEMORY, VG_VENDOR_NAME ": out of host memory");
    s->dev = dev;
    s->s = spare_take(dev);
    cudaError_t e = s->s ? cudaSuccess : cudaStreamCreateWithFlags(&s->s, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(s);
        return vgc_fail(e, "cudaStreamCreateWithFlags", __FILE__, __LINE__);
    }
    vg_status st = vgc_gemm_stream_init(s);
    if (st != VG_OK) {
        (void)cudaStreamDestroy(s->s);
        free(s);
        return st;
    }
    *out = s;
    return VG_OK;
}

extern "C" vg_status vgc_stream_destroy(vg_bk_device *dev, vg_bk_stream *s)
{
    if (!s) return VG_OK;
    (void)cudaSetDevice(dev->index);
    /* the gemm workspace must outlive pending work (bounded while communicators live) */
    vg_status st = vgc_comm_wait(dev, s->s, NULL, "stream_destroy");
    vgc_gemm_stream_fini(s);
    const int keep = !s->wrapped && !s->native_given && st == VG_OK && spare_keep(dev, s->s);
    cudaError_t e = s->wrapped || keep ? cudaSuccess /* the caller's stays */ : cudaStreamDestroy(s->s);
    free(s);
    if (st != VG_OK) return st;
    VGC_CHECK(e);
    return VG_OK;
}

extern "C" vg_status vgc_stream_sync(vg_bk_device *dev, vg_bk_stream *s)
{
    if (!s) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": stream_sync: NULL");
    return vgc_comm_wait(dev, s->s, NULL, "stream_sync"); /* bounded while communicators live */
}

extern "C" vg_status vgc_event_create(vg_bk_device *dev, vg_bk_event **out)
{
    if (!dev || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": event_create: NULL");
    *out = NULL;
    VGC_CHECK(cudaSetDevice(dev->index));
    vg_bk_event *ev = (vg_bk_event *)calloc(1, sizeof *ev);
    if (!ev) return VGC_ERR(VG_ERR_OUT_OF_MEMORY, VG_VENDOR_NAME ": out of host memory");
    cudaError_t e = cudaEventCreate(&ev->e);
    if (e != cudaSuccess) {
        free(ev);
        return vgc_fail(e, "cudaEventCreate", __FILE__, __LINE__);
    }
    *out = ev;
    return VG_OK;
}

extern "C" vg_status vgc_event_destroy(vg_bk_device *, vg_bk_event *ev)
{
    if (!ev) return VG_OK;
    cudaError_t e = cudaEventDestroy(ev->e);
    free(ev);
    VGC_CHECK(e);
    return VG_OK;
}

extern "C" vg_status vgc_event_record(vg_bk_device *, vg_bk_event *ev, vg_bk_stream *s)
{
    if (!ev || !s) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": event_record: NULL");
    VGC_CHECK(cudaEventRecord(ev->e, s->s));
    return VG_OK;
}

extern "C" vg_status vgc_event_sync(vg_bk_device *dev, vg_bk_event *ev)
{
    if (!ev) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": event_sync: NULL");
    return vgc_comm_wait(dev, NULL, ev->e, "event_sync"); /* bounded while communicators live */
}

extern "C" vg_status vgc_event_elapsed_ms(vg_bk_device *, vg_bk_event *a, vg_bk_event *b, float *ms)
{
    if (!a || !b || !ms) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": elapsed: NULL");
    VGC_CHECK(cudaEventElapsedTime(ms, a->e, b->e));
    return VG_OK;
}

extern "C" vg_status vgc_stream_wait_event(vg_bk_device *, vg_bk_stream *s, vg_bk_event *ev)
{
    if (!s || !ev) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": wait_event: NULL");
    VGC_CHECK(cudaStreamWaitEvent(s->s, ev->e, 0));
    return VG_OK;
}

/* ---- graphs ----------------------------------------------------------------------------------- */

extern "C" vg_status vgc_capture_begin(vg_bk_device *dev, vg_bk_stream *s)
{
    if (!dev || !s) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": capture_begin: NULL");
    VGC_CHECK(cudaSetDevice(dev->index));
    /* Thread-local: other threads may keep allocating and synchronising their own streams. */
    VGC_CHECK(cudaStreamBeginCapture(s->s, cudaStreamCaptureModeThreadLocal));
    return VG_OK;
}

vg_status vgc_graph_wrap(cudaGraph_t g, vg_bk_graph **out)
{
    vg_bk_graph *graph = (vg_bk_graph *)malloc(sizeof *graph);
    if (!graph) {
        (void)cudaGraphDestroy(g);
        return VGC_ERR(VG_ERR_OUT_OF_MEMORY, VG_VENDOR_NAME ": out of host memory");
    }
    graph->g = g;
    *out = graph;
    return VG_OK;
}

extern "C" vg_status vgc_capture_end(vg_bk_device *, vg_bk_stream *s, vg_bk_graph **out)
{
    if (!s || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": capture_end: NULL");
    *out = NULL;
    cudaGraph_t g = NULL;
    /* Ending always leaves the stream out of capture mode, also when the capture was
     * invalidated; then g is NULL and the partial work is discarded. */
    cudaError_t e = cudaStreamEndCapture(s->s, &g);
    if (e != cudaSuccess || !g) {
        if (g) (void)cudaGraphDestroy(g);
        if (e == cudaSuccess) return VGC_ERR(VG_ERR_CAPTURE, VG_VENDOR_NAME ": capture produced no graph");
        vgc_fail(e, "cudaStreamEndCapture", __FILE__, __LINE__);
        return VG_ERR_CAPTURE;
    }
    return vgc_graph_wrap(g, out);
}

extern "C" vg_status vgc_graph_destroy(vg_bk_device *, vg_bk_graph *graph)
{
    if (!graph) return VG_OK;
    cudaError_t e = cudaGraphDestroy(graph->g);
    free(graph);
    VGC_CHECK(e);
    return VG_OK;
}

extern "C" vg_status vgc_graph_instantiate(vg_bk_device *dev, vg_bk_graph *graph, vg_bk_exec **out)
{
    if (!dev || !graph || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": instantiate: NULL");
    *out = NULL;
    VGC_CHECK(cudaSetDevice(dev->index));
    vg_bk_exec *x = (vg_bk_exec *)malloc(sizeof *x);
    if (!x) return VGC_ERR(VG_ERR_OUT_OF_MEMORY, VG_VENDOR_NAME ": out of host memory");
    cudaError_t e = cudaGraphInstantiateWithFlags(&x->x, graph->g, 0);
    if (e != cudaSuccess) {
        free(x);
        vg_status st = vgc_fail(e, "cudaGraphInstantiateWithFlags", __FILE__, __LINE__);
        return st == VG_ERR_OUT_OF_MEMORY ? st : VG_ERR_CAPTURE;
    }
    /* Upload now so that the first launch costs what every later one does. */
    e = vgc_graph_upload(x->x, dev->upload_stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(dev->upload_stream);
    if (e != cudaSuccess) {
        (void)cudaGraphExecDestroy(x->x);
        free(x);
        return vgc_fail(e, "cudaGraphUpload", __FILE__, __LINE__);
    }
    *out = x;
    return VG_OK;
}

extern "C" vg_status vgc_exec_launch(vg_bk_device *, vg_bk_exec *x, vg_bk_stream *s)
{
    if (!x || !s) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": exec_launch: NULL");
    VGC_CHECK(cudaGraphLaunch(x->x, s->s));
    return VG_OK;
}

extern "C" vg_status vgc_exec_destroy(vg_bk_device *, vg_bk_exec *x)
{
    if (!x) return VG_OK;
    cudaError_t e = cudaGraphExecDestroy(x->x);
    free(x);
    VGC_CHECK(e);
    return VG_OK;
}

extern "C" vg_status vgc_exec_update(vg_bk_device *, vg_bk_exec *x, vg_bk_graph *graph,
                                     vg_update_result *r)
{
    if (!x || !graph || !r) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": exec_update: NULL");
    *r = VG_UPDATE_NEEDS_REINSTANTIATE;
    cudaError_t e = vgc_graph_exec_update(x->x, graph->g);
    if (e == cudaErrorGraphExecUpdateFailure) {
        (void)cudaGetLastError(); /* a refusal: the exec keeps its old graph */
        return VG_OK;
    }
    VGC_CHECK(e);
    *r = VG_UPDATE_APPLIED;
    return VG_OK;
}
