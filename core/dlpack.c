/* SPDX-License-Identifier: Apache-2.0 */
/* DLPack (vg_dlpack.h): vg device tensors as DLManagedTensorVersioned and back, without copies.
 * Built on the native handles: export describes the native memory behind a vg address
 * (vg_mem_native), import registers the memory a foreign tensor spans (vg_mem_register). */
#include <stdlib.h>
#include <string.h>

#include "vg/vg_dlpack.h"
#include "vg_internal.h"

/* ---- devices and dtypes ------------------------------------------------------------------------- */

static const struct {
    vg_native_api api;
    DLDeviceType type;
} k_devices[] = {
    {VG_NATIVE_HOST, kDLCPU},       {VG_NATIVE_CUDA, kDLCUDA},      {VG_NATIVE_HIP, kDLROCM},
    {VG_NATIVE_OPENCL, kDLOpenCL}, {VG_NATIVE_VENDOR, kDLExtDev},
};

static const struct {
    vg_dtype dtype;
    uint8_t code, bits;
} k_dtypes[] = {
    {VG_DTYPE_F32, kDLFloat, 32}, {VG_DTYPE_F16, kDLFloat, 16}, {VG_DTYPE_BF16, kDLBfloat, 16},
    {VG_DTYPE_I32, kDLInt, 32},   {VG_DTYPE_I64, kDLInt, 64},   {VG_DTYPE_U8, kDLUInt, 8},
};

static vg_status device_of(vg_runtime *rt, DLDevice *out, vg_native_api *api, const char *fn)
{
    vg_native_device nd = {.struct_size = sizeof nd};
    vg_status st = vg_runtime_native_device(rt, &nd);
    if (st != VG_OK) return vg_error_prefix("%s: ", fn);
    for (size_t i = 0; i < VG_ARRAY_LEN(k_devices); i++)
        if (k_devices[i].api == nd.api) {
            out->device_type = k_devices[i].type;
            out->device_id = nd.ordinal;
            if (api) *api = nd.api;
            return VG_OK;
        }
    return vg_error_set(VG_ERR_UNSUPPORTED, "%s: backend '%s' names no native API DLPack knows",
                        fn, vg_runtime_backend_name(rt));
}

vg_status vg_dlpack_device(vg_runtime *rt, DLDevice *out)
{
    REQUIRE(rt && out, "vg_dlpack_device: %s is NULL", rt ? "out" : "runtime");
    return device_of(rt, out, NULL, "vg_dlpack_device");
}

/* Bytes from element 0 to one past the last element: 0 for an empty tensor. */
static uint64_t extent_bytes(int ndim, const int64_t *shape, const int64_t *strides, size_t esize)
{
    uint64_t last = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) return 0;
        last += (uint64_t)(shape[d] - 1) * (uint64_t)strides[d];
    }
    return (last + 1) * esize;
}

static void compact_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

/* Shapes whose element count and extent fit in 63 bits, so the arithmetic above cannot wrap. */
static vg_status check_shape(int ndim, const int64_t *shape, const int64_t *strides, size_t esize,
                             const char *fn)
{
    const double limit = 9.0e18;
    double extent = (double)esize;
    for (int d = 0; d < ndim; d++) {
        REQUIRE(shape[d] >= 0, "%s: shape[%d] is %lld (negative)", fn, d, (long long)shape[d]);
        if (strides) {
            REQUIRE(strides[d] >= 0, "%s: strides[%d] is %lld (negative strides are not "
                                     "supported)", fn, d, (long long)strides[d]);
            extent += (double)(shape[d] > 0 ? shape[d] - 1 : 0) * (double)strides[d] * (double)esize;
        }
        REQUIRE((double)shape[d] * (double)esize < limit && extent < limit,
                "%s: the tensor's size overflows (dimension %d)", fn, d);
    }
    return VG_OK;
}

/* ---- export ------------------------------------------------------------------------------------- */

/* One allocation holds the DLPack struct and the arrays it points to. */
typedef struct exported {
    DLManagedTensorVersioned m;
    int64_t shape[VG_DLPACK_MAX_DIMS];
    int64_t strides[VG_DLPACK_MAX_DIMS];
    void (*release)(void *user);
    void *user;
} exported;

static void exported_delete(DLManagedTensorVersioned *m)
{
    if (!m) return;
    exported *e = (exported *)m->manager_ctx;
    void (*release)(void *) = e->release;
    void *user = e->user;
    free(e);
    if (release) release(user);
}

vg_status vg_dlpack_export(vg_runtime *rt, const vg_dlpack_tensor *t, DLManagedTensorVersioned **out)
{
    const char *fn = "vg_dlpack_export";
    REQUIRE(out, "%s: out is NULL", fn);
    *out = NULL;
    REQUIRE(rt && t, "%s: %s is NULL", fn, rt ? "tensor" : "runtime");
    REQUIRE(t->struct_size >= sizeof *t, "%s: tensor.struct_size not set", fn);
    size_t esize = vg_dtype_size(t->dtype);
    REQUIRE(esize, "%s: dtype %d is not a vg_dtype", fn, (int)t->dtype);
    REQUIRE(t->ndim >= 0 && t->ndim <= VG_DLPACK_MAX_DIMS, "%s: ndim %d is outside 0..%d", fn,
            t->ndim, VG_DLPACK_MAX_DIMS);
    REQUIRE(t->ptr, "%s: ptr is NULL", fn);
    vg_status st = check_shape(t->ndim, t->shape, t->has_strides ? t->strides : NULL, esize, fn);
    if (st != VG_OK) return st;
    DLDevice dev;
    st = device_of(rt, &dev, NULL, fn);
    if (st != VG_OK) return st;
    vg_native_mem nm = {.struct_size = sizeof nm};
    if (vg_mem_native(rt, t->ptr, &nm) != VG_OK) return vg_error_prefix("%s: ", fn);
    exported *e = calloc(1, sizeof *e);
    if (!e) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    memcpy(e->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    if (t->has_strides)
        memcpy(e->strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    else
        compact_strides(t->ndim, t->shape, e->strides);
    uint64_t extent = extent_bytes(t->ndim, e->shape, e->strides, esize);
    if (nm.bytes && extent > nm.bytes) {
        free(e);
        return vg_error_set(VG_ERR_INVALID_ARG, "%s: the tensor spans %llu bytes from %p, but "
                                                "its allocation ends %llu bytes after it", fn,
                            (unsigned long long)extent, t->ptr, (unsigned long long)nm.bytes);
    }
    e->release = t->release;
    e->user = t->release_user;
    DLManagedTensorVersioned *m = &e->m;
    m->version.major = DLPACK_MAJOR_VERSION;
    m->version.minor = DLPACK_MINOR_VERSION;
    m->manager_ctx = e;
    m->deleter = exported_delete;
    m->flags = t->read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
    m->dl_tensor.data = nm.handle;
    m->dl_tensor.byte_offset = nm.offset;
    m->dl_tensor.device = dev;
    m->dl_tensor.ndim = t->ndim;
    for (size_t i = 0; i < VG_ARRAY_LEN(k_dtypes); i++)
        if (k_dtypes[i].dtype == t->dtype)
            m->dl_tensor.dtype = (DLDataType){k_dtypes[i].code, k_dtypes[i].bits, 1};
    m->dl_tensor.shape = e->shape;
    m->dl_tensor.strides = e->strides;
    *out = m;
    return VG_OK;
}

/* ---- import ------------------------------------------------------------------------------------- */

typedef struct imported {
    vg_runtime *rt;
    DLManagedTensorVersioned *m;
    void *registered; /* the registration vg made for it */
} imported;

static const char *device_type_name(int32_t type)
{
    switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    default: return "another device type";
    }
}

/* The strides vg ops can address: row-major, the innermost dimension contiguous, dimension 0 with
 * a leading dimension of at least one row, the others compact. Extent-1 dimensions are free. */
static vg_status check_strides(const DLTensor *d, int64_t *strides, const char *fn)
{
    int n = d->ndim;
    int64_t compact[VG_DLPACK_MAX_DIMS];
    compact_strides(n, d->shape, compact);
    if (!d->strides) {
        memcpy(strides, compact, sizeof(int64_t) * (size_t)n);
        return VG_OK;
    }
    for (int i = 0; i < n; i++) {
        int64_t s = d->strides[i];
        strides[i] = d->shape[i] == 1 ? compact[i] : s;
        if (d->shape[i] <= 1) continue;
        if (s <= 0)
            return vg_error_set(VG_ERR_INVALID_ARG, "%s: strides[%d] is %lld: zero and negative "
                                                    "strides are not supported", fn, i, (long long)s);
        if (s == compact[i] || (i == 0 && n >= 2 && s >= compact[0])) continue;
        return vg_error_set(VG_ERR_INVALID_ARG, "%s: strides[%d] is %lld where vg needs %lld%s: "
                                                "vg ops take row-major tensors, contiguous but for "
                                                "an optional padded leading dimension", fn, i,
                            (long long)s, (long long)compact[i],
                            i == 0 && n >= 2 ? " or more" : "");
    }
    return VG_OK;
}

vg_status vg_dlpack_import(vg_runtime *rt, DLManagedTensorVersioned *in, vg_dlpack_tensor *out)
{
    const char *fn = "vg_dlpack_import";
    REQUIRE(rt && in && out, "%s: %s is NULL", fn, !rt ? "runtime" : !in ? "tensor" : "out");
    REQUIRE(out->struct_size >= sizeof *out, "%s: out->struct_size not set", fn);
    REQUIRE(in->version.major == DLPACK_MAJOR_VERSION, "%s: DLPack major version %u, vg reads %d "
                                                       "(the caller calls the tensor's deleter)",
            fn, in->version.major, DLPACK_MAJOR_VERSION);
    const DLTensor *d = &in->dl_tensor;
    DLDevice mine;
    vg_native_api api = VG_NATIVE_NONE;
    vg_status st = device_of(rt, &mine, &api, fn);
    if (st != VG_OK) return st;
    REQUIRE(d->device.device_type == mine.device_type && d->device.device_id == mine.device_id,
            "%s: the tensor is on %s device %d, this runtime ('%s') is %s device %d", fn,
            device_type_name(d->device.device_type), (int)d->device.device_id,
            vg_runtime_backend_name(rt), device_type_name(mine.device_type), (int)mine.device_id);
    vg_dtype dtype = VG_DTYPE_COUNT_;
    for (size_t i = 0; i < VG_ARRAY_LEN(k_dtypes); i++)
        if (d->dtype.code == k_dtypes[i].code && d->dtype.bits == k_dtypes[i].bits)
            dtype = k_dtypes[i].dtype;
    REQUIRE(dtype != VG_DTYPE_COUNT_ && d->dtype.lanes == 1,
            "%s: dtype (code %u, %u bits, %u lanes) has no vg_dtype (vg takes float32, float16, "
            "bfloat16, int32, int64 and uint8, one lane)", fn, d->dtype.code, d->dtype.bits,
            d->dtype.lanes);
    REQUIRE(d->ndim >= 0 && d->ndim <= VG_DLPACK_MAX_DIMS, "%s: ndim %d is outside 0..%d", fn,
            d->ndim, VG_DLPACK_MAX_DIMS);
    REQUIRE(d->ndim == 0 || d->shape, "%s: shape is NULL", fn);
    size_t esize = vg_dtype_size(dtype);
    st = check_shape(d->ndim, d->shape, NULL, esize, fn);
    if (st != VG_OK) return st;
    int64_t strides[VG_DLPACK_MAX_DIMS];
    st = check_strides(d, strides, fn);
    if (st != VG_OK) return st;
    st = check_shape(d->ndim, d->shape, strides, esize, fn);
    if (st != VG_OK) return st;
    REQUIRE(d->byte_offset % esize == 0, "%s: byte_offset %llu is not a multiple of the dtype's "
                                         "%zu bytes", fn, (unsigned long long)d->byte_offset, esize);
    REQUIRE(d->data, "%s: data is NULL", fn);
    uint64_t extent = extent_bytes(d->ndim, d->shape, strides, esize);
    imported *im = calloc(1, sizeof *im);
    if (!im) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    im->rt = rt;
    im->m = in;
    void *ptr;
    if (api == VG_NATIVE_OPENCL) {
        /* data is a cl_mem: give its bytes up to the tensor's end a vg address */
        st = vg_mem_register(rt, d->data, d->byte_offset + (extent ? extent : 1), &im->registered);
        ptr = (char *)im->registered + d->byte_offset;
    } else {
        /* data is an address: register the range the tensor spans */
        ptr = (char *)d->data + d->byte_offset;
        st = vg_mem_register(rt, ptr, extent ? extent : 1, &im->registered);
    }
    if (st != VG_OK) {
        free(im);
        return vg_error_prefix("%s: ", fn);
    }
    memset((char *)out + sizeof(uint32_t), 0, sizeof *out - sizeof(uint32_t));
    out->ptr = ptr;
    out->dtype = dtype;
    out->ndim = d->ndim;
    memcpy(out->shape, d->shape, sizeof(int64_t) * (size_t)d->ndim);
    memcpy(out->strides, strides, sizeof(int64_t) * (size_t)d->ndim);
    out->has_strides = 1;
    out->read_only = (in->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    out->priv_ = im;
    return VG_OK;
}

vg_status vg_dlpack_release(vg_dlpack_tensor *t)
{
    REQUIRE(t, "vg_dlpack_release: tensor is NULL");
    imported *im = (imported *)t->priv_;
    REQUIRE(im, "vg_dlpack_release: the tensor is not an import, or was released already");
    t->priv_ = NULL;
    t->ptr = NULL;
    vg_status st = vg_mem_unregister(im->rt, im->registered);
    if (im->m->deleter) im->m->deleter(im->m);
    free(im);
    return st;
}
