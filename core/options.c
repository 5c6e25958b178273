/* SPDX-License-Identifier: Apache-2.0 */
/* Named backend options (vg_runtime_options.options): checked against the names the backend
 * lists, and handed to it through host->option while its device opens. The environment stays the
 * default: a knob the application does not name reads its environment variable as before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg_internal.h"

/* The options of the open in progress on this thread: a backend reads its knobs inside
 * device_count and device_open, which the core calls on the opening thread. */
static _Thread_local const vg_option *t_pending;
static _Thread_local int t_npending;

void vg_options_set_pending(const vg_option *opts, int n)
{
    t_pending = n > 0 ? opts : NULL;
    t_npending = n > 0 ? n : 0;
}

const char *vg_options_lookup(const char *name)
{
    if (!name) return NULL;
    for (int i = t_npending - 1; i >= 0; i--) /* the last one given wins */
        if (strcmp(t_pending[i].name, name) == 0) return t_pending[i].value;
    return getenv(name);
}

static int known(const vg_backend_iface *b, const char *name)
{
    for (const char *const *k = b->option_names; k && *k; k++)
        if (strcmp(*k, name) == 0) return 1;
    return 0;
}

vg_status vg_options_check(const vg_backend_iface *b, const vg_option *opts, int n,
                           const char *origin)
{
    if (n < 0 || (n > 0 && !opts))
        return vg_error_set(VG_ERR_INVALID_ARG, "%s: %d backend options but the list is %s",
                            origin, n, opts ? "not NULL" : "NULL");
    for (int i = 0; i < n; i++) {
        if (!opts[i].name || !*opts[i].name || !opts[i].value)
            return vg_error_set(VG_ERR_INVALID_ARG, "%s: backend option %d has no %s", origin, i,
                                !opts[i].name || !*opts[i].name ? "name" : "value");
        if (known(b, opts[i].name)) continue;
        if (!b->option_names || !b->option_names[0])
            return vg_error_set(VG_ERR_INVALID_ARG, "%s: unknown backend option '%s': backend "
                                                    "'%s' (ABI 1.%u) takes no options", origin,
                                opts[i].name, b->name, b->abi_minor);
        char list[1024] = "";
        size_t len = 0;
        for (const char *const *k = b->option_names; *k && len + 1 < sizeof list; k++) {
            int w = snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", *k);
            if (w < 0) break;
            len += (size_t)w;
        }
        return vg_error_set(VG_ERR_INVALID_ARG, "%s: unknown backend option '%s' (backend '%s' "
                                                "knows: %s)", origin, opts[i].name, b->name, list);
    }
    return VG_OK;
}

int vg_runtime_option_names(const vg_runtime *rt, const char **names, int max)
{
    int n = 0;
    for (const char *const *k = rt ? rt->iface.option_names : NULL; k && *k; k++, n++)
        if (names && n < max) names[n] = *k;
    return n;
}
