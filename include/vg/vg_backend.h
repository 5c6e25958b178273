/* vg plugin ABI: the only header a backend needs.
 *
 * A backend is a shared object exporting one C symbol, VG_BACKEND_ENTRY_NAME, of type
 * vg_backend_query_fn. The core calls it once after dlopen() with a table of host services
 * and receives a constant interface table describing the backend.
 *
 * Versioning (SQLite style): the table starts with an ABI major, an ABI minor and its own size.
 * Members are only ever appended; a new minor adds members at the end. The core refuses a
 * different major, refuses a table smaller than the size its declared minor implies, and treats
 * members beyond a table's size as absent. Members documented as optional may be NULL.
 *
 * docs/plugin-abi.md documents every member: contract, ownership and threading. */
#ifndef VG_BACKEND_H
#define VG_BACKEND_H

#include "vg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VG_BACKEND_ABI_MAJOR 1
#define VG_BACKEND_ABI_MINOR 0
#define VG_BACKEND_ENTRY_NAME "vg_backend_query"

/* Opaque handles. Each backend defines these structs privately. */
typedef struct vg_bk_device vg_bk_device;
typedef struct vg_bk_stream vg_bk_stream;
typedef struct vg_bk_event vg_bk_event;
typedef struct vg_bk_graph vg_bk_graph;
typedef struct vg_bk_exec vg_bk_exec;

/* ---- host services: what the core offers a plugin ------------------------------------ */

typedef struct vg_host_services {
    uint32_t abi_major;
    uint32_t abi_minor;
    uint32_t struct_size;
    /* Log through the host's logger (level filtering and sink are the host's). */
    void (*log)(vg_log_level level, const char *fmt, ...) VG_PRINTF(2, 3);
    /* Set the calling thread's last-error message. A failing member should call this once
     * with a message naming what failed (including the vendor's error name and text). */
    void (*set_error)(vg_status status, const char *fmt, ...) VG_PRINTF(2, 3);
} vg_host_services;

/* ---- capabilities ---------------------------------------------------------------------- */

#define VG_CAP_GRAPH (1ull << 0)        /* capture/instantiate/launch work */
#define VG_CAP_GRAPH_UPDATE (1ull << 1) /* exec_update is implemented */
#define VG_CAP_IPC (1ull << 2)          /* the IPC section is implemented (later ABI minor) */
#define VG_CAP_PINNED_HOST (1ull << 3)  /* host_alloc returns page-locked memory */

/* Op identifiers: bit positions in vg_device_info.capturable_ops. Append only. */
typedef enum vg_op_id {
    VG_OP_FILL = 0,
    VG_OP_AXPBY = 1,
    VG_OP_GEMM = 2,
    VG_OP_GATHER_ROWS = 3,
    /* op table version 2 */
    VG_OP_RMSNORM = 4,
    VG_OP_ROTARY_2D = 5,
    VG_OP_ATTENTION = 6,
    VG_OP_SILU_MUL = 7,
    VG_OP_CONVERT = 8,
    /* op table version 3 */
    VG_OP_ATTENTION_ROTARY = 9,
    VG_OP_COUNT_ = 10
} vg_op_id;

/* Filled by device_info. The caller sets struct_size; the backend writes only the fields that
 * lie inside it (vg_backend_copy_out below does that), so old callers stay safe. */
typedef struct vg_device_info {
    uint32_t struct_size;
    char name[128];
    uint64_t mem_total;      /* bytes */
    uint64_t mem_free;       /* bytes, at the time of the call */
    uint64_t caps;           /* VG_CAP_* */
    uint64_t capturable_ops; /* bit (1 << vg_op_id): the op may be enqueued during capture */
    int32_t arch_major;      /* vendor architecture (CUDA compute capability, gfx major), or 0 */
    int32_t arch_minor;
    int32_t compute_units;   /* SMs, CUs, or host cores for a CPU stand-in */
    int32_t index;           /* device index within the backend */
} vg_device_info;

/* ---- graph update result ---------------------------------------------------------------- */

typedef enum vg_update_result {
    VG_UPDATE_APPLIED = 0,           /* the exec now replays the new graph */
    VG_UPDATE_NEEDS_REINSTANTIATE = 1 /* topology changed: destroy the exec, instantiate anew */
} vg_update_result;

/* ---- op table: the kernels models call --------------------------------------------------- */

typedef enum vg_activation {
    VG_ACT_NONE = 0,
    VG_ACT_GELU_ERF = 1,  /* 0.5·x·(1 + erf(x/√2)) */
    VG_ACT_GELU_TANH = 2, /* tanh approximation */
    VG_ACT_SILU = 3,      /* x·sigmoid(x) */
    VG_ACT_QUICK_GELU = 4 /* x·sigmoid(1.702·x) */
} vg_activation;

/* C[m,n] = act(alpha · A[m,k] · B[n,k]ᵀ + bias[n]) + residual[m,n]
 * Row-major with leading dimensions in elements. B is in the Linear-weight layout [out, in].
 * A and B share dtype_ab (F32, BF16 or F16); bias has dtype_ab; C and residual have dtype_c.
 * residual may alias c (in-place residual add) only when act is VG_ACT_NONE: with an
 * activation, the residual is added after it and must be a separate buffer. Accumulation is
 * at least fp32. */
typedef struct vg_gemm_args {
    uint32_t struct_size;
    vg_dtype dtype_ab;
    vg_dtype dtype_c;
    int64_t m, n, k;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    void *c;
    int64_t ldc;
    const void *bias;     /* optional */
    const void *residual; /* optional */
    int64_t ldr;
    vg_activation act;
    float alpha;
} vg_gemm_args;

/* Every op enqueues on `stream`, is asynchronous to the host, reads and writes only the device
 * memory it is given, allocates nothing, and may be captured when its bit is set in
 * capturable_ops. All members are optional: callers check for NULL (and for struct_size). */
typedef struct vg_op_table {
    uint32_t version; /* VG_OP_TABLE_VERSION the backend was built against */
    uint32_t struct_size;
    /* dst[0..count) = value, converted to dtype (F32, BF16, F16, I32, I64). */
    vg_status (*fill)(vg_bk_device *dev, vg_bk_stream *stream, void *dst, vg_dtype dtype,
                      size_t count, double value);
    /* y[i] = alpha·x[i] + beta·y[i], F32. x may equal y. */
    vg_status (*axpby)(vg_bk_device *dev, vg_bk_stream *stream, size_t n, float alpha,
                       const float *x, float beta, float *y);
    vg_status (*gemm)(vg_bk_device *dev, vg_bk_stream *stream, const vg_gemm_args *args);
    /* dst[r, :] = src[idx[r], :] for r < rows; idx is I32 in device memory, rows of `cols`
     * elements of dtype. Out-of-range indices are the caller's bug; backends may clamp. */
    vg_status (*gather_rows)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype, void *dst,
                             const void *src, const int32_t *idx, int64_t rows, int64_t cols);

    /* ---- version 2: the kernels of a vision transformer ---- */

    /* out[r, :] = w ⊙ x[r, :] / sqrt(mean(x[r, :]²) + eps), statistics in fp32. x, w and out
     * share dtype; out may equal x. */
    vg_status (*rmsnorm)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype, const void *x,
                         const void *w, void *out, int64_t rows, int64_t cols, float eps);
    /* 2-D rotary embedding, in place, on the first `heads` head-sized slices of each row of x
     * (row stride ld elements). pos is I32 [rows, 2] (h, w) in device memory. With
     * half = head_dim / 2 and quarter = head_dim / 4, element i < half of a head rotates with
     * i + half by the angle p·θ^(-2j/half), where p = pos.h, j = i for i < quarter and
     * p = pos.w, j = i - quarter otherwise (Qwen2-VL's vision rotary). */
    vg_status (*rotary_2d)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype, void *x,
                           int64_t ld, int64_t rows, int heads, int head_dim,
                           const int32_t *pos, float theta);
    /* Non-causal attention within segments. qkv rows hold q, k and v of `heads` heads
     * ([rows, 3·heads·head_dim], row stride ld_qkv); out is [rows, heads·head_dim] (ld_out).
     * cu_seqlens is I32 [num_segments + 1] in device memory, ascending from 0 to rows; a row
     * attends to the rows of its own segment. Empty segments are allowed, so one capture can
     * serve any segmentation up to num_segments. Softmax in fp32, scores scaled by `scale`. */
    vg_status (*attention)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype,
                           const void *qkv, int64_t ld_qkv, void *out, int64_t ld_out,
                           int64_t rows, int heads, int head_dim, const int32_t *cu_seqlens,
                           int num_segments, float scale);
    /* out[r, c] = silu(in[r, c]) · in[r, cols + c]: the gate and up halves of one row. */
    vg_status (*silu_mul)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype,
                          const void *in, int64_t ld_in, void *out, int64_t ld_out, int64_t rows,
                          int64_t cols);
    /* dst[i] = src[i] converted between F32, BF16 and F16 (round to nearest even). */
    vg_status (*convert)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype src_dtype,
                         const void *src, vg_dtype dst_dtype, void *dst, size_t count);

    /* ---- version 3 ---- */

    /* attention over q and k rotated as rotary_2d would rotate them (pos, theta), in one pass:
     * the result equals rotary_2d on the q and k slices followed by attention, but qkv is only
     * read. Worth it when segments are short (each key is loaded by few query tiles); for long
     * segments a backend may re-rotate each key many times, so callers prefer the two ops. */
    vg_status (*attention_rotary)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype,
                                  const void *qkv, int64_t ld_qkv, void *out, int64_t ld_out,
                                  int64_t rows, int heads, int head_dim,
                                  const int32_t *cu_seqlens, int num_segments, float scale,
                                  const int32_t *pos, float theta);
} vg_op_table;

#define VG_OP_TABLE_VERSION 3

/* ---- the interface table ------------------------------------------------------------------- */

typedef struct vg_backend_iface {
    uint32_t abi_major;   /* VG_BACKEND_ABI_MAJOR the plugin was built against */
    uint32_t abi_minor;   /* VG_BACKEND_ABI_MINOR the plugin was built against */
    uint32_t struct_size; /* sizeof(vg_backend_iface) as the plugin saw it */
    uint32_t reserved0;   /* zero */
    const char *name;     /* short name, e.g. "cuda"; mandatory */
    const char *version;  /* backend's own version and runtime, free text; mandatory */

    /* device: all mandatory */
    vg_status (*device_count)(int *count);
    vg_status (*device_open)(int index, vg_bk_device **out);
    vg_status (*device_close)(vg_bk_device *dev);
    vg_status (*device_info)(vg_bk_device *dev, vg_device_info *info);

    /* memory: all mandatory */
    vg_status (*mem_alloc)(vg_bk_device *dev, size_t bytes, void **out);
    vg_status (*mem_free)(vg_bk_device *dev, void *ptr);
    vg_status (*host_alloc)(vg_bk_device *dev, size_t bytes, void **out);
    vg_status (*host_free)(vg_bk_device *dev, void *ptr);
    vg_status (*copy_h2d)(vg_bk_device *dev, vg_bk_stream *stream, void *dst, const void *src,
                          size_t bytes);
    vg_status (*copy_d2h)(vg_bk_device *dev, vg_bk_stream *stream, void *dst, const void *src,
                          size_t bytes);
    vg_status (*copy_d2d)(vg_bk_device *dev, vg_bk_stream *stream, void *dst, const void *src,
                          size_t bytes);
    vg_status (*memset_async)(vg_bk_device *dev, vg_bk_stream *stream, void *dst, int value,
                              size_t bytes);

    /* streams and events: all mandatory */
    vg_status (*stream_create)(vg_bk_device *dev, vg_bk_stream **out);
    vg_status (*stream_destroy)(vg_bk_device *dev, vg_bk_stream *stream);
    vg_status (*stream_sync)(vg_bk_device *dev, vg_bk_stream *stream);
    vg_status (*event_create)(vg_bk_device *dev, vg_bk_event **out);
    vg_status (*event_destroy)(vg_bk_device *dev, vg_bk_event *event);
    vg_status (*event_record)(vg_bk_device *dev, vg_bk_event *event, vg_bk_stream *stream);
    vg_status (*event_sync)(vg_bk_device *dev, vg_bk_event *event);
    vg_status (*event_elapsed_ms)(vg_bk_device *dev, vg_bk_event *start, vg_bk_event *end,
                                  float *ms);
    vg_status (*stream_wait_event)(vg_bk_device *dev, vg_bk_stream *stream, vg_bk_event *event);

    /* static graph wrapper: mandatory when any device reports VG_CAP_GRAPH, else may be NULL */
    vg_status (*capture_begin)(vg_bk_device *dev, vg_bk_stream *stream);
    vg_status (*capture_end)(vg_bk_device *dev, vg_bk_stream *stream, vg_bk_graph **out);
    vg_status (*graph_destroy)(vg_bk_device *dev, vg_bk_graph *graph);
    vg_status (*graph_instantiate)(vg_bk_device *dev, vg_bk_graph *graph, vg_bk_exec **out);
    vg_status (*exec_launch)(vg_bk_device *dev, vg_bk_exec *exec, vg_bk_stream *stream);
    vg_status (*exec_destroy)(vg_bk_device *dev, vg_bk_exec *exec);
    /* optional, with VG_CAP_GRAPH_UPDATE */
    vg_status (*exec_update)(vg_bk_device *dev, vg_bk_exec *exec, vg_bk_graph *graph,
                             vg_update_result *result);

    /* kernels; mandatory pointer, members optional */
    const vg_op_table *ops;

    /* ABI 1.0 ends here. The IPC section will be appended by a later minor. */
} vg_backend_iface;

typedef const vg_backend_iface *(*vg_backend_query_fn)(const vg_host_services *host);

/* Size of the table for ABI 1.<minor>. The core uses it to reject truncated tables. */
#define VG_BACKEND_IFACE_SIZE_1_0 (offsetof(vg_backend_iface, ops) + sizeof(void *))

/* Copy a fully filled device_info into a caller's possibly smaller struct. */
static inline void vg_backend_copy_out(vg_device_info *dst, const vg_device_info *src)
{
    uint32_t n = dst->struct_size < sizeof(*src) ? dst->struct_size : (uint32_t)sizeof(*src);
    const unsigned char *s = (const unsigned char *)src;
    unsigned char *d = (unsigned char *)dst;
    for (uint32_t i = sizeof(uint32_t); i < n; i++) d[i] = s[i];
}

#if defined(_WIN32)
#define VG_BACKEND_EXPORT __declspec(dllexport)
#else
#define VG_BACKEND_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
}
#endif
#endif /* VG_BACKEND_H */
