/* SPDX-License-Identifier: Apache-2.0 */
/* What every model does around its pieces (model_base.h). */
#include "model_base.h"

#include <string.h>

#include "util.h"

vg_status vgm_runner_make(vg_runtime *rt, const vg_model_iface *iface, const vgm_graph_opts *o,
                          const vg_batch_desc *warm_like, vg_runner **out)
{
    vg_runner_options ro;
    vg_runner_options_init(&ro);
    ro.mode = o->mode;
    ro.capture_sizes = o->num_sizes ? o->sizes : NULL;
    ro.num_capture_sizes = o->num_sizes;
    ro.max_capture_size = o->max_capture_size;
    ro.eager_first = 1;
    ro.profile_pieces = o->profile_pieces;
    vg_status st = vg_runner_create(rt, iface, &ro, out);
    if (st == VG_OK && o->warmup) st = vg_runner_warmup(*out, warm_like, NULL, NULL);
    return st;
}

vg_status vgm_sizes_copy(const char *what, const int64_t *src, int n, int64_t *dst, int cap,
                         int *num)
{
    if (n < 0 || n > cap) return vg_error_set(VG_ERR_INVALID_ARG, "%s: at most %d capture sizes", what, cap);
    *num = src ? n : 0;
    if (*num) memcpy(dst, src, (size_t)n * sizeof *dst);
    return VG_OK;
}

vg_status vgm_stage_reserve(vg_runtime *rt, void **stage, size_t *have, size_t bytes)
{
    if (bytes <= *have) return VG_OK;
    if (*stage) vg_host_free(rt, *stage);
    *stage = NULL;
    *have = 0;
    size_t want = bytes + bytes / 4;
    VGM_TRY(vg_host_alloc(rt, want, stage));
    *have = want;
    return VG_OK;
}

vg_status vgm_options_check(const char *fn, uint32_t struct_size, size_t need, const char *init,
                            vg_graph_mode mode)
{
    if (struct_size < need)
        return vg_error_set(VG_ERR_INVALID_ARG, "%s: options.struct_size not set (call %s)", fn, init);
    if ((unsigned)mode > VG_MODE_FULL_AND_PIECEWISE)
        return vg_error_set(VG_ERR_INVALID_ARG, "%s: bad graph mode %d", fn, (int)mode);
    return VG_OK;
}

vg_status vgm_require_ops(vg_runtime *rt, const vg_op_id *ops, size_t n, vg_dtype dt, const char *who,
                          const char *needer)
{
    for (size_t i = 0; i < n; i++)
        if (!vgm_has_op(rt, ops[i], dt))
            return vg_error_set(VG_ERR_UNSUPPORTED, "%s: backend '%s' has no %s for %s, which %s needs", who,
                                vg_runtime_backend_name(rt), vg_op_name(ops[i]), vg_dtype_name(dt), needer);
    return VG_OK;
}

int vgm_has_op(vg_runtime *rt, vg_op_id op, vg_dtype dt)
{
    uint32_t dtypes = 0;
    if (!(vg_runtime_op_support(rt, op, &dtypes) & VG_OP_SUPPORTED)) return 0;
    return op == VG_OP_GATHER_ROWS || op == VG_OP_KV_STORE || dtypes == 0 ||
           (dtypes & VG_DTYPE_BIT(dt)) != 0;
}
