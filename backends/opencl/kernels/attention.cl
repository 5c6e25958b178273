/* SPDX-License-Identifier: Apache-2.0 */
/* Non-causal attention within segments (attention), optionally over q and k rotated as rotary_2d
 * rotates them without writing them back (attention_rotary).
 *
 * A work-group holds OCL_WG_ATTN consecutive query rows of one head; global (rows rounded up,
 * heads). Each work-item finds its row's segment in cu_seqlens (read at execution time, so a
 * replay follows the current segmentation) and keeps q and its output accumulator in private
 * memory (head_dim <= MAX_HD, the catalogue's limit). The group walks the keys its rows' segments
 * span in tiles of `tk` keys staged in local memory, converted to float (and rotated, for
 * attention_rotary) once per group rather than once per query row; each row takes the keys of its
 * own segment from a tile, with an online softmax in fp32. */

kernel void attention(int dt, BUF(qkv), long ld_qkv, BUF(out), long ld_out, int rows, int heads,
                      int hd, BUF(cu), int nseg, float scale, int rotary, BUF(pos), float theta,
                      local float *tiles, int tk)
{
    local int begs[OCL_WG_ATTN], ends[OCL_WG_ATTN], span[2];
    local float invf[MAX_HD / 2];
    local float *Kt = tiles, *Vt = tiles + tk * hd;
    size_t i = get_global_id(0);
    int lid = (int)get_local_id(0), h = (int)get_group_id(1);
    const global int *cu = (const global int *)AT(cu);
    const global int *pos = (const global int *)AT(pos);
    const global uchar *qkv = AT(qkv);
    size_t hidden = (size_t)heads * hd, qo = (size_t)h * hd;
    int pairs = hd / 2, quarter = hd / 4;

    /* this row's segment: the last one starting at or before it (empty segments repeat a bound);
     * none for padding past the rows or malformed bounds */
    int beg = 0, end = 0;
    if (i < (size_t)rows) {
        int lo = 0, hi = nseg;
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (cu[mid] <= (int)i) lo = mid;
            else hi = mid;
        }
        beg = max(cu[lo], 0);
        end = min(cu[lo + 1], rows);
        if ((int)i < beg || (int)i >= end) beg = end = 0;
    }
    begs[lid] = beg;
    ends[lid] = end;
    if (rotary)
        for (int d = lid; d < pairs; d += OCL_WG_ATTN)
            invf[d] = rotary_inv_freq(theta, (float)(2 * (d < quarter ? d : d - quarter)) / (float)pairs);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) { /* the keys the group's rows attend to */
        int lo = rows, hi = 0;
        for (int k = 0; k < OCL_WG_ATTN; k++)
            if (ends[k] > begs[k]) lo = min(lo, begs[k]), hi = max(hi, ends[k]);
        span[0] = lo;
        span[1] = hi;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int key_lo = span[0], key_hi = span[1];

    float q[MAX_HD], acc[MAX_HD];
    if (end > beg) {
        for (int d = 0; d < hd; d++) {
            q[d] = ld(qkv, dt, i * ld_qkv + qo + d);
            acc[d] = 0.0f;
        }
        if (rotary) {
            float ph = (float)pos[2 * i], pw = (float)pos[2 * i + 1];
            for (int d = 0; d < pairs; d++) {
                float c, s = sincos((d < quarter ? ph : pw) * invf[d], &c);
                float x0 = q[d], x1 = q[d + pairs];
                q[d] = x0 * c - x1 * s;
                q[d + pairs] = x1 * c + x0 * s;
            }
        }
    }
    float mx = -INFINITY, sum = 0.0f;
    for (int t0 = key_lo; t0 < key_hi; t0 += tk) {
        int nk = min(tk, key_hi - t0);
        for (int e = lid; e < nk * hd; e += OCL_WG_ATTN) { /* stage the tile */
            size_t row = (size_t)(t0 + e / hd) * ld_qkv;
            int d = e % hd;
            Vt[e] = ld(qkv, dt, row + 2 * hidden + qo + d);
            if (!rotary) {
                Kt[e] = ld(qkv, dt, row + hidden + qo + d);
            } else if (d < pairs) {
                int j = t0 + e / hd;
                float c, s = sincos((float)pos[2 * j + (d < quarter ? 0 : 1)] * invf[d], &c);
                float k0 = ld(qkv, dt, row + hidden + qo + d), k1 = ld(qkv, dt, row + hidden + qo + d + pairs);
                Kt[e] = k0 * c - k1 * s;
                Kt[e + pairs] = k1 * c + k0 * s;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int jj = 0; jj < nk; jj++) {
            int j = t0 + jj;
            if (j < beg || j >= end) continue; /* another row's segment (or none) */
            local const float *k = Kt + jj * hd, *v = Vt + jj * hd;
            float dot = 0.0f;
            for (int d = 0; d < hd; d++) dot += q[d] * k[d];
            float sc = dot * scale, m2 = fmax(mx, sc);
            float corr = exp(mx - m2), p = exp(sc - m2);
            sum = sum * corr + p;
            for (int d = 0; d < hd; d++) acc[d] = acc[d] * corr + p * v[d];
            mx = m2;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* the tile is read before the next one overwrites it */
    }
    if (end > beg) {
        global uchar *out = AT(out);
        float inv = 1.0f / sum;
        for (int d = 0; d < hd; d++) st(out, dt, i * ld_out + qo + d, acc[d] * inv);
    }
}
