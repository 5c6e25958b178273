/* SPDX-License-Identifier: Apache-2.0 */
/* C[m,n] = act(alpha * A[m,k] * B[n,k]^T + bias[n]) + residual[m,n], fp32 accumulation.
 *
 * A work-group of OCL_GEMM_WG^2 work-items computes an OCL_GEMM_TILE square of C: each work-item
 * OCL_GEMM_TILE/OCL_GEMM_WG rows by as many columns, strided by OCL_GEMM_WG so that neighbouring
 * work-items read neighbouring local-memory words. A and B tiles OCL_GEMM_TK deep are staged in
 * local memory, converted to float once as they are loaded (so the inner loop is pure fp32 for
 * every dtype), zero-padded past the matrix edges. The epilogue (bias, activation, residual)
 * runs on the accumulators before the single store. */

#define ACT_NONE 0
#define ACT_GELU_ERF 1
#define ACT_GELU_TANH 2
#define ACT_SILU 3
#define ACT_QUICK_GELU 4

inline float activate(int act, float x)
{
    if (act == ACT_GELU_ERF) return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f));
    if (act == ACT_GELU_TANH)
        return 0.5f * x * (1.0f + tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    if (act == ACT_SILU) return x / (1.0f + exp(-x));
    if (act == ACT_QUICK_GELU) return x / (1.0f + exp(-1.702f * x));
    return x;
}

#define PER (OCL_GEMM_TILE / OCL_GEMM_WG) /* rows (and columns) of C per work-item */

kernel void gemm(int dt_ab, int dt_c, int m, int n, int k, BUF(a), long lda, BUF(b), long ldb,
                 BUF(c), long ldc, int has_bias, BUF(bias), int has_res, BUF(res), long ldr,
                 int act, float alpha)
{
    local float As[OCL_GEMM_TK][OCL_GEMM_TILE + 1];
    local float Bs[OCL_GEMM_TK][OCL_GEMM_TILE + 1];
    const global uchar *A = AT(a), *B = AT(b);
    int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
    int lid = ty * OCL_GEMM_WG + tx;
    int m0 = (int)get_group_id(1) * OCL_GEMM_TILE, n0 = (int)get_group_id(0) * OCL_GEMM_TILE;
    float acc[PER][PER];
    for (int i = 0; i < PER; i++)
        for (int j = 0; j < PER; j++) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < k; k0 += OCL_GEMM_TK) {
        /* stage the tiles: consecutive work-items take consecutive k, as A and B store them */
        for (int e = lid; e < OCL_GEMM_TILE * OCL_GEMM_TK; e += OCL_GEMM_WG * OCL_GEMM_WG) {
            int row = e / OCL_GEMM_TK, kk = e % OCL_GEMM_TK, kg = k0 + kk;
            int ar = m0 + row, br = n0 + row;
            As[kk][row] = ar < m && kg < k ? ld(A, dt_ab, (size_t)ar * lda + kg) : 0.0f;
            Bs[kk][row] = br < n && kg < k ? ld(B, dt_ab, (size_t)br * ldb + kg) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < OCL_GEMM_TK; kk++) {
            float av[PER], bv[PER];
            for (int i = 0; i < PER; i++) av[i] = As[kk][ty + i * OCL_GEMM_WG];
            for (int j = 0; j < PER; j++) bv[j] = Bs[kk][tx + j * OCL_GEMM_WG];
            for (int i = 0; i < PER; i++)
                for (int j = 0; j < PER; j++) acc[i][j] += av[i] * bv[j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    global uchar *C = AT(c);
    for (int i = 0; i < PER; i++) {
        int r = m0 + ty + i * OCL_GEMM_WG;
        if (r >= m) break;
        for (int j = 0; j < PER; j++) {
            int col = n0 + tx + j * OCL_GEMM_WG;
            if (col >= n) break;
            float v = alpha * acc[i][j];
            if (has_bias) v += ld(AT(bias), dt_ab, col);
            v = activate(act, v);
            if (has_res) v += ld(AT(res), dt_c, (size_t)r * ldr + col);
            st(C, dt_c, (size_t)r * ldc + col, v);
        }
    }
}
