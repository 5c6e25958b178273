# SPDX-License-Identifier: Apache-2.0
"""Host cost per call of vgraph.GraphWrapper, against a bare ctypes call (the floor of anything
that crosses into vg) and, on CUDA, against torch.cuda.graph of the same callable.

  python3 python/benchmarks/graph_overhead.py [--backend kunlun_stub|cuda] [--calls N]

On a CPU backend (kunlun_stub, NumPy) it times: the bare ctypes call; the wrapper around a NumPy
callable, which the stub runs eagerly (vg cannot capture NumPy's work), less the callable's own
time; and the replay of a captured graph, with a callable that enqueues only vg's own work
(foreign=False, vg_op_axpby on the wrapper's stream), through the wrapper's replay path and
through the general path (the runner's callbacks into Python), each less vg's graph launch alone.
On cuda (torch), the wrapper around a small torch callable against torch.cuda.graph with the
inputs copied in, on torch's default stream and on a side stream. Prints microseconds per call.
"""
import argparse
import contextlib
import ctypes
import statistics
import time

import numpy as np

import vgraph
from vgraph._lib import libvg

ROWS, COLS, SIZES = 8, 64, [8, 16]


def per_call_us(fn, calls, sync=None, repeats=5):
    """Median over `repeats` batches of `calls` calls, microseconds per call."""
    for _ in range(min(calls, 200)):
        fn()
    if sync:
        sync()
    out = []
    for _ in range(repeats):
        t = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        if sync:
            sync()
        out.append((time.perf_counter_ns() - t) / calls / 1e3)
    return statistics.median(out)


def axpby():
    fn = libvg().vg_op_axpby
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_float, ctypes.c_void_p, ctypes.c_float,
                   ctypes.c_void_p]
    return fn


def vg_work_wrapper(rt, fast=True):
    """A wrapper whose callable enqueues only vg's work: y = 2 x, captured on any backend with
    graphs. None where this vgraph has no foreign=False."""
    op = axpby()

    def f(x):
        y = np.zeros_like(x)  # axpby reads y (beta 0): no NaN garbage
        assert op(g.stream.handle, x.size, 2.0, x.ctypes.data, 0.0, y.ctypes.data) == 0, vgraph.VgError
        return y
    try:
        g = vgraph.GraphWrapper(f, rt, "full", capture_sizes=SIZES, foreign=False)
    except TypeError:
        return None
    if not fast:
        g._replay_ok = False  # every call through the runner's callbacks (the path before replay in C)
    return g


def cpu(args):
    rt = vgraph.Runtime(args.backend, options={"VG_STUB_LAUNCH_US": "0"} if args.backend == "kunlun_stub" else None)
    x = np.random.default_rng(0).standard_normal((ROWS, COLS)).astype(np.float32)
    res = {}
    ident = vgraph.GraphWrapper(lambda a: a, rt, "full", capture_sizes=SIZES)
    ident(x)
    h = ident._runner
    floor = libvg().vg_runner_num_buckets
    res["bare ctypes call (vg_runner_num_buckets)"] = per_call_us(lambda: floor(h), args.calls)
    callable_us = per_call_us(lambda: (lambda a: a)(x), args.calls)
    res["eager path: wrapper(x) less the callable"] = per_call_us(lambda: ident(x), args.calls) - callable_us
    g = vg_work_wrapper(rt)
    if g is None:
        print("(this vgraph has no GraphWrapper(foreign=False): no replay on a CPU backend)")
    else:
        ref = 2 * x
        for n in (ROWS, ROWS - 3):  # a hit and a padded call
            for _ in range(3):
                got = g(x[:n].copy())
                assert np.array_equal(got, ref[:n]), (n, g.last_run, np.abs(got - ref[:n]).max())
        assert g.last_run["path"] == "full", g.last_run
        # vg's part of a replay: the graph launch alone, on the same stream
        exec_ = launch_only(g)
        launch_us = per_call_us(exec_, args.calls)
        res["  (graph launch alone, vg_graph_exec_launch)"] = launch_us
        res["replay: wrapper(x) less the launch"] = per_call_us(lambda: g(x), args.calls) - launch_us
        slow = vg_work_wrapper(rt, fast=False)
        for _ in range(3):
            slow(x)
        assert slow.last_run["path"] == "full", slow.last_run
        res["replay through the runner's callbacks, less the launch"] = per_call_us(lambda: slow(x), args.calls) - launch_us
        xp = x[:ROWS - 3].copy()
        res["replay, padded 5 -> 8 rows, less the launch"] = per_call_us(lambda: g(xp), args.calls) - launch_us
    print(f"vgraph {vgraph.__version__} on {rt.backend} (CPU), {args.calls} calls x 5, median, us per call:")
    for k, v in res.items():
        print(f"  {k:58s} {v:8.2f}")
    rt.close()


def launch_only(g):
    """A callable that launches a captured graph of the same callable once per call (vg's floor)."""
    vg = libvg()
    for fn, res, argt in (("vg_graph_capture_begin", ctypes.c_int, [ctypes.c_void_p]),
                          ("vg_graph_capture_end", ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]),
                          ("vg_graph_instantiate", ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]),
                          ("vg_graph_exec_launch", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p])):
        getattr(vg, fn).restype, getattr(vg, fn).argtypes = res, argt
    s = g.stream.handle
    x = np.ones((ROWS, COLS), np.float32)
    y = np.zeros_like(x)
    graph, exe = ctypes.c_void_p(), ctypes.c_void_p()
    assert vg.vg_graph_capture_begin(s) == 0
    assert axpby()(s, x.size, 2.0, x.ctypes.data, 0.0, y.ctypes.data) == 0
    assert vg.vg_graph_capture_end(s, ctypes.byref(graph)) == 0
    assert vg.vg_graph_instantiate(graph, ctypes.byref(exe)) == 0
    g._bench_keep = (x, y, graph, exe)
    launch = vg.vg_graph_exec_launch
    return lambda: launch(exe, s)


def cuda(args):
    import torch
    rt = vgraph.Runtime("cuda", device=torch.cuda.current_device())
    w = torch.randn(COLS, COLS, device="cuda") * 0.1

    def f(x):
        return torch.relu(x @ w) + x

    x = torch.randn(ROWS, COLS, device="cuda")
    res = {}
    sync = torch.cuda.synchronize
    for where in ("default stream", "side stream"):
        side = torch.cuda.Stream() if where == "side stream" else None
        if side is not None:
            side.wait_stream(torch.cuda.current_stream())  # x was made on the default stream
        with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
            g = vgraph.GraphWrapper(f, rt, "full", capture_sizes=SIZES)
            for _ in range(3):
                g(x)
            assert g.last_run["path"] == "full" and torch.allclose(g(x), f(x), rtol=1e-4, atol=1e-5)
            h = g._runner
            floor = libvg().vg_runner_num_buckets
            res["bare ctypes call (vg_runner_num_buckets)"] = per_call_us(lambda: floor(h), args.calls)
            cg = torch.cuda.CUDAGraph()
            sx = x.clone()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                f(sx)
            torch.cuda.current_stream().wait_stream(s)
            with torch.cuda.graph(cg):
                sy = f(sx)

            def torch_call():
                sx.copy_(x)
                cg.replay()
                return sy
            res[f"torch.cuda.graph: copy in + replay ({where})"] = per_call_us(torch_call, args.calls, sync)
            res[f"vgraph.GraphWrapper ({where})"] = per_call_us(lambda: g(x), args.calls, sync)
            g.close()
    print(f"vgraph {vgraph.__version__} on cuda, torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"{args.calls} calls x 5, median, us per call:")
    for k, v in res.items():
        print(f"  {k:58s} {v:8.2f}")
    rt.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None, help="kunlun_stub (default without CUDA torch) or cuda")
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    if args.backend is None:
        try:
            import torch
            args.backend = "cuda" if torch.cuda.is_available() and vgraph.probe("cuda").usable else "kunlun_stub"
        except ImportError:
            args.backend = "kunlun_stub"
    (cuda if args.backend == "cuda" else cpu)(args)


if __name__ == "__main__":
    main()
