/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor parallelism for the lm commands (--tp N): one process per rank, as NCCL advises.
 *
 * The parent (the command as the user ran it) checks the request, makes the communicator id on
 * the selected backend, and starts N ranks by exec of its own binary (/proc/self/exe, never a
 * bare fork of a process that has opened a device runtime) with the same arguments and, in the
 * environment:
 *
 *   VG_TP_RANK    the rank, 0 .. N-1
 *   VG_TP_SIZE    N
 *   VG_TP_ID      the communicator id, as hex (vg_comm_id_to_hex)
 *   VG_TP_DEVICE  the device the rank opens: rank % the backend's device count
 *
 * Each rank opens its runtime, joins the communicator (vg_comm_create) and runs the command with
 * vg_lm_options.comm. Rank 0 prints what the command prints without --tp; the others print only
 * errors. The parent waits for every rank: one that exits non-zero or is killed is reported by
 * rank, and the run fails; ranks still running VG_COMM_TIMEOUT_MS (default 60000) plus a grace
 * period after the first failure are terminated, so nothing hangs. */
#ifndef VG_TP_LAUNCH_H
#define VG_TP_LAUNCH_H

#include "vg/vg_comm.h"
#include "vg/vg_lm.h"

/* This process's rank, from the environment. */
typedef struct vg_tp_rank {
    int rank, size, device;
    vg_comm_id id;
} vg_tp_rank;

/* Whether this process is a rank: 0 (not one: VG_TP_RANK unset), 1 (*r filled), or 2 after a
 * message (a malformed environment, or VG_TP_SIZE other than the command's --tp `tp`). */
int vg_tp_rank_from_env(const char *cmd, int tp, vg_tp_rank *r);

/* The parent's part of `vg lm <sub> ... --tp N` (N >= 2, after the command's own checks): the
 * model's shape (info) must split N ways and the backend (NULL: the default selection) must
 * have communicators, else exit 2 with a message before any rank starts. argv is the command's
 * (argv[0] "lm"). Returns the exit status of the run. */
int vg_tp_launch(const char *cmd, int tp, const char *backend, const vg_lm_info *info, int argc,
                 char **argv);

/* A rank's runtime and communicator: the runtime on r->device of `backend`, the communicator
 * joined. 0, or 1 after a message (everything opened closed again). */
int vg_tp_open(const char *cmd, const vg_tp_rank *r, const char *backend, vg_runtime **rt,
               vg_comm **comm);

/* lm_bench_tp.c: the mean ms of one decode step's collectives alone at `tokens` padded tokens
 * and `seqs` head rows (2 x layers all-reduces of tokens x hidden in dt, the head's all-gather),
 * captured in one graph and replayed `reps` times where the device captures collectives, else
 * enqueued eagerly. Collective: every rank calls it with the same arguments. 0, or 1 after a
 * message. */
int vg_cli_lm_tp_comm_ms(const char *cmd, vg_runtime *rt, vg_comm *comm, const vg_lm_info *info,
                         vg_dtype dt, int64_t tokens, int64_t seqs, int reps, double *ms);

#endif
