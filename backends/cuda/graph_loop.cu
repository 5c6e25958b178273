// SPDX-License-Identifier: Apache-2.0
/* Device-side loops (ABI 1.4, VG_CAP_GRAPH_LOOP) and lm_advance (op table version 7).
 *
 * A loop is a graph of one WHILE conditional node (CUDA 12.4): loop_capture_begin creates the
 * graph and the node, and captures the stream into the node's body (cudaStreamBeginCaptureToGraph);
 * loop_capture_end appends a one-thread kernel that sets the node's condition from the caller's
 * flag, so the body runs again while the flag is set, without the host. The condition's default
 * is 1 at every launch: the body runs at least once. A body the conditional node refuses (an
 * event node, a host node) fails at the end of the capture or at instantiation, which the caller
 * turns into a fallback. HIP (and a runtime or driver older than 12.4) has no conditional nodes:
 * the loop members refuse and VG_CAP_GRAPH_LOOP is not reported; lm_advance is portable. */
#include <stdlib.h>

#include "kernels.cuh"

#if !defined(VG_VENDOR_HIP) && defined(CUDART_VERSION) && CUDART_VERSION >= 12040
#define VGC_WHILE_NODES 1
#else
#define VGC_WHILE_NODES 0
#endif

/* ---- lm_advance --------------------------------------------------------------------------------- */

#define ADV_THREADS 256

/* The logits each unfinished row's token is picked from, into its output slot (before
 * k_lm_advance moves the counts on). Blocks over (chunks of the vocabulary, rows). */
__global__ void __launch_bounds__(ADV_THREADS) k_lm_copy_logits(vg_lm_advance_args a)
{
    vgk_grid_sync();
    const int32_t *done = a.state + 2, *count = a.state + 2 + a.rows;
    for (int r = blockIdx.y; r < a.rows; r += gridDim.y) {
        int32_t c = count[r];
        if (done[r] || c < 0 || c >= a.ld_out) continue;
        float *dst = a.logits_out + ((int64_t)r * a.ld_out + c) * a.vocab;
        const float *src = a.logits + (int64_t)r * a.vocab;
        for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.vocab;
             i += (int64_t)gridDim.x * blockDim.x)
            dst[i] = src[i];
    }
}

/* One block: a thread per row (strided), then whether any row goes on (vg_ops.h, lm_advance). */
__global__ void __launch_bounds__(ADV_THREADS) k_lm_advance(vg_lm_advance_args a)
{
    vgk_grid_sync();
    int32_t *done = a.state + 2, *count = a.state + 2 + a.rows;
    int more = 0;
    for (int r = threadIdx.x; r < a.rows; r += blockDim.x) {
        if (done[r]) continue;
        int32_t t = a.next[r], c = count[r];
        if (c < 0 || c >= a.ld_out) { /* a malformed count: stop the row, write nothing */
            done[r] = 1;
            continue;
        }
        a.out[(int64_t)r * a.ld_out + c] = t;
        count[r] = ++c;
        int eos = 0;
        for (int k = 0; k < a.num_eos; k++) eos |= a.eos[k] == t;
        int32_t pos = a.pos[r] + 1;
        int64_t blk = pos / a.block_size;
        if (eos || c >= a.limit[r] || c >= a.ld_out || pos < 0 || blk >= a.max_blocks) {
            done[r] = 1;
            continue;
        }
        a.tokens[r] = t;
        a.pos[r] = pos;
        a.ctx[r] += 1;
        a.slots[r] = a.block_tables[(int64_t)r * a.max_blocks + blk] * a.block_size + pos % a.block_size;
        more = 1;
    }
    more = __syncthreads_or(more);
    if (threadIdx.x == 0) {
        a.state[0] += 1;
        a.state[1] = more;
    }
}

vg_status vgc_op_lm_advance(vg_bk_device *, vg_bk_stream *s, const vg_lm_advance_args *a)
{
    if (a->logits_out) {
        int64_t chunks = (a->vocab + ADV_THREADS - 1) / ADV_THREADS;
        dim3 grid((unsigned)(chunks < 64 ? chunks : 64), (unsigned)(a->rows < 65535 ? a->rows : 65535));
        vgc_launch(s, k_lm_copy_logits, grid, dim3(ADV_THREADS), 0, *a);
        VGC_CHECK_LAUNCH("lm_advance");
    }
    vgc_launch(s, k_lm_advance, dim3(1), dim3(ADV_THREADS), 0, *a);
    VGC_CHECK_LAUNCH("lm_advance");
    return VG_OK;
}

/* ---- loops --------------------------------------------------------------------------------------- */

#if VGC_WHILE_NODES

/* The body's last kernel: go round again while the flag is set. */
__global__ void k_loop_condition(cudaGraphConditionalHandle cond, const int32_t *flag)
{
    cudaGraphSetConditional(cond, *flag != 0 ? 1u : 0u);
}

uint64_t vgc_loop_caps(void)
{
    int rt = 0, drv = 0;
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess || cudaDriverGetVersion(&drv) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return rt >= 12040 && drv >= 12040 ? VG_CAP_GRAPH_LOOP : 0;
}

/* The WHILE node, whose body is the first graph of its params. cudaGraphAddNode gained edge data
 * in CUDA 13 (12.x has it as cudaGraphAddNode_v2). */
static cudaError_t add_while_node(cudaGraph_t g, cudaGraphConditionalHandle cond, cudaGraph_t *body)
{
    cudaGraphNodeParams p = {cudaGraphNodeTypeConditional}; /* the rest zero (aggregate) */
    p.conditional.handle = cond;
    p.conditional.type = cudaGraphCondTypeWhile;
    p.conditional.size = 1;
    cudaGraphNode_t node;
#if CUDART_VERSION >= 13000
    cudaError_t e = cudaGraphAddNode(&node, g, NULL, NULL, 0, &p);
#else
    cudaError_t e = cudaGraphAddNode(&node, g, NULL, 0, &p);
#endif
    if (e == cudaSuccess) *body = p.conditional.phGraph_out[0];
    return e;
}

extern "C" vg_status vgc_loop_capture_begin(vg_bk_device *dev, vg_bk_stream *s, const int32_t *flag)
{
    if (!dev || !s || !flag) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": loop_capture_begin: NULL");
    if (!vgc_loop_caps())
        return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": WHILE graph nodes need a CUDA 12.4 "
                                                          "runtime and driver");
    VGC_CHECK(cudaSetDevice(dev->index));
    cudaGraph_t g = NULL, body = NULL;
    VGC_CHECK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle cond = 0;
    const char *what = "cudaGraphConditionalHandleCreate";
    cudaError_t e = cudaGraphConditionalHandleCreate(&cond, g, 1, cudaGraphCondAssignDefault);
    if (e == cudaSuccess) what = "cudaGraphAddNode (WHILE)", e = add_while_node(g, cond, &body);
    if (e == cudaSuccess) {
        /* thread-local, as capture_begin: other threads may go on allocating */
        what = "cudaStreamBeginCaptureToGraph";
        e = cudaStreamBeginCaptureToGraph(s->s, body, NULL, NULL, 0, cudaStreamCaptureModeThreadLocal);
    }
    if (e != cudaSuccess) {
        (void)cudaGraphDestroy(g);
        return vgc_fail(e, what, __FILE__, __LINE__);
    }
    s->loop_graph = g;
    s->loop_cond = cond;
    s->loop_flag = flag;
    return VG_OK;
}

extern "C" vg_status vgc_loop_capture_end(vg_bk_device *, vg_bk_stream *s, vg_bk_graph **out)
{
    if (!s || !out) return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": loop_capture_end: NULL");
    *out = NULL;
    cudaGraph_t g = s->loop_graph;
    s->loop_graph = NULL;
    if (g) k_loop_condition<<<1, 1, 0, s->s>>>((cudaGraphConditionalHandle)s->loop_cond, s->loop_flag);
    cudaError_t le = cudaGetLastError();
    cudaGraph_t body = NULL; /* the WHILE node's: g owns it */
    cudaError_t e = cudaStreamEndCapture(s->s, &body); /* ends the capture in every case */
    if (!g || e != cudaSuccess || le != cudaSuccess || !body) {
        if (g) (void)cudaGraphDestroy(g);
        if (!g) return VGC_ERR(VG_ERR_STATE, VG_VENDOR_NAME ": loop_capture_end without loop_capture_begin");
        vgc_fail(e != cudaSuccess ? e : le, e != cudaSuccess ? "cudaStreamEndCapture (loop body)"
                                                             : "the loop's condition kernel",
                 __FILE__, __LINE__);
        return VG_ERR_CAPTURE;
    }
    return vgc_graph_wrap(g, out);
}

#else /* no conditional nodes: HIP, or a CUDA toolkit older than 12.4 */

uint64_t vgc_loop_caps(void) { return 0; }

extern "C" vg_status vgc_loop_capture_begin(vg_bk_device *, vg_bk_stream *, const int32_t *)
{
    return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": no conditional graph nodes (this build "
                                                      "has no device-side loops)");
}

extern "C" vg_status vgc_loop_capture_end(vg_bk_device *, vg_bk_stream *, vg_bk_graph **out)
{
    if (out) *out = NULL;
    return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": no conditional graph nodes");
}

#endif
