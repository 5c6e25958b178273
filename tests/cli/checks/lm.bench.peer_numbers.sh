# SPDX-License-Identifier: Apache-2.0
# Peer lines refused, not misread: a batch or prompt that is not a whole number in range (a cast
# of 1e300 to an integer is undefined), and a second JSON value on the line (it would be lost).
for line in '{"B": 1e300, "eager_ms_per_step": 1}' '{"B": 1.9, "eager_ms_per_step": 1}' \
    '{"B": 1, "prompt": 4.5, "step_ms": 1}' \
    '{"B": 1, "eager_ms_per_step": 1}{"B": 2, "eager_ms_per_step": 2}'; do
  printf '%s\n' "$line" >"$T/peer.jsonl" &&
  fails 1 "$T/err" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 2 --peer "$T/peer.jsonl" &&
  grep -Eq "peer.jsonl:1: (\"(B|prompt)\" must be a whole number|not a line of the peer's output)" "$T/err" || exit 1
done
# what a peer says failed is a note beside the row's "-"
printf '%s\n' '{"B": 1, "eager_error": "CUDA OOM", "static_compiled_ms_per_step": 2.5}' >"$T/peer.jsonl" &&
"$VG" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 2 --peer "$T/peer.jsonl" \
    >"$T/out" 2>"$T/err" && cat "$T/err" && grep -q "batch 1: eager_error: CUDA OOM" "$T/err" &&
# under --tp the launcher fails at once on a missing or bad regular file (not after the ranks' join)
fails 1 "$T/err" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 2 --tp 2 \
    --peer "$T/absent.jsonl" && grep -q "cannot read the peer file" "$T/err" &&
printf '%s\n' '[1]' >"$T/bad.jsonl" &&
fails 1 "$T/err" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 2 --tp 2 \
    --peer "$T/bad.jsonl" && grep -q "bad.jsonl:1: not a line of the peer's output" "$T/err"
