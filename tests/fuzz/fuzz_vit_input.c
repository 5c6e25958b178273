/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the pixel_values / grid_thw validation of vit encode, and the per-call
 * layout computed from an accepted grid (positions, window permutation, segment bounds; for
 * Qwen3-VL positions, segments and the position table's taps). The layout buffer is allocated
 * to its exact size, so AddressSanitizer sees any overrun; beyond that, the window index must be
 * a permutation with rev its inverse, every cu_seqlens array must rise from 0 to the padded size
 * within its capacity, positions must lie inside their image's grid, and every patch's taps
 * must lie in the table with weights in [0, 1] summing to one (zero for padding).
 *
 * Input: byte 0: merge size (1..4), byte 1: window units (1..8) in its low 3 bits, the Qwen3-VL
 * layout when bit 7 is set, with a table side of 1 + bits 3..6 (1..16); byte 2: padding units,
 * then (t, h, w) as three bytes per image (at most 8 images; t in 0..3, h and w in -2..21:
 * small, so the fuzzer spends its time on shapes rather than on filling huge layouts), and two
 * 16-bit numbers that perturb rows and columns. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vit/vit_common.h"

#include "fuzz_check.h"

static void check_cu(const int32_t *cu, int cap, int64_t tokens, int unit)
{
    CHECK(cu[0] == 0 && cu[cap] == tokens);
    for (int i = 0; i < cap; i++) {
        CHECK(cu[i] <= cu[i + 1]);
        CHECK(cu[i] % unit == 0 || cu[i] == tokens);
    }
}

/* Qwen3-VL: positions inside the largest grid, one segment per frame, taps in the table. */
static void check_qwen3(const vit_cfg *c, const vit_meta_layout *l, const int32_t *meta,
                        const int64_t *grid, int64_t n, int64_t tokens)
{
    int64_t hmax = 0, wmax = 0;
    for (int64_t i = 0; i < n; i++) {
        hmax = grid[3 * i + 1] > hmax ? grid[3 * i + 1] : hmax;
        wmax = grid[3 * i + 2] > wmax ? grid[3 * i + 2] : wmax;
    }
    const int32_t *pos = meta + l->pos, *idx = meta + l->tap_idx;
    const float *w = (const float *)(meta + l->tap_w);
    for (int64_t t = 0; t < l->tokens; t++) {
        CHECK(pos[2 * t] >= 0 && pos[2 * t] < (hmax ? hmax : 1) && pos[2 * t + 1] >= 0 &&
              pos[2 * t + 1] < (wmax ? wmax : 1));
        float sum = 0.0f;
        for (int k = 0; k < VIT3_TAPS; k++) {
            CHECK(idx[VIT3_TAPS * t + k] >= 0 && idx[VIT3_TAPS * t + k] < c->num_pos);
            CHECK(w[VIT3_TAPS * t + k] >= 0.0f && w[VIT3_TAPS * t + k] <= 1.0f);
            sum += w[VIT3_TAPS * t + k];
        }
        CHECK(t < tokens ? sum > 0.999f && sum < 1.001f : sum == 0.0f);
    }
    check_cu(meta + l->cu_full, l->cap, l->tokens, c->unit);
    CHECK(l->total == l->tap_w + VIT3_TAPS * (size_t)l->tokens); /* nothing after the weights */
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size)
{
    if (size < 7) return 0;
    vit_cfg c;
    memset(&c, 0, sizeof c);
    c.merge = 1 + d[0] % 4;
    c.unit = c.merge * c.merge;
    c.family = d[1] & 0x80 ? VIT_QWEN3 : VIT_QWEN2_5;
    c.win_units = c.family == VIT_QWEN3 ? 0 : 1 + d[1] % 8;
    c.pos_side = 1 + ((d[1] >> 3) & 15);
    c.num_pos = c.pos_side * c.pos_side;
    c.patch = 14, c.tpatch = 2, c.in_ch = 3;
    c.patch_dim = (int64_t)c.in_ch * c.tpatch * c.patch * c.patch;
    int64_t pad_units = d[2] % 16;
    size_t body = size - 7;
    int64_t n = (int64_t)(body / 3 > 8 ? 8 : body / 3);
    int64_t grid[24];
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            grid[3 * i + k] = k == 0 ? d[3 + 3 * i] % 4 : (int64_t)(d[3 + 3 * i + k] % 24) - 2;
    const uint8_t *tail = d + size - 4;
    int64_t rows_delta = (int16_t)(tail[0] | tail[1] << 8) % 3; /* usually 0: reach the fill */
    int64_t cols = c.patch_dim + (int16_t)(tail[2] | tail[3] << 8) % 2;
    int64_t sum = 0;
    for (int64_t i = 0; i < n; i++) sum += grid[3 * i] * grid[3 * i + 1] * grid[3 * i + 2];
    int64_t tokens = -1;
    if (vit_validate_input(&c, sum + rows_delta, cols, grid, n, &tokens) != VG_OK) return 0;
    CHECK(tokens == sum && rows_delta == 0 && cols == c.patch_dim && tokens % c.unit == 0);
    int64_t padded = tokens + pad_units * c.unit;
    vit_meta_layout l = vit_meta_layout_for(&c, padded);
    int32_t *meta = malloc(l.total * sizeof(int32_t));
    CHECK(meta);
    vit_tower_of(c.family)->meta_fill(&c, grid, n, tokens, &l, meta);
    if (c.family == VIT_QWEN3) {
        check_qwen3(&c, &l, meta, grid, n, tokens);
        free(meta);
        return 0;
    }
    const int32_t *win = meta + l.win, *rev = meta + l.rev, *pos = meta + l.pos;
    unsigned char *seen = calloc((size_t)l.units, 1);
    CHECK(seen);
    for (int64_t u = 0; u < l.units; u++) {
        CHECK(win[u] >= 0 && win[u] < l.units && !seen[win[u]]);
        seen[win[u]] = 1;
        CHECK(rev[win[u]] == u);
        CHECK((u < tokens / c.unit) == (win[u] < tokens / c.unit)); /* padding stays padding */
    }
    int64_t hmax = 0, wmax = 0;
    for (int64_t i = 0; i < n; i++) {
        hmax = grid[3 * i + 1] > hmax ? grid[3 * i + 1] : hmax;
        wmax = grid[3 * i + 2] > wmax ? grid[3 * i + 2] : wmax;
    }
    for (int64_t t = 0; t < padded; t++) CHECK(pos[2 * t] >= 0 && pos[2 * t] < hmax && pos[2 * t + 1] >= 0 && pos[2 * t + 1] < wmax);
    check_cu(meta + l.cu_full, l.cap, padded, c.unit);
    check_cu(meta + l.cu_win, l.cap, padded, c.unit);
    free(seen);
    free(meta);
    return 0;
}
