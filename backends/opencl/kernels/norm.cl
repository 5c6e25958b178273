/* SPDX-License-Identifier: Apache-2.0 */
/* RMSNorm over slices of rows: rmsnorm (one slice of `cols` per row, out separate or equal to x)
 * and rmsnorm_heads (`heads` slices of head_dim per row, in place). One work-group of
 * OCL_WG_REDUCE work-items per slice; global (OCL_WG_REDUCE * heads, rows). Statistics in fp32. */

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
    part[lid] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = OCL_WG_REDUCE / 2; s > 0; s >>= 1) {
        if (lid < s) part[lid] += part[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float inv = 1.0f / sqrt(part[0] / (float)hd + eps);
    /* every read of x above happened before the barriers: out may equal x */
    for (int c = lid; c < hd; c += OCL_WG_REDUCE)
        st(out, dt, ob + c, ld(w, dt, c) * (ld(x, dt, xb + c) * inv));
}
