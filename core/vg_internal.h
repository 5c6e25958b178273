/* SPDX-License-Identifier: Apache-2.0 */
/* Core-internal definitions shared by the files of libvg. Not installed: only core/ includes it.
 *
 * The core is the only holder of a plugin's table. The structs below (runtime, stream, event,
 * graph, exec) are defined here so that the core's hot paths (ops, graph launch) reach the
 * table with a load and an indirect call, without a function call per accessor. */
#ifndef VG_INTERNAL_H
#define VG_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "vg/vg.h"
#include "vg/vg_backend.h"
#include "vg/vg_device.h"

#define VG_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#if defined(__GNUC__)
#define VG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define VG_UNLIKELY(x) (x)
#endif
/* The public API's argument checks: VG_ERR_INVALID_ARG with the message when cond fails. */
#define REQUIRE(cond, ...)                                                                       \
    do {                                                                                         \
        if (VG_UNLIKELY(!(cond))) return vg_error_set(VG_ERR_INVALID_ARG, __VA_ARGS__);          \
    } while (0)

/* ---- errors and logging (error.c, log.c) --------------------------------------------------- */

vg_status vg_set_errorv(vg_status status, const char *fmt, va_list ap);
/* Nonzero while a message is set on this thread. */
int vg_error_is_set(void);
void vg_logv(vg_log_level level, const char *fmt, va_list ap);
int vg_log_enabled(vg_log_level level);

/* ---- plugin tables (iface.c) ---------------------------------------------------------------- */

/* The table of host services handed to every plugin. */
const vg_host_services *vg_host_services_get(void);

/* Validate a plugin's table and produce a zero-extended copy of this core's size. */
vg_status vg_iface_validate(const vg_backend_iface *in, const char *origin, vg_backend_iface *out,
                            vg_op_table *ops_out);
/* The members a device's capabilities make mandatory (VG_CAP_GRAPH: the graph members). A
 * missing mandatory member fails with VG_ERR_ABI; a missing optional one (exec_update for
 * VG_CAP_GRAPH_UPDATE) clears the capability from *caps with a warning. */
vg_status vg_iface_check_caps(const vg_backend_iface *b, uint64_t *caps, const char *origin);
/* A plugin's auto-selection score, 0..1000; VG_IFACE_DEFAULT_SCORE without a score member.
 * Called after device_count, as the ABI promises. */
#define VG_IFACE_DEFAULT_SCORE 500
int32_t vg_iface_score(const vg_backend_iface *b);

/* ---- loader (loader.c) ------------------------------------------------------------------------ */

typedef struct vg_plugin {
    void *handle;
    char path[1024];
} vg_plugin;
/* Resolve and dlopen a name or path; the message of a failure names every attempt. On success
 * *iface and *ops hold the validated, zero-extended table (iface->ops == ops). */
vg_status vg_plugin_load(const char *name_or_path, vg_plugin *out, vg_backend_iface *iface,
                         vg_op_table *ops);
void vg_plugin_unload(vg_plugin *p);
/* Auto-selection's candidates: the builtin names, then the absolute paths of every
 * libvg_<name>.so in the directories of VG_BACKEND_PATH (each directory sorted by name; a
 * builtin's name is left out, since the builtin resolves to it anyway). Returns how many, or -1
 * on out of memory; free the list with vg_candidates_free. */
int vg_candidates_list(char ***out);
void vg_candidates_free(char **list, int n);

/* ---- text ------------------------------------------------------------------------------------- */

/* n bytes as 2·n lowercase hex digits and a NUL into out (2·n + 1 chars). */
static inline void vg_hex_encode(const void *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)bytes;
    for (size_t i = 0; i < n; i++) out[2 * i] = digits[p[i] >> 4], out[2 * i + 1] = digits[p[i] & 15];
    out[2 * n] = '\0';
}

/* ---- catalogue facts (names.c) ---------------------------------------------------------------- */

/* VG_DTYPE_BIT set each op allows by the catalogue (vg_ops.h); 0 for an unknown op. */
uint32_t vg_op_catalogue_dtypes(uint32_t op);
/* Bit of a dtype, or a bit outside every mask for a value that is not a dtype. */
static inline uint32_t vg_dtype_bit(vg_dtype t)
{
    return (unsigned)t < VG_DTYPE_COUNT_ ? VG_DTYPE_BIT(t) : 0x80000000u;
}

/* ---- runtime (runtime.c) ---------------------------------------------------------------------- */

/* What the open device offers for one op: VG_OP_* flags and the accepted dtypes (already
 * intersected with the catalogue's). Built once at open; VG_OP_SUPPORTED implies the op
 * table's member is non-NULL. */
typedef struct vg_op_entry {
    uint32_t flags;
    uint32_t dtypes;
} vg_op_entry;

/* Caller-owned memory registered with vg_mem_register (native.c). */
typedef struct vg_registration {
    void *ptr; /* the vg address the backend gave */
    size_t bytes;
    uint64_t id; /* unique within the runtime, never 0 */
} vg_registration;

struct vg_runtime {
    vg_plugin plugin; /* handle is NULL for vg_runtime_open_iface */
    vg_backend_iface iface;
    vg_op_table ops;
    vg_bk_device *dev;
    vg_device_info info; /* caps after the core's own checks */
    int32_t score;
    vg_op_entry op[VG_OP_COUNT_];
    pthread_mutex_t reg_lock; /* guards the registrations */
    vg_registration *regs;
    size_t nregs, cap_regs;
    uint64_t next_reg_id;
};

/* ---- device objects (device.c) ---------------------------------------------------------------- */

struct vg_stream {
    vg_runtime *rt;
    vg_bk_stream *bk;
    int capturing; /* between vg_graph_capture_begin and vg_graph_capture_end */
    int wrapped;   /* vg_stream_wrap: the native stream is the caller's */
    char capture_error[160]; /* why the capture is invalidated; "" while it is not */
};
/* s->capturing of a capture begun by vg_graph_loop_capture_begin (core/loop.c) */
#define VG_CAPTURING_LOOP 2
/* Whether `fn` may begin a capture on s: not while s captures, nor while this thread captures
 * another stream (one capture per thread). VG_ERR_STATE naming fn otherwise. */
vg_status vg_capture_may_begin(const vg_stream *s, const char *fn);
/* The backend began a capture on s (how: 1, or VG_CAPTURING_LOOP): s is this thread's capture. */
void vg_stream_capture_started(vg_stream *s, int how);
/* Capture is thread-local, like cudaStreamCaptureModeThreadLocal (docs/plugin-abi.md): while this
 * thread captures, `what` (an allocation, a free, a synchronisation, a registration, an IPC pool
 * or mapping) is refused with VG_ERR_CAPTURE and invalidates the capture, whose end then fails
 * naming it. VG_OK when this thread captures nothing. Enforced here once for every backend: the
 * backends do not check it again. */
vg_status vg_capture_forbid(const char *what);
struct vg_event {
    vg_runtime *rt;
    vg_bk_event *bk;
};
struct vg_graph {
    vg_runtime *rt;
    vg_bk_graph *bk;
};
struct vg_graph_exec {
    vg_runtime *rt;
    vg_bk_exec *bk;
};

/* ---- native handles and registered memory (native.c) ---------------------------------------- */

/* Set up and tear down a runtime's registrations (vg_runtime_open*, vg_runtime_close). */
void vg_native_runtime_init(vg_runtime *rt);
void vg_native_runtime_fini(vg_runtime *rt);
/* The id of the live registration holding address p, 0 when none does. */
uint64_t vg_registration_id(vg_runtime *rt, const void *p);
/* VG_OK when the device offers native handles (VG_CAP_NATIVE), else VG_ERR_UNSUPPORTED naming
 * fn and why. */
vg_status vg_native_need(const vg_runtime *rt, const char *fn);

/* ---- backend options (options.c) ---------------------------------------------------------------- */

/* The application's options for the device being opened on this thread, seen by the plugin
 * through host->option while set (NULL, 0 clears). */
void vg_options_set_pending(const vg_option *opts, int n);
/* host->option: the pending option `name`, else getenv(name). */
const char *vg_options_lookup(const char *name);
/* Every option's name is one the backend lists in option_names (VG_ERR_INVALID_ARG otherwise,
 * naming the known ones). */
vg_status vg_options_check(const vg_backend_iface *b, const vg_option *opts, int n,
                           const char *origin);

/* ---- IPC (ipc_import.c) ----------------------------------------------------------------------- */

/* Close what the IPC cache holds for rt (vg_runtime_close calls it first): its entries are
 * dropped, and mappings of tensors not yet released are closed now, with a warning. */
void vg_ipc_runtime_closing(vg_runtime *rt);

/* ---- environment (env.c) ---------------------------------------------------------------------- */

/* Reading an environment variable as a bounded value; malformed values are logged and ignored. */
long long vg_env_int(const char *name, long long fallback, long long lo, long long hi);
int vg_env_flag(const char *name);

#endif
