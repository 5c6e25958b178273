/* SPDX-License-Identifier: Apache-2.0 */
/* Hopper's warpgroup MMA (wgmma, sm_90a only): shared-memory matrix descriptors, the fences
 * and group waits, and the MMA shapes attention_wg.cu uses. A wgmma is issued by the four
 * warps of a warpgroup together and runs asynchronously: its accumulators must not be touched
 * until wg_wait has returned and wg_fence_regs has told the compiler so.
 *
 * Operands in shared memory are in the "no swizzle" canonical layout: 8×8 core matrices of
 * 16-bit elements, each 8 rows of 16 contiguous bytes (128 bytes in all). The descriptor gives
 * the start and two strides between core matrices: along the reduction dimension K and along
 * the other (M or N), which the PTX ISA calls the leading and stride byte offsets and assigns
 * differently for K-major and MN-major operands (wg_desc_kmajor, wg_desc_mnmajor). */
#ifndef VG_CUDA_WGMMA_CUH
#define VG_CUDA_WGMMA_CUH

#include <stdint.h>

#include "attention_tc.cuh"

__device__ __forceinline__ uint64_t wg_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
           (uint64_t)((sbo & 0x3FFFF) >> 4) << 32; /* base offset 0, swizzle mode 0 (none) */
}

/* A K-major operand (rows of M or N, each with K contiguous): k_stride bytes between core
 * matrices that follow each other along K, row_stride between groups of 8 rows. */
__device__ __forceinline__ uint64_t wg_desc_kmajor(const void *p, uint32_t k_stride, uint32_t row_stride)
{
    return wg_desc(smem_addr(p), k_stride, row_stride);
}

/* An MN-major operand (rows of K, each with N contiguous; used with the transpose flag):
 * n_stride bytes between core matrices that follow each other along N, k_stride between groups
 * of 8 rows of K. */
__device__ __forceinline__ uint64_t wg_desc_mnmajor(const void *p, uint32_t n_stride, uint32_t k_stride)
{
    return wg_desc(smem_addr(p), k_stride, n_stride);
}

/* Before the first wgmma that reads registers written by ordinary instructions. */
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

/* Pin accumulator registers in place across a wait: the compiler sees the wgmma as finished
 * when it is issued, so without this it could move their reads above wg_wait. */
template <int N>
__device__ __forceinline__ void wg_fence_regs(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}

/* Make this thread's generic-proxy writes to shared memory (st.shared, cp.async) visible to
 * wgmma's reads, which go through the async proxy; then a barrier for the other threads'. */
__device__ __forceinline__ void wg_fence_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* d (+)= A·B over k = 16, A and B K-major in shared memory (descriptors); acc = 0 overwrites d.
 * Then d (+)= A·B with A in registers (the m16n8k16 A fragment of the warp's 16 rows) and B
 * MN-major in shared memory. The operand lists are spelled out: inline PTX cannot loop; WG_ASM
 * writes each once for both 16-bit types. */
template <typename T>
__device__ __forceinline__ void wg_ss_n64(float (&d)[32], uint64_t da, uint64_t db, int acc)
{
#define WG_ASM(TY) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
    " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
    : "l"(da), "l"(db), "r"(acc))
    if constexpr (mma_type<T>::bf16) WG_ASM("bf16");
    else WG_ASM("f16");
#undef WG_ASM
}

template <typename T>
__device__ __forceinline__ void wg_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int acc)
{
#define WG_ASM(TY) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
    " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc))
    if constexpr (mma_type<T>::bf16) WG_ASM("bf16");
    else WG_ASM("f16");
#undef WG_ASM
}

template <typename T>
__device__ __forceinline__ void wg_rs_n72(float (&d)[36], const uint32_t (&a)[4], uint64_t db, int acc)
{
#define WG_ASM(TY) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %41, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n72k16.f32." TY "." TY " " \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
    " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
    " %32, %33, %34, %35}, {%36, %37, %38, %39}, %40, p, 1, 1, 1;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]) \
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc))
    if constexpr (mma_type<T>::bf16) WG_ASM("bf16");
    else WG_ASM("f16");
#undef WG_ASM
}

template <typename T>
__device__ __forceinline__ void wg_rs_n80(float (&d)[40], const uint32_t (&a)[4], uint64_t db, int acc)
{
#define WG_ASM(TY) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %45, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n80k16.f32." TY "." TY " " \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
    " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
    " %32, %33, %34, %35, %36, %37, %38, %39}, {%40, %41, %42, %43}, %44, p, 1, 1, 1;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]) \
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc))
    if constexpr (mma_type<T>::bf16) WG_ASM("bf16");
    else WG_ASM("f16");
#undef WG_ASM
}

template <typename T>
__device__ __forceinline__ void wg_rs_n96(float (&d)[48], const uint32_t (&a)[4], uint64_t db, int acc)
{
#define WG_ASM(TY) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n96k16.f32." TY "." TY " " \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
    " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
    " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, {%48, %49, %50, %51}, %52, p, 1, 1, 1;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]) \
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc))
    if constexpr (mma_type<T>::bf16) WG_ASM("bf16");
    else WG_ASM("f16");
#undef WG_ASM
}

template <typename T>
__device__ __forceinline__ void wg_rs_n128(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int acc)
{
#define WG_ASM(TY) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
    " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
    " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
    " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc))
    if constexpr (mma_type<T>::bf16) WG_ASM("bf16");
    else WG_ASM("f16");
#undef WG_ASM
}

/* d += A·B with N = HD: one of the shapes above. */
template <typename T, int N>
__device__ __forceinline__ void wg_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int acc)
{
    static_assert(N == 64 || N == 72 || N == 80 || N == 96 || N == 128, "no wgmma wrapper for this N");
    if constexpr (N == 64) wg_rs_n64<T>(d, a, db, acc);
    else if constexpr (N == 72) wg_rs_n72<T>(d, a, db, acc);
    else if constexpr (N == 80) wg_rs_n80<T>(d, a, db, acc);
    else if constexpr (N == 96) wg_rs_n96<T>(d, a, db, acc);
    else wg_rs_n128<T>(d, a, db, acc);
}

/* Hopper's asynchronous copies and the barriers that track them (sm_90a), for warp-specialised
 * kernels: a producer thread starts bulk copies from global to shared memory, each of which
 * counts its bytes against a transaction barrier ("full"); consumers wait on that barrier's
 * phase, and tell the producer that a slot may be refilled by arriving on another ("empty").
 * Waits name the parity of the phase they wait for: a fresh barrier is in phase 0, and a wait
 * for parity 1 on it returns at once, which is how a producer's first pass over empty slots
 * goes through. */
__device__ __forceinline__ void mbar_init(uint64_t *bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

/* After every barrier is initialised, before the block's barrier that publishes them: makes the
 * initialisation visible to the copy engine, which reaches shared memory through the async proxy. */
__device__ __forceinline__ void mbar_fence_init() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

/* The producer's arrival on a full barrier, announcing the bytes its copies will deliver. */
__device__ __forceinline__ void mbar_arrive_expect(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    asm volatile("{\n.reg .pred done;\n"
                 "WAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT_%=;\n}\n" ::"r"(smem_addr(bar)), "r"(parity)
                 : "memory");
}

/* Copy `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to shared memory
 * with the copy engine; completion is counted on `bar`. */
__device__ __forceinline__ void bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
}

/* Hand registers between the warpgroups of a block: a producer that needs few gives them back,
 * so that consumers may hold up to N each. Every thread of the warpgroup executes it. */
template <int N>
__device__ __forceinline__ void regs_release() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void regs_claim() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)); }

#endif
