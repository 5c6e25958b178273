/* SPDX-License-Identifier: Apache-2.0 */
/* vision_config of a Qwen2.5-VL checkpoint: parsed, validated, defaults as Hugging Face's. */
#include <stdio.h>
#include <string.h>

#include "vit_internal.h"

vg_status vit_config_parse(const cJSON *root, const char *dir, vit_cfg *c)
{
    char where[4200];
    snprintf(where, sizeof where, "%s/config.json", dir);
    memset(c, 0, sizeof *c);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (cJSON_IsString(mt) && strcmp(mt->valuestring, "qwen2_5_vl") != 0)
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: model_type '%.40s' is not supported by the "
                                                "Qwen2.5-VL vision encoder", where, mt->valuestring);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "vision_config");
    if (!cJSON_IsObject(v))
        return vg_error_set(VG_ERR_FORMAT, "%s: no 'vision_config' object", where);
    snprintf(where, sizeof where, "%s/config.json: vision_config", dir);
    vg_status st = VG_OK;
#define INT(key, fallback, lo, hi, dst) \
    if (st == VG_OK) st = vg_json_int(v, where, key, fallback, lo, hi, dst)
    INT("depth", -1, 1, VIT_MAX_DEPTH, &c->depth);
    INT("hidden_size", -1, 1, 65536, &c->hidden);
    INT("num_heads", -1, 1, 1024, &c->heads);
    INT("intermediate_size", -1, 1, 1 << 20, &c->inter);
    INT("out_hidden_size", -1, 1, 1 << 20, &c->out_hidden);
    INT("patch_size", 14, 1, 1024, &c->patch);
    INT("temporal_patch_size", 2, 1, 64, &c->tpatch);
    INT("spatial_merge_size", 2, 1, 64, &c->merge);
    INT("window_size", 112, 1, 1 << 20, &c->window);
    int in_chans = 3;
    INT("in_chans", 3, 1, 64, &in_chans);
    INT("in_channels", in_chans, 1, 64, &c->in_ch);
#undef INT
    if (st != VG_OK) return st;
    if (c->hidden % c->heads)
        return vg_error_set(VG_ERR_FORMAT, "%s: hidden_size %d is not divisible by num_heads %d",
                            where, c->hidden, c->heads);
    c->head_dim = c->hidden / c->heads;
    if (c->head_dim % 4)
        return vg_error_set(VG_ERR_FORMAT, "%s: head dimension %d is not a multiple of 4 (the 2-D "
                                           "rotary needs quarters)", where, c->head_dim);
    if (c->window % (c->merge * c->patch))
        return vg_error_set(VG_ERR_FORMAT, "%s: window_size %d is not a multiple of "
                                           "spatial_merge_size x patch_size", where, c->window);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(v, "hidden_act");
    if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu") != 0))
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: hidden_act must be \"silu\"", where);
    const cJSON *full = cJSON_GetObjectItemCaseSensitive(v, "fullatt_block_indexes");
    if (!full) { /* Hugging Face's default */
        for (int i = 7; i < c->depth; i += 8) c->fullatt[i] = 1;
    } else if (!cJSON_IsArray(full)) {
        return vg_error_set(VG_ERR_FORMAT, "%s: fullatt_block_indexes must be an array", where);
    } else {
        for (const cJSON *e = full->child; e; e = e->next) {
            double d = cJSON_IsNumber(e) ? e->valuedouble : -1;
            if (d < 0 || d >= c->depth || d != (double)(int)d)
                return vg_error_set(VG_ERR_FORMAT, "%s: fullatt_block_indexes holds %g, not a block "
                                                   "index below depth %d", where, d, c->depth);
            c->fullatt[(int)d] = 1;
        }
    }
    c->inter_pad = (c->inter + 15) / 16 * 16;
    c->unit = c->merge * c->merge;
    c->win_units = c->window / c->merge / c->patch;
    c->patch_dim = (int64_t)c->in_ch * c->tpatch * c->patch * c->patch;
    c->eps = 1e-6f;
    c->theta = 10000.0f;
    return VG_OK;
}
