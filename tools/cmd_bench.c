/* SPDX-License-Identifier: Apache-2.0 */
/* vg bench: measurements on the selected backend (see docs/performance.md for the method).
 *   vg bench launch   replay of an N-kernel graph against N eager launches (bench_launch.c)
 *   vg bench runner   the runner's dispatch overhead, and an N-op forward eager vs graphed
 *                     (bench_runner.c)
 *   vg bench ipc      cross-process tensors through the IPC pool cache, on and off (bench_ipc.c) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "vg_cli.h"

static const char k_usage[] =
    "usage: vg bench launch [--backend B] [--kernels N] [--iters N] [--elems N] [--json]\n"
    "       vg bench runner [--backend B] [--kernels N] [--iters N] [--launch-us X] [--json]\n"
    "       vg bench ipc [--backend B] [--tensors N] [--pools P] [--json]\n"
    "\n"
    "  launch   replay of an N-kernel graph against N eager launches\n"
    "  runner   the graph runner's own cost per call, and an N-op forward eager against graphed\n"
    "  ipc      tensors shared across processes, through the IPC pool cache and without\n"
    "'vg bench launch --help', 'vg bench runner --help' and 'vg bench ipc --help' describe them.\n";

static const char k_launch_help[] =
    "usage: vg bench launch [--backend B] [--kernels N] [--iters N] [--elems N] [--json]\n"
    "\n"
    "Enqueues N small kernels (axpby over --elems floats) eagerly, and replays the same N kernels\n"
    "captured as one graph; reports device time per kernel (median, p10, p90 over --iters\n"
    "repetitions, from device events), host time to enqueue, and the capture and instantiate\n"
    "times.\n"
    "  --backend B   a backend name or the path of a plugin .so\n"
    "  --kernels N   kernels, 1..100000 (default 500)\n"
    "  --iters N     timed repetitions, 1..1000000 (default 200)\n"
    "  --elems N     floats per kernel, 1..268435456 (default 1024)\n"
    "  --json        print the results as one JSON document\n";

static const char k_runner_help[] =
    "usage: vg bench runner [--backend B] [--kernels N] [--iters N] [--launch-us X] [--json]\n"
    "\n"
    "The runner's own cost per call (a replay through vg_runner_run against a raw graph launch of\n"
    "the same work), and an N-op forward run eagerly (mode none) against one graph (mode full).\n"
    "  --backend B     a backend name or the path of a plugin .so\n"
    "  --kernels N     ops in the forward, 1..100000 (default 500)\n"
    "  --iters N       timed forwards, 1..1000000 (default 200)\n"
    "  --launch-us X   VG_STUB_LAUNCH_US, the simulated launch cost of kunlun_stub in us,\n"
    "                  0..1000000\n"
    "  --json          print the results as one JSON document\n";

int vg_cmd_bench(int argc, char **argv)
{
    if (argc < 2 || vg_cli_is_help(argv[1])) {
        fputs(k_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "ipc") == 0) return vg_cmd_bench_ipc(argc, argv);
    int is_runner = strcmp(argv[1], "runner") == 0;
    if (strcmp(argv[1], "launch") != 0 && !is_runner)
        return vg_cli_usage("bench", "unknown benchmark '%s'; the benchmarks are launch, runner "
                                     "and ipc", argv[1]);
    int kernels = 500, elems = 1024, iters = 200, json = 0;
    double launch_us = -1;
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    const vg_opt opts[] = { /* the last one is launch's or runner's own */
        {"--backend", VG_OPT_STRING, &o.backend, 0, 0, "a backend name or the path of a plugin .so"},
        {"--kernels", VG_OPT_INT, &kernels, 1, 100000, NULL},
        {"--iters", VG_OPT_INT, &iters, 1, 1000000, NULL},
        {"--json", VG_OPT_FLAG, &json, 0, 0, NULL},
        is_runner ? (vg_opt){"--launch-us", VG_OPT_DOUBLE, &launch_us, 0, 1e6, NULL}
                  : (vg_opt){"--elems", VG_OPT_INT, &elems, 1, 1 << 28, NULL},
    };
    int prc = vg_opt_parse(is_runner ? "bench runner" : "bench launch",
                           is_runner ? k_runner_help : k_launch_help, opts,
                           (int)(sizeof opts / sizeof opts[0]), argc, argv, 2);
    if (prc) return prc == VG_OPT_HELP ? 0 : prc;
    if (launch_us >= 0) {
        char us[32];
        snprintf(us, sizeof us, "%.9g", launch_us);
        setenv("VG_STUB_LAUNCH_US", us, 1);
    }
    vg_runtime *rt = NULL;
    if (vg_runtime_open(&o, &rt) != VG_OK)
        return vg_cli_fail("bench", "cannot open a backend: %s", vg_last_error());
    int rc = is_runner ? vg_bench_runner(rt, kernels, iters, json)
                       : vg_bench_launch(rt, kernels, elems, iters, json);
    vg_runtime_close(rt);
    return rc;
}
