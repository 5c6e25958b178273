/* SPDX-License-Identifier: Apache-2.0 */
/* What both vision towers' pieces use: the op checks, the runner's buffers (reserve) and the
 * per-call upload of pixels and metadata (prepare), which asks the model's tower for its layout.
 *
 * Every buffer is a runner buffer sized for the padded token count; per-call data (positions,
 * permutations, segment bounds, taps) sits in VB_META, uploaded by prepare before the graphs
 * run, so no graph ever holds request data. */
#include <stdio.h>
#include <stdlib.h>

#include "vit_common.h"

#define BUF VGM_BUF
#define TRY VGM_TRY

vg_status vit_require_ops(const vg_vit *m, const vg_op_id *needed, size_t n)
{
    char needer[96];
    snprintf(needer, sizeof needer, "the %s vision encoder", m->tower->name);
    return vgm_require_ops(m->rt, needed, n, m->dt, "vit", needer);
}

int32_t *vit_meta_at(vg_runner *r, size_t offset) { return (int32_t *)BUF(VB_META) + offset; }

vg_status vit_rotary_qk(const vg_vit *m, vg_runner *r, vg_stream *s, const vit_meta_layout *l)
{
    const vit_cfg *c = &m->cfg;
    /* q and k are the first 2·heads head slices of each qkv row */
    return vg_op_rotary_2d(s, m->dt, BUF(VB_QKV), 3 * (int64_t)c->hidden, l->tokens, 2 * c->heads,
                           c->head_dim, vit_meta_at(r, l->pos), c->theta);
}

vg_status vit_pieces_alloc(vg_vit *m, int n)
{
    m->pieces = calloc((size_t)n, sizeof *m->pieces);
    if (!m->pieces) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vit: out of memory");
    m->iface = (vg_model_iface){.struct_size = sizeof(vg_model_iface), .model = m,
                                .pieces = m->pieces, .num_pieces = n, .reserve = vit_reserve,
                                .prepare = vit_prepare};
    return VG_OK;
}

vg_status vit_reserve(void *mp, vg_runner *r, const vg_batch_desc *d)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    size_t S = (size_t)d->num_tokens, e = vg_dtype_size(m->dt), h = (size_t)c->hidden;
    int q3 = c->family == VIT_QWEN3;
    vit_meta_layout l = vit_meta_layout_for(c, d->num_tokens);
    size_t out = (size_t)l.units * (size_t)c->out_hidden * e; /* one merged output */
    const size_t bytes[VB_COUNT_] = {
        [VB_PIX] = S * (size_t)c->patch_dim * e, [VB_H0] = S * h * e,   [VB_H] = S * h * e,
        [VB_N] = S * h * e,                      [VB_QKV] = 3 * S * h * e, [VB_ATT] = S * h * e,
        [VB_GU] = (q3 ? 1 : 2) * S * (size_t)c->inter_pad * e,
        /* the gated GEMM leaves silu(gate)·up in VB_GU */
        [VB_M] = q3 || m->gated_gu ? 0 : S * (size_t)c->inter_pad * e,
        [VB_MERGE1] = S * h * e,                 [VB_MERGE2] = q3 ? 0 : out,
        [VB_OUT] = (1 + (size_t)c->num_deepstack) * out, [VB_META] = l.total * sizeof(int32_t),
    };
    for (int i = 0; i < VB_COUNT_; i++) TRY(vg_runner_buffer_reserve(r, i, bytes[i]));
    return VG_OK;
}

/* rows x cols pixels of call->device_pixels (vg_vit_encode_device) into dst in dtype dt,
 * copied or converted on the device, ordered on s. */
static vg_status device_pixels(vg_stream *s, const vit_call *call, void *dst, vg_dtype dt,
                               int64_t rows, int64_t cols)
{
    size_t count = (size_t)rows * (size_t)cols;
    if (call->device_dtype == dt)
        return vg_mem_copy_d2d(s, dst, call->device_pixels, count * vg_dtype_size(dt));
    return vg_op_convert(s, call->device_dtype, call->device_pixels, dt, dst, count);
}

vg_status vit_prepare(void *mp, vg_runner *r, const vg_batch_desc *real, const vg_batch_desc *padded,
                      vg_stream *s, const void *inputs)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    /* warm-up (no inputs): one image of 2 x tokens/2 patches of zero pixels fills the buffers
     * with a valid call */
    int64_t warm_grid[3] = {1, c->merge, padded->num_tokens / c->merge};
    vit_call warm = {.pixels = NULL, .grid = warm_grid, .n = 1};
    const vit_call *call = inputs ? (const vit_call *)inputs : &warm;
    vit_meta_layout l = vit_meta_layout_for(c, padded->num_tokens);
    size_t row = (size_t)c->patch_dim * vg_dtype_size(m->dt);
    size_t real_bytes = (size_t)real->num_tokens * row, pad_bytes = (size_t)padded->num_tokens * row;
    size_t meta_bytes = l.total * sizeof(int32_t);
    /* Warm-up prepares bucket after bucket without waiting for the device: the previous
     * bucket's upload may still read the staging this one is about to rewrite. (vg_vit_encode
     * waits for its call to finish, so encode never needs this.) */
    if (!inputs) TRY(vg_stream_sync(s));
    TRY(vgm_stage_reserve(m->rt, &m->meta_stage, &m->meta_bytes, meta_bytes));
    m->tower->meta_fill(c, call->grid, call->n, real->num_tokens, &l, m->meta_stage);
    char *pix = BUF(VB_PIX);
    /* the pixels were converted (and checked) into host staging by vg_vit_encode, or are in
     * device memory (vg_vit_encode_device); zero padding rows embed to zero: they cannot disturb
     * real rows, and stay finite */
    if (call->device_pixels)
        TRY(device_pixels(s, call, pix, m->dt, real->num_tokens, c->patch_dim));
    else if (!call->pixels) real_bytes = 0;
    else TRY(vg_mem_copy_h2d(s, pix, call->pixels, real_bytes));
    if (pad_bytes > real_bytes) TRY(vg_mem_set(s, pix + real_bytes, 0, pad_bytes - real_bytes));
    TRY(vg_mem_copy_h2d(s, BUF(VB_META), m->meta_stage, meta_bytes));
    return vg_event_record(m->ev0, s); /* the forward's device time starts here */
}
