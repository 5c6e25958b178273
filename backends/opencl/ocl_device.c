/* SPDX-License-Identifier: Apache-2.0 */
/* opencl devices: open (the shared program, the command-buffer entry points, honest
 * capabilities), close, info, per-op capabilities and the auto-selection score.
 *
 *   VG_OPENCL_PLATFORM=I|NAME   the platform of the default device (index, or part of its name)
 *   VG_OPENCL_DEVICE=I|NAME     the default device (index within that platform, or part of a name)
 *   VG_OPENCL_COMMAND_BUFFER=0  act as a driver without cl_khr_command_buffer: no graphs */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

/* The kernel each op runs. */
static const ocl_kernel_id k_op_kernel[OCL_OP_COUNT] = {
    [VG_OP_FILL] = OCL_K_fill_pattern,
    [VG_OP_AXPBY] = OCL_K_axpby,
    [VG_OP_GEMM] = OCL_K_gemm,
    [VG_OP_GATHER_ROWS] = OCL_K_gather_rows,
    [VG_OP_RMSNORM] = OCL_K_rms_norm,
    [VG_OP_ROTARY_2D] = OCL_K_rotary,
    [VG_OP_ATTENTION] = OCL_K_attention,
    [VG_OP_SILU_MUL] = OCL_K_silu_mul,
    [VG_OP_CONVERT] = OCL_K_convert,
    [VG_OP_ATTENTION_ROTARY] = OCL_K_attention,
    [VG_OP_ROTARY] = OCL_K_rotary,
    [VG_OP_RMSNORM_HEADS] = OCL_K_rms_norm,
    [VG_OP_KV_STORE] = OCL_K_kv_store,
    [VG_OP_PAGED_ATTENTION] = OCL_K_paged_attention,
    [VG_OP_ARGMAX] = OCL_K_argmax,
    [VG_OP_LAYERNORM] = OCL_K_layer_norm,
    [VG_OP_GATHER_WEIGHTED] = OCL_K_gather_weighted,
    [VG_OP_ROTARY_KV_STORE] = OCL_K_rotary_kv_store,
    [VG_OP_GEMM_SILU_GATE] = OCL_K_gemm, /* and silu_mul after it */
    [VG_OP_GEMM_RMSNORM_A] = OCL_K_gemm, /* and rms_norm before it */
};

/* The work-group size each kernel is launched with (ops.c uses the same constants). */
static size_t kernel_group(ocl_kernel_id k)
{
    switch (k) {
    case OCL_K_gemm: return OCL_GEMM_WG * OCL_GEMM_WG;
    case OCL_K_rms_norm:
    case OCL_K_layer_norm:
    case OCL_K_rotary_kv_store:
    case OCL_K_argmax: return OCL_WG_REDUCE;
    case OCL_K_attention:
    case OCL_K_paged_attention: return OCL_WG_ATTN;
    default: return OCL_WG;
    }
}

static const char *const k_op_names[VG_OP_COUNT_] = {VG_OP_LIST(VG_OP_LIST_NAME_AT)};

vg_status ocl_device_count(int *count)
{
    if (!count) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: device_count: NULL");
    ocl_devref *devs = NULL;
    vg_status st = ocl_enumerate(&devs, count);
    free(devs);
    if (st == VG_OK && *count == 0)
        return OCL_ERR(VG_ERR_NO_DEVICE, "opencl: no OpenCL platform with a device (the ICD "
                                         "loader found none: install a driver, e.g. "
                                         "pocl-opencl-icd, or check OCL_ICD_VENDORS)");
    return st;
}

/* Auto-selection: a GPU or accelerator ranks below the native cuda (900) and hip (800)
 * backends; a CPU device (PoCL) below kunlun_stub (10), which runs the same ops through OpenBLAS
 * and is vg's own test device. */
int32_t ocl_score(void)
{
    ocl_devref *devs = NULL;
    int n = 0, score = 0;
    if (ocl_enumerate(&devs, &n) == VG_OK && n > 0) {
        int i = ocl_default_device(devs, n);
        cl_device_type t = 0;
        if (i >= 0) clGetDeviceInfo(devs[i].id, CL_DEVICE_TYPE, sizeof t, &t, NULL);
        score = (t & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)) ? 700 : 5;
    }
    free(devs);
    return score;
}

/* The command-buffer entry points, or graphs off with the reason logged. */
static void probe_command_buffers(vg_bk_device *dev)
{
    const char *env = ocl_option("VG_OPENCL_COMMAND_BUFFER");
    if (env && strcmp(env, "0") == 0) {
        snprintf(dev->cb_version, sizeof dev->cb_version, "turned off");
        return;
    }
    if (!ocl_has_extension(dev->id, OCL_CB_EXTENSION)) {
        snprintf(dev->cb_version, sizeof dev->cb_version, "none");
        return;
    }
    ocl_cb_api *cb = &dev->cb;
    /* an object pointer to a function pointer, as dlsym users do */
#define LOAD(field, name)                                                                     \
    do {                                                                                      \
        void *fn_ = clGetExtensionFunctionAddressForPlatform(dev->platform, name);           \
        memcpy(&cb->field, &fn_, sizeof fn_);                                                 \
    } while (0)
    LOAD(create, "clCreateCommandBufferKHR");
    LOAD(finalize, "clFinalizeCommandBufferKHR");
    LOAD(release, "clReleaseCommandBufferKHR");
    LOAD(enqueue, "clEnqueueCommandBufferKHR");
    LOAD(ndrange, "clCommandNDRangeKernelKHR");
#undef LOAD
    if (!cb->create || !cb->finalize || !cb->release || !cb->enqueue || !cb->ndrange) {
        OCL_LOG(VG_LOG_WARN, "opencl: %s reports cl_khr_command_buffer but its entry points are "
                             "missing: no graphs", dev->name);
        snprintf(dev->cb_version, sizeof dev->cb_version, "broken");
        return;
    }
    /* queues must need nothing vg's do not have (in-order, profiling) */
    cl_command_queue_properties need = 0;
    clGetDeviceInfo(dev->id, OCL_CB_REQUIRED_QUEUE, sizeof need, &need, NULL);
    if (need & ~(cl_command_queue_properties)CL_QUEUE_PROFILING_ENABLE) {
        OCL_LOG(VG_LOG_WARN, "opencl: %s: command buffers need queue properties 0x%llx that vg's "
                             "in-order queues lack: no graphs", dev->name, (unsigned long long)need);
        snprintf(dev->cb_version, sizeof dev->cb_version, "unusable");
        return;
    }
    cl_bitfield caps = 0;
    clGetDeviceInfo(dev->id, OCL_CB_CAPABILITIES, sizeof caps, &caps, NULL);
    dev->simultaneous = (caps & OCL_CB_CAP_SIMULTANEOUS) != 0;
    dev->graphs = 1;
    snprintf(dev->cb_version, sizeof dev->cb_version, "yes");
    size_t bytes = 0; /* the provisional version, where the platform can say it (OpenCL 3.0) */
    if (clGetDeviceInfo(dev->id, CL_DEVICE_EXTENSIONS_WITH_VERSION, 0, NULL, &bytes) == CL_SUCCESS &&
        bytes) {
        cl_name_version *v = malloc(bytes);
        if (v && clGetDeviceInfo(dev->id, CL_DEVICE_EXTENSIONS_WITH_VERSION, bytes, v, NULL) == CL_SUCCESS)
            for (size_t i = 0; i < bytes / sizeof *v; i++)
                if (strcmp(v[i].name, OCL_CB_EXTENSION) == 0)
                    snprintf(dev->cb_version, sizeof dev->cb_version, "%u.%u.%u",
                             CL_VERSION_MAJOR(v[i].version), CL_VERSION_MINOR(v[i].version),
                             CL_VERSION_PATCH(v[i].version));
        free(v);
    }
}

/* Each op whose kernel can run with its work-group size on this device. */
static void probe_ops(vg_bk_device *dev)
{
    for (int op = 0; op < OCL_OP_COUNT; op++) {
        ocl_kernel_id k = k_op_kernel[op];
        dev->op_supported[op] = dev->sh->kernel_wg[k] >= kernel_group(k);
        if (!dev->op_supported[op])
            OCL_LOG(VG_LOG_INFO, "opencl: %s: op %s not offered: kernel %s runs at most %zu "
                                 "work-items per group, it needs %zu", dev->name, k_op_names[op],
                    ocl_kernel_names[k], dev->sh->kernel_wg[k], kernel_group(k));
    }
}

static void describe(vg_bk_device *dev)
{
    char dname[48], pname[32];
    cl_uint cu = 0;
    cl_ulong mem = 0, max_alloc = 0;
    ocl_device_string(dev->id, CL_DEVICE_NAME, dname, sizeof dname);
    ocl_platform_string(dev->platform, CL_PLATFORM_NAME, pname, sizeof pname);
    clGetDeviceInfo(dev->id, CL_DEVICE_TYPE, sizeof dev->type, &dev->type, NULL);
    clGetDeviceInfo(dev->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    clGetDeviceInfo(dev->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    clGetDeviceInfo(dev->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    cl_ulong local_mem = 0;
    clGetDeviceInfo(dev->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem, &local_mem, NULL);
    dev->local_mem = local_mem;
    char version[128]; /* "OpenCL <major>.<minor> <platform-specific>" */
    int major = 1, minor = 2;
    ocl_platform_string(dev->platform, CL_PLATFORM_VERSION, version, sizeof version);
    if (sscanf(version, "OpenCL %d.%d", &major, &minor) == 2) dev->cl_version = major * 10 + minor;
    else dev->cl_version = 12;
    dev->compute_units = (int)cu;
    dev->mem_total = mem;
    dev->max_alloc = max_alloc;
    snprintf(dev->name, sizeof dev->name, "%s (%s)", dname, pname);
}

vg_status ocl_device_open(int index, vg_bk_device **out)
{
    if (!out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: device_open: out is NULL");
    *out = NULL;
    ocl_devref *devs = NULL;
    int n = 0;
    vg_status st = ocl_enumerate(&devs, &n);
    if (st != VG_OK) return st;
    if (n == 0) {
        free(devs);
        return OCL_ERR(VG_ERR_NO_DEVICE, "opencl: no OpenCL device found");
    }
    if (index < 0) index = ocl_default_device(devs, n);
    if (index < 0 || index >= n) {
        free(devs);
        return index < 0 ? VG_ERR_NO_DEVICE
                         : OCL_ERR(VG_ERR_NO_DEVICE, "opencl: device %d does not exist (%d present)",
                                   index, n);
    }
    vg_bk_device *dev = calloc(1, sizeof *dev);
    if (!dev) {
        free(devs);
        return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: out of host memory");
    }
    dev->index = index;
    dev->platform = devs[index].platform;
    dev->id = devs[index].id;
    free(devs);
    describe(dev);
    st = ocl_shared_get(dev->platform, dev->id, &dev->sh);
    if (st != VG_OK) {
        free(dev);
        return st;
    }
    cl_int err = CL_SUCCESS;
    dev->dummy = clCreateBuffer(dev->sh->ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    if (err != CL_SUCCESS) {
        free(dev);
        return ocl_fail(err, "clCreateBuffer");
    }
    pthread_rwlock_init(&dev->mem_lock, NULL);
    probe_command_buffers(dev);
    probe_ops(dev);
    if (!dev->graphs)
        OCL_LOG(VG_LOG_INFO, "opencl: %s: command buffers %s: no graph support, every call runs "
                             "eagerly", dev->name, dev->cb_version);
    *out = dev;
    return VG_OK;
}

vg_status ocl_device_close(vg_bk_device *dev)
{
    if (!dev) return VG_OK;
    ocl_mem_release_all(dev);
    clReleaseMemObject(dev->dummy);
    pthread_rwlock_destroy(&dev->mem_lock);
    free(dev);
    return VG_OK;
}

/* ABI 1.1: every op with a runnable kernel, in every dtype the catalogue allows (F16 and BF16 are
 * converted in the kernels with integer arithmetic: no cl_khr_fp16 needed); capturable when the
 * device has usable command buffers, since every op is one kernel launch. */
vg_status ocl_op_caps(vg_bk_device *dev, uint32_t op, vg_op_caps *out)
{
    if (!dev || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: op_caps: NULL");
    out->flags = 0;
    out->dtypes = 0;
    if (op < OCL_OP_COUNT && dev->op_supported[op]) {
        out->flags = VG_OP_SUPPORTED;
        if (dev->graphs) out->flags |= VG_OP_CAPTURABLE;
    }
    return VG_OK;
}

vg_status ocl_device_info(vg_bk_device *dev, vg_device_info *info)
{
    if (!dev || !info) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: device_info: NULL");
    vg_device_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    /* the name says whether graphs are command buffers here: vg info shows it per device */
    snprintf(full.name, sizeof full.name, "%s, command buffers: %s", dev->name, dev->cb_version);
    pthread_rwlock_rdlock(&dev->mem_lock);
    full.mem_total = dev->mem_total;
    full.mem_free = dev->mem_total > dev->used ? dev->mem_total - dev->used : 0;
    pthread_rwlock_unlock(&dev->mem_lock);
    full.caps = (dev->graphs ? VG_CAP_GRAPH : 0) | VG_CAP_NATIVE; /* never FOREIGN_CAPTURE */
    for (uint32_t op = 0; op < 64; op++) { /* for ABI 1.0 consumers; op_caps says the same */
        vg_op_caps c = {sizeof c, 0, 0};
        if (ocl_op_caps(dev, op, &c) == VG_OK && (c.flags & VG_OP_CAPTURABLE))
            full.capturable_ops |= 1ull << op;
    }
    full.compute_units = dev->compute_units;
    full.index = dev->index;
    vg_backend_copy_out(info, &full);
    return VG_OK;
}
