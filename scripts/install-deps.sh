#!/usr/bin/env bash
# Installs what zklock needs from Debian 12's packages, only what is missing. Idempotent. Root.
#   --demo   only what scripts/demo.sh needs: the compiler, CMake and Ninja, the library's build
#            dependencies (Boost's headers, the ZooKeeper C client, OpenSSL), the ZooKeeper server's
#            jars (libzookeeper-java: scripts/zk-local.sh runs /usr/share/java/zookeeper.jar) and a
#            headless Java runtime. Not the `zookeeper` package, whose dependency on default-jre
#            would bring the desktop Java runtime (X11, ALSA, ...), nor anything only the tests, the
#            benchmark or the zklock tool use.
#   (none)   what the whole project builds with and the tests' servers and peers: the above, plus
#            Boost.JSON and Boost.Program_options (the zklock tool, the benchmark), doctest, the
#            `zookeeper` package, libnetty-java and openssl (the test servers' TLS), procps,
#            iproute2, pkgconf, python3, and the interop tests' peers: a JDK, Apache Curator 5.4
#            and Kazoo 2.8. scripts/bench.sh uses this.
#   --test   all of that, and also what only the test suite uses: promtool (package prometheus),
#            which checks the /metrics page of examples/http_counter (the test skips that one check,
#            saying so, without it); man-db (man and groff), with which the cli tests render and
#            lint the zklock(1) manual page; libspdlog-dev, for examples/spdlog_logger
#            (session_config::logger wired to spdlog); doxygen, with which scripts/docs.sh builds
#            the API reference and fails on a warning; libzookeeper-mt2, the system's
#            multi-threaded C client, which a packaging test links beside zklock; postgresql
#            (its server binaries and psql) and libpq-dev, for examples/http_counter_pg and the
#            tests of fencing against a real PostgreSQL, which start servers of their own.
#            scripts/test.sh passes it.
# Prints one line per step on stderr, headed by the caller's name (demo:, test:).
set -euo pipefail
mode=all
for a in "$@"; do
  case "$a" in
    --demo) mode=demo ;;
    --test) mode="test" ;;
    *) echo "install-deps: unknown argument $a (expected --demo or --test)" >&2; exit 2 ;;
  esac
done
case "$mode" in
  demo) who=demo ;;
  test) who="test" ;;
  *) who=install-deps ;;
esac
say() { echo "$who: $*" >&2; }

# The library, the demos (examples/fairness_demo, examples/hot_lock_demo link zklock only) and the
# demo's throwaway server. The scripts configure with Ninja: make is not needed for the demo.
packages=(
  g++ cmake ninja-build
  libboost1.81-dev      # Boost's headers: Asio, Container, Unordered, System (header-only)
  libzookeeper-st-dev   # the ZooKeeper C client, sealed into libzklock (its static archive)
  libssl-dev            # TLS to ZooKeeper's secureClientPort, on the C client's own socket
  libzookeeper-java     # the server: /usr/share/java/zookeeper.jar, its jars and log4j binding
)
if [ "$mode" != demo ]; then
  packages+=(
    make
    libboost-json1.81-dev libboost-program-options1.81-dev   # the zklock tool, the benchmark
    doctest-dev
    libnetty-java        # the test servers' TLS (ZooKeeper has TLS on Netty only): its jars are
                         # named on their classpath; zookeeper depends on it, listed as we use it
    openssl              # the tests make their certificates with the openssl command
    zookeeper            # the server package, as the tests have always had it (pulls default-jre)
    procps iproute2
    pkgconf python3      # the packaging tests: the installed zklock.pc, compile_commands.json
    # The interoperability tests' real peers: Apache Curator 5.4 (compiled by the test with
    # Debian's JDK) and Kazoo 2.8.
    default-jdk-headless libcurator-recipes-java python3-kazoo
  )
fi
# ZKLOCK_SANITIZERS=1 (scripts/test-sanitizers.sh): Clang 16 and its runtimes, which build the suite
# under ASan+UBSan against Debian 13's C client and the libFuzzer targets (GCC's TSan runtime comes
# with g++), and llvm-16 for its llvm-symbolizer: without it a sanitizer's report has addresses, not
# files and lines.
if [ "${ZKLOCK_SANITIZERS:-0}" = 1 ] && [ "$mode" != demo ]; then packages+=(clang-16 libclang-rt-16-dev llvm-16); fi
# doxygen: scripts/test.sh builds the API reference (scripts/docs.sh) and fails on any warning.
# libzookeeper-mt2: test/cmake/beside_client_test.sh links the system's multi-threaded C client
# beside zklock too.
# postgresql, libpq-dev: examples/http_counter_pg links libpq; test/support/pg_server runs initdb and
# postgres from /usr/lib/postgresql/15/bin, and the tests run psql.
if [ "$mode" = test ]; then packages+=(prometheus man-db libspdlog-dev doxygen libzookeeper-mt2 postgresql libpq-dev); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A Java runtime for the server: any java on PATH will do, else Debian's headless one.
if ! command -v java >/dev/null 2>&1; then missing+=(default-jre-headless); fi

if ((${#missing[@]} == 0)); then
  say "all ${#packages[@]} packages are installed"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  say "need root to install packages (run as root, or install: ${missing[*]})"
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
say "updating apt's package lists"
apt-get update -qq
# How many packages apt will unpack with their dependencies, so that the wait has a size.
total=$(apt-get install -s --no-install-recommends "${missing[@]}" 2>/dev/null | grep -c '^Inst ' || true)
say "installing ${#missing[@]} packages (${missing[*]}), ${total} with their dependencies"
# Its messages after it, less debconf's note that apt-utils is missing (a minimal Debian's case).
apt_err=$(mktemp)
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>"$apt_err"; then
  cat "$apt_err" >&2
  rm -f "$apt_err"
  say "apt-get install failed"
  exit 1
fi
grep -v '^debconf: delaying package configuration, since apt-utils is not installed' "$apt_err" >&2 || true
rm -f "$apt_err"
# The prometheus package comes with a server that its maintainer scripts may start: the tests
# need only promtool.
if [[ " ${missing[*]} " == *" prometheus "* ]]; then
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  elif [ -x /etc/init.d/prometheus ]; then
    /etc/init.d/prometheus stop >/dev/null 2>&1 || true
  fi
fi
# So does postgresql (the cluster 15/main on port 5432): the tests start servers of their own.
if [[ " ${missing[*]} " == *" postgresql "* ]]; then
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now postgresql >/dev/null 2>&1 || true
  elif [ -x /etc/init.d/postgresql ]; then
    /etc/init.d/postgresql stop >/dev/null 2>&1 || true
  fi
fi
