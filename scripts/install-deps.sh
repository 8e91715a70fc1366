#!/usr/bin/env bash
# Installs what zklock needs from Debian 12's packages, only what is missing. Idempotent. Root.
#   --test   also what only the test suite uses: promtool (package prometheus), which checks the
#            /metrics page of examples/http_counter (scripts/test.sh passes it; the demo does not
#            need it, and the test skips that one check, saying so, without it); man-db (man and
#            groff), with which the cli tests render and lint the zklock(1) manual page;
#            libspdlog-dev, for examples/spdlog_logger (session_config::logger wired to spdlog);
#            doxygen, with which scripts/docs.sh builds the API reference and fails on a warning.
set -euo pipefail
for_tests=0
for a in "$@"; do
  case "$a" in
    --test) for_tests=1 ;;
    *) echo "install-deps: unknown argument $a (expected --test)" >&2; exit 2 ;;
  esac
done

packages=(
  g++ cmake ninja-build make
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev
  libzookeeper-st-dev doctest-dev
  libssl-dev           # TLS to ZooKeeper's secureClientPort, through Asio's ssl::stream
  libnetty-java        # the test servers' TLS (ZooKeeper has TLS on Netty only): its jars are
                       # named on their classpath; zookeeper depends on it, listed as we use it
  openssl              # the tests make their certificates with the openssl command
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
# doxygen: scripts/test.sh builds the API reference (scripts/docs.sh) and fails on any warning.
if [ "$for_tests" = 1 ]; then packages+=(prometheus man-db libspdlog-dev doxygen); fi

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
  # The prometheus package comes with a server that its maintainer scripts may start: the tests
  # need only promtool.
  if [[ " ${missing[*]} " == *" prometheus "* ]]; then
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
      systemctl disable --now prometheus >/dev/null 2>&1 || true
    elif [ -x /etc/init.d/prometheus ]; then
      /etc/init.d/prometheus stop >/dev/null 2>&1 || true
    fi
  fi
else
  echo "install-deps: everything is installed" >&2
fi
