#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/trace-graphs.sh on the device (ctest: trace.graphs.cuda), with $VG (the command),
# $VG_SRC, $BUILD (the build folder) and $T (an empty folder) in the environment:
#   - `vg lm bench` on qwen2-tiny at two batch sizes: two decode graphs summarised, each with
#     its GEMMs, attention and argmax, the busy time within the span;
#   - the trace kept with --trace, and a second run naming the same file refused (exit 2), the
#     file unchanged; the library itself refuses an existing VG_KERNEL_TRACE, leaving it as it was.
# SKIP (77) without an NVIDIA device, unless VG_REQUIRE_DEVICE=1.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  [ "${VG_REQUIRE_DEVICE:-0}" = 1 ] && fail "no NVIDIA device, and VG_REQUIRE_DEVICE=1"
  echo "SKIP: no NVIDIA device"; exit 77
fi
rm -rf "$T" && mkdir -p "$T" || fail "cannot make $T"

"$VG_SRC/scripts/trace-graphs.sh" "$BUILD" --trace "$T/trace.tsv" --json -- "$VG" lm bench \
    --config qwen2-tiny --batch 1,4 --prompt 8 --new 24 --quiet --backend cuda >"$T/summary.json" \
    2>"$T/err"
status=$?
[ "$status" -eq 0 ] || { cat "$T/err" >&2; fail "trace-graphs.sh exited $status"; }
python3 - "$T/summary.json" <<'PY' || fail "the summary is not what a traced lm bench gives"
import json, sys
doc = json.load(open(sys.argv[1]))
graphs = doc["graphs"]
assert len(graphs) >= 2, f"{len(graphs)} graphs replayed 10 times; the two batch sizes' decode graphs expected"
assert doc["eager_kernels"] > 0, "the eager steps' kernels are missing"
for g in graphs:
    roles = {r["role"] for r in g["roles"]}
    for need in ("gemm", "attention", "argmax"):
        assert need in roles, f"graph {g['graph_id']}: no {need} among {sorted(roles)}"
    assert 0 < g["busy_us"] <= g["span_us"] + 1e-6, g
    assert g["kernels"] == sum(r["kernels"] for r in g["roles"]), g
print("graphs:", [(g["graph_id"], g["kernels"], round(g["span_us"], 1)) for g in graphs])
PY
tail -n 1 "$T/trace.tsv" | grep -q '^# end dropped=0$' || fail "the kept trace has no end line"

cp "$T/trace.tsv" "$T/before"
"$VG_SRC/scripts/trace-graphs.sh" "$BUILD" --trace "$T/trace.tsv" -- "$VG" info >/dev/null 2>"$T/err2"
[ $? -eq 2 ] || fail "an existing --trace file was not refused with exit 2"
grep -q "never overwrites" "$T/err2" || fail "the refusal does not say why: $(cat "$T/err2")"
cmp -s "$T/before" "$T/trace.tsv" || fail "the existing trace file was changed"

CUDA_INJECTION64_PATH=$BUILD/lib/libvg_kernel_trace.so VG_KERNEL_TRACE=$T/trace.tsv \
    "$VG" info --backend cuda >/dev/null 2>"$T/err3"
grep -q "an existing file is never overwritten" "$T/err3" || fail "the library did not say it refused: $(cat "$T/err3")"
cmp -s "$T/before" "$T/trace.tsv" || fail "the library changed an existing file"
echo "ok"
