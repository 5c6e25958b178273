# SPDX-License-Identifier: Apache-2.0
bench >"$T/out" 2>&1 && ! grep -q "call [0-9]*/" "$T/out" && ! grep -q "$(printf '\r')" "$T/out"
