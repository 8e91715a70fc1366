#!/usr/bin/env bash
# The first command of the README: installs what is missing, builds, starts a throwaway local
# ZooKeeper, runs the fairness demo, and stops the server again. Arguments go to the demo.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bash "$here/scripts/install-deps.sh"
bash "$here/scripts/build.sh" >&2
eval "$(bash "$here/scripts/zk-local.sh")"
trap 'bash "$here/scripts/zk-local.sh" stop "$ZK_PID" "$ZK_DIR"' EXIT
echo "demo: throwaway ZooKeeper at $ZK_SERVERS" >&2
ZK_SERVERS=$ZK_SERVERS "${BUILD_DIR:-$here/build}/examples/fairness_demo" "$@"
