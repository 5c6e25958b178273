/* SPDX-License-Identifier: Apache-2.0 */
/* Row normalisations. One work-group of OCL_WG_REDUCE work-items per slice of a row; statistics
 * in fp32, summed per work-item then as a tree in local memory.
 *   rms_norm    rmsnorm (one slice of `cols` per row, out separate or equal to x) and
 *               rmsnorm_heads (`heads` slices of head_dim per row, in place); global
 *               (OCL_WG_REDUCE * heads, rows)
 *   layer_norm  layernorm over contiguous rows; global (OCL_WG_REDUCE, rows) */

/* The sum of v over the work-group, returned to every work-item. `part` holds OCL_WG_REDUCE
 * floats; the barrier on entry lets a kernel call this again once everyone has the last total. */
inline float group_sum(local float *part, float v)
{
    int lid = (int)get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    part[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = OCL_WG_REDUCE / 2; s > 0; s >>= 1) {
        if (lid < s) part[lid] += part[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return part[0];
}

kernel void rms_norm(int dt, BUF(x), long ldx, BUF(out), long ldo, BUF(w), int heads, int hd,
                     float eps)
{
    local float part[OCL_WG_REDUCE];
    int lid = (int)get_local_id(0), h = (int)get_group_id(0);
    size_t r = get_group_id(1);
    const global uchar *x = AT(x), *w = AT(w);
    global uchar *out = AT(out);
    size_t xb = r * ldx + (size_t)h * hd, ob = r * ldo + (size_t)h * hd;
    float ss = 0.0f;
    for (int c = lid; c < hd; c += OCL_WG_REDUCE) {
        float v = ld(x, dt, xb + c);
        ss += v * v;
    }
    float inv = 1.0f / sqrt(group_sum(part, ss) / (float)hd + eps);
    /* every read of x above happened before the barriers: out may equal x */
    for (int c = lid; c < hd; c += OCL_WG_REDUCE)
        st(out, dt, ob + c, ld(w, dt, c) * (ld(x, dt, xb + c) * inv));
}

/* out[r, :] = (x[r, :] - mean) / sqrt(var + eps) * w + b (b only when has_b). Two passes for the
 * statistics, the variance taken around the mean: E[x²] - mean² cancels for rows far from zero.
 * Each work-item reads and writes only its own columns after the last barrier: out may equal x. */
kernel void layer_norm(int dt, BUF(x), BUF(w), int has_b, BUF(b), BUF(out), int cols, float eps)
{
    local float part[OCL_WG_REDUCE];
    int lid = (int)get_local_id(0);
    size_t base = get_group_id(1) * (size_t)cols;
    const global uchar *x = AT(x), *w = AT(w), *b = AT(b);
    global uchar *out = AT(out);
    float sum = 0.0f;
    for (int c = lid; c < cols; c += OCL_WG_REDUCE) sum += ld(x, dt, base + c);
    float mean = group_sum(part, sum) / (float)cols, ss = 0.0f;
    for (int c = lid; c < cols; c += OCL_WG_REDUCE) {
        float d = ld(x, dt, base + c) - mean;
        ss += d * d;
    }
    float inv = 1.0f / sqrt(group_sum(part, ss) / (float)cols + eps);
    for (int c = lid; c < cols; c += OCL_WG_REDUCE) {
        float y = (ld(x, dt, base + c) - mean) * inv * ld(w, dt, c);
        if (has_b) y += ld(b, dt, c);
        st(out, dt, base + c, y);
    }
}
