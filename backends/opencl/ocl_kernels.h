/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenCL C kernels of the opencl backend: their ids, and the launch geometry the host and the
 * kernel sources share (passed to the compiler as -D options, so the two cannot drift).
 *
 * Adding an op: write its kernel in kernels/<file>.cl (listed in CMakeLists.txt), add its name
 * to OCL_KERNEL_LIST, add the host wrapper that calls ocl_launch, and map the op to the kernel in
 * ocl_device.c's k_op_kernel. */
#ifndef OCL_KERNELS_H
#define OCL_KERNELS_H

#define OCL_KERNEL_LIST(X) \
    X(memset_bytes)        \
    X(copy_bytes)          \
    X(fill_pattern)        \
    X(axpby)               \
    X(gemm)                \
    X(gather_rows)         \
    X(rms_norm)            \
    X(rotary)              \
    X(attention)           \
    X(silu_mul)            \
    X(convert)             \
    X(kv_store)            \
    X(paged_attention)     \
    X(argmax)              \
    X(layer_norm)          \
    X(gather_weighted)     \
    X(rotary_kv_store)

typedef enum ocl_kernel_id {
#define OCL_KERNEL_ID(n) OCL_K_##n,
    OCL_KERNEL_LIST(OCL_KERNEL_ID)
#undef OCL_KERNEL_ID
    OCL_K_COUNT
} ocl_kernel_id;

extern const char *const ocl_kernel_names[OCL_K_COUNT];

/* Generated from the kernels/ sources at build time (embed_kernels.cmake): the program's source. */
extern const char ocl_kernel_source[];

/* Work-group sizes. Elementwise kernels run OCL_WG work-items per group; row reductions
 * (rmsnorm, layernorm, argmax) one group of OCL_WG_REDUCE per row; attention kernels OCL_WG_ATTN
 * query rows per group (attention staging keys OCL_ATTN_TK at a time); GEMM a group of
 * OCL_GEMM_WG x OCL_GEMM_WG computing an OCL_GEMM_TILE square of C, OCL_GEMM_TK deep. */
#define OCL_WG 64
#define OCL_WG_REDUCE 64
#define OCL_WG_ATTN 32
#define OCL_ATTN_TK 16           /* keys per local-memory tile, fewer where local memory is short */
#define OCL_ATTN_LOCAL_FIXED 1024 /* bytes of the attention kernel's other local arrays, at most */
#define OCL_GEMM_TILE 64
#define OCL_GEMM_TK 16
#define OCL_GEMM_WG 16
/* bytes each work-item of memset_bytes and copy_bytes moves */
#define OCL_BYTES_PER_ITEM 16

#define OCL_STR_(x) #x
#define OCL_STR(x) OCL_STR_(x)
#define OCL_BUILD_OPTIONS                                                                  \
    "-DOCL_WG=" OCL_STR(OCL_WG) " -DOCL_WG_REDUCE=" OCL_STR(OCL_WG_REDUCE)                 \
    " -DOCL_WG_ATTN=" OCL_STR(OCL_WG_ATTN) " -DOCL_GEMM_TILE=" OCL_STR(OCL_GEMM_TILE)      \
    " -DOCL_GEMM_TK=" OCL_STR(OCL_GEMM_TK) " -DOCL_GEMM_WG=" OCL_STR(OCL_GEMM_WG)          \
    " -DOCL_BYTES_PER_ITEM=" OCL_STR(OCL_BYTES_PER_ITEM)

#endif
