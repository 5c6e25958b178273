/* SPDX-License-Identifier: Apache-2.0 */
/* vg: portable GPU graph capture and replay. Core API.
 *
 * Naming: vg_<noun>_<verb>. Every function that can fail returns a vg_status and, on failure,
 * sets a thread-local message readable through vg_last_error(). */
#ifndef VG_H
#define VG_H

#include "vg_ops.h"
#include "vg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VG_VERSION_MAJOR 0
#define VG_VERSION_MINOR 1
#define VG_VERSION_PATCH 0
#define VG_VERSION_STRING "0.1.0"

/* ---- errors ------------------------------------------------------------------------------ */

VG_API const char *vg_status_name(vg_status status); /* "VG_ERR_NOT_FOUND" */
/* The plugin ABI this core speaks (major, minor), for diagnostics. */
VG_API void vg_abi_version(uint32_t *major, uint32_t *minor);
/* Message of the last failure on this thread, "" when none. Valid until the next vg call. */
VG_API const char *vg_last_error(void);
VG_API vg_status vg_last_status(void);
VG_API void vg_error_clear(void);
/* Set this thread's last error and return `status`, so code built on vg (models, engines)
 * reports failures through the same channel: `return vg_error_set(VG_ERR_FORMAT, "...")`. */
VG_API vg_status vg_error_set(vg_status status, const char *fmt, ...) VG_PRINTF(2, 3);
/* Prefix the current message with context ("loading model: " + old message); returns the
 * current status. */
VG_API vg_status vg_error_prefix(const char *fmt, ...) VG_PRINTF(1, 2);

/* ---- memory handed to the caller ------------------------------------------------------------ */

/* Free memory vg handed to the caller: the output arrays of every model API (vg_vit.h's
 * embeddings, ...). NULL is a no-op. */
VG_API void vg_free(void *p);

/* ---- logging ------------------------------------------------------------------------------ */

/* Default level: VG_LOG_LEVEL (error|warn|info|debug|trace or 0-4), else warn. */
VG_API void vg_log_set_level(vg_log_level level);
VG_API vg_log_level vg_log_get_level(void);
/* Route log lines to fn (NULL restores stderr). fn may be called from any thread. */
typedef void (*vg_log_fn)(vg_log_level level, const char *message, void *user);
VG_API void vg_log_set_callback(vg_log_fn fn, void *user);
VG_API void vg_log(vg_log_level level, const char *fmt, ...) VG_PRINTF(2, 3);

/* Names for diagnostics: "gemm", "graph_update". NULL for an unknown id or bit. */
VG_API const char *vg_op_name(vg_op_id op);
VG_API const char *vg_cap_name(uint64_t cap_bit);
VG_API const char *vg_dtype_name(vg_dtype dtype);
VG_API size_t vg_dtype_size(vg_dtype dtype); /* 0 for an unknown dtype */

/* ---- backend discovery ---------------------------------------------------------------------- */

/* vg's own backends: "cuda", "hip", "opencl", "kunlun_stub". With VG_BACKEND unset, these and every
 * libvg_<name>.so in the directories of VG_BACKEND_PATH are candidates; the usable one with the
 * highest score wins (docs/adding-a-backend.md). */
VG_API int vg_backend_builtin_count(void);
VG_API const char *vg_backend_builtin_name(int i);
/* The candidates auto-selection considers, in the order it considers them: the builtins, then
 * the plugins found on VG_BACKEND_PATH (as paths). Returns how many; names[i] for i < max are
 * valid until the next call on this thread. */
VG_API int vg_backend_candidates(const char **names, int max);

#define VG_PROBE_MAX_DEVICES 16

/* What loading one backend found: for `vg info` and for diagnosing a deployment. */
typedef struct vg_probe_report {
    uint32_t struct_size;
    char request[512];  /* what was asked for: a name or a path */
    char path[1024];    /* the file that loaded, "" when none did */
    char name[64];      /* the backend's own name */
    char version[128];  /* the backend's own version text */
    uint32_t abi_major, abi_minor;
    int32_t score;      /* its auto-selection score (500 when it reports none) */
    int loaded;         /* 1: the plugin loaded and passed ABI validation */
    vg_status status;   /* VG_OK, or why loading / device discovery failed */
    char error[4096];   /* the message for status, naming everything that was tried */
    int device_count;   /* devices reported by the backend (may exceed VG_PROBE_MAX_DEVICES) */
    vg_device_info devices[VG_PROBE_MAX_DEVICES];
    vg_status device_status[VG_PROBE_MAX_DEVICES]; /* per device open/info result */
} vg_probe_report;

/* Load `name_or_path` (as VG_BACKEND would be interpreted), query its devices, unload it.
 * Returns report->status; the report is filled in either case. */
VG_API vg_status vg_backend_probe(const char *name_or_path, vg_probe_report *report);

/* ---- runtime: one backend, one open device -------------------------------------------------- */

typedef struct vg_runtime vg_runtime;

typedef struct vg_runtime_options {
    uint32_t struct_size;
    const char *backend; /* name or path; NULL: $VG_BACKEND, else auto-selection by score */
    int device;          /* device index; -1: the backend's default (e.g. $VG_CUDA_DEVICE or 0) */
    /* Named backend options (tuning knobs), each named like the environment variable it
     * overrides: {"VG_CUDA_GEMM", "tiled"}. An option given here wins over the environment;
     * a knob not given keeps reading the environment. A name the backend does not know is
     * refused (VG_ERR_INVALID_ARG, naming the known ones); with auto-selection, a backend that
     * does not know every name is not a candidate. NULL / 0: none. Plugins older than ABI 1.3
     * know no names. */
    const vg_option *options;
    int num_options;
} vg_runtime_options;

VG_API void vg_runtime_options_init(vg_runtime_options *opts);
VG_API vg_status vg_runtime_open(const vg_runtime_options *opts, vg_runtime **out);
VG_API vg_status vg_runtime_close(vg_runtime *rt);

/* Memory, streams, events, graphs and ops of a runtime: vg_device.h. */
VG_API const char *vg_runtime_backend_name(const vg_runtime *rt);
VG_API const char *vg_runtime_plugin_path(const vg_runtime *rt); /* "" for open_iface */
/* Capabilities of the open device, as reported at open time. */
VG_API uint64_t vg_runtime_caps(const vg_runtime *rt);
/* 1 when op may be enqueued during capture on this device (vg_runtime_op_support has more). */
VG_API int vg_runtime_op_capturable(const vg_runtime *rt, vg_op_id op);
/* The option names the runtime's backend accepts in vg_runtime_options.options: writes up to
 * max into names (valid while rt is open) and returns how many there are. */
VG_API int vg_runtime_option_names(const vg_runtime *rt, const char **names, int max);
/* Fresh device info (memory figures change). */
VG_API vg_status vg_runtime_device_info(vg_runtime *rt, vg_device_info *info);

#ifdef __cplusplus
}
#endif
#endif /* VG_H */
