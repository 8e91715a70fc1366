#!/usr/bin/env bash
# The symbols a built libzklock (static or shared, the first argument) defines for its users, and
# the ones it needs from them (issue: the C client sealed inside libzklock):
#  * every strong global symbol it defines is zklock's: a C name zklock_*, or a C++ name in
#    namespace zklock (functions, vtables, typeinfo, guards). Weak ones are the inline code of the
#    headers it uses (Boost, the standard library), as in any C++ library, and are not checked;
#  * nothing of the ZooKeeper C client is defined or needed under its own name: not the API names
#    that the sealed client's generated header (the second argument) lists, and not its internal
#    ones (create_hashtable, log_message, ...), so a program may link the system's client beside.
set -euo pipefail
lib=$1
names_header=$2
dyn=()
case "$lib" in *.so*) dyn=(-D) ;; esac
defined=$(nm "${dyn[@]}" -g --defined-only -P "$lib" | awk 'NF >= 2 && $1 !~ /:$/ { print $1, $2 }')
bad=$(awk '$2 ~ /^[TDBRG]$/ && $1 !~ /^zklock_/ &&
           $1 !~ /^_Z(T[VIST]|GV|Th[n0-9_]+|Tv[n0-9_]+|Z|N|NK)*N?K?6zklock/ &&
           $1 !~ /^(_init|_fini|_edata|_end|__bss_start)$/ { print $1 }' <<<"$defined" | sort -u)
if [ -n "$bad" ]; then
    echo "$lib defines global symbols that are not zklock's:" >&2
    c++filt <<<"$bad" | head -50 >&2
    exit 1
fi
api=$(sed -n 's/^#define \([A-Za-z_0-9]*\) zklock_zc_.*/\1/p' "$names_header" | sort -u)
[ "$(wc -l <<<"$api")" -ge 50 ] || { echo "$names_header lists only $(wc -l <<<"$api") names" >&2; exit 1; }
internal="create_hashtable hashtable_insert log_message enter_critical zoo_htonll"
undefined=$(nm "${dyn[@]}" -u -P "$lib" | awk '{ print $1 }' | sed 's/@.*//' | sort -u)
forbidden=$( (echo "$api"; tr ' ' '\n' <<<"$internal") | sort -u)
names=$( (awk '{ print $1 }' <<<"$defined"; echo "$undefined") | sort -u)
leaks=$(comm -12 <(echo "$forbidden") <(echo "$names"))
if [ -n "$leaks" ]; then
    echo "$lib defines or needs ZooKeeper C client names of its own:" >&2
    head -50 <<<"$leaks" >&2
    exit 1
fi
strong=$(awk '$2 ~ /^[TDBRG]$/' <<<"$defined" | wc -l)
weak=$(awk '$2 ~ /^[WVu]$/' <<<"$defined" | wc -l)
echo "$lib: $strong strong global symbols, all zklock's; $weak weak ones from headers; no C client name"
