/* SPDX-License-Identifier: Apache-2.0 */
/* vision_config of a Qwen2.5-VL or Qwen3-VL checkpoint: the family picked from model_type, the
 * members both towers share parsed and validated (defaults as Hugging Face's), then the tower's
 * own (vit25_config.c, vit3_config.c). */
#include <stdio.h>
#include <string.h>

#include "vit_common.h"

/* The model_type names of each family, top-level (the whole model) and vision_config's own. */
static const struct {
    const char *name;
    vit_family family;
} k_types[] = {
    {"qwen2_5_vl", VIT_QWEN2_5},
    {"qwen2_5_vl_vision", VIT_QWEN2_5}, /* transformers 5's Qwen2_5_VLVisionConfig */
    {"qwen3_vl", VIT_QWEN3},
    {"qwen3_vl_vision", VIT_QWEN3},  /* transformers' Qwen3VLVisionConfig */
    {"qwen3_vl_moe", VIT_QWEN3},     /* the mixture-of-experts models share the tower */
    {"qwen3_vl_moe_vision", VIT_QWEN3},
};
#define KNOWN_TYPES "qwen2_5_vl, qwen3_vl, qwen3_vl_moe"

const char *vit_family_name(vit_family f) { return f == VIT_QWEN3 ? "qwen3_vl" : "qwen2_5_vl"; }

/* The one place that knows both towers: the shared code reaches each through its table. */
const vit_tower *vit_tower_of(vit_family f) { return f == VIT_QWEN3 ? &vit3_tower : &vit25_tower; }

static int family_of(const char *type, vit_family *f)
{
    for (size_t i = 0; i < VGM_ARRAY_LEN(k_types); i++)
        if (strcmp(type, k_types[i].name) == 0) {
            *f = k_types[i].family;
            return 1;
        }
    return 0;
}

/* Which tower config.json describes: vision_config's model_type when it names one, else the
 * top-level model_type, else (older exports name neither) Qwen2.5-VL. A name that is not a
 * known tower is refused, and so are two names of different towers. */
static vg_status pick_family(const cJSON *root, const cJSON *v, const char *file, vit_family *f)
{
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const cJSON *vt = v ? cJSON_GetObjectItemCaseSensitive(v, "model_type") : NULL;
    vit_family top = VIT_QWEN2_5, vis = VIT_QWEN2_5;
    int has_top = cJSON_IsString(mt), has_vis = cJSON_IsString(vt);
    if (has_top && !family_of(mt->valuestring, &top))
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: model_type '%.40s' is not supported by the "
                                                "vision encoder (known: " KNOWN_TYPES ")",
                            file, mt->valuestring);
    if (!v) return vg_error_set(VG_ERR_FORMAT, "%s: no 'vision_config' object", file);
    if (has_vis && !family_of(vt->valuestring, &vis))
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: vision_config: model_type '%.40s' is not "
                                                "supported by the vision encoder (known: "
                                                KNOWN_TYPES ")", file, vt->valuestring);
    if (has_top && has_vis && top != vis)
        return vg_error_set(VG_ERR_FORMAT, "%s: model_type '%.40s' and vision_config.model_type "
                                           "'%.40s' name different vision towers", file,
                            mt->valuestring, vt->valuestring);
    *f = has_vis ? vis : top;
    return VG_OK;
}

vg_status vit_config_parse(const cJSON *root, const char *dir, vit_cfg *c)
{
    char where[4200];
    snprintf(where, sizeof where, "%s/config.json", dir);
    memset(c, 0, sizeof *c);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "vision_config");
    vg_status st = pick_family(root, cJSON_IsObject(v) ? v : NULL, where, &c->family);
    if (st != VG_OK) return st;
    snprintf(where, sizeof where, "%s/config.json: vision_config", dir);
    int q3 = c->family == VIT_QWEN3;
#define INT(key, fallback, lo, hi, dst) \
    if (st == VG_OK) st = vg_json_int(v, where, key, fallback, lo, hi, dst)
    INT("depth", -1, 1, VIT_MAX_DEPTH, &c->depth);
    INT("hidden_size", -1, 1, 65536, &c->hidden);
    INT("num_heads", -1, 1, 1024, &c->heads);
    INT("intermediate_size", -1, 1, 1 << 20, &c->inter);
    INT("out_hidden_size", -1, 1, 1 << 20, &c->out_hidden);
    INT("patch_size", q3 ? 16 : 14, 1, 1024, &c->patch);
    INT("temporal_patch_size", 2, 1, 64, &c->tpatch);
    INT("spatial_merge_size", 2, 1, 64, &c->merge);
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
    c->inter_pad = (c->inter + 15) / 16 * 16;
    c->unit = c->merge * c->merge;
    c->patch_dim = (int64_t)c->in_ch * c->tpatch * c->patch * c->patch;
    c->eps = 1e-6f;
    c->theta = 10000.0f;
    return vit_tower_of(c->family)->config_parse(v, where, c);
}
