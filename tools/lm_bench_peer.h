/* SPDX-License-Identifier: Apache-2.0 */
/* vg lm bench --peer: the PyTorch peers' JSON lines, in one file or several files' worth in one,
 * read once (the file may be a FIFO or a pipe, which cannot be read twice):
 *   the Hugging Face peer (tools/peer/peer_lm_torch.py): "B", "prompt", "eager_ms_per_step",
 *     "static_compiled_ms_per_step"; "<variant>_error" where a variant failed;
 *   the fast peer (shared/tools/peer_lm_fast.py): "B", "prompt", "new", "step_ms", "device_ms";
 *     "error" where a batch failed.
 * A batch given again by the same peer takes the later line's numbers; a later line without
 * numbers (a failed run) leaves the earlier ones. */
#ifndef VG_TOOLS_LM_BENCH_PEER_H
#define VG_TOOLS_LM_BENCH_PEER_H

#include <cjson/cJSON.h>
#include <stdint.h>

#define LM_PEER_MAX 64 /* batches */

typedef struct lm_peer {
    int n;
    int64_t batch[LM_PEER_MAX];
    int64_t hf_prompt[LM_PEER_MAX], fast_prompt[LM_PEER_MAX]; /* with each peer's numbers; 0: not given */
    double eager_ms[LM_PEER_MAX], compiled_ms[LM_PEER_MAX]; /* the HF peer's (0: absent) */
    double step_ms[LM_PEER_MAX];   /* the fast peer's: replay + tokens read back, host wall clock */
    double device_ms[LM_PEER_MAX]; /* the fast peer's back-to-back replays, device time (0: absent) */
    int hf, fast;                  /* whether any line was the HF peer's, or the fast peer's */
} lm_peer;

/* The whole of `path`: 0, or 1 after printing why it is unusable (not a peer's line, a number
 * that is not a whole batch or prompt, more than LM_PEER_MAX batches, no line at all). A failed
 * batch or variant is a note on stderr. */
int lm_peer_read(const char *cmd, const char *path, lm_peer *p);
/* The entry of `batch`, or -1. */
int lm_peer_find(const lm_peer *p, int64_t batch);
/* "peer_step_ms", "peer_device_ms" and "speedup_vs_peer" (fast peer / vg) into a batch's entry. */
void lm_fast_peer_json(const lm_peer *p, int64_t batch, double vg_ms, cJSON *entry);
/* The table beside the fast peer: its head, then a row per batch (vg's graph ms, the peer's
 * step_ms, the ratio, the peer's device time). */
void lm_fast_peer_print_head(const char *path);
void lm_fast_peer_print_row(const lm_peer *p, int64_t batch, double vg_ms);

#endif
