/* SPDX-License-Identifier: Apache-2.0 */
/* Timing a candidate as a step runs it, for the tuners (decode_tune.cu, gemm.cu): in a replayed
 * graph, so that a candidate of several launches pays no launch latency a graph does not, each call
 * after a clearing of L2 (a step's layer finds its weights and cache in memory, and a call repeated
 * on the same operands would find them in L2), which also keeps a programmatic launch from
 * overlapping its own previous call as no step lets it. NVIDIA only, as its users. */
#ifndef VG_CUDA_TUNE_GRAPH_CUH
#define VG_CUDA_TUNE_GRAPH_CUH

#include <math.h>

#include "common.cuh"

/* Milliseconds of one replay of a graph of `reps` rounds, each clearing `bytes` of `flush` and then
 * enqueuing run(i) (false: it failed); the best of three replays after a warm-up one; INFINITY on any
 * error. A run that enqueues nothing times the clearing alone, to subtract. */
template <typename Run>
static float vgc_tune_graph_ms(vg_bk_stream *s, void *flush, size_t bytes, int reps, cudaEvent_t e0, cudaEvent_t e1,
                               Run run)
{
    cudaGraph_t g = nullptr;
    cudaGraphExec_t x = nullptr;
    if (cudaStreamBeginCapture(s->s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return INFINITY;
    bool ok = true;
    for (int i = 0; i < reps && ok; i++) ok = cudaMemsetAsync(flush, i, bytes, s->s) == cudaSuccess && run(i);
    cudaError_t e = cudaStreamEndCapture(s->s, &g);
    if (ok && e == cudaSuccess) e = cudaGraphInstantiate(&x, g, 0);
    if (g) cudaGraphDestroy(g);
    float best = INFINITY;
    for (int rep = 0; rep < 4 && ok && e == cudaSuccess; rep++) {
        float ms = INFINITY;
        if (cudaEventRecord(e0, s->s) != cudaSuccess || cudaGraphLaunch(x, s->s) != cudaSuccess ||
            cudaEventRecord(e1, s->s) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess ||
            cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess) {
            best = INFINITY;
            break;
        }
        if (rep > 0 && ms < best) best = ms; /* rep 0 warms up */
    }
    if (x) cudaGraphExecDestroy(x);
    (void)cudaGetLastError();
    return best;
}

/* Microseconds per call from a graph's ms and its clearing's alone (base_ms); INFINITY if either
 * failed. */
static inline float vgc_tune_graph_us(float ms, float base_ms, int reps)
{
    return ms < INFINITY && base_ms < INFINITY ? fmaxf(ms - base_ms, 0.0f) * 1000.0f / (float)reps : INFINITY;
}

#endif
