/* SPDX-License-Identifier: Apache-2.0 */
/* Environment variables read as validated values. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vg_internal.h"

long long vg_env_int(const char *name, long long fallback, long long lo, long long hi)
{
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < lo || x > hi) {
        vg_log(VG_LOG_WARN, "%s=%s is not an integer in [%lld, %lld]; using %lld", name, v, lo,
               hi, fallback);
        return fallback;
    }
    return x;
}

int vg_env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "false") != 0 && strcmp(v, "off") != 0;
}
