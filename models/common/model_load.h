/* SPDX-License-Identifier: Apache-2.0 */
/* What loading a model shares across models: the compute dtype a checkpoint implies, and the
 * synthetic configurations (a name and the config.json text it stands for). Not installed. */
#ifndef VG_MODELS_MODEL_LOAD_H
#define VG_MODELS_MODEL_LOAD_H

#include <stddef.h>

#include "checkpoint.h"

/* `requested`, unless it is VG_DTYPE_COUNT_ ("as the checkpoint"): then the dtype of the first of
 * names[0..n) the checkpoint holds when that is BF16 or F16, else F32. */
vg_dtype vgm_checkpoint_dtype(const vg_ckpt *ck, vg_dtype requested, const char *const *names,
                              int n);

/* The start of `fn` loading model m (freshly allocated; NULL: out of memory) from directory dir:
 * its checkpoint opened into *ck. On failure m is freed with free_model and the error returned. */
vg_status vgm_load_begin(const char *fn, const char *dir, void *m, void (*free_model)(void *),
                         vg_ckpt **ck);
/* The end of loading model m from the checkpoint ck of directory dir: ck closed (the weights are on
 * the device by now), then *out = m when st is VG_OK, else m freed with free_model and the error
 * prefixed with the directory. Returns st. */
vg_status vgm_load_end(vg_status st, vg_ckpt *ck, const char *dir, void *m,
                       void (*free_model)(void *), void **out);

typedef struct vgm_synthetic {
    const char *name, *json;
} vgm_synthetic;

/* The config.json text of the configuration called `name`, NULL when none is. */
const char *vgm_synthetic_find(const vgm_synthetic *table, size_t n, const char *name);
/* The table's names, ", "-separated, into buf[len] (cut to fit), for messages. */
void vgm_synthetic_names(const vgm_synthetic *table, size_t n, char *buf, size_t len);

#endif
