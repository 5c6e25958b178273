/* SPDX-License-Identifier: Apache-2.0 */
/* Platforms and devices: enumeration across every platform the ICD loader offers, the default
 * device (VG_OPENCL_PLATFORM / VG_OPENCL_DEVICE, else the first GPU or accelerator, else the first
 * device), and OpenCL error codes in words. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

/* CL_PLATFORM_NOT_FOUND_KHR (cl_khr_icd): the ICD loader found no platform */
#define OCL_PLATFORM_NOT_FOUND (-1001)

const char *ocl_error_name(cl_int err)
{
    switch (err) {
#define E(x) case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_BUILD_PROGRAM_FAILURE)
    E(CL_MAP_FAILURE) E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) E(CL_COMPILE_PROGRAM_FAILURE)
    E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE) E(CL_INVALID_VALUE)
    E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
    E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
    E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS)
    E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME)
    E(CL_INVALID_KERNEL_DEFINITION) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX)
    E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS)
    E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE)
    E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT)
    E(CL_INVALID_OPERATION) E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE)
    E(CL_INVALID_PROPERTY)
#undef E
    case OCL_PLATFORM_NOT_FOUND: return "CL_PLATFORM_NOT_FOUND_KHR";
    case -1138: return "CL_INVALID_COMMAND_BUFFER_KHR";
    case -1139: return "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR";
    case -1140: return "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR";
    default: {
        static _Thread_local char buf[32];
        snprintf(buf, sizeof buf, "CL error %d", (int)err);
        return buf;
    }
    }
}

vg_status ocl_status(cl_int err)
{
    switch (err) {
    case CL_SUCCESS: return VG_OK;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_INVALID_BUFFER_SIZE: return VG_ERR_OUT_OF_MEMORY;
    case CL_DEVICE_NOT_FOUND:
    case CL_DEVICE_NOT_AVAILABLE:
    case OCL_PLATFORM_NOT_FOUND: return VG_ERR_NO_DEVICE;
    default: return VG_ERR_DEVICE;
    }
}

vg_status ocl_fail(cl_int err, const char *what)
{
    return OCL_ERR(ocl_status(err), "opencl: %s: %s (%d)", what, ocl_error_name(err), (int)err);
}

/* A string query, truncated to the buffer (a short buffer makes the query itself fail). */
static void info_string(cl_int (*get)(void *, cl_uint, size_t, void *, size_t *), void *obj,
                        cl_uint what, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    if (get(obj, what, 0, NULL, &n) != CL_SUCCESS || n == 0) return;
    char *all = malloc(n + 1);
    if (all && get(obj, what, n, all, NULL) == CL_SUCCESS) {
        all[n] = '\0';
        snprintf(buf, cap, "%s", all);
    }
    free(all);
}

static cl_int get_device(void *o, cl_uint w, size_t n, void *v, size_t *r)
{
    return clGetDeviceInfo((cl_device_id)o, w, n, v, r);
}

static cl_int get_platform(void *o, cl_uint w, size_t n, void *v, size_t *r)
{
    return clGetPlatformInfo((cl_platform_id)o, w, n, v, r);
}

void ocl_device_string(cl_device_id d, cl_device_info what, char *buf, size_t cap)
{
    info_string(get_device, d, what, buf, cap);
}

void ocl_platform_string(cl_platform_id p, cl_platform_info what, char *buf, size_t cap)
{
    info_string(get_platform, p, what, buf, cap);
}

int ocl_has_extension(cl_device_id d, const char *ext)
{
    size_t n = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || n == 0) return 0;
    char *list = malloc(n + 1);
    if (!list) return 0;
    int found = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, n, list, NULL) == CL_SUCCESS) {
        list[n] = '\0';
        size_t len = strlen(ext);
        for (char *at = list; (at = strstr(at, ext)) != NULL; at += len)
            if ((at == list || at[-1] == ' ') && (at[len] == ' ' || at[len] == '\0')) found = 1;
    }
    free(list);
    return found;
}

vg_status ocl_enumerate(ocl_devref **out, int *n)
{
    *out = NULL;
    *n = 0;
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    /* the ICD loader says "no platform" with an error: a machine without OpenCL, not a failure */
    if (err == OCL_PLATFORM_NOT_FOUND || (err == CL_SUCCESS && np == 0)) return VG_OK;
    if (err != CL_SUCCESS) return ocl_fail(err, "clGetPlatformIDs");
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats) return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: out of host memory");
    err = clGetPlatformIDs(np, plats, NULL);
    if (err != CL_SUCCESS) {
        free(plats);
        return ocl_fail(err, "clGetPlatformIDs");
    }
    ocl_devref *devs = NULL;
    int count = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        /* a platform without devices answers CL_DEVICE_NOT_FOUND: skip it */
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0)
            continue;
        cl_device_id *ids = calloc(nd, sizeof *ids);
        ocl_devref *grown = realloc(devs, ((size_t)count + nd) * sizeof *devs);
        if (!ids || !grown) {
            free(ids);
            free(grown ? grown : devs);
            free(plats);
            return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: out of host memory");
        }
        devs = grown;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL) == CL_SUCCESS)
            for (cl_uint d = 0; d < nd; d++) devs[count++] = (ocl_devref){plats[p], ids[d]};
        free(ids);
    }
    free(plats);
    *out = devs;
    *n = count;
    return VG_OK;
}

/* ---- the default device --------------------------------------------------------------------- */

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return 1;
    }
    return n == 0;
}

/* A non-negative decimal index, or -1 when `s` is not one. */
static int as_index(const char *s)
{
    if (!*s) return -1;
    long v = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9' || v > 100000) return -1;
        v = v * 10 + (*c - '0');
    }
    return (int)v;
}

static void platform_label(cl_platform_id p, char *buf, size_t cap)
{
    char name[128], vendor[128];
    ocl_platform_string(p, CL_PLATFORM_NAME, name, sizeof name);
    ocl_platform_string(p, CL_PLATFORM_VENDOR, vendor, sizeof vendor);
    snprintf(buf, cap, "%s (%s)", name, vendor);
}

/* The distinct platforms of the enumeration, in order. */
static int platforms_of(const ocl_devref *devs, int n, cl_platform_id *out, int max)
{
    int np = 0;
    for (int i = 0; i < n; i++)
        if (np == 0 || out[np - 1] != devs[i].platform) {
            if (np == max) break;
            out[np++] = devs[i].platform;
        }
    return np;
}

#define MAX_PLATFORMS 64

int ocl_default_device(const ocl_devref *devs, int n)
{
    const char *penv = ocl_option("VG_OPENCL_PLATFORM"), *denv = ocl_option("VG_OPENCL_DEVICE");
    cl_platform_id plats[MAX_PLATFORMS], chosen = NULL;
    int np = platforms_of(devs, n, plats, MAX_PLATFORMS);
    char label[300], list[2048];
    if (penv && *penv) {
        int idx = as_index(penv);
        for (int p = 0; p < np && !chosen; p++) {
            platform_label(plats[p], label, sizeof label);
            if (idx >= 0 ? p == idx : contains_nocase(label, penv)) chosen = plats[p];
        }
        if (!chosen) {
            list[0] = '\0';
            for (int p = 0; p < np; p++) {
                platform_label(plats[p], label, sizeof label);
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d: %s", p ? "; " : "",
                         p, label);
            }
            ocl_host->set_error(VG_ERR_NO_DEVICE, "opencl: VG_OPENCL_PLATFORM=%s matches no platform with a "
                                      "device (an index, or part of a name); there are: %s",
                    penv, np ? list : "none");
            return -1;
        }
    }
    /* candidates: the chosen platform's devices, or all */
    int first = -1, first_gpu = -1, k = 0, didx = denv && *denv ? as_index(denv) : -1;
    list[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (chosen && devs[i].platform != chosen) continue;
        char name[128];
        ocl_device_string(devs[i].id, CL_DEVICE_NAME, name, sizeof name);
        if (denv && *denv) {
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d: %s", k ? "; " : "", k,
                     name);
            if (didx >= 0 ? k == didx : contains_nocase(name, denv)) return i;
        } else {
            cl_device_type t = 0;
            clGetDeviceInfo(devs[i].id, CL_DEVICE_TYPE, sizeof t, &t, NULL);
            if (first < 0) first = i;
            if (first_gpu < 0 && (t & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR))) first_gpu = i;
        }
        k++;
    }
    if (denv && *denv) {
        const char *where = chosen ? " of the platform VG_OPENCL_PLATFORM names" : "";
        char why[64];
        if (didx >= 0)
            snprintf(why, sizeof why, ": device %d does not exist", didx);
        else
            snprintf(why, sizeof why, " (an index, or part of a name)");
        ocl_host->set_error(VG_ERR_NO_DEVICE, "opencl: VG_OPENCL_DEVICE=%s matches no device%s%s; "
                                              "%d device%s present%s%s",
                            denv, where, why, k, k == 1 ? "" : "s", k ? ": " : "", list);
        return -1;
    }
    if (first < 0) {
        ocl_host->set_error(VG_ERR_NO_DEVICE, "opencl: no OpenCL device found");
        return -1;
    }
    return first_gpu >= 0 ? first_gpu : first;
}
