/* SPDX-License-Identifier: Apache-2.0 */
/* Non-causal attention within segments (attention), optionally over q and k rotated as rotary_2d
 * rotates them without writing them back (attention_rotary). One work-item per (query row,
 * head), global (rows rounded up to OCL_WG_ATTN, heads): it finds its segment in cu_seqlens
 * (read at execution time, so a replay follows the current segmentation), then runs an online
 * softmax over the segment's keys in fp32, with q and the output accumulator in private memory
 * (head_dim <= 256, the catalogue's limit). attention_rotary rotates each key as it reads it. */

kernel void attention(int dt, BUF(qkv), long ld_qkv, BUF(out), long ld_out, int rows, int heads,
                      int hd, BUF(cu), int nseg, float scale, int rotary, BUF(pos), float theta)
{
    size_t i = get_global_id(0);
    int h = (int)get_global_id(1);
    if (i >= (size_t)rows) return;
    const global int *cu = (const global int *)AT(cu);
    /* the last segment starting at or before row i (empty segments repeat a bound) */
    int lo = 0, hi = nseg;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (cu[mid] <= (int)i) lo = mid;
        else hi = mid;
    }
    int beg = max(cu[lo], 0), end = min(cu[lo + 1], rows);
    if ((int)i < beg || (int)i >= end) return; /* malformed bounds: nothing to attend to */

    const global uchar *qkv = AT(qkv);
    const global int *pos = (const global int *)AT(pos);
    size_t hidden = (size_t)heads * hd, qo = (size_t)h * hd;
    int pairs = hd / 2, quarter = hd / 4;
    float q[MAX_HD], acc[MAX_HD], invf[MAX_HD / 2];
    for (int d = 0; d < hd; d++) {
        q[d] = ld(qkv, dt, i * ld_qkv + qo + d);
        acc[d] = 0.0f;
    }
    if (rotary) {
        for (int d = 0; d < pairs; d++)
            invf[d] = rotary_inv_freq(theta, (float)(2 * (d < quarter ? d : d - quarter)) / (float)pairs);
        float ph = (float)pos[2 * i], pw = (float)pos[2 * i + 1];
        for (int d = 0; d < pairs; d++) {
            float c, s = sincos((d < quarter ? ph : pw) * invf[d], &c);
            float x0 = q[d], x1 = q[d + pairs];
            q[d] = x0 * c - x1 * s;
            q[d + pairs] = x1 * c + x0 * s;
        }
    }
    float mx = -INFINITY, sum = 0.0f;
    for (int j = beg; j < end; j++) {
        size_t krow = (size_t)j * ld_qkv + hidden + qo, vrow = krow + hidden;
        float dot = 0.0f;
        if (rotary) {
            float ph = (float)pos[2 * j], pw = (float)pos[2 * j + 1];
            for (int d = 0; d < pairs; d++) {
                float c, s = sincos((d < quarter ? ph : pw) * invf[d], &c);
                float k0 = ld(qkv, dt, krow + d), k1 = ld(qkv, dt, krow + d + pairs);
                dot += q[d] * (k0 * c - k1 * s) + q[d + pairs] * (k1 * c + k0 * s);
            }
        } else {
            for (int d = 0; d < hd; d++) dot += q[d] * ld(qkv, dt, krow + d);
        }
        float sc = dot * scale, m2 = fmax(mx, sc);
        float corr = exp(mx - m2), p = exp(sc - m2);
        sum = sum * corr + p;
        for (int d = 0; d < hd; d++) acc[d] = acc[d] * corr + p * ld(qkv, dt, vrow + d);
        mx = m2;
    }
    global uchar *out = AT(out);
    float inv = 1.0f / sum;
    for (int d = 0; d < hd; d++) st(out, dt, i * ld_out + qo + d, acc[d] * inv);
}
