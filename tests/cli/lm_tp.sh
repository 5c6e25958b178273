#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# vg lm generate / bench --tp N (issue 35), from tests/cli/CMakeLists.txt: sh lm_tp.sh CASE, with
# $VG (the command), $VG_SRC, $T (an empty folder) and VG_BACKEND in the environment.
#   same      --tp 2 and --tp 4 print the tokens of --tp 1 and write its logits within F32
#             rounding, on qwen2_tiny and qwen3_tiny, in every mode, with padded decode steps
#             (3 and 4 prompts, capture sizes 1,2,8) and mixed steps (--prefill-chunk)
#   killed    a rank killed during a long generation: the run ends non-zero, naming the rank,
#             within a bounded time
#   stopped   a rank stopped (SIGSTOP): the other fails on the communicator's timeout and the
#             launcher terminates the stopped one; bounded too
#   refused   --tp that the model's heads do not allow, --tp 0, a backend without
#             communicators, a VG_COMM_TIMEOUT_MS the ranks would refuse: exit 2 before any
#             rank starts
#   bench     vg lm bench --tp 2 reports the collectives' share
set -u
case_name=$1
DATA=$VG_SRC/tests/data
fail() { echo "FAIL: $*" >&2; exit 1; }
# every run is bounded: a hang (a rank stuck in a collective or its teardown) fails the run that
# hung, by name, with status 124, instead of running into ctest's timeout with no word
RUN_LIMIT=${VG_TEST_LM_TP_RUN_S:-180}
bounded() { timeout -k 10 "$RUN_LIMIT" "$@"; }
# kunlun_stub runs any number of ranks; a GPU backend one per device: SKIP (77) below 2
TPS="2 4"
if [ "${VG_BACKEND:-kunlun_stub}" != kunlun_stub ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  [ "$gpus" -ge 2 ] || { echo "SKIP: $gpus GPU(s); --tp needs 2"; exit 77; }
  [ "$gpus" -ge 4 ] || TPS=2
  export NCCL_NVLS_ENABLE=0
fi

# max |a - b| / max |b| over logits.* of two outputs <= tol, and the same tensor names
close_logits() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, struct, sys
def load(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n]); d = b[8 + n:]
    out = {}
    for k, v in h.items():
        if k == '__metadata__': continue
        s, e = v['data_offsets']; raw = d[s:e]
        fmt = {'F32': 'f', 'I64': 'q'}[v['dtype']]
        out[k] = struct.unpack('<%d%s' % (len(raw) // struct.calcsize(fmt), fmt), raw)
    return out
a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
if sorted(a) != sorted(b): sys.exit('tensors %s vs %s' % (sorted(a), sorted(b)))
for k in a:
    if k.startswith('sequence') and a[k] != b[k]: sys.exit('%s differs' % k)
    if k.startswith('logits'):
        err = max((abs(x - y) for x, y in zip(a[k], b[k])), default=0); mx = max((abs(y) for y in b[k]), default=0)
        if not err <= tol * mx: sys.exit('%s: max |diff| %g, max |ref| %g' % (k, err, mx))
PY
}

# A run's stderr without what a sanitizer adds at each process's exit (under ASan the launcher and
# every rank print LeakSanitizer's "Suppressions used" block: one per process, so more with --tp).
vg_messages() {
  grep -Ev '^-+$|^Suppressions used:|^ +count +bytes +template|^ +[0-9]+ +[0-9]+ |^$' "$1" || true
}

case $case_name in
same)
  for fx in qwen2_tiny qwen3_tiny; do
    for mode in none piecewise full full_and_piecewise; do
      for prompts in '1,2,3;4,5;6,7,8,9,10,11' '3,1;4,1,5,9,2,6;5,3,5;8,9,7,9,3,2,3,8,4,6,2,6'; do
        for tp in 1 $TPS; do
          o=$T/$fx.$mode.$tp.safetensors
          bounded "$VG" lm generate --model "$DATA/$fx/model" --prompt-ids "$prompts" --max-new-tokens 9 \
            --ignore-eos --mode $mode --capture-sizes 1,2,8 --prefill-chunk 4 --tp $tp \
            --output "$o" >"$T/out.$tp" 2>"$T/err.$tp" ||
            { rc=$?; cat "$T/err.$tp" >&2; fail "$fx $mode --tp $tp: exit $rc (124: hung past $RUN_LIMIT s)"; }
          test -s "$T/out.$tp" || fail "$fx $mode --tp $tp printed nothing"
        done
        for tp in $TPS; do
          cmp "$T/out.1" "$T/out.$tp" || fail "$fx $mode '$prompts': --tp $tp printed other tokens"
          # what --tp 1 logs (rank 0 logs it), and nothing more from the other ranks
          vg_messages "$T/err.1" >"$T/msg.1"
          vg_messages "$T/err.$tp" >"$T/msg.$tp"
          cmp "$T/msg.1" "$T/msg.$tp" || { cat "$T/err.$tp" >&2; fail "$fx $mode --tp $tp: other messages"; }
          close_logits "$T/$fx.$mode.$tp.safetensors" "$T/$fx.$mode.1.safetensors" 1e-5 ||
            fail "$fx $mode '$prompts': --tp $tp logits"
        done
      done
    done
  done
  # the fixtures' reference too, through --expected, on rank 0
  bounded "$VG" lm generate --model "$DATA/qwen3_tiny/model" --input "$DATA/qwen3_tiny/prompts.input.safetensors" \
    --expected "$DATA/qwen3_tiny/prompts.expected.safetensors" --tp 2 >"$T/exp" || fail "--expected with --tp 2"
  test "$(grep -c 'tokens agree' "$T/exp")" -eq 4 || fail "--expected printed $(cat "$T/exp")"
  ;;
killed|stopped)
  # killed: rank 1 gets SIGKILL; stopped: SIGSTOP, so it neither answers nor ends: rank 0's
  # collective times out, and the launcher kills rank 1 once the timeout and its grace are over
  export VG_COMM_TIMEOUT_MS=2000
  "$VG" lm generate --model "$DATA/qwen2_tiny/model" --prompt-ids '1,2,3;4,5,6' --max-new-tokens 4000 \
    --ignore-eos --mode none --tp 2 >/dev/null 2>"$T/err" &
  parent=$!
  victim=
  for i in $(seq 1 200); do # the rank whose environment says VG_TP_RANK=1
    for c in $(pgrep -P $parent); do
      tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx VG_TP_RANK=1 && victim=$c
    done
    test -n "$victim" && break
    sleep 0.05
  done
  test -n "$victim" || { kill $parent; fail "no rank 1 under the launcher"; }
  sleep 0.5
  if [ $case_name = killed ]; then kill -KILL "$victim"; else kill -STOP "$victim"; fi
  start=$(date +%s)
  # bounded even if the launcher hangs: this names the hang and kills it (its ranks die with it)
  ( sleep "$RUN_LIMIT" </dev/null >/dev/null 2>&1
    echo "HUNG: vg lm generate --tp 2 still running $RUN_LIMIT s after rank 1 was $case_name; killed" >&2
    kill -CONT "$victim"; kill -KILL $parent ) 2>/dev/null &
  watchdog=$!
  wait $parent
  rc=$? elapsed=$(($(date +%s) - start))
  kill $watchdog 2>/dev/null
  cat "$T/err" >&2
  test $rc -ne 0 || fail "exit status 0 after rank 1 was $case_name"
  if [ $case_name = killed ]; then
    grep -q "rank 1 was killed by signal 9" "$T/err" || fail "no message naming rank 1"
  else
    grep -q "rank 0 exited with status 1" "$T/err" || fail "rank 0 did not fail on its own"
    grep -q "rank 1 did not end within 7000 ms of rank 0's failure: terminated" "$T/err" ||
      fail "rank 1 was not terminated"
  fi
  # the comm timeout (2 s) plus the launcher's grace (5 s), with room for a slow machine
  test $elapsed -le 30 || fail "the run took $elapsed s to end after rank 1 was $case_name"
  test -z "$(pgrep -P $parent)" || fail "ranks left behind"
  ! kill -0 "$victim" 2>/dev/null || fail "rank 1 is still alive"
  ;;
refused)
  for args in "--tp 3" "--tp 5" "--tp 0"; do
    "$VG" lm generate --model "$DATA/qwen2_tiny/model" --prompt-ids 1,2 --max-new-tokens 2 $args 2>"$T/err"
    rc=$?; cat "$T/err" >&2
    test $rc -eq 2 || fail "$args: exit $rc, not 2"
  done
  grep -q "tp" "$T/err" || fail "--tp 0: no message"
  # a timeout the ranks' communicators would refuse (core/comm.c) is refused before they start
  for bad in "" " 5" "+5" "5ms" "0"; do
    VG_COMM_TIMEOUT_MS="$bad" "$VG" lm generate --model "$DATA/qwen2_tiny/model" --prompt-ids 1,2 \
      --max-new-tokens 2 --tp 2 --backend kunlun_stub 2>"$T/err"
    rc=$?; cat "$T/err" >&2
    test $rc -eq 2 && grep -q "VG_COMM_TIMEOUT_MS '$bad' is not a whole number" "$T/err" ||
      fail "VG_COMM_TIMEOUT_MS='$bad': exit $rc"
  done
  "$VG" lm generate --model "$DATA/qwen2_tiny/model" --prompt-ids 1,2 --max-new-tokens 2 --tp 3 2>"$T/err"
  grep -q "4 attention heads do not split over 3 ranks" "$T/err" || fail "--tp 3: $(cat "$T/err")"
  "$VG" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 4 --new 2 --tp 3 2>"$T/err"
  test $? -eq 2 || fail "bench --tp 3: not exit 2"
  # a device without communicators (the stub made to lack them; opencl below, where present)
  VG_STUB_CAPS=nocomm "$VG" lm generate --model "$DATA/qwen2_tiny/model" --prompt-ids 1,2 --max-new-tokens 2 \
    --tp 2 --backend kunlun_stub 2>"$T/err"
  rc=$?; cat "$T/err" >&2
  test $rc -eq 2 && grep -q "has no communicators" "$T/err" || fail "nocomm --tp 2: exit $rc"
  if "$VG" info --backend opencl >/dev/null 2>&1; then # a backend without communicators
    "$VG" lm generate --model "$DATA/qwen2_tiny/model" --prompt-ids 1,2 --max-new-tokens 2 --tp 2 \
      --backend opencl 2>"$T/err"
    rc=$?; cat "$T/err" >&2
    test $rc -eq 2 && grep -q "has no communicators" "$T/err" || fail "opencl --tp 2: exit $rc"
  fi
  ;;
bench)
  bounded "$VG" lm bench --config qwen2-tiny --dtype f32 --batch 1,3 --prompt 4 --new 3 --tp 2 >"$T/out" 2>"$T/err" ||
    { cat "$T/err" >&2; fail "lm bench --tp 2"; }
  cat "$T/out"
  grep -q "tensor parallel over 2 ranks" "$T/out" && grep -q "comm share" "$T/out" || fail "no collectives' share"
  test "$(grep -c 'tensor parallel over' "$T/out")" -eq 1 || fail "more than rank 0 reported"
  ;;
*) fail "unknown case $case_name" ;;
esac
