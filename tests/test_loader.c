/* Loader: resolution order and every documented failure mode (docs/plugin-abi.md, "Loading"). */
#include <stdlib.h>

#include "test_util.h"

#ifndef TEST_PLUGIN_DIR
#error "TEST_PLUGIN_DIR must point at the built test plugins"
#endif
#ifndef STUB_PLUGIN_PATH
#error "STUB_PLUGIN_PATH must point at libvg_kunlun_stub.so"
#endif

static vg_status open_named(const char *backend, vg_runtime **rt)
{
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = backend;
    return vg_runtime_open(&o, rt);
}

static int reset_env(void **state)
{
    (void)state;
    unsetenv("VG_BACKEND");
    unsetenv("VG_BACKEND_PATH");
    unsetenv("VG_STUB_DEVICES");
    return 0;
}

static void expect_failure(const char *backend, vg_status want, const char *needle)
{
    vg_runtime *rt = (vg_runtime *)0x1;
    VG_CHECK_FAILS(open_named(backend, &rt), want, needle);
    assert_null(rt);
}

static void test_name_found_in_build_tree(void **state)
{
    (void)state;
    vg_runtime *rt = NULL;
    VG_CHECK(open_named("kunlun_stub", &rt));
    assert_string_equal(vg_runtime_backend_name(rt), "kunlun_stub");
    assert_non_null(strstr(vg_runtime_plugin_path(rt), "libvg_kunlun_stub.so"));
    VG_CHECK(vg_runtime_close(rt));
}

static void test_env_var_selects_backend(void **state)
{
    (void)state;
    vg_runtime *rt = NULL;
    setenv("VG_BACKEND", "kunlun_stub", 1);
    VG_CHECK(vg_runtime_open(NULL, &rt));
    assert_string_equal(vg_runtime_backend_name(rt), "kunlun_stub");
    VG_CHECK(vg_runtime_close(rt));
}

static void test_absolute_path(void **state)
{
    (void)state;
    vg_runtime *rt = NULL;
    VG_CHECK(open_named(STUB_PLUGIN_PATH, &rt));
    assert_string_equal(vg_runtime_plugin_path(rt), STUB_PLUGIN_PATH);
    VG_CHECK(vg_runtime_close(rt));
}

static void test_backend_path_order(void **state)
{
    (void)state;
    vg_runtime *rt = NULL;
    setenv("VG_BACKEND_PATH", TEST_PLUGIN_DIR "/first:" TEST_PLUGIN_DIR "/second", 1);
    VG_CHECK(open_named("ordered", &rt));
    assert_string_equal(vg_runtime_backend_name(rt), "ordered-first");
    VG_CHECK(vg_runtime_close(rt));
    setenv("VG_BACKEND_PATH", TEST_PLUGIN_DIR "/second:" TEST_PLUGIN_DIR "/first", 1);
    VG_CHECK(open_named("ordered", &rt));
    assert_string_equal(vg_runtime_backend_name(rt), "ordered-second");
    VG_CHECK(vg_runtime_close(rt));
}

static void test_backend_path_precedes_build_tree(void **state)
{
    (void)state;
    vg_runtime *rt = NULL;
    /* shadow/ holds a plugin named kunlun_stub that is really the "ordered" test plugin */
    setenv("VG_BACKEND_PATH", TEST_PLUGIN_DIR "/shadow", 1);
    VG_CHECK(open_named("kunlun_stub", &rt));
    assert_string_equal(vg_runtime_backend_name(rt), "shadow");
    VG_CHECK(vg_runtime_close(rt));
}

static void test_broken_candidate_falls_through(void **state)
{
    (void)state;
    vg_runtime *rt = NULL;
    setenv("VG_BACKEND_PATH", TEST_PLUGIN_DIR "/garbage:" TEST_PLUGIN_DIR "/second", 1);
    VG_CHECK(open_named("ordered", &rt));
    assert_string_equal(vg_runtime_backend_name(rt), "ordered-second");
    VG_CHECK(vg_runtime_close(rt));
}

static void test_not_found_names_every_candidate(void **state)
{
    (void)state;
    setenv("VG_BACKEND_PATH", TEST_PLUGIN_DIR "/first:" TEST_PLUGIN_DIR "/second", 1);
    expect_failure("nonexistent", VG_ERR_NOT_FOUND, "backend 'nonexistent' could not be loaded");
    assert_non_null(strstr(vg_last_error(), TEST_PLUGIN_DIR "/first/libvg_nonexistent.so: not found"));
    assert_non_null(strstr(vg_last_error(), TEST_PLUGIN_DIR "/second/libvg_nonexistent.so: not found"));
    expect_failure(TEST_PLUGIN_DIR "/no/such/file.so", VG_ERR_NOT_FOUND, "file.so: not found");
}

static void test_invalid_name(void **state)
{
    (void)state;
    expect_failure("bad name!", VG_ERR_INVALID_ARG, "not valid");
}

static void test_dlerror_text(void **state)
{
    (void)state;
    expect_failure(TEST_PLUGIN_DIR "/garbage/libvg_ordered.so", VG_ERR_LOAD, "dlopen failed");
    expect_failure(TEST_PLUGIN_DIR "/broken/libvg_undefined.so", VG_ERR_LOAD,
                   "vg_test_symbol_that_does_not_exist");
}

static void test_missing_entry_symbol(void **state)
{
    (void)state;
    expect_failure(TEST_PLUGIN_DIR "/broken/libvg_nosym.so", VG_ERR_LOAD,
                   "missing entry symbol 'vg_backend_query'");
}

static void test_abi_major_mismatch(void **state)
{
    (void)state;
    expect_failure(TEST_PLUGIN_DIR "/broken/libvg_abimajor.so", VG_ERR_ABI, "ABI major mismatch");
}

static void test_table_too_small(void **state)
{
    (void)state;
    expect_failure(TEST_PLUGIN_DIR "/broken/libvg_small.so", VG_ERR_ABI,
                   "interface table too small for its version: struct_size 64");
}

static void test_null_mandatory_member(void **state)
{
    (void)state;
    expect_failure(TEST_PLUGIN_DIR "/broken/libvg_nullmember.so", VG_ERR_ABI,
                   "mandatory member 'mem_alloc' is NULL");
    expect_failure(TEST_PLUGIN_DIR "/broken/libvg_graphnull.so", VG_ERR_ABI,
                   "graph support but mandatory member 'capture_begin' is NULL");
}

static void test_entry_returns_null(void **state)
{
    (void)state;
    expect_failure(TEST_PLUGIN_DIR "/broken/libvg_nulltable.so", VG_ERR_ABI, "returned NULL");
}

static void test_no_device(void **state)
{
    (void)state;
    expect_failure(TEST_PLUGIN_DIR "/broken/libvg_nodevice.so", VG_ERR_NO_DEVICE, "no device");
    expect_failure(TEST_PLUGIN_DIR "/broken/libvg_openfail.so", VG_ERR_DEVICE,
                   "opening the default device failed: test plugin: simulated hardware fault");
}

static void test_auto_selection_order(void **state)
{
    (void)state;
    vg_runtime *rt = NULL;
    /* auto1: cuda without devices, hip failing to open: kunlun_stub (build tree) wins */
    setenv("VG_BACKEND_PATH", TEST_PLUGIN_DIR "/auto1", 1);
    VG_CHECK(vg_runtime_open(NULL, &rt));
    assert_string_equal(vg_runtime_backend_name(rt), "kunlun_stub");
    VG_CHECK(vg_runtime_close(rt));
    /* auto2: cuda without devices, a working hip: hip wins over kunlun_stub */
    setenv("VG_BACKEND_PATH", TEST_PLUGIN_DIR "/auto2", 1);
    VG_CHECK(vg_runtime_open(NULL, &rt));
    assert_string_equal(vg_runtime_backend_name(rt), "hip");
    VG_CHECK(vg_runtime_close(rt));
}

static void test_auto_selection_all_fail(void **state)
{
    (void)state;
    vg_runtime *rt = NULL;
    setenv("VG_BACKEND_PATH", TEST_PLUGIN_DIR "/auto1", 1);
    setenv("VG_STUB_DEVICES", "0", 1);
    VG_CHECK_FAILS(vg_runtime_open(NULL, &rt), VG_ERR_NO_DEVICE, "no backend usable");
    assert_non_null(strstr(vg_last_error(), "[cuda]"));
    assert_non_null(strstr(vg_last_error(), "[hip]"));
    assert_non_null(strstr(vg_last_error(), "simulated hardware fault"));
    assert_non_null(strstr(vg_last_error(), "[kunlun_stub]"));
}

static void test_probe_reports(void **state)
{
    (void)state;
    vg_probe_report r;
    assert_int_equal(vg_backend_probe("kunlun_stub", &r), VG_OK);
    assert_true(r.loaded);
    assert_int_equal(r.device_count, 1);
    assert_true(r.devices[0].caps & VG_CAP_GRAPH);
    assert_int_equal(vg_backend_probe(TEST_PLUGIN_DIR "/broken/libvg_nodevice.so", &r),
                     VG_ERR_NO_DEVICE);
    assert_true(r.loaded);
    assert_int_equal(vg_backend_probe("nonexistent", &r), VG_ERR_NOT_FOUND);
    assert_false(r.loaded);
    assert_non_null(strstr(r.error, "libvg_nonexistent.so: not found"));
}

static void test_open_iface_validates(void **state)
{
    (void)state;
    vg_runtime *base = NULL, *rt = NULL;
    VG_CHECK(open_named("kunlun_stub", &base));
    vg_backend_iface copy = *vg_runtime_iface(base);
    copy.stream_sync = NULL;
    VG_CHECK_FAILS(vg_runtime_open_iface(&copy, 0, &rt), VG_ERR_ABI, "'stream_sync' is NULL");
    copy = *vg_runtime_iface(base);
    copy.abi_major = 0;
    VG_CHECK_FAILS(vg_runtime_open_iface(&copy, 0, &rt), VG_ERR_ABI, "ABI major mismatch");
    copy = *vg_runtime_iface(base);
    VG_CHECK(vg_runtime_open_iface(&copy, 0, &rt));
    VG_CHECK(vg_runtime_close(rt));
    VG_CHECK(vg_runtime_close(base));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_name_found_in_build_tree, reset_env),
        cmocka_unit_test_setup(test_env_var_selects_backend, reset_env),
        cmocka_unit_test_setup(test_absolute_path, reset_env),
        cmocka_unit_test_setup(test_backend_path_order, reset_env),
        cmocka_unit_test_setup(test_backend_path_precedes_build_tree, reset_env),
        cmocka_unit_test_setup(test_broken_candidate_falls_through, reset_env),
        cmocka_unit_test_setup(test_not_found_names_every_candidate, reset_env),
        cmocka_unit_test_setup(test_invalid_name, reset_env),
        cmocka_unit_test_setup(test_dlerror_text, reset_env),
        cmocka_unit_test_setup(test_missing_entry_symbol, reset_env),
        cmocka_unit_test_setup(test_abi_major_mismatch, reset_env),
        cmocka_unit_test_setup(test_table_too_small, reset_env),
        cmocka_unit_test_setup(test_null_mandatory_member, reset_env),
        cmocka_unit_test_setup(test_entry_returns_null, reset_env),
        cmocka_unit_test_setup(test_no_device, reset_env),
        cmocka_unit_test_setup(test_auto_selection_order, reset_env),
        cmocka_unit_test_setup(test_auto_selection_all_fail, reset_env),
        cmocka_unit_test_setup(test_probe_reports, reset_env),
        cmocka_unit_test_setup(test_open_iface_validates, reset_env),
    };
    return cmocka_run_group_tests_name("loader", tests, NULL, NULL);
}
