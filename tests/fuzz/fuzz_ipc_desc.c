/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: IPC tensor descriptors (vg_ipc.h), which arrive from another process.
 *
 * The bytes are decoded as a serialised descriptor: an accepted one must satisfy every
 * invariant the importer relies on (the tensor inside its pool, bytes = shape x dtype size
 * without overflow, an aligned offset), and encode back to exactly the same bytes (one
 * encoding per descriptor: nothing accepted is ignored). The same bytes, taken as the decoded
 * struct itself (as a caller may build one by hand), go through vg_ipc_desc_encode's checks,
 * which must refuse what decode would and never overflow (UndefinedBehaviorSanitizer). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vg/vg_ipc.h"

#include "fuzz_check.h"

static void invariants(const vg_ipc_desc *d)
{
    CHECK(d->version == VG_IPC_DESC_VERSION);
    CHECK((unsigned)d->dtype < VG_DTYPE_COUNT_);
    CHECK(d->ndim >= 0 && d->ndim <= VG_IPC_MAX_DIMS);
    CHECK(memchr(d->backend, 0, sizeof d->backend) != NULL && d->backend[0]);
    unsigned __int128 n = vg_dtype_size(d->dtype);
    for (int i = 0; i < d->ndim; i++) {
        CHECK(d->shape[i] >= 0);
        n *= (uint64_t)d->shape[i];
        if (n > UINT64_MAX) n = (unsigned __int128)UINT64_MAX + 1; /* stays beyond, no wrap */
    }
    for (int i = d->ndim; i < VG_IPC_MAX_DIMS; i++) CHECK(d->shape[i] == 0);
    CHECK(n == d->bytes);
    CHECK(d->pool_bytes > 0 && d->offset <= d->pool_bytes && d->bytes <= d->pool_bytes - d->offset);
    CHECK(d->offset % vg_dtype_size(d->dtype) == 0);
    CHECK(d->producer_pid > 0 && d->device >= 0);
}

/* Field by field: a struct made of raw bytes has garbage in its padding. */
static int same(const vg_ipc_desc *a, const vg_ipc_desc *b)
{
    return a->version == b->version && !memcmp(a->backend, b->backend, sizeof a->backend) &&
           !memcmp(a->pool_id, b->pool_id, sizeof a->pool_id) &&
           a->producer_pid == b->producer_pid && a->device == b->device &&
           a->pool_bytes == b->pool_bytes && a->offset == b->offset && a->bytes == b->bytes &&
           a->dtype == b->dtype && a->ndim == b->ndim &&
           !memcmp(a->shape, b->shape, sizeof a->shape) &&
           !memcmp(&a->handle, &b->handle, sizeof a->handle);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vg_ipc_desc d;
    unsigned char again[VG_IPC_DESC_BYTES];
    if (vg_ipc_desc_decode(data, size, &d) == VG_OK) {
        invariants(&d);
        CHECK(vg_ipc_desc_encode(&d, again) == VG_OK);
        CHECK(size == VG_IPC_DESC_BYTES && memcmp(again, data, size) == 0);
    }
    if (size >= sizeof d) {
        memcpy(&d, data, sizeof d);
        if (vg_ipc_desc_encode(&d, again) == VG_OK) {
            invariants(&d);
            vg_ipc_desc back;
            CHECK(vg_ipc_desc_decode(again, sizeof again, &back) == VG_OK);
            CHECK(same(&back, &d));
        }
    }
    return 0;
}
