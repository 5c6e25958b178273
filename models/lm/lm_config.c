/* SPDX-License-Identifier: Apache-2.0 */
/* config.json of a Qwen2 or Qwen3 checkpoint: parsed, validated, defaults as Hugging Face's.
 * What vg does not implement is refused by name: another model_type, sliding-window attention
 * in use, rope scaling (rope_scaling or rope_parameters with a type other than default), an
 * activation other than silu. */
#include <stdio.h>
#include <string.h>

#include "lm_internal.h"

/* rope_scaling / rope_parameters: absent, null, or of type "default". */
static vg_status check_rope(const cJSON *root, const char *where, const char *key)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!r || cJSON_IsNull(r)) return VG_OK;
    if (!cJSON_IsObject(r))
        return vg_error_set(VG_ERR_FORMAT, "%s: '%s' must be an object or null", where, key);
    const char *names[] = {"rope_type", "type"};
    for (int i = 0; i < 2; i++) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, names[i]);
        if (!t || cJSON_IsNull(t)) continue;
        if (!cJSON_IsString(t) || strcmp(t->valuestring, "default") != 0)
            return vg_error_set(VG_ERR_UNSUPPORTED, "%s: %s.%s '%.40s' is not supported (only "
                                                    "plain rotary embeddings: no rope scaling)",
                                where, key, names[i], cJSON_IsString(t) ? t->valuestring : "?");
    }
    return VG_OK;
}

vg_status lm_config_parse(const cJSON *root, const char *where, lm_cfg *c)
{
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(root)) return vg_error_set(VG_ERR_FORMAT, "%s: not a JSON object", where);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!cJSON_IsString(mt))
        return vg_error_set(VG_ERR_FORMAT, "%s: no 'model_type' string", where);
    if (strcmp(mt->valuestring, "qwen2") == 0) c->arch = LM_QWEN2;
    else if (strcmp(mt->valuestring, "qwen3") == 0) c->arch = LM_QWEN3;
    else
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: model_type '%.40s' is not supported by the "
                                                "language model (qwen2 or qwen3)", where, mt->valuestring);
    vg_status st = VG_OK;
#define INT(key, fallback, lo, hi, dst) \
    if (st == VG_OK) st = vg_json_int(root, where, key, fallback, lo, hi, dst)
    INT("num_hidden_layers", -1, 1, LM_MAX_LAYERS, &c->layers);
    INT("hidden_size", -1, 1, 1 << 16, &c->hidden);
    INT("num_attention_heads", -1, 1, 1024, &c->heads);
    INT("num_key_value_heads", c->heads > 0 ? c->heads : 1, 1, 1024, &c->kv_heads);
    INT("intermediate_size", -1, 1, 1 << 20, &c->inter);
    INT("vocab_size", -1, 1, 1 << 30, &c->vocab);
    if (st != VG_OK) return st;
    /* head_dim defaults to hidden_size / num_attention_heads (Qwen2 has no such member) */
    int hd_given = cJSON_GetObjectItemCaseSensitive(root, "head_dim") != NULL;
    if (!hd_given && c->hidden % c->heads)
        return vg_error_set(VG_ERR_FORMAT, "%s: hidden_size %d is not divisible by "
                                           "num_attention_heads %d, and no 'head_dim' gives the "
                                           "head size", where, c->hidden, c->heads);
    INT("head_dim", c->hidden / c->heads, 1, 4096, &c->head_dim);
    int maxpos = 0;
    INT("max_position_embeddings", 32768, 1, 1 << 30, &maxpos);
#undef INT
    double eps = 0, theta = 0;
    if (st == VG_OK) st = vg_json_double(root, where, "rms_norm_eps", 0, 1e-6, 0, 1, &eps);
    /* transformers 5 may keep rope_theta inside rope_parameters */
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    double theta_fallback = 10000.0;
    if (cJSON_IsObject(rp)) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(rp, "rope_theta");
        if (cJSON_IsNumber(t)) theta_fallback = t->valuedouble;
    }
    if (st == VG_OK) st = vg_json_double(root, where, "rope_theta", 0, theta_fallback, 1e-6, 1e12, &theta);
    if (st == VG_OK) st = vg_json_bool(root, where, "tie_word_embeddings", 0, &c->tied);
    if (st == VG_OK) st = check_rope(root, where, "rope_scaling");
    if (st == VG_OK) st = check_rope(root, where, "rope_parameters");
    if (st != VG_OK) return st;
    int sliding = 0;
    VGM_TRY(vg_json_bool(root, where, "use_sliding_window", 0, &sliding));
    if (sliding)
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: use_sliding_window is true: sliding-window "
                                                "attention is not supported", where);
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    if (cJSON_IsArray(lt))
        for (const cJSON *e = lt->child; e; e = e->next)
            if (!cJSON_IsString(e) || strcmp(e->valuestring, "full_attention") != 0)
                return vg_error_set(VG_ERR_UNSUPPORTED, "%s: layer_types holds '%.40s': only "
                                                        "full_attention layers are supported",
                                    where, cJSON_IsString(e) ? e->valuestring : "?");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu") != 0))
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: hidden_act must be \"silu\"", where);
    if (c->heads % c->kv_heads)
        return vg_error_set(VG_ERR_FORMAT, "%s: num_attention_heads %d is not a multiple of "
                                           "num_key_value_heads %d", where, c->heads, c->kv_heads);
    if (c->head_dim % 8 || c->head_dim > 256) {
        char from[96] = "";
        if (!hd_given)
            snprintf(from, sizeof from, " (hidden_size %d / num_attention_heads %d)", c->hidden,
                     c->heads);
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: head_dim %d%s: paged attention takes a "
                                                "multiple of 8 up to 256", where, c->head_dim, from);
    }
    if (c->arch == LM_QWEN2) {
        c->qkv_bias = 1;
    } else {
        int bias = 0;
        VGM_TRY(vg_json_bool(root, where, "attention_bias", 0, &bias));
        if (bias)
            return vg_error_set(VG_ERR_UNSUPPORTED, "%s: attention_bias is true: Qwen3 with "
                                                    "attention biases is not supported", where);
        c->qk_norm = 1;
    }
    c->max_pos = maxpos;
    c->eps = (float)eps;
    c->theta = (float)theta;
    c->inter_pad = (c->inter + 15) / 16 * 16;
    return VG_OK;
}

/* Whether heads, kv_heads and intermediate split `size` ways (lm_tp_plan's rules). */
static vg_status tp_check(int heads, int kv_heads, int inter, int size)
{
    if (size < 1)
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: tensor parallelism over %d ranks", size);
    if (heads % size)
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: the model's %d attention heads do not split "
                                                "over %d ranks (heads %% ranks must be 0)", heads, size);
    if (kv_heads % size && size % kv_heads)
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: the model's %d kv heads neither split over %d "
                                                "ranks nor replicate on them (kv_heads %% ranks or "
                                                "ranks %% kv_heads must be 0)", kv_heads, size);
    if (inter % size)
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: the model's intermediate size %d does not split "
                                                "over %d ranks", inter, size);
    return VG_OK;
}

vg_status lm_tp_plan(const lm_cfg *full, int size, int rank, lm_cfg *local, lm_tp *tp)
{
    VGM_TRY(tp_check(full->heads, full->kv_heads, full->inter, size));
    if (rank < 0 || rank >= size)
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: rank %d of %d", rank, size);
    *local = *full;
    memset(tp, 0, sizeof *tp);
    tp->rank = rank, tp->size = size;
    local->heads = full->heads / size;
    tp->q_row0 = (int64_t)rank * local->heads * full->head_dim;
    if (full->kv_heads % size == 0) {
        local->kv_heads = full->kv_heads / size;
        tp->kv_row0 = (int64_t)rank * local->kv_heads * full->head_dim;
    } else { /* fewer kv heads than ranks: size / kv_heads ranks share each, as vLLM does */
        local->kv_heads = 1;
        tp->kv_row0 = (int64_t)(rank / (size / full->kv_heads)) * full->head_dim;
    }
    local->inter = full->inter / size;
    local->inter_pad = (local->inter + 15) / 16 * 16;
    tp->inter_row0 = (int64_t)rank * local->inter;
    tp->vs = (full->vocab + size - 1) / size;
    return VG_OK;
}

vg_status vg_lm_tp_check(const vg_lm_info *info, int tp_size)
{
    if (!info) return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_tp_check: NULL info");
    return tp_check(info->heads, info->kv_heads, info->intermediate, tp_size);
}
