/* SPDX-License-Identifier: Apache-2.0 */
/* Paged decode attention through a kernel library (decode_flashinfer.cu), built only where the
 * configure found the library's headers (VG_HAVE_KERNEL_LIBS; never for HIP). ops_lm.cu's
 * paged_attention offers each call here first: the library takes the shapes it was compiled for
 * and vg's own kernel the rest, and between the two the faster on the call's real operands,
 * timed once per shape (see vgc_decode_lib_pick). */
#ifndef VG_CUDA_DECODE_LIB_CUH
#define VG_CUDA_DECODE_LIB_CUH

#include "common.cuh"

/* The library's name and version, for logs ("FlashInfer 0.7.2.post1"). */
extern const char vgc_decode_lib_name[];
/* Whether the library path can take this call: dtype, head_dim, group size, strides, alignment,
 * and its plan fitting the stream's workspace. */
int vgc_decode_lib_takes(const vg_bk_stream *s, const vgc_decode_call *c);
/* Run the call as `pick` (vgc_decode_lib_pick's) says: through `own` (vg's kernel; with each row's
 * context whole for VGC_DECODE_OWN_WHOLE), or through the library with the pick's splits and
 * variant (only where vgc_decode_lib_takes said yes). */
vg_status vgc_decode_run_pick(vg_bk_stream *s, const vgc_decode_call *c, int pick,
                              vg_status (*own)(vg_bk_stream *, const vgc_decode_call *));
/* Whether to take the library for this call (0: vg's kernel), with how many splits and which of
 * its kernel's variants: the measured choice for its shape, timing `own` (vg's kernel) and the
 * library at a few split counts and variants on the call's operands, each as a replayed graph
 * runs it after an L2 clearing, the first time a shape comes outside capture (vg's kernel must be
 * 5% faster: near ties went the other way in the step); vg's kernel while a shape is unmeasured.
 * A rotary_paged_attention call (c->rope) is its own shape: vg's kernel does the rotary inside,
 * the library's candidates are timed with rotary_kv_store's launch before them, on a copy of qkv
 * put back afterwards (-1 where that failed: the call must fail).
 * VG_CUDA_DECODE=vg|flashinfer|flashinfer_deep fixes the choice (the library at its default
 * split count, in its own shape or the deeper one); flashinfer_whole and flashinfer_deep_whole
 * take the library without splits; vg_whole, vg_cluster2, vg_cluster4 and vg_cluster8 vg's whole
 * form alone or in clusters. */
/* A pick that is vg's kernel with each row's context whole (vgc_decode_call.whole): timed beside
 * its split form, which spends more on joining the slices than it gains once the (row, KV head)
 * pairs alone fill the multiprocessors (H100, Qwen2.5-0.5B at 64 rows: 12.5 against 15.6 us).
 * VGC_DECODE_OWN_WHOLE + k (k < VGC_DECODE_OWN_FORMS): the whole form in clusters of 2^k blocks
 * (decode_tc.cu), for calls with too few (row, KV head) pairs to fill the multiprocessors. */
#define VGC_DECODE_OWN_WHOLE (1 << 20)
#define VGC_DECODE_OWN_FORMS 4
int vgc_decode_lib_pick(vg_bk_stream *s, const vgc_decode_call *c,
                        vg_status (*own)(vg_bk_stream *, const vgc_decode_call *));

#endif
