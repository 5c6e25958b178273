/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal backend built in several variants: deliberately broken ones, one per loader failure
 * mode, and working ones for the ABI and auto-selection tests. At most one failure macro
 * (TP_NOSYM ... TP_UNDEFINED) selects a broken variant; TP_NAME is the name the table reports.
 *
 * Working variants:
 *   TP_SCORE=<n>  ABI 1.1 with a score() member returning n (without it: no score, counts 500)
 *   TP_ABI10      an ABI 1.0 plugin: abi_minor 0, struct_size VG_BACKEND_IFACE_SIZE_1_0, graphs,
 *                 capturable_ops = {fill}; the members beyond 1.0 hold poison that crashes if read
 *   TP_OPCAPS     an ABI 1.1 plugin (struct_size VG_BACKEND_IFACE_SIZE_1_1, poison beyond) with
 *                 graphs and op_caps(): fill supported (F32, I32) but not capturable although
 *                 capturable_ops says every op is; axpby capturable; op 70 (unknown to this core)
 *                 supported and capturable. Exports tp_op_caps_calls.
 *   TP_IPCNULL    ABI 1.3 (this header's size) whose device reports VG_CAP_IPC without the IPC
 *                 members: the core must refuse the device.
 *   TP_ABI12      an ABI 1.2 plugin (struct_size VG_BACKEND_IFACE_SIZE_1_2, poison beyond) whose
 *                 device reports VG_CAP_NATIVE and VG_CAP_FOREIGN_CAPTURE, bits a 1.2 table cannot
 *                 back: the core must clear them and refuse native calls and backend options.
 * TP_ABI10 and TP_OPCAPS report VG_CAP_IPC too (the bit was reserved before 1.2 gave it its
 * section): a core must not believe a table older than 1.2 about it.
 * Every variant's "device memory" is host memory, and its ops (fill, axpby) run on the host. */
#include <stdlib.h>
#include <string.h>

#include "vg/vg_backend.h"

#ifndef TP_NAME
#define TP_NAME "test"
#endif

#if defined(TP_ABI10) || defined(TP_OPCAPS) || defined(TP_ABI12)
#define TP_GRAPHS 1
#endif

static const vg_host_services *host;
struct vg_bk_device { int unused; };
static struct vg_bk_device the_device;

/* ---- streams, recording when capturing ---------------------------------------------------- */

enum { TP_MAX_CMDS = 64 };
typedef struct tp_cmd {
    vg_op_id op;
    void *dst;
    vg_dtype dtype;
    size_t count;
    double value;
    float alpha, beta;
    const float *x;
} tp_cmd;

struct vg_bk_stream {
    int capturing;
    int ncmds;
    tp_cmd cmds[TP_MAX_CMDS];
};
struct vg_bk_event { int unused; };
struct vg_bk_graph { int ncmds; tp_cmd cmds[TP_MAX_CMDS]; };
struct vg_bk_exec { struct vg_bk_graph g; };
static struct vg_bk_event the_event;

#ifdef TP_UNDEFINED
extern int vg_test_symbol_that_does_not_exist(void);
#endif

static vg_status count(int *n)
{
#ifdef TP_NODEVICE
    *n = 0;
#elif defined(TP_UNDEFINED)
    *n = vg_test_symbol_that_does_not_exist();
#else
    *n = 1;
#endif
    return VG_OK;
}

static vg_status open_dev(int index, vg_bk_device **out)
{
    (void)index;
#ifdef TP_OPENFAIL
    (void)the_device;
    *out = NULL;
    host->set_error(VG_ERR_DEVICE, "test plugin: simulated hardware fault on open");
    return VG_ERR_DEVICE;
#else
    *out = &the_device;
    return VG_OK;
#endif
}

static vg_status close_dev(vg_bk_device *d) { (void)d; return VG_OK; }

static vg_status info(vg_bk_device *d, vg_device_info *i)
{
    (void)d;
    vg_device_info full;
    memset(&full, 0, sizeof full);
    strcpy(full.name, "test device " TP_NAME);
    full.mem_total = 1 << 20;
    full.mem_free = 1 << 20;
#if defined(TP_GRAPHNULL) || defined(TP_GRAPHS)
    full.caps = VG_CAP_GRAPH; /* TP_GRAPHNULL promises graphs but provides no capture members */
#endif
#if defined(TP_ABI10) || defined(TP_OPCAPS) || defined(TP_IPCNULL)
    full.caps |= VG_CAP_IPC; /* a claim without the section (ABI 1.0, 1.1) or its members */
#endif
#ifdef TP_ABI12
    full.caps |= VG_CAP_NATIVE | VG_CAP_FOREIGN_CAPTURE; /* a claim without the 1.3 section */
#endif
#ifdef TP_ABI10
    full.capturable_ops = 1ull << VG_OP_FILL;
#elif defined(TP_OPCAPS)
    full.capturable_ops = ~0ull; /* op_caps must win over this mask */
#endif
    vg_backend_copy_out(i, &full);
    return VG_OK;
}

static vg_status alloc(vg_bk_device *d, size_t n, void **p) { (void)d; *p = malloc(n); return *p ? VG_OK : VG_ERR_OUT_OF_MEMORY; }
static vg_status dfree(vg_bk_device *d, void *p) { (void)d; free(p); return VG_OK; }
static vg_status copy(vg_bk_device *d, vg_bk_stream *s, void *dst, const void *src, size_t n) { (void)d; (void)s; memmove(dst, src, n); return VG_OK; }
static vg_status mset(vg_bk_device *d, vg_bk_stream *s, void *p, int v, size_t n) { (void)d; (void)s; memset(p, v, n); return VG_OK; }
static vg_status screate(vg_bk_device *d, vg_bk_stream **s)
{
    (void)d;
    *s = calloc(1, sizeof **s);
    return *s ? VG_OK : VG_ERR_OUT_OF_MEMORY;
}
static vg_status sdestroy(vg_bk_device *d, vg_bk_stream *s) { (void)d; free(s); return VG_OK; }
static vg_status ssync(vg_bk_device *d, vg_bk_stream *s) { (void)d; (void)s; return VG_OK; }
static vg_status ecreate(vg_bk_device *d, vg_bk_event **e) { (void)d; *e = &the_event; return VG_OK; }
static vg_status edo(vg_bk_device *d, vg_bk_event *e) { (void)d; (void)e; return VG_OK; }
static vg_status erecord(vg_bk_device *d, vg_bk_event *e, vg_bk_stream *s) { (void)d; (void)e; (void)s; return VG_OK; }
static vg_status elapsed(vg_bk_device *d, vg_bk_event *a, vg_bk_event *b, float *ms) { (void)d; (void)a; (void)b; *ms = 0; return VG_OK; }
static vg_status swait(vg_bk_device *d, vg_bk_stream *s, vg_bk_event *e) { (void)d; (void)s; (void)e; return VG_OK; }

/* ---- ops: fill and axpby, run at once or recorded -------------------------------------------- */

static void run_cmd(const tp_cmd *c)
{
    if (c->op == VG_OP_AXPBY) {
        float *y = c->dst;
        for (size_t i = 0; i < c->count; i++) y[i] = c->alpha * c->x[i] + c->beta * y[i];
        return;
    }
    for (size_t i = 0; i < c->count; i++) {
        switch (c->dtype) {
        case VG_DTYPE_F32: ((float *)c->dst)[i] = (float)c->value; break;
        case VG_DTYPE_I32: ((int32_t *)c->dst)[i] = (int32_t)c->value; break;
        case VG_DTYPE_I64: ((int64_t *)c->dst)[i] = (int64_t)c->value; break;
        case VG_DTYPE_U8: ((uint8_t *)c->dst)[i] = (uint8_t)c->value; break;
        default: memset((char *)c->dst + 2 * i, 0, 2); break; /* 16-bit floats: only 0 here */
        }
    }
}

static vg_status submit(vg_bk_stream *s, const tp_cmd *c)
{
    if (!s->capturing) {
        run_cmd(c);
        return VG_OK;
    }
    if (s->ncmds == TP_MAX_CMDS) {
        host->set_error(VG_ERR_CAPTURE, "test plugin: capture too long");
        return VG_ERR_CAPTURE;
    }
    s->cmds[s->ncmds++] = *c;
    return VG_OK;
}

static vg_status op_fill(vg_bk_device *d, vg_bk_stream *s, void *dst, vg_dtype dtype, size_t n,
                         double value)
{
    (void)d;
    tp_cmd c = {.op = VG_OP_FILL, .dst = dst, .dtype = dtype, .count = n, .value = value};
    return submit(s, &c);
}

static vg_status op_axpby(vg_bk_device *d, vg_bk_stream *s, size_t n, float alpha, const float *x,
                          float beta, float *y)
{
    (void)d;
    tp_cmd c = {.op = VG_OP_AXPBY, .dst = y, .count = n, .alpha = alpha, .beta = beta, .x = x};
    return submit(s, &c);
}

/* ---- graphs ---------------------------------------------------------------------------------- */

#ifdef TP_GRAPHS
static vg_status cap_begin(vg_bk_device *d, vg_bk_stream *s)
{
    (void)d;
    if (s->capturing) {
        host->set_error(VG_ERR_STATE, "test plugin: already capturing");
        return VG_ERR_STATE;
    }
    s->capturing = 1;
    s->ncmds = 0;
    return VG_OK;
}

static vg_status cap_end(vg_bk_device *d, vg_bk_stream *s, vg_bk_graph **out)
{
    (void)d;
    *out = NULL;
    if (!s->capturing) {
        host->set_error(VG_ERR_STATE, "test plugin: not capturing");
        return VG_ERR_STATE;
    }
    s->capturing = 0;
    vg_bk_graph *g = malloc(sizeof *g);
    if (!g) return VG_ERR_OUT_OF_MEMORY;
    g->ncmds = s->ncmds;
    memcpy(g->cmds, s->cmds, sizeof g->cmds);
    *out = g;
    return VG_OK;
}

static vg_status g_destroy(vg_bk_device *d, vg_bk_graph *g) { (void)d; free(g); return VG_OK; }

static vg_status g_instantiate(vg_bk_device *d, vg_bk_graph *g, vg_bk_exec **out)
{
    (void)d;
    *out = malloc(sizeof **out);
    if (!*out) return VG_ERR_OUT_OF_MEMORY;
    (*out)->g = *g;
    return VG_OK;
}

static vg_status x_launch(vg_bk_device *d, vg_bk_exec *x, vg_bk_stream *s)
{
    (void)d;
    for (int i = 0; i < x->g.ncmds; i++) {
        vg_status st = submit(s, &x->g.cmds[i]);
        if (st != VG_OK) return st;
    }
    return VG_OK;
}

static vg_status x_destroy(vg_bk_device *d, vg_bk_exec *x) { (void)d; free(x); return VG_OK; }
#endif

#ifdef TP_OPCAPS
/* How often the core asked, and the largest op it asked about: read by tests/test_abi.c. */
VG_BACKEND_EXPORT long tp_op_caps_calls;

static vg_status op_caps(vg_bk_device *d, uint32_t op, vg_op_caps *out)
{
    (void)d;
    tp_op_caps_calls++;
    out->flags = 0;
    out->dtypes = 0;
    if (op == VG_OP_FILL) {
        out->flags = VG_OP_SUPPORTED; /* not capturable, whatever capturable_ops says */
        out->dtypes = VG_DTYPE_BIT(VG_DTYPE_F32) | VG_DTYPE_BIT(VG_DTYPE_I32);
    } else if (op == VG_OP_AXPBY || op == 70) {
        out->flags = VG_OP_SUPPORTED | VG_OP_CAPTURABLE;
    }
    return VG_OK;
}
#endif

#ifdef TP_SCORE
static int32_t score(void) { return TP_SCORE; }
#endif

/* ---- the table --------------------------------------------------------------------------------- */

static const vg_op_table ops = {.version = VG_OP_TABLE_VERSION, .struct_size = sizeof(vg_op_table),
                                .fill = op_fill, .axpby = op_axpby};

static vg_backend_iface iface = {
    .abi_major = VG_BACKEND_ABI_MAJOR,
    .abi_minor = VG_BACKEND_ABI_MINOR,
    .struct_size = sizeof(vg_backend_iface),
    .name = TP_NAME,
    .version = "test plugin",
    .device_count = count, .device_open = open_dev, .device_close = close_dev, .device_info = info,
    .mem_alloc = alloc, .mem_free = dfree, .host_alloc = alloc, .host_free = dfree,
    .copy_h2d = copy, .copy_d2h = copy, .copy_d2d = copy, .memset_async = mset,
    .stream_create = screate, .stream_destroy = sdestroy, .stream_sync = ssync,
    .event_create = ecreate, .event_destroy = edo, .event_record = erecord, .event_sync = edo,
    .event_elapsed_ms = elapsed, .stream_wait_event = swait,
#ifdef TP_GRAPHS
    .capture_begin = cap_begin, .capture_end = cap_end, .graph_destroy = g_destroy,
    .graph_instantiate = g_instantiate, .exec_launch = x_launch, .exec_destroy = x_destroy,
#endif
    .ops = &ops,
#ifdef TP_OPCAPS
    .op_caps = op_caps,
#endif
#ifdef TP_SCORE
    .score = score,
#endif
};

#ifdef TP_NOSYM
#define ENTRY vg_backend_query_misspelled
#else
#define ENTRY vg_backend_query
#endif

VG_BACKEND_EXPORT const vg_backend_iface *ENTRY(const vg_host_services *h)
{
    host = h;
#ifdef TP_NULLTABLE
    return NULL;
#endif
#ifdef TP_ABIMAJOR
    iface.abi_major = VG_BACKEND_ABI_MAJOR + 98;
#endif
#ifdef TP_SMALL
    iface.struct_size = 64;
#endif
#ifdef TP_NULLMEMBER
    iface.mem_alloc = NULL;
#endif
#ifdef TP_ABI10
    /* As a plugin compiled against the 1.0 header: its table ends at `ops`. What lies beyond
     * is not the plugin's; poison it so a core that reads past struct_size crashes here. */
    iface.abi_minor = 0;
    iface.struct_size = (uint32_t)VG_BACKEND_IFACE_SIZE_1_0;
    memset((char *)&iface + VG_BACKEND_IFACE_SIZE_1_0, 0x5A,
           sizeof iface - VG_BACKEND_IFACE_SIZE_1_0);
#endif
#ifdef TP_OPCAPS
    /* As a plugin compiled against the 1.1 header: its table ends at `score`. */
    iface.abi_minor = 1;
    iface.struct_size = (uint32_t)VG_BACKEND_IFACE_SIZE_1_1;
    memset((char *)&iface + VG_BACKEND_IFACE_SIZE_1_1, 0x5A,
           sizeof iface - VG_BACKEND_IFACE_SIZE_1_1);
#endif
#ifdef TP_ABI12
    /* As a plugin compiled against the 1.2 header: its table ends at `ipc_close`. */
    iface.abi_minor = 2;
    iface.struct_size = (uint32_t)VG_BACKEND_IFACE_SIZE_1_2;
    memset((char *)&iface + VG_BACKEND_IFACE_SIZE_1_2, 0x5A,
           sizeof iface - VG_BACKEND_IFACE_SIZE_1_2);
#endif
    return &iface;
}
