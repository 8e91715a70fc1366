#!/usr/bin/env bash
# Installs what zklock needs from Debian 12's packages, only what is missing. Idempotent. Root.
set -euo pipefail

packages=(
  g++ cmake ninja-build make
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev
  libzookeeper-st-dev doctest-dev
  zookeeper            # the real server, for the tests and the demo (pulls a Java runtime)
  procps iproute2
  pkgconf python3      # the packaging tests: the installed zklock.pc, compile_commands.json
  # The interoperability tests' real peers: Apache Curator 5.4 (compiled by the test with Debian's
  # JDK) and Kazoo 2.8.
  default-jdk-headless libcurator-recipes-java python3-kazoo
)
# ZKLOCK_SANITIZERS=1 (scripts/test-sanitizers.sh): clang and its runtimes for the libFuzzer targets
# (GCC's ASan/UBSan/TSan runtimes come with g++).
if [ "${ZKLOCK_SANITIZERS:-0}" = 1 ]; then packages+=(clang-14 libclang-rt-14-dev); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v java >/dev/null 2>&1; then missing+=(default-jre-headless); fi

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: need root to install packages (run as root, or install: ${missing[*]})" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: everything is installed" >&2
fi
