# SPDX-License-Identifier: Apache-2.0
# The peer file read once: from a pipe and from a FIFO the numbers arrive as from a regular file
# (a second read would find nothing, or wait for a writer that never comes).
printf '%s\n' '{"B": 1, "prompt": 8, "step_ms": 1.25, "device_ms": 1.125}' >"$T/peer.jsonl" &&
cat "$T/peer.jsonl" | "$VG" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 2 \
    --peer /dev/stdin >"$T/out" && cat "$T/out" && grep -Eq "^ +1 +[0-9.]+ +1\.250 +[0-9.]+x +1\.125$" "$T/out" &&
mkfifo "$T/fifo" && { timeout 60 cat "$T/peer.jsonl" >"$T/fifo" & } &&
timeout 60 "$VG" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 2 --peer "$T/fifo" \
    >"$T/out2" && cat "$T/out2" && grep -Eq "^ +1 +[0-9.]+ +1\.250 +[0-9.]+x +1\.125$" "$T/out2"
