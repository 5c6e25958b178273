# SPDX-License-Identifier: Apache-2.0
fails 1 "$T/err" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 100000 --peer /dev/zero &&
grep -q "cannot read the peer file /dev/zero: not a regular file (a character device)" "$T/err" &&
fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --sizes 896 --iters 100000 --peer "$T" &&
grep -q "cannot read the peer file $T: it is a directory" "$T/err" &&
fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --stream-from /dev/zero &&
grep -q "cannot read the request file /dev/zero: not a regular file (a character device)" "$T/err" &&
mkfifo "$T/fifo" || exit 1
{ sleep 1; peers "$T/fifo"; } &
bench --peer "$T/fifo" >"$T/out" 2>"$T/err"; rc=$?; cat "$T/out" "$T/err"
test $rc -eq 0 && grep -q "waiting for data on the FIFO $T/fifo" "$T/err" && grep -q "7.25 *3.50" "$T/out"
