// A contender on a lock path through Apache Curator 5.4, for zklock's interoperability tests.
//
//   java CuratorWorker SERVERS PATH MODE ROUNDS HOLD_MS LOG
//   MODE: mutex (InterProcessMutex), read, write (InterProcessReadWriteLock)
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
import java.io.FileWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
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
        String servers = args[0], path = args[1], mode = args[2];
        int rounds = Integer.parseInt(args[3]);
        long holdMs = Long.parseLong(args[4]);
        String counter = path + "-counter";
        try (PrintWriter log = new PrintWriter(new FileWriter(args[5], true), true);
             CuratorFramework client = CuratorFrameworkFactory.newClient(servers, 10000, 10000, new RetryNTimes(20, 200))) {
            client.start();
            if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) throw new RuntimeException("no connection");
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
    }

    // A read/write lock's node, found by the data it was created with.
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
