/* SPDX-License-Identifier: Apache-2.0 */
/* safetensors: every class of hostile header gives a clear error naming file and tensor. */
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"
#include "vg/vg_safetensors.h"

/* Build a file image: 8-byte length, the header text, then `data` bytes of zeros. */
static unsigned char *image(const char *header, size_t data, size_t *size)
{
    size_t h = strlen(header);
    *size = 8 + h + data;
    unsigned char *b = calloc(1, *size);
    assert_non_null(b);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    return b;
}

static void expect(const char *header, size_t data, vg_status want, const char *needle)
{
    size_t n;
    unsigned char *b = image(header, data, &n);
    vg_st_file *f = (vg_st_file *)0x1;
    VG_CHECK_FAILS(vg_st_open_memory(b, n, "bad.safetensors", &f), want, needle);
    assert_null(f);
    assert_non_null(strstr(vg_last_error(), "bad.safetensors"));
    free(b);
}

static void test_valid_file(void **state)
{
    (void)state;
    size_t n;
    unsigned char *b = image("{\"__metadata__\":{\"format\":\"pt\"},"
                             "\"b\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[16,28]},"
                             "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                             "\"e\":{\"dtype\":\"F64\",\"shape\":[0,5],\"data_offsets\":[28,28]}}",
                             28, &n);
    vg_st_file *f = NULL;
    VG_CHECK(vg_st_open_memory(b, n, "ok.safetensors", &f));
    assert_int_equal(vg_st_count(f), 3);
    const vg_st_tensor *t = vg_st_find(f, "b");
    assert_non_null(t);
    assert_int_equal(t->dtype, VG_DTYPE_BF16);
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[1], 3);
    assert_int_equal(t->nbytes, 12);
    assert_int_equal(vg_st_find(f, "e")->dtype, VG_DTYPE_COUNT_); /* known to the format, not computed with */
    assert_null(vg_st_find(f, "zz"));
    vg_st_close(f);
    free(b);
}

static void test_header_beyond_file(void **state)
{
    (void)state;
    unsigned char b[16] = {0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}'};
    vg_st_file *f = NULL;
    VG_CHECK_FAILS(vg_st_open_memory(b, sizeof b, "bad.safetensors", &f), VG_ERR_FORMAT,
                   "header size 65535 is beyond the file (16 bytes)");
    VG_CHECK_FAILS(vg_st_open_memory(b, 5, "bad.safetensors", &f), VG_ERR_FORMAT, "too short");
}

static void test_not_json(void **state)
{
    (void)state;
    expect("{\"a\": [", 0, VG_ERR_FORMAT, "header is not a JSON object");
    expect("[1, 2]", 0, VG_ERR_FORMAT, "header is not a JSON object");
    expect("{\"a\": 5}", 0, VG_ERR_FORMAT, "tensor 'a': entry is not a JSON object");
}

static void test_overflowing_shape(void **state)
{
    (void)state;
    expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}", 4,
           VG_ERR_FORMAT, "tensor 'a': shape product overflows");
    expect("{\"a\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,4]}}", 4,
           VG_ERR_FORMAT, "tensor 'a':");
    expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, VG_ERR_FORMAT,
           "tensor 'a': shape[0] is not a non-negative integer");
    expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, VG_ERR_FORMAT,
           "shape[0] is not a non-negative integer");
    expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
           VG_ERR_FORMAT, "9 dimensions");
}

static void test_offsets_outside_or_wrong(void **state)
{
    (void)state;
    expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, VG_ERR_FORMAT,
           "tensor 'a': data_offsets [0, 16] outside the data buffer of 8 bytes");
    expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[12,4]}}", 16, VG_ERR_FORMAT,
           "outside the data buffer");
    expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,12]}}", 16, VG_ERR_FORMAT,
           "tensor 'a': 12 bytes at data_offsets, but dtype F32 x shape needs 16");
    expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0]}}", 16, VG_ERR_FORMAT,
           "data_offsets must be two non-negative integers");
    expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":\"0,16\"}}", 16, VG_ERR_FORMAT,
           "needs string 'dtype', array 'shape' and array 'data_offsets'");
}

static void test_overlapping(void **state)
{
    (void)state;
    expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
           "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
           16, VG_ERR_FORMAT, "overlaps tensor");
}

static void test_duplicate_names(void **state)
{
    (void)state;
    expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
           "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
           8, VG_ERR_FORMAT, "duplicate tensor name 'a'");
}

static void test_unknown_dtype(void **state)
{
    (void)state;
    expect("{\"a\":{\"dtype\":\"Q4_K\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, VG_ERR_FORMAT,
           "tensor 'a': unknown dtype 'Q4_K'");
    expect("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, VG_ERR_FORMAT,
           "empty name");
    expect("{\"__metadata__\": 3}", 0, VG_ERR_FORMAT, "__metadata__ is not a JSON object");
}

static void test_files(void **state)
{
    (void)state;
    vg_st_file *f = NULL;
    VG_CHECK_FAILS(vg_st_open("/nonexistent/x.safetensors", &f), VG_ERR_NOT_FOUND,
                   "/nonexistent/x.safetensors: cannot open");
    VG_CHECK_FAILS(vg_st_open("/tmp", &f), VG_ERR_IO, "not a regular file");
    /* the writer's output reads back, data aligned to 8 bytes */
    char path[] = "/tmp/vg_st_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t ids[2] = {7, -8}, shape_x[2] = {2, 3}, shape_i[1] = {2};
    vg_st_write_tensor t[2] = {{"x", VG_DTYPE_F32, 2, shape_x, x}, {"ids", VG_DTYPE_I64, 1, shape_i, ids}};
    VG_CHECK(vg_st_write(path, t, 2));
    VG_CHECK(vg_st_open(path, &f));
    const vg_st_tensor *rx = vg_st_find(f, "x"), *ri = vg_st_find(f, "ids");
    assert_non_null(rx);
    assert_non_null(ri);
    assert_memory_equal(rx->data, x, sizeof x);
    assert_memory_equal(ri->data, ids, sizeof ids);
    assert_int_equal(((uintptr_t)rx->data) % 8, 0);
    vg_st_close(f);
    vg_st_write_tensor dup[2] = {t[0], t[0]};
    VG_CHECK_FAILS(vg_st_write(path, dup, 2), VG_ERR_INVALID_ARG, "duplicate");
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file),        cmocka_unit_test(test_header_beyond_file),
        cmocka_unit_test(test_not_json),          cmocka_unit_test(test_overflowing_shape),
        cmocka_unit_test(test_offsets_outside_or_wrong), cmocka_unit_test(test_overlapping),
        cmocka_unit_test(test_duplicate_names),   cmocka_unit_test(test_unknown_dtype),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests_name("safetensors", tests, NULL, NULL);
}
