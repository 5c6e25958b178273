/* SPDX-License-Identifier: Apache-2.0 */
/* Split-half rotary embeddings, in place on the first `heads` head slices of each row: rotary
 * (axes 1: pos I32 [rows], frequencies theta^(-2i/head_dim)) and rotary_2d (axes 2: pos I32
 * [rows, 2]; the first quarter of the pairs takes pos[r, 0], the second pos[r, 1], each with
 * frequencies theta^(-2j/(head_dim/2))). One work-item per (row, pair i < head_dim/2): the angle depends
 * on both, not on the head. Global: rows * head_dim/2 items. */

kernel void rotary(int dt, BUF(x), long ldx, int rows, int heads, int hd, BUF(pos), float theta,
                   int axes)
{
    int pairs = hd / 2;
    size_t g = get_global_id(0);
    if (g >= (size_t)rows * (size_t)pairs) return;
    size_t r = g / (size_t)pairs;
    int i = (int)(g % (size_t)pairs);
    const global int *pos = (const global int *)AT(pos);
    float p, e;
    if (axes == 2) {
        int quarter = pairs / 2, j = i < quarter ? i : i - quarter;
        p = (float)pos[2 * r + (i < quarter ? 0 : 1)];
        e = (float)(2 * j) / (float)pairs;
    } else {
        p = (float)pos[r];
        e = (float)(2 * i) / (float)hd;
    }
    float c, s = sincos(p * rotary_inv_freq(theta, e), &c);
    global uchar *x = AT(x);
    for (int h = 0; h < heads; h++) {
        size_t at = r * ldx + (size_t)h * hd + i;
        float x0 = ld(x, dt, at), x1 = ld(x, dt, at + pairs);
        st(x, dt, at, x0 * c - x1 * s);
        st(x, dt, at + pairs, x1 * c + x0 * s);
    }
}
