/* SPDX-License-Identifier: Apache-2.0 */
/* pixel_values in device memory (vg_vit_encode_device): the input of a consumer process that
 * imported the producer's tensor (vg_ipc.h). No host round trip: the pixels are copied, or
 * converted to the compute dtype, by the device on the runner's stream (vit_prepare), where the
 * host path (vit_input.c) converts and checks them on the host. Non-finite values cannot be looked for
 * without reading the input back, so they are caught in what they spoil: every embedding of an
 * image with a NaN or infinite pixel is NaN, and the embeddings come back to the host anyway. */
#include <math.h>
#include <string.h>

#include "vit_common.h"

/* VG_ERR_INVALID_ARG naming the first image whose embeddings are not finite. */
static vg_status check_finite(const vit_cfg *c, vg_dtype dt, const vg_vit_output *out,
                              const int64_t *grid, int64_t n)
{
    size_t count = (size_t)out->rows * (size_t)out->cols;
    size_t i = 0;
    while (i < count && isfinite(out->embeddings[i])) i++;
    if (i == count) return VG_OK;
    int64_t row = (int64_t)(i / (size_t)out->cols), first = 0, image = 0;
    for (; image < n; image++) {
        int64_t units = grid[3 * image] * grid[3 * image + 1] * grid[3 * image + 2] / c->unit;
        if (row < first + units) break;
        first += units;
    }
    return vg_error_set(VG_ERR_INVALID_ARG,
                        "vit: the embeddings of image %lld (row %lld) are not finite: its pixel "
                        "values in device memory hold NaN or infinite values, or values beyond "
                        "the range of %s (the compute dtype)",
                        (long long)image, (long long)row, vg_dtype_name(dt));
}

vg_status vg_vit_encode_device(vg_vit *m, const void *pixels, vg_dtype pdt, int64_t rows,
                               int64_t cols, const int64_t *grid, int64_t n, vg_vit_output *out)
{
    if (!m || !out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_vit_encode_device: NULL argument");
    m->device_input = 1;
    vg_status st = vg_vit_encode(m, pixels, pdt, rows, cols, grid, n, out);
    m->device_input = 0;
    if (st != VG_OK) return st;
    st = check_finite(&m->cfg, m->dt, out, grid, n);
    if (st != VG_OK) {
        vg_free(out->embeddings);
        memset(out, 0, sizeof *out);
    }
    return st;
}
