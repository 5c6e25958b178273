/* Core-internal helpers shared by the files of libvg. Not installed. */
#ifndef VG_INTERNAL_H
#define VG_INTERNAL_H

#include <stdarg.h>

#include "vg/vg.h"

/* Set this thread's last error and return `status`, so callers can `return vg_set_error(...)`. */
vg_status vg_set_error(vg_status status, const char *fmt, ...) VG_PRINTF(2, 3);
vg_status vg_set_errorv(vg_status status, const char *fmt, va_list ap);
/* Prefix the current message with context ("loading model: " + old message). */
vg_status vg_error_prefix(const char *fmt, ...) VG_PRINTF(1, 2);
/* Nonzero while a message is set on this thread. */
int vg_error_is_set(void);
void vg_logv(vg_log_level level, const char *fmt, va_list ap);
int vg_log_enabled(vg_log_level level);

/* The table of host services handed to every plugin. */
const vg_host_services *vg_host_services_get(void);

/* Validate a plugin's table and produce a zero-extended copy of this core's size. */
vg_status vg_iface_validate(const vg_backend_iface *in, const char *origin, vg_backend_iface *out,
                            vg_op_table *ops_out);

/* Loader: resolve and dlopen a name or path; the message of a failure names every attempt. */
typedef struct vg_plugin {
    void *handle;
    char path[1024];
} vg_plugin;
/* On success *iface and *ops hold the validated, zero-extended table (iface->ops == ops). */
vg_status vg_plugin_load(const char *name_or_path, vg_plugin *out, vg_backend_iface *iface,
                         vg_op_table *ops);
void vg_plugin_unload(vg_plugin *p);

/* Reading an environment variable as a bounded value; malformed values are logged and ignored. */
long long vg_env_int(const char *name, long long fallback, long long lo, long long hi);
int vg_env_flag(const char *name);

#define VG_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
