/* SPDX-License-Identifier: Apache-2.0 */
/* vg vit encode --expected: the outputs compared with a reference file's tensors of the same
 * names, as the fixtures define them (tests/data/README.md, shared/fixtures/README.md):
 * `embeddings`, and for a model with deepstack mergers each `deepstack.K`; relative error =
 * max|out - ref| / max|ref|, per tensor, the largest deciding. */
#ifndef VG_VIT_EXPECTED_H
#define VG_VIT_EXPECTED_H

#include <cjson/cJSON.h>

#include "vg/vg_safetensors.h"
#include "vg/vg_vit.h"

/* embeddings plus up to this many deepstack features (one per block of the deepest tower) */
#define VG_EXPECTED_MAX_OUTPUTS 257

typedef struct vg_expected {
    const char *path;
    vg_st_file *file;
    const vg_st_tensor *ref; /* 'embeddings': 2-D, F32, BF16 or F16 */
} vg_expected;

typedef struct vg_comparison {
    double rel_err; /* the largest over the outputs; NaN when an output holds a NaN or an infinity */
    double tolerance;
    int within;
    int n;                                 /* outputs compared: embeddings, deepstack.0, ... */
    double errs[VG_EXPECTED_MAX_OUTPUTS];  /* each one's relative error */
} vg_comparison;

/* The limit when --tolerance is not given: 1e-4 for F32, 3e-2 for BF16 and F16. */
double vg_expected_default_tolerance(vg_dtype compute);
/* Open the file and find its tensor, before any work: 0, or 1 after a message. */
int vg_expected_open(vg_expected *e, const char *path);
/* Whether the reference has the output's shape: 0, or 1 after a message. */
int vg_expected_check_shape(const vg_expected *e, int64_t rows, int64_t cols);
/* Whether the reference holds exactly the deepstack features the model makes (deepstack.0 ..
 * deepstack.{n-1}, 2-D float tensors of the output's shape, and no other deepstack.K): 0, or 1
 * after a message. */
int vg_expected_check_deepstack(const vg_expected *e, int n, int64_t rows, int64_t cols);
/* Compare every output of o (embeddings, then each deepstack feature) with the reference. */
vg_comparison vg_expected_compare(const vg_expected *e, const vg_vit_output *o, double tolerance);
void vg_expected_close(vg_expected *e);
/* "expected: FILE: max relative error ... : within tolerance" (and, with deepstack features,
 * each output's error) / the same as a JSON object. */
void vg_expected_print(const vg_expected *e, const vg_comparison *c);
cJSON *vg_expected_json(const vg_expected *e, const vg_comparison *c);

#endif
