/* SPDX-License-Identifier: Apache-2.0 */
/* Shared state and helpers of the CUDA backend (also compiled for HIP: see vendor.h). */
#ifndef VG_CUDA_COMMON_CUH
#define VG_CUDA_COMMON_CUH

#include <pthread.h>
#include <stdint.h>

#include "vendor.h"
#include "vg/vg_backend.h"

extern const vg_host_services *vgc_host;

/* Map a runtime error to a vg status, with the vendor's name and text in the message. */
vg_status vgc_fail(cudaError_t err, const char *what, const char *file, int line);
#define VGC_CHECK(call)                                                              \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) return vgc_fail(e_, #call, __FILE__, __LINE__);      \
    } while (0)
/* After a kernel launch: launch-configuration errors surface here. */
#define VGC_CHECK_LAUNCH(name) VGC_CHECK(cudaGetLastError())
#define VGC_ERR(status, ...) (vgc_host->set_error((status), __VA_ARGS__), (status))
/* A knob's value: the application's backend option of that name, else the environment. Read at
 * device_open (native.cu lists the names). */
#define vgc_option(name) vg_backend_option(vgc_host, (name))
extern const char *const vgc_option_names[];

struct vgc_gemm_cache;

/* Programmatic dependent launch (sm_90 and newer): off (VG_CUDA_PDL=0, and before Hopper), for
 * launches outside stream capture only (VG_CUDA_PDL=eager), or for captured ones too (the
 * default; VG_CUDA_PDL=1 says so explicitly). */
enum { VGC_PDL_OFF = 0, VGC_PDL_EAGER, VGC_PDL_ALWAYS };

/* GEMM tuning (VG_CUDA_GEMM_TUNE=0|1|2): cuBLASLt's first pick, the fastest of its candidates
 * (the default), or also a search of the configurations around that one. */
enum { VGC_TUNE_OFF = 0, VGC_TUNE_CANDIDATES, VGC_TUNE_WIDE };

/* Streams kept for reuse per device (stream.cu says why); beyond that they are destroyed. */
#define VGC_SPARE_STREAMS 8

struct vg_bk_device {
    int index;
    int simple_attention; /* VG_CUDA_ATTENTION=simple: the CUDA-core kernel for every dtype */
    int wgmma_attention_off; /* VG_CUDA_ATTENTION=mma: the mma.sync kernel on Hopper too */
    int wgmma_attention;  /* the wgmma kernel is compiled for this GPU and not turned off */
    int gemm_tune;        /* VGC_TUNE_*, from VG_CUDA_GEMM_TUNE */
    int gemm_tiled;       /* VG_CUDA_GEMM=tiled: the portable kernel instead of cuBLASLt */
    int decode_heads;     /* VG_CUDA_DECODE_HEADS=1..8: query heads per paged-attention block (0: chosen per call) */
    int decode_tc_off;    /* VG_CUDA_DECODE_TC=0: vg's CUDA-core split kernel for the decode the tensor-core one takes */
    int decode_cluster_max; /* blocks of a cluster decode_tc.cu's whole form may take (1: no clusters) */
    int gemm_cluster_max;   /* blocks of a cluster the skinny GEMM's split may take (1: none; 0 on
                             * HIP, which has no skinny GEMM) */
    int gemm_panel_cluster_max; /* the same for the panel GEMM's split; 0: no panel GEMM (HIP, or a
                                 * device granting a block less shared memory than it takes) */
    int attention_rows;   /* VG_CUDA_ATTENTION_ROWS=64|128: rows per tensor-core attention block (0: chosen per call) */
    int pdl;              /* VGC_PDL_*: where kernels use programmatic dependent launch (VG_CUDA_PDL) */
    char gemm_choice[16]; /* VG_CUDA_GEMM, as given at open ("" when unset) */
    cudaDeviceProp prop;
    cudaStream_t upload_stream; /* for graph uploads at instantiate */
    void *blas;                 /* cublasLtHandle_t (hipBLASLt or none under HIP) */
    /* stream.cu: the CUDA streams of destroyed vg streams, handed to the next ones */
    pthread_mutex_t spare_lock;
    cudaStream_t spare[VGC_SPARE_STREAMS];
    int nspare;
};

/* stream.cu: the device's spare streams destroyed (at device close). */
void vgc_stream_spares_fini(vg_bk_device *dev);

/* Block counters of the kernels that merge their blocks' partial results in the last block to
 * finish (split-K): words [0, VGC_COUNTERS_ATTENTION) for the skinny GEMM, the rest for paged
 * attention and argmax. Zero between kernels: the last block puts its word back. */
#define VGC_COUNTERS 16384
#define VGC_COUNTERS_ATTENTION 8192

struct vg_bk_stream {
    vg_bk_device *dev;
    cudaStream_t s;
    void *gemm_workspace; /* per stream: gemms on different streams may run concurrently */
    size_t gemm_workspace_bytes;
    struct vgc_gemm_cache *gemm_cache;
    unsigned *counters; /* VGC_COUNTERS words of device memory, or NULL (HIP): see above */
    int wrapped;        /* stream_wrap: `s` is the caller's, never destroyed here */
    int native_given;   /* stream_native handed `s` out: destroyed with this stream, never a spare */
    /* graph_loop.cu: between loop_capture_begin and loop_capture_end, the graph holding the
     * WHILE node whose body the stream captures into, its condition and the loop's flag */
    cudaGraph_t loop_graph;
    unsigned long long loop_cond;
    const int32_t *loop_flag;
};

struct vg_bk_event {
    cudaEvent_t e;
};

struct vg_bk_graph {
    cudaGraph_t g;
};
/* stream.cu: a captured graph as the plugin's graph object (g destroyed when that fails) */
vg_status vgc_graph_wrap(cudaGraph_t g, vg_bk_graph **out);

struct vg_bk_exec {
    cudaGraphExec_t x;
};

/* Launch one of this backend's kernels on s. On sm_90 and newer, as a programmatic dependent
 * launch: the GPU may schedule its blocks while the previous kernel on the stream is finishing,
 * which hides part of the gap between the hundreds of small kernels of a forward. Eager, the
 * vision encoder's latency: -10% at 256 patches, -2% at 4096 (H100). Captured, as programmatic
 * edges of the graph: the decode step -4 to -12% at batch 1 and 16, unchanged at 64 (H200,
 * 2026-11-25), the vision encoder unchanged (H100); VG_CUDA_PDL=eager keeps graphs plain for
 * comparison, VG_CUDA_PDL=0 turns it off. Every kernel starts with
 * vgk_grid_sync() (kernels.cuh), which waits for the previous kernel's writes. Errors surface
 * through cudaGetLastError (VGC_CHECK_LAUNCH), as with <<<>>>. Where the vendor has no such
 * launch (HIP: vgc_pdl_capable is 0), dev->pdl is VGC_PDL_OFF and every launch is plain. */
static inline bool vgc_launch_pdl(vg_bk_stream *s)
{
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (s->dev->pdl == VGC_PDL_EAGER && cudaStreamIsCapturing(s->s, &cs) != cudaSuccess)
        (void)cudaGetLastError(), cs = cudaStreamCaptureStatusActive; /* when unsure, plain */
    return s->dev->pdl == VGC_PDL_ALWAYS || (s->dev->pdl == VGC_PDL_EAGER && cs == cudaStreamCaptureStatusNone);
}
/* The launch: programmatic where vgc_launch_pdl says so (cluster.cuh's vgc_launch_cluster asks it
 * too), else plain. */
template <typename... KArgs, typename... Args>
static inline void vgc_launch(vg_bk_stream *s, void (*kern)(KArgs...), dim3 grid, dim3 block,
                              size_t smem, Args... args)
{
    if (vgc_launch_pdl(s)) {
        vgc_launch_programmatic(kern, grid, block, smem, s->s, args...); /* vendor.h */
        return;
    }
    kern<<<grid, block, smem, s->s>>>(args...);
}

/* gemm_tiled.cu: the portable GEMM kernel. Like every op, GEMM receives arguments the core has
 * validated against the catalogue (vg_ops.h); a backend checks only its own limits. */
vg_status vgc_gemm_tiled(vg_bk_stream *s, const vg_gemm_args *a);
/* Member m of the caller's arguments a (a struct of type T), 0 where the core that built them
 * predates it: its struct_size ends before the member (members are only appended). */
#define VGC_ARG_OR_0(a, T, m) ((a)->struct_size >= offsetof(T, m) + sizeof((a)->m) ? (a)->m : 0)
/* The caller's b_static hint (vg_ops.h: gemm; op table version 11). */
static inline int vgc_gemm_b_static(const vg_gemm_args *a) { return VGC_ARG_OR_0(a, vg_gemm_args, b_static) != 0; }
/* The caller's tables_static hint (vg_ops.h: rotary_paged_attention; op table version 12). */
static inline int vgc_rotary_tables_static(const vg_rotary_paged_args *a)
{
    return VGC_ARG_OR_0(a, vg_rotary_paged_args, tables_static) != 0;
}
/* Whether A is rmsnorm'd (vg_ops.h: gemm's norm_w, or norm_unit without a weight). */
static inline int vgc_gemm_normed(const vg_gemm_args *a) { return a->norm_w || a->norm_unit; }
/* Whether a GEMM that does not normalise A itself leaves a unit norm to vgc_gemm_gate_after,
 * which scales each row's gate and up sums by its 1/rms and then adds the bias (vg_ops.h allows
 * it): the GEMM reads A as it is, without the bias, and the norm costs no launch. Not where C's
 * dtype is not A's (silu_mul reads them, and the bias, as one), nor into F16: the sums of an
 * unnormalised row (a residual stream's rms can be in the hundreds) may pass F16's 65504 before
 * the factor brings them back; BF16 and F32 have the range. */
static inline int vgc_gemm_norm_deferred(const vg_gemm_args *a)
{
    return a->norm_unit && a->gate == VG_GEMM_GATE_SILU && a->dtype_c == a->dtype_ab &&
           a->dtype_c != VG_DTYPE_F16;
}
/* A gated GEMM's second step where the GEMM itself did not gate (vg_ops.h: args.gate): silu_mul
 * over C's halves in place, scaled by the rows' 1/rms of A where the norm was deferred. VG_OK at
 * once without a gate. */
vg_status vgc_gemm_gate_after(vg_bk_stream *s, const vg_gemm_args *a);
/* A GEMM with a norm of A (args.norm_w, or norm_unit not deferred) where the GEMM itself does not
 * normalise: rmsnorm into norm_out, and *out = the call on it (in *normed); else *out = a. */
vg_status vgc_gemm_norm_before(vg_bk_stream *s, const vg_gemm_args *a, vg_gemm_args *normed,
                               const vg_gemm_args **out);
/* silu_mul (vg_ops.h) with, where x is not NULL, both halves of row r scaled by
 * 1/sqrt(mean(x[r, :xcols]²) + eps) first (x contiguous, of dtype t), and then bias (NULL: none;
 * [2·cols] of dtype t) added: a deferred unit norm. */
vg_status vgc_silu_mul_scaled(vg_bk_stream *s, vg_dtype t, const void *in, int64_t ld_in, void *out,
                              int64_t ld_out, int64_t rows, int64_t cols, const void *x, int64_t xcols,
                              float eps, const void *bias);

/* gemm.cu (cuBLASLt) on CUDA; backends/hip/hip_glue.cu (the tiled kernel) on HIP */
vg_status vgc_gemm_device_init(vg_bk_device *dev);
void vgc_gemm_device_fini(vg_bk_device *dev);
vg_status vgc_gemm_stream_init(vg_bk_stream *s);
void vgc_gemm_stream_fini(vg_bk_stream *s);
vg_status vgc_op_gemm(vg_bk_device *dev, vg_bk_stream *s, const vg_gemm_args *a);
/* Kernel epilogue for what the GEMM library could not fuse: c = act(c + bias) + residual. */
vg_status vgc_epilogue(vg_bk_stream *s, const vg_gemm_args *a, int add_bias, int add_residual);

/* ops.cu, ops_vit.cu, attention.cu */
extern vg_op_table vgc_ops;
vg_status vgc_op_rmsnorm(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, const void *,
                         void *, int64_t, int64_t, float);
vg_status vgc_op_rotary_2d(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t,
                           int, int, const int32_t *, float);
vg_status vgc_op_attention(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                           void *, int64_t, int64_t, int, int, const int32_t *, int, float);
vg_status vgc_op_attention_rotary(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                                  void *, int64_t, int64_t, int, int, const int32_t *, int, float,
                                  const int32_t *, float);
/* One attention call (validated by the core); pos is NULL unless q and k are rotated on the fly. */
typedef struct vgc_attention_call {
    vg_dtype t;
    const void *qkv;
    int64_t ld_qkv;
    void *out;
    int64_t ld_out;
    int rows, heads, hd;
    const int32_t *cu;
    int nseg;
    float scale;
    const int32_t *pos;
    float theta;
} vgc_attention_call;
/* attention_tc.cu: tensor-core attention for BF16/F16; VG_ERR_UNSUPPORTED when the shape is
 * not covered (no message: the caller falls back). */
vg_status vgc_attention_tc_prepare(void);
vg_status vgc_attention_tc(vg_bk_stream *s, const vgc_attention_call *c);
/* attention_wg.cu: the same with Hopper's wgmma, warp-specialised, for calls without rotation
 * whose q, k and v repacked fit the stream's GEMM workspace; prepare sets dev->wgmma_attention. */
vg_status vgc_attention_wg_prepare(vg_bk_device *dev);
vg_status vgc_attention_wg(vg_bk_stream *s, const vgc_attention_call *c);
/* One paged_attention call, as the op table passes it (vg_ops.h has the contract). */
typedef struct vgc_decode_call {
    vg_dtype t;
    const void *q;
    int64_t ld_q;
    void *out;
    int64_t ld_out;
    int64_t rows;
    const void *k_cache, *v_cache;
    const int32_t *block_tables;
    int max_blocks;
    const int32_t *context_lens, *query_start;
    int num_seqs, heads, kv_heads, head_dim, block_size;
    float scale;
    /* rotary_paged_attention: q is its qkv, and rotary_kv_store's work comes first (decode_tc.cu
     * does it inside its kernel, every other path launches it: vgc_decode_rope_first); NULL for
     * paged_attention */
    const vg_rotary_paged_args *rope;
    /* n >= 1: vg's kernels keep each row's context to one block (1) or to one cluster of n blocks
     * joined in distributed shared memory (decode_tc.cu, sm_90; one block where the device has no
     * clusters), no join through memory (a measured choice of vgc_decode_pick,
     * VGC_DECODE_OWN_WHOLE); 0: they split it as vgc_decode_splits says */
    int whole;
} vgc_decode_call;
/* ops_lm.cu: a rotary_paged_attention call's rotary_kv_store, as its own launch (VG_OK and nothing
 * for a plain paged_attention call). */
vg_status vgc_decode_rope_first(vg_bk_stream *s, const vgc_decode_call *c);
/* decode_tc.cu: paged decode attention on the tensor cores (BF16/F16, head_dim 64 or 128, up to
 * 8 query heads per KV head); VG_ERR_UNSUPPORTED, with no message, for a call it does not take
 * (the caller runs the CUDA-core kernel). */
vg_status vgc_decode_tc_prepare(vg_bk_device *dev); /* at device open: also sets decode_cluster_max */
vg_status vgc_decode_tc(vg_bk_stream *s, const vgc_decode_call *c);
int vgc_decode_tc_takes(const vg_bk_stream *s, const vgc_decode_call *c); /* whether it would */
/* ops_lm.cu: slices of each row's context for the split decode kernels (decode_split.cuh), per_sm
 * blocks fitting a multiprocessor, at least min_chunk positions a slice at the table's reach. */
int vgc_decode_splits(const vg_bk_stream *s, int64_t rows, int heads, int kv_heads, int hchunks, int head_dim,
                      int max_blocks, int block_size, int per_sm, int min_chunk);
vg_status vgc_op_silu_mul(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                          void *, int64_t, int64_t, int64_t);
vg_status vgc_op_convert(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, vg_dtype,
                         void *, size_t);
/* ops_lm.cu: op table version 4 */
vg_status vgc_op_rotary(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t, int,
                        int, const int32_t *, float);
vg_status vgc_op_rmsnorm_heads(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t,
                               int, int, const void *, float);
vg_status vgc_op_kv_store(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                          const void *, int64_t, void *, void *, const int32_t *, int64_t, int,
                          int);
/* op table version 6 */
vg_status vgc_op_rotary_kv_store(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t,
                                 int, int, int, const void *, const void *, float, const int32_t *,
                                 float, void *, void *, const int32_t *);
vg_status vgc_op_paged_attention(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                                 void *, int64_t, int64_t, const void *, const void *,
                                 const int32_t *, int, const int32_t *, const int32_t *, int, int,
                                 int, int, int, float);
vg_status vgc_op_argmax(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t, int64_t,
                        int64_t, int32_t *);
/* ops_vision.cu: op table version 5 */
vg_status vgc_op_layernorm(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, const void *,
                           const void *, void *, int64_t, int64_t, float);
vg_status vgc_op_gather_weighted(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, const void *,
                                 int64_t, const int32_t *, const float *, int64_t, int64_t, int);
/* graph_loop.cu: op table version 7, and device-side loops (ABI 1.4): VG_CAP_GRAPH_LOOP where the
 * runtime and the driver have WHILE nodes (CUDA 12.4), else 0 (HIP: always 0) */
vg_status vgc_op_lm_advance(vg_bk_device *, vg_bk_stream *, const vg_lm_advance_args *);
uint64_t vgc_loop_caps(void);
/* ops_lm.cu: op table version 8 */
vg_status vgc_op_rotary_paged_attention(vg_bk_device *, vg_bk_stream *, const vg_rotary_paged_args *);

/* comm.cu: communicators (ABI 1.5) over NCCL (RCCL on HIP), dlopen()ed at the first device_info.
 * vgc_comm_caps: VG_CAP_COMM (and VG_CAP_COMM_CAPTURE) when the library loaded. Every
 * stream_sync, event_sync and stream_destroy waits through vgc_comm_wait: a plain
 * synchronisation (s, else e) where no communicator lives on dev (one atomic load while none lives
 * anywhere), else a poll of the work and dev's communicators that aborts them on an error, a dead
 * peer or the timeout, so a lost rank is an error, never a hang. */
uint64_t vgc_comm_caps(void);
vg_status vgc_comm_wait(vg_bk_device *dev, cudaStream_t s, cudaEvent_t e, const char *what);
/* The interface table's communicator members this build has (comm_id_make alone without NCCL's
 * header, to say so). */
void vgc_comm_members(vg_backend_iface *t);
extern "C" vg_status vgc_loop_capture_begin(vg_bk_device *, vg_bk_stream *, const int32_t *);
extern "C" vg_status vgc_loop_capture_end(vg_bk_device *, vg_bk_stream *, vg_bk_graph **);

#endif
