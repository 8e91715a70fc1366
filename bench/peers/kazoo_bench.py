#!/usr/bin/python3
"""zklock_bench's Kazoo peer (bench/peers.cpp): one scenario of bench/PROTOCOL.md with Kazoo 2.8's
Lock, written as Kazoo users write it: one KazooClient per session, one Lock and one thread per
contender, acquire() blocking its thread.

    kazoo_bench.py SERVERS PATH KIND SESSIONS CONTENDERS WARM_MS RUN_MS BOUND_MS LOG GO QUIT PREWARM_MS

The protocol with the bench is CuratorBench.java's (KIND, the warm-up on PATH-warmup, the start
gate, the "ready", "acq" and "end" lines of LOG, GO and QUIT); times are time.monotonic_ns() (CLOCK_MONOTONIC, the bench's clock).
"""
import os
import sys
import threading
import time

from kazoo.client import KazooClient


def main():
    servers, path, kind = sys.argv[1:4]
    sessions, contenders = int(sys.argv[4]), int(sys.argv[5])
    warm_ns, run_ns, bound_ns = (int(x) * 1_000_000 for x in sys.argv[6:9])
    log_path, go, quit_file = sys.argv[9:12]
    prewarm_s = int(sys.argv[12]) / 1000.0
    loop = kind == "loop"
    log = open(log_path, "a", buffering=1)
    clients = [KazooClient(hosts=servers, timeout=30.0) for _ in range(sessions)]
    for c in clients:
        c.start(timeout=30)
    clients[0].ensure_path(path)
    if prewarm_s > 0:
        warm_path = path + "-warmup"
        until = time.monotonic() + prewarm_s

        def warm(lock):
            try:
                while time.monotonic() < until:
                    if lock.acquire(timeout=10):
                        lock.release()
            except Exception:  # noqa: BLE001 (the warm-up only warms)
                pass

        warmers = [threading.Thread(target=warm, args=(clients[i % sessions].Lock(warm_path, "kazoo-bench"),), daemon=True)
                   for i in range(min(64, contenders))]
        for t in warmers:
            t.start()
        for t in warmers:
            t.join(prewarm_s + 30)
        try:
            clients[0].delete(warm_path)
        except Exception:  # noqa: BLE001
            pass

    records = []  # list.append is atomic under the GIL
    failure = []
    gate = threading.Event()
    window = [0, 0]  # start, stop (set before the gate opens)

    def contender(i, lock):
        try:
            gate.wait()
            # The report is the main thread's, at the bound. A contender's own timeout is a backstop
            # past it: were thousands of waiters to time out at the bound itself, each deleting its
            # node, they would hold the GIL away from the main thread's report.
            bound = window[0] + bound_ns + 60_000_000_000
            while True:
                t_req = time.monotonic_ns()
                left = bound - t_req
                if left <= 0 or not lock.acquire(timeout=left / 1e9):
                    failure.append("contender %d: acquire timed out" % i)
                    return
                t_acq = time.monotonic_ns()
                node = lock.node
                t_rs = time.monotonic_ns()
                lock.release()
                t_rel = time.monotonic_ns()
                if not loop or t_req >= window[0] + warm_ns:
                    records.append("acq %d %s %d %d %d %d" % (i, node, t_req, t_acq, t_rs, t_rel))
                if not loop or time.monotonic_ns() >= window[1]:
                    return
        except Exception as e:  # noqa: BLE001 (reported, not raised in a thread)
            failure.append("contender %d: %r" % (i, e))

    threads = []
    why = "ok"
    for i in range(contenders):
        lock = clients[i % sessions].Lock(path, "kazoo-bench")
        t = threading.Thread(target=contender, args=(i, lock), daemon=True)
        try:
            t.start()
        except Exception as e:  # noqa: BLE001 (RuntimeError: can't start new thread)
            why = "could not start contender thread %d of %d: %r" % (i + 1, contenders, e)
            break
        threads.append(t)
    log.write("ready %d\n" % len(threads))
    waited = 0
    while not os.path.exists(go):
        waited += 1
        if waited > 600_000:  # no bench: 10 min
            os._exit(1)
        time.sleep(0.001)
    window[0] = time.monotonic_ns()
    window[1] = window[0] + warm_ns + run_ns
    gate.set()
    deadline = window[0] + bound_ns
    timed_out = False
    for t in threads:
        t.join(max(0.001, (deadline - time.monotonic_ns()) / 1e9))
        if t.is_alive():
            timed_out = True
            break
    done = list(records)
    log.write("".join(r + "\n" for r in done))  # one write: the GIL is let go once, not once a line
    if timed_out:
        why = "bound of %d s reached" % (bound_ns // 1_000_000_000)
    elif failure and why == "ok":
        why = failure[0]
    log.write("end %d %d %s\n" % (len(done), len(threads), why))
    log.flush()
    waited = 0
    while not os.path.exists(quit_file) and waited < 12_000:
        waited += 1
        time.sleep(0.005)
    threading.Timer(15, lambda: os._exit(2)).start()  # closing may hang on a stuck server: 15 s at most
    for c in clients:
        c.stop()
        c.close()
    os._exit(0)


if __name__ == "__main__":
    main()
