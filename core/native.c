/* SPDX-License-Identifier: Apache-2.0 */
/* Native handles (vg_native.h): the vendor objects behind vg's, streams wrapped around the
 * caller's, and caller-owned memory registered with a runtime. The core checks arguments and
 * capabilities and keeps the list of registrations (for vg_mem_unregister and the runner's
 * address check); what a native object is, and whether memory belongs to the device, only the
 * backend can tell. */
#include <stdlib.h>
#include <string.h>

#include "vg/vg_native.h"
#include "vg_internal.h"

const char *vg_native_api_name(vg_native_api api)
{
    switch (api) {
    case VG_NATIVE_NONE: return "none";
    case VG_NATIVE_HOST: return "host";
    case VG_NATIVE_CUDA: return "cuda";
    case VG_NATIVE_HIP: return "hip";
    case VG_NATIVE_OPENCL: return "opencl";
    case VG_NATIVE_VENDOR: return "vendor";
    }
    return NULL;
}

vg_status vg_native_need(const vg_runtime *rt, const char *fn)
{
    if (rt->info.caps & VG_CAP_NATIVE) return VG_OK;
    if (rt->iface.abi_minor < 3)
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: backend '%s' has no native handles: its "
                                                "plugin is ABI 1.%u, native handles are ABI 1.3",
                            fn, rt->iface.name, rt->iface.abi_minor);
    return vg_error_set(VG_ERR_UNSUPPORTED, "%s: backend '%s' (device %s) does not offer native "
                                            "handles (no VG_CAP_NATIVE)", fn, rt->iface.name,
                        rt->info.name);
}

void vg_native_runtime_init(vg_runtime *rt)
{
    pthread_mutex_init(&rt->reg_lock, NULL);
    rt->regs = NULL;
    rt->nregs = rt->cap_regs = 0;
    rt->next_reg_id = 1;
}

void vg_native_runtime_fini(vg_runtime *rt)
{
    /* registrations left behind are forgotten: the memory is the caller's */
    for (size_t i = 0; i < rt->nregs; i++) {
        vg_log(VG_LOG_WARN, "vg_runtime_close: registered memory %p (%zu bytes) was never "
                            "unregistered", rt->regs[i].ptr, rt->regs[i].bytes);
        if (rt->iface.mem_unregister) rt->iface.mem_unregister(rt->dev, rt->regs[i].ptr);
    }
    free(rt->regs);
    rt->regs = NULL;
    rt->nregs = rt->cap_regs = 0;
    pthread_mutex_destroy(&rt->reg_lock);
}

uint64_t vg_registration_id(vg_runtime *rt, const void *p)
{
    uint64_t id = 0;
    uintptr_t a = (uintptr_t)p;
    pthread_mutex_lock(&rt->reg_lock);
    for (size_t i = rt->nregs; i-- > 0 && !id;) { /* the newest first */
        uintptr_t b = (uintptr_t)rt->regs[i].ptr;
        if (a >= b && a - b < rt->regs[i].bytes) id = rt->regs[i].id;
    }
    pthread_mutex_unlock(&rt->reg_lock);
    return id;
}

/* ---- device ------------------------------------------------------------------------------------ */

vg_status vg_runtime_native_device(vg_runtime *rt, vg_native_device *out)
{
    REQUIRE(rt && out, "vg_runtime_native_device: %s is NULL", rt ? "out" : "runtime");
    REQUIRE(out->struct_size >= sizeof(uint32_t) * 2,
            "vg_runtime_native_device: out->struct_size not set");
    vg_status st = vg_native_need(rt, "vg_runtime_native_device");
    if (st != VG_OK) return st;
    vg_native_device full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    st = rt->iface.native_device(rt->dev, &full);
    if (st != VG_OK) return st;
    size_t n = out->struct_size < sizeof full ? out->struct_size : sizeof full;
    memcpy((char *)out + sizeof(uint32_t), (const char *)&full + sizeof(uint32_t),
           n - sizeof(uint32_t));
    return VG_OK;
}

int vg_runtime_foreign_capture(const vg_runtime *rt)
{
    return rt && (rt->info.caps & VG_CAP_FOREIGN_CAPTURE) != 0;
}

/* ---- streams ----------------------------------------------------------------------------------- */

vg_status vg_stream_native(vg_stream *s, void **out)
{
    REQUIRE(out, "vg_stream_native: out is NULL");
    *out = NULL;
    REQUIRE(s, "vg_stream_native: stream is NULL");
    vg_status st = vg_native_need(s->rt, "vg_stream_native");
    if (st != VG_OK) return st;
    st = s->rt->iface.stream_native(s->rt->dev, s->bk, out);
    if (st != VG_OK) *out = NULL;
    return st;
}

vg_status vg_stream_wrap(vg_runtime *rt, void *native, vg_stream **out)
{
    REQUIRE(out, "vg_stream_wrap: out is NULL");
    *out = NULL;
    REQUIRE(rt, "vg_stream_wrap: runtime is NULL");
    REQUIRE(native, "vg_stream_wrap: the native stream is NULL (vg cannot wrap a legacy default "
                    "stream: pass a stream object)");
    vg_status st = vg_native_need(rt, "vg_stream_wrap");
    if (st != VG_OK) return st;
    vg_stream *s = calloc(1, sizeof *s);
    if (!s) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_stream_wrap: out of host memory");
    s->rt = rt;
    s->wrapped = 1;
    st = rt->iface.stream_wrap(rt->dev, native, &s->bk);
    if (st != VG_OK || !s->bk) {
        free(s);
        return st != VG_OK ? st : vg_error_set(VG_ERR_INTERNAL, "vg_stream_wrap: backend '%s' "
                                                                "returned no stream", rt->iface.name);
    }
    *out = s;
    return VG_OK;
}

int vg_stream_is_wrapped(const vg_stream *s) { return s ? s->wrapped : 0; }

/* ---- memory ------------------------------------------------------------------------------------ */

vg_status vg_mem_native(vg_runtime *rt, const void *ptr, vg_native_mem *out)
{
    REQUIRE(rt && out, "vg_mem_native: %s is NULL", rt ? "out" : "runtime");
    REQUIRE(out->struct_size >= sizeof(uint32_t) * 2, "vg_mem_native: out->struct_size not set");
    REQUIRE(ptr, "vg_mem_native: ptr is NULL");
    vg_status st = vg_native_need(rt, "vg_mem_native");
    if (st != VG_OK) return st;
    vg_native_mem full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    st = rt->iface.mem_native(rt->dev, ptr, &full);
    if (st != VG_OK) return st;
    full.registered = vg_registration_id(rt, ptr) != 0;
    size_t n = out->struct_size < sizeof full ? out->struct_size : sizeof full;
    memcpy((char *)out + sizeof(uint32_t), (const char *)&full + sizeof(uint32_t),
           n - sizeof(uint32_t));
    return VG_OK;
}

vg_status vg_mem_register(vg_runtime *rt, void *native, size_t bytes, void **out)
{
    REQUIRE(out, "vg_mem_register: out is NULL");
    *out = NULL;
    REQUIRE(rt, "vg_mem_register: runtime is NULL");
    REQUIRE(native, "vg_mem_register: the native memory is NULL");
    REQUIRE(bytes >= 1, "vg_mem_register: bytes is 0 (register at least one byte)");
    vg_status st = vg_native_need(rt, "vg_mem_register");
    if (st == VG_OK) st = vg_capture_forbid("vg_mem_register");
    if (st != VG_OK) return st;
    /* one lock around the backend's check too: registering is rare, and the table then never
     * holds an address the backend has not accepted */
    pthread_mutex_lock(&rt->reg_lock);
    if (rt->nregs == rt->cap_regs) {
        size_t cap = rt->cap_regs ? rt->cap_regs * 2 : 16;
        vg_registration *r = realloc(rt->regs, cap * sizeof *r);
        if (!r) {
            pthread_mutex_unlock(&rt->reg_lock);
            return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_mem_register: out of host memory");
        }
        rt->regs = r;
        rt->cap_regs = cap;
    }
    void *ptr = NULL;
    st = rt->iface.mem_register(rt->dev, native, bytes, &ptr);
    if (st == VG_OK && !ptr)
        st = vg_error_set(VG_ERR_INTERNAL, "vg_mem_register: backend '%s' returned no address",
                          rt->iface.name);
    if (st == VG_OK) rt->regs[rt->nregs++] = (vg_registration){ptr, bytes, rt->next_reg_id++};
    pthread_mutex_unlock(&rt->reg_lock);
    if (st != VG_OK) return st;
    *out = ptr;
    return VG_OK;
}

vg_status vg_mem_unregister(vg_runtime *rt, void *ptr)
{
    REQUIRE(rt, "vg_mem_unregister: runtime is NULL");
    REQUIRE(ptr, "vg_mem_unregister: ptr is NULL");
    vg_status st = vg_native_need(rt, "vg_mem_unregister");
    if (st == VG_OK) st = vg_capture_forbid("vg_mem_unregister");
    if (st != VG_OK) return st;
    int found = 0;
    pthread_mutex_lock(&rt->reg_lock);
    for (size_t i = rt->nregs; i-- > 0;) { /* the newest registration of ptr goes first */
        if (rt->regs[i].ptr != ptr) continue;
        memmove(&rt->regs[i], &rt->regs[i + 1], (rt->nregs - i - 1) * sizeof rt->regs[0]);
        rt->nregs--;
        found = 1;
        break;
    }
    pthread_mutex_unlock(&rt->reg_lock);
    if (!found)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_mem_unregister: %p is not an address "
                                                "vg_mem_register returned on this runtime", ptr);
    return rt->iface.mem_unregister(rt->dev, ptr);
}
