/* SPDX-License-Identifier: Apache-2.0 */
/* GEMM through cuBLASLt: row-major C = act(alpha·A·Bᵀ + bias) + residual.
 *
 * Row-major C[m,n] is column-major Cᵀ[n,m] = B·Aᵀ, so the call passes our B (stored [n,k]) as
 * cuBLASLt's transposed A and our A as its B. Bias, GELU(tanh) and the residual (as beta·C) are
 * fused into cuBLASLt's epilogue where its order of operations matches ours; anything else runs
 * in one extra elementwise kernel. Descriptors and the chosen algorithm are cached per shape,
 * per stream (a stream is used by one thread, so the cache needs no lock).
 *
 * Choosing the algorithm: cuBLASLt's first heuristic pick is often poor for the skinny shapes
 * of small batches (too few tiles to fill the GPU). When a plan is built on a stream that is not
 * capturing, up to VGC_GEMM_CANDIDATES of its picks are timed on the real operands, writing a
 * scratch output, each run with a cold L2 (a model streams every layer's weights from memory,
 * so timing with cached weights would favour the wrong algorithms), and the fastest is kept.
 * During capture nothing can run, so the heuristic's first pick is used; vg's runner runs a
 * key eagerly before capturing it so plans are tuned. VG_CUDA_GEMM_TUNE=0 turns tuning off;
 * VG_CUDA_GEMM_TUNE=2 also searches the configurations around the fastest (tune_wide).
 *
 * vg's own skinny kernel (gemm_skinny.cu, m <= 64) and, from 9 rows, its panel kernel
 * (gemm_panel.cu: the activations shared by a block's warps) are timed the same way beside
 * cuBLASLt's candidates, in a few split-K variants, and a plan uses one where it was faster by a
 * margin, or within a tie where that measured faster in a graph (tune_own); the log (debug) gives
 * the times and bandwidths. VG_CUDA_GEMM=cublaslt leaves them out;
 * VG_CUDA_GEMM=skinny (4 warps a block), skinny_wide (8 warps where m <= 8), skinny_cluster (its
 * split-K in a thread-block cluster, where the device runs them) or panel runs that kernel for
 * every call it can take (for testing it).
 *
 * A gated call (args.gate, op table version 6: C = silu(gate half) · up half) is one launch of
 * vg's skinny or panel kernel, which gate in their epilogue, or cuBLASLt then silu_mul in place; a
 * call with a norm of A (args.norm_w) is one launch of vg's kernels, which normalise A on load, or
 * rmsnorm into norm_out then cuBLASLt. A norm without a weight (args.norm_unit, version 9) with a
 * gate is cuBLASLt on A as it is, the rows' 1/rms applied by the silu_mul after it: no launch of
 * its own (vgc_gemm_norm_deferred). The tuner times cuBLASLt's candidates with those extra
 * launches, so the plan takes whichever is faster. */
#include <cublasLt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "gemm_skinny.cuh"

#define VGC_GEMM_WORKSPACE (32u << 20)
#define VGC_GEMM_CACHE 64
#define VGC_GEMM_CANDIDATES 16

typedef struct gemm_key {
    int64_t m, n, k, lda, ldb, ldc, ldr;
    int32_t dtype_ab, dtype_c, epilogue, beta;
    int32_t align_a, align_b, align_c, align_r;
    int32_t gate; /* vg_gemm_gate: timed with its silu_mul, against the skinny kernel's fused gate */
    int32_t norm; /* a norm of A: 1 timed with its rmsnorm, 2 deferred to the gate's silu_mul;
                   * against the skinny kernel's fused norm */
    int32_t b_static; /* args.b_static where the panel kernel's tie may take the call (PANEL_TIE) */
    int32_t own_fits; /* vgc_skinny_fits: vg's kernels can load this call's operands (16-byte A, B
                       * and norm_w beyond the alignments above), so only such calls share a plan
                       * that chose one */
} gemm_key;

typedef struct gemm_plan {
    gemm_key key;
    int valid;
    uint64_t last_use;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatmulAlgo_t algo;
    vgc_skinny_cfg own; /* own.ksplit > 0: the skinny kernel runs instead of cuBLASLt */
} gemm_plan;

struct vgc_gemm_cache {
    gemm_plan plans[VGC_GEMM_CACHE];
    uint64_t tick;
    int own; /* OWN_TUNED, OWN_NEVER (VG_CUDA_GEMM=cublaslt), OWN_ALWAYS(_WIDE, _CLUSTER) (=skinny(_wide, _cluster)),
              * OWN_ALWAYS_PANEL (=panel) */
};

enum { OWN_TUNED = 0, OWN_NEVER, OWN_ALWAYS, OWN_ALWAYS_WIDE, OWN_ALWAYS_CLUSTER, OWN_ALWAYS_PANEL };

static vg_status lt_fail(cublasStatus_t st, const char *what)
{
    return VGC_ERR(st == CUBLAS_STATUS_ALLOC_FAILED ? VG_ERR_OUT_OF_MEMORY
                   : st == CUBLAS_STATUS_NOT_SUPPORTED ? VG_ERR_UNSUPPORTED
                   : st == CUBLAS_STATUS_INVALID_VALUE ? VG_ERR_INVALID_ARG : VG_ERR_DEVICE,
                   "cuda: cuBLASLt %s failed: %s: %s", what, cublasLtGetStatusName(st),
                   cublasLtGetStatusString(st));
}
#define LT_CHECK(call)                                                   \
    do {                                                                 \
        cublasStatus_t s_ = (call);                                      \
        if (s_ != CUBLAS_STATUS_SUCCESS) return lt_fail(s_, #call);      \
    } while (0)

vg_status vgc_gemm_device_init(vg_bk_device *dev)
{
    cublasLtHandle_t h = NULL;
    LT_CHECK(cublasLtCreate(&h));
    dev->blas = h;
    dev->gemm_cluster_max = vgc_skinny_cluster_max(dev);
    dev->gemm_panel_cluster_max = vgc_panel_init(dev) ? vgc_panel_cluster_max(dev) : 0;
    return VG_OK;
}

void vgc_gemm_device_fini(vg_bk_device *dev)
{
    if (dev->blas) cublasLtDestroy((cublasLtHandle_t)dev->blas);
    dev->blas = NULL;
}

static void plan_release(gemm_plan *p)
{
    if (!p->valid) return;
    cublasLtMatmulDescDestroy(p->desc);
    cublasLtMatrixLayoutDestroy(p->la);
    cublasLtMatrixLayoutDestroy(p->lb);
    cublasLtMatrixLayoutDestroy(p->lc);
    cublasLtMatrixLayoutDestroy(p->ld);
    p->valid = 0;
}

vg_status vgc_gemm_stream_init(vg_bk_stream *s)
{
    s->gemm_cache = (struct vgc_gemm_cache *)calloc(1, sizeof *s->gemm_cache);
    if (!s->gemm_cache) return VGC_ERR(VG_ERR_OUT_OF_MEMORY, "cuda: out of host memory");
    cudaError_t e = cudaMalloc(&s->gemm_workspace, VGC_GEMM_WORKSPACE);
    if (e != cudaSuccess) {
        free(s->gemm_cache);
        s->gemm_cache = NULL;
        return vgc_fail(e, "cudaMalloc(gemm workspace)", __FILE__, __LINE__);
    }
    s->gemm_workspace_bytes = VGC_GEMM_WORKSPACE;
    const char *g = s->dev->gemm_choice; /* VG_CUDA_GEMM, read at open */
    s->gemm_cache->own = g && strcmp(g, "cublaslt") == 0         ? OWN_NEVER
                         : g && strcmp(g, "skinny") == 0         ? OWN_ALWAYS
                         : g && strcmp(g, "skinny_wide") == 0    ? OWN_ALWAYS_WIDE
                         : g && strcmp(g, "skinny_cluster") == 0 ? OWN_ALWAYS_CLUSTER
                         : g && strcmp(g, "panel") == 0          ? OWN_ALWAYS_PANEL : OWN_TUNED;
    e = cudaMalloc(&s->counters, VGC_COUNTERS * sizeof(unsigned));
    if (e == cudaSuccess) e = cudaMemsetAsync(s->counters, 0, VGC_COUNTERS * sizeof(unsigned), s->s);
    if (e != cudaSuccess) {
        cudaFree(s->counters);
        s->counters = NULL;
        cudaFree(s->gemm_workspace);
        free(s->gemm_cache);
        s->gemm_cache = NULL;
        s->gemm_workspace = NULL;
        return vgc_fail(e, "cudaMalloc(gemm counters)", __FILE__, __LINE__);
    }
    return VG_OK;
}

void vgc_gemm_stream_fini(vg_bk_stream *s)
{
    if (s->gemm_cache)
        for (int i = 0; i < VGC_GEMM_CACHE; i++) plan_release(&s->gemm_cache->plans[i]);
    cudaFree(s->counters);
    s->counters = NULL;
    free(s->gemm_cache);
    cudaFree(s->gemm_workspace);
    s->gemm_cache = NULL;
    s->gemm_workspace = NULL;
}

static cudaDataType_t lt_type(vg_dtype t)
{
    return t == VG_DTYPE_BF16 ? CUDA_R_16BF : t == VG_DTYPE_F16 ? CUDA_R_16F : CUDA_R_32F;
}

static int32_t align_of(const void *p, int64_t ld, size_t elem)
{
    uintptr_t a = (uintptr_t)p | (uintptr_t)(ld * (int64_t)elem);
    int32_t r = 16;
    while (r > 1 && (a % (uintptr_t)r)) r /= 2;
    return r;
}

/* What timing a candidate needs: the plan, the operands, a scratch output, a buffer whose
 * clearing evicts the operands from L2, and two events. */
static const vgc_skinny_cfg k_no_own = {0, 0, 0, 0};

typedef struct tune_ctx {
    vg_bk_stream *s;
    gemm_plan *p;
    const vg_gemm_args *a;
    void *scratch, *cold;
    void *norm_scratch; /* a norm's rows while timing: norm_out may be A itself (normalised in place) */
    size_t flush;
    cudaEvent_t e0, e1;
} tune_ctx;

/* The best of `reps` cold runs after one warm-up run, in ms; +inf if the algorithm fails. With
 * own.ksplit > 0 the skinny kernel in that configuration runs instead of `algo`. */
static float time_cold(tune_ctx *t, const cublasLtMatmulAlgo_t *algo, vgc_skinny_cfg own_cfg, int reps)
{
    const gemm_plan *p = t->p;
    const vg_gemm_args *a = t->a;
    float alpha = a->alpha, beta = p->key.beta ? 1.0f : 0.0f, fastest = INFINITY;
    const void *cptr = p->key.beta ? a->residual : t->scratch;
    cublasLtHandle_t h = (cublasLtHandle_t)t->s->dev->blas;
    vg_gemm_args own = *a;
    own.c = t->scratch;
    own.norm_out = t->norm_scratch;
    for (int rep = 0; rep <= reps; rep++) {
        if (rep > 0) cudaMemsetAsync(t->cold, rep, t->flush, t->s->s);
        cudaEventRecord(t->e0, t->s->s);
        if (own_cfg.ksplit > 0) {
            if (vgc_gemm_skinny(t->s, &own, own_cfg, (float *)t->s->gemm_workspace, t->s->counters) != VG_OK)
                return INFINITY;
        } else { /* a norm and a gate cost cuBLASLt a launch each */
            vg_gemm_args normed;
            const vg_gemm_args *lt = &own;
            if (vgc_gemm_norm_before(t->s, &own, &normed, &lt) != VG_OK ||
                cublasLtMatmul(h, p->desc, &alpha, a->b, p->la, lt->a, p->lb, &beta, cptr, p->lc,
                               t->scratch, p->ld, algo, t->s->gemm_workspace,
                               t->s->gemm_workspace_bytes, t->s->s) != CUBLAS_STATUS_SUCCESS ||
                vgc_gemm_gate_after(t->s, &own) != VG_OK)
                return INFINITY;
        }
        float ms = 0;
        if (cudaEventRecord(t->e1, t->s->s) != cudaSuccess || cudaEventSynchronize(t->e1) != cudaSuccess ||
            cudaEventElapsedTime(&ms, t->e0, t->e1) != cudaSuccess)
            return INFINITY;
        if (rep > 0 && ms < fastest) fastest = ms; /* rep 0 warms the algorithm up */
    }
    return fastest;
}

/* Whether cuBLASLt accepts `algo` for this plan within the stream's workspace. */
static int algo_fits(tune_ctx *t, const cublasLtMatmulAlgo_t *algo)
{
    const gemm_plan *p = t->p;
    cublasLtMatmulHeuristicResult_t r;
    return cublasLtMatmulAlgoCheck((cublasLtHandle_t)t->s->dev->blas, p->desc, p->la, p->lb, p->lc, p->ld,
                                   algo, &r) == CUBLAS_STATUS_SUCCESS &&
           r.workspaceSize <= t->s->gemm_workspace_bytes;
}

#define WIDE_TILES 4   /* tiles of stage one carried into stage two */
#define WIDE_CUSTOM 8  /* custom options tried per tile, at most */
#define WIDE_FINAL 3   /* stage-two finalists re-timed like the heuristic's candidates */

typedef struct timed_algo {
    cublasLtMatmulAlgo_t algo;
    float ms;
} timed_algo;

/* Keep the n fastest in `top` (ascending), offering `c`. */
static void top_offer(timed_algo *top, int n, const timed_algo *c)
{
    if (!(c->ms < top[n - 1].ms)) return;
    int i = n - 1;
    for (; i > 0 && c->ms < top[i - 1].ms; i--) top[i] = top[i - 1];
    top[i] = *c;
}

/* VG_CUDA_GEMM_TUNE=2: search around the winner of the heuristic's candidates. cuBLASLt's
 * heuristic returns a handful of configurations of its Hopper kernel (algorithm 66 on the H100)
 * out of hundreds of tiles, eight custom options and a dozen cluster shapes; an exhaustive
 * search of that space found 3-8% faster configurations for the ViT's shapes. Stage one times
 * every tile with the winner's other settings, stage two every custom option and cluster shape
 * of the best few tiles; each once, cold. The finalists are then timed like the candidates. */
static void tune_wide(tune_ctx *t, timed_algo *best)
{
    static const uint16_t clusters[] = {
        CUBLASLT_CLUSTER_SHAPE_AUTO, CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1,
        CUBLASLT_CLUSTER_SHAPE_1x2x1, CUBLASLT_CLUSTER_SHAPE_4x1x1, CUBLASLT_CLUSTER_SHAPE_1x4x1,
        CUBLASLT_CLUSTER_SHAPE_2x2x1, CUBLASLT_CLUSTER_SHAPE_2x4x1, CUBLASLT_CLUSTER_SHAPE_4x2x1};
    size_t need = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&best->algo, CUBLASLT_ALGO_CAP_TILE_IDS, NULL, 0, &need) !=
            CUBLAS_STATUS_SUCCESS || need < sizeof(uint32_t))
        return;
    uint32_t *tiles = (uint32_t *)malloc(need), cmax = 0;
    size_t got = 0;
    if (!tiles || cublasLtMatmulAlgoCapGetAttribute(&best->algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles, need,
                                                    &got) != CUBLAS_STATUS_SUCCESS) {
        free(tiles);
        return;
    }
    cublasLtMatmulAlgoCapGetAttribute(&best->algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &cmax, sizeof cmax, &got);
    const int ntiles = (int)(need / sizeof(uint32_t));
    timed_algo tops[WIDE_TILES], fin[WIDE_FINAL], c;
    for (int i = 0; i < WIDE_TILES; i++) tops[i].ms = INFINITY;
    for (int i = 0; i < WIDE_FINAL; i++) fin[i].ms = INFINITY;
    int timed = 0;
    for (int i = 0; i < ntiles; i++) {
        c.algo = best->algo;
        if (cublasLtMatmulAlgoConfigSetAttribute(&c.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tiles[i], sizeof tiles[i]) !=
                CUBLAS_STATUS_SUCCESS || !algo_fits(t, &c.algo))
            continue;
        c.ms = time_cold(t, &c.algo, k_no_own, 1);
        timed++;
        top_offer(tops, WIDE_TILES, &c);
    }
    free(tiles);
    for (int i = 0; i < WIDE_TILES && tops[i].ms < INFINITY; i++)
        for (uint32_t opt = 0; opt <= cmax && opt < WIDE_CUSTOM; opt++)
            for (size_t k = 0; k < sizeof clusters / sizeof clusters[0]; k++) {
                c.algo = tops[i].algo;
                if (cublasLtMatmulAlgoConfigSetAttribute(&c.algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &opt,
                                                         sizeof opt) != CUBLAS_STATUS_SUCCESS ||
                    cublasLtMatmulAlgoConfigSetAttribute(&c.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                                                         &clusters[k], sizeof clusters[k]) != CUBLAS_STATUS_SUCCESS ||
                    !algo_fits(t, &c.algo))
                    continue;
                c.ms = time_cold(t, &c.algo, k_no_own, 1);
                timed++;
                top_offer(fin, WIDE_FINAL, &c);
            }
    float before = best->ms;
    for (int i = 0; i < WIDE_FINAL && fin[i].ms < INFINITY; i++) {
        fin[i].ms = time_cold(t, &fin[i].algo, k_no_own, 3);
        if (fin[i].ms < best->ms) *best = fin[i];
    }
    vgc_host->log(VG_LOG_DEBUG, "cuda: gemm m=%lld n=%lld k=%lld: wide search timed %d configurations "
                  "(%d tiles): %.1f us cold against %.1f us", (long long)t->a->m, (long long)t->a->n,
                  (long long)t->a->k, timed, ntiles, best->ms * 1e3, before * 1e3);
}

/* Whether vg's own kernels are candidates for this call (the panel kernel's rows and the device's
 * shared memory are checked as its configurations are made). */
static int own_candidate(const vg_bk_stream *s, const vg_gemm_args *a)
{
    return s->gemm_cache->own == OWN_TUNED && s->dev->gemm_tune != VGC_TUNE_OFF && vgc_skinny_fits(a);
}

/* Beyond one 8-row tile, the margin by which the skinny kernel must beat cuBLASLt's cold time.
 * The timings are eager, while the step runs in a graph, and there a near tie at 16 rows went
 * the other way: Qwen3-0.6B's gate|up (16 x 6144 x 1024, norm and gate fused) 7% faster than
 * cuBLASLt with its norm and silu_mul launches when timed cold made the step 4.7% slower on an
 * H100 (docs/performance.md, 2026-11-26, fifth session). Up to OWN_MARGIN_ROWS rows the skinny
 * kernel takes a near tie instead (OWN_TIE): in a graph it loads its weights before it waits for
 * the kernel before it, which an eager timing cannot see: Qwen2.5-0.5B's qkv projection without
 * its norm (1 x 1152 x 896) timed 6.9 us cold either way, and the step ran 0.86-0.87 ms with this
 * rule against 0.93-0.94 before it, together with another change (docs/performance.md, 2026-11-27,
 * fourteenth session). */
#define OWN_MARGIN_ROWS 8
#define OWN_MARGIN 0.85f
#define OWN_TIE 1.03f

/* Up to PANEL_TIE_ROWS rows, a call without gate or norm whose B no op of the stream writes
 * (args.b_static) takes the panel kernel within PANEL_TIE of cuBLASLt's cold time: in a graph it
 * copies up to seven stages of its weights before it waits for the kernel before it (a
 * programmatic edge), which an eager timing cannot see, and cuBLASLt's kernels never release
 * their dependents early. On an H100, Qwen2.5-0.5B's step at 16 rows ran 0.997-1.002 ms with its
 * qkv, o and down projections taken at 1.14-1.22x their cold time, against 1.056-1.065 without; a
 * gated call taken at 1.08-1.09x made Qwen3-0.6B's slower (1.500 against 1.464-1.475), and at 64
 * rows the kernel is 1.5x behind cold (docs/performance.md, 2026-11-27, fifteenth session). The
 * tie is the panel kernel's even where a skinny configuration timed faster but missed its own
 * bar: the skinny kernel only prefetches its weights before the wait. The tie was 1.25 until the
 * decode kernel after a qkv projection could copy its first tiles of cache before its own wait
 * (rotary_paged_attention's tables_static, decode_tc.cu), which needs a kernel before it that
 * releases it early: at 1.5 Qwen3-0.6B's qkv (16 x 4096 x 1024, 1.40x cold) takes the panel
 * kernel, and the step at 16 rows ran 1.337-1.431 ms against 1.434-1.447 (1.450-1.460 with the
 * early copies at 1.25); the o and down projections of both models and Qwen2.5-0.5B's qkv all fall
 * within 1.25 (docs/performance.md, 2026-11-27, eighteenth session). */
#define PANEL_TIE_ROWS 16
#define PANEL_TIE 1.5f

/* Whether the tie could take this call: the panel kernel runs here, is timed for it, and the call
 * has the rows, the shape of call and the hint the rule was measured with. */
static int panel_tie_applies(const vg_bk_stream *s, const vg_gemm_args *a)
{
    return s->gemm_cache->own == OWN_TUNED && s->dev->gemm_tune != VGC_TUNE_OFF && s->dev->gemm_panel_cluster_max > 0 &&
           vgc_skinny_fits(a) && a->m >= VGC_PANEL_MIN_M && a->m <= PANEL_TIE_ROWS &&
           a->gate == VG_GEMM_GATE_NONE && !vgc_gemm_normed(a) && vgc_gemm_b_static(a);
}

/* Time the skinny kernel in a few configurations (block shape, split-K, clustered or not) and the
 * panel kernel in its (warps a row tile, clustered split); if one beats cuBLASLt's best (lt_ms),
 * by OWN_MARGIN beyond OWN_MARGIN_ROWS rows (up to them, within OWN_TIE of it), the plan takes it,
 * else the panel kernel within PANEL_TIE where that applies.
 * Logs both, with the bandwidth each reaches on the call's bytes, and every configuration's time. */
static void tune_own(tune_ctx *t, float lt_ms)
{
    const vg_gemm_args *a = t->a;
    static const double scales[] = {1.0, 0.5, 2.0, 0.0};
    int sms = t->s->dev->prop.multiProcessorCount, ntried = 0;
    vgc_skinny_cfg tried[32], best_cfg = k_no_own, pcfg = k_no_own; /* pcfg: the fastest panel one */
    float best = INFINITY, pbest = INFINITY;
    char each[768] = "";
    size_t len = 0;
    for (int wide = 0; wide < (a->m <= 8 ? 2 : 1); wide++)
        for (int i = 0; i < 4; i++) {
            vgc_skinny_cfg c = vgc_skinny_split(a, sms, scales[i] > 0 ? scales[i] : 1.0, wide,
                                                t->s->gemm_workspace_bytes, VGC_COUNTERS_ATTENTION);
            if (scales[i] == 0.0) c.ksplit = 1;
            int seen = 0;
            for (int j = 0; j < ntried; j++) seen |= tried[j].ksplit == c.ksplit && tried[j].wide == c.wide;
            if (seen) continue;
            tried[ntried++] = c;
        }
    /* the clustered split, in clusters of 2 to gemm_cluster_max blocks */
    for (int wide = 0; wide < (a->m <= 8 ? 2 : 1); wide++)
        for (int nb = 2; nb <= t->s->dev->gemm_cluster_max; nb *= 2) {
            vgc_skinny_cfg c = vgc_skinny_cluster(a, nb, wide);
            if (c.ksplit > 0) tried[ntried++] = c;
        }
    /* the panel kernel where it runs, its k split in clusters of 1 to gemm_panel_cluster_max blocks,
     * 2 or 4 warps a row tile */
    for (int wk = 2; wk <= 4; wk += 2)
        for (int nb = 1; nb <= t->s->dev->gemm_panel_cluster_max; nb *= 2) {
            vgc_skinny_cfg c = vgc_panel_cfg(a, nb, wk, t->s->dev->gemm_panel_cluster_max);
            if (c.ksplit > 0) tried[ntried++] = c;
        }
    for (int i = 0; i < ntried; i++) {
        const vgc_skinny_cfg c = tried[i];
        float ms = time_cold(t, NULL, c, 3);
        int w = c.panel ? snprintf(each + len, sizeof each - len, "%spanel %dx%d: %.1f", len ? ", " : "", c.panel,
                                   c.ksplit, ms * 1e3)
                        : snprintf(each + len, sizeof each - len, "%s%dx%d%s: %.1f", len ? ", " : "", c.wide ? 8 : 4,
                                   c.ksplit, c.cluster ? "c" : "", ms * 1e3);
        if (w > 0 && len + (size_t)w < sizeof each) len += (size_t)w;
        if (ms < best) best = ms, best_cfg = c;
        if (c.panel && ms < pbest) pbest = ms, pcfg = c;
    }
    const float bar = a->m > OWN_MARGIN_ROWS ? lt_ms * OWN_MARGIN : lt_ms * OWN_TIE;
    size_t eab = a->dtype_ab == VG_DTYPE_F32 ? 4 : 2, ec = a->dtype_c == VG_DTYPE_F32 ? 4 : 2;
    double bytes = (double)a->n * (double)a->k * (double)eab + (double)a->m * (double)a->k * (double)eab +
                   (double)a->m * (double)a->n * (double)ec * (a->residual ? 2.0 : 1.0);
    vgc_host->log(VG_LOG_DEBUG, "cuda: gemm m=%lld n=%lld k=%lld: cuBLASLt %.1f us cold (%.0f GB/s), vg's "
                  "own %.1f us (%.0f GB/s; us per warps x split, c clustered, panel warps a row tile x split: %s): %s",
                  (long long)a->m, (long long)a->n, (long long)a->k, lt_ms * 1e3, bytes / (lt_ms * 1e6),
                  best * 1e3, bytes / (best * 1e6), each,
                  best < bar ? (best_cfg.panel ? "panel" : "skinny") : "cuBLASLt");
    if (best < bar) t->p->own = best_cfg;
    /* the panel kernel near a tie, where that measured faster in the step (PANEL_TIE) */
    if (!(best < bar) && panel_tie_applies(t->s, a) && pbest < lt_ms * PANEL_TIE) {
        t->p->own = pcfg;
        vgc_host->log(VG_LOG_DEBUG, "cuda: gemm m=%lld n=%lld k=%lld: the panel kernel (%.1f us cold) within %.2fx "
                      "of cuBLASLt's", (long long)a->m, (long long)a->n, (long long)a->k, pbest * 1e3, (double)PANEL_TIE);
    }
}

/* Time each candidate (one warm-up, then the best of three cold runs) into a scratch output
 * and keep the fastest; with VG_CUDA_GEMM_TUNE=2 search around it too; then vg's skinny kernel
 * where it applies. Only outside capture; any failure leaves the heuristic's pick. */
static void tune(vg_bk_stream *s, gemm_plan *p, const cublasLtMatmulHeuristicResult_t *res, int n,
                 const vg_gemm_args *a)
{
    vg_bk_device *dev = s->dev;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (dev->gemm_tune == VGC_TUNE_OFF || cudaStreamIsCapturing(s->s, &cs) != cudaSuccess ||
        cs != cudaStreamCaptureStatusNone) {
        (void)cudaGetLastError();
        return;
    }
    tune_ctx t = {s, p, a, NULL, NULL, NULL, 2 * (size_t)dev->prop.l2CacheSize, NULL, NULL};
    size_t bytes = (size_t)a->m * (size_t)a->ldc * (a->dtype_c == VG_DTYPE_F32 ? 4 : 2);
    /* a norm's rows where one is written: a pass of its own (not a deferred one) */
    size_t norm_bytes = vgc_gemm_normed(a) && !vgc_gemm_norm_deferred(a)
                            ? (size_t)a->m * (size_t)a->k * (a->dtype_ab == VG_DTYPE_F32 ? 4 : 2)
                            : 0;
    if (cudaMalloc(&t.scratch, bytes) == cudaSuccess && cudaMalloc(&t.cold, t.flush) == cudaSuccess &&
        (!norm_bytes || cudaMalloc(&t.norm_scratch, norm_bytes) == cudaSuccess) &&
        cudaEventCreate(&t.e0) == cudaSuccess && cudaEventCreate(&t.e1) == cudaSuccess) {
        if (p->key.epilogue == CUBLASLT_EPILOGUE_BIAS || p->key.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS)
            cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &a->bias, sizeof a->bias);
        timed_algo best = {res[0].algo, INFINITY};
        int chosen = 0;
        float first = 0.0f;
        for (int i = 0; i < n; i++) {
            float ms = time_cold(&t, &res[i].algo, k_no_own, 3);
            if (i == 0) first = ms;
            if (ms < best.ms) best = {res[i].algo, ms}, chosen = i;
        }
        vgc_host->log(VG_LOG_DEBUG, "cuda: gemm m=%lld n=%lld k=%lld: candidate %d of %d, %.1f us cold "
                      "against %.1f us for the heuristic's first pick", (long long)a->m, (long long)a->n,
                      (long long)a->k, chosen, n, best.ms * 1e3, first * 1e3);
        if (dev->gemm_tune == VGC_TUNE_WIDE && best.ms < INFINITY) tune_wide(&t, &best);
        if (best.ms < INFINITY) p->algo = best.algo;
        if (own_candidate(s, a)) tune_own(&t, best.ms);
    }
    (void)cudaGetLastError();
    if (t.e0) cudaEventDestroy(t.e0);
    if (t.e1) cudaEventDestroy(t.e1);
    cudaFree(t.scratch); /* the stream is synchronised: nothing still uses them */
    cudaFree(t.cold);
    cudaFree(t.norm_scratch);
}

static vg_status plan_build(vg_bk_stream *s, gemm_plan *p, const gemm_key *k, const vg_gemm_args *a)
{
    memset(p, 0, sizeof *p);
    p->key = *k;
    cudaDataType_t tab = lt_type((vg_dtype)k->dtype_ab), tc = lt_type((vg_dtype)k->dtype_c);
    cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
    cublasLtEpilogue_t epi = (cublasLtEpilogue_t)k->epilogue;
    LT_CHECK(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    p->valid = 1; /* from here plan_release frees what exists */
    LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT));
    LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN));
    LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    LT_CHECK(cublasLtMatrixLayoutCreate(&p->la, tab, (uint64_t)k->k, (uint64_t)k->n, k->ldb));
    LT_CHECK(cublasLtMatrixLayoutCreate(&p->lb, tab, (uint64_t)k->k, (uint64_t)k->m, k->lda));
    LT_CHECK(cublasLtMatrixLayoutCreate(&p->lc, tc, (uint64_t)k->n, (uint64_t)k->m, k->beta ? k->ldr : k->ldc));
    LT_CHECK(cublasLtMatrixLayoutCreate(&p->ld, tc, (uint64_t)k->n, (uint64_t)k->m, k->ldc));

    cublasLtMatmulPreference_t pref = NULL;
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = s->gemm_workspace_bytes;
    uint32_t aa = (uint32_t)k->align_b, ab = (uint32_t)k->align_a, ac = (uint32_t)k->align_r,
             ad = (uint32_t)k->align_c;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof ab);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ad, sizeof ad);
    cublasLtMatmulHeuristicResult_t res[VGC_GEMM_CANDIDATES];
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)s->dev->blas, p->desc,
                                                       p->la, p->lb, p->lc, p->ld, pref,
                                                       VGC_GEMM_CANDIDATES, res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) return lt_fail(st, "cublasLtMatmulAlgoGetHeuristic");
    if (found < 1)
        return VGC_ERR(VG_ERR_UNSUPPORTED, "cuda: cuBLASLt has no algorithm for gemm m=%lld n=%lld "
                       "k=%lld dtypes %d/%d", (long long)k->m, (long long)k->n, (long long)k->k,
                       k->dtype_ab, k->dtype_c);
    p->algo = res[0].algo;
    if (found > 1 || s->dev->gemm_tune == VGC_TUNE_WIDE || own_candidate(s, a)) tune(s, p, res, found, a);
    return VG_OK;
}

static vg_status plan_get(vg_bk_stream *s, const gemm_key *k, const vg_gemm_args *a, gemm_plan **out)
{
    struct vgc_gemm_cache *c = s->gemm_cache;
    gemm_plan *victim = &c->plans[0];
    c->tick++;
    for (int i = 0; i < VGC_GEMM_CACHE; i++) {
        gemm_plan *p = &c->plans[i];
        if (p->valid && memcmp(&p->key, k, sizeof *k) == 0) {
            p->last_use = c->tick;
            *out = p;
            return VG_OK;
        }
        if (!p->valid || (victim->valid && p->last_use < victim->last_use)) victim = p;
    }
    plan_release(victim);
    vg_status st = plan_build(s, victim, k, a);
    if (st != VG_OK) {
        plan_release(victim);
        return st;
    }
    victim->last_use = c->tick;
    *out = victim;
    return VG_OK;
}

/* The skinny kernel's configuration where VG_CUDA_GEMM forces it: the split that fills the GPU;
 * with skinny_cluster, the largest clustered split k allows where the device runs clusters (with
 * 8 warps a block where m <= 8, so both block shapes are tested clustered); with panel, the panel
 * kernel in its split that fills the GPU, 4 warps a row tile, from VGC_PANEL_MIN_M rows (below them
 * the skinny kernel's split). */
static vgc_skinny_cfg forced_cfg(const vg_bk_stream *s, const vg_gemm_args *a)
{
    if (s->gemm_cache->own == OWN_ALWAYS_PANEL) { /* the skinny kernel below its rows, or without it */
        const int most = s->dev->gemm_panel_cluster_max;
        vgc_skinny_cfg c = vgc_panel_cfg(a, vgc_panel_split(a, s->dev->prop.multiProcessorCount, most), 4, most);
        if (c.ksplit > 0) return c;
    }
    if (s->gemm_cache->own == OWN_ALWAYS_CLUSTER)
        for (int nb = s->dev->gemm_cluster_max; nb >= 2; nb /= 2) {
            vgc_skinny_cfg c = vgc_skinny_cluster(a, nb, a->m <= 8);
            if (c.ksplit > 0) return c;
        }
    return vgc_skinny_split(a, s->dev->prop.multiProcessorCount, 1.0, s->gemm_cache->own == OWN_ALWAYS_WIDE,
                            s->gemm_workspace_bytes, VGC_COUNTERS_ATTENTION);
}

vg_status vgc_op_gemm(vg_bk_device *, vg_bk_stream *s, const vg_gemm_args *a)
{
    if (s->dev->gemm_tiled) return vgc_gemm_tiled(s, a); /* the portable kernel, for testing it */
    /* a gate (vg_ops.h): fused by the skinny kernel where it runs, else silu_mul after the GEMM */
    if (s->gemm_cache->own >= OWN_ALWAYS && vgc_skinny_fits(a))
        return vgc_gemm_skinny(s, a, forced_cfg(s, a), (float *)s->gemm_workspace, s->counters);
    /* Decide what cuBLASLt fuses. Its bias must have C's type and be 16-byte aligned (it
     * refuses others at matmul time, after a plan was found); its epilogue applies the
     * activation after beta·C, so a residual is fused only when there is no activation. */
    /* (a deferred norm's bias comes after its factor: vgc_gemm_gate_after adds it) */
    const int deferred = vgc_gemm_norm_deferred(a);
    int lt_bias = a->bias && !deferred && a->dtype_ab == a->dtype_c && (uintptr_t)a->bias % 16 == 0;
    /* GELU is fused only when the bias is fused too (or absent): the bias comes before it. */
    int lt_gelu = a->act == VG_ACT_GELU_TANH && !a->residual && (!a->bias || lt_bias);
    int lt_residual = a->residual && a->act == VG_ACT_NONE;
    cublasLtEpilogue_t epi = lt_gelu ? (lt_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                                     : (lt_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
    size_t eab = a->dtype_ab == VG_DTYPE_F32 ? 4 : 2, ec = a->dtype_c == VG_DTYPE_F32 ? 4 : 2;
    gemm_key k;
    memset(&k, 0, sizeof k);
    k.m = a->m, k.n = a->n, k.k = a->k, k.lda = a->lda, k.ldb = a->ldb, k.ldc = a->ldc;
    k.ldr = lt_residual ? a->ldr : 0;
    k.dtype_ab = a->dtype_ab, k.dtype_c = a->dtype_c, k.epilogue = (int32_t)epi, k.beta = lt_residual;
    const int norm_pass = vgc_gemm_normed(a) && !deferred; /* vgc_gemm_norm_before */
    k.align_a = align_of(norm_pass ? a->norm_out : a->a, a->lda, eab); /* what cuBLASLt reads */
    k.align_b = align_of(a->b, a->ldb, eab);
    k.align_c = align_of(a->c, a->ldc, ec);
    k.align_r = lt_residual ? align_of(a->residual, a->ldr, ec) : k.align_c;
    k.gate = (int32_t)a->gate;
    k.norm = norm_pass ? 1 : deferred ? 2 : 0; /* timed with what each launches */
    k.b_static = panel_tie_applies(s, a); /* only where it can change the plan */
    k.own_fits = vgc_skinny_fits(a);
    gemm_plan *p = NULL;
    vg_status st = plan_get(s, &k, a, &p);
    if (st == VG_ERR_UNSUPPORTED) {
        /* cuBLASLt has no algorithm for this combination (2-byte aligned operands with some
         * epilogues, say): the portable kernel computes every case the catalogue allows */
        vgc_host->log(VG_LOG_DEBUG, "cuda: gemm %lldx%lldx%lld: cuBLASLt has no algorithm, "
                      "using the tiled kernel", (long long)a->m, (long long)a->n, (long long)a->k);
        return vgc_gemm_tiled(s, a);
    }
    if (st != VG_OK) return st;
    if (p->own.ksplit > 0) /* measured faster than cuBLASLt for this shape: the whole epilogue fused */
        return vgc_gemm_skinny(s, a, p->own, (float *)s->gemm_workspace, s->counters);
    vg_gemm_args normed; /* cuBLASLt reads A normalised into norm_out by a launch before it */
    const vg_gemm_args *call = a;
    st = vgc_gemm_norm_before(s, a, &normed, &call);
    if (st != VG_OK) return st;
    if (lt_bias)
        LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                &a->bias, sizeof a->bias));
    float alpha = a->alpha, beta = lt_residual ? 1.0f : 0.0f;
    const void *cptr = lt_residual ? a->residual : a->c;
    cublasStatus_t ls = cublasLtMatmul((cublasLtHandle_t)s->dev->blas, p->desc, &alpha, a->b,
                                       p->la, call->a, p->lb, &beta, cptr, p->lc, a->c, p->ld,
                                       &p->algo, s->gemm_workspace, s->gemm_workspace_bytes, s->s);
    if (ls == CUBLAS_STATUS_NOT_SUPPORTED) /* refused at run time: nothing of it was enqueued */
        return vgc_gemm_tiled(s, call);
    if (ls != CUBLAS_STATUS_SUCCESS) return lt_fail(ls, "cublasLtMatmul");
    /* What was not fused: bias of another type, the activation, the residual after it. */
    vg_gemm_args rest = *a;
    if (lt_gelu) rest.act = VG_ACT_NONE;
    st = vgc_epilogue(s, &rest, a->bias && !lt_bias && !deferred, a->residual && !lt_residual);
    return st == VG_OK ? vgc_gemm_gate_after(s, a) : st;
}
