#!/usr/bin/env bash
# Watches local ZooKeeper servers for a request left unanswered, and says on which side it waits.
#
#   scripts/stall-watch.sh OUTDIR PORT...                   # these client ports, until killed
#   scripts/stall-watch.sh OUTDIR --bench-log FILE          # the ensemble zklock_bench --ensemble N
#                                                           # announces in FILE (its stderr), run after run
#
# Every 0.5 s it asks each server `cons` and looks at the client sockets (ss). A stall is either
#   server: a connection whose request the server received and has not answered (queued > 0, the
#           same last cxid) for STALL_S seconds (default 3): the server holds it;
#   client: bytes waiting unread in a client socket to that server (Recv-Q > 0) for STALL_S
#           seconds: the client has not read an answer the server sent.
# On a stall it saves OUTDIR/stall.HHMMSS/: what it saw (stall.txt), `cons`, `mntr` and `stat` of
# every server, the client sockets (ss), and a thread dump of each server JVM (jcmd, when found).
# Loopback only. Optional: $STALL_S, $FOR_S (stop after that many seconds).
set -uo pipefail

out=${1:?usage: stall-watch.sh OUTDIR PORT... | OUTDIR --bench-log FILE}
shift
bench_log=""
fixed_ports=()
if [[ ${1:-} == --bench-log ]]; then bench_log=${2:?--bench-log FILE}; else fixed_ports=("$@"); fi
stall_s=${STALL_S:-3}
for_s=${FOR_S:-0}
mkdir -p "$out"

# Sends a four-letter word to 127.0.0.1:$1; prints the reply (nothing if unreachable).
four_letter() {
    local reply=""
    if exec 3<>"/dev/tcp/127.0.0.1/$1"; then
        printf '%s' "$2" >&3
        reply=$(timeout 2 cat <&3 || true)
        exec 3<&-
    fi
    printf '%s' "$reply"
} 2>/dev/null

ports() {
    if [[ -z $bench_log ]]; then echo "${fixed_ports[@]}"; return; fi
    grep -o 'ensemble up after [0-9.]* s: [0-9.:,]*' "$bench_log" 2>/dev/null | tail -1 |
        sed 's/.*: //; s/127\.0\.0\.1://g; s/,/ /g'
}

now() { date +%s.%N; }
older_than() { awk -v a="$1" -v b="$(now)" -v s="$stall_s" 'BEGIN { exit !(b - a >= s) }'; }

save() {
    local d="$out/stall.$(date +%H%M%S)" p pid
    mkdir -p "$d"
    printf '%s\n' "$1" > "$d/stall.txt"
    for p in $(ports); do
        four_letter "$p" cons > "$d/cons.$p.txt"
        four_letter "$p" mntr > "$d/mntr.$p.txt"
        four_letter "$p" stat > "$d/stat.$p.txt"
    done
    ss -tnHi > "$d/ss.txt"
    for p in $(ports); do
        pid=$(ss -tlnHp "sport = :$p" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
        [[ -n $pid ]] && jcmd "$pid" Thread.print > "$d/threads.$p.txt" 2>&1
    done
    echo "stall-watch.sh: $1 (saved in $d)" >&2
}

declare -A since
start=$(now)
while :; do
    if (( for_s > 0 )) && awk -v a="$start" -v b="$(now)" -v f="$for_s" 'BEGIN { exit !(b - a >= f) }'; then
        break
    fi
    seen=()
    found=""
    for p in $(ports); do
        # Server side: key port+session+last cxid, so that a connection that moves on starts over.
        while read -r line; do
            sid=$(grep -o 'sid=0x[0-9a-f]*' <<< "$line")
            cxid=$(grep -o 'lcxid=0x[0-9a-f]*' <<< "$line")
            key="server $p $sid $cxid"
            seen+=("$key")
            [[ -z ${since[$key]:-} ]] && since[$key]=$(now)
            older_than "${since[$key]}" && found="$key: a request received and not answered for ${stall_s}+ s"
        done < <(four_letter "$p" cons | grep 'queued=[1-9]')
        # Client side: unread bytes from this server.
        while read -r recvq local; do
            key="client $p $local"
            seen+=("$key")
            [[ -z ${since[$key]:-} ]] && since[$key]=$(now)
            older_than "${since[$key]}" && found="$key: $recvq bytes unread by the client for ${stall_s}+ s"
        done < <(ss -tnH "dport = :$p" | awk '$2 > 0 { print $2, $4 }')
    done
    # Forget what is no longer stalled.
    for key in "${!since[@]}"; do
        keep=0
        for s in "${seen[@]}"; do [[ $s == "$key" ]] && keep=1 && break; done
        (( keep )) || unset "since[$key]"
    done
    if [[ -n $found ]]; then
        save "$found"
        since=()
        sleep 5
    fi
    sleep 0.5
done
