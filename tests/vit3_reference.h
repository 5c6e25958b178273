/* SPDX-License-Identifier: Apache-2.0 */
/* A double-precision Qwen3-VL vision tower on the host, written from Hugging Face transformers'
 * modeling (Qwen3VLVisionModel) and nothing of vg's: the test's independent reference for
 * shapes no fixture covers. test_vit3 checks it against the fixtures first. */
#ifndef VG_TEST_VIT3_REFERENCE_H
#define VG_TEST_VIT3_REFERENCE_H

#include <stdint.h>

#include "vg/vg_ops.h"

#define REF3_MAX_DEEPSTACK 16

typedef struct ref3_config {
    int depth, hidden, heads, inter, out_hidden;
    int patch, tpatch, merge, in_ch;
    int num_pos;                 /* a square number */
    int num_deepstack;
    int deepstack[REF3_MAX_DEEPSTACK]; /* merger k follows block deepstack[k] */
    vg_activation act;           /* the blocks' MLP */
    double theta;                /* the rotary base */
} ref3_config;

/* The F32 data of a tower tensor by its name under the tower ("blocks.0.norm1.weight"). */
typedef const float *(*ref3_tensor_fn)(void *user, const char *name);

/* pixel_values [S, in_ch·tpatch·patch²] and grid_thw [n, 3] in; emb [S / merge², out_hidden] and
 * ds[k] (the same shape, block order, as transformers returns deepstack_features) out.
 * Returns 0, or -1 when a tensor is missing or memory runs out. */
int ref3_forward(const ref3_config *c, ref3_tensor_fn get, void *user, const float *pixels,
                 const int64_t *grid, int64_t n, double *emb, double **ds);

#endif
