/* SPDX-License-Identifier: Apache-2.0 */
/* --tp N for the lm commands: the launcher and the ranks' side (tp_launch.h). */
#define _GNU_SOURCE
#include "tp_launch.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stats.h"
#include "vg_cli.h"

extern char **environ;

#define GRACE_MS 5000      /* beyond the communicator's timeout, before the parent terminates */
#define POLL_MS 20
#define DEFAULT_TIMEOUT_MS 60000

/* A whole number in [lo, hi] from the environment: 1, or 0 where the variable is unset, or -1
 * where it is set to anything else (empty, a sign, spaces or a unit included), as the core reads
 * VG_COMM_TIMEOUT_MS (core/comm.c): what the launcher accepts, the ranks accept too. */
static int env_int(const char *name, long lo, long hi, long *out)
{
    const char *v = getenv(name);
    char *end = NULL;
    if (!v) return 0;
    if (!(v[0] >= '0' && v[0] <= '9')) return -1;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < lo || x > hi) return -1;
    *out = x;
    return 1;
}

int vg_tp_rank_from_env(const char *cmd, int tp, vg_tp_rank *r)
{
    memset(r, 0, sizeof *r);
    if (tp < 2 || !getenv("VG_TP_RANK")) return 0;
    long rank = 0, size = 0, dev = 0;
    if (env_int("VG_TP_RANK", 0, 1 << 20, &rank) != 1 || env_int("VG_TP_SIZE", 1, 1 << 20, &size) != 1 ||
        rank >= size || env_int("VG_TP_DEVICE", 0, 1 << 20, &dev) < 0)
        return vg_cli_usage(cmd, "VG_TP_RANK '%s', VG_TP_SIZE '%s' or VG_TP_DEVICE '%s' is not a rank "
                                 "of a size and a device index", getenv("VG_TP_RANK"),
                            getenv("VG_TP_SIZE") ? getenv("VG_TP_SIZE") : "",
                            getenv("VG_TP_DEVICE") ? getenv("VG_TP_DEVICE") : "");
    if (size != tp)
        return vg_cli_usage(cmd, "VG_TP_SIZE %ld disagrees with --tp %d", size, tp);
    const char *hex = getenv("VG_TP_ID");
    if (!hex || vg_comm_id_from_hex(hex, &r->id) != VG_OK)
        return vg_cli_usage(cmd, "VG_TP_ID: %s", hex ? vg_last_error() : "not set");
    r->rank = (int)rank, r->size = (int)size, r->device = (int)dev;
    return 1;
}

int vg_tp_open(const char *cmd, const vg_tp_rank *r, const char *backend, vg_runtime **rt,
               vg_comm **comm)
{
    vg_runtime_options ro;
    vg_runtime_options_init(&ro);
    ro.backend = backend;
    ro.device = r->device;
    *rt = NULL, *comm = NULL;
    /* rank 0 speaks for the run: the others log errors only (their warnings are rank 0's) */
    if (r->rank != 0 && vg_log_get_level() > VG_LOG_ERROR) vg_log_set_level(VG_LOG_ERROR);
    if (vg_runtime_open(&ro, rt) != VG_OK)
        return vg_cli_fail(cmd, "rank %d: device %d: %s", r->rank, r->device, vg_last_error());
    if (vg_comm_create(*rt, &r->id, r->size, r->rank, comm) != VG_OK) {
        int rc = vg_cli_fail(cmd, "rank %d: %s", r->rank, vg_last_error());
        vg_runtime_close(*rt);
        *rt = NULL;
        return rc;
    }
    return 0;
}

/* ---- the parent ------------------------------------------------------------------------------ */

/* The environment of rank `rank`: the parent's without VG_TP_*, then the rank's four. */
static char **rank_env(int rank, int size, int device, const char *hex)
{
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 5, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "VG_TP_", 6) != 0) env[k++] = environ[i];
    char buf[64];
    snprintf(buf, sizeof buf, "VG_TP_RANK=%d", rank);
    env[k++] = strdup(buf);
    snprintf(buf, sizeof buf, "VG_TP_SIZE=%d", size);
    env[k++] = strdup(buf);
    snprintf(buf, sizeof buf, "VG_TP_DEVICE=%d", device);
    env[k++] = strdup(buf);
    size_t hl = strlen(hex) + 16;
    char *id = malloc(hl);
    if (id) snprintf(id, hl, "VG_TP_ID=%s", hex);
    env[k++] = id;
    for (size_t i = k - 4; i < k; i++)
        if (!env[i]) return NULL; /* out of memory: the caller fails (a few bytes leak) */
    return env;
}

static void env_free(char **env)
{
    if (!env) return;
    for (size_t i = 0; env[i]; i++)
        if (strncmp(env[i], "VG_TP_", 6) == 0) free(env[i]);
    free(env);
}

/* Start rank `rank`: exec of this binary with "vg" and the command's arguments. */
static pid_t start_rank(char **args, char **env)
{
    pid_t parent = getpid(), pid = fork();
    if (pid != 0) return pid;
    /* the child: only async-signal-safe calls until exec */
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a launcher that dies takes its ranks along */
    if (getppid() != parent) _exit(127);
    execve("/proc/self/exe", args, env);
    static const char msg[] = "vg: cannot exec /proc/self/exe for a tensor-parallel rank\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(127);
}

/* Wait for every rank; report each failure by rank; terminate the rest once the communicator's
 * timeout and a grace period have passed since the first failure. The run's exit status. */
static int wait_ranks(const char *cmd, pid_t *pids, int n, long timeout_ms)
{
    int left = n, failed = -1, rc = 0;
    double deadline = 0;
    while (left) {
        int progressed = 0;
        for (int r = 0; r < n; r++) {
            if (pids[r] <= 0) continue;
            int status;
            pid_t w = waitpid(pids[r], &status, WNOHANG);
            if (w == 0) continue;
            progressed = 1;
            pids[r] = 0, left--;
            if (w < 0) {
                rc = vg_cli_fail(cmd, "rank %d: waitpid: %s", r, strerror(errno));
            } else if (WIFSIGNALED(status)) {
                rc = vg_cli_fail(cmd, "rank %d was killed by signal %d (%s)", r, WTERMSIG(status),
                                 strsignal(WTERMSIG(status)));
            } else if (WEXITSTATUS(status)) {
                rc = vg_cli_fail(cmd, "rank %d exited with status %d", r, WEXITSTATUS(status));
            } else {
                continue;
            }
            if (failed < 0) failed = r, deadline = vg_now_ms() + (double)timeout_ms + GRACE_MS;
        }
        if (failed >= 0 && left && vg_now_ms() > deadline) {
            for (int r = 0; r < n; r++) {
                if (pids[r] <= 0) continue;
                vg_cli_fail(cmd, "rank %d did not end within %ld ms of rank %d's failure: terminated",
                            r, timeout_ms + GRACE_MS, failed);
                kill(pids[r], SIGKILL);
                waitpid(pids[r], NULL, 0);
                pids[r] = 0, left--;
            }
        }
        if (left && !progressed) {
            struct timespec t = {0, POLL_MS * 1000000L};
            nanosleep(&t, NULL);
        }
    }
    return rc;
}

int vg_tp_launch(const char *cmd, int tp, const char *backend, const vg_lm_info *info, int argc,
                 char **argv)
{
    if (vg_lm_tp_check(info, tp) != VG_OK) return vg_cli_usage(cmd, "--tp %d: %s", tp, vg_last_error());
    long timeout_ms = DEFAULT_TIMEOUT_MS;
    if (env_int("VG_COMM_TIMEOUT_MS", 1, 2147483647L, &timeout_ms) < 0)
        return vg_cli_usage(cmd, "VG_COMM_TIMEOUT_MS '%s' is not a whole number of milliseconds in "
                                 "[1, 2^31 - 1]", getenv("VG_COMM_TIMEOUT_MS"));
    vg_runtime_options ro;
    vg_runtime_options_init(&ro);
    ro.backend = backend;
    vg_runtime *rt = NULL;
    if (vg_runtime_open(&ro, &rt) != VG_OK) return vg_cli_fail(cmd, "%s", vg_last_error());
    const char *name = vg_runtime_backend_name(rt);
    if (!(vg_runtime_caps(rt) & VG_CAP_COMM)) {
        int rc = vg_cli_usage(cmd, "--tp %d: backend '%s' has no communicators (VG_CAP_COMM); tensor "
                                   "parallelism needs one (cuda: NCCL, kunlun_stub)", tp, name);
        vg_runtime_close(rt);
        return rc;
    }
    vg_probe_report *probe = calloc(1, sizeof *probe);
    int devices = 1;
    if (probe) {
        probe->struct_size = sizeof *probe;
        if (vg_backend_probe(backend ? backend : name, probe) == VG_OK && probe->device_count > 0)
            devices = probe->device_count;
        free(probe);
    }
    vg_comm_id id;
    char hex[2 * sizeof(vg_comm_id) + 1];
    int rc = 0;
    /* the id stays valid while this process lives (NCCL's bootstrap root runs in it) */
    if (vg_comm_id_make(rt, &id) != VG_OK || vg_comm_id_to_hex(&id, hex, sizeof hex) != VG_OK)
        rc = vg_cli_fail(cmd, "%s", vg_last_error());
    char **args = calloc((size_t)argc + 2, sizeof *args);
    pid_t *pids = calloc((size_t)tp, sizeof *pids);
    if (!rc && (!args || !pids)) rc = vg_cli_fail(cmd, "out of memory");
    if (!rc) {
        args[0] = "vg";
        for (int i = 0; i < argc; i++) args[i + 1] = argv[i];
        fflush(NULL); /* nothing buffered is written twice */
    }
    int started = 0;
    for (int r = 0; !rc && r < tp; r++) {
        char **env = rank_env(r, tp, r % devices, hex);
        pids[r] = env ? start_rank(args, env) : -1;
        env_free(env);
        if (pids[r] < 0) {
            pids[r] = 0;
            rc = vg_cli_fail(cmd, "cannot start rank %d: %s", r, env ? strerror(errno) : "out of memory");
        } else {
            started++;
        }
    }
    if (started) {
        /* a rank that could not start: the started ones fail on the communicator's timeout */
        int w = wait_ranks(cmd, pids, tp, timeout_ms);
        if (!rc) rc = w;
    }
    free(args);
    free(pids);
    vg_runtime_close(rt);
    return rc ? 1 : 0;
}
