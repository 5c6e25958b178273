/* Runtime: one loaded backend with one open device. Also the probe behind `vg info`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg_internal.h"

struct vg_runtime {
    vg_plugin plugin; /* handle is NULL for vg_runtime_open_iface */
    vg_backend_iface iface;
    vg_op_table ops;
    vg_bk_device *dev;
    vg_device_info info;
};

void vg_runtime_options_init(vg_runtime_options *opts)
{
    if (!opts) return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->device = -1;
}

/* Open device `index` on a validated table and check the graph members its caps promise. */
static vg_status open_device(vg_runtime *rt, int index, const char *origin)
{
    const vg_backend_iface *b = &rt->iface;
    int count = 0;
    vg_error_clear();
    vg_status st = b->device_count(&count);
    if (st != VG_OK)
        return vg_set_error(st == VG_ERR_NO_DEVICE ? st : VG_ERR_NO_DEVICE,
                            "%s: no device: device_count failed: %s", origin,
                            vg_error_is_set() ? vg_last_error() : vg_status_name(st));
    if (count <= 0) return vg_set_error(VG_ERR_NO_DEVICE, "%s: no device (0 devices)", origin);
    if (index >= count)
        return vg_set_error(VG_ERR_NO_DEVICE, "%s: device %d requested, %d present", origin,
                            index, count);
    vg_error_clear();
    st = b->device_open(index, &rt->dev);
    if (st != VG_OK || !rt->dev) {
        rt->dev = NULL;
        char which[32];
        snprintf(which, sizeof which, index < 0 ? "the default device" : "device %d", index);
        return vg_set_error(st == VG_OK ? VG_ERR_INTERNAL : st,
                            "%s: opening %s failed: %s", origin, which,
                            vg_error_is_set() ? vg_last_error() : "(the backend gave no reason)");
    }
    memset(&rt->info, 0, sizeof rt->info);
    rt->info.struct_size = sizeof rt->info;
    st = b->device_info(rt->dev, &rt->info);
    if (st != VG_OK) {
        vg_error_prefix("%s: device_info failed: ", origin);
        b->device_close(rt->dev);
        rt->dev = NULL;
        return st;
    }
    if (rt->info.caps & VG_CAP_GRAPH) {
        const char *missing = !b->capture_begin       ? "capture_begin"
                              : !b->capture_end       ? "capture_end"
                              : !b->graph_destroy     ? "graph_destroy"
                              : !b->graph_instantiate ? "graph_instantiate"
                              : !b->exec_launch       ? "exec_launch"
                              : !b->exec_destroy      ? "exec_destroy"
                                                      : NULL;
        if (missing) {
            b->device_close(rt->dev);
            rt->dev = NULL;
            return vg_set_error(VG_ERR_ABI,
                                "%s: device reports graph support but mandatory member '%s' is "
                                "NULL", origin, missing);
        }
    }
    if ((rt->info.caps & VG_CAP_GRAPH_UPDATE) && !b->exec_update) {
        vg_log(VG_LOG_WARN, "%s: reports graph update but exec_update is NULL; update disabled",
               origin);
        rt->info.caps &= ~VG_CAP_GRAPH_UPDATE;
    }
    if (!(rt->info.caps & VG_CAP_GRAPH)) rt->info.caps &= ~VG_CAP_GRAPH_UPDATE;
    return VG_OK;
}

static vg_status open_plugin(const char *req, int index, vg_runtime *rt)
{
    vg_status st = vg_plugin_load(req, &rt->plugin, &rt->iface, &rt->ops);
    if (st != VG_OK) return st;
    st = open_device(rt, index, rt->plugin.path);
    if (st != VG_OK) vg_plugin_unload(&rt->plugin);
    return st;
}

vg_status vg_runtime_open(const vg_runtime_options *opts, vg_runtime **out)
{
    if (!out) return vg_set_error(VG_ERR_INVALID_ARG, "vg_runtime_open: out is NULL");
    *out = NULL;
    vg_runtime_options def;
    vg_runtime_options_init(&def);
    if (!opts) opts = &def;
    if (opts->struct_size < sizeof(uint32_t) * 2)
        return vg_set_error(VG_ERR_INVALID_ARG, "vg_runtime_open: options.struct_size not set "
                                                "(call vg_runtime_options_init)");
    vg_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return vg_set_error(VG_ERR_OUT_OF_MEMORY, "vg_runtime_open: out of host memory");

    const char *req = opts->backend;
    if (!req || !*req) req = getenv("VG_BACKEND");
    vg_status st;
    if (req && *req) {
        st = open_plugin(req, opts->device, rt);
    } else {
        /* Auto: the first builtin whose device opens wins; every refusal is kept. */
        char why[6144];
        size_t len = 0;
        why[0] = '\0';
        st = VG_ERR_NO_DEVICE;
        for (int i = 0; i < vg_backend_builtin_count(); i++) {
            const char *name = vg_backend_builtin_name(i);
            st = open_plugin(name, opts->device, rt);
            if (st == VG_OK) {
                vg_log(VG_LOG_INFO, "auto-selected backend '%s' (%s)", name, rt->plugin.path);
                break;
            }
            int n = snprintf(why + len, sizeof why - len, "\n[%s] %s", name, vg_last_error());
            if (n > 0) len = len + (size_t)n < sizeof why ? len + (size_t)n : sizeof why - 1;
            vg_log(VG_LOG_INFO, "auto-selection: backend '%s' not usable: %s", name,
                   vg_last_error());
        }
        if (st != VG_OK)
            vg_set_error(VG_ERR_NO_DEVICE,
                         "no backend usable (VG_BACKEND unset, tried cuda, hip, kunlun_stub):%s",
                         why);
    }
    if (st != VG_OK) {
        free(rt);
        return st;
    }
    *out = rt;
    return VG_OK;
}

vg_status vg_runtime_open_iface(const vg_backend_iface *iface, int device, vg_runtime **out)
{
    if (!out) return vg_set_error(VG_ERR_INVALID_ARG, "vg_runtime_open_iface: out is NULL");
    *out = NULL;
    vg_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return vg_set_error(VG_ERR_OUT_OF_MEMORY, "vg_runtime_open_iface: out of memory");
    vg_status st = vg_iface_validate(iface, "in-process backend", &rt->iface, &rt->ops);
    if (st == VG_OK) st = open_device(rt, device, "in-process backend");
    if (st != VG_OK) {
        free(rt);
        return st;
    }
    *out = rt;
    return VG_OK;
}

vg_status vg_runtime_close(vg_runtime *rt)
{
    if (!rt) return VG_OK;
    vg_status st = VG_OK;
    if (rt->dev) {
        st = rt->iface.device_close(rt->dev);
        if (st != VG_OK) vg_log(VG_LOG_WARN, "device_close failed: %s", vg_last_error());
    }
    vg_plugin_unload(&rt->plugin);
    free(rt);
    return st;
}

const vg_backend_iface *vg_runtime_iface(const vg_runtime *rt) { return rt ? &rt->iface : NULL; }
const vg_op_table *vg_runtime_ops(const vg_runtime *rt) { return rt ? &rt->ops : NULL; }
vg_bk_device *vg_runtime_device(const vg_runtime *rt) { return rt ? rt->dev : NULL; }
const char *vg_runtime_backend_name(const vg_runtime *rt) { return rt ? rt->iface.name : ""; }
const char *vg_runtime_plugin_path(const vg_runtime *rt) { return rt ? rt->plugin.path : ""; }
uint64_t vg_runtime_caps(const vg_runtime *rt) { return rt ? rt->info.caps : 0; }

int vg_runtime_op_capturable(const vg_runtime *rt, vg_op_id op)
{
    if (!rt || (unsigned)op >= 64 || !(rt->info.caps & VG_CAP_GRAPH)) return 0;
    return (rt->info.capturable_ops >> op) & 1u;
}

vg_status vg_runtime_device_info(vg_runtime *rt, vg_device_info *info)
{
    if (!rt || !info) return vg_set_error(VG_ERR_INVALID_ARG, "vg_runtime_device_info: NULL");
    vg_device_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    vg_status st = rt->iface.device_info(rt->dev, &full);
    if (st != VG_OK) return st;
    full.caps = rt->info.caps; /* the caps after the core's own checks */
    vg_backend_copy_out(info, &full);
    return VG_OK;
}

vg_status vg_backend_probe(const char *req, vg_probe_report *r)
{
    if (!r || !req) return vg_set_error(VG_ERR_INVALID_ARG, "vg_backend_probe: NULL argument");
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
            b.device_close(dev);
        } else if (st == VG_OK) {
            st = VG_ERR_INTERNAL;
        }
        r->device_status[i] = st;
        if (st == VG_OK) opened++;
        else if (!r->error[0])
            snprintf(r->error, sizeof r->error, "device %d: %s", i, vg_last_error());
    }
    r->status = opened ? VG_OK : VG_ERR_NO_DEVICE;
    vg_plugin_unload(&p);
    return r->status;
}
