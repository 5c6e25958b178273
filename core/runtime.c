/* SPDX-License-Identifier: Apache-2.0 */
/* Runtime: one loaded backend with one open device, the per-op capability table built when the
 * device opens, and auto-selection by score when no backend is named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg_internal.h"

void vg_runtime_options_init(vg_runtime_options *opts)
{
    if (!opts) return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->device = -1;
}

/* ---- the per-op table ------------------------------------------------------------------------ */

/* The op table member of each op id: an ABI 1.0 plugin supports an op when it is non-NULL. */
#define MEMBER_AT(ID, value, name, member, dtypes) [value] = offsetof(vg_op_table, member),
static const size_t k_op_member[] = {VG_OP_LIST(MEMBER_AT)};
#undef MEMBER_AT
_Static_assert(sizeof k_op_member / sizeof k_op_member[0] == VG_OP_COUNT_,
               "k_op_member needs one op table member per op id");

static int has_member(const vg_op_table *ops, int op)
{
    return *(const void *const *)((const char *)ops + k_op_member[op]) != NULL;
}

/* Ask op_caps (ABI 1.1) or derive the answer from the op table and capturable_ops (ABI 1.0),
 * once per op this core knows. */
static vg_status build_op_table(vg_runtime *rt, const char *origin)
{
    const vg_backend_iface *b = &rt->iface;
    int graphs = (rt->info.caps & VG_CAP_GRAPH) != 0;
    for (int op = 0; op < VG_OP_COUNT_; op++) {
        uint32_t catalogue = vg_op_catalogue_dtypes((uint32_t)op);
        vg_op_caps c = {sizeof c, 0, 0};
        if (b->op_caps) {
            vg_error_clear();
            vg_status st = b->op_caps(rt->dev, (uint32_t)op, &c);
            if (st != VG_OK) {
                if (!vg_error_is_set()) vg_error_set(st, "(the backend gave no reason)");
                return vg_error_prefix("%s: op_caps(%s) failed: ", origin, vg_op_name((vg_op_id)op));
            }
            c.flags &= VG_OP_SUPPORTED | VG_OP_CAPTURABLE;
        } else if (has_member(&rt->ops, op)) {
            c.flags = VG_OP_SUPPORTED;
            if (op < 64 && ((rt->info.capturable_ops >> op) & 1u)) c.flags |= VG_OP_CAPTURABLE;
        }
        if ((c.flags & VG_OP_SUPPORTED) && !has_member(&rt->ops, op)) {
            vg_log(VG_LOG_WARN, "%s: op_caps reports op '%s' supported, but the op table has no "
                                "member for it: not offered", origin, vg_op_name((vg_op_id)op));
            c.flags = 0;
        }
        /* an option of a member (gemm's gate, its norms; the attention's norm_x) is offered only by a table built
         * knowing it */
        if ((op == VG_OP_GEMM_SILU_GATE || op == VG_OP_GEMM_RMSNORM_A) && rt->ops.version < 6)
            c.flags = 0;
        if (op == VG_OP_GEMM_RMSNORM_A_UNIT && rt->ops.version < 9) c.flags = 0;
        if (op == VG_OP_ROTARY_PAGED_ATTENTION_NORM_X && rt->ops.version < 10) c.flags = 0;
        if (!(c.flags & VG_OP_SUPPORTED) || !graphs) c.flags &= ~VG_OP_CAPTURABLE;
        if (!(c.flags & VG_OP_SUPPORTED)) c.flags = 0;
        rt->op[op].flags = c.flags;
        rt->op[op].dtypes = c.flags ? (c.dtypes ? c.dtypes & catalogue : catalogue) : 0;
        if (op == VG_OP_ROTARY_PAGED_ATTENTION_NORM_X) { /* an option of op 21: never more than it */
            const vg_op_entry *base = &rt->op[VG_OP_ROTARY_PAGED_ATTENTION];
            rt->op[op].flags &= base->flags;
            rt->op[op].dtypes &= base->dtypes;
            if (!rt->op[op].dtypes) rt->op[op].flags = 0;
        }
    }
    return VG_OK;
}

void vg_abi_version(uint32_t *major, uint32_t *minor)
{
    if (major) *major = VG_BACKEND_ABI_MAJOR;
    if (minor) *minor = VG_BACKEND_ABI_MINOR;
}

uint32_t vg_runtime_op_support(const vg_runtime *rt, vg_op_id op, uint32_t *dtypes)
{
    if (!rt || (unsigned)op >= VG_OP_COUNT_) {
        if (dtypes) *dtypes = 0;
        return 0;
    }
    if (dtypes) *dtypes = rt->op[op].dtypes;
    return rt->op[op].flags;
}

int vg_runtime_op_capturable(const vg_runtime *rt, vg_op_id op)
{
    return (vg_runtime_op_support(rt, op, NULL) & VG_OP_CAPTURABLE) != 0;
}

/* ---- opening --------------------------------------------------------------------------------- */

/* Open device `index` on a validated table, check the members its caps promise and build the
 * per-op table. On failure nothing stays open. */
static vg_status open_device(vg_runtime *rt, int index, const char *origin)
{
    const vg_backend_iface *b = &rt->iface;
    int count = 0;
    vg_error_clear();
    vg_status st = b->device_count(&count);
    if (st != VG_OK)
        return vg_error_set(st == VG_ERR_NO_DEVICE ? st : VG_ERR_NO_DEVICE,
                            "%s: no device: device_count failed: %s", origin,
                            vg_error_is_set() ? vg_last_error() : vg_status_name(st));
    if (count <= 0) return vg_error_set(VG_ERR_NO_DEVICE, "%s: no device (0 devices)", origin);
    if (index >= count)
        return vg_error_set(VG_ERR_NO_DEVICE, "%s: device %d requested, %d present", origin,
                            index, count);
    vg_error_clear();
    st = b->device_open(index, &rt->dev);
    if (st != VG_OK || !rt->dev) {
        rt->dev = NULL;
        char which[32];
        snprintf(which, sizeof which, index < 0 ? "the default device" : "device %d", index);
        return vg_error_set(st == VG_OK ? VG_ERR_INTERNAL : st,
                            "%s: opening %s failed: %s", origin, which,
                            vg_error_is_set() ? vg_last_error() : "(the backend gave no reason)");
    }
    memset(&rt->info, 0, sizeof rt->info);
    rt->info.struct_size = sizeof rt->info;
    st = b->device_info(rt->dev, &rt->info);
    if (st != VG_OK) vg_error_prefix("%s: device_info failed: ", origin);
    if (st == VG_OK) st = vg_iface_check_caps(b, &rt->info.caps, origin);
    if (st == VG_OK) st = build_op_table(rt, origin);
    if (st != VG_OK) {
        b->device_close(rt->dev);
        rt->dev = NULL;
        return st;
    }
    rt->score = vg_iface_score(b);
    return VG_OK;
}

/* Load a plugin and open its device with the application's backend options (checked against
 * the names the plugin lists, then seen by it through host->option while the device opens). */
static vg_status open_plugin(const char *req, int index, const vg_option *opts, int nopts,
                             vg_runtime *rt)
{
    vg_status st = vg_plugin_load(req, &rt->plugin, &rt->iface, &rt->ops);
    if (st != VG_OK) return st;
    st = vg_options_check(&rt->iface, opts, nopts, rt->plugin.path);
    if (st == VG_OK) {
        vg_options_set_pending(opts, nopts);
        st = open_device(rt, index, rt->plugin.path);
        vg_options_set_pending(NULL, 0);
    }
    if (st != VG_OK) vg_plugin_unload(&rt->plugin);
    return st;
}

/* Close the device and unload the plugin, keeping the struct. */
static vg_status shut(vg_runtime *rt)
{
    vg_status st = VG_OK;
    if (rt->dev) {
        st = rt->iface.device_close(rt->dev);
        if (st != VG_OK) vg_log(VG_LOG_WARN, "device_close failed: %s", vg_last_error());
        rt->dev = NULL;
    }
    vg_plugin_unload(&rt->plugin);
    return st;
}

/* Auto-selection: every candidate is loaded and its device opened; the usable one with the
 * highest score wins, ties going to the earlier. Every refusal is kept for the message. */
static vg_status open_auto(int index, const vg_option *opts, int nopts, vg_runtime **out)
{
    char **cand = NULL;
    int n = vg_candidates_list(&cand);
    if (n < 0) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "auto-selection: out of host memory");
    size_t cap = 16384, len = 0;
    char *why = malloc(cap);
    vg_runtime *best = NULL, *rt = NULL;
    vg_status st = why ? VG_OK : VG_ERR_OUT_OF_MEMORY;
    if (why) why[0] = '\0';
    for (int i = 0; st == VG_OK && i < n; i++) {
        if (!rt && !(rt = calloc(1, sizeof *rt))) {
            st = VG_ERR_OUT_OF_MEMORY;
            break;
        }
        if (open_plugin(cand[i], index, opts, nopts, rt) != VG_OK) {
            /* a path candidate's message repeats its path: "[path] reason" is enough */
            const char *msg = vg_last_error(), *tried = strstr(msg, "; tried:\n  ");
            size_t clen = strlen(cand[i]);
            if (tried && strncmp(tried + 11, cand[i], clen) == 0 && tried[11 + clen] == ':' &&
                !strchr(tried + 11, '\n'))
                msg = tried + 11 + clen + 2;
            else if (strncmp(msg, cand[i], clen) == 0 && msg[clen] == ':')
                msg += clen + 2;
            int k = snprintf(why + len, cap - len, "\n[%s] %s", cand[i], msg);
            if (k > 0) len = len + (size_t)k < cap ? len + (size_t)k : cap - 1;
            vg_log(VG_LOG_INFO, "auto-selection: backend '%s' not usable: %s", cand[i],
                   vg_last_error());
            memset(rt, 0, sizeof *rt);
            continue;
        }
        vg_log(VG_LOG_INFO, "auto-selection: backend '%s' (%s) is usable, score %d", rt->iface.name,
               rt->plugin.path, (int)rt->score);
        if (!best || rt->score > best->score) {
            vg_runtime *loser = best;
            best = rt;
            rt = loser;
        }
        if (rt) { /* the loser: close it, reuse the struct */
            shut(rt);
            memset(rt, 0, sizeof *rt);
        }
    }
    free(rt);
    if (st == VG_OK && best) {
        vg_log(VG_LOG_INFO, "auto-selected backend '%s' (%s), score %d", best->iface.name,
               best->plugin.path, (int)best->score);
        *out = best;
    } else if (st == VG_OK) {
        st = vg_error_set(VG_ERR_NO_DEVICE,
                          "no backend usable (VG_BACKEND unset; tried the builtins cuda, hip, opencl, "
                          "kunlun_stub and %d plugin%s on VG_BACKEND_PATH):%s",
                          n - vg_backend_builtin_count(),
                          n - vg_backend_builtin_count() == 1 ? "" : "s", why);
    } else {
        if (best) {
            shut(best);
            free(best);
        }
        vg_error_set(st, "auto-selection: out of host memory");
    }
    free(why);
    vg_candidates_free(cand, n);
    return st;
}

vg_status vg_runtime_open(const vg_runtime_options *opts, vg_runtime **out)
{
    if (!out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_runtime_open: out is NULL");
    *out = NULL;
    vg_runtime_options def;
    vg_runtime_options_init(&def);
    if (!opts) opts = &def;
    if (opts->struct_size < sizeof(uint32_t) * 2)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runtime_open: options.struct_size not set "
                                                "(call vg_runtime_options_init)");
    /* the options are members appended to the struct: an older caller's struct has none */
    const vg_option *bopts = NULL;
    int nopts = 0;
    if (opts->struct_size >= offsetof(vg_runtime_options, num_options) + sizeof(int)) {
        bopts = opts->options;
        nopts = opts->num_options;
    }
    const char *req = opts->backend;
    if (!req || !*req) req = getenv("VG_BACKEND");
    vg_status st;
    if (!req || !*req) {
        st = open_auto(opts->device, bopts, nopts, out);
    } else {
        vg_runtime *rt = calloc(1, sizeof *rt);
        if (!rt) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_runtime_open: out of host memory");
        st = open_plugin(req, opts->device, bopts, nopts, rt);
        if (st != VG_OK) free(rt);
        else *out = rt;
    }
    if (st == VG_OK) vg_native_runtime_init(*out);
    return st;
}

vg_status vg_runtime_open_iface(const vg_backend_iface *iface, int device, vg_runtime **out)
{
    if (!out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_runtime_open_iface: out is NULL");
    *out = NULL;
    vg_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_runtime_open_iface: out of memory");
    vg_status st = vg_iface_validate(iface, "in-process backend", &rt->iface, &rt->ops);
    if (st == VG_OK) st = open_device(rt, device, "in-process backend");
    if (st != VG_OK) {
        free(rt);
        return st;
    }
    vg_native_runtime_init(rt);
    *out = rt;
    return VG_OK;
}

vg_status vg_runtime_close(vg_runtime *rt)
{
    if (!rt) return VG_OK;
    vg_ipc_runtime_closing(rt);
    vg_native_runtime_fini(rt);
    vg_status st = shut(rt);
    free(rt);
    return st;
}

const char *vg_runtime_backend_name(const vg_runtime *rt) { return rt ? rt->iface.name : ""; }
const char *vg_runtime_plugin_path(const vg_runtime *rt) { return rt ? rt->plugin.path : ""; }
uint64_t vg_runtime_caps(const vg_runtime *rt) { return rt ? rt->info.caps : 0; }

vg_status vg_runtime_device_info(vg_runtime *rt, vg_device_info *info)
{
    if (!rt || !info) return vg_error_set(VG_ERR_INVALID_ARG, "vg_runtime_device_info: NULL");
    vg_device_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    vg_status st = rt->iface.device_info(rt->dev, &full);
    if (st != VG_OK) return st;
    full.caps = rt->info.caps; /* the caps after the core's own checks */
    vg_backend_copy_out(info, &full);
    return VG_OK;
}
