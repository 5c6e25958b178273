/* SPDX-License-Identifier: Apache-2.0 */
/* The test's own device code, as an engine would bring it: a kernel vg did not write, launched on
 * a vg stream's native stream, and the native objects an engine owns (its stream, its memory).
 * One implementation per native API: foreign_host.c (kunlun_stub), foreign_opencl.c (built where
 * OpenCL is), foreign_cuda.cu (built where CUDA is). */
#ifndef VG_TEST_FOREIGN_H
#define VG_TEST_FOREIGN_H

#include <stddef.h>

#include "vg/vg_native.h"

typedef struct foreign_ctx foreign_ctx;

typedef struct foreign_impl {
    vg_native_api api;
    /* Prepare for rt's device (compile the kernel, ...). */
    vg_status (*init)(vg_runtime *rt, foreign_ctx **out);
    void (*fini)(foreign_ctx *c);
    /* y[i] = a * x[i] + b for i < n, F32, x and y vg device addresses, enqueued on the native
     * stream behind s (the stub: run at once, its streams being synchronous). */
    vg_status (*scale)(foreign_ctx *c, vg_stream *s, const float *x, float *y, size_t n, float a,
                       float b);
    /* A native stream the test owns, and one of this API that vg must refuse (NULL: none). */
    void *(*stream_create)(foreign_ctx *c);
    void (*stream_destroy)(foreign_ctx *c, void *native);
    void *(*stream_foreign)(foreign_ctx *c);
    /* Native device memory the test owns. */
    void *(*mem_alloc)(foreign_ctx *c, size_t bytes);
    void (*mem_free)(foreign_ctx *c, void *native);
} foreign_impl;

/* The implementation for rt's native API, or NULL when this build has none. */
const foreign_impl *foreign_for(vg_runtime *rt);

#endif
