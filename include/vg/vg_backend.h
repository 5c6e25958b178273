/* SPDX-License-Identifier: Apache-2.0 */
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

#include <stdlib.h>

#include "vg_comm.h"
#include "vg_ops.h"
#include "vg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VG_BACKEND_ABI_MAJOR 1
#define VG_BACKEND_ABI_MINOR 5
#define VG_BACKEND_ENTRY_NAME "vg_backend_query"

/* Opaque handles. Each backend defines these structs privately. */
typedef struct vg_bk_device vg_bk_device;
typedef struct vg_bk_stream vg_bk_stream;
typedef struct vg_bk_event vg_bk_event;
typedef struct vg_bk_graph vg_bk_graph;
typedef struct vg_bk_exec vg_bk_exec;
typedef struct vg_bk_comm vg_bk_comm; /* ABI 1.5 */
typedef struct vg_runtime vg_runtime;

/* Filled by op_caps (ABI 1.1). The core sets struct_size and zeroes the rest before the call. */
typedef struct vg_op_caps {
    uint32_t struct_size;
    uint32_t flags;  /* VG_OP_SUPPORTED | VG_OP_CAPTURABLE */
    uint32_t dtypes; /* VG_DTYPE_BIT per accepted dtype; 0: every dtype the catalogue allows */
} vg_op_caps;

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
    /* ---- host ABI 1.3 ---- */
    /* The value of backend option `name` for the device being opened: the one the application
     * passed in vg_runtime_options.options, else getenv(name). Meaningful inside device_count and
     * device_open (read every knob there and keep it in the device); elsewhere it is getenv.
     * Reach it through vg_backend_option(), which falls back to getenv on older hosts. */
    const char *(*option)(const char *name);
} vg_host_services;

/* A backend option's value: host->option on a 1.3 host, getenv on an older one. */
static inline const char *vg_backend_option(const vg_host_services *host, const char *name)
{
    if (host && host->struct_size >= offsetof(vg_host_services, option) + sizeof(void *) &&
        host->option)
        return host->option(name);
    return getenv(name);
}

/* ---- graph update result ---------------------------------------------------------------- */

typedef enum vg_update_result {
    VG_UPDATE_APPLIED = 0,           /* the exec now replays the new graph */
    VG_UPDATE_NEEDS_REINSTANTIATE = 1 /* topology changed: destroy the exec, instantiate anew */
} vg_update_result;

/* ---- op table: the kernels models call --------------------------------------------------- */

/* The kernels of the op catalogue (vg_ops.h says what each computes). Every op enqueues on
 * `stream`, is asynchronous to the host, reads and writes only the device memory it is given,
 * allocates nothing, and may be captured when the device says so (op_caps, or capturable_ops
 * for ABI 1.0 plugins). The core validates every call against the catalogue's preconditions
 * before it reaches a member, so members need not check them again. All members are optional:
 * the core checks for NULL (and for struct_size). */
typedef struct vg_op_table {
    uint32_t version; /* VG_OP_TABLE_VERSION the backend was built against */
    uint32_t struct_size;
    vg_status (*fill)(vg_bk_device *dev, vg_bk_stream *stream, void *dst, vg_dtype dtype,
                      size_t count, double value);
    vg_status (*axpby)(vg_bk_device *dev, vg_bk_stream *stream, size_t n, float alpha,
                       const float *x, float beta, float *y);
    vg_status (*gemm)(vg_bk_device *dev, vg_bk_stream *stream, const vg_gemm_args *args);
    vg_status (*gather_rows)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype, void *dst,
                             const void *src, const int32_t *idx, int64_t rows, int64_t cols);

    /* ---- version 2: normalisation, rotary, segmented attention, gating, conversion ---- */

    vg_status (*rmsnorm)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype, const void *x,
                         const void *w, void *out, int64_t rows, int64_t cols, float eps);
    vg_status (*rotary_2d)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype, void *x,
                           int64_t ld, int64_t rows, int heads, int head_dim,
                           const int32_t *pos, float theta);
    vg_status (*attention)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype,
                           const void *qkv, int64_t ld_qkv, void *out, int64_t ld_out,
                           int64_t rows, int heads, int head_dim, const int32_t *cu_seqlens,
                           int num_segments, float scale);
    vg_status (*silu_mul)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype,
                          const void *in, int64_t ld_in, void *out, int64_t ld_out, int64_t rows,
                          int64_t cols);
    vg_status (*convert)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype src_dtype,
                         const void *src, vg_dtype dst_dtype, void *dst, size_t count);

    /* ---- version 3 ---- */

    vg_status (*attention_rotary)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype,
                                  const void *qkv, int64_t ld_qkv, void *out, int64_t ld_out,
                                  int64_t rows, int heads, int head_dim,
                                  const int32_t *cu_seqlens, int num_segments, float scale,
                                  const int32_t *pos, float theta);

    /* ---- version 4: decoder language models with a paged KV cache ---- */

    vg_status (*rotary)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype, void *x,
                        int64_t ld, int64_t rows, int heads, int head_dim, const int32_t *pos,
                        float theta);
    vg_status (*rmsnorm_heads)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype, void *x,
                               int64_t ld, int64_t rows, int heads, int head_dim, const void *w,
                               float eps);
    vg_status (*kv_store)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype, const void *k,
                          int64_t ld_k, const void *v, int64_t ld_v, void *k_cache,
                          void *v_cache, const int32_t *slots, int64_t rows, int kv_heads,
                          int head_dim);
    vg_status (*paged_attention)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype,
                                 const void *q, int64_t ld_q, void *out, int64_t ld_out,
                                 int64_t rows, const void *k_cache, const void *v_cache,
                                 const int32_t *block_tables, int max_blocks,
                                 const int32_t *context_lens, const int32_t *query_start,
                                 int num_seqs, int heads, int kv_heads, int head_dim,
                                 int block_size, float scale);
    vg_status (*argmax)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype, const void *x,
                        int64_t ld, int64_t rows, int64_t cols, int32_t *out);

    /* ---- version 5: LayerNorm, rows resampled from a table by weighted taps ---- */

    vg_status (*layernorm)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype, const void *x,
                           const void *w, const void *b, void *out, int64_t rows, int64_t cols,
                           float eps);
    vg_status (*gather_weighted)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype,
                                 void *dst, const void *src, int64_t src_rows,
                                 const int32_t *idx, const float *w, int64_t rows, int64_t cols,
                                 int taps);

    /* ---- version 6: fused steps of a decode step ---- */

    /* (no member) gemm honours vg_gemm_args.gate (VG_OP_GEMM_SILU_GATE) and norm_w
     * (VG_OP_GEMM_RMSNORM_A). The core offers those ops only for a table of version >= 6 (built
     * knowing the fields), and passes gemm a full-size, zero-extended vg_gemm_args whatever
     * struct_size its caller set. */

    vg_status (*rotary_kv_store)(vg_bk_device *dev, vg_bk_stream *stream, vg_dtype dtype,
                                 void *qkv, int64_t ld, int64_t rows, int heads, int kv_heads,
                                 int head_dim, const void *q_norm, const void *k_norm, float eps,
                                 const int32_t *pos, float theta, void *k_cache, void *v_cache,
                                 const int32_t *slots);

    /* ---- version 7 (after version 6's ops): one step of a generation loop on the device ---- */

    vg_status (*lm_advance)(vg_bk_device *dev, vg_bk_stream *stream,
                            const vg_lm_advance_args *args);

    /* ---- version 8: the new tokens' rotary and store inside paged attention ---- */

    /* args: checked by the core (struct_size at least this version's), rows >= 1. Where the table
     * has no such member the core runs rotary_kv_store and then paged_attention. */
    vg_status (*rotary_paged_attention)(vg_bk_device *dev, vg_bk_stream *stream,
                                        const vg_rotary_paged_args *args);

    /* ---- version 9: the rmsnorm of a GEMM's A without a weight ---- */

    /* (no member) gemm honours vg_gemm_args.norm_unit (VG_OP_GEMM_RMSNORM_A_UNIT). The core
     * offers the op only for a table of version >= 9, and passes gemm a full-size, zero-extended
     * vg_gemm_args. */

    /* ---- version 10: the rmsnorm before qkv folded into it ---- */

    /* (no member) rotary_paged_attention honours vg_rotary_paged_args.norm_x and qkv_bias
     * (VG_OP_ROTARY_PAGED_ATTENTION_NORM_X). The core offers the op only for a table of version
     * >= 10, passes a full-size, zero-extended vg_rotary_paged_args, and never splits such a call
     * into rotary_kv_store and paged_attention (they have no norm_x). */

    /* ---- version 11: a GEMM's B that no op of the stream writes ---- */

    /* (no member) gemm may honour vg_gemm_args.b_static, a hint (vg_ops.h); the core passes it
     * through (0 or 1) in the full-size, zero-extended vg_gemm_args. */

    /* ---- version 12: decode tables the op before rotary_paged_attention does not write ---- */

    /* (no member) rotary_paged_attention may honour vg_rotary_paged_args.tables_static, a hint
     * (vg_ops.h); the core passes it through (0 or 1) in the full-size, zero-extended
     * vg_rotary_paged_args, and drops it where it splits the call into its two ops. */
} vg_op_table;

#define VG_OP_TABLE_VERSION 12

/* What comm_create (ABI 1.5) receives. The core sets struct_size to sizeof(vg_bk_comm_args) and
 * has checked every field: 1 <= nranks, 0 <= rank < nranks, timeout_ms >= 1, and `id` holds the
 * bytes that comm_id_make gave on a device of this backend (in some process; still untrusted:
 * anyone can forge them). Members may only be appended. */
typedef struct vg_bk_comm_args {
    uint32_t struct_size;
    int32_t nranks;
    int32_t rank;
    int32_t timeout_ms; /* the bound on joining and on every wait for a peer (VG_COMM_TIMEOUT_MS) */
    unsigned char id[VG_COMM_ID_BYTES];
} vg_bk_comm_args;

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

    /* ---- ABI 1.0 ends here ---- */

    /* ---- ABI 1.1: per-op capabilities and auto-selection ---- */

    /* Optional. What the device offers for op `op` (any uint32_t: an op this plugin does not
     * know gets flags 0). Replaces vg_device_info.capturable_ops, which cannot describe more
     * than 64 ops; the core asks once per op when it opens the device. Without it the core
     * derives the answer from the op table's members and capturable_ops. */
    vg_status (*op_caps)(vg_bk_device *dev, uint32_t op, vg_op_caps *out);
    /* Optional. How strongly auto-selection (VG_BACKEND unset) should prefer this backend when
     * its device opens, 0..1000; NULL counts as 500. vg's own: cuda 900, hip 800, opencl 700
     * on a GPU or accelerator (5 on a CPU device such as PoCL), kunlun_stub 10 (a CPU stand-in
     * loses to any real device). Called after device_count. */
    int32_t (*score)(void);

    /* ---- ABI 1.2: memory shared across processes (VG_CAP_IPC) ---- */

    /* Mandatory when a device reports VG_CAP_IPC (the core then reaches them through vg_ipc.h),
     * else may be NULL. A plugin whose table is older than 1.2 has none: the core clears
     * VG_CAP_IPC for it whatever its device reports. docs/plugin-abi.md has the contracts. */

    /* Device memory another process can map: like mem_alloc (freed with mem_free, forbidden while
     * capturing), and exportable with ipc_export. */
    vg_status (*ipc_alloc)(vg_bk_device *dev, size_t bytes, void **out);
    /* The handle of an allocation from ipc_alloc (`base` is the pointer ipc_alloc returned): a
     * VG_IPC_HANDLE_BYTES blob, meaningful to this backend in another process. Exporting twice
     * gives handles to the same memory; an allocation freed and allocated again gives a handle
     * that does not open the old one. */
    vg_status (*ipc_export)(vg_bk_device *dev, void *base, vg_ipc_handle *out);
    /* Map a handle exported by another process: *out is a device address usable by this
     * device's copies and ops, *bytes the size of the whole exported allocation as the backend
     * knows it (not as anyone claims it). The handle is untrusted bytes: a malformed or stale
     * one fails with a message, never a crash. Forbidden while capturing. */
    vg_status (*ipc_open)(vg_bk_device *dev, const vg_ipc_handle *handle, void **out,
                          size_t *bytes);
    /* Unmap an address from ipc_open. The exporter's memory is untouched. */
    vg_status (*ipc_close)(vg_bk_device *dev, void *ptr);

    /* ---- ABI 1.3: native handles, adopted streams and memory, backend options ---- */

    /* The six native members are mandatory when a device reports VG_CAP_NATIVE, else may be
     * NULL; a table older than 1.3 has none, and the core clears VG_CAP_NATIVE and
     * VG_CAP_FOREIGN_CAPTURE for it. docs/plugin-abi.md has the contracts. */

    /* The native objects behind dev (vg_native_device, vg_types.h), filled up to struct_size. */
    vg_status (*native_device)(vg_bk_device *dev, vg_native_device *out);
    /* The native stream behind a stream of this backend (owned or wrapped). */
    vg_status (*stream_native)(vg_bk_device *dev, vg_bk_stream *stream, void **out);
    /* A stream over the caller's native stream, which the backend checks (device, context) and
     * must never destroy: stream_destroy of it waits for the stream's work, then frees only the
     * backend's wrapper. */
    vg_status (*stream_wrap)(vg_bk_device *dev, void *native, vg_bk_stream **out);
    /* The native memory behind a device address (inside an allocation or a registration). */
    vg_status (*mem_native)(vg_bk_device *dev, const void *ptr, vg_native_mem *out);
    /* Check that `native` holds at least `bytes` of this device's memory and give it a device
     * address (*out) usable by copies, ops and graphs; freed never, forgotten by mem_unregister.
     * Forbidden while capturing. */
    vg_status (*mem_register)(vg_bk_device *dev, void *native, size_t bytes, void **out);
    vg_status (*mem_unregister)(vg_bk_device *dev, void *ptr);
    /* Optional. The option names the backend reads through host->option, NULL-terminated (NULL:
     * none). The core refuses an application's option whose name is not listed. */
    const char *const *option_names;

    /* ---- ABI 1.4: device-side loops (VG_CAP_GRAPH_LOOP) ---- */

    /* Optional; both or neither, with VG_CAP_GRAPH_LOOP (the core clears the capability when
     * one is NULL or the table is older than 1.4). Like capture_begin, but what `stream`
     * records becomes the body of a loop: the graph loop_capture_end returns runs the body
     * once, then again while the int32 at `flag` (device memory, written by the body) is not
     * 0, all on the device, in one exec_launch. A body the device cannot loop over fails at
     * loop_capture_end or graph_instantiate with a message, never at launch. */
    vg_status (*loop_capture_begin)(vg_bk_device *dev, vg_bk_stream *stream, const int32_t *flag);
    /* Ends a capture begun by loop_capture_begin (in every case, like capture_end); the graph
     * is instantiated, launched and destroyed with the graph members. */
    vg_status (*loop_capture_end)(vg_bk_device *dev, vg_bk_stream *stream, vg_bk_graph **out);

    /* ---- ABI 1.5: communicators for tensor parallelism (VG_CAP_COMM, vg_comm.h) ---- */

    /* Optional; all five or none, with VG_CAP_COMM (the core clears VG_CAP_COMM and
     * VG_CAP_COMM_CAPTURE when one is NULL or the table is older than 1.5). The core validates
     * every argument (ranks, dtype, counts, buffers, streams of this device) and the capture
     * rules before a member is called. docs/plugin-abi.md has the contracts. */

    /* A fresh unique id (VG_COMM_ID_BYTES bytes, the backend's own format). Without
     * VG_CAP_COMM the core still calls it, when non-NULL, to learn why: it then fails with
     * VG_ERR_UNSUPPORTED and a message saying what is missing (e.g. the vendor's library). */
    vg_status (*comm_id_make)(vg_bk_device *dev, unsigned char id[VG_COMM_ID_BYTES]);
    /* Join as args->rank of args->nranks; returns once every rank joined, else fails within
     * args->timeout_ms naming the ranks that did not. Never called while this thread captures. */
    vg_status (*comm_create)(vg_bk_device *dev, const vg_bk_comm_args *args, vg_bk_comm **out);
    /* Leave and free. The core calls it once per comm, never while this thread captures. */
    vg_status (*comm_destroy)(vg_bk_device *dev, vg_bk_comm *comm);
    /* recv[i] = sum over ranks of send[i] (count elements of F32, F16 or BF16; send == recv
     * allowed), enqueued on stream; recorded into a capture with VG_CAP_COMM_CAPTURE. */
    vg_status (*comm_all_reduce)(vg_bk_device *dev, vg_bk_comm *comm, vg_bk_stream *stream,
                                 vg_dtype dtype, const void *send, void *recv, size_t count);
    /* recv = the ranks' send blocks of count elements of any dtype, rank-major. */
    vg_status (*comm_all_gather)(vg_bk_device *dev, vg_bk_comm *comm, vg_bk_stream *stream,
                                 vg_dtype dtype, const void *send, void *recv, size_t count);
} vg_backend_iface;

typedef const vg_backend_iface *(*vg_backend_query_fn)(const vg_host_services *host);

/* Size of the table for ABI 1.<minor>. The core uses it to reject truncated tables. */
#define VG_BACKEND_IFACE_SIZE_1_0 (offsetof(vg_backend_iface, ops) + sizeof(void *))
#define VG_BACKEND_IFACE_SIZE_1_1 (offsetof(vg_backend_iface, score) + sizeof(void *))
#define VG_BACKEND_IFACE_SIZE_1_2 (offsetof(vg_backend_iface, ipc_close) + sizeof(void *))
#define VG_BACKEND_IFACE_SIZE_1_3 (offsetof(vg_backend_iface, option_names) + sizeof(void *))
#define VG_BACKEND_IFACE_SIZE_1_4 (offsetof(vg_backend_iface, loop_capture_end) + sizeof(void *))
#define VG_BACKEND_IFACE_SIZE_1_5 (offsetof(vg_backend_iface, comm_all_gather) + sizeof(void *))

/* Open a runtime on an interface table the caller owns (an in-process or wrapped backend, or a
 * test). The table is validated like a plugin's and must outlive the runtime. */
VG_API vg_status vg_runtime_open_iface(const vg_backend_iface *iface, int device,
                                       vg_runtime **out);

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
