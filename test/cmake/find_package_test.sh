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

# The notices: zklock's, and the embedded ZooKeeper C client's with its licence texts.
doc=$stage/prefix/share/doc/zklock
for f in LICENSE NOTICE Apache-2.0.txt hashtable-BSD-3-Clause.txt; do
    test -s "$doc/$f" || { echo "not installed: share/doc/zklock/$f" >&2; exit 1; }
done
grep -q 'Apache ZooKeeper' "$doc/NOTICE" && grep -q 'Christopher Clark' "$doc/NOTICE" &&
    grep -q 'Apache License' "$doc/Apache-2.0.txt" && grep -q 'Christopher Clark' "$doc/hashtable-BSD-3-Clause.txt" ||
    { echo "the installed NOTICE or licence texts do not name the C client's licences" >&2; exit 1; }

# Another Boost than the one libzklock was built with is refused: by the CMake package (a Boost
# whose version.hpp says one patch release later, found by FindBoost in its place) and by the
# headers for pkg-config users (ZKLOCK_BOOST_VERSION != BOOST_VERSION).
IFS=. read -r major minor patch <<<"$(PKG_CONFIG_PATH=$pc_dir pkg-config --variable=boost_version zklock)"
built=$((major * 100000 + minor * 100 + patch))
test "$built" = "$(printf '#include <boost/version.hpp>\nBOOST_VERSION\n' | g++ -E -P -x c++ - | tail -n 1)" ||
    { echo "zklock.pc names Boost $major.$minor.$patch, not the one these tests build with" >&2; exit 1; }
other=$((built + 1))
other_dotted=$((other / 100000)).$((other / 100 % 1000)).$((other % 100))
mkdir -p "$stage/other-boost/include/boost"
touch "$stage/other-boost/include/boost/config.hpp"  # what FindBoost looks for
printf '#define BOOST_VERSION %s\n#define BOOST_LIB_VERSION "%s_%s_%s"\n' "$other" $((other / 100000)) $((other / 100 % 1000)) \
    $((other % 100)) >"$stage/other-boost/include/boost/version.hpp"
if out=$(cmake -S "$src_dir/consumer" -B "$stage/build-other" -G Ninja -DCMAKE_PREFIX_PATH="$stage/prefix" \
        -DBoost_NO_BOOST_CMAKE=ON -DBoost_NO_SYSTEM_PATHS=ON -DBOOST_ROOT="$stage/other-boost" 2>&1); then
    echo "find_package(zklock) accepted Boost $other_dotted; libzklock was built with BOOST_VERSION $built" >&2
    exit 1
fi
grep -q "$other_dotted" <<<"$out" || { echo "the refusal does not name Boost $other_dotted:" >&2; echo "$out" >&2; exit 1; }
# The same fake Boost with its own version is accepted: the refusal is the version's.
printf '#define BOOST_VERSION %s\n#define BOOST_LIB_VERSION "%s_%s"\n' "$built" $((built / 100000)) $((built / 100 % 1000)) \
    >"$stage/other-boost/include/boost/version.hpp"
quiet cmake -S "$src_dir/consumer" -B "$stage/build-same" -G Ninja -DCMAKE_PREFIX_PATH="$stage/prefix" \
    -DBoost_NO_BOOST_CMAKE=ON -DBoost_NO_SYSTEM_PATHS=ON -DBOOST_ROOT="$stage/other-boost"
# pkg-config: the headers refuse a Boost other than the one zklock.pc names.
printf '#define BOOST_VERSION %s\n#define BOOST_LIB_VERSION "x"\n' "$other" >"$stage/other-boost/include/boost/version.hpp"
cflags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags zklock)
if out=$(echo '#include <zklock/error.hpp>' | g++ -std=c++20 -fsyntax-only -I"$stage/other-boost/include" $cflags -x c++ - 2>&1); then
    echo "zklock/error.hpp with pkg-config's flags accepted BOOST_VERSION $other (built with $built)" >&2
    exit 1
fi
grep -q 'libzklock was built with another Boost' <<<"$out" || { echo "$out" >&2; exit 1; }
echo '#include <zklock/error.hpp>' | quiet g++ -std=c++20 -fsyntax-only $cflags -x c++ -

echo "find_package(zklock) and pkg-config from a staged install: ok"
