// zklock_bench's Curator peer (bench/peers.cpp): one scenario of bench/PROTOCOL.md with Apache
// Curator 5.4's InterProcessMutex, written as Curator users write it: one CuratorFramework per
// session, one InterProcessMutex and one thread per contender, acquire() blocking its thread.
//
//   java CuratorBench SERVERS PATH KIND SESSIONS CONTENDERS WARM_MS RUN_MS BOUND_MS LOG GO QUIT PREWARM_MS
//   KIND: loop (U, C64: each contender loops acquire → release until RUN_MS after the start; a
//         cycle requested in the first WARM_MS is not recorded) or once (W<N>: each acquires once)
//
// Before anything is measured, when PREWARM_MS > 0, min(64, CONTENDERS) threads loop acquire →
// release on PATH-warmup for PREWARM_MS (the JVM compiles the lock's hot code, as in a process that
// has been running; the server is warm already), then the path is deleted.
//
// Contender i uses session i % SESSIONS. Once every session is connected and every contender's
// thread waits at the start gate, the worker writes "ready <threads>" to LOG and waits for the file
// GO to exist; then it opens the gate. Each recorded cycle is a line
// "acq <contender> <node> <t_request> <t_acquired> <t_release_start> <t_released>" (System.nanoTime,
// CLOCK_MONOTONIC on Linux, as the bench's clock), written once the contenders are done or BOUND_MS
// after the start, whichever is first; then "end <recorded> <contenders started> <why or ok>".
// The worker then waits (at most 60 s) for the file QUIT before it closes its sessions (15 s at
// most) and exits, so that the bench reads its /proc figures while it is still the process that ran. A contender thread that
// cannot be started ends the set-up: the contenders started so far run, and "end" says why.
import java.io.FileWriter;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.retry.RetryNTimes;

public class CuratorBench {
    // Curator's own driver, keeping the node it created (InterProcessMutex does not expose it).
    static final class Driver extends StandardLockInternalsDriver {
        volatile String lastPath = "";

        @Override
        public String createsTheLock(CuratorFramework client, String path, byte[] lockNodeBytes) throws Exception {
            String p = super.createsTheLock(client, path, lockNodeBytes);
            lastPath = p;
            return p;
        }
    }

    public static void main(String[] args) throws Exception {
        String servers = args[0], path = args[1], kind = args[2];
        int sessions = Integer.parseInt(args[3]), contenders = Integer.parseInt(args[4]);
        long warmNs = Long.parseLong(args[5]) * 1_000_000L, runNs = Long.parseLong(args[6]) * 1_000_000L;
        long boundNs = Long.parseLong(args[7]) * 1_000_000L;
        String logPath = args[8], go = args[9], quit = args[10];
        boolean loop = kind.equals("loop");
        PrintWriter log = new PrintWriter(new FileWriter(logPath, true), true);
        List<CuratorFramework> clients = new ArrayList<>();
        for (int s = 0; s < sessions; ++s) {
            CuratorFramework c = CuratorFrameworkFactory.newClient(servers, 30000, 15000, new RetryNTimes(20, 200));
            c.start();
            clients.add(c);
        }
        for (CuratorFramework c : clients)
            if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
                log.println("end 0 0 a session did not connect within 30 s");
                Runtime.getRuntime().halt(1);
            }
        clients.get(0).createContainers(path);
        final long prewarmNs = Long.parseLong(args[11]) * 1_000_000L;
        if (prewarmNs > 0) {
            final String warmPath = path + "-warmup";
            final long until = System.nanoTime() + prewarmNs;
            List<Thread> warmers = new ArrayList<>();
            for (int i = 0; i < Math.min(64, contenders); ++i) {
                final InterProcessMutex m = new InterProcessMutex(clients.get(i % sessions), warmPath);
                Thread t = new Thread(() -> {
                    try {
                        while (System.nanoTime() < until)
                            if (m.acquire(10, TimeUnit.SECONDS)) m.release();
                    } catch (Exception e) {
                    }
                });
                t.setDaemon(true);
                t.start();
                warmers.add(t);
            }
            for (Thread t : warmers) t.join(prewarmNs / 1_000_000 + 30_000);
            try {
                clients.get(0).delete().forPath(warmPath);
            } catch (Exception e) {
            }
        }

        ConcurrentLinkedQueue<String> records = new ConcurrentLinkedQueue<>();
        AtomicInteger recorded = new AtomicInteger();
        AtomicReference<String> failure = new AtomicReference<>();
        CountDownLatch gate = new CountDownLatch(1);
        long[] window = new long[2];  // start, stop (set before the gate opens)
        List<Thread> threads = new ArrayList<>();
        String why = "ok";
        for (int i = 0; i < contenders; ++i) {
            final int id = i;
            final Driver driver = new Driver();
            final InterProcessMutex mutex = new InterProcessMutex(clients.get(i % sessions), path, driver);
            Thread t = new Thread(() -> {
                try {
                    gate.await();
                    long bound = window[0] + boundNs;
                    do {
                        long tReq = System.nanoTime();
                        long left = bound - tReq;
                        if (left <= 0 || !mutex.acquire(left, TimeUnit.NANOSECONDS)) {
                            failure.compareAndSet(null, "contender " + id + ": acquire timed out");
                            return;
                        }
                        long tAcq = System.nanoTime();
                        String node = driver.lastPath;
                        long tRs = System.nanoTime();
                        mutex.release();
                        long tRel = System.nanoTime();
                        if (!loop || tReq >= window[0] + warmNs) {
                            records.add("acq " + id + " " + node.substring(node.lastIndexOf('/') + 1) + " " + tReq + " " + tAcq
                                        + " " + tRs + " " + tRel);
                            recorded.incrementAndGet();
                        }
                    } while (loop && System.nanoTime() < window[1]);
                } catch (Throwable e) {
                    failure.compareAndSet(null, "contender " + id + ": " + e);
                }
            });
            t.setDaemon(true);
            try {
                t.start();
            } catch (Throwable e) {  // OutOfMemoryError: unable to create native thread, ...
                why = "could not start contender thread " + (i + 1) + " of " + contenders + ": " + e;
                break;
            }
            threads.add(t);
        }
        log.println("ready " + threads.size());
        for (long waited = 0; !Files.exists(Paths.get(go)); waited += 1) {
            if (waited > 600_000) Runtime.getRuntime().halt(1);  // no bench: 10 min
            Thread.sleep(1);
        }
        window[0] = System.nanoTime();
        window[1] = window[0] + warmNs + runNs;
        gate.countDown();
        long deadline = window[0] + boundNs;
        boolean timedOut = false;
        for (Thread t : threads) {
            long left = deadline - System.nanoTime();
            if (left > 0) t.join(Math.max(1, left / 1_000_000));
            if (t.isAlive()) {
                timedOut = true;
                break;
            }
        }
        for (String r : records) log.println(r);
        if (timedOut) why = "bound of " + boundNs / 1_000_000_000 + " s reached";
        else if (failure.get() != null && why.equals("ok")) why = failure.get();
        log.println("end " + recorded.get() + " " + threads.size() + " " + why);
        for (long waited = 0; !Files.exists(Paths.get(quit)) && waited < 60_000; waited += 5) Thread.sleep(5);
        Thread stopper = new Thread(() -> {  // closing may hang on a stuck server: 15 s at most
            try {
                Thread.sleep(15_000);
            } catch (InterruptedException e) {
            }
            Runtime.getRuntime().halt(2);
        });
        stopper.setDaemon(true);
        stopper.start();
        for (CuratorFramework c : clients) c.close();  // closes the sessions: their nodes go now
        Runtime.getRuntime().halt(0);
    }
}
