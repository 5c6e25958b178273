/* SPDX-License-Identifier: Apache-2.0 */
/* The measured choice of a paged decode call's kernel (decode_tune.cuh): vg's own kernels in their
 * forms, and the kernel library's candidates where it was built (VG_HAVE_KERNEL_LIBS) and takes the
 * call. Each shape is timed once, outside capture, on the call's own operands, and remembered per
 * device for the process. */
#include <math.h>
#include <mutex>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_tune.cuh"
#ifdef VG_HAVE_KERNEL_LIBS
#include "decode_lib.cuh"
#endif

/* What a decision depends on, beside the lengths of the first real call that measured it. */
struct dtune_key {
    int device, rows, num_seqs, heads, kv_heads, head_dim, block_size, max_blocks;
    int dtype;
    int rope; /* rotary_paged_attention: vg's kernel does rotary_kv_store's work, the library a launch more
               * (2: and scales the rows by norm_x, op table version 10) */
    int lib;  /* the library takes the call (its strides and alignment too): a pick of its own is valid */
};
struct dtune_choice {
    dtune_key key;
    int pick;
};
#define DTUNE_CHOICES 256
static std::mutex dtune_lock;
static dtune_choice dtune_choices[DTUNE_CHOICES];
static int dtune_nchoices;

/* VG_CUDA_DECODE, read once: DTUNE_MEASURE (unset, or any value not below), a pick of vg's (vg: the
 * split form; vg_whole, vg_cluster2/4/8), or the library (flashinfer, flashinfer_deep,
 * flashinfer_whole, flashinfer_deep_whole: DTUNE_LIB + deep + 2·whole) where it takes the call. */
enum { DTUNE_MEASURE = -1, DTUNE_LIB = -8 };
static int dtune_forced(void)
{
    static const int forced = [] {
        static const char *const own[VGC_DECODE_OWN_FORMS] = {"vg_whole", "vg_cluster2", "vg_cluster4", "vg_cluster8"};
        static const char *const lib[4] = {"flashinfer", "flashinfer_deep", "flashinfer_whole",
                                           "flashinfer_deep_whole"};
        const char *v = getenv("VG_CUDA_DECODE");
        if (v && !strcmp(v, "vg")) return 0;
        for (int k = 0; v && k < VGC_DECODE_OWN_FORMS; k++)
            if (!strcmp(v, own[k])) return VGC_DECODE_OWN_WHOLE + k;
        for (int k = 0; v && k < 4; k++)
            if (!strcmp(v, lib[k])) return DTUNE_LIB + k;
        return (int)DTUNE_MEASURE;
    }();
    return forced;
}

vg_status vgc_decode_run_pick(vg_bk_stream *s, const vgc_decode_call *c, int pick, vgc_decode_own_fn own)
{
    if (pick >= VGC_DECODE_OWN_WHOLE) {
        vgc_decode_call whole = *c;
        whole.whole = 1 << (pick - VGC_DECODE_OWN_WHOLE);
        return own(s, &whole);
    }
#ifdef VG_HAVE_KERNEL_LIBS
    if (pick) return vgc_decode_lib_run(s, c, pick);
#endif
    return own(s, c);
}

/* How much faster than the library's best vg's kernel must time to be taken (and its whole form
 * than its split one, and in clusters than without). */
#define DECODE_OWN_MARGIN 0.95f

/* Milliseconds of one replay of a graph of DTUNE_REPS rounds, each clearing `flush` (bytes; evicts
 * the cache from L2) and then, with `pick` >= 0, making the call as `pick` says: the best of
 * three replays after a warm-up one; INFINITY on any error. */
#define DTUNE_REPS 20
static float dtune_graph_ms(vg_bk_stream *s, const vgc_decode_call *c, int pick, vgc_decode_own_fn own, void *flush,
                            size_t bytes, cudaEvent_t e0, cudaEvent_t e1)
{
    cudaGraph_t g = nullptr;
    cudaGraphExec_t x = nullptr;
    if (cudaStreamBeginCapture(s->s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return INFINITY;
    vg_status st = VG_OK;
    for (int i = 0; i < DTUNE_REPS && st == VG_OK; i++) {
        if (cudaMemsetAsync(flush, i, bytes, s->s) != cudaSuccess) st = VG_ERR_DEVICE;
        if (st == VG_OK && pick >= 0) st = vgc_decode_run_pick(s, c, pick, own);
    }
    cudaError_t e = cudaStreamEndCapture(s->s, &g);
    if (st == VG_OK && e == cudaSuccess) e = cudaGraphInstantiate(&x, g, 0);
    if (g) cudaGraphDestroy(g);
    float best = INFINITY;
    for (int rep = 0; rep < 4 && st == VG_OK && e == cudaSuccess; rep++) {
        float ms = INFINITY;
        if (cudaEventRecord(e0, s->s) != cudaSuccess || cudaGraphLaunch(x, s->s) != cudaSuccess ||
            cudaEventRecord(e1, s->s) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess ||
            cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess) {
            best = INFINITY;
            break;
        }
        if (rep > 0 && ms < best) best = ms; /* rep 0 warms up */
    }
    if (x) cudaGraphExecDestroy(x);
    (void)cudaGetLastError();
    return best;
}

/* Microseconds per call of one candidate as a step runs it: in a replayed graph (timed eagerly,
 * the library's three launches would pay three launch latencies that a graph does not), each call
 * after a clearing of L2 (a step's layer finds its cache in memory, and repeated calls would find
 * it in L2: measured on an H100, that chose vg's kernel for Qwen3-0.6B at batch 16, 15.3 against
 * 15.7 us, and the step ran 10% slower), which also keeps vg's kernels, programmatic launches,
 * from overlapping their own previous call as no step lets them; minus the clearing alone
 * (base_ms); INFINITY on any error. */
static float dtune_time(vg_bk_stream *s, const vgc_decode_call *c, int pick, vgc_decode_own_fn own, void *flush,
                        size_t bytes, float base_ms, cudaEvent_t e0, cudaEvent_t e1)
{
    if (vgc_decode_run_pick(s, c, pick, own) != VG_OK) return INFINITY; /* first-use attributes, outside capture */
    const float ms = dtune_graph_ms(s, c, pick, own, flush, bytes, e0, e1);
    return ms < INFINITY ? fmaxf(ms - base_ms, 0.0f) * 1000.0f / DTUNE_REPS : INFINITY;
}

/* The library's candidates for a call it takes (none where it was not built), and the pick a
 * forced library value (DTUNE_LIB + deep + 2·whole) means for it. */
#define DTUNE_LIB_MAX 8
#ifdef VG_HAVE_KERNEL_LIBS
static int dtune_lib_takes(const vg_bk_stream *s, const vgc_decode_call *c) { return vgc_decode_lib_takes(s, c); }
static int dtune_lib_candidates(const vg_bk_stream *s, const vgc_decode_call *c, int *picks)
{
    return vgc_decode_lib_candidates(s, c, picks, DTUNE_LIB_MAX);
}
static int dtune_lib_forced(const vg_bk_stream *s, const vgc_decode_call *c, int f)
{
    return vgc_decode_lib_forced(s, c, (f - DTUNE_LIB) & 1, (f - DTUNE_LIB) >> 1 & 1);
}
#else /* built without the library: it takes no call */
static int dtune_lib_takes(const vg_bk_stream *, const vgc_decode_call *) { return 0; }
static int dtune_lib_candidates(const vg_bk_stream *, const vgc_decode_call *, int *) { return 0; }
static int dtune_lib_forced(const vg_bk_stream *, const vgc_decode_call *, int) { return 0; }
#endif

int vgc_decode_pick(vg_bk_stream *s, const vgc_decode_call *c, vgc_decode_own_fn own)
{
    const int forced = dtune_forced();
    if (forced >= 0) return forced;
    const int lib_takes = dtune_lib_takes(s, c); /* per call: it checks this call's strides and alignment */
    if (forced != DTUNE_MEASURE) return lib_takes ? dtune_lib_forced(s, c, forced) : 0; /* else vg's split form */
    const dtune_key key = {s->dev->index, (int)c->rows, c->num_seqs, c->heads, c->kv_heads, c->head_dim,
                           c->block_size, c->max_blocks, (int)c->t,
                           c->rope ? 1 + (c->rope->norm_x != nullptr) : 0, lib_takes};
    {
        std::lock_guard<std::mutex> g(dtune_lock);
        for (int i = 0; i < dtune_nchoices; i++)
            if (!memcmp(&dtune_choices[i].key, &key, sizeof key)) return dtune_choices[i].pick;
        if (dtune_nchoices == DTUNE_CHOICES) return 0; /* the table is full: vg's kernel, unmeasured */
    }
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s->s, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) {
        (void)cudaGetLastError();
        return 0; /* nothing can run while capturing: vg's kernel, until measured */
    }
    /* an all-padding call (a runner's warm-up) measures nothing: decide on a real one */
    int32_t used = 0;
    if (cudaMemcpyAsync(&used, c->query_start + c->num_seqs, sizeof used, cudaMemcpyDeviceToHost, s->s) !=
            cudaSuccess ||
        cudaStreamSynchronize(s->s) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (used <= 0) return 0;
    cudaEvent_t e0, e1;
    if (cudaEventCreate(&e0) != cudaSuccess) return (void)cudaGetLastError(), 0;
    if (cudaEventCreate(&e1) != cudaSuccess) return (void)cudaGetLastError(), cudaEventDestroy(e0), 0;
    /* twice L2 cleared before each timed call (see dtune_time) */
    const size_t flush_bytes = 2 * (size_t)(s->dev->prop.l2CacheSize > 0 ? s->dev->prop.l2CacheSize : 64 << 20);
    /* with rope every candidate but vg's tensor-core kernel rotates q and k in place, again at
     * every timed call: qkv is kept here and put back before the call itself runs (the caches' new
     * entries are rewritten by it) */
    const vg_rotary_paged_args *ra = c->rope;
    const size_t qkv_bytes =
        ra ? ((size_t)(ra->rows - 1) * (size_t)ra->ld + (size_t)(ra->heads + 2 * ra->kv_heads) * (size_t)ra->head_dim) *
                 (ra->dtype == VG_DTYPE_F32 ? 4 : 2)
           : 0;
    void *flush = nullptr, *kept = nullptr;
    if (cudaMalloc(&flush, flush_bytes + qkv_bytes) != cudaSuccess ||
        (ra && cudaMemcpyAsync((char *)flush + flush_bytes, ra->qkv, qkv_bytes, cudaMemcpyDeviceToDevice, s->s) !=
                   cudaSuccess)) {
        (void)cudaGetLastError();
        if (flush) cudaFree(flush);
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        return 0; /* vg's kernel, unmeasured */
    }
    if (ra) kept = (char *)flush + flush_bytes;
    const float base_ms = dtune_graph_ms(s, c, -1, own, flush, flush_bytes, e0, e1);
    /* vg's kernel: split, whole and whole in clusters of 2, 4 and 8; then the library's */
    enum { OWN = 1 + VGC_DECODE_OWN_FORMS /* candidates of vg's */, NCAND = OWN + DTUNE_LIB_MAX };
    int cand[NCAND] = {0, VGC_DECODE_OWN_WHOLE, VGC_DECODE_OWN_WHOLE + 1, VGC_DECODE_OWN_WHOLE + 2,
                       VGC_DECODE_OWN_WHOLE + 3};
    const int ncand = OWN + (lib_takes ? dtune_lib_candidates(s, c, cand + OWN) : 0);
    /* where the tensor-core kernel declines the call, vg's whole form is the CUDA-core kernel
     * without splits, and clusters would time it again */
    const int cluster_max = vgc_decode_tc_takes(s, c) ? s->dev->decode_cluster_max : 1;
    float us[NCAND];
    int lib = -1, len = 0; /* the library's fastest candidate */
    char line[512];
    for (int i = 0; i < ncand; i++) {
        us[i] = INFINITY;
        /* clusters the device does not run would time the whole form again: left at inf */
        const bool no_cluster = i > 1 && i < OWN && (1 << (i - 1)) > cluster_max;
        if (base_ms < INFINITY && !no_cluster)
            us[i] = dtune_time(s, c, cand[i], own, flush, flush_bytes, base_ms, e0, e1);
        if (i >= OWN && (lib < 0 || us[i] < us[lib])) lib = i;
        static const char *const own_label[OWN] = {"vg ", " us, whole and clusters of 2/4/8 ", "/", "/", "/"};
        if (len >= (int)sizeof line) continue;
        if (i < OWN) {
            len += snprintf(line + len, sizeof line - len, "%s%.1f%s", own_label[i], us[i],
                            i == OWN - 1 ? " us" : "");
            continue;
        }
#ifdef VG_HAVE_KERNEL_LIBS
        char what[64];
        vgc_decode_lib_label(cand[i], what, sizeof what);
        len += snprintf(line + len, sizeof line - len, "%s%s, %s %.1f us", i == OWN ? "; " : "",
                        i == OWN ? vgc_decode_lib_name : "", what, us[i]);
#endif
    }
    if (kept && (cudaMemcpyAsync(ra->qkv, kept, qkv_bytes, cudaMemcpyDeviceToDevice, s->s) != cudaSuccess ||
                 cudaStreamSynchronize(s->s) != cudaSuccess)) {
        (void)cudaGetLastError();
        cudaFree(flush);
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        return -1; /* qkv may be left rotated: the call must fail, not run on it */
    }
    cudaFree(flush);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    (void)cudaGetLastError();
    /* vg's kernel only by a margin: in two near ties it won here and lost in the step (H100:
     * Qwen3-0.6B at 16 rows, 15.3 against 15.7 us, the step 10% slower; with the rotary inside
     * it, 23.6 against 24.4 us, the step 2% slower; docs/performance.md); its whole form over its
     * split one, and in clusters over without, by the same margin: a near tie is no reason to
     * switch */
    int whole = 1;
    for (int i = 2; i < OWN; i++)
        if (us[i] < DECODE_OWN_MARGIN * us[1] && us[i] < us[whole]) whole = i;
    const int own_pick = us[whole] < DECODE_OWN_MARGIN * us[0] ? whole : 0;
    const int pick =
        lib >= 0 && us[lib] < INFINITY && !(us[own_pick] < DECODE_OWN_MARGIN * us[lib]) ? cand[lib] : cand[own_pick];
    char took[64] = "vg";
    if (pick > VGC_DECODE_OWN_WHOLE)
        snprintf(took, sizeof took, "vg, whole in clusters of %d", 1 << (pick - VGC_DECODE_OWN_WHOLE));
    else if (pick == VGC_DECODE_OWN_WHOLE) snprintf(took, sizeof took, "vg, whole");
#ifdef VG_HAVE_KERNEL_LIBS
    else if (pick) snprintf(took, sizeof took, "%s", vgc_decode_lib_name);
#endif
    vgc_host->log(VG_LOG_DEBUG,
                  "cuda: paged_attention %s rows=%lld seqs=%d heads=%d/%d head_dim=%d block_size=%d reach=%d "
                  "(per call, in a graph): %s; takes %s",
                  c->t == VG_DTYPE_BF16 ? "BF16" : c->t == VG_DTYPE_F16 ? "F16" : "F32", (long long)c->rows,
                  c->num_seqs, c->heads, c->kv_heads, c->head_dim, c->block_size, c->max_blocks * c->block_size, line,
                  took);
    std::lock_guard<std::mutex> g(dtune_lock);
    if (dtune_nchoices < DTUNE_CHOICES) dtune_choices[dtune_nchoices++] = {key, pick};
    return pick;
}
