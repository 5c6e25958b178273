/* SPDX-License-Identifier: Apache-2.0 */
/* docs/engines.md, the complete example: an engine's own forward wrapped by vg's runner.
 *
 * The "engine" has weights of its own (device memory it allocated, registered with vg), a forward
 * of three pieces — a vg GEMM, a kernel of its own (flagged VG_PIECE_FOREIGN), a vg residual add —
 * and hands its output to another framework through DLPack without a copy. vg's runner does the
 * rest: buckets, padding, capture, replay, eager fallback.
 *
 *   engine_forward [NAME=VALUE ...]     backend options, e.g. VG_STUB_LAUNCH_US=5
 *
 * The engine's own kernel here is host code, so this program runs where the device is the host
 * (kunlun_stub; VG_BACKEND=kunlun_stub). A CUDA engine launches a kernel instead, on the stream
 * vg_stream_native gives (see the comment in engine_kernel). Exit status: 0 when every call equals
 * the reference, 1 otherwise, 2 for a usage error, 77 on a device whose native API this example
 * has no kernel for. Built and run by the test suite (ctest -R engines.example). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg/vg_dlpack.h"
#include "vg/vg_native.h"
#include "vg/vg_runner.h"

enum { HIDDEN = 16, MAX_TOKENS = 128 };
enum { BUF_IN, BUF_H, BUF_OUT }; /* runner buffers: static addresses for the graphs */

typedef struct engine {
    vg_runtime *rt;
    float *weight;  /* [HIDDEN, HIDDEN], the engine's own allocation, registered with vg */
    void *weight_native;
} engine;

/* ---- the engine's own kernel: h = max(h, 0) * 0.5 ----------------------------------------------- */

static vg_status engine_kernel(engine *e, vg_stream *s, float *h, size_t n)
{
    void *native = NULL; /* cudaStream_t on CUDA, cl_command_queue on OpenCL */
    vg_status st = vg_stream_native(s, &native);
    if (st != VG_OK) return st;
    vg_native_device nd = {.struct_size = sizeof nd};
    st = vg_runtime_native_device(e->rt, &nd);
    if (st != VG_OK) return st;
    if (nd.api != VG_NATIVE_HOST)
        /* A CUDA engine writes here:
         *     relu_half<<<blocks, 256, 0, (cudaStream_t)native>>>(h, n);
         * and vg captures it into the runner's graphs (VG_CAP_FOREIGN_CAPTURE). */
        return vg_error_set(VG_ERR_UNSUPPORTED, "this example's kernel is host code");
    for (size_t i = 0; i < n; i++) h[i] = (h[i] > 0 ? h[i] : 0) * 0.5f; /* the stub's memory is host memory */
    return VG_OK;
}

/* ---- the forward as pieces -------------------------------------------------------------------------- */

static vg_status reserve(void *model, vg_runner *r, const vg_batch_desc *padded)
{
    (void)model;
    size_t bytes = (size_t)padded->num_tokens * HIDDEN * sizeof(float);
    vg_status st = VG_OK;
    for (int b = BUF_IN; b <= BUF_OUT && st == VG_OK; b++) st = vg_runner_buffer_reserve(r, b, bytes);
    return st;
}

/* Inputs into the static buffer; padding rows zeroed so they cannot disturb real rows. */
static vg_status prepare(void *model, vg_runner *r, const vg_batch_desc *real,
                         const vg_batch_desc *padded, vg_stream *s, const void *inputs)
{
    (void)model;
    float *in = vg_runner_buffer(r, BUF_IN);
    vg_status st = vg_mem_set(s, in, 0, (size_t)padded->num_tokens * HIDDEN * sizeof(float));
    if (st == VG_OK && inputs)
        st = vg_mem_copy_h2d(s, in, inputs, (size_t)real->num_tokens * HIDDEN * sizeof(float));
    return st;
}

static vg_status piece_gemm(void *model, vg_runner *r, const vg_piece *p, const vg_batch_desc *padded,
                            vg_stream *s)
{
    (void)p;
    engine *e = model;
    vg_gemm_args g = {.struct_size = sizeof g};
    g.dtype_ab = g.dtype_c = VG_DTYPE_F32;
    g.m = padded->num_tokens, g.n = HIDDEN, g.k = HIDDEN;
    g.a = vg_runner_buffer(r, BUF_IN), g.lda = HIDDEN;
    g.b = e->weight, g.ldb = HIDDEN;
    g.c = vg_runner_buffer(r, BUF_H), g.ldc = HIDDEN;
    g.alpha = 1.0f;
    return vg_op_gemm(s, &g);
}

static vg_status piece_own(void *model, vg_runner *r, const vg_piece *p, const vg_batch_desc *padded,
                           vg_stream *s)
{
    (void)p;
    return engine_kernel(model, s, vg_runner_buffer(r, BUF_H), (size_t)padded->num_tokens * HIDDEN);
}

static vg_status piece_residual(void *model, vg_runner *r, const vg_piece *p,
                                const vg_batch_desc *padded, vg_stream *s)
{
    (void)model, (void)p;
    size_t n = (size_t)padded->num_tokens * HIDDEN;
    float *out = vg_runner_buffer(r, BUF_OUT);
    vg_status st = vg_mem_copy_d2d(s, out, vg_runner_buffer(r, BUF_IN), n * sizeof(float));
    return st == VG_OK ? vg_op_axpby(s, n, 1.0f, vg_runner_buffer(r, BUF_H), 1.0f, out) : st;
}

/* For VG_DEBUG_ADDRESSES=1: the memory outside the runner's buffers the pieces read. */
static int addresses(void *model, vg_runner *r, const void **out, int max)
{
    (void)r;
    if (max < 1) return 0;
    out[0] = ((engine *)model)->weight;
    return 1;
}

static const vg_op_id k_gemm[] = {VG_OP_GEMM}, k_axpby[] = {VG_OP_AXPBY};
static const vg_piece k_pieces[] = {
    {"gemm", piece_gemm, 0, k_gemm, 1, NULL, 0},
    {"engine kernel", piece_own, VG_PIECE_FOREIGN, NULL, 0, NULL, 0},
    {"residual", piece_residual, 0, k_axpby, 1, NULL, 0},
};

/* ---- the host reference ----------------------------------------------------------------------------- */

static void reference(const float *w, const float *in, float *out, int tokens)
{
    for (int t = 0; t < tokens; t++)
        for (int j = 0; j < HIDDEN; j++) {
            float h = 0;
            for (int k = 0; k < HIDDEN; k++) h += in[t * HIDDEN + k] * w[j * HIDDEN + k];
            out[t * HIDDEN + j] = in[t * HIDDEN + j] + (h > 0 ? h : 0) * 0.5f;
        }
}

/* What another framework does with an exported tensor: read it, then call the deleter. */
static int consume(DLManagedTensorVersioned *m, const float *want, int tokens)
{
    int bad = m->dl_tensor.ndim != 2 || m->dl_tensor.shape[0] != tokens ||
              m->dl_tensor.shape[1] != HIDDEN || m->dl_tensor.device.device_type != kDLCPU;
    const float *data = (const float *)((const char *)m->dl_tensor.data + m->dl_tensor.byte_offset);
    for (int i = 0; !bad && i < tokens * HIDDEN; i++) bad = data[i] < want[i] - 1e-4f || data[i] > want[i] + 1e-4f;
    m->deleter(m);
    return bad;
}

int main(int argc, char **argv)
{
    vg_option opts[8];
    int nopts = 0;
    for (int i = 1; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq || eq == argv[i] || nopts == 8) {
            fprintf(stderr, "usage: %s [NAME=VALUE ...] (at most 8 backend options)\n", argv[0]);
            return 2;
        }
        *eq = '\0';
        opts[nopts++] = (vg_option){argv[i], eq + 1};
    }
    vg_runtime_options ro;
    vg_runtime_options_init(&ro);
    ro.options = opts;
    ro.num_options = nopts;
    engine e = {0};
    if (vg_runtime_open(&ro, &e.rt) != VG_OK) {
        fprintf(stderr, "engine: %s\n", vg_last_error());
        return 1;
    }
    vg_native_device nd = {.struct_size = sizeof nd};
    if (vg_runtime_native_device(e.rt, &nd) != VG_OK || nd.api != VG_NATIVE_HOST) {
        printf("SKIP: this example's own kernel is host code; backend '%s' is not the host\n",
               vg_runtime_backend_name(e.rt));
        vg_runtime_close(e.rt);
        return 77;
    }
    /* The engine's weights: its own memory (here host memory, the stub's device), registered. */
    static float w[HIDDEN * HIDDEN];
    for (int i = 0; i < HIDDEN * HIDDEN; i++) w[i] = (float)((i * 13) % 7 - 3) * 0.125f;
    e.weight_native = w;
    int rc = 0;
    vg_runner *r = NULL;
    vg_status st = vg_mem_register(e.rt, e.weight_native, sizeof w, (void **)&e.weight);
    if (st == VG_OK) {
        vg_model_iface m = {.struct_size = sizeof m, .model = &e, .pieces = k_pieces,
                            .num_pieces = 3, .reserve = reserve, .prepare = prepare,
                            .addresses = addresses};
        static const int64_t sizes[] = {16, 32, 64, MAX_TOKENS};
        vg_runner_options o;
        vg_runner_options_init(&o);
        o.mode = VG_MODE_FULL; /* downgraded to PIECEWISE where foreign work is not captured */
        o.capture_sizes = sizes;
        o.num_capture_sizes = 4;
        st = vg_runner_create(e.rt, &m, &o, &r);
    }
    if (st == VG_OK)
        printf("backend %s, mode %s (foreign work %scaptured)\n", vg_runtime_backend_name(e.rt),
               vg_graph_mode_name(vg_runner_mode(r)), vg_runtime_foreign_capture(e.rt) ? "" : "not ");
    static const int calls[] = {3, 16, 40, 40, 100, 7};
    for (size_t c = 0; st == VG_OK && c < sizeof calls / sizeof calls[0]; c++) {
        int tokens = calls[c];
        static float in[MAX_TOKENS * HIDDEN], want[MAX_TOKENS * HIDDEN];
        for (int i = 0; i < tokens * HIDDEN; i++) in[i] = (float)((i * 5 + (int)c) % 17 - 8) * 0.25f;
        reference(w, in, want, tokens);
        vg_batch_desc d = {.num_tokens = tokens};
        vg_run_info info;
        st = vg_runner_run(r, &d, in, &info);
        if (st == VG_OK) st = vg_stream_sync(vg_runner_stream(r));
        /* The output crosses to a consumer without a copy. It is valid until the next
         * vg_runner_run, which rewrites the buffer: the consumer is done with it before that. */
        vg_dlpack_tensor t = {.struct_size = sizeof t, .ptr = vg_runner_buffer(r, BUF_OUT),
                              .dtype = VG_DTYPE_F32, .ndim = 2, .shape = {tokens, HIDDEN},
                              .read_only = 1};
        DLManagedTensorVersioned *mt = NULL;
        if (st == VG_OK) st = vg_dlpack_export(e.rt, &t, &mt);
        if (st == VG_OK && consume(mt, want, tokens)) {
            fprintf(stderr, "engine: call of %d tokens differs from the reference\n", tokens);
            rc = 1;
        }
        if (st == VG_OK)
            printf("%3d tokens: bucket %lld, %s, %d graph launch(es), %d eager piece(s)\n", tokens,
                   (long long)info.padded_tokens,
                   info.path == VG_RUN_FULL ? "full" : info.path == VG_RUN_PIECEWISE ? "piecewise" : "eager",
                   info.graph_launches, info.eager_pieces);
    }
    if (st != VG_OK) {
        fprintf(stderr, "engine: %s\n", vg_last_error());
        rc = 1;
    }
    vg_runner_destroy(r); /* graphs first, then the registration they read */
    if (e.weight) vg_mem_unregister(e.rt, e.weight);
    vg_runtime_close(e.rt);
    if (rc == 0) printf("every call equals the reference\n");
    return rc;
}
