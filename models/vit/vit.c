/* SPDX-License-Identifier: Apache-2.0 */
/* The vision encoder's public API: load a checkpoint, encode calls, report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg/vg_half.h"
#include "vit_common.h"
#include "../common/model_load.h"

void vg_vit_options_init(vg_vit_options *o)
{
    if (o) VGM_OPTIONS_DEFAULTS(o);
}

/* At most VIT_MAX_CAPTURE_SIZES capture sizes (counted before any is read), each holding whole
 * merge units. */
static vg_status check_sizes(const vg_vit_options *o, int unit)
{
    const int64_t *sizes = o->capture_sizes;
    int n = o->num_capture_sizes;
    if (!sizes) n = vg_runner_default_sizes(&sizes);
    else if (n < 0 || n > VIT_MAX_CAPTURE_SIZES)
        return vg_error_set(VG_ERR_INVALID_ARG, "vit: at most %d capture sizes", VIT_MAX_CAPTURE_SIZES);
    for (int i = 0; i < n; i++)
        if (sizes[i] % unit)
            return vg_error_set(VG_ERR_INVALID_ARG, "vit: capture size %lld is not a multiple of "
                                                    "spatial_merge_size^2 = %d", (long long)sizes[i], unit);
    return VG_OK;
}

static vg_status make_runner(vg_vit *m)
{
    vgm_graph_opts g = VGM_GRAPH_OPTS(m->opts, m->sizes, m->opts.num_capture_sizes);
    vg_batch_desc like = {.num_tokens = 0};
    return vgm_runner_make(m->rt, &m->iface, &g, &like, &m->runner);
}

/* Everything after the config: options, dtype, weights (from ck, or synthetic), runner. */
static vg_status build(vg_vit *m, const vg_ckpt *ck, uint64_t seed, vg_dtype dt, const vg_vit_options *o)
{
    snprintf(m->model_type, sizeof m->model_type, "%s", vit_family_name(m->cfg.family));
    vg_status st = check_sizes(o, m->cfg.unit);
    if (st != VG_OK) return st;
    m->opts = *o;
    st = vgm_sizes_copy("vit", o->capture_sizes, o->num_capture_sizes, m->sizes,
                        (int)VGM_ARRAY_LEN(m->sizes), &m->opts.num_capture_sizes);
    if (st != VG_OK) return st;
    m->dt = dt;
    if (m->dt != VG_DTYPE_F32 && m->dt != VG_DTYPE_BF16 && m->dt != VG_DTYPE_F16)
        return vg_error_set(VG_ERR_INVALID_ARG, "vit: compute dtype must be F32, BF16 or F16");
    m->tower = vit_tower_of(m->cfg.family); /* what the shared code calls of this tower */
    m->lin = (vgm_linear){.dt = m->dt, .eps = m->cfg.eps};
    /* op table version 9: where a device cuts a norm without a weight into the gate's silu_mul,
     * Qwen2.5-VL's MLP norm is folded into gate|up and costs no launch */
    int fold = m->cfg.family == VIT_QWEN2_5 && vgm_has_op(m->rt, VG_OP_GEMM_RMSNORM_A_UNIT, m->dt);
    st = vit_weights_load(m->rt, m->tower, ck, seed, &m->cfg, m->dt, fold, &m->w);
    if (st == VG_OK) st = vg_event_create(m->rt, &m->ev0);
    if (st == VG_OK) st = vg_event_create(m->rt, &m->ev1);
    if (st == VG_OK) st = m->tower->pieces_init(m);
    if (st == VG_OK) st = make_runner(m);
    return st;
}

static vg_vit *alloc_model(vg_runtime *rt)
{
    vg_vit *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->rt = rt;
    return m;
}

static const vg_vit_options *options_or_default(const vg_vit_options *o, vg_vit_options *def)
{
    vg_vit_options_init(def);
    return o ? o : def;
}

static void free_any(void *m) { vg_vit_free(m); }

vg_status vg_vit_load(vg_runtime *rt, const char *dir, const vg_vit_options *opts, vg_vit **out)
{
    if (!rt || !dir || !out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_vit_load: NULL argument");
    *out = NULL;
    vg_vit_options def;
    opts = options_or_default(opts, &def);
    VGM_TRY(vgm_options_check("vg_vit_load", opts->struct_size, sizeof *opts, "vg_vit_options_init",
                              opts->mode));
    vg_vit *m = alloc_model(rt);
    vg_ckpt *ck = NULL;
    VGM_TRY(vgm_load_begin("vg_vit_load", dir, m, free_any, &ck));
    vg_status st = vit_config_parse(vg_ckpt_config(ck), vg_ckpt_dir(ck), &m->cfg);
    static const char *const patch_embed[] = { /* its dtype rules, under either prefix */
        "visual.patch_embed.proj.weight", "model.visual.patch_embed.proj.weight"};
    if (st == VG_OK) st = build(m, ck, 0, vgm_checkpoint_dtype(ck, opts->compute_dtype, patch_embed, 2), opts);
    return vgm_load_end(st, ck, dir, m, free_any, (void **)out);
}

static const vgm_synthetic k_synthetic[] = {
    {"qwen2.5-vl-7b", "{\"model_type\": \"qwen2_5_vl\", \"vision_config\": {\"depth\": 32, "
                      "\"hidden_size\": 1280, \"intermediate_size\": 3420, \"num_heads\": 16, "
                      "\"out_hidden_size\": 3584, \"fullatt_block_indexes\": [7, 15, 23, 31]}}"},
    {"qwen2.5-vl-3b", "{\"model_type\": \"qwen2_5_vl\", \"vision_config\": {\"depth\": 32, "
                      "\"hidden_size\": 1280, \"intermediate_size\": 3420, \"num_heads\": 16, "
                      "\"out_hidden_size\": 2048, \"fullatt_block_indexes\": [7, 15, 23, 31]}}"},
    {"qwen2.5-vl-tiny", "{\"model_type\": \"qwen2_5_vl\", \"vision_config\": {\"depth\": 4, "
                        "\"hidden_size\": 128, \"intermediate_size\": 200, \"num_heads\": 4, "
                        "\"out_hidden_size\": 96, \"fullatt_block_indexes\": [1, 3]}}"},
    {"qwen3-vl-8b", "{\"model_type\": \"qwen3_vl\", \"vision_config\": {\"depth\": 27, "
                    "\"hidden_size\": 1152, \"intermediate_size\": 4304, \"num_heads\": 16, "
                    "\"out_hidden_size\": 4096, \"patch_size\": 16, \"hidden_act\": "
                    "\"gelu_pytorch_tanh\", \"num_position_embeddings\": 2304, "
                    "\"deepstack_visual_indexes\": [8, 16, 24]}}"},
    {"qwen3-vl-tiny", "{\"model_type\": \"qwen3_vl\", \"vision_config\": {\"depth\": 4, "
                      "\"hidden_size\": 128, \"intermediate_size\": 192, \"num_heads\": 4, "
                      "\"out_hidden_size\": 96, \"patch_size\": 16, \"hidden_act\": "
                      "\"gelu_pytorch_tanh\", \"num_position_embeddings\": 256, "
                      "\"deepstack_visual_indexes\": [1, 2]}}"},
};

vg_status vg_vit_create_synthetic(vg_runtime *rt, const char *config, uint64_t seed, vg_dtype dt,
                                  const vg_vit_options *opts, vg_vit **out)
{
    if (!rt || !config || !out)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_vit_create_synthetic: NULL argument");
    *out = NULL;
    vg_vit_options def;
    opts = options_or_default(opts, &def);
    VGM_TRY(vgm_options_check("vg_vit_create_synthetic", opts->struct_size, sizeof *opts,
                              "vg_vit_options_init", opts->mode));
    const char *json = vgm_synthetic_find(k_synthetic, VGM_ARRAY_LEN(k_synthetic), config);
    if (!json) {
        char known[256];
        vgm_synthetic_names(k_synthetic, VGM_ARRAY_LEN(k_synthetic), known, sizeof known);
        return vg_error_set(VG_ERR_NOT_FOUND, "vit: no synthetic configuration '%s' (known: %s)",
                            config, known);
    }
    cJSON *root = cJSON_Parse(json);
    vg_vit *m = root ? alloc_model(rt) : NULL;
    vg_status st = m ? vit_config_parse(root, config, &m->cfg)
                     : vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_vit_create_synthetic: out of memory");
    cJSON_Delete(root);
    if (st == VG_OK) st = build(m, NULL, seed, dt, opts);
    if (st != VG_OK) {
        vg_vit_free(m);
        return st;
    }
    *out = m;
    return VG_OK;
}

vg_status vg_vit_reconfigure(vg_vit *m, const vg_vit_options *o)
{
    if (!m || !o) return vg_error_set(VG_ERR_INVALID_ARG, "vg_vit_reconfigure: NULL argument");
    VGM_TRY(vgm_options_check("vg_vit_reconfigure", o->struct_size, sizeof *o, "vg_vit_options_init",
                              o->mode));
    vg_status st = check_sizes(o, m->cfg.unit);
    if (st != VG_OK) return st;
    int num = 0;
    st = vgm_sizes_copy("vit", o->capture_sizes, o->num_capture_sizes, m->sizes,
                        (int)VGM_ARRAY_LEN(m->sizes), &num);
    if (st != VG_OK) return st;
    vg_runner_destroy(m->runner);
    m->runner = NULL;
    m->opts = *o;
    m->opts.num_capture_sizes = num;
    return make_runner(m);
}

vg_status vg_vit_flops(const vg_vit *m, const int64_t *grid, int64_t n, double *flops)
{
    if (!m || !flops) return vg_error_set(VG_ERR_INVALID_ARG, "vg_vit_flops: NULL argument");
    int64_t tokens = 0;
    vg_status st = vit_grid_tokens(&m->cfg, grid, n, &tokens);
    if (st != VG_OK) return st;
    vg_vit_info info;
    vg_vit_get_info(m, &info);
    *flops = (double)tokens * info.flops_per_patch_linear + vit_attention_flops(&m->cfg, grid, n);
    return VG_OK;
}

vg_status vg_vit_free(vg_vit *m)
{
    if (!m) return VG_OK;
    vg_runner_destroy(m->runner);
    vg_event_destroy(m->ev0);
    vg_event_destroy(m->ev1);
    if (m->stage) vg_host_free(m->rt, m->stage);
    if (m->meta_stage) vg_host_free(m->rt, m->meta_stage);
    vit_weights_free(m->rt, &m->w);
    free(m->pieces);
    free(m);
    return VG_OK;
}

vg_status vg_vit_get_info(const vg_vit *m, vg_vit_info *i)
{
    if (!m || !i) return vg_error_set(VG_ERR_INVALID_ARG, "vg_vit_get_info: NULL argument");
    memset(i, 0, sizeof *i);
    const vit_cfg *c = &m->cfg;
    snprintf(i->model_type, sizeof i->model_type, "%s", m->model_type);
    i->depth = c->depth, i->hidden = c->hidden, i->heads = c->heads, i->head_dim = c->head_dim;
    i->intermediate = c->inter, i->out_hidden = c->out_hidden, i->patch = c->patch;
    i->temporal_patch = c->tpatch, i->spatial_merge = c->merge, i->in_channels = c->in_ch;
    i->window_size = c->window, i->patch_dim = c->patch_dim, i->compute_dtype = m->dt;
    i->weight_bytes = m->w.mem.bytes;
    i->num_position_embeddings = c->num_pos, i->num_deepstack = c->num_deepstack;
    double h = c->hidden, I = c->inter, mh = h * c->unit;
    /* the MLP: gate, up and down (Qwen2.5-VL), fc1 and fc2 (Qwen3-VL); one merger per output */
    double mlp = c->family == VIT_QWEN3 ? 2 * h * I : 3 * h * I;
    i->flops_per_patch_linear = 2.0 * h * (double)c->patch_dim +
                                c->depth * 2.0 * (3 * h * h + h * h + mlp) +
                                (1 + c->num_deepstack) * 2.0 * (mh * mh + mh * c->out_hidden) / c->unit;
    return VG_OK;
}

vg_runner *vg_vit_runner(vg_vit *m) { return m ? m->runner : NULL; }

/* One host allocation for a call's outputs: the embeddings, then each deepstack feature
 * ([units, cols] F32 each, contiguous), then the array of pointers to the features. */
static float *outputs_alloc(int64_t units, int64_t cols, int nds, float ***deepstack)
{
    size_t floats = (size_t)(1 + nds) * (size_t)units * (size_t)cols;
    size_t at = (floats * sizeof(float) + sizeof(float *) - 1) / sizeof(float *) * sizeof(float *);
    char *base = malloc(at + (size_t)nds * sizeof(float *) + 1);
    if (!base) return NULL;
    float **ptrs = (float **)(base + at);
    for (int k = 0; k < nds; k++) ptrs[k] = (float *)base + (size_t)(1 + k) * (size_t)units * (size_t)cols;
    *deepstack = nds ? ptrs : NULL;
    return (float *)base;
}

vg_status vg_vit_encode(vg_vit *m, const void *pixels, vg_dtype pdt, int64_t rows, int64_t cols,
                        const int64_t *grid, int64_t n, vg_vit_output *out)
{
    double t0 = vgm_now_ms();
    if (!m || !out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_vit_encode: NULL argument");
    memset(out, 0, sizeof *out);
    if (!pixels && rows > 0) return vg_error_set(VG_ERR_INVALID_ARG, "vit: pixel_values is NULL");
    if (pdt != VG_DTYPE_F32 && pdt != VG_DTYPE_BF16 && pdt != VG_DTYPE_F16)
        return vg_error_set(VG_ERR_INVALID_ARG, "vit: pixel_values must be F32, BF16 or F16");
    int64_t tokens = 0;
    vg_status st = vit_validate_input(&m->cfg, rows, cols, grid, n, &tokens);
    if (st != VG_OK) return st;
    int64_t units = tokens / m->cfg.unit, ocols = m->cfg.out_hidden;
    int nout = 1 + m->cfg.num_deepstack; /* the merger's output, then the deepstack features */
    size_t ibytes = (size_t)tokens * (size_t)cols * vg_dtype_size(m->dt);
    size_t obytes = (size_t)units * (size_t)ocols * vg_dtype_size(m->dt); /* one output */
    /* One staging buffer serves the pixels in and the outputs out (the stream orders the
     * upload before the download); sized for both before anything is enqueued. */
    size_t sbytes = ibytes > nout * obytes ? ibytes : nout * obytes;
    st = vgm_stage_reserve(m->rt, &m->stage, &m->stage_bytes, sbytes);
    if (st != VG_OK) return vg_error_prefix("vit: staging %zu bytes: ", sbytes);
    /* Convert before the runner sees the call: a refused input (non-finite values) leaves no
     * trace on the device, the runner or its statistics. */
    st = m->device_input ? VG_OK : vit_convert_pixels(pixels, pdt, m->stage, m->dt, tokens, cols);
    if (st != VG_OK) return st;
    float **deepstack = NULL;
    float *emb = outputs_alloc(units, ocols, m->cfg.num_deepstack, &deepstack);
    if (!emb) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vit: no host memory for the output");
    /* The graph key is the token count alone: one graph serves every split of its tokens. */
    vg_batch_desc d = {.num_tokens = tokens};
    vit_call call = {m->device_input ? NULL : m->stage, grid, n,
                     m->device_input ? pixels : NULL, pdt}; /* device input: vit_input_device.c */
    vg_stream *s = vg_runner_stream(m->runner);
    st = vg_runner_run(m->runner, &d, &call, &out->run); /* prepare records ev0 after the upload */
    if (st == VG_OK) st = vg_event_record(m->ev1, s);
    /* output k sits at k x the bucket's units in VB_OUT: copy its real rows */
    size_t slot = (size_t)(out->run.padded_tokens / m->cfg.unit) * (size_t)ocols * vg_dtype_size(m->dt);
    const char *dev_out = vg_runner_buffer(m->runner, VB_OUT);
    for (int k = 0; k < nout && st == VG_OK; k++)
        st = vg_mem_copy_d2h(s, (char *)m->stage + (size_t)k * obytes, dev_out + (size_t)k * slot, obytes);
    if (st == VG_OK) st = vg_stream_sync(s);
    float ms = 0;
    if (st == VG_OK) st = vg_event_elapsed_ms(m->ev0, m->ev1, &ms);
    if (st != VG_OK) {
        free(emb);
        return vg_error_prefix("vit: encode of %lld patches: ", (long long)tokens);
    }
    const void *p = m->stage;
    size_t count = (size_t)nout * (size_t)units * (size_t)ocols;
    if (m->dt == VG_DTYPE_F32)
        memcpy(emb, p, count * sizeof(float));
    else if (m->dt == VG_DTYPE_BF16)
        for (size_t i = 0; i < count; i++) emb[i] = vg_bf16_to_f32(((const uint16_t *)p)[i]);
    else
        for (size_t i = 0; i < count; i++) emb[i] = vg_f16_to_f32(((const uint16_t *)p)[i]);
    out->embeddings = emb;
    out->rows = units;
    out->cols = ocols;
    out->num_deepstack = m->cfg.num_deepstack;
    out->deepstack = deepstack;
    out->device_ms = ms;
    out->total_ms = vgm_now_ms() - t0;
    return VG_OK;
}
