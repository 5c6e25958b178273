/* A Hugging Face model directory: config.json plus weights in model.safetensors or in shards
 * listed by model.safetensors.index.json. Tensors are mapped, never read until used. */
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
/* The tensor called `name`, and the file holding it (for messages); NULL when absent. */
const vg_st_tensor *vg_ckpt_find(const vg_ckpt *c, const char *name, const vg_st_file **file);

/* Check a tensor's shape and that its dtype is F32, BF16 or F16, then convert it into dst
 * (count elements of dst_dtype). Errors name the file and the tensor. */
vg_status vg_ckpt_read(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape,
                       vg_dtype dst_dtype, void *dst);

/* Integer members of a JSON object, with bounds; absent members take `fallback` unless it is
 * negative, which makes them required. Errors name config.json and the member. */
vg_status vg_json_int(const cJSON *obj, const char *where, const char *key, long fallback, long lo,
                      long hi, int *out);

#endif
