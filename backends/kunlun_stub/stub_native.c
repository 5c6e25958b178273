/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub, ABI 1.3: native handles. The stub's device is the host, so its native objects are
 * its own: a stream object (what stream_create returns) and host memory. A vendor replaces each
 * member with its runtime's objects: the queue, the device/context, and a check that memory
 * belongs to the device. The stub captures only its own commands, so it does not report
 * VG_CAP_FOREIGN_CAPTURE: foreign work on its streams runs at once, on the calling thread. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stub_internal.h"

/* The knobs stub_config.c reads through stub_option (named options or the environment). */
const char *const stub_option_names[] = {
    "VG_STUB_DEVICES", "VG_STUB_MEM_CAPACITY", "VG_STUB_QUARANTINE", "VG_STUB_POISON",
    "VG_STUB_LAUNCH_US", "VG_STUB_CAPS", "VG_STUB_FAULT", NULL,
};

vg_status stub_native_device(vg_bk_device *dev, vg_native_device *out)
{
    if (!dev || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: native_device: NULL");
    out->api = VG_NATIVE_HOST;
    out->ordinal = dev->index;
    out->platform = out->device = out->context = NULL;
    return VG_OK;
}

vg_status stub_stream_native(vg_bk_device *dev, vg_bk_stream *s, void **out)
{
    if (!dev || !s || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: stream_native: NULL");
    *out = s->wraps ? s->wraps : s;
    return VG_OK;
}

void stub_stream_unlist(vg_bk_device *dev, vg_bk_stream *s)
{
    pthread_mutex_lock(&dev->lock);
    for (size_t i = 0; i < dev->nstreams; i++)
        if (dev->streams[i] == s) {
            dev->streams[i] = dev->streams[--dev->nstreams];
            break;
        }
    pthread_mutex_unlock(&dev->lock);
}

vg_status stub_stream_wrap(vg_bk_device *dev, void *native, vg_bk_stream **out)
{
    if (!dev || !native || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: stream_wrap: NULL");
    *out = NULL;
    int live = 0;
    pthread_mutex_lock(&dev->lock);
    for (size_t i = 0; i < dev->nstreams && !live; i++) live = dev->streams[i] == native;
    pthread_mutex_unlock(&dev->lock);
    if (!live)
        return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: stream_wrap(%p): not a live stream of "
                                            "device %d", native, dev->index);
    vg_bk_stream *s = calloc(1, sizeof *s);
    if (!s) return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: stream_wrap: out of memory");
    s->dev = dev;
    s->wraps = native;
    *out = s;
    return VG_OK;
}

/* How [p, p + bytes) relates to the ranges of a table: 1 inside one (*base, *len of that one),
 * -1 overlapping one without fitting in it, 0 apart from all. */
static int locate(const char *p, size_t bytes, const void *table, size_t n, size_t stride,
                  const char **base, size_t *len)
{
    for (size_t i = 0; i < n; i++) {
        const char *entry = (const char *)table + i * stride;
        const char *b = *(char *const *)entry;
        size_t l = *(const size_t *)(entry + sizeof(void *));
        if (p + bytes <= b || p >= b + l) continue;
        if (p >= b && bytes <= l && (size_t)(p - b) <= l - bytes) {
            *base = b;
            *len = l;
            return 1;
        }
        *base = b;
        *len = l;
        return -1;
    }
    return 0;
}

/* stub_alloc, stub_region and stub_import all begin with a pointer and a byte count. */
_Static_assert(offsetof(stub_alloc, bytes) == sizeof(void *), "stub_alloc layout");
_Static_assert(offsetof(stub_region, bytes) == sizeof(void *), "stub_region layout");
_Static_assert(offsetof(stub_import, bytes) == sizeof(void *), "stub_import layout");

vg_status stub_mem_native(vg_bk_device *dev, const void *ptr, vg_native_mem *out)
{
    if (!dev || !ptr || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: mem_native: NULL");
    const char *base = NULL;
    size_t len = 0;
    pthread_mutex_lock(&dev->lock);
    int in = locate(ptr, 1, dev->allocs, dev->nallocs, sizeof(stub_alloc), &base, &len) == 1 ||
             locate(ptr, 1, dev->regs, dev->nregs, sizeof(stub_region), &base, &len) == 1 ||
             locate(ptr, 1, dev->imports, dev->nimports, sizeof(stub_import), &base, &len) == 1;
    pthread_mutex_unlock(&dev->lock);
    if (!in)
        return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: mem_native(%p): not inside an "
                                            "allocation, registration or IPC mapping of device %d",
                        ptr, dev->index);
    out->handle = (void *)ptr;
    out->offset = 0;
    out->bytes = len - (size_t)((const char *)ptr - base);
    return VG_OK;
}

/* Host memory is this device's memory, but a range that straddles an allocation's end, or lies
 * in freed memory the stub still holds poisoned, is a caller's mistake: refused. */
vg_status stub_mem_register(vg_bk_device *dev, void *native, size_t bytes, void **out)
{
    if (!dev || !native || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: mem_register: NULL");
    *out = NULL;
    if ((uintptr_t)native > UINTPTR_MAX - bytes)
        return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: mem_register(%p, %zu bytes): the range "
                                            "wraps around the address space", native, bytes);
    const char *base = NULL;
    size_t len = 0;
    pthread_mutex_lock(&dev->lock);
    int alloc = locate(native, bytes, dev->allocs, dev->nallocs, sizeof(stub_alloc), &base, &len);
    int freed = alloc ? 0 : locate(native, bytes, dev->quarantine, dev->nquarantine,
                                   sizeof(stub_alloc), &base, &len);
    vg_status st = VG_OK;
    if (alloc < 0)
        st = STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: mem_register(%p, %zu bytes): the range "
                                          "runs past the end of allocation %p (%zu bytes)",
                      native, bytes, (const void *)base, len);
    else if (freed)
        st = STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: mem_register(%p, %zu bytes): the range "
                                          "lies in freed device memory (allocation %p)",
                      native, bytes, (const void *)base);
    else if (stub_grow((void **)&dev->regs, &dev->cap_regs, dev->nregs + 1, sizeof(stub_region)))
        st = STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: mem_register: out of host memory");
    else
        dev->regs[dev->nregs++] = (stub_region){native, bytes};
    pthread_mutex_unlock(&dev->lock);
    if (st == VG_OK) *out = native;
    return st;
}

vg_status stub_mem_unregister(vg_bk_device *dev, void *ptr)
{
    if (!dev || !ptr) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: mem_unregister: NULL");
    pthread_mutex_lock(&dev->lock);
    for (size_t i = dev->nregs; i-- > 0;)
        if (dev->regs[i].ptr == ptr) {
            memmove(&dev->regs[i], &dev->regs[i + 1], (dev->nregs - i - 1) * sizeof(stub_region));
            dev->nregs--;
            pthread_mutex_unlock(&dev->lock);
            return VG_OK;
        }
    pthread_mutex_unlock(&dev->lock);
    return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: mem_unregister(%p): not a registration of "
                                        "device %d", ptr, dev->index);
}
