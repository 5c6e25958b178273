/* SPDX-License-Identifier: Apache-2.0 */
#include "model_load.h"

#include <stdio.h>
#include <string.h>

#include "vg/vg.h"

vg_dtype vgm_checkpoint_dtype(const vg_ckpt *ck, vg_dtype requested, const char *const *names,
                              int n)
{
    if (requested != VG_DTYPE_COUNT_) return requested;
    const vg_st_tensor *t = NULL;
    for (int i = 0; i < n && !t; i++) t = vg_ckpt_find(ck, names[i], NULL);
    return t && (t->dtype == VG_DTYPE_BF16 || t->dtype == VG_DTYPE_F16) ? t->dtype : VG_DTYPE_F32;
}

vg_status vgm_load_begin(const char *fn, const char *dir, void *m, void (*free_model)(void *),
                         vg_ckpt **ck)
{
    *ck = NULL;
    if (!m) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    vg_status st = vg_ckpt_open(dir, ck);
    if (st != VG_OK) free_model(m);
    return st;
}

vg_status vgm_load_end(vg_status st, vg_ckpt *ck, const char *dir, void *m,
                       void (*free_model)(void *), void **out)
{
    vg_ckpt_close(ck);
    if (st == VG_OK) {
        *out = m;
        return VG_OK;
    }
    free_model(m);
    return vg_error_prefix("loading %s: ", dir);
}

const char *vgm_synthetic_find(const vgm_synthetic *table, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, table[i].name) == 0) return table[i].json;
    return NULL;
}

void vgm_synthetic_names(const vgm_synthetic *table, size_t n, char *buf, size_t len)
{
    size_t at = 0;
    if (len) buf[0] = '\0';
    for (size_t i = 0; i < n && at < len; i++) {
        int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", table[i].name);
        if (w < 0) break;
        at += (size_t)w;
    }
}
