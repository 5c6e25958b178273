#!/usr/bin/env bash
# Where the vision encoder's device time goes: Nsight Compute measures every kernel of one
# eager forward of the synthetic 7B tower, and the durations are summed by kernel name.
#   scripts/profile-vit.sh BUILD_DIR [SIZE]      SIZE: an image side in pixels (default 224)
# Needs ncu and python3 (the GPU machine has both). Leaves the clocks alone.
set -euo pipefail
build=${1:?usage: profile-vit.sh BUILD_DIR [SIZE]}
size=${2:-224}
csv=$(mktemp)
# --iters 2: past the first calls (cuBLASLt planning and tuning), one whole eager forward.
ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    --launch-skip 1500 --launch-count 330 \
    "$build/bin/vg" vit bench --sizes "$size" --iters 2 >"$csv" 2>/dev/null || true
python3 - "$csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]; rows = rows[1:]
ki, mi, vi = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
tot = collections.Counter(); cnt = collections.Counter()
for r in rows:
    if r[mi] != "gpu__time_duration.sum": continue
    name = r[ki].split("(")[0].split("<")[0][:60]
    tot[name] += float(r[vi].replace(",", "")) / 1e6; cnt[name] += 1
all_ms = sum(tot.values())
print(f"{len(rows)} kernel launches profiled, {all_ms:.3f} ms of kernel time")
for name, ms in tot.most_common(15):
    print(f"{ms:9.3f} ms {100*ms/all_ms:5.1f}% {cnt[name]:5d}x  {name}")
PY
rm -f "$csv"
