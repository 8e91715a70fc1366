#!/usr/bin/env bash
# Installs zklock from BUILD_DIR into a staging prefix, then configures, builds and runs a
# downstream project that uses find_package(zklock). Each step's output is shown if it fails.
set -euo pipefail
build_dir=$1
src_dir=$(cd "$(dirname "$0")" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
. "$(dirname "$0")/quiet.sh"
quiet cmake --install "$build_dir" --prefix "$stage/prefix"
quiet cmake -S "$src_dir/consumer" -B "$stage/build" -G Ninja -DCMAKE_PREFIX_PATH="$stage/prefix"
quiet cmake --build "$stage/build"
"$stage/build/consumer"
test -f "$stage/prefix/include/zklock/mutex.hpp"
grep -qs 'INTERFACE_INCLUDE_DIRECTORIES "${_IMPORT_PREFIX}/include"' "$stage"/prefix/lib*/cmake/zklock/zklockTargets.cmake ||
    { echo "the installed zklock::zklock has no include directory" >&2; exit 1; }
# pkg-config, for builds without CMake: the installed zklock.pc compiles and links the consumer.
pc_dir=$(dirname "$(ls "$stage"/prefix/lib*/pkgconfig/zklock.pc)")
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs zklock)
quiet g++ -std=c++20 "$src_dir/consumer/main.cpp" -o "$stage/pc-consumer" $flags
"$stage/pc-consumer"
echo "find_package(zklock) and pkg-config from a staged install: ok"
