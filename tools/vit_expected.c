/* SPDX-License-Identifier: Apache-2.0 */
#include "vit_expected.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vg/vg.h"
#include "vg/vg_half.h"
#include "vg_cli.h"

double vg_expected_default_tolerance(vg_dtype compute)
{
    return compute == VG_DTYPE_F32 ? 1e-4 : 3e-2;
}

int vg_expected_open(vg_expected *e, const char *path)
{
    *e = (vg_expected){.path = path};
    if (vg_st_open(path, &e->file) != VG_OK) return vg_cli_fail("vit encode", "--expected: %s", vg_last_error());
    e->ref = vg_st_find(e->file, "embeddings");
    if (!e->ref) return vg_cli_fail("vit encode", "--expected: %s: tensor 'embeddings' is missing", path);
    if (e->ref->ndim != 2 || (e->ref->dtype != VG_DTYPE_F32 && e->ref->dtype != VG_DTYPE_BF16 &&
                              e->ref->dtype != VG_DTYPE_F16))
        return vg_cli_fail("vit encode", "--expected: %s: 'embeddings' must be a 2-D F32, BF16 or F16 "
                                         "tensor (is %d-D %s)", path, e->ref->ndim, e->ref->dtype_name);
    return 0;
}

int vg_expected_check_shape(const vg_expected *e, int64_t rows, int64_t cols)
{
    if (e->ref->shape[0] == rows && e->ref->shape[1] == cols) return 0;
    return vg_cli_fail("vit encode", "--expected: %s: 'embeddings' has shape [%lld, %lld], the output "
                                     "will have [%lld, %lld]", e->path, (long long)e->ref->shape[0],
                       (long long)e->ref->shape[1], (long long)rows, (long long)cols);
}

/* Element i of the reference; the mapping may be unaligned. */
static double ref_at(const vg_st_tensor *t, uint64_t i)
{
    const unsigned char *p = (const unsigned char *)t->data + i * t->elem_size;
    if (t->dtype == VG_DTYPE_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return t->dtype == VG_DTYPE_BF16 ? vg_bf16_to_f32(h) : vg_f16_to_f32(h);
}

vg_comparison vg_expected_compare(const vg_expected *e, const float *out, double tolerance)
{
    double diff = 0, ref = 1e-30;
    int finite = 1;
    for (uint64_t i = 0; i < e->ref->numel; i++) {
        double r = ref_at(e->ref, i);
        finite &= isfinite(out[i]) != 0;
        diff = fmax(diff, fabs(out[i] - r));
        ref = fmax(ref, fabs(r));
    }
    vg_comparison c = {finite ? diff / ref : NAN, tolerance, 0};
    c.within = c.rel_err <= tolerance;
    return c;
}

void vg_expected_close(vg_expected *e)
{
    vg_st_close(e->file);
    e->file = NULL;
}

void vg_expected_print(const vg_expected *e, const vg_comparison *c)
{
    printf("  expected %s: max relative error %.3g (max|out - ref| / max|ref|), tolerance %.3g: %s\n",
           e->path, c->rel_err, c->tolerance, c->within ? "within tolerance" : "NOT within tolerance");
}

cJSON *vg_expected_json(const vg_expected *e, const vg_comparison *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", e->path);
    cJSON_AddNumberToObject(o, "max_rel_error", c->rel_err); /* NaN prints as null */
    cJSON_AddNumberToObject(o, "tolerance", c->tolerance);
    cJSON_AddBoolToObject(o, "within_tolerance", c->within);
    return o;
}
