# SPDX-License-Identifier: Apache-2.0
mkdir "$T/m" && cp "$LM/model/config.json" "$T/m/" && mkfifo "$T/m/model.safetensors" &&
timeout 60 "$VG" lm generate --model "$T/m" --input "$LM/prompts.input.safetensors" 2>"$T/err"
rc=$?; cat "$T/err"; test $rc -eq 1 && grep -q "model.safetensors: not a regular file (a FIFO)" "$T/err"
