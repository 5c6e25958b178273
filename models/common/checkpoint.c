/* SPDX-License-Identifier: Apache-2.0 */
/* Hugging Face model directories: config.json and safetensors weights, single or sharded. */
#include "checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_json.h"
#include "vg/vg.h"
#include "vg/vg_half.h"

#define MAX_SHARDS 256

struct vg_ckpt {
    char dir[4096];
    cJSON *config;
    cJSON *index;     /* weight_map of the index file, or NULL for a single file */
    vg_st_file *files[MAX_SHARDS];
    int nfiles;
};

static vg_status add_file(vg_ckpt *c, const char *name)
{
    /* A shard name is a plain file name inside the model directory. */
    if (!*name || strchr(name, '/') || name[0] == '.')
        return vg_error_set(VG_ERR_FORMAT, "%s/model.safetensors.index.json: shard name '%s' is not "
                                           "a plain file name", c->dir, name);
    for (int i = 0; i < c->nfiles; i++) {
        const char *p = vg_st_path(c->files[i]), *slash = strrchr(p, '/');
        if (strcmp(slash ? slash + 1 : p, name) == 0) return VG_OK;
    }
    if (c->nfiles == MAX_SHARDS)
        return vg_error_set(VG_ERR_FORMAT, "%s: more than %d shards", c->dir, MAX_SHARDS);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", c->dir, name);
    return vg_st_open(path, &c->files[c->nfiles++]) == VG_OK ? VG_OK
                                                             : (c->nfiles--, vg_last_status());
}

vg_status vg_ckpt_open(const char *dir, vg_ckpt **out)
{
    if (!dir || !out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_ckpt_open: NULL argument");
    *out = NULL;
    vg_ckpt *c = calloc(1, sizeof *c);
    if (!c) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_ckpt_open: out of memory");
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    size_t len = strlen(c->dir);
    while (len > 1 && c->dir[len - 1] == '/') c->dir[--len] = '\0';
    struct stat sb;
    char path[4200];
    vg_status st = VG_OK;
    if (stat(c->dir, &sb) != 0)
        st = vg_error_set(errno == ENOENT || errno == ENOTDIR ? VG_ERR_NOT_FOUND : VG_ERR_IO,
                          "%s: %s", c->dir, errno == ENOENT ? "does not exist" : strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        st = vg_error_set(VG_ERR_NOT_FOUND, "%s: not a directory (a model directory holds "
                                            "config.json and the safetensors weights)", c->dir);
    if (st == VG_OK) {
        snprintf(path, sizeof path, "%s/config.json", c->dir);
        st = vg_json_parse_file(path, &c->config);
    }
    if (st == VG_OK) {
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", c->dir);
        if (stat(path, &sb) == 0) {
            cJSON *idx = NULL;
            st = vg_json_parse_file(path, &idx);
            cJSON *map = st == VG_OK ? cJSON_DetachItemFromObjectCaseSensitive(idx, "weight_map") : NULL;
            cJSON_Delete(idx);
            if (st == VG_OK && !cJSON_IsObject(map)) {
                cJSON_Delete(map);
                st = vg_error_set(VG_ERR_FORMAT, "%s: no 'weight_map' object", path);
            } else if (st == VG_OK) {
                c->index = map;
                for (const cJSON *e = map->child; e && st == VG_OK; e = e->next)
                    st = cJSON_IsString(e) ? add_file(c, e->valuestring)
                                           : vg_error_set(VG_ERR_FORMAT, "%s: weight_map['%s'] is "
                                                                         "not a file name", path, e->string);
            }
        } else {
            st = add_file(c, "model.safetensors");
        }
    }
    if (st != VG_OK) {
        vg_ckpt_close(c);
        return st;
    }
    *out = c;
    return VG_OK;
}

void vg_ckpt_close(vg_ckpt *c)
{
    if (!c) return;
    for (int i = 0; i < c->nfiles; i++) vg_st_close(c->files[i]);
    cJSON_Delete(c->config);
    cJSON_Delete(c->index);
    free(c);
}

const cJSON *vg_ckpt_config(const vg_ckpt *c) { return c ? c->config : NULL; }
const char *vg_ckpt_dir(const vg_ckpt *c) { return c ? c->dir : ""; }
int vg_ckpt_file_count(const vg_ckpt *c) { return c ? c->nfiles : 0; }
const vg_st_file *vg_ckpt_file(const vg_ckpt *c, int i)
{
    return c && i >= 0 && i < c->nfiles ? c->files[i] : NULL;
}

const vg_st_tensor *vg_ckpt_find(const vg_ckpt *c, const char *name, const vg_st_file **file)
{
    for (int i = 0; c && i < c->nfiles; i++) {
        if (c->index) { /* the index says which shard: look only there */
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(c->index, name);
            const char *p = vg_st_path(c->files[i]), *slash = strrchr(p, '/');
            if (!cJSON_IsString(e) || strcmp(e->valuestring, slash ? slash + 1 : p) != 0) continue;
        }
        const vg_st_tensor *t = vg_st_find(c->files[i], name);
        if (t) {
            if (file) *file = c->files[i];
            return t;
        }
    }
    return NULL;
}

static void shape_text(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

static const vg_st_tensor *checked(const vg_ckpt *c, const char *name, int ndim,
                                  const int64_t *shape, const vg_st_file **file, vg_status *st)
{
    const vg_st_file *f = NULL;
    const vg_st_tensor *t = vg_ckpt_find(c, name, &f);
    *st = VG_OK;
    if (!t) {
        *st = vg_error_set(VG_ERR_NOT_FOUND, "%s: tensor '%s' is missing", c->dir, name);
        return NULL;
    }
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (!same) {
        char got[256], want[256];
        shape_text(got, sizeof got, t->ndim, t->shape);
        shape_text(want, sizeof want, ndim, shape);
        *st = vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s' has shape %s, the model expects %s",
                           vg_st_path(f), name, got, want);
        return NULL;
    }
    if (t->dtype != VG_DTYPE_F32 && t->dtype != VG_DTYPE_BF16 && t->dtype != VG_DTYPE_F16) {
        *st = vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s' has dtype %s (F32, BF16 or F16 expected)",
                           vg_st_path(f), name, t->dtype_name);
        return NULL;
    }
    if (file) *file = f;
    return t;
}

vg_status vg_ckpt_check(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape)
{
    vg_status st;
    checked(c, name, ndim, shape, NULL, &st);
    return st;
}

/* The all-ones exponent of each format: NaN or infinity. */
static int f32_bits_finite(uint32_t u) { return (u & 0x7f800000u) != 0x7f800000u; }
static int half_bits_finite(uint16_t h, vg_dtype dt)
{
    return dt == VG_DTYPE_BF16 ? (h & 0x7f80u) != 0x7f80u : (h & 0x7c00u) != 0x7c00u;
}

/* One row of n elements: src (unaligned, in the file's dtype) -> dst (dst_dtype), checking
 * every value on the way: the index of the first that is not finite in the file, or that
 * overflows to infinity in dst_dtype (*overflow set), or n when all are good. */
static size_t convert_row(const unsigned char *src, vg_dtype from, void *dst, vg_dtype to, size_t n,
                          int *overflow)
{
    *overflow = 0;
    if (from == to) { /* bit copy: no double rounding between half formats */
        memcpy(dst, src, n * vg_dtype_size(to));
        for (size_t i = 0; i < n; i++)
            if (to == VG_DTYPE_F32 ? !f32_bits_finite(((const uint32_t *)dst)[i])
                                   : !half_bits_finite(((const uint16_t *)dst)[i], to))
                return i;
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        float v;
        uint32_t u;
        if (from == VG_DTYPE_F32) {
            memcpy(&u, src + 4 * i, 4);
            memcpy(&v, &u, 4);
            if (!f32_bits_finite(u)) return i;
        } else {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            if (!half_bits_finite(h, from)) return i;
            v = from == VG_DTYPE_BF16 ? vg_bf16_to_f32(h) : vg_f16_to_f32(h);
        }
        if (to == VG_DTYPE_F32) {
            ((float *)dst)[i] = v;
        } else {
            uint16_t h = to == VG_DTYPE_BF16 ? vg_f32_to_bf16(v) : vg_f32_to_f16(v);
            ((uint16_t *)dst)[i] = h;
            if (!half_bits_finite(h, to)) { /* finite in the file, too large for dst_dtype */
                *overflow = 1;
                return i;
            }
        }
    }
    return n;
}

/* The message for element i of tensor t (in file f), which convert_row stopped at. */
static vg_status bad_value(const vg_st_file *f, const char *name, const vg_st_tensor *t,
                           uint64_t i, int overflow, vg_dtype to)
{
    const unsigned char *p = (const unsigned char *)t->data + i * t->elem_size;
    float v;
    if (t->dtype == VG_DTYPE_F32) {
        memcpy(&v, p, 4);
    } else {
        uint16_t h;
        memcpy(&h, p, 2);
        v = t->dtype == VG_DTYPE_BF16 ? vg_bf16_to_f32(h) : vg_f16_to_f32(h);
    }
    if (overflow)
        return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': element %llu is %g, beyond the range of "
                                           "%s (the compute dtype): it would become infinite",
                            vg_st_path(f), name, (unsigned long long)i, (double)v,
                            vg_dtype_name(to));
    return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': element %llu is %s: a checkpoint with "
                                       "non-finite weights is refused", vg_st_path(f), name,
                        (unsigned long long)i, v != v ? "NaN" : v > 0 ? "+Inf" : "-Inf");
}

vg_status vg_ckpt_read_block(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape,
                             int64_t row0, int64_t nrows, int64_t col0, int64_t ncols,
                             vg_dtype dst_dtype, void *dst, int64_t ld_dst)
{
    if (!c || !name || ndim < 1 || !shape || (!dst && nrows) ||
        (dst_dtype != VG_DTYPE_F32 && dst_dtype != VG_DTYPE_BF16 && dst_dtype != VG_DTYPE_F16))
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_ckpt_read_block: bad argument");
    vg_status st;
    const vg_st_file *f = NULL;
    const vg_st_tensor *t = checked(c, name, ndim, shape, &f, &st);
    if (!t) return st;
    int64_t cols = 1;
    for (int d = 1; d < ndim; d++) cols *= shape[d];
    if (ld_dst < ncols || row0 < 0 || nrows < 0 || row0 > shape[0] - nrows || col0 < 0 ||
        ncols < 0 || col0 > cols - ncols)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_ckpt_read_block: '%s': rows [%lld, +%lld), "
                                                "columns [%lld, +%lld) or ld_dst %lld outside the "
                                                "tensor", name, (long long)row0, (long long)nrows,
                            (long long)col0, (long long)ncols, (long long)ld_dst);
    const unsigned char *src = t->data; /* unaligned: converted element by element */
    size_t in_row = (size_t)cols * t->elem_size, out_row = (size_t)ld_dst * vg_dtype_size(dst_dtype);
    for (int64_t r = 0; r < nrows; r++) {
        int overflow;
        size_t bad = convert_row(src + (size_t)(row0 + r) * in_row + (size_t)col0 * t->elem_size,
                                 t->dtype, (char *)dst + (size_t)r * out_row, dst_dtype,
                                 (size_t)ncols, &overflow);
        if (bad < (size_t)ncols)
            return bad_value(f, name, t, (uint64_t)(row0 + r) * (uint64_t)cols + (uint64_t)col0 + bad,
                             overflow, dst_dtype);
    }
    return VG_OK;
}

vg_status vg_ckpt_read_rows(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape,
                            int64_t row0, int64_t nrows, vg_dtype dst_dtype, void *dst,
                            int64_t ld_dst)
{
    if (!shape || ndim < 1) return vg_error_set(VG_ERR_INVALID_ARG, "vg_ckpt_read_rows: bad argument");
    int64_t cols = 1;
    for (int d = 1; d < ndim; d++) cols *= shape[d];
    return vg_ckpt_read_block(c, name, ndim, shape, row0, nrows, 0, cols, dst_dtype, dst, ld_dst);
}

vg_status vg_ckpt_read(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape,
                       vg_dtype dst_dtype, void *dst)
{
    if (!shape || ndim < 1) return vg_error_set(VG_ERR_INVALID_ARG, "vg_ckpt_read: bad argument");
    int64_t cols = 1;
    for (int d = 1; d < ndim; d++) cols *= shape[d];
    return vg_ckpt_read_rows(c, name, ndim, shape, 0, shape[0], dst_dtype, dst, cols);
}
