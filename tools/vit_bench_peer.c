/* SPDX-License-Identifier: Apache-2.0 */
/* The PyTorch peer's JSON lines (tools/peer/peer_vit_torch.py), read before the benchmark runs:
 * a missing or malformed file fails at once, not after minutes of measuring. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg_cli.h"
#include "vit_bench.h"

static int blank(const char *s)
{
    return s[strspn(s, " \t\r\n")] == '\0';
}

int vit_bench_read_peer(const char *path, peer_row *out, int max)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        vg_cli_fail("vit bench", "cannot read the peer file %s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int n = 0, lineno = 0, bad = 0;
    while (!bad && getline(&line, &cap, fp) >= 0) {
        lineno++;
        if (blank(line)) continue;
        cJSON *j = cJSON_Parse(line);
        const cJSON *S = cJSON_GetObjectItem(j, "S"), *hf = cJSON_GetObjectItem(j, "hf_eager_ms"),
                    *g = cJSON_GetObjectItem(j, "torch_blocks_graph_ms");
        if (!cJSON_IsObject(j) || !cJSON_IsNumber(S) || S->valuedouble < 1)
            bad = vg_cli_fail("vit bench", "%s:%d: not a line of the peer's output (a JSON object with "
                                           "\"S\", \"hf_eager_ms\", \"torch_blocks_graph_ms\")", path, lineno);
        else if (n == max)
            bad = vg_cli_fail("vit bench", "%s: more than %d lines", path, max);
        else
            out[n++] = (peer_row){(int64_t)S->valuedouble, cJSON_IsNumber(hf) ? hf->valuedouble : 0,
                                  cJSON_IsNumber(g) ? g->valuedouble : 0};
        cJSON_Delete(j);
    }
    if (!bad && ferror(fp)) bad = vg_cli_fail("vit bench", "cannot read the peer file %s: %s", path, strerror(errno));
    if (!bad && !n) bad = vg_cli_fail("vit bench", "the peer file %s holds no measurements", path);
    free(line);
    fclose(fp);
    return bad ? -1 : n;
}
