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
 * key eagerly before capturing it so plans are tuned. VG_CUDA_GEMM_TUNE=0 turns tuning off. */
#include <cublasLt.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"

#define VGC_GEMM_WORKSPACE (32u << 20)
#define VGC_GEMM_CACHE 64
#define VGC_GEMM_CANDIDATES 16

typedef struct gemm_key {
    int64_t m, n, k, lda, ldb, ldc, ldr;
    int32_t dtype_ab, dtype_c, epilogue, beta;
    int32_t align_a, align_b, align_c, align_r;
} gemm_key;

typedef struct gemm_plan {
    gemm_key key;
    int valid;
    uint64_t last_use;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatmulAlgo_t algo;
} gemm_plan;

struct vgc_gemm_cache {
    gemm_plan plans[VGC_GEMM_CACHE];
    uint64_t tick;
};

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
    return VG_OK;
}

void vgc_gemm_stream_fini(vg_bk_stream *s)
{
    if (s->gemm_cache)
        for (int i = 0; i < VGC_GEMM_CACHE; i++) plan_release(&s->gemm_cache->plans[i]);
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

/* Time each candidate (one warm-up, then the best of three cold runs) into a scratch output
 * and keep the fastest. Only outside capture; any failure leaves the heuristic's pick. */
static void tune(vg_bk_stream *s, gemm_plan *p, const cublasLtMatmulHeuristicResult_t *res, int n,
                 const vg_gemm_args *a)
{
    vg_bk_device *dev = s->dev;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (!dev->gemm_tune || cudaStreamIsCapturing(s->s, &cs) != cudaSuccess ||
        cs != cudaStreamCaptureStatusNone) {
        (void)cudaGetLastError();
        return;
    }
    size_t bytes = (size_t)a->m * (size_t)a->ldc * (a->dtype_c == VG_DTYPE_F32 ? 4 : 2);
    size_t flush = 2 * (size_t)dev->prop.l2CacheSize;
    void *scratch = NULL, *cold = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (cudaMalloc(&scratch, bytes) != cudaSuccess || cudaMalloc(&cold, flush) != cudaSuccess ||
        cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
        (void)cudaGetLastError();
        if (scratch) cudaFree(scratch);
        if (cold) cudaFree(cold);
        if (e0) cudaEventDestroy(e0);
        return;
    }
    float alpha = a->alpha, beta = p->key.beta ? 1.0f : 0.0f, best = 1e30f, first = 0.0f;
    int chosen = 0;
    const void *cptr = p->key.beta ? a->residual : scratch;
    if (p->key.epilogue == CUBLASLT_EPILOGUE_BIAS || p->key.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS)
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &a->bias, sizeof a->bias);
    cublasLtHandle_t h = (cublasLtHandle_t)dev->blas;
    for (int i = 0; i < n; i++) {
        float fastest = 1e30f;
        for (int rep = 0; rep < 4; rep++) {
            cudaMemsetAsync(cold, rep, flush, s->s); /* evict the operands from L2 */
            cudaEventRecord(e0, s->s);
            if (cublasLtMatmul(h, p->desc, &alpha, a->b, p->la, a->a, p->lb, &beta, cptr, p->lc,
                               scratch, p->ld, &res[i].algo, s->gemm_workspace,
                               s->gemm_workspace_bytes, s->s) != CUBLAS_STATUS_SUCCESS)
                break;
            float ms = 0;
            if (cudaEventRecord(e1, s->s) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess ||
                cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
                break;
            if (rep > 0 && ms < fastest) fastest = ms; /* rep 0 warms the algorithm up */
        }
        if (i == 0) first = fastest;
        if (fastest < best) {
            best = fastest;
            chosen = i;
            p->algo = res[i].algo;
        }
    }
    vgc_host->log(VG_LOG_DEBUG, "cuda: gemm m=%lld n=%lld k=%lld: candidate %d of %d, %.1f us cold "
                  "against %.1f us for the heuristic's first pick", (long long)a->m, (long long)a->n,
                  (long long)a->k, chosen, n, best * 1e3, first * 1e3);
    (void)cudaGetLastError();
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(scratch); /* the stream is synchronised: nothing still uses them */
    cudaFree(cold);
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
    if (found > 1) tune(s, p, res, found, a);
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

vg_status vgc_op_gemm(vg_bk_device *, vg_bk_stream *s, const vg_gemm_args *a)
{
    if (!s) return VGC_ERR(VG_ERR_INVALID_ARG, "cuda: gemm: NULL stream");
    vg_status cst = vgc_gemm_check(a);
    if (cst != VG_OK) return cst;
    if (s->dev->gemm_tiled) return vgc_gemm_tiled(s, a); /* the portable kernel, for testing it */
    /* Decide what cuBLASLt fuses. Its bias must have C's type; its epilogue applies the
     * activation after beta·C, so a residual is fused only when there is no activation. */
    int lt_bias = a->bias && a->dtype_ab == a->dtype_c;
    int lt_gelu = a->act == VG_ACT_GELU_TANH && !a->residual;
    int lt_residual = a->residual && a->act == VG_ACT_NONE;
    cublasLtEpilogue_t epi = lt_gelu ? (lt_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                                     : (lt_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
    size_t eab = a->dtype_ab == VG_DTYPE_F32 ? 4 : 2, ec = a->dtype_c == VG_DTYPE_F32 ? 4 : 2;
    gemm_key k;
    memset(&k, 0, sizeof k);
    k.m = a->m, k.n = a->n, k.k = a->k, k.lda = a->lda, k.ldb = a->ldb, k.ldc = a->ldc;
    k.ldr = lt_residual ? a->ldr : 0;
    k.dtype_ab = a->dtype_ab, k.dtype_c = a->dtype_c, k.epilogue = (int32_t)epi, k.beta = lt_residual;
    k.align_a = align_of(a->a, a->lda, eab);
    k.align_b = align_of(a->b, a->ldb, eab);
    k.align_c = align_of(a->c, a->ldc, ec);
    k.align_r = lt_residual ? align_of(a->residual, a->ldr, ec) : k.align_c;
    gemm_plan *p = NULL;
    vg_status st = plan_get(s, &k, a, &p);
    if (st != VG_OK) return st;
    if (lt_bias)
        LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                &a->bias, sizeof a->bias));
    float alpha = a->alpha, beta = lt_residual ? 1.0f : 0.0f;
    const void *cptr = lt_residual ? a->residual : a->c;
    LT_CHECK(cublasLtMatmul((cublasLtHandle_t)s->dev->blas, p->desc, &alpha, a->b, p->la, a->a,
                            p->lb, &beta, cptr, p->lc, a->c, p->ld, &p->algo, s->gemm_workspace,
                            s->gemm_workspace_bytes, s->s));
    /* What was not fused: bias of another type, the activation, the residual after it. */
    vg_gemm_args rest = *a;
    if (lt_gelu) rest.act = VG_ACT_NONE;
    return vgc_epilogue(s, &rest, a->bias && !lt_bias, a->residual && !lt_residual);
}
