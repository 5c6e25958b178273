/* SPDX-License-Identifier: Apache-2.0 */
/* A small synthetic model for the runner tests: X [n, C] -> mix (gemm with W, SiLU) -> Y;
 * bias (per-request rows, from a buffer whose size follows num_requests) -> Y; permute
 * (gather_rows by a per-call permutation: the splitting op) -> T; then a chain of axpby pieces
 * on T. Shared by test_runner.c and test_threads.c. */
#ifndef VG_TEST_SYNTH_MODEL_H
#define VG_TEST_SYNTH_MODEL_H

#include "vg/vg_runner.h"

enum { C = 16, CHAIN = 6, MAXPIECES = 3 + CHAIN };
enum { BUF_X, BUF_Y, BUF_IDX, BUF_BIAS, BUF_T };
#define MAX_SIZE 64
extern const int64_t k_sizes[4];

typedef struct model {
    vg_runtime *rt;
    float *w;               /* C x C weights, owned by the model */
    const float *x_in_use;  /* NULL: the runner's X buffer (set by the address-check test) */
    /* gather_rows enqueues seen by the permute piece: run eagerly, or recorded into a graph */
    int eager_gathers, captured_gathers;
    vg_piece pieces[MAXPIECES];
    vg_model_iface iface;
} model;

typedef struct call {
    int64_t n;
    int32_t requests;
    float x[MAX_SIZE * 2 * C];
    int32_t perm[MAX_SIZE * 2];
    float bias[MAX_SIZE * 2 * C];
} call;

void model_init(model *m, vg_runtime *rt);
void model_fini(model *m);
vg_runner *make_runner(model *m, vg_graph_mode mode, uint64_t budget, int debug);
/* Random inputs from *seed: n tokens, `requests` bias rows, a random permutation. */
void make_call(call *c, int64_t n, int32_t requests, unsigned *seed);
unsigned next_rand(unsigned *seed);
/* Run one call and read T back into out ([n, C]). */
vg_status run_call(vg_runner *r, model *m, const call *c, float *out, vg_run_info *info);
/* Agreement within 1e-6 of the largest magnitude; NaN never passes (cmocka assertion). */
void assert_same(const float *a, const float *b, size_t n);

#endif
