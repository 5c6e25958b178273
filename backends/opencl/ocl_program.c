/* SPDX-License-Identifier: Apache-2.0 */
/* The program of the opencl backend, compiled once per device and process: a context and a built
 * program per cl_device_id, kept in a process-wide cache until the plugin is unloaded. A runner's
 * warm-up, vg info's probes and every later device_open of the same device reuse them, so nothing
 * is compiled twice in a process (docs/opencl.md: across processes, the drivers' own caches, such
 * as PoCL's kcache, keep the binaries). The kernels take every shape as an argument: no shape
 * ever triggers a compilation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ocl_internal.h"

const char *const ocl_kernel_names[OCL_K_COUNT] = {
#define OCL_KERNEL_NAME(n) #n,
    OCL_KERNEL_LIST(OCL_KERNEL_NAME)
#undef OCL_KERNEL_NAME
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ocl_shared *g_cache;
static int g_release_registered;

/* The build log, trimmed to its last `cap` - 1 bytes (the end names the failure). */
static void build_log(cl_program prog, cl_device_id d, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    if (clGetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS || n == 0)
        return;
    char *all = malloc(n + 1);
    if (!all) return;
    if (clGetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_LOG, n, all, NULL) == CL_SUCCESS) {
        all[n] = '\0';
        size_t len = strlen(all), from = len >= cap ? len - (cap - 1) : 0;
        memcpy(buf, all + from, len - from + 1);
    }
    free(all);
}

static vg_status build(cl_platform_id p, cl_device_id d, ocl_shared *sh)
{
    cl_int err = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)p, 0};
    sh->ctx = clCreateContext(props, 1, &d, NULL, NULL, &err);
    if (err != CL_SUCCESS) return ocl_fail(err, "clCreateContext");
    const char *src = ocl_kernel_source;
    sh->prog = clCreateProgramWithSource(sh->ctx, 1, &src, NULL, &err);
    if (err != CL_SUCCESS) return ocl_fail(err, "clCreateProgramWithSource");
    err = clBuildProgram(sh->prog, 1, &d, OCL_BUILD_OPTIONS, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[6144];
        build_log(sh->prog, d, log, sizeof log);
        return OCL_ERR(err == CL_BUILD_PROGRAM_FAILURE ? VG_ERR_UNSUPPORTED : ocl_status(err),
                       "opencl: building the kernels failed: %s (%d); build log:\n%s",
                       ocl_error_name(err), (int)err, log[0] ? log : "(empty)");
    }
    for (int k = 0; k < OCL_K_COUNT; k++) {
        cl_kernel kern = clCreateKernel(sh->prog, ocl_kernel_names[k], &err);
        if (err != CL_SUCCESS) return ocl_fail(err, ocl_kernel_names[k]);
        err = clGetKernelWorkGroupInfo(kern, d, CL_KERNEL_WORK_GROUP_SIZE, sizeof sh->kernel_wg[k],
                                       &sh->kernel_wg[k], NULL);
        clReleaseKernel(kern);
        if (err != CL_SUCCESS) return ocl_fail(err, "clGetKernelWorkGroupInfo");
    }
    return VG_OK;
}

static void release_all(void);

static void release(ocl_shared *sh)
{
    if (sh->prog) clReleaseProgram(sh->prog);
    if (sh->ctx) clReleaseContext(sh->ctx);
    free(sh);
}

vg_status ocl_shared_get(cl_platform_id p, cl_device_id d, ocl_shared **out)
{
    *out = NULL;
    char name[64];
    ocl_device_string(d, CL_DEVICE_NAME, name, sizeof name);
    pthread_mutex_lock(&g_lock);
    for (ocl_shared *sh = g_cache; sh; sh = sh->next)
        if (sh->id == d) {
            pthread_mutex_unlock(&g_lock);
            OCL_LOG(VG_LOG_DEBUG, "opencl: kernels reused for %s (built once per process)", name);
            *out = sh;
            return VG_OK;
        }
    /* built under the lock: two threads opening one device compile it once */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ocl_shared *sh = calloc(1, sizeof *sh);
    vg_status st = sh ? build(p, d, sh) : OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: out of host memory");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st == VG_OK) {
        OCL_LOG(VG_LOG_INFO, "opencl: kernels built for %s in %.0f ms", name,
                (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);
        sh->id = d;
        sh->next = g_cache;
        g_cache = sh;
        *out = sh;
        if (!g_release_registered) g_release_registered = atexit(release_all) == 0;
    } else if (sh) {
        release(sh);
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

/* Registered with atexit() once the driver is loaded, which in a shared object ties it to this
 * plugin: it runs when the plugin is unloaded (dlclose), and at exit before the handlers the
 * driver registered earlier, so the driver is still alive when its objects are released (a
 * destructor would run after the driver's own teardown at exit). */
static void release_all(void)
{
    pthread_mutex_lock(&g_lock);
    while (g_cache) {
        ocl_shared *next = g_cache->next;
        release(g_cache);
        g_cache = next;
    }
    pthread_mutex_unlock(&g_lock);
}
