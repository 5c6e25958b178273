# SPDX-License-Identifier: Apache-2.0
{ echo before; encode --output /dev/stdout --quiet --json; echo after; } >>"$T/log"; rc=$?
test $rc -eq 0 && head -n 1 "$T/log" | grep -q "^before$" && tail -c 6 "$T/log" | grep -q "^after$" &&
grep -q "safetensors\|embeddings" "$T/log"
