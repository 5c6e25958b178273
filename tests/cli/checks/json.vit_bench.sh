# SPDX-License-Identifier: Apache-2.0
command -v python3 >/dev/null || exit 77
bench --pieces --json >"$T/j" && json_has "$T/j" 'd["sizes"][0]["pieces"]["groups"][0]["count"] >= 1'
