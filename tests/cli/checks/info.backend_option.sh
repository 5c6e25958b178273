# SPDX-License-Identifier: Apache-2.0
unset VG_BACKEND; "$VG" info --backend kunlun_stub >"$T/out" && cat "$T/out" &&
grep -q "^selected: kunlun_stub (--backend)$" "$T/out"
