/* SPDX-License-Identifier: Apache-2.0 */
/* The graph runner: bucketing, padding, modes, lazy capture and warm-up, eager fallback,
 * static buffers, graph update and the memory budget. docs/runner.md explains the policy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner_internal.h"

/* ---- small helpers ------------------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static const int64_t k_default_sizes[] = {64,   128,  192,  256,  320,  384,  448,
                                          512,  640,  768,  896,  1024, 1280, 1536,
                                          1792, 2048, 2560, 3072, 3584, 4096};

int vg_runner_default_sizes(const int64_t **sizes)
{
    if (sizes) *sizes = k_default_sizes;
    return (int)VG_ARRAY_LEN(k_default_sizes);
}

const char *vg_graph_mode_name(vg_graph_mode m)
{
    switch (m) {
    case VG_MODE_NONE: return "none";
    case VG_MODE_PIECEWISE: return "piecewise";
    case VG_MODE_FULL: return "full";
    case VG_MODE_FULL_AND_PIECEWISE: return "full_and_piecewise";
    }
    return "unknown";
}

vg_status vg_graph_mode_parse(const char *text, vg_graph_mode *mode)
{
    for (int m = VG_MODE_NONE; m <= VG_MODE_FULL_AND_PIECEWISE; m++)
        if (text && mode && strcmp(text, vg_graph_mode_name((vg_graph_mode)m)) == 0) {
            *mode = (vg_graph_mode)m;
            return VG_OK;
        }
    return vg_error_set(VG_ERR_INVALID_ARG, "graph mode '%s' not understood (want none, "
                                            "piecewise, full or full_and_piecewise)",
                        text ? text : "(null)");
}

static uint64_t mem_free_now(vg_runner *r)
{
    vg_device_info info = {.struct_size = sizeof info};
    return vg_runtime_device_info(r->rt, &info) == VG_OK ? info.mem_free : 0;
}

/* ---- options and lifetime ---------------------------------------------------------------------- */

void vg_runner_options_init(vg_runner_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->mode = VG_MODE_FULL_AND_PIECEWISE;
    o->debug_addresses = -1;
}

static vg_status check_model(const vg_model_iface *m)
{
    if (!m || m->struct_size < sizeof(vg_model_iface))
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_create: model interface missing or "
                                                "struct_size not set");
    if (!m->pieces || m->num_pieces <= 0 || !m->reserve || !m->prepare)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_create: the model needs pieces, "
                                                "reserve and prepare");
    for (int i = 0; i < m->num_pieces; i++) {
        const vg_piece *p = &m->pieces[i];
        if (!p->run)
            return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_create: piece %d ('%s') has no "
                                                    "run function", i, p->name ? p->name : "?");
        if (p->num_ops_used < 0 || (p->num_ops_used > 0 && !p->ops_used))
            return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_create: piece %d ('%s') lists %d "
                                                    "ops_used but the list is %s", i,
                                p->name ? p->name : "?", p->num_ops_used,
                                p->ops_used ? "not NULL" : "NULL");
    }
    return VG_OK;
}

static vg_status set_sizes(vg_runner *r, const vg_runner_options *o)
{
    const int64_t *sizes = o->capture_sizes;
    int n = o->num_capture_sizes;
    if (!sizes) n = vg_runner_default_sizes(&sizes);
    if (n < 0 || (n > 0 && !sizes))
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_create: bad capture size list");
    r->sizes = calloc((size_t)(n ? n : 1), sizeof *r->sizes);
    if (!r->sizes) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_runner_create: out of memory");
    int64_t max = o->max_capture_size;
    if (max < 0) return vg_error_set(VG_ERR_INVALID_ARG, "max_capture_size must be >= 0");
    for (int i = 0; i < n; i++) {
        if (sizes[i] <= 0 || (i && sizes[i] <= sizes[i - 1]))
            return vg_error_set(VG_ERR_INVALID_ARG, "capture sizes must be positive and strictly "
                                                    "ascending (size %d is %lld)", i,
                                (long long)sizes[i]);
        if (max && sizes[i] > max) break;
        r->sizes[r->nsizes++] = sizes[i];
    }
    return VG_OK;
}

/* The first op of piece p the device cannot capture, or -1. */
static int uncapturable_op(const vg_runtime *rt, const vg_piece *p)
{
    for (int k = 0; k < p->num_ops_used; k++)
        if (!vg_runtime_op_capturable(rt, p->ops_used[k])) return (int)p->ops_used[k];
    return -1;
}

/* Piece i can be captured for `padded`: its ops (known at create) and its graph_safe. */
static int piece_capturable(const vg_runner *r, int i, const vg_batch_desc *padded)
{
    const vg_piece *p = &r->model.pieces[i];
    if (!r->piece_ops_capturable[i]) return 0;
    return !p->graph_safe || p->graph_safe(r->model.model, padded);
}

static void choose_mode(vg_runner *r)
{
    r->mode = r->mode_requested;
    if (r->mode == VG_MODE_NONE) return;
    if (!(vg_runtime_caps(r->rt) & VG_CAP_GRAPH)) {
        vg_log(VG_LOG_WARN, "runner: backend '%s' has no graph support: mode %s downgraded to "
                            "none (every call runs eagerly)", vg_runtime_backend_name(r->rt),
               vg_graph_mode_name(r->mode));
        r->mode = VG_MODE_NONE;
        return;
    }
    if (r->nsizes == 0) {
        vg_log(VG_LOG_WARN, "runner: no capture sizes: mode %s downgraded to none",
               vg_graph_mode_name(r->mode));
        r->mode = VG_MODE_NONE;
        return;
    }
    if (r->mode == VG_MODE_FULL) {
        for (int i = 0; i < r->model.num_pieces; i++) {
            const vg_piece *p = &r->model.pieces[i];
            if (!r->piece_ops_capturable[i]) {
                int op = uncapturable_op(r->rt, p);
                const char *opn = vg_op_name((vg_op_id)op);
                if (op < 0) /* not its ops: its foreign work */
                    vg_log(VG_LOG_WARN, "runner: piece '%s' enqueues foreign work, which backend "
                                        "'%s' cannot capture: mode full downgraded to piecewise "
                                        "(the piece runs eagerly)", p->name ? p->name : "?",
                           vg_runtime_backend_name(r->rt));
                else
                    vg_log(VG_LOG_WARN, "runner: piece '%s' uses op '%s' that backend '%s' "
                                        "cannot capture: mode full downgraded to piecewise (the "
                                        "piece runs eagerly)", p->name ? p->name : "?",
                           opn ? opn : "unknown", vg_runtime_backend_name(r->rt));
                r->mode = VG_MODE_PIECEWISE;
                return;
            }
        }
    }
}

vg_status vg_runner_create(vg_runtime *rt, const vg_model_iface *model,
                           const vg_runner_options *opts, vg_runner **out)
{
    if (!rt || !out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_create: NULL argument");
    *out = NULL;
    vg_runner_options def;
    vg_runner_options_init(&def);
    if (!opts) opts = &def;
    if (opts->struct_size < sizeof(vg_runner_options))
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_create: options.struct_size not set "
                                                "(call vg_runner_options_init)");
    if ((unsigned)opts->mode > VG_MODE_FULL_AND_PIECEWISE)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_create: unknown mode %d", (int)opts->mode);
    vg_status st = check_model(model);
    if (st != VG_OK) return st;
    vg_runner *r = calloc(1, sizeof *r);
    if (!r) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_runner_create: out of memory");
    r->model = *model;
    r->rt = rt;
    r->mode_requested = opts->mode;
    r->budget = opts->graph_memory_budget;
    r->debug_addresses = opts->debug_addresses >= 0 ? opts->debug_addresses
                                                    : vg_env_flag("VG_DEBUG_ADDRESSES");
    r->eager_first = opts->eager_first;
    r->active = r->graph_set;
    st = set_sizes(r, opts);
    if (st == VG_OK && opts->profile_pieces) {
        r->piece_ms = calloc((size_t)model->num_pieces, sizeof *r->piece_ms);
        r->piece_events = calloc((size_t)model->num_pieces + 1, sizeof *r->piece_events);
        if (!r->piece_ms || !r->piece_events) st = vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_runner_create: out of memory");
        for (int i = 0; st == VG_OK && i <= model->num_pieces; i++)
            st = vg_event_create(rt, &r->piece_events[i]);
    }
    if (st == VG_OK) st = vg_stats_init(&r->stats, r->sizes, r->nsizes);
    if (st == VG_OK) {
        r->piece_ops_capturable = calloc((size_t)model->num_pieces, 1);
        if (!r->piece_ops_capturable)
            st = vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_runner_create: out of memory");
    }
    if (st == VG_OK) {
        /* capturability from ops_used and the foreign flag, asked once: the device's answers
         * do not change */
        int graphs = (vg_runtime_caps(rt) & VG_CAP_GRAPH) != 0;
        int foreign_ok = (vg_runtime_caps(rt) & VG_CAP_FOREIGN_CAPTURE) != 0;
        for (int i = 0; i < model->num_pieces; i++) {
            const vg_piece *p = &model->pieces[i];
            r->piece_ops_capturable[i] = graphs && uncapturable_op(rt, p) < 0 &&
                                         (!(p->flags & VG_PIECE_FOREIGN) || foreign_ok);
        }
        choose_mode(r);
        if (opts->stream) {
            if (vg_stream_runtime(opts->stream) != rt)
                st = vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_create: options.stream belongs "
                                                      "to another runtime");
            else
                r->stream = opts->stream;
        } else {
            st = vg_stream_create(rt, &r->stream);
            r->owns_stream = st == VG_OK;
        }
    }
    if (st != VG_OK) {
        vg_runner_destroy(r);
        return st;
    }
    *out = r;
    return VG_OK;
}

/* Statistics rows: one per bucket, then the row of calls above the threshold (bucket -1). */
static void stats_add(vg_runner *r, int bucket, const vg_bucket_stats *d)
{
    vg_stats_add(&r->stats, bucket < 0 ? r->nsizes : bucket, d);
}

static void stats_graphs(vg_runner *r, int bucket, int64_t bytes, int live)
{
    vg_stats_graphs(&r->stats, bucket < 0 ? r->nsizes : bucket, bytes, live);
}

int vg_runner_stats(vg_runner *r, vg_bucket_stats *out, int max, vg_bucket_stats *total)
{
    return r ? vg_stats_read(&r->stats, out, max, total) : 0;
}

/* Drop a graph; `evicted` only changes what the statistics say. */
static void entry_drop(vg_runner *r, graph_entry *e, int evicted)
{
    if (e->exec) {
        vg_graph_exec_destroy(e->exec);
        stats_graphs(r, e->bucket, -(int64_t)e->bytes, -1);
        if (evicted) stats_add(r, e->bucket, &(vg_bucket_stats){.evictions = 1});
        r->graph_bytes -= e->bytes;
    }
    e->exec = NULL;
    e->bytes = 0;
    e->state = ENTRY_EMPTY;
}

static void drop_all_graphs(vg_runner *r)
{
    for (size_t i = 0; i < r->cache.cap; i++)
        if (r->cache.slots[i].used) entry_drop(r, &r->cache.slots[i], 0);
}

static void free_set(vg_runner *r, runner_buffer *set)
{
    for (int i = 0; i < VG_RUNNER_MAX_BUFFERS; i++)
        if (set[i].ptr) vg_mem_free(r->rt, set[i].ptr);
    memset(set, 0, sizeof(runner_buffer) * VG_RUNNER_MAX_BUFFERS);
}

vg_status vg_runner_destroy(vg_runner *r)
{
    if (!r) return VG_OK;
    if (r->stream) vg_stream_sync(r->stream);
    drop_all_graphs(r);
    vg_cache_free(&r->cache);
    free_set(r, r->graph_set);
    free_set(r, r->overflow_set);
    if (r->owns_stream) vg_stream_destroy(r->stream);
    for (int i = 0; r->piece_events && i <= r->model.num_pieces; i++)
        vg_event_destroy(r->piece_events[i]);
    free(r->piece_events);
    free(r->piece_ms);
    free(r->piece_ops_capturable);
    vg_stats_free(&r->stats);
    free(r->sizes);
    free(r);
    return VG_OK;
}

/* ---- static buffers ------------------------------------------------------------------------------ */

vg_status vg_runner_buffer_reserve(vg_runner *r, int id, size_t bytes)
{
    if (!r || id < 0 || id >= VG_RUNNER_MAX_BUFFERS)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_buffer_reserve: bad buffer id %d", id);
    if (!r->in_reserve)
        return vg_error_set(VG_ERR_STATE, "vg_runner_buffer_reserve: only valid inside the "
                                          "model's reserve callback");
    runner_buffer *buf = &r->active[id];
    if (bytes <= buf->bytes) return VG_OK;
    /* Grow with headroom so that a slowly growing need does not recapture every time. */
    size_t want = bytes + bytes / 4;
    want = (want + 255) & ~(size_t)255;
    void *p = NULL;
    vg_status st = vg_mem_alloc(r->rt, want, &p);
    if (st != VG_OK) {
        st = vg_mem_alloc(r->rt, bytes, &p);
        if (st != VG_OK)
            return vg_error_prefix("runner: growing buffer %d to %zu bytes: ", id, bytes);
        want = bytes;
    }
    if (buf->ptr) {
        if (r->active == r->graph_set && r->cache.count) {
            /* Graphs hold this address: destroy them before the memory goes away. */
            vg_log(VG_LOG_INFO, "runner: buffer %d grew from %zu to %zu bytes: every graph is "
                                "dropped and will be recaptured", id, buf->bytes, want);
            drop_all_graphs(r);
        }
        vg_stream_sync(r->stream); /* queued work may still use the old memory */
        vg_mem_free(r->rt, buf->ptr);
    }
    buf->ptr = p;
    buf->bytes = want;
    return VG_OK;
}

void *vg_runner_buffer(vg_runner *r, int id)
{
    return r && id >= 0 && id < VG_RUNNER_MAX_BUFFERS ? r->active[id].ptr : NULL;
}

size_t vg_runner_buffer_size(vg_runner *r, int id)
{
    return r && id >= 0 && id < VG_RUNNER_MAX_BUFFERS ? r->active[id].bytes : 0;
}

static vg_status reserve(vg_runner *r, const vg_batch_desc *padded)
{
    r->in_reserve = 1;
    vg_error_clear();
    vg_status st = r->model.reserve(r->model.model, r, padded);
    r->in_reserve = 0;
    if (st != VG_OK && !vg_error_is_set())
        vg_error_set(st, "runner: the model's reserve failed for %lld tokens",
                     (long long)padded->num_tokens);
    return st;
}

/* Size the graph set once for the largest bucket, so smaller buckets never grow it. */
static vg_status ensure_sized(vg_runner *r, const vg_batch_desc *like)
{
    if (r->sized || r->nsizes == 0) return VG_OK;
    vg_batch_desc big = *like;
    big.num_tokens = r->sizes[r->nsizes - 1];
    vg_status st = reserve(r, &big);
    if (st == VG_OK) r->sized = 1;
    return st;
}

/* ---- lookup ---------------------------------------------------------------------------------------- */

int vg_runner_bucket_for(const vg_runner *r, int64_t n)
{
    if (!r || n < 1 || r->nsizes == 0 || n > r->sizes[r->nsizes - 1]) return -1;
    int lo = 0, hi = r->nsizes - 1; /* smallest size >= n */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (r->sizes[mid] >= n) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

int vg_runner_num_buckets(const vg_runner *r) { return r ? r->nsizes : 0; }
int64_t vg_runner_bucket_size(const vg_runner *r, int b)
{
    return r && b >= 0 && b < r->nsizes ? r->sizes[b] : -1;
}
vg_stream *vg_runner_stream(vg_runner *r) { return r ? r->stream : NULL; }
vg_graph_mode vg_runner_mode(const vg_runner *r) { return r ? r->mode : VG_MODE_NONE; }

/* ---- capture --------------------------------------------------------------------------------------- */

/* Eager (timed = 1) or while capturing (timed = 0): events cannot be recorded in a capture. */
static vg_status run_pieces_impl(vg_runner *r, const vg_batch_desc *padded, int first, int last,
                                 int timed)
{
    timed = timed && r->piece_events;
    for (int i = first; i <= last; i++) {
        const vg_piece *p = &r->model.pieces[i];
        if (timed) vg_event_record(r->piece_events[i], r->stream);
        vg_error_clear();
        vg_status st = p->run(r->model.model, r, p, padded, r->stream);
        if (st != VG_OK) {
            if (!vg_error_is_set()) vg_error_set(st, "piece failed");
            return vg_error_prefix("runner: piece '%s': ", p->name ? p->name : "?");
        }
    }
    if (timed) {
        vg_event_record(r->piece_events[last + 1], r->stream);
        vg_event_sync(r->piece_events[last + 1]);
        for (int i = first; i <= last; i++) {
            float ms = 0;
            if (vg_event_elapsed_ms(r->piece_events[i], r->piece_events[i + 1], &ms) == VG_OK)
                r->piece_ms[i] += ms;
        }
    }
    return VG_OK;
}

static vg_status run_pieces(vg_runner *r, const vg_batch_desc *padded, int first, int last)
{
    return run_pieces_impl(r, padded, first, last, 1);
}

const char *vg_runner_piece_name(const vg_runner *r, int i, int64_t *arg)
{
    if (!r || i < 0 || i >= r->model.num_pieces) return NULL;
    if (arg) *arg = r->model.pieces[i].arg;
    return r->model.pieces[i].name ? r->model.pieces[i].name : "?";
}

int vg_runner_piece_times(vg_runner *r, double *ms, int max)
{
    if (!r) return 0;
    for (int i = 0; ms && r->piece_ms && i < r->model.num_pieces && i < max; i++) ms[i] = r->piece_ms[i];
    return r->model.num_pieces;
}

/* The addresses graphs use now, and for each the registration holding it (0: vg's own memory),
 * so that a registration dropped or made anew at the same address is caught too. */
static int record_addresses(vg_runner *r, const void **out, uint64_t *reg_ids)
{
    int n = 0;
    for (int i = 0; i < VG_RUNNER_MAX_BUFFERS && n < VG_RUNNER_MAX_ADDRS; i++)
        if (r->graph_set[i].ptr) out[n++] = r->graph_set[i].ptr;
    if (r->model.addresses)
        n += r->model.addresses(r->model.model, r, out + n, VG_RUNNER_MAX_ADDRS - n);
    for (int i = 0; i < n; i++) reg_ids[i] = out[i] ? vg_registration_id(r->rt, out[i]) : 0;
    return n;
}

/* Replaying a graph whose inputs moved would read stale memory: refuse, loudly. */
static vg_status check_addresses(vg_runner *r, const graph_entry *e)
{
    const void *now[VG_RUNNER_MAX_ADDRS];
    uint64_t ids[VG_RUNNER_MAX_ADDRS];
    int n = record_addresses(r, now, ids);
    for (int i = 0; i < n || i < e->naddrs; i++) {
        const void *was = i < e->naddrs ? e->addrs[i] : NULL, *is = i < n ? now[i] : NULL;
        if (was == is && (i >= n || ids[i] == e->reg_ids[i])) continue;
        if (was == is) {
            vg_log(VG_LOG_ERROR, "runner: address check failed for the graph of %lld tokens "
                                 "(pieces %d-%d): the registered memory at %p (address %d) was "
                                 "unregistered or registered anew since the capture; refusing to "
                                 "replay", (long long)e->key.num_tokens, e->first, e->last, was, i);
            return vg_error_set(VG_ERR_STATE, "runner: address check failed: the graph of %lld "
                                              "tokens was captured over registered memory at %p "
                                              "(address %d), which is %s now (invalidate the "
                                              "runner after changing registrations)",
                                (long long)e->key.num_tokens, was, i,
                                ids[i] ? "another registration" : "no longer registered");
        }
        vg_log(VG_LOG_ERROR, "runner: address check failed for the graph of %lld tokens "
                             "(pieces %d-%d): address %d was %p at capture and is %p now; "
                             "refusing to replay", (long long)e->key.num_tokens, e->first,
               e->last, i, was, is);
        return vg_error_set(VG_ERR_STATE, "runner: address check failed: the graph of %lld tokens "
                                          "was captured with address %d = %p, the call now uses "
                                          "%p (a buffer moved without invalidating the graph)",
                            (long long)e->key.num_tokens, i, was, is);
    }
    return VG_OK;
}

static void evict_for_budget(vg_runner *r, const graph_entry *keep)
{
    while (r->budget && r->graph_bytes > r->budget) {
        graph_entry *lru = NULL;
        for (size_t i = 0; i < r->cache.cap; i++) {
            graph_entry *e = &r->cache.slots[i];
            if (e->used && e->exec && e != keep && (!lru || e->last_use < lru->last_use)) lru = e;
        }
        if (!lru) return;
        vg_log(VG_LOG_DEBUG, "runner: evicting the graph of %lld tokens (%llu bytes) for the "
                             "budget of %llu bytes", (long long)lru->key.num_tokens,
               (unsigned long long)lru->bytes, (unsigned long long)r->budget);
        entry_drop(r, lru, 1);
    }
}

/* Capture pieces [e->first, e->last] into e. On failure the stream is left usable and the
 * entry is marked FAILED; the caller runs the pieces eagerly. */
static vg_status capture(vg_runner *r, graph_entry *e, double *ms)
{
    double t0 = now_ms();
    uint64_t before = mem_free_now(r);
    vg_graph *graph = NULL;
    vg_status st = vg_graph_capture_begin(r->stream);
    if (st == VG_OK) {
        vg_status run_st = run_pieces_impl(r, &e->key, e->first, e->last, 0);
        char why[1024];
        snprintf(why, sizeof why, "%s", vg_last_error());
        st = vg_graph_capture_end(r->stream, &graph); /* always ends, also after a failure */
        if (run_st != VG_OK) {
            vg_graph_destroy(graph);
            graph = NULL;
            st = vg_error_set(run_st, "%s", why);
        }
    }
    vg_bucket_stats d = {.captures = 0};
    if (st == VG_OK && e->exec && e->state == ENTRY_STALE &&
        (vg_runtime_caps(r->rt) & VG_CAP_GRAPH_UPDATE)) {
        int applied = 0;
        if (vg_graph_exec_update(e->exec, graph, &applied) == VG_OK && applied) d.updates = 1;
    }
    if (st == VG_OK && !d.updates) {
        entry_drop(r, e, 0);
        st = vg_graph_instantiate(graph, &e->exec);
        if (st != VG_OK) e->exec = NULL;
    }
    vg_graph_destroy(graph);
    *ms = now_ms() - t0;
    d.capture_ms = *ms;
    if (st != VG_OK) {
        d.capture_failures = 1;
        stats_add(r, e->bucket, &d);
        entry_drop(r, e, 0);
        e->state = ENTRY_FAILED;
        if (!e->warned)
            vg_log(VG_LOG_WARN, "runner: capture of %lld tokens (pieces %d-%d) failed, running "
                                "it eagerly: %s", (long long)e->key.num_tokens, e->first, e->last,
                   vg_last_error());
        e->warned = 1;
        return st;
    }
    d.captures = 1;
    stats_add(r, e->bucket, &d);
    if (!d.updates) { /* a new exec: measure what it holds */
        uint64_t after = mem_free_now(r);
        e->bytes = before > after ? before - after : 0;
        r->graph_bytes += e->bytes;
        stats_graphs(r, e->bucket, (int64_t)e->bytes, 1);
    }
    e->state = ENTRY_READY;
    e->naddrs = r->debug_addresses ? record_addresses(r, e->addrs, e->reg_ids) : 0;
    evict_for_budget(r, e);
    return VG_OK;
}

/* ---- running ------------------------------------------------------------------------------------------ */

/* Graph pieces [first, last] for `padded`: replay, capturing first if needed; on a failed
 * capture, run them eagerly. */
static vg_status run_graphed(vg_runner *r, int bucket, const vg_batch_desc *padded, int first,
                             int last, vg_run_info *info)
{
    graph_entry *e = vg_cache_insert(&r->cache, padded, first, last);
    if (!e) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "runner: graph cache: out of memory");
    e->bucket = bucket;
    e->last_use = ++r->tick;
    if (e->state == ENTRY_EMPTY && r->eager_first && !e->ran_eagerly) {
        /* serve this call eagerly, then capture for the next ones */
        info->eager_pieces += last - first + 1;
        vg_status st = run_pieces(r, padded, first, last);
        if (st != VG_OK) return st;
        e->ran_eagerly = 1;
        double ms;
        if (capture(r, e, &ms) == VG_OK) info->captures++;
        return VG_OK;
    }
    if (e->state == ENTRY_EMPTY || e->state == ENTRY_STALE) {
        double ms;
        if (capture(r, e, &ms) == VG_OK) info->captures++;
    } else if (e->state == ENTRY_READY && r->debug_addresses) {
        vg_status st = check_addresses(r, e);
        if (st != VG_OK) return st;
    }
    if (e->state != ENTRY_READY) {
        info->eager_pieces += last - first + 1;
        return run_pieces(r, padded, first, last);
    }
    vg_status st = vg_graph_exec_launch(e->exec, r->stream);
    if (st != VG_OK) return vg_error_prefix("runner: graph launch (%lld tokens): ",
                                            (long long)padded->num_tokens);
    info->graph_launches++;
    return VG_OK;
}

static int all_capturable(const vg_runner *r, const vg_batch_desc *padded)
{
    for (int i = 0; i < r->model.num_pieces; i++)
        if (!piece_capturable(r, i, padded)) return 0;
    return 1;
}

/* Piece k may sit inside a graphed segment: not splitting, and capturable for `padded`. */
static int graphable(const vg_runner *r, int k, const vg_batch_desc *padded)
{
    return !(r->model.pieces[k].flags & VG_PIECE_SPLITTING) && piece_capturable(r, k, padded);
}

/* The forward of `padded` cut into segments. With `full`, one graphed segment of every piece;
 * otherwise a splitting or uncapturable piece is an eager segment of its own and every maximal
 * run of other pieces is a graphed one. The segment starting at piece i ends at *last; returns
 * 1 when it is graphed. vg_runner_run and vg_runner_warmup both walk the forward with it. */
static int segment_at(const vg_runner *r, const vg_batch_desc *padded, int full, int i, int *last)
{
    int n = r->model.num_pieces;
    if (full) {
        *last = n - 1;
        return 1;
    }
    *last = i;
    if (!graphable(r, i, padded)) return 0;
    while (*last + 1 < n && graphable(r, *last + 1, padded)) ++*last;
    return 1;
}

/* FULL or FULL_AND_PIECEWISE, and every piece can be captured for `padded`. */
static int use_full(const vg_runner *r, const vg_batch_desc *padded, int *full_ok)
{
    *full_ok = all_capturable(r, padded);
    return (r->mode == VG_MODE_FULL || r->mode == VG_MODE_FULL_AND_PIECEWISE) && *full_ok;
}

/* Execute the forward for `padded` in the runner's mode; `bucket` >= 0. */
static vg_status run_bucket(vg_runner *r, int bucket, const vg_batch_desc *padded, vg_run_info *info)
{
    int full_ok, full = use_full(r, padded, &full_ok);
    if (r->mode == VG_MODE_FULL && !full_ok && !r->warned_full_downgrade) {
        r->warned_full_downgrade = 1;
        vg_log(VG_LOG_WARN, "runner: a piece cannot be captured for %lld tokens: mode full runs "
                            "piecewise for such calls", (long long)padded->num_tokens);
    }
    info->path = full ? VG_RUN_FULL : VG_RUN_PIECEWISE;
    for (int i = 0, last; i < r->model.num_pieces; i = last + 1) {
        vg_status st;
        if (segment_at(r, padded, full, i, &last)) {
            st = run_graphed(r, bucket, padded, i, last, info);
        } else {
            info->eager_pieces += last - i + 1;
            st = run_pieces(r, padded, i, last);
        }
        if (st != VG_OK) return st;
    }
    return VG_OK;
}

vg_status vg_runner_run(vg_runner *r, const vg_batch_desc *real, const void *inputs,
                        vg_run_info *info_out)
{
    double t0 = now_ms();
    if (!r || !real) return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_run: NULL argument");
    if (real->num_tokens < 1)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_run: num_tokens is %lld (must be >= 1)",
                            (long long)real->num_tokens);
    vg_run_info info = {.bucket = -1, .path = VG_RUN_EAGER};
    int bucket = r->mode == VG_MODE_NONE ? -1 : vg_runner_bucket_for(r, real->num_tokens);
    vg_batch_desc padded = *real;
    if (bucket >= 0) padded.num_tokens = r->sizes[bucket];
    /* The overflow set serves calls bigger than every bucket, so graphs keep their buffers. */
    int above = r->nsizes == 0 || real->num_tokens > r->sizes[r->nsizes - 1];
    r->active = above ? r->overflow_set : r->graph_set;
    vg_status st = above ? VG_OK : ensure_sized(r, real);
    if (st == VG_OK) st = reserve(r, &padded);
    if (st == VG_OK) {
        vg_error_clear();
        st = r->model.prepare(r->model.model, r, real, &padded, r->stream, inputs);
        if (st != VG_OK && !vg_error_is_set()) vg_error_set(st, "runner: the model's prepare failed");
    }
    if (st == VG_OK) {
        if (bucket >= 0) {
            st = run_bucket(r, bucket, &padded, &info);
        } else {
            info.eager_pieces = r->model.num_pieces;
            st = run_pieces(r, &padded, 0, r->model.num_pieces - 1);
        }
    }
    info.padded_tokens = padded.num_tokens;
    info.bucket = bucket;
    if (info.graph_launches == 0) info.path = VG_RUN_EAGER;
    stats_add(r, bucket >= 0 || above ? bucket : vg_runner_bucket_for(r, real->num_tokens),
                        &(vg_bucket_stats){.hits = 1,
                                           .replays = (uint64_t)info.graph_launches,
                                           .eager_runs = info.graph_launches == 0,
                                           .real_tokens = (uint64_t)real->num_tokens,
                                           .padded_tokens =
                                               (uint64_t)(padded.num_tokens - real->num_tokens)});
    /* r->active stays on this call's set: the caller reads its outputs through it. */
    info.host_ms = now_ms() - t0;
    if (info_out) *info_out = info;
    return st;
}

/* Capture every graph of one bucket for descriptors like `like`; k-th of count, for progress. */
static vg_status warm_bucket(vg_runner *r, const vg_batch_desc *like, int bucket, int k, int count,
                             vg_warmup_fn progress, void *user)
{
    vg_batch_desc padded = *like;
    padded.num_tokens = r->sizes[bucket];
    vg_warmup_progress p = {.index = k, .count = count, .size = padded.num_tokens};
    p.mem_free_before = mem_free_now(r);
    vg_status st = reserve(r, &padded);
    if (st == VG_OK && r->eager_first) { /* the eager runs need valid buffer contents */
        vg_error_clear();
        st = r->model.prepare(r->model.model, r, &padded, &padded, r->stream, NULL);
    }
    if (st != VG_OK) return st;
    int full_ok, full = use_full(r, &padded, &full_ok);
    for (int i = 0, j; i < r->model.num_pieces; i = j + 1) {
        if (!segment_at(r, &padded, full, i, &j)) continue; /* eager pieces: nothing to capture */
        graph_entry *e = vg_cache_insert(&r->cache, &padded, i, j);
        if (!e) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "runner: graph cache: out of memory");
        e->bucket = bucket;
        e->last_use = ++r->tick;
        if (e->state != ENTRY_READY) {
            double ms = 0;
            vg_status cst = VG_OK;
            if (r->eager_first && !e->ran_eagerly) {
                cst = run_pieces(r, &padded, i, j);
                e->ran_eagerly = cst == VG_OK;
            }
            if (cst == VG_OK) cst = capture(r, e, &ms);
            p.capture_ms += ms;
            if (cst != VG_OK && p.status == VG_OK) p.status = cst;
        }
    }
    p.mem_free_after = mem_free_now(r);
    if (progress) progress(user, &p);
    return VG_OK;
}

/* Warm the buckets marked in `want` (one flag per capture size), largest first: the workspace
 * peaks first. */
static vg_status warm_marked(vg_runner *r, const vg_batch_desc *like, const unsigned char *want,
                             vg_warmup_fn progress, void *user)
{
    r->active = r->graph_set;
    vg_status st = ensure_sized(r, like);
    int count = 0, k = 0;
    for (int b = 0; b < r->nsizes; b++) count += want[b];
    for (int b = r->nsizes - 1; b >= 0 && st == VG_OK; b--)
        if (want[b]) st = warm_bucket(r, like, b, k++, count, progress, user);
    return st;
}

vg_status vg_runner_warmup(vg_runner *r, const vg_batch_desc *like, vg_warmup_fn progress, void *user)
{
    if (!r || !like) return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_warmup: NULL argument");
    if (r->mode == VG_MODE_NONE || r->nsizes == 0) return VG_OK;
    unsigned char *want = calloc((size_t)r->nsizes, 1);
    if (!want) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_runner_warmup: out of host memory");
    /* like->num_tokens > 0: only the buckets a call of at most that many tokens pads to */
    int top = like->num_tokens > 0 ? vg_runner_bucket_for(r, like->num_tokens) : -1;
    for (int b = 0; b <= (top >= 0 ? top : r->nsizes - 1); b++) want[b] = 1;
    vg_status st = warm_marked(r, like, want, progress, user);
    free(want);
    return st;
}

vg_status vg_runner_warmup_for(vg_runner *r, const vg_batch_desc *like, const int64_t *tokens,
                               int64_t n, vg_warmup_fn progress, void *user)
{
    if (!r || !like || (n > 0 && !tokens))
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_warmup_for: NULL argument");
    if (n < 0) return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_warmup_for: %lld token counts", (long long)n);
    if (r->mode == VG_MODE_NONE || r->nsizes == 0) return VG_OK;
    unsigned char *want = calloc((size_t)r->nsizes, 1);
    if (!want) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_runner_warmup_for: out of host memory");
    int any = 0;
    for (int64_t i = 0; i < n; i++) {
        int b = vg_runner_bucket_for(r, tokens[i]); /* -1: above every bucket, eager */
        if (b >= 0) want[b] = any = 1;
    }
    vg_status st = any ? warm_marked(r, like, want, progress, user) : VG_OK;
    free(want);
    return st;
}

vg_status vg_runner_invalidate(vg_runner *r)
{
    if (!r) return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_invalidate: NULL");
    for (size_t i = 0; i < r->cache.cap; i++) {
        graph_entry *e = &r->cache.slots[i];
        if (!e->used) continue;
        e->state = e->exec ? ENTRY_STALE : ENTRY_EMPTY; /* FAILED entries get another try */
        e->warned = 0;
    }
    return VG_OK;
}

/* ---- for runner_loop.c (device-side loops) ------------------------------------------------------ */

vg_status vg_runner_prepare_call(vg_runner *r, const vg_batch_desc *real, const void *inputs,
                                 vg_batch_desc *padded, int *bucket)
{
    *bucket = r->mode == VG_MODE_NONE ? -1 : vg_runner_bucket_for(r, real->num_tokens);
    if (*bucket < 0)
        return vg_error_set(VG_ERR_UNSUPPORTED, "runner: a call of %lld tokens has no graph "
                                                "(mode %s, largest capture size %lld)",
                            (long long)real->num_tokens, vg_graph_mode_name(r->mode),
                            (long long)(r->nsizes ? r->sizes[r->nsizes - 1] : 0));
    *padded = *real;
    padded->num_tokens = r->sizes[*bucket];
    r->active = r->graph_set;
    vg_status st = ensure_sized(r, real);
    if (st == VG_OK) st = reserve(r, padded);
    if (st != VG_OK) return st;
    vg_error_clear();
    st = r->model.prepare(r->model.model, r, real, padded, r->stream, inputs);
    if (st != VG_OK && !vg_error_is_set()) vg_error_set(st, "runner: the model's prepare failed");
    return st;
}

int vg_runner_full_ok(const vg_runner *r, const vg_batch_desc *padded)
{
    int full_ok;
    return use_full(r, padded, &full_ok);
}

vg_status vg_runner_enqueue_all(vg_runner *r, const vg_batch_desc *padded)
{
    return run_pieces_impl(r, padded, 0, r->model.num_pieces - 1, 0);
}

/* ---- replay with the inputs staged by the runner ----------------------------------------------- */

/* The graph of `padded` when one captured, current graph covers every piece; else NULL. */
static graph_entry *replay_entry(vg_runner *r, const vg_batch_desc *padded, vg_run_path *path)
{
    int full_ok, full = use_full(r, padded, &full_ok), last;
    if (!segment_at(r, padded, full, 0, &last) || last != r->model.num_pieces - 1) return NULL;
    graph_entry *e = vg_cache_find(&r->cache, padded, 0, last);
    if (!e || e->state != ENTRY_READY || !e->exec) return NULL;
    *path = full ? VG_RUN_FULL : VG_RUN_PIECEWISE;
    return e;
}

static vg_status check_inputs(const vg_runner_input *in, int n, const vg_batch_desc *padded)
{
    for (int i = 0; i < n; i++) {
        if (!in[i].row_bytes) continue;
        if (!in[i].src || !in[i].dst)
            return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_replay: input %d: %s is NULL", i,
                                in[i].src ? "dst" : "src");
        if (in[i].row_bytes > in[i].dst_bytes / (size_t)padded->num_tokens)
            return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_replay: input %d: dst holds %zu "
                                                    "bytes, the bucket of %lld tokens needs %lld "
                                                    "rows of %zu bytes", i, in[i].dst_bytes,
                                (long long)padded->num_tokens, (long long)padded->num_tokens,
                                in[i].row_bytes);
    }
    return VG_OK;
}

/* Copy each input's real rows into its static buffer and zero the padding rows, on the stream. */
static vg_status stage_inputs(vg_runner *r, const vg_runner_input *in, int n, int64_t real,
                              int64_t padded)
{
    for (int i = 0; i < n; i++) {
        if (!in[i].row_bytes) continue;
        size_t bytes = in[i].row_bytes * (size_t)real;
        vg_status st = in[i].src == in[i].dst ? VG_OK
                                              : vg_mem_copy_d2d(r->stream, in[i].dst, in[i].src, bytes);
        if (st == VG_OK)
            st = vg_mem_set(r->stream, (char *)in[i].dst + bytes, 0,
                            in[i].row_bytes * (size_t)(padded - real));
        if (st != VG_OK) return vg_error_prefix("vg_runner_replay: input %d: ", i);
    }
    return VG_OK;
}

vg_status vg_runner_replay(vg_runner *r, const vg_batch_desc *real, const vg_runner_input *inputs,
                           int num_inputs, vg_run_info *info_out, int *replayed)
{
    double t0 = now_ms();
    if (!r || !real || !replayed || num_inputs < 0 || (num_inputs > 0 && !inputs))
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_replay: %s",
                            num_inputs < 0 ? "num_inputs is negative" : "NULL argument");
    *replayed = 0;
    if (real->num_tokens < 1)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_replay: num_tokens is %lld (must be >= 1)",
                            (long long)real->num_tokens);
    int bucket = r->mode == VG_MODE_NONE ? -1 : vg_runner_bucket_for(r, real->num_tokens);
    if (bucket < 0) return VG_OK;
    vg_batch_desc padded = *real;
    padded.num_tokens = r->sizes[bucket];
    vg_status st = check_inputs(inputs, num_inputs, &padded);
    if (st != VG_OK) return st;
    vg_run_info info = {.bucket = bucket, .padded_tokens = padded.num_tokens};
    graph_entry *e = replay_entry(r, &padded, &info.path);
    if (!e) return VG_OK;
    if (r->debug_addresses && (st = check_addresses(r, e)) != VG_OK) return st;
    st = stage_inputs(r, inputs, num_inputs, real->num_tokens, padded.num_tokens);
    if (st != VG_OK) return st;
    r->active = r->graph_set; /* outputs are read through the graph set, as after vg_runner_run */
    e->last_use = ++r->tick;
    if (vg_graph_exec_launch(e->exec, r->stream) != VG_OK)
        return vg_error_prefix("runner: graph launch (%lld tokens): ", (long long)padded.num_tokens);
    info.graph_launches = 1;
    *replayed = 1;
    stats_add(r, bucket, &(vg_bucket_stats){.hits = 1, .replays = 1,
                                            .real_tokens = (uint64_t)real->num_tokens,
                                            .padded_tokens = (uint64_t)(padded.num_tokens -
                                                                        real->num_tokens)});
    info.host_ms = now_ms() - t0;
    if (info_out) *info_out = info;
    return VG_OK;
}
