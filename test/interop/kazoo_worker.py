#!/usr/bin/python3
"""A contender on a lock path through Kazoo 2.8, for zklock's interoperability tests.

    kazoo_worker.py SERVERS PATH MODE ROUNDS HOLD_MS LOG [SESSION_MS]
    MODE: mutex (Lock), read (ReadLock), write (WriteLock), election (Election)
    SESSION_MS: the session timeout asked for (default 10000)

Each round: acquire, log "grant <CLOCK_MONOTONIC ns> <node> <kind>", read the counter node
PATH-counter, hold HOLD_MS, write it back + 1 (writers only), log "release <ns> <node>", release.

Interop configuration on this side: extra_lock_patterns, so that Kazoo sees the nodes of zklock
and Curator as contenders: "lock-" (zklock's mutex, Curator's InterProcessMutex) and "__WRIT__"
(writers of zklock's shared_mutex and Curator's InterProcessReadWriteLock) for every mode, plus
"__READ__" (their readers) for the exclusive modes.

election: each round, Election(client, PATH, "kazoo-<pid>-<round>").run(lead), where lead logs
the grant, then "queue <ns> <node> <child>..." (PATH's children, listed while leading: the test
checks that the leader's node was the oldest candidate present), does the counter's
read-pause-write and logs the release; run() releases when lead returns. An Election is a Lock
made with the identifier alone (recipe/election.py, Election.__init__: client.Lock(path,
identifier)): no extra_lock_patterns can be given. Its node is "<uuid4 hex>__lock__<seq>", the
identifier as data (recipe/lock.py, Lock.__init__: prefix, data). A candidate's predecessor is
found among the children that match r"(?:__lock__)(-?\\d{10})$", sorted by that sequence as a
string (Lock._contenders_re, Lock._get_predecessor); any other name is no contender at all. So
it sees zklock's candidates named "x-<id>-__lock__<seq>" (election_names::kazoo) in sequence
order, and none named otherwise (neither Curator's "...latch-"/"...lock-" candidates).
"""
import os
import sys
import time

from kazoo.client import KazooClient


def main():
    servers, path, mode, rounds, hold_ms, log_path = sys.argv[1:7]
    session_ms = int(sys.argv[7]) if len(sys.argv) > 7 else 10000
    rounds, hold = int(rounds), int(hold_ms) / 1000.0
    counter = path + "-counter"
    zk = KazooClient(hosts=servers, timeout=session_ms / 1000.0)
    zk.start(timeout=20)
    with open(log_path, "a", buffering=1) as log:
        if mode == "election":
            for i in range(rounds):
                election = zk.Election(path, "kazoo-%d-%d" % (os.getpid(), i))

                def lead():
                    node = election.lock.node
                    log.write("grant %d %s x\n" % (time.monotonic_ns(), node))
                    children = zk.get_children(path)
                    log.write("queue %d %s %s\n" % (time.monotonic_ns(), node, " ".join(children)))
                    data, _ = zk.get(counter)
                    time.sleep(hold)
                    zk.set(counter, str(int(data) + 1).encode())
                    log.write("release %d %s\n" % (time.monotonic_ns(), node))

                election.run(lead)
            zk.stop()
            return
        patterns = ["lock-", "__WRIT__"] + ([] if mode == "read" else ["__READ__"])
        make = {"mutex": zk.Lock, "read": zk.ReadLock, "write": zk.WriteLock}[mode]
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
