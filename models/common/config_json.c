/* SPDX-License-Identifier: Apache-2.0 */
/* Members of config.json objects, with bounds. */
#include "config_json.h"

#include <math.h>
#include <stdlib.h>

#include "file_read.h"
#include "vg/vg.h"

vg_status vg_json_parse_text(const char *text, size_t len, const char *where, cJSON **out)
{
    const char *end = NULL;
    *out = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    /* what follows the value may only be white space (cJSON stops after the value) */
    const char *stop = text + len;
    while (*out && end && end < stop && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (!*out || (end && end < stop)) {
        cJSON_Delete(*out);
        *out = NULL;
        size_t at = end && end >= text && end <= stop ? (size_t)(end - text) : len;
        return vg_error_set(VG_ERR_FORMAT, "%s: not valid JSON (truncated or malformed) near byte "
                                           "%zu of %zu", where, at, len);
    }
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return vg_error_set(VG_ERR_FORMAT, "%s: not a JSON object", where);
    }
    return VG_OK;
}

vg_status vg_json_parse_file(const char *path, cJSON **out)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    vg_status st = vg_file_read_text(path, VG_JSON_MAX_FILE, &text, &len);
    if (st != VG_OK) return st;
    st = vg_json_parse_text(text, len, path, out);
    free(text);
    return st;
}

vg_status vg_json_int(const cJSON *obj, const char *where, const char *key, long fallback, long lo,
                      long hi, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (fallback < 0)
            return vg_error_set(VG_ERR_FORMAT, "%s: '%s' is missing", where, key);
        *out = (int)fallback;
        return VG_OK;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : 0.0;
    /* range first: converting an out-of-range double to an integer is undefined */
    if (!cJSON_IsNumber(v) || !(d >= (double)lo && d <= (double)hi) || d != (double)(long)d)
        return vg_error_set(VG_ERR_FORMAT, "%s: '%s' must be an integer in [%ld, %ld]", where, key, lo, hi);
    *out = (int)d;
    return VG_OK;
}

vg_status vg_json_double(const cJSON *obj, const char *where, const char *key, int required,
                         double fallback, double lo, double hi, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) return vg_error_set(VG_ERR_FORMAT, "%s: '%s' is missing", where, key);
        *out = fallback;
        return VG_OK;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= lo && d <= hi)) /* also refuses NaN */
        return vg_error_set(VG_ERR_FORMAT, "%s: '%s' must be a number in [%g, %g]", where, key, lo, hi);
    *out = d;
    return VG_OK;
}

vg_status vg_json_bool(const cJSON *obj, const char *where, const char *key, int fallback, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        *out = fallback != 0;
        return VG_OK;
    }
    if (!cJSON_IsBool(v))
        return vg_error_set(VG_ERR_FORMAT, "%s: '%s' must be true or false", where, key);
    *out = cJSON_IsTrue(v) != 0;
    return VG_OK;
}
