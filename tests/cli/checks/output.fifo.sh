# SPDX-License-Identifier: Apache-2.0
mkfifo "$T/fifo" || exit 1
cat "$T/fifo" >"$T/received.safetensors" &
reader=$!
encode --output "$T/fifo"
rc=$?
test -p "$T/fifo" || { kill $reader; exit 1; }
wait $reader && test $rc -eq 0 &&
encode --output "$T/check.safetensors" --expected "$T/received.safetensors"
