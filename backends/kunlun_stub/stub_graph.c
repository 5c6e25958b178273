/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub graphs: a captured command list; an exec is an independent copy of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stub_internal.h"

/* Bookkeeping charged to device memory per exec, as a real driver's graph objects are. */
#define STUB_EXEC_OVERHEAD 4096u

static void discard_capture(vg_bk_stream *s)
{
    stub_cmd_list_free(&s->recording);
    s->capture = STUB_CAPTURE_NONE;
    s->capture_error[0] = '\0';
}

vg_status stub_capture_begin(vg_bk_device *dev, vg_bk_stream *s)
{
    if (!dev || !s) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: capture_begin: NULL");
    if (!(dev->cfg.caps & VG_CAP_GRAPH))
        return STUB_ERR(VG_ERR_UNSUPPORTED, "kunlun_stub: graphs are disabled (VG_STUB_CAPS)");
    if (s->capture != STUB_CAPTURE_NONE)
        return STUB_ERR(VG_ERR_STATE, "kunlun_stub: capture_begin: stream is already capturing");
    if (stub_fault_hit(dev, STUB_FAULT_CAPTURE_BEGIN))
        return STUB_ERR(VG_ERR_CAPTURE, "kunlun_stub: capture_begin failed (injected fault)");
    s->capture = STUB_CAPTURE_ACTIVE;
    s->recording.n = 0;
    return VG_OK;
}

vg_status stub_capture_end(vg_bk_device *dev, vg_bk_stream *s, vg_bk_graph **out)
{
    if (!dev || !s || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: capture_end: NULL");
    *out = NULL;
    if (s->capture == STUB_CAPTURE_NONE)
        return STUB_ERR(VG_ERR_STATE, "kunlun_stub: capture_end: stream is not capturing");
    if (s->capture == STUB_CAPTURE_INVALID) {
        char why[256];
        snprintf(why, sizeof why, "%s", s->capture_error);
        discard_capture(s);
        return STUB_ERR(VG_ERR_CAPTURE, "kunlun_stub: capture was invalidated: %s", why);
    }
    if (stub_fault_hit(dev, STUB_FAULT_CAPTURE_END)) {
        discard_capture(s);
        return STUB_ERR(VG_ERR_CAPTURE, "kunlun_stub: capture_end failed (injected fault)");
    }
    vg_bk_graph *g = calloc(1, sizeof *g);
    if (!g) {
        discard_capture(s);
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: capture_end: out of memory");
    }
    g->list = s->recording; /* ownership moves to the graph */
    memset(&s->recording, 0, sizeof s->recording);
    discard_capture(s);
    *out = g;
    return VG_OK;
}

vg_status stub_graph_destroy(vg_bk_device *dev, vg_bk_graph *g)
{
    (void)dev;
    if (!g) return VG_OK;
    stub_cmd_list_free(&g->list);
    free(g);
    return VG_OK;
}

vg_status stub_graph_instantiate(vg_bk_device *dev, vg_bk_graph *g, vg_bk_exec **out)
{
    if (!dev || !g || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: instantiate: NULL");
    *out = NULL;
    if (stub_fault_hit(dev, STUB_FAULT_INSTANTIATE))
        return STUB_ERR(VG_ERR_CAPTURE, "kunlun_stub: instantiate failed (injected fault)");
    uint64_t bytes = g->list.n * sizeof(stub_cmd) + STUB_EXEC_OVERHEAD;
    vg_status st = stub_charge(dev, bytes, "graph instantiate");
    if (st != VG_OK) return st;
    vg_bk_exec *x = calloc(1, sizeof *x);
    stub_cmd *cmds = g->list.n ? malloc(g->list.n * sizeof *cmds) : NULL;
    if (!x || (g->list.n && !cmds)) {
        free(x);
        free(cmds);
        stub_uncharge(dev, bytes);
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: instantiate: out of host memory");
    }
    if (g->list.n) memcpy(cmds, g->list.cmds, g->list.n * sizeof *cmds);
    x->list = (stub_cmd_list){cmds, g->list.n, g->list.n};
    x->charged = bytes;
    *out = x;
    return VG_OK;
}

vg_status stub_exec_launch(vg_bk_device *dev, vg_bk_exec *x, vg_bk_stream *s)
{
    if (!dev || !x || !s) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: exec_launch: NULL");
    if (s->capture != STUB_CAPTURE_NONE)
        return STUB_ERR(VG_ERR_STATE, "kunlun_stub: exec_launch on a capturing stream");
    if (stub_fault_hit(dev, STUB_FAULT_LAUNCH))
        return STUB_ERR(VG_ERR_DEVICE, "kunlun_stub: exec_launch failed (injected fault)");
    stub_charge_launch(dev); /* one launch for the whole graph */
    /* a command that fails (a collective whose peer died) ends the replay, as a device fault
     * ends a kernel's, and the launch reports it */
    for (size_t i = 0; i < x->list.n && s->error == VG_OK; i = stub_next_cmd(x->list.cmds, i))
        x->list.cmds[i].run(s, x->list.cmds[i].args);
    return stub_stream_error(s);
}

vg_status stub_exec_destroy(vg_bk_device *dev, vg_bk_exec *x)
{
    if (!x) return VG_OK;
    if (dev) stub_uncharge(dev, x->charged);
    stub_cmd_list_free(&x->list);
    free(x);
    return VG_OK;
}

/* Like CUDA's rule: the same sequence of commands may take new arguments; anything else
 * needs a new instantiation. */
vg_status stub_exec_update(vg_bk_device *dev, vg_bk_exec *x, vg_bk_graph *g, vg_update_result *r)
{
    if (!dev || !x || !g || !r) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: exec_update: NULL");
    *r = VG_UPDATE_NEEDS_REINSTANTIATE;
    if (!(dev->cfg.caps & VG_CAP_GRAPH_UPDATE))
        return STUB_ERR(VG_ERR_UNSUPPORTED, "kunlun_stub: graph update disabled (VG_STUB_CAPS)");
    if (stub_fault_hit(dev, STUB_FAULT_UPDATE)) return VG_OK; /* a refusal, not an error */
    if (x->list.n != g->list.n) return VG_OK;
    for (size_t i = 0; i < x->list.n; i++)
        if (x->list.cmds[i].run != g->list.cmds[i].run) return VG_OK;
    memcpy(x->list.cmds, g->list.cmds, g->list.n * sizeof(stub_cmd));
    *r = VG_UPDATE_APPLIED;
    return VG_OK;
}
