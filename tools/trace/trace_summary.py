#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where the replays of each CUDA graph spend their time, from a kernel trace.

    trace_summary.py TRACE [--min-replays N] [--json]

TRACE is what libvg_kernel_trace.so wrote (tools/trace/kernel_trace.c): one kernel a line,
graph_id, correlation_id, start_ns, end_ns, name, tab-separated. The kernels of one replay share
the graph launch's correlation id. For every graph replayed at least N times (default 10; the
GEMM and decode tuners replay their timing graphs a few times each), in the order the graphs
first ran, it prints the kernels a replay and the medians over its replays of (only the replays
with the most common kernel count: a replay the trace's end cut, or a graph whose device-side
loop runs a different number of times per launch, is counted but not summarised):
  span   from the first kernel's start to the last kernel's end
  busy   the time some kernel of the replay ran (so span - busy is the gaps between kernels)
  each role's time, its kernels' time and its kernels a replay (roles below; a kernel no
         role names is shown under its own name). A kernel's time is its duration; its own
         time is the part of it after every earlier kernel of the replay had ended, so the
         roles' own times add up to the busy time. A kernel launched early (a programmatic
         launch, a library's reduction) waits inside its duration for the one before it: that
         wait is the earlier kernel's own time, not its own.
A kernel without timestamps (still running when the program exited) is left out, and said on
stderr. JSON (--json): {"eager_kernels", "graphs": [{"graph_id", "replays", "replays_used",
"kernels", "span_us", "busy_us", "roles": [{"role", "own_us", "kernel_us", "kernels"}]}]}.
Exit status: 0; 1 when the trace cannot be read, is cut short (no end line, or CUPTI dropped
records) or has no graph replayed N times; 2 for a wrong command line.
"""
import argparse
import json
import re
import signal
import statistics
import sys
from collections import Counter, OrderedDict, defaultdict
from functools import lru_cache

# First match wins. Names are as CUPTI reports them (mangled for C++ kernels).
ROLES = [
    ("argmax", re.compile(r"k_argmax")),
    ("attention", re.compile(r"k_decode_tc|k_paged_attention|k_paged_split|k_attention|k_fi_plan|"
                             r"BatchDecode|BatchPrefill|SinglePrefill|MergeState")),
    ("gemm_splitk_reduce", re.compile(r"splitKreduce|splitK_reduce", re.I)),
    ("gemm", re.compile(r"k_gemm|nvjet|xmma|cutlass|gemm|gemv", re.I)),
    ("norm", re.compile(r"k_rmsnorm|k_layernorm|k_norm")),
    ("rotary/kv", re.compile(r"k_rotary|k_kv_store")),
    ("silu_mul", re.compile(r"k_silu_mul")),
    ("gather", re.compile(r"k_gather")),
]


def short_name(name):
    """A readable name for a kernel no role matched: a mangled C++ name's identifier, with its
    namespaces (_Z10k_epilogueI... gives k_epilogue, _ZN10flashinfer6kernelI... flashinfer::kernel),
    else the name up to its parameters, cut."""
    m = re.match(r"_Z(N?)", name)
    if m:
        parts, i = [], m.end()
        while True:
            n = re.match(r"\d+", name[i:])
            if not n:
                break
            length = int(n.group(0))
            start = i + n.end()
            parts.append(name[start:start + length])
            i = start + length
            if not m.group(1):  # not a nested name: one identifier
                break
        if parts:
            return "::".join(parts)
    return name.split("(")[0][:60]


@lru_cache(maxsize=None)
def role_of(name):
    return next((r for r, pattern in ROLES if pattern.search(name)), None) or short_name(name)


def read_trace(path):
    """({(graph_id, correlation_id): [(start, end, name)]} in first-seen order, the kernels
    outside graphs, the kernels without timestamps)."""
    replays = OrderedDict()
    eager = unfinished = 0
    ended = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("#"):
                end = re.fullmatch(r"# end dropped=(\d+)", line)
                if end:
                    ended = True
                    if int(end.group(1)):
                        raise ValueError(f"{path}: CUPTI dropped {end.group(1)} records: the trace is "
                                         "incomplete")
                continue
            if not line:
                continue
            fields = line.split("\t", 4)
            if len(fields) != 5:
                raise ValueError(f"{path}:{number}: expected 5 tab-separated fields, found {len(fields)}")
            try:
                graph, corr, start, end = (int(x) for x in fields[:4])
            except ValueError:
                raise ValueError(f"{path}:{number}: graph, correlation, start and end must be integers") from None
            if start == 0 or end == 0:  # still running when the trace was flushed at exit
                unfinished += 1
                continue
            if end < start:
                raise ValueError(f"{path}:{number}: the kernel ends before it starts")
            if graph == 0:
                eager += 1
                continue
            replays.setdefault((graph, corr), []).append((start, end, fields[4]))
    if not ended:
        raise ValueError(f"{path}: no end line: the traced program did not exit normally, or the "
                         "trace failed (see its stderr)")
    return replays, eager, unfinished


def own_times(kernels):
    """[(name, own_ns, duration_ns)] in start order: own is the part of a kernel after every
    earlier one had ended (their sum is the union of the intervals: the busy time)."""
    out, reach = [], None
    for start, end, name in sorted(kernels):
        own = end - start if reach is None else max(0, end - max(start, reach))
        reach = end if reach is None else max(reach, end)
        out.append((name, own, end - start))
    return out


def summarize(replays, min_replays):
    by_graph = OrderedDict()
    for (graph, _), kernels in replays.items():
        by_graph.setdefault(graph, []).append(kernels)
    graphs = []
    for graph, runs in by_graph.items():
        if len(runs) < min_replays:
            continue
        counts = Counter(len(k) for k in runs)
        kernels_a_replay = counts.most_common(1)[0][0]
        whole = [k for k in runs if len(k) == kernels_a_replay]  # a replay cut by the trace's end is left out
        timed = [own_times(k) for k in whole]
        # per replay, each role's [own ns, duration ns, kernels]; roles in the order first seen
        sums = []
        roles = OrderedDict()
        for kernels in timed:
            mine = defaultdict(lambda: [0, 0, 0])
            for name, own, dur in kernels:
                role = role_of(name)
                roles.setdefault(role, None)
                acc = mine[role]
                acc[0] += own
                acc[1] += dur
                acc[2] += 1
            sums.append(mine)
        per_role = []
        for role in roles:
            acc = [m.get(role, (0, 0, 0)) for m in sums]
            per_role.append({"role": role, "own_us": statistics.median(a[0] for a in acc) / 1e3,
                             "kernel_us": statistics.median(a[1] for a in acc) / 1e3,
                             "kernels": Counter(a[2] for a in acc).most_common(1)[0][0]})
        per_role.sort(key=lambda r: (-r["own_us"], r["role"]))
        spans = [max(e for _, e, _ in k) - min(s for s, _, _ in k) for k in whole]
        graphs.append({"graph_id": graph, "replays": len(runs), "replays_used": len(whole),
                       "kernels": kernels_a_replay,
                       "span_us": statistics.median(spans) / 1e3,
                       "busy_us": statistics.median(sum(own for _, own, _ in k) for k in timed) / 1e3,
                       "roles": per_role})
    return graphs


def main(argv):
    parser = argparse.ArgumentParser(prog="trace_summary.py", description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--min-replays", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    args = parser.parse_args(argv)
    if args.min_replays < 1:
        parser.error("--min-replays must be at least 1")
    try:
        replays, eager, unfinished = read_trace(args.trace)
    except (OSError, ValueError) as e:
        print(f"trace_summary: {e}", file=sys.stderr)
        return 1
    graphs = summarize(replays, args.min_replays)
    if not graphs:
        print(f"trace_summary: {args.trace}: no graph replayed at least {args.min_replays} times "
              f"({len(replays)} graph launches, {eager} kernels outside graphs)", file=sys.stderr)
        return 1
    if unfinished:
        print(f"trace_summary: {unfinished} kernels had no timestamps (still running when the "
              "program exited): left out", file=sys.stderr)
    if args.json:
        json.dump({"eager_kernels": eager, "graphs": graphs}, sys.stdout, indent=1)
        print()
        return 0
    print(f"{eager} kernels outside graphs")
    for g in graphs:
        used = "" if g["replays_used"] == g["replays"] else f" ({g['replays_used']} with that many)"
        print(f"graph {g['graph_id']}: {g['replays']} replays, {g['kernels']} kernels a replay{used}, "
              f"span {g['span_us']:.1f} us, busy {g['busy_us']:.1f} us (medians)")
        print("       own us  kernel us  kernels  role")
        for r in g["roles"]:
            print(f"  {r['own_us']:11.1f} {r['kernel_us']:10.1f} {r['kernels']:8d}  {r['role']}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly
    sys.exit(main(sys.argv[1:]))
