/* SPDX-License-Identifier: Apache-2.0 */
/* Watchdogs for tests whose ranks are forked processes (test_comm.c, test_lm_tp.c): a rank that
 * hangs (a collective that never completes, a teardown stuck in the driver) must become a failure
 * that names it, never a test that runs until something outside kills it with no word.
 *
 *   child of rank r:  rank_watchdog_arm("case", r, seconds)  -- alarm(): after `seconds` it
 *                     writes "<case>: rank r (pid p) HUNG ..." to stderr and _exit()s with
 *                     RANK_WATCHDOG_EXIT
 *   parent:           rank_watchdog_reap(...)  -- waits for the ranks as they end, until a
 *                     deadline (the watchdog plus a grace); then SIGKILLs and names those left
 *   both:             rank_watchdog_run(...)  -- forks the ranks with their watchdogs and the
 *                     pipes rank 0 shares through, runs each rank's body, reaps them */
#ifndef VG_TEST_RANK_WATCHDOG_H
#define VG_TEST_RANK_WATCHDOG_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RANK_WATCHDOG_EXIT 86 /* what a rank ended by its watchdog exits with */

static char g_rank_watchdog_msg[300]; /* written by the signal handler: formatted beforehand */
static size_t g_rank_watchdog_len;

static inline double rank_watchdog_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Seconds from the environment variable `env` (a whole number in [1, 86400]), else `dflt`. */
static inline int rank_watchdog_seconds(const char *env, int dflt)
{
    const char *v = getenv(env);
    int s = v ? atoi(v) : 0;
    return s >= 1 && s <= 86400 ? s : dflt;
}

static inline void rank_watchdog_fire(int sig)
{
    (void)sig;
    ssize_t n = write(2, g_rank_watchdog_msg, g_rank_watchdog_len);
    (void)n;
    _exit(RANK_WATCHDOG_EXIT);
}

/* In the child of rank `rank` running `what`: a hang past `seconds` becomes an exit. */
static inline void rank_watchdog_arm(const char *what, int rank, int seconds)
{
    int n = snprintf(g_rank_watchdog_msg, sizeof g_rank_watchdog_msg,
                     "%s: rank %d (pid %d) HUNG: still running after %d s; ended by its "
                     "watchdog\n", what, rank, (int)getpid(), seconds);
    g_rank_watchdog_len = n > 0 && (size_t)n < sizeof g_rank_watchdog_msg ? (size_t)n : 0;
    signal(SIGALRM, rank_watchdog_fire);
    alarm((unsigned)seconds);
}

/* Wait for the children pids[0..n) of `what` as they end (a dead rank must not linger as a
 * zombie) until `deadline_ms` (rank_watchdog_now_ms's clock); then SIGKILL those left, saying
 * so, and reap them for at most 10 s more. codes[r]: the exit code, 1000 + the signal, or -1
 * for a rank that could not be reaped (stuck in the driver). */
static inline void rank_watchdog_reap(const char *what, int n, const pid_t *pids, int *codes,
                                      double deadline_ms)
{
    int left = n, killed = 0;
    for (int r = 0; r < n; r++) codes[r] = -1;
    while (left > 0) {
        int status = 0;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p < 0 && errno == EINTR) continue;
        if (p < 0) break; /* no children left */
        if (p > 0) {
            int r = 0;
            while (r < n && pids[r] != p) r++;
            if (r < n) {
                left--;
                codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
            }
            continue;
        }
        double now = rank_watchdog_now_ms();
        if (now >= deadline_ms && !killed) {
            for (int r = 0; r < n; r++) {
                if (codes[r] != -1) continue;
                fprintf(stderr, "%s: rank %d (pid %d) HUNG: still running past the parent's "
                                "deadline (its watchdog did not end it); killed\n", what, r,
                        (int)pids[r]);
                kill(pids[r], SIGKILL);
            }
            killed = 1;
            deadline_ms = now + 10000;
        } else if (now >= deadline_ms) {
            for (int r = 0; r < n; r++)
                if (codes[r] == -1)
                    fprintf(stderr, "%s: rank %d (pid %d) could not be reaped after SIGKILL "
                                    "(stuck in the driver?); left behind\n", what, r,
                            (int)pids[r]);
            break;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

#define RANK_WATCHDOG_MAX 8 /* ranks rank_watchdog_run forks at most */

/* A rank's body, in its child: rank r of n. Rank 0 writes what it shares to out[q] for each
 * q > 0; rank r > 0 reads it from `in`. Returns the rank's exit code. */
typedef int (*rank_watchdog_body)(int rank, int n, int in, const int *out, void *arg);

/* Fork n ranks of `what` (1 <= n <= RANK_WATCHDOG_MAX), each with its watchdog of `seconds` and
 * a pipe from rank 0 (only rank 0 keeps the write ends: a rank 0 that dies first gives the
 * others EOF), run body in each and reap them (rank_watchdog_reap, deadline: seconds + grace_s).
 * 0, or -1 when a pipe or a fork failed (before any rank ran). */
static inline int rank_watchdog_run(const char *what, int n, int seconds, int grace_s,
                                    rank_watchdog_body body, void *arg, pid_t *pids, int *codes)
{
    int pipes[RANK_WATCHDOG_MAX][2];
    if (n < 1 || n > RANK_WATCHDOG_MAX) return -1;
    for (int r = 0; r < n; r++)
        if (pipe(pipes[r]) != 0) {
            while (r-- > 0) close(pipes[r][0]), close(pipes[r][1]);
            return -1;
        }
    fflush(NULL);
    int forked = 0;
    for (; forked < n; forked++) {
        const int r = forked;
        pids[r] = fork();
        if (pids[r] < 0) break;
        if (pids[r] == 0) {
            rank_watchdog_arm(what, r, seconds);
            int out[RANK_WATCHDOG_MAX];
            for (int q = 0; q < n; q++) {
                out[q] = pipes[q][1];
                if (q != r) close(pipes[q][0]);
                if (r != 0) close(pipes[q][1]);
            }
            int rc = body(r, n, pipes[r][0], out, arg);
            fflush(NULL);
            _exit(rc);
        }
    }
    for (int r = 0; r < n; r++) close(pipes[r][0]), close(pipes[r][1]);
    if (forked < n) { /* the ranks forked find EOF and end; reap them */
        rank_watchdog_reap(what, forked, pids, codes, rank_watchdog_now_ms() + 1000.0 * (seconds + grace_s));
        return -1;
    }
    rank_watchdog_reap(what, n, pids, codes, rank_watchdog_now_ms() + 1000.0 * (seconds + grace_s));
    return 0;
}

#endif /* VG_TEST_RANK_WATCHDOG_H */
