/* SPDX-License-Identifier: Apache-2.0 */
/* The end-of-sequence token ids of a language model, as Hugging Face's generate finds them:
 * eos_token_id of generation_config.json when the directory has one and it names any, else
 * eos_token_id of config.json; an integer or a list of integers, each inside the vocabulary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm_internal.h"

/* eos_token_id of `obj` into ids: 0 with *n set (0 when absent or null), or an error naming
 * where. */
static vg_status eos_of(const cJSON *obj, const char *where, int vocab, int32_t *ids, int *n)
{
    *n = 0;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(obj, "eos_token_id");
    if (!e || cJSON_IsNull(e)) return VG_OK;
    const cJSON *one = cJSON_IsArray(e) ? e->child : e;
    if (cJSON_IsArray(e) && cJSON_GetArraySize(e) > VG_LM_MAX_EOS)
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: eos_token_id lists %d ids; at most %d are supported",
                            where, cJSON_GetArraySize(e), VG_LM_MAX_EOS);
    for (; one; one = cJSON_IsArray(e) ? one->next : NULL) {
        double v = cJSON_IsNumber(one) ? one->valuedouble : -1;
        if (!cJSON_IsNumber(one) || !(v >= 0 && v < vocab) || v != (double)(int32_t)v)
            return vg_error_set(VG_ERR_FORMAT, "%s: eos_token_id must be a token id in [0, vocab_size "
                                               "%d) or a list of them", where, vocab);
        ids[(*n)++] = (int32_t)v;
    }
    return VG_OK;
}

vg_status lm_eos_read(const char *dir, const cJSON *config, const char *config_where, int vocab,
                      int32_t *ids, int *n)
{
    *n = 0;
    if (dir) {
        char path[4200];
        snprintf(path, sizeof path, "%s/generation_config.json", dir);
        struct stat st;
        if (stat(path, &st) == 0) {
            if (!S_ISREG(st.st_mode) || st.st_size > (1 << 20))
                return vg_error_set(VG_ERR_FORMAT, "%s: not a regular file of at most 1 MiB", path);
            FILE *f = fopen(path, "rb");
            char *text = f ? malloc((size_t)st.st_size + 1) : NULL;
            size_t got = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
            if (f) fclose(f);
            if (!text) return vg_error_set(VG_ERR_IO, "%s: cannot read it", path);
            text[got] = '\0';
            cJSON *g = cJSON_Parse(text);
            free(text);
            vg_status s = cJSON_IsObject(g) ? eos_of(g, path, vocab, ids, n)
                                            : vg_error_set(VG_ERR_FORMAT, "%s: not a JSON object", path);
            cJSON_Delete(g);
            if (s != VG_OK || *n) return s;
        }
    }
    return eos_of(config, config_where, vocab, ids, n);
}
