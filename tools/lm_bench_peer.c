/* SPDX-License-Identifier: Apache-2.0 */
/* The peers' lines for vg lm bench --peer (see lm_bench_peer.h). */
#include "lm_bench_peer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg_cli.h"

int lm_peer_find(const lm_peer *p, int64_t batch)
{
    for (int i = 0; i < p->n; i++)
        if (p->batch[i] == batch) return i;
    return -1;
}

/* A positive number of milliseconds, or 0 when absent. */
static double ms(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

/* What a peer says failed ("error", "<variant>_error"), as notes: the row shows "-" there. */
static void notes(const char *cmd, const char *path, int lineno, int64_t batch, const cJSON *j)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, j) {
        const size_t len = v->string ? strlen(v->string) : 0;
        if (cJSON_IsString(v) && len >= 5 && strcmp(v->string + len - 5, "error") == 0)
            fprintf(stderr, "vg %s: note: %s:%d: the peer's batch %lld: %s: %s\n", cmd, path, lineno,
                    (long long)batch, v->string, v->valuestring);
    }
}

/* One line into p: 0, or 1 after a message. */
static int line_in(const char *cmd, const char *path, int lineno, const cJSON *j, lm_peer *p)
{
    const cJSON *B = cJSON_GetObjectItemCaseSensitive(j, "B");
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(j, "prompt");
    if (!cJSON_IsObject(j) || !B)
        return vg_cli_fail(cmd, "%s:%d: not a line of the peer's output (a JSON object with \"B\" and "
                                "\"eager_ms_per_step\"/\"static_compiled_ms_per_step\" or \"step_ms\")",
                           path, lineno);
    if (!vg_cli_json_whole(B, 1, 9e15))
        return vg_cli_fail(cmd, "%s:%d: \"B\" must be a whole number >= 1", path, lineno);
    if (prompt && !vg_cli_json_whole(prompt, 0, 9e15))
        return vg_cli_fail(cmd, "%s:%d: \"prompt\" must be a whole number >= 0", path, lineno);
    const int64_t b = (int64_t)B->valuedouble;
    int at = lm_peer_find(p, b);
    if (at < 0) {
        if (p->n == LM_PEER_MAX)
            return vg_cli_fail(cmd, "%s:%d: more than %d batches", path, lineno, LM_PEER_MAX);
        at = p->n++;
        p->batch[at] = b;
    }
    const int64_t pr = prompt ? (int64_t)prompt->valuedouble : 0;
    const double eager = ms(j, "eager_ms_per_step"), compiled = ms(j, "static_compiled_ms_per_step");
    const double step = ms(j, "step_ms");
    if (eager > 0 || compiled > 0) p->eager_ms[at] = eager, p->compiled_ms[at] = compiled, p->hf_prompt[at] = pr;
    if (step > 0) p->step_ms[at] = step, p->device_ms[at] = ms(j, "device_ms"), p->fast_prompt[at] = pr;
    /* which peer wrote the line, numbers or not (a failed batch): its table is printed */
    if (cJSON_GetObjectItemCaseSensitive(j, "step_ms") || cJSON_GetObjectItemCaseSensitive(j, "error")) p->fast = 1;
    else p->hf = 1;
    notes(cmd, path, lineno, b, j);
    return 0;
}

int lm_peer_read(const char *cmd, const char *path, lm_peer *p)
{
    memset(p, 0, sizeof *p);
    char why[96];
    FILE *fp = vg_cli_open_text(cmd, path, why, sizeof why);
    if (!fp) return vg_cli_fail(cmd, "cannot read the peer file %s: %s", path, why);
    char *line = NULL;
    size_t cap = 0;
    int bad = 0, lineno = 0;
    while (!bad && getline(&line, &cap, fp) >= 0) {
        lineno++;
        if (vg_cli_blank(line)) continue;
        cJSON *j = vg_cli_json_line(line);
        bad = line_in(cmd, path, lineno, j, p);
        cJSON_Delete(j);
    }
    if (!bad && ferror(fp)) bad = vg_cli_fail(cmd, "cannot read the peer file %s: %s", path, strerror(errno));
    if (!bad && !p->n) bad = vg_cli_fail(cmd, "the peer file %s holds no measurements", path);
    free(line);
    fclose(fp);
    return bad;
}

void lm_fast_peer_json(const lm_peer *p, int64_t batch, double vg_ms, cJSON *entry)
{
    const int at = lm_peer_find(p, batch);
    if (at < 0 || !(p->step_ms[at] > 0)) return;
    cJSON_AddNumberToObject(entry, "peer_step_ms", p->step_ms[at]);
    if (p->device_ms[at] > 0) cJSON_AddNumberToObject(entry, "peer_device_ms", p->device_ms[at]);
    if (vg_ms > 0) cJSON_AddNumberToObject(entry, "speedup_vs_peer", p->step_ms[at] / vg_ms);
}

void lm_fast_peer_print_head(const char *path)
{
    printf("\nbeside the fast peer (%s; ms per decode step, host wall clock with the tokens read back; "
           "speed-up = peer / vg graph):\n", path);
    printf("  batch   vg graph   peer step   speed-up   peer device\n");
}

void lm_fast_peer_print_row(const lm_peer *p, int64_t batch, double vg_ms)
{
    const int at = lm_peer_find(p, batch);
    char step[24] = "-", ratio[24] = "-", dev[24] = "-";
    if (at >= 0 && p->step_ms[at] > 0) {
        snprintf(step, sizeof step, "%.3f", p->step_ms[at]);
        if (vg_ms > 0) snprintf(ratio, sizeof ratio, "%.2fx", p->step_ms[at] / vg_ms);
        if (p->device_ms[at] > 0) snprintf(dev, sizeof dev, "%.3f", p->device_ms[at]);
    }
    printf("  %5lld   %8.3f   %9s   %8s   %11s\n", (long long)batch, vg_ms, step, ratio, dev);
}
