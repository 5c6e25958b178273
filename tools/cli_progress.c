/* SPDX-License-Identifier: Apache-2.0 */
#include "cli_progress.h"

#include <stdio.h>
#include <unistd.h>

#include "stats.h"

void vg_progress_start(vg_progress *p, int quiet)
{
    *p = (vg_progress){.on = !quiet && isatty(STDERR_FILENO), .t0_ms = vg_now_ms(), .shown_ms = -1e9};
}

void vg_progress_show(vg_progress *p, const char *what, int k, int n)
{
    double now = vg_now_ms();
    if (!p->on || (k < n && now - p->shown_ms < 100)) return;
    p->shown_ms = now;
    int w = fprintf(stderr, "\r%s %d/%d, %.1f s", what, k, n, (now - p->t0_ms) / 1e3) - 1;
    if (w < p->width) fprintf(stderr, "%*s", p->width - w, ""); /* blank the rest */
    else p->width = w;
    fflush(stderr);
}

void vg_progress_end(vg_progress *p)
{
    if (p->on && p->width) fprintf(stderr, "\r%*s\r", p->width, "");
    p->width = 0;
}

void vg_progress_warmup(void *user, const vg_warmup_progress *w)
{
    char what[64];
    snprintf(what, sizeof what, "warm-up: captured %lld tokens, bucket", (long long)w->size);
    vg_progress_show(user, what, w->index + 1, w->count);
}
