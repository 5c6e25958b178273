/* SPDX-License-Identifier: Apache-2.0 */
/* opencl: the vg plugin ABI over the OpenCL ICD loader (docs/opencl.md).
 *
 * A device is an OpenCL device of any platform. Kernels are OpenCL C, compiled once per device
 * and process (ocl_program.c). Device memory is cl_mem buffers handed out under unique fake
 * addresses, so the core and models can do pointer arithmetic on them; every pointer an op gets
 * is mapped back to (buffer, byte offset) (ocl_memory.c). A stream is an in-order command queue;
 * a graph is a cl_khr_command_buffer recorded while the stream captures (ocl_graph.c). */
#ifndef OCL_INTERNAL_H
#define OCL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ocl_kernels.h"
#include "vg/vg_backend.h"

extern const vg_host_services *ocl_host;

#define OCL_ERR(status, ...) (ocl_host->set_error((status), __VA_ARGS__), (status))
#define OCL_LOG(level, ...) ocl_host->log((level), __VA_ARGS__)

/* The name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "CL error <n>". */
const char *ocl_error_name(cl_int err);
/* The vg status closest to an OpenCL error code. */
vg_status ocl_status(cl_int err);
/* Report a failed OpenCL call once: "opencl: <what>: <CL name> (<n>)". Returns the status. */
vg_status ocl_fail(cl_int err, const char *what);

/* ---- cl_khr_command_buffer (loaded with clGetExtensionFunctionAddressForPlatform) -------------- *
 * Only the entry points whose signatures are the same in every provisional version (0.9.0 up to
 * 0.9.8) are used: copies and fills are recorded as vg's own kernels, because 0.9.5 added an
 * argument to clCommandCopyBufferKHR and clCommandFillBufferKHR. */
typedef struct _cl_command_buffer_khr *ocl_cmdbuf_t;
typedef cl_uint ocl_sync_point;
typedef ocl_cmdbuf_t(CL_API_CALL *ocl_create_cb_fn)(cl_uint, const cl_command_queue *,
                                                   const cl_properties *, cl_int *);
typedef cl_int(CL_API_CALL *ocl_cb_fn)(ocl_cmdbuf_t);
typedef cl_int(CL_API_CALL *ocl_enqueue_cb_fn)(cl_uint, cl_command_queue *, ocl_cmdbuf_t, cl_uint,
                                              const cl_event *, cl_event *);
typedef cl_int(CL_API_CALL *ocl_record_ndrange_fn)(ocl_cmdbuf_t, cl_command_queue,
                                                  const cl_properties *, cl_kernel, cl_uint,
                                                  const size_t *, const size_t *, const size_t *,
                                                  cl_uint, const ocl_sync_point *,
                                                  ocl_sync_point *, void *);
typedef struct ocl_cb_api {
    ocl_create_cb_fn create;
    ocl_cb_fn finalize, release;
    ocl_enqueue_cb_fn enqueue;
    ocl_record_ndrange_fn ndrange;
} ocl_cb_api;

#define OCL_CB_EXTENSION "cl_khr_command_buffer"
#define OCL_CB_CAPABILITIES 0x12A9  /* CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR */
#define OCL_CB_REQUIRED_QUEUE 0x12AA /* CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR */
#define OCL_CB_CAP_SIMULTANEOUS (1u << 2)
#define OCL_CB_FLAGS 0x1293         /* CL_COMMAND_BUFFER_FLAGS_KHR */
#define OCL_CB_SIMULTANEOUS_USE (1u << 0)

/* ---- platforms and devices (ocl_platform.c) ----------------------------------------------------- */

/* One device of one platform, as enumerated: platforms in order, each platform's devices. */
typedef struct ocl_devref {
    cl_platform_id platform;
    cl_device_id id;
} ocl_devref;

/* Every device of every platform; *n is 0 on a machine without OpenCL. Returns VG_OK, or an error
 * when the ICD loader itself fails. The list is malloc'ed (free it). */
vg_status ocl_enumerate(ocl_devref **out, int *n);
/* The device VG_OPENCL_PLATFORM / VG_OPENCL_DEVICE select, else the first GPU or accelerator,
 * else the first device: its index in the enumeration, or -1 with the error set. */
int ocl_default_device(const ocl_devref *devs, int n);
/* Text of a string device or platform query ("" on failure). */
void ocl_device_string(cl_device_id d, cl_device_info what, char *buf, size_t cap);
void ocl_platform_string(cl_platform_id p, cl_platform_info what, char *buf, size_t cap);
/* 1 when the space-separated extension list of the device holds `ext`. */
int ocl_has_extension(cl_device_id d, const char *ext);

/* ---- programs: compiled once per device and process (ocl_program.c) ----------------------------- */

typedef struct ocl_shared {
    cl_device_id id;
    cl_context ctx;
    cl_program prog;
    size_t kernel_wg[OCL_K_COUNT]; /* CL_KERNEL_WORK_GROUP_SIZE of each kernel */
    struct ocl_shared *next;
} ocl_shared;

/* The context and built program of device `d`, from the process-wide cache or built now (the build
 * log is in the error on failure). Cached entries live until the plugin is unloaded. */
vg_status ocl_shared_get(cl_platform_id p, cl_device_id d, ocl_shared **out);

/* ---- devices (ocl_device.c) --------------------------------------------------------------------- */

/* A live allocation: its fake address range and the buffer behind it. */
typedef struct ocl_alloc {
    uintptr_t addr;
    size_t bytes;
    cl_mem mem;
    int registered; /* caller memory (mem_register): vg holds a reference, not the buffer */
} ocl_alloc;

struct vg_bk_device {
    int index;
    cl_platform_id platform;
    cl_device_id id;
    ocl_shared *sh; /* context and program */
    cl_device_type type;
    int cl_version; /* the platform's OpenCL version, major * 10 + minor */
    char name[84]; /* "<device> (<platform>)", short enough for vg_device_info.name with more */
    uint64_t mem_total, max_alloc;
    uint64_t local_mem; /* CL_DEVICE_LOCAL_MEM_SIZE: bounds the attention kernel's key tiles */
    int compute_units;
    int graphs;       /* cl_khr_command_buffer usable (and not turned off) */
    int simultaneous; /* a command buffer may be enqueued while a launch of it is pending */
    char cb_version[24]; /* the extension's version, or why there are no command buffers */
    uint32_t op_supported[VG_OP_COUNT_];
    cl_mem dummy; /* bound where an optional buffer is absent */
    ocl_cb_api cb;
    pthread_rwlock_t mem_lock; /* guards the allocation table and `used` */
    ocl_alloc *allocs;         /* sorted by addr */
    size_t nallocs, cap_allocs;
    uint64_t used;
};

/* The ops this backend implements: VG_OP_FILL up to VG_OP_GEMM_RMSNORM_A (op table versions 1-6).
 * Not VG_OP_COUNT_: an op appended to the catalogue is offered once its kernel is written. */
#define OCL_OP_COUNT (VG_OP_GEMM_RMSNORM_A + 1)

vg_status ocl_device_count(int *count);
vg_status ocl_device_open(int index, vg_bk_device **out);
vg_status ocl_device_close(vg_bk_device *dev);
vg_status ocl_device_info(vg_bk_device *dev, vg_device_info *info);
vg_status ocl_op_caps(vg_bk_device *dev, uint32_t op, vg_op_caps *out);
int32_t ocl_score(void);

/* ---- memory (ocl_memory.c) ---------------------------------------------------------------------- */

/* The buffer and byte offset behind a device address, which must lie in a live allocation with
 * at least `bytes` from it up to the allocation's end. VG_ERR_INVALID_ARG naming `what` else. */
vg_status ocl_resolve(vg_bk_device *dev, const void *p, size_t bytes, const char *what, cl_mem *mem,
                      size_t *offset);
/* The same without a message: 1 when p lies in a live allocation. */
int ocl_find(vg_bk_device *dev, const void *p, cl_mem *mem, size_t *offset);
void ocl_mem_release_all(vg_bk_device *dev);
/* Give buffer `mem` of `bytes` a fresh address range in the table (the table then holds the
 * reference the caller had); *out is its first byte. */
vg_status ocl_mem_name(vg_bk_device *dev, cl_mem mem, size_t bytes, int registered, void **out);
/* Take the range starting at ptr out of the table, if it is of the kind asked (*x gets it). */
vg_status ocl_mem_unname(vg_bk_device *dev, void *ptr, int registered, ocl_alloc *x);

/* ocl_native.c: ABI 1.3 */
vg_status ocl_native_device(vg_bk_device *dev, vg_native_device *out);
vg_status ocl_stream_native(vg_bk_device *dev, vg_bk_stream *s, void **out);
vg_status ocl_stream_wrap(vg_bk_device *dev, void *native, vg_bk_stream **out);
vg_status ocl_mem_native(vg_bk_device *dev, const void *ptr, vg_native_mem *out);
vg_status ocl_mem_register(vg_bk_device *dev, void *native, size_t bytes, void **out);
vg_status ocl_mem_unregister(vg_bk_device *dev, void *ptr);
extern const char *const ocl_option_names[];
/* A knob's value: the application's backend option of that name, else the environment. */
#define ocl_option(name) vg_backend_option(ocl_host, (name))

vg_status ocl_mem_alloc(vg_bk_device *dev, size_t bytes, void **out);
vg_status ocl_mem_free(vg_bk_device *dev, void *ptr);
vg_status ocl_host_alloc(vg_bk_device *dev, size_t bytes, void **out);
vg_status ocl_host_free(vg_bk_device *dev, void *ptr);
vg_status ocl_copy_h2d(vg_bk_device *, vg_bk_stream *, void *, const void *, size_t);
vg_status ocl_copy_d2h(vg_bk_device *, vg_bk_stream *, void *, const void *, size_t);
vg_status ocl_copy_d2d(vg_bk_device *, vg_bk_stream *, void *, const void *, size_t);
vg_status ocl_memset(vg_bk_device *, vg_bk_stream *, void *, int, size_t);

/* ---- streams, events and kernel launches (ocl_stream.c) ------------------------------------------ */

typedef enum { OCL_CAPTURE_NONE, OCL_CAPTURE_ACTIVE, OCL_CAPTURE_INVALID } ocl_capture_state;

/* A recorded command buffer, shared by the graph and every executable instantiated from it. */
typedef struct ocl_recording {
    pthread_mutex_t lock;
    int refs;
    vg_bk_device *dev;
    ocl_cmdbuf_t cb;
    cl_command_queue queue; /* the queue it was recorded for (retained) */
    cl_kernel *kernels;     /* one per recorded command: the arguments it was recorded with */
    size_t nkernels, cap_kernels;
    ocl_sync_point last; /* the last command recorded: the next one waits for it */
    int finalized;
    cl_event pending; /* the latest launch */
} ocl_recording;

struct vg_bk_stream {
    vg_bk_device *dev;
    cl_command_queue q;
    cl_kernel kernels[OCL_K_COUNT]; /* eager launches; created on first use */
    ocl_capture_state capture;
    char capture_error[512];
    ocl_recording *rec; /* while capturing */
};

struct vg_bk_event {
    cl_event ev; /* a marker, or NULL before the first record */
};

/* A kernel argument: a device address (bound as buffer + byte offset: two kernel arguments; NULL
 * for an absent optional buffer), a scalar, or a size of local memory. */
typedef enum { OCL_ARG_PTR, OCL_ARG_I32, OCL_ARG_I64, OCL_ARG_F32, OCL_ARG_LOCAL } ocl_arg_kind;
typedef struct ocl_arg {
    ocl_arg_kind kind;
    const char *name; /* for messages, pointers only */
    union {
        const void *p;
        int32_t i;
        int64_t l;
        float f;
    } v;
} ocl_arg;
#define OA_PTR(x) ((ocl_arg){OCL_ARG_PTR, #x, {.p = (x)}})
#define OA_I32(x) ((ocl_arg){OCL_ARG_I32, NULL, {.i = (int32_t)(x)}})
#define OA_I64(x) ((ocl_arg){OCL_ARG_I64, NULL, {.l = (int64_t)(x)}})
#define OA_F32(x) ((ocl_arg){OCL_ARG_F32, NULL, {.f = (float)(x)}})
#define OA_LOCAL(bytes) ((ocl_arg){OCL_ARG_LOCAL, NULL, {.l = (int64_t)(bytes)}})
#define OCL_MAX_ARGS 32

/* Enqueue kernel `k` on stream `s` over `global` work-items (each rounded up to a multiple of
 * `local`, which every kernel bounds-checks), or record it when `s` captures. `op` names the
 * launch in messages. */
vg_status ocl_launch(vg_bk_stream *s, ocl_kernel_id k, const char *op, cl_uint dims,
                     const size_t *global, const size_t *local, int nargs, const ocl_arg *args);

/* Invalidate stream `s`'s capture: `why` is kept for capture_end's message. */
void ocl_capture_invalidate(vg_bk_stream *s, const char *why);

vg_status ocl_stream_create(vg_bk_device *dev, vg_bk_stream **out);
vg_status ocl_stream_destroy(vg_bk_device *dev, vg_bk_stream *s);
vg_status ocl_stream_sync(vg_bk_device *dev, vg_bk_stream *s);
vg_status ocl_event_create(vg_bk_device *dev, vg_bk_event **out);
vg_status ocl_event_destroy(vg_bk_device *dev, vg_bk_event *e);
vg_status ocl_event_record(vg_bk_device *dev, vg_bk_event *e, vg_bk_stream *s);
vg_status ocl_event_sync(vg_bk_device *dev, vg_bk_event *e);
vg_status ocl_event_elapsed_ms(vg_bk_device *dev, vg_bk_event *a, vg_bk_event *b, float *ms);
vg_status ocl_stream_wait_event(vg_bk_device *dev, vg_bk_stream *s, vg_bk_event *e);

/* ---- graphs (ocl_graph.c) ------------------------------------------------------------------------ */

/* Append one kernel launch to the recording of a capturing stream (the kernel is owned by the
 * recording from here on, whatever the outcome). */
vg_status ocl_record_kernel(vg_bk_stream *s, cl_kernel k, const char *op, cl_uint dims,
                            const size_t *global, const size_t *local);

vg_status ocl_capture_begin(vg_bk_device *dev, vg_bk_stream *s);
vg_status ocl_capture_end(vg_bk_device *dev, vg_bk_stream *s, vg_bk_graph **out);
vg_status ocl_graph_destroy(vg_bk_device *dev, vg_bk_graph *g);
vg_status ocl_graph_instantiate(vg_bk_device *dev, vg_bk_graph *g, vg_bk_exec **out);
vg_status ocl_exec_launch(vg_bk_device *dev, vg_bk_exec *x, vg_bk_stream *s);
vg_status ocl_exec_destroy(vg_bk_device *dev, vg_bk_exec *x);
/* Drop one reference to a recording (the last one releases it). */
void ocl_recording_unref(ocl_recording *r);

/* ---- ops (ocl_ops.c, ocl_ops_nn.c, ocl_ops_lm.c, ocl_ops_vision.c) ----------------------------- */

extern const vg_op_table ocl_ops;
size_t ocl_dtype_size(vg_dtype t);
/* ceil(n / m) * m */
static inline size_t ocl_round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

vg_status ocl_op_rmsnorm(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, const void *,
                         void *, int64_t, int64_t, float);
vg_status ocl_op_rotary_2d(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t, int,
                           int, const int32_t *, float);
vg_status ocl_op_attention(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t, void *,
                           int64_t, int64_t, int, int, const int32_t *, int, float);
vg_status ocl_op_attention_rotary(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                                  void *, int64_t, int64_t, int, int, const int32_t *, int, float,
                                  const int32_t *, float);
vg_status ocl_op_silu_mul(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t, void *,
                          int64_t, int64_t, int64_t);
vg_status ocl_op_convert(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, vg_dtype, void *,
                         size_t);
vg_status ocl_op_rotary(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t, int, int,
                        const int32_t *, float);
vg_status ocl_op_rmsnorm_heads(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t,
                               int, int, const void *, float);
vg_status ocl_op_kv_store(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                          const void *, int64_t, void *, void *, const int32_t *, int64_t, int, int);
vg_status ocl_op_rotary_kv_store(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t,
                                 int, int, int, const void *, const void *, float, const int32_t *,
                                 float, void *, void *, const int32_t *);
vg_status ocl_op_paged_attention(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                                 void *, int64_t, int64_t, const void *, const void *,
                                 const int32_t *, int, const int32_t *, const int32_t *, int, int,
                                 int, int, int, float);
vg_status ocl_op_argmax(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t, int64_t,
                        int64_t, int32_t *);
vg_status ocl_op_layernorm(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, const void *,
                           const void *, void *, int64_t, int64_t, float);
vg_status ocl_op_gather_weighted(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, const void *,
                                 int64_t, const int32_t *, const float *, int64_t, int64_t, int);

#endif
