/* SPDX-License-Identifier: Apache-2.0 */
/* Communicators (vg_comm.h) over the plugin's ABI 1.5 members. Same pattern as device.c: every
 * argument and capture rule checked once with a readable message, then one call into the
 * plugin. A communicator whose backend call failed is marked broken: its ranks have fallen out
 * of step, so every later call fails with VG_ERR_STATE until it is destroyed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg/vg_comm.h"
#include "vg_internal.h"

#define COMM_TIMEOUT_DEFAULT_MS 60000
#define COMM_TIMEOUT_MAX_MS 0x7fffffff

struct vg_comm {
    vg_runtime *rt;
    vg_bk_comm *bk;
    int nranks, rank;
    char broken[200]; /* why the communicator is unusable; "" while it is not */
};

/* VG_COMM_TIMEOUT_MS, strictly: a value that is not a whole number of milliseconds in
 * [1, 2^31 - 1] is an error, not a silent default (a typo must not turn a 2 s bound into 60 s). */
static vg_status comm_timeout_ms(int32_t *out)
{
    const char *v = getenv("VG_COMM_TIMEOUT_MS");
    *out = COMM_TIMEOUT_DEFAULT_MS;
    if (!v) return VG_OK;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!(v[0] >= '0' && v[0] <= '9') || errno || *end || x < 1 || x > COMM_TIMEOUT_MAX_MS)
        return vg_error_set(VG_ERR_INVALID_ARG, "VG_COMM_TIMEOUT_MS='%s' is not a whole number of "
                                                "milliseconds in [1, %d]", v, COMM_TIMEOUT_MAX_MS);
    *out = (int32_t)x;
    return VG_OK;
}

static vg_status need_comm(const vg_runtime *rt, const char *fn)
{
    if (VG_UNLIKELY(!(rt->info.caps & VG_CAP_COMM)))
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: backend '%s' (device %s) has no "
                                                "communicators", fn, rt->iface.name,
                            rt->info.name);
    return VG_OK;
}

/* ---- ids ------------------------------------------------------------------------------------- */

vg_status vg_comm_id_make(vg_runtime *rt, vg_comm_id *out)
{
    REQUIRE(out, "vg_comm_id_make: out is NULL");
    memset(out, 0, sizeof *out);
    REQUIRE(rt, "vg_comm_id_make: runtime is NULL");
    const char *name = rt->iface.name;
    if (strlen(name) >= sizeof out->backend)
        return vg_error_set(VG_ERR_UNSUPPORTED, "vg_comm_id_make: backend name '%s' is longer "
                                                "than a communicator id holds (%zu characters)",
                            name, sizeof out->backend - 1);
    if (!(rt->info.caps & VG_CAP_COMM)) {
        /* the backend knows why (no vendor library, disabled by a knob): let it say so */
        if (rt->iface.comm_id_make && rt->iface.comm_id_make(rt->dev, out->bytes) != VG_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", vg_last_error());
            memset(out, 0, sizeof *out);
            return vg_error_set(VG_ERR_UNSUPPORTED, "vg_comm_id_make: backend '%s' (device %s) "
                                                    "has no communicators: %s", name,
                                rt->info.name, why);
        }
        memset(out, 0, sizeof *out);
        return need_comm(rt, "vg_comm_id_make");
    }
    vg_status st = rt->iface.comm_id_make(rt->dev, out->bytes);
    if (st != VG_OK) {
        memset(out, 0, sizeof *out);
        return st;
    }
    memcpy(out->backend, name, strlen(name) + 1);
    return VG_OK;
}

vg_status vg_comm_id_to_hex(const vg_comm_id *id, char *out, size_t out_len)
{
    REQUIRE(id && out, "vg_comm_id_to_hex: %s is NULL", id ? "out" : "id");
    REQUIRE(out_len >= 2 * sizeof *id + 1, "vg_comm_id_to_hex: out_len %zu < %zu (two hex digits "
                                           "per byte of the id, and a NUL)", out_len,
            2 * sizeof *id + 1);
    vg_hex_encode(id, sizeof *id, out);
    return VG_OK;
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

vg_status vg_comm_id_from_hex(const char *hex, vg_comm_id *out)
{
    REQUIRE(hex && out, "vg_comm_id_from_hex: %s is NULL", hex ? "out" : "hex");
    memset(out, 0, sizeof *out);
    size_t n = strnlen(hex, 2 * sizeof *out + 1);
    REQUIRE(n == 2 * sizeof *out, "vg_comm_id_from_hex: the text is %s%zu characters long, a "
                                  "communicator id is %zu hex digits",
            n > 2 * sizeof *out ? "more than " : "", n > 2 * sizeof *out ? 2 * sizeof *out : n,
            2 * sizeof *out);
    unsigned char *p = (unsigned char *)out;
    for (size_t i = 0; i < sizeof *out; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            size_t at = hi < 0 ? 2 * i : 2 * i + 1;
            memset(out, 0, sizeof *out);
            return vg_error_set(VG_ERR_INVALID_ARG, "vg_comm_id_from_hex: character %zu ('%c') "
                                                    "is not a hex digit", at, hex[at]);
        }
        p[i] = (unsigned char)(hi << 4 | lo);
    }
    if (!memchr(out->backend, '\0', sizeof out->backend)) {
        memset(out, 0, sizeof *out);
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_comm_id_from_hex: the id's backend name is not "
                                                "NUL-terminated (not an id vg made)");
    }
    return VG_OK;
}

/* ---- communicators ------------------------------------------------------------------------- */

vg_status vg_comm_create(vg_runtime *rt, const vg_comm_id *id, int nranks, int rank,
                         vg_comm **out)
{
    REQUIRE(out, "vg_comm_create: out is NULL");
    *out = NULL;
    REQUIRE(rt && id, "vg_comm_create: %s is NULL", rt ? "id" : "runtime");
    REQUIRE(nranks >= 1, "vg_comm_create: nranks %d < 1", nranks);
    REQUIRE(rank >= 0 && rank < nranks, "vg_comm_create: rank %d is not in [0, %d)", rank, nranks);
    REQUIRE(memchr(id->backend, '\0', sizeof id->backend),
            "vg_comm_create: the id's backend name is not NUL-terminated (not an id vg made)");
    REQUIRE(strcmp(id->backend, rt->iface.name) == 0,
            "vg_comm_create: the id was made by backend '%s', this runtime's is '%s'",
            id->backend, rt->iface.name);
    vg_status st = need_comm(rt, "vg_comm_create");
    if (st != VG_OK) return st;
    vg_bk_comm_args args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.nranks = nranks;
    args.rank = rank;
    st = comm_timeout_ms(&args.timeout_ms);
    if (st != VG_OK) return vg_error_prefix("vg_comm_create: ");
    memcpy(args.id, id->bytes, sizeof args.id);
    st = vg_capture_forbid("vg_comm_create");
    if (st != VG_OK) return st;
    vg_comm *c = calloc(1, sizeof *c);
    if (!c) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_comm_create: out of host memory");
    c->rt = rt;
    c->nranks = nranks;
    c->rank = rank;
    st = rt->iface.comm_create(rt->dev, &args, &c->bk);
    if (st != VG_OK || !c->bk) {
        free(c);
        return st != VG_OK ? st : vg_error_set(VG_ERR_INTERNAL, "vg_comm_create: backend '%s' "
                                                                "returned no communicator",
                                               rt->iface.name);
    }
    *out = c;
    return VG_OK;
}

vg_status vg_comm_destroy(vg_comm *c)
{
    if (!c) return VG_OK;
    vg_status st = vg_capture_forbid("vg_comm_destroy");
    if (st != VG_OK) return st; /* kept: a capture may have recorded its collectives */
    st = c->rt->iface.comm_destroy(c->rt->dev, c->bk);
    free(c);
    return st;
}

int vg_comm_rank(const vg_comm *c) { return c ? c->rank : -1; }
int vg_comm_size(const vg_comm *c) { return c ? c->nranks : 0; }

/* The checks both collectives share; `floats` restricts dtype to the ones a sum is defined on. */
static vg_status collective_check(const char *fn, vg_comm *c, vg_stream *s, vg_dtype dtype,
                                  const void *send, void *recv, int64_t count, int floats)
{
    REQUIRE(c && s, "%s: %s is NULL", fn, c ? "stream" : "communicator");
    if (c->broken[0])
        return vg_error_set(VG_ERR_STATE, "%s: the communicator (rank %d of %d) is unusable after "
                                          "an earlier failure (%s); destroy it", fn, c->rank,
                            c->nranks, c->broken);
    REQUIRE(s->rt == c->rt, "%s: the stream belongs to another runtime than the communicator",
            fn);
    size_t esz = vg_dtype_size(dtype);
    REQUIRE(esz, "%s: dtype %d is not a dtype", fn, (int)dtype);
    REQUIRE(!floats || dtype == VG_DTYPE_F32 || dtype == VG_DTYPE_F16 || dtype == VG_DTYPE_BF16,
            "%s: dtype %s is not allowed (F32, F16 or BF16)", fn, vg_dtype_name(dtype));
    REQUIRE(count >= 0, "%s: count %lld < 0", fn, (long long)count);
    /* the bytes recv holds must fit a size_t and an int64 */
    REQUIRE((uint64_t)count <= (uint64_t)INT64_MAX / esz / (uint64_t)c->nranks,
            "%s: count %lld is too large (%d ranks of %zu-byte elements overflow)", fn,
            (long long)count, c->nranks, esz);
    REQUIRE((send && recv) || count == 0, "%s: %s is NULL (count %lld)", fn,
            send ? "recv" : "send", (long long)count);
    REQUIRE(!((uintptr_t)send % esz) && !((uintptr_t)recv % esz),
            "%s: %s %p is not aligned to its %zu-byte elements", fn,
            (uintptr_t)send % esz ? "send" : "recv",
            (uintptr_t)send % esz ? send : (const void *)recv, esz);
    if (s->capturing && !(c->rt->info.caps & VG_CAP_COMM_CAPTURE))
        return vg_error_set(VG_ERR_UNSUPPORTED, "%s: backend '%s' (device %s) cannot capture "
                                                "collectives (no VG_CAP_COMM_CAPTURE): run it "
                                                "outside capture", fn, c->rt->iface.name,
                            c->rt->info.name);
    return VG_OK;
}

/* A failed collective leaves the ranks out of step: nothing after it can be trusted. */
static vg_status collective_done(vg_comm *c, const char *fn, vg_status st)
{
    if (st == VG_OK) return VG_OK;
    snprintf(c->broken, sizeof c->broken, "%s failed: %s", fn, vg_last_error());
    return st;
}

vg_status vg_comm_all_reduce(vg_comm *c, vg_stream *s, vg_dtype dtype, const void *send,
                             void *recv, int64_t count)
{
    vg_status st = collective_check("vg_comm_all_reduce", c, s, dtype, send, recv, count, 1);
    if (st != VG_OK || count == 0) return st;
    st = c->rt->iface.comm_all_reduce(c->rt->dev, c->bk, s->bk, dtype, send, recv, (size_t)count);
    return collective_done(c, "vg_comm_all_reduce", st);
}

vg_status vg_comm_all_gather(vg_comm *c, vg_stream *s, vg_dtype dtype, const void *send,
                             void *recv, int64_t count)
{
    vg_status st = collective_check("vg_comm_all_gather", c, s, dtype, send, recv, count, 0);
    if (st != VG_OK || count == 0) return st;
    st = c->rt->iface.comm_all_gather(c->rt->dev, c->bk, s->bk, dtype, send, recv, (size_t)count);
    return collective_done(c, "vg_comm_all_gather", st);
}
