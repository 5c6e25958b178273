/* SPDX-License-Identifier: Apache-2.0 */
/* The Qwen2.5-VL members of vision_config. Defaults as Hugging Face's Qwen2_5_VLVisionConfig. */
#include <string.h>

#include "vit_common.h"

/* Qwen2.5-VL's own members: windows, full-attention blocks, the SiLU MLP. */
vg_status vit25_config_parse(const cJSON *v, const char *where, vit_cfg *c)
{
    vg_status st = vg_json_int(v, where, "window_size", 112, 1, 1 << 20, &c->window);
    if (st != VG_OK) return st;
    if (c->window % (c->merge * c->patch))
        return vg_error_set(VG_ERR_FORMAT, "%s: window_size %d is not a multiple of "
                                           "spatial_merge_size x patch_size", where, c->window);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(v, "hidden_act");
    if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu") != 0))
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: hidden_act must be \"silu\"", where);
    c->act = VG_ACT_SILU;
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
    c->win_units = c->window / c->merge / c->patch;
    return VG_OK;
}
