/* SPDX-License-Identifier: Apache-2.0 */
/* opencl: the interface table and the entry symbol. */
#define _GNU_SOURCE /* dladdr, RTLD_NODELETE */
#include <dlfcn.h>

#include "ocl_internal.h"

const vg_host_services *ocl_host;

static const vg_backend_iface k_iface = {
    .abi_major = VG_BACKEND_ABI_MAJOR,
    .abi_minor = VG_BACKEND_ABI_MINOR,
    .struct_size = sizeof(vg_backend_iface),
    .name = "opencl",
    .version = "opencl 0.1 (OpenCL ICD loader; kernels in OpenCL C; graphs as cl_khr_command_buffer)",
    .device_count = ocl_device_count,
    .device_open = ocl_device_open,
    .device_close = ocl_device_close,
    .device_info = ocl_device_info,
    .mem_alloc = ocl_mem_alloc,
    .mem_free = ocl_mem_free,
    .host_alloc = ocl_host_alloc,
    .host_free = ocl_host_free,
    .copy_h2d = ocl_copy_h2d,
    .copy_d2h = ocl_copy_d2h,
    .copy_d2d = ocl_copy_d2d,
    .memset_async = ocl_memset,
    .stream_create = ocl_stream_create,
    .stream_destroy = ocl_stream_destroy,
    .stream_sync = ocl_stream_sync,
    .event_create = ocl_event_create,
    .event_destroy = ocl_event_destroy,
    .event_record = ocl_event_record,
    .event_sync = ocl_event_sync,
    .event_elapsed_ms = ocl_event_elapsed_ms,
    .stream_wait_event = ocl_stream_wait_event,
    .capture_begin = ocl_capture_begin,
    .capture_end = ocl_capture_end,
    .graph_destroy = ocl_graph_destroy,
    .graph_instantiate = ocl_graph_instantiate,
    .exec_launch = ocl_exec_launch,
    .exec_destroy = ocl_exec_destroy,
    .exec_update = NULL, /* no cl_khr_command_buffer_mutable_dispatch: no VG_CAP_GRAPH_UPDATE */
    .ops = &ocl_ops,
    .op_caps = ocl_op_caps,
    .score = ocl_score,
    .native_device = ocl_native_device,
    .stream_native = ocl_stream_native,
    .stream_wrap = ocl_stream_wrap,
    .mem_native = ocl_mem_native,
    .mem_register = ocl_mem_register,
    .mem_unregister = ocl_mem_unregister,
    .option_names = ocl_option_names,
};

VG_BACKEND_EXPORT const vg_backend_iface *vg_backend_query(const vg_host_services *host)
{
    if (!host || host->abi_major != VG_BACKEND_ABI_MAJOR ||
        host->struct_size < offsetof(vg_host_services, set_error) + sizeof(void *))
        return NULL;
    ocl_host = host;
    /* The ICD loader stays loaded when vg unloads this plugin: it keeps its list of drivers for
     * the life of the process (it never frees it), and the drivers it loaded are never unloaded
     * either. Unloaded, its memory would leak and a later load would start over. */
    Dl_info where;
    if (dladdr((void *)&clGetPlatformIDs, &where) && where.dli_fname &&
        !dlopen(where.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
        host->log(VG_LOG_DEBUG, "opencl: could not pin the ICD loader %s: %s", where.dli_fname,
                  dlerror());
    return &k_iface;
}
