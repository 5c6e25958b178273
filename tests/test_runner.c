/* SPDX-License-Identifier: Apache-2.0 */
/* Graph runner on kunlun_stub with the synthetic model of synth_model.h (no ViT needed). The
 * model counts the gather_rows it enqueues eagerly and into graphs (vg_stream_is_capturing), so
 * where the splitting op ran is observed from the model's side, not taken from the runner. */
#include <math.h>
#include <stdlib.h>

#include "synth_model.h"
#include "test_util.h"

/* ---- fixture: a stub runtime ------------------------------------------------------------------- */

static vg_runtime *g_base;

static vg_runtime *open_stub(void)
{
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = "kunlun_stub";
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open(&o, &rt));
    return rt;
}

static unsigned g_seed = 12345;

static int clean_env(void **state)
{
    (void)state;
    unsetenv("VG_STUB_FAULT");
    unsetenv("VG_STUB_POISON");
    unsetenv("VG_STUB_CAPS");
    vg_error_clear();
    return 0;
}

/* ---- fixture: a stub runtime and the synthetic model on it, per test ---------------------------- */

typedef struct fixture {
    vg_runtime *rt;
    model m;
} fixture;

/* A stub variable to set before the runtime opens (cmocka's prestate of a test), or none. */
typedef struct stub_env {
    const char *name, *value;
} stub_env;

static int setup(void **state)
{
    const stub_env *env = *state;
    clean_env(state);
    if (env) setenv(env->name, env->value, 1);
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    f->rt = open_stub();
    model_init(&f->m, f->rt);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    model_fini(&f->m);
    vg_runtime_close(f->rt);
    free(f);
    return 0;
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_bucket_for_every_size(void **state)
{
    fixture *f = *state;
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 0);
    vg_runner *none = make_runner(m, VG_MODE_NONE, 0, 0);
    static float out[MAX_SIZE * 2 * C];
    for (int64_t n = 1; n <= MAX_SIZE + 1; n++) {
        int want = -1;
        for (int b = 0; b < 4 && want < 0; b++)
            if (k_sizes[b] >= n) want = b;
        assert_int_equal(vg_runner_bucket_for(r, n), want);
        call c;
        make_call(&c, n, 1, &g_seed);
        vg_run_info info;
        VG_CHECK(run_call(r, m, &c, out, &info));
        assert_int_equal(info.bucket, want);
        assert_int_equal(info.padded_tokens, want >= 0 ? k_sizes[want] : n);
        assert_int_equal(info.path, want >= 0 ? VG_RUN_FULL : VG_RUN_EAGER);
        VG_CHECK(run_call(none, m, &c, out, &info));
        assert_int_equal(info.path, VG_RUN_EAGER);
        assert_int_equal(info.padded_tokens, n);
    }
    vg_runner_destroy(r);
    vg_runner_destroy(none);
}

static void test_default_ladder(void **state)
{
    (void)state;
    const int64_t *s;
    int n = vg_runner_default_sizes(&s);
    assert_int_equal(n, 20);
    assert_int_equal(s[n - 1], 4096);
    for (int i = 1; i < n; i++) {
        assert_true(s[i] > s[i - 1]);
        int64_t worst = s[i] - s[i - 1] - 1; /* padding one token past the previous size */
        if (s[i] <= 512) assert_true(worst <= 63);
        else assert_true((double)worst / (double)s[i] < 0.20);
    }
}

static void random_sequence(fixture *f, vg_graph_mode mode)
{
    model *m = &f->m;
    vg_runner *r = make_runner(m, mode, 0, 0), *eager = make_runner(m, VG_MODE_NONE, 0, 0);
    static float got[MAX_SIZE * 2 * C], want[MAX_SIZE * 2 * C];
    int graphed = 0;
    for (int it = 0; it < 80; it++) {
        call c;
        int64_t n = 1 + next_rand(&g_seed) % (MAX_SIZE + 1);
        make_call(&c, n, 1 + (int32_t)(next_rand(&g_seed) % (n < 4 ? n : 4)), &g_seed);
        vg_run_info info;
        VG_CHECK(run_call(r, m, &c, got, &info));
        VG_CHECK(run_call(eager, m, &c, want, NULL));
        assert_same(got, want, (size_t)n * C);
        graphed += info.graph_launches > 0;
    }
    assert_true(graphed > 40); /* the comparison really involved graphs */
    vg_runner_destroy(r);
    vg_runner_destroy(eager);
}

static void test_piecewise_matches_eager(void **state) { random_sequence(*state, VG_MODE_PIECEWISE); }
static void test_full_matches_eager(void **state) { random_sequence(*state, VG_MODE_FULL); }
static void test_full_and_piecewise_matches_eager(void **state)
{
    random_sequence(*state, VG_MODE_FULL_AND_PIECEWISE);
}

static void test_piecewise_splitting_runs_eagerly(void **state)
{
    fixture *f = *state;
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_PIECEWISE, 0, 0);
    static float out[MAX_SIZE * 2 * C];
    call c;
    int launches = 0;
    for (int i = 0; i < 5; i++) {
        make_call(&c, 30, 2, &g_seed);
        vg_run_info info;
        VG_CHECK(run_call(r, m, &c, out, &info));
        assert_int_equal(info.path, VG_RUN_PIECEWISE);
        assert_int_equal(info.graph_launches, 2); /* mix+bias, then the chain */
        assert_int_equal(info.eager_pieces, 1);   /* permute */
        launches += info.graph_launches;
    }
    assert_int_equal(m->eager_gathers, 5);
    assert_int_equal(m->captured_gathers, 0);
    assert_int_equal(launches, 10);
    vg_bucket_stats total;
    vg_runner_stats(r, NULL, 0, &total);
    assert_int_equal(total.replays, 10);
    assert_int_equal(total.captures, 2);
    vg_runner_destroy(r);
    /* FULL captures the splitting op too: it then never runs eagerly */
    m->eager_gathers = m->captured_gathers = 0;
    launches = 0;
    r = make_runner(m, VG_MODE_FULL, 0, 0);
    for (int i = 0; i < 5; i++) {
        make_call(&c, 30, 2, &g_seed);
        vg_run_info info;
        VG_CHECK(run_call(r, m, &c, out, &info));
        launches += info.graph_launches;
    }
    assert_int_equal(m->eager_gathers, 0);
    assert_int_equal(m->captured_gathers, 1);
    assert_int_equal(launches, 5);
    vg_runner_stats(r, NULL, 0, &total);
    assert_int_equal(total.replays, 5);
    vg_runner_destroy(r);
}

/* The warm-up's progress calls, in order; count: the p->count record_sizes expects. */
typedef struct order { int64_t sizes[8]; int n; vg_status st[8]; int count; } order;

static void record_progress(void *user, const vg_warmup_progress *p)
{
    order *o = user;
    o->st[o->n] = p->status;
    o->sizes[o->n++] = p->size;
    assert_int_equal(p->count, 4);
    assert_true(p->capture_ms >= 0);
}

static void test_warmup_largest_first(void **state)
{
    fixture *f = *state;
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 0);
    order o = {.n = 0};
    vg_batch_desc like = {.num_tokens = 0, .num_requests = 2};
    VG_CHECK(vg_runner_warmup(r, &like, record_progress, &o));
    assert_int_equal(o.n, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(o.sizes[i], k_sizes[3 - i]);
        assert_int_equal(o.st[i], VG_OK);
    }
    static float out[MAX_SIZE * 2 * C];
    for (int64_t n = 5; n <= MAX_SIZE; n += 9) { /* every call now replays without capturing */
        call c;
        make_call(&c, n, 2, &g_seed);
        vg_run_info info;
        VG_CHECK(run_call(r, m, &c, out, &info));
        assert_int_equal(info.captures, 0);
        assert_int_equal(info.graph_launches, 1);
    }
    vg_bucket_stats total;
    vg_runner_stats(r, NULL, 0, &total);
    assert_int_equal(total.captures, 4);
    assert_int_equal(total.live_graphs, 4);
    vg_runner_destroy(r);
}

static void record_sizes(void *user, const vg_warmup_progress *p)
{
    order *o = user;
    o->st[o->n] = p->status;
    o->sizes[o->n++] = p->size;
    assert_int_equal(p->count, o->count);
}

/* like.num_tokens > 0 bounds the warm-up: a call of k_sizes[1] + 1 tokens pads to k_sizes[2], so
 * the buckets up to that one are captured and the largest is left for later. */
static void test_warmup_up_to_a_size(void **state)
{
    fixture *f = *state;
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 0);
    order o = {.n = 0, .count = 3};
    vg_batch_desc like = {.num_tokens = k_sizes[1] + 1, .num_requests = 2};
    VG_CHECK(vg_runner_warmup(r, &like, record_sizes, &o));
    assert_int_equal(o.n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(o.sizes[i], k_sizes[2 - i]);
        assert_int_equal(o.st[i], VG_OK);
    }
    vg_bucket_stats total;
    vg_runner_stats(r, NULL, 0, &total);
    assert_int_equal(total.captures, 3);
    /* a size above every bucket warms them all */
    vg_runner *all = make_runner(m, VG_MODE_FULL, 0, 0);
    like.num_tokens = MAX_SIZE + 1;
    VG_CHECK(vg_runner_warmup(all, &like, NULL, NULL));
    vg_runner_stats(all, NULL, 0, &total);
    assert_int_equal(total.captures, 4);
    vg_runner_destroy(all);
    vg_runner_destroy(r);
}

/* vg_runner_warmup_for captures the buckets of the given calls and no other: calls of 3, 30, 31
 * and 7 tokens pad to 8 and 32 (16 and 64 stay empty); a call above every bucket warms nothing;
 * every listed call then replays without capturing. */
static void test_warmup_for_given_calls(void **state)
{
    fixture *f = *state;
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 0);
    order o = {.n = 0, .count = 2};
    vg_batch_desc like = {.num_tokens = 0, .num_requests = 2};
    const int64_t calls[] = {3, 30, MAX_SIZE + 5, 31, 7};
    VG_CHECK(vg_runner_warmup_for(r, &like, calls, 5, record_sizes, &o));
    assert_int_equal(o.n, 2);
    assert_int_equal(o.sizes[0], k_sizes[2]); /* largest first */
    assert_int_equal(o.sizes[1], k_sizes[0]);
    vg_bucket_stats total;
    vg_runner_stats(r, NULL, 0, &total);
    assert_int_equal(total.captures, 2);
    static float out[MAX_SIZE * 2 * C];
    for (int i = 0; i < 5; i++) {
        if (calls[i] > MAX_SIZE) continue;
        call c;
        make_call(&c, calls[i], 2, &g_seed);
        vg_run_info info;
        VG_CHECK(run_call(r, m, &c, out, &info));
        assert_int_equal(info.captures, 0);
        assert_int_equal(info.graph_launches, 1);
    }
    /* nothing to warm, and bad arguments */
    VG_CHECK(vg_runner_warmup_for(r, &like, calls + 2, 1, record_sizes, &o));
    VG_CHECK(vg_runner_warmup_for(r, &like, NULL, 0, NULL, NULL));
    assert_int_equal(o.n, 2);
    VG_CHECK_FAILS(vg_runner_warmup_for(r, &like, NULL, 2, NULL, NULL), VG_ERR_INVALID_ARG, "NULL");
    VG_CHECK_FAILS(vg_runner_warmup_for(r, &like, calls, -1, NULL, NULL), VG_ERR_INVALID_ARG, "-1");
    vg_runner_destroy(r);
}

static void capture_failure_case(fixture *f)
{
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 0), *eager = make_runner(m, VG_MODE_NONE, 0, 0);
    static float got[MAX_SIZE * 2 * C], want[MAX_SIZE * 2 * C];
    vg_run_info info;
    for (int i = 0; i < 3; i++) { /* bucket 32: its capture fails once, it stays eager */
        call c;
        make_call(&c, 20, 1, &g_seed);
        VG_CHECK(run_call(r, m, &c, got, &info));
        VG_CHECK(run_call(eager, m, &c, want, NULL));
        assert_same(got, want, 20 * C);
        assert_int_equal(info.path, VG_RUN_EAGER);
    }
    call c; /* another bucket captures normally: the fault hit only the first call */
    make_call(&c, 60, 1, &g_seed);
    VG_CHECK(run_call(r, m, &c, got, &info));
    VG_CHECK(run_call(eager, m, &c, want, NULL));
    assert_same(got, want, 60 * C);
    assert_int_equal(info.path, VG_RUN_FULL);
    vg_bucket_stats rows[5];
    vg_runner_stats(r, rows, 5, NULL);
    assert_int_equal(rows[2].capture_failures, 1);
    assert_int_equal(rows[2].eager_runs, 3);
    assert_int_equal(rows[2].live_graphs, 0);
    assert_int_equal(rows[3].captures, 1);
    vg_runner_destroy(r);
    vg_runner_destroy(eager);
}

static void test_failure_at_capture_begin(void **state) { capture_failure_case(*state); }
static void test_failure_at_capture_end(void **state) { capture_failure_case(*state); }
static void test_failure_at_instantiate(void **state) { capture_failure_case(*state); }

static void test_regrowth_recaptures_no_stale_pointer(void **state)
{
    fixture *f = *state;
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 0), *eager = make_runner(m, VG_MODE_NONE, 0, 0);
    static float got[MAX_SIZE * 2 * C], want[MAX_SIZE * 2 * C];
    call c;
    make_call(&c, 50, 1, &g_seed);
    VG_CHECK(run_call(r, m, &c, got, NULL)); /* captures with the small bias buffer */
    void *old_bias = vg_runner_buffer(r, BUF_BIAS);
    call big;
    make_call(&big, 60, 40, &g_seed); /* 40 requests: the bias buffer must grow */
    vg_run_info info;
    VG_CHECK(run_call(r, m, &big, got, &info));
    assert_ptr_not_equal(vg_runner_buffer(r, BUF_BIAS), old_bias);
    VG_CHECK(run_call(eager, m, &big, want, NULL));
    assert_same(got, want, 60 * C);
    /* the first key again: its old graph pointed at the freed bias buffer */
    make_call(&c, 50, 1, &g_seed);
    VG_CHECK(run_call(r, m, &c, got, &info));
    assert_int_equal(info.captures, 1);
    assert_int_equal(info.graph_launches, 1);
    VG_CHECK(run_call(eager, m, &c, want, NULL));
    assert_same(got, want, 50 * C);
    vg_runner_destroy(r);
    vg_runner_destroy(eager);
}

static void test_lru_eviction_under_budget(void **state)
{
    fixture *f = *state;
    model *m = &f->m;
    vg_runner *probe = make_runner(m, VG_MODE_FULL, 0, 0);
    static float got[MAX_SIZE * 2 * C], want[MAX_SIZE * 2 * C];
    call c;
    make_call(&c, 8, 1, &g_seed);
    VG_CHECK(run_call(probe, m, &c, got, NULL));
    vg_bucket_stats t;
    vg_runner_stats(probe, NULL, 0, &t);
    assert_true(t.graph_bytes > 0); /* measured, not assumed */
    uint64_t one = t.graph_bytes;
    vg_runner_destroy(probe);

    vg_runner *r = make_runner(m, VG_MODE_FULL, one * 2 + one / 2, 0);
    vg_runner *eager = make_runner(m, VG_MODE_NONE, 0, 0);
    const int64_t ns[] = {8, 16, 32, 64, 8};
    vg_run_info info;
    for (int i = 0; i < 5; i++) {
        make_call(&c, ns[i], 1, &g_seed);
        VG_CHECK(run_call(r, m, &c, got, &info));
        VG_CHECK(run_call(eager, m, &c, want, NULL));
        assert_same(got, want, (size_t)ns[i] * C);
        vg_runner_stats(r, NULL, 0, &t);
        assert_true(t.live_graphs <= 2);
    }
    assert_int_equal(info.captures, 1); /* 8 was evicted and had to be captured again */
    assert_true(t.evictions >= 3);
    vg_bucket_stats rows[5];
    vg_runner_stats(r, rows, 5, NULL);
    assert_int_equal(rows[0].captures, 2);
    vg_runner_destroy(r);
    vg_runner_destroy(eager);
}

static void test_address_check_catches_swapped_input(void **state)
{
    fixture *f = *state;
    vg_runtime *rt = f->rt;
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 1);
    static float out[MAX_SIZE * 2 * C];
    call c;
    make_call(&c, 30, 1, &g_seed);
    VG_CHECK(run_call(r, m, &c, out, NULL));
    VG_CHECK(run_call(r, m, &c, out, NULL)); /* a replay with the same addresses passes */
    float *other = NULL;
    VG_CHECK(vg_mem_alloc(rt, MAX_SIZE * C * 4, (void **)&other));
    m->x_in_use = other; /* the bug: the model now reads another buffer than the graph captured */
    VG_CHECK_FAILS(run_call(r, m, &c, out, NULL), VG_ERR_STATE, "address check failed");
    m->x_in_use = NULL;
    VG_CHECK(vg_mem_free(rt, other));
    vg_runner_destroy(r);
}

static void update_case(fixture *f, int refuse)
{
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 0), *eager = make_runner(m, VG_MODE_NONE, 0, 0);
    static float got[MAX_SIZE * 2 * C], want[MAX_SIZE * 2 * C];
    call c;
    make_call(&c, 40, 3, &g_seed);
    VG_CHECK(run_call(r, m, &c, got, NULL));
    VG_CHECK(vg_runner_invalidate(r));
    vg_run_info info;
    make_call(&c, 40, 3, &g_seed);
    VG_CHECK(run_call(r, m, &c, got, &info));
    VG_CHECK(run_call(eager, m, &c, want, NULL));
    assert_same(got, want, 40 * C);
    assert_int_equal(info.captures, 1);
    vg_bucket_stats rows[5];
    vg_runner_stats(r, rows, 5, NULL);
    assert_int_equal(rows[3].captures, 2);
    assert_int_equal(rows[3].updates, refuse ? 0 : 1);
    assert_int_equal(rows[3].live_graphs, 1);
    vg_runner_destroy(r);
    vg_runner_destroy(eager);
}

static void test_recapture_uses_update(void **state) { update_case(*state, 0); }
static void test_refused_update_reinstantiates(void **state) { update_case(*state, 1); }

static int g_downgrade_logs;
static void count_downgrades(vg_log_level level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    if (strstr(msg, "downgraded")) g_downgrade_logs++;
}

static void test_no_graphs_means_none(void **state)
{
    fixture *f = *state;
    g_downgrade_logs = 0;
    vg_log_set_callback(count_downgrades, NULL);
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 0);
    assert_int_equal(vg_runner_mode(r), VG_MODE_NONE);
    static float out[MAX_SIZE * 2 * C];
    for (int i = 0; i < 3; i++) {
        call c;
        make_call(&c, 20, 1, &g_seed);
        vg_run_info info;
        VG_CHECK(run_call(r, m, &c, out, &info));
        assert_int_equal(info.path, VG_RUN_EAGER);
    }
    assert_int_equal(g_downgrade_logs, 1);
    vg_log_set_callback(NULL, NULL);
    vg_runner_destroy(r);
}

static void test_uncapturable_op_downgrades_full(void **state)
{
    fixture *f = *state;
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 0), *eager = make_runner(m, VG_MODE_NONE, 0, 0);
    assert_int_equal(vg_runner_mode(r), VG_MODE_PIECEWISE);
    static float got[MAX_SIZE * 2 * C], want[MAX_SIZE * 2 * C];
    call c;
    make_call(&c, 33, 2, &g_seed);
    vg_run_info info;
    VG_CHECK(run_call(r, m, &c, got, &info));
    VG_CHECK(run_call(eager, m, &c, want, NULL));
    assert_same(got, want, 33 * C);
    assert_int_equal(info.path, VG_RUN_PIECEWISE);
    vg_runner_destroy(r);
    vg_runner_destroy(eager);
}

static void test_above_threshold_keeps_graph_buffers(void **state)
{
    fixture *f = *state;
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 0), *eager = make_runner(m, VG_MODE_NONE, 0, 0);
    static float got[MAX_SIZE * 2 * C], want[MAX_SIZE * 2 * C];
    call c;
    make_call(&c, 64, 1, &g_seed);
    VG_CHECK(run_call(r, m, &c, got, NULL));
    void *x = vg_runner_buffer(r, BUF_X);
    make_call(&c, 2 * MAX_SIZE, 1, &g_seed); /* far above the threshold */
    vg_run_info info;
    VG_CHECK(run_call(r, m, &c, got, &info)); /* reads T of the overflow set */
    assert_int_equal(info.path, VG_RUN_EAGER);
    assert_int_equal(info.bucket, -1);
    assert_ptr_not_equal(vg_runner_buffer(r, BUF_X), x); /* a separate set of buffers */
    VG_CHECK(run_call(eager, m, &c, want, NULL));
    assert_same(got, want, 2 * MAX_SIZE * C);
    make_call(&c, 64, 1, &g_seed);
    VG_CHECK(run_call(r, m, &c, got, &info));
    assert_ptr_equal(vg_runner_buffer(r, BUF_X), x); /* the graphs' buffers never moved */
    assert_int_equal(info.captures, 0);
    VG_CHECK(run_call(eager, m, &c, want, NULL));
    assert_same(got, want, 64 * C);
    vg_bucket_stats rows[5];
    assert_int_equal(vg_runner_stats(r, rows, 5, NULL), 5);
    assert_int_equal(rows[4].size, -1);
    assert_int_equal(rows[4].hits, 1);
    vg_runner_destroy(r);
    vg_runner_destroy(eager);
}

static void test_eager_first(void **state)
{
    fixture *f = *state;
    vg_runtime *rt = f->rt;
    model *m = &f->m;
    vg_runner_options o;
    vg_runner_options_init(&o);
    o.mode = VG_MODE_FULL;
    o.capture_sizes = k_sizes;
    o.num_capture_sizes = 4;
    o.eager_first = 1;
    vg_runner *r = NULL, *eager = make_runner(m, VG_MODE_NONE, 0, 0);
    VG_CHECK(vg_runner_create(rt, &m->iface, &o, &r));
    static float got[MAX_SIZE * 2 * C], want[MAX_SIZE * 2 * C];
    for (int i = 0; i < 3; i++) {
        call c;
        make_call(&c, 30, 2, &g_seed);
        vg_run_info info;
        VG_CHECK(run_call(r, m, &c, got, &info));
        VG_CHECK(run_call(eager, m, &c, want, NULL));
        assert_same(got, want, 30 * C);
        /* the first call runs eagerly and captures; the others replay */
        assert_int_equal(info.path, i == 0 ? VG_RUN_EAGER : VG_RUN_FULL);
        assert_int_equal(info.captures, i == 0 ? 1 : 0);
    }
    assert_int_equal(m->captured_gathers, 1);
    /* the bucket's eager first run, and the three calls of the eager reference runner */
    assert_int_equal(m->eager_gathers, 1 + 3);
    /* warm-up runs each bucket eagerly on prepare(NULL) data, then captures it */
    order ord = {.n = 0};
    vg_batch_desc like = {.num_tokens = 0, .num_requests = 2};
    VG_CHECK(vg_runner_warmup(r, &like, record_progress, &ord));
    assert_int_equal(ord.n, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(ord.st[i], VG_OK);
    call c;
    make_call(&c, 60, 2, &g_seed);
    vg_run_info info;
    VG_CHECK(run_call(r, m, &c, got, &info));
    assert_int_equal(info.path, VG_RUN_FULL);
    assert_int_equal(info.captures, 0);
    vg_runner_destroy(r);
    vg_runner_destroy(eager);
}

/* The counters the vg command formats: hits, padding, one row per bucket plus the eager row, and
 * a total that is the sum of the rows. */
static void test_stats_counters(void **state)
{
    fixture *f = *state;
    model *m = &f->m;
    vg_runner *r = make_runner(m, VG_MODE_FULL, 0, 0);
    static float out[MAX_SIZE * 2 * C];
    for (int64_t n = 3; n <= 63; n += 20) { /* 3, 23, 43, 63: buckets 8, 32, 64, 64 */
        call c;
        make_call(&c, n, 1, &g_seed);
        VG_CHECK(run_call(r, m, &c, out, NULL));
    }
    vg_bucket_stats rows[8], total;
    memset(rows, 0xff, sizeof rows);
    assert_int_equal(vg_runner_stats(r, rows, 8, &total), 5);
    assert_int_equal(total.hits, 4);
    assert_int_equal(total.real_tokens, 3 + 23 + 43 + 63);
    assert_int_equal(total.padded_tokens, (8 - 3) + (32 - 23) + (64 - 43) + (64 - 63));
    assert_int_equal(total.captures, 3);
    assert_int_equal(total.replays, 4);
    assert_int_equal(total.live_graphs, 3);
    const uint64_t hits[5] = {1, 0, 1, 2, 0};
    uint64_t sum_hits = 0, sum_pad = 0, sum_captures = 0;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(rows[i].size, i < 4 ? k_sizes[i] : -1);
        assert_int_equal(rows[i].hits, hits[i]);
        sum_hits += rows[i].hits, sum_pad += rows[i].padded_tokens, sum_captures += rows[i].captures;
    }
    assert_int_equal(rows[3].padded_tokens, (64 - 43) + (64 - 63));
    assert_int_equal(sum_hits, total.hits);
    assert_int_equal(sum_pad, total.padded_tokens);
    assert_int_equal(sum_captures, total.captures);
    assert_true(total.graph_bytes > 0);
    /* fewer rows than there are: the count is still all of them, and nothing past max is written */
    memset(rows, 0xab, sizeof rows);
    assert_int_equal(vg_runner_stats(r, rows, 2, NULL), 5);
    assert_int_equal(rows[1].size, k_sizes[1]);
    const unsigned char *tail = (const unsigned char *)&rows[2];
    for (size_t i = 0; i < sizeof rows[2]; i++) assert_int_equal(tail[i], 0xab);
    vg_runner_destroy(r);
}

static void test_bad_arguments(void **state)
{
    fixture *f = *state;
    vg_runtime *rt = f->rt;
    model *m = &f->m;
    vg_runner_options o;
    vg_runner_options_init(&o);
    const int64_t bad[] = {16, 8};
    o.capture_sizes = bad;
    o.num_capture_sizes = 2;
    vg_runner *r = NULL;
    VG_CHECK_FAILS(vg_runner_create(rt, &m->iface, &o, &r), VG_ERR_INVALID_ARG, "ascending");
    vg_model_iface broken = m->iface;
    broken.prepare = NULL;
    VG_CHECK_FAILS(vg_runner_create(rt, &broken, NULL, &r), VG_ERR_INVALID_ARG, "prepare");
    VG_CHECK_FAILS(vg_graph_mode_parse("fast", &o.mode), VG_ERR_INVALID_ARG, "not understood");
    r = make_runner(m, VG_MODE_FULL, 0, 0);
    vg_batch_desc zero = {.num_tokens = 0};
    VG_CHECK_FAILS(vg_runner_run(r, &zero, NULL, NULL), VG_ERR_INVALID_ARG, "num_tokens");
    VG_CHECK_FAILS(vg_runner_buffer_reserve(r, 0, 64), VG_ERR_STATE, "reserve callback");
    vg_runner_destroy(r);
}

/* ---- vg_runner_replay: the replay-only path, inputs staged by the runner -------------------------- */

/* A model whose prepare only copies rows into a static buffer, as a wrapper around foreign code
 * does: X (RP_MAX rows) -> "scale": Y = 3 X -> "add": Y = X + Y (4 X in the end). */
enum { RP_COLS = 8, RP_MAX = 8 };
static const int64_t k_rp_sizes[] = {4, 8};

typedef struct rp_model {
    float *x, *y; /* static device buffers of RP_MAX rows */
    vg_piece pieces[2];
    vg_model_iface iface;
} rp_model;

static vg_status rp_reserve(void *m, vg_runner *r, const vg_batch_desc *padded)
{
    (void)m, (void)r, (void)padded;
    return VG_OK;
}

static vg_status rp_prepare(void *mv, vg_runner *r, const vg_batch_desc *real,
                            const vg_batch_desc *padded, vg_stream *s, const void *inputs)
{
    (void)r;
    rp_model *m = mv;
    size_t row = RP_COLS * sizeof(float);
    vg_status st = inputs ? vg_mem_copy_h2d(s, m->x, inputs, row * (size_t)real->num_tokens) : VG_OK;
    if (st == VG_OK)
        st = vg_mem_set(s, m->x + real->num_tokens * RP_COLS, 0,
                        row * (size_t)(padded->num_tokens - real->num_tokens));
    return st;
}

static vg_status rp_run(void *mv, vg_runner *r, const vg_piece *p, const vg_batch_desc *padded,
                        vg_stream *s)
{
    (void)r;
    rp_model *m = mv;
    size_t n = (size_t)padded->num_tokens * RP_COLS;
    return p->arg == 0 ? vg_op_axpby(s, n, 3.0f, m->x, 0.0f, m->y)
                       : vg_op_axpby(s, n, 1.0f, m->x, 1.0f, m->y);
}

static void rp_init(rp_model *m, vg_runtime *rt, uint32_t add_flags)
{
    memset(m, 0, sizeof *m);
    size_t bytes = RP_MAX * RP_COLS * sizeof(float);
    VG_CHECK(vg_mem_alloc(rt, bytes, (void **)&m->x));
    VG_CHECK(vg_mem_alloc(rt, bytes, (void **)&m->y));
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(rt, &s));
    VG_CHECK(vg_mem_set(s, m->x, 0, bytes));
    VG_CHECK(vg_mem_set(s, m->y, 0, bytes));
    VG_CHECK(vg_stream_sync(s));
    vg_stream_destroy(s);
    m->pieces[0] = (vg_piece){.name = "scale", .run = rp_run, .arg = 0};
    m->pieces[1] = (vg_piece){.name = "add", .run = rp_run, .flags = add_flags, .arg = 1};
    m->iface = (vg_model_iface){.struct_size = sizeof m->iface, .model = m, .pieces = m->pieces,
                                .num_pieces = 2, .reserve = rp_reserve, .prepare = rp_prepare};
}

static void rp_free(rp_model *m, vg_runtime *rt)
{
    VG_CHECK(vg_mem_free(rt, m->x));
    VG_CHECK(vg_mem_free(rt, m->y));
}

static vg_runner *rp_runner(rp_model *m, vg_runtime *rt, vg_graph_mode mode)
{
    vg_runner_options o;
    vg_runner_options_init(&o);
    o.mode = mode;
    o.capture_sizes = k_rp_sizes;
    o.num_capture_sizes = 2;
    vg_runner *r = NULL;
    VG_CHECK(vg_runner_create(rt, &m->iface, &o, &r));
    return r;
}

/* Y's first n rows, after the runner's stream is done. */
static void rp_read(vg_runner *r, const rp_model *m, int64_t n, float *out)
{
    vg_stream *s = vg_runner_stream(r);
    VG_CHECK(vg_mem_copy_d2h(s, out, m->y, (size_t)n * RP_COLS * sizeof(float)));
    VG_CHECK(vg_stream_sync(s));
}

static uint64_t rp_hits(vg_runner *r)
{
    vg_bucket_stats total;
    vg_runner_stats(r, NULL, 0, &total);
    return total.hits;
}

static void rp_fill(float *rows, int64_t n, float base)
{
    for (int64_t i = 0; i < n * RP_COLS; i++) rows[i] = base + (float)i;
}

static void test_replay_stages_inputs_and_pads(void **state)
{
    (void)state;
    vg_runtime *rt = open_stub();
    rp_model m;
    rp_init(&m, rt, 0);
    vg_runner *r = rp_runner(&m, rt, VG_MODE_FULL);
    const size_t row = RP_COLS * sizeof(float);
    float *src = NULL, host[RP_MAX * RP_COLS], y[RP_MAX * RP_COLS];
    VG_CHECK(vg_mem_alloc(rt, RP_MAX * row, (void **)&src));
    vg_runner_input in = {.src = src, .dst = m.x, .row_bytes = row, .dst_bytes = RP_MAX * row};
    vg_batch_desc d = {.num_tokens = 3};
    vg_run_info info = {.bucket = 99};
    int replayed = -1;
    /* nothing captured yet: the caller is told to call vg_runner_run, and nothing is counted */
    VG_CHECK(vg_runner_replay(r, &d, &in, 1, &info, &replayed));
    assert_int_equal(replayed, 0);
    assert_int_equal(info.bucket, 99);
    assert_int_equal(rp_hits(r), 0);
    rp_fill(host, 3, 1.0f);
    VG_CHECK(vg_runner_run(r, &d, host, &info));
    assert_int_equal(info.captures, 1);
    /* new rows in device memory, and garbage where the padding row goes: both are replaced */
    vg_stream *s = vg_runner_stream(r);
    rp_fill(host, 3, 100.0f);
    VG_CHECK(vg_mem_copy_h2d(s, src, host, 3 * row));
    VG_CHECK(vg_mem_set(s, m.x + 3 * RP_COLS, 0x7f, row));
    VG_CHECK(vg_runner_replay(r, &d, &in, 1, &info, &replayed));
    assert_int_equal(replayed, 1);
    assert_int_equal(info.bucket, 0);
    assert_int_equal(info.padded_tokens, 4);
    assert_int_equal(info.path, VG_RUN_FULL);
    assert_int_equal(info.graph_launches, 1);
    assert_int_equal(info.captures + info.eager_pieces, 0);
    rp_read(r, &m, 4, y);
    for (int i = 0; i < 3 * RP_COLS; i++) assert_true(y[i] == 4.0f * host[i]);
    for (int i = 3 * RP_COLS; i < 4 * RP_COLS; i++) assert_true(y[i] == 0.0f);
    /* src == dst: the rows are in place, only the padding is written */
    d.num_tokens = 2;
    in.src = m.x;
    VG_CHECK(vg_mem_set(s, m.x + 2 * RP_COLS, 0x7f, 2 * row));
    VG_CHECK(vg_runner_replay(r, &d, &in, 1, &info, &replayed));
    assert_int_equal(replayed, 1);
    rp_read(r, &m, 4, y);
    for (int i = 0; i < 2 * RP_COLS; i++) assert_true(y[i] == 4.0f * host[i]);
    for (int i = 2 * RP_COLS; i < 4 * RP_COLS; i++) assert_true(y[i] == 0.0f);
    vg_bucket_stats rows[3], total;
    assert_int_equal(vg_runner_stats(r, rows, 3, &total), 3);
    assert_int_equal(rows[0].hits, 3);
    assert_int_equal(rows[0].replays, 3);
    assert_int_equal(rows[0].real_tokens, 3 + 3 + 2);
    assert_int_equal(rows[0].padded_tokens, 1 + 1 + 2);
    /* not replayable: a bucket not captured yet, above every bucket, after invalidation */
    in.src = src;
    int64_t none[] = {6, 9};
    for (int k = 0; k < 2; k++) {
        d.num_tokens = none[k];
        VG_CHECK(vg_runner_replay(r, &d, &in, 1, &info, &replayed));
        assert_int_equal(replayed, 0);
    }
    d.num_tokens = 3;
    VG_CHECK(vg_runner_invalidate(r));
    VG_CHECK(vg_runner_replay(r, &d, &in, 1, &info, &replayed));
    assert_int_equal(replayed, 0);
    assert_int_equal(rp_hits(r), 3);
    VG_CHECK(vg_runner_run(r, &d, host, &info)); /* recaptured */
    VG_CHECK(vg_runner_replay(r, &d, &in, 1, NULL, &replayed));
    assert_int_equal(replayed, 1);
    VG_CHECK(vg_runner_destroy(r));
    VG_CHECK(vg_mem_free(rt, src));
    rp_free(&m, rt);
    vg_runtime_close(rt);
}

static void test_replay_declines_eager_pieces_and_mode_none(void **state)
{
    (void)state;
    vg_runtime *rt = open_stub();
    rp_model m;
    rp_init(&m, rt, VG_PIECE_SPLITTING);
    vg_runner *pw = rp_runner(&m, rt, VG_MODE_PIECEWISE), *none = rp_runner(&m, rt, VG_MODE_NONE);
    const size_t row = RP_COLS * sizeof(float);
    float host[RP_MAX * RP_COLS];
    rp_fill(host, 4, 1.0f);
    vg_runner_input in = {.src = m.x, .dst = m.x, .row_bytes = row, .dst_bytes = RP_MAX * row};
    vg_batch_desc d = {.num_tokens = 4};
    int replayed = -1;
    for (int i = 0; i < 3; i++) {
        vg_run_info info;
        VG_CHECK(vg_runner_run(pw, &d, host, &info));
        assert_int_equal(info.eager_pieces, 1); /* "add" splits: always eager */
        VG_CHECK(vg_runner_replay(pw, &d, &in, 1, NULL, &replayed));
        assert_int_equal(replayed, 0);
        VG_CHECK(vg_runner_run(none, &d, host, NULL));
        VG_CHECK(vg_runner_replay(none, &d, &in, 1, NULL, &replayed));
        assert_int_equal(replayed, 0);
    }
    VG_CHECK(vg_runner_destroy(pw));
    VG_CHECK(vg_runner_destroy(none));
    rp_free(&m, rt);
    vg_runtime_close(rt);
}

static void test_replay_bad_arguments(void **state)
{
    (void)state;
    vg_runtime *rt = open_stub();
    rp_model m;
    rp_init(&m, rt, 0);
    vg_runner *r = rp_runner(&m, rt, VG_MODE_FULL);
    const size_t row = RP_COLS * sizeof(float);
    float host[RP_MAX * RP_COLS];
    rp_fill(host, 8, 1.0f);
    vg_batch_desc d = {.num_tokens = 5};
    for (int i = 0; i < 2; i++) VG_CHECK(vg_runner_run(r, &d, host, NULL)); /* bucket 8 captured */
    vg_runner_input in = {.src = m.x, .dst = m.x, .row_bytes = row, .dst_bytes = RP_MAX * row};
    int replayed = -1;
    VG_CHECK_FAILS(vg_runner_replay(NULL, &d, &in, 1, NULL, &replayed), VG_ERR_INVALID_ARG, "NULL");
    VG_CHECK_FAILS(vg_runner_replay(r, NULL, &in, 1, NULL, &replayed), VG_ERR_INVALID_ARG, "NULL");
    VG_CHECK_FAILS(vg_runner_replay(r, &d, &in, 1, NULL, NULL), VG_ERR_INVALID_ARG, "NULL");
    VG_CHECK_FAILS(vg_runner_replay(r, &d, NULL, 1, NULL, &replayed), VG_ERR_INVALID_ARG, "NULL");
    VG_CHECK_FAILS(vg_runner_replay(r, &d, &in, -1, NULL, &replayed), VG_ERR_INVALID_ARG, "negative");
    vg_batch_desc zero = {.num_tokens = 0};
    VG_CHECK_FAILS(vg_runner_replay(r, &zero, &in, 1, NULL, &replayed), VG_ERR_INVALID_ARG, "num_tokens");
    uint64_t hits = rp_hits(r);
    vg_runner_input small = in;
    small.dst_bytes = 4 * row; /* 4 rows: the bucket of 5 tokens needs 8 */
    vg_runner_input both[2] = {in, small};
    VG_CHECK_FAILS2(vg_runner_replay(r, &d, both, 2, NULL, &replayed), VG_ERR_INVALID_ARG, "input 1",
                    "needs 8 rows");
    assert_int_equal(replayed, 0);
    vg_runner_input no_src = in;
    no_src.src = NULL;
    VG_CHECK_FAILS(vg_runner_replay(r, &d, &no_src, 1, NULL, &replayed), VG_ERR_INVALID_ARG, "src is NULL");
    assert_int_equal(rp_hits(r), hits); /* refused calls count nothing */
    VG_CHECK(vg_runner_replay(r, &d, &in, 1, NULL, &replayed));
    assert_int_equal(replayed, 1);
    assert_int_equal(rp_hits(r), hits + 1);
    VG_CHECK(vg_runner_destroy(r));
    rp_free(&m, rt);
    vg_runtime_close(rt);
}

#define FIXTURE(test) cmocka_unit_test_setup_teardown(test, setup, teardown)
#define FIXTURE_ENV(test, name, value) \
    cmocka_unit_test_prestate_setup_teardown(test, setup, teardown, (&(stub_env){name, value}))

int main(void)
{
    unsetenv("VG_BACKEND_PATH");
    g_base = open_stub();
    const struct CMUnitTest tests[] = {
        FIXTURE(test_bucket_for_every_size),
        cmocka_unit_test_setup(test_default_ladder, clean_env),
        FIXTURE(test_piecewise_matches_eager),
        FIXTURE(test_full_matches_eager),
        FIXTURE(test_full_and_piecewise_matches_eager),
        FIXTURE(test_piecewise_splitting_runs_eagerly),
        FIXTURE(test_warmup_largest_first),
        FIXTURE(test_warmup_up_to_a_size),
        FIXTURE(test_warmup_for_given_calls),
        FIXTURE_ENV(test_failure_at_capture_begin, "VG_STUB_FAULT", "capture_begin:1"),
        FIXTURE_ENV(test_failure_at_capture_end, "VG_STUB_FAULT", "capture_end:1"),
        FIXTURE_ENV(test_failure_at_instantiate, "VG_STUB_FAULT", "instantiate:1"),
        FIXTURE_ENV(test_regrowth_recaptures_no_stale_pointer, "VG_STUB_POISON", "1"),
        FIXTURE(test_lru_eviction_under_budget),
        FIXTURE(test_address_check_catches_swapped_input),
        FIXTURE(test_recapture_uses_update),
        FIXTURE_ENV(test_refused_update_reinstantiates, "VG_STUB_FAULT", "update"),
        FIXTURE_ENV(test_no_graphs_means_none, "VG_STUB_CAPS", "nograph"),
        FIXTURE_ENV(test_uncapturable_op_downgrades_full, "VG_STUB_CAPS", "nocapture:gather_rows"),
        FIXTURE(test_above_threshold_keeps_graph_buffers),
        FIXTURE(test_eager_first),
        FIXTURE(test_stats_counters),
        FIXTURE(test_bad_arguments),
        cmocka_unit_test_setup(test_replay_stages_inputs_and_pads, clean_env),
        cmocka_unit_test_setup(test_replay_declines_eager_pieces_and_mode_none, clean_env),
        cmocka_unit_test_setup(test_replay_bad_arguments, clean_env),
    };
    int failed = cmocka_run_group_tests_name("runner", tests, NULL, NULL);
    vg_runtime_close(g_base);
    return failed ? 1 : 0;
}
