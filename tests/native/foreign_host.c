/* SPDX-License-Identifier: Apache-2.0 */
/* The test's own "device code" for kunlun_stub, whose device is the host: its kernel is a host
 * loop over the stub's memory, its streams are stub streams, its memory is malloc'ed. */
#include <stdlib.h>

#include "foreign.h"

struct foreign_ctx {
    vg_runtime *rt;
    vg_stream *owner; /* the vg stream behind the native stream host_stream_create gave */
};

static vg_status host_init(vg_runtime *rt, foreign_ctx **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return VG_ERR_OUT_OF_MEMORY;
    (*out)->rt = rt;
    return VG_OK;
}

static void host_fini(foreign_ctx *c) { free(c); }

static vg_status host_scale(foreign_ctx *c, vg_stream *s, const float *x, float *y, size_t n,
                            float a, float b)
{
    (void)c;
    void *native = NULL;
    vg_status st = vg_stream_native(s, &native); /* an engine's launch would name it */
    if (st != VG_OK) return st;
    for (size_t i = 0; i < n; i++) y[i] = a * x[i] + b;
    return VG_OK;
}

/* The stub's native streams are its stream objects: the test's own is one a vg stream made. */
static void *host_stream_create(foreign_ctx *c)
{
    void *native = NULL;
    if (c->owner || vg_stream_create(c->rt, &c->owner) != VG_OK) return NULL;
    if (vg_stream_native(c->owner, &native) != VG_OK) {
        vg_stream_destroy(c->owner);
        c->owner = NULL;
    }
    return native;
}

static void host_stream_destroy(foreign_ctx *c, void *native)
{
    (void)native;
    vg_stream_destroy(c->owner);
    c->owner = NULL;
}

static void *host_stream_foreign(foreign_ctx *c)
{
    (void)c;
    static int not_a_stream;
    return &not_a_stream;
}

static void *host_mem_alloc(foreign_ctx *c, size_t bytes)
{
    (void)c;
    return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

static void host_mem_free(foreign_ctx *c, void *p)
{
    (void)c;
    free(p);
}

const foreign_impl foreign_host = {
    VG_NATIVE_HOST, host_init, host_fini, host_scale, host_stream_create, host_stream_destroy,
    host_stream_foreign, host_mem_alloc, host_mem_free,
};
