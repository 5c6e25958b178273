/* SPDX-License-Identifier: Apache-2.0 */
/* opencl memory: cl_mem buffers under fake device addresses.
 *
 * The core and models compute `base + offset` on device addresses; an OpenCL buffer has no
 * address. So each allocation reserves an address range of its size with mmap(PROT_NONE): the
 * kernel hands out unique, page-aligned ranges that never overlap host memory or each other, and
 * a host dereference of one faults at once. A sorted table maps any address inside a range back
 * to (cl_mem, byte offset), which is how every op, copy and fill binds its buffers (kernels take a
 * base and an offset; OpenCL's sub-buffers would need offsets aligned to
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN, which element-aligned views of vg's are not). docs/opencl.md
 * weighs this against SVM. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ocl_internal.h"

/* Index of the allocation holding address a, or -1. Caller holds mem_lock. */
static long find_locked(const vg_bk_device *dev, uintptr_t a)
{
    size_t lo = 0, hi = dev->nallocs;
    while (lo < hi) { /* the first allocation starting after a */
        size_t mid = (lo + hi) / 2;
        if (dev->allocs[mid].addr <= a) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return -1;
    const ocl_alloc *x = &dev->allocs[lo - 1];
    return a - x->addr < x->bytes ? (long)(lo - 1) : -1;
}

int ocl_find(vg_bk_device *dev, const void *p, cl_mem *mem, size_t *offset)
{
    pthread_rwlock_rdlock(&dev->mem_lock);
    long i = find_locked(dev, (uintptr_t)p);
    if (i >= 0) {
        *mem = dev->allocs[i].mem;
        *offset = (uintptr_t)p - dev->allocs[i].addr;
    }
    pthread_rwlock_unlock(&dev->mem_lock);
    return i >= 0;
}

vg_status ocl_resolve(vg_bk_device *dev, const void *p, size_t bytes, const char *what, cl_mem *mem,
                      size_t *offset)
{
    uintptr_t a = (uintptr_t)p;
    pthread_rwlock_rdlock(&dev->mem_lock);
    long i = find_locked(dev, a);
    if (i >= 0) {
        const ocl_alloc *x = &dev->allocs[i];
        size_t off = a - x->addr;
        if (bytes <= x->bytes - off) {
            *mem = x->mem;
            *offset = off;
            pthread_rwlock_unlock(&dev->mem_lock);
            return VG_OK;
        }
        size_t have = x->bytes - off;
        pthread_rwlock_unlock(&dev->mem_lock);
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: %s: %zu bytes from %p run past the end of its "
                                           "allocation (%zu bytes left)", what, bytes, p, have);
    }
    pthread_rwlock_unlock(&dev->mem_lock);
    return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: %s: %p is not an address inside a live allocation "
                                       "of this device", what, p);
}

vg_status ocl_mem_alloc(vg_bk_device *dev, size_t bytes, void **out)
{
    if (!dev || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: mem_alloc: NULL");
    *out = NULL;
    if (bytes == 0) bytes = 1;
    if (bytes > dev->max_alloc)
        return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: mem_alloc of %zu bytes: more than the largest "
                                             "buffer %s allows (CL_DEVICE_MAX_MEM_ALLOC_SIZE %llu)",
                       bytes, dev->name, (unsigned long long)dev->max_alloc);
    pthread_rwlock_wrlock(&dev->mem_lock); /* reserve first: concurrent allocations see it */
    if (bytes > dev->mem_total - dev->used) {
        uint64_t used = dev->used;
        pthread_rwlock_unlock(&dev->mem_lock);
        return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: out of device memory: mem_alloc of %zu bytes, "
                                             "%llu of %llu in use", bytes, (unsigned long long)used,
                       (unsigned long long)dev->mem_total);
    }
    dev->used += bytes;
    pthread_rwlock_unlock(&dev->mem_lock);
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(dev->sh->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    vg_status st = err == CL_SUCCESS ? ocl_mem_name(dev, mem, bytes, 0, out)
                                     : ocl_fail(err, "mem_alloc: clCreateBuffer");
    if (st != VG_OK) {
        pthread_rwlock_wrlock(&dev->mem_lock);
        dev->used -= bytes;
        pthread_rwlock_unlock(&dev->mem_lock);
        if (mem) clReleaseMemObject(mem);
    }
    return st;
}

vg_status ocl_mem_name(vg_bk_device *dev, cl_mem mem, size_t bytes, int registered, void **out)
{
    vg_status st = VG_OK;
    void *addr = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (addr == MAP_FAILED)
        return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: no address range of %zu bytes left to name "
                                             "a buffer", bytes);
    pthread_rwlock_wrlock(&dev->mem_lock);
    if (dev->nallocs == dev->cap_allocs) {
        size_t cap = dev->cap_allocs ? 2 * dev->cap_allocs : 64;
        ocl_alloc *grown = realloc(dev->allocs, cap * sizeof *grown);
        if (grown) dev->allocs = grown, dev->cap_allocs = cap;
        else st = OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: allocation table full");
    }
    if (st == VG_OK) {
        uintptr_t a = (uintptr_t)addr;
        size_t at = dev->nallocs;
        while (at > 0 && dev->allocs[at - 1].addr > a) at--;
        memmove(dev->allocs + at + 1, dev->allocs + at, (dev->nallocs - at) * sizeof *dev->allocs);
        dev->allocs[at] = (ocl_alloc){a, bytes, mem, registered};
        dev->nallocs++;
    }
    pthread_rwlock_unlock(&dev->mem_lock);
    if (st != VG_OK) {
        munmap(addr, bytes);
        return st;
    }
    *out = addr;
    return VG_OK;
}

/* Drop the table entry whose range starts at ptr, if it is an allocation (registered 0) or a
 * registration (1) as asked; the caller releases x->mem. */
vg_status ocl_mem_unname(vg_bk_device *dev, void *ptr, int registered, ocl_alloc *x)
{
    pthread_rwlock_wrlock(&dev->mem_lock);
    long i = find_locked(dev, (uintptr_t)ptr);
    if (i < 0 || dev->allocs[i].addr != (uintptr_t)ptr || dev->allocs[i].registered != registered) {
        int other = i >= 0 && dev->allocs[i].addr == (uintptr_t)ptr;
        pthread_rwlock_unlock(&dev->mem_lock);
        if (other)
            return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: %s(%p): %s", registered ? "mem_unregister"
                                                                               : "mem_free", ptr,
                           registered ? "an allocation, not a registration (free it instead)"
                                      : "registered caller memory, not an allocation (unregister "
                                        "it instead)");
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: %s(%p): not a live %s of this device (%s)",
                       registered ? "mem_unregister" : "mem_free", ptr,
                       registered ? "registration" : "allocation",
                       registered ? "unregistered twice, or never registered"
                                  : "double free or foreign pointer");
    }
    *x = dev->allocs[i];
    memmove(dev->allocs + i, dev->allocs + i + 1, (dev->nallocs - (size_t)i - 1) * sizeof *dev->allocs);
    dev->nallocs--;
    if (!registered) dev->used -= x->bytes;
    pthread_rwlock_unlock(&dev->mem_lock);
    munmap((void *)x->addr, x->bytes);
    return VG_OK;
}

vg_status ocl_mem_free(vg_bk_device *dev, void *ptr)
{
    if (!dev) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: mem_free: NULL device");
    if (!ptr) return VG_OK;
    ocl_alloc x;
    vg_status st = ocl_mem_unname(dev, ptr, 0, &x);
    if (st == VG_OK) clReleaseMemObject(x.mem); /* the driver keeps it until its work completes */
    return st;
}

void ocl_mem_release_all(vg_bk_device *dev)
{
    if (dev->nallocs)
        OCL_LOG(VG_LOG_WARN, "opencl: device %d closed with %zu allocations and registrations "
                             "(%llu bytes allocated) still live; releasing them", dev->index,
                dev->nallocs, (unsigned long long)dev->used);
    for (size_t i = 0; i < dev->nallocs; i++) {
        clReleaseMemObject(dev->allocs[i].mem);
        munmap((void *)dev->allocs[i].addr, dev->allocs[i].bytes);
    }
    free(dev->allocs);
    dev->allocs = NULL;
    dev->nallocs = dev->cap_allocs = 0;
    dev->used = 0;
}

vg_status ocl_host_alloc(vg_bk_device *dev, size_t bytes, void **out)
{
    if (!dev || !out) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: host_alloc: NULL");
    *out = aligned_alloc(64, ocl_round_up(bytes ? bytes : 1, 64));
    if (!*out)
        return OCL_ERR(VG_ERR_OUT_OF_MEMORY, "opencl: host_alloc of %zu bytes failed", bytes);
    return VG_OK;
}

vg_status ocl_host_free(vg_bk_device *dev, void *ptr)
{
    (void)dev;
    free(ptr);
    return VG_OK;
}

/* ---- copies and fills: stream commands ------------------------------------------------------ */

/* Host transfers cannot be recorded: cl_khr_command_buffer has no command for them. */
static vg_status host_transfer_gate(vg_bk_stream *s, const char *what)
{
    if (s->capture == OCL_CAPTURE_NONE) return VG_OK;
    if (s->capture == OCL_CAPTURE_ACTIVE) {
        char why[160];
        snprintf(why, sizeof why, "%s cannot be recorded into an OpenCL command buffer "
                                  "(cl_khr_command_buffer has no host transfer command)", what);
        ocl_capture_invalidate(s, why);
    }
    return OCL_ERR(VG_ERR_CAPTURE, "opencl: %s on a capturing stream: %s; the capture is "
                                   "invalidated", what, s->capture_error);
}

vg_status ocl_copy_h2d(vg_bk_device *dev, vg_bk_stream *s, void *dst, const void *src, size_t n)
{
    if (!dev || !s || ((!dst || !src) && n))
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: copy_h2d: NULL argument");
    if (!n) return VG_OK;
    vg_status st = host_transfer_gate(s, "copy_h2d");
    cl_mem mem;
    size_t off;
    if (st == VG_OK) st = ocl_resolve(dev, dst, n, "copy_h2d: dst", &mem, &off);
    if (st != VG_OK) return st;
    cl_int err = clEnqueueWriteBuffer(s->q, mem, CL_FALSE, off, n, src, 0, NULL, NULL);
    return err == CL_SUCCESS ? VG_OK : ocl_fail(err, "copy_h2d: clEnqueueWriteBuffer");
}

vg_status ocl_copy_d2h(vg_bk_device *dev, vg_bk_stream *s, void *dst, const void *src, size_t n)
{
    if (!dev || !s || ((!dst || !src) && n))
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: copy_d2h: NULL argument");
    if (!n) return VG_OK;
    vg_status st = host_transfer_gate(s, "copy_d2h");
    cl_mem mem;
    size_t off;
    if (st == VG_OK) st = ocl_resolve(dev, src, n, "copy_d2h: src", &mem, &off);
    if (st != VG_OK) return st;
    cl_int err = clEnqueueReadBuffer(s->q, mem, CL_FALSE, off, n, dst, 0, NULL, NULL);
    return err == CL_SUCCESS ? VG_OK : ocl_fail(err, "copy_d2h: clEnqueueReadBuffer");
}

vg_status ocl_copy_d2d(vg_bk_device *dev, vg_bk_stream *s, void *dst, const void *src, size_t n)
{
    if (!dev || !s || ((!dst || !src) && n))
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: copy_d2d: NULL argument");
    if (!n) return VG_OK;
    cl_mem dmem, smem;
    size_t doff, soff;
    vg_status st = ocl_resolve(dev, dst, n, "copy_d2d: dst", &dmem, &doff);
    if (st == VG_OK) st = ocl_resolve(dev, src, n, "copy_d2d: src", &smem, &soff);
    if (st != VG_OK) return st;
    if (dmem == smem && doff < soff + n && soff < doff + n)
        return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: copy_d2d: the %zu bytes at %p and at %p "
                                           "overlap", n, dst, src);
    if (s->capture != OCL_CAPTURE_NONE) { /* recorded as a kernel (kernels/memory.cl says why) */
        size_t global = (n + OCL_BYTES_PER_ITEM - 1) / OCL_BYTES_PER_ITEM, local = OCL_WG;
        ocl_arg a[] = {OA_PTR(dst), OA_PTR(src), OA_I64(n)};
        return ocl_launch(s, OCL_K_copy_bytes, "copy_d2d", 1, &global, &local, 3, a);
    }
    cl_int err = clEnqueueCopyBuffer(s->q, smem, dmem, soff, doff, n, 0, NULL, NULL);
    return err == CL_SUCCESS ? VG_OK : ocl_fail(err, "copy_d2d: clEnqueueCopyBuffer");
}

vg_status ocl_memset(vg_bk_device *dev, vg_bk_stream *s, void *dst, int value, size_t n)
{
    if (!dev || !s || (!dst && n)) return OCL_ERR(VG_ERR_INVALID_ARG, "opencl: memset: NULL argument");
    if (!n) return VG_OK;
    cl_mem mem;
    size_t off;
    vg_status st = ocl_resolve(dev, dst, n, "memset: dst", &mem, &off);
    if (st != VG_OK) return st;
    if (s->capture != OCL_CAPTURE_NONE) { /* recorded as a kernel (kernels/memory.cl says why) */
        size_t global = (n + OCL_BYTES_PER_ITEM - 1) / OCL_BYTES_PER_ITEM, local = OCL_WG;
        ocl_arg a[] = {OA_PTR(dst), OA_I64(n), OA_I32(value & 0xff)};
        return ocl_launch(s, OCL_K_memset_bytes, "memset", 1, &global, &local, 3, a);
    }
    unsigned char byte = (unsigned char)value;
    cl_int err = clEnqueueFillBuffer(s->q, mem, &byte, 1, off, n, 0, NULL, NULL);
    return err == CL_SUCCESS ? VG_OK : ocl_fail(err, "memset: clEnqueueFillBuffer");
}
