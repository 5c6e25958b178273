/* SPDX-License-Identifier: Apache-2.0 */
/* What the host computes for each Qwen2.5-VL call from grid_thw, uploaded with the rest of the
 * per-call metadata (vit_layout.c): rotary positions, the window permutation of merge units and
 * its inverse, and the segment bounds of full and windowed attention. */
#include "vit_common.h"

void vit25_meta_fill(const vit_cfg *c, const int64_t *grid, int64_t n, int64_t real,
                     const vit_meta_layout *l, int32_t *meta)
{
    int32_t *pos = meta + l->pos, *win = meta + l->win, *rev = meta + l->rev;
    int32_t *cuf = meta + l->cu_full, *cuw = meta + l->cu_win;
    const int ws = c->win_units, mg = c->merge, unit = c->unit;
    int64_t u_off = 0, k = 0;
    int nf = 0, nw = 0;
    cuf[0] = cuw[0] = 0;
    for (int64_t g = 0; g < n; g++) {
        int64_t t = grid[3 * g], lh = grid[3 * g + 1] / mg, lw = grid[3 * g + 2] / mg;
        int64_t nwh = (lh + ws - 1) / ws, nww = (lw + ws - 1) / ws;
        for (int64_t tt = 0; tt < t; tt++) {
            /* full attention: one segment per frame */
            cuf[nf + 1] = cuf[nf] + (int32_t)(lh * lw * unit);
            nf++;
            /* windows of ws x ws units, row-major over windows, row-major inside each */
            for (int64_t wh = 0; wh < nwh; wh++)
                for (int64_t ww = 0; ww < nww; ww++) {
                    int cnt = 0;
                    for (int a = 0; a < ws; a++)
                        for (int b = 0; b < ws; b++) {
                            int64_t bh = wh * ws + a, bw = ww * ws + b;
                            if (bh >= lh || bw >= lw) continue;
                            win[k] = (int32_t)(u_off + tt * lh * lw + bh * lw + bw);
                            for (int i = 0; i < mg; i++)
                                for (int j = 0; j < mg; j++) {
                                    int64_t tok = k * unit + i * mg + j;
                                    pos[2 * tok] = (int32_t)(bh * mg + i);
                                    pos[2 * tok + 1] = (int32_t)(bw * mg + j);
                                }
                            k++;
                            cnt++;
                        }
                    if (cnt) {
                        cuw[nw + 1] = cuw[nw] + cnt * unit;
                        nw++;
                    }
                }
        }
        u_off += t * lh * lw;
    }
    /* padding units stay where they are, at (0, 0), in a segment of their own */
    for (int64_t u = k; u < l->units; u++) {
        win[u] = (int32_t)u;
        for (int i = 0; i < unit; i++) pos[2 * (u * unit + i)] = pos[2 * (u * unit + i) + 1] = 0;
    }
    for (int64_t u = 0; u < l->units; u++) rev[win[u]] = (int32_t)u;
    vit_cu_finish(cuf, nf, real, l);
    vit_cu_finish(cuw, nw, real, l);
}
