/* SPDX-License-Identifier: Apache-2.0 */
/* Plugin ABI compatibility (docs/plugin-abi.md, "Versioning rules" and "Per-op capabilities"):
 *  - an ABI 1.0 plugin (no op_caps, no score, a table that ends at `ops`) loads, opens and runs
 *    under this 1.2 core, which derives each op's support from the op table and capturable_ops;
 *  - an ABI 1.1 plugin's op_caps wins over capturable_ops, is asked once per op at open, and op
 *    ids past 64 neither crash nor leak into answers the core cannot give;
 *  - vg_runtime_open_iface validates a caller's table like a plugin's;
 *  - the IPC section (ABI 1.2) is used only from 1.2 tables whose devices report VG_CAP_IPC,
 *    and then must be complete;
 *  - the native section (ABI 1.3) likewise with VG_CAP_NATIVE: a 1.2 table still loads and runs,
 *    and native calls and backend options are refused with a message naming the ABI.
 * An ABI test: the only kind of test that includes vg_backend.h. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>

#include "test_util.h"
#include "vg/vg_backend.h"
#include "vg/vg_device.h"
#include "vg/vg_ipc.h"
#include "vg/vg_native.h"

#ifndef TEST_PLUGIN_DIR
#error "TEST_PLUGIN_DIR must point at the built test plugins"
#endif
#ifndef STUB_PLUGIN_PATH
#error "STUB_PLUGIN_PATH must point at libvg_kunlun_stub.so"
#endif

#define ABI10_PATH TEST_PLUGIN_DIR "/abi/libvg_abi10.so"
#define OPCAPS_PATH TEST_PLUGIN_DIR "/abi/libvg_opcaps.so"

static const uint32_t k_fill_dtypes = VG_DTYPE_BIT(VG_DTYPE_F32) | VG_DTYPE_BIT(VG_DTYPE_F16) |
                                      VG_DTYPE_BIT(VG_DTYPE_BF16) | VG_DTYPE_BIT(VG_DTYPE_I32) |
                                      VG_DTYPE_BIT(VG_DTYPE_I64) | VG_DTYPE_BIT(VG_DTYPE_U8);

static vg_runtime *open_path(const char *path)
{
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = path;
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open(&o, &rt));
    return rt;
}

static int reset_env(void **state)
{
    (void)state;
    unsetenv("VG_BACKEND");
    unsetenv("VG_BACKEND_PATH");
    unsetenv("VG_STUB_CAPS");
    vg_error_clear();
    return 0;
}

/* Capture `fill(value)` then `axpby` on s; the op the device cannot capture must be refused with
 * VG_ERR_STATE naming it, the capture must still end, and the graph must replay the other op. */
static void capture_refuses(vg_runtime *rt, vg_op_id refused)
{
    vg_stream *s = NULL;
    float *x = NULL, *y = NULL;
    VG_CHECK(vg_stream_create(rt, &s));
    VG_CHECK(vg_mem_alloc(rt, 16 * sizeof(float), (void **)&x));
    VG_CHECK(vg_mem_alloc(rt, 16 * sizeof(float), (void **)&y));
    VG_CHECK(vg_op_fill(s, x, VG_DTYPE_F32, 16, 2.0));
    VG_CHECK(vg_op_fill(s, y, VG_DTYPE_F32, 16, 1.0));
    VG_CHECK(vg_stream_sync(s));
    VG_CHECK(vg_graph_capture_begin(s));
    assert_true(vg_stream_is_capturing(s));
    if (refused == VG_OP_FILL) {
        VG_CHECK_FAILS(vg_op_fill(s, y, VG_DTYPE_F32, 16, 7.0), VG_ERR_STATE, "fill");
        VG_CHECK(vg_op_axpby(s, 16, 1.0f, x, 1.0f, y));
    } else {
        VG_CHECK(vg_op_fill(s, y, VG_DTYPE_F32, 16, 7.0));
        VG_CHECK_FAILS(vg_op_axpby(s, 16, 1.0f, x, 1.0f, y), VG_ERR_STATE, "axpby");
    }
    /* the capture ends whatever it returns, and the stream works eagerly again */
    vg_graph *g = NULL;
    vg_status st = vg_graph_capture_end(s, &g);
    assert_false(vg_stream_is_capturing(s));
    float back[16];
    if (st == VG_OK) { /* the refused op left no trace: the graph holds the other one only */
        vg_graph_exec *x_exec = NULL;
        VG_CHECK(vg_graph_instantiate(g, &x_exec));
        VG_CHECK(vg_graph_exec_launch(x_exec, s));
        VG_CHECK(vg_mem_copy_d2h(s, back, y, sizeof back));
        VG_CHECK(vg_stream_sync(s));
        for (int i = 0; i < 16; i++) assert_true(back[i] == (refused == VG_OP_FILL ? 3.0f : 7.0f));
        VG_CHECK(vg_graph_exec_destroy(x_exec));
        VG_CHECK(vg_graph_destroy(g));
    } else {
        assert_null(g);
    }
    VG_CHECK(vg_op_fill(s, y, VG_DTYPE_F32, 16, 5.0));
    VG_CHECK(vg_mem_copy_d2h(s, back, y, sizeof back));
    VG_CHECK(vg_stream_sync(s));
    for (int i = 0; i < 16; i++) assert_true(back[i] == 5.0f);
    VG_CHECK(vg_mem_free(rt, x));
    VG_CHECK(vg_mem_free(rt, y));
    VG_CHECK(vg_stream_destroy(s));
}

/* ---- ABI 1.0 ----------------------------------------------------------------------------------- */

static void test_abi10_probe(void **state)
{
    (void)state;
    vg_probe_report r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    assert_int_equal(vg_backend_probe(ABI10_PATH, &r), VG_OK);
    assert_true(r.loaded);
    assert_string_equal(r.name, "abi10");
    assert_int_equal(r.abi_major, 1);
    assert_int_equal(r.abi_minor, 0);
    assert_int_equal(r.score, 500); /* no score member: the default */
    assert_int_equal(r.device_count, 1);
}

static void test_abi10_op_support_is_derived(void **state)
{
    (void)state;
    vg_runtime *rt = open_path(ABI10_PATH);
    assert_string_equal(vg_runtime_backend_name(rt), "abi10");
    assert_true(vg_runtime_caps(rt) & VG_CAP_GRAPH);
    uint32_t dt = 0;
    /* fill: a member and its capturable_ops bit */
    assert_int_equal(vg_runtime_op_support(rt, VG_OP_FILL, &dt), VG_OP_SUPPORTED | VG_OP_CAPTURABLE);
    assert_int_equal(dt, k_fill_dtypes); /* every dtype the catalogue allows */
    assert_int_equal(vg_runtime_op_capturable(rt, VG_OP_FILL), 1);
    /* axpby: a member without its bit */
    dt = 0;
    assert_int_equal(vg_runtime_op_support(rt, VG_OP_AXPBY, &dt), VG_OP_SUPPORTED);
    assert_true(dt & VG_DTYPE_BIT(VG_DTYPE_F32));
    assert_int_equal(vg_runtime_op_capturable(rt, VG_OP_AXPBY), 0);
    /* the rest: no member */
    for (int op = VG_OP_GEMM; op < VG_OP_COUNT_; op++) {
        if (vg_runtime_op_support(rt, (vg_op_id)op, NULL) != 0)
            print_message("op %s is reported, but the 1.0 plugin has no member\n", vg_op_name((vg_op_id)op));
        assert_int_equal(vg_runtime_op_support(rt, (vg_op_id)op, NULL), 0);
        assert_int_equal(vg_runtime_op_capturable(rt, (vg_op_id)op), 0);
    }
    VG_CHECK(vg_runtime_close(rt));
}

static void test_abi10_runs(void **state)
{
    (void)state;
    vg_runtime *rt = open_path(ABI10_PATH);
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(rt, &s));
    int32_t *d = NULL, back[32];
    VG_CHECK(vg_mem_alloc(rt, sizeof back, (void **)&d));
    VG_CHECK(vg_op_fill(s, d, VG_DTYPE_I32, 32, 41.0));
    VG_CHECK(vg_mem_copy_d2h(s, back, d, sizeof back));
    VG_CHECK(vg_stream_sync(s));
    for (int i = 0; i < 32; i++) assert_int_equal(back[i], 41);
    /* an op the plugin lacks is refused by the core, naming it */
    float *f = (float *)d;
    vg_gemm_args a = {.struct_size = sizeof a, .dtype_ab = VG_DTYPE_F32, .dtype_c = VG_DTYPE_F32,
                      .m = 2, .n = 2, .k = 2, .a = f, .lda = 2, .b = f + 4, .ldb = 2, .c = f + 8,
                      .ldc = 2, .act = VG_ACT_NONE, .alpha = 1.0f};
    VG_CHECK_FAILS(vg_op_gemm(s, &a), VG_ERR_UNSUPPORTED, "gemm");
    VG_CHECK(vg_mem_free(rt, d));
    VG_CHECK(vg_stream_destroy(s));
    VG_CHECK(vg_runtime_close(rt));
}

static void test_abi10_capture(void **state)
{
    (void)state;
    vg_runtime *rt = open_path(ABI10_PATH);
    capture_refuses(rt, VG_OP_AXPBY); /* its capturable_ops bit is clear */
    VG_CHECK(vg_runtime_close(rt));
}

/* ---- ABI 1.1 op_caps ------------------------------------------------------------------------------ */

static long *op_caps_counter(void)
{
    void *h = dlopen(OPCAPS_PATH, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h); /* loaded by the runtime */
    long *n = dlsym(h, "tp_op_caps_calls");
    assert_non_null(n);
    dlclose(h);
    return n;
}

static void test_op_caps_wins_over_mask(void **state)
{
    (void)state;
    vg_runtime *rt = open_path(OPCAPS_PATH);
    uint32_t dt = 0;
    /* capturable_ops says every op, op_caps says fill is not capturable and takes F32, I32 */
    assert_int_equal(vg_runtime_op_support(rt, VG_OP_FILL, &dt), VG_OP_SUPPORTED);
    assert_int_equal(dt, VG_DTYPE_BIT(VG_DTYPE_F32) | VG_DTYPE_BIT(VG_DTYPE_I32));
    assert_int_equal(vg_runtime_op_capturable(rt, VG_OP_FILL), 0);
    assert_int_equal(vg_runtime_op_support(rt, VG_OP_AXPBY, NULL), VG_OP_SUPPORTED | VG_OP_CAPTURABLE);
    assert_int_equal(vg_runtime_op_capturable(rt, VG_OP_AXPBY), 1);
    assert_int_equal(vg_runtime_op_support(rt, VG_OP_GEMM, NULL), 0);
    /* a dtype the device refuses: VG_ERR_UNSUPPORTED naming the op and the dtype */
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(rt, &s));
    uint16_t *h = NULL;
    VG_CHECK(vg_mem_alloc(rt, 64, (void **)&h));
    VG_CHECK_FAILS2(vg_op_fill(s, h, VG_DTYPE_BF16, 8, 0.0), VG_ERR_UNSUPPORTED, "fill", "BF16");
    VG_CHECK(vg_op_fill(s, h, VG_DTYPE_I32, 8, 3.0));
    VG_CHECK(vg_mem_free(rt, h));
    VG_CHECK(vg_stream_destroy(s));
    capture_refuses(rt, VG_OP_FILL);
    VG_CHECK(vg_runtime_close(rt));
}

static void test_op_caps_asked_once_per_op(void **state)
{
    (void)state;
    vg_runtime *rt = open_path(OPCAPS_PATH);
    long *calls = op_caps_counter();
    long at_open = *calls;
    /* every op this core knows was asked about when the device opened */
    assert_true(at_open >= VG_OP_COUNT_);
    vg_stream *s = NULL;
    float *d = NULL;
    VG_CHECK(vg_stream_create(rt, &s));
    VG_CHECK(vg_mem_alloc(rt, 64 * sizeof(float), (void **)&d));
    for (int i = 0; i < 200; i++) {
        VG_CHECK(vg_op_fill(s, d, VG_DTYPE_F32, 64, i));
        VG_CHECK(vg_op_axpby(s, 64, 1.0f, d, 0.5f, d));
        (void)vg_runtime_op_support(rt, (vg_op_id)(i % VG_OP_COUNT_), NULL);
        (void)vg_runtime_op_capturable(rt, (vg_op_id)(i % VG_OP_COUNT_));
    }
    VG_CHECK(vg_stream_sync(s));
    assert_int_equal(*calls, at_open); /* answered from the table built at open */
    VG_CHECK(vg_mem_free(rt, d));
    VG_CHECK(vg_stream_destroy(s));
    VG_CHECK(vg_runtime_close(rt));
}

static void test_op_ids_past_64(void **state)
{
    (void)state;
    vg_runtime *rt = open_path(OPCAPS_PATH);
    /* the plugin marks op 70 supported and capturable; this core has no op 70, so it cannot
     * offer it: 0, and no crash, for any id at or beyond the catalogue, below or past 64 */
    const uint32_t ids[] = {VG_OP_COUNT_, 63, 64, 65, 70, 127, 128, 1000, 0x7fffffff};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        uint32_t dt = 0xdeadbeef;
        assert_int_equal(vg_runtime_op_support(rt, (vg_op_id)ids[i], &dt), 0);
        assert_int_equal(dt, 0);
        assert_int_equal(vg_runtime_op_capturable(rt, (vg_op_id)ids[i]), 0);
        assert_null(vg_op_name((vg_op_id)ids[i]));
    }
    /* and the ops it does know are unaffected */
    assert_int_equal(vg_runtime_op_support(rt, VG_OP_AXPBY, NULL), VG_OP_SUPPORTED | VG_OP_CAPTURABLE);
    VG_CHECK(vg_runtime_close(rt));
}

static void test_op_caps_probe(void **state)
{
    (void)state;
    vg_probe_report r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    assert_int_equal(vg_backend_probe(OPCAPS_PATH, &r), VG_OK);
    assert_int_equal(r.abi_minor, 1);
    assert_int_equal(r.score, 500); /* op_caps but no score */
    assert_int_equal(vg_backend_probe(STUB_PLUGIN_PATH, &r), VG_OK);
    assert_int_equal(r.abi_minor, VG_BACKEND_ABI_MINOR);
    assert_int_equal(r.score, 10);
}

/* ---- vg_runtime_open_iface ------------------------------------------------------------------------ */

static void host_log(vg_log_level level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    vg_log(level, "%s", buf);
}

static void host_set_error(vg_status st, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    vg_error_set(st, "%s", buf);
}

/* A host of ABI 1.2 (no option member): plugins read their knobs from the environment. */
static const vg_host_services k_host = {VG_BACKEND_ABI_MAJOR, 2,
                                        offsetof(vg_host_services, option), host_log,
                                        host_set_error, NULL};

/* kunlun_stub's own table, as a program embedding a backend would hold it. */
static const vg_backend_iface *stub_table(void)
{
    void *h = dlopen(STUB_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!h) print_message("dlopen: %s\n", dlerror());
    assert_non_null(h);
    vg_backend_query_fn q = (vg_backend_query_fn)dlsym(h, VG_BACKEND_ENTRY_NAME);
    assert_non_null(q);
    const vg_backend_iface *t = q(&k_host);
    assert_non_null(t);
    return t; /* the library stays loaded for the rest of the program */
}

static void test_open_iface_validates(void **state)
{
    (void)state;
    const vg_backend_iface *stub = stub_table();
    vg_runtime *rt = NULL;
    vg_backend_iface copy = *stub;
    copy.stream_sync = NULL;
    VG_CHECK_FAILS(vg_runtime_open_iface(&copy, 0, &rt), VG_ERR_ABI, "'stream_sync' is NULL");
    assert_null(rt);
    copy = *stub;
    copy.abi_major = 0;
    VG_CHECK_FAILS(vg_runtime_open_iface(&copy, 0, &rt), VG_ERR_ABI, "ABI major mismatch");
    /* a 1.1 table must be as large as 1.1 says */
    copy = *stub;
    copy.abi_minor = 1;
    copy.struct_size = (uint32_t)VG_BACKEND_IFACE_SIZE_1_0;
    VG_CHECK_FAILS(vg_runtime_open_iface(&copy, 0, &rt), VG_ERR_ABI,
                   "interface table too small for its version");
    copy = *stub;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    assert_string_equal(vg_runtime_backend_name(rt), "kunlun_stub");
    assert_string_equal(vg_runtime_plugin_path(rt), "");
    VG_CHECK(vg_runtime_close(rt));
}

static vg_status poisoned_op_caps(vg_bk_device *d, uint32_t op, vg_op_caps *out)
{
    (void)d, (void)op, (void)out;
    fail_msg("the core called op_caps beyond a 1.0 table's struct_size");
    return VG_ERR_INTERNAL;
}

static void test_open_iface_as_abi10(void **state)
{
    (void)state;
    /* kunlun_stub's table cut to 1.0: op_caps beyond struct_size must never be called, and the
     * answers come from its op table and capturable_ops */
    setenv("VG_STUB_CAPS", "nocapture:attention", 1);
    vg_backend_iface copy = *stub_table();
    copy.abi_minor = 0;
    copy.struct_size = (uint32_t)VG_BACKEND_IFACE_SIZE_1_0;
    copy.op_caps = poisoned_op_caps;
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    for (int op = 0; op < VG_OP_COUNT_; op++) {
        uint32_t want = VG_OP_SUPPORTED | (op == VG_OP_ATTENTION ? 0 : VG_OP_CAPTURABLE);
        assert_int_equal(vg_runtime_op_support(rt, (vg_op_id)op, NULL), want);
    }
    VG_CHECK(vg_runtime_close(rt));
    /* a table larger than this core knows (a newer minor): the core ignores the rest */
    struct { vg_backend_iface t; unsigned char later[64]; } big;
    memset(&big, 0xA5, sizeof big);
    big.t = *stub_table();
    big.t.struct_size = (uint32_t)sizeof big;
    VG_CHECK(vg_runtime_open_iface(&big.t, 0, &rt));
    assert_int_equal(vg_runtime_op_support(rt, VG_OP_ATTENTION, NULL), VG_OP_SUPPORTED);
    VG_CHECK(vg_runtime_close(rt));
}

static vg_status poisoned_argmax(vg_bk_device *d, vg_bk_stream *st, vg_dtype t, const void *x,
                                 int64_t ld, int64_t rows, int64_t cols, int32_t *out)
{
    (void)d, (void)st, (void)t, (void)x, (void)ld, (void)rows, (void)cols, (void)out;
    fail_msg("the core called an op table member beyond the table's struct_size");
    return VG_ERR_INTERNAL;
}

/* A plugin built against op table version 3 (it ends at attention_rotary): the version 4 ops are
 * not offered (the core treats members past struct_size as NULL, even when op_caps claims them),
 * calling one is VG_ERR_UNSUPPORTED naming it, and the ops the table has still run. */
static void test_op_table_v3_plugin(void **state)
{
    (void)state;
    vg_backend_iface copy = *stub_table();
    vg_op_table v3 = *copy.ops;
    v3.version = 3;
    v3.struct_size = (uint32_t)offsetof(vg_op_table, rotary);
    v3.argmax = poisoned_argmax; /* beyond struct_size: must never be called */
    copy.ops = &v3;
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    for (int op = 0; op < VG_OP_COUNT_; op++) {
        uint32_t f = vg_runtime_op_support(rt, (vg_op_id)op, NULL);
        if (op <= VG_OP_ATTENTION_ROTARY) assert_int_equal(f, VG_OP_SUPPORTED | VG_OP_CAPTURABLE);
        else assert_int_equal(f, 0);
    }
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(rt, &s));
    float *x = NULL;
    int32_t *out = NULL;
    VG_CHECK(vg_mem_alloc(rt, 64 * sizeof(float), (void **)&x));
    VG_CHECK(vg_mem_alloc(rt, 64, (void **)&out));
    VG_CHECK(vg_op_fill(s, x, VG_DTYPE_F32, 64, 1.0));
    VG_CHECK_FAILS_ALL(vg_op_argmax(s, VG_DTYPE_F32, x, 8, 8, 8, out), VG_ERR_UNSUPPORTED, "argmax",
                       "not implemented");
    VG_CHECK(vg_stream_sync(s));
    VG_CHECK(vg_mem_free(rt, x));
    VG_CHECK(vg_mem_free(rt, out));
    VG_CHECK(vg_stream_destroy(s));
    VG_CHECK(vg_runtime_close(rt));
}

static vg_status poisoned_gather_weighted(vg_bk_device *d, vg_bk_stream *st, vg_dtype t, void *dst,
                                          const void *src, int64_t src_rows, const int32_t *idx,
                                          const float *w, int64_t rows, int64_t cols, int taps)
{
    (void)d, (void)st, (void)t, (void)dst, (void)src, (void)src_rows, (void)idx, (void)w;
    (void)rows, (void)cols, (void)taps;
    fail_msg("the core called an op table member beyond the table's struct_size");
    return VG_ERR_INTERNAL;
}

/* A plugin built against op table version 4 (it ends at argmax) under this version 5 core: the
 * version 5 ops are not offered and calling one is VG_ERR_UNSUPPORTED naming it; the version 4
 * ops still run. */
static void test_op_table_v4_plugin(void **state)
{
    (void)state;
    vg_backend_iface copy = *stub_table();
    vg_op_table v4 = *copy.ops;
    v4.version = 4;
    v4.struct_size = (uint32_t)offsetof(vg_op_table, layernorm);
    v4.gather_weighted = poisoned_gather_weighted; /* beyond struct_size: must never be called */
    copy.ops = &v4;
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    for (int op = 0; op < VG_OP_COUNT_; op++) {
        uint32_t f = vg_runtime_op_support(rt, (vg_op_id)op, NULL);
        if (op <= VG_OP_ARGMAX) assert_int_equal(f, VG_OP_SUPPORTED | VG_OP_CAPTURABLE);
        else assert_int_equal(f, 0);
    }
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(rt, &s));
    float *x = NULL, *y = NULL;
    int32_t *idx = NULL;
    VG_CHECK(vg_mem_alloc(rt, 64 * sizeof(float), (void **)&x));
    VG_CHECK(vg_mem_alloc(rt, 64 * sizeof(float), (void **)&y));
    VG_CHECK(vg_mem_alloc(rt, 64, (void **)&idx));
    VG_CHECK(vg_op_fill(s, x, VG_DTYPE_F32, 64, 1.0));
    VG_CHECK(vg_op_fill(s, idx, VG_DTYPE_I32, 16, 0.0));
    VG_CHECK_FAILS_ALL(vg_op_layernorm(s, VG_DTYPE_F32, x, x, NULL, y, 8, 8, 1e-6f), VG_ERR_UNSUPPORTED,
                       "layernorm", "not implemented");
    VG_CHECK_FAILS_ALL(vg_op_gather_weighted(s, VG_DTYPE_F32, y, x, 8, idx, x, 4, 8, 4),
                       VG_ERR_UNSUPPORTED, "gather_weighted", "not implemented");
    VG_CHECK(vg_op_argmax(s, VG_DTYPE_F32, x, 8, 8, 8, idx)); /* a version 4 op runs */
    VG_CHECK(vg_stream_sync(s));
    VG_CHECK(vg_mem_free(rt, x));
    VG_CHECK(vg_mem_free(rt, y));
    VG_CHECK(vg_mem_free(rt, idx));
    VG_CHECK(vg_stream_destroy(s));
    VG_CHECK(vg_runtime_close(rt));
}

/* What the gemm-option tests of old op tables call on: a stream, 64 F32 ones and a 2x2x2 F32
 * gemm over them (C at f + 8, f + 16 on free for a norm's scratch). */
typedef struct small_gemm {
    vg_stream *s;
    float *f;
    vg_gemm_args a;
} small_gemm;

static void small_gemm_open(vg_runtime *rt, small_gemm *g)
{
    VG_CHECK(vg_stream_create(rt, &g->s));
    VG_CHECK(vg_mem_alloc(rt, 64 * sizeof(float), (void **)&g->f));
    VG_CHECK(vg_op_fill(g->s, g->f, VG_DTYPE_F32, 64, 1.0));
    float *f = g->f;
    g->a = (vg_gemm_args){.struct_size = sizeof g->a, .dtype_ab = VG_DTYPE_F32, .dtype_c = VG_DTYPE_F32,
                          .m = 2, .n = 2, .k = 2, .a = f, .lda = 2, .b = f + 4, .ldb = 2, .c = f + 8,
                          .ldc = 2, .act = VG_ACT_NONE, .alpha = 1.0f};
}

/* Sync, free, and close rt with it. */
static void small_gemm_close(vg_runtime *rt, small_gemm *g)
{
    VG_CHECK(vg_stream_sync(g->s));
    VG_CHECK(vg_mem_free(rt, g->f));
    VG_CHECK(vg_stream_destroy(g->s));
    VG_CHECK(vg_runtime_close(rt));
}

/* A version 5 op table (built before gemm had a gate and a norm of A): the core offers neither
 * option, whatever op_caps says, nor rotary_kv_store (past its struct_size); a plain gemm runs and
 * a gated one is refused naming the option. The stub's own table (version 6) offers all three. */
static void test_op_table_v5_plugin(void **state)
{
    (void)state;
    vg_backend_iface copy = *stub_table();
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    const vg_op_id v6[] = {VG_OP_ROTARY_KV_STORE, VG_OP_GEMM_SILU_GATE, VG_OP_GEMM_RMSNORM_A};
    for (size_t i = 0; i < sizeof v6 / sizeof v6[0]; i++)
        assert_true(vg_runtime_op_support(rt, v6[i], NULL) & VG_OP_SUPPORTED);
    VG_CHECK(vg_runtime_close(rt));
    vg_op_table v5 = *copy.ops;
    v5.version = 5;
    v5.struct_size = (uint32_t)offsetof(vg_op_table, rotary_kv_store);
    copy.ops = &v5;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    for (size_t i = 0; i < sizeof v6 / sizeof v6[0]; i++) assert_int_equal(vg_runtime_op_support(rt, v6[i], NULL), 0);
    assert_true(vg_runtime_op_support(rt, VG_OP_GEMM, NULL) & VG_OP_SUPPORTED);
    small_gemm g;
    small_gemm_open(rt, &g);
    VG_CHECK(vg_op_gemm(g.s, &g.a));
    g.a.gate = VG_GEMM_GATE_SILU;
    VG_CHECK_FAILS_ALL(vg_op_gemm(g.s, &g.a), VG_ERR_UNSUPPORTED, "gemm_silu_gate", "not implemented");
    g.a.gate = VG_GEMM_GATE_NONE, g.a.norm_w = g.f, g.a.norm_out = g.f + 16;
    VG_CHECK_FAILS_ALL(vg_op_gemm(g.s, &g.a), VG_ERR_UNSUPPORTED, "gemm_rmsnorm_a", "not implemented");
    small_gemm_close(rt, &g);
}

/* A version 6 op table (built before lm_advance): the core does not offer lm_advance, even when
 * the table's struct_size reaches the member and op_caps says yes, and refuses a call naming it;
 * version 6's ops still run. The stub's own table (version 7) offers it. */
static void test_op_table_v6_plugin(void **state)
{
    (void)state;
    vg_backend_iface copy = *stub_table();
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    assert_true(vg_runtime_op_support(rt, VG_OP_LM_ADVANCE, NULL) & VG_OP_SUPPORTED);
    VG_CHECK(vg_runtime_close(rt));
    vg_op_table v6 = *copy.ops;
    v6.version = 6; /* struct_size left whole: the version alone decides */
    copy.ops = &v6;
    for (int cut = 0; cut < 2; cut++) {
        if (cut) v6.struct_size = (uint32_t)offsetof(vg_op_table, lm_advance);
        VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
        assert_int_equal(vg_runtime_op_support(rt, VG_OP_LM_ADVANCE, NULL), 0);
        assert_true(vg_runtime_op_support(rt, VG_OP_ROTARY_KV_STORE, NULL) & VG_OP_SUPPORTED);
        assert_true(vg_runtime_op_support(rt, VG_OP_GEMM_SILU_GATE, NULL) & VG_OP_SUPPORTED);
        vg_stream *s = NULL;
        VG_CHECK(vg_stream_create(rt, &s));
        int32_t *d = NULL;
        VG_CHECK(vg_mem_alloc(rt, 64 * sizeof(int32_t), (void **)&d));
        VG_CHECK(vg_op_fill(s, d, VG_DTYPE_I32, 64, 0.0));
        vg_lm_advance_args la = {.struct_size = sizeof la, .rows = 1, .block_size = 16,
                                 .max_blocks = 1, .ld_out = 4, .next = d, .limit = d,
                                 .block_tables = d, .tokens = d + 8, .pos = d + 9, .slots = d + 10,
                                 .ctx = d + 11, .state = d + 12, .out = d + 16};
        VG_CHECK_FAILS_ALL(vg_op_lm_advance(s, &la), VG_ERR_UNSUPPORTED, "lm_advance",
                           "not implemented");
        VG_CHECK(vg_stream_sync(s));
        VG_CHECK(vg_mem_free(rt, d));
        VG_CHECK(vg_stream_destroy(s));
        VG_CHECK(vg_runtime_close(rt));
    }
}

/* A version 8 op table (built before gemm had a norm of A without a weight): the core does not
 * offer gemm_rmsnorm_a_unit, whatever op_caps says, and refuses a gemm with norm_unit naming it;
 * a plain gemm and one with norm_w run. The stub's own table (version 9) offers it. */
static void test_op_table_v8_plugin(void **state)
{
    (void)state;
    vg_backend_iface copy = *stub_table();
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    assert_true(vg_runtime_op_support(rt, VG_OP_GEMM_RMSNORM_A_UNIT, NULL) & VG_OP_SUPPORTED);
    VG_CHECK(vg_runtime_close(rt));
    vg_op_table v8 = *copy.ops;
    v8.version = 8; /* version 9 adds no member: the version alone decides */
    copy.ops = &v8;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    assert_int_equal(vg_runtime_op_support(rt, VG_OP_GEMM_RMSNORM_A_UNIT, NULL), 0);
    assert_true(vg_runtime_op_support(rt, VG_OP_GEMM_RMSNORM_A, NULL) & VG_OP_SUPPORTED);
    small_gemm g;
    small_gemm_open(rt, &g);
    g.a.norm_out = g.f + 16;
    VG_CHECK(vg_op_gemm(g.s, &g.a));
    g.a.norm_w = g.f + 20;
    VG_CHECK(vg_op_gemm(g.s, &g.a));
    g.a.norm_w = NULL, g.a.norm_unit = 1;
    VG_CHECK_FAILS_ALL(vg_op_gemm(g.s, &g.a), VG_ERR_UNSUPPORTED, "gemm_rmsnorm_a_unit", "not implemented");
    small_gemm_close(rt, &g);
}

/* A version 9 op table (built before rotary_paged_attention had a folded norm): the core does not
 * offer rotary_paged_attention_norm_x, whatever op_caps says, and refuses a call with norm_x
 * naming it, without running it as the two ops it has no norm_x for (out and the caches keep
 * their contents); a call without norm_x runs. The stub's own table (version 10 or later) runs it:
 * the new value is qkv's (1) scaled by 1/rms(norm_x) = 2, plus the bias (0.5). */
static void test_op_table_v9_plugin(void **state)
{
    (void)state;
    /* one token at position 3 (slot 3 of block 0); f: qkv (ones), out, the caches, norm_x and
     * the bias (halves) */
    enum { HD = 8, QKV = 0, OUT = 3 * HD, KC = OUT + HD, VC = KC + 8 * HD, NX = VC + 8 * HD, BIAS = NX + HD,
           N = BIAS + 3 * HD };
    const int32_t meta[] = {3, /* pos */ 3, /* slot */ 0, /* table */ 4, /* ctx */ 0, 1};
    for (int v = 0; v < 2; v++) {
        vg_backend_iface copy = *stub_table();
        vg_op_table v9 = *copy.ops;
        if (v == 1) v9.version = 9, copy.ops = &v9; /* version 10 adds no member: the version alone decides */
        vg_runtime *rt = NULL;
        VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
        assert_int_equal(vg_runtime_op_support(rt, VG_OP_ROTARY_PAGED_ATTENTION_NORM_X, NULL) != 0, v == 0);
        assert_true(vg_runtime_op_support(rt, VG_OP_ROTARY_PAGED_ATTENTION, NULL) & VG_OP_SUPPORTED);
        vg_stream *s = NULL;
        float *f = NULL, got[N];
        int32_t *m = NULL;
        VG_CHECK(vg_stream_create(rt, &s));
        VG_CHECK(vg_mem_alloc(rt, N * sizeof(float), (void **)&f));
        VG_CHECK(vg_mem_alloc(rt, sizeof meta, (void **)&m));
        VG_CHECK(vg_mem_copy_h2d(s, m, meta, sizeof meta));
        VG_CHECK(vg_op_fill(s, f, VG_DTYPE_F32, N, 0.5));
        VG_CHECK(vg_op_fill(s, f + QKV, VG_DTYPE_F32, 3 * HD, 1.0));
        vg_rotary_paged_args a = {
            .struct_size = sizeof a, .dtype = VG_DTYPE_F32, .qkv = f + QKV, .ld = 3 * HD, .rows = 1, .heads = 1,
            .kv_heads = 1, .head_dim = HD, .pos = m, .theta = 1e4f, .scale = 0.35f, .k_cache = f + KC,
            .v_cache = f + VC, .num_slots = 8, .slots = m + 1, .out = f + OUT, .ld_out = HD, .block_tables = m + 2,
            .context_lens = m + 3, .query_start = m + 4, .max_blocks = 1, .num_seqs = 1, .block_size = 8,
            .norm_x = f + NX, .ld_norm_x = HD, .norm_x_cols = HD, .norm_x_eps = 0.0f, .qkv_bias = f + BIAS};
        if (v == 0) {
            VG_CHECK(vg_op_rotary_paged_attention(s, &a));
        } else {
            VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(s, &a), VG_ERR_UNSUPPORTED,
                               "rotary_paged_attention_norm_x", "not implemented");
            VG_CHECK(vg_mem_copy_d2h(s, got, f, sizeof got));
            VG_CHECK(vg_stream_sync(s));
            for (int i = OUT; i < NX; i++) assert_true(got[i] == 0.5f);
            a.norm_x = NULL, a.qkv_bias = NULL;
            VG_CHECK(vg_op_rotary_paged_attention(s, &a));
        }
        VG_CHECK(vg_mem_copy_d2h(s, got, f, sizeof got));
        VG_CHECK(vg_stream_sync(s));
        for (int i = 0; i < HD; i++) assert_float_equal(got[VC + 3 * HD + i], v == 0 ? 2.5f : 1.0f, 1e-5f);
        VG_CHECK(vg_mem_free(rt, f));
        VG_CHECK(vg_mem_free(rt, m));
        VG_CHECK(vg_stream_destroy(s));
        VG_CHECK(vg_runtime_close(rt));
    }
}

/* A version 7 op table (built before rotary_paged_attention): the core does not offer it, yet
 * vg_op_rotary_paged_attention still runs there, as rotary_kv_store then paged_attention (here
 * captured in a graph and replayed), and leaves what the stub's own member (version 8, run
 * eagerly) leaves: the same output and caches. */
static void test_op_table_v7_plugin(void **state)
{
    (void)state;
    enum { ROWS = 3, HEADS = 2, HD = 8, LD = (HEADS + 2) * HD, SLOTS = 16 };
    float qkv[ROWS * LD], norm[2 * HD], got[2][ROWS * HEADS * HD + 2 * SLOTS * HD];
    for (int i = 0; i < ROWS * LD; i++) qkv[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
    for (int i = 0; i < 2 * HD; i++) norm[i] = 0.5f + (float)i / 16.0f;
    /* one sequence of 3 new tokens at positions 5..7 of block 0 (16 slots) */
    const int32_t meta[] = {5, 6, 7, /* pos */ 5, 6, 7, /* slots */ 0, /* table */ 8, /* ctx */ 0, 3};
    for (int v = 0; v < 2; v++) {
        vg_backend_iface copy = *stub_table();
        vg_op_table v7 = *copy.ops;
        if (v == 1) v7.version = 7, copy.ops = &v7;
        vg_runtime *rt = NULL;
        VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
        assert_int_equal(vg_runtime_op_support(rt, VG_OP_ROTARY_PAGED_ATTENTION, NULL) != 0, v == 0);
        vg_stream *s = NULL;
        VG_CHECK(vg_stream_create(rt, &s));
        float *dq = NULL, *dn = NULL, *dout = NULL;
        int32_t *dm = NULL;
        VG_CHECK(vg_mem_alloc(rt, sizeof qkv, (void **)&dq));
        VG_CHECK(vg_mem_alloc(rt, sizeof norm, (void **)&dn));
        VG_CHECK(vg_mem_alloc(rt, sizeof got[0], (void **)&dout));
        VG_CHECK(vg_mem_alloc(rt, sizeof meta, (void **)&dm));
        VG_CHECK(vg_mem_copy_h2d(s, dq, qkv, sizeof qkv));
        VG_CHECK(vg_mem_copy_h2d(s, dn, norm, sizeof norm));
        VG_CHECK(vg_mem_copy_h2d(s, dm, meta, sizeof meta));
        VG_CHECK(vg_op_fill(s, dout, VG_DTYPE_F32, (int64_t)(sizeof got[0] / 4), 0.25));
        float *kc = dout + ROWS * HEADS * HD, *vc = kc + SLOTS * HD;
        const vg_rotary_paged_args a = {
            .struct_size = sizeof a, .dtype = VG_DTYPE_F32, .qkv = dq, .ld = LD, .rows = ROWS, .heads = HEADS,
            .kv_heads = 1, .head_dim = HD, .eps = 1e-6f, .q_norm = dn, .k_norm = dn + HD, .pos = dm,
            .theta = 1e4f, .scale = 0.35f, .k_cache = kc, .v_cache = vc, .num_slots = SLOTS, .slots = dm + 3, .out = dout,
            .ld_out = HEADS * HD, .block_tables = dm + 6, .context_lens = dm + 7, .query_start = dm + 8,
            .max_blocks = 1, .num_seqs = 1, .block_size = SLOTS};
        if (v == 0) {
            VG_CHECK(vg_op_rotary_paged_attention(s, &a));
        } else { /* the fallback's two ops, captured and replayed */
            vg_graph *graph = NULL;
            vg_graph_exec *exec = NULL;
            VG_CHECK(vg_graph_capture_begin(s));
            VG_CHECK(vg_op_rotary_paged_attention(s, &a));
            VG_CHECK(vg_graph_capture_end(s, &graph));
            VG_CHECK(vg_graph_instantiate(graph, &exec));
            VG_CHECK(vg_graph_destroy(graph));
            VG_CHECK(vg_graph_exec_launch(exec, s));
            VG_CHECK(vg_stream_sync(s));
            VG_CHECK(vg_graph_exec_destroy(exec));
        }
        VG_CHECK(vg_mem_copy_d2h(s, got[v], dout, sizeof got[v]));
        VG_CHECK(vg_stream_sync(s));
        void *bufs[4] = {dq, dn, dout, dm};
        for (int i = 0; i < 4; i++) VG_CHECK(vg_mem_free(rt, bufs[i]));
        VG_CHECK(vg_stream_destroy(s));
        VG_CHECK(vg_runtime_close(rt));
    }
    assert_memory_equal(got[0], got[1], sizeof got[0]);
    assert_true(got[0][ROWS * HEADS * HD + 5 * HD] != 0.25f); /* the new key of position 5 is stored */
    /* where the fallback cannot be captured the refusal is its op's, and nothing was recorded */
    setenv("VG_STUB_CAPS", "nocapture:paged_attention", 1);
    vg_backend_iface copy = *stub_table();
    vg_op_table v7 = *copy.ops;
    v7.version = 7, copy.ops = &v7;
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(rt, &s));
    float *d = NULL;
    VG_CHECK(vg_mem_alloc(rt, sizeof got[0] + sizeof qkv + sizeof norm + sizeof meta, (void **)&d));
    float *dq = d, *dn = dq + ROWS * LD, *dout = dn + 2 * HD;
    int32_t *dm = (int32_t *)(dout + sizeof got[0] / 4);
    const vg_rotary_paged_args a = {
        .struct_size = sizeof a, .dtype = VG_DTYPE_F32, .qkv = dq, .ld = LD, .rows = ROWS, .heads = HEADS,
        .kv_heads = 1, .head_dim = HD, .pos = dm, .theta = 1e4f, .scale = 0.35f,
        .k_cache = dout + ROWS * HEADS * HD, .v_cache = dout + ROWS * HEADS * HD + SLOTS * HD, .num_slots = SLOTS,
        .slots = dm + 3, .out = dout, .ld_out = HEADS * HD, .block_tables = dm + 6, .context_lens = dm + 7,
        .query_start = dm + 8, .max_blocks = 1, .num_seqs = 1, .block_size = SLOTS};
    VG_CHECK(vg_graph_capture_begin(s));
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(s, &a), VG_ERR_STATE, "paged_attention", "captur");
    vg_graph *graph = NULL;
    if (vg_graph_capture_end(s, &graph) == VG_OK) VG_CHECK(vg_graph_destroy(graph));
    VG_CHECK(vg_mem_free(rt, d));
    VG_CHECK(vg_stream_destroy(s));
    VG_CHECK(vg_runtime_close(rt));
    unsetenv("VG_STUB_CAPS");
}

/* The op table's version is checked like the interface table's (docs/plugin-abi.md): version 0
 * and a struct_size below the declared version's size are refused; members past the declared
 * version are not the plugin's, whatever its struct_size says (never called, their ops not
 * offered); a version newer than this core's loads, and the core uses what it knows. */
static void test_op_table_version_is_checked(void **state)
{
    (void)state;
    vg_backend_iface copy = *stub_table();
    vg_op_table t = *copy.ops;
    copy.ops = &t;
    vg_runtime *rt = NULL;
    t.version = 0;
    VG_CHECK_FAILS(vg_runtime_open_iface(&copy, 0, &rt), VG_ERR_ABI, "op table version 0");
    assert_null(rt);
    t.version = 5;
    t.struct_size = (uint32_t)offsetof(vg_op_table, layernorm); /* version 4's size */
    VG_CHECK_FAILS_ALL(vg_runtime_open_iface(&copy, 0, &rt), VG_ERR_ABI,
                       "op table too small for its version", "version 5");
    assert_null(rt);
    t = *stub_table()->ops;
    t.version = 4; /* struct_size left whole */
    t.gather_weighted = poisoned_gather_weighted;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    assert_true(vg_runtime_op_support(rt, VG_OP_ARGMAX, NULL) & VG_OP_SUPPORTED);
    assert_int_equal(vg_runtime_op_support(rt, VG_OP_LAYERNORM, NULL), 0);
    assert_int_equal(vg_runtime_op_support(rt, VG_OP_GATHER_WEIGHTED, NULL), 0);
    VG_CHECK(vg_runtime_close(rt));
    struct { vg_op_table t; unsigned char later[64]; } big;
    memset(&big, 0xA5, sizeof big); /* what a newer table appends: this core must not read it */
    big.t = *stub_table()->ops;
    big.t.version = VG_OP_TABLE_VERSION + 1;
    big.t.struct_size = (uint32_t)sizeof big;
    copy.ops = &big.t;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    for (int op = 0; op < VG_OP_COUNT_; op++)
        assert_true(vg_runtime_op_support(rt, (vg_op_id)op, NULL) & VG_OP_SUPPORTED);
    VG_CHECK(vg_runtime_close(rt));
}

/* ---- ABI 1.2: the IPC section ------------------------------------------------------------------- */

#define IPCNULL_PATH TEST_PLUGIN_DIR "/abi/libvg_ipcnull.so"

/* The device offers no IPC, and vg_ipc.h says so without reaching the plugin. */
static void expect_no_ipc(vg_runtime *rt)
{
    assert_false(vg_runtime_caps(rt) & VG_CAP_IPC);
    vg_device_info info = {.struct_size = sizeof info};
    VG_CHECK(vg_runtime_device_info(rt, &info));
    assert_false(info.caps & VG_CAP_IPC);
    vg_ipc_pool *p = (vg_ipc_pool *)1;
    VG_CHECK_FAILS(vg_ipc_pool_create(rt, 4096, &p), VG_ERR_UNSUPPORTED, "no IPC capability");
    assert_null(p);
    vg_ipc_desc d;
    memset(&d, 0, sizeof d);
    d.version = VG_IPC_DESC_VERSION;
    snprintf(d.backend, sizeof d.backend, "%s", vg_runtime_backend_name(rt));
    d.producer_pid = 1, d.pool_bytes = 64, d.dtype = VG_DTYPE_U8;
    vg_ipc_tensor t;
    VG_CHECK_FAILS(vg_ipc_import(rt, &d, &t), VG_ERR_UNSUPPORTED, "no IPC capability");
    assert_null(t.ptr);
}

/* ABI 1.0 and 1.1 plugins whose devices report VG_CAP_IPC (reserved before 1.2): their tables
 * have no IPC section, so the core clears the bit and never reads past their struct_size (the
 * fixtures poison what lies beyond). */
static void test_ipc_claimed_by_old_plugins(void **state)
{
    (void)state;
    const char *paths[] = {ABI10_PATH, OPCAPS_PATH};
    for (int i = 0; i < 2; i++) {
        vg_runtime *rt = open_path(paths[i]);
        expect_no_ipc(rt);
        VG_CHECK(vg_runtime_close(rt));
        vg_probe_report r;
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        assert_int_equal(vg_backend_probe(paths[i], &r), VG_OK); /* vg info sees the same */
        assert_false(r.devices[0].caps & VG_CAP_IPC);
        assert_int_equal(r.abi_minor, (uint32_t)i);
    }
}

/* An ABI 1.2 plugin whose device claims IPC must provide the section. */
static void test_ipc_members_missing(void **state)
{
    (void)state;
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = IPCNULL_PATH;
    vg_runtime *rt = NULL;
    VG_CHECK_FAILS(vg_runtime_open(&o, &rt), VG_ERR_ABI,
                   "device reports IPC but mandatory member 'ipc_alloc' is NULL");
    assert_null(rt);
}

static vg_status poisoned_ipc_alloc(vg_bk_device *d, size_t n, void **out)
{
    (void)d, (void)n, (void)out;
    fail_msg("the core called ipc_alloc beyond a 1.1 table's struct_size");
    return VG_ERR_INTERNAL;
}

static vg_status poisoned_ipc_open(vg_bk_device *d, const vg_ipc_handle *h, void **out, size_t *n)
{
    (void)d, (void)h, (void)out, (void)n;
    fail_msg("the core called ipc_open beyond a 1.1 table's struct_size");
    return VG_ERR_INTERNAL;
}

static void test_ipc_section_of_the_stub(void **state)
{
    (void)state;
    const vg_backend_iface *stub = stub_table();
    vg_runtime *rt = NULL;
    /* cut to 1.1: the section is not there, whatever lies beyond struct_size */
    vg_backend_iface copy = *stub;
    copy.abi_minor = 1;
    copy.struct_size = (uint32_t)VG_BACKEND_IFACE_SIZE_1_1;
    copy.ipc_alloc = poisoned_ipc_alloc;
    copy.ipc_open = poisoned_ipc_open;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    expect_no_ipc(rt);
    VG_CHECK(vg_runtime_close(rt));
    /* a 1.2 table must be as large as 1.2 says */
    copy = *stub;
    copy.struct_size = (uint32_t)VG_BACKEND_IFACE_SIZE_1_1;
    VG_CHECK_FAILS(vg_runtime_open_iface(&copy, 0, &rt), VG_ERR_ABI,
                   "interface table too small for its version");
    /* a 1.2 table with IPC and a member missing */
    copy = *stub;
    copy.ipc_close = NULL;
    VG_CHECK_FAILS(vg_runtime_open_iface(&copy, 0, &rt), VG_ERR_ABI,
                   "device reports IPC but mandatory member 'ipc_close' is NULL");
    /* and without the capability, the members may be NULL */
    setenv("VG_STUB_CAPS", "noipc", 1);
    copy.ipc_alloc = NULL;
    copy.ipc_export = NULL;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    expect_no_ipc(rt);
    VG_CHECK(vg_runtime_close(rt));
    unsetenv("VG_STUB_CAPS");
    /* the whole table: a pool through the core */
    copy = *stub;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    assert_true(vg_runtime_caps(rt) & VG_CAP_IPC);
    vg_ipc_pool *p = NULL;
    VG_CHECK(vg_ipc_pool_create(rt, 1 << 16, &p));
    vg_ipc_desc d;
    void *ptr = NULL;
    int64_t shape[2] = {8, 8};
    VG_CHECK(vg_ipc_pool_alloc(p, VG_DTYPE_F32, 2, shape, &d, &ptr));
    assert_string_equal(d.backend, "kunlun_stub");
    assert_int_equal(d.bytes, 256);
    VG_CHECK(vg_ipc_pool_free(p, &d));
    VG_CHECK(vg_ipc_pool_destroy(p));
    VG_CHECK(vg_runtime_close(rt));
}

/* ---- ABI 1.3: native handles and backend options ------------------------------------------------ */

#define ABI12_PATH TEST_PLUGIN_DIR "/abi/libvg_abi12.so"

/* rt has no native handles: every vg_native.h call says so, naming the plugin's ABI. */
static void expect_no_native(vg_runtime *rt, const char *why)
{
    assert_false(vg_runtime_caps(rt) & (VG_CAP_NATIVE | VG_CAP_FOREIGN_CAPTURE));
    assert_false(vg_runtime_foreign_capture(rt));
    vg_native_device nd = {.struct_size = sizeof nd};
    VG_CHECK_FAILS(vg_runtime_native_device(rt, &nd), VG_ERR_UNSUPPORTED, why);
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(rt, &s));
    void *native = (void *)1;
    VG_CHECK_FAILS(vg_stream_native(s, &native), VG_ERR_UNSUPPORTED, why);
    assert_null(native);
    vg_stream *w = (vg_stream *)1;
    VG_CHECK_FAILS(vg_stream_wrap(rt, s, &w), VG_ERR_UNSUPPORTED, why);
    assert_null(w);
    float host[4];
    void *reg = (void *)1;
    VG_CHECK_FAILS(vg_mem_register(rt, host, sizeof host, &reg), VG_ERR_UNSUPPORTED, why);
    assert_null(reg);
    void *d = NULL;
    VG_CHECK(vg_mem_alloc(rt, 64, &d));
    vg_native_mem nm = {.struct_size = sizeof nm};
    VG_CHECK_FAILS(vg_mem_native(rt, d, &nm), VG_ERR_UNSUPPORTED, why);
    /* and the device still works */
    VG_CHECK(vg_op_fill(s, d, VG_DTYPE_F32, 4, 2.0));
    VG_CHECK(vg_stream_sync(s));
    VG_CHECK(vg_mem_free(rt, d));
    VG_CHECK(vg_stream_destroy(s));
}

/* An ABI 1.2 plugin whose device claims the 1.3 capabilities: loads, runs, has no native handles
 * (the core never reads past its struct_size: the fixture poisons what lies beyond), and takes
 * no backend options. */
static void test_abi12_plugin_has_no_native(void **state)
{
    (void)state;
    vg_runtime *rt = open_path(ABI12_PATH);
    expect_no_native(rt, "its plugin is ABI 1.2, native handles are ABI 1.3");
    assert_int_equal(vg_runtime_option_names(rt, NULL, 0), 0);
    VG_CHECK(vg_runtime_close(rt));
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = ABI12_PATH;
    vg_option opt = {"VG_CUDA_GEMM", "tiled"};
    o.options = &opt;
    o.num_options = 1;
    VG_CHECK_FAILS(vg_runtime_open(&o, &rt), VG_ERR_INVALID_ARG,
                   "unknown backend option 'VG_CUDA_GEMM': backend 'abi12' (ABI 1.2) takes no "
                   "options");
    assert_null(rt);
    vg_probe_report r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    assert_int_equal(vg_backend_probe(ABI12_PATH, &r), VG_OK);
    assert_int_equal(r.abi_minor, 2);
    assert_false(r.devices[0].caps & (VG_CAP_NATIVE | VG_CAP_FOREIGN_CAPTURE));
}

static vg_status poisoned_stream_native(vg_bk_device *d, vg_bk_stream *s, void **out)
{
    (void)d, (void)s, (void)out;
    fail_msg("the core called stream_native beyond a 1.2 table's struct_size");
    return VG_ERR_INTERNAL;
}

/* The stub's table cut to 1.2, to 1.3 without a member, and whole. */
static void test_native_section_of_the_stub(void **state)
{
    (void)state;
    const vg_backend_iface *stub = stub_table();
    vg_runtime *rt = NULL;
    vg_backend_iface copy = *stub;
    copy.abi_minor = 2;
    copy.struct_size = (uint32_t)VG_BACKEND_IFACE_SIZE_1_2;
    copy.stream_native = poisoned_stream_native;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    expect_no_native(rt, "native handles are ABI 1.3");
    VG_CHECK(vg_runtime_close(rt));
    copy = *stub;
    copy.struct_size = (uint32_t)VG_BACKEND_IFACE_SIZE_1_2;
    VG_CHECK_FAILS(vg_runtime_open_iface(&copy, 0, &rt), VG_ERR_ABI,
                   "interface table too small for its version");
    copy = *stub;
    copy.mem_register = NULL;
    VG_CHECK_FAILS(vg_runtime_open_iface(&copy, 0, &rt), VG_ERR_ABI,
                   "device reports native handles but mandatory member 'mem_register' is NULL");
    copy = *stub;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    assert_true(vg_runtime_caps(rt) & VG_CAP_NATIVE);
    assert_false(vg_runtime_foreign_capture(rt)); /* the stub records only its own commands */
    vg_native_device nd = {.struct_size = sizeof nd};
    VG_CHECK(vg_runtime_native_device(rt, &nd));
    assert_int_equal(nd.api, VG_NATIVE_HOST);
    assert_string_equal(vg_native_api_name(nd.api), "host");
    VG_CHECK(vg_runtime_close(rt));
}

/* Backend options reach the plugin through host->option while its device opens, win over the
 * environment, leave it the default, and are checked against the plugin's option_names. */
static vg_runtime *open_stub_with(const vg_option *opts, int n)
{
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = STUB_PLUGIN_PATH;
    o.options = opts;
    o.num_options = n;
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open(&o, &rt));
    return rt;
}

static int stub_has_graphs(const vg_option *opts, int n)
{
    vg_runtime *rt = open_stub_with(opts, n);
    int graphs = (vg_runtime_caps(rt) & VG_CAP_GRAPH) != 0;
    VG_CHECK(vg_runtime_close(rt));
    return graphs;
}

static void test_backend_options(void **state)
{
    (void)state;
    vg_option nograph = {"VG_STUB_CAPS", "nograph"}, plain = {"VG_STUB_CAPS", ""};
    assert_true(stub_has_graphs(NULL, 0));
    assert_false(stub_has_graphs(&nograph, 1)); /* the option reaches the backend */
    assert_true(stub_has_graphs(NULL, 0));      /* and only the runtime it was given to */
    setenv("VG_STUB_CAPS", "nograph", 1);
    assert_false(stub_has_graphs(NULL, 0)); /* the environment stays the default */
    assert_true(stub_has_graphs(&plain, 1)); /* an option wins over it */
    vg_option both[2] = {nograph, plain};
    assert_true(stub_has_graphs(both, 2)); /* the last one given wins */
    unsetenv("VG_STUB_CAPS");
    vg_runtime *rt = open_stub_with(NULL, 0);
    const char *names[16];
    int n = vg_runtime_option_names(rt, names, 16), caps = 0;
    assert_true(n >= 7 && n <= 16);
    for (int i = 0; i < n; i++) caps += strcmp(names[i], "VG_STUB_CAPS") == 0;
    assert_int_equal(caps, 1);
    VG_CHECK(vg_runtime_close(rt));
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = STUB_PLUGIN_PATH;
    vg_option bad = {"VG_STUB_NOPE", "1"};
    o.options = &bad;
    o.num_options = 1;
    VG_CHECK_FAILS(vg_runtime_open(&o, &rt), VG_ERR_INVALID_ARG,
                   "unknown backend option 'VG_STUB_NOPE' (backend 'kunlun_stub' knows: "
                   "VG_STUB_DEVICES, ");
    assert_null(rt);
    bad.name = "VG_STUB_CAPS", bad.value = NULL;
    VG_CHECK_FAILS(vg_runtime_open(&o, &rt), VG_ERR_INVALID_ARG, "backend option 0 has no value");
    o.options = NULL;
    VG_CHECK_FAILS(vg_runtime_open(&o, &rt), VG_ERR_INVALID_ARG, "1 backend options but the list "
                                                                 "is NULL");
    /* a caller built before the options were appended: its struct ends at `device` */
    vg_runtime_options old;
    vg_runtime_options_init(&old);
    old.backend = STUB_PLUGIN_PATH;
    old.struct_size = offsetof(vg_runtime_options, options);
    old.options = &bad; /* beyond its struct_size: never read */
    VG_CHECK(vg_runtime_open(&old, &rt));
    VG_CHECK(vg_runtime_close(rt));
}

/* ---- ABI 1.4: device-side loops --------------------------------------------------------------- */

static vg_status poisoned_loop_begin(vg_bk_device *d, vg_bk_stream *s, const int32_t *flag)
{
    (void)d, (void)s, (void)flag;
    fail_msg("the core called loop_capture_begin beyond an older table's struct_size");
    return VG_ERR_INTERNAL;
}

/* The loop members are optional: a table older than 1.4 (1.2, or 1.3 with its native section), or
 * one without a member, loses VG_CAP_GRAPH_LOOP (and vg_graph_loop_capture_begin refuses without
 * reaching the plugin). */
static void test_loop_section_of_the_stub(void **state)
{
    (void)state;
    const vg_backend_iface *stub = stub_table();
    vg_runtime *rt = NULL;
    vg_backend_iface copy = *stub;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    assert_true(vg_runtime_caps(rt) & VG_CAP_GRAPH_LOOP);
    VG_CHECK(vg_runtime_close(rt));
    for (int cut = 0; cut < 3; cut++) {
        copy = *stub;
        if (cut) { /* cut to 1.2 or 1.3: whatever lies beyond struct_size is never called */
            copy.abi_minor = cut == 1 ? 2 : 3;
            copy.struct_size = (uint32_t)(cut == 1 ? VG_BACKEND_IFACE_SIZE_1_2 : VG_BACKEND_IFACE_SIZE_1_3);
            copy.loop_capture_begin = poisoned_loop_begin;
        } else {
            copy.loop_capture_end = NULL;
        }
        VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
        assert_false(vg_runtime_caps(rt) & VG_CAP_GRAPH_LOOP);
        vg_stream *s = NULL;
        void *flag = NULL;
        VG_CHECK(vg_stream_create(rt, &s));
        VG_CHECK(vg_mem_alloc(rt, 4, &flag));
        VG_CHECK_FAILS(vg_graph_loop_capture_begin(s, flag), VG_ERR_UNSUPPORTED, "no device-side loops");
        VG_CHECK(vg_mem_free(rt, flag));
        VG_CHECK(vg_stream_destroy(s));
        VG_CHECK(vg_runtime_close(rt));
    }
}

/* The op list (vg_op_list.h) generates the ids: each keeps its ABI value and has a name of its own
 * (an unknown id has none). */
static void test_op_list_ids_and_names(void **state)
{
    (void)state;
    assert_int_equal(VG_OP_FILL, 0);
    assert_int_equal(VG_OP_GATHER_ROWS, 3);
    assert_int_equal(VG_OP_GATHER_WEIGHTED, 16);
    assert_int_equal(VG_OP_GEMM_RMSNORM_A, 19);
    assert_int_equal(VG_OP_LM_ADVANCE, 20);
    assert_int_equal(VG_OP_ROTARY_PAGED_ATTENTION, 21);
    assert_int_equal(VG_OP_GEMM_RMSNORM_A_UNIT, 22);
    for (int op = 0; op < VG_OP_COUNT_; op++) {
        const char *name = vg_op_name((vg_op_id)op);
        assert_non_null(name);
        for (int other = 0; other < op; other++) assert_string_not_equal(name, vg_op_name((vg_op_id)other));
    }
    assert_string_equal(vg_op_name(VG_OP_PAGED_ATTENTION), "paged_attention");
    assert_null(vg_op_name(VG_OP_COUNT_));
    assert_null(vg_op_name((vg_op_id)-1));
}

/* Every capability bit vg_types.h defines has a name (vg info prints them by it). */
static void test_cap_names(void **state)
{
    (void)state;
    const uint64_t caps[] = {VG_CAP_GRAPH, VG_CAP_GRAPH_UPDATE, VG_CAP_IPC, VG_CAP_PINNED_HOST,
                             VG_CAP_NATIVE, VG_CAP_FOREIGN_CAPTURE, VG_CAP_GRAPH_LOOP, VG_CAP_COMM,
                             VG_CAP_COMM_CAPTURE};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) assert_non_null(vg_cap_name(caps[i]));
    assert_string_equal(vg_cap_name(VG_CAP_FOREIGN_CAPTURE), "foreign_capture");
    assert_null(vg_cap_name(1ull << 63));
}

/* ---- ABI 1.5: communicators ------------------------------------------------------------------ */

static vg_status poisoned_comm_id_make(vg_bk_device *d, unsigned char *id)
{
    (void)d, (void)id;
    fail_msg("the core called comm_id_make beyond an older table's struct_size");
    return VG_ERR_INTERNAL;
}

/* The communicator members are optional: a table older than 1.5, or one without a member, loses
 * VG_CAP_COMM and VG_CAP_COMM_CAPTURE, and vg_comm_id_make refuses (a table cut to 1.4 without
 * reaching the plugin). A device without graphs keeps VG_CAP_COMM only. */
static void test_comm_section_of_the_stub(void **state)
{
    (void)state;
    const vg_backend_iface *stub = stub_table();
    vg_runtime *rt = NULL;
    vg_backend_iface copy = *stub;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    assert_true(vg_runtime_caps(rt) & VG_CAP_COMM);
    assert_true(vg_runtime_caps(rt) & VG_CAP_COMM_CAPTURE);
    VG_CHECK(vg_runtime_close(rt));
    for (int cut = 0; cut < 2; cut++) {
        copy = *stub;
        if (cut) { /* cut to 1.4: whatever lies beyond struct_size is never called */
            copy.abi_minor = 4;
            copy.struct_size = (uint32_t)VG_BACKEND_IFACE_SIZE_1_4;
            copy.comm_id_make = poisoned_comm_id_make;
        } else {
            copy.comm_all_gather = NULL;
        }
        VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
        assert_false(vg_runtime_caps(rt) & (VG_CAP_COMM | VG_CAP_COMM_CAPTURE));
        vg_comm_id id;
        VG_CHECK_FAILS(vg_comm_id_make(rt, &id), VG_ERR_UNSUPPORTED, "has no communicators");
        VG_CHECK(vg_runtime_close(rt));
    }
    setenv("VG_STUB_CAPS", "nograph", 1);
    copy = *stub;
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    unsetenv("VG_STUB_CAPS");
    assert_true(vg_runtime_caps(rt) & VG_CAP_COMM);
    assert_false(vg_runtime_caps(rt) & VG_CAP_COMM_CAPTURE);
    VG_CHECK(vg_runtime_close(rt));
}

int main(void)
{
    unsetenv("VG_BACKEND_PATH");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_list_ids_and_names),
        cmocka_unit_test(test_cap_names),
        cmocka_unit_test_setup(test_abi10_probe, reset_env),
        cmocka_unit_test_setup(test_abi10_op_support_is_derived, reset_env),
        cmocka_unit_test_setup(test_abi10_runs, reset_env),
        cmocka_unit_test_setup(test_abi10_capture, reset_env),
        cmocka_unit_test_setup(test_op_caps_wins_over_mask, reset_env),
        cmocka_unit_test_setup(test_op_caps_asked_once_per_op, reset_env),
        cmocka_unit_test_setup(test_op_ids_past_64, reset_env),
        cmocka_unit_test_setup(test_op_caps_probe, reset_env),
        cmocka_unit_test_setup(test_open_iface_validates, reset_env),
        cmocka_unit_test_setup(test_open_iface_as_abi10, reset_env),
        cmocka_unit_test_setup(test_op_table_v3_plugin, reset_env),
        cmocka_unit_test_setup(test_op_table_v4_plugin, reset_env),
        cmocka_unit_test_setup(test_op_table_v5_plugin, reset_env),
        cmocka_unit_test_setup(test_op_table_v6_plugin, reset_env),
        cmocka_unit_test_setup(test_op_table_v8_plugin, reset_env),
        cmocka_unit_test_setup(test_op_table_v9_plugin, reset_env),
        cmocka_unit_test_setup(test_op_table_v7_plugin, reset_env),
        cmocka_unit_test_setup(test_op_table_version_is_checked, reset_env),
        cmocka_unit_test_setup(test_ipc_claimed_by_old_plugins, reset_env),
        cmocka_unit_test_setup(test_ipc_members_missing, reset_env),
        cmocka_unit_test_setup(test_ipc_section_of_the_stub, reset_env),
        cmocka_unit_test_setup(test_abi12_plugin_has_no_native, reset_env),
        cmocka_unit_test_setup(test_native_section_of_the_stub, reset_env),
        cmocka_unit_test_setup(test_backend_options, reset_env),
        cmocka_unit_test_setup(test_loop_section_of_the_stub, reset_env),
        cmocka_unit_test_setup(test_comm_section_of_the_stub, reset_env),
    };
    return cmocka_run_group_tests_name("abi", tests, NULL, NULL);
}
