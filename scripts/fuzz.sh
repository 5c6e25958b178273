#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the libFuzzer targets with clang (ASan + UBSan) and run each for a bounded time.
#   scripts/fuzz.sh [SECONDS]        default 60 s per target; CI uses 25
# The seed corpora live in tests/fuzz/corpus/<target>; what the fuzzer adds goes to
# $VG_BUILD_DIR-fuzz/corpus/<target>, and a crash leaves its input in $VG_BUILD_DIR-fuzz/fuzz.
# Prints each target's executions and coverage, then 'fuzz: N passed, M failed'.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
build=${VG_BUILD_DIR:-$root/build}
[[ $build == /* ]] || build=$PWD/$build # absolute (links kept): the runs below cd
build=$build-fuzz
jobs=${VG_JOBS:-$(nproc 2>/dev/null || echo 2)}
"$root/scripts/dev.sh" deps-fuzz || exit 1 # the build's packages and clang's: only what is missing
CC=clang cmake -S "$root" -B "$build" -DVG_FUZZ=ON -DVG_BUILD_CUDA=OFF -DVG_BUILD_HIP=OFF \
    -DVG_BUILD_TESTS=OFF -DVG_BUILD_TOOLS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
cmake --build "$build" -j "$jobs" >/dev/null || exit 1
passed=0
failed=0
declare -A max_len=([safetensors]=8192 [vit_config]=4096 [vit_input]=64 [ipc_desc]=512 [lm_config]=4096
    [lm_input]=4096)
for t in safetensors vit_config vit_input ipc_desc lm_config lm_input; do
    corpus=$build/corpus/$t
    mkdir -p "$corpus"
    log=$build/fuzz_$t.log
    (cd "$build/fuzz" && ./fuzz_$t -max_total_time="$seconds" -max_len="${max_len[$t]}" \
        -print_final_stats=1 "$corpus" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1)
    rc=$?
    execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    cov=$(grep -E 'DONE|#[0-9]+ *(NEW|REDUCE|pulse)' "$log" | tail -1 | grep -o 'cov: [0-9]*' || true)
    if [ $rc -eq 0 ]; then
        echo "fuzz_$t: PASS, ${execs:-?} executions in ${seconds}s, ${cov:-cov: ?}"
        passed=$((passed + 1))
    else
        echo "fuzz_$t: FAIL (exit $rc); log: $log"
        grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" | head -8
        failed=$((failed + 1))
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
