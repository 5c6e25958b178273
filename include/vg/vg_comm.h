/* SPDX-License-Identifier: Apache-2.0 */
/* vg: communicators for tensor parallelism (docs/tensor-parallel.md).
 *
 * One process per device and rank, as NCCL advises. Rank 0 makes a unique id, sends its bytes to
 * the other ranks over any channel (a pipe, a socket, the launcher's environment), and every
 * rank creates its communicator from it:
 *
 *   rank 0                                      every rank r of n
 *   vg_comm_id_make(rt, &id)  -- id.bytes -->   vg_comm_create(rt, &id, n, r, &comm)
 *                                               vg_comm_all_reduce(comm, stream, ...)  (any
 *                                               stream of rt; inside a capture too, where the
 *                                               device has VG_CAP_COMM_CAPTURE)
 *                                               vg_comm_destroy(comm)
 *
 * Collectives are enqueued on a stream like ops: every rank must issue the same collectives in
 * the same order with the same counts. Each backend uses its vendor's library (cuda: NCCL,
 * hip: RCCL, kunlun_stub: processes of one machine over shared memory); opencl has none.
 *
 * Failure is an error, never a hang: a rank that dies or stops answering makes the collectives
 * (or the stream synchronisation after them) of the others fail within a bounded time
 * (VG_COMM_TIMEOUT_MS, default 60000) with a message naming the rank, and the communicator is
 * then unusable (every later call fails with VG_ERR_STATE) until destroyed. */
#ifndef VG_COMM_H
#define VG_COMM_H

#include "vg.h"
#include "vg_device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VG_COMM_ID_BYTES 128 /* NCCL's and RCCL's unique id is 128 bytes */

/* The bytes rank 0 shares with the others: opaque, meaningful only to the backend that made it
 * (vg_comm_create checks the name). Untrusted input: a malformed id fails with a message. */
typedef struct vg_comm_id {
    char backend[16];                       /* the maker's backend, NUL-terminated */
    unsigned char bytes[VG_COMM_ID_BYTES];  /* the backend's own id */
} vg_comm_id;

typedef struct vg_comm vg_comm;

/* A fresh id on rt's backend. VG_ERR_UNSUPPORTED when the device has no VG_CAP_COMM. */
VG_API vg_status vg_comm_id_make(vg_runtime *rt, vg_comm_id *out);
/* Hex text of an id (2 * sizeof(vg_comm_id) characters and a NUL, into out[out_len]) and back,
 * for channels that carry text (environment variables, command lines). */
VG_API vg_status vg_comm_id_to_hex(const vg_comm_id *id, char *out, size_t out_len);
VG_API vg_status vg_comm_id_from_hex(const char *hex, vg_comm_id *out);

/* Join the communicator of `id` as rank `rank` of `nranks` (1 <= nranks, 0 <= rank < nranks) on
 * rt's device. Collective: returns once every rank has joined, or fails after the timeout. */
VG_API vg_status vg_comm_create(vg_runtime *rt, const vg_comm_id *id, int nranks, int rank,
                                vg_comm **out);
/* Leave and free. Not while a capture that used the communicator is open. NULL is a no-op.
 * Destroy the graphs that captured its collectives first: NCCL's teardown waits for them, so a
 * communicator destroyed before them fails after VG_COMM_TIMEOUT_MS saying so (it is freed all
 * the same; the teardown finishes once the graphs are destroyed). */
VG_API vg_status vg_comm_destroy(vg_comm *comm);
VG_API int vg_comm_rank(const vg_comm *comm);
VG_API int vg_comm_size(const vg_comm *comm);

/* recv[i] = sum over ranks of send[i], for i < count elements of dtype (F32, F16, BF16); send
 * and recv may be the same buffer (in place). Device memory of the communicator's runtime. */
VG_API vg_status vg_comm_all_reduce(vg_comm *comm, vg_stream *stream, vg_dtype dtype,
                                    const void *send, void *recv, int64_t count);
/* recv holds nranks blocks of `count` elements of any dtype, block r being rank r's send
 * (rank-major). */
VG_API vg_status vg_comm_all_gather(vg_comm *comm, vg_stream *stream, vg_dtype dtype,
                                    const void *send, void *recv, int64_t count);

#ifdef __cplusplus
}
#endif
#endif /* VG_COMM_H */
