#!/usr/bin/env bash
# Throwaway local ZooKeeper server for development and CI.
#
#   eval "$(scripts/zk-local.sh)"        # start: prints ZK_SERVERS=..., ZK_PID=..., ZK_DIR=...
#   scripts/zk-local.sh stop "$ZK_PID" "$ZK_DIR"
#
# Listens on 127.0.0.1 only, on a free port or on $ZK_PORT. Optional: $ZK_TICK_TIME (ms,
# default 2000), $JAVA (default: java on PATH), $ZOOKEEPER_JAR. The server log is $ZK_DIR/zookeeper.log.
set -euo pipefail

zk_jar=${ZOOKEEPER_JAR:-/usr/share/java/zookeeper.jar}
java=${JAVA:-java}

die() { echo "zk-local.sh: $*" >&2; exit 1; }

# Sends a four-letter word to 127.0.0.1:$1; prints the reply (nothing if unreachable).
four_letter() {
    local reply=""
    if exec 3<>"/dev/tcp/127.0.0.1/$1"; then
        printf '%s' "$2" >&3
        reply=$(timeout 3 cat <&3 || true)
        exec 3<&-
    fi
    printf '%s' "$reply"
} 2>/dev/null

# A zombie counts as dead: the server is not our child, whoever adopted it may reap it late.
alive() {
    local stat
    kill -0 "$1" 2>/dev/null || return 1
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ ${stat:0:1} != Z ]]
}

# A port in 10000..(start of the ephemeral range - 1) that nothing listens on. The ephemeral
# range is avoided so outgoing connections cannot take it before the server binds it.
pick_port() {
    local lo=32768 p
    read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    ((lo > 11000)) || lo=32768
    for _ in $(seq 1 50); do
        p=$((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return
        fi
    done
    die "no free port found"
}

start() {
    command -v "$java" >/dev/null || die "java not found (set \$JAVA)"
    [[ -r $zk_jar ]] || die "$zk_jar not found (set \$ZOOKEEPER_JAR)"
    local dir cp=$zk_jar log_opt=() attempt port pid
    dir=$(mktemp -d "${TMPDIR:-/tmp}/zk-local.XXXXXX")
    mkdir -p "$dir/data"
    # Debian's ZooKeeper has no SLF4J binding on its classpath: without one it logs nothing.
    if [[ -r /usr/share/java/slf4j-log4j12.jar && -r /usr/share/java/log4j-1.2.jar ]]; then
        cp+=:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar
        cat >"$dir/log4j.properties" <<'PROPS'
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
PROPS
        log_opt=("-Dlog4j.configuration=file:$dir/log4j.properties")
    fi

    if [[ -n ${ZK_PORT:-} ]] && (exec 3<>"/dev/tcp/127.0.0.1/$ZK_PORT") 2>/dev/null; then
        rm -rf -- "$dir"
        die "port $ZK_PORT is already in use"
    fi
    for attempt in 1 2 3 4; do
        port=${ZK_PORT:-$(pick_port)}
        cat >"$dir/zoo.cfg" <<CFG
tickTime=${ZK_TICK_TIME:-2000}
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
forceSync=no
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
CFG
        # nohup and the redirections detach the server from this script and its stdout.
        nohup "$java" -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData "${log_opt[@]}" -cp "$cp" \
            org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
            >>"$dir/zookeeper.log" 2>&1 </dev/null &
        pid=$!
        # "ruok" answers before the server accepts sessions; "srvr" reports a Mode only then.
        for _ in $(seq 1 300); do
            if ! alive "$pid"; then break; fi
            if [[ $(four_letter "$port" srvr) == *"Mode: "* ]]; then
                echo "ZK_SERVERS=127.0.0.1:$port"
                echo "ZK_PID=$pid"
                echo "ZK_DIR=$dir"
                return 0
            fi
            sleep 0.1
        done
        if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
        wait "$pid" 2>/dev/null || true
        if [[ -z ${ZK_PORT:-} ]] && grep -q "Address already in use" "$dir/zookeeper.log"; then
            echo "zk-local.sh: port $port taken, retrying (attempt $attempt)" >&2
            continue
        fi
        break
    done
    echo "zk-local.sh: ZooKeeper did not start; kept $dir; log tail:" >&2
    tail -n 40 "$dir/zookeeper.log" >&2 || true
    exit 1
}

stop() {
    local pid=${1:-} dir=${2:-}
    [[ $pid =~ ^[0-9]+$ && -n $dir ]] || die "usage: $0 stop PID DIR"
    # Only signal the process if it is our server for that dir: the PID may have been reused.
    local cmdline=""
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || true
    if alive "$pid" && [[ $cmdline == *" $dir/zoo.cfg"* ]]; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            alive "$pid" || break
            sleep 0.1
        done
        if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    fi
    if [[ -f $dir/zoo.cfg && $(basename "$dir") == zk-local.* ]]; then
        rm -rf -- "$dir"
    elif [[ -e $dir ]]; then
        die "$dir does not look like a zk-local.sh dir; not removed"
    fi
}

case ${1:-start} in
start) start ;;
stop) shift; stop "$@" ;;
*) die "usage: $0 [start] | stop PID DIR" ;;
esac
