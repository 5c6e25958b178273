/* SPDX-License-Identifier: Apache-2.0 */
/* vg vit encode --expected: the embeddings compared with a reference file's `embeddings`
 * tensor, as the fixtures define it (tests/data/README.md, shared/fixtures/README.md):
 * relative error = max|out - ref| / max|ref|. */
#ifndef VG_VIT_EXPECTED_H
#define VG_VIT_EXPECTED_H

#include <cjson/cJSON.h>

#include "vg/vg_safetensors.h"

typedef struct vg_expected {
    const char *path;
    vg_st_file *file;
    const vg_st_tensor *ref; /* 2-D, F32, BF16 or F16 */
} vg_expected;

typedef struct vg_comparison {
    double rel_err; /* NaN when the output holds a NaN or an infinity */
    double tolerance;
    int within;
} vg_comparison;

/* The limit when --tolerance is not given: 1e-4 for F32, 3e-2 for BF16 and F16. */
double vg_expected_default_tolerance(vg_dtype compute);
/* Open the file and find its tensor, before any work: 0, or 1 after a message. */
int vg_expected_open(vg_expected *e, const char *path);
/* Whether the reference has the output's shape: 0, or 1 after a message. */
int vg_expected_check_shape(const vg_expected *e, int64_t rows, int64_t cols);
vg_comparison vg_expected_compare(const vg_expected *e, const float *out, double tolerance);
void vg_expected_close(vg_expected *e);
/* "expected: FILE: max relative error ... : within tolerance" / the same as a JSON object. */
void vg_expected_print(const vg_expected *e, const vg_comparison *c);
cJSON *vg_expected_json(const vg_expected *e, const vg_comparison *c);

#endif
