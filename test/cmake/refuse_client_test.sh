#!/usr/bin/env bash
# Configure refuses a ZooKeeper C client it has not checked (cmake/ZooKeeperSeal.cmake), with a
# message that says what it found: a copy of the system's client in a prefix of the test's, once
# with a version outside the tested range, once with an archive that reads its socket with
# recvmsg instead of recv, once with an archive that holds an object built with _FORTIFY_SOURCE=3
# whose recv became __recv_chk. Configure only; nothing is built but that object.
#   refuse_client_test.sh INCLUDE_DIR ARCHIVE LIBRARY   (the client CMake found: its headers'
#   directory, its libzookeeper_st.a and its libzookeeper_st.so)
set -euo pipefail
incdir=$1/zookeeper
archive=$2
library=$3
. "$(dirname "$0")/refuse.sh"
refuse_init "an unchecked client"
prefix=$work/usr
mkdir -p "$prefix/include/zookeeper" "$prefix/lib"
cp "$incdir"/*.h "$prefix/include/zookeeper/"
cp "$archive" "$prefix/lib/libzookeeper_st.a"
ln -s "$library" "$prefix/lib/libzookeeper_st.so"
configure() { refused -DCMAKE_PREFIX_PATH="$prefix"; }
sed -i 's/#define ZOO_VERSION "[0-9.]*"/#define ZOO_VERSION "3.7.1"/' "$prefix/include/zookeeper/zookeeper_version.h"
out=$(configure)
grep -q "the ZooKeeper C client found is 3.7.1" <<<"$out" || fail "no word of the version: $out"
sed -i 's/#define ZOO_VERSION "[0-9.]*"/#define ZOO_VERSION "3.9.9"/' "$prefix/include/zookeeper/zookeeper_version.h"
objcopy --redefine-sym recv=recvmsg "$prefix/lib/libzookeeper_st.a"
out=$(configure)
grep -q "It calls recvmsg, which zklock's seam does not handle" <<<"$out" || fail "no word of recvmsg: $out"
grep -q "It never calls recv" <<<"$out" || fail "no word of the missing recv: $out"
# The fortified variant of a call the seam routes: glibc's recv wrapper calls __recv_chk when it
# knows the buffer's size, and a renamed recv would never see that call.
cp "$archive" "$prefix/lib/libzookeeper_st.a"
cat >"$work/fortified.c" <<'CEOF'
#include <sys/socket.h>
#include <sys/types.h>
int zk_fortified_read(int fd, size_t n)
{
    char buf[64];
    return (int)recv(fd, buf, n, 0);
}
CEOF
gcc -O2 -D_FORTIFY_SOURCE=3 -c "$work/fortified.c" -o "$work/fortified.o"
nm -u "$work/fortified.o" | grep -q __recv_chk || fail "the compiler made no __recv_chk call: $(nm -u "$work/fortified.o")"
ar r "$prefix/lib/libzookeeper_st.a" "$work/fortified.o" 2>/dev/null
out=$(configure)
grep -q "It calls __recv_chk (the fortified recv, _FORTIFY_SOURCE), which zklock's seam does not handle" <<<"$out" ||
    fail "no word of __recv_chk: $out"
echo "refusing an unchecked client: a 3.7.1, a client reading with recvmsg and one calling __recv_chk, each refused with its reason: ok"
