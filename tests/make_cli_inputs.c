/* SPDX-License-Identifier: Apache-2.0 */
/* Writes the inputs of the `vg vit encode` bad-input tests into a directory: each file is a
 * valid safetensors file that is wrong for the encoder in exactly one way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg/vg.h"
#include "vg/vg_safetensors.h"

static int write(const char *dir, const char *name, int64_t rows, int64_t cols, const int64_t *grid,
                 int64_t n, int with_pixels, int with_grid)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, name);
    float *px = calloc((size_t)(rows ? rows : 1) * (size_t)cols, sizeof(float));
    if (!px) return 1;
    int64_t ps[2] = {rows, cols}, gs[2] = {n, 3};
    vg_st_write_tensor t[2];
    int k = 0;
    if (with_pixels) t[k++] = (vg_st_write_tensor){"pixel_values", VG_DTYPE_F32, 2, ps, px};
    if (with_grid) t[k++] = (vg_st_write_tensor){"grid_thw", VG_DTYPE_I64, 2, gs, grid};
    int rc = vg_st_write(path, t, k) != VG_OK;
    if (rc) fprintf(stderr, "make_cli_inputs: %s\n", vg_last_error());
    free(px);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_cli_inputs DIR\n");
        return 2;
    }
    const char *d = argv[1];
    const int64_t g16[3] = {1, 16, 16}, g15[3] = {1, 15, 16}, g0[3] = {1, 2, 2};
    int rc = 0;
    rc |= write(d, "rows_mismatch", 250, 1176, g16, 1, 1, 1);
    rc |= write(d, "not_divisible", 240, 1176, g15, 1, 1, 1);
    rc |= write(d, "wrong_width", 256, 1000, g16, 1, 1, 1);
    rc |= write(d, "empty", 0, 1176, g0, 1, 1, 1);
    rc |= write(d, "missing_grid", 256, 1176, g16, 1, 1, 0);
    rc |= write(d, "missing_pixels", 256, 1176, g16, 1, 0, 1);
    /* the same for a tower of 16-pixel patches (Qwen3-VL: 1536 columns) */
    rc |= write(d, "p16_rows_mismatch", 250, 1536, g16, 1, 1, 1);
    rc |= write(d, "p16_not_divisible", 240, 1536, g15, 1, 1, 1);
    return rc;
}
