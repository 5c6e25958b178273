/* SPDX-License-Identifier: Apache-2.0 */
/* Weights of a Qwen2 / Qwen3 decoder: the list of its tensors, for the weight arena (which
 * checks them against the checkpoint, converts them to the compute dtype and uploads them into
 * one device allocation). q|k|v are stacked into one projection (with their biases for Qwen2),
 * gate|up into one, each part padded to inter_pad rows; a tied lm_head is the embedding. */
#include <stdlib.h>
#include <string.h>

#include "lm_internal.h"

typedef struct describe_ctx {
    const lm_cfg *c;     /* the whole model */
    const lm_cfg *local; /* what this rank holds (lm_tp_plan) */
    const lm_tp *tp;
    int fold_post_norm, fold_in_norm;
    lm_weights *w;
} describe_ctx;

static vg_status describe(vg_arena *a, void *user)
{
    const describe_ctx *x = user;
    const lm_cfg *c = x->c;
    const lm_tp *tp = x->tp;
    lm_weights *w = x->w;
    int n = tp->size;
    int64_t h = c->hidden, I = c->inter, hd = c->head_dim, V = c->vocab;
    int64_t qw = lm_q_width(c), kvw = lm_kv_width(c);
    /* this rank's share: q and kv rows, gate|up rows = down columns */
    int64_t qw_l = lm_q_width(x->local), kvw_l = lm_kv_width(x->local), I_l = x->local->inter;
    int64_t Ip_l = x->local->inter_pad;
    const int64_t *qkv_row0 = n > 1 ? VGM_SHAPE(tp->q_row0, tp->kv_row0, tp->kv_row0) : NULL;
    const int64_t *qkv_take = n > 1 ? VGM_SHAPE(qw_l, kvw_l, kvw_l) : NULL;
    const int64_t *gu_row0 = n > 1 ? VGM_SHAPE(tp->inter_row0, tp->inter_row0) : NULL;
    const int64_t *gu_take = n > 1 ? VGM_SHAPE(I_l, I_l) : NULL;
    VGM_TRY(vg_arena_prefix(a, "model."));
    /* whole on every rank (the token gather reads any row); a tied head's slices padded */
    VGM_TRY(vg_arena_add(a, &(vg_arena_spec){.slot = &w->embed, .ndim = 2, .shape = VGM_SHAPE(V, h),
                                             .names = (const char *[]){"embed_tokens.weight"},
                                             .rows_pad = c->tied && n > 1 ? n * tp->vs : 0}));
    for (int i = 0; i < c->layers; i++) {
        lm_layer *L = &w->layers[i];
        VGM_TRY(vg_arena_prefix(a, "model.layers.%d.", i));
        if (!x->fold_in_norm) VGM_ONE(L->in_norm, "input_layernorm.weight", h);
        /* a buffer older exports saved; vg computes the rotary frequencies itself */
        VGM_TRY(vg_arena_skip(a, "self_attn.rotary_emb.inv_freq"));
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &L->qkv_w, .nparts = 3, .ndim = 2, .shape = VGM_SHAPE(0, h),
                                    .names = (const char *[]){"self_attn.q_proj.weight",
                                                              "self_attn.k_proj.weight",
                                                              "self_attn.v_proj.weight"},
                                    .part_rows = VGM_SHAPE(qw, kvw, kvw), .part_row0 = qkv_row0,
                                    .part_take = qkv_take,
                                    .col_scale = x->fold_in_norm ? "input_layernorm.weight" : NULL}));
        if (c->qkv_bias)
            VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                        .slot = &L->qkv_b, .nparts = 3, .ndim = 1, .shape = VGM_SHAPE(0),
                                        .names = (const char *[]){"self_attn.q_proj.bias",
                                                                  "self_attn.k_proj.bias",
                                                                  "self_attn.v_proj.bias"},
                                        .part_rows = VGM_SHAPE(qw, kvw, kvw), .part_row0 = qkv_row0,
                                        .part_take = qkv_take}));
        if (c->qk_norm) { /* one weight of head_dim for every head: whole on every rank */
            VGM_ONE(L->q_norm, "self_attn.q_norm.weight", hd);
            VGM_ONE(L->k_norm, "self_attn.k_norm.weight", hd);
        }
        /* o_proj and down: this rank's columns (their K dimension) */
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){.slot = &L->o_w, .ndim = 2, .shape = VGM_SHAPE(h, qw),
                                                 .names = (const char *[]){"self_attn.o_proj.weight"},
                                                 .col0 = tp->q_row0, .col_take = n > 1 ? qw_l : 0}));
        if (!x->fold_post_norm) VGM_ONE(L->post_norm, "post_attention_layernorm.weight", h);
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &L->gu_w, .nparts = 2, .ndim = 2, .shape = VGM_SHAPE(I, h),
                                    .names = (const char *[]){"mlp.gate_proj.weight",
                                                              "mlp.up_proj.weight"},
                                    .rows_pad = Ip_l, .part_row0 = gu_row0, .part_take = gu_take,
                                    .col_scale = x->fold_post_norm ? "post_attention_layernorm.weight"
                                                                   : NULL}));
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &L->down_w, .ndim = 2, .shape = VGM_SHAPE(h, I),
                                    .names = (const char *[]){"mlp.down_proj.weight"},
                                    .cols_pad = Ip_l, .col0 = tp->inter_row0,
                                    .col_take = n > 1 ? I_l : 0}));
    }
    VGM_TRY(vg_arena_prefix(a, "model."));
    VGM_ONE(w->final_norm, "norm.weight", h);
    VGM_TRY(vg_arena_prefix(a, "%s", ""));
    if (!c->tied) { /* this rank's vocabulary rows, the last slice padded with zero rows */
        int64_t row0 = (int64_t)tp->rank * tp->vs, end = row0 + tp->vs < V ? row0 + tp->vs : V;
        int64_t take = end > row0 ? end - row0 : 0;
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &w->lm_head, .ndim = 2, .shape = VGM_SHAPE(V, h),
                                    .names = (const char *[]){"lm_head.weight"},
                                    .part_row0 = n > 1 ? VGM_SHAPE(row0 < V ? row0 : V) : NULL,
                                    .part_take = n > 1 ? VGM_SHAPE(take) : NULL,
                                    .rows_pad = n > 1 ? tp->vs : 0}));
    } else {
        VGM_TRY(vg_arena_skip(a, "lm_head.weight")); /* a tied copy some exports keep: unused */
    }
    return VG_OK;
}

vg_status lm_weights_load(vg_runtime *rt, const vg_ckpt *ck, uint64_t seed, const lm_cfg *full,
                          const lm_cfg *local, const lm_tp *tp, vg_dtype dt, int fold_post_norm,
                          int fold_in_norm, lm_weights *w)
{
    memset(w, 0, sizeof *w);
    w->layers = calloc((size_t)full->layers, sizeof *w->layers);
    if (!w->layers) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: out of memory");
    describe_ctx x = {.c = full, .local = local, .tp = tp, .fold_post_norm = fold_post_norm,
                      .fold_in_norm = fold_in_norm, .w = w};
    /* every tensor of the checkpoint is the decoder's */
    vg_arena_source src = {.ck = ck, .seed = seed, .dtype = dt, .what = "lm", .owns = ""};
    vg_status st = vg_arena_load(rt, &src, describe, &x, &w->mem);
    if (st != VG_OK) {
        lm_weights_free(rt, w);
        return st;
    }
    if (full->tied) /* the head: this rank's rows of the (padded) embedding */
        w->lm_head = (char *)w->embed + (size_t)tp->rank * (size_t)tp->vs * (size_t)full->hidden *
                                            vg_dtype_size(dt);
    return VG_OK;
}

void lm_weights_free(vg_runtime *rt, lm_weights *w)
{
    vg_arena_block_free(rt, &w->mem);
    free(w->layers);
    memset(w, 0, sizeof *w);
}
