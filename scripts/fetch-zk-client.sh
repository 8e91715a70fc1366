#!/usr/bin/env bash
# Fetches Debian 13 (trixie)'s ZooKeeper C client, single-threaded flavour (libzookeeper-st-dev and
# its runtime library package), into a private prefix, without installing anything or touching the
# system's apt lists or cache, so zklock can also be built and tested against it:
#
#   prefix=$(bash scripts/fetch-zk-client.sh build-zk39)      # prints e.g. .../build-zk39/root/usr
#   cmake -S . -B build-zk39/build -DCMAKE_PREFIX_PATH="$prefix" ...
#
# The argument is the work directory (default: build-zk39 beside this repository's build/); it
# gets apt/ (a private apt configuration, sources list, lists, cache), debs/ (the .deb files) and
# root/ (both packages unpacked with dpkg -x). Only the prefix goes to stdout, progress to stderr.
# Each run refreshes the private lists (small when nothing changed) and downloads and unpacks again
# only when trixie's candidate version differs from the one unpacked (root/.zk-client-versions).
#
# The sources are the trixie, trixie-updates and trixie-security suites of the same Debian archive
# hosts that the system's own apt sources name (else deb.debian.org), checked with the system
# keyring /usr/share/keyrings/debian-archive-keyring.gpg (bookworm's debian-archive-keyring has had
# the trixie keys since 2023.3+deb12u2). The system's apt.conf.d is read (proxy and date settings
# apply as for the system's apt), its update hooks are cleared. Root is not needed.
# Optional: ZK_SUITE (default trixie), ZK_DEBIAN_MIRROR, ZK_DEBIAN_SECURITY_MIRROR, ZK_KEYRING.
#
# With --source first, it fetches the suite's source package of zookeeper instead (deb-src; apt
# checks each file against the signed Sources index) into src/, and prints the path of its
# zookeeper_<version>.orig.tar.gz, which is Apache's source release, for ZKLOCK_ZK_SOURCE:
#
#   src=$(ZK_SUITE=bookworm bash scripts/fetch-zk-client.sh --source build-zk38src)   # 3.8.0
#   cmake -S . -B build-src -DZKLOCK_ZK_CLIENT=source -DZKLOCK_ZK_SOURCE="$src" ...
#
# The release is the highest version's zookeeper_<version>.orig.tar.{gz,xz,bz2} in src/, never its
# detached signature (.orig.tar.gz.asc, which the source package carries since 3.8.0-11+deb12u2).
# With --orig-in DIR it only prints that choice among the files already in DIR (no network).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

# The source release among the files of source packages in $1: the highest version's archive.
orig_in() {
    local f
    for f in "$1"/zookeeper_*.orig.tar.gz "$1"/zookeeper_*.orig.tar.xz "$1"/zookeeper_*.orig.tar.bz2; do
        if [[ -f $f ]]; then printf '%s\n' "$f"; fi
    done | sort -V | tail -n1
}

mode=binary
case ${1:-} in
--source)
    mode=source
    shift
    ;;
--orig-in)
    [[ -n ${2:-} ]] || { echo "fetch-zk-client: --orig-in needs a directory" >&2; exit 2; }
    orig=$(orig_in "$2")
    [[ -n $orig ]] || { echo "fetch-zk-client: $2 has no zookeeper_<version>.orig.tar.{gz,xz,bz2}" >&2; exit 1; }
    echo "$orig"
    exit 0
    ;;
esac
work=${1:-$here/build-zk39}
suite=${ZK_SUITE:-trixie}
keyring=${ZK_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
dev_pkg=libzookeeper-st-dev

say() { echo "fetch-zk-client: $*" >&2; }
die() { say "$*"; exit 1; }

for c in apt-get apt-cache dpkg; do command -v "$c" >/dev/null || die "needs $c (Debian)"; done
[[ -r $keyring ]] || die "keyring $keyring not found (package debian-archive-keyring; or set ZK_KEYRING)"
mkdir -p "$work"
work=$(cd "$work" && pwd)
apt_dir=$work/apt
debs=$work/debs
root=$work/root
stamp=$root/.zk-client-versions
prefix=$root/usr

# The URI of the system's source for suite $1 (bookworm, bookworm-security), from one-line
# sources.list files and deb822 .sources files alike; nothing if none names it.
system_uri() {
    local want=$1 f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r $f ]] || continue
        # deb [opts] URI SUITE COMPONENTS...
        awk -v want="$want" '$1 == "deb" {
                i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                if ($(i + 1) == want) { print $i; exit } }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r $f ]] || continue
        # Stanzas separated by blank lines; the URIs of one whose Suites include the wanted one.
        awk -v want="$want" '
            function flush() { if (hit && uris != "") { split(uris, u, " "); print u[1]; found = 1 }
                               hit = 0; uris = "" }
            /^[ \t]*$/ { flush(); if (found) exit; next }
            /^[ \t]*#/ { next }
            tolower($1) == "uris:"   { uris = $2 }
            tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == want) hit = 1 }
            END { if (!found) flush() }' "$f"
    done
}

# shellcheck disable=SC1091
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") || true
mirror=${ZK_DEBIAN_MIRROR:-}
security=${ZK_DEBIAN_SECURITY_MIRROR:-}
if [[ -n $codename ]]; then
    [[ -n $mirror ]] || mirror=$(system_uri "$codename" | head -n1)
    [[ -n $security ]] || security=$(system_uri "$codename-security" | head -n1)
fi
mirror=${mirror:-http://deb.debian.org/debian}
security=${security:-http://deb.debian.org/debian-security}

# The private apt configuration: read with -c after the system's, so only these settings change.
# Every directory apt reads or writes is under $apt_dir; the status file is empty (nothing counts
# as installed); no preferences, no other sources, no trusted keys besides Signed-By.
arch=$(dpkg --print-architecture)
mkdir -p "$apt_dir"/{state/lists/partial,cache/archives/partial,sources.list.d,preferences.d,trusted.gpg.d,log}
: >"$apt_dir/state/status"
kind=deb
[[ $mode == source ]] && kind=deb-src
cat >"$apt_dir/sources.list" <<EOF
$kind [signed-by=$keyring] $mirror $suite main
$kind [signed-by=$keyring] $mirror $suite-updates main
$kind [signed-by=$keyring] $security $suite-security main
EOF
cat >"$apt_dir/apt.conf" <<EOF
Dir::State "$apt_dir/state";
Dir::State::lists "$apt_dir/state/lists";
Dir::State::status "$apt_dir/state/status";
Dir::Cache "$apt_dir/cache";
Dir::Cache::archives "$apt_dir/cache/archives";
Dir::Cache::pkgcache "$apt_dir/cache/pkgcache.bin";
Dir::Cache::srcpkgcache "";
Dir::Etc::SourceList "$apt_dir/sources.list";
Dir::Etc::SourceParts "$apt_dir/sources.list.d";
Dir::Etc::Preferences "$apt_dir/preferences";
Dir::Etc::PreferencesParts "$apt_dir/preferences.d";
Dir::Etc::Trusted "$apt_dir/trusted.gpg";
Dir::Etc::TrustedParts "$apt_dir/trusted.gpg.d";
Dir::Log "$apt_dir/log";
APT::Architecture "$arch";
#clear APT::Architectures;
APT::Architectures { "$arch"; };
Acquire::Languages "none";
#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
#clear DPkg::Pre-Invoke;
#clear DPkg::Post-Invoke;
EOF
apt_get() { apt-get -c "$apt_dir/apt.conf" -q "$@"; }
apt_cache() { apt-cache -c "$apt_dir/apt.conf" "$@"; }

say "updating private lists for $suite ($mirror, $security)"
log=$apt_dir/log/update.log
if ! apt_get update >"$log" 2>&1 || grep -qE '^(W|E): ' "$log"; then
    cat "$log" >&2
    if grep -q NO_PUBKEY "$log"; then
        say "$keyring lacks $suite's signing keys: upgrade debian-archive-keyring (bookworm's" \
            "2023.3+deb12u2 or later has them), or set ZK_KEYRING to a keyring that has them"
    fi
    die "apt-get update failed (private configuration $apt_dir/apt.conf)"
fi

if [[ $mode == source ]]; then
    # The highest version of the three suites; files already there and matching are kept.
    mkdir -p "$work/src"
    if [[ $(id -u) == 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$work/src"; fi
    say "downloading the source package zookeeper of $suite"
    (cd "$work/src" && apt_get source --download-only zookeeper >&2)
    orig=$(orig_in "$work/src")
    [[ -n $orig ]] || die "the source package of $suite has no zookeeper_<version>.orig.tar.{gz,xz,bz2}"
    echo "$orig"
    exit 0
fi

# The candidate of $1: the highest version over the three suites.
candidate() { apt_cache policy "$1" | awk '$1 == "Candidate:" { print $2 }'; }
dev_ver=$(candidate "$dev_pkg")
[[ -n $dev_ver && $dev_ver != "(none)" ]] || die "$suite has no $dev_pkg"
# The runtime library package: the one that $dev_pkg depends on by exactly its own version
# (libzookeeper-st2 in trixie; named from the index, in case a later release renames it).
rt_pkg=$(apt_cache show "$dev_pkg=$dev_ver" | awk -F': ' '$1 == "Depends" { print $2; exit }' |
    tr ',' '\n' | sed -E 's/^ +//' | awk -v v="$dev_ver" '$1 ~ /^libzookeeper/ && index($0, "(= " v ")") { print $1; exit }')
[[ -n $rt_pkg ]] || die "$dev_pkg $dev_ver names no libzookeeper runtime package of its own version"
rt_ver=$(candidate "$rt_pkg")
[[ $rt_ver == "$dev_ver" ]] || die "$rt_pkg's candidate is $rt_ver, $dev_pkg wants $dev_ver"
wanted="$dev_pkg $dev_ver
$rt_pkg $rt_ver"

if [[ -r $stamp && $(cat "$stamp") == "$wanted" && -r $prefix/include/zookeeper/zookeeper.h ]]; then
    say "$dev_pkg and $rt_pkg $dev_ver already unpacked in $root"
    echo "$prefix"
    exit 0
fi

say "downloading $dev_pkg and $rt_pkg $dev_ver"
rm -rf "$debs"
mkdir -p "$debs"
# As root apt downloads as its sandbox user _apt, which must be able to write the directory.
if [[ $(id -u) == 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$debs"; fi
# apt-get download checks each file against the hashes of the signed index.
(cd "$debs" && apt_get download "$dev_pkg=$dev_ver" "$rt_pkg=$rt_ver" >&2)

say "unpacking into $root"
rm -rf "$root"
mkdir -p "$root"
for deb in "$debs"/*.deb; do
    dpkg -x "$deb" "$root"
done
[[ -r $prefix/include/zookeeper/zookeeper.h ]] || die "no include/zookeeper/zookeeper.h in $prefix"
# Written last: its presence means the unpacking finished.
printf '%s\n' "$wanted" >"$stamp"
echo "$prefix"
