# SPDX-License-Identifier: Apache-2.0
command -v script >/dev/null || exit 77
script -qec "\"$VG\" lm generate --model \"$LM/model\" --prompt-ids 1,2 --max-new-tokens 4" /dev/null >"$T/tty" </dev/null &&
grep -q "lm generate: new tokens 0/4, [0-9.]* s" "$T/tty" &&
script -qec "\"$VG\" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 2" /dev/null >"$T/tty" </dev/null &&
grep -q "lm bench: batch 1 (1/1), eager, decode step 0/4, [0-9.]* s" "$T/tty" &&
script -qec "\"$VG\" lm generate --model \"$LM/model\" --prompt-ids 1,2 --max-new-tokens 4 --quiet" /dev/null >"$T/tty" </dev/null &&
! grep -q "new tokens" "$T/tty" &&
gen --prompt-ids 1,2 --max-new-tokens 4 >"$T/out" 2>&1 && ! grep -q "new tokens" "$T/out"
