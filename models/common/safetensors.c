/* SPDX-License-Identifier: Apache-2.0 */
/* safetensors: a validating reader over a memory mapping, and a writer. The format: an 8-byte
 * little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets}}, then
 * the data buffer that the offsets index. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "file_read.h"
#include "util.h"
#include "vg/vg.h"
#include "vg/vg_safetensors.h"

#define MAX_HEADER (100u << 20) /* the reference implementation's limit */
#define MAX_JSON_INT 9007199254740992.0 /* 2^53: larger integers are not exact in JSON numbers */

struct vg_st_file {
    char *path;
    void *map;        /* NULL when the image is the caller's */
    size_t map_size;
    const unsigned char *base;
    size_t size;
    int count;
    vg_st_tensor *tensors; /* sorted by name for lookup */
    char *strings;         /* names and dtype names */
};

static const struct {
    const char *name;
    vg_dtype dtype;
    size_t size;
} k_dtypes[] = {
    {"F32", VG_DTYPE_F32, 4},       {"F16", VG_DTYPE_F16, 2},      {"BF16", VG_DTYPE_BF16, 2},
    {"I32", VG_DTYPE_I32, 4},       {"I64", VG_DTYPE_I64, 8},      {"U8", VG_DTYPE_U8, 1},
    {"F64", VG_DTYPE_COUNT_, 8},    {"I8", VG_DTYPE_COUNT_, 1},    {"I16", VG_DTYPE_COUNT_, 2},
    {"U16", VG_DTYPE_COUNT_, 2},    {"U32", VG_DTYPE_COUNT_, 4},   {"U64", VG_DTYPE_COUNT_, 8},
    {"BOOL", VG_DTYPE_COUNT_, 1},   {"F8_E4M3", VG_DTYPE_COUNT_, 1}, {"F8_E5M2", VG_DTYPE_COUNT_, 1},
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const vg_st_tensor *)a)->name, ((const vg_st_tensor *)b)->name);
}

typedef struct span {
    uint64_t begin, end;
    int index;
} span;

static int by_begin(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

/* A JSON number that is an exact non-negative integer below 2^53. */
static int json_uint(const cJSON *j, uint64_t *out)
{
    if (!cJSON_IsNumber(j)) return 0;
    double v = j->valuedouble;
    if (!(v >= 0.0 && v <= MAX_JSON_INT) || v != (double)(uint64_t)v) return 0;
    *out = (uint64_t)v;
    return 1;
}

static vg_status parse_tensor(vg_st_file *f, const cJSON *item, vg_st_tensor *t, uint64_t data_size,
                              uint64_t *begin, char **strings)
{
    const char *name = item->string;
    const char *p = f->path;
    if (!cJSON_IsObject(item))
        return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': entry is not a JSON object", p, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(shape) || !cJSON_IsArray(offs))
        return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': needs string 'dtype', array 'shape' "
                                           "and array 'data_offsets'", p, name);
    int known = -1;
    for (int i = 0; i < (int)VGM_ARRAY_LEN(k_dtypes); i++)
        if (strcmp(dt->valuestring, k_dtypes[i].name) == 0) known = i;
    if (known < 0)
        return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%.32s'", p, name,
                            dt->valuestring);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > VG_ST_MAX_DIMS)
        return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': %d dimensions (at most %d)", p, name,
                            ndim, VG_ST_MAX_DIMS);
    uint64_t numel = 1;
    int d = 0;
    for (const cJSON *e = shape->child; e; e = e->next, d++) {
        uint64_t v;
        if (!json_uint(e, &v))
            return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': shape[%d] is not a non-negative "
                                               "integer", p, name, d);
        if (v && numel > UINT64_MAX / v)
            return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': shape product overflows", p, name);
        numel *= v;
        t->shape[d] = (int64_t)v;
    }
    size_t es = k_dtypes[known].size;
    if (numel > UINT64_MAX / es || numel * es > SIZE_MAX)
        return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': byte size overflows", p, name);
    uint64_t b, e;
    if (cJSON_GetArraySize(offs) != 2 || !json_uint(offs->child, &b) ||
        !json_uint(offs->child->next, &e))
        return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': data_offsets must be two "
                                           "non-negative integers", p, name);
    if (b > e || e > data_size)
        return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] outside the "
                                           "data buffer of %llu bytes", p, name,
                            (unsigned long long)b, (unsigned long long)e,
                            (unsigned long long)data_size);
    if (e - b != numel * es)
        return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s': %llu bytes at data_offsets, but dtype "
                                           "%s x shape needs %llu", p, name,
                            (unsigned long long)(e - b), k_dtypes[known].name,
                            (unsigned long long)(numel * es));
    size_t nlen = strlen(name) + 1;
    memcpy(*strings, name, nlen);
    t->name = *strings;
    *strings += nlen;
    t->dtype_name = k_dtypes[known].name;
    t->dtype = k_dtypes[known].dtype;
    t->elem_size = es;
    t->ndim = ndim;
    t->numel = numel;
    t->nbytes = (size_t)(e - b);
    *begin = b;
    return VG_OK;
}

static vg_status parse(vg_st_file *f)
{
    const char *p = f->path;
    if (f->size < 8)
        return vg_error_set(VG_ERR_FORMAT, "%s: %zu bytes: too short for a safetensors header", p,
                            f->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->base[i];
    if (n > f->size - 8)
        return vg_error_set(VG_ERR_FORMAT, "%s: header size %llu is beyond the file (%zu bytes)",
                            p, (unsigned long long)n, f->size);
    if (n > MAX_HEADER)
        return vg_error_set(VG_ERR_FORMAT, "%s: header size %llu exceeds the %u-byte limit", p,
                            (unsigned long long)n, MAX_HEADER);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts((const char *)f->base + 8, (size_t)n, &end, 0);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return vg_error_set(VG_ERR_FORMAT, "%s: header is not a JSON object", p);
    }
    uint64_t data_size = f->size - 8 - n;
    const unsigned char *data = f->base + 8 + n;
    int count = 0;
    size_t name_bytes = 0;
    for (const cJSON *c = root->child; c; c = c->next) {
        if (!c->string) continue;
        if (strcmp(c->string, "__metadata__") == 0) continue;
        count++;
        name_bytes += strlen(c->string) + 1;
    }
    vg_status st = VG_OK;
    f->tensors = calloc((size_t)(count ? count : 1), sizeof *f->tensors);
    f->strings = malloc(name_bytes ? name_bytes : 1);
    span *spans = calloc((size_t)(count ? count : 1), sizeof *spans);
    char *sp = f->strings;
    if (!f->tensors || !f->strings || !spans)
        st = vg_error_set(VG_ERR_OUT_OF_MEMORY, "%s: out of memory for %d tensors", p, count);
    int i = 0;
    for (const cJSON *c = root->child; c && st == VG_OK; c = c->next) {
        if (!c->string) continue;
        if (strcmp(c->string, "__metadata__") == 0) {
            if (!cJSON_IsObject(c))
                st = vg_error_set(VG_ERR_FORMAT, "%s: __metadata__ is not a JSON object", p);
            continue;
        }
        if (!c->string[0]) {
            st = vg_error_set(VG_ERR_FORMAT, "%s: a tensor has an empty name", p);
            break;
        }
        st = parse_tensor(f, c, &f->tensors[i], data_size, &spans[i].begin, &sp);
        spans[i].end = spans[i].begin + f->tensors[i].nbytes;
        spans[i].index = i;
        f->tensors[i].data = data + spans[i].begin;
        i++;
    }
    cJSON_Delete(root);
    if (st == VG_OK) {
        f->count = count;
        qsort(spans, (size_t)count, sizeof *spans, by_begin);
        uint64_t reach = 0;
        int holder = -1;
        for (int k = 0; k < count && st == VG_OK; k++) {
            if (spans[k].end == spans[k].begin) continue; /* empty tensors occupy nothing */
            if (holder >= 0 && spans[k].begin < reach)
                st = vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s' overlaps tensor '%s' in the data "
                                                 "buffer", p, f->tensors[spans[k].index].name,
                                  f->tensors[holder].name);
            if (spans[k].end > reach) reach = spans[k].end, holder = spans[k].index;
        }
    }
    if (st == VG_OK) {
        qsort(f->tensors, (size_t)count, sizeof *f->tensors, by_name);
        for (int k = 1; k < count && st == VG_OK; k++)
            if (strcmp(f->tensors[k - 1].name, f->tensors[k].name) == 0)
                st = vg_error_set(VG_ERR_FORMAT, "%s: duplicate tensor name '%s'", p,
                                  f->tensors[k].name);
    }
    free(spans);
    return st;
}

static vg_status finish_open(vg_st_file *f, vg_st_file **out)
{
    vg_status st = parse(f);
    if (st != VG_OK) {
        vg_st_close(f);
        return st;
    }
    *out = f;
    return VG_OK;
}

vg_status vg_st_open_memory(const void *data, size_t size, const char *label, vg_st_file **out)
{
    if (!out || (!data && size)) return vg_error_set(VG_ERR_INVALID_ARG, "vg_st_open_memory: NULL");
    *out = NULL;
    vg_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(label ? label : "(memory)"))) {
        free(f);
        return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_st_open_memory: out of memory");
    }
    f->base = data;
    f->size = size;
    return finish_open(f, out);
}

vg_status vg_st_open(const char *path, vg_st_file **out)
{
    if (!path || !out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_st_open: NULL argument");
    *out = NULL;
    int fd;
    size_t size;
    vg_status st = vg_file_open_read(path, &fd, &size); /* a FIFO or device is refused here */
    if (st != VG_OK) return st;
    vg_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        close(fd);
        return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_st_open: out of memory");
    }
    f->size = size;
    if (f->size) {
        f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (f->map == MAP_FAILED) {
            int e = errno;
            f->map = NULL;
            close(fd);
            vg_st_close(f);
            return vg_error_set(VG_ERR_IO, "%s: mmap failed: %s", path, strerror(e));
        }
        f->map_size = f->size;
        f->base = f->map;
    }
    close(fd);
    return finish_open(f, out);
}

void vg_st_close(vg_st_file *f)
{
    if (!f) return;
    if (f->map) munmap(f->map, f->map_size);
    free(f->tensors);
    free(f->strings);
    free(f->path);
    free(f);
}

const char *vg_st_path(const vg_st_file *f) { return f ? f->path : ""; }
int vg_st_count(const vg_st_file *f) { return f ? f->count : 0; }
const vg_st_tensor *vg_st_at(const vg_st_file *f, int i)
{
    return f && i >= 0 && i < f->count ? &f->tensors[i] : NULL;
}

const vg_st_tensor *vg_st_find(const vg_st_file *f, const char *name)
{
    if (!f || !name || !f->count) return NULL;
    vg_st_tensor key = {.name = name};
    return bsearch(&key, f->tensors, (size_t)f->count, sizeof key, by_name);
}

/* ---- writer ------------------------------------------------------------------------------------ */

static vg_status write_all(FILE *fp, const void *data, size_t n, const char *path)
{
    if (n && fwrite(data, 1, n, fp) != n)
        return vg_error_set(VG_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return VG_OK;
}

vg_status vg_st_write(const char *path, const vg_st_write_tensor *t, int count)
{
    if (!path || count < 0 || (count && !t)) return vg_error_set(VG_ERR_INVALID_ARG, "vg_st_write: bad argument");
    cJSON *root = cJSON_CreateObject();
    if (!root) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_st_write: out of memory");
    uint64_t off = 0;
    for (int i = 0; i < count; i++) {
        size_t es = vg_dtype_size(t[i].dtype);
        if (!t[i].name || !*t[i].name || !es || t[i].ndim < 0 || t[i].ndim > VG_ST_MAX_DIMS ||
            cJSON_GetObjectItemCaseSensitive(root, t[i].name)) {
            cJSON_Delete(root);
            return vg_error_set(VG_ERR_INVALID_ARG, "%s: tensor %d ('%s'): bad name, dtype or rank, "
                                                    "or a duplicate", path, i,
                                t[i].name ? t[i].name : "");
        }
        uint64_t numel = 1;
        cJSON *e = cJSON_CreateObject(), *shape = cJSON_CreateArray(), *offs = cJSON_CreateArray();
        for (int d = 0; d < t[i].ndim; d++) {
            numel *= (uint64_t)t[i].shape[d];
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d]));
        }
        cJSON_AddStringToObject(e, "dtype", vg_dtype_name(t[i].dtype));
        cJSON_AddItemToObject(e, "shape", shape);
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        off += numel * es;
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        cJSON_AddItemToObject(e, "data_offsets", offs);
        cJSON_AddItemToObject(root, t[i].name, e);
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!json) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_st_write: out of memory");
    size_t hlen = strlen(json), padded = (hlen + 7) & ~(size_t)7; /* data 8-byte aligned */
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp) {
        free(json);
        return vg_error_set(VG_ERR_INVALID_ARG, "%s: path too long", path);
    }
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        free(json);
        return vg_error_set(VG_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    vg_status st = write_all(fp, len8, 8, path);
    if (st == VG_OK) st = write_all(fp, json, hlen, path);
    for (size_t i = hlen; i < padded && st == VG_OK; i++) st = write_all(fp, " ", 1, path);
    for (int i = 0; i < count && st == VG_OK; i++) {
        uint64_t numel = 1;
        for (int d = 0; d < t[i].ndim; d++) numel *= (uint64_t)t[i].shape[d];
        st = write_all(fp, t[i].data, (size_t)numel * vg_dtype_size(t[i].dtype), path);
    }
    free(json);
    if (fclose(fp) != 0 && st == VG_OK) st = vg_error_set(VG_ERR_IO, "%s: close failed: %s", path, strerror(errno));
    if (st == VG_OK && rename(tmp, path) != 0)
        st = vg_error_set(VG_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
    if (st != VG_OK) unlink(tmp);
    return st;
}
