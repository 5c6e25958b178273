/* SPDX-License-Identifier: Apache-2.0 */
#include "vit_expected.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A reference tensor against an output of rows x cols: 0, or 1 after a message. A
 * non-finite value would drop out of the maximum error and pass any tolerance: refused. */
static int check_tensor(const vg_expected *e, const vg_st_tensor *t, const char *name, int64_t rows,
                        int64_t cols)
{
    if (t->ndim != 2 || (t->dtype != VG_DTYPE_F32 && t->dtype != VG_DTYPE_BF16 && t->dtype != VG_DTYPE_F16))
        return vg_cli_fail("vit encode", "--expected: %s: '%s' must be a 2-D F32, BF16 or F16 "
                                         "tensor (is %d-D %s)", e->path, name, t->ndim, t->dtype_name);
    if (t->shape[0] == rows && t->shape[1] == cols) {
        for (uint64_t i = 0; i < t->numel; i++) {
            double r = ref_at(t, i);
            if (!isfinite(r))
                return vg_cli_fail("vit encode", "--expected: %s: '%s'[%lld, %lld] is %g: a reference "
                                                 "must be finite", e->path, name, (long long)(i / (uint64_t)cols),
                                   (long long)(i % (uint64_t)cols), r);
        }
        return 0;
    }
    return vg_cli_fail("vit encode", "--expected: %s: '%s' has shape [%lld, %lld], the output "
                                     "will have [%lld, %lld]", e->path, name, (long long)t->shape[0],
                       (long long)t->shape[1], (long long)rows, (long long)cols);
}

int vg_expected_check_shape(const vg_expected *e, int64_t rows, int64_t cols)
{
    return check_tensor(e, e->ref, "embeddings", rows, cols);
}

int vg_expected_check_deepstack(const vg_expected *e, int n, int64_t rows, int64_t cols)
{
    char name[32];
    for (int k = 0; k < n; k++) {
        snprintf(name, sizeof name, "deepstack.%d", k);
        const vg_st_tensor *t = vg_st_find(e->file, name);
        if (!t)
            return vg_cli_fail("vit encode", "--expected: %s: tensor '%s' is missing (the model "
                                             "makes %d deepstack feature%s)", e->path, name, n,
                               n == 1 ? "" : "s");
        if (check_tensor(e, t, name, rows, cols)) return 1;
    }
    for (int i = 0; i < vg_st_count(e->file); i++) {
        const char *tn = vg_st_at(e->file, i)->name;
        char *end = NULL;
        if (strncmp(tn, "deepstack.", 10) != 0) continue;
        long k = strtol(tn + 10, &end, 10);
        if (end != tn + 10 && !*end && k >= n)
            return vg_cli_fail("vit encode", "--expected: %s: holds '%s', but the model makes %d "
                                             "deepstack feature%s", e->path, tn, n, n == 1 ? "" : "s");
    }
    return 0;
}

static double compare_one(const vg_st_tensor *t, const float *out)
{
    double diff = 0, ref = 1e-30;
    int finite = 1;
    for (uint64_t i = 0; i < t->numel; i++) {
        double r = ref_at(t, i);
        finite &= isfinite(out[i]) != 0;
        diff = fmax(diff, fabs(out[i] - r));
        ref = fmax(ref, fabs(r));
    }
    return finite ? diff / ref : NAN;
}

vg_comparison vg_expected_compare(const vg_expected *e, const vg_vit_output *o, double tolerance)
{
    vg_comparison c = {.tolerance = tolerance};
    c.errs[c.n++] = compare_one(e->ref, o->embeddings);
    for (int k = 0; k < o->num_deepstack && c.n < VG_EXPECTED_MAX_OUTPUTS; k++) {
        char name[32];
        snprintf(name, sizeof name, "deepstack.%d", k);
        const vg_st_tensor *t = vg_st_find(e->file, name); /* checked before the run */
        c.errs[c.n++] = t ? compare_one(t, o->deepstack[k]) : NAN;
    }
    c.rel_err = 0;
    for (int i = 0; i < c.n; i++) c.rel_err = isnan(c.errs[i]) || isnan(c.rel_err) ? NAN : fmax(c.rel_err, c.errs[i]);
    c.within = c.rel_err <= tolerance;
    return c;
}

void vg_expected_close(vg_expected *e)
{
    vg_st_close(e->file);
    e->file = NULL;
}

static const char *output_name(int i, char *buf, size_t cap)
{
    if (i == 0) return "embeddings";
    snprintf(buf, cap, "deepstack.%d", i - 1);
    return buf;
}

void vg_expected_print(const vg_expected *e, const vg_comparison *c)
{
    printf("  expected %s: max relative error %.3g (max|out - ref| / max|ref|), tolerance %.3g: %s\n",
           e->path, c->rel_err, c->tolerance, c->within ? "within tolerance" : "NOT within tolerance");
    if (c->n < 2) return;
    printf("    per output:");
    for (int i = 0; i < c->n; i++) {
        char buf[32];
        printf("%s %s %.3g", i ? "," : "", output_name(i, buf, sizeof buf), c->errs[i]);
    }
    printf("\n");
}

cJSON *vg_expected_json(const vg_expected *e, const vg_comparison *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", e->path);
    cJSON_AddNumberToObject(o, "max_rel_error", c->rel_err); /* NaN prints as null */
    cJSON_AddNumberToObject(o, "tolerance", c->tolerance);
    cJSON_AddBoolToObject(o, "within_tolerance", c->within);
    cJSON *each = cJSON_AddObjectToObject(o, "outputs");
    for (int i = 0; each && i < c->n; i++) {
        char buf[32];
        cJSON_AddNumberToObject(each, output_name(i, buf, sizeof buf), c->errs[i]);
    }
    return o;
}
