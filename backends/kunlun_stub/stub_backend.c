/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub: the interface table and the entry symbol. A vendor's backend starts here. */
#include "stub_internal.h"

const vg_host_services *stub_host;

/* Auto-selection: a CPU stand-in loses to any real device, a vendor's plugin without a score
 * (500) included. */
static int32_t stub_score(void) { return 10; }

static const vg_backend_iface k_iface = {
    .abi_major = VG_BACKEND_ABI_MAJOR,
    .abi_minor = VG_BACKEND_ABI_MINOR,
    .struct_size = sizeof(vg_backend_iface),
    .name = "kunlun_stub",
    .version = "kunlun_stub 0.1 (host CPU, OpenBLAS)",
    .device_count = stub_device_count,
    .device_open = stub_device_open,
    .device_close = stub_device_close,
    .device_info = stub_device_info,
    .mem_alloc = stub_mem_alloc,
    .mem_free = stub_mem_free,
    .host_alloc = stub_host_alloc,
    .host_free = stub_host_free,
    .copy_h2d = stub_copy_h2d,
    .copy_d2h = stub_copy_d2h,
    .copy_d2d = stub_copy_d2d,
    .memset_async = stub_memset,
    .stream_create = stub_stream_create,
    .stream_destroy = stub_stream_destroy,
    .stream_sync = stub_stream_sync,
    .event_create = stub_event_create,
    .event_destroy = stub_event_destroy,
    .event_record = stub_event_record,
    .event_sync = stub_event_sync,
    .event_elapsed_ms = stub_event_elapsed_ms,
    .stream_wait_event = stub_stream_wait_event,
    .capture_begin = stub_capture_begin,
    .capture_end = stub_capture_end,
    .graph_destroy = stub_graph_destroy,
    .graph_instantiate = stub_graph_instantiate,
    .exec_launch = stub_exec_launch,
    .exec_destroy = stub_exec_destroy,
    .exec_update = stub_exec_update,
    .ops = &stub_ops,
    .op_caps = stub_op_caps,
    .score = stub_score,
    .ipc_alloc = stub_ipc_alloc,
    .ipc_export = stub_ipc_export,
    .ipc_open = stub_ipc_open,
    .ipc_close = stub_ipc_close,
    .native_device = stub_native_device,
    .stream_native = stub_stream_native,
    .stream_wrap = stub_stream_wrap,
    .mem_native = stub_mem_native,
    .mem_register = stub_mem_register,
    .mem_unregister = stub_mem_unregister,
    .option_names = stub_option_names,
    .loop_capture_begin = stub_loop_capture_begin,
    .loop_capture_end = stub_loop_capture_end,
    .comm_id_make = stub_comm_id_make,
    .comm_create = stub_comm_create,
    .comm_destroy = stub_comm_destroy,
    .comm_all_reduce = stub_comm_all_reduce,
    .comm_all_gather = stub_comm_all_gather,
};

VG_BACKEND_EXPORT const vg_backend_iface *vg_backend_query(const vg_host_services *host)
{
    /* A host older than the services this plugin uses gets a refusal, not a crash. */
    if (!host || host->abi_major != VG_BACKEND_ABI_MAJOR ||
        host->struct_size < offsetof(vg_host_services, set_error) + sizeof(void *))
        return NULL;
    stub_host = host;
    return &k_iface;
}
