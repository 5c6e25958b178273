# SPDX-License-Identifier: Apache-2.0
# Nothing the command reads or was not asked to replace is lost: an output (--plot,
# --requests-file) naming an input (--peer, --stream-from) is refused before anything runs, and a
# request file is not written when the run is refused (capture sizes the model cannot take).
peers "$T/peer.jsonl" && cp "$T/peer.jsonl" "$T/peer.orig" &&
fails 2 "$T/err" vit bench --config qwen2.5-vl-tiny --dtype f32 --sizes 56 --iters 1 --peer "$T/peer.jsonl" \
    --plot "$T/peer.jsonl" && grep -q "\-\-plot .* is the same file as --peer" "$T/err" &&
cmp "$T/peer.jsonl" "$T/peer.orig" &&
printf '%s\n' '{"images": [[56, 56]]}' >"$T/req.jsonl" && cp "$T/req.jsonl" "$T/req.orig" &&
fails 2 "$T/err" vit bench --config qwen2.5-vl-tiny --dtype f32 --capture-sizes 64,128 --stream-from "$T/req.jsonl" \
    --requests-file "$T/req.jsonl" && grep -q "\-\-requests-file .* is the same file as --stream-from" "$T/err" &&
cmp "$T/req.jsonl" "$T/req.orig" &&
echo precious >"$T/list.jsonl" &&
fails 2 "$T/err" vit bench --config qwen2.5-vl-tiny --dtype f32 --stream 2 --sides 56,112 --capture-sizes 6,10 \
    --requests-file "$T/list.jsonl" && grep -q "not a multiple of spatial merge" "$T/err" &&
test "$(cat "$T/list.jsonl")" = precious
