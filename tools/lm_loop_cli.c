// SPDX-License-Identifier: Apache-2.0
/* vg_lm_generate in the vg command: the rest of vg lm generate --device-loop after the prompts,
 * and the device-loop rows of vg lm bench --loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_loop_cli.h"
#include "vg_cli.h"

int vg_cli_lm_generate_rest(const char *cmd, vg_lm *lm, int B, const int32_t *ids,
                            const int32_t *next, const int64_t *n, const int32_t *eos, int num_eos,
                            int32_t *const *out, float *const *logits, int64_t *got,
                            vg_lm_generate_info *info)
{
    memset(info, 0, sizeof *info);
    for (int b = 0; b < B; b++) got[b] = 0;
    vg_lm_info li;
    vg_lm_get_info(lm, &li);
    size_t V = (size_t)li.vocab;
    int64_t N = 0;
    for (int b = 0; b < B; b++) N = n[b] > N ? n[b] : N;
    if (N < 1) return 0;
    vg_lm_gen_seq *seqs = malloc((size_t)B * sizeof *seqs);
    int *row = malloc((size_t)B * sizeof *row);
    int32_t *toks = malloc((size_t)B * (size_t)N * sizeof *toks), *counts = malloc((size_t)B * sizeof *counts);
    float *lg = logits ? malloc((size_t)B * (size_t)N * V * sizeof *lg) : NULL;
    if (!seqs || !row || !toks || !counts || (logits && !lg)) {
        free(seqs), free(row), free(toks), free(counts), free(lg);
        return vg_cli_fail(cmd, "out of memory");
    }
    int k = 0;
    for (int b = 0; b < B; b++)
        if (n[b] > 0) row[k] = b, seqs[k++] = (vg_lm_gen_seq){ids[b], next[b], (int32_t)n[b]};
    vg_lm_generate_options o;
    vg_lm_generate_options_init(&o);
    o.max_new_tokens = (int32_t)N;
    o.loop = VG_LM_LOOP_DEVICE;
    o.eos = eos, o.num_eos = num_eos;
    int rc = 0;
    if (vg_lm_generate(lm, seqs, k, &o, toks, counts, lg, info) != VG_OK)
        rc = vg_cli_fail(cmd, "%s", vg_last_error());
    for (int i = 0; !rc && i < k; i++) {
        int b = row[i];
        const int32_t *t = toks + (size_t)i * (size_t)N;
        int at_eos = 0;
        for (int e = 0; counts[i] > 0 && e < num_eos; e++) at_eos |= t[counts[i] - 1] == eos[e];
        if (counts[i] != n[b] && !at_eos) { /* else only a length limit stops a sequence early */
            rc = vg_cli_fail(cmd, "prompt %d stopped after %d of %lld tokens (its length limit)", b,
                             (int)counts[i], (long long)n[b]);
            break;
        }
        got[b] = counts[i];
        memcpy(out[b], t, (size_t)counts[i] * sizeof(int32_t));
        if (logits)
            memcpy(logits[b], lg + (size_t)i * (size_t)N * V, (size_t)counts[i] * V * sizeof(float));
    }
    free(seqs), free(row), free(toks), free(counts), free(lg);
    return rc;
}

/* Prefill b fresh sequences and generate `n` tokens each with `loop`; *ms: the generation's host
 * wall time. */
static vg_status one_generation(vg_lm *lm, int64_t b, int prompt, int n, vg_lm_loop loop,
                                double *ms, int64_t *made, vg_lm_generate_info *info)
{
    vg_lm_info li;
    vg_lm_get_info(lm, &li);
    int32_t *ids = malloc((size_t)b * sizeof *ids), *next = malloc((size_t)b * sizeof *next);
    int32_t *p = malloc((size_t)prompt * sizeof *p), *toks = malloc((size_t)b * (size_t)n * sizeof *toks);
    int32_t *counts = malloc((size_t)b * sizeof *counts);
    vg_lm_gen_seq *seqs = malloc((size_t)b * sizeof *seqs);
    vg_status st = ids && next && p && toks && counts && seqs ? VG_OK
                                                              : vg_error_set(VG_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; st == VG_OK && i < prompt; i++) p[i] = (int32_t)((i * 7919 + 13) % li.vocab);
    int64_t added = 0;
    for (; st == VG_OK && added < b; added++) {
        st = vg_lm_seq_add(lm, &ids[added]);
        if (st != VG_OK) break;
        vg_lm_seq_tokens one = {ids[added], p, prompt};
        st = vg_lm_step(lm, &one, 1, NULL, &next[added], NULL);
        seqs[added] = (vg_lm_gen_seq){ids[added], next[added], 0};
    }
    vg_lm_generate_options o;
    vg_lm_generate_options_init(&o);
    o.max_new_tokens = n;
    o.loop = loop;
    if (st == VG_OK) st = vg_lm_generate(lm, seqs, (int)b, &o, toks, counts, NULL, info);
    *ms = st == VG_OK ? info->total_ms : 0;
    *made = 0;
    for (int64_t i = 0; st == VG_OK && i < b; i++) *made += counts[i];
    for (int64_t i = 0; i < added; i++) vg_lm_seq_free(lm, ids[i]);
    free(ids), free(next), free(p), free(toks), free(counts), free(seqs);
    return st;
}

int vg_cli_lm_bench_loop(const char *cmd, vg_lm *lm, vg_lm_options *o, const int64_t *batch,
                         int nbatch, int prompt, int new_tokens, lm_loop_row *rows)
{
    o->mode = VG_MODE_FULL_AND_PIECEWISE;
    o->profile_pieces = 0;
    if (vg_lm_reconfigure(lm, o) != VG_OK) return vg_cli_fail(cmd, "%s", vg_last_error());
    for (int i = 0; i < nbatch; i++) {
        lm_loop_row *r = &rows[i];
        memset(r, 0, sizeof *r);
        r->batch = batch[i];
        for (int loop = VG_LM_LOOP_HOST; loop <= VG_LM_LOOP_DEVICE; loop++)
            for (int timed = 0; timed < 2; timed++) { /* the first captures */
                double ms = 0;
                vg_lm_generate_info info;
                if (one_generation(lm, r->batch, prompt, new_tokens, (vg_lm_loop)loop, &ms, &r->tokens,
                                   &info) != VG_OK)
                    return vg_cli_fail(cmd, "batch %lld, %s loop: %s", (long long)r->batch,
                                       loop == VG_LM_LOOP_HOST ? "host" : "device", vg_last_error());
                if (!timed) continue;
                if (loop == VG_LM_LOOP_HOST) {
                    r->host_ms = ms;
                } else {
                    r->device_ms = ms;
                    r->device_loop = info.device_loop;
                    snprintf(r->fallback, sizeof r->fallback, "%s", info.fallback);
                }
            }
    }
    return 0;
}

void vg_cli_lm_bench_loop_report(const lm_loop_row *rows, int nbatch, int new_tokens, cJSON *json)
{
    if (json) {
        cJSON *arr = cJSON_AddArrayToObject(json, "device_loop");
        for (int i = 0; i < nbatch; i++) {
            const lm_loop_row *r = &rows[i];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "batch", (double)r->batch);
            cJSON_AddNumberToObject(e, "new_tokens", new_tokens);
            cJSON_AddNumberToObject(e, "host_loop_tokens_per_s", r->tokens * 1e3 / r->host_ms);
            cJSON_AddNumberToObject(e, "device_loop_tokens_per_s", r->tokens * 1e3 / r->device_ms);
            cJSON_AddNumberToObject(e, "speedup", r->host_ms / r->device_ms);
            cJSON_AddBoolToObject(e, "on_device", r->device_loop);
            if (!r->device_loop) cJSON_AddStringToObject(e, "fallback", r->fallback);
            cJSON_AddItemToArray(arr, e);
        }
        return;
    }
    printf("\ngeneration of %d new tokens per sequence (vg_lm_generate, greedy, host wall clock):\n",
           new_tokens);
    printf("  batch   host loop tok/s   device loop tok/s   speed-up   device loop\n");
    for (int i = 0; i < nbatch; i++) {
        const lm_loop_row *r = &rows[i];
        printf("  %5lld   %15.1f   %17.1f   %7.2fx   %s\n", (long long)r->batch,
               r->tokens * 1e3 / r->host_ms, r->tokens * 1e3 / r->device_ms, r->host_ms / r->device_ms,
               r->device_loop ? "on the device, one launch" : r->fallback);
    }
}
