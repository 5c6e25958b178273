/* SPDX-License-Identifier: Apache-2.0 */
/* Members of a config.json object, read with bounds. Absent members take `fallback` unless the
 * member is required; errors name `where` (e.g. "DIR/config.json: vision_config") and the
 * member. */
#ifndef VG_MODELS_CONFIG_JSON_H
#define VG_MODELS_CONFIG_JSON_H

#include <cjson/cJSON.h>

#include "vg/vg_types.h"

/* The JSON object in `text` (len bytes), or one message for every caller: "WHERE: not valid
 * JSON (truncated or malformed) near byte N" or "WHERE: not a JSON object". */
vg_status vg_json_parse_text(const char *text, size_t len, const char *where, cJSON **out);
/* The same for the file at `path`, a regular file of at most VG_JSON_MAX_FILE bytes, named by its
 * path in messages. */
#define VG_JSON_MAX_FILE ((size_t)64 << 20)
vg_status vg_json_parse_file(const char *path, cJSON **out);

/* An integer in [lo, hi]; a negative fallback makes the member required. */
vg_status vg_json_int(const cJSON *obj, const char *where, const char *key, long fallback, long lo,
                      long hi, int *out);
/* A finite number in [lo, hi]; required when `required` is nonzero, else fallback. */
vg_status vg_json_double(const cJSON *obj, const char *where, const char *key, int required,
                         double fallback, double lo, double hi, double *out);
/* true or false; fallback when absent. */
vg_status vg_json_bool(const cJSON *obj, const char *where, const char *key, int fallback, int *out);

#endif
