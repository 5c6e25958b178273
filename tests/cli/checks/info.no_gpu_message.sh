# SPDX-License-Identifier: Apache-2.0
"$VG" info --backend cuda >"$T/out" 2>&1; cat "$T/out"
! grep -q "insufficient" "$T/out" && grep -q "^  score: 900$" "$T/out" &&
{ grep -q "cuda: no NVIDIA driver or GPU found" "$T/out" || grep -q "^selected: cuda" "$T/out"; } &&
# and auto-selection says which backend it picked instead
unset VG_BACKEND; "$VG" info >"$T/auto" 2>&1; cat "$T/auto"
! grep -q "insufficient" "$T/auto" &&
{ grep -q "^selected: kunlun_stub (auto" "$T/auto" || grep -q "^selected: cuda (auto" "$T/auto"; }
