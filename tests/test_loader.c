/* SPDX-License-Identifier: Apache-2.0 */
/* Loader: resolution order, every documented failure mode (docs/plugin-abi.md, "Loading") and
 * auto-selection by score. ABI compatibility and vg_runtime_open_iface: test_abi.c. */
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
    /* a path that exists but is no plugin file says what it is, not "not found" */
    expect_failure("/tmp", VG_ERR_NOT_FOUND, "/tmp: is a directory, not a plugin file");
    expect_failure("/dev/null", VG_ERR_NOT_FOUND, "/dev/null: is a device node, not a plugin file");
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
    /* auto1: cuda and opencl without devices, hip failing to open: kunlun_stub (build tree) wins */
    setenv("VG_BACKEND_PATH", TEST_PLUGIN_DIR "/auto1", 1);
    VG_CHECK(vg_runtime_open(NULL, &rt));
    assert_string_equal(vg_runtime_backend_name(rt), "kunlun_stub");
    VG_CHECK(vg_runtime_close(rt));
    /* auto2: cuda and opencl without devices, a working hip: hip wins over kunlun_stub */
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
    assert_non_null(strstr(vg_last_error(), "[opencl]"));
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

/* ---- auto-selection by score (docs/adding-a-backend.md, "Auto-selection") -------------------- *
 * Every directory below is put after gpuless/, whose cuda and hip have no device: the builtins
 * resolve there first, so a real GPU on the test machine cannot change the outcome. */

#define GPULESS TEST_PLUGIN_DIR "/gpuless:"

static const char *auto_open(const char *path)
{
    static char name[64];
    vg_runtime *rt = NULL;
    setenv("VG_BACKEND_PATH", path, 1);
    VG_CHECK(vg_runtime_open(NULL, &rt));
    snprintf(name, sizeof name, "%s", vg_runtime_backend_name(rt));
    VG_CHECK(vg_runtime_close(rt));
    return name;
}

static void test_auto_highest_score_wins(void **state)
{
    (void)state;
    /* vendorx 950 beats fakegpu 900, vendory 600 and kunlun_stub 10 */
    assert_string_equal(auto_open(GPULESS TEST_PLUGIN_DIR "/autoscore"), "vendorx");
    /* the same plugins, the directory later on the path: still the score decides */
    assert_string_equal(auto_open(GPULESS TEST_PLUGIN_DIR "/autoplain:" TEST_PLUGIN_DIR "/autoscore"),
                        "vendorx");
}

static void test_auto_no_score_beats_stub(void **state)
{
    (void)state;
    /* a plugin without score() counts 500: more than kunlun_stub's 10 */
    assert_string_equal(auto_open(GPULESS TEST_PLUGIN_DIR "/autoplain"), "plain");
    /* a plugin that reports less than kunlun_stub yields to it */
    assert_string_equal(auto_open(GPULESS TEST_PLUGIN_DIR "/autolow"), "kunlun_stub");
}

static void test_auto_ties_go_to_the_earlier_candidate(void **state)
{
    (void)state;
    assert_string_equal(auto_open(GPULESS TEST_PLUGIN_DIR "/tiea:" TEST_PLUGIN_DIR "/tieb"), "tiea");
    assert_string_equal(auto_open(GPULESS TEST_PLUGIN_DIR "/tieb:" TEST_PLUGIN_DIR "/tiea"), "tieb");
}

static void test_auto_candidates_listed(void **state)
{
    (void)state;
    setenv("VG_BACKEND_PATH", GPULESS TEST_PLUGIN_DIR "/autoscore", 1);
    const char *names[32];
    int n = vg_backend_candidates(names, 32);
    /* the builtins first, in their order, then the files found on the path: autoscore's three;
     * gpuless/ holds only builtin names, which are candidates once, as builtins */
    assert_int_equal(n, vg_backend_builtin_count() + 3);
    for (int i = 0; i < vg_backend_builtin_count(); i++)
        assert_string_equal(names[i], vg_backend_builtin_name(i));
    const char *want[] = {"/autoscore/libvg_vendorx.so", "/autoscore/libvg_vendory.so",
                          "/autoscore/libvg_fakegpu.so"};
    for (int w = 0; w < 3; w++) {
        int found = 0;
        for (int i = vg_backend_builtin_count(); i < n; i++) found += strstr(names[i], want[w]) != NULL;
        if (found != 1) print_message("candidate %s listed %d times\n", want[w], found);
        assert_int_equal(found, 1);
    }
    for (int i = vg_backend_builtin_count(); i < n; i++) assert_null(strstr(names[i], "/gpuless/"));
    /* max smaller than the list: the count is still the whole list's */
    assert_int_equal(vg_backend_candidates(names, 1), n);
    /* no path: the builtins only */
    unsetenv("VG_BACKEND_PATH");
    assert_int_equal(vg_backend_candidates(names, 32), vg_backend_builtin_count());
}

static void test_probe_reports_score(void **state)
{
    (void)state;
    vg_probe_report r;
    const struct { const char *what; int32_t score; } cases[] = {
        {TEST_PLUGIN_DIR "/autoscore/libvg_vendorx.so", 950},
        {TEST_PLUGIN_DIR "/autoscore/libvg_fakegpu.so", 900},
        {TEST_PLUGIN_DIR "/autoplain/libvg_plain.so", 500},
        {TEST_PLUGIN_DIR "/autolow/libvg_low.so", 5},
        {"kunlun_stub", 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        assert_int_equal(vg_backend_probe(cases[i].what, &r), VG_OK);
        if (r.score != cases[i].score)
            print_message("%s: score %d, wanted %d\n", cases[i].what, r.score, cases[i].score);
        assert_int_equal(r.score, cases[i].score);
    }
}

static char g_log[1 << 16];
static void collect_log(vg_log_level level, const char *msg, void *user)
{
    (void)level, (void)user;
    size_t used = strlen(g_log);
    snprintf(g_log + used, sizeof g_log - used, "%s\n", msg);
}

static void test_auto_skips_broken_plugins(void **state)
{
    (void)state;
    /* garbage/ (not an ELF file) and broken/ (one plugin per loader failure) on the path, then a
     * plugin that works: every broken one is refused, logged, and skipped */
    g_log[0] = '\0';
    vg_log_level old = vg_log_get_level();
    vg_log_set_level(VG_LOG_INFO);
    vg_log_set_callback(collect_log, NULL);
    const char *got = auto_open(GPULESS TEST_PLUGIN_DIR "/garbage:" TEST_PLUGIN_DIR "/broken:"
                                TEST_PLUGIN_DIR "/autobroken");
    vg_log_set_callback(NULL, NULL);
    vg_log_set_level(old);
    assert_string_equal(got, "plain-survivor");
    const char *refused[] = {"garbage/libvg_ordered.so", "broken/libvg_nosym.so",
                             "broken/libvg_abimajor.so", "broken/libvg_nodevice.so",
                             "broken/libvg_openfail.so", "autobroken/libvg_nodev.so"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        if (!strstr(g_log, refused[i])) print_message("no log line names %s:\n%s", refused[i], g_log);
        assert_non_null(strstr(g_log, refused[i]));
    }
}

static void test_auto_all_refused_lists_each(void **state)
{
    (void)state;
    vg_runtime *rt = (vg_runtime *)0x1;
    setenv("VG_BACKEND_PATH", GPULESS TEST_PLUGIN_DIR "/garbage:" TEST_PLUGIN_DIR "/broken", 1);
    setenv("VG_STUB_DEVICES", "0", 1);
    VG_CHECK_FAILS(vg_runtime_open(NULL, &rt), VG_ERR_NO_DEVICE, "no backend usable");
    assert_null(rt);
    const char *needles[] = {"[kunlun_stub]", "libvg_ordered.so", "dlopen failed",
                             "libvg_nosym.so", "missing entry symbol", "libvg_abimajor.so",
                             "ABI major mismatch", "libvg_small.so", "too small",
                             "libvg_openfail.so", "simulated hardware fault"};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++) {
        if (!strstr(vg_last_error(), needles[i]))
            print_message("'%s' missing from: %s\n", needles[i], vg_last_error());
        assert_non_null(strstr(vg_last_error(), needles[i]));
    }
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
        cmocka_unit_test_setup(test_auto_highest_score_wins, reset_env),
        cmocka_unit_test_setup(test_auto_no_score_beats_stub, reset_env),
        cmocka_unit_test_setup(test_auto_ties_go_to_the_earlier_candidate, reset_env),
        cmocka_unit_test_setup(test_auto_candidates_listed, reset_env),
        cmocka_unit_test_setup(test_probe_reports_score, reset_env),
        cmocka_unit_test_setup(test_auto_skips_broken_plugins, reset_env),
        cmocka_unit_test_setup(test_auto_all_refused_lists_each, reset_env),
    };
    return cmocka_run_group_tests_name("loader", tests, NULL, NULL);
}
