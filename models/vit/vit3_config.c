/* SPDX-License-Identifier: Apache-2.0 */
/* The Qwen3-VL members of vision_config: the MLP's activation, the learned position table, the
 * deepstack blocks and the rotary base. Defaults as Hugging Face's Qwen3VLVisionConfig. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vit_common.h"

/* hidden_act names of transformers' activation table that vg's GEMM epilogue computes. */
static const struct {
    const char *name;
    vg_activation act;
} k_acts[] = {
    {"gelu_pytorch_tanh", VG_ACT_GELU_TANH},
    {"gelu_new", VG_ACT_GELU_TANH}, /* the same tanh approximation */
    {"gelu", VG_ACT_GELU_ERF},
    {"silu", VG_ACT_SILU},
    {"quick_gelu", VG_ACT_QUICK_GELU},
};

static vg_status parse_act(const cJSON *v, const char *where, vit_cfg *c)
{
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(v, "hidden_act");
    c->act = VG_ACT_GELU_TANH;
    if (!act) return VG_OK;
    for (size_t i = 0; cJSON_IsString(act) && i < VGM_ARRAY_LEN(k_acts); i++)
        if (strcmp(act->valuestring, k_acts[i].name) == 0) {
            c->act = k_acts[i].act;
            return VG_OK;
        }
    if (!cJSON_IsString(act)) return vg_error_set(VG_ERR_FORMAT, "%s: hidden_act must be a string", where);
    return vg_error_set(VG_ERR_UNSUPPORTED, "%s: hidden_act '%.40s' is not supported (known: "
                                            "gelu_pytorch_tanh, gelu_new, gelu, silu, quick_gelu)",
                        where, act->valuestring);
}

/* deepstack_visual_indexes: distinct block indexes, in the order of the mergers. */
static vg_status parse_deepstack(const cJSON *v, const char *where, vit_cfg *c)
{
    static const int k_default[] = {8, 16, 24};
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(v, "deepstack_visual_indexes");
    if (ds && !cJSON_IsArray(ds))
        return vg_error_set(VG_ERR_FORMAT, "%s: deepstack_visual_indexes must be an array", where);
    int n = 0;
    if (!ds) {
        for (; n < (int)VGM_ARRAY_LEN(k_default); n++) c->deepstack_block[n] = k_default[n];
    } else {
        for (const cJSON *e = ds->child; e; e = e->next) {
            double d = cJSON_IsNumber(e) ? e->valuedouble : -1;
            if (n == VIT_MAX_DEPTH || d < 0 || d != floor(d) || d >= VIT_MAX_DEPTH)
                return vg_error_set(VG_ERR_FORMAT, "%s: deepstack_visual_indexes holds %g, not a "
                                                   "block index", where, d);
            c->deepstack_block[n++] = (int)d;
        }
    }
    for (int k = 0; k < n; k++) {
        if (c->deepstack_block[k] >= c->depth)
            return vg_error_set(VG_ERR_FORMAT, "%s: deepstack_visual_indexes holds %d, not a block "
                                               "index below depth %d", where, c->deepstack_block[k],
                                c->depth);
        for (int j = 0; j < k; j++)
            if (c->deepstack_block[j] == c->deepstack_block[k])
                return vg_error_set(VG_ERR_FORMAT, "%s: deepstack_visual_indexes names block %d "
                                                   "twice", where, c->deepstack_block[k]);
    }
    c->num_deepstack = n;
    return VG_OK;
}

/* The rotary base: rope_parameters.rope_theta (transformers 5), else rope_theta, else 10000. */
static vg_status parse_theta(const cJSON *v, const char *where, vit_cfg *c)
{
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(v, "rope_parameters");
    double theta = 10000.0;
    vg_status st = VG_OK;
    if (cJSON_IsObject(rp)) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(rp, "rope_type");
        if (type && (!cJSON_IsString(type) || strcmp(type->valuestring, "axial") != 0))
            return vg_error_set(VG_ERR_UNSUPPORTED, "%s: rope_parameters.rope_type must be "
                                                    "\"axial\" (the 2-D rotary)", where);
        char sub[4300];
        snprintf(sub, sizeof sub, "%s.rope_parameters", where);
        st = vg_json_double(rp, sub, "rope_theta", 0, theta, 1e-3, 1e12, &theta);
    } else if (rp && !cJSON_IsNull(rp)) {
        return vg_error_set(VG_ERR_FORMAT, "%s: rope_parameters must be an object", where);
    } else {
        st = vg_json_double(v, where, "rope_theta", 0, theta, 1e-3, 1e12, &theta);
    }
    c->theta = (float)theta;
    return st;
}

vg_status vit3_config_parse(const cJSON *v, const char *where, vit_cfg *c)
{
    vg_status st = parse_act(v, where, c);
    if (st == VG_OK) st = vg_json_int(v, where, "num_position_embeddings", 2304, 1, 1 << 24, &c->num_pos);
    if (st != VG_OK) return st;
    int side = (int)lround(sqrt((double)c->num_pos));
    if (side * side != c->num_pos)
        return vg_error_set(VG_ERR_FORMAT, "%s: num_position_embeddings %d is not a square (the "
                                           "learned positions form a square grid)", where, c->num_pos);
    c->pos_side = side;
    st = parse_deepstack(v, where, c);
    if (st == VG_OK) st = parse_theta(v, where, c);
    if (st != VG_OK) return st;
    for (int i = 0; i < c->depth; i++) c->fullatt[i] = 1; /* every block attends to its frame */
    c->window = 0;
    c->win_units = 0;
    return VG_OK;
}
