/* SPDX-License-Identifier: Apache-2.0 */
/* The probe behind `vg info`: load one backend, open and describe each of its devices with the
 * checks a runtime applies, open its default device as a runtime without an index does, unload
 * it. */
#include <stdio.h>
#include <string.h>

#include "vg_internal.h"

/* The report's capturable-op mask from op_caps, for a plugin that answers only through it
 * (ABI 1.1); the mask holds the ops below 64, which today are all of this core's. */
static void probe_capturable(const vg_backend_iface *b, vg_bk_device *dev, vg_device_info *info)
{
    uint64_t mask = 0;
    for (int op = 0; op < VG_OP_COUNT_ && op < 64; op++) {
        vg_op_caps c = {sizeof c, 0, 0};
        if (b->op_caps(dev, (uint32_t)op, &c) == VG_OK &&
            (c.flags & (VG_OP_SUPPORTED | VG_OP_CAPTURABLE)) == (VG_OP_SUPPORTED | VG_OP_CAPTURABLE))
            mask |= 1ull << op;
    }
    info->capturable_ops = (info->caps & VG_CAP_GRAPH) ? mask : 0;
}

vg_status vg_backend_probe(const char *req, vg_probe_report *r)
{
    if (!r || !req) return vg_error_set(VG_ERR_INVALID_ARG, "vg_backend_probe: NULL argument");
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    snprintf(r->request, sizeof r->request, "%s", req);
    vg_plugin p;
    vg_backend_iface b;
    vg_op_table ops;
    vg_status st = vg_plugin_load(req, &p, &b, &ops);
    if (st != VG_OK) {
        r->status = st;
        snprintf(r->error, sizeof r->error, "%s", vg_last_error());
        vg_plugin_unload(&p);
        return st;
    }
    r->loaded = 1;
    snprintf(r->path, sizeof r->path, "%s", p.path);
    snprintf(r->name, sizeof r->name, "%s", b.name);
    snprintf(r->version, sizeof r->version, "%s", b.version);
    r->abi_major = b.abi_major;
    r->abi_minor = b.abi_minor;
    int count = 0;
    vg_error_clear();
    st = b.device_count(&count);
    r->score = vg_iface_score(&b); /* score() is called after device_count */
    if (st != VG_OK || count <= 0) {
        r->status = VG_ERR_NO_DEVICE;
        snprintf(r->error, sizeof r->error, "no device%s%s", vg_error_is_set() ? ": " : "",
                 vg_error_is_set() ? vg_last_error() : "");
        vg_plugin_unload(&p);
        return r->status;
    }
    r->device_count = count;
    int opened = 0;
    for (int i = 0; i < count && i < VG_PROBE_MAX_DEVICES; i++) {
        vg_bk_device *dev = NULL;
        vg_error_clear();
        r->devices[i].struct_size = sizeof r->devices[i];
        r->devices[i].index = i;
        st = b.device_open(i, &dev);
        if (st == VG_OK && dev) {
            st = b.device_info(dev, &r->devices[i]);
            /* the same checks as opening a runtime, so vg info picks what auto-selection picks */
            if (st == VG_OK) st = vg_iface_check_caps(&b, &r->devices[i].caps, r->path);
            if (st == VG_OK && b.op_caps) probe_capturable(&b, dev, &r->devices[i]);
            b.device_close(dev);
        } else if (st == VG_OK) {
            st = VG_ERR_INTERNAL;
        }
        r->device_status[i] = st;
        if (st == VG_OK) opened++;
        else if (!r->error[0])
            snprintf(r->error, sizeof r->error, "device %d: %s", i, vg_last_error());
    }
    /* the device a runtime opens when no index is given: the backend's default, which its
     * environment may name (VG_OPENCL_DEVICE, VG_CUDA_DEVICE) and which may not exist */
    if (opened) {
        vg_bk_device *dev = NULL;
        vg_error_clear();
        st = b.device_open(-1, &dev);
        if (st == VG_OK && dev) {
            b.device_close(dev);
        } else {
            opened = 0;
            snprintf(r->error, sizeof r->error, "the default device: %s",
                     vg_error_is_set() ? vg_last_error() : vg_status_name(st ? st : VG_ERR_INTERNAL));
        }
    }
    r->status = opened ? VG_OK : VG_ERR_NO_DEVICE;
    vg_plugin_unload(&p);
    return r->status;
}
