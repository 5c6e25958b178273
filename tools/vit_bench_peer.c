/* SPDX-License-Identifier: Apache-2.0 */
/* The PyTorch peers' JSON lines, read before the benchmark runs: a missing or malformed file
 * fails at once, not after minutes of measuring. Lines of every peer script may share a file
 * (their outputs concatenated) or come in several files; each line says by its keys which
 * script wrote it:
 *   peer_vit_torch.py           S, hf_eager_ms, torch_blocks_graph_ms     (Qwen2.5-VL)
 *   peer_vit_torch_compiled.py  S, compile_mode, padded_graph_ms, compiled_graph_ms (Qwen2.5-VL)
 *   peer_vit3_torch.py          S, hf_eager_ms, torch_graph_ms, compiled_graph_ms (Qwen3-VL)
 *   peer_vit_stream_torch.py    method, requests, requests_per_s, p50_ms, p99_ms, ...
 * A value measured twice (the same script's output given twice) keeps the later line's, with
 * a note on stderr. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg_cli.h"
#include "vit_bench.h"

#define CMD "vit bench"

const char *vit_family_name(vit_family f)
{
    return f == VIT_FAMILY_QWEN25 ? "Qwen2.5-VL" : f == VIT_FAMILY_QWEN3 ? "Qwen3-VL" : "unknown";
}

vit_family vit_family_of(const vg_vit_info *info)
{
    if (!strncmp(info->model_type, "qwen3", 5)) return VIT_FAMILY_QWEN3;
    if (!strncmp(info->model_type, "qwen2", 5)) return VIT_FAMILY_QWEN25;
    return VIT_FAMILY_UNKNOWN;
}

typedef struct where {
    const char *path;
    int line;
} where;

/* A member that must be absent or a positive finite number: 0 with *out set (0 if absent),
 * or 1 after a message. */
static int positive(const cJSON *j, const char *key, const where *at, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    *out = 0;
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0)
        return vg_cli_fail(CMD, "%s:%d: \"%s\" must be a positive number", at->path, at->line, key);
    *out = v->valuedouble;
    return 0;
}

/* A member that must be a whole number >= lo: 0 with *out set, or 1 after a message. When
 * optional, an absent member leaves *out at 0. */
static int whole(const cJSON *j, const char *key, int64_t lo, int optional, const where *at,
                 int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    *out = 0;
    if (!v && optional) return 0;
    if (!vg_cli_json_whole(v, (double)lo, 9e15))
        return vg_cli_fail(CMD, "%s:%d: \"%s\" must be a whole number >= %lld", at->path, at->line,
                           key, (long long)lo);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static void take(double *dst, double v, const char *key, const peer_size *p, const where *at)
{
    if (v <= 0) return;
    if (*dst > 0)
        fprintf(stderr, "vg " CMD ": %s:%d: %s at S=%lld was given before; this later line wins\n",
                at->path, at->line, key, (long long)p->patches);
    *dst = v;
}

/* Which peer wrote a per-size line: by its keys, else by its patch size (side / sqrt(S)). */
static vit_family size_family(const cJSON *j, int64_t S, double side)
{
    if (cJSON_GetObjectItemCaseSensitive(j, "torch_blocks_graph_ms") ||
        cJSON_GetObjectItemCaseSensitive(j, "padded_graph_ms") ||
        cJSON_GetObjectItemCaseSensitive(j, "compile_mode"))
        return VIT_FAMILY_QWEN25;
    if (cJSON_GetObjectItemCaseSensitive(j, "torch_graph_ms")) return VIT_FAMILY_QWEN3;
    if (side > 0 && side * side == (double)S * 14 * 14) return VIT_FAMILY_QWEN25;
    if (side > 0 && side * side == (double)S * 16 * 16) return VIT_FAMILY_QWEN3;
    return VIT_FAMILY_UNKNOWN;
}

static int size_line(const cJSON *j, const where *at, peer_data *out)
{
    out->size_lines++;
    int64_t S;
    if (whole(j, "S", 1, 0, at, &S)) return 1;
    double side, hf, graph, blocks, padded, compiled;
    if (positive(j, "side", at, &side) || positive(j, "hf_eager_ms", at, &hf) ||
        positive(j, "torch_graph_ms", at, &graph) || positive(j, "torch_blocks_graph_ms", at, &blocks) ||
        positive(j, "padded_graph_ms", at, &padded) || positive(j, "compiled_graph_ms", at, &compiled))
        return 1;
    vit_family fam = size_family(j, S, side);
    if (fam == VIT_FAMILY_UNKNOWN)
        return vg_cli_fail(CMD, "%s:%d: cannot tell which peer wrote this line: it has none of "
                                "torch_blocks_graph_ms, padded_graph_ms, torch_graph_ms, nor a side "
                                "that S patches of 14 or 16 pixels make", at->path, at->line);
    int patch = fam == VIT_FAMILY_QWEN25 ? 14 : 16;
    if (side > 0 && side * side != (double)S * patch * patch)
        return vg_cli_fail(CMD, "%s:%d: side %g and S %lld do not fit a %s peer (patches of %d "
                                "pixels)", at->path, at->line, side, (long long)S,
                           vit_family_name(fam), patch);
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (err)
        fprintf(stderr, "vg " CMD ": %s:%d: the peer reports an error at S=%lld: %.300s\n",
                at->path, at->line, (long long)S, cJSON_IsString(err) ? err->valuestring : "?");
    if (hf <= 0 && graph <= 0 && blocks <= 0 && padded <= 0 && compiled <= 0) {
        if (err) return 0;
        return vg_cli_fail(CMD, "%s:%d: a peer line without any measurement (hf_eager_ms, "
                                "torch_blocks_graph_ms, torch_graph_ms, padded_graph_ms or "
                                "compiled_graph_ms)", at->path, at->line);
    }
    int k = 0;
    while (k < out->nsizes && !(out->sizes[k].family == fam && out->sizes[k].patches == S)) k++;
    if (k == MAX_PEER) return vg_cli_fail(CMD, "%s: more than %d peer sizes", at->path, MAX_PEER);
    peer_size *p = &out->sizes[k];
    if (k == out->nsizes) *p = (peer_size){.family = fam, .patches = S}, out->nsizes++;
    take(&p->hf_ms, hf, "hf_eager_ms", p, at);
    take(&p->graph_ms, blocks > 0 ? blocks : graph, blocks > 0 ? "torch_blocks_graph_ms" : "torch_graph_ms", p, at);
    take(&p->padded_ms, padded, "padded_graph_ms", p, at);
    take(&p->compiled_ms, compiled, "compiled_graph_ms", p, at);
    return 0;
}

static int stream_line(const cJSON *j, const cJSON *method, const where *at, peer_data *out)
{
    out->stream_lines++;
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (err) { /* the peer could not run this method at all: said, and nothing to show */
        fprintf(stderr, "vg " CMD ": %s:%d: the stream peer reports an error for method %s: %.300s\n",
                at->path, at->line, method->valuestring, cJSON_IsString(err) ? err->valuestring : "?");
        return 0;
    }
    peer_stream s = {.requests = 0};
    if (strlen(method->valuestring) >= sizeof s.method) /* cut short, two names could become one */
        return vg_cli_fail(CMD, "%s:%d: stream method name longer than %zu characters", at->path, at->line,
                           sizeof s.method - 1);
    snprintf(s.method, sizeof s.method, "%s", method->valuestring);
    if (whole(j, "requests", 1, 0, at, &s.requests) || whole(j, "images", 1, 0, at, &s.images) ||
        whole(j, "patches", 1, 0, at, &s.patches) || whole(j, "done", 1, 0, at, &s.done) ||
        whole(j, "captures", 0, 1, at, &s.captures) ||
        whole(j, "eager_requests", 0, 1, at, &s.eager_requests) ||
        positive(j, "requests_per_s", at, &s.requests_per_s) || positive(j, "p50_ms", at, &s.p50_ms) ||
        positive(j, "p99_ms", at, &s.p99_ms) || positive(j, "wall_s", at, &s.wall_s))
        return 1;
    if (s.requests_per_s <= 0 || s.p50_ms <= 0 || s.p99_ms <= 0)
        return vg_cli_fail(CMD, "%s:%d: a stream peer line needs requests_per_s, p50_ms and p99_ms",
                           at->path, at->line);
    if (s.done > s.requests)
        return vg_cli_fail(CMD, "%s:%d: \"done\" %lld is more than \"requests\" %lld", at->path,
                           at->line, (long long)s.done, (long long)s.requests);
    const cJSON *mib = cJSON_GetObjectItemCaseSensitive(j, "graph_mib");
    if (mib && (!cJSON_IsNumber(mib) || !isfinite(mib->valuedouble) || mib->valuedouble < 0))
        return vg_cli_fail(CMD, "%s:%d: \"graph_mib\" must be a number >= 0", at->path, at->line);
    s.graph_mib = mib ? mib->valuedouble : -1;
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(j, "note");
    if (cJSON_IsString(note)) snprintf(s.note, sizeof s.note, "%s", note->valuestring);
    int k = 0;
    while (k < out->nstreams && strcmp(out->streams[k].method, s.method)) k++;
    if (k == MAX_PEER_STREAMS)
        return vg_cli_fail(CMD, "%s: more than %d stream peer methods", at->path, MAX_PEER_STREAMS);
    if (k < out->nstreams)
        fprintf(stderr, "vg " CMD ": %s:%d: stream method %s was given before; this later line wins\n",
                at->path, at->line, s.method);
    else
        out->nstreams++;
    out->streams[k] = s;
    return 0;
}

static int read_one(const char *path, peer_data *out)
{
    char why[96];
    FILE *fp = vg_cli_open_text(CMD, path, why, sizeof why);
    if (!fp) return vg_cli_fail(CMD, "cannot read the peer file %s: %s", path, why);
    char *line = NULL;
    size_t cap = 0;
    int lines = 0, bad = 0;
    where at = {path, 0};
    while (!bad && getline(&line, &cap, fp) >= 0) {
        at.line++;
        if (vg_cli_blank(line)) continue;
        cJSON *j = vg_cli_json_line(line);
        const cJSON *method = cJSON_GetObjectItemCaseSensitive(j, "method");
        if (!cJSON_IsObject(j))
            bad = vg_cli_fail(CMD, "%s:%d: not a line of a peer's output (a JSON object from "
                                   "tools/peer/peer_vit_*.py)", path, at.line);
        else if (cJSON_IsString(method))
            bad = stream_line(j, method, &at, out);
        else if (!cJSON_GetObjectItemCaseSensitive(j, "S"))
            bad = vg_cli_fail(CMD, "%s:%d: not a line of a peer's output: neither \"S\" (a size "
                                   "peer) nor \"method\" (the stream peer)", path, at.line);
        else
            bad = size_line(j, &at, out);
        lines++;
        cJSON_Delete(j);
    }
    if (!bad && ferror(fp)) bad = vg_cli_fail(CMD, "cannot read the peer file %s: %s", path, strerror(errno));
    if (!bad && !lines) bad = vg_cli_fail(CMD, "the peer file %s holds no measurements", path);
    free(line);
    fclose(fp);
    return bad;
}

int vit_bench_read_peers(const char *const *paths, int npaths, peer_data *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < npaths; i++)
        if (read_one(paths[i], out)) return 1;
    return 0;
}
