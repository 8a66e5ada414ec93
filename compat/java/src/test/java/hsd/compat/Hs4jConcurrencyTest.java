package hsd.compat;

import static com.google.code.hs4j.FindOperator.EQ;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.code.hs4j.HSClient;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * Many client threads at once, sharing pooled hs4j clients and using clients
 * of their own, on both ports. Every answer is checked against what that
 * thread wrote or what the table holds.
 */
class Hs4jConcurrencyTest {
    private static final int THREADS = 16;
    private static final int ROWS_PER_THREAD = 40;
    private static final Map<String, String> EMP = Map.ofEntries(
            Map.entry("1", "SMITH"), Map.entry("2", "ALLEN"), Map.entry("3", "WARD"),
            Map.entry("4", "JONES"), Map.entry("5", "MARTIN"), Map.entry("6", "BLAKE"),
            Map.entry("7", "CLARK"), Map.entry("8", "SCOTT"), Map.entry("9", "KING"),
            Map.entry("10", "TURNER"), Map.entry("11", "ADAMS"), Map.entry("12", "JAMES"),
            Map.entry("13", "FORD"), Map.entry("14", "MILLER"));

    private static void runAll(List<Callable<Void>> tasks) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(tasks.size());
        try {
            List<Future<Void>> futures = new ArrayList<>();
            for (Callable<Void> t : tasks) {
                futures.add(pool.submit(t));
            }
            for (Future<Void> f : futures) {
                f.get(120, TimeUnit.SECONDS); // rethrows a thread's assertion failure
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void concurrentPointLookups() throws Exception {
        HSClient shared = Hsd.client(Hsd.port(), 4);
        List<HSClient> own = new ArrayList<>();
        try {
            assertTrue(shared.openIndex(1, Hsd.db(), "emp", "PRIMARY", new String[] {"id", "ename"}));
            List<Callable<Void>> tasks = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                final int seed = t;
                final HSClient c;
                if (t % 2 == 0) {
                    c = shared;
                } else {
                    c = Hsd.client(Hsd.port(), 1);
                    own.add(c);
                    assertTrue(c.openIndex(1, Hsd.db(), "emp", "PRIMARY", new String[] {"id", "ename"}));
                }
                tasks.add(() -> {
                    for (int i = 0; i < 150; i++) {
                        int id = 1 + (seed * 7 + i * 5) % 16; // 15 and 16 do not exist
                        List<String> rows = Hsd.rows(c.find(1, new String[] {String.valueOf(id)}), 2);
                        String want = EMP.get(String.valueOf(id));
                        assertEquals(want == null ? List.of() : List.of(id + "|" + want), rows,
                                "thread " + seed + " id " + id);
                    }
                    return null;
                });
            }
            runAll(tasks);
        } finally {
            shared.shutdown();
            for (HSClient c : own) {
                c.shutdown();
            }
        }
    }

    @Test
    void concurrentWritersAndReaders() throws Exception {
        HSClient sharedWr = Hsd.client(Hsd.portWr(), 4);
        HSClient sharedRd = Hsd.client(Hsd.port(), 4);
        List<HSClient> own = new ArrayList<>();
        String[] cols = {"id", "worker", "val"};
        try {
            assertTrue(sharedWr.openIndex(1, Hsd.db(), "conc", "PRIMARY", cols));
            assertTrue(sharedWr.openIndex(2, Hsd.db(), "conc", "conc_worker", cols));
            assertTrue(sharedRd.openIndex(1, Hsd.db(), "conc", "PRIMARY", cols));
            List<Callable<Void>> tasks = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                final int worker = t + 1;
                final HSClient wr;
                if (t % 2 == 0) {
                    wr = sharedWr;
                } else {
                    wr = Hsd.client(Hsd.portWr(), 1);
                    own.add(wr);
                    assertTrue(wr.openIndex(1, Hsd.db(), "conc", "PRIMARY", cols));
                    assertTrue(wr.openIndex(2, Hsd.db(), "conc", "conc_worker", cols));
                }
                tasks.add(() -> {
                    for (int i = 0; i < ROWS_PER_THREAD; i++) {
                        String id = String.valueOf(worker * 100_000 + i);
                        String w = String.valueOf(worker);
                        assertTrue(wr.insert(1, new String[] {id, w, "v" + i}));
                        assertEquals(List.of(id + "|" + w + "|v" + i), Hsd.rows(wr.find(1, new String[] {id}), 3));
                        assertEquals(1, wr.update(1, new String[] {id}, new String[] {id, w, "u" + i}, EQ));
                        // A write is answered only once committed: the read port sees it.
                        assertEquals(List.of(id + "|" + w + "|u" + i),
                                Hsd.rows(sharedRd.find(1, new String[] {id}), 3));
                    }
                    List<String> mine = Hsd.rows(wr.find(2, new String[] {String.valueOf(worker)}, EQ, 1000, 0), 3);
                    assertEquals(ROWS_PER_THREAD, mine.size(), "worker " + worker);
                    for (int i = 0; i < ROWS_PER_THREAD; i++) {
                        assertEquals((worker * 100_000 + i) + "|" + worker + "|u" + i, mine.get(i));
                    }
                    // Delete every other row, one by one.
                    for (int i = 0; i < ROWS_PER_THREAD; i += 2) {
                        assertEquals(1, wr.delete(1, new String[] {String.valueOf(worker * 100_000 + i)}));
                    }
                    mine = Hsd.rows(wr.find(2, new String[] {String.valueOf(worker)}, EQ, 1000, 0), 3);
                    assertEquals(ROWS_PER_THREAD / 2, mine.size(), "worker " + worker);
                    return null;
                });
            }
            runAll(tasks);
        } finally {
            sharedWr.shutdown();
            sharedRd.shutdown();
            for (HSClient c : own) {
                c.shutdown();
            }
        }
    }
}
