/* SPDX-License-Identifier: Apache-2.0 */
/* What the hip backend provides instead of the CUDA-only files of backends/cuda:
 *  - GEMM: the portable kernel of gemm_tiled.cu (Debian's ROCm has no hipBLAS or hipBLASLt);
 *  - attention: no tensor-core kernel yet (attention_tc.cu, attention_wg.cu and decode_tc.cu are
 *    written with NVIDIA's mma.sync, wgmma, ldmatrix and cp.async), so attention.cu and
 *    paged_attention use their portable kernels for every dtype, paged_attention its split one
 *    (decode_tune.cu, which measures vg's forms and the kernel library's, is NVIDIA's too).
 * Everything else is the CUDA backend's source, compiled through vendor.h. */
#include "common.cuh"
#include "decode_tune.cuh"

vg_status vgc_gemm_device_init(vg_bk_device *dev)
{
    dev->blas = NULL;
    dev->gemm_tiled = 1;
    return VG_OK;
}

void vgc_gemm_device_fini(vg_bk_device *dev) { (void)dev; }

vg_status vgc_gemm_stream_init(vg_bk_stream *s)
{
    s->gemm_cache = NULL;
    s->gemm_workspace = NULL;
    s->gemm_workspace_bytes = 0;
    return VG_OK;
}

void vgc_gemm_stream_fini(vg_bk_stream *s) { (void)s; }

vg_status vgc_op_gemm(vg_bk_device *, vg_bk_stream *s, const vg_gemm_args *a)
{
    return vgc_gemm_tiled(s, a);
}

vg_status vgc_attention_tc_prepare(void) { return VG_OK; }

vg_status vgc_attention_tc(vg_bk_stream *, const vgc_attention_call *)
{
    return VG_ERR_UNSUPPORTED; /* the caller falls back to the portable kernel */
}

vg_status vgc_decode_tc_prepare(vg_bk_device *) { return VG_OK; }

vg_status vgc_decode_tc(vg_bk_stream *, const vgc_decode_call *)
{
    return VG_ERR_UNSUPPORTED; /* paged_attention runs its CUDA-core split kernel */
}

int vgc_decode_tc_takes(const vg_bk_stream *, const vgc_decode_call *) { return 0; }

/* decode_tune.cu's measured choice: the CUDA-core split kernel, the one HIP has */
int vgc_decode_pick(vg_bk_stream *, const vgc_decode_call *, vgc_decode_own_fn) { return 0; }

vg_status vgc_decode_run_pick(vg_bk_stream *s, const vgc_decode_call *c, int, vgc_decode_own_fn own)
{
    return own(s, c);
}

vg_status vgc_attention_wg_prepare(vg_bk_device *dev)
{
    dev->wgmma_attention = 0;
    return VG_OK;
}

vg_status vgc_attention_wg(vg_bk_stream *, const vgc_attention_call *) { return VG_ERR_UNSUPPORTED; }
