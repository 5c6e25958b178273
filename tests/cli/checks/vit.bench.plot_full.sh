# SPDX-License-Identifier: Apache-2.0
bench --plot /dev/full >/dev/null 2>"$T/err"; rc=$?; cat "$T/err" >&2
test $rc -eq 1 && grep -q "cannot write /dev/full" "$T/err"
