/* SPDX-License-Identifier: Apache-2.0 */
/* The core device API (vg_device.h) without the ops: memory, copies, streams, events, graphs.
 * Every call checks its arguments once, with one readable message per failure, then makes one
 * call into the plugin. The hot paths (copies, graph launch) allocate, lock and format nothing
 * unless they fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg_internal.h"

#define FAIL(status, ...) vg_error_set((status), __VA_ARGS__)
#define CALL(rt, member, ...) ((rt)->iface.member((rt)->dev, __VA_ARGS__))

/* ---- capture rules ------------------------------------------------------------------------- */

/* The stream this thread captures on (the thread that begins a capture ends it), NULL when none. */
static _Thread_local vg_stream *tl_capturing;

vg_status vg_capture_may_begin(const vg_stream *s, const char *fn)
{
    if (s->capturing) return FAIL(VG_ERR_STATE, "%s: the stream is capturing already", fn);
    if (tl_capturing)
        return FAIL(VG_ERR_STATE, "%s: this thread is capturing another stream (a thread captures "
                                  "one stream at a time: end that capture first)", fn);
    return VG_OK;
}

void vg_stream_capture_started(vg_stream *s, int how)
{
    s->capturing = how;
    s->capture_error[0] = '\0';
    tl_capturing = s;
}

vg_status vg_capture_forbid(const char *what)
{
    vg_stream *s = tl_capturing;
    if (!s) return VG_OK;
    if (!s->capture_error[0]) /* the first reason stands */
        snprintf(s->capture_error, sizeof s->capture_error,
                 "%s was called during capture (not permitted)", what);
    return FAIL(VG_ERR_CAPTURE, "%s is not permitted while this thread is capturing; the capture "
                                "is invalidated", what);
}

/* ---- memory -------------------------------------------------------------------------------- */

static vg_status alloc_common(vg_runtime *rt, size_t bytes, void **out, int host)
{
    const char *fn = host ? "vg_host_alloc" : "vg_mem_alloc";
    REQUIRE(out, "%s: out is NULL", fn);
    *out = NULL;
    REQUIRE(rt, "%s: runtime is NULL", fn);
    REQUIRE(bytes >= 1, "%s: bytes is 0 (allocate at least one byte)", fn);
    if (!host) {
        vg_status cst = vg_capture_forbid(fn);
        if (cst != VG_OK) return cst;
    }
    vg_status st = host ? CALL(rt, host_alloc, bytes, out) : CALL(rt, mem_alloc, bytes, out);
    if (st != VG_OK) *out = NULL;
    return st;
}

vg_status vg_mem_alloc(vg_runtime *rt, size_t bytes, void **out)
{
    return alloc_common(rt, bytes, out, 0);
}

vg_status vg_host_alloc(vg_runtime *rt, size_t bytes, void **out)
{
    return alloc_common(rt, bytes, out, 1);
}

vg_status vg_mem_free(vg_runtime *rt, void *ptr)
{
    REQUIRE(rt, "vg_mem_free: runtime is NULL");
    if (!ptr) return VG_OK;
    vg_status st = vg_capture_forbid("vg_mem_free");
    return st != VG_OK ? st : CALL(rt, mem_free, ptr);
}

vg_status vg_host_free(vg_runtime *rt, void *ptr)
{
    REQUIRE(rt, "vg_host_free: runtime is NULL");
    return ptr ? CALL(rt, host_free, ptr) : VG_OK;
}

/* ---- copies and fills ----------------------------------------------------------------------- */

#define COPY_CHECKS(fn, s, dst, src, bytes)                                                  \
    REQUIRE(s, fn ": stream is NULL");                                                       \
    if ((bytes) == 0) return VG_OK;                                                          \
    REQUIRE((dst) && (src), fn ": %s is NULL (%zu bytes)", (dst) ? "src" : "dst", (bytes))

vg_status vg_mem_copy_h2d(vg_stream *s, void *dst, const void *src, size_t bytes)
{
    COPY_CHECKS("vg_mem_copy_h2d", s, dst, src, bytes);
    return CALL(s->rt, copy_h2d, s->bk, dst, src, bytes);
}

vg_status vg_mem_copy_d2h(vg_stream *s, void *dst, const void *src, size_t bytes)
{
    COPY_CHECKS("vg_mem_copy_d2h", s, dst, src, bytes);
    return CALL(s->rt, copy_d2h, s->bk, dst, src, bytes);
}

vg_status vg_mem_copy_d2d(vg_stream *s, void *dst, const void *src, size_t bytes)
{
    COPY_CHECKS("vg_mem_copy_d2d", s, dst, src, bytes);
    return CALL(s->rt, copy_d2d, s->bk, dst, src, bytes);
}

vg_status vg_mem_set(vg_stream *s, void *dst, int value, size_t bytes)
{
    REQUIRE(s, "vg_mem_set: stream is NULL");
    REQUIRE(value >= 0 && value <= 255, "vg_mem_set: value %d is not a byte (0..255)", value);
    if (bytes == 0) return VG_OK;
    REQUIRE(dst, "vg_mem_set: dst is NULL (%zu bytes)", bytes);
    return CALL(s->rt, memset_async, s->bk, dst, value, bytes);
}

/* ---- streams --------------------------------------------------------------------------------- */

vg_status vg_stream_create(vg_runtime *rt, vg_stream **out)
{
    REQUIRE(out, "vg_stream_create: out is NULL");
    *out = NULL;
    REQUIRE(rt, "vg_stream_create: runtime is NULL");
    vg_stream *s = calloc(1, sizeof *s);
    if (!s) return FAIL(VG_ERR_OUT_OF_MEMORY, "vg_stream_create: out of host memory");
    s->rt = rt;
    vg_status st = CALL(rt, stream_create, &s->bk);
    if (st != VG_OK || !s->bk) {
        free(s);
        return st != VG_OK ? st : FAIL(VG_ERR_INTERNAL, "vg_stream_create: backend '%s' returned "
                                                         "no stream", rt->iface.name);
    }
    *out = s;
    return VG_OK;
}

vg_status vg_stream_destroy(vg_stream *s)
{
    if (!s) return VG_OK;
    /* a destroy waits for the stream's work, which another stream's capture on this thread forbids:
     * refused, and the stream stays usable (destroy it once that capture ended) */
    if (tl_capturing && tl_capturing != s) return vg_capture_forbid("vg_stream_destroy");
    if (s->capturing) { /* end the capture so the backend's stream is sane, and drop it */
        vg_log(VG_LOG_WARN, "vg_stream_destroy: the stream is capturing; the capture is discarded");
        vg_graph *g = NULL;
        if (vg_graph_capture_end(s, &g) == VG_OK) vg_graph_destroy(g);
    }
    vg_status st = CALL(s->rt, stream_destroy, s->bk);
    free(s);
    return st;
}

vg_status vg_stream_sync(vg_stream *s)
{
    REQUIRE(s, "vg_stream_sync: stream is NULL");
    if (VG_UNLIKELY(s->capturing))
        return FAIL(VG_ERR_STATE, "vg_stream_sync: the stream is capturing a graph (end the "
                                  "capture first: nothing recorded has run yet)");
    vg_status st = vg_capture_forbid("vg_stream_sync");
    return st != VG_OK ? st : CALL(s->rt, stream_sync, s->bk);
}

vg_status vg_stream_wait_event(vg_stream *s, vg_event *e)
{
    REQUIRE(s && e, "vg_stream_wait_event: %s is NULL", s ? "event" : "stream");
    REQUIRE(s->rt == e->rt, "vg_stream_wait_event: the stream and the event belong to different "
                            "runtimes");
    return CALL(s->rt, stream_wait_event, s->bk, e->bk);
}

vg_runtime *vg_stream_runtime(const vg_stream *s) { return s ? s->rt : NULL; }
int vg_stream_is_capturing(const vg_stream *s) { return s ? s->capturing : 0; }

/* ---- events ---------------------------------------------------------------------------------- */

vg_status vg_event_create(vg_runtime *rt, vg_event **out)
{
    REQUIRE(out, "vg_event_create: out is NULL");
    *out = NULL;
    REQUIRE(rt, "vg_event_create: runtime is NULL");
    vg_event *e = calloc(1, sizeof *e);
    if (!e) return FAIL(VG_ERR_OUT_OF_MEMORY, "vg_event_create: out of host memory");
    e->rt = rt;
    vg_status st = CALL(rt, event_create, &e->bk);
    if (st != VG_OK || !e->bk) {
        free(e);
        return st != VG_OK ? st : FAIL(VG_ERR_INTERNAL, "vg_event_create: backend '%s' returned "
                                                         "no event", rt->iface.name);
    }
    *out = e;
    return VG_OK;
}

vg_status vg_event_destroy(vg_event *e)
{
    if (!e) return VG_OK;
    vg_status st = CALL(e->rt, event_destroy, e->bk);
    free(e);
    return st;
}

vg_status vg_event_record(vg_event *e, vg_stream *s)
{
    REQUIRE(e && s, "vg_event_record: %s is NULL", e ? "stream" : "event");
    REQUIRE(e->rt == s->rt, "vg_event_record: the event and the stream belong to different "
                            "runtimes");
    return CALL(s->rt, event_record, e->bk, s->bk);
}

vg_status vg_event_sync(vg_event *e)
{
    REQUIRE(e, "vg_event_sync: event is NULL");
    vg_status st = vg_capture_forbid("vg_event_sync");
    return st != VG_OK ? st : CALL(e->rt, event_sync, e->bk);
}

vg_status vg_event_elapsed_ms(vg_event *start, vg_event *end, float *ms)
{
    REQUIRE(start && end && ms, "vg_event_elapsed_ms: %s is NULL",
            !start ? "start" : !end ? "end" : "ms");
    REQUIRE(start->rt == end->rt, "vg_event_elapsed_ms: the two events belong to different "
                                  "runtimes");
    return CALL(start->rt, event_elapsed_ms, start->bk, end->bk, ms);
}

/* ---- graphs ------------------------------------------------------------------------------------ */

static vg_status need_graphs(const vg_runtime *rt, const char *fn)
{
    if (VG_UNLIKELY(!(rt->info.caps & VG_CAP_GRAPH)))
        return FAIL(VG_ERR_UNSUPPORTED, "%s: backend '%s' (device %s) has no graph support",
                    fn, rt->iface.name, rt->info.name);
    return VG_OK;
}

vg_status vg_graph_capture_begin(vg_stream *s)
{
    REQUIRE(s, "vg_graph_capture_begin: stream is NULL");
    vg_status st = need_graphs(s->rt, "vg_graph_capture_begin");
    if (st != VG_OK) return st;
    st = vg_capture_may_begin(s, "vg_graph_capture_begin");
    if (st != VG_OK) return st;
    st = CALL(s->rt, capture_begin, s->bk);
    if (st == VG_OK) vg_stream_capture_started(s, 1);
    return st;
}

vg_status vg_graph_capture_end(vg_stream *s, vg_graph **out)
{
    REQUIRE(out, "vg_graph_capture_end: out is NULL");
    *out = NULL;
    REQUIRE(s, "vg_graph_capture_end: stream is NULL");
    if (!s->capturing)
        return FAIL(VG_ERR_STATE, "vg_graph_capture_end: the stream is not capturing");
    int loop = s->capturing == VG_CAPTURING_LOOP; /* core/loop.c began it */
    s->capturing = 0; /* ended in every case */
    if (tl_capturing == s) tl_capturing = NULL;
    vg_bk_graph *bk = NULL;
    vg_status st = loop ? CALL(s->rt, loop_capture_end, s->bk, &bk)
                        : CALL(s->rt, capture_end, s->bk, &bk);
    if (s->capture_error[0]) { /* vg_capture_forbid invalidated it: the backend's graph goes */
        if (st == VG_OK && bk) CALL(s->rt, graph_destroy, bk);
        st = FAIL(VG_ERR_CAPTURE, "vg_graph_capture_end: the capture was invalidated: %s",
                  s->capture_error);
        s->capture_error[0] = '\0';
        return st;
    }
    if (st != VG_OK || !bk) {
        if (st == VG_OK)
            st = FAIL(VG_ERR_INTERNAL, "vg_graph_capture_end: backend '%s' returned no graph",
                      s->rt->iface.name);
        return st;
    }
    vg_graph *g = malloc(sizeof *g);
    if (!g) {
        CALL(s->rt, graph_destroy, bk);
        return FAIL(VG_ERR_OUT_OF_MEMORY, "vg_graph_capture_end: out of host memory");
    }
    g->rt = s->rt;
    g->bk = bk;
    *out = g;
    return VG_OK;
}

vg_status vg_graph_destroy(vg_graph *g)
{
    if (!g) return VG_OK;
    vg_status st = CALL(g->rt, graph_destroy, g->bk);
    free(g);
    return st;
}

vg_status vg_graph_instantiate(vg_graph *g, vg_graph_exec **out)
{
    REQUIRE(out, "vg_graph_instantiate: out is NULL");
    *out = NULL;
    REQUIRE(g, "vg_graph_instantiate: graph is NULL");
    vg_graph_exec *x = malloc(sizeof *x);
    if (!x) return FAIL(VG_ERR_OUT_OF_MEMORY, "vg_graph_instantiate: out of host memory");
    x->rt = g->rt;
    x->bk = NULL;
    vg_status st = CALL(g->rt, graph_instantiate, g->bk, &x->bk);
    if (st != VG_OK || !x->bk) {
        free(x);
        return st != VG_OK ? st : FAIL(VG_ERR_INTERNAL, "vg_graph_instantiate: backend '%s' "
                                                         "returned no executable", g->rt->iface.name);
    }
    *out = x;
    return VG_OK;
}

vg_status vg_graph_exec_launch(vg_graph_exec *x, vg_stream *s)
{
    REQUIRE(x && s, "vg_graph_exec_launch: %s is NULL", x ? "stream" : "graph exec");
    REQUIRE(x->rt == s->rt, "vg_graph_exec_launch: the graph exec and the stream belong to "
                            "different runtimes");
    return CALL(s->rt, exec_launch, x->bk, s->bk);
}

vg_status vg_graph_exec_update(vg_graph_exec *x, vg_graph *g, int *applied)
{
    REQUIRE(applied, "vg_graph_exec_update: applied is NULL");
    *applied = 0;
    REQUIRE(x && g, "vg_graph_exec_update: %s is NULL", x ? "graph" : "graph exec");
    REQUIRE(x->rt == g->rt, "vg_graph_exec_update: the graph exec and the graph belong to "
                            "different runtimes");
    if (!(x->rt->info.caps & VG_CAP_GRAPH_UPDATE))
        return FAIL(VG_ERR_UNSUPPORTED, "vg_graph_exec_update: backend '%s' (device %s) cannot "
                                        "update a graph exec in place", x->rt->iface.name,
                    x->rt->info.name);
    vg_update_result res = VG_UPDATE_NEEDS_REINSTANTIATE;
    vg_status st = CALL(x->rt, exec_update, x->bk, g->bk, &res);
    if (st == VG_OK) *applied = res == VG_UPDATE_APPLIED;
    return st;
}

vg_status vg_graph_exec_destroy(vg_graph_exec *x)
{
    if (!x) return VG_OK;
    vg_status st = CALL(x->rt, exec_destroy, x->bk);
    free(x);
    return st;
}
