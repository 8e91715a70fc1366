#!/usr/bin/env bash
# The first command of the README: installs what is missing, builds, starts a throwaway local
# ZooKeeper, runs the fairness demo (arguments go to it), then the hot-lock demo (cohort mode
# against the plain recipe), and stops the server again.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bash "$here/scripts/install-deps.sh"
bash "$here/scripts/build.sh" >&2
eval "$(bash "$here/scripts/zk-local.sh")"
trap 'bash "$here/scripts/zk-local.sh" stop "$ZK_PID" "$ZK_DIR"' EXIT
echo "demo: throwaway ZooKeeper at $ZK_SERVERS" >&2
ZK_SERVERS=$ZK_SERVERS "${BUILD_DIR:-$here/build}/examples/fairness_demo" "$@"
echo >&2
ZK_SERVERS=$ZK_SERVERS "${BUILD_DIR:-$here/build}/examples/hot_lock_demo"
