/* SPDX-License-Identifier: Apache-2.0 */
/* Communicators (vg_comm.h) on the backend VG_BACKEND names: kunlun_stub in CI (ranks are
 * processes of this machine), cuda on a machine with two or more GPUs (rank r on device r).
 *
 * Every rank is a child forked by this program, which never opens a runtime itself (a process
 * that has initialised CUDA cannot give a usable CUDA to its children; ipc_util.h). Rank 0 makes
 * the id and sends it to the others as hex over pipes. The checks:
 *  - all-reduce of F32, F16 and BF16, in place and out of place, 2 and 4 ranks, distinct data;
 *    all-gather of several dtypes; counts larger than the stub's slot (chunked);
 *  - collectives captured into a graph with an op, replayed twice with new inputs;
 *  - every argument the core refuses, with its message; create and destroy refused while
 *    capturing; VG_COMM_TIMEOUT_MS parsed strictly; a collective inside a capture without
 *    VG_CAP_COMM_CAPTURE;
 *  - a rank that dies (before a collective, or between two replays of a graph) and a rank that
 *    stays silent: the others fail within VG_COMM_TIMEOUT_MS naming it, and the communicator
 *    then refuses everything with VG_ERR_STATE; nothing is left in /dev/shm;
 *  - a communicator destroyed before a graph that captured its collectives (healthy, or after a
 *    dead rank): bounded, and the graph is destroyed after it;
 *  - a device without communicators (opencl, VG_STUB_CAPS=nocomm): vg_comm_id_make says why.
 *
 * The test itself cannot hang: each case prints a line as it starts, every rank arms a watchdog
 * (VG_TEST_COMM_WATCHDOG_S, default 60 s) that ends it with a message naming the case and the
 * rank, and the parent kills a rank that outlives its watchdog (one stuck in the driver), saying
 * which. */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <time.h>

#include "ipc_util.h"
#include "rank_watchdog.h"
#include "test_util.h"
#include "vg/vg_comm.h"
#include "vg/vg_half.h"

static char g_backend[64];
static uint64_t g_caps;
static int g_devices; /* devices the backend reports */
static int g_stub;    /* kunlun_stub: its own messages and knobs are checked too */

#define HEX_LEN (2 * sizeof(vg_comm_id))

/* ---- watchdogs (rank_watchdog.h) ----------------------------------------------------------- */

#define WATCHDOG_GRACE_S 15 /* the parent's wait beyond a rank's watchdog (at most the watchdog) */
static const char *g_case = ""; /* the test case running */

/* VG_TEST_COMM_WATCHDOG_S: seconds a rank may run (one case); default 60. */
static int watchdog_s(void) { return rank_watchdog_seconds("VG_TEST_COMM_WATCHDOG_S", 60); }

static int watchdog_grace_s(void)
{
    return watchdog_s() < WATCHDOG_GRACE_S ? watchdog_s() : WATCHDOG_GRACE_S;
}

/* ---- ranks ------------------------------------------------------------------------------------ */

typedef struct rank_ctx {
    int rank, nranks;
    vg_runtime *rt;
    vg_stream *s;
    vg_comm_id id;
} rank_ctx;

/* A rank's body: 0 passed, 1 failed (it printed why), or an exit code the scenario expects. */
typedef int (*rank_fn)(rank_ctx *c, void *arg);

/* What the child of each rank runs: fn, with env set. */
typedef struct rank_job {
    rank_fn fn;
    void *arg;
    const char *const *env;
} rank_job;

/* The child of rank r: open the runtime (on device r where the backend has enough devices),
 * make (rank 0) or receive the id, run the job's fn. */
static int rank_child(int r, int n, int in, const int *out, void *jp)
{
    const rank_job *job = jp;
    /* cmocka's handlers would jump back into the parent's test: a crash is a crash */
    const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) signal(sigs[k], SIG_DFL);
    ipc_set_env(job->env);
    rank_ctx c = {.rank = r, .nranks = n};
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.device = g_devices >= n ? r : -1;
    CKV(vg_runtime_open(&o, &c.rt));
    CKV(vg_stream_create(c.rt, &c.s));
    char hex[HEX_LEN + 1];
    if (!(g_caps & VG_CAP_COMM)) {
        /* nothing to share: the body checks the refusals */
    } else if (r == 0) {
        CKV(vg_comm_id_make(c.rt, &c.id));
        CKV(vg_comm_id_to_hex(&c.id, hex, sizeof hex));
        for (int k = 1; k < n; k++) CK(ipc_write_all(out[k], hex, HEX_LEN) == 0, "send id");
    } else {
        CK(ipc_read_all(in, hex, HEX_LEN) == 0, "rank %d: no id from rank 0", r);
        hex[HEX_LEN] = '\0';
        CKV(vg_comm_id_from_hex(hex, &c.id));
    }
    int rc = job->fn(&c, job->arg);
    if (vg_stream_destroy(c.s) != VG_OK && rc == 0) rc = 1;
    if (vg_runtime_close(c.rt) != VG_OK && rc == 0) rc = 1;
    return rc;
}

/* /dev/shm entries the stub made for an id of process `pid` (a leak once the ranks are gone). */
static int shm_leftovers(pid_t pid)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "vg_stub_comm.%d.", (int)pid);
    DIR *d = opendir("/dev/shm");
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* Run n ranks with `env` set in each; rank r must exit with want[r] (NULL: all 0). Returns 0,
 * VG_TEST_SKIP or 1. */
static int run_ranks(const char *name, int n, rank_fn fn, void *arg, const char *const *env,
                     const int *want)
{
    int codes[RANK_WATCHDOG_MAX];
    pid_t pids[RANK_WATCHDOG_MAX];
    g_case = name;
    printf("comm: %s: %d rank(s)\n", name, n); /* where a hang is, even when killed from outside */
    rank_job job = {fn, arg, env};
    assert_int_equal(rank_watchdog_run(g_case, n, watchdog_s(), watchdog_grace_s(), rank_child, &job,
                                       pids, codes), 0);
    int rc = 0;
    for (int r = 0; r < n; r++) {
        int expect = want ? want[r] : 0;
        if (codes[r] == expect) continue;
        if (codes[r] == VG_TEST_SKIP && rc == 0) {
            rc = VG_TEST_SKIP;
            continue;
        }
        print_message("%s: rank %d (pid %d) ended with %d%s, expected %d\n", name, r, (int)pids[r],
                      codes[r], codes[r] == RANK_WATCHDOG_EXIT ? " (its watchdog: it hung)"
                                : codes[r] == -1 ? " (never reaped)" : "", expect);
        rc = 1;
    }
    if (g_stub && shm_leftovers(pids[0])) {
        print_message("/dev/shm still holds the communicator of pid %d\n", (int)pids[0]);
        rc = 1;
    }
    return rc;
}

#define RUN_RANKS(n, fn, arg, env, want)                                                     \
    do {                                                                                     \
        int rc_ = run_ranks(__func__, (n), (fn), (arg), (env), (want));                      \
        if (rc_ == VG_TEST_SKIP) skip();                                                     \
        assert_int_equal(rc_, 0);                                                            \
    } while (0)

/* n ranks need n devices, except on the stub, whose ranks share its one device */
static void need_ranks(int n)
{
    if (!g_stub && g_devices < n) {
        print_message("SKIP: %d ranks need %d devices, backend '%s' has %d\n", n, n, g_backend,
                      g_devices);
        skip();
    }
}

/* n ranks where the backend has the devices (the stub always does), else as many as it has */
static int ranks_up_to(int n) { return g_stub || g_devices >= n ? n : g_devices; }

/* ---- data -------------------------------------------------------------------------------------- */

/* Element i of rank r: small integers and halves, exact in every dtype and in every sum of up to
 * 8 ranks (|sum| < 256 for BF16's 8-bit mantissa). */
static float value(int r, size_t i, int seed)
{
    return (float)((int)((i * 7 + (size_t)seed * 3) % 13) - 6) * (float)(r + 1) * 0.5f +
           (float)((r + seed) % 3);
}

static size_t esize(vg_dtype t) { return vg_dtype_size(t); }

static void store(void *h, vg_dtype t, size_t i, float v)
{
    if (t == VG_DTYPE_F32) ((float *)h)[i] = v;
    else if (t == VG_DTYPE_F16) ((uint16_t *)h)[i] = vg_f32_to_f16(v);
    else ((uint16_t *)h)[i] = vg_f32_to_bf16(v);
}

static float load(const void *h, vg_dtype t, size_t i)
{
    if (t == VG_DTYPE_F32) return ((const float *)h)[i];
    if (t == VG_DTYPE_F16) return vg_f16_to_f32(((const uint16_t *)h)[i]);
    return vg_bf16_to_f32(((const uint16_t *)h)[i]);
}

/* Fill a device buffer with rank r's data (synchronously). */
static int upload(rank_ctx *c, void *d, vg_dtype t, size_t count, int seed)
{
    void *h = malloc(count * esize(t) + 1);
    CK(h, "out of host memory");
    for (size_t i = 0; i < count; i++) store(h, t, i, value(c->rank, i, seed));
    vg_status st = vg_mem_copy_h2d(c->s, d, h, count * esize(t));
    if (st == VG_OK) st = vg_stream_sync(c->s);
    free(h);
    CKV(st);
    return 0;
}

/* Check a device buffer holds the sum over ranks of value(r, i, seed), times `scale`. */
static int check_sum(rank_ctx *c, const void *d, vg_dtype t, size_t count, int seed, float scale)
{
    void *h = malloc(count * esize(t) + 1);
    CK(h, "out of host memory");
    vg_status st = vg_mem_copy_d2h(c->s, h, d, count * esize(t));
    if (st == VG_OK) st = vg_stream_sync(c->s);
    if (st != VG_OK) free(h);
    CKV(st);
    size_t bad = 0, first = 0;
    float got = 0, want = 0;
    for (size_t i = 0; i < count; i++) {
        float w = 0;
        for (int r = 0; r < c->nranks; r++) w += scale * value(r, i, seed);
        float g = load(h, t, i);
        if (g != w && !bad++) first = i, got = g, want = w;
    }
    free(h);
    CK(!bad, "rank %d: %s all-reduce of %zu: %zu wrong, first [%zu] = %g, want %g", c->rank,
       vg_dtype_name(t), count, bad, first, got, want);
    return 0;
}

/* ---- all-reduce and all-gather ------------------------------------------------------------------ */

typedef struct sizes {
    size_t count; /* elements per rank */
} sizes;

static int rank_reduce_gather(rank_ctx *c, void *arg)
{
    size_t count = ((const sizes *)arg)->count;
    vg_comm *comm = NULL;
    CKV(vg_comm_create(c->rt, &c->id, c->nranks, c->rank, &comm));
    CK(vg_comm_rank(comm) == c->rank && vg_comm_size(comm) == c->nranks, "rank/size");
    const vg_dtype dts[] = {VG_DTYPE_F32, VG_DTYPE_F16, VG_DTYPE_BF16};
    void *a = NULL, *b = NULL;
    CKV(vg_mem_alloc(c->rt, count * 8 * (size_t)c->nranks, &a)); /* room for I64 */
    CKV(vg_mem_alloc(c->rt, count * 8 * (size_t)c->nranks, &b));
    for (int k = 0; k < 3; k++) {
        vg_dtype t = dts[k];
        /* out of place: a stays rank r's */
        if (upload(c, a, t, count, k)) return 1;
        CKV(vg_comm_all_reduce(comm, c->s, t, a, b, (int64_t)count));
        if (check_sum(c, b, t, count, k, 1.0f)) return 1;
        /* in place */
        CKV(vg_comm_all_reduce(comm, c->s, t, a, a, (int64_t)count));
        if (check_sum(c, a, t, count, k, 1.0f)) return 1;
    }
    /* all-gather of bytes of every dtype's size: rank-major blocks */
    const vg_dtype gts[] = {VG_DTYPE_U8, VG_DTYPE_BF16, VG_DTYPE_I32, VG_DTYPE_I64};
    for (int k = 0; k < 4; k++) {
        size_t es = vg_dtype_size(gts[k]), bytes = count * es, total = bytes * (size_t)c->nranks;
        unsigned char *h = malloc(total);
        CK(h, "out of host memory");
        for (size_t j = 0; j < bytes; j++) h[j] = (unsigned char)(c->rank * 37 + j * 11 + k);
        vg_status st = vg_mem_copy_h2d(c->s, a, h, bytes);
        if (st == VG_OK) st = vg_comm_all_gather(comm, c->s, gts[k], a, b, (int64_t)count);
        if (st == VG_OK) st = vg_mem_copy_d2h(c->s, h, b, total);
        if (st == VG_OK) st = vg_stream_sync(c->s);
        if (st != VG_OK) free(h);
        CKV(st);
        size_t bad = 0;
        for (int r = 0; r < c->nranks; r++)
            for (size_t j = 0; j < bytes; j++)
                bad += h[(size_t)r * bytes + j] != (unsigned char)(r * 37 + j * 11 + k);
        free(h);
        CK(!bad, "rank %d: all-gather of %s: %zu bytes wrong", c->rank, vg_dtype_name(gts[k]), bad);
    }
    CKV(vg_mem_free(c->rt, a));
    CKV(vg_mem_free(c->rt, b));
    CKV(vg_comm_destroy(comm));
    return 0;
}

static const char *const k_env[] = {"VG_COMM_TIMEOUT_MS=20000", NULL};

static void test_two_ranks(void **state)
{
    (void)state;
    need_ranks(2);
    sizes sz = {1001};
    RUN_RANKS(2, rank_reduce_gather, &sz, k_env, NULL);
}

static void test_four_ranks(void **state)
{
    (void)state;
    need_ranks(4);
    sizes sz = {777};
    RUN_RANKS(4, rank_reduce_gather, &sz, k_env, NULL);
}

/* More than the stub's 256 KiB slot per rank, in every dtype: the collectives go in chunks (3
 * ranks, or 2 where only 2 devices are). */
static void test_chunked(void **state)
{
    (void)state;
    need_ranks(2);
    sizes sz = {3 * 65536 + 4321};
    RUN_RANKS(ranks_up_to(3), rank_reduce_gather, &sz, k_env, NULL);
}

/* One rank: every collective is a copy. */
static void test_one_rank(void **state)
{
    (void)state;
    sizes sz = {100};
    RUN_RANKS(1, rank_reduce_gather, &sz, k_env, NULL);
}

/* ---- captured collectives ----------------------------------------------------------------------- */

static int rank_captured(rank_ctx *c, void *arg)
{
    (void)arg;
    const size_t count = 70000; /* more than a stub slot: chunks inside the graph too */
    vg_comm *comm = NULL;
    CKV(vg_comm_create(c->rt, &c->id, c->nranks, c->rank, &comm));
    float *x = NULL, *y = NULL, *g = NULL;
    CKV(vg_mem_alloc(c->rt, count * 4, (void **)&x));
    CKV(vg_mem_alloc(c->rt, count * 4, (void **)&y));
    CKV(vg_mem_alloc(c->rt, count * 4 * (size_t)c->nranks, (void **)&g));
    CKV(vg_mem_set(c->s, y, 0, count * 4)); /* axpby's beta 0 still reads y: no NaN there */
    /* the step: y = 2x; y = sum over ranks (in place); g = every rank's y (all equal) */
    vg_graph *graph = NULL;
    vg_graph_exec *exec = NULL;
    CKV(vg_graph_capture_begin(c->s));
    CKV(vg_op_axpby(c->s, count, 2.0f, x, 0.0f, y));
    CKV(vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, y, y, (int64_t)count));
    CKV(vg_comm_all_gather(comm, c->s, VG_DTYPE_F32, y, g, (int64_t)count));
    CKV(vg_graph_capture_end(c->s, &graph));
    CKV(vg_graph_instantiate(graph, &exec));
    CKV(vg_graph_destroy(graph));
    for (int rep = 0; rep < 2; rep++) { /* new inputs each time */
        if (upload(c, x, VG_DTYPE_F32, count, 10 + rep)) return 1;
        CKV(vg_graph_exec_launch(exec, c->s));
        CKV(vg_stream_sync(c->s));
        if (check_sum(c, y, VG_DTYPE_F32, count, 10 + rep, 2.0f)) return 1;
        for (int r = 0; r < c->nranks; r++)
            if (check_sum(c, g + (size_t)r * count, VG_DTYPE_F32, count, 10 + rep, 2.0f)) return 1;
    }
    CKV(vg_graph_exec_destroy(exec));
    CKV(vg_mem_free(c->rt, x));
    CKV(vg_mem_free(c->rt, y));
    CKV(vg_mem_free(c->rt, g));
    CKV(vg_comm_destroy(comm));
    return 0;
}

static void test_captured(void **state)
{
    (void)state;
    need_ranks(2);
    if (!(g_caps & VG_CAP_COMM_CAPTURE)) {
        print_message("SKIP: backend '%s' cannot capture collectives\n", g_backend);
        skip();
    }
    RUN_RANKS(2, rank_captured, NULL, k_env, NULL);
}

/* A device without VG_CAP_COMM_CAPTURE: the collective is refused inside a capture, by name. */
static int rank_no_capture(rank_ctx *c, void *arg)
{
    (void)arg;
    vg_comm *comm = NULL;
    CKV(vg_comm_create(c->rt, &c->id, c->nranks, c->rank, &comm));
    CK(!(vg_runtime_caps(c->rt) & VG_CAP_COMM_CAPTURE), "VG_STUB_CAPS=nocommcapture ignored");
    float *x = NULL;
    CKV(vg_mem_alloc(c->rt, 64, (void **)&x));
    CKV(vg_graph_capture_begin(c->s));
    vg_status st = vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, x, x, 16);
    CK(st == VG_ERR_UNSUPPORTED && strstr(vg_last_error(), "vg_comm_all_reduce") &&
           strstr(vg_last_error(), "cannot capture collectives"),
       "all_reduce in a capture: %s: %s", vg_status_name(st), vg_last_error());
    st = vg_comm_all_gather(comm, c->s, VG_DTYPE_F32, x, x, 8);
    CK(st == VG_ERR_UNSUPPORTED && strstr(vg_last_error(), "vg_comm_all_gather"),
       "all_gather in a capture: %s: %s", vg_status_name(st), vg_last_error());
    vg_graph *g = NULL;
    CKV(vg_graph_capture_end(c->s, &g));
    CKV(vg_graph_destroy(g));
    /* refused, not broken: outside the capture it works */
    CKV(vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, x, x, 16));
    CKV(vg_stream_sync(c->s));
    CKV(vg_mem_free(c->rt, x));
    CKV(vg_comm_destroy(comm));
    return 0;
}

static void test_capture_refused(void **state)
{
    (void)state;
    if (!g_stub) skip(); /* a knob of the stub's makes the device lack the capability */
    static const char *const env[] = {"VG_COMM_TIMEOUT_MS=20000", "VG_STUB_CAPS=nocommcapture",
                                      NULL};
    RUN_RANKS(2, rank_no_capture, NULL, env, NULL);
}

/* ---- validation ----------------------------------------------------------------------------------- */

#define CKF(expr, want, needle)                                                              \
    do {                                                                                     \
        vg_error_clear();                                                                    \
        vg_status st_ = (expr);                                                              \
        CK(st_ == (want) && strstr(vg_last_error(), (needle)),                               \
           "%s -> %s: '%s' (wanted %s mentioning '%s')", #expr, vg_status_name(st_),         \
           vg_last_error(), vg_status_name(want), (needle));                                 \
    } while (0)

static int check_ids(rank_ctx *c)
{
    vg_comm_id id, back;
    CKF(vg_comm_id_make(NULL, &id), VG_ERR_INVALID_ARG, "runtime is NULL");
    CKF(vg_comm_id_make(c->rt, NULL), VG_ERR_INVALID_ARG, "out is NULL");
    char hex[HEX_LEN + 8];
    CKF(vg_comm_id_to_hex(&c->id, hex, HEX_LEN), VG_ERR_INVALID_ARG, "out_len");
    CKF(vg_comm_id_to_hex(NULL, hex, sizeof hex), VG_ERR_INVALID_ARG, "id is NULL");
    CKV(vg_comm_id_to_hex(&c->id, hex, sizeof hex));
    CK(strlen(hex) == HEX_LEN, "hex length %zu", strlen(hex));
    CKV(vg_comm_id_from_hex(hex, &back));
    CK(memcmp(&back, &c->id, sizeof back) == 0, "hex round trip");
    /* upper case is hex too */
    char up[HEX_LEN + 1];
    for (size_t i = 0; i <= HEX_LEN; i++) up[i] = (char)(hex[i] >= 'a' && hex[i] <= 'f' ? hex[i] - 32 : hex[i]);
    CKV(vg_comm_id_from_hex(up, &back));
    CK(memcmp(&back, &c->id, sizeof back) == 0, "upper-case hex");
    CKF(vg_comm_id_from_hex("abc", &back), VG_ERR_INVALID_ARG, "3 characters long");
    CKF(vg_comm_id_from_hex(NULL, &back), VG_ERR_INVALID_ARG, "hex is NULL");
    char bad[HEX_LEN + 2];
    memcpy(bad, hex, HEX_LEN + 1);
    bad[41] = 'g';
    CKF(vg_comm_id_from_hex(bad, &back), VG_ERR_INVALID_ARG, "character 41 ('g')");
    memcpy(bad, hex, HEX_LEN);
    bad[HEX_LEN] = '0', bad[HEX_LEN + 1] = '\0';
    CKF(vg_comm_id_from_hex(bad, &back), VG_ERR_INVALID_ARG, "more than");
    /* a backend name without its NUL: 16 bytes of 'a' */
    memcpy(bad, hex, HEX_LEN + 1);
    memset(bad, '6', 32);
    CKF(vg_comm_id_from_hex(bad, &back), VG_ERR_INVALID_ARG, "not NUL-terminated");
    return 0;
}

static int check_create_args(rank_ctx *c)
{
    vg_comm *comm = (vg_comm *)&comm; /* must come back NULL */
    CKF(vg_comm_create(c->rt, &c->id, 0, 0, &comm), VG_ERR_INVALID_ARG, "nranks 0 < 1");
    CK(comm == NULL, "out not cleared");
    CKF(vg_comm_create(c->rt, &c->id, 2, 2, &comm), VG_ERR_INVALID_ARG, "rank 2 is not in [0, 2)");
    CKF(vg_comm_create(c->rt, &c->id, 2, -1, &comm), VG_ERR_INVALID_ARG, "rank -1");
    CKF(vg_comm_create(NULL, &c->id, 2, 0, &comm), VG_ERR_INVALID_ARG, "runtime is NULL");
    CKF(vg_comm_create(c->rt, NULL, 2, 0, &comm), VG_ERR_INVALID_ARG, "id is NULL");
    CKF(vg_comm_create(c->rt, &c->id, 2, 0, NULL), VG_ERR_INVALID_ARG, "out is NULL");
    vg_comm_id other = c->id;
    snprintf(other.backend, sizeof other.backend, "%s", g_stub ? "cuda" : "kunlun_stub");
    CKF(vg_comm_create(c->rt, &other, 2, 0, &comm), VG_ERR_INVALID_ARG, "made by backend");
    memset(other.backend, 'x', sizeof other.backend);
    CKF(vg_comm_create(c->rt, &other, 2, 0, &comm), VG_ERR_INVALID_ARG, "not NUL-terminated");
    /* the timeout is parsed strictly, before anything waits */
    const char *bad_timeouts[] = {"2s", "", "0", "-5", " 5", "99999999999", "1e3"};
    for (size_t i = 0; i < sizeof bad_timeouts / sizeof *bad_timeouts; i++) {
        setenv("VG_COMM_TIMEOUT_MS", bad_timeouts[i], 1);
        CKF(vg_comm_create(c->rt, &c->id, 2, c->rank, &comm), VG_ERR_INVALID_ARG,
            "VG_COMM_TIMEOUT_MS");
    }
    setenv("VG_COMM_TIMEOUT_MS", "20000", 1);
    if (g_stub) { /* the stub checks the bytes of its ids */
        other = c->id;
        other.bytes[0] ^= 0xff;
        CKF(vg_comm_create(c->rt, &other, 2, 0, &comm), VG_ERR_INVALID_ARG,
            "not one comm_id_make made");
        other = c->id;
        memcpy(other.bytes + 8, "/../../etc/x", 13);
        CKF(vg_comm_create(c->rt, &other, 2, 0, &comm), VG_ERR_INVALID_ARG,
            "not one comm_id_make made");
    }
    /* refused while this thread captures (and the capture is invalidated) */
    CKV(vg_graph_capture_begin(c->s));
    CKF(vg_comm_create(c->rt, &c->id, 2, c->rank, &comm), VG_ERR_CAPTURE, "vg_comm_create");
    vg_graph *g = NULL;
    CKF(vg_graph_capture_end(c->s, &g), VG_ERR_CAPTURE, "vg_comm_create");
    return 0;
}

static int check_collective_args(rank_ctx *c, vg_comm *comm)
{
    float *x = NULL;
    CKV(vg_mem_alloc(c->rt, 256, (void **)&x));
    vg_runtime *rt2 = NULL;
    vg_stream *s2 = NULL;
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.device = g_devices >= c->nranks ? c->rank : -1;
    CKV(vg_runtime_open(&o, &rt2));
    CKV(vg_stream_create(rt2, &s2));
    const char *ar = "vg_comm_all_reduce", *ag = "vg_comm_all_gather";
    CKF(vg_comm_all_reduce(NULL, c->s, VG_DTYPE_F32, x, x, 4), VG_ERR_INVALID_ARG, "communicator is NULL");
    CKF(vg_comm_all_reduce(comm, NULL, VG_DTYPE_F32, x, x, 4), VG_ERR_INVALID_ARG, "stream is NULL");
    CKF(vg_comm_all_reduce(comm, s2, VG_DTYPE_F32, x, x, 4), VG_ERR_INVALID_ARG, "another runtime");
    CKF(vg_comm_all_gather(comm, s2, VG_DTYPE_F32, x, x, 4), VG_ERR_INVALID_ARG, "another runtime");
    CKF(vg_comm_all_reduce(comm, c->s, VG_DTYPE_I32, x, x, 4), VG_ERR_INVALID_ARG, "dtype I32 is not allowed");
    CKF(vg_comm_all_reduce(comm, c->s, (vg_dtype)99, x, x, 4), VG_ERR_INVALID_ARG, "dtype 99 is not a dtype");
    CKF(vg_comm_all_gather(comm, c->s, (vg_dtype)-1, x, x, 4), VG_ERR_INVALID_ARG, "is not a dtype");
    CKF(vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, x, x, -1), VG_ERR_INVALID_ARG, "count -1 < 0");
    CKF(vg_comm_all_gather(comm, c->s, VG_DTYPE_U8, x, x, -7), VG_ERR_INVALID_ARG, "count -7 < 0");
    CKF(vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, NULL, x, 4), VG_ERR_INVALID_ARG, "send is NULL");
    CKF(vg_comm_all_gather(comm, c->s, VG_DTYPE_F32, x, NULL, 4), VG_ERR_INVALID_ARG, "recv is NULL");
    CKF(vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, (char *)x + 2, x, 4), VG_ERR_INVALID_ARG, "not aligned");
    CKF(vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, x, x, INT64_MAX / 2), VG_ERR_INVALID_ARG, "too large");
    CKF(vg_comm_all_reduce(comm, c->s, VG_DTYPE_F16, x, x, -1), VG_ERR_INVALID_ARG, ar);
    CKF(vg_comm_all_gather(comm, c->s, VG_DTYPE_F16, x, NULL, 1), VG_ERR_INVALID_ARG, ag);
    /* nothing to do: no buffers needed */
    CKV(vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, NULL, NULL, 0));
    CKV(vg_comm_all_gather(comm, c->s, VG_DTYPE_I64, NULL, NULL, 0));
    /* destroy is refused while this thread captures: the comm stays usable */
    CKV(vg_graph_capture_begin(c->s));
    CKF(vg_comm_destroy(comm), VG_ERR_CAPTURE, "vg_comm_destroy");
    vg_graph *g = NULL;
    CKF(vg_graph_capture_end(c->s, &g), VG_ERR_CAPTURE, "vg_comm_destroy");
    CKV(vg_stream_destroy(s2));
    CKV(vg_runtime_close(rt2));
    /* none of the refusals broke the communicator: a real all-reduce still adds up */
    if (upload(c, x, VG_DTYPE_F32, 64, 3)) return 1;
    CKV(vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, x, x, 64));
    if (check_sum(c, x, VG_DTYPE_F32, 64, 3, 1.0f)) return 1;
    CKV(vg_mem_free(c->rt, x));
    return 0;
}

static int rank_validation(rank_ctx *c, void *arg)
{
    (void)arg;
    if (check_ids(c) || check_create_args(c)) return 1;
    vg_comm *comm = NULL;
    CKV(vg_comm_create(c->rt, &c->id, c->nranks, c->rank, &comm));
    CK(vg_comm_rank(NULL) == -1 && vg_comm_size(NULL) == 0, "rank/size of NULL");
    int rc = check_collective_args(c, comm);
    CKV(vg_comm_destroy(comm));
    CKV(vg_comm_destroy(NULL));
    return rc;
}

static void test_validation(void **state)
{
    (void)state;
    need_ranks(2);
    RUN_RANKS(2, rank_validation, NULL, k_env, NULL);
}

/* ---- failures --------------------------------------------------------------------------------- */

#define TIMEOUT_MS 2000
#define DEAD_EXIT 42 /* what a rank that dies on purpose exits with */
static const char *const k_env_short[] = {"VG_COMM_TIMEOUT_MS=2000", NULL};

/* The calls after a failure: VG_ERR_STATE, naming the earlier failure. */
static int check_broken(rank_ctx *c, vg_comm *comm, float *x)
{
    CKF(vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, x, x, 4), VG_ERR_STATE, "unusable");
    CKF(vg_comm_all_gather(comm, c->s, VG_DTYPE_F32, x, x, 1), VG_ERR_STATE, "unusable");
    return 0;
}

/* The failed call took less than the timeout plus slack (`late`: at least the timeout). */
static int check_elapsed(double t0, int late)
{
    double ms = rank_watchdog_now_ms() - t0;
    CK(ms < TIMEOUT_MS + 1500, "the failure took %.0f ms (timeout %d ms)", ms, TIMEOUT_MS);
    CK(!late || ms >= TIMEOUT_MS - 50, "a timeout after %.0f ms, before the %d ms", ms, TIMEOUT_MS);
    CK(late || ms < TIMEOUT_MS, "a dead rank found after %.0f ms, not before the %d ms timeout", ms,
       TIMEOUT_MS);
    return 0;
}

typedef struct dead_case {
    int victim;
} dead_case;

/* Rank `victim` exits after joining, before the first collective (of 4 ranks, or as many as
 * there are devices). */
static int rank_dead(rank_ctx *c, void *arg)
{
    int victim = ((const dead_case *)arg)->victim;
    vg_comm *comm = NULL;
    CKV(vg_comm_create(c->rt, &c->id, c->nranks, c->rank, &comm));
    if (c->rank == victim) _exit(DEAD_EXIT);
    float *x = NULL;
    CKV(vg_mem_alloc(c->rt, 4096, (void **)&x));
    double t0 = rank_watchdog_now_ms();
    vg_status st = vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, x, x, 1000);
    if (st == VG_OK) st = vg_stream_sync(c->s);
    char needle[32];
    snprintf(needle, sizeof needle, "rank %d", victim);
    CK(st != VG_OK && strstr(vg_last_error(), needle), "rank %d: %s: '%s' does not name %s",
       c->rank, vg_status_name(st), vg_last_error(), needle);
    printf("rank %d: %s\n", c->rank, vg_last_error());
    if (check_elapsed(t0, 0) || check_broken(c, comm, x)) return 1;
    CKV(vg_comm_destroy(comm));
    CKV(vg_mem_free(c->rt, x));
    return 0;
}

static void test_dead_rank(void **state)
{
    (void)state;
    need_ranks(2);
    dead_case dc = {1};
    const int want[] = {0, DEAD_EXIT, 0, 0};
    RUN_RANKS(ranks_up_to(4), rank_dead, &dc, k_env_short, want);
}

static void test_dead_rank_two(void **state)
{
    (void)state;
    need_ranks(2);
    dead_case dc = {0};
    const int want[] = {DEAD_EXIT, 0};
    RUN_RANKS(2, rank_dead, &dc, k_env_short, want);
}

/* A graph holding one all-reduce of 1000 floats at *x (allocated here), captured, instantiated
 * into *exec, and replayed once on data of `seed`, its sum checked: the start of the cases whose
 * ranks fail between replays. */
static int replayed_all_reduce(rank_ctx *c, vg_comm *comm, float **x, vg_graph_exec **exec, int seed)
{
    CKV(vg_mem_alloc(c->rt, 4096, (void **)x));
    vg_graph *g = NULL;
    CKV(vg_graph_capture_begin(c->s));
    CKV(vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, *x, *x, 1000));
    CKV(vg_graph_capture_end(c->s, &g));
    CKV(vg_graph_instantiate(g, exec));
    CKV(vg_graph_destroy(g));
    if (upload(c, *x, VG_DTYPE_F32, 1000, seed)) return 1;
    CKV(vg_graph_exec_launch(*exec, c->s));
    CKV(vg_stream_sync(c->s));
    return check_sum(c, *x, VG_DTYPE_F32, 1000, seed, 1.0f);
}

/* A graph with a collective replays once; then rank 1 dies and rank 0's replay fails (at launch
 * or at the synchronisation after it), naming it: the failure is not lost inside the graph. */
static int rank_dead_in_replay(rank_ctx *c, void *arg)
{
    (void)arg;
    if (!(vg_runtime_caps(c->rt) & VG_CAP_COMM_CAPTURE)) return VG_TEST_SKIP;
    vg_comm *comm = NULL;
    CKV(vg_comm_create(c->rt, &c->id, c->nranks, c->rank, &comm));
    float *x = NULL;
    vg_graph_exec *exec = NULL;
    if (replayed_all_reduce(c, comm, &x, &exec, 5)) return 1;
    if (c->rank == 1) _exit(DEAD_EXIT);
    double t0 = rank_watchdog_now_ms();
    vg_status st = vg_graph_exec_launch(exec, c->s);
    if (st == VG_OK) st = vg_stream_sync(c->s);
    CK(st != VG_OK && strstr(vg_last_error(), "rank 1"), "replay: %s: '%s' does not name rank 1",
       vg_status_name(st), vg_last_error());
    if (check_elapsed(t0, 0)) return 1;
    printf("rank %d: %s\n", c->rank, vg_last_error());
    /* the stream is usable again once the failure is reported; the comm is not */
    CKV(vg_stream_sync(c->s));
    if (check_broken(c, comm, x)) return 1;
    CKV(vg_graph_exec_destroy(exec));
    CKV(vg_comm_destroy(comm));
    CKV(vg_mem_free(c->rt, x));
    return 0;
}

static void test_dead_rank_in_replay(void **state)
{
    (void)state;
    need_ranks(2);
    const int want[] = {0, DEAD_EXIT};
    RUN_RANKS(2, rank_dead_in_replay, NULL, k_env_short, want);
}

/* The communicator destroyed while a graph that captured its collectives is still alive (the
 * wrong order, which NCCL's teardown waits on until the graph goes): the destroy returns within
 * the timeout (done, or failing with a message that says which graph keeps it), and destroying
 * the graph afterwards works. With `die`, rank 1 dies after the first replay and rank 0's second
 * replay fails first, so the destroy is of an aborted communicator. */
static int rank_graph_outlives(rank_ctx *c, void *arg)
{
    int die = *(const int *)arg;
    if (!(vg_runtime_caps(c->rt) & VG_CAP_COMM_CAPTURE)) return VG_TEST_SKIP;
    vg_comm *comm = NULL;
    CKV(vg_comm_create(c->rt, &c->id, c->nranks, c->rank, &comm));
    float *x = NULL;
    vg_graph_exec *exec = NULL;
    if (replayed_all_reduce(c, comm, &x, &exec, 6)) return 1;
    if (die && c->rank == 1) _exit(DEAD_EXIT);
    if (die) {
        vg_status st = vg_graph_exec_launch(exec, c->s);
        if (st == VG_OK) st = vg_stream_sync(c->s);
        CK(st != VG_OK && strstr(vg_last_error(), "rank 1"), "replay: %s: '%s' does not name rank 1",
           vg_status_name(st), vg_last_error());
    }
    double t0 = rank_watchdog_now_ms();
    vg_status st = vg_comm_destroy(comm);
    CK(st == VG_OK || strstr(vg_last_error(), "graph"), "rank %d: destroy before the graph: %s: '%s'",
       c->rank, vg_status_name(st), vg_last_error());
    double ms = rank_watchdog_now_ms() - t0;
    CK(ms < TIMEOUT_MS + 1500, "rank %d: the destroy took %.0f ms (timeout %d ms)", c->rank, ms,
       TIMEOUT_MS);
    printf("rank %d: destroy before the graph: %s%s%s\n", c->rank, vg_status_name(st),
           st == VG_OK ? "" : ": ", st == VG_OK ? "" : vg_last_error());
    CKV(vg_graph_exec_destroy(exec));
    CKV(vg_stream_sync(c->s));
    CKV(vg_mem_free(c->rt, x));
    return 0;
}

static void test_graph_outlives_comm(void **state)
{
    (void)state;
    need_ranks(2);
    int die = 0;
    RUN_RANKS(2, rank_graph_outlives, &die, k_env_short, NULL);
    die = 1;
    const int want[] = {0, DEAD_EXIT};
    RUN_RANKS(2, rank_graph_outlives, &die, k_env_short, want);
}

/* Rank 1 stays alive but silent past the timeout: rank 0 times out naming it; when rank 1 comes
 * back, it learns at once that rank 0 gave up. */
static int rank_silent(rank_ctx *c, void *arg)
{
    (void)arg;
    vg_comm *comm = NULL;
    CKV(vg_comm_create(c->rt, &c->id, c->nranks, c->rank, &comm));
    float *x = NULL;
    CKV(vg_mem_alloc(c->rt, 4096, (void **)&x));
    if (c->rank == 1) {
        struct timespec ts = {0, 0};
        ts.tv_sec = TIMEOUT_MS / 1000 + 1;
        nanosleep(&ts, NULL);
    }
    double t0 = rank_watchdog_now_ms();
    vg_status st = vg_comm_all_reduce(comm, c->s, VG_DTYPE_F32, x, x, 1000);
    if (st == VG_OK) st = vg_stream_sync(c->s);
    const char *needle = c->rank == 0 ? "rank 1" : "rank 0";
    CK(st != VG_OK && strstr(vg_last_error(), needle), "rank %d: %s: '%s' does not name %s",
       c->rank, vg_status_name(st), vg_last_error(), needle);
    if (c->rank == 0) { /* a silent rank is found by the timeout alone */
        if (g_stub) CK(strstr(vg_last_error(), "timed out"), "%s", vg_last_error());
        if (check_elapsed(t0, 1)) return 1;
    } else if (check_elapsed(t0, 0)) {
        return 1;
    }
    printf("rank %d: %s\n", c->rank, vg_last_error());
    if (check_broken(c, comm, x)) return 1;
    CKV(vg_comm_destroy(comm));
    CKV(vg_mem_free(c->rt, x));
    return 0;
}

static void test_silent_rank(void **state)
{
    (void)state;
    need_ranks(2);
    RUN_RANKS(2, rank_silent, NULL, k_env_short, NULL);
}

/* Rank 1 never joins: rank 0's create fails within the timeout, naming it. */
static int rank_missing(rank_ctx *c, void *arg)
{
    (void)arg;
    if (c->rank == 1) return 0;
    vg_comm *comm = NULL;
    double t0 = rank_watchdog_now_ms();
    vg_status st = vg_comm_create(c->rt, &c->id, c->nranks, c->rank, &comm);
    CK(st != VG_OK && comm == NULL && strstr(vg_last_error(), "join"),
       "create without rank 1: %s: '%s'", vg_status_name(st), vg_last_error());
    if (g_stub) CK(strstr(vg_last_error(), "rank 1 (never joined)"), "%s", vg_last_error());
    if (check_elapsed(t0, 1)) return 1; /* a rank that never joins is found by the timeout alone */
    printf("rank %d: %s\n", c->rank, vg_last_error());
    return 0;
}

static void test_missing_rank(void **state)
{
    (void)state;
    need_ranks(2);
    RUN_RANKS(2, rank_missing, NULL, k_env_short, NULL);
}

/* ---- the test's own watchdogs ------------------------------------------------------------------ */

/* Rank 1 hangs (masked: with SIGALRM ignored, so that its watchdog cannot fire). */
static int rank_hang(rank_ctx *c, void *arg)
{
    if (c->rank == 0) return 0;
    if (*(const int *)arg) signal(SIGALRM, SIG_IGN); /* process-wide: the runtime has threads */
    for (;;) pause();
}

/* A rank that hangs ends by its watchdog; one that cannot is killed by the parent; both soon. */
static void test_watchdog(void **state)
{
    (void)state;
    need_ranks(2);
    const char *old = getenv("VG_TEST_COMM_WATCHDOG_S");
    char saved[32] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("VG_TEST_COMM_WATCHDOG_S", "1", 1);
    double t0 = rank_watchdog_now_ms();
    int masked = 0;
    const int want_watchdog[] = {0, RANK_WATCHDOG_EXIT}, want_killed[] = {0, 1000 + SIGKILL};
    int rc = run_ranks("test_watchdog (a rank hangs on purpose)", 2, rank_hang, &masked, NULL,
                       want_watchdog);
    masked = 1;
    int rc2 = run_ranks("test_watchdog (a rank hangs on purpose, its watchdog ignored)", 2,
                        rank_hang, &masked, NULL, want_killed);
    double ms = rank_watchdog_now_ms() - t0;
    if (old) setenv("VG_TEST_COMM_WATCHDOG_S", saved, 1);
    else unsetenv("VG_TEST_COMM_WATCHDOG_S");
    assert_int_equal(rc, 0);
    assert_int_equal(rc2, 0);
    assert_true(ms < 15000);
}

/* ---- a device without communicators --------------------------------------------------------------- */

static int rank_unsupported(rank_ctx *c, void *arg)
{
    (void)arg;
    vg_comm_id id;
    vg_comm *comm = NULL;
    CKF(vg_comm_id_make(c->rt, &id), VG_ERR_UNSUPPORTED, "has no communicators");
    if (g_stub) CK(strstr(vg_last_error(), "nocomm"), "the stub's reason: %s", vg_last_error());
    printf("%s\n", vg_last_error());
    memset(&id, 0, sizeof id);
    snprintf(id.backend, sizeof id.backend, "%.15s", g_backend);
    CKF(vg_comm_create(c->rt, &id, 1, 0, &comm), VG_ERR_UNSUPPORTED, "has no communicators");
    return 0;
}

/* Open a runtime in a child: the backend's name, caps and device count, or VG_TEST_SKIP. */
static int probe(void)
{
    int fd[2];
    if (pipe(fd) != 0) return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        g_case = "probe";
        rank_watchdog_arm(g_case, 0, watchdog_s());
        vg_runtime *rt = NULL;
        vg_status st = vg_runtime_open(NULL, &rt);
        if (st != VG_OK) {
            fprintf(stderr, "no runtime: %s\n", vg_last_error());
            _exit(st == VG_ERR_NO_DEVICE ? VG_TEST_SKIP : 1);
        }
        char name[64] = {0};
        snprintf(name, sizeof name, "%s", vg_runtime_backend_name(rt));
        uint64_t caps = vg_runtime_caps(rt);
        vg_probe_report *rep = calloc(1, sizeof *rep);
        int32_t n = 1;
        if (rep) {
            rep->struct_size = sizeof *rep;
            if (vg_backend_probe(vg_runtime_plugin_path(rt), rep) == VG_OK) n = rep->device_count;
            free(rep);
        }
        int bad = ipc_write_all(fd[1], name, sizeof name) || ipc_write_all(fd[1], &caps, sizeof caps) ||
                  ipc_write_all(fd[1], &n, sizeof n);
        vg_runtime_close(rt);
        _exit(bad);
    }
    close(fd[1]);
    int32_t n = 0;
    int bad = pid < 0 || ipc_read_all(fd[0], g_backend, sizeof g_backend) ||
              ipc_read_all(fd[0], &g_caps, sizeof g_caps) || ipc_read_all(fd[0], &n, sizeof n);
    close(fd[0]);
    int rc = pid < 0 ? 1 : ipc_wait(pid);
    g_backend[sizeof g_backend - 1] = '\0';
    g_devices = n;
    return rc ? rc : bad;
}

int main(void)
{
    /* each case's line must be out before a hang, also into ctest's pipe */
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = probe();
    const char *req = getenv("VG_REQUIRE_DEVICE");
    if (rc == VG_TEST_SKIP && !(req && strcmp(req, "1") == 0)) {
        printf("SKIP: no device\n");
        return VG_TEST_SKIP;
    }
    if (rc) return 1;
    g_stub = strcmp(g_backend, "kunlun_stub") == 0;
    printf("communicator tests on backend '%s' (%d device(s), caps comm %d, comm_capture %d)\n",
           g_backend, g_devices, !!(g_caps & VG_CAP_COMM), !!(g_caps & VG_CAP_COMM_CAPTURE));
    if (!(g_caps & VG_CAP_COMM)) {
        int r = run_ranks("unsupported", 1, rank_unsupported, NULL, NULL, NULL);
        if (r != 0) return 1;
        /* a GPU backend without its collective library (NCCL, RCCL) ran nothing multi-rank */
        if (strcmp(g_backend, "cuda") == 0 || strcmp(g_backend, "hip") == 0) {
            printf("SKIP: backend '%s' has no communicators (the reason is printed above)\n",
                   g_backend);
            return VG_TEST_SKIP;
        }
        printf("PASS: no communicators, as expected\n");
        return 0;
    }
    if (!g_stub && g_devices < 2) {
        printf("SKIP: backend '%s' has %d device(s); the communicator tests need 2\n", g_backend,
               g_devices);
        return VG_TEST_SKIP;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_two_ranks),
        cmocka_unit_test(test_four_ranks),
        cmocka_unit_test(test_chunked),
        cmocka_unit_test(test_captured),
        cmocka_unit_test(test_capture_refused),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_dead_rank),
        cmocka_unit_test(test_dead_rank_two),
        cmocka_unit_test(test_dead_rank_in_replay),
        cmocka_unit_test(test_graph_outlives_comm),
        cmocka_unit_test(test_silent_rank),
        cmocka_unit_test(test_missing_rank),
        cmocka_unit_test(test_watchdog),
    };
    return cmocka_run_group_tests_name("comm", tests, NULL, NULL) ? 1 : 0;
}
