#!/usr/bin/env bash
# Configures and builds zklock into ${BUILD_DIR:-build} (Release with debug info). Extra args go to
# cmake (after the defaults, so they can override them). $JOBS: parallel jobs (default: nproc).
# $TARGETS: only these targets, space-separated (default: all).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
jobs=${JOBS:-$(nproc)}
targets=()
read -r -a targets <<<"${TARGETS:-}"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j "$jobs" ${targets[@]+--target "${targets[@]}"}
