/* SPDX-License-Identifier: Apache-2.0 */
/* The second half of a GEMM whose k gemm.cu split itself (a batched cuBLASLt call over k slices
 * into fp32 partials, op table version 9's gemm_rmsnorm_c): the partials added, with the bias
 * and the residual, into C, and C's rows normalised, in one launch. NVIDIA only, as gemm.cu. */
#ifndef VG_CUDA_GEMM_SPLIT_CUH
#define VG_CUDA_GEMM_SPLIT_CUH

#include "common.cuh"

/* C = Σ over nsplit of parts[s] ([nsplit][m][n] floats) + bias + residual, rounded once to
 * dtype_c (== dtype_ab: the bias shares C's type); then, with a->c_norm_w, c_norm_out = the rows of
 * C rmsnorm'd with it (statistics summed in the order rmsnorm's kernel sums them, so the norm is
 * rmsnorm's of the same C). C is contiguous (ldc == n); nsplit is 2, 3, 4, 6 or 8 (a kernel each:
 * VG_ERR_INTERNAL otherwise). */
vg_status vgc_split_norm(vg_bk_stream *s, const vg_gemm_args *a, const float *parts, int nsplit);

#endif
