/* SPDX-License-Identifier: Apache-2.0 */
/* Logging: level from VG_LOG_LEVEL, lines to stderr or to a user callback. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vg_internal.h"

static atomic_int g_level = -1; /* -1: not yet read from the environment */
static pthread_mutex_t g_sink_lock = PTHREAD_MUTEX_INITIALIZER;
static vg_log_fn g_sink;
static void *g_sink_user;

static const char *const k_level_names[] = {"error", "warn", "info", "debug", "trace"};

static int level_from_env(void)
{
    const char *v = getenv("VG_LOG_LEVEL");
    if (!v || !*v) return VG_LOG_WARN;
    for (int i = 0; i < (int)VG_ARRAY_LEN(k_level_names); i++)
        if (strcasecmp(v, k_level_names[i]) == 0) return i;
    if (strcasecmp(v, "warning") == 0) return VG_LOG_WARN;
    if (v[0] >= '0' && v[0] <= '4' && v[1] == '\0') return v[0] - '0';
    fprintf(stderr, "vg: [warn] VG_LOG_LEVEL=%s not understood (want error|warn|info|debug|trace "
                    "or 0-4); using warn\n", v);
    return VG_LOG_WARN;
}

vg_log_level vg_log_get_level(void)
{
    int lv = atomic_load(&g_level);
    if (lv < 0) {
        int expected = -1;
        lv = level_from_env();
        if (!atomic_compare_exchange_strong(&g_level, &expected, lv)) lv = expected;
    }
    return (vg_log_level)lv;
}

void vg_log_set_level(vg_log_level level)
{
    if ((int)level < VG_LOG_ERROR) level = VG_LOG_ERROR;
    if ((int)level > VG_LOG_TRACE) level = VG_LOG_TRACE;
    atomic_store(&g_level, (int)level);
}

void vg_log_set_callback(vg_log_fn fn, void *user)
{
    pthread_mutex_lock(&g_sink_lock);
    g_sink = fn;
    g_sink_user = user;
    pthread_mutex_unlock(&g_sink_lock);
}

int vg_log_enabled(vg_log_level level) { return (int)level <= (int)vg_log_get_level(); }

void vg_logv(vg_log_level level, const char *fmt, va_list ap)
{
    if (!vg_log_enabled(level)) return;
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    pthread_mutex_lock(&g_sink_lock);
    if (g_sink)
        g_sink(level, line, g_sink_user);
    else
        fprintf(stderr, "vg: [%s] %s\n", k_level_names[level], line);
    pthread_mutex_unlock(&g_sink_lock);
}

void vg_log(vg_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vg_logv(level, fmt, ap);
    va_end(ap);
}
