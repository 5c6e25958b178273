/* SPDX-License-Identifier: Apache-2.0 */
/* Paged decode attention through a kernel library (decode_flashinfer.cu), built only where the
 * configure found the library's headers (VG_HAVE_KERNEL_LIBS; never for HIP). decode_tune.cu times
 * its candidates beside vg's own kernels, per shape, for the calls it takes. A pick of the library
 * is a positive number below VGC_DECODE_OWN_WHOLE that only the library interprets. */
#ifndef VG_CUDA_DECODE_LIB_CUH
#define VG_CUDA_DECODE_LIB_CUH

#include <stddef.h>

#include "common.cuh"

/* The library's name and version, for logs ("FlashInfer 0.7.2.post1"). */
extern const char vgc_decode_lib_name[];
/* Whether the library can take this call: dtype, head_dim, group size, strides, alignment, and
 * its plan fitting the stream's workspace. */
int vgc_decode_lib_takes(const vg_bk_stream *s, const vgc_decode_call *c);
/* The library's candidates for a call it takes (its picks, distinct, at most max): how many. */
int vgc_decode_lib_candidates(const vg_bk_stream *s, const vgc_decode_call *c, int *picks, int max);
/* The pick VG_CUDA_DECODE=flashinfer (its own shape at its default split count), _deep (the deeper
 * shape), _whole or _deep_whole (without splits) fixes for a call the library takes. */
int vgc_decode_lib_forced(const vg_bk_stream *s, const vgc_decode_call *c, int deep, int whole);
/* A pick in words, for the tuner's log line ("19 splits deep"); snprintf's return. */
int vgc_decode_lib_label(int pick, char *buf, size_t n);
/* The call through the library as a pick says (with c->rope, rotary_kv_store's launch first). */
vg_status vgc_decode_lib_run(vg_bk_stream *s, const vgc_decode_call *c, int pick);

#endif
