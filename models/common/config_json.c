/* SPDX-License-Identifier: Apache-2.0 */
/* Members of config.json objects, with bounds. */
#include "config_json.h"

#include <math.h>

#include "vg/vg.h"

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
