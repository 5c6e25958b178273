/* SPDX-License-Identifier: Apache-2.0 */
/* Byte fills and copies, and the typed fill op. Eager memsets and copies use the runtime's own
 * clEnqueueFillBuffer and clEnqueueCopyBuffer; these kernels are what a capture records, since
 * the command-buffer entry points for copies and fills changed signature between provisional
 * versions of cl_khr_command_buffer (docs/opencl.md). */

/* dst[0, n) = value, OCL_BYTES_PER_ITEM bytes per work-item */
kernel void memset_bytes(BUF(dst), ulong n, uint value)
{
    global uchar *dst = AT(dst);
    ulong first = get_global_id(0) * (ulong)OCL_BYTES_PER_ITEM;
    for (int b = 0; b < OCL_BYTES_PER_ITEM; b++)
        if (first + b < n) dst[first + b] = (uchar)value;
}

/* dst[0, n) = src[0, n); the ranges do not overlap (the host refuses it) */
kernel void copy_bytes(BUF(dst), BUF(src), ulong n)
{
    global uchar *dst = AT(dst);
    const global uchar *src = AT(src);
    ulong first = get_global_id(0) * (ulong)OCL_BYTES_PER_ITEM;
    for (int b = 0; b < OCL_BYTES_PER_ITEM; b++)
        if (first + b < n) dst[first + b] = src[first + b];
}

/* dst[i] = the element whose bytes are the low `esize` bytes of `pattern` (host-converted) */
kernel void fill_pattern(BUF(dst), ulong count, int esize, ulong pattern)
{
    size_t i = get_global_id(0);
    if (i >= count) return;
    global uchar *dst = AT(dst);
    if (esize == 4) ((global uint *)dst)[i] = (uint)pattern;
    else if (esize == 2) ((global ushort *)dst)[i] = (ushort)pattern;
    else if (esize == 8) ((global ulong *)dst)[i] = pattern;
    else dst[i] = (uchar)pattern;
}
