#!/usr/bin/env bash
# Builds the API reference (doxygen, docs/Doxyfile: the public headers of include/zklock) into
# ${BUILD_DIR:-build}/doc/html. Fails on any doxygen warning (an undocumented public name, a
# malformed command), so scripts/test.sh keeps the reference complete. Installs nothing: doxygen
# comes from scripts/install-deps.sh --test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
if ! command -v doxygen >/dev/null 2>&1; then
    echo "docs: doxygen is not installed (scripts/install-deps.sh --test installs it)" >&2
    exit 1
fi
mkdir -p "$build/doc"
out=$(cd "$build/doc" && pwd)
rm -rf "$out/html"
# Doxyfile paths are relative to the repository; the output directory comes from the environment.
cd "$here"
if ! ZKLOCK_DOC_OUT="$out" doxygen docs/Doxyfile; then
    echo "docs: doxygen failed or warned (see above); the reference must build with no warning" >&2
    exit 1
fi
echo "docs: reference in $out/html/index.html"
