// A contender on a lock path through Apache Curator 5.4, for zklock's interoperability tests.
//
//   java CuratorWorker SERVERS PATH MODE ROUNDS HOLD_MS LOG [SESSION_MS]
//   MODE: mutex (InterProcessMutex), read, write (InterProcessReadWriteLock),
//         latch (LeaderLatch), selector (LeaderSelector),
//         hold-revocable (InterProcessMutex made revocable), revoke (Revoker)
//   SESSION_MS: the session timeout asked for (default 10000)
//
// Revocation (ROUNDS is ignored by both):
//  * hold-revocable: makeRevocable(listener) on an InterProcessMutex with our Driver, acquire,
//    log "grant <ns> <node> x", then wait up to HOLD_MS for the listener; when it is called (on
//    the thread of the watch that read Curator's revocation bytes, "__REVOKE__", in the node:
//    LockInternals.checkRevocableWatcher compares the data with REVOKE_MESSAGE), log
//    "revoked <ns> <node>", then "release <ns> <node>" and release (from the acquiring thread:
//    InterProcessMutex releases only there). Exits 3 if the listener was not called in time.
//    Curator sets the node's revocation watch before it holds, so a request written after the
//    "grant" line is heard.
//  * revoke: PATH is a holder's node; Revoker.attemptRevoke(client, PATH) (a setData of
//    REVOKE_MESSAGE; a missing node is ignored), then log "revoke <ns> <node>".
//
// Each round: acquire, log "grant <CLOCK_MONOTONIC ns> <node> <kind>", read the counter node
// PATH-counter, hold HOLD_MS, write it back + 1 (writers only), log "release <ns> <node>",
// release. The counter makes overlapping holders visible as lost updates.
//
// Interop configuration on this side: InterProcessMutex takes a LockInternalsDriver, and ours
// sorts Kazoo's "__lock__<seq>" nodes by their sequence too (Curator's own driver sorts only names
// with "lock-", so it would place Kazoo's nodes after all others). zklock's nodes need nothing:
// they carry Curator's markers. InterProcessReadWriteLock takes no driver in Curator 5.4, so it
// sees zklock's readers and writers but never Kazoo's.
//
// The election modes campaign once per round with a new recipe object whose id (its node's data)
// is "curator-<pid>-<round>". Once leading, they also log "queue <ns> <node> <child>..." (the
// election path's children, listed while leading) before reading the counter, so that the test
// can check that the leader's node was the oldest candidate present.
//
//  * latch: new LeaderLatch(client, PATH, id), start(), await(60 s), lead, close(). Its node is
//    "_c_<uuid>-latch-<seq>" (LeaderLatch.reset(): create().withProtection() of PATH/"latch-",
//    EPHEMERAL_SEQUENTIAL, the id's bytes as data). checkLeadership() sorts every child of PATH,
//    unfiltered, with LockInternals.getSortedChildren("latch-", ...): the key is
//    StandardLockInternalsDriver.standardFixForSorting, the text after the last "latch-", or the
//    whole name if there is none. The first in that order leads; every other candidate watches
//    (getData) the one just before it and lists again on its NodeDeleted only. So zklock's
//    default names ("x-<id>-latch-<seq>") sort by their sequence; a name without "latch-" sorts by
//    its whole name: zklock's other names ("x-...") and LeaderSelector's ("_c_...") after every
//    digit string, behind all latch candidates whatever their sequence, and a Kazoo node by its
//    random hex uuid. close() deletes the node in the background (setNode(null):
//    delete().guaranteed().inBackground()).
//  * selector: new LeaderSelector(client, PATH, listener) with setId(id), start(); the
//    listener's takeLeadership leads and returns; the main thread waits for that and for the
//    node to be gone (the mutex is released after takeLeadership returns), then close().
//    LeaderSelector is an InterProcessMutex underneath (its own subclass, with Curator's
//    StandardLockInternalsDriver, not our Driver): node "_c_<uuid>-lock-<seq>", data the id;
//    children sorted unfiltered by the text after the last "lock-" (or the whole name), the first
//    holds (StandardLockInternalsDriver.getsTheLock: index < 1), the others watch the one before.
//    zklock's names for it ("x-<id>-lock-<seq>") sort by sequence; names without "lock-" sort by
//    the whole name, so zklock's "x-<id>-latch-<seq>" and "x-<id>-__lock__<seq>" and LeaderLatch's
//    "_c_..." go behind all of its candidates, and a Kazoo node sorts by its random hex uuid. The
//    node's name is not exposed, so it is found by its data (the id).
import java.io.FileWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.retry.RetryNTimes;

public class CuratorWorker {
    static final class Driver extends StandardLockInternalsDriver {
        volatile String lastPath = "";

        @Override
        public String createsTheLock(CuratorFramework client, String path, byte[] lockNodeBytes) throws Exception {
            String p = super.createsTheLock(client, path, lockNodeBytes);
            lastPath = p;
            return p;
        }

        @Override
        public String fixForSorting(String str, String lockName) {
            int k = str.lastIndexOf("__lock__");
            if (k >= 0 && str.lastIndexOf(lockName) < 0) return str.substring(k + "__lock__".length());
            return super.fixForSorting(str, lockName);
        }
    }

    public static void main(String[] args) throws Exception {
        System.exit(run(args));
    }

    // The exit status: 0, or 3 when hold-revocable was not asked in time.
    static int run(String[] args) throws Exception {
        String servers = args[0], path = args[1], mode = args[2];
        int rounds = Integer.parseInt(args[3]);
        long holdMs = Long.parseLong(args[4]);
        String counter = path + "-counter";
        int sessionMs = args.length > 6 ? Integer.parseInt(args[6]) : 10000;
        try (PrintWriter log = new PrintWriter(new FileWriter(args[5], true), true);
             CuratorFramework client = CuratorFrameworkFactory.newClient(servers, sessionMs, Math.min(sessionMs, 10000), new RetryNTimes(20, 200))) {
            client.start();
            if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) throw new RuntimeException("no connection");
            if (mode.equals("revoke")) {
                Revoker.attemptRevoke(client, path);
                log.println("revoke " + System.nanoTime() + " " + path.substring(path.lastIndexOf('/') + 1));
                return 0;
            }
            if (mode.equals("hold-revocable")) return holdRevocable(client, path, holdMs, log);
            if (mode.equals("latch") || mode.equals("selector")) {
                for (int i = 0; i < rounds; ++i) {
                    String id = "curator-" + ProcessHandle.current().pid() + "-" + i;
                    if (mode.equals("latch")) latchRound(client, path, id, holdMs, log);
                    else selectorRound(client, path, id, holdMs, log);
                }
                return 0;
            }
            Driver driver = new Driver();
            for (int i = 0; i < rounds; ++i) {
                InterProcessLock lock;
                boolean writer = !mode.equals("read");
                if (mode.equals("mutex")) {
                    lock = new InterProcessMutex(client, path, driver);
                } else {
                    byte[] tag = ("curator-" + ProcessHandle.current().pid() + "-" + i).getBytes(StandardCharsets.UTF_8);
                    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path, tag);
                    lock = writer ? rw.writeLock() : rw.readLock();
                }
                if (!lock.acquire(60, TimeUnit.SECONDS)) throw new RuntimeException("acquire timed out");
                String node = mode.equals("mutex") ? driver.lastPath : findOwn(client, path, ("curator-" + ProcessHandle.current().pid() + "-" + i));
                log.println("grant " + System.nanoTime() + " " + node.substring(node.lastIndexOf('/') + 1) + " " + (writer ? "x" : "r"));
                byte[] data = client.getData().forPath(counter);
                Thread.sleep(holdMs);
                if (writer) {
                    long v = Long.parseLong(new String(data, StandardCharsets.UTF_8).trim());
                    client.setData().forPath(counter, Long.toString(v + 1).getBytes(StandardCharsets.UTF_8));
                }
                log.println("release " + System.nanoTime() + " " + node.substring(node.lastIndexOf('/') + 1));
                lock.release();
            }
        }
        return 0;
    }

    // hold-revocable: holds until a revocation request comes (0), or HOLD_MS passes (3).
    static int holdRevocable(CuratorFramework client, String path, long holdMs, PrintWriter log) throws Exception {
        Driver driver = new Driver();
        InterProcessMutex lock = new InterProcessMutex(client, path, driver);
        CountDownLatch asked = new CountDownLatch(1);
        lock.makeRevocable(forLock -> asked.countDown());
        if (!lock.acquire(60, TimeUnit.SECONDS)) throw new RuntimeException("acquire timed out");
        String name = driver.lastPath.substring(driver.lastPath.lastIndexOf('/') + 1);
        log.println("grant " + System.nanoTime() + " " + name + " x");
        boolean heard = asked.await(holdMs, TimeUnit.MILLISECONDS);
        if (heard) log.println("revoked " + System.nanoTime() + " " + name);
        log.println("release " + System.nanoTime() + " " + name);
        lock.release();
        return heard ? 0 : 3;
    }

    // One LeaderLatch campaign: leads once, then closes (which deletes the node).
    static void latchRound(CuratorFramework client, String path, String id, long holdMs, PrintWriter log) throws Exception {
        try (LeaderLatch latch = new LeaderLatch(client, path, id)) {
            latch.start();
            if (!latch.await(60, TimeUnit.SECONDS)) throw new RuntimeException("leadership timed out");
            lead(client, path, latch.getOurPath(), holdMs, log);
        }
    }

    // One LeaderSelector campaign: takeLeadership leads once and returns, which releases the mutex.
    static void selectorRound(CuratorFramework client, String path, String id, long holdMs, PrintWriter log) throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        AtomicReference<Exception> failure = new AtomicReference<>();
        AtomicReference<String> node = new AtomicReference<>();
        LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework c) {
                try {
                    node.set(findOwn(c, path, id));
                    lead(c, path, node.get(), holdMs, log);
                } catch (Exception e) {
                    failure.set(e);  // LeaderSelector would swallow it
                } finally {
                    done.countDown();
                }
            }
        });
        selector.setId(id);
        selector.start();
        try {
            if (!done.await(60, TimeUnit.SECONDS)) throw new RuntimeException("leadership timed out");
            if (failure.get() != null) throw failure.get();
            // The mutex is released after takeLeadership returns, on the selector's thread; close()
            // interrupts that thread, so wait for the node to go first.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (client.checkExists().forPath(node.get()) != null) {
                if (System.nanoTime() > deadline) throw new RuntimeException("the selector kept its node");
                Thread.sleep(5);
            }
        } finally {
            selector.close();
        }
    }

    // Leading: grant, the candidates as listed now, the counter's read-pause-write, release.
    static void lead(CuratorFramework client, String path, String node, long holdMs, PrintWriter log) throws Exception {
        String name = node.substring(node.lastIndexOf('/') + 1);
        log.println("grant " + System.nanoTime() + " " + name + " x");
        List<String> children = client.getChildren().forPath(path);
        log.println("queue " + System.nanoTime() + " " + name + " " + String.join(" ", children));
        byte[] data = client.getData().forPath(path + "-counter");
        Thread.sleep(holdMs);
        long v = Long.parseLong(new String(data, StandardCharsets.UTF_8).trim());
        client.setData().forPath(path + "-counter", Long.toString(v + 1).getBytes(StandardCharsets.UTF_8));
        log.println("release " + System.nanoTime() + " " + name);
    }

    // A node found by the data it was created with (a read/write lock's, a LeaderSelector's).
    static String findOwn(CuratorFramework client, String path, String tag) throws Exception {
        for (String child : client.getChildren().forPath(path)) {
            try {
                if (tag.equals(new String(client.getData().forPath(path + "/" + child), StandardCharsets.UTF_8))) return path + "/" + child;
            } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
                // gone meanwhile: not ours
            }
        }
        return path + "/?";
    }
}
