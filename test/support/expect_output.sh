#!/bin/sh
# Runs COMMAND...; passes if it exits 0 and its output (stdout and stderr) has a line matching
# each extended regular expression given after "--".
#   expect_output.sh COMMAND [ARGS...] -- REGEX [REGEX...]
cmd=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmd="$cmd '$1'"; shift; done
[ "$1" = "--" ] && shift
out=$(eval "$cmd" 2>&1)
rc=$?
printf '%s\n' "$out"
[ $rc -eq 0 ] || { echo "expect_output: exited $rc" >&2; exit 1; }
for re in "$@"; do
  printf '%s\n' "$out" | grep -Eq -- "$re" || { echo "expect_output: no line matches: $re" >&2; exit 1; }
done
