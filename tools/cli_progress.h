/* SPDX-License-Identifier: Apache-2.0 */
/* Progress of long work on stderr: what is being done, how far (k/N) and the seconds elapsed,
 * rewritten in place with \r. Only when stderr is a terminal and the user did not ask for
 * --quiet: logs and pipes never see it. */
#ifndef VG_CLI_PROGRESS_H
#define VG_CLI_PROGRESS_H

#include "vg/vg_runner.h"

typedef struct vg_progress {
    int on;
    double t0_ms, shown_ms;
    int width; /* of the line on screen, to blank it */
} vg_progress;

void vg_progress_start(vg_progress *p, int quiet);
/* "<what> k/n, 3.2 s"; at most ten lines a second unless k == n. */
void vg_progress_show(vg_progress *p, const char *what, int k, int n);
/* Blank the line, so what follows starts on a clean one. */
void vg_progress_end(vg_progress *p);
/* A vg_warmup_fn: user is a vg_progress. */
void vg_progress_warmup(void *user, const vg_warmup_progress *w);

#endif
