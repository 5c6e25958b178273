/* SPDX-License-Identifier: Apache-2.0 */
/* vg lm bench --peer: the fast PyTorch peer's JSON lines (shared/tools/peer_lm_fast.py: "B",
 * "prompt", "new", "step_ms", "device_ms"; "error" when a batch failed), which may share the
 * file with the HF peer's lines (lm_bench.c reads those). */
#ifndef VG_TOOLS_LM_BENCH_PEER_H
#define VG_TOOLS_LM_BENCH_PEER_H

#include <cjson/cJSON.h>
#include <stdint.h>

#define LM_FAST_PEER_MAX 64

typedef struct lm_fast_peer {
    int n;
    int64_t batch[LM_FAST_PEER_MAX];
    double step_ms[LM_FAST_PEER_MAX];   /* replay + tokens read back, host wall clock */
    double device_ms[LM_FAST_PEER_MAX]; /* back-to-back replays, device time (0: absent) */
} lm_fast_peer;

/* Read the fast peer's lines of `path` (lines without "step_ms" are skipped: the HF peer's, a
 * failed batch's); a batch given twice keeps the later line. 0 on success, 1 after printing
 * why the file is unusable. */
int lm_fast_peer_read(const char *cmd, const char *path, lm_fast_peer *p);
/* "peer_step_ms", "peer_device_ms" and "speedup_vs_peer" (peer / vg) into a batch's entry. */
void lm_fast_peer_json(const lm_fast_peer *p, int64_t batch, double vg_ms, cJSON *entry);
/* The table beside the fast peer: its head, then a row per batch (vg's graph ms, the peer's
 * step_ms, the ratio, the peer's device time). */
void lm_fast_peer_print_head(const char *path);
void lm_fast_peer_print_row(const lm_fast_peer *p, int64_t batch, double vg_ms);

#endif
