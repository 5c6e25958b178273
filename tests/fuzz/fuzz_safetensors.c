/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the safetensors header and tensor table. Beyond not crashing, a file the
 * reader accepts must be consistent: every tensor inside the data buffer, no two overlapping,
 * byte sizes equal to dtype x shape, names unique and found by lookup. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vg/vg_safetensors.h"

#include "fuzz_check.h"

typedef struct span {
    const unsigned char *b, *e;
} span;

static int by_begin(const void *x, const void *y)
{
    const span *a = x, *b = y;
    return (a->b > b->b) - (a->b < b->b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vg_st_file *f = NULL;
    if (vg_st_open_memory(data, size, "fuzz", &f) != VG_OK) {
        CHECK(f == NULL);
        return 0;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | data[i];
    const unsigned char *lo = data + 8 + hlen, *hi = data + size;
    int n = vg_st_count(f);
    span *spans = calloc((size_t)(n ? n : 1), sizeof *spans);
    CHECK(spans);
    for (int i = 0; i < n; i++) {
        const vg_st_tensor *t = vg_st_at(f, i);
        uint64_t numel = 1;
        for (int d = 0; d < t->ndim; d++) numel *= (uint64_t)t->shape[d];
        CHECK(numel == t->numel);
        CHECK(t->nbytes == numel * t->elem_size);
        const unsigned char *b = t->data;
        CHECK(b >= lo && b <= hi && t->nbytes <= (size_t)(hi - b));
        CHECK(vg_st_find(f, t->name) == t);
        spans[i] = (span){b, b + t->nbytes};
        if (t->nbytes) (void)((volatile const unsigned char *)b)[t->nbytes - 1]; /* readable */
    }
    qsort(spans, (size_t)n, sizeof *spans, by_begin);
    for (int i = 1; i < n; i++)
        if (spans[i].e > spans[i].b && spans[i - 1].e > spans[i - 1].b) CHECK(spans[i].b >= spans[i - 1].e);
    free(spans);
    vg_st_close(f);
    return 0;
}
