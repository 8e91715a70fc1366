#!/usr/bin/env bash
# The benchmark in one command: installs what is missing (scripts/install-deps.sh), builds Release
# into ${BUILD_DIR:-build-bench}, then runs every scenario (U, C64, W1000, W10000 and their floors)
# ${REPEAT:-3} times against a fresh local ZooKeeper (forceSync=no, 20 s warm-up) and prints the
# medians. Results: <build>/bench-results/<time>.{jsonl,txt} and SVG plots beside them.
# Extra arguments go to zklock_bench (e.g. --scenario C64, --servers host:port, --warmup 5; the lock
# family: --scenario family, or all,family; holders that hold: --hold-us 2000).
# Takes ~15 minutes on a 2-core machine; the machine should be otherwise idle.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build-bench}

"$here/scripts/install-deps.sh"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DZKLOCK_BUILD_TESTS=OFF -DZKLOCK_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target zklock_bench

out=$build/bench-results
stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
echo "bench: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$build/bench/zklock_bench" --repeat "${REPEAT:-3}" --json "$out/$stamp.jsonl" --plot "$out/plots-$stamp" "$@" \
  | tee "$out/$stamp.txt"
echo "bench: results in $out/$stamp.jsonl, $out/$stamp.txt, plots in $out/plots-$stamp" >&2
