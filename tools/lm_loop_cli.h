/* SPDX-License-Identifier: Apache-2.0 */
/* vg_lm_generate in the vg command: vg lm generate --device-loop and vg lm bench --loop. */
#ifndef VG_LM_LOOP_CLI_H
#define VG_LM_LOOP_CLI_H

#include <cjson/cJSON.h>

#include "vg/vg_lm.h"

/* vg lm generate --device-loop: B prefilled sequences (ids[b]) go on from next[b] for at most
 * n[b] >= 0 more tokens each through vg_lm_generate (asking for the device loop), stopping after
 * one of eos[0 .. num_eos) (kept), written to out[b][0 .. got[b]) and, unless logits is NULL,
 * logits[b] (got[b] rows of vocab). *info says where it ran. A sequence stopped short of n[b]
 * without an EOS id is an error. Returns 0, or 1 after printing the error. */
int vg_cli_lm_generate_rest(const char *cmd, vg_lm *lm, int B, const int32_t *ids,
                            const int32_t *next, const int64_t *n, const int32_t *eos, int num_eos,
                            int32_t *const *out, float *const *logits, int64_t *got,
                            vg_lm_generate_info *info);

/* vg lm bench --loop: per batch size, tokens/s of vg_lm_generate for `new_tokens` tokens, the
 * host loop against the device loop. */
typedef struct lm_loop_row {
    int64_t batch;
    double host_ms, device_ms; /* the whole generation, host wall clock */
    int64_t tokens;            /* generated in each */
    int device_loop;           /* 0: the device loop fell back (fallback says why) */
    char fallback[256];
} lm_loop_row;

/* Measure rows[i] for batch[i] (graphs on: mode full_and_piecewise, which `o` is changed to).
 * Each: fresh sequences prefill `prompt` tokens, an untimed generation (captures), then a timed
 * one per loop. Returns 0, or 1 after printing the error. */
int vg_cli_lm_bench_loop(const char *cmd, vg_lm *lm, vg_lm_options *o, const int64_t *batch,
                         int nbatch, int prompt, int new_tokens, lm_loop_row *rows);
/* The rows as a table on stdout, or as the array "device_loop" of json. */
void vg_cli_lm_bench_loop_report(const lm_loop_row *rows, int nbatch, int new_tokens, cJSON *json);

#endif
