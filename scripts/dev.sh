#!/usr/bin/env bash
# vg developer entry point: installs what the build needs (Debian 12, apt-get), configures,
# builds and runs things. Usage: scripts/dev.sh <command> [args]
#   run        build, then the main job on the default backend: vg info, and the tiny
#              Qwen2.5-VL vision encoder on two images (extra args go to vg vit encode)
#   test       build, then the whole test suite (GPU tests SKIP without a GPU)
#   gpu-test   build, then the GPU suite and a compute-sanitizer memcheck (needs a GPU)
#   sanitize   the CPU suite under ASan+UBSan, the threaded tests under TSan
#   fuzz [S]   the libFuzzer targets for S seconds each (default 60)
# Environment: VG_BUILD_DIR (default: build), VG_CMAKE_ARGS (extra cmake arguments),
#              VG_JOBS (parallel build jobs, default: nproc), VG_SKIP_DEPS=1 (no apt-get).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VG_BUILD_DIR:-$root/build}
jobs=${VG_JOBS:-$(nproc 2>/dev/null || echo 2)}

# Debian packages the build needs; the test command adds ROCm's compiler, so that the hip
# backend is built (and its GPU tests skip) on every machine.
packages=(build-essential cmake pkgconf libcmocka-dev libopenblas-dev libcjson-dev)
test_packages=(hipcc libamdhip64-dev)

deps() {
    [ "${VG_SKIP_DEPS:-0}" = 1 ] && return 0 # dependencies provided another way (offline-deps.sh)
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "dev.sh: installing ${missing[*]}" >&2
    local sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

configure_and_build() {
    deps
    # nvcc lives outside PATH in the CUDA toolkit's default location.
    if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
        export PATH=/usr/local/cuda/bin:$PATH
    fi
    # shellcheck disable=SC2086
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${VG_CMAKE_ARGS:-} >/dev/null
    cmake --build "$build" -j "$jobs"
}

cmd=${1:-}
shift || true
case "$cmd" in
deps) deps ;;
deps-fuzz)
    # libFuzzer comes with clang's runtime (Debian 12: clang 14)
    packages=(clang libclang-rt-14-dev)
    deps
    ;;
build) configure_and_build ;;
run)
    # The main job: which backend is in use, then the tiny Qwen2.5-VL vision tower on it.
    configure_and_build >/dev/null
    "$build/bin/vg" info
    echo
    fix=$root/tests/data/qwen2_5_vl_tiny
    "$build/bin/vg" vit encode --model "$fix/model" --input "$fix/two_images.input.safetensors" \
        --output "$build/two_images.embeddings.safetensors" --repeat 3 --stats "$@"
    ;;
test)
    packages+=("${test_packages[@]}")
    configure_and_build
    cd "$build" && ctest --output-on-failure -j "$jobs" "$@"
    ;;
gpu-test)
    packages+=("${test_packages[@]}")
    configure_and_build
    "$root/scripts/gpu-suite.sh" "$build" "$@"
    ;;
sanitize)
    deps
    "$root/scripts/sanitize.sh"
    ;;
fuzz)
    "$root/scripts/fuzz.sh" "$@"
    ;;
*)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2
    exit 2
    ;;
esac
