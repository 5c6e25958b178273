/* SPDX-License-Identifier: Apache-2.0 */
/* Validation of a backend's interface table, and the host services plugins receive. */
#include <stdarg.h>
#include <string.h>

#include "vg_internal.h"

static void host_log(vg_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vg_logv(level, fmt, ap);
    va_end(ap);
}

static void host_set_error(vg_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vg_set_errorv(status, fmt, ap);
    va_end(ap);
}

static const vg_host_services k_host = {
    .abi_major = VG_BACKEND_ABI_MAJOR,
    .abi_minor = VG_BACKEND_ABI_MINOR,
    .struct_size = sizeof(vg_host_services),
    .log = host_log,
    .set_error = host_set_error,
    .option = vg_options_lookup,
};

const vg_host_services *vg_host_services_get(void) { return &k_host; }

/* Minimum table size for each ABI minor this core knows. A newer minor than this core's must
 * hold at least everything this core knows (its own additions are ignored). */
static size_t iface_size_for_minor(uint32_t minor)
{
    return minor == 0   ? VG_BACKEND_IFACE_SIZE_1_0
           : minor == 1 ? VG_BACKEND_IFACE_SIZE_1_1
           : minor == 2 ? VG_BACKEND_IFACE_SIZE_1_2
           : minor == 3 ? VG_BACKEND_IFACE_SIZE_1_3
           : minor == 4 ? VG_BACKEND_IFACE_SIZE_1_4
                        : VG_BACKEND_IFACE_SIZE_1_5;
}

/* The op table's size for each version this core knows (members are only appended: a version
 * ends where the next one's first member starts). A newer version than this core's must hold at
 * least everything this core knows (its own additions are ignored). */
_Static_assert(VG_OP_TABLE_VERSION == 12, "a new op table version: give its size here");
static size_t op_table_size_for_version(uint32_t version)
{
    return version == 1   ? offsetof(vg_op_table, rmsnorm)
           : version == 2 ? offsetof(vg_op_table, attention_rotary)
           : version == 3 ? offsetof(vg_op_table, rotary)
           : version == 4 ? offsetof(vg_op_table, layernorm)
           : version == 5 ? offsetof(vg_op_table, rotary_kv_store)
           : version == 6 ? offsetof(vg_op_table, lm_advance)
           : version == 7 ? offsetof(vg_op_table, rotary_paged_attention)
                          : sizeof(vg_op_table); /* 8; 9 to 12: options of gemm and rotary_paged_attention, no member */
}

#define MEMBER(m) {offsetof(vg_backend_iface, m), #m}
static const struct {
    size_t offset;
    const char *name;
} k_mandatory[] = {
    MEMBER(name),           MEMBER(version),          MEMBER(device_count),
    MEMBER(device_open),    MEMBER(device_close),     MEMBER(device_info),
    MEMBER(mem_alloc),      MEMBER(mem_free),         MEMBER(host_alloc),
    MEMBER(host_free),      MEMBER(copy_h2d),         MEMBER(copy_d2h),
    MEMBER(copy_d2d),       MEMBER(memset_async),     MEMBER(stream_create),
    MEMBER(stream_destroy), MEMBER(stream_sync),      MEMBER(event_create),
    MEMBER(event_destroy),  MEMBER(event_record),     MEMBER(event_sync),
    MEMBER(event_elapsed_ms), MEMBER(stream_wait_event), MEMBER(ops),
};

/* Members a capability makes mandatory (optional: the capability is dropped instead). */
enum { MAX_CAP_MEMBERS = 6 };
static const struct {
    uint64_t cap;
    const char *what; /* as the message says it: "device reports <what> but ..." */
    int optional;
    struct {
        size_t offset;
        const char *name;
    } members[MAX_CAP_MEMBERS];
} k_cap_members[] = {
    {VG_CAP_GRAPH, "graph support", 0,
     {MEMBER(capture_begin), MEMBER(capture_end), MEMBER(graph_destroy),
      MEMBER(graph_instantiate), MEMBER(exec_launch), MEMBER(exec_destroy)}},
    {VG_CAP_GRAPH_UPDATE, "graph update", 1, {MEMBER(exec_update)}},
    {VG_CAP_IPC, "IPC", 0,
     {MEMBER(ipc_alloc), MEMBER(ipc_export), MEMBER(ipc_open), MEMBER(ipc_close)}},
    {VG_CAP_NATIVE, "native handles", 0,
     {MEMBER(native_device), MEMBER(stream_native), MEMBER(stream_wrap), MEMBER(mem_native),
      MEMBER(mem_register), MEMBER(mem_unregister)}},
    {VG_CAP_GRAPH_LOOP, "device-side loops", 1,
     {MEMBER(loop_capture_begin), MEMBER(loop_capture_end)}},
    {VG_CAP_COMM, "communicators", 1,
     {MEMBER(comm_id_make), MEMBER(comm_create), MEMBER(comm_destroy), MEMBER(comm_all_reduce),
      MEMBER(comm_all_gather)}},
};
#undef MEMBER

static const void *member_at(const vg_backend_iface *b, size_t offset)
{
    return *(const void *const *)((const char *)b + offset);
}

vg_status vg_iface_check_caps(const vg_backend_iface *b, uint64_t *caps, const char *origin)
{
    /* VG_CAP_IPC was reserved before ABI 1.2 appended its section: a table older than that has
     * no IPC members, whatever its device says. */
    if ((*caps & VG_CAP_IPC) && b->abi_minor < 2) {
        vg_log(VG_LOG_INFO, "%s: device reports IPC, but the plugin's table is ABI 1.%u (the IPC "
                            "section is ABI 1.2); IPC disabled", origin, b->abi_minor);
        *caps &= ~VG_CAP_IPC;
    }
    /* VG_CAP_NATIVE and VG_CAP_FOREIGN_CAPTURE are ABI 1.3's; before it they mean nothing. */
    if ((*caps & (VG_CAP_NATIVE | VG_CAP_FOREIGN_CAPTURE)) && b->abi_minor < 3) {
        vg_log(VG_LOG_INFO, "%s: device reports native handles, but the plugin's table is ABI "
                            "1.%u (native handles are ABI 1.3); disabled", origin, b->abi_minor);
        *caps &= ~(VG_CAP_NATIVE | VG_CAP_FOREIGN_CAPTURE);
    }
    /* the loop members are ABI 1.4's: an older table has none, whatever its device says */
    if ((*caps & VG_CAP_GRAPH_LOOP) && b->abi_minor < 4) *caps &= ~VG_CAP_GRAPH_LOOP;
    /* and the communicator members ABI 1.5's */
    if (b->abi_minor < 5) *caps &= ~(VG_CAP_COMM | VG_CAP_COMM_CAPTURE);
    for (size_t i = 0; i < VG_ARRAY_LEN(k_cap_members); i++) {
        if (!(*caps & k_cap_members[i].cap)) continue;
        for (int j = 0; j < MAX_CAP_MEMBERS && k_cap_members[i].members[j].name; j++) {
            const char *name = k_cap_members[i].members[j].name;
            if (member_at(b, k_cap_members[i].members[j].offset)) continue;
            if (!k_cap_members[i].optional)
                return vg_error_set(VG_ERR_ABI, "%s: device reports %s but mandatory member '%s' "
                                                "is NULL", origin, k_cap_members[i].what, name);
            vg_log(VG_LOG_WARN, "%s: device reports %s but '%s' is NULL; %s disabled", origin,
                   k_cap_members[i].what, name, k_cap_members[i].what);
            *caps &= ~k_cap_members[i].cap;
            break;
        }
    }
    /* graph update and loops without graphs mean nothing, and foreign work is enqueued on a
     * native stream: capturing it needs both */
    if (!(*caps & VG_CAP_GRAPH))
        *caps &= ~(VG_CAP_GRAPH_UPDATE | VG_CAP_GRAPH_LOOP | VG_CAP_FOREIGN_CAPTURE);
    if (!(*caps & VG_CAP_NATIVE)) *caps &= ~VG_CAP_FOREIGN_CAPTURE;
    /* collectives captured need collectives, and graphs */
    if (!(*caps & VG_CAP_COMM) || !(*caps & VG_CAP_GRAPH)) *caps &= ~VG_CAP_COMM_CAPTURE;
    return VG_OK;
}

vg_status vg_iface_validate(const vg_backend_iface *in, const char *origin, vg_backend_iface *out,
                            vg_op_table *ops_out)
{
    if (!in)
        return vg_error_set(VG_ERR_ABI, "%s: %s() returned NULL (the plugin refused to load)",
                            origin, VG_BACKEND_ENTRY_NAME);
    if (in->abi_major != VG_BACKEND_ABI_MAJOR)
        return vg_error_set(VG_ERR_ABI,
                            "%s: ABI major mismatch: plugin built for vg backend ABI %u.%u, this "
                            "vg speaks ABI %d.%d",
                            origin, in->abi_major, in->abi_minor, VG_BACKEND_ABI_MAJOR,
                            VG_BACKEND_ABI_MINOR);
    size_t need = iface_size_for_minor(in->abi_minor);
    if (in->struct_size < need)
        return vg_error_set(VG_ERR_ABI,
                            "%s: interface table too small for its version: struct_size %u bytes, "
                            "ABI %u.%u needs at least %zu",
                            origin, in->struct_size, in->abi_major, in->abi_minor, need);
    memset(out, 0, sizeof *out);
    memcpy(out, in, in->struct_size < sizeof *out ? in->struct_size : sizeof *out);
    if (in->abi_minor < 3) out->option_names = NULL; /* not a member before 1.3 */
    if (in->abi_minor < 4) { /* not members before 1.4 */
        out->loop_capture_begin = NULL;
        out->loop_capture_end = NULL;
    }
    if (in->abi_minor < 5) { /* nor these before 1.5 */
        out->comm_id_make = NULL;
        out->comm_create = NULL;
        out->comm_destroy = NULL;
        out->comm_all_reduce = NULL;
        out->comm_all_gather = NULL;
    }
    for (size_t i = 0; i < VG_ARRAY_LEN(k_mandatory); i++) {
        if (member_at(out, k_mandatory[i].offset) == NULL)
            return vg_error_set(VG_ERR_ABI, "%s: mandatory member '%s' is NULL", origin,
                                k_mandatory[i].name);
    }
    /* The op table is a versioned sub-table, checked and zero-extended the same way; members
     * past its declared version are not the plugin's, whatever its struct_size says. */
    uint32_t over = in->ops->version, osz = in->ops->struct_size;
    if (over == 0)
        return vg_error_set(VG_ERR_ABI, "%s: op table version 0 (the VG_OP_TABLE_VERSION the "
                                        "plugin was built against is 1 or later)", origin);
    size_t oneed = op_table_size_for_version(over);
    if (osz < oneed)
        return vg_error_set(VG_ERR_ABI,
                            "%s: op table too small for its version: struct_size %u bytes, op "
                            "table version %u needs at least %zu",
                            origin, osz, over, oneed);
    memset(ops_out, 0, sizeof *ops_out);
    memcpy(ops_out, in->ops, oneed);
    out->ops = ops_out;
    return VG_OK;
}

int32_t vg_iface_score(const vg_backend_iface *b)
{
    if (!b->score) return VG_IFACE_DEFAULT_SCORE;
    int32_t s = b->score();
    return s < 0 ? 0 : s > 1000 ? 1000 : s;
}
