/* SPDX-License-Identifier: Apache-2.0 */
/* Launching thread-block clusters (sm_90 and newer; NVIDIA only): the blocks of a cluster run at
 * once on neighbouring multiprocessors and read each other's shared memory, so a kernel can join
 * the blocks that split one piece of work without partials in memory (decode_tc.cu's cluster form,
 * gemm_skinny.cu's clustered split-K). */
#ifndef VG_CUDA_CLUSTER_CUH
#define VG_CUDA_CLUSTER_CUH

#include "common.cuh"

#define VGC_CLUSTER_MAX 8 /* blocks of a cluster, at most: the portable cluster size */

/* A launch whose clusters are `cluster` blocks of the grid (each dimension divides the grid's),
 * programmatic where vgc_launch's would be. Errors surface through cudaGetLastError, as with <<<>>>. */
template <typename... KArgs, typename... Args>
static inline void vgc_launch_cluster(vg_bk_stream *s, void (*kern)(KArgs...), dim3 grid, dim3 cluster, int block,
                                      size_t smem, Args... args)
{
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster.x, attr[0].val.clusterDim.y = cluster.y, attr[0].val.clusterDim.z = cluster.z;
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[1].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = s->s;
    cfg.attrs = attr, cfg.numAttrs = vgc_launch_pdl(s) ? 2 : 1;
    (void)cudaLaunchKernelEx(&cfg, kern, args...);
}

/* The most blocks (VGC_CLUSTER_MAX, halved down to 2) a cluster of `kern` may have on this device,
 * 1 for none: the device launches clusters, the kernel was compiled for sm_90 or newer (ptxVersion:
 * the __CUDA_ARCH__ it saw, so the code that joins the blocks exists; a PTX-only build for an older
 * architecture loads as sm_90 code and must not count), and the device can place such a cluster of
 * `block` threads with `smem` bytes each (a partitioned GPU may hold fewer multiprocessors
 * together). `along` picks the grid dimension the cluster spans (0 x, 1 y, 2 z). */
template <typename... KArgs>
static inline int vgc_cluster_max(const vg_bk_device *dev, void (*kern)(KArgs...), int block, size_t smem, int along)
{
    int clusters = 0;
    cudaFuncAttributes fa;
    if (cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, dev->index) != cudaSuccess ||
        cudaFuncGetAttributes(&fa, kern) != cudaSuccess) {
        (void)cudaGetLastError();
        return 1;
    }
    if (!clusters || fa.ptxVersion < 90) return 1;
    for (unsigned c = VGC_CLUSTER_MAX; c > 1; c /= 2) {
        const dim3 shape(along == 0 ? c : 1, along == 1 ? c : 1, along == 2 ? c : 1);
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = shape.x, attr.val.clusterDim.y = shape.y, attr.val.clusterDim.z = shape.z;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = shape, cfg.blockDim = dim3((unsigned)block), cfg.dynamicSmemBytes = smem;
        cfg.attrs = &attr, cfg.numAttrs = 1;
        int n = 0;
        if (cudaOccupancyMaxActiveClusters(&n, kern, &cfg) == cudaSuccess && n > 0) return (int)c;
        (void)cudaGetLastError();
    }
    return 1;
}

#endif
