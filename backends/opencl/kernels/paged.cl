/* SPDX-License-Identifier: Apache-2.0 */
/* The paged KV cache of decoder language models: kv_store writes new keys and values into their
 * slots, paged_attention attends causally over a sequence's cached history. What lives in device
 * memory (slots, block tables, context lengths, query starts) is read at execution time, so one
 * recorded command buffer serves every batch of its shape. */

/* cache[slots[r], c] = k[r, c] and v[r, c] for c < width; a negative slot writes nothing.
 * Global (width, rows). */
kernel void kv_store(int esize, BUF(k), long ld_k, BUF(v), long ld_v, BUF(kc), BUF(vc),
                     BUF(slots), int rows, int width)
{
    size_t c = get_global_id(0), r = get_global_id(1);
    if (c >= (size_t)width || r >= (size_t)rows) return;
    int slot = ((const global int *)AT(slots))[r];
    if (slot < 0) return; /* a padding row */
    size_t dst = (size_t)slot * width + c;
    copy_elem(AT(kc), AT(k), esize, dst, r * ld_k + c);
    copy_elem(AT(vc), AT(v), esize, dst, r * ld_v + c);
}

inline int clamp_row(int v, int rows) { return v < 0 ? 0 : v > rows ? rows : v; }

/* One work-item per (query row, head); global (rows rounded up to OCL_WG_ATTN, heads). Rows
 * outside every sequence are padding: their head slices are written as zeros. */
kernel void paged_attention(int dt, BUF(q), long ld_q, BUF(out), long ld_out, int rows, BUF(kc),
                            BUF(vc), BUF(bt), int max_blocks, BUF(cl), BUF(qs), int num_seqs,
                            int heads, int kv_heads, int hd, int bs, float scale)
{
    size_t row = get_global_id(0);
    int h = (int)get_global_id(1);
    if (row >= (size_t)rows) return;
    const global int *qs = (const global int *)AT(qs);
    global uchar *out = AT(out);
    size_t oo = row * ld_out + (size_t)h * hd;
    int first = clamp_row(qs[0], rows), last = clamp_row(qs[num_seqs], rows);
    /* the last sequence starting at or before this row */
    int lo = 0, hi = num_seqs;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (clamp_row(qs[mid], rows) <= (int)row) lo = mid;
        else hi = mid;
    }
    int beg = clamp_row(qs[lo], rows), end = clamp_row(qs[lo + 1], rows);
    if ((int)row < beg || (int)row >= end) {
        if ((int)row < first || (int)row >= max(last, first))
            for (int d = 0; d < hd; d++) st(out, dt, oo + d, 0.0f);
        return;
    }
    int n = end - beg;
    long ctx = ((const global int *)AT(cl))[lo];
    long last_pos = ctx - n + ((int)row - beg), reach = (long)max_blocks * bs;
    if (last_pos >= reach) last_pos = reach - 1;
    const global int *table = (const global int *)AT(bt) + (size_t)lo * max_blocks;
    const global uchar *Q = AT(q), *K = AT(kc), *V = AT(vc);
    size_t cache_ld = (size_t)kv_heads * hd, ko = (size_t)(h / (heads / kv_heads)) * hd;
    size_t qo = row * ld_q + (size_t)h * hd;
    float qv[MAX_HD], acc[MAX_HD];
    for (int d = 0; d < hd; d++) {
        qv[d] = ld(Q, dt, qo + d);
        acc[d] = 0.0f;
    }
    float mx = -INFINITY, sum = 0.0f;
    for (long p = 0; p <= last_pos; p++) { /* online softmax, fp32 */
        size_t slot = (size_t)table[p / bs] * bs + (size_t)(p % bs);
        size_t kv = slot * cache_ld + ko;
        float dot = 0.0f;
        for (int d = 0; d < hd; d++) dot += qv[d] * ld(K, dt, kv + d);
        float sc = dot * scale, m2 = fmax(mx, sc);
        float corr = exp(mx - m2), pe = exp(sc - m2);
        sum = sum * corr + pe;
        for (int d = 0; d < hd; d++) acc[d] = acc[d] * corr + pe * ld(V, dt, kv + d);
        mx = m2;
    }
    float inv = sum > 0.0f ? 1.0f / sum : 0.0f; /* no position: zeros */
    for (int d = 0; d < hd; d++) st(out, dt, oo + d, acc[d] * inv);
}

/* v rounded to dtype dt, as a store and a load would leave it. */
inline float round_to(int dt, float v)
{
    if (dt == DT_BF16) return bf16_to_f32(f32_to_bf16(v));
    if (dt == DT_F16) return f16_to_f32(f32_to_f16(v));
    return v;
}

/* rotary_kv_store: one work-group of OCL_WG_REDUCE per (head slice, row) of qkv's heads + 2·kv
 * slices; global (OCL_WG_REDUCE * (heads + 2·kv_heads), rows). A query or key slice is normalised
 * (has_norm: its statistics summed over the group, the result rounded to dt as rmsnorm_heads
 * leaves it), rotated pair by pair in place, and a key slice also stored in the cache; a value
 * slice is only stored. Each work-item reads and writes only its own pairs after the group's
 * last barrier. */
kernel void rotary_kv_store(int dt, BUF(x), long ldx, int heads, int kv_heads, int hd, int has_norm,
                            BUF(qw), BUF(kw), float eps, BUF(pos), float theta, BUF(kc), BUF(vc),
                            BUF(slots))
{
    local float part[OCL_WG_REDUCE];
    int lid = (int)get_local_id(0), h = (int)get_group_id(0), pairs = hd / 2;
    size_t r = get_group_id(1), width = (size_t)kv_heads * hd;
    global uchar *x = AT(x);
    size_t xb = r * ldx + (size_t)h * hd;
    int slot = ((const global int *)AT(slots))[r];
    if (h >= heads + kv_heads) { /* a value slice */
        if (slot < 0) return;
        size_t vb = (size_t)slot * width + (size_t)(h - heads - kv_heads) * hd;
        for (int c = lid; c < hd; c += OCL_WG_REDUCE) st(AT(vc), dt, vb + c, ld(x, dt, xb + c));
        return;
    }
    const global uchar *w = h < heads ? AT(qw) : AT(kw);
    float inv = 1.0f;
    if (has_norm) {
        float ss = 0.0f;
        for (int c = lid; c < hd; c += OCL_WG_REDUCE) {
            float v = ld(x, dt, xb + c);
            ss += v * v;
        }
        inv = 1.0f / sqrt(group_sum(part, ss) / (float)hd + eps);
    }
    float p = (float)((const global int *)AT(pos))[r];
    int is_key = h >= heads && slot >= 0;
    size_t kb = is_key ? (size_t)slot * width + (size_t)(h - heads) * hd : 0;
    for (int i = lid; i < pairs; i += OCL_WG_REDUCE) {
        float x0 = ld(x, dt, xb + i), x1 = ld(x, dt, xb + i + pairs);
        if (has_norm) {
            x0 = round_to(dt, ld(w, dt, i) * (x0 * inv));
            x1 = round_to(dt, ld(w, dt, i + pairs) * (x1 * inv));
        }
        float c, s = sincos(p * rotary_inv_freq(theta, (float)(2 * i) / (float)hd), &c);
        float y0 = x0 * c - x1 * s, y1 = x1 * c + x0 * s;
        st(x, dt, xb + i, y0);
        st(x, dt, xb + i + pairs, y1);
        if (is_key) {
            st(AT(kc), dt, kb + i, y0);
            st(AT(kc), dt, kb + i + pairs, y1);
        }
    }
}
