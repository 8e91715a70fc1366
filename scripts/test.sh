#!/usr/bin/env bash
# The second command of the README: installs what is missing, builds, runs the whole test suite
# (every test starts the ZooKeeper servers it needs on free loopback ports), then builds the API
# reference (scripts/docs.sh), which fails on any doxygen warning.
#   ZKLOCK_SANITIZERS=1  then also (scripts/test-sanitizers.sh): the fault storm for 60 s, the suite
#                        under ASan+UBSan (leaks checked) against the C client's source release of
#                        3.9.3, the integration and differential suites against 3.8.0's, the
#                        threaded tests under TSan, the fuzz targets under libFuzzer; their builds
#                        run beside the regular suite. .ci/run sets it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bash "$here/scripts/install-deps.sh" --test
# Every target, whatever an earlier configure of this build dir turned off (the cache keeps it);
# the library and the tool with -Werror (ZKLOCK_WERROR), so that they stay warning-free. Debug
# information is line tables only (-g1): a failure's backtrace keeps its files and lines, and GCC
# builds the suite in about two thirds of the time full -g takes. The library, the tool, the
# examples and the bench at -O2, the tests' own code at -O1 (ZKLOCK_TEST_COMPILE_OPTIONS): GCC
# compiles a test file in about four fifths of the time, and the tests wait on servers, not on it.
echo "test: building everything in ${BUILD_DIR:-$here/build}" >&2
TARGETS='' bash "$here/scripts/build.sh" -DZKLOCK_BUILD_TESTS=ON -DZKLOCK_BUILD_EXAMPLES=ON \
  -DZKLOCK_BUILD_BENCH=ON -DZKLOCK_BUILD_TOOLS=ON -DZKLOCK_WERROR=ON -DZKLOCK_TEST_COMPILE_OPTIONS=-O1 \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" >&2
cd "${BUILD_DIR:-$here/build}"
if [ "${ZKLOCK_SANITIZERS:-0}" = 1 ]; then
    # The sanitizer builds, one after the other, at idle CPU priority while the suite runs: its
    # tests mostly wait on their servers, and a test that wants the CPU takes it from a build at
    # once. Their output goes to their own logs (test-sanitizers.sh --build).
    export ZKLOCK_SANITIZER_STATUS=$PWD/sanitizer-builds
    rm -rf "$ZKLOCK_SANITIZER_STATUS"
    mkdir -p "$ZKLOCK_SANITIZER_STATUS"
    idle=()
    chrt --idle 0 true 2>/dev/null && idle=(chrt --idle 0)
    # In a process group of its own (setsid), which an early exit of this script ends whole. A new
    # session is also a new autogroup where the kernel has them (sched_autogroup_enabled): the CPU
    # is shared between autogroups before the policies and nice values inside each count, so the
    # builder's autogroup is made nice 19 too.
    setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec "$@"' builder "${idle[@]}" nice -n 19 \
        bash "$here/scripts/test-sanitizers.sh" --build >"$ZKLOCK_SANITIZER_STATUS/builder.log" 2>&1 &
    export ZKLOCK_SANITIZER_BUILDER=$!
    trap 'kill -- "-$ZKLOCK_SANITIZER_BUILDER" 2>/dev/null || true' EXIT
fi
ctest --output-on-failure -j "${TEST_JOBS:-2}" --timeout 600 -LE soak
# The API reference: fails the run on any doxygen warning (an undocumented public name).
BUILD_DIR="$PWD" bash "$here/scripts/docs.sh"  # we are in the build tree now
if [ "${ZKLOCK_SANITIZERS:-0}" = 1 ]; then
    bash "$here/scripts/test-sanitizers.sh" --test
fi
