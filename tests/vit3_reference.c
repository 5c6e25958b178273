/* SPDX-License-Identifier: Apache-2.0 */
/* The Qwen3-VL vision tower in double precision: see vit3_reference.h. Plain loops, one step of
 * Hugging Face's forward each. */
#include "vit3_reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fwd {
    const ref3_config *c;
    ref3_tensor_fn get;
    void *user;
    int missing;
} fwd;

/* The tensor `name`, or for a block's tensor "blocks.%d.<rest>" of block i. */
static const float *T(fwd *f, const char *name_or_fmt, int i)
{
    char name[128];
    if (strstr(name_or_fmt, "%d")) snprintf(name, sizeof name, "blocks.%d.%s", i, name_or_fmt + 10);
    else snprintf(name, sizeof name, "%s", name_or_fmt);
    const float *p = f->get(f->user, name);
    if (!p) {
        fprintf(stderr, "ref3: tensor '%s' is missing\n", name);
        f->missing = 1;
    }
    return p;
}

/* y[r, o] = Σ_k x[r, k]·w[o, k] + b[o] (a torch Linear), y may not alias x */
static void linear(const double *x, int64_t rows, int64_t in, const float *w, const float *b,
                   int64_t out, double *y)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < out; o++) {
            double acc = b ? b[o] : 0.0;
            for (int64_t k = 0; k < in; k++) acc += x[r * in + k] * w[o * in + k];
            y[r * out + o] = acc;
        }
}

static void layernorm(const double *x, int64_t rows, int64_t cols, const float *w, const float *b,
                      double *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double mean = 0, var = 0;
        for (int64_t k = 0; k < cols; k++) mean += xr[k];
        mean /= (double)cols;
        for (int64_t k = 0; k < cols; k++) var += (xr[k] - mean) * (xr[k] - mean);
        double inv = 1.0 / sqrt(var / (double)cols + 1e-6);
        for (int64_t k = 0; k < cols; k++) y[r * cols + k] = (xr[k] - mean) * inv * w[k] + b[k];
    }
}

static double act(vg_activation a, double x)
{
    switch (a) {
    case VG_ACT_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case VG_ACT_GELU_TANH: return 0.5 * x * (1.0 + tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
    case VG_ACT_SILU: return x / (1.0 + exp(-x));
    case VG_ACT_QUICK_GELU: return x / (1.0 + exp(-1.702 * x));
    default: return x;
    }
}

/* F.interpolate(bilinear, align_corners=True) on one axis: source coordinate, two clamped taps */
static void axis(int side, int64_t n, int64_t i, int tap[2], double wt[2])
{
    double src = n > 1 ? (double)i * (side - 1) / (double)(n - 1) : 0.0;
    double fl = floor(src);
    for (int k = 0; k < 2; k++) {
        int64_t t = (int64_t)fl + k;
        tap[k] = (int)(t < 0 ? 0 : t > side - 1 ? side - 1 : t);
        wt[k] = fmax(0.0, 1.0 - fabs(src - fl - k));
    }
}

/* A patch merger on x [S, hidden]: LayerNorm over hidden (post_shuffle 0) or over the merge
 * unit's merge²·hidden values (1), fc1, GELU, fc2; out [S / merge², out_hidden]. */
static int merger(fwd *f, const char *prefix, int post_shuffle, const double *x, int64_t S,
                  double *out)
{
    const ref3_config *c = f->c;
    int64_t unit = (int64_t)c->merge * c->merge, U = S / unit, mh = c->hidden * unit;
    char name[128];
    const float *t[6];
    static const char *const parts[6] = {"norm.weight", "norm.bias", "linear_fc1.weight",
                                         "linear_fc1.bias", "linear_fc2.weight", "linear_fc2.bias"};
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "%s%s", prefix, parts[i]);
        if (!(t[i] = f->get(f->user, name))) {
            fprintf(stderr, "ref3: tensor '%s' is missing\n", name);
            return -1;
        }
    }
    double *n = malloc((size_t)S * (size_t)c->hidden * sizeof *n), *h = malloc((size_t)(U * mh) * sizeof *h);
    if (!n || !h) return free(n), free(h), -1;
    if (post_shuffle) layernorm(x, U, mh, t[0], t[1], n);
    else layernorm(x, S, c->hidden, t[0], t[1], n);
    linear(n, U, mh, t[2], t[3], mh, h);
    for (int64_t i = 0; i < U * mh; i++) h[i] = act(VG_ACT_GELU_ERF, h[i]);
    linear(h, U, mh, t[4], t[5], c->out_hidden, out);
    free(n), free(h);
    return 0;
}

int ref3_forward(const ref3_config *c, ref3_tensor_fn get, void *user, const float *pixels,
                 const int64_t *grid, int64_t n, double *emb, double **ds)
{
    fwd f = {c, get, user, 0};
    const int64_t h = c->hidden, hd = h / c->heads, mg = c->merge, unit = mg * mg;
    const int64_t pdim = (int64_t)c->in_ch * c->tpatch * c->patch * c->patch;
    const int side = (int)lround(sqrt((double)c->num_pos));
    int64_t S = 0, frames = 0;
    for (int64_t g = 0; g < n; g++) S += grid[3 * g] * grid[3 * g + 1] * grid[3 * g + 2], frames += grid[3 * g];
    double *x = calloc((size_t)(S * h), sizeof *x), *nrm = calloc((size_t)(S * h), sizeof *nrm);
    double *qkv = calloc((size_t)(S * 3 * h), sizeof *qkv), *att = calloc((size_t)(S * h), sizeof *att);
    double *mid = calloc((size_t)(S * c->inter), sizeof *mid), *tmp = calloc((size_t)(S * h), sizeof *tmp);
    double *p = calloc((size_t)S, sizeof *p), *px = calloc((size_t)pdim, sizeof *px);
    int64_t *row = calloc((size_t)S, sizeof *row), *col = calloc((size_t)S, sizeof *col);
    int64_t *seg = calloc((size_t)frames + 1, sizeof *seg);
    int rc = -1;
    if (!x || !nrm || !qkv || !att || !mid || !tmp || !p || !px || !row || !col || !seg) goto done;

    /* patch embedding (Conv3d with stride = kernel: a Linear over each flattened patch), plus the
     * position table resampled to each image's grid; positions in merge-unit order; one attention
     * segment per frame */
    const float *pw = T(&f, "patch_embed.proj.weight", 0), *pb = T(&f, "patch_embed.proj.bias", 0);
    const float *pos = T(&f, "pos_embed.weight", 0);
    if (f.missing) goto done;
    int64_t tok = 0, nseg = 0;
    for (int64_t g = 0; g < n; g++) {
        int64_t t = grid[3 * g], gh = grid[3 * g + 1], gw = grid[3 * g + 2];
        for (int64_t fr = 0; fr < t; fr++) {
            for (int64_t w = 0; w < gh * gw; w++, tok++) {
                int64_t blocks_w = gw / mg, in_col = w % mg, in_row = (w / mg) % mg;
                int64_t bc = (w / unit) % blocks_w, br = w / (unit * blocks_w);
                row[tok] = br * mg + in_row, col[tok] = bc * mg + in_col;
                for (int64_t k = 0; k < pdim; k++) px[k] = pixels[tok * pdim + k];
                linear(px, 1, pdim, pw, pb, h, x + tok * h);
                int th[2], tw[2];
                double wh[2], ww[2];
                axis(side, gh, row[tok], th, wh);
                axis(side, gw, col[tok], tw, ww);
                for (int a = 0; a < 2; a++)
                    for (int b = 0; b < 2; b++)
                        for (int64_t k = 0; k < h; k++)
                            x[tok * h + k] += wh[a] * ww[b] * pos[((int64_t)th[a] * side + tw[b]) * h + k];
            }
            seg[nseg + 1] = seg[nseg] + gh * gw;
            nseg++;
        }
    }

    const double scale = 1.0 / sqrt((double)hd);
    for (int b = 0; b < c->depth; b++) {
        const float *n1w = T(&f, "blocks.%d.norm1.weight", b), *n1b = T(&f, "blocks.%d.norm1.bias", b);
        const float *qw = T(&f, "blocks.%d.attn.qkv.weight", b), *qb = T(&f, "blocks.%d.attn.qkv.bias", b);
        const float *ow = T(&f, "blocks.%d.attn.proj.weight", b), *ob = T(&f, "blocks.%d.attn.proj.bias", b);
        const float *n2w = T(&f, "blocks.%d.norm2.weight", b), *n2b = T(&f, "blocks.%d.norm2.bias", b);
        const float *f1w = T(&f, "blocks.%d.mlp.linear_fc1.weight", b), *f1b = T(&f, "blocks.%d.mlp.linear_fc1.bias", b);
        const float *f2w = T(&f, "blocks.%d.mlp.linear_fc2.weight", b), *f2b = T(&f, "blocks.%d.mlp.linear_fc2.bias", b);
        if (f.missing) goto done;
        layernorm(x, S, h, n1w, n1b, nrm);
        linear(nrm, S, h, qw, qb, 3 * h, qkv);
        /* 2-D rotary on q and k: rotate_half over the whole head, the first quarter of the
         * frequencies turned by the row, the second by the column */
        for (int64_t r = 0; r < S; r++)
            for (int64_t hh = 0; hh < 2 * c->heads; hh++) {
                double *v = qkv + r * 3 * h + hh * hd;
                for (int64_t i = 0; i < hd / 2; i++) {
                    int64_t j = i < hd / 4 ? i : i - hd / 4;
                    double inv = pow(c->theta, -(double)(2 * j) / (double)(hd / 2));
                    double a = (double)(i < hd / 4 ? row[r] : col[r]) * inv;
                    double x0 = v[i], x1 = v[i + hd / 2];
                    v[i] = x0 * cos(a) - x1 * sin(a);
                    v[i + hd / 2] = x1 * cos(a) + x0 * sin(a);
                }
            }
        for (int64_t s = 0; s < nseg; s++)
            for (int64_t hh = 0; hh < c->heads; hh++)
                for (int64_t i = seg[s]; i < seg[s + 1]; i++) {
                    const double *q = qkv + i * 3 * h + hh * hd;
                    double mx = -INFINITY, sum = 0;
                    for (int64_t j = seg[s]; j < seg[s + 1]; j++) {
                        const double *k = qkv + j * 3 * h + h + hh * hd;
                        double d = 0;
                        for (int64_t e = 0; e < hd; e++) d += q[e] * k[e];
                        p[j] = d * scale;
                        mx = fmax(mx, p[j]);
                    }
                    for (int64_t j = seg[s]; j < seg[s + 1]; j++) sum += p[j] = exp(p[j] - mx);
                    for (int64_t e = 0; e < hd; e++) {
                        double acc = 0;
                        for (int64_t j = seg[s]; j < seg[s + 1]; j++) acc += p[j] * qkv[j * 3 * h + 2 * h + hh * hd + e];
                        att[i * h + hh * hd + e] = acc / sum;
                    }
                }
        linear(att, S, h, ow, ob, h, tmp);
        for (int64_t i = 0; i < S * h; i++) x[i] += tmp[i];
        layernorm(x, S, h, n2w, n2b, nrm);
        linear(nrm, S, h, f1w, f1b, c->inter, mid);
        for (int64_t i = 0; i < S * c->inter; i++) mid[i] = act(c->act, mid[i]);
        linear(mid, S, c->inter, f2w, f2b, h, tmp);
        for (int64_t i = 0; i < S * h; i++) x[i] += tmp[i];
        /* deepstack: features come out in block order, merger k being the one listed k-th */
        for (int k = 0; k < c->num_deepstack; k++) {
            if (c->deepstack[k] != b) continue;
            int slot = 0;
            for (int j = 0; j < c->num_deepstack; j++) slot += c->deepstack[j] < b;
            char prefix[64];
            snprintf(prefix, sizeof prefix, "deepstack_merger_list.%d.", k);
            if (merger(&f, prefix, 1, x, S, ds[slot]) != 0) goto done;
        }
    }
    rc = merger(&f, "merger.", 0, x, S, emb);
done:
    free(x), free(nrm), free(qkv), free(att), free(mid), free(tmp), free(p), free(px);
    free(row), free(col), free(seg);
    return rc;
}
