# SPDX-License-Identifier: Apache-2.0
printf '%s\n' '{"stream": "vit", "method": "compiled", "error": "RuntimeError(no flash attention)"}' >"$T/p.jsonl" &&
stream --stream 2 --peer "$T/p.jsonl" >"$T/out" 2>"$T/err" && cat "$T/out" "$T/err" &&
grep -q "p.jsonl:1: the stream peer reports an error for method compiled: RuntimeError(no flash attention)" "$T/err" &&
grep -q "requests/s, p50" "$T/out" && ! grep -q "same request list" "$T/out"
