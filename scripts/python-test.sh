#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package's tests: a virtual environment under the build directory, `pip install
# ./python` into it, then pytest on python/tests. Ends with pytest's summary line; exits non-zero
# when a test fails and when no test ran at all (pytest's exit 5 is a failure here).
#   scripts/python-test.sh [pytest args]
# Environment: VG_BUILD_DIR (default: build; the venv is BUILD_DIR/python-venv),
#   VGRAPH_LIBRARY_DIR or VG_PREFIX: install the package over that vg instead of building vg into it
#   (e.g. VGRAPH_LIBRARY_DIR=build/lib after scripts/dev.sh build), CMAKE_ARGS: extra arguments for
#   the package's CMake build (e.g. -DVG_BUILD_CUDA=OFF -DVG_BUILD_HIP=OFF: the CI tests use only
#   kunlun_stub and opencl), PIP_ARGS: extra pip arguments (--no-index --find-links DIR offline).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VG_BUILD_DIR:-$root/build}
# absolute (as given, links kept): pytest runs from inside the build folder, where a relative
# build folder or library directory would no longer be found
[[ $build == /* ]] || build=$PWD/$build
[ -n "${VGRAPH_LIBRARY_DIR:-}" ] && [[ $VGRAPH_LIBRARY_DIR != /* ]] && export VGRAPH_LIBRARY_DIR=$PWD/$VGRAPH_LIBRARY_DIR
[ -n "${VG_PREFIX:-}" ] && [[ $VG_PREFIX != /* ]] && export VG_PREFIX=$PWD/$VG_PREFIX
venv=$build/python-venv
log=$build/python-test.log
mkdir -p "$build"
say() { echo "python-test.sh: $*" >&2; }

# Debian's python3 makes virtual environments only with python3-venv (installed here as dev.sh
# installs the build's packages: unless VG_SKIP_DEPS=1)
venv_deps() {
    [ "${VG_SKIP_DEPS:-0}" = 1 ] && return 1
    command -v apt-get >/dev/null || return 1
    local sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    say "installing python3-venv"
    "${sudo[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
        --no-install-recommends python3-venv python3-pip >/dev/null
}
if [ ! -x "$venv/bin/python" ]; then
    say "creating $venv"
    if ! python3 -m venv "$venv" 2>"$build/python-venv.log"; then
        rm -rf "$venv"
        if ! { venv_deps && python3 -m venv "$venv"; }; then
            say "python3 -m venv failed (Debian: apt-get install python3-venv):"
            cat "$build/python-venv.log" >&2
            exit 1
        fi
    fi
fi
py=$venv/bin/python
# shellcheck disable=SC2086
"$py" -m pip install -q ${PIP_ARGS:-} pytest numpy >"$build/python-pip.log" 2>&1 ||
    { say "installing pytest and numpy failed:"; tail -n 20 "$build/python-pip.log" >&2; exit 1; }
say "pip install ./python (log: $build/python-pip.log)"
# shellcheck disable=SC2086
"$py" -m pip install ${PIP_ARGS:-} --force-reinstall --no-deps "$root/python" >>"$build/python-pip.log" 2>&1 ||
    { say "pip install ./python failed:"; tail -n 40 "$build/python-pip.log" >&2; exit 1; }

# The tests import the installed package, not the source tree: run them from outside python/.
set +e
(cd "$build" && "$py" -m pytest -p no:cacheprovider -rs "$root/python/tests" "$@") 2>&1 | tee "$log"
st=${PIPESTATUS[0]}
set -e
# pytest's closing line ("== 3 passed, 1 skipped in 2.0s ==", bare with -q), then the counts in
# the form the project's summaries use
summary=$(grep -E '([0-9]+ (passed|failed|skipped|errors?|deselected)|no tests ran)' "$log" | tail -n 1 | sed -E 's/^=+ //; s/ =+$//' || true)
count() { echo "$summary" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
echo "pytest summary: ${summary:-none printed}"
echo "pytest: $(count passed) passed, $(($(count failed) + $(count 'errors?'))) failed, $(count skipped) skipped"
if [ "$st" -eq 5 ]; then
    say "pytest collected no tests: that is a failure"
    exit 1
fi
exit "$st"
