/* SPDX-License-Identifier: Apache-2.0 */
/* Shared state under threads (run under ThreadSanitizer by scripts/sanitize.sh):
 *  - one runner working while other threads read its statistics;
 *  - several runners, one per thread, each on its own stream of one device, with results
 *    checked against an eager runner of the same thread. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "synth_model.h"
#include "test_util.h"

enum { WORKERS = 4, CALLS = 60 };

static vg_runtime *g_rt;

typedef struct worker {
    int id;
    int failures;
    char error[256];
} worker;

static void *run_worker(void *p)
{
    worker *w = p;
    model m;
    model_init(&m, g_rt);
    vg_runner *graph = make_runner(&m, (vg_graph_mode)(1 + w->id % 3), 0, 0);
    vg_runner *eager = make_runner(&m, VG_MODE_NONE, 0, 0);
    unsigned seed = 1000u + (unsigned)w->id;
    static _Thread_local float got[MAX_SIZE * 2 * C], want[MAX_SIZE * 2 * C];
    for (int i = 0; i < CALLS; i++) {
        call c;
        int64_t n = 1 + next_rand(&seed) % (MAX_SIZE + 1);
        make_call(&c, n, 1 + (int32_t)(next_rand(&seed) % (n < 4 ? n : 4)), &seed);
        if (run_call(graph, &m, &c, got, NULL) != VG_OK || run_call(eager, &m, &c, want, NULL) != VG_OK) {
            snprintf(w->error, sizeof w->error, "%s", vg_last_error());
            w->failures++;
            break;
        }
        for (int64_t k = 0; k < n * C; k++)
            if (!(fabsf(got[k] - want[k]) <= 1e-5f * (1.0f + fabsf(want[k])))) {
                snprintf(w->error, sizeof w->error, "call %d element %lld differs", i, (long long)k);
                w->failures++;
                break;
            }
    }
    vg_runner_destroy(graph);
    vg_runner_destroy(eager);
    model_fini(&m);
    return NULL;
}

static void test_concurrent_runners(void **state)
{
    (void)state;
    pthread_t t[WORKERS];
    worker w[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        w[i] = (worker){.id = i};
        assert_int_equal(pthread_create(&t[i], NULL, run_worker, &w[i]), 0);
    }
    for (int i = 0; i < WORKERS; i++) {
        pthread_join(t[i], NULL);
        if (w[i].failures) print_message("worker %d: %s\n", i, w[i].error);
        assert_int_equal(w[i].failures, 0);
    }
}

typedef struct reader {
    vg_runner *r;
    atomic_int *stop;
    atomic_long reads;
    atomic_long torn; /* snapshots whose rows did not add up to their total */
} reader;

static void *read_stats(void *p)
{
    reader *rd = p;
    while (!atomic_load(rd->stop)) {
        vg_bucket_stats rows[8], total;
        int n = vg_runner_stats(rd->r, rows, 8, &total);
        /* a consistent snapshot: the total is the sum of the rows, whatever the runner is doing */
        uint64_t hits = 0;
        for (int i = 0; i < n && i < 8; i++) hits += rows[i].hits;
        if (n != 5 || hits != total.hits) atomic_fetch_add(&rd->torn, 1);
        atomic_fetch_add(&rd->reads, 1);
    }
    return NULL;
}

static void test_stats_read_while_running(void **state)
{
    (void)state;
    model m;
    model_init(&m, g_rt);
    vg_runner *r = make_runner(&m, VG_MODE_FULL, 0, 0);
    atomic_int stop = 0;
    reader rd[2] = {{r, &stop, 0, 0}, {r, &stop, 0, 0}};
    long calls = 0;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, read_stats, &rd[i]), 0);
    static float out[MAX_SIZE * 2 * C];
    unsigned seed = 7;
    /* run until both readers have overlapped with the runner for a while */
    while (calls < 200 || atomic_load(&rd[0].reads) < 50 || atomic_load(&rd[1].reads) < 50) {
        call c;
        make_call(&c, 1 + next_rand(&seed) % MAX_SIZE, 1, &seed);
        VG_CHECK(run_call(r, &m, &c, out, NULL));
        calls++;
        assert_true(calls < 1000000);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&rd[0].torn), 0);
    assert_int_equal(atomic_load(&rd[1].torn), 0);
    vg_bucket_stats total;
    vg_runner_stats(r, NULL, 0, &total);
    assert_int_equal(total.hits, calls);
    vg_runner_destroy(r);
    model_fini(&m);
}

int main(void)
{
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = "kunlun_stub";
    if (vg_runtime_open(&o, &g_rt) != VG_OK) {
        fprintf(stderr, "test_threads: %s\n", vg_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_runners),
        cmocka_unit_test(test_stats_read_while_running),
    };
    int failed = cmocka_run_group_tests_name("threads", tests, NULL, NULL);
    vg_runtime_close(g_rt);
    return failed ? 1 : 0;
}
