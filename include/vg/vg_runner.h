/* SPDX-License-Identifier: Apache-2.0 */
/* vg graph runner: decides, call by call, how a model forward executes.
 *
 * A model describes its forward as an ordered list of pieces. Each piece enqueues work on a
 * stream and is either graph-safe or a splitting op (run eagerly between graphs in PIECEWISE
 * mode). The runner buckets token counts into captured sizes, pads, captures lazily or at
 * warm-up, replays, falls back to eager execution when a capture fails, and keeps every buffer
 * a graph touches at a static address. docs/runner.md explains the policy. */
#ifndef VG_RUNNER_H
#define VG_RUNNER_H

#include "vg_device.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vg_graph_mode {
    VG_MODE_NONE = 0,              /* always eager */
    VG_MODE_PIECEWISE = 1,         /* graph each run of graph-safe pieces; split ops eager */
    VG_MODE_FULL = 2,              /* the whole forward is one graph per bucket */
    VG_MODE_FULL_AND_PIECEWISE = 3 /* FULL when every piece is graph-safe, else PIECEWISE */
} vg_graph_mode;

VG_API const char *vg_graph_mode_name(vg_graph_mode mode); /* "piecewise" */
/* Parse "none", "piecewise", "full", "full_and_piecewise". */
VG_API vg_status vg_graph_mode_parse(const char *text, vg_graph_mode *mode);

/* The key of a graph. Equal descriptors share one graph. num_tokens is what gets bucketed. */
typedef struct vg_batch_desc {
    int64_t num_tokens;
    int32_t num_requests; /* requests or images in the call; 0 when the graph does not depend on it */
    uint8_t uniform;      /* caller-defined: e.g. all requests have the same length */
    uint8_t reserved[3];  /* zero */
    uint32_t variant;     /* caller-defined variant id */
} vg_batch_desc;

typedef struct vg_runner vg_runner;

#define VG_PIECE_SPLITTING (1u << 0) /* run eagerly in PIECEWISE mode */
/* The piece enqueues work vg did not launch (an engine's own kernel, a library call) on the
 * stream's native stream (vg_stream_native). Where the device captures foreign work
 * (VG_CAP_FOREIGN_CAPTURE) it is captured like any other piece; elsewhere it runs eagerly
 * between graphs, and FULL downgrades to PIECEWISE (logged once). */
#define VG_PIECE_FOREIGN (1u << 1)

typedef struct vg_piece vg_piece;
struct vg_piece {
    const char *name;
    /* Enqueue this piece's work on `stream` for a call padded to `padded`. It must touch only
     * runner buffers (vg_runner_buffer) and memory that lives as long as the runner, and must
     * not depend on per-request host data: that goes into device buffers in `prepare`. */
    vg_status (*run)(void *model, vg_runner *runner, const vg_piece *piece,
                     const vg_batch_desc *padded, vg_stream *stream);
    uint32_t flags;           /* VG_PIECE_SPLITTING, VG_PIECE_FOREIGN */
    const vg_op_id *ops_used; /* every op the piece enqueues: one the device cannot capture
                                 makes the piece not graph-safe (checked once, at create) */
    int num_ops_used;
    /* Optional: 0 when this piece cannot be captured for `padded` (NULL: always can). */
    int (*graph_safe)(void *model, const vg_batch_desc *padded);
    int64_t arg; /* the model's own, e.g. a layer index */
};

/* What a model gives the runner. All callbacks run on the thread that calls vg_runner_run. */
typedef struct vg_model_iface {
    uint32_t struct_size;
    void *model;
    const vg_piece *pieces;
    int num_pieces;
    /* Size the runner's buffers for a call padded to `padded`, with vg_runner_buffer_reserve.
     * Called before every call (cheap when nothing grows) and at warm-up. */
    vg_status (*reserve)(void *model, vg_runner *runner, const vg_batch_desc *padded);
    /* Before each call, outside any graph: copy `inputs` into runner buffers, make the padding
     * rows (real->num_tokens .. padded->num_tokens) harmless, and refresh per-request device
     * data (segment bounds, positions, permutations). With eager_first, warm-up calls it with
     * inputs == NULL: any valid call will do. */
    vg_status (*prepare)(void *model, vg_runner *runner, const vg_batch_desc *real,
                         const vg_batch_desc *padded, vg_stream *stream, const void *inputs);
    /* Optional, for the address check (VG_DEBUG_ADDRESSES=1): the device addresses the pieces
     * will use for this call. Returns how many were written (at most max). */
    int (*addresses)(void *model, vg_runner *runner, const void **out, int max);
} vg_model_iface;

/* Default capture sizes: every 64 tokens to 512, then steps of 128 to 1024, 256 to 2048 and
 * 512 to 4096 (20 sizes). Padding adds at most 63 tokens up to 512, and less than 20% of the
 * padded size above 512. */
VG_API int vg_runner_default_sizes(const int64_t **sizes);

typedef struct vg_warmup_progress {
    int index;             /* 0-based position in the warm-up order (largest first) */
    int count;             /* buckets to capture */
    int64_t size;          /* the bucket's token count */
    vg_status status;      /* VG_OK, or why the capture failed (the bucket then runs eagerly) */
    double capture_ms;     /* capture + instantiate, host wall clock */
    uint64_t mem_free_before, mem_free_after; /* device free memory around the bucket */
} vg_warmup_progress;

typedef void (*vg_warmup_fn)(void *user, const vg_warmup_progress *progress);

typedef struct vg_runner_options {
    uint32_t struct_size;
    vg_graph_mode mode;          /* default FULL_AND_PIECEWISE */
    const int64_t *capture_sizes; /* strictly ascending; NULL: vg_runner_default_sizes */
    int num_capture_sizes;
    int64_t max_capture_size;    /* calls above it run eagerly; 0: the largest capture size */
    uint64_t graph_memory_budget; /* bytes of graph memory before LRU eviction; 0: unlimited */
    vg_stream *stream;        /* NULL: the runner creates and owns one */
    int debug_addresses;         /* -1: from VG_DEBUG_ADDRESSES; 0 off; 1 on */
    /* Run a key's pieces eagerly once before capturing them (the first call of a bucket is
     * served eagerly, then captured), so backends can tune kernels and allocate lazily outside
     * capture. During warm-up the model's prepare then receives inputs == NULL and must fill
     * its buffers with any valid call. */
    int eager_first;
    /* Time every piece of eager runs with device events (a synchronisation per call: for
     * profiling, not for serving). Read with vg_runner_piece_times. */
    int profile_pieces;
} vg_runner_options;

VG_API void vg_runner_options_init(vg_runner_options *opts);
/* The runner keeps pointers to rt and model (not copies of what they point to): both must
 * outlive it. */
VG_API vg_status vg_runner_create(vg_runtime *rt, const vg_model_iface *model,
                                  const vg_runner_options *opts, vg_runner **out);
VG_API vg_status vg_runner_destroy(vg_runner *r);

/* ---- static buffers -------------------------------------------------------------------------- */

#define VG_RUNNER_MAX_BUFFERS 32

/* Ensure buffer `id` (0..VG_RUNNER_MAX_BUFFERS-1) holds at least `bytes`. Growing a buffer
 * that graphs have seen destroys those graphs before the old memory is freed; they are
 * recaptured on next use. Only valid inside the model's reserve callback. */
VG_API vg_status vg_runner_buffer_reserve(vg_runner *r, int id, size_t bytes);
/* The buffer's device address for the current call; after vg_runner_run returns, for the call
 * that just ran (read outputs through it), until the next call. NULL if never reserved.
 * Calls above the threshold use a separate set of buffers, so graphs never see them move. */
VG_API void *vg_runner_buffer(vg_runner *r, int id);
VG_API size_t vg_runner_buffer_size(vg_runner *r, int id);

/* ---- running ---------------------------------------------------------------------------------- */

typedef enum vg_run_path {
    VG_RUN_EAGER = 0,     /* everything eager: mode NONE, above the threshold, or failed capture */
    VG_RUN_FULL = 1,      /* one graph */
    VG_RUN_PIECEWISE = 2  /* graphs with eager splitting pieces between them */
} vg_run_path;

typedef struct vg_run_info {
    int64_t padded_tokens; /* the bucket, or the real count when eager above the threshold */
    int bucket;            /* index into the capture sizes, -1 above the threshold */
    vg_run_path path;
    int graph_launches;
    int eager_pieces;
    int captures;          /* graphs captured during this call */
    double host_ms;        /* host wall time of vg_runner_run */
} vg_run_info;

/* Run one forward for `real` (num_tokens >= 1). Work is enqueued on the runner's stream; the
 * caller synchronises it. info may be NULL. Not to be called concurrently on one runner. */
VG_API vg_status vg_runner_run(vg_runner *r, const vg_batch_desc *real, const void *inputs,
                               vg_run_info *info);
/* Capture every bucket now, largest first, for descriptors like `like`. like->num_tokens 0:
 * every bucket; n > 0: only the buckets a call of at most n tokens pads to (a decoder's uniform
 * steps never have more tokens than sequences). progress may be NULL. A bucket whose capture
 * fails runs eagerly later. */
VG_API vg_status vg_runner_warmup(vg_runner *r, const vg_batch_desc *like, vg_warmup_fn progress,
                                  void *user);
/* Capture only the buckets that calls of these token counts pad to, each once, largest first
 * (like->num_tokens is not used; counts above every bucket run eagerly and warm nothing): for a
 * caller that knows its calls, e.g. a list of requests or one input repeated. */
VG_API vg_status vg_runner_warmup_for(vg_runner *r, const vg_batch_desc *like, const int64_t *tokens,
                                      int64_t n, vg_warmup_fn progress, void *user);
/* Mark every graph stale, e.g. after the model rewrote state its pieces read by address.
 * Stale graphs are recaptured on next use, through graph update where the backend has it. */
VG_API vg_status vg_runner_invalidate(vg_runner *r);

VG_API vg_stream *vg_runner_stream(vg_runner *r);
VG_API vg_graph_mode vg_runner_mode(const vg_runner *r); /* after downgrades */
/* The bucket a call of n tokens uses: index into the capture sizes, or -1 (eager). */
VG_API int vg_runner_bucket_for(const vg_runner *r, int64_t n);
VG_API int vg_runner_num_buckets(const vg_runner *r);
VG_API int64_t vg_runner_bucket_size(const vg_runner *r, int bucket);

/* ---- statistics --------------------------------------------------------------------------------- */

typedef struct vg_bucket_stats {
    int64_t size;           /* capture size; -1 for the row of calls above the threshold */
    uint64_t hits;          /* calls that used this bucket */
    uint64_t captures;      /* graphs captured */
    uint64_t replays;       /* graph launches */
    uint64_t eager_runs;    /* calls run entirely eagerly */
    uint64_t updates;       /* recaptures applied through graph update */
    uint64_t capture_failures;
    uint64_t evictions;     /* graphs dropped by the memory budget */
    uint64_t real_tokens;
    uint64_t padded_tokens; /* padding added (waste) */
    double capture_ms;      /* total capture + instantiate time */
    uint64_t graph_bytes;   /* device memory of this bucket's live graphs (measured) */
    int live_graphs;
} vg_bucket_stats;

/* Copy up to max rows (one per bucket, then the eager row) into out and the sum into total
 * (either may be NULL). Returns the number of rows available. Safe to call from any thread,
 * concurrently with vg_runner_run. Formatting them is the caller's business (the vg command
 * prints them as a table or JSON). */
VG_API int vg_runner_stats(vg_runner *r, vg_bucket_stats *out, int max, vg_bucket_stats *total);

/* With profile_pieces: device milliseconds spent in each piece over all eager runs so far
 * (ms[i] for piece i, at most max). Returns the number of pieces. */
VG_API int vg_runner_piece_times(vg_runner *r, double *ms, int max);
/* Name and arg of piece i (NULL for an index out of range). */
VG_API const char *vg_runner_piece_name(const vg_runner *r, int i, int64_t *arg);

/* ---- device-side loops (VG_CAP_GRAPH_LOOP) ----------------------------------------------------- */

/* Work a loop body adds after the forward, e.g. the step that picks the next tokens and writes
 * the next call's inputs into the runner's buffers. */
typedef vg_status (*vg_loop_tail_fn)(void *user, vg_runner *r, const vg_batch_desc *padded,
                                     vg_stream *stream);
/* Capture the whole forward of `padded` (a bucket's descriptor) followed by `tail` as the body of
 * a device-side loop (vg_graph_loop_capture_begin): the exec runs forward and tail, then again
 * while *flag != 0, in one launch. The caller owns the exec; it bakes in the runner's buffers,
 * which do not move while the runner lives (the graph set is sized once for the largest bucket).
 * With eager_first, a bucket whose forward never ran eagerly runs once first, on an all-padding
 * call (prepare with inputs NULL): so capture before vg_runner_prepare. VG_ERR_UNSUPPORTED with
 * the reason when the device has no loops, the mode is not FULL or FULL_AND_PIECEWISE, or a
 * piece cannot be captured for `padded`; the backend's error when it rejects the body. */
VG_API vg_status vg_runner_loop_capture(vg_runner *r, const vg_batch_desc *padded,
                                        vg_loop_tail_fn tail, void *user, const int32_t *flag,
                                        vg_graph_exec **out);
/* Reserve and prepare a call like vg_runner_run, without running it: the buffers then hold the
 * inputs of `real` for a loop's first iteration. *padded receives the bucket's descriptor.
 * VG_ERR_UNSUPPORTED when the call has no bucket (mode NONE, or above the threshold). */
VG_API vg_status vg_runner_prepare(vg_runner *r, const vg_batch_desc *real, const void *inputs,
                                   vg_batch_desc *padded);
/* Launch a loop from vg_runner_loop_capture on the runner's stream, for a call prepared for
 * `real`; counted in the statistics as one hit and one replay of its bucket. */
VG_API vg_status vg_runner_loop_launch(vg_runner *r, vg_graph_exec *loop, const vg_batch_desc *real);

/* ---- replay with the inputs staged by the runner ------------------------------------------------ */

/* One input of vg_runner_replay: `src` holds real->num_tokens rows of row_bytes bytes; they are
 * copied into `dst`, the static buffer the bucket's graphs read (dst_bytes long), followed by zero
 * rows up to the bucket's size. src and dst are device memory of the runner's device (src == dst:
 * the rows are in place already, only the padding is written). row_bytes 0: nothing to do. */
typedef struct vg_runner_input {
    const void *src;
    void *dst;
    size_t row_bytes;
    size_t dst_bytes;
} vg_runner_input;

/* The replay-only path of vg_runner_run in one call, for a caller whose prepare is nothing but
 * copies into static buffers (a wrapper around foreign code, e.g. PyTorch's): when every piece of
 * real's bucket runs inside one captured, current graph, copy and zero-pad the inputs and launch
 * that graph on the runner's stream. The model's reserve and prepare are not called; the call is
 * counted in the statistics as vg_runner_run counts a replay, *info describes it, *replayed = 1.
 * Otherwise (mode NONE, no bucket, a graph not captured yet or stale, evicted, failed, or a piece
 * that runs eagerly) nothing is enqueued, counted or written to *info, *replayed = 0, and the
 * caller makes the call with vg_runner_run. Bad arguments (NULL pointers, a dst too small for
 * the bucket) are refused with VG_ERR_INVALID_ARG before anything is enqueued. info may be NULL.
 * Not to be called concurrently with other calls on the runner, as vg_runner_run. */
VG_API vg_status vg_runner_replay(vg_runner *r, const vg_batch_desc *real, const vg_runner_input *inputs,
                                  int num_inputs, vg_run_info *info, int *replayed);

#ifdef __cplusplus
}
#endif
#endif /* VG_RUNNER_H */
