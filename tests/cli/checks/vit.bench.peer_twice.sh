# SPDX-License-Identifier: Apache-2.0
printf '%s\n' '{"side": 56, "S": 16, "compiled_graph_ms": 9.0}' '{"side": 56, "S": 16, "compiled_graph_ms": 2.25}' >"$T/p.jsonl" &&
bench --peer "$T/p.jsonl" >"$T/out" 2>"$T/err" && cat "$T/out" "$T/err" &&
grep -q "compiled_graph_ms at S=16 was given before; this later line wins" "$T/err" &&
grep -q " 16 |.*| *- *- *- | *- *2.25 " "$T/out"
