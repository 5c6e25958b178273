/* SPDX-License-Identifier: Apache-2.0 */
/* DLPack (vg_dlpack.h) on the backend VG_BACKEND names: export and import round trips (shape,
 * strides, dtype, device, byte offset, read-only flag, the deleter and its release callback), and
 * every refusal with its message: foreign devices, dtypes vg has no name for, strides vg ops cannot
 * address, other major versions. A refused import leaves the tensor to the caller (its deleter is
 * not called). A backend without a device exits 77 (SKIP), unless VG_REQUIRE_DEVICE=1. */
#include <stdlib.h>

#include "test_util.h"
#include "vg/vg_dlpack.h"

static vg_runtime *g_rt;
static DLDevice g_dev;

static int g_released;
static void count_release(void *user) { (void)user, g_released++; }

static vg_dlpack_tensor tensor(void *ptr, vg_dtype dtype, int ndim, const int64_t *shape)
{
    vg_dlpack_tensor t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.ptr = ptr;
    t.dtype = dtype;
    t.ndim = ndim;
    for (int d = 0; d < ndim && d < VG_DLPACK_MAX_DIMS; d++) t.shape[d] = shape[d];
    return t;
}

static void test_device(void **state)
{
    (void)state;
    vg_native_device nd = {.struct_size = sizeof nd};
    VG_CHECK(vg_runtime_native_device(g_rt, &nd));
    int32_t want = nd.api == VG_NATIVE_HOST     ? kDLCPU
                   : nd.api == VG_NATIVE_CUDA   ? kDLCUDA
                   : nd.api == VG_NATIVE_HIP    ? kDLROCM
                   : nd.api == VG_NATIVE_OPENCL ? kDLOpenCL : kDLExtDev;
    assert_int_equal(g_dev.device_type, want);
    assert_int_equal(g_dev.device_id, nd.ordinal);
}

static void test_export(void **state)
{
    (void)state;
    void *d = NULL;
    VG_CHECK(vg_mem_alloc(g_rt, 3 * 4 * sizeof(uint16_t) + 64, &d));
    int64_t shape[2] = {3, 4};
    vg_dlpack_tensor t = tensor((char *)d + 64, VG_DTYPE_BF16, 2, shape);
    t.read_only = 1;
    t.release = count_release;
    DLManagedTensorVersioned *m = NULL;
    VG_CHECK(vg_dlpack_export(g_rt, &t, &m));
    assert_int_equal(m->version.major, DLPACK_MAJOR_VERSION);
    assert_int_equal(m->version.minor, DLPACK_MINOR_VERSION);
    assert_true(m->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
    const DLTensor *x = &m->dl_tensor;
    assert_int_equal(x->device.device_type, g_dev.device_type);
    assert_int_equal(x->device.device_id, g_dev.device_id);
    assert_int_equal(x->ndim, 2);
    assert_int_equal(x->shape[0], 3);
    assert_int_equal(x->shape[1], 4);
    assert_non_null(x->strides);
    assert_int_equal(x->strides[0], 4);
    assert_int_equal(x->strides[1], 1);
    assert_int_equal(x->dtype.code, kDLBfloat);
    assert_int_equal(x->dtype.bits, 16);
    assert_int_equal(x->dtype.lanes, 1);
    vg_native_mem nm = {.struct_size = sizeof nm};
    VG_CHECK(vg_mem_native(g_rt, t.ptr, &nm));
    assert_ptr_equal(x->data, nm.handle); /* the native memory: a pointer, or a cl_mem */
    assert_int_equal(x->byte_offset, nm.offset);
    m->deleter(m);
    assert_int_equal(g_released, 1);
    g_released = 0;
    /* explicit strides travel as given */
    int64_t shape3[3] = {2, 3, 5};
    t = tensor(d, VG_DTYPE_U8, 3, shape3);
    t.has_strides = 1;
    t.strides[0] = 16, t.strides[1] = 5, t.strides[2] = 1;
    VG_CHECK(vg_dlpack_export(g_rt, &t, &m));
    assert_int_equal(m->dl_tensor.strides[0], 16);
    assert_int_equal(m->dl_tensor.dtype.code, kDLUInt);
    assert_false(m->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
    m->deleter(m);
    /* a scalar */
    t = tensor(d, VG_DTYPE_I64, 0, NULL);
    VG_CHECK(vg_dlpack_export(g_rt, &t, &m));
    assert_int_equal(m->dl_tensor.ndim, 0);
    assert_int_equal(m->dl_tensor.dtype.code, kDLInt);
    assert_int_equal(m->dl_tensor.dtype.bits, 64);
    m->deleter(m);
    VG_CHECK(vg_mem_free(g_rt, d));
}

static void test_export_refusals(void **state)
{
    (void)state;
    void *d = NULL;
    VG_CHECK(vg_mem_alloc(g_rt, 256, &d));
    int64_t shape[VG_DLPACK_MAX_DIMS] = {4, 16}; /* room for the ndim-9 case's reads */
    DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)1;
    vg_dlpack_tensor t = tensor(d, (vg_dtype)42, 2, shape);
    VG_CHECK_FAILS(vg_dlpack_export(g_rt, &t, &m), VG_ERR_INVALID_ARG, "dtype 42");
    assert_null(m);
    t = tensor(d, VG_DTYPE_F32, 9, shape);
    VG_CHECK_FAILS(vg_dlpack_export(g_rt, &t, &m), VG_ERR_INVALID_ARG, "ndim 9");
    t = tensor(d, VG_DTYPE_F32, 2, shape);
    t.shape[1] = -1;
    VG_CHECK_FAILS(vg_dlpack_export(g_rt, &t, &m), VG_ERR_INVALID_ARG, "negative");
    t = tensor(d, VG_DTYPE_F32, 2, shape);
    t.has_strides = 1, t.strides[0] = -16, t.strides[1] = 1;
    VG_CHECK_FAILS(vg_dlpack_export(g_rt, &t, &m), VG_ERR_INVALID_ARG, "negative strides");
    t = tensor(NULL, VG_DTYPE_F32, 2, shape);
    VG_CHECK_FAILS(vg_dlpack_export(g_rt, &t, &m), VG_ERR_INVALID_ARG, "ptr is NULL");
    /* 4 x 16 F32 is 256 bytes: one more row does not fit the allocation */
    t = tensor(d, VG_DTYPE_F32, 2, shape);
    t.shape[0] = 5;
    VG_CHECK_FAILS(vg_dlpack_export(g_rt, &t, &m), VG_ERR_INVALID_ARG, "allocation ends");
    t.struct_size = 8;
    VG_CHECK_FAILS(vg_dlpack_export(g_rt, &t, &m), VG_ERR_INVALID_ARG, "struct_size");
    assert_null(m);
    VG_CHECK(vg_mem_free(g_rt, d));
}

/* export, import, use the import with a vg op, read through the original address */
static void test_round_trip(void **state)
{
    (void)state;
    enum { R = 6, C = 10 };
    float *d = NULL;
    VG_CHECK(vg_mem_alloc(g_rt, R * C * sizeof(float), (void **)&d));
    int64_t shape[2] = {R, C};
    vg_dlpack_tensor t = tensor(d, VG_DTYPE_F32, 2, shape);
    t.release = count_release;
    DLManagedTensorVersioned *m = NULL;
    VG_CHECK(vg_dlpack_export(g_rt, &t, &m));
    vg_dlpack_tensor in;
    memset(&in, 0, sizeof in);
    in.struct_size = sizeof in;
    VG_CHECK(vg_dlpack_import(g_rt, m, &in));
    assert_int_equal(in.dtype, VG_DTYPE_F32);
    assert_int_equal(in.ndim, 2);
    assert_int_equal(in.shape[0], R);
    assert_int_equal(in.shape[1], C);
    assert_int_equal(in.strides[0], C);
    assert_int_equal(in.strides[1], 1);
    assert_false(in.read_only);
    vg_native_mem nm = {.struct_size = sizeof nm};
    VG_CHECK(vg_mem_native(g_rt, in.ptr, &nm));
    assert_true(nm.registered); /* so the runner's address check covers it */
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(g_rt, &s));
    VG_CHECK(vg_op_fill(s, in.ptr, VG_DTYPE_F32, R * C, 2.5)); /* written through the import */
    float h[R * C];
    VG_CHECK(vg_mem_copy_d2h(s, h, d, sizeof h)); /* read through vg's own address */
    VG_CHECK(vg_stream_sync(s));
    for (int i = 0; i < R * C; i++) assert_float_equal(h[i], 2.5f, 0);
    assert_int_equal(g_released, 0);
    VG_CHECK(vg_dlpack_release(&in));
    assert_int_equal(g_released, 1); /* the producer's deleter ran */
    g_released = 0;
    assert_null(in.ptr);
    VG_CHECK_FAILS(vg_dlpack_release(&in), VG_ERR_INVALID_ARG, "released already");
    /* a padded leading dimension and extent-1 dimensions with any stride are accepted */
    int64_t sh3[3] = {3, 1, 4};
    t = tensor(d, VG_DTYPE_F32, 3, sh3);
    t.has_strides = 1, t.strides[0] = 10, t.strides[1] = 999, t.strides[2] = 1;
    VG_CHECK(vg_dlpack_export(g_rt, &t, &m));
    VG_CHECK(vg_dlpack_import(g_rt, m, &in));
    assert_int_equal(in.strides[0], 10);
    assert_int_equal(in.strides[1], 4);
    VG_CHECK(vg_dlpack_release(&in));
    VG_CHECK(vg_stream_destroy(s));
    VG_CHECK(vg_mem_free(g_rt, d));
}

/* A producer's tensor, described by hand: refusals must not call its deleter. */
static int g_deleted;
static void count_delete(DLManagedTensorVersioned *m) { (void)m, g_deleted++; }

static void test_import_refusals(void **state)
{
    (void)state;
    float *d = NULL;
    VG_CHECK(vg_mem_alloc(g_rt, 4096, (void **)&d));
    vg_native_mem nm = {.struct_size = sizeof nm};
    VG_CHECK(vg_mem_native(g_rt, d, &nm));
    int64_t shape[2] = {4, 3}, strides[2] = {3, 1};
    DLManagedTensorVersioned good;
    memset(&good, 0, sizeof good);
    good.version.major = DLPACK_MAJOR_VERSION;
    good.deleter = count_delete;
    good.dl_tensor.data = nm.handle;
    good.dl_tensor.byte_offset = nm.offset;
    good.dl_tensor.device = g_dev;
    good.dl_tensor.ndim = 2;
    good.dl_tensor.dtype = (DLDataType){kDLFloat, 32, 1};
    good.dl_tensor.shape = shape;
    good.dl_tensor.strides = strides;
    vg_dlpack_tensor in;
    memset(&in, 0, sizeof in);
    in.struct_size = sizeof in;
    DLManagedTensorVersioned m = good;
    VG_CHECK(vg_dlpack_import(g_rt, &m, &in)); /* the baseline is accepted */
    VG_CHECK(vg_dlpack_release(&in));
    assert_int_equal(g_deleted, 1);
    g_deleted = 0;

    m = good;
    m.dl_tensor.device.device_type = g_dev.device_type == kDLCUDA ? kDLCPU : kDLCUDA;
    VG_CHECK_FAILS(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "the tensor is on");
    m = good;
    m.dl_tensor.device.device_id = g_dev.device_id + 1;
    VG_CHECK_FAILS2(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "the tensor is on",
                    "this runtime");
    m = good;
    m.version.major = DLPACK_MAJOR_VERSION + 1;
    VG_CHECK_FAILS(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "major version");
    m = good;
    m.dl_tensor.dtype = (DLDataType){kDLFloat, 64, 1};
    VG_CHECK_FAILS(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "has no vg_dtype");
    m.dl_tensor.dtype = (DLDataType){kDLBool, 8, 1};
    VG_CHECK_FAILS(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "has no vg_dtype");
    m.dl_tensor.dtype = (DLDataType){kDLFloat, 32, 2};
    VG_CHECK_FAILS(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "2 lanes");
    /* a transpose: not row-major */
    int64_t tshape[2] = {3, 4}, tstrides[2] = {1, 3};
    m = good;
    m.dl_tensor.shape = tshape;
    m.dl_tensor.strides = tstrides;
    VG_CHECK_FAILS2(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "strides[0] is 1",
                    "row-major");
    /* a broadcast (stride 0) and a reversed dimension */
    int64_t bstrides[2] = {0, 1}, rstrides[2] = {3, -1};
    m.dl_tensor.shape = shape;
    m.dl_tensor.strides = bstrides;
    VG_CHECK_FAILS(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "zero and negative");
    m.dl_tensor.strides = rstrides;
    VG_CHECK_FAILS(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "zero and negative");
    /* a row pitch smaller than a row */
    int64_t sstrides[2] = {2, 1};
    m.dl_tensor.strides = sstrides;
    VG_CHECK_FAILS(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "or more");
    m = good;
    m.dl_tensor.byte_offset += 2;
    VG_CHECK_FAILS(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "not a multiple");
    m = good;
    m.dl_tensor.ndim = 9;
    VG_CHECK_FAILS(vg_dlpack_import(g_rt, &m, &in), VG_ERR_INVALID_ARG, "ndim 9");
    assert_int_equal(g_deleted, 0); /* every refused tensor is still the caller's */
    assert_null(in.priv_);
    VG_CHECK(vg_mem_free(g_rt, d));
}

/* On kunlun_stub the device is the host: a host array of another framework crosses as kDLCPU,
 * without a copy, and vg ops write into it. */
static void test_import_host_array_on_stub(void **state)
{
    (void)state;
    if (g_dev.device_type != kDLCPU) skip();
    float host[32];
    for (int i = 0; i < 32; i++) host[i] = (float)i;
    int64_t shape[1] = {32};
    DLManagedTensorVersioned m;
    memset(&m, 0, sizeof m);
    m.version.major = DLPACK_MAJOR_VERSION;
    m.deleter = count_delete;
    m.dl_tensor = (DLTensor){host, g_dev, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
    vg_dlpack_tensor in;
    memset(&in, 0, sizeof in);
    in.struct_size = sizeof in;
    VG_CHECK(vg_dlpack_import(g_rt, &m, &in));
    assert_ptr_equal(in.ptr, host);
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(g_rt, &s));
    VG_CHECK(vg_op_axpby(s, 32, 3.0f, in.ptr, 0.0f, in.ptr));
    VG_CHECK(vg_stream_sync(s));
    for (int i = 0; i < 32; i++) assert_float_equal(host[i], 3.0f * i, 0);
    VG_CHECK(vg_dlpack_release(&in));
    assert_int_equal(g_deleted, 1);
    g_deleted = 0;
    VG_CHECK(vg_stream_destroy(s));
}

int main(void)
{
    int rc0 = vg_test_open_runtime(&g_rt);
    if (rc0) return rc0;
    if (vg_dlpack_device(g_rt, &g_dev) != VG_OK) {
        fprintf(stderr, "vg_dlpack_device: %s\n", vg_last_error());
        return 1;
    }
    printf("DLPack tests on backend '%s' (device type %d, id %d)\n", vg_runtime_backend_name(g_rt),
           (int)g_dev.device_type, (int)g_dev.device_id);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device),
        cmocka_unit_test(test_export),
        cmocka_unit_test(test_export_refusals),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_import_refusals),
        cmocka_unit_test(test_import_host_array_on_stub),
    };
    int rc = cmocka_run_group_tests_name("dlpack", tests, NULL, NULL);
    vg_runtime_close(g_rt);
    return rc ? 1 : 0;
}
