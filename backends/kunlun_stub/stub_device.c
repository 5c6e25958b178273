/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub devices: configuration read at open, honest capability bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stub_internal.h"

vg_status stub_device_count(int *count)
{
    if (!count) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: device_count: NULL");
    stub_config cfg;
    stub_config_load(&cfg);
    *count = cfg.devices;
    return VG_OK;
}

vg_status stub_device_open(int index, vg_bk_device **out)
{
    if (!out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: device_open: out is NULL");
    *out = NULL;
    stub_config cfg;
    stub_config_load(&cfg);
    if (index < 0) index = 0;
    if (index >= cfg.devices)
        return STUB_ERR(VG_ERR_NO_DEVICE, "kunlun_stub: device %d does not exist (%d present)",
                        index, cfg.devices);
    vg_bk_device *dev = calloc(1, sizeof *dev);
    if (!dev) return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: out of host memory");
    dev->index = index;
    dev->cfg = cfg;
    pthread_mutex_init(&dev->lock, NULL);
    if (stub_fault_hit(dev, STUB_FAULT_DEVICE_OPEN)) {
        pthread_mutex_destroy(&dev->lock);
        free(dev);
        return STUB_ERR(VG_ERR_DEVICE, "kunlun_stub: device %d failed to open (injected fault)",
                        index);
    }
    *out = dev;
    return VG_OK;
}

vg_status stub_device_close(vg_bk_device *dev)
{
    if (!dev) return VG_OK;
    if (dev->nallocs)
        STUB_LOG(VG_LOG_WARN, "kunlun_stub: device %d closed with %zu allocations (%llu bytes) "
                              "still live; releasing them", dev->index, dev->nallocs,
                 (unsigned long long)dev->used);
    for (size_t i = 0; i < dev->nallocs; i++) {
        if (dev->allocs[i].shared) stub_ipc_release(&dev->allocs[i]);
        else free(dev->allocs[i].ptr);
    }
    if (dev->nimports)
        STUB_LOG(VG_LOG_WARN, "kunlun_stub: device %d closed with %zu IPC mappings still open; "
                              "closing them", dev->index, dev->nimports);
    while (dev->nimports) stub_ipc_close(dev, dev->imports[dev->nimports - 1].ptr);
    free(dev->imports);
    if (dev->nregs)
        STUB_LOG(VG_LOG_WARN, "kunlun_stub: device %d closed with %zu registrations of caller "
                              "memory; forgetting them", dev->index, dev->nregs);
    free(dev->regs);
    free(dev->streams);
    for (size_t i = 0; i < dev->nquarantine; i++) free(dev->quarantine[i].ptr);
    free(dev->allocs);
    free(dev->quarantine);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
    return VG_OK;
}

int stub_op_capturable(const vg_bk_device *dev, int op)
{
    return op >= 0 && op < STUB_OP_COUNT && !dev->cfg.nocapture[op];
}

/* ABI 1.1: per-op capabilities. Every op the stub implements is supported unless VG_STUB_CAPS
 * says noop:<op> (a device without it: the models' fallbacks are tested so); it is capturable
 * when the device has graphs and VG_STUB_CAPS did not say nocapture:<op>. The core asks once per
 * op when it opens the device. */
vg_status stub_op_caps(vg_bk_device *dev, uint32_t op, vg_op_caps *out)
{
    if (!dev || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: op_caps: NULL");
    /* every op the stub implements (STUB_OP_COUNT, not VG_OP_COUNT_: an op appended to the
     * catalogue is not offered until it is written), in every dtype the catalogue allows */
    out->flags = 0;
    out->dtypes = 0;
    if (op < STUB_OP_COUNT && !dev->cfg.noop[op]) {
        out->flags = VG_OP_SUPPORTED;
        if ((dev->cfg.caps & VG_CAP_GRAPH) && stub_op_capturable(dev, (int)op))
            out->flags |= VG_OP_CAPTURABLE;
    }
    return VG_OK;
}

vg_status stub_device_info(vg_bk_device *dev, vg_device_info *info)
{
    if (!dev || !info) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: device_info: NULL");
    vg_device_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    snprintf(full.name, sizeof full.name, "kunlun_stub host-CPU device %d", dev->index);
    pthread_mutex_lock(&dev->lock);
    full.mem_total = dev->cfg.capacity;
    full.mem_free = dev->cfg.capacity > dev->used ? dev->cfg.capacity - dev->used : 0;
    pthread_mutex_unlock(&dev->lock);
    full.caps = dev->cfg.caps;
    for (uint32_t op = 0; op < 64; op++) { /* for ABI 1.0 consumers; op_caps says the same */
        vg_op_caps c = {sizeof c, 0, 0};
        if (stub_op_caps(dev, op, &c) == VG_OK && (c.flags & VG_OP_CAPTURABLE))
            full.capturable_ops |= 1ull << op;
    }
    full.compute_units = (int32_t)sysconf(_SC_NPROCESSORS_ONLN);
    full.index = dev->index;
    vg_backend_copy_out(info, &full);
    return VG_OK;
}
