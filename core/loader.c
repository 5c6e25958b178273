/* SPDX-License-Identifier: Apache-2.0 */
/* Plugin discovery and loading (OpenCL-ICD style: environment driven, every failure traced).
 *
 * VG_BACKEND=<name>: libvg_<name>.so is looked for in the directories of $VG_BACKEND_PATH,
 * then in the plugin directory libvg was built for (the build tree's when libvg runs from the
 * build tree, the install prefix's otherwise), then next to libvg. A value containing '/' is a
 * path to the plugin file itself. Unset, auto-selection (runtime.c) considers the candidates
 * listed here: the builtins and every libvg_<name>.so on $VG_BACKEND_PATH. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vg_internal.h"

#ifndef VG_BUILD_LIB_DIR
#define VG_BUILD_LIB_DIR ""
#endif
#ifndef VG_INSTALL_PLUGIN_DIR
#define VG_INSTALL_PLUGIN_DIR ""
#endif

static const char *const k_builtin[] = {"cuda", "hip", "opencl", "kunlun_stub"};

int vg_backend_builtin_count(void) { return (int)VG_ARRAY_LEN(k_builtin); }

const char *vg_backend_builtin_name(int i)
{
    return i >= 0 && i < (int)VG_ARRAY_LEN(k_builtin) ? k_builtin[i] : NULL;
}

/* A growing "tried" log, appended to as each candidate fails. */
typedef struct trace {
    char text[3072];
    size_t len;
    int count;
} trace;

static void trace_add(trace *t, const char *path, const char *why)
{
    int n = snprintf(t->text + t->len, sizeof t->text - t->len, "\n  %s: %s", path, why);
    if (n > 0) t->len = t->len + (size_t)n < sizeof t->text ? t->len + (size_t)n : sizeof t->text - 1;
    t->count++;
}

/* NULL when path names a regular file (following links), else why it cannot be a plugin. */
static const char *not_a_file(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return errno == ENOENT || errno == ENOTDIR ? "not found" : strerror(errno);
    if (S_ISREG(st.st_mode)) return NULL;
    if (S_ISDIR(st.st_mode))
        return "is a directory, not a plugin file (give the path of a libvg_<name>.so, or put the "
               "directory in VG_BACKEND_PATH)";
    if (S_ISFIFO(st.st_mode)) return "is a FIFO, not a plugin file";
    if (S_ISSOCK(st.st_mode)) return "is a socket, not a plugin file";
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "is a device node, not a plugin file";
    return "is not a regular file";
}

static void libvg_dir(char *out, size_t cap)
{
    Dl_info info;
    out[0] = '\0';
    if (dladdr((void *)&vg_plugin_load, &info) && info.dli_fname) {
        char real[PATH_MAX];
        const char *p = realpath(info.dli_fname, real) ? real : info.dli_fname;
        snprintf(out, cap, "%s", p);
        char *slash = strrchr(out, '/');
        if (slash) *slash = '\0';
        else out[0] = '\0';
    }
}

static int same_dir(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (!*a || !*b || !realpath(a, ra) || !realpath(b, rb)) return 0;
    return strcmp(ra, rb) == 0;
}

/* dlopen one file and validate its table; on failure the reason goes to the trace. */
static vg_status try_file(const char *path, vg_plugin *out, vg_backend_iface *iface,
                          vg_op_table *ops, trace *t)
{
    const char *why_not = not_a_file(path);
    if (why_not) {
        trace_add(t, path, why_not);
        return VG_ERR_NOT_FOUND;
    }
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        char why[1024];
        snprintf(why, sizeof why, "dlopen failed: %s", e ? e : "unknown error");
        trace_add(t, path, why);
        return VG_ERR_LOAD;
    }
    dlerror();
    vg_backend_query_fn query = (vg_backend_query_fn)dlsym(h, VG_BACKEND_ENTRY_NAME);
    if (!query) {
        char why[1024];
        const char *e = dlerror();
        snprintf(why, sizeof why, "missing entry symbol '%s' (%s)", VG_BACKEND_ENTRY_NAME,
                 e ? e : "no error text");
        trace_add(t, path, why);
        dlclose(h);
        return VG_ERR_LOAD;
    }
    const vg_backend_iface *raw = query(vg_host_services_get());
    vg_error_clear();
    vg_status st = vg_iface_validate(raw, path, iface, ops);
    if (st != VG_OK) {
        /* vg_iface_validate prefixes the path already; keep only its reason here. */
        const char *msg = vg_last_error();
        size_t plen = strlen(path);
        if (strncmp(msg, path, plen) == 0 && msg[plen] == ':') msg += plen + 2;
        trace_add(t, path, msg);
        dlclose(h);
        return st;
    }
    out->handle = h;
    snprintf(out->path, sizeof out->path, "%s", path);
    return VG_OK;
}

/* The first directory of $VG_BACKEND_PATH (copied into buf); strtok_r(NULL, ":", save) gives
 * the next. NULL when the variable is unset or empty. */
static char *path_dirs(char *buf, size_t cap, char **save)
{
    const char *env = getenv("VG_BACKEND_PATH");
    if (!env || !*env) return NULL;
    snprintf(buf, cap, "%s", env);
    return strtok_r(buf, ":", save);
}

static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static vg_status finish(vg_status worst, const char *request, trace *t)
{
    if (t->count == 0) trace_add(t, "(nothing)", "no directory to search");
    return vg_error_set(worst, "backend '%s' could not be loaded; tried:%s", request, t->text);
}

vg_status vg_plugin_load(const char *req, vg_plugin *out, vg_backend_iface *iface, vg_op_table *ops)
{
    trace t = {.len = 0, .count = 0};
    t.text[0] = '\0';
    memset(out, 0, sizeof *out);
    if (!req || !*req) return vg_error_set(VG_ERR_INVALID_ARG, "empty backend name");

    if (strchr(req, '/')) {
        vg_status st = try_file(req, out, iface, ops, &t);
        if (st == VG_OK) return VG_OK;
        return finish(st, req, &t);
    }
    if (!valid_name(req))
        return vg_error_set(VG_ERR_INVALID_ARG,
                            "backend name '%s' is not valid: use letters, digits, '_' or '-' (or "
                            "give a path to a .so)", req);

    /* Candidate directories in search order, without repeats. */
    enum { MAX_DIRS = 32 };
    char dirs[MAX_DIRS][PATH_MAX];
    int ndirs = 0;
#define ADD_DIR(d)                                                                         \
    do {                                                                                   \
        int dup_ = 0;                                                                      \
        for (int i_ = 0; i_ < ndirs; i_++) dup_ |= strcmp(dirs[i_], (d)) == 0;             \
        if (!dup_ && ndirs < MAX_DIRS) snprintf(dirs[ndirs++], PATH_MAX, "%s", (d));       \
    } while (0)
    char buf[4096];
    for (char *save = NULL, *dir = path_dirs(buf, sizeof buf, &save); dir;
         dir = strtok_r(NULL, ":", &save))
        if (*dir) ADD_DIR(dir);
    char here[PATH_MAX];
    libvg_dir(here, sizeof here);
    if (*VG_BUILD_LIB_DIR && same_dir(here, VG_BUILD_LIB_DIR))
        ADD_DIR(VG_BUILD_LIB_DIR);
    else if (*VG_INSTALL_PLUGIN_DIR)
        ADD_DIR(VG_INSTALL_PLUGIN_DIR);
    if (*here) {
        char sub[PATH_MAX];
        ADD_DIR(here);
        if ((size_t)snprintf(sub, sizeof sub, "%s/vg", here) < sizeof sub) ADD_DIR(sub);
    }
#undef ADD_DIR

    vg_status worst = VG_ERR_NOT_FOUND;
    for (int i = 0; i < ndirs; i++) {
        char path[PATH_MAX + 80];
        if ((size_t)snprintf(path, sizeof path, "%s/libvg_%s.so", dirs[i], req) >= sizeof path) {
            trace_add(&t, dirs[i], "path too long");
            continue;
        }
        vg_status st = try_file(path, out, iface, ops, &t);
        if (st == VG_OK) goto found;
        if (st != VG_ERR_NOT_FOUND) worst = st;
    }
    return finish(worst, req, &t);

found:
    if (t.count)
        vg_log(VG_LOG_INFO, "backend '%s' loaded from %s after failed candidates:%s", req,
               out->path, t.text);
    else
        vg_log(VG_LOG_DEBUG, "backend '%s' loaded from %s", req, out->path);
    return VG_OK;
}

void vg_plugin_unload(vg_plugin *p)
{
    if (p && p->handle) dlclose(p->handle);
    if (p) memset(p, 0, sizeof *p);
}

/* ---- auto-selection candidates ------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The <name> of libvg_<name>.so, copied into out; 0 when fname is not such a name. */
static int plugin_file_name(const char *fname, char *out, size_t cap)
{
    size_t n = strlen(fname);
    if (n <= 9 || strncmp(fname, "libvg_", 6) != 0 || strcmp(fname + n - 3, ".so") != 0) return 0;
    if (n - 9 >= cap) return 0;
    memcpy(out, fname + 6, n - 9);
    out[n - 9] = '\0';
    return valid_name(out);
}

static int is_builtin(const char *name)
{
    for (size_t i = 0; i < VG_ARRAY_LEN(k_builtin); i++)
        if (strcmp(name, k_builtin[i]) == 0) return 1;
    return 0;
}

typedef struct str_list {
    char **v;
    int n, cap;
} str_list;

static int list_push(str_list *l, const char *s)
{
    if (l->n == l->cap) {
        int ncap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, (size_t)ncap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = ncap;
    }
    char *copy = strdup(s);
    if (!copy) return -1;
    l->v[l->n++] = copy;
    return 0;
}

/* Append the plugins of one directory, sorted by file name; `seen` holds the directories done
 * already (the same directory twice on the path is searched once). */
static int add_dir_plugins(str_list *l, str_list *seen, const char *dir)
{
    char abs[PATH_MAX];
    if (!realpath(dir, abs)) return 0; /* a missing directory on the path is not an error */
    for (int i = 0; i < seen->n; i++)
        if (strcmp(seen->v[i], abs) == 0) return 0;
    if (list_push(seen, abs) != 0) return -1;
    DIR *d = opendir(abs);
    if (!d) return 0;
    int first = l->n, rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
        char name[64], path[PATH_MAX + 256];
        if (!plugin_file_name(e->d_name, name, sizeof name) || is_builtin(name)) continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", abs, e->d_name) >= sizeof path) continue;
        if (not_a_file(path)) continue;
        rc = list_push(l, path);
    }
    closedir(d);
    qsort(l->v + first, (size_t)(l->n - first), sizeof *l->v, cmp_str);
    return rc;
}

int vg_candidates_list(char ***out)
{
    str_list l = {NULL, 0, 0}, seen = {NULL, 0, 0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < VG_ARRAY_LEN(k_builtin); i++) rc = list_push(&l, k_builtin[i]);
    char buf[4096];
    for (char *save = NULL, *dir = path_dirs(buf, sizeof buf, &save); rc == 0 && dir;
         dir = strtok_r(NULL, ":", &save))
        if (*dir) rc = add_dir_plugins(&l, &seen, dir);
    vg_candidates_free(seen.v, seen.n);
    if (rc != 0) {
        vg_candidates_free(l.v, l.n);
        *out = NULL;
        return -1;
    }
    *out = l.v;
    return l.n;
}

void vg_candidates_free(char **list, int n)
{
    for (int i = 0; list && i < n; i++) free(list[i]);
    free(list);
}

int vg_backend_candidates(const char **names, int max)
{
    /* The strings live until the next call on this thread. */
    static _Thread_local char **tl_list;
    static _Thread_local int tl_n;
    vg_candidates_free(tl_list, tl_n);
    tl_list = NULL;
    tl_n = 0;
    int n = vg_candidates_list(&tl_list);
    if (n < 0) {
        vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_backend_candidates: out of memory");
        return 0;
    }
    tl_n = n;
    for (int i = 0; names && i < n && i < max; i++) names[i] = tl_list[i];
    return n;
}
