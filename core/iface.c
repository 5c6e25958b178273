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
};

const vg_host_services *vg_host_services_get(void) { return &k_host; }

/* Minimum table size for each ABI minor this core knows. */
static size_t iface_size_for_minor(uint32_t minor)
{
    (void)minor; /* only 1.0 exists so far; later minors add rows here */
    return VG_BACKEND_IFACE_SIZE_1_0;
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
#undef MEMBER

vg_status vg_iface_validate(const vg_backend_iface *in, const char *origin, vg_backend_iface *out,
                            vg_op_table *ops_out)
{
    if (!in)
        return vg_set_error(VG_ERR_ABI, "%s: %s() returned NULL (the plugin refused to load)",
                            origin, VG_BACKEND_ENTRY_NAME);
    if (in->abi_major != VG_BACKEND_ABI_MAJOR)
        return vg_set_error(VG_ERR_ABI,
                            "%s: ABI major mismatch: plugin built for vg backend ABI %u.%u, this "
                            "vg speaks ABI %d.%d",
                            origin, in->abi_major, in->abi_minor, VG_BACKEND_ABI_MAJOR,
                            VG_BACKEND_ABI_MINOR);
    size_t need = iface_size_for_minor(in->abi_minor);
    if (in->struct_size < need)
        return vg_set_error(VG_ERR_ABI,
                            "%s: interface table too small for its version: struct_size %u bytes, "
                            "ABI %u.%u needs at least %zu",
                            origin, in->struct_size, in->abi_major, in->abi_minor, need);
    memset(out, 0, sizeof *out);
    memcpy(out, in, in->struct_size < sizeof *out ? in->struct_size : sizeof *out);
    for (size_t i = 0; i < VG_ARRAY_LEN(k_mandatory); i++) {
        const void *const *slot =
            (const void *const *)((const char *)out + k_mandatory[i].offset);
        if (*slot == NULL)
            return vg_set_error(VG_ERR_ABI, "%s: mandatory member '%s' is NULL", origin,
                                k_mandatory[i].name);
    }
    /* The op table is a versioned sub-table: zero-extend it the same way. */
    memset(ops_out, 0, sizeof *ops_out);
    uint32_t osz = in->ops->struct_size;
    if (osz < 2 * sizeof(uint32_t))
        return vg_set_error(VG_ERR_ABI, "%s: op table struct_size %u is too small", origin, osz);
    memcpy(ops_out, in->ops, osz < sizeof *ops_out ? osz : sizeof *ops_out);
    out->ops = ops_out;
    return VG_OK;
}
