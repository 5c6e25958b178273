/* SPDX-License-Identifier: Apache-2.0 */
/* What the host computes for each Qwen3-VL call from grid_thw, uploaded with the rest of the
 * per-call metadata (vit_layout.c): the rotary (h, w) position of every patch, one attention
 * segment per frame, and the taps of the learned position table resampled to each image's grid.
 *
 * Patches come in the image processor's order: frame by frame, merge unit by merge unit (row-major
 * over the merged grid), and row-major inside each unit; hidden states stay in that order through
 * every block, so no permutation is needed. */
#include <math.h>

#include "vit_common.h"

/* One axis of the resampling: the source coordinate of target index i of n on a table side of
 * `side` entries, corners aligned (i = 0 maps to 0, i = n - 1 to side - 1), its two taps clamped
 * to the table and their linear weights. Single precision, in the order transformers evaluates
 * it, so the weights are bit-identical to the reference's. */
static void axis_taps(int side, int64_t n, int64_t i, int32_t tap[2], float wt[2])
{
    float src = (float)(i * (side - 1)) / (float)(n > 1 ? n - 1 : 1);
    float fl = floorf(src), frac = src - fl;
    for (int k = 0; k < 2; k++) {
        int64_t t = (int64_t)fl + k;
        tap[k] = (int32_t)(t < 0 ? 0 : t > side - 1 ? side - 1 : t);
        float d = fabsf(frac - (float)k);
        wt[k] = 1.0f - d > 0.0f ? 1.0f - d : 0.0f;
    }
}

void vit3_pos_taps(int pos_side, int64_t h, int64_t w, int64_t row, int64_t col,
                   int32_t idx[VIT3_TAPS], float wt[VIT3_TAPS])
{
    int32_t th[2], tw[2];
    float wh[2], ww[2];
    axis_taps(pos_side, h, row, th, wh);
    axis_taps(pos_side, w, col, tw, ww);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            idx[2 * a + b] = th[a] * pos_side + tw[b];
            wt[2 * a + b] = wh[a] * ww[b];
        }
}

void vit3_meta_fill(const vit_cfg *c, const int64_t *grid, int64_t n, int64_t real,
                    const vit_meta_layout *l, int32_t *meta)
{
    int32_t *pos = meta + l->pos, *cu = meta + l->cu_full, *tap = meta + l->tap_idx;
    float *tw = (float *)(meta + l->tap_w); /* F32 weights in the int32 block: same size */
    const int mg = c->merge;
    int64_t tok = 0;
    int nseg = 0;
    cu[0] = 0;
    for (int64_t g = 0; g < n; g++) {
        int64_t t = grid[3 * g], h = grid[3 * g + 1], w = grid[3 * g + 2];
        for (int64_t f = 0; f < t; f++) {
            for (int64_t bh = 0; bh < h / mg; bh++)
                for (int64_t bw = 0; bw < w / mg; bw++)
                    for (int i = 0; i < mg; i++)
                        for (int j = 0; j < mg; j++, tok++) {
                            int64_t row = bh * mg + i, col = bw * mg + j;
                            pos[2 * tok] = (int32_t)row;
                            pos[2 * tok + 1] = (int32_t)col;
                            vit3_pos_taps(c->pos_side, h, w, row, col, tap + VIT3_TAPS * tok,
                                          tw + VIT3_TAPS * tok);
                        }
            cu[nseg + 1] = cu[nseg] + (int32_t)(h * w); /* a frame attends to itself */
            nseg++;
        }
    }
    /* padding: position (0, 0), taps of weight zero (their rows embed to the patch bias alone),
     * and a segment of their own */
    for (; tok < l->tokens; tok++) {
        pos[2 * tok] = pos[2 * tok + 1] = 0;
        for (int k = 0; k < VIT3_TAPS; k++) tap[VIT3_TAPS * tok + k] = 0, tw[VIT3_TAPS * tok + k] = 0.0f;
    }
    vit_cu_finish(cu, nseg, real, l);
}
