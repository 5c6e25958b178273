/* SPDX-License-Identifier: Apache-2.0 */
/* Loading broken checkpoints, for both model families (the language model, the Qwen2.5-VL and
 * Qwen3-VL vision towers), on kunlun_stub. Each case copies a fixture into a fresh folder and
 * breaks it in one way:
 *   - a NaN or an infinity in one tensor (F32, BF16 and F16 files, single and sharded), or a
 *     finite F32 value beyond F16's range loaded as F16: refused, naming the file, the tensor
 *     and the element;
 *   - config.json describing fewer layers or blocks than the checkpoint holds, or a tensor no
 *     member of config.json accounts for: refused, naming them (the first few and the count);
 *   - a FIFO, a directory or a device in place of a weights file, a shard, config.json or the
 *     index: refused at once (an alarm turns a hang into a failure);
 *   - a shard name in the index that is not a plain file name (a path, a hidden or empty name):
 *     refused, even where the file it names exists;
 *   - the messages for a head count that does not divide hidden_size, a model path that does
 *     not exist, and a truncated config.json (one message, whichever function reads it). */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "vg/vg_half.h"
#include "vg/vg_lm.h"
#include "vg/vg_safetensors.h"
#include "vg/vg_vit.h"

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must point at tests/data"
#endif
#define QWEN2 TEST_DATA_DIR "/qwen2_tiny/model"
#define QWEN2_SHARDED TEST_DATA_DIR "/qwen2_tiny_bf16_sharded/model"
#define QWEN3 TEST_DATA_DIR "/qwen3_tiny/model"
#define VIT TEST_DATA_DIR "/qwen2_5_vl_tiny/model"
#define VIT3 TEST_DATA_DIR "/qwen3_vl_tiny/model"

static vg_runtime *g_rt;
static char g_dir[256]; /* the current case's model folder */

/* ---- making broken copies ------------------------------------------------------------------- */

typedef enum { POISON_NONE, POISON_NAN, POISON_PINF, POISON_NINF, POISON_VALUE } poison_kind;

/* How a copy differs from its fixture. */
typedef struct edit {
    vg_dtype dtype;           /* F32 tensors are written in this dtype (0: as they are) */
    const char *poison;       /* this tensor's element `at` becomes... */
    int64_t at;
    poison_kind kind;         /* ...NaN, ±infinity, or `value` */
    float value;
    const char *extra;        /* a copy of tensor `extra_of` under this name is added */
    const char *extra_of;
} edit;

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) rm_dir(path);
        else unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static int setup_dir(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/vg_model_load_XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    return 0;
}

static int teardown_dir(void **state)
{
    (void)state;
    rm_dir(g_dir);
    return 0;
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_true(in && out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* The bits of a non-finite value (or of `value`) in dtype dt, written at p. */
static void put_value(void *p, vg_dtype dt, const edit *e)
{
    float v = e->kind == POISON_NAN ? NAN : e->kind == POISON_PINF ? INFINITY
            : e->kind == POISON_NINF ? -INFINITY : e->value;
    if (dt == VG_DTYPE_F32) {
        memcpy(p, &v, 4);
        return;
    }
    uint16_t h = dt == VG_DTYPE_BF16 ? vg_f32_to_bf16(v) : vg_f32_to_f16(v);
    if (e->kind == POISON_NAN) h = dt == VG_DTYPE_BF16 ? 0x7fc0 : 0x7e00; /* quiet NaNs */
    memcpy(p, &h, 2);
}

/* Rewrite one safetensors file of the fixture into the copy, with the edits. */
static void copy_weights(const char *from, const char *to, const edit *e, int *poisoned)
{
    vg_st_file *f = NULL;
    VG_CHECK(vg_st_open(from, &f));
    int n = vg_st_count(f), m = 0;
    vg_st_write_tensor *t = calloc((size_t)n + 1, sizeof *t);
    void **data = calloc((size_t)n + 1, sizeof *data);
    assert_true(t && data);
    for (int i = 0; i < n; i++) {
        const vg_st_tensor *s = vg_st_at(f, i);
        vg_dtype dt = s->dtype == VG_DTYPE_F32 && e->dtype ? e->dtype : s->dtype;
        size_t es = vg_dtype_size(dt);
        data[i] = malloc(s->numel * es + 1);
        assert_non_null(data[i]);
        if (dt == s->dtype) {
            memcpy(data[i], s->data, s->nbytes);
        } else {
            for (uint64_t k = 0; k < s->numel; k++) {
                float v;
                memcpy(&v, (const char *)s->data + 4 * k, 4);
                uint16_t h = dt == VG_DTYPE_BF16 ? vg_f32_to_bf16(v) : vg_f32_to_f16(v);
                memcpy((char *)data[i] + 2 * k, &h, 2);
            }
        }
        if (e->poison && !strcmp(s->name, e->poison)) {
            assert_true((uint64_t)e->at < s->numel);
            put_value((char *)data[i] + (size_t)e->at * es, dt, e);
            (*poisoned)++;
        }
        t[m++] = (vg_st_write_tensor){s->name, dt, s->ndim, s->shape, data[i]};
        if (e->extra && !strcmp(s->name, e->extra_of)) {
            t[m] = t[m - 1];
            t[m++].name = e->extra;
        }
    }
    VG_CHECK(vg_st_write(to, t, m));
    for (int i = 0; i < n; i++) free(data[i]);
    free(data);
    free(t);
    vg_st_close(f);
}

/* Copy the fixture folder `from` into g_dir with the edits (NULL: none). */
static void copy_model(const char *from, const edit *e)
{
    static const edit none = {0};
    if (!e) e = &none;
    DIR *d = opendir(from);
    assert_non_null(d);
    struct dirent *de;
    int poisoned = 0, extra = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char src[512], dst[512];
        snprintf(src, sizeof src, "%s/%s", from, de->d_name);
        snprintf(dst, sizeof dst, "%s/%s", g_dir, de->d_name);
        size_t len = strlen(de->d_name);
        if (len > 12 && !strcmp(de->d_name + len - 12, ".safetensors")) {
            vg_st_file *f = NULL;
            VG_CHECK(vg_st_open(src, &f));
            if (e->extra_of && vg_st_find(f, e->extra_of)) extra++;
            vg_st_close(f);
            copy_weights(src, dst, e, &poisoned);
        } else {
            copy_file(src, dst);
        }
    }
    closedir(d);
    assert_int_equal(poisoned, e->poison ? 1 : 0);
    assert_int_equal(extra, e->extra_of ? 1 : 0);
}

static void write_text(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The JSON document of the copy's file `name`, parsed (the caller deletes it). */
static cJSON *read_json(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    return root;
}

/* Write `root` as the copy's file `name`, and delete it. */
static void write_json(const char *name, cJSON *root)
{
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    assert_non_null(out);
    write_text(name, out);
    free(out);
}

/* Set member `key` of config.json (of vision_config when `vision`) to the JSON `value`. */
static void set_config(int vision, const char *key, const char *value)
{
    cJSON *root = read_json("config.json"), *v = cJSON_Parse(value);
    assert_non_null(v);
    cJSON *obj = vision ? cJSON_GetObjectItemCaseSensitive(root, "vision_config") : root;
    assert_non_null(obj);
    if (cJSON_GetObjectItemCaseSensitive(obj, key)) cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v);
    else cJSON_AddItemToObject(obj, key, v);
    write_json("config.json", root);
}

/* The number of tensors of the fixture file `path` whose names start with `prefix`. */
static int count_prefixed(const char *path, const char *prefix)
{
    vg_st_file *f = NULL;
    VG_CHECK(vg_st_open(path, &f));
    int n = 0;
    for (int i = 0; i < vg_st_count(f); i++)
        n += strncmp(vg_st_at(f, i)->name, prefix, strlen(prefix)) == 0;
    vg_st_close(f);
    return n;
}

/* ---- loading ---------------------------------------------------------------------------------- */

static vg_status load_lm(const char *dir, vg_dtype dt)
{
    vg_lm_options o;
    vg_lm_options_init(&o);
    o.num_blocks = 8; /* a small KV pool: these loads test the weights */
    o.max_seqs = 2;
    o.compute_dtype = dt;
    o.mode = VG_MODE_NONE;
    vg_lm *lm = (vg_lm *)0x1;
    vg_status st = vg_lm_load(g_rt, dir, &o, &lm);
    if (st == VG_OK) VG_CHECK(vg_lm_free(lm));
    else assert_null(lm);
    return st;
}

static vg_status load_vit(const char *dir, vg_dtype dt)
{
    vg_vit_options o;
    vg_vit_options_init(&o);
    o.compute_dtype = dt;
    o.mode = VG_MODE_NONE;
    vg_vit *v = (vg_vit *)0x1;
    vg_status st = vg_vit_load(g_rt, dir, &o, &v);
    if (st == VG_OK) VG_CHECK(vg_vit_free(v));
    else assert_null(v);
    return st;
}

#define AUTO VG_DTYPE_COUNT_ /* the compute dtype as the checkpoint stores its weights */

/* ---- non-finite weights ------------------------------------------------------------------- */

static void test_lm_nan_f32(void **state)
{
    (void)state;
    copy_model(QWEN2, &(edit){.poison = "model.norm.weight", .at = 5, .kind = POISON_NAN});
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_FORMAT,
                   "model.safetensors: tensor 'model.norm.weight': element 5 is NaN");
    /* compute dtypes other than the file's convert, and check the same way */
    VG_CHECK_FAILS(load_lm(g_dir, VG_DTYPE_BF16), VG_ERR_FORMAT, "'model.norm.weight': element 5 is NaN");
}

static void test_lm_inf_bf16(void **state)
{
    (void)state;
    copy_model(QWEN2, &(edit){.dtype = VG_DTYPE_BF16, .poison = "model.layers.1.mlp.down_proj.weight",
                              .at = 1000, .kind = POISON_PINF});
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_FORMAT,
                   "tensor 'model.layers.1.mlp.down_proj.weight': element 1000 is +Inf");
    VG_CHECK_FAILS(load_lm(g_dir, VG_DTYPE_F32), VG_ERR_FORMAT, "element 1000 is +Inf");
}

/* F16, in a part of a stacked projection (k of q|k|v), converted to F32 */
static void test_lm_inf_f16(void **state)
{
    (void)state;
    copy_model(QWEN3, &(edit){.dtype = VG_DTYPE_F16, .poison = "model.layers.2.self_attn.k_proj.weight",
                              .at = 77, .kind = POISON_NINF});
    VG_CHECK_FAILS(load_lm(g_dir, VG_DTYPE_F32), VG_ERR_FORMAT,
                   "tensor 'model.layers.2.self_attn.k_proj.weight': element 77 is -Inf");
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_FORMAT, "element 77 is -Inf");
}

/* a shard: the message names it */
static void test_lm_nan_sharded(void **state)
{
    (void)state;
    copy_model(QWEN2_SHARDED, &(edit){.poison = "lm_head.weight", .at = 3, .kind = POISON_NAN});
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_FORMAT, "tensor 'lm_head.weight': element 3 is NaN");
    assert_non_null(strstr(vg_last_error(), "/model-0000"));
}

/* finite in F32, infinite in F16: refused when loaded as F16, fine as F32 */
static void test_lm_f16_overflow(void **state)
{
    (void)state;
    copy_model(QWEN2, &(edit){.poison = "model.layers.0.mlp.down_proj.weight", .at = 9,
                              .kind = POISON_VALUE, .value = 1e6f});
    VG_CHECK_FAILS(load_lm(g_dir, VG_DTYPE_F16), VG_ERR_FORMAT,
                   "'model.layers.0.mlp.down_proj.weight': element 9 is 1e+06, beyond the range of F16");
    VG_CHECK(load_lm(g_dir, VG_DTYPE_F32));
}

/* The post-attention norm's weight folded into gate|up (a device with gemm_rmsnorm_a_unit, as the
 * stub): a product finite in F32 but not in F16 is refused naming both tensors; the norm's own
 * NaN is found as it is read. */
static void test_lm_folded_norm(void **state)
{
    (void)state;
    copy_model(QWEN2, &(edit){.poison = "model.layers.1.post_attention_layernorm.weight", .at = 3,
                              .kind = POISON_VALUE, .value = 1e7f});
    VG_CHECK_FAILS_ALL(load_lm(g_dir, VG_DTYPE_F16), VG_ERR_FORMAT, "'model.layers.1.mlp.gate_proj.weight' [",
                   "times 'model.layers.1.post_attention_layernorm.weight' [3]", "not finite in F16");
    VG_CHECK(load_lm(g_dir, VG_DTYPE_F32));
    copy_model(QWEN2, &(edit){.poison = "model.layers.0.post_attention_layernorm.weight", .at = 6,
                              .kind = POISON_NAN});
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_FORMAT,
                   "tensor 'model.layers.0.post_attention_layernorm.weight': element 6 is NaN");
}

static void test_vit_nan(void **state)
{
    (void)state;
    copy_model(VIT, &(edit){.poison = "visual.blocks.2.attn.qkv.weight", .at = 4096, .kind = POISON_NAN});
    VG_CHECK_FAILS(load_vit(g_dir, AUTO), VG_ERR_FORMAT,
                   "model.safetensors: tensor 'visual.blocks.2.attn.qkv.weight': element 4096 is NaN");
}

/* the case: Qwen3-VL's fc1, here in BF16 */
static void test_vit3_nan_fc1(void **state)
{
    (void)state;
    copy_model(VIT3, &(edit){.dtype = VG_DTYPE_BF16, .poison = "model.visual.blocks.1.mlp.linear_fc1.weight",
                             .at = 0, .kind = POISON_NAN});
    VG_CHECK_FAILS(load_vit(g_dir, AUTO), VG_ERR_FORMAT,
                   "tensor 'model.visual.blocks.1.mlp.linear_fc1.weight': element 0 is NaN");
    VG_CHECK_FAILS(load_vit(g_dir, VG_DTYPE_F16), VG_ERR_FORMAT, "element 0 is NaN");
}

/* the vision fixtures' language-model tensors are not the tower's: a NaN there is not read */
static void test_vit_other_tensors_not_read(void **state)
{
    (void)state;
    vg_st_file *f = NULL;
    VG_CHECK(vg_st_open(VIT "/model.safetensors", &f));
    const char *other = NULL;
    for (int i = 0; i < vg_st_count(f) && !other; i++)
        if (strncmp(vg_st_at(f, i)->name, "visual.", 7) != 0) other = vg_st_at(f, i)->name;
    assert_non_null(other);
    char name[256];
    snprintf(name, sizeof name, "%s", other);
    vg_st_close(f);
    copy_model(VIT, &(edit){.poison = name, .kind = POISON_NAN});
    VG_CHECK(load_vit(g_dir, AUTO));
}

/* ---- config.json and the checkpoint disagree -------------------------------------------------- */

static void test_lm_fewer_layers(void **state)
{
    (void)state;
    copy_model(QWEN2, NULL);
    set_config(0, "num_hidden_layers", "2");
    int n = count_prefixed(QWEN2 "/model.safetensors", "model.layers.2.");
    assert_true(n > 4);
    char want[128];
    snprintf(want, sizeof want, "%d tensors of the checkpoint are not accounted for by config.json", n);
    VG_CHECK_FAILS_ALL(load_lm(g_dir, AUTO), VG_ERR_FORMAT, want,
                       "'model.layers.2.input_layernorm.weight' (model.safetensors)", "more");
}

static void test_lm_fewer_layers_sharded(void **state)
{
    (void)state;
    copy_model(QWEN2_SHARDED, NULL);
    set_config(0, "num_hidden_layers", "1");
    VG_CHECK_FAILS_ALL(load_lm(g_dir, AUTO), VG_ERR_FORMAT, "not accounted for by config.json",
                       "'model.layers.1.", "(model-0000");
}

/* one tensor no member of config.json accounts for (Qwen3 has no o_proj bias) */
static void test_lm_extra_tensor(void **state)
{
    (void)state;
    copy_model(QWEN3, &(edit){.extra = "model.layers.0.self_attn.o_proj.bias",
                              .extra_of = "model.layers.0.input_layernorm.weight"});
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_FORMAT,
                   "1 tensor of the checkpoint is not accounted for by config.json: "
                   "'model.layers.0.self_attn.o_proj.bias' (model.safetensors)");
}

/* what config.json does account for without loading it: a tied lm_head saved anyway, and the
 * rotary frequencies older exports kept */
static void test_lm_accounted_extras(void **state)
{
    (void)state;
    copy_model(QWEN2, &(edit){.extra = "lm_head.weight", .extra_of = "model.embed_tokens.weight"});
    VG_CHECK(load_lm(g_dir, AUTO));
    rm_dir(g_dir);
    assert_int_equal(mkdir(g_dir, 0700), 0);
    copy_model(QWEN2, &(edit){.extra = "model.layers.1.self_attn.rotary_emb.inv_freq",
                              .extra_of = "model.layers.1.input_layernorm.weight"});
    VG_CHECK(load_lm(g_dir, AUTO));
}

static void test_vit_fewer_blocks(void **state)
{
    (void)state;
    copy_model(VIT, NULL);
    set_config(1, "depth", "3");
    set_config(1, "fullatt_block_indexes", "[1]");
    VG_CHECK_FAILS_ALL(load_vit(g_dir, AUTO), VG_ERR_FORMAT, "not accounted for by config.json",
                       "'visual.blocks.3.");
}

static void test_vit3_fewer_blocks(void **state)
{
    (void)state;
    copy_model(VIT3, NULL);
    set_config(1, "depth", "3");
    VG_CHECK_FAILS_ALL(load_vit(g_dir, AUTO), VG_ERR_FORMAT, "not accounted for by config.json",
                       "'model.visual.blocks.3.");
}

/* transformers 5 saves vision_config with the vision config class's own model_type */
static void test_vit_vision_model_types(void **state)
{
    (void)state;
    copy_model(VIT, NULL);
    set_config(1, "model_type", "\"qwen2_5_vl_vision\"");
    VG_CHECK(load_vit(g_dir, AUTO));
    copy_model(VIT3, NULL);
    set_config(1, "model_type", "\"qwen3_vl_vision\"");
    VG_CHECK(load_vit(g_dir, AUTO));
    set_config(1, "model_type", "\"qwen2_5_vl_vision\"");
    VG_CHECK_FAILS_ALL(load_vit(g_dir, AUTO), VG_ERR_FORMAT, "name different vision towers");
}

static void test_vit3_fewer_deepstack(void **state)
{
    (void)state;
    copy_model(VIT3, NULL);
    set_config(1, "deepstack_visual_indexes", "[1]");
    VG_CHECK_FAILS_ALL(load_vit(g_dir, AUTO), VG_ERR_FORMAT, "6 tensors of the checkpoint",
                       "'model.visual.deepstack_merger_list.1.");
}

/* more layers than the checkpoint: a tensor is missing (as before) */
static void test_lm_more_layers(void **state)
{
    (void)state;
    copy_model(QWEN2, NULL);
    set_config(0, "num_hidden_layers", "4");
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_NOT_FOUND,
                   "tensor 'model.layers.3.input_layernorm.weight' is missing");
}

/* ---- files that are not regular files --------------------------------------------------------- */

/* A hang is what the bug looked like: the alarm turns it into a failure. */
static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_model_load: blocked opening a FIFO\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

static void replace_with_fifo(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
}

static void test_fifo_weights(void **state)
{
    (void)state;
    copy_model(QWEN2, NULL);
    replace_with_fifo("model.safetensors");
    alarm(30);
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_IO, "model.safetensors: not a regular file (a FIFO)");
    VG_CHECK_FAILS(load_vit(g_dir, AUTO), VG_ERR_IO, "model.safetensors: not a regular file (a FIFO)");
    char path[512];
    vg_st_file *f = NULL;
    snprintf(path, sizeof path, "%s/model.safetensors", g_dir);
    VG_CHECK_FAILS(vg_st_open(path, &f), VG_ERR_IO, "not a regular file (a FIFO)");
    VG_CHECK_FAILS(vg_st_open("/dev/zero", &f), VG_ERR_IO, "/dev/zero: not a regular file (a character device)");
    alarm(0);
}

static void test_fifo_shard_and_index(void **state)
{
    (void)state;
    copy_model(QWEN2_SHARDED, NULL);
    replace_with_fifo("model-00002-of-00003.safetensors");
    alarm(30);
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_IO,
                   "model-00002-of-00003.safetensors: not a regular file (a FIFO)");
    replace_with_fifo("model.safetensors.index.json");
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_IO,
                   "model.safetensors.index.json: not a regular file (a FIFO)");
    alarm(0);
}

/* The index's shard names with every weight_map value `from` replaced by `to`. */
static void rename_shard_in_index(const char *from, const char *to)
{
    cJSON *root = read_json("model.safetensors.index.json");
    cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map"), *e;
    assert_non_null(map);
    int renamed = 0;
    cJSON_ArrayForEach(e, map)
        if (cJSON_IsString(e) && !strcmp(e->valuestring, from)) {
            assert_non_null(cJSON_SetValuestring(e, to));
            renamed++;
        }
    assert_true(renamed > 0);
    write_json("model.safetensors.index.json", root);
}

/* A shard name in the index that is not a plain file name of the model directory (a path into a
 * subfolder or out of it, a hidden name, an empty one) is refused, even where the file it names
 * exists and would load: the index may not reach files outside the checkpoint's own. */
static void test_shard_name_not_plain(void **state)
{
    (void)state;
    static const char *const shard = "model-00002-of-00003.safetensors";
    static const char *const bad[] = {"sub/model-00002-of-00003.safetensors",
                                      "../model-00002-of-00003.safetensors",
                                      ".model-00002-of-00003.safetensors", ""};
    char from[512], to[512], want[160];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        copy_model(QWEN2_SHARDED, NULL);
        snprintf(from, sizeof from, "%s/%s", g_dir, shard);
        snprintf(to, sizeof to, "%s/sub", g_dir);
        assert_int_equal(mkdir(to, 0700), 0);
        snprintf(to, sizeof to, "%s/sub/%s", g_dir, shard); /* the file the first name reaches */
        copy_file(from, to);
        snprintf(to, sizeof to, "%s/.%s", g_dir, shard); /* and the third */
        copy_file(from, to);
        rename_shard_in_index(shard, bad[i]);
        snprintf(want, sizeof want, "shard name '%s' is not a plain file name", bad[i]);
        VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_FORMAT, want);
        teardown_dir(NULL);
        setup_dir(NULL);
    }
}

static void test_config_not_regular(void **state)
{
    (void)state;
    copy_model(QWEN2, NULL);
    replace_with_fifo("config.json");
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", g_dir);
    alarm(30);
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_IO, "config.json: not a regular file (a FIFO)");
    VG_CHECK_FAILS(load_vit(g_dir, AUTO), VG_ERR_IO, "config.json: not a regular file (a FIFO)");
    vg_lm *lm = NULL;
    VG_CHECK_FAILS(vg_lm_create_synthetic(g_rt, path, 1, VG_DTYPE_F32, NULL, &lm), VG_ERR_IO,
                   "config.json: not a regular file (a FIFO)");
    alarm(0);
    /* a device: reading it would never end (or read 64 MiB of zeros first) */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink("/dev/zero", path), 0);
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_IO, "config.json: not a regular file (a character device)");
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkdir(path, 0700), 0);
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_IO, "config.json: not a regular file (a directory)");
}

/* ---- messages -------------------------------------------------------------------------------- */

static void test_heads_not_dividing(void **state)
{
    (void)state;
    const char *base = "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 1, \"num_key_value_heads\": 1, "
                       "\"intermediate_size\": 64, \"vocab_size\": 32, ";
    char json[512], path[512];
    snprintf(path, sizeof path, "%s/config.json", g_dir);
    snprintf(json, sizeof json, "%s\"hidden_size\": 128, \"num_attention_heads\": 3}", base);
    write_text("config.json", json);
    vg_lm *lm = NULL;
    VG_CHECK_FAILS(vg_lm_create_synthetic(g_rt, path, 1, VG_DTYPE_F32, NULL, &lm), VG_ERR_FORMAT,
                   "hidden_size 128 is not divisible by num_attention_heads 3");
    assert_null(strstr(vg_last_error(), "'head_dim' is missing"));
    /* derivable, but not a size paged attention takes: say where it came from */
    snprintf(json, sizeof json, "%s\"hidden_size\": 80, \"num_attention_heads\": 4}", base);
    write_text("config.json", json);
    VG_CHECK_FAILS(vg_lm_create_synthetic(g_rt, path, 1, VG_DTYPE_F32, NULL, &lm), VG_ERR_UNSUPPORTED,
                   "head_dim 20 (hidden_size 80 / num_attention_heads 4)");
}

static void test_model_path_missing(void **state)
{
    (void)state;
    VG_CHECK_FAILS(load_lm("/nonexistent", AUTO), VG_ERR_NOT_FOUND, "/nonexistent: does not exist");
    VG_CHECK_FAILS(load_vit("/nonexistent/model", AUTO), VG_ERR_NOT_FOUND,
                   "/nonexistent/model: does not exist");
    /* a file where the folder should be */
    VG_CHECK_FAILS(load_lm(QWEN2 "/config.json", AUTO), VG_ERR_NOT_FOUND, "config.json: not a directory");
}

/* one message from one parser, whichever function reads the file */
static void test_truncated_config(void **state)
{
    (void)state;
    copy_model(QWEN2, NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", g_dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char text[256];
    size_t n = fread(text, 1, 100, f);
    fclose(f);
    assert_int_equal(n, 100);
    text[n] = 0;
    write_text("config.json", text);
    char want[600];
    snprintf(want, sizeof want, "%s: not valid JSON (truncated or malformed) near byte", path);
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_FORMAT, want);
    char first[1024];
    snprintf(first, sizeof first, "%s", vg_last_error());
    vg_lm *lm = NULL;
    VG_CHECK_FAILS(vg_lm_create_synthetic(g_rt, path, 1, VG_DTYPE_F32, NULL, &lm), VG_ERR_FORMAT, want);
    assert_string_equal(vg_last_error(), first);
    VG_CHECK_FAILS(load_vit(g_dir, AUTO), VG_ERR_FORMAT, want);
    assert_string_equal(vg_last_error(), first);
    /* trailing bytes after the object are not JSON either */
    write_text("config.json", "{\"model_type\": \"qwen2\"} }");
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_FORMAT, "not valid JSON (truncated or malformed) near byte 24");
    write_text("config.json", "[1, 2]");
    VG_CHECK_FAILS(load_lm(g_dir, AUTO), VG_ERR_FORMAT, "config.json: not a JSON object");
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    vg_status st = vg_runtime_open(NULL, &g_rt);
    if (st != VG_OK) {
        fprintf(stderr, "SKIP: %s\n", vg_last_error());
        return VG_TEST_SKIP;
    }
#define T(f) cmocka_unit_test_setup_teardown(f, setup_dir, teardown_dir)
    const struct CMUnitTest tests[] = {
        T(test_lm_nan_f32),
        T(test_lm_inf_bf16),
        T(test_lm_inf_f16),
        T(test_lm_nan_sharded),
        T(test_lm_f16_overflow),
        T(test_lm_folded_norm),
        T(test_vit_nan),
        T(test_vit3_nan_fc1),
        T(test_vit_other_tensors_not_read),
        T(test_lm_fewer_layers),
        T(test_lm_fewer_layers_sharded),
        T(test_lm_extra_tensor),
        T(test_lm_accounted_extras),
        T(test_vit_fewer_blocks),
        T(test_vit3_fewer_blocks),
        T(test_vit3_fewer_deepstack),
        T(test_vit_vision_model_types),
        T(test_lm_more_layers),
        T(test_fifo_weights),
        T(test_fifo_shard_and_index),
        T(test_shard_name_not_plain),
        T(test_config_not_regular),
        T(test_heads_not_dividing),
        T(test_model_path_missing),
        T(test_truncated_config),
    };
#undef T
    int failed = cmocka_run_group_tests_name("model_load", tests, NULL, NULL);
    vg_runtime_close(g_rt);
    return failed;
}
