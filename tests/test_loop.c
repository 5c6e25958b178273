// SPDX-License-Identifier: Apache-2.0
/* Device-side loops (vg_graph_loop_capture_*, VG_CAP_GRAPH_LOOP) and the op that steps a
 * generation loop (lm_advance), through the core device API, on the backend VG_BACKEND names.
 *
 *   - lm_advance against a host reference of its contract (vg_ops.h), step after step: EOS ids,
 *     limits, rows done from the start, a block boundary, a missing block, the logits copy;
 *   - a loop whose body is axpby (y += x) and lm_advance over one row with a limit of L: one
 *     launch runs the body L times (y = L·x, L tokens, the step counter L), and a second launch
 *     with new state runs again;
 *   - without VG_CAP_GRAPH_LOOP, loop capture is refused with a message; bad arguments and
 *     states are refused everywhere. */
#include <stdlib.h>

#include "test_util.h"
#include "vg/vg_device.h"

static vg_runtime *g_rt;
static vg_stream *g_s;

static int loops(void) { return (vg_runtime_caps(g_rt) & VG_CAP_GRAPH_LOOP) != 0; }
static int has_advance(void)
{
    return (vg_runtime_op_support(g_rt, VG_OP_LM_ADVANCE, NULL) & VG_OP_SUPPORTED) != 0;
}

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    VG_CHECK(vg_mem_alloc(g_rt, bytes, &p));
    return p;
}

static void put(void *d, const void *h, size_t bytes)
{
    VG_CHECK(vg_mem_copy_h2d(g_s, d, h, bytes));
    VG_CHECK(vg_stream_sync(g_s));
}

static void get(void *h, const void *d, size_t bytes)
{
    VG_CHECK(vg_mem_copy_d2h(g_s, h, d, bytes));
    VG_CHECK(vg_stream_sync(g_s));
}

/* ---- lm_advance against its contract ------------------------------------------------------------ */

enum { R = 7, MB = 3, BS = 4, LD = 6, V = 37, NE = 2 };

/* Host state of one lm_advance case; the device holds the same arrays. */
typedef struct adv {
    int32_t next[R], eos[NE], limit[R], bt[R * MB], tokens[R], pos[R], slots[R], ctx[R];
    int32_t state[2 + 2 * R], out[R * LD];
    float logits[R * V], logits_out[R * LD * V];
} adv;

static void reference(adv *a)
{
    int32_t *done = a->state + 2, *count = a->state + 2 + R;
    int more = 0;
    for (int r = 0; r < R; r++) {
        if (done[r]) continue;
        int32_t t = a->next[r], c = count[r];
        a->out[r * LD + c] = t;
        memcpy(a->logits_out + (r * LD + c) * V, a->logits + r * V, V * sizeof(float));
        count[r] = ++c;
        int32_t pos = a->pos[r] + 1;
        if (t == a->eos[0] || t == a->eos[1] || c >= a->limit[r] || c >= LD || pos / BS >= MB) {
            done[r] = 1;
            continue;
        }
        a->tokens[r] = t, a->pos[r] = pos, a->ctx[r]++;
        a->slots[r] = a->bt[r * MB + pos / BS] * BS + pos % BS;
        more = 1;
    }
    a->state[0]++;
    a->state[1] = more;
}

static void test_lm_advance(void **state)
{
    (void)state;
    if (!has_advance()) {
        print_message("SKIP: backend '%s' has no lm_advance\n", vg_runtime_backend_name(g_rt));
        skip();
    }
    adv h;
    memset(&h, 0, sizeof h);
    h.eos[0] = 5, h.eos[1] = 11;
    for (int r = 0; r < R; r++) {
        h.limit[r] = 1 + r % LD;
        for (int b = 0; b < MB; b++) h.bt[r * MB + b] = (r * 5 + b * 3) % 20;
        h.pos[r] = r % 3 + (r == 6 ? 11 : 0); /* row 6 runs out of blocks (MB·BS = 12) */
        h.ctx[r] = h.pos[r] + 1;
        h.tokens[r] = 100 + r;
        h.slots[r] = h.bt[r * MB + h.pos[r] / BS] * BS + h.pos[r] % BS;
    }
    h.state[2 + 3] = 1; /* row 3 is done from the start: never touched */
    int32_t *d = dalloc(sizeof(adv));
    adv *dv = (adv *)d; /* device addresses, laid out as the host struct */
    vg_lm_advance_args a = {.struct_size = sizeof a, .rows = R, .num_eos = NE, .block_size = BS,
                            .max_blocks = MB, .ld_out = LD, .vocab = V, .next = dv->next,
                            .eos = dv->eos, .limit = dv->limit, .block_tables = dv->bt,
                            .tokens = dv->tokens, .pos = dv->pos, .slots = dv->slots,
                            .ctx = dv->ctx, .state = dv->state, .out = dv->out,
                            .logits = dv->logits, .logits_out = dv->logits_out};
    adv want = h, got;
    put(d, &h, sizeof h);
    for (int step = 0; step < LD + 1; step++) {
        for (int r = 0; r < R; r++) {
            want.next[r] = (step * 3 + r * 7) % 13; /* 5 and 11 come up now and then */
            for (int v = 0; v < V; v++) want.logits[r * V + v] = (float)(step * 1000 + r * 100 + v);
        }
        put(dv->next, want.next, sizeof want.next);
        put(dv->logits, want.logits, sizeof want.logits);
        VG_CHECK(vg_op_lm_advance(g_s, &a));
        reference(&want);
        get(&got, d, sizeof got);
        assert_memory_equal(got.state, want.state, sizeof want.state);
        assert_memory_equal(got.tokens, want.tokens, sizeof want.tokens);
        assert_memory_equal(got.pos, want.pos, sizeof want.pos);
        assert_memory_equal(got.slots, want.slots, sizeof want.slots);
        assert_memory_equal(got.ctx, want.ctx, sizeof want.ctx);
        assert_memory_equal(got.out, want.out, sizeof want.out);
        assert_memory_equal(got.logits_out, want.logits_out, sizeof want.logits_out);
    }
    assert_int_equal(want.state[1], 0); /* every row finished within LD steps */
    assert_int_equal(want.state[2 + 3] + want.state[2 + R + 3], 1); /* row 3: done, count 0 */
    /* refusals */
    vg_lm_advance_args bad = a;
    bad.rows = 0;
    VG_CHECK_FAILS(vg_op_lm_advance(g_s, &bad), VG_ERR_INVALID_ARG, "rows 0");
    bad = a, bad.state = NULL;
    VG_CHECK_FAILS(vg_op_lm_advance(g_s, &bad), VG_ERR_INVALID_ARG, "NULL");
    bad = a, bad.logits = NULL;
    VG_CHECK_FAILS(vg_op_lm_advance(g_s, &bad), VG_ERR_INVALID_ARG, "logits_out without logits");
    bad = a, bad.struct_size = 8;
    VG_CHECK_FAILS(vg_op_lm_advance(g_s, &bad), VG_ERR_INVALID_ARG, "struct_size");
    bad = a, bad.pos = (int32_t *)((char *)a.pos + 2);
    VG_CHECK_FAILS(vg_op_lm_advance(g_s, &bad), VG_ERR_INVALID_ARG, "aligned");
    VG_CHECK(vg_mem_free(g_rt, d));
}

/* ---- loops -------------------------------------------------------------------------------------- */

enum { L = 9, NX = 100 };

/* The loop's device state: one row that produces L tokens, then stops. */
typedef struct loop_state {
    int32_t next, eos, limit, bt[4], tokens, pos, slots, ctx;
    int32_t state[4], out[16];
    float x[NX], y[NX];
} loop_state;

static void loop_reset(loop_state *h)
{
    memset(h, 0, sizeof *h);
    h->next = 3, h->eos = 99, h->limit = L;
    for (int b = 0; b < 4; b++) h->bt[b] = b;
    for (int i = 0; i < NX; i++) h->x[i] = (float)(i % 7) - 3.0f;
}

static void test_loop(void **state)
{
    (void)state;
    loop_state h, got;
    loop_reset(&h);
    loop_state *d = dalloc(sizeof h);
    vg_lm_advance_args a = {.struct_size = sizeof a, .rows = 1, .num_eos = 1, .block_size = 4,
                            .max_blocks = 4, .ld_out = 16, .next = &d->next, .eos = &d->eos,
                            .limit = &d->limit, .block_tables = d->bt, .tokens = &d->tokens,
                            .pos = &d->pos, .slots = &d->slots, .ctx = &d->ctx, .state = d->state,
                            .out = d->out};
    if (!loops()) {
        VG_CHECK_FAILS(vg_graph_loop_capture_begin(g_s, d->state + 1), VG_ERR_UNSUPPORTED,
                       "no device-side loops");
        assert_false(vg_stream_is_capturing(g_s));
        VG_CHECK(vg_mem_free(g_rt, d));
        print_message("backend '%s' has no device-side loops: refused, as it must be\n",
                      vg_runtime_backend_name(g_rt));
        return;
    }
    assert_true(has_advance());
    VG_CHECK_FAILS(vg_graph_loop_capture_begin(g_s, NULL), VG_ERR_INVALID_ARG, "flag is NULL");
    VG_CHECK_FAILS(vg_graph_loop_capture_begin(NULL, d->state + 1), VG_ERR_INVALID_ARG, "stream");
    vg_graph *graph = NULL;
    VG_CHECK_FAILS(vg_graph_loop_capture_end(g_s, &graph), VG_ERR_STATE, "not capturing");
    VG_CHECK(vg_graph_loop_capture_begin(g_s, d->state + 1));
    assert_true(vg_stream_is_capturing(g_s));
    VG_CHECK_FAILS(vg_graph_loop_capture_begin(g_s, d->state + 1), VG_ERR_STATE, "capturing already");
    VG_CHECK(vg_op_axpby(g_s, NX, 1.0f, d->x, 1.0f, d->y));
    VG_CHECK(vg_op_lm_advance(g_s, &a));
    VG_CHECK(vg_graph_loop_capture_end(g_s, &graph));
    assert_false(vg_stream_is_capturing(g_s));
    vg_graph_exec *exec = NULL;
    VG_CHECK(vg_graph_instantiate(graph, &exec));
    VG_CHECK(vg_graph_destroy(graph));
    for (int launch = 0; launch < 2; launch++) { /* the second with fresh state */
        loop_reset(&h);
        put(d, &h, sizeof h);
        VG_CHECK(vg_graph_exec_launch(exec, g_s));
        get(&got, d, sizeof got);
        assert_int_equal(got.state[0], L); /* L iterations in one launch */
        assert_int_equal(got.state[1], 0);
        assert_int_equal(got.state[3], L); /* the row's count */
        for (int i = 0; i < L; i++) assert_int_equal(got.out[i], 3);
        assert_int_equal(got.pos, L - 1);
        for (int i = 0; i < NX; i++) assert_true(got.y[i] == (float)L * h.x[i]);
    }
    VG_CHECK(vg_graph_exec_destroy(exec));
    /* vg_graph_capture_end ends a loop capture too, and the stream is usable after */
    VG_CHECK(vg_graph_loop_capture_begin(g_s, d->state + 1));
    VG_CHECK(vg_op_lm_advance(g_s, &a));
    VG_CHECK(vg_graph_capture_end(g_s, &graph));
    VG_CHECK(vg_graph_destroy(graph));
    assert_false(vg_stream_is_capturing(g_s));
    VG_CHECK(vg_stream_sync(g_s));
    VG_CHECK(vg_mem_free(g_rt, d));
}

int main(void)
{
    int rc0 = vg_test_open_runtime(&g_rt);
    if (rc0) return rc0;
    if (vg_stream_create(g_rt, &g_s) != VG_OK) {
        fprintf(stderr, "cannot create a stream: %s\n", vg_last_error());
        return 1;
    }
    printf("device-side loops on backend '%s': %s\n", vg_runtime_backend_name(g_rt),
           loops() ? "yes" : "no");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lm_advance),
        cmocka_unit_test(test_loop),
    };
    int failed = cmocka_run_group_tests_name("loop", tests, NULL, NULL);
    vg_stream_destroy(g_s);
    vg_runtime_close(g_rt);
    return failed ? 1 : 0;
}
