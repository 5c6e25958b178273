#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where the vision encoder's device time goes: Nsight Compute times a window of kernels well
# past warm-up and GEMM tuning, one whole forward of that window is cut out (a forward launches
# the gather kernel exactly twice: after the patch embedding and at the end of the merger), and
# its durations are summed by kernel name.
#   scripts/profile-vit.sh BUILD_DIR [SIZE]      SIZE: an image side in pixels (default 224)
# Needs ncu and python3 (the GPU machine has both). Leaves the clocks alone.
set -euo pipefail
build=${1:?usage: profile-vit.sh BUILD_DIR [SIZE]}
size=${2:-224}
csv=$(mktemp)
ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    --launch-skip 9000 --launch-count 1500 \
    "$build/bin/vg" vit bench --sizes "$size" --iters 40 >"$csv" 2>/dev/null || true
python3 - "$csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit("profile-vit: ncu produced no kernel rows")
head = rows[0]; rows = rows[1:]
ki, mi, vi = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
seq = [(r[ki], float(r[vi].replace(",", "")) / 1e6) for r in rows if r[mi] == "gpu__time_duration.sum"]
gathers = [i for i, (name, _) in enumerate(seq) if "gather_rows" in name]
if len(gathers) < 3:
    sys.exit("profile-vit: the window holds no whole forward (%d gathers)" % len(gathers))
one = seq[gathers[0] + 1:gathers[2] + 1]
tot = collections.Counter(); cnt = collections.Counter()
for full, ms in one:
    name = full.split("(")[0][:90]
    tot[name] += ms; cnt[name] += 1
all_ms = sum(tot.values())
print(f"one forward: {len(one)} kernels, {all_ms:.3f} ms of kernel time")
for name, ms in tot.most_common(18):
    print(f"{ms:9.3f} ms {100*ms/all_ms:5.1f}% {cnt[name]:5d}x  {name}")
PY
rm -f "$csv"
