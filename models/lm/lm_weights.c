/* SPDX-License-Identifier: Apache-2.0 */
/* Weights of a Qwen2 / Qwen3 decoder: the list of its tensors, for the weight arena (which
 * checks them against the checkpoint, converts them to the compute dtype and uploads them into
 * one device allocation). q|k|v are stacked into one projection (with their biases for Qwen2),
 * gate|up into one, each part padded to inter_pad rows; a tied lm_head is the embedding. */
#include <stdlib.h>
#include <string.h>

#include "lm_internal.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define NDIM(...) ((int)(sizeof(SHAPE(__VA_ARGS__)) / sizeof(int64_t)))
#define ONE(slot, name, ...) \
    VGM_TRY(vg_arena_one(a, &(slot), name, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__)))

typedef struct describe_ctx {
    const lm_cfg *c;
    lm_weights *w;
} describe_ctx;

static vg_status describe(vg_arena *a, void *user)
{
    const describe_ctx *x = user;
    const lm_cfg *c = x->c;
    lm_weights *w = x->w;
    int64_t h = c->hidden, I = c->inter, Ip = c->inter_pad, hd = c->head_dim;
    int64_t qw = lm_q_width(c), kvw = lm_kv_width(c);
    VGM_TRY(vg_arena_prefix(a, "model."));
    ONE(w->embed, "embed_tokens.weight", (int64_t)c->vocab, h);
    for (int i = 0; i < c->layers; i++) {
        lm_layer *L = &w->layers[i];
        VGM_TRY(vg_arena_prefix(a, "model.layers.%d.", i));
        ONE(L->in_norm, "input_layernorm.weight", h);
        /* a buffer older exports saved; vg computes the rotary frequencies itself */
        VGM_TRY(vg_arena_skip(a, "self_attn.rotary_emb.inv_freq"));
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &L->qkv_w, .nparts = 3, .ndim = 2, .shape = SHAPE(0, h),
                                    .names = (const char *[]){"self_attn.q_proj.weight",
                                                              "self_attn.k_proj.weight",
                                                              "self_attn.v_proj.weight"},
                                    .part_rows = SHAPE(qw, kvw, kvw)}));
        if (c->qkv_bias)
            VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                        .slot = &L->qkv_b, .nparts = 3, .ndim = 1, .shape = SHAPE(0),
                                        .names = (const char *[]){"self_attn.q_proj.bias",
                                                                  "self_attn.k_proj.bias",
                                                                  "self_attn.v_proj.bias"},
                                        .part_rows = SHAPE(qw, kvw, kvw)}));
        if (c->qk_norm) {
            ONE(L->q_norm, "self_attn.q_norm.weight", hd);
            ONE(L->k_norm, "self_attn.k_norm.weight", hd);
        }
        ONE(L->o_w, "self_attn.o_proj.weight", h, qw);
        ONE(L->post_norm, "post_attention_layernorm.weight", h);
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &L->gu_w, .nparts = 2, .ndim = 2, .shape = SHAPE(I, h),
                                    .names = (const char *[]){"mlp.gate_proj.weight",
                                                              "mlp.up_proj.weight"},
                                    .rows_pad = Ip}));
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &L->down_w, .ndim = 2, .shape = SHAPE(h, I),
                                    .names = (const char *[]){"mlp.down_proj.weight"},
                                    .cols_pad = Ip}));
    }
    VGM_TRY(vg_arena_prefix(a, "model."));
    ONE(w->final_norm, "norm.weight", h);
    VGM_TRY(vg_arena_prefix(a, "%s", ""));
    if (!c->tied) ONE(w->lm_head, "lm_head.weight", (int64_t)c->vocab, h);
    else VGM_TRY(vg_arena_skip(a, "lm_head.weight")); /* a tied copy some exports keep: unused */
    return VG_OK;
}

vg_status lm_weights_load(vg_runtime *rt, const vg_ckpt *ck, uint64_t seed, const lm_cfg *cfg,
                          vg_dtype dt, lm_weights *w)
{
    memset(w, 0, sizeof *w);
    w->layers = calloc((size_t)cfg->layers, sizeof *w->layers);
    if (!w->layers) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: out of memory");
    describe_ctx x = {.c = cfg, .w = w};
    /* every tensor of the checkpoint is the decoder's */
    vg_arena_source src = {.ck = ck, .seed = seed, .dtype = dt, .what = "lm", .owns = ""};
    vg_status st = vg_arena_load(rt, &src, describe, &x, &w->mem);
    if (st != VG_OK) {
        lm_weights_free(rt, w);
        return st;
    }
    if (cfg->tied) w->lm_head = w->embed;
    return VG_OK;
}

void lm_weights_free(vg_runtime *rt, lm_weights *w)
{
    vg_arena_block_free(rt, &w->mem);
    free(w->layers);
    memset(w, 0, sizeof *w);
}
