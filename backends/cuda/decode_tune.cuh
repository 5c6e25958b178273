/* SPDX-License-Identifier: Apache-2.0 */
/* Which kernel runs a paged decode call, measured once per shape (decode_tune.cu): vg's own in
 * its forms (split, whole, whole in clusters) and, where the kernel libraries were built and take
 * the call, the library's candidates (decode_lib.cuh). NVIDIA only: hip_glue.cu stands in with
 * vg's split kernel. */
#ifndef VG_CUDA_DECODE_TUNE_CUH
#define VG_CUDA_DECODE_TUNE_CUH

#include "common.cuh"

/* vg's own kernels for a call (ops_lm.cu's decode_own): what a pick of vg's runs. */
typedef vg_status (*vgc_decode_own_fn)(vg_bk_stream *, const vgc_decode_call *);

/* A pick of vg's kernel with each row's context whole (vgc_decode_call.whole): timed beside its
 * split form (0), which spends more on joining the slices than it gains once the (row, KV head)
 * pairs alone fill the multiprocessors (H100, Qwen2.5-0.5B at 64 rows: 12.5 against 15.6 us).
 * VGC_DECODE_OWN_WHOLE + k (k < VGC_DECODE_OWN_FORMS): the whole form in clusters of 2^k blocks
 * (decode_tc.cu), for calls with too few (row, KV head) pairs to fill the multiprocessors. Picks
 * from 1 below VGC_DECODE_OWN_WHOLE are the library's. */
#define VGC_DECODE_OWN_WHOLE (1 << 20)
#define VGC_DECODE_OWN_FORMS 4

/* The pick for this call: the measured choice for its shape, timing `own` in its forms and the
 * library's candidates on the call's operands, each as a replayed graph runs it after an L2
 * clearing, the first time a shape comes outside capture (vg's kernel must be 5% faster than the
 * library: near ties went the other way in the step; its whole form 5% faster than its split one);
 * vg's split kernel while a shape is unmeasured. A rotary_paged_attention call (c->rope) is its
 * own shape: vg's tensor-core kernel does the rotary inside, the other candidates are timed with
 * rotary_kv_store's launch before them, on a copy of qkv put back afterwards (-1 where that
 * failed: the call must fail). VG_CUDA_DECODE=vg fixes vg's split kernel; vg_whole, vg_cluster2,
 * vg_cluster4 and vg_cluster8 its whole form alone or in clusters; flashinfer, flashinfer_deep,
 * flashinfer_whole and flashinfer_deep_whole the library (decode_lib.cuh) where it takes the call. */
int vgc_decode_pick(vg_bk_stream *s, const vgc_decode_call *c, vgc_decode_own_fn own);

/* Run the call as a pick says: through `own` (with each row's context whole for
 * VGC_DECODE_OWN_WHOLE and above), or through the library. */
vg_status vgc_decode_run_pick(vg_bk_stream *s, const vgc_decode_call *c, int pick, vgc_decode_own_fn own);

#endif
