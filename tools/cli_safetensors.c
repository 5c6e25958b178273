/* SPDX-License-Identifier: Apache-2.0 */
#include "cli_safetensors.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli_output.h"
#include "vg/vg.h"
#include "vg_cli.h"

static uint64_t nbytes(const vg_st_write_tensor *t)
{
    uint64_t n = vg_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) n *= (uint64_t)t->shape[d];
    return n;
}

/* The header: {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...} */
static char *header(const vg_st_write_tensor *t, int count)
{
    cJSON *root = cJSON_CreateObject();
    uint64_t off = 0;
    for (int i = 0; root && i < count; i++) {
        cJSON *e = cJSON_AddObjectToObject(root, t[i].name);
        cJSON_AddStringToObject(e, "dtype", vg_dtype_name(t[i].dtype));
        cJSON *shape = cJSON_AddArrayToObject(e, "shape"), *offs = cJSON_AddArrayToObject(e, "data_offsets");
        for (int d = 0; d < t[i].ndim; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d]));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        off += nbytes(&t[i]);
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
    }
    char *json = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return json;
}

int vg_cli_write_safetensors(const char *cmd, const char *path, const vg_st_write_tensor *t,
                             int count)
{
    char *json = header(t, count);
    if (!json) return vg_cli_fail(cmd, "cannot write %s: out of memory", path);
    vg_out o;
    if (vg_out_open(&o, cmd, path)) {
        free(json);
        return 1;
    }
    size_t hlen = strlen(json), padded = (hlen + 7) & ~(size_t)7; /* data 8-byte aligned */
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    int ok = fwrite(len8, 1, 8, o.fp) == 8 && fwrite(json, 1, hlen, o.fp) == hlen &&
             fprintf(o.fp, "%*s", (int)(padded - hlen), "") >= 0;
    for (int i = 0; ok && i < count; i++) {
        size_t n = (size_t)nbytes(&t[i]);
        ok = fwrite(t[i].data, 1, n, o.fp) == n;
    }
    free(json);
    return vg_out_commit(&o); /* a failed write left the stream's error flag set */
}
