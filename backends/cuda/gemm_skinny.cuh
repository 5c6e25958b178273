/* SPDX-License-Identifier: Apache-2.0 */
/* The skinny GEMM of gemm_skinny.cu: vg's own kernel for the products of decoding (a few rows
 * of activations against a whole weight matrix), which gemm.cu times against cuBLASLt's
 * candidates when it plans a shape and uses only where it measured faster. NVIDIA only
 * (mma.sync); the hip backend has its tiled kernel. */
#ifndef VG_CUDA_GEMM_SKINNY_CUH
#define VG_CUDA_GEMM_SKINNY_CUH

#include "common.cuh"

/* Rows of activations the kernel takes at most. */
#define VGC_SKINNY_MAX_M 64

/* Whether the kernel computes this call: m <= VGC_SKINNY_MAX_M, BF16 or F16 operands, C of the
 * operands' dtype or F32, k, lda and ldb multiples of 8 and A, B (and norm_w) 16-byte aligned. */
int vgc_skinny_fits(const vg_gemm_args *a);

/* A launch configuration: blocks along k for each group of 16 output columns (split-K), and
 * whether a block has 8 warps instead of 4 (only for m <= 8: the k range of a block is shared by
 * more warps, so fewer blocks need split-K; the tuner tries both). */
typedef struct vgc_skinny_cfg {
    int ksplit, wide;
    int cluster; /* 1: the ksplit blocks of a column group are one cluster (sm_90) and add each
                  * other's sums through distributed shared memory: no partials, no counters */
    int panel;   /* > 0: gemm_panel.cu's kernel instead, with this many warps (2 or 4) sharing each
                  * row tile's k chunks (its split is always clustered; `wide` and `cluster` unused) */
} vgc_skinny_cfg;

/* The split for `wide` blocks: enough blocks to give every multiprocessor work (`sms`) when n is
 * small, 1 when n alone fills the GPU; times `scale` (a tuning variant), bounded by k and by what
 * the partials (ws_bytes) and the counters (ncounters) can hold. */
vgc_skinny_cfg vgc_skinny_split(const vg_gemm_args *a, int sms, double scale, int wide, size_t ws_bytes,
                                int ncounters);

/* The clustered split of nb blocks (vgc_skinny_cfg.cluster; nb no more than what
 * vgc_skinny_cluster_max allows), or ksplit 0 where k is too short to give each warp of nb blocks a
 * chunk. */
vgc_skinny_cfg vgc_skinny_cluster(const vg_gemm_args *a, int nb, int wide);

/* The most blocks a clustered split may join on this device (1: none; cluster.cuh): the skinny
 * kernel's, the panel kernel's (once vgc_panel_init granted it its shared memory). */
int vgc_skinny_cluster_max(const vg_bk_device *dev);
int vgc_panel_cluster_max(const vg_bk_device *dev);

/* Rows of activations below which the panel kernel is not offered: one 8-row tile of them costs the
 * skinny kernel no more than its weights. */
#define VGC_PANEL_MIN_M 9

/* The panel kernel's configuration: its k range split over ksplit blocks of one cluster (1: no
 * split), `wk` (2 or 4) warps sharing each row tile's k chunks; ksplit 0 where wk is neither, m is
 * outside [VGC_PANEL_MIN_M, VGC_SKINNY_MAX_M], a split over the device's clusters (cluster_max, 0
 * where the kernel does not run) or more blocks than k has 32-wide chunks. */
vgc_skinny_cfg vgc_panel_cfg(const vg_gemm_args *a, int ksplit, int wk, int cluster_max);

/* The largest power-of-two split, up to cluster_max, whose blocks the panel kernel's grid keeps within
 * the multiprocessors (`sms`), one block each: what VG_CUDA_GEMM=panel runs. */
int vgc_panel_split(const vg_gemm_args *a, int sms, int cluster_max);

/* At device open: grant the panel kernel's blocks the shared memory their stages take (up to
 * 216 KiB); 0 where the device cannot (before sm_90: 163 KiB at most), and the kernel is then not
 * used. */
int vgc_panel_init(const vg_bk_device *dev);

/* The panel kernel (gemm_panel.cu) for vgc_gemm_skinny's calls with cfg.panel > 0. */
vg_status vgc_gemm_panel(vg_bk_stream *s, const vg_gemm_args *a, vgc_skinny_cfg cfg);

/* C = act(alpha·A·Bᵀ + bias) + residual in one launch, or with a->gate the gated product, and
 * with a->norm_w A normalised on load (vg_ops.h), in one launch; by the panel kernel where
 * cfg.panel > 0 (its split always clustered). With cfg.ksplit > 1, the skinny kernel's blocks of
 * one column group leave fp32 partials in ws (ksplit·m·n floats) and the last to finish, counted
 * in counters[group] (zero before, zero again after), adds them and applies the epilogue; with
 * cfg.cluster the blocks share out the epilogue and neither ws nor counters is touched. */
vg_status vgc_gemm_skinny(vg_bk_stream *s, const vg_gemm_args *a, vgc_skinny_cfg cfg, float *ws,
                          unsigned *counters);

#endif
