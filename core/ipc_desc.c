/* SPDX-License-Identifier: Apache-2.0 */
/* IPC tensor descriptors: the checks every descriptor passes (decoded or built by hand), and
 * the fixed little-endian wire form (docs/ipc.md has the layout). Descriptors come from another
 * process: nothing here trusts a field before checking it, and every refusal names the field. */
#include <string.h>

#include "ipc_internal.h"

/* Wire layout, version 1 (VG_IPC_DESC_BYTES bytes, little-endian). */
enum {
    W_MAGIC = 0,      /* 8 bytes "vgipcdsc" */
    W_VERSION = 8,    /* u32 */
    W_SIZE = 12,      /* u32: VG_IPC_DESC_BYTES */
    W_BACKEND = 16,   /* 16 bytes, NUL-padded */
    W_POOL_ID = 32,   /* 16 bytes */
    W_PID = 48,       /* i32 */
    W_DEVICE = 52,    /* i32 */
    W_POOL_BYTES = 56,/* u64 */
    W_OFFSET = 64,    /* u64 */
    W_BYTES = 72,     /* u64 */
    W_DTYPE = 80,     /* u32 */
    W_NDIM = 84,      /* i32 */
    W_SHAPE = 88,     /* 8 x i64 */
    W_HANDLE = 152,   /* VG_IPC_HANDLE_BYTES */
    W_RESERVED = 216, /* zero up to the end */
};
_Static_assert(W_HANDLE + VG_IPC_HANDLE_BYTES == W_RESERVED, "wire layout");
_Static_assert(W_SHAPE + 8 * VG_IPC_MAX_DIMS == W_HANDLE, "wire layout");
_Static_assert(W_RESERVED <= VG_IPC_DESC_BYTES, "wire layout");

static const char k_magic[8] = {'v', 'g', 'i', 'p', 'c', 'd', 's', 'c'};

#define BAD(...) vg_error_set(VG_ERR_FORMAT, "IPC descriptor: " __VA_ARGS__)

vg_status vg_ipc_desc_check(const vg_ipc_desc *d)
{
    if (!d) return vg_error_set(VG_ERR_INVALID_ARG, "IPC descriptor: NULL");
    if (d->version != VG_IPC_DESC_VERSION)
        return BAD("version %u is not one this vg reads (it reads version %d)", d->version,
                   VG_IPC_DESC_VERSION);
    size_t n = strnlen(d->backend, sizeof d->backend);
    if (n == 0 || n == sizeof d->backend)
        return BAD("the backend name is %s", n ? "not NUL-terminated within 16 bytes" : "empty");
    for (size_t i = 0; i < n; i++) {
        char c = d->backend[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return BAD("the backend name holds byte 0x%02x at %zu (letters, digits, '_' and '-' "
                       "only)", (unsigned char)c, i);
    }
    for (size_t i = n; i < sizeof d->backend; i++)
        if (d->backend[i]) return BAD("bytes after the backend name's NUL are not zero");
    if (d->producer_pid <= 0) return BAD("producer pid %d is not a process id", d->producer_pid);
    if (d->device < 0) return BAD("device index %d is negative", d->device);
    if ((unsigned)d->dtype >= VG_DTYPE_COUNT_) return BAD("dtype %d is unknown", (int)d->dtype);
    if (d->ndim < 0 || d->ndim > VG_IPC_MAX_DIMS)
        return BAD("ndim %d is outside 0..%d", d->ndim, VG_IPC_MAX_DIMS);
    uint64_t elems = 1;
    int zero = 0;
    for (int i = 0; i < VG_IPC_MAX_DIMS; i++) {
        int64_t dim = d->shape[i];
        if (i >= d->ndim) {
            if (dim != 0) return BAD("shape[%d] is %lld beyond ndim %d (must be 0)", i,
                                     (long long)dim, d->ndim);
            continue;
        }
        if (dim < 0) return BAD("shape[%d] is negative (%lld)", i, (long long)dim);
        if (dim == 0) zero = 1;
        else if (!zero && elems > UINT64_MAX / (uint64_t)dim)
            return BAD("the shape's element count overflows 64 bits");
        else if (!zero) elems *= (uint64_t)dim;
    }
    if (zero) elems = 0;
    uint64_t esize = vg_dtype_size(d->dtype);
    if (elems > UINT64_MAX / esize) return BAD("the shape's byte count overflows 64 bits");
    if (d->bytes != elems * esize)
        return BAD("bytes %llu disagree with the shape (%llu elements of %s: %llu bytes)",
                   (unsigned long long)d->bytes, (unsigned long long)elems,
                   vg_dtype_name(d->dtype), (unsigned long long)(elems * esize));
    if (d->pool_bytes == 0) return BAD("pool size is 0");
    if (d->offset > d->pool_bytes || d->bytes > d->pool_bytes - d->offset)
        return BAD("the tensor (offset %llu, %llu bytes) lies outside its pool of %llu bytes",
                   (unsigned long long)d->offset, (unsigned long long)d->bytes,
                   (unsigned long long)d->pool_bytes);
    if (d->offset % esize)
        return BAD("offset %llu is not a multiple of the %s element size %llu",
                   (unsigned long long)d->offset, vg_dtype_name(d->dtype),
                   (unsigned long long)esize);
    return VG_OK;
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

vg_status vg_ipc_desc_encode(const vg_ipc_desc *d, unsigned char *out)
{
    if (!out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_desc_encode: out is NULL");
    vg_status st = vg_ipc_desc_check(d);
    if (st != VG_OK) return st;
    memset(out, 0, VG_IPC_DESC_BYTES);
    memcpy(out + W_MAGIC, k_magic, sizeof k_magic);
    put32(out + W_VERSION, d->version);
    put32(out + W_SIZE, VG_IPC_DESC_BYTES);
    memcpy(out + W_BACKEND, d->backend, VG_IPC_BACKEND_NAME_BYTES);
    memcpy(out + W_POOL_ID, d->pool_id, VG_IPC_POOL_ID_BYTES);
    put32(out + W_PID, (uint32_t)d->producer_pid);
    put32(out + W_DEVICE, (uint32_t)d->device);
    put64(out + W_POOL_BYTES, d->pool_bytes);
    put64(out + W_OFFSET, d->offset);
    put64(out + W_BYTES, d->bytes);
    put32(out + W_DTYPE, (uint32_t)d->dtype);
    put32(out + W_NDIM, (uint32_t)d->ndim);
    for (int i = 0; i < VG_IPC_MAX_DIMS; i++) put64(out + W_SHAPE + 8 * i, (uint64_t)d->shape[i]);
    memcpy(out + W_HANDLE, d->handle.bytes, VG_IPC_HANDLE_BYTES);
    return VG_OK;
}

vg_status vg_ipc_desc_decode(const void *buf, size_t len, vg_ipc_desc *out)
{
    if (!out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_desc_decode: out is NULL");
    memset(out, 0, sizeof *out);
    if (!buf) return vg_error_set(VG_ERR_INVALID_ARG, "vg_ipc_desc_decode: buffer is NULL");
    const unsigned char *p = buf;
    /* the magic and the version first: a reader of another version should say so, whatever
     * the length */
    if (len < W_SIZE + 4 || memcmp(p + W_MAGIC, k_magic, sizeof k_magic) != 0)
        return BAD("not a vg IPC descriptor (%zu bytes%s)", len,
                   len < W_SIZE + 4 ? "" : ", wrong magic");
    uint32_t version = get32(p + W_VERSION);
    if (version != VG_IPC_DESC_VERSION)
        return BAD("version %u is not one this vg reads (it reads version %d)", version,
                   VG_IPC_DESC_VERSION);
    if (len != VG_IPC_DESC_BYTES || get32(p + W_SIZE) != VG_IPC_DESC_BYTES)
        return BAD("%zu bytes with a size field of %u; version %d is %d bytes", len,
                   get32(p + W_SIZE), VG_IPC_DESC_VERSION, VG_IPC_DESC_BYTES);
    for (size_t i = W_RESERVED; i < VG_IPC_DESC_BYTES; i++)
        if (p[i]) return BAD("reserved byte %zu is not zero", i);
    out->version = version;
    memcpy(out->backend, p + W_BACKEND, VG_IPC_BACKEND_NAME_BYTES);
    memcpy(out->pool_id, p + W_POOL_ID, VG_IPC_POOL_ID_BYTES);
    out->producer_pid = (int32_t)get32(p + W_PID);
    out->device = (int32_t)get32(p + W_DEVICE);
    out->pool_bytes = get64(p + W_POOL_BYTES);
    out->offset = get64(p + W_OFFSET);
    out->bytes = get64(p + W_BYTES);
    uint32_t dtype = get32(p + W_DTYPE);
    out->dtype = dtype < VG_DTYPE_COUNT_ ? (vg_dtype)dtype : VG_DTYPE_COUNT_;
    out->ndim = (int32_t)get32(p + W_NDIM);
    for (int i = 0; i < VG_IPC_MAX_DIMS; i++) out->shape[i] = (int64_t)get64(p + W_SHAPE + 8 * i);
    memcpy(out->handle.bytes, p + W_HANDLE, VG_IPC_HANDLE_BYTES);
    vg_status st = dtype < VG_DTYPE_COUNT_ ? vg_ipc_desc_check(out)
                                           : BAD("dtype %u is unknown", dtype);
    if (st != VG_OK) memset(out, 0, sizeof *out);
    return st;
}
