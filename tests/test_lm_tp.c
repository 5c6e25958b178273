/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor parallelism of the language model (vg_lm_options.comm): n ranks as processes, each
 * loading its share of the fixtures' Qwen2 and Qwen3 models, must give the tokens and (within
 * F32 rounding) the logits of the whole model, in every graph mode, with padded buckets and with
 * mixed (prefill + decode) steps.
 *
 * The parent opens no runtime: it forks the ranks, which open theirs after the fork (as NCCL
 * needs). Rank 0 makes the communicator id and writes it down a pipe to each other rank. Every
 * rank loads the whole model too (no communicator) and feeds both the same steps, the whole
 * model's greedy tokens, comparing as it goes; the parent checks that every rank exited 0.
 *
 * Models: the fixtures qwen2_tiny and qwen3_tiny (tied heads, vocab 512), the sharded BF16
 * qwen2_tiny with an untied head, and synthetic weights of two configurations of other shapes:
 * vocabularies that do not split evenly (padded head slices), one kv head (replicated on every
 * rank), per-rank intermediate sizes that need padding.
 *
 * On the backend VG_BACKEND names: kunlun_stub (ranks over shared memory, any n) or a GPU
 * backend with at least n devices (n > device count is skipped; fewer than 2 devices: SKIP). */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vg/vg.h"
#include "vg/vg_comm.h"
#include "vg/vg_lm.h"
#include "vg/vg_safetensors.h"

#include "rank_watchdog.h"

#define MAX_B 8
#define DECODE_STEPS 6
#define REL_TOL 1e-5 /* F32: the split changes only the order of the sums */

/* The synthetic configurations, written by main into g_dir before the ranks start. */
static const char k_cfg_a[] =
    "{\"model_type\": \"qwen3\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
    "\"num_attention_heads\": 4, \"num_key_value_heads\": 1, \"head_dim\": 16, "
    "\"intermediate_size\": 96, \"vocab_size\": 509, \"max_position_embeddings\": 512, "
    "\"tie_word_embeddings\": false}";
static const char k_cfg_b[] =
    "{\"model_type\": \"qwen2\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
    "\"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"intermediate_size\": 40, "
    "\"vocab_size\": 301, \"max_position_embeddings\": 512, \"tie_word_embeddings\": true}";
static char g_dir[64];

typedef struct model_case {
    const char *name;     /* a fixture folder, or the synthetic configuration's file in g_dir */
    const char *prompts;  /* the fixture whose prompts.input.safetensors feeds it */
    int synthetic;
} model_case;

static const model_case k_cases[] = {
    {"qwen2_tiny", "qwen2_tiny", 0},
    {"qwen3_tiny", "qwen3_tiny", 0},
    {"qwen2_tiny_bf16_sharded", "qwen2_tiny_bf16_sharded", 0},
    {"a.json", "qwen3_tiny", 1},
    {"b.json", "qwen2_tiny", 1},
};

static const char *backend(void)
{
    const char *b = getenv("VG_BACKEND");
    return b && *b ? b : "kunlun_stub";
}

/* ---- inside a rank: messages on stderr, exit status for the parent ---------------------------- */

static int g_rank;

static int rank_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rank %d: ", g_rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 1;
}

#define CK(call) \
    do { \
        if ((call) != VG_OK) return rank_fail("%s: %s", #call, vg_last_error()); \
    } while (0)

typedef struct prompts {
    int B;
    int32_t ids[1024];
    int lens[MAX_B];
} prompts;

static int read_prompts(const char *fixture, int vocab, prompts *p)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/prompts.input.safetensors", TEST_DATA_DIR, fixture);
    vg_st_file *f = NULL;
    CK(vg_st_open(path, &f));
    const vg_st_tensor *ids = vg_st_find(f, "input_ids"), *lens = vg_st_find(f, "prompt_lens");
    int rc = 0;
    if (!ids || !lens || ids->dtype != VG_DTYPE_I64 || lens->dtype != VG_DTYPE_I64 || lens->numel > MAX_B ||
        ids->numel > 1024)
        rc = rank_fail("%s: no input_ids / prompt_lens I64 of the expected sizes", path);
    for (uint64_t i = 0; !rc && i < ids->numel; i++) {
        int64_t v;
        memcpy(&v, (const char *)ids->data + 8 * i, 8);
        p->ids[i] = (int32_t)(v % vocab);
    }
    for (uint64_t b = 0; !rc && b < lens->numel; b++) {
        int64_t v;
        memcpy(&v, (const char *)lens->data + 8 * b, 8);
        p->lens[b] = (int)v;
    }
    p->B = rc ? 0 : (int)lens->numel;
    vg_st_close(f);
    return rc;
}

static int compare(const char *what, const float *ref, const float *got, const int32_t *tref,
                   const int32_t *tgot, int rows, int vocab)
{
    double err = 0, mx = 0;
    for (size_t i = 0; i < (size_t)rows * (size_t)vocab; i++) {
        double d = fabs((double)got[i] - ref[i]);
        err = d > err || d != d ? d : err;
        mx = fabs(ref[i]) > mx ? fabs(ref[i]) : mx;
    }
    if (!(err <= REL_TOL * mx))
        return rank_fail("%s: logits differ from the whole model's: max |diff| %g, max |ref| %g", what, err, mx);
    for (int i = 0; i < rows; i++)
        if (tref[i] != tgot[i])
            return rank_fail("%s: row %d: greedy token %d, the whole model's %d", what, i, tgot[i], tref[i]);
    return 0;
}

/* One step on both models; the whole model's greedy tokens in next. */
static int step_both(vg_lm *whole, vg_lm *part, const vg_lm_seq_tokens *s, int n, int vocab, float *l1,
                     float *l2, int32_t *next, const char *what)
{
    int32_t g2[MAX_B];
    CK(vg_lm_step(whole, s, n, l1, next, NULL));
    CK(vg_lm_step(part, s, n, l2, g2, NULL));
    return compare(what, l1, l2, next, g2, n, vocab);
}

/* The schedule, the same on every rank: prompts 0..B-2 prefilled together, the last one
 * prefilled in a step with the others' first decode (mixed), then decode steps of B-1 and of B
 * sequences (padded: the capture sizes skip them). */
static int run_schedule(vg_lm *whole, vg_lm *part, const prompts *p, int vocab, const char *what)
{
    int32_t sw[MAX_B], sp[MAX_B], tok[MAX_B], next[MAX_B];
    float *l1 = malloc((size_t)MAX_B * (size_t)vocab * sizeof(float));
    float *l2 = malloc((size_t)MAX_B * (size_t)vocab * sizeof(float));
    vg_lm_seq_tokens s[MAX_B];
    int rc = !l1 || !l2 ? rank_fail("out of memory") : 0;
    int B = p->B, off[MAX_B];
    for (int b = 0, o = 0; b < B; o += p->lens[b++]) off[b] = o;
    for (int b = 0; !rc && b < B; b++) {
        if (vg_lm_seq_add(whole, &sw[b]) != VG_OK || vg_lm_seq_add(part, &sp[b]) != VG_OK || sw[b] != sp[b])
            rc = rank_fail("%s: seq_add: %s", what, vg_last_error());
    }
    for (int b = 0; b < B - 1; b++) s[b] = (vg_lm_seq_tokens){sw[b], p->ids + off[b], p->lens[b]};
    if (!rc) rc = step_both(whole, part, s, B - 1, vocab, l1, l2, next, what);
    for (int b = 0; b < B - 1; b++) tok[b] = next[b], s[b] = (vg_lm_seq_tokens){sw[b], &tok[b], 1};
    s[B - 1] = (vg_lm_seq_tokens){sw[B - 1], p->ids + off[B - 1], p->lens[B - 1]};
    if (!rc) rc = step_both(whole, part, s, B, vocab, l1, l2, next, what); /* mixed */
    for (int j = 0; !rc && j < 2 * DECODE_STEPS; j++) {
        int n = j < DECODE_STEPS ? B - 1 : B; /* the last sequence waits, then joins */
        /* next[B-1] is the mixed step's until the last sequence joins */
        for (int b = 0; b < n; b++) tok[b] = next[b], s[b] = (vg_lm_seq_tokens){sw[b], &tok[b], 1};
        rc = step_both(whole, part, s, n, vocab, l1, l2, next, what);
    }
    for (int b = 0; b < B; b++) vg_lm_seq_free(whole, sw[b]), vg_lm_seq_free(part, sp[b]);
    free(l1), free(l2);
    return rc;
}

/* With a communicator that the model's heads do not allow: the load fails with the numbers. */
static int load_refused(vg_runtime *rt, vg_comm *comm, int n)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/qwen2_tiny/model", TEST_DATA_DIR);
    vg_lm_options o;
    vg_lm_options_init(&o);
    o.num_blocks = 8, o.max_seqs = 2, o.comm = comm;
    vg_lm *lm = NULL;
    vg_status st = vg_lm_load(rt, dir, &o, &lm);
    char want[96];
    snprintf(want, sizeof want, "4 attention heads do not split over %d ranks", n);
    if (st != VG_ERR_INVALID_ARG || lm || !strstr(vg_last_error(), want))
        return rank_fail("tp %d load: status %d, '%s' (wanted '%s')", n, (int)st, vg_last_error(), want);
    return 0;
}

static int rank_body(int rank, int n, int id_in, const int *id_out, void *arg)
{
    (void)arg;
    g_rank = rank;
    vg_runtime_options ro;
    vg_runtime_options_init(&ro);
    ro.backend = backend();
    vg_probe_report *pr = calloc(1, sizeof *pr);
    if (!pr) return rank_fail("out of memory");
    pr->struct_size = sizeof *pr;
    int devices = vg_backend_probe(ro.backend, pr) == VG_OK && pr->device_count > 0 ? pr->device_count : 1;
    free(pr);
    ro.device = rank % devices;
    vg_runtime *rt = NULL;
    CK(vg_runtime_open(&ro, &rt));
    vg_comm_id id;
    if (rank == 0) {
        CK(vg_comm_id_make(rt, &id));
        for (int r = 1; r < n; r++)
            if (write(id_out[r], &id, sizeof id) != (ssize_t)sizeof id) return rank_fail("writing the id");
    } else if (read(id_in, &id, sizeof id) != (ssize_t)sizeof id) {
        return rank_fail("reading the id");
    }
    vg_comm *comm = NULL;
    CK(vg_comm_create(rt, &id, n, rank, &comm));
    if (n == 3) { /* the fixtures' 4 heads do not split 3 ways */
        int rc = load_refused(rt, comm, n);
        vg_comm_destroy(comm);
        vg_runtime_close(rt);
        return rc;
    }
    static const vg_graph_mode modes[] = {VG_MODE_NONE, VG_MODE_PIECEWISE, VG_MODE_FULL,
                                          VG_MODE_FULL_AND_PIECEWISE};
    static const int64_t sizes[] = {1, 2, 8}; /* 3, 4 and 5 sequences pad to 8 */
    int rc = 0;
    for (size_t f = 0; !rc && f < sizeof k_cases / sizeof k_cases[0]; f++) {
        const model_case *mc = &k_cases[f];
        char dir[1024];
        if (mc->synthetic) snprintf(dir, sizeof dir, "%s/%s", g_dir, mc->name);
        else snprintf(dir, sizeof dir, "%s/%s/model", TEST_DATA_DIR, mc->name);
        vg_lm_options o;
        vg_lm_options_init(&o);
        o.capture_sizes = sizes, o.num_capture_sizes = 3;
        o.num_blocks = 64, o.max_seqs = MAX_B, o.compute_dtype = VG_DTYPE_F32;
        vg_lm *whole = NULL, *part = NULL;
        vg_status st = mc->synthetic ? vg_lm_create_synthetic(rt, dir, 7, VG_DTYPE_F32, &o, &whole)
                                     : vg_lm_load(rt, dir, &o, &whole);
        if (st != VG_OK) rc = rank_fail("%s: %s", dir, vg_last_error());
        o.comm = comm;
        st = rc ? VG_OK
                : mc->synthetic ? vg_lm_create_synthetic(rt, dir, 7, VG_DTYPE_F32, &o, &part)
                                : vg_lm_load(rt, dir, &o, &part);
        if (st != VG_OK) rc = rank_fail("%s, tp %d: %s", dir, n, vg_last_error());
        vg_lm_info wi, pi;
        if (!rc) vg_lm_get_info(whole, &wi), vg_lm_get_info(part, &pi);
        if (!rc && (pi.tp_rank != rank || pi.tp_size != n || wi.tp_size != 1 || pi.heads != wi.heads ||
                    pi.kv_heads != wi.kv_heads || pi.vocab != wi.vocab || pi.weight_bytes >= wi.weight_bytes ||
                    pi.kv_bytes * (uint64_t)wi.kv_heads != wi.kv_bytes * (uint64_t)(wi.kv_heads % n ? 1 : wi.kv_heads / n)))
            rc = rank_fail("%s: info: rank %d of %d, heads %d/%d, weights %llu of %llu bytes, KV %llu of %llu", dir,
                      pi.tp_rank, pi.tp_size, pi.heads, pi.kv_heads, (unsigned long long)pi.weight_bytes,
                      (unsigned long long)wi.weight_bytes, (unsigned long long)pi.kv_bytes,
                      (unsigned long long)wi.kv_bytes);
        prompts p;
        if (!rc) rc = read_prompts(mc->prompts, wi.vocab, &p);
        for (int m = 0; !rc && m < 4; m++) {
            vg_lm_options r = o;
            r.mode = modes[m];
            char what[256];
            snprintf(what, sizeof what, "%s, tp %d, mode %s", mc->name, n, vg_graph_mode_name(modes[m]));
            if (vg_lm_reconfigure(whole, &r) != VG_OK || vg_lm_reconfigure(part, &r) != VG_OK)
                rc = rank_fail("%s: reconfigure: %s", what, vg_last_error());
            else
                rc = run_schedule(whole, part, &p, wi.vocab, what);
        }
        vg_lm_free(part);
        vg_lm_free(whole);
    }
    vg_comm_destroy(comm);
    vg_runtime_close(rt);
    return rc;
}

/* The device count of the backend, from a child (the parent opens nothing); -1 when unusable. */
static int device_count(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        vg_probe_report *pr = calloc(1, sizeof *pr);
        int n = 0;
        if (pr) {
            pr->struct_size = sizeof *pr;
            if (vg_backend_probe(backend(), pr) == VG_OK) n = pr->device_count;
        }
        _exit(n > 100 ? 100 : n);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

/* n ranks; 0 when every one exited 0. A rank that hangs is ended by its watchdog
 * (VG_TEST_LM_TP_WATCHDOG_S, default 300 s), or killed by the parent 15 s later, by name. */
static int run_ranks(int n)
{
    int codes[RANK_WATCHDOG_MAX];
    pid_t pids[RANK_WATCHDOG_MAX];
    int watchdog = rank_watchdog_seconds("VG_TEST_LM_TP_WATCHDOG_S", 300);
    char what[32];
    snprintf(what, sizeof what, "lm_tp: tp %d", n);
    printf("%s: %d ranks\n", what, n); /* where a hang is, even when killed from outside */
    assert_int_equal(rank_watchdog_run(what, n, watchdog, 15, rank_body, NULL, pids, codes), 0);
    int bad = 0;
    for (int r = 0; r < n; r++) {
        if (codes[r] == 0) continue;
        print_message("tp %d: rank %d ended with %d%s\n", n, r, codes[r],
                      codes[r] == RANK_WATCHDOG_EXIT ? " (its watchdog: it hung)"
                      : codes[r] == -1               ? " (never reaped)"
                                                     : "");
        bad = 1;
    }
    return bad;
}

static int g_devices;

/* n ranks, each comparing its share with the whole model (n == 3: checking the refusal) */
static void sharded_equals_whole(int n)
{
    int stub = strcmp(backend(), "kunlun_stub") == 0;
    if (!stub && g_devices < n) {
        print_message("SKIP: tp %d needs %d devices of %s, there are %d\n", n, n, backend(), g_devices);
        skip();
    }
    assert_int_equal(run_ranks(n), 0);
}

static void tp2(void **state)
{
    (void)state;
    sharded_equals_whole(2);
}

static void tp4(void **state) /* 4 heads, 2 kv heads: each kv head on two ranks */
{
    (void)state;
    sharded_equals_whole(4);
}

static void tp3_refused(void **state)
{
    (void)state;
    sharded_equals_whole(3); /* each rank checks that its load is refused */
}

/* The shapes that split, and the messages of those that do not (no device needed). */
static void tp_check(void **state)
{
    (void)state;
    vg_lm_info i = {.heads = 14, .kv_heads = 2, .intermediate = 4864}; /* Qwen2.5-0.5B */
    assert_int_equal(vg_lm_tp_check(&i, 1), VG_OK);
    assert_int_equal(vg_lm_tp_check(&i, 2), VG_OK);
    assert_int_equal(vg_lm_tp_check(&i, 7), VG_ERR_INVALID_ARG); /* 2 kv heads over 7 */
    assert_non_null(strstr(vg_last_error(), "2 kv heads"));
    assert_int_equal(vg_lm_tp_check(&i, 4), VG_ERR_INVALID_ARG); /* 14 heads over 4 */
    assert_non_null(strstr(vg_last_error(), "14 attention heads do not split over 4 ranks"));
    vg_lm_info q = {.heads = 16, .kv_heads = 8, .intermediate = 3072}; /* Qwen3-0.6B */
    assert_int_equal(vg_lm_tp_check(&q, 8), VG_OK);
    assert_int_equal(vg_lm_tp_check(&q, 16), VG_OK); /* kv heads replicated twice */
    vg_lm_info r = {.heads = 4, .kv_heads = 2, .intermediate = 6};
    assert_int_equal(vg_lm_tp_check(&r, 4), VG_ERR_INVALID_ARG); /* intermediate 6 over 4 */
    assert_non_null(strstr(vg_last_error(), "intermediate size 6"));
    assert_int_equal(vg_lm_tp_check(&r, 0), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_lm_tp_check(NULL, 2), VG_ERR_INVALID_ARG);
}

static int write_file(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f) ok &= fclose(f) == 0;
    return ok;
}

static void remove_files(void)
{
    char path[128];
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        if (k_cases[i].synthetic) snprintf(path, sizeof path, "%s/%s", g_dir, k_cases[i].name), remove(path);
    rmdir(g_dir);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* each case's line out before a hang, also into a pipe */
    snprintf(g_dir, sizeof g_dir, "/tmp/vg_lm_tp.XXXXXX");
    if (!mkdtemp(g_dir) || !write_file("a.json", k_cfg_a) || !write_file("b.json", k_cfg_b)) {
        perror("vg_lm_tp: writing the synthetic configurations");
        return 1;
    }
    atexit(remove_files);
    g_devices = device_count();
    const struct CMUnitTest host[] = {cmocka_unit_test(tp_check)};
    int rc = cmocka_run_group_tests_name("lm_tp_host", host, NULL, NULL);
    if (g_devices < 1 || (strcmp(backend(), "kunlun_stub") != 0 && g_devices < 2)) {
        printf("SKIP: backend %s has %d device(s); tensor parallelism needs 2 (or kunlun_stub)\n", backend(),
               g_devices);
        return rc ? rc : 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(tp2), cmocka_unit_test(tp4), cmocka_unit_test(tp3_refused)};
    return rc | cmocka_run_group_tests_name("lm_tp", tests, NULL, NULL);
}
