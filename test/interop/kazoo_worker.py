#!/usr/bin/python3
"""A contender on a lock path through Kazoo 2.8, for zklock's interoperability tests.

    kazoo_worker.py SERVERS PATH MODE ROUNDS HOLD_MS LOG
    MODE: mutex (Lock), read (ReadLock), write (WriteLock)

Each round: acquire, log "grant <CLOCK_MONOTONIC ns> <node> <kind>", read the counter node
PATH-counter, hold HOLD_MS, write it back + 1 (writers only), log "release <ns> <node>", release.

Interop configuration on this side: extra_lock_patterns, so that Kazoo sees the nodes of zklock
and Curator as contenders: "lock-" (zklock's mutex, Curator's InterProcessMutex) and "__WRIT__"
(writers of zklock's shared_mutex and Curator's InterProcessReadWriteLock) for every mode, plus
"__READ__" (their readers) for the exclusive modes.
"""
import sys
import time

from kazoo.client import KazooClient


def main():
    servers, path, mode, rounds, hold_ms, log_path = sys.argv[1:7]
    rounds, hold = int(rounds), int(hold_ms) / 1000.0
    counter = path + "-counter"
    zk = KazooClient(hosts=servers, timeout=10.0)
    zk.start(timeout=20)
    patterns = ["lock-", "__WRIT__"] + ([] if mode == "read" else ["__READ__"])
    make = {"mutex": zk.Lock, "read": zk.ReadLock, "write": zk.WriteLock}[mode]
    with open(log_path, "a", buffering=1) as log:
        for _ in range(rounds):
            lock = make(path, "kazoo", extra_lock_patterns=patterns)
            if not lock.acquire(timeout=60):
                raise RuntimeError("acquire timed out")
            log.write("grant %d %s %s\n" % (time.monotonic_ns(), lock.node, "r" if mode == "read" else "x"))
            data, _ = zk.get(counter)
            time.sleep(hold)
            if mode != "read":
                zk.set(counter, str(int(data) + 1).encode())
            log.write("release %d %s\n" % (time.monotonic_ns(), lock.node))
            lock.release()
    zk.stop()


if __name__ == "__main__":
    main()
