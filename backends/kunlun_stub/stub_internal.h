/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub: a vendor backend that runs on the host CPU.
 *
 * It is both the test device of vg (everything runs without a GPU) and the template a vendor
 * copies. Device memory is host memory with an accounted capacity; a stream executes work in
 * order on the calling thread; capture records each enqueued command into a list that
 * instantiate copies and launch replays. */
#ifndef STUB_INTERNAL_H
#define STUB_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "vg/vg_backend.h"

extern const vg_host_services *stub_host;

#define STUB_ERR(status, ...) (stub_host->set_error((status), __VA_ARGS__), (status))
#define STUB_LOG(level, ...) stub_host->log((level), __VA_ARGS__)
/* A knob's value: the application's backend option of that name, else the environment. */
#define stub_option(name) vg_backend_option(stub_host, (name))

/* Fault injection points (VG_STUB_FAULT), so callers' failure paths can be tested. */
typedef enum stub_fault_point {
    STUB_FAULT_DEVICE_OPEN,
    STUB_FAULT_MEM_ALLOC,
    STUB_FAULT_CAPTURE_BEGIN,
    STUB_FAULT_CAPTURE_END,
    STUB_FAULT_INSTANTIATE,
    STUB_FAULT_LAUNCH,
    STUB_FAULT_UPDATE,
    STUB_FAULT_IPC_OPEN,
    STUB_FAULT_COUNT_
} stub_fault_point;

typedef struct stub_fault {
    long long first; /* 0: never; n: the n-th call fails */
    int sticky;      /* also every call after the first */
    long long calls; /* calls seen so far */
} stub_fault;

typedef struct stub_alloc {
    void *ptr;
    size_t bytes;
    int shared; /* from ipc_alloc: a mapping of memfd `fd` (map_bytes), not heap memory */
    int fd;
    size_t map_bytes;
    unsigned char token[16]; /* the memfd's name holds it: the handle's proof of identity */
} stub_alloc;

/* A pool of another process mapped by ipc_open. */
typedef struct stub_import {
    void *ptr;
    size_t bytes;
} stub_import;

/* The ops this stub implements: VG_OP_FILL up to VG_OP_ROTARY_PAGED_ATTENTION_NORM_X (op table version 10).
 * Not VG_OP_COUNT_: an op appended to the catalogue is not implemented here until someone writes
 * it. */
#define STUB_OP_COUNT (VG_OP_ROTARY_PAGED_ATTENTION_NORM_X + 1)

/* Caller-owned memory registered with mem_register (ABI 1.3): host memory on this device. */
typedef struct stub_region {
    void *ptr;
    size_t bytes;
} stub_region;

typedef struct stub_config {
    int devices;             /* VG_STUB_DEVICES, default 1 */
    uint64_t capacity;       /* VG_STUB_MEM_CAPACITY, bytes */
    int poison;              /* VG_STUB_POISON: poison fresh and freed memory */
    uint64_t quarantine_cap; /* bytes of freed memory kept poisoned before real release */
    long long launch_ns;     /* VG_STUB_LAUNCH_US: simulated host cost per launch */
    uint64_t caps;           /* after VG_STUB_CAPS */
    unsigned char nocapture[STUB_OP_COUNT]; /* VG_STUB_CAPS nocapture:<op>, per op */
    unsigned char noop[STUB_OP_COUNT];      /* VG_STUB_CAPS noop:<op>: not offered */
    stub_fault faults[STUB_FAULT_COUNT_];
} stub_config;

struct vg_bk_device {
    int index;
    stub_config cfg;
    pthread_mutex_t lock; /* guards everything below */
    uint64_t used;        /* allocations + graph storage */
    stub_alloc *allocs;
    size_t nallocs, cap_allocs;
    stub_alloc *quarantine;
    size_t nquarantine, cap_quarantine;
    uint64_t quarantine_bytes;
    stub_import *imports; /* ipc_open's mappings */
    size_t nimports, cap_imports;
    struct vg_bk_stream **streams; /* the streams stream_create made: what stream_wrap accepts */
    size_t nstreams, cap_streams;
    stub_region *regs; /* mem_register's */
    size_t nregs, cap_regs;
};

/* One enqueued unit of work: a function and a private copy of its arguments. */
#define STUB_CMD_ARGS 256
typedef struct stub_cmd {
    void (*run)(struct vg_bk_stream *s, const void *args);
    int op; /* vg_op_id, or STUB_NOT_AN_OP for copies and memset (always capturable) */
    const char *name;
    unsigned char args[STUB_CMD_ARGS];
} stub_cmd;

typedef enum { STUB_CAPTURE_NONE, STUB_CAPTURE_ACTIVE, STUB_CAPTURE_INVALID } stub_capture_state;

typedef struct stub_cmd_list {
    stub_cmd *cmds;
    size_t n, cap;
} stub_cmd_list;

struct vg_bk_stream {
    vg_bk_device *dev;
    stub_capture_state capture;
    char capture_error[256];
    stub_cmd_list recording;
    float *scratch; /* per-stream host scratch for kernels (format conversion) */
    size_t scratch_elems;
    const int32_t *loop_flag; /* stub_loop.c: the flag of the loop being captured, or NULL */
    /* stream_wrap: the caller's stream this one wraps (its native handle), NULL for a stream
     * stream_create made. The stub's native stream object is its stream: a wrapper is a stream
     * of its own that reports the wrapped one as its native handle and is not listed in
     * dev->streams. */
    struct vg_bk_stream *wraps;
    /* A command that failed while it ran (a collective whose peer died, stub_comm.c): the first
     * failure stands until it is reported, by the submission that ran it, the exec_launch that
     * replayed it, or stream_sync (stub_stream_error). */
    vg_status error;
    char error_msg[512];
};

struct vg_bk_event {
    double time_ms;
    int recorded;
};

struct vg_bk_graph {
    stub_cmd_list list;
};

struct vg_bk_exec {
    stub_cmd_list list;
    uint64_t charged; /* bytes accounted on the device */
};

/* A running command failed: record it on the stream (the first failure stands). */
void stub_stream_fail(vg_bk_stream *s, vg_status st, const char *fmt, ...) VG_PRINTF(3, 4);
/* Report and clear the stream's failure: VG_OK when none, else its status with its message set. */
vg_status stub_stream_error(vg_bk_stream *s);

/* config */
void stub_config_load(stub_config *cfg);
/* 1 when this call of `point` must fail (counts the call). */
int stub_fault_hit(vg_bk_device *dev, stub_fault_point point);

/* streams: run now or record; validates capturability */
#define STUB_NOT_AN_OP (-1)
vg_status stub_submit(vg_bk_stream *s, int op, const char *name,
                      void (*run)(vg_bk_stream *, const void *), const void *args, size_t size);
void stub_charge_launch(const vg_bk_device *dev);
/* The monotonic clock in milliseconds (events, the communicator's deadlines). */
double stub_now_ms(void);
/* Invalidate s's active capture: `why` is kept for capture_end's message (no-op otherwise). */
void stub_capture_invalidate(vg_bk_stream *s, const char *why);
float *stub_scratch(vg_bk_stream *s, size_t elems);
void stub_cmd_list_free(stub_cmd_list *l);
vg_status stub_cmd_list_push(stub_cmd_list *l, const stub_cmd *c);

/* memory accounting used by graphs too */
vg_status stub_charge(vg_bk_device *dev, uint64_t bytes, const char *what);
void stub_uncharge(vg_bk_device *dev, uint64_t bytes);
int stub_is_live(vg_bk_device *dev, const void *p, size_t bytes);

/* iface members implemented across files */
vg_status stub_device_count(int *count);
vg_status stub_device_open(int index, vg_bk_device **out);
vg_status stub_device_close(vg_bk_device *dev);
vg_status stub_device_info(vg_bk_device *dev, vg_device_info *info);
vg_status stub_op_caps(vg_bk_device *dev, uint32_t op, vg_op_caps *out);
/* 1 when `op` (a vg_op_id) may be recorded into a graph on this device. */
int stub_op_capturable(const vg_bk_device *dev, int op);
vg_status stub_mem_alloc(vg_bk_device *dev, size_t bytes, void **out);
vg_status stub_mem_free(vg_bk_device *dev, void *ptr);
vg_status stub_host_alloc(vg_bk_device *dev, size_t bytes, void **out);
vg_status stub_host_free(vg_bk_device *dev, void *ptr);
/* stub_ipc.c: ABI 1.2, memory shared across processes through memfds */
vg_status stub_ipc_alloc(vg_bk_device *dev, size_t bytes, void **out);
vg_status stub_ipc_export(vg_bk_device *dev, void *base, vg_ipc_handle *out);
vg_status stub_ipc_open(vg_bk_device *dev, const vg_ipc_handle *h, void **out, size_t *bytes);
vg_status stub_ipc_close(vg_bk_device *dev, void *ptr);
/* stub_native.c: ABI 1.3, native handles (the host), wrapped streams, registered memory */
vg_status stub_native_device(vg_bk_device *dev, vg_native_device *out);
vg_status stub_stream_native(vg_bk_device *dev, vg_bk_stream *s, void **out);
vg_status stub_stream_wrap(vg_bk_device *dev, void *native, vg_bk_stream **out);
vg_status stub_mem_native(vg_bk_device *dev, const void *ptr, vg_native_mem *out);
vg_status stub_mem_register(vg_bk_device *dev, void *native, size_t bytes, void **out);
vg_status stub_mem_unregister(vg_bk_device *dev, void *ptr);
/* Forget a stream stream_create listed (stream_destroy). */
void stub_stream_unlist(vg_bk_device *dev, vg_bk_stream *s);
extern const char *const stub_option_names[];
/* Unmap a shared allocation (mem_free, device_close). */
void stub_ipc_release(stub_alloc *a);
/* Grow an array of `elem`-byte items to hold `need`; 0 or -1 when out of memory. */
int stub_grow(void **arr, size_t *cap, size_t need, size_t elem);
vg_status stub_copy_h2d(vg_bk_device *, vg_bk_stream *, void *, const void *, size_t);
vg_status stub_copy_d2h(vg_bk_device *, vg_bk_stream *, void *, const void *, size_t);
vg_status stub_copy_d2d(vg_bk_device *, vg_bk_stream *, void *, const void *, size_t);
vg_status stub_memset(vg_bk_device *, vg_bk_stream *, void *, int, size_t);
vg_status stub_stream_create(vg_bk_device *dev, vg_bk_stream **out);
vg_status stub_stream_destroy(vg_bk_device *dev, vg_bk_stream *s);
vg_status stub_stream_sync(vg_bk_device *dev, vg_bk_stream *s);
vg_status stub_event_create(vg_bk_device *dev, vg_bk_event **out);
vg_status stub_event_destroy(vg_bk_device *dev, vg_bk_event *e);
vg_status stub_event_record(vg_bk_device *dev, vg_bk_event *e, vg_bk_stream *s);
vg_status stub_event_sync(vg_bk_device *dev, vg_bk_event *e);
vg_status stub_event_elapsed_ms(vg_bk_device *dev, vg_bk_event *a, vg_bk_event *b, float *ms);
vg_status stub_stream_wait_event(vg_bk_device *dev, vg_bk_stream *s, vg_bk_event *e);
vg_status stub_capture_begin(vg_bk_device *dev, vg_bk_stream *s);
vg_status stub_capture_end(vg_bk_device *dev, vg_bk_stream *s, vg_bk_graph **out);
vg_status stub_graph_destroy(vg_bk_device *dev, vg_bk_graph *g);
vg_status stub_graph_instantiate(vg_bk_device *dev, vg_bk_graph *g, vg_bk_exec **out);
vg_status stub_exec_launch(vg_bk_device *dev, vg_bk_exec *x, vg_bk_stream *s);
vg_status stub_exec_destroy(vg_bk_device *dev, vg_bk_exec *x);
vg_status stub_exec_update(vg_bk_device *dev, vg_bk_exec *x, vg_bk_graph *g, vg_update_result *r);

extern const vg_op_table stub_ops;
/* stub_ops_vit.c */
vg_status stub_op_rmsnorm(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, const void *,
                          void *, int64_t, int64_t, float);
vg_status stub_op_rotary_2d(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t,
                            int, int, const int32_t *, float);
vg_status stub_op_attention(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                            void *, int64_t, int64_t, int, int, const int32_t *, int, float);
vg_status stub_op_attention_rotary(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                                   void *, int64_t, int64_t, int, int, const int32_t *, int, float,
                                   const int32_t *, float);
vg_status stub_op_silu_mul(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                           void *, int64_t, int64_t, int64_t);
vg_status stub_op_convert(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, vg_dtype,
                          void *, size_t);
/* stub_ops_lm.c */
vg_status stub_op_rotary(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t, int,
                         int, const int32_t *, float);
vg_status stub_op_rmsnorm_heads(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t,
                                int, int, const void *, float);
vg_status stub_op_kv_store(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                           const void *, int64_t, void *, void *, const int32_t *, int64_t, int,
                           int);
vg_status stub_op_rotary_kv_store(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, int64_t, int64_t,
                                  int, int, int, const void *, const void *, float, const int32_t *,
                                  float, void *, void *, const int32_t *);
vg_status stub_op_paged_attention(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t,
                                  void *, int64_t, int64_t, const void *, const void *,
                                  const int32_t *, int, const int32_t *, const int32_t *, int, int,
                                  int, int, int, float);
vg_status stub_op_argmax(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, int64_t, int64_t,
                         int64_t, int32_t *);
vg_status stub_op_rotary_paged_attention(vg_bk_device *, vg_bk_stream *, const vg_rotary_paged_args *);
/* stub_ops_vision.c */
vg_status stub_op_layernorm(vg_bk_device *, vg_bk_stream *, vg_dtype, const void *, const void *,
                            const void *, void *, int64_t, int64_t, float);
vg_status stub_op_gather_weighted(vg_bk_device *, vg_bk_stream *, vg_dtype, void *, const void *,
                                  int64_t, const int32_t *, const float *, int64_t, int64_t, int);

/* stub_comm.c: communicators (ABI 1.5) between processes of this machine over shared memory */
vg_status stub_comm_id_make(vg_bk_device *dev, unsigned char id[VG_COMM_ID_BYTES]);
vg_status stub_comm_create(vg_bk_device *dev, const vg_bk_comm_args *args, vg_bk_comm **out);
vg_status stub_comm_destroy(vg_bk_device *dev, vg_bk_comm *comm);
vg_status stub_comm_all_reduce(vg_bk_device *dev, vg_bk_comm *comm, vg_bk_stream *s,
                               vg_dtype dtype, const void *send, void *recv, size_t count);
vg_status stub_comm_all_gather(vg_bk_device *dev, vg_bk_comm *comm, vg_bk_stream *s,
                               vg_dtype dtype, const void *send, void *recv, size_t count);

/* stub_loop.c: device-side loops (ABI 1.4) and lm_advance. An exec's list runs in order; a
 * loop's list ends with a command that sends it back to its start while the flag is set. */
vg_status stub_loop_capture_begin(vg_bk_device *dev, vg_bk_stream *s, const int32_t *flag);
vg_status stub_loop_capture_end(vg_bk_device *dev, vg_bk_stream *s, vg_bk_graph **out);
/* Index of the command to run after cmds[i]: i + 1, or 0 for a loop going round again. */
size_t stub_next_cmd(const stub_cmd *cmds, size_t i);
vg_status stub_op_lm_advance(vg_bk_device *dev, vg_bk_stream *s, const vg_lm_advance_args *a);

#endif
