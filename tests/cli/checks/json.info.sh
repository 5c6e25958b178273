# SPDX-License-Identifier: Apache-2.0
command -v python3 >/dev/null || exit 77
"$VG" info --json >"$T/j" && json_has "$T/j" 'd["selected"] == "kunlun_stub"'
