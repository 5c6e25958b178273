/* SPDX-License-Identifier: Apache-2.0 */
/* A Hugging Face model directory: config.json plus weights in model.safetensors or in shards
 * listed by model.safetensors.index.json. Tensors are mapped, never read until used. Every
 * error names the file (and the tensor, where there is one). Only regular files are opened: a
 * FIFO or a device in their place is refused before anything blocks on it. */
#ifndef VG_MODELS_CHECKPOINT_H
#define VG_MODELS_CHECKPOINT_H

#include <cjson/cJSON.h>

#include "vg/vg_safetensors.h"
#include "vg/vg_types.h"

typedef struct vg_ckpt vg_ckpt;

vg_status vg_ckpt_open(const char *dir, vg_ckpt **out);
void vg_ckpt_close(vg_ckpt *c);
const cJSON *vg_ckpt_config(const vg_ckpt *c);
const char *vg_ckpt_dir(const vg_ckpt *c);
/* The safetensors files of the checkpoint (one, or its shards), for walking every tensor. */
int vg_ckpt_file_count(const vg_ckpt *c);
const vg_st_file *vg_ckpt_file(const vg_ckpt *c, int i);
/* The tensor called `name`, and the file holding it (for messages); NULL when absent. */
const vg_st_tensor *vg_ckpt_find(const vg_ckpt *c, const char *name, const vg_st_file **file);

/* Check that tensor `name` exists, has exactly `shape` and dtype F32, BF16 or F16, without
 * reading its data. Errors name the file and the tensor. */
vg_status vg_ckpt_check(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape);

/* vg_ckpt_check, then convert the tensor into dst (numel elements of dst_dtype, F32, BF16 or
 * F16; the same half format is copied bit for bit). Every value is checked as it is converted:
 * a NaN or infinity in the file, or a finite value that would become infinite in dst_dtype, is
 * VG_ERR_FORMAT naming the file, the tensor and the element. */
vg_status vg_ckpt_read(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape,
                       vg_dtype dst_dtype, void *dst);
/* The same for rows [row0, row0 + nrows) of the tensor viewed as a matrix
 * [shape[0], shape[1]·...·shape[ndim-1]]: row row0 + i lands at dst + i·ld_dst elements
 * (ld_dst >= the columns), so a padded layout is read in place. Elements between the rows are
 * not touched. */
vg_status vg_ckpt_read_rows(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape,
                            int64_t row0, int64_t nrows, vg_dtype dst_dtype, void *dst,
                            int64_t ld_dst);
/* The same for columns [col0, col0 + ncols) of those rows (a tensor-parallel slice of a
 * weight's input dimension): element (row0 + i, col0 + j) lands at dst + i·ld_dst + j
 * (ld_dst >= ncols). Only the elements read are checked for being finite. */
vg_status vg_ckpt_read_block(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape,
                             int64_t row0, int64_t nrows, int64_t col0, int64_t ncols,
                             vg_dtype dst_dtype, void *dst, int64_t ld_dst);

#endif
