/* A minimal backend built in several deliberately broken variants, one per loader failure mode.
 * Exactly one TP_* macro selects the variant; TP_NAME is the name the table reports. */
#include <stdlib.h>
#include <string.h>

#include "vg/vg_backend.h"

#ifndef TP_NAME
#define TP_NAME "test"
#endif

static const vg_host_services *host;
struct vg_bk_device { int unused; };
struct vg_bk_stream { int unused; };
struct vg_bk_event { int unused; };
static struct vg_bk_device the_device;
static struct vg_bk_stream the_stream;
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
#ifdef TP_GRAPHNULL
    full.caps = VG_CAP_GRAPH; /* promises graphs but provides no capture members */
#endif
    vg_backend_copy_out(i, &full);
    return VG_OK;
}

static vg_status alloc(vg_bk_device *d, size_t n, void **p) { (void)d; *p = malloc(n); return *p ? VG_OK : VG_ERR_OUT_OF_MEMORY; }
static vg_status dfree(vg_bk_device *d, void *p) { (void)d; free(p); return VG_OK; }
static vg_status copy(vg_bk_device *d, vg_bk_stream *s, void *dst, const void *src, size_t n) { (void)d; (void)s; memmove(dst, src, n); return VG_OK; }
static vg_status mset(vg_bk_device *d, vg_bk_stream *s, void *p, int v, size_t n) { (void)d; (void)s; memset(p, v, n); return VG_OK; }
static vg_status screate(vg_bk_device *d, vg_bk_stream **s) { (void)d; *s = &the_stream; return VG_OK; }
static vg_status sdo(vg_bk_device *d, vg_bk_stream *s) { (void)d; (void)s; return VG_OK; }
static vg_status ecreate(vg_bk_device *d, vg_bk_event **e) { (void)d; *e = &the_event; return VG_OK; }
static vg_status edo(vg_bk_device *d, vg_bk_event *e) { (void)d; (void)e; return VG_OK; }
static vg_status erecord(vg_bk_device *d, vg_bk_event *e, vg_bk_stream *s) { (void)d; (void)e; (void)s; return VG_OK; }
static vg_status elapsed(vg_bk_device *d, vg_bk_event *a, vg_bk_event *b, float *ms) { (void)d; (void)a; (void)b; *ms = 0; return VG_OK; }
static vg_status swait(vg_bk_device *d, vg_bk_stream *s, vg_bk_event *e) { (void)d; (void)s; (void)e; return VG_OK; }

static const vg_op_table ops = {.version = VG_OP_TABLE_VERSION, .struct_size = sizeof(vg_op_table)};

static vg_backend_iface iface = {
    .abi_major = VG_BACKEND_ABI_MAJOR,
    .abi_minor = VG_BACKEND_ABI_MINOR,
    .struct_size = sizeof(vg_backend_iface),
    .name = TP_NAME,
    .version = "test plugin",
    .device_count = count, .device_open = open_dev, .device_close = close_dev, .device_info = info,
    .mem_alloc = alloc, .mem_free = dfree, .host_alloc = alloc, .host_free = dfree,
    .copy_h2d = copy, .copy_d2h = copy, .copy_d2d = copy, .memset_async = mset,
    .stream_create = screate, .stream_destroy = sdo, .stream_sync = sdo,
    .event_create = ecreate, .event_destroy = edo, .event_record = erecord, .event_sync = edo,
    .event_elapsed_ms = elapsed, .stream_wait_event = swait,
    .ops = &ops,
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
    return &iface;
}
