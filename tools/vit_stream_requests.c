/* SPDX-License-Identifier: Apache-2.0 */
/* The request lists of vg vit bench --stream: drawn from a seed, written to a file that the
 * PyTorch stream peer replays, and read back.
 *
 * The spread (deterministic from the seed, splitmix64):
 *   images per request  1 (50%), 2 (25%), 3 (15%), 4 (10%)
 *   area                log-uniform between (8 u)^2 and (48 u)^2 pixels, u = spatial merge x
 *                       patch (28 for Qwen2.5-VL: 224^2 .. 1344^2); --sides LO,HI changes the
 *                       bounds (small ones keep tests on a CPU short)
 *   aspect (w:h)        4:3 20%, 3:4 16%, 16:9 14%, 9:16 8%, 3:2 10%, 2:3 5%, 1:1 12%,
 *                       1:sqrt(2) (a document page) 10%, 2:1 5%
 *   sides               each rounded to a multiple of u, then clamped to the bounds (8u..48u)
 * that is, images as a processor that resizes to whole merge units (Qwen's smart_resize)
 * hands them over: photos, screenshots and pages, most of them not square.
 *
 * The file: one JSON object per line,
 *   {"request": 0, "patch": 14, "images": [[448, 672], [224, 336]], "patches": 2304}
 * sides as [height, width] in pixels; "patch" and "patches" are optional when read and
 * checked when present. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_output.h"
#include "vg_cli.h"
#include "vit_bench.h"

#define CMD "vit bench"
#define MAX_SIDE_PATCHES 1024 /* as --sizes allows */
#define MAX_REQUESTS 1000000

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s)
{
    return (double)(splitmix64(s) >> 11) * 0x1.0p-53;
}

static const struct { double ratio, weight; } k_aspects[] = {
    {4.0 / 3, 0.20}, {3.0 / 4, 0.16}, {16.0 / 9, 0.14}, {9.0 / 16, 0.08}, {3.0 / 2, 0.10},
    {2.0 / 3, 0.05}, {1.0, 0.12},     {0.70710678118654752, 0.10},        {2.0, 0.05},
};
static const double k_images_cdf[4] = {0.50, 0.75, 0.90, 1.0};

static int64_t side_of(double px, int unit, int lo, int hi)
{
    int64_t u = llround(px / unit);
    return (u < lo ? lo : u > hi ? hi : u) * unit;
}

static int grow(stream_list *l)
{
    if (l->n < l->cap) return 0;
    int cap = l->cap ? l->cap * 2 : 64;
    stream_request *r = realloc(l->req, (size_t)cap * sizeof *r);
    if (!r) return vg_cli_fail(CMD, "out of host memory for the request list");
    l->req = r;
    l->cap = cap;
    return 0;
}

int vit_stream_generate(uint64_t seed, int n, int unit_px, int lo_units, int hi_units, stream_list *out)
{
    memset(out, 0, sizeof *out);
    out->from_seed = 1;
    out->seed = seed;
    uint64_t s = seed;
    const double lo = 2 * log((double)lo_units * unit_px), hi = 2 * log((double)hi_units * unit_px);
    for (int i = 0; i < n; i++) {
        if (grow(out)) return 1;
        stream_request *r = &out->req[out->n++];
        memset(r, 0, sizeof *r);
        double u = uniform01(&s);
        while (r->nimg < 4 && u >= k_images_cdf[r->nimg]) r->nimg++;
        r->nimg++;
        for (int k = 0; k < r->nimg; k++) {
            double area = exp(lo + (hi - lo) * uniform01(&s)), pick = uniform01(&s), ratio = 1;
            for (size_t a = 0; a < sizeof k_aspects / sizeof k_aspects[0]; a++) {
                ratio = k_aspects[a].ratio;
                if ((pick -= k_aspects[a].weight) < 0) break;
            }
            r->w[k] = side_of(sqrt(area * ratio), unit_px, lo_units, hi_units);
            r->h[k] = side_of(sqrt(area / ratio), unit_px, lo_units, hi_units);
        }
    }
    return 0;
}

void vit_stream_free(stream_list *l)
{
    free(l->req);
    memset(l, 0, sizeof *l);
}

void vit_stream_totals(const stream_list *l, int patch, int64_t *images, int64_t *patches)
{
    *images = *patches = 0;
    for (int i = 0; i < l->n; i++)
        for (int k = 0; k < l->req[i].nimg; k++) {
            ++*images;
            *patches += (l->req[i].h[k] / patch) * (l->req[i].w[k] / patch);
        }
}

int vit_stream_write(const char *path, const stream_list *l, int patch)
{
    vg_out out;
    if (vg_out_open(&out, CMD, path)) return 1;
    for (int i = 0; i < l->n; i++) {
        const stream_request *r = &l->req[i];
        int64_t patches = 0;
        fprintf(out.fp, "{\"request\": %d, \"patch\": %d, \"images\": [", i, patch);
        for (int k = 0; k < r->nimg; k++) {
            fprintf(out.fp, "%s[%lld, %lld]", k ? ", " : "", (long long)r->h[k], (long long)r->w[k]);
            patches += (r->h[k] / patch) * (r->w[k] / patch);
        }
        fprintf(out.fp, "], \"patches\": %lld}\n", (long long)patches);
    }
    return vg_out_commit(&out);
}

/* One line into r: 0, or 1 after a message. */
static int parse_request(const char *text, const char *path, int line, stream_list *l, stream_request *r)
{
    memset(r, 0, sizeof *r);
    r->line = line;
    cJSON *j = vg_cli_json_line(text);
    const cJSON *imgs = cJSON_GetObjectItemCaseSensitive(j, "images");
    const cJSON *patch = cJSON_GetObjectItemCaseSensitive(j, "patch");
    const cJSON *patches = cJSON_GetObjectItemCaseSensitive(j, "patches");
    int bad = 0, n = cJSON_GetArraySize(imgs);
    if (!cJSON_IsObject(j) || !cJSON_IsArray(imgs))
        bad = vg_cli_fail(CMD, "%s:%d: not a request: a JSON object with \"images\": [[height, "
                               "width], ...] in pixels", path, line);
    else if (n < 1 || n > STREAM_MAX_IMAGES)
        bad = vg_cli_fail(CMD, "%s:%d: a request holds 1 to %d images, this one %d", path, line,
                          STREAM_MAX_IMAGES, n);
    else if (patch && !vg_cli_json_whole(patch, 1, 1024))
        bad = vg_cli_fail(CMD, "%s:%d: \"patch\" must be a whole number of pixels, 1..1024", path, line);
    else if (patch && l->patch && l->patch != (int)patch->valuedouble)
        bad = vg_cli_fail(CMD, "%s:%d: \"patch\" is %g, an earlier line said %d", path, line,
                          patch->valuedouble, l->patch);
    else if (patches && !vg_cli_json_whole(patches, 1, 9e15))
        bad = vg_cli_fail(CMD, "%s:%d: \"patches\" must be a whole number >= 1", path, line);
    for (int k = 0; !bad && k < n; k++) {
        const cJSON *hw = cJSON_GetArrayItem(imgs, k);
        const cJSON *h = cJSON_GetArrayItem(hw, 0), *w = cJSON_GetArrayItem(hw, 1);
        if (!cJSON_IsArray(hw) || cJSON_GetArraySize(hw) != 2 || !vg_cli_json_whole(h, 1, 1 << 20) ||
            !vg_cli_json_whole(w, 1, 1 << 20))
            bad = vg_cli_fail(CMD, "%s:%d: image %d is not [height, width], two whole numbers of "
                                   "pixels from 1 to %d", path, line, k + 1, 1 << 20);
        else
            r->h[k] = (int64_t)h->valuedouble, r->w[k] = (int64_t)w->valuedouble;
    }
    if (!bad) {
        r->nimg = n;
        r->stated_patches = patches ? (int64_t)patches->valuedouble : 0;
        if (patch) l->patch = (int)patch->valuedouble;
    }
    cJSON_Delete(j);
    return bad;
}

int vit_stream_read(const char *path, stream_list *out)
{
    memset(out, 0, sizeof *out);
    char why[96];
    FILE *fp = vg_cli_open_text(CMD, path, why, sizeof why);
    if (!fp) return vg_cli_fail(CMD, "cannot read the request file %s: %s", path, why);
    char *text = NULL;
    size_t cap = 0;
    int line = 0, bad = 0;
    while (!bad && getline(&text, &cap, fp) >= 0) {
        line++;
        if (vg_cli_blank(text)) continue;
        if (out->n == MAX_REQUESTS)
            bad = vg_cli_fail(CMD, "%s: more than %d requests", path, MAX_REQUESTS);
        else if (!(bad = grow(out)))
            bad = parse_request(text, path, line, out, &out->req[out->n]);
        if (!bad) out->n++;
    }
    if (!bad && ferror(fp)) bad = vg_cli_fail(CMD, "cannot read the request file %s: %s", path, strerror(errno));
    if (!bad && !out->n) bad = vg_cli_fail(CMD, "the request file %s holds no requests", path);
    free(text);
    fclose(fp);
    if (bad) vit_stream_free(out);
    return bad;
}

int vit_stream_check(const stream_list *l, const char *where, int unit_px, int patch)
{
    if (l->patch && l->patch != patch)
        return vg_cli_fail(CMD, "%s: the requests were made for patches of %d pixels; this model's "
                                "are %d", where, l->patch, patch);
    for (int i = 0; i < l->n; i++) {
        const stream_request *r = &l->req[i];
        int64_t patches = 0;
        for (int k = 0; k < r->nimg; k++) {
            if (r->h[k] % unit_px || r->w[k] % unit_px || r->h[k] / patch > MAX_SIDE_PATCHES ||
                r->w[k] / patch > MAX_SIDE_PATCHES)
                return vg_cli_fail(CMD, "%s:%d: image %d is %lldx%lld pixels; sides must be multiples "
                                        "of %d (spatial merge x patch) up to %d", where, r->line,
                                   k + 1, (long long)r->h[k], (long long)r->w[k], unit_px,
                                   MAX_SIDE_PATCHES * patch);
            patches += (r->h[k] / patch) * (r->w[k] / patch);
        }
        if (r->stated_patches && r->stated_patches != patches)
            return vg_cli_fail(CMD, "%s:%d: \"patches\" says %lld, the images make %lld", where,
                               r->line, (long long)r->stated_patches, (long long)patches);
    }
    return 0;
}
