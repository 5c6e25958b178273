// SPDX-License-Identifier: Apache-2.0
/* The runner's device-side loops: a bucket's whole forward plus the model's tail, captured as
 * the body of a loop that runs on the device (vg_graph_loop_capture_begin). docs/runner.md,
 * "Device-side loops", explains where it applies and how it falls back. */
#include <stdio.h>

#include "runner_internal.h"

/* Why `padded` cannot be the body of a loop here, or NULL. */
static const char *no_loop_reason(const vg_runner *r, const vg_batch_desc *padded, char *buf,
                                  size_t n)
{
    if (!(vg_runtime_caps(r->rt) & VG_CAP_GRAPH_LOOP)) {
        snprintf(buf, n, "backend '%s' has no device-side loops", vg_runtime_backend_name(r->rt));
        return buf;
    }
    if (r->mode != VG_MODE_FULL && r->mode != VG_MODE_FULL_AND_PIECEWISE) {
        snprintf(buf, n, "graph mode %s (a loop's body is the whole forward: full or "
                         "full_and_piecewise)", vg_graph_mode_name(r->mode));
        return buf;
    }
    if (vg_runner_bucket_for(r, padded->num_tokens) < 0 ||
        r->sizes[vg_runner_bucket_for(r, padded->num_tokens)] != padded->num_tokens) {
        snprintf(buf, n, "%lld tokens is not a capture size", (long long)padded->num_tokens);
        return buf;
    }
    if (!vg_runner_full_ok(r, padded)) {
        snprintf(buf, n, "a piece cannot be captured for %lld tokens",
                 (long long)padded->num_tokens);
        return buf;
    }
    return NULL;
}

/* eager_first: the forward of `padded` runs once outside any capture, so backends tune and
 * allocate lazily there rather than inside the loop's capture. */
static vg_status eager_once(vg_runner *r, const vg_batch_desc *padded)
{
    int n = r->model.num_pieces;
    graph_entry *e = vg_cache_insert(&r->cache, padded, 0, n - 1);
    if (!e) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "runner: graph cache: out of memory");
    if (e->ran_eagerly) return VG_OK;
    vg_batch_desc real = *padded, pad;
    int bucket;
    vg_status st = vg_runner_prepare_call(r, &real, NULL, &pad, &bucket);
    if (st == VG_OK) st = vg_runner_enqueue_all(r, &pad);
    if (st == VG_OK) st = vg_stream_sync(r->stream);
    e->bucket = bucket;
    e->ran_eagerly = st == VG_OK;
    return st;
}

vg_status vg_runner_loop_capture(vg_runner *r, const vg_batch_desc *padded, vg_loop_tail_fn tail,
                                 void *user, const int32_t *flag, vg_graph_exec **out)
{
    if (!out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_loop_capture: out is NULL");
    *out = NULL;
    if (!r || !padded || !tail || !flag)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_loop_capture: NULL argument");
    char why[256];
    if (no_loop_reason(r, padded, why, sizeof why))
        return vg_error_set(VG_ERR_UNSUPPORTED, "runner: no device-side loop: %s", why);
    vg_status st = r->eager_first ? eager_once(r, padded) : VG_OK;
    if (st != VG_OK) return st;
    r->active = r->graph_set;
    st = vg_graph_loop_capture_begin(r->stream, flag);
    if (st != VG_OK) return st;
    vg_status body = vg_runner_enqueue_all(r, padded);
    if (body == VG_OK) {
        vg_error_clear();
        body = tail(user, r, padded, r->stream);
        if (body != VG_OK && !vg_error_is_set()) vg_error_set(body, "runner: the loop's tail failed");
    }
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", vg_last_error());
    vg_graph *g = NULL;
    st = vg_graph_loop_capture_end(r->stream, &g); /* always ends, also after a failure */
    if (body != VG_OK) {
        vg_graph_destroy(g);
        return vg_error_set(body, "%s", msg);
    }
    if (st == VG_OK) st = vg_graph_instantiate(g, out);
    vg_graph_destroy(g);
    return st;
}

vg_status vg_runner_prepare(vg_runner *r, const vg_batch_desc *real, const void *inputs,
                            vg_batch_desc *padded)
{
    if (!r || !real || !padded)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_prepare: NULL argument");
    if (real->num_tokens < 1)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_prepare: num_tokens is %lld (must be "
                                                ">= 1)", (long long)real->num_tokens);
    int bucket;
    return vg_runner_prepare_call(r, real, inputs, padded, &bucket);
}

vg_status vg_runner_loop_launch(vg_runner *r, vg_graph_exec *loop, const vg_batch_desc *real)
{
    if (!r || !loop || !real)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_loop_launch: NULL argument");
    int bucket = vg_runner_bucket_for(r, real->num_tokens);
    if (bucket < 0)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_runner_loop_launch: a call of %lld tokens has "
                                                "no bucket", (long long)real->num_tokens);
    vg_status st = vg_graph_exec_launch(loop, r->stream);
    if (st != VG_OK) return vg_error_prefix("runner: loop launch (%lld tokens): ",
                                            (long long)real->num_tokens);
    int64_t padded = r->sizes[bucket];
    vg_stats_add(&r->stats, bucket, &(vg_bucket_stats){.hits = 1, .replays = 1,
                                                       .real_tokens = (uint64_t)real->num_tokens,
                                                       .padded_tokens = (uint64_t)(padded - real->num_tokens)});
    return VG_OK;
}
