#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where a decode step's device time goes: Nsight Compute times a window of kernels among the
# eager decode steps of `vg lm bench` (past the prefills and the GEMM tuning; the kernels are
# those a FULL graph replays, launched one by one), one whole step of the window is cut out (a
# step ends with the argmax kernel), and its durations are summed by role (each GEMM named by
# the kernel before it: qkv, o_proj, gate_up, down, lm_head) and by kernel name.
#   scripts/profile-lm.sh BUILD_DIR [BATCH] [CONFIG] [STEP_CSV]
# STEP_CSV, if given, receives the step's kernels in order (role, kernel, microseconds).
# Needs ncu and python3 (the GPU machine has both). Leaves the clocks alone, so kernels timed one
# at a time may run below full clock: small ones read slower than they run in a graph.
# Under ncu the GEMM tuner's timings mean nothing (every launch is intercepted), so GEMMs take
# cuBLASLt's first pick (VG_CUDA_GEMM_TUNE=0) unless the caller sets VG_CUDA_GEMM_TUNE.
set -euo pipefail
build=${1:?usage: profile-lm.sh BUILD_DIR [BATCH] [CONFIG] [STEP_CSV]}
batch=${2:-1}
config=${3:-qwen2.5-0.5b}
step_csv=${4:-}
csv=$(mktemp)
# Before the window: a prefill step per sequence (~250-370 kernels each), GEMM tuning (~700),
# then 25 of the 82 eager decode steps (~230-330 kernels each).
skip=$((batch * 310 + 700 + 25 * 280))
VG_CUDA_GEMM_TUNE=${VG_CUDA_GEMM_TUNE:-0} ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --print-units base \
    --launch-skip "$skip" --launch-count 1200 \
    "$build/bin/vg" lm bench --config "$config" --batch "$batch" --prompt 512 --new 80 >"$csv" 2>/dev/null || true
python3 - "$csv" "$batch" "$config" "$step_csv" <<'PY'
import csv, sys, collections
path, batch, config, step_csv = sys.argv[1:5]
rows = [r for r in csv.reader(open(path)) if len(r) > 10]
if not rows:
    sys.exit("profile-lm: ncu produced no kernel rows")
head = rows[0]; rows = rows[1:]
ki, mi, vi = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
seq = [(r[ki], float(r[vi].replace(",", "")) / 1e3) for r in rows if r[mi] == "gpu__time_duration.sum"]
ends = [i for i, (name, _) in enumerate(seq) if "k_argmax" in name]
if len(ends) < 2:
    sys.exit("profile-lm: the window holds no whole decode step (%d argmax kernels)" % len(ends))
step = seq[ends[0] + 1:ends[1] + 1]
def short(name):
    return name.split("(")[0].replace("void ", "")[:80]
def is_gemm(name):
    n = name.lower()
    return any(k in n for k in ("gemm", "gemv", "cutlass", "xmma", "nvjet", "splitk", "reduce_kernel"))
role, roles, gathers, ordered = "embed", [], 0, []
for name, us in step:
    n = short(name)
    if is_gemm(name):
        r = role
    else:
        if "gather_rows" in n:
            gathers += 1
            role = "embed" if gathers == 1 else "head_gather"
        elif "rmsnorm_heads" in n:
            pass
        elif "rmsnorm" in n:
            role = {"embed": "qkv", "down": "qkv", "o_proj": "gate_up", "head_gather": "lm_head"}.get(role, role)
        elif "paged" in n.lower() or "decode_tc" in n or "MergeStates" in n:  # vg's kernels; FlashInfer's decode, its merge
            role = "o_proj"
        elif "silu" in n:
            role = "down"
        r = n.split("<")[0]
    ordered.append((r, n, us))
tot = collections.Counter(); cnt = collections.Counter()
for r, n, us in ordered:
    tot[r] += us; cnt[r] += 1
all_us = sum(tot.values())
print(f"{config}, batch {batch}: one decode step, {len(ordered)} kernels, {all_us:.1f} us of kernel time")
print("by role (GEMMs named by the kernel before them):")
for r, us in tot.most_common():
    print(f"  {us:9.1f} us {100 * us / all_us:5.1f}% {cnt[r]:4d}x  {r}")
by_name = collections.Counter(); name_cnt = collections.Counter()
for r, n, us in ordered:
    by_name[n] += us; name_cnt[n] += 1
print("by kernel:")
for n, us in by_name.most_common(16):
    print(f"  {us:9.1f} us {100 * us / all_us:5.1f}% {name_cnt[n]:4d}x  {n}")
if step_csv:
    with open(step_csv, "w") as f:
        f.write("role,kernel,us\n")
        for r, n, us in ordered:
            f.write(f"{r},{n.replace(',', ';')},{us:.2f}\n")
PY
rm -f "$csv"
