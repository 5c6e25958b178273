/* SPDX-License-Identifier: Apache-2.0 */
/* Elementwise ops: axpby, silu_mul, convert, gather_rows, gather_weighted. One work-item per
 * element. */

kernel void axpby(ulong n, float alpha, BUF(x), float beta, BUF(y))
{
    size_t i = get_global_id(0);
    if (i >= n) return;
    const global float *x = (const global float *)AT(x);
    global float *y = (global float *)AT(y);
    y[i] = alpha * x[i] + beta * y[i];
}

/* out[r, c] = silu(in[r, c]) * in[r, cols + c]; global (cols, rows) */
kernel void silu_mul(int dt, BUF(in), long ld_in, BUF(out), long ld_out, int rows, int cols)
{
    size_t c = get_global_id(0), r = get_global_id(1);
    if (c >= (size_t)cols || r >= (size_t)rows) return;
    const global uchar *in = AT(in);
    float g = ld(in, dt, r * ld_in + c), u = ld(in, dt, r * ld_in + cols + c);
    st(AT(out), dt, r * ld_out + c, g / (1.0f + exp(-g)) * u);
}

/* dst[i] = src[i] between float dtypes; in place only between dtypes of one size, where each
 * work-item reads its element before it writes it */
kernel void convert(int from, BUF(src), int to, BUF(dst), ulong count)
{
    size_t i = get_global_id(0);
    if (i >= count) return;
    st(AT(dst), to, i, ld(AT(src), from, i));
}

/* dst[r, :] = src[idx[r], :], rows of `cols` elements of `esize` bytes; global (cols, rows) */
kernel void gather_rows(int esize, BUF(dst), BUF(src), BUF(idx), int rows, long cols)
{
    size_t c = get_global_id(0), r = get_global_id(1);
    if (c >= (size_t)cols || r >= (size_t)rows) return;
    long from = ((const global int *)AT(idx))[r];
    copy_elem(AT(dst), AT(src), esize, r * cols + c, (size_t)from * cols + c);
}

/* dst[r, c] = sum over t < taps of w[r, t] * src[idx[r, t], c], summed in fp32 in the order of t
 * and rounded once; an index outside [0, src_rows) contributes nothing and is never read. idx
 * and w are read here, when the kernel runs: a recorded launch serves any taps. global (cols,
 * rows) */
kernel void gather_weighted(int dt, BUF(dst), BUF(src), int src_rows, BUF(idx), BUF(w), int rows,
                            int cols, int taps)
{
    size_t c = get_global_id(0), r = get_global_id(1);
    if (c >= (size_t)cols || r >= (size_t)rows) return;
    const global int *idx = (const global int *)AT(idx) + r * taps;
    const global float *w = (const global float *)AT(w) + r * taps;
    const global uchar *src = AT(src);
    float acc = 0.0f;
    for (int t = 0; t < taps; t++) {
        int i = idx[t];
        if (i >= 0 && i < src_rows) acc += w[t] * ld(src, dt, (size_t)i * cols + c);
    }
    st(AT(dst), dt, r * cols + c, acc);
}
