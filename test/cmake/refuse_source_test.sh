#!/usr/bin/env bash
# Configure refuses a ZooKeeper C client source release it has not checked (ZKLOCK_ZK_CLIENT=source,
# cmake/ZooKeeperSource.cmake), with a message that says what it found: a copy of the release the
# build was given, once without Java to make its jute files with, once with a version outside the
# tested range, once with a zookeeper.c that reads
# with readv and takes recv's address (a call the seam's routing cannot see), and the release's
# .asc signature named instead of it. Configure only.
#   refuse_source_test.sh SOURCE C_COMPILER   (SOURCE: the release's tarball or directory)
set -euo pipefail
source=$1
cc=$2
. "$(dirname "$0")/refuse.sh"
refuse_init "an unchecked source"
mkdir -p "$work/release"
if [ -d "$source" ]; then
    cp -a "$source/." "$work/release/"
else
    tar xf "$source" -C "$work/release"
fi
root=$work/release
entries=("$root"/*)
if [ ${#entries[@]} = 1 ] && [ -d "${entries[0]}" ]; then root=${entries[0]}; fi
client=$root/zookeeper-client/zookeeper-client-c
[ -f "$client/src/zookeeper.c" ] || fail "$source holds no zookeeper-client/zookeeper-client-c/src/zookeeper.c"
configure() {  # configure [CMAKE-ARGS...]
    refused -DCMAKE_C_COMPILER="$cc" -DZKLOCK_ZK_CLIENT=source -DZKLOCK_ZK_SOURCE="$root" "$@"
}
# No Java to make the jute files with (the release carries none).
if [ ! -f "$client/generated/zookeeper.jute.c" ]; then
    out=$(configure -DCMAKE_DISABLE_FIND_PACKAGE_Java=ON)
    grep -q "has no generated jute files, and making them needs Java" <<<"$out" || fail "no word of Java: $out"
fi
version_h=$client/include/zookeeper_version.h
cp "$version_h" "$work/version.h"
sed -i 's/#define ZOO_VERSION "[0-9.]*"/#define ZOO_VERSION "3.7.1"/' "$version_h"
out=$(configure)
grep -q "the ZooKeeper C client found is 3.7.1" <<<"$out" || fail "no word of the version: $out"
cp "$work/version.h" "$version_h"
cat >>"$client/src/zookeeper.c" <<'EOF'
ssize_t zklock_test_readv(int fd, const struct iovec* v) { return readv(fd, v, 1); }
ssize_t (*zklock_test_recv)(int, void*, size_t, int) = recv;
EOF
out=$(configure)
grep -q "It calls .*readv.*which zklock.s seam does not handle" <<<"$out" || fail "no word of readv: $out"
grep -q "It calls .*recv.*which zklock.s seam does not handle" <<<"$out" || fail "no word of recv: $out"
# The release's detached signature (Debian's source package has one beside the tarball) named
# instead of the release.
touch "$work/zookeeper_3.8.0.orig.tar.gz.asc"
out=$(refused -DZKLOCK_ZK_CLIENT=source -DZKLOCK_ZK_SOURCE="$work/zookeeper_3.8.0.orig.tar.gz.asc")
grep -q "is a detached signature or checksum, not the source release: give $work/zookeeper_3.8.0.orig.tar.gz" <<<"$out" ||
    fail "no word of the signature: $out"
echo "refusing an unchecked source: no Java, a 3.7.1, a zookeeper.c that calls readv and takes recv's address, and a signature for the release, each refused with its reason: ok"
