/* SPDX-License-Identifier: Apache-2.0 */
/* Hugging Face model directories: config.json and safetensors weights, single or sharded. */
#include "checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

static vg_status read_text(const char *path, char **out, size_t limit)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return vg_error_set(errno == ENOENT ? VG_ERR_NOT_FOUND : VG_ERR_IO, "%s: cannot open: %s",
                            path, strerror(errno));
    char *buf = malloc(limit + 1);
    size_t n = buf ? fread(buf, 1, limit + 1, fp) : 0;
    int err = ferror(fp);
    fclose(fp);
    if (!buf) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    if (err || n > limit) {
        free(buf);
        return vg_error_set(err ? VG_ERR_IO : VG_ERR_FORMAT, "%s: %s", path,
                            err ? "read failed" : "larger than the accepted size");
    }
    buf[n] = '\0';
    *out = buf;
    return VG_OK;
}

static vg_status parse_json_file(const char *path, cJSON **out)
{
    char *text = NULL;
    vg_status st = read_text(path, &text, 64u << 20);
    if (st != VG_OK) return st;
    *out = cJSON_Parse(text);
    free(text);
    if (!*out || !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return vg_error_set(VG_ERR_FORMAT, "%s: not a JSON object", path);
    }
    return VG_OK;
}

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
    if (stat(c->dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        st = vg_error_set(VG_ERR_NOT_FOUND, "%s: not a model directory", c->dir);
    if (st == VG_OK) {
        snprintf(path, sizeof path, "%s/config.json", c->dir);
        st = parse_json_file(path, &c->config);
    }
    if (st == VG_OK) {
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", c->dir);
        if (stat(path, &sb) == 0) {
            cJSON *idx = NULL;
            st = parse_json_file(path, &idx);
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
                                  const int64_t *shape, vg_status *st)
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
    return t;
}

vg_status vg_ckpt_check(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape)
{
    vg_status st;
    checked(c, name, ndim, shape, &st);
    return st;
}

/* One row of n elements: src (unaligned, in the file's dtype) -> dst (dst_dtype). */
static void convert_row(const unsigned char *src, vg_dtype from, void *dst, vg_dtype to, size_t n)
{
    if (from == to) { /* bit copy: no double rounding between half formats */
        memcpy(dst, src, n * vg_dtype_size(to));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float v;
        if (from == VG_DTYPE_F32) {
            memcpy(&v, src + 4 * i, 4);
        } else {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            v = from == VG_DTYPE_BF16 ? vg_bf16_to_f32(h) : vg_f16_to_f32(h);
        }
        if (to == VG_DTYPE_F32) ((float *)dst)[i] = v;
        else ((uint16_t *)dst)[i] = to == VG_DTYPE_BF16 ? vg_f32_to_bf16(v) : vg_f32_to_f16(v);
    }
}

vg_status vg_ckpt_read_rows(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape,
                            int64_t row0, int64_t nrows, vg_dtype dst_dtype, void *dst,
                            int64_t ld_dst)
{
    if (!c || !name || ndim < 1 || !shape || (!dst && nrows) ||
        (dst_dtype != VG_DTYPE_F32 && dst_dtype != VG_DTYPE_BF16 && dst_dtype != VG_DTYPE_F16))
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_ckpt_read_rows: bad argument");
    vg_status st;
    const vg_st_tensor *t = checked(c, name, ndim, shape, &st);
    if (!t) return st;
    int64_t cols = 1;
    for (int d = 1; d < ndim; d++) cols *= shape[d];
    if (ld_dst < cols || row0 < 0 || nrows < 0 || row0 > shape[0] - nrows)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_ckpt_read_rows: '%s': rows [%lld, +%lld) or "
                                                "ld_dst %lld outside the tensor", name,
                            (long long)row0, (long long)nrows, (long long)ld_dst);
    const unsigned char *src = t->data; /* unaligned: converted element by element */
    size_t in_row = (size_t)cols * t->elem_size, out_row = (size_t)ld_dst * vg_dtype_size(dst_dtype);
    for (int64_t r = 0; r < nrows; r++)
        convert_row(src + (size_t)(row0 + r) * in_row, t->dtype, (char *)dst + (size_t)r * out_row,
                    dst_dtype, (size_t)cols);
    return VG_OK;
}

vg_status vg_ckpt_read(const vg_ckpt *c, const char *name, int ndim, const int64_t *shape,
                       vg_dtype dst_dtype, void *dst)
{
    if (!shape || ndim < 1) return vg_error_set(VG_ERR_INVALID_ARG, "vg_ckpt_read: bad argument");
    int64_t cols = 1;
    for (int d = 1; d < ndim; d++) cols *= shape[d];
    return vg_ckpt_read_rows(c, name, ndim, shape, 0, shape[0], dst_dtype, dst, cols);
}
