/* SPDX-License-Identifier: Apache-2.0 */
/* out[r] = the smallest c with x[r, c] maximal over c < cols, as a sequential scan with a strict
 * comparison gives it: NaNs never win, except that a NaN in column 0 makes the answer 0. One
 * work-group of OCL_WG_REDUCE per row, global (OCL_WG_REDUCE, rows). */

kernel void argmax(int dt, BUF(x), long ldx, long cols, BUF(out))
{
    local float bv[OCL_WG_REDUCE];
    local long bi[OCL_WG_REDUCE];
    int lid = (int)get_local_id(0);
    size_t r = get_group_id(1);
    const global uchar *x = AT(x);
    size_t base = r * ldx;
    float best = 0.0f;
    long at = -1;
    for (long c = lid; c < cols; c += OCL_WG_REDUCE) { /* ascending: ties keep the first */
        float v = ld(x, dt, base + c);
        if (!isnan(v) && (at < 0 || v > best)) best = v, at = c;
    }
    bv[lid] = best;
    bi[lid] = at;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = OCL_WG_REDUCE / 2; s > 0; s >>= 1) {
        if (lid < s) {
            int o = lid + s;
            if (bi[o] >= 0 && (bi[lid] < 0 || bv[o] > bv[lid] || (bv[o] == bv[lid] && bi[o] < bi[lid])))
                bv[lid] = bv[o], bi[lid] = bi[o];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        ((global int *)AT(out))[r] = isnan(ld(x, dt, base)) || bi[0] < 0 ? 0 : (int)bi[0];
}
