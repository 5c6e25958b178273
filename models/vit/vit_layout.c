/* SPDX-License-Identifier: Apache-2.0 */
/* The per-call metadata both towers share: its layout in VB_META (each tower fills its part:
 * vit25_layout.c, vit3_layout.c), the closing of segment bounds, the checks of grid_thw and
 * pixel_values against the config, and the attention FLOPs of a call. */
#include <string.h>

#include "vit_common.h"

vit_meta_layout vit_meta_layout_for(const vit_cfg *c, int64_t padded_tokens)
{
    vit_meta_layout L, *l = &L;
    int q3 = c->family == VIT_QWEN3;
    l->tokens = padded_tokens;
    l->units = padded_tokens / c->unit;
    l->cap = (int)l->units + 2; /* each segment holds at least one unit, plus the padding one */
    l->pos = 0;
    l->win = l->pos + 2 * (size_t)padded_tokens;
    l->rev = l->win + (q3 ? 0 : (size_t)l->units);
    l->cu_full = l->rev + (q3 ? 0 : (size_t)l->units);
    l->cu_win = l->cu_full + (size_t)l->cap + 1;
    l->tap_idx = l->cu_win + (q3 ? 0 : (size_t)l->cap + 1);
    l->tap_w = l->tap_idx + (q3 ? VIT3_TAPS * (size_t)padded_tokens : 0);
    l->total = l->tap_w + (q3 ? VIT3_TAPS * (size_t)padded_tokens : 0);
    return L;
}

/* Close a cu_seqlens array: the padding segment, then empty segments up to the capacity. */
void vit_cu_finish(int32_t *cu, int n, int64_t real, const vit_meta_layout *l)
{
    if (l->tokens > real) cu[++n] = (int32_t)l->tokens;
    for (int i = n + 1; i <= l->cap; i++) cu[i] = (int32_t)l->tokens;
}

vg_status vit_grid_tokens(const vit_cfg *c, const int64_t *grid, int64_t n, int64_t *tokens)
{
    if (!grid || n <= 0 || n > (1 << 20))
        return vg_error_set(VG_ERR_INVALID_ARG, "vit: grid_thw must hold 1 to %d rows (got %lld)",
                            1 << 20, (long long)n);
    const int64_t lim = 1 << 20;
    int64_t total = 0;
    for (int64_t g = 0; g < n; g++) {
        int64_t t = grid[3 * g], h = grid[3 * g + 1], w = grid[3 * g + 2];
        if (t < 1 || h < 1 || w < 1 || t > lim || h > lim || w > lim)
            return vg_error_set(VG_ERR_INVALID_ARG, "vit: grid_thw[%lld] = (%lld, %lld, %lld): each "
                                                    "of t, h, w must be in [1, %lld]", (long long)g,
                                (long long)t, (long long)h, (long long)w, (long long)lim);
        if (h % c->merge || w % c->merge)
            return vg_error_set(VG_ERR_INVALID_ARG, "vit: grid_thw[%lld] = (%lld, %lld, %lld): h and "
                                                    "w must be multiples of spatial_merge_size %d",
                                (long long)g, (long long)t, (long long)h, (long long)w, c->merge);
        if (h * w > ((int64_t)1 << 30) / t || total > ((int64_t)1 << 30) - t * h * w)
            return vg_error_set(VG_ERR_INVALID_ARG, "vit: grid_thw describes more than 2^30 patches");
        total += t * h * w;
    }
    *tokens = total;
    return VG_OK;
}

vg_status vit_validate_input(const vit_cfg *c, int64_t rows, int64_t cols, const int64_t *grid,
                             int64_t n, int64_t *tokens)
{
    if (rows <= 0) return vg_error_set(VG_ERR_INVALID_ARG, "vit: the input is empty (0 rows)");
    if (cols != c->patch_dim)
        return vg_error_set(VG_ERR_INVALID_ARG, "vit: pixel_values has %lld columns; this model "
                                                "expects in_channels x temporal_patch x patch^2 = "
                                                "%d x %d x %d^2 = %lld", (long long)cols, c->in_ch,
                            c->tpatch, c->patch, (long long)c->patch_dim);
    int64_t total = 0;
    vg_status st = vit_grid_tokens(c, grid, n, &total);
    if (st != VG_OK) return st;
    if (total != rows)
        return vg_error_set(VG_ERR_INVALID_ARG, "vit: pixel_values has %lld rows, but grid_thw "
                                                "describes sum(t x h x w) = %lld patches",
                            (long long)rows, (long long)total);
    *tokens = total;
    return VG_OK;
}

double vit_attention_flops(const vit_cfg *c, const int64_t *grid, int64_t n)
{
    /* per segment of L tokens: QKᵀ and PV, 2·L²·head_dim FLOPs each, per head */
    double full = 0, win = 0;
    const int ws = c->win_units, mg = c->merge;
    for (int64_t g = 0; g < n; g++) {
        int64_t t = grid[3 * g], lh = grid[3 * g + 1] / mg, lw = grid[3 * g + 2] / mg;
        double frame = (double)(lh * lw * c->unit);
        full += (double)t * frame * frame;
        for (int64_t wh = 0; ws > 0 && wh < lh; wh += ws) /* ws = 0: no window blocks */
            for (int64_t ww = 0; ww < lw; ww += ws) {
                double units = (double)((lh - wh < ws ? lh - wh : ws) * (lw - ww < ws ? lw - ww : ws));
                win += (double)t * (units * c->unit) * (units * c->unit);
            }
    }
    int nfull = 0;
    for (int i = 0; i < c->depth; i++) nfull += c->fullatt[i];
    return 4.0 * c->hidden * (nfull * full + (c->depth - nfull) * win);
}
