# SPDX-License-Identifier: Apache-2.0
fails 1 "$T/err" lm generate --model /nonexistent --prompt-ids 1,2 --max-new-tokens 1 &&
grep -q "/nonexistent: does not exist" "$T/err"
