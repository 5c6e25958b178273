// SPDX-License-Identifier: Apache-2.0
/* vg_lm_generate: many decode steps in one call, on the device where the backend loops
 * (VG_CAP_GRAPH_LOOP: kunlun_stub, CUDA 12.4+) and as a host loop elsewhere.
 *
 * On the fixtures (qwen2_tiny, qwen3_tiny), five sequences of different prompt lengths:
 *   - the device loop gives exactly the host loop's tokens, counts, logits and KV state;
 *   - both agree with a naive loop of vg_lm_step calls (one per step, finished sequences left
 *     out) and with what EOS ids and limits imply: EOS stops mid-batch, per-sequence limits,
 *     a length limit (max_seq_len) reached mid-loop, N larger than needed;
 *   - the device loop runs in one launch and one read-back (the call's info and the runner's
 *     statistics), and its steps are the longest sequence's count;
 *   - refused calls (bad arguments, a pool too small for the whole generation) change nothing.
 * VG_TEST_EXPECT_FALLBACK=<text>: the device loop must fall back to the host loop with a reason
 * containing <text> (ctest runs it so with VG_STUB_CAPS=noloop and with failing instantiation). */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"
#include "vg/vg_lm.h"

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must point at tests/data"
#endif

static vg_runtime *g_rt;
static int g_gpu;
static const char *g_expect_fallback; /* VG_TEST_EXPECT_FALLBACK */

enum { B = 5, N_BIG = 40, MAX_SEQ_LEN = 64 };
static const int k_prompt[B] = {7, 1, 12, 58, 3}; /* sequence 3 reaches max_seq_len mid-loop */
static const int64_t k_sizes[] = {1, 2, 4, 8, 16};

static vg_lm *load(const char *model, vg_graph_mode mode, int64_t blocks)
{
    vg_lm_options o;
    vg_lm_options_init(&o);
    o.mode = mode;
    o.capture_sizes = k_sizes;
    o.num_capture_sizes = 5;
    o.num_blocks = blocks;
    o.max_seqs = 8;
    o.max_seq_len = MAX_SEQ_LEN;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/model", TEST_DATA_DIR, model);
    vg_lm *lm = NULL;
    vg_status st = vg_lm_load(g_rt, path, &o, &lm);
    if (st == VG_ERR_UNSUPPORTED && strstr(vg_last_error(), "has no")) {
        print_message("SKIP: %s\n", vg_last_error());
        skip();
    }
    VG_CHECK(st);
    return lm;
}

/* What one generation produced. */
typedef struct result {
    int32_t tokens[B][N_BIG], counts[B];
    float *logits; /* [B, N_BIG, vocab] */
    int64_t lens[B];
    vg_lm_generate_info info;
    uint64_t replays, hits; /* runner statistics of the generate call */
} result;

static int vocab_of(vg_lm *lm)
{
    vg_lm_info i;
    VG_CHECK(vg_lm_get_info(lm, &i));
    return i.vocab;
}

/* Add and prefill the B sequences; ids[b] and each one's first input token. */
static void prefill(vg_lm *lm, int32_t *ids, int32_t *first)
{
    int V = vocab_of(lm);
    for (int b = 0; b < B; b++) {
        int32_t toks[64];
        for (int i = 0; i < k_prompt[b]; i++) toks[i] = (int32_t)((b * 131 + i * 37 + 5) % V);
        VG_CHECK(vg_lm_seq_add(lm, &ids[b]));
        vg_lm_seq_tokens st = {ids[b], toks, k_prompt[b]};
        VG_CHECK(vg_lm_step(lm, &st, 1, NULL, &first[b], NULL));
    }
}

static uint64_t stat_total(vg_lm *lm, int replays)
{
    vg_bucket_stats t;
    vg_runner_stats(vg_lm_runner(lm), NULL, 0, &t);
    return replays ? t.replays : t.hits;
}

/* Prefill, generate with `loop`, record, free the sequences. */
static void generate(vg_lm *lm, vg_lm_loop loop, int N, const int32_t *eos, int num_eos,
                     const int32_t *limits, result *r)
{
    int V = vocab_of(lm);
    int32_t ids[B], first[B];
    prefill(lm, ids, first);
    vg_lm_gen_seq seqs[B];
    for (int b = 0; b < B; b++) seqs[b] = (vg_lm_gen_seq){ids[b], first[b], limits ? limits[b] : 0};
    vg_lm_generate_options o;
    vg_lm_generate_options_init(&o);
    o.max_new_tokens = N;
    o.eos = eos;
    o.num_eos = num_eos;
    o.loop = loop;
    memset(r->tokens, 0xff, sizeof r->tokens);
    r->logits = calloc((size_t)B * N * (size_t)V, sizeof(float));
    assert_non_null(r->logits);
    int32_t tok[B * N_BIG];
    uint64_t rep0 = stat_total(lm, 1), hit0 = stat_total(lm, 0);
    VG_CHECK(vg_lm_generate(lm, seqs, B, &o, tok, r->counts, r->logits, &r->info));
    r->replays = stat_total(lm, 1) - rep0;
    r->hits = stat_total(lm, 0) - hit0;
    for (int b = 0; b < B; b++) {
        memcpy(r->tokens[b], tok + (size_t)b * N, (size_t)r->counts[b] * sizeof(int32_t));
        r->lens[b] = vg_lm_seq_len(lm, ids[b]);
        assert_int_equal(r->lens[b], k_prompt[b] + r->counts[b]);
    }
    for (int b = 0; b < B; b++) VG_CHECK(vg_lm_seq_free(lm, ids[b]));
}

/* The naive reference: one vg_lm_step per step over the unfinished sequences only. */
static void naive(vg_lm *lm, int N, const int32_t *eos, int num_eos, const int32_t *limits,
                  result *r)
{
    int V = vocab_of(lm);
    int32_t ids[B], next[B];
    prefill(lm, ids, next);
    int done[B] = {0};
    r->logits = calloc((size_t)B * N * (size_t)V, sizeof(float));
    float *lg = malloc((size_t)B * V * sizeof(float));
    assert_true(r->logits && lg);
    memset(r->counts, 0, sizeof r->counts);
    for (;;) {
        vg_lm_seq_tokens st[B];
        int idx[B], n = 0;
        for (int b = 0; b < B; b++) {
            int64_t lim = limits && limits[b] ? limits[b] : N;
            if (lim > MAX_SEQ_LEN - k_prompt[b]) lim = MAX_SEQ_LEN - k_prompt[b];
            if (done[b] || r->counts[b] >= lim) continue;
            st[n] = (vg_lm_seq_tokens){ids[b], &next[b], 1};
            idx[n++] = b;
        }
        if (!n) break;
        int32_t greedy[B];
        VG_CHECK(vg_lm_step(lm, st, n, lg, greedy, NULL));
        for (int i = 0; i < n; i++) {
            int b = idx[i];
            memcpy(r->logits + ((size_t)b * N + r->counts[b]) * V, lg + (size_t)i * V, (size_t)V * sizeof(float));
            r->tokens[b][r->counts[b]++] = next[b] = greedy[i];
            for (int k = 0; k < num_eos; k++) done[b] |= greedy[i] == eos[k];
        }
    }
    for (int b = 0; b < B; b++) {
        r->lens[b] = vg_lm_seq_len(lm, ids[b]);
        VG_CHECK(vg_lm_seq_free(lm, ids[b]));
    }
    free(lg);
}

/* The device loop's result against the host loop's: identical, every byte. */
static void same_as_host(const result *d, const result *h, int N, int V)
{
    for (int b = 0; b < B; b++) {
        assert_int_equal(d->counts[b], h->counts[b]);
        assert_int_equal(d->lens[b], h->lens[b]);
        assert_memory_equal(d->tokens[b], h->tokens[b], (size_t)h->counts[b] * sizeof(int32_t));
    }
    double worst = 0, top = 0;
    for (int b = 0; b < B; b++)
        for (size_t i = 0; i < (size_t)h->counts[b] * V; i++) {
            size_t at = (size_t)b * N * V + i;
            double diff = fabs((double)d->logits[at] - h->logits[at]);
            if (diff > worst || diff != diff) worst = diff;
            if (fabs(h->logits[at]) > top) top = fabs(h->logits[at]);
        }
    print_message("device loop vs host loop: largest logit difference %g\n", worst);
    /* the same kernels on the same inputs: bitwise on the CPU stand-in and OpenCL; a GPU's
     * captured and eager GEMM plans are the same too, this bound only keeps a report readable */
    assert_true(worst <= (g_gpu ? 1e-5 * (top > 1 ? top : 1) : 0));
}

/* Tokens against the naive loop, up to the first near tie (a different batch shape may pick
 * other kernels); logits within the backend's rounding. */
static void close_to_naive(const result *r, const result *ref, int N, int V)
{
    for (int b = 0; b < B; b++) {
        for (int j = 0; j < ref->counts[b] && j < r->counts[b]; j++) {
            const float *x = ref->logits + ((size_t)b * N + j) * V;
            float best = -INFINITY, second = -INFINITY, mx = 0;
            for (int v = 0; v < V; v++) {
                if (x[v] > best) second = best, best = x[v];
                else if (x[v] > second) second = x[v];
                if (fabsf(x[v]) > mx) mx = fabsf(x[v]);
            }
            const float *y = r->logits + ((size_t)b * N + j) * V;
            for (int v = 0; v < V; v++) assert_true(fabsf(x[v] - y[v]) <= (g_gpu ? 2e-3f : 1e-4f) * (1 + mx));
            if (best - second < 1e-3f * mx) goto next_seq; /* a near tie: stop comparing */
            assert_int_equal(r->tokens[b][j], ref->tokens[b][j]);
        }
        assert_int_equal(r->counts[b], ref->counts[b]);
    next_seq:;
    }
}

static void check_model(const char *model)
{
    vg_lm *lm = load(model, VG_MODE_FULL_AND_PIECEWISE, 64);
    int V = vocab_of(lm);
    int has_loop = (vg_runtime_caps(g_rt) & VG_CAP_GRAPH_LOOP) && vg_test_graphs(g_rt);

    /* 1. no EOS, N = 12: every sequence runs to N but sequence 3, stopped by max_seq_len */
    result free_run = {0};
    generate(lm, VG_LM_LOOP_HOST, 12, NULL, 0, NULL, &free_run);
    assert_int_equal(free_run.counts[3], MAX_SEQ_LEN - k_prompt[3]); /* 6 */
    for (int b = 0; b < B; b++)
        if (b != 3) assert_int_equal(free_run.counts[b], 12);
    assert_false(free_run.info.device_loop);
    assert_int_equal(free_run.info.launches, 12);

    /* 2. EOS ids that stop sequences 0 and 2 mid-batch; per-sequence limits (sequence 1 at 5);
     * N = 40, more than any sequence needs */
    int32_t eos[2] = {free_run.tokens[0][3], free_run.tokens[2][6]};
    const int32_t limits[B] = {0, 5, 0, 0, 10};
    int expect[B];
    for (int b = 0; b < B; b++) {
        int lim = limits[b] ? limits[b] : N_BIG;
        if (lim > MAX_SEQ_LEN - k_prompt[b]) lim = MAX_SEQ_LEN - k_prompt[b];
        expect[b] = -1;
        for (int j = 0; j < free_run.counts[b] && j < lim && expect[b] < 0; j++)
            if (free_run.tokens[b][j] == eos[0] || free_run.tokens[b][j] == eos[1]) expect[b] = j + 1;
        if (expect[b] < 0) expect[b] = lim; /* beyond the free run: counts alone are checked */
    }
    result host = {0}, dev = {0}, ref = {0};
    generate(lm, VG_LM_LOOP_HOST, N_BIG, eos, 2, limits, &host);
    generate(lm, VG_LM_LOOP_DEVICE, N_BIG, eos, 2, limits, &dev);
    naive(lm, N_BIG, eos, 2, limits, &ref);
    int longest = 0;
    for (int b = 0; b < B; b++) {
        assert_int_equal(host.counts[b], expect[b]);
        int shared = expect[b] < free_run.counts[b] ? expect[b] : free_run.counts[b];
        assert_memory_equal(host.tokens[b], free_run.tokens[b], (size_t)shared * sizeof(int32_t));
        if (host.counts[b] > longest) longest = host.counts[b];
    }
    assert_true(expect[0] <= 4 && expect[2] <= 7); /* the EOS stops are mid-batch */
    assert_true(longest < N_BIG);
    same_as_host(&dev, &host, N_BIG, V);
    close_to_naive(&host, &ref, N_BIG, V);
    assert_int_equal(host.info.steps, longest);
    assert_int_equal(host.info.launches, longest);
    assert_int_equal(dev.info.steps, longest);
    if (g_expect_fallback) {
        assert_false(dev.info.device_loop);
        if (!strstr(dev.info.fallback, g_expect_fallback))
            print_message("fallback reason: '%s'\n", dev.info.fallback);
        assert_non_null(strstr(dev.info.fallback, g_expect_fallback));
    } else {
        assert_int_equal(dev.info.device_loop, has_loop);
    }
    if (dev.info.device_loop) { /* every step in one launch, one read-back */
        assert_int_equal(dev.info.launches, 1);
        assert_int_equal(dev.info.readbacks, 1);
        assert_int_equal(dev.replays, 1);
        assert_int_equal(dev.hits, 1);
        assert_string_equal(dev.info.fallback, "");
    } else {
        assert_int_equal(dev.info.launches, longest);
        assert_true(strlen(dev.info.fallback) > 0);
    }
    print_message("%s: device loop %d (%s), %d steps, host %d launches\n", model,
                  dev.info.device_loop, dev.info.fallback, longest, host.info.launches);

    /* 3. the captured loop is kept: a second call, other EOS ids of the same count and other
     * limits, launches it again and still matches the host */
    const int32_t limits2[B] = {2, 0, 3, 1, 0};
    int32_t eos2[2] = {free_run.tokens[1][2], free_run.tokens[4][1]};
    result host2 = {0}, dev2 = {0};
    generate(lm, VG_LM_LOOP_HOST, 9, eos2, 2, limits2, &host2);
    generate(lm, VG_LM_LOOP_AUTO, 9, eos2, 2, limits2, &dev2);
    same_as_host(&dev2, &host2, 9, V);
    assert_int_equal(dev2.info.device_loop, dev.info.device_loop);

    /* 4. every mode: the same tokens (mode none and piecewise fall back, logged) */
    static const vg_graph_mode modes[] = {VG_MODE_NONE, VG_MODE_PIECEWISE, VG_MODE_FULL};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        vg_lm_options o;
        vg_lm_options_init(&o);
        o.mode = modes[i];
        o.capture_sizes = k_sizes;
        o.num_capture_sizes = 5;
        VG_CHECK(vg_lm_reconfigure(lm, &o));
        result m = {0};
        generate(lm, VG_LM_LOOP_AUTO, N_BIG, eos, 2, limits, &m);
        for (int b = 0; b < B; b++) {
            assert_int_equal(m.counts[b], host.counts[b]);
            assert_memory_equal(m.tokens[b], host.tokens[b], (size_t)host.counts[b] * sizeof(int32_t));
        }
        if (modes[i] != VG_MODE_FULL) {
            assert_false(m.info.device_loop);
            if (has_loop) assert_non_null(strstr(m.info.fallback, "mode"));
        } else {
            assert_int_equal(m.info.device_loop, dev.info.device_loop);
        }
        free(m.logits);
    }
    free(free_run.logits), free(host.logits), free(dev.logits), free(ref.logits);
    free(host2.logits), free(dev2.logits);
    VG_CHECK(vg_lm_free(lm));
}

static void test_qwen2(void **state)
{
    (void)state;
    check_model("qwen2_tiny");
}

static void test_qwen3(void **state)
{
    (void)state;
    check_model("qwen3_tiny");
}

/* Refusals change nothing: lengths and free blocks stay. */
static void test_refusals(void **state)
{
    (void)state;
    vg_lm *lm = load("qwen2_tiny", VG_MODE_FULL_AND_PIECEWISE, 10);
    int32_t a, b, first, tok[64], counts[2];
    int32_t prompt[20] = {0};
    VG_CHECK(vg_lm_seq_add(lm, &a));
    VG_CHECK(vg_lm_seq_add(lm, &b));
    vg_lm_seq_tokens st[2] = {{a, prompt, 20}, {b, prompt, 20}};
    int32_t g2[2];
    VG_CHECK(vg_lm_step(lm, st, 2, NULL, g2, NULL));
    first = g2[0];
    vg_lm_info before, after;
    vg_lm_generate_options o;
    vg_lm_generate_options_init(&o);
    o.max_new_tokens = 8;
    vg_lm_gen_seq s[2] = {{a, first, 0}, {b, g2[1], 0}};
    VG_CHECK_FAILS(vg_lm_generate(NULL, s, 2, &o, tok, counts, NULL, NULL), VG_ERR_INVALID_ARG, "NULL");
    VG_CHECK_FAILS(vg_lm_generate(lm, s, 2, &o, NULL, counts, NULL, NULL), VG_ERR_INVALID_ARG, "NULL");
    VG_CHECK_FAILS(vg_lm_generate(lm, s, 0, &o, tok, counts, NULL, NULL), VG_ERR_INVALID_ARG, "0 sequences");
    o.max_new_tokens = 0;
    VG_CHECK_FAILS(vg_lm_generate(lm, s, 2, &o, tok, counts, NULL, NULL), VG_ERR_INVALID_ARG, "max_new_tokens 0");
    o.max_new_tokens = 8;
    int32_t bad_eos = 512;
    o.eos = &bad_eos;
    o.num_eos = 1;
    VG_CHECK_FAILS(vg_lm_generate(lm, s, 2, &o, tok, counts, NULL, NULL), VG_ERR_INVALID_ARG, "EOS id 512");
    o.eos = NULL;
    VG_CHECK_FAILS(vg_lm_generate(lm, s, 2, &o, tok, counts, NULL, NULL), VG_ERR_INVALID_ARG, "EOS");
    o.num_eos = 0;
    o.loop = (vg_lm_loop)7;
    VG_CHECK_FAILS(vg_lm_generate(lm, s, 2, &o, tok, counts, NULL, NULL), VG_ERR_INVALID_ARG, "loop");
    o.loop = VG_LM_LOOP_AUTO;
    vg_lm_gen_seq dup[2] = {{a, first, 0}, {a, first, 0}};
    VG_CHECK_FAILS(vg_lm_generate(lm, dup, 2, &o, tok, counts, NULL, NULL), VG_ERR_INVALID_ARG, "twice");
    vg_lm_gen_seq dead[1] = {{7, first, 0}};
    VG_CHECK_FAILS(vg_lm_generate(lm, dead, 1, &o, tok, counts, NULL, NULL), VG_ERR_INVALID_ARG, "not alive");
    vg_lm_gen_seq badtok[1] = {{a, 600, 0}};
    VG_CHECK_FAILS(vg_lm_generate(lm, badtok, 1, &o, tok, counts, NULL, NULL), VG_ERR_INVALID_ARG, "vocabulary");
    /* 10 blocks of 16, max_seq_len 64: a and b hold 2 blocks each, c (40 tokens) 3; to 64 tokens
     * they need 2 + 2 + 1 more, and 3 are free: refused whole */
    o.max_new_tokens = 44;
    int32_t big[3 * 44];
    int32_t c, p3[40] = {0};
    VG_CHECK(vg_lm_seq_add(lm, &c));
    vg_lm_seq_tokens st3 = {c, p3, 40};
    int32_t g3;
    VG_CHECK(vg_lm_step(lm, &st3, 1, NULL, &g3, NULL));
    VG_CHECK(vg_lm_get_info(lm, &before));
    vg_lm_gen_seq three[3] = {{a, first, 0}, {b, g2[1], 0}, {c, g3, 0}};
    int32_t counts3[3];
    VG_CHECK_FAILS(vg_lm_generate(lm, three, 3, &o, big, counts3, NULL, NULL), VG_ERR_OUT_OF_MEMORY,
                   "exhausted");
    VG_CHECK(vg_lm_get_info(lm, &after));
    assert_int_equal(after.free_blocks, before.free_blocks);
    assert_int_equal(vg_lm_seq_len(lm, a), 20);
    assert_int_equal(vg_lm_seq_len(lm, b), 20);
    assert_int_equal(vg_lm_seq_len(lm, c), 40);
    /* a sequence at its length limit produces nothing; the others go on */
    int32_t p4[24] = {0};
    vg_lm_seq_tokens st4 = {c, p4, 24};
    VG_CHECK(vg_lm_step(lm, &st4, 1, NULL, &g3, NULL)); /* c at 64 = max_seq_len */
    o.max_new_tokens = 3;
    vg_lm_gen_seq two[2] = {{a, first, 0}, {c, g3, 0}};
    int32_t out2[2 * 3], counts2[2];
    VG_CHECK(vg_lm_generate(lm, two, 2, &o, out2, counts2, NULL, NULL));
    assert_int_equal(counts2[0], 3);
    assert_int_equal(counts2[1], 0);
    assert_int_equal(vg_lm_seq_len(lm, a), 23);
    assert_int_equal(vg_lm_seq_len(lm, c), 64);
    VG_CHECK(vg_lm_free(lm));
}

int main(void)
{
    int rc0 = vg_test_open_runtime(&g_rt);
    if (rc0) return rc0;
    g_gpu = vg_test_gpu_kernels(g_rt);
    g_expect_fallback = getenv("VG_TEST_EXPECT_FALLBACK");
    printf("generation loop tests on backend '%s' (device-side loops: %s)\n",
           vg_runtime_backend_name(g_rt), (vg_runtime_caps(g_rt) & VG_CAP_GRAPH_LOOP) ? "yes" : "no");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen2),
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_refusals),
    };
    int failed = cmocka_run_group_tests_name("lm_loop", tests, NULL, NULL);
    vg_runtime_close(g_rt);
    return failed ? 1 : 0;
}
