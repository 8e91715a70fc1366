#!/usr/bin/env bash
# zklock beside the system's ZooKeeper C client in one program (issue: the C client sealed inside
# libzklock). Installs zklock from BUILD_DIR into a staging prefix, then builds test/cmake/beside
# with find_package(zklock) and with pkg-config, links the system's libzookeeper_st before and
# after zklock, shared and static, and libzookeeper_mt where its library is installed, and a
# program that defines its own create_hashtable; runs each against ZK_SERVERS (with_zookeeper).
set -euo pipefail
build_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
[ -n "${ZK_SERVERS:-}" ] || { echo "ZK_SERVERS is not set (run under with_zookeeper)" >&2; exit 2; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
. "$(dirname "$0")/quiet.sh"
ran=0
check() {  # check NAME PROGRAM: runs it, fails the test with its output if it fails
    local out
    if ! out=$("$2" 2>&1); then
        printf 'beside the system client: %s failed:\n%s\n' "$1" "$out" >&2
        exit 1
    fi
    ran=$((ran + 1))
}
quiet cmake --install "$build_dir" --prefix "$stage/prefix"

# find_package(zklock), both orders, and a program with its own create_hashtable.
quiet cmake -S "$here/beside" -B "$stage/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$stage/prefix"
quiet cmake --build "$stage/cmake"
for p in system_first zklock_first own_hashtable; do check "find_package: $p" "$stage/cmake/$p"; done

# pkg-config: the same object, linked with the system client before and after zklock's flags.
pc_dir=$(dirname "$(ls "$stage"/prefix/lib*/pkgconfig/zklock.pc)")
read -r -a zk < <(PKG_CONFIG_PATH=$pc_dir pkg-config --libs zklock)
read -r -a cflags < <(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags zklock)
quiet g++ -std=c++20 "${cflags[@]}" -c "$here/beside/main.cpp" -o "$stage/st.o"
libdir=$(dirname "$(g++ -print-file-name=libzookeeper_st.so)")
link_and_check() {  # NAME OBJECT ARGS...
    local name=$1 obj=$2
    shift 2
    quiet g++ "$obj" -o "$stage/$name" "$@"
    check "pkg-config: $name" "$stage/$name"
}
link_and_check st_shared_first "$stage/st.o" -lzookeeper_st "${zk[@]}"
link_and_check st_shared_last "$stage/st.o" "${zk[@]}" -lzookeeper_st
link_and_check st_static_first "$stage/st.o" "$libdir/libzookeeper_st.a" "${zk[@]}"
link_and_check st_static_last "$stage/st.o" "${zk[@]}" "$libdir/libzookeeper_st.a"
quiet g++ -std=c++20 -DZKLOCK_ONLY "${cflags[@]}" -c "$here/beside/main.cpp" -o "$stage/own.o"
link_and_check own_hashtable "$stage/own.o" "${zk[@]}"
# The multi-threaded client, if its library is installed (libzookeeper-mt2; its -dev package
# conflicts with the st one, so its headers are the st package's, with THREADED).
mt=$(ls "$libdir"/libzookeeper_mt.so.* 2>/dev/null | head -n1 || true)
if [ -n "$mt" ]; then
    quiet g++ -std=c++20 -DTHREADED "${cflags[@]}" -c "$here/beside/main.cpp" -o "$stage/mt.o"
    link_and_check mt_first "$stage/mt.o" "$mt" "${zk[@]}"
    link_and_check mt_last "$stage/mt.o" "${zk[@]}" "$mt"
else
    echo "beside the system client: libzookeeper_mt is not installed; its two links not tried" >&2
fi
echo "zklock beside the system's ZooKeeper C client: $ran programs linked and ran: ok"
