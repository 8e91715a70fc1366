#!/usr/bin/env bash
# Configure refuses a ZooKeeper C client it has not checked (cmake/ZooKeeperSeal.cmake), with a
# message that says what it found: a copy of the system's client in a prefix of the test's, once
# with a version outside the tested range, once with an archive that reads its socket with
# recvmsg instead of recv. Configure only; nothing is built.
#   refuse_client_test.sh INCLUDE_DIR ARCHIVE LIBRARY   (the client CMake found: its headers'
#   directory, its libzookeeper_st.a and its libzookeeper_st.so)
set -euo pipefail
incdir=$1/zookeeper
archive=$2
library=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "refusing an unchecked client: $*" >&2; exit 1; }
prefix=$work/usr
mkdir -p "$prefix/include/zookeeper" "$prefix/lib"
cp "$incdir"/*.h "$prefix/include/zookeeper/"
cp "$archive" "$prefix/lib/libzookeeper_st.a"
ln -s "$library" "$prefix/lib/libzookeeper_st.so"
configure() {  # configure: prints cmake's output, fails the test if cmake succeeded
    rm -rf "$work/build"
    if cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DZKLOCK_BUILD_TESTS=OFF \
        -DZKLOCK_BUILD_BENCH=OFF -DZKLOCK_BUILD_EXAMPLES=OFF -DZKLOCK_BUILD_TOOLS=OFF >"$work/out" 2>&1; then
        cat "$work/out" >&2
        fail "configure accepted it"
    fi
    tr -s ' \n' ' ' <"$work/out"
}
sed -i 's/#define ZOO_VERSION "[0-9.]*"/#define ZOO_VERSION "3.7.1"/' "$prefix/include/zookeeper/zookeeper_version.h"
out=$(configure)
grep -q "the ZooKeeper C client found is 3.7.1" <<<"$out" || fail "no word of the version: $out"
sed -i 's/#define ZOO_VERSION "[0-9.]*"/#define ZOO_VERSION "3.9.9"/' "$prefix/include/zookeeper/zookeeper_version.h"
objcopy --redefine-sym recv=recvmsg "$prefix/lib/libzookeeper_st.a"
out=$(configure)
grep -q "It calls recvmsg, which zklock's seam does not handle" <<<"$out" || fail "no word of recvmsg: $out"
grep -q "It never calls recv" <<<"$out" || fail "no word of the missing recv: $out"
echo "refusing an unchecked client: a 3.7.1 and a client reading with recvmsg, each refused with its reason: ok"
