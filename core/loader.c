/* Plugin discovery and loading (OpenCL-ICD style: environment driven, every failure traced).
 *
 * VG_BACKEND=<name>: libvg_<name>.so is looked for in the directories of $VG_BACKEND_PATH,
 * then in the plugin directory libvg was built for (the build tree's when libvg runs from the
 * build tree, the install prefix's otherwise), then next to libvg. A value containing '/' is a
 * path to the plugin file itself. */
#define _GNU_SOURCE
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

static const char *const k_builtin[] = {"cuda", "hip", "kunlun_stub"};

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

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
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
    if (!file_exists(path)) {
        trace_add(t, path, "not found");
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
    return vg_set_error(worst, "backend '%s' could not be loaded; tried:%s", request, t->text);
}

vg_status vg_plugin_load(const char *req, vg_plugin *out, vg_backend_iface *iface, vg_op_table *ops)
{
    trace t = {.len = 0, .count = 0};
    t.text[0] = '\0';
    memset(out, 0, sizeof *out);
    if (!req || !*req) return vg_set_error(VG_ERR_INVALID_ARG, "empty backend name");

    if (strchr(req, '/')) {
        vg_status st = try_file(req, out, iface, ops, &t);
        if (st == VG_OK) return VG_OK;
        return finish(st, req, &t);
    }
    if (!valid_name(req))
        return vg_set_error(VG_ERR_INVALID_ARG,
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
    const char *env = getenv("VG_BACKEND_PATH");
    if (env && *env) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", env);
        for (char *save = NULL, *dir = strtok_r(buf, ":", &save); dir;
             dir = strtok_r(NULL, ":", &save))
            if (*dir) ADD_DIR(dir);
    }
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
