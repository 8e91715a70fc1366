#!/usr/bin/env bash
# Configures a downstream project that takes zklock as a subproject (add_subdirectory or
# fetchcontent, the first argument) and checks that zklock behaves as a guest: it forces no build
# type into the parent's cache, defines no tools, examples, tests or bench, installs nothing, and
# imposes no compile definition on the parent's code. The fetchcontent parent also builds, with
# shared libraries (BUILD_SHARED_LIBS): its libzklock.so is checked as symbols_test.sh checks the
# static one, the consumer runs, and its install holds the consumer only. The add_subdirectory
# parent is only configured (what it would install is read from the install scripts): a static
# libzklock built and linked by a consumer is cmake.find_package's, and a second unoptimised build
# of the library here would test nothing more.
set -euo pipefail
how=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "zklock as a subproject ($how): $*" >&2; exit 1; }
. "$(dirname "$0")/quiet.sh"
build=$work/build
# No CMAKE_BUILD_TYPE: that is the parent's to choose (and an unoptimised build is quick).
shared=OFF
[ "$how" != fetchcontent ] || shared=ON
quiet cmake -S "$here/subproject" -B "$build" -G Ninja -DZKLOCK_HOW="$how" -DZKLOCK_SOURCE_DIR="$src" \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DBUILD_SHARED_LIBS=$shared

build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
[ -z "$build_type" ] || fail "it set CMAKE_BUILD_TYPE=$build_type in the parent's cache"

targets=$(cmake --build "$build" --target help)
for t in zklock_cli zklock_bench zklock_unit_tests zklock_integration_tests zklock_fault_tests with_zookeeper \
         quick_start recipes fairness_demo hot_lock_demo http_counter http_counter_pg zklock_pg_tests; do
    ! grep -qE "(^|[ /])$t(:| )" <<<"$targets" || fail "it defines the target $t, which nobody asked for"
done

if [ "$how" = fetchcontent ]; then
    quiet cmake --build "$build"
    "$build/consumer" || fail "the consumer did not run"
    so=$(find "$build" -name 'libzklock.so*' -type f | head -n1)
    [ -n "$so" ] || fail "BUILD_SHARED_LIBS=ON built no libzklock.so"
    bash "$here/symbols_test.sh" "$so" "$(find "$build" -name zk_sealed_names.h | head -n1)" ||
        fail "the shared library's symbols (above)"
    quiet cmake --install "$build" --prefix "$work/prefix"
    [ -x "$work/prefix/bin/consumer" ] || fail "the consumer's own install did not happen"
    leftovers=$(cd "$work/prefix" && find . -path ./bin -prune -o -type f -print)
    [ -z "$leftovers" ] || fail "it installed files nobody asked for: $leftovers"
else
    # The install scripts of zklock's directories (not the parent's own, which installs the consumer).
    rules=$(find "$build/zklock" -name cmake_install.cmake -exec grep -l 'file(INSTALL' {} + || true)
    [ -z "$rules" ] || fail "it would install files nobody asked for: $(grep -h 'file(INSTALL' $rules)"
    [ -f "$build/zklock/cmake_install.cmake" ] || fail "no install script where zklock's build should be"
fi

python3 - "$build/compile_commands.json" <<'PY' || fail "compile definitions leak (see above)"
import json, sys
entries = json.load(open(sys.argv[1]))
consumer = [e for e in entries if e["file"].endswith("consumer/main.cpp")]
library = [e for e in entries if "/src/" in e["file"] and e["file"].endswith(".cpp")]
ok = bool(consumer) and bool(library)
# Neither has BOOST_ASIO_NO_DEPRECATED: zklock imposes it on no one, and takes it for none of its
# own files, whose Asio functions would then not be the consumer's under the same names (see
# CMakeLists.txt).
for e in consumer + library:
    if "BOOST_ASIO_NO_DEPRECATED" in e["command"]:
        print(e["file"], "is compiled with BOOST_ASIO_NO_DEPRECATED:", e["command"]); ok = False
sys.exit(0 if ok else 1)
PY
echo "zklock as a subproject ($how): ok"
