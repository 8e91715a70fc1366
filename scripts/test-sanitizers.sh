#!/usr/bin/env bash
# The ZKLOCK_SANITIZERS=1 part of scripts/test.sh, run after the regular suite has passed:
#   1. the fault storm for 60 s (ctest label "soak") in the regular build;
#   2. the suite but the examples and the cases named at its ctest line, built with Clang 16 and
#      ASan + UBSan, LeakSanitizer on, with the C client compiled from Apache's source release of
#      3.9.3 (Debian 13's source package, fetched by scripts/fetch-zk-client.sh --source), the
#      library and the tool with -Werror and every file with BOOST_ASIO_NO_DEPRECATED (build-asan);
#   3. the C client from the source release of 3.8.0 (Debian 12's source package), built with
#      _FORTIFY_SOURCE=3, without TLS and without OpenSSL or the system's C client in sight: the
#      tests that go through the C client (integration, the tool's, the differential simulation,
#      the build's checks)                                                         (build-src38);
#   4. the tests that run an io_context on several threads, under TSan, twice      (build-tsan);
#   5. the fuzz targets under libFuzzer (Clang 16), 15 s each                    (build-fuzz).
# The regular build is GCC's with Debian 12's static client (3.8.0), so each compiler and each way
# to the client builds and runs the suites. Every step runs even if an earlier one failed; the
# script fails if any did.
#   test-sanitizers.sh          builds the four trees, then runs the steps (about 28 minutes on 2 cores)
#   test-sanitizers.sh --build  only builds them, one after the other; each build's output goes to
#                               DIR/zklock-build.log and its exit status to $ZKLOCK_SANITIZER_STATUS/NAME
#   test-sanitizers.sh --test   only runs the steps, each once its build's status is there
# scripts/test.sh starts --build at idle CPU priority beside the regular suite, whose tests mostly
# wait on their servers, then runs --test: the builds take the CPU the suite leaves.
# Directories: ASAN_BUILD_DIR, SRC38_BUILD_DIR, TSAN_BUILD_DIR, FUZZ_BUILD_DIR, ZK39_WORK_DIR and
# ZK38_WORK_DIR (the fetched source packages); the fuzz time per target: ZKLOCK_FUZZ_SECONDS;
# crashes are kept in build-fuzz/crashes-<target>/.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
asan=${ASAN_BUILD_DIR:-$here/build-asan}
tsan=${TSAN_BUILD_DIR:-$here/build-tsan}
fuzz=${FUZZ_BUILD_DIR:-$here/build-fuzz}
src38=${SRC38_BUILD_DIR:-$here/build-src38}
zk39_work=${ZK39_WORK_DIR:-$here/build-zk39}
zk38_work=${ZK38_WORK_DIR:-$here/build-zk38}
jobs=${JOBS:-$(nproc)}
test_jobs=${TEST_JOBS:-2}
fuzz_seconds=${ZKLOCK_FUZZ_SECONDS:-15}
phase=all
case ${1:-} in
    --build) phase=build ;;
    --test) phase=test ;;
    "") ;;
    *) echo "usage: test-sanitizers.sh [--build | --test]" >&2; exit 2 ;;
esac
if [ "$phase" = all ]; then
    ZKLOCK_SANITIZER_STATUS=$(mktemp -d)
    trap 'rm -rf "$ZKLOCK_SANITIZER_STATUS"' EXIT
elif [ -z "${ZKLOCK_SANITIZER_STATUS:-}" ]; then
    echo "test-sanitizers.sh $1: ZKLOCK_SANITIZER_STATUS must name the directory of the builds' statuses" >&2
    exit 2
fi
status_dir=$ZKLOCK_SANITIZER_STATUS

# The symbolizer of Clang 16's own LLVM (scripts/install-deps.sh installs llvm-16) for every
# sanitizer report here, the fuzz targets' too: the one the runtimes look for on PATH may be absent,
# and a report is then addresses only.
if [ -x /usr/lib/llvm-16/bin/llvm-symbolizer ]; then
    export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-16/bin/llvm-symbolizer
    export UBSAN_SYMBOLIZER_PATH=$ASAN_SYMBOLIZER_PATH
fi

start=$SECONDS
configure() {  # configure DIR CMAKE-ARGS...
    local dir=$1
    shift
    cmake -S "$here" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DZKLOCK_BUILD_BENCH=OFF -DZKLOCK_BUILD_TOOLS=OFF "$@" >/dev/null
}

# ---- The builds ------------------------------------------------------------------------------

# ASan+UBSan: one build for three things: the sanitizers, the other compiler (the regular build is
# GCC's; the library and the tool must build on Clang without a warning, hence ZKLOCK_WERROR) and
# the other C client, from its source. -O0 -g1 (line tables only): Clang builds it in about a third
# of GCC's time at -O1, the reports keep their file and line, and the suite waits on servers far
# more than it computes. A fresh cache each time (--fresh): the client's paths are cached; so would
# the compiler of a build directory made before by GCC be.
# BOOST_ASIO_NO_DEPRECATED for every file (never for some only: see CMakeLists.txt): zklock uses
# none of Asio's deprecated API.
# Not the examples: they make the calls the suites make, and their build (Beast's HTTP server
# among them) is long; the regular build runs them. Not the mutants' second build of the library
# either: the regular build runs them.
build_asan() {
    echo "fetching Debian 13's source of the C client"
    local source
    source=$(bash "$here/scripts/fetch-zk-client.sh" --source "$zk39_work") || return 1
    echo "the C client from $source"
    configure "$asan" --fresh -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 -DZKLOCK_WERROR=ON \
        -DZKLOCK_ZK_CLIENT=source -DZKLOCK_ZK_SOURCE="$source" \
        -DZKLOCK_SANITIZE=address,undefined -DZKLOCK_BUILD_EXAMPLES=OFF \
        -DZKLOCK_BUILD_MUTANTS=OFF -DZKLOCK_BUILD_TOOLS=ON -DCMAKE_CXX_FLAGS=-DBOOST_ASIO_NO_DEPRECATED \
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O0 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O0 -g1 -DNDEBUG" &&
        cmake --build "$asan" -j "$jobs"
}

# Source 3.8.0: what a distribution without Debian's archive builds: the client from Apache's
# source release, its own C code with _FORTIFY_SOURCE=3 (the seam's check refuses a fortified
# socket call the seam would not see), no TLS; OpenSSL and the system's C client hidden from CMake,
# so that neither can be used (the tests' plain C client is the release's too). Clang, the C++ at
# -O0 (the build is the stage's main cost). The tests that go through this C client: the
# integration and the tool's tests, the simulation's differential tests against a real server, and
# configure's and the sealed library's checks; not the unit tests and the simulated schedules
# (they run on fake and simulated ports, no C client: the regular and ASan stages run them), nor
# the fault and threaded tests (their subject is not the client's build).
build_src38() {
    echo "fetching Debian 12's source of the C client"
    local source
    source=$(ZK_SUITE=bookworm bash "$here/scripts/fetch-zk-client.sh" --source "$zk38_work") || return 1
    echo "the C client from $source"
    configure "$src38" --fresh -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 -DZKLOCK_WERROR=ON \
        -DZKLOCK_ZK_CLIENT=source -DZKLOCK_ZK_SOURCE="$source" -DZKLOCK_TLS=OFF \
        -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON -DCMAKE_DISABLE_FIND_PACKAGE_ZooKeeper=ON \
        -DZKLOCK_BUILD_EXAMPLES=OFF -DZKLOCK_BUILD_MUTANTS=OFF -DZKLOCK_BUILD_TOOLS=ON \
        "-DCMAKE_C_FLAGS=-D_FORTIFY_SOURCE=3" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1" \
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O0 -g0 -DNDEBUG" &&
        cmake --build "$src38" -j "$jobs" --target zklock zklock_cli with_zookeeper \
            zklock_integration_tests zklock_cli_tests zklock_sim_model_tests
}

# TSan: line tables only (-g1), as in the regular build: the reports keep their files and lines.
# Without NDEBUG: the library's debug checks (assertions, the caller's thread) run here, and the
# case that checks the thread check runs.
build_tsan() {
    configure "$tsan" -DZKLOCK_SANITIZE=thread -DZKLOCK_BUILD_EXAMPLES=OFF \
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1" &&
        cmake --build "$tsan" -j "$jobs" --target zklock_thread_tests
}

build_fuzz() {
    configure "$fuzz" --fresh -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 -DZKLOCK_BUILD_FUZZERS=ON \
        -DZKLOCK_BUILD_EXAMPLES=OFF &&
        cmake --build "$fuzz" -j "$jobs" --target zklock_fuzz_path zklock_fuzz_fsm
}

stages=(asan src38 tsan fuzz)
dir_of() {
    case $1 in
        asan) echo "$asan" ;;
        src38) echo "$src38" ;;
        tsan) echo "$tsan" ;;
        fuzz) echo "$fuzz" ;;
    esac
}

if [ "$phase" != test ]; then
    # One build after the other, each whatever the one before did; its output in DIR/zklock-build.log.
    for stage in "${stages[@]}"; do
        dir=$(dir_of "$stage")
        mkdir -p "$dir"
        echo "== sanitizers [$((SECONDS - start)) s]: building $stage in $dir" >&2
        t0=$SECONDS
        "build_$stage" >"$dir/zklock-build.log" 2>&1
        rc=$?
        echo "== sanitizers: $stage built in $((SECONDS - t0)) s, status $rc" >>"$dir/zklock-build.log"
        echo "$rc" >"$status_dir/$stage"
    done
    [ "$phase" = build ] && exit 0
fi

# ---- The steps --------------------------------------------------------------------------------

failed=()
# What failed and why, printed again at the very end: a CI log is often read from its tail only.
digest=$(mktemp)
trap 'rm -f "$digest"; if [ "$phase" = all ]; then rm -rf "$status_dir"; fi' EXIT
step() { echo "== sanitizers [$((SECONDS - start)) s]: $*" >&2; }
run() {  # run NAME COMMAND...: runs it, notes a failure
    local name=$1
    shift
    "$@" || { echo "== sanitizers: FAILED: $name" >&2; failed+=("$name"); return 1; }
}
built() {  # built STAGE: waits for STAGE's build to end (at most 90 minutes); whether it succeeded
    local stage=$1 dir waited=0
    dir=$(dir_of "$stage")
    while [ ! -f "$status_dir/$stage" ] && ((waited < 5400)); do
        # The builder (scripts/test.sh gives its process id) gone without a word of this build.
        if [ -n "${ZKLOCK_SANITIZER_BUILDER:-}" ] && ! kill -0 "$ZKLOCK_SANITIZER_BUILDER" 2>/dev/null; then
            sleep 1
            break
        fi
        sleep 2
        waited=$((waited + 2))
    done
    if [ "$(cat "$status_dir/$stage" 2>/dev/null)" = 0 ]; then
        grep -E '^(the C client from|== sanitizers: .* built in)' "$dir/zklock-build.log" >&2
        return 0
    fi
    echo "== sanitizers: FAILED: the $stage build, in $dir (its log, $dir/zklock-build.log, follows)" >&2
    cat "$dir/zklock-build.log" >&2
    failed+=("$stage build")
    { echo "---- the $stage build: the end of $dir/zklock-build.log"; tail -60 "$dir/zklock-build.log"; } >>"$digest"
    return 1
}
ctest_digest() {  # ctest_digest NAME DIR: the failed tests of DIR's last ctest run, each with its error lines
    {
        echo "---- $1: failed tests"
        cat "$2/Testing/Temporary/LastTestsFailed.log" 2>/dev/null
        # Per failed test in ctest's log: its name, then the lines that say what went wrong (of a
        # sanitizer's stacks, the frames in our own code).
        awk '/^[0-9]+\/[0-9]+ Testing: / { n = 0; name = $0 }
             { block[n++] = $0 }
             /^Test Failed\./ {
                 print "-- " name; shown = 0
                 for (i = 0; i < n && shown < 40; i++)
                     if (block[i] ~ /Sanitizer|runtime error|ERROR|CHECK|TEST CASE|[Tt]imed? ?out|SUMMARY|[Ee]xception|terminate|by thread|created by/ ||
                         block[i] ~ /^ +#[0-9]+ 0x.*\/(src|include\/zklock|test|examples|tools|bench)\//) {
                         print block[i]; shown++
                     }
             }' "$2/Testing/Temporary/LastTest.log" 2>/dev/null | head -200
    } >>"$digest"
}

step "soak: the fault storm for 60 s"
run soak bash -c "cd '$build' && ctest --output-on-failure -L soak --timeout 600" || ctest_digest soak "$build"

step "ASan+UBSan: waiting for the build with Clang 16 in $asan"
if built asan; then
    step "ASan+UBSan: running the suite"
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1:strict_string_checks=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    # Not: the soak (done above), the staged install and the subproject builds (their consumers
    # are not built with ASan), the bench; nor the cases whose subject is timing, not memory (a
    # holder stalled for seconds, an ensemble's partition against the session timeout): their code
    # paths are the other cases' too (a lease lost to a cut: fault 4b, TLS's cut-off holder); nor the interop
    # cases (their subject is the other clients' nodes; zklock's side runs the paths of the
    # recipes' own cases) and the test bed's own checks (label support: the servers, ensembles
    # and proxies they check run under ASan in every fault case). The simulation runs fewer
    # schedules.
    run asan bash -c "cd '$asan' && ZKLOCK_SIM_SCHEDULES=\${ZKLOCK_ASAN_SIM_SCHEDULES:-1000} ctest --output-on-failure -j $test_jobs --timeout 900 -LE 'soak|cmake|bench|support' -E '^(stall: |partition: |fault 4s|interop: )'" ||
        ctest_digest asan "$asan"
    unset ASAN_OPTIONS UBSAN_OPTIONS
fi

step "source 3.8.0: waiting for the build in $src38"
if built src38; then
    step "source 3.8.0: running the integration suite, the differential simulation and the build's checks"
    run "source 3.8.0" bash -c "cd '$src38' && ! nm -u libzklock.a | grep -E ' U (SSL|OPENSSL|X509|ERR)_' &&
        ctest --output-on-failure -j $test_jobs --timeout 900 \
            -L 'integration|sim|cmake' -E '^(cmake\\.(find_package|add_subdirectory|fetchcontent|layers)|docs\\.|fuzz\\.)'" ||
        ctest_digest "source 3.8.0" "$src38"
fi

step "TSan: waiting for the build of the threaded tests in $tsan"
if built tsan; then
    step "TSan: running them"
    run tsan bash -c "cd '$tsan' && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --output-on-failure -L threads --repeat until-fail:2 --timeout 900" ||
        ctest_digest tsan "$tsan"
fi

step "libFuzzer: waiting for the build of the fuzz targets in $fuzz (Clang 16)"
if built fuzz; then
    for t in path fsm; do
        step "libFuzzer: zklock_fuzz_$t for $fuzz_seconds s"
        mkdir -p "$fuzz/corpus-$t" "$fuzz/crashes-$t"
        dict=()
        [ -f "$here/test/fuzz/$t.dict" ] && dict=(-dict="$here/test/fuzz/$t.dict")
        # libFuzzer's progress lines go to a file; its last lines are shown, all of them on a failure.
        if ! run "fuzz $t" "$fuzz/test/fuzz/zklock_fuzz_$t" -max_total_time="$fuzz_seconds" -print_final_stats=1 \
            -artifact_prefix="$fuzz/crashes-$t/" "${dict[@]}" "$fuzz/corpus-$t" 2>"$fuzz/fuzz-$t.log"; then
            cat "$fuzz/fuzz-$t.log" >&2
            { echo "---- fuzz $t"; grep -v -E '^#[0-9]+' "$fuzz/fuzz-$t.log" | tail -60; } >>"$digest"
        else
            grep -E '^(Done|stat::)' "$fuzz/fuzz-$t.log" >&2
        fi
    done
fi

step "done"
if ((${#failed[@]})); then
    cat "$digest" >&2
    echo "== sanitizers: failed: ${failed[*]}" >&2
    exit 1
fi
