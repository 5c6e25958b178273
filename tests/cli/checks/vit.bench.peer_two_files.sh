# SPDX-License-Identifier: Apache-2.0
peers "$T/peers.jsonl" && head -n 1 "$T/peers.jsonl" >"$T/a.jsonl" && sed -n 2p "$T/peers.jsonl" >"$T/b.jsonl" &&
bench --peer "$T/a.jsonl" --peer "$T/b.jsonl" >"$T/out" && cat "$T/out" &&
grep -q "7.25 *3.50 *[0-9.]*x *| *4.75 *2.25 *[0-9.]*x" "$T/out"
