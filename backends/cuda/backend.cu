/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA backend's interface table and entry symbol. */
#include "common.cuh"

const vg_host_services *vgc_host;

extern "C" {
vg_status vgc_device_count(int *);
vg_status vgc_device_open(int, vg_bk_device **);
vg_status vgc_device_close(vg_bk_device *);
vg_status vgc_device_info(vg_bk_device *, vg_device_info *);
vg_status vgc_mem_alloc(vg_bk_device *, size_t, void **);
vg_status vgc_mem_free(vg_bk_device *, void *);
vg_status vgc_host_alloc(vg_bk_device *, size_t, void **);
vg_status vgc_host_free(vg_bk_device *, void *);
vg_status vgc_copy_h2d(vg_bk_device *, vg_bk_stream *, void *, const void *, size_t);
vg_status vgc_copy_d2h(vg_bk_device *, vg_bk_stream *, void *, const void *, size_t);
vg_status vgc_copy_d2d(vg_bk_device *, vg_bk_stream *, void *, const void *, size_t);
vg_status vgc_memset(vg_bk_device *, vg_bk_stream *, void *, int, size_t);
vg_status vgc_stream_create(vg_bk_device *, vg_bk_stream **);
vg_status vgc_stream_destroy(vg_bk_device *, vg_bk_stream *);
vg_status vgc_stream_sync(vg_bk_device *, vg_bk_stream *);
vg_status vgc_event_create(vg_bk_device *, vg_bk_event **);
vg_status vgc_event_destroy(vg_bk_device *, vg_bk_event *);
vg_status vgc_event_record(vg_bk_device *, vg_bk_event *, vg_bk_stream *);
vg_status vgc_event_sync(vg_bk_device *, vg_bk_event *);
vg_status vgc_event_elapsed_ms(vg_bk_device *, vg_bk_event *, vg_bk_event *, float *);
vg_status vgc_stream_wait_event(vg_bk_device *, vg_bk_stream *, vg_bk_event *);
vg_status vgc_capture_begin(vg_bk_device *, vg_bk_stream *);
vg_status vgc_capture_end(vg_bk_device *, vg_bk_stream *, vg_bk_graph **);
vg_status vgc_graph_destroy(vg_bk_device *, vg_bk_graph *);
vg_status vgc_graph_instantiate(vg_bk_device *, vg_bk_graph *, vg_bk_exec **);
vg_status vgc_exec_launch(vg_bk_device *, vg_bk_exec *, vg_bk_stream *);
vg_status vgc_exec_destroy(vg_bk_device *, vg_bk_exec *);
vg_status vgc_exec_update(vg_bk_device *, vg_bk_exec *, vg_bk_graph *, vg_update_result *);
vg_status vgc_op_caps(vg_bk_device *, uint32_t, vg_op_caps *);
vg_status vgc_ipc_alloc(vg_bk_device *, size_t, void **);
vg_status vgc_ipc_export(vg_bk_device *, void *, vg_ipc_handle *);
vg_status vgc_ipc_open(vg_bk_device *, const vg_ipc_handle *, void **, size_t *);
vg_status vgc_ipc_close(vg_bk_device *, void *);
vg_status vgc_native_device(vg_bk_device *, vg_native_device *);
vg_status vgc_stream_native(vg_bk_device *, vg_bk_stream *, void **);
vg_status vgc_stream_wrap(vg_bk_device *, void *, vg_bk_stream **);
vg_status vgc_mem_native(vg_bk_device *, const void *, vg_native_mem *);
vg_status vgc_mem_register(vg_bk_device *, void *, size_t, void **);
vg_status vgc_mem_unregister(vg_bk_device *, void *);
}

/* Auto-selection: a GPU backend beats the CPU stand-in; cuda 900, hip 800 (vendor.h). */
static int32_t vgc_score(void) { return VG_VENDOR_SCORE; }

static char g_version[128];

static vg_backend_iface make_iface(void)
{
    vg_backend_iface t = {};
    t.abi_major = VG_BACKEND_ABI_MAJOR;
    t.abi_minor = VG_BACKEND_ABI_MINOR;
    t.struct_size = sizeof(vg_backend_iface);
    t.name = VG_VENDOR_NAME;
    t.version = g_version;
    t.device_count = vgc_device_count;
    t.device_open = vgc_device_open;
    t.device_close = vgc_device_close;
    t.device_info = vgc_device_info;
    t.mem_alloc = vgc_mem_alloc;
    t.mem_free = vgc_mem_free;
    t.host_alloc = vgc_host_alloc;
    t.host_free = vgc_host_free;
    t.copy_h2d = vgc_copy_h2d;
    t.copy_d2h = vgc_copy_d2h;
    t.copy_d2d = vgc_copy_d2d;
    t.memset_async = vgc_memset;
    t.stream_create = vgc_stream_create;
    t.stream_destroy = vgc_stream_destroy;
    t.stream_sync = vgc_stream_sync;
    t.event_create = vgc_event_create;
    t.event_destroy = vgc_event_destroy;
    t.event_record = vgc_event_record;
    t.event_sync = vgc_event_sync;
    t.event_elapsed_ms = vgc_event_elapsed_ms;
    t.stream_wait_event = vgc_stream_wait_event;
    t.capture_begin = vgc_capture_begin;
    t.capture_end = vgc_capture_end;
    t.graph_destroy = vgc_graph_destroy;
    t.graph_instantiate = vgc_graph_instantiate;
    t.exec_launch = vgc_exec_launch;
    t.exec_destroy = vgc_exec_destroy;
    t.exec_update = vgc_exec_update;
    t.ops = &vgc_ops;
    t.op_caps = vgc_op_caps;
    t.score = vgc_score;
    t.ipc_alloc = vgc_ipc_alloc; /* ipc.cu */
    t.ipc_export = vgc_ipc_export;
    t.ipc_open = vgc_ipc_open;
    t.ipc_close = vgc_ipc_close;
    t.native_device = vgc_native_device;
    t.stream_native = vgc_stream_native;
    t.stream_wrap = vgc_stream_wrap;
    t.mem_native = vgc_mem_native;
    t.mem_register = vgc_mem_register;
    t.mem_unregister = vgc_mem_unregister;
    t.option_names = vgc_option_names;
    t.loop_capture_begin = vgc_loop_capture_begin; /* graph_loop.cu */
    t.loop_capture_end = vgc_loop_capture_end;
    vgc_comm_members(&t); /* comm.cu */
    return t;
}

static vg_backend_iface g_iface;

extern "C" VG_BACKEND_EXPORT const vg_backend_iface *vg_backend_query(const vg_host_services *host)
{
    if (!host || host->abi_major != VG_BACKEND_ABI_MAJOR ||
        host->struct_size < offsetof(vg_host_services, set_error) + sizeof(void *))
        return NULL;
    vgc_host = host;
    vg_runtime_version_text(g_version, sizeof g_version);
    g_iface = make_iface();
    return &g_iface;
}
