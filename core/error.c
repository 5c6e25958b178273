/* SPDX-License-Identifier: Apache-2.0 */
/* Thread-local last-error state and status names; vg_free. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg/vg.h" /* vg_free */
#include "vg_internal.h"

/* Large enough for auto-selection's message, which lists every refused candidate. */
#define VG_ERROR_CAP 8192

static _Thread_local char tl_message[VG_ERROR_CAP];
static _Thread_local vg_status tl_status = VG_OK;

const char *vg_status_name(vg_status status)
{
    switch (status) {
    case VG_OK: return "VG_OK";
    case VG_ERR_INVALID_ARG: return "VG_ERR_INVALID_ARG";
    case VG_ERR_OUT_OF_MEMORY: return "VG_ERR_OUT_OF_MEMORY";
    case VG_ERR_NOT_FOUND: return "VG_ERR_NOT_FOUND";
    case VG_ERR_LOAD: return "VG_ERR_LOAD";
    case VG_ERR_ABI: return "VG_ERR_ABI";
    case VG_ERR_NO_DEVICE: return "VG_ERR_NO_DEVICE";
    case VG_ERR_UNSUPPORTED: return "VG_ERR_UNSUPPORTED";
    case VG_ERR_CAPTURE: return "VG_ERR_CAPTURE";
    case VG_ERR_DEVICE: return "VG_ERR_DEVICE";
    case VG_ERR_FORMAT: return "VG_ERR_FORMAT";
    case VG_ERR_IO: return "VG_ERR_IO";
    case VG_ERR_STATE: return "VG_ERR_STATE";
    case VG_ERR_INTERNAL: return "VG_ERR_INTERNAL";
    }
    return "VG_ERR_UNKNOWN";
}

vg_status vg_set_errorv(vg_status status, const char *fmt, va_list ap)
{
    /* Format into a temporary: callers often pass vg_last_error() itself as an argument. */
    char tmp[VG_ERROR_CAP];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    memcpy(tl_message, tmp, sizeof tl_message);
    tl_status = status;
    vg_log(VG_LOG_DEBUG, "error %s: %s", vg_status_name(status), tl_message);
    return status;
}

vg_status vg_error_set(vg_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vg_set_errorv(status, fmt, ap);
    va_end(ap);
    return status;
}

vg_status vg_error_prefix(const char *fmt, ...)
{
    char prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n <= 0) return tl_status;
    size_t plen = (size_t)n < sizeof prefix ? (size_t)n : sizeof prefix - 1;
    size_t old = strnlen(tl_message, sizeof tl_message - 1);
    if (plen + old > sizeof tl_message - 1) old = sizeof tl_message - 1 - plen;
    memmove(tl_message + plen, tl_message, old);
    memcpy(tl_message, prefix, plen);
    tl_message[plen + old] = '\0';
    return tl_status;
}

int vg_error_is_set(void) { return tl_status != VG_OK; }
const char *vg_last_error(void) { return tl_message; }
vg_status vg_last_status(void) { return tl_status; }

void vg_error_clear(void)
{
    tl_status = VG_OK;
    tl_message[0] = '\0';
}

/* Memory vg handed to the caller (output arrays of the model APIs). */
void vg_free(void *p) { free(p); }
