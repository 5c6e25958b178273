/* SPDX-License-Identifier: Apache-2.0 */
/* What every model does around its pieces: keep a copy of its capture sizes, create its runner
 * from the graph options all models' options share, grow its host staging. Not installed. */
#ifndef VG_MODELS_MODEL_BASE_H
#define VG_MODELS_MODEL_BASE_H

#include <string.h>

#include "vg/vg_device.h"
#include "vg/vg_runner.h"

#include "util.h"

/* A runner buffer of the runner `r` in scope (the pieces' and callbacks' parameter). */
#define VGM_BUF(id) vg_runner_buffer(r, (id))

/* A piece's run function (vg_piece.run): the model mp, the runner r, the piece p (its arg), the
 * call's padded batch d, the stream s. */
#define VGM_PIECE(name)                                                                          \
    vg_status name(void *mp, vg_runner *r, const vg_piece *p, const vg_batch_desc *d, vg_stream *s)
/* A vg_piece's ops_used and num_ops_used from a constant array. */
#define VGM_OPS(list) .ops_used = (list), .num_ops_used = (int)VGM_ARRAY_LEN(list)

/* The graph options of a model's options struct (vg_vit_options, vg_lm_options: the same member
 * names), with the capture sizes the model resolved (NULL: the runner's default ladder). */
typedef struct vgm_graph_opts {
    vg_graph_mode mode;
    const int64_t *sizes;
    int num_sizes;
    int64_t max_capture_size;
    int warmup, profile_pieces;
} vgm_graph_opts;
#define VGM_GRAPH_OPTS(o, sizes_, num_sizes_)                                                   \
    ((vgm_graph_opts){(o).mode, (sizes_), (num_sizes_), (o).max_capture_size, (o).warmup,     \
                      (o).profile_pieces})

/* A model's options struct (vg_vit_options, vg_lm_options) at the defaults every model shares:
 * zero, its struct_size, FULL_AND_PIECEWISE graphs, the checkpoint's own compute dtype. */
#define VGM_OPTIONS_DEFAULTS(o)                                                                  \
    do {                                                                                         \
        memset((o), 0, sizeof *(o));                                                             \
        (o)->struct_size = sizeof *(o);                                                          \
        (o)->mode = VG_MODE_FULL_AND_PIECEWISE;                                                  \
        (o)->compute_dtype = VG_DTYPE_COUNT_;                                                    \
    } while (0)

/* A model's options as a caller passed them to `fn`: struct_size at least `need` (else "options.
 * struct_size not set (call <init>)") and a known graph mode; VG_ERR_INVALID_ARG otherwise. */
vg_status vgm_options_check(const char *fn, uint32_t struct_size, size_t need, const char *init,
                            vg_graph_mode mode);

/* Create the runner of `iface` (GEMM plans get tuned on the first call of each bucket: eager
 * first), and with o->warmup capture every bucket a call like `warm_like` can use. */
vg_status vgm_runner_make(vg_runtime *rt, const vg_model_iface *iface, const vgm_graph_opts *o,
                          const vg_batch_desc *warm_like, vg_runner **out);

/* Copy n capture sizes from src (the caller's, which need not outlive the call) into the model's
 * dst[cap]; *num gets n, or 0 when src is NULL. More than cap, or fewer than 0, is refused with
 * "<what>: at most <cap> capture sizes". */
vg_status vgm_sizes_copy(const char *what, const int64_t *src, int n, int64_t *dst, int cap,
                         int *num);

/* Grow a host staging buffer (vg_host_alloc) to at least `bytes` (a quarter more, so slowly
 * growing calls do not reallocate each time); its contents are not kept. */
vg_status vgm_stage_reserve(vg_runtime *rt, void **stage, size_t *have, size_t bytes);

/* 1 when the device implements op for dtype dt (gather_rows and kv_store move bytes of any
 * dtype; an empty dtype set means the device did not say, and the core checks each call). */
int vgm_has_op(vg_runtime *rt, vg_op_id op, vg_dtype dt);
/* VG_OK when the device implements each of ops[0..n) for dt (vgm_has_op); else VG_ERR_UNSUPPORTED:
 * "<who>: backend '<name>' has no <op> for <dtype>, which <needer> needs". */
vg_status vgm_require_ops(vg_runtime *rt, const vg_op_id *ops, size_t n, vg_dtype dt, const char *who,
                          const char *needer);

#endif
