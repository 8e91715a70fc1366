#!/usr/bin/env bash
# scripts/fetch-zk-client.sh --source prints the source release among the files apt-get source
# downloaded: here the file names of Debian 12's package (3.8.0-11+deb12u2, which carries the
# release's .asc signature), written in apt's order with the signature newest, and a second
# version beside them. Runs the script's --orig-in choice, no network.
set -euo pipefail
script=$(cd "$(dirname "$0")/../.." && pwd)/scripts/fetch-zk-client.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "fetch-zk-client's choice: $*" >&2; exit 1; }
for f in zookeeper_3.8.0-11+deb12u2.dsc zookeeper_3.8.0.orig.tar.gz zookeeper_3.8.0.orig.tar.gz.asc \
    zookeeper_3.8.0-11+deb12u2.debian.tar.xz; do
    touch "$work/$f"
done
touch -d '+1 minute' "$work/zookeeper_3.8.0.orig.tar.gz.asc"
got=$(bash "$script" --orig-in "$work")
[[ $got == "$work/zookeeper_3.8.0.orig.tar.gz" ]] || fail "3.8.0's package gave $got"
# The highest version wins, whatever the compression and whichever file is newest.
touch -d '-1 minute' "$work/zookeeper_3.10.1.orig.tar.xz"
touch "$work/zookeeper_3.9.3.orig.tar.gz"
got=$(bash "$script" --orig-in "$work")
[[ $got == "$work/zookeeper_3.10.1.orig.tar.xz" ]] || fail "3.8.0, 3.9.3 and 3.10.1 gave $got"
# No release: an error, not a signature.
rm "$work"/zookeeper_*.orig.tar.gz "$work"/zookeeper_*.orig.tar.xz
if got=$(bash "$script" --orig-in "$work" 2>"$work/err"); then fail "a directory without a release gave $got"; fi
grep -q "has no zookeeper_<version>.orig.tar" "$work/err" || fail "no word of the missing release: $(cat "$work/err")"
echo "fetch-zk-client's choice: the release, not its signature; the highest version; an error without one: ok"
