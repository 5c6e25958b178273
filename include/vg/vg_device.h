/* SPDX-License-Identifier: Apache-2.0 */
/* vg: the core device API. The one door from applications, models and tools to a backend.
 *
 * Memory, copies, fills, streams, events, graphs and one function per op of the catalogue
 * (vg_ops.h). Every call is checked here, once, before the backend sees it: NULL handles and
 * pointers, dtypes, shapes, leading dimensions, element alignment, whether the device supports
 * the op (and the dtype), and capture state: an op the device cannot capture, enqueued on a
 * stream that is capturing, is refused with a message naming the op. A failed check returns
 * VG_ERR_INVALID_ARG, VG_ERR_UNSUPPORTED or VG_ERR_STATE and one readable message
 * (vg_last_error()); nothing is enqueued. The checks are per call, never per element.
 *
 * Handles: a stream, event, graph or graph exec belongs to the runtime it was created on and
 * must be destroyed before that runtime is closed. */
#ifndef VG_DEVICE_H
#define VG_DEVICE_H

#include "vg.h"
#include "vg_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_stream vg_stream;
typedef struct vg_event vg_event;
typedef struct vg_graph vg_graph;
typedef struct vg_graph_exec vg_graph_exec;

/* ---- memory ------------------------------------------------------------------------------- */

/* Device memory; bytes >= 1. Freed with vg_mem_free (NULL is a no-op). */
VG_API vg_status vg_mem_alloc(vg_runtime *rt, size_t bytes, void **out);
VG_API vg_status vg_mem_free(vg_runtime *rt, void *ptr);
/* Host memory for staging copies: page-locked where the device reports VG_CAP_PINNED_HOST. */
VG_API vg_status vg_host_alloc(vg_runtime *rt, size_t bytes, void **out);
VG_API vg_status vg_host_free(vg_runtime *rt, void *ptr);

/* Asynchronous copies and fills on stream s; bytes == 0 is a no-op. The host side of a copy
 * must stay valid until the stream has passed it. */
VG_API vg_status vg_mem_copy_h2d(vg_stream *s, void *dst, const void *src, size_t bytes);
VG_API vg_status vg_mem_copy_d2h(vg_stream *s, void *dst, const void *src, size_t bytes);
VG_API vg_status vg_mem_copy_d2d(vg_stream *s, void *dst, const void *src, size_t bytes);
/* Every byte of dst[0..bytes) = value (0..255). */
VG_API vg_status vg_mem_set(vg_stream *s, void *dst, int value, size_t bytes);

/* ---- streams and events -------------------------------------------------------------------- */

VG_API vg_status vg_stream_create(vg_runtime *rt, vg_stream **out);
/* Waits for s's work. A capturing s has its capture discarded (logged); while this thread captures
 * on another stream the destroy is refused (VG_ERR_CAPTURE, that capture invalidated) and s stays. */
VG_API vg_status vg_stream_destroy(vg_stream *s); /* NULL is a no-op */
/* Wait on the host until everything enqueued on s has finished. Refused while s captures. */
VG_API vg_status vg_stream_sync(vg_stream *s);
/* Later work on s waits for e's last record. */
VG_API vg_status vg_stream_wait_event(vg_stream *s, vg_event *e);
VG_API vg_runtime *vg_stream_runtime(const vg_stream *s);
/* 1 while s is between vg_graph_capture_begin and vg_graph_capture_end. */
VG_API int vg_stream_is_capturing(const vg_stream *s);

VG_API vg_status vg_event_create(vg_runtime *rt, vg_event **out);
VG_API vg_status vg_event_destroy(vg_event *e); /* NULL is a no-op */
VG_API vg_status vg_event_record(vg_event *e, vg_stream *s);
VG_API vg_status vg_event_sync(vg_event *e);
/* Device milliseconds between two recorded, completed events of one runtime. */
VG_API vg_status vg_event_elapsed_ms(vg_event *start, vg_event *end, float *ms);

/* ---- graphs: record the work enqueued on a stream once, replay it with one call ------------- */

/* Needs VG_CAP_GRAPH (VG_ERR_UNSUPPORTED otherwise). Between begin and end, work enqueued on s
 * is recorded, not run; ops the device cannot capture are refused (VG_ERR_STATE). */
VG_API vg_status vg_graph_capture_begin(vg_stream *s);
/* Ends the capture in every case (also after a failed op), so s is usable again. */
VG_API vg_status vg_graph_capture_end(vg_stream *s, vg_graph **out);
VG_API vg_status vg_graph_destroy(vg_graph *g); /* NULL is a no-op */
VG_API vg_status vg_graph_instantiate(vg_graph *g, vg_graph_exec **out);
VG_API vg_status vg_graph_exec_launch(vg_graph_exec *x, vg_stream *s);
/* Make x replay g instead (VG_CAP_GRAPH_UPDATE). *applied is 0 when the topology changed and
 * x must be instantiated anew; x is unchanged then. */
VG_API vg_status vg_graph_exec_update(vg_graph_exec *x, vg_graph *g, int *applied);
VG_API vg_status vg_graph_exec_destroy(vg_graph_exec *x); /* NULL is a no-op */

/* Device-side loops (VG_CAP_GRAPH_LOOP; VG_ERR_UNSUPPORTED otherwise). Like
 * vg_graph_capture_begin, but what s records becomes the body of a loop: the graph that
 * vg_graph_loop_capture_end returns runs the body once, then again while the int32 at `flag`
 * (device memory the body writes) is not 0, on the device, in one vg_graph_exec_launch (CUDA: a
 * WHILE conditional node, CUDA 12.4 and newer). A body the device cannot loop over (CUDA: event
 * nodes, for one) fails at vg_graph_loop_capture_end or vg_graph_instantiate, never at launch.
 * Instantiate, launch and destroy it like any graph; vg_graph_capture_end ends it too. */
VG_API vg_status vg_graph_loop_capture_begin(vg_stream *s, const int32_t *flag);
VG_API vg_status vg_graph_loop_capture_end(vg_stream *s, vg_graph **out);

/* ---- ops (vg_ops.h describes what each computes and its preconditions) ---------------------- */

/* VG_OP_SUPPORTED | VG_OP_CAPTURABLE for op on the runtime's device, 0 for an op this core or
 * the backend does not know. *dtypes (may be NULL) gets the VG_DTYPE_BIT set it accepts. */
VG_API uint32_t vg_runtime_op_support(const vg_runtime *rt, vg_op_id op, uint32_t *dtypes);

VG_API vg_status vg_op_fill(vg_stream *s, void *dst, vg_dtype dtype, size_t count, double value);
VG_API vg_status vg_op_axpby(vg_stream *s, size_t n, float alpha, const float *x, float beta,
                             float *y);
VG_API vg_status vg_op_gemm(vg_stream *s, const vg_gemm_args *args);
VG_API vg_status vg_op_gather_rows(vg_stream *s, vg_dtype dtype, void *dst, const void *src,
                                   const int32_t *idx, int64_t rows, int64_t cols);
VG_API vg_status vg_op_rmsnorm(vg_stream *s, vg_dtype dtype, const void *x, const void *w,
                               void *out, int64_t rows, int64_t cols, float eps);
VG_API vg_status vg_op_rotary_2d(vg_stream *s, vg_dtype dtype, void *x, int64_t ld, int64_t rows,
                                 int heads, int head_dim, const int32_t *pos, float theta);
VG_API vg_status vg_op_attention(vg_stream *s, vg_dtype dtype, const void *qkv, int64_t ld_qkv,
                                 void *out, int64_t ld_out, int64_t rows, int heads, int head_dim,
                                 const int32_t *cu_seqlens, int num_segments, float scale);
VG_API vg_status vg_op_silu_mul(vg_stream *s, vg_dtype dtype, const void *in, int64_t ld_in,
                                void *out, int64_t ld_out, int64_t rows, int64_t cols);
VG_API vg_status vg_op_convert(vg_stream *s, vg_dtype src_dtype, const void *src,
                               vg_dtype dst_dtype, void *dst, size_t count);
VG_API vg_status vg_op_attention_rotary(vg_stream *s, vg_dtype dtype, const void *qkv,
                                        int64_t ld_qkv, void *out, int64_t ld_out, int64_t rows,
                                        int heads, int head_dim, const int32_t *cu_seqlens,
                                        int num_segments, float scale, const int32_t *pos,
                                        float theta);

/* op table version 4 */
VG_API vg_status vg_op_rotary(vg_stream *s, vg_dtype dtype, void *x, int64_t ld, int64_t rows,
                              int heads, int head_dim, const int32_t *pos, float theta);
VG_API vg_status vg_op_rmsnorm_heads(vg_stream *s, vg_dtype dtype, void *x, int64_t ld,
                                     int64_t rows, int heads, int head_dim, const void *w,
                                     float eps);
VG_API vg_status vg_op_kv_store(vg_stream *s, vg_dtype dtype, const void *k, int64_t ld_k,
                                const void *v, int64_t ld_v, void *k_cache, void *v_cache,
                                const int32_t *slots, int64_t rows, int kv_heads, int head_dim);
VG_API vg_status vg_op_paged_attention(vg_stream *s, vg_dtype dtype, const void *q, int64_t ld_q,
                                       void *out, int64_t ld_out, int64_t rows,
                                       const void *k_cache, const void *v_cache,
                                       const int32_t *block_tables, int max_blocks,
                                       const int32_t *context_lens, const int32_t *query_start,
                                       int num_seqs, int heads, int kv_heads, int head_dim,
                                       int block_size, float scale);
VG_API vg_status vg_op_argmax(vg_stream *s, vg_dtype dtype, const void *x, int64_t ld,
                              int64_t rows, int64_t cols, int32_t *out);

/* op table version 5 */
VG_API vg_status vg_op_layernorm(vg_stream *s, vg_dtype dtype, const void *x, const void *w,
                                 const void *b, void *out, int64_t rows, int64_t cols, float eps);
VG_API vg_status vg_op_gather_weighted(vg_stream *s, vg_dtype dtype, void *dst, const void *src,
                                       int64_t src_rows, const int32_t *idx, const float *w,
                                       int64_t rows, int64_t cols, int taps);

/* op table version 6 */
VG_API vg_status vg_op_rotary_kv_store(vg_stream *s, vg_dtype dtype, void *qkv, int64_t ld,
                                       int64_t rows, int heads, int kv_heads, int head_dim,
                                       const void *q_norm, const void *k_norm, float eps,
                                       const int32_t *pos, float theta, void *k_cache,
                                       void *v_cache, const int32_t *slots);

/* op table version 7 */
VG_API vg_status vg_op_lm_advance(vg_stream *s, const vg_lm_advance_args *args);
/* op table version 8 (vg_ops.h): rotary_kv_store and paged_attention in one op. Every device runs
 * it: where the backend has no such member the core makes the two calls. vg_runtime_op_support
 * says whether the backend implements it; a backend may still launch the two steps apart for
 * shapes its fused kernel does not take (cuda: one kernel for BF16/F16 at head_dim 64 or 128 and
 * up to 64 rows, on NVIDIA). */
VG_API vg_status vg_op_rotary_paged_attention(vg_stream *s, const vg_rotary_paged_args *args);

#ifdef __cplusplus
}
#endif
#endif /* VG_DEVICE_H */
