/* SPDX-License-Identifier: Apache-2.0 */
/* Asynchronous copies into shared memory (cp.async, sm_80 and later), for the NVIDIA-only kernels
 * that stage their operands there: the tensor-core attention kernels and the panel GEMM. */
#ifndef VG_CUDA_CP_ASYNC_CUH
#define VG_CUDA_CP_ASYNC_CUH

#include <stdint.h>

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* One 16-byte cp.async into shared memory; src_bytes = 0 writes zeros (src must still be a
 * valid address). */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(src_bytes));
}

/* One whole 16-byte cp.async to a shared-memory address (smem_addr) the caller keeps, so that a loop
 * of copies adds only constants to it. */
__device__ __forceinline__ void cp_async16_to(uint32_t dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

/* Wait until at most N of this thread's committed groups are in flight. */
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

#endif
