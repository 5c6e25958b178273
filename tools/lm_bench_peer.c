/* SPDX-License-Identifier: Apache-2.0 */
/* The fast peer's lines for vg lm bench --peer (see lm_bench_peer.h). */
#include "lm_bench_peer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg_cli.h"

static int find(const lm_fast_peer *p, int64_t batch)
{
    for (int i = 0; i < p->n; i++)
        if (p->batch[i] == batch) return i;
    return -1;
}

static double number(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(j, key);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

int lm_fast_peer_read(const char *cmd, const char *path, lm_fast_peer *p)
{
    memset(p, 0, sizeof *p);
    FILE *fp = fopen(path, "r");
    if (!fp) return vg_cli_fail(cmd, "cannot read the peer file %s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int bad = 0, lineno = 0;
    while (!bad && getline(&line, &cap, fp) >= 0) {
        lineno++;
        cJSON *j = cJSON_Parse(line);
        const cJSON *B = cJSON_GetObjectItem(j, "B");
        const double step = number(j, "step_ms");
        /* the line's form is lm_bench.c's to judge; here only the fast peer's numbers */
        if (cJSON_IsObject(j) && cJSON_IsNumber(B) && B->valuedouble >= 1 && step > 0) {
            const int64_t b = (int64_t)B->valuedouble;
            int at = find(p, b);
            if (at < 0 && p->n == LM_FAST_PEER_MAX)
                bad = vg_cli_fail(cmd, "%s:%d: more than %d batches of the fast peer", path, lineno,
                                  LM_FAST_PEER_MAX);
            else {
                if (at < 0) at = p->n++;
                p->batch[at] = b, p->step_ms[at] = step, p->device_ms[at] = number(j, "device_ms");
            }
        }
        cJSON_Delete(j);
    }
    if (!bad && ferror(fp)) bad = vg_cli_fail(cmd, "cannot read the peer file %s: %s", path, strerror(errno));
    free(line);
    fclose(fp);
    return bad;
}

void lm_fast_peer_json(const lm_fast_peer *p, int64_t batch, double vg_ms, cJSON *entry)
{
    const int at = find(p, batch);
    if (at < 0) return;
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

void lm_fast_peer_print_row(const lm_fast_peer *p, int64_t batch, double vg_ms)
{
    const int at = find(p, batch);
    char step[24] = "-", ratio[24] = "-", dev[24] = "-";
    if (at >= 0) {
        snprintf(step, sizeof step, "%.3f", p->step_ms[at]);
        if (vg_ms > 0) snprintf(ratio, sizeof ratio, "%.2fx", p->step_ms[at] / vg_ms);
        if (p->device_ms[at] > 0) snprintf(dev, sizeof dev, "%.3f", p->device_ms[at]);
    }
    printf("  %5lld   %8.3f   %9s   %8s   %11s\n", (long long)batch, vg_ms, step, ratio, dev);
}
