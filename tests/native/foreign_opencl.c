/* SPDX-License-Identifier: Apache-2.0 */
/* The test's own OpenCL kernel, built from source in the context vg's device uses, launched on a
 * vg stream's cl_command_queue with the cl_mem and offsets behind vg's addresses. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdlib.h>

#include "foreign.h"

struct foreign_ctx {
    vg_runtime *rt;
    cl_context ctx, other; /* vg's, and one of the test's own (for refusals) */
    cl_device_id dev;
    cl_program prog;
    cl_kernel kern;
    cl_command_queue other_q;
};

static const char *k_source =
    "__kernel void scale_shift(__global const float *x, ulong xo, __global float *y, ulong yo,\n"
    "                          ulong n, float a, float b) {\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i < n) y[yo / 4 + i] = a * x[xo / 4 + i] + b;\n"
    "}\n";

static void ocl_fini(foreign_ctx *c)
{
    if (!c) return;
    if (c->kern) clReleaseKernel(c->kern);
    if (c->prog) clReleaseProgram(c->prog);
    if (c->other_q) clReleaseCommandQueue(c->other_q);
    if (c->other) clReleaseContext(c->other);
    free(c);
}

static vg_status ocl_init(vg_runtime *rt, foreign_ctx **out)
{
    vg_native_device nd = {.struct_size = sizeof nd};
    vg_status st = vg_runtime_native_device(rt, &nd);
    if (st != VG_OK) return st;
    foreign_ctx *c = calloc(1, sizeof *c);
    if (!c) return VG_ERR_OUT_OF_MEMORY;
    c->rt = rt;
    c->ctx = (cl_context)nd.context;
    c->dev = (cl_device_id)nd.device;
    cl_int err = CL_SUCCESS;
    c->prog = clCreateProgramWithSource(c->ctx, 1, &k_source, NULL, &err);
    if (err == CL_SUCCESS) err = clBuildProgram(c->prog, 1, &c->dev, "", NULL, NULL);
    if (err == CL_SUCCESS) c->kern = clCreateKernel(c->prog, "scale_shift", &err);
    if (err == CL_SUCCESS) c->other = clCreateContext(NULL, 1, &c->dev, NULL, NULL, &err);
    if (err == CL_SUCCESS) c->other_q = clCreateCommandQueue(c->other, c->dev, 0, &err);
    if (err != CL_SUCCESS) {
        ocl_fini(c);
        return vg_error_set(VG_ERR_DEVICE, "the test's OpenCL kernel: error %d", err);
    }
    *out = c;
    return VG_OK;
}

static vg_status ocl_scale(foreign_ctx *c, vg_stream *s, const float *x, float *y, size_t n,
                           float a, float b)
{
    void *q = NULL;
    vg_native_mem xm = {.struct_size = sizeof xm}, ym = {.struct_size = sizeof ym};
    vg_status st = vg_stream_native(s, &q);
    if (st == VG_OK) st = vg_mem_native(c->rt, x, &xm);
    if (st == VG_OK) st = vg_mem_native(c->rt, y, &ym);
    if (st != VG_OK) return st;
    cl_ulong xo = xm.offset, yo = ym.offset, nn = n;
    cl_mem xb = (cl_mem)xm.handle, yb = (cl_mem)ym.handle;
    cl_int err = clSetKernelArg(c->kern, 0, sizeof xb, &xb);
    err |= clSetKernelArg(c->kern, 1, sizeof xo, &xo);
    err |= clSetKernelArg(c->kern, 2, sizeof yb, &yb);
    err |= clSetKernelArg(c->kern, 3, sizeof yo, &yo);
    err |= clSetKernelArg(c->kern, 4, sizeof nn, &nn);
    err |= clSetKernelArg(c->kern, 5, sizeof a, &a);
    err |= clSetKernelArg(c->kern, 6, sizeof b, &b);
    size_t global = (n + 63) / 64 * 64;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel((cl_command_queue)q, c->kern, 1, NULL, &global, NULL, 0, NULL,
                                     NULL);
    return err == CL_SUCCESS ? VG_OK
                             : vg_error_set(VG_ERR_DEVICE, "the test's OpenCL kernel: error %d", err);
}

static void *ocl_stream_create(foreign_ctx *c)
{
    cl_int err = CL_SUCCESS;
    cl_command_queue q = clCreateCommandQueue(c->ctx, c->dev, CL_QUEUE_PROFILING_ENABLE, &err);
    return err == CL_SUCCESS ? q : NULL;
}

static void ocl_stream_destroy(foreign_ctx *c, void *q)
{
    (void)c;
    clReleaseCommandQueue((cl_command_queue)q);
}

static void *ocl_stream_foreign(foreign_ctx *c) { return c->other_q; }

static void *ocl_mem_alloc(foreign_ctx *c, size_t bytes)
{
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    return err == CL_SUCCESS ? m : NULL;
}

static void ocl_mem_free(foreign_ctx *c, void *m)
{
    (void)c;
    clReleaseMemObject((cl_mem)m);
}

const foreign_impl foreign_opencl = {
    VG_NATIVE_OPENCL, ocl_init, ocl_fini, ocl_scale, ocl_stream_create, ocl_stream_destroy,
    ocl_stream_foreign, ocl_mem_alloc, ocl_mem_free,
};
