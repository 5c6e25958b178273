/* SPDX-License-Identifier: Apache-2.0 */
/* Internal state of the graph runner, shared by runner*.c. */
#ifndef VG_RUNNER_INTERNAL_H
#define VG_RUNNER_INTERNAL_H

#include <pthread.h>

#include "vg/vg_runner.h"
#include "vg_internal.h"

#define VG_RUNNER_MAX_ADDRS 64

typedef enum entry_state {
    ENTRY_EMPTY = 0, /* no graph yet, or it was destroyed (regrowth, eviction) */
    ENTRY_READY,     /* exec replays this key */
    ENTRY_STALE,     /* exec exists but must be recaptured (vg_runner_invalidate) */
    ENTRY_FAILED     /* capture failed: this key runs eagerly until the next invalidation */
} entry_state;

/* One graph: a padded descriptor and the range of pieces it covers. */
typedef struct graph_entry {
    int used;
    vg_batch_desc key;
    int first, last; /* pieces [first, last] */
    int bucket;
    entry_state state;
    vg_graph_exec *exec;
    uint64_t bytes; /* measured device memory of exec */
    uint64_t last_use;
    int warned;
    int ran_eagerly; /* eager_first: the key's pieces ran once outside capture */
    int naddrs;
    const void *addrs[VG_RUNNER_MAX_ADDRS]; /* recorded at capture for the address check */
    uint64_t reg_ids[VG_RUNNER_MAX_ADDRS];  /* the registration holding each (0: none) */
} graph_entry;

/* Open-addressing table of graph entries. Lookups allocate nothing. */
typedef struct graph_cache {
    graph_entry *slots;
    size_t cap; /* power of two */
    size_t count;
} graph_cache;

graph_entry *vg_cache_find(graph_cache *c, const vg_batch_desc *key, int first, int last);
/* Find or insert (may allocate when the table grows); NULL only on out of memory. */
graph_entry *vg_cache_insert(graph_cache *c, const vg_batch_desc *key, int first, int last);
void vg_cache_free(graph_cache *c);

/* runner_stats.c: counters per bucket plus the row of calls above the threshold. It knows
 * nothing of the runner: runner.c calls it, never the other way round. */
typedef struct runner_stats {
    pthread_mutex_t lock; /* the counters are read from any thread */
    vg_bucket_stats *rows;
    int nrows;
} runner_stats;

/* rows = nsizes + 1, the last one for calls above the threshold (size -1). */
vg_status vg_stats_init(runner_stats *st, const int64_t *sizes, int nsizes);
void vg_stats_free(runner_stats *st);
/* Add the counters of `delta` (not its graph_bytes / live_graphs) to row `row`. */
void vg_stats_add(runner_stats *st, int row, const vg_bucket_stats *delta);
/* A graph of `bytes` appeared (live = 1) or went away (bytes < 0, live = -1). */
void vg_stats_graphs(runner_stats *st, int row, int64_t bytes, int live);
/* Copy up to max rows and the total; returns the number of rows. */
int vg_stats_read(runner_stats *st, vg_bucket_stats *out, int max, vg_bucket_stats *total);

typedef struct runner_buffer {
    void *ptr;
    size_t bytes;
} runner_buffer;

struct vg_runner {
    vg_runtime *rt;
    vg_model_iface model;
    vg_stream *stream;
    int owns_stream;
    vg_graph_mode mode_requested, mode;
    int64_t *sizes;
    int nsizes;
    uint64_t budget;
    int debug_addresses;
    int eager_first;
    vg_event **piece_events; /* profile_pieces: num_pieces + 1 events */
    double *piece_ms;
    /* Per piece, from its ops_used at create: every op it enqueues can be captured here (and
     * the device has graphs). A piece without it is never graphed. */
    unsigned char *piece_ops_capturable;

    /* Graphs only ever see the graph set, sized for the largest bucket. Eager calls above
     * the threshold use the overflow set, so they never move memory graphs point at. */
    runner_buffer graph_set[VG_RUNNER_MAX_BUFFERS];
    runner_buffer overflow_set[VG_RUNNER_MAX_BUFFERS];
    runner_buffer *active; /* the set this call uses */
    int in_reserve;
    int sized;

    graph_cache cache;
    uint64_t tick;
    uint64_t graph_bytes; /* all live graphs */
    int warned_full_downgrade;

    runner_stats stats;
};

/* runner.c, for runner_loop.c: reserve and prepare a call without running it (refused without a
 * bucket); whether `padded` runs FULL; enqueue every piece of `padded` (no timing). */
vg_status vg_runner_prepare_call(vg_runner *r, const vg_batch_desc *real, const void *inputs,
                                 vg_batch_desc *padded, int *bucket);
int vg_runner_full_ok(const vg_runner *r, const vg_batch_desc *padded);
vg_status vg_runner_enqueue_all(vg_runner *r, const vg_batch_desc *padded);

#endif
