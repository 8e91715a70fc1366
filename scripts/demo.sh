#!/usr/bin/env bash
# The first command of the README: installs what is missing (only what the library, the server and
# the two demos need: scripts/install-deps.sh --demo), builds the library and the two demos, starts
# a throwaway local ZooKeeper, runs the fairness demo (arguments go to it), then the hot-lock demo
# (cohort mode against the plain recipe), and stops the server again. One line per step on stderr.
#
# It builds into its own directory, ${DEMO_BUILD_DIR:-build-demo}, configured without the tests,
# the benchmark and the zklock tool (whose dependencies it does not install): build/, where
# scripts/test.sh builds everything, is left alone, so the two commands work in either order.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${DEMO_BUILD_DIR:-$here/build-demo}
say() { echo "demo: $*" >&2; }

bash "$here/scripts/install-deps.sh" --demo
say "building the library and the two demos in $build"
# -O2 as in build/ (the hot-lock demo's figures are those of the usual build), without debug
# information, which takes a third of the compile time.
BUILD_DIR=$build TARGETS="fairness_demo hot_lock_demo" bash "$here/scripts/build.sh" \
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" \
  -DZKLOCK_BUILD_TESTS=OFF -DZKLOCK_BUILD_BENCH=OFF -DZKLOCK_BUILD_TOOLS=OFF \
  -DZKLOCK_BUILD_EXAMPLES=ON >&2
say "starting a throwaway ZooKeeper"
eval "$(bash "$here/scripts/zk-local.sh")"
trap 'bash "$here/scripts/zk-local.sh" stop "$ZK_PID" "$ZK_DIR"' EXIT
say "running the fairness demo against ZooKeeper at $ZK_SERVERS"
ZK_SERVERS=$ZK_SERVERS "$build/examples/fairness_demo" "$@"
echo >&2
say "running the hot-lock demo"
ZK_SERVERS=$ZK_SERVERS "$build/examples/hot_lock_demo"
