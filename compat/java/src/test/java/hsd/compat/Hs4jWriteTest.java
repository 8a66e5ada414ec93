package hsd.compat;

import static com.google.code.hs4j.FindOperator.EQ;
import static com.google.code.hs4j.FindOperator.GE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.code.hs4j.HSClient;
import com.google.code.hs4j.ModifyStatement;
import com.google.code.hs4j.exception.HandlerSocketException;

import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Insert, update, delete through hs4j on hsd's write port. Each test owns the
 * kv keys with its own prefix.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class Hs4jWriteTest {
    private static final int KV = 1;
    private static final int KV_V = 2;
    private static final int SEQ = 3;
    private static final int CONC = 4;
    private HSClient c;
    private String db;

    @BeforeAll
    void connect() throws Exception {
        c = Hsd.writer();
        db = Hsd.db();
        assertTrue(c.openIndex(KV, db, "kv", "PRIMARY", new String[] {"k", "v", "n"}));
        assertTrue(c.openIndex(KV_V, db, "kv", "PRIMARY", new String[] {"v"}));
        assertTrue(c.openIndex(SEQ, db, "seq", "PRIMARY", new String[] {"name"}));
        assertTrue(c.openIndex(CONC, db, "conc", "conc_worker", new String[] {"id", "worker", "val"}));
    }

    @AfterAll
    void close() throws Exception {
        c.shutdown();
    }

    private List<String> kv(String key) throws Exception {
        return Hsd.rows(c.find(KV, new String[] {key}), 3);
    }

    private List<String> kvFrom(String key, int limit) throws Exception {
        return Hsd.rows(c.find(KV, new String[] {key}, GE, limit, 0), 3);
    }

    @Test
    void insertThenFind() throws Exception {
        assertTrue(c.insert(KV, new String[] {"ins1", "hello", "1"}));
        assertEquals(List.of("ins1|hello|1"), kv("ins1"));
    }

    @Test
    void insertDuplicateKeyIs121() throws Exception {
        assertTrue(c.insert(KV, new String[] {"dup1", "a", "1"}));
        HandlerSocketException e = assertThrows(HandlerSocketException.class,
                () -> c.insert(KV, new String[] {"dup1", "b", "2"}));
        assertTrue(e.getMessage().endsWith("121"), e.getMessage());
        assertEquals(List.of("dup1|a|1"), kv("dup1"));
    }

    @Test
    void insertNullEmptyAndFewerValuesThanColumns() throws Exception {
        assertTrue(c.insert(KV, new String[] {"nul1", null, "5"}));
        assertTrue(c.insert(KV, new String[] {"nul2", "", "6"}));
        // Columns not given whose default is NULL get their type's zero
        // value, as the original stores them ('' and 0 here).
        assertTrue(c.insert(KV, new String[] {"nul3"}));
        // hs4j 0.1 hands a NULL value over as "\0" (docs/compatibility.md).
        assertEquals(List.of("nul1|\0|5", "nul2||6", "nul3||0"), kvFrom("nul1", 3));
    }

    @Test
    void bytesThatNeedEscapingRoundTrip() throws Exception {
        String v = "tab\there|newline\nhere|cr\r|ctl\u0001\u0002\u000f|nul\u0000|del\u007f|utf8 \u00fc\u00e9 \u65e5\u672c";
        String k = "esc\tkey\n1";
        assertTrue(c.insert(KV, new String[] {k, v, "7"}));
        ResultSet rs = c.find(KV, new String[] {k});
        assertTrue(rs.next());
        assertEquals(k, rs.getString("k"));
        assertEquals(v, rs.getString("v"));
        assertEquals(7, rs.getInt("n"));
        assertFalse(rs.next());
    }

    @Test
    void autoIncrementInsert() throws Exception {
        // hsd answers "0 1 <id>"; hs4j only looks at the status.
        assertTrue(c.insert(SEQ, new String[] {"first"}));
        assertTrue(c.insert(SEQ, new String[] {"second"}));
        assertEquals(List.of("first", "second"), Hsd.firstColumn(c.find(SEQ, new String[] {"0"}, GE, 10, 0)));
    }

    @Test
    void updateByPrimaryKey() throws Exception {
        assertTrue(c.insert(KV, new String[] {"upd1", "old", "1"}));
        assertEquals(1, c.update(KV, new String[] {"upd1"}, new String[] {"upd1", "new", "2"}, EQ));
        assertEquals(List.of("upd1|new|2"), kv("upd1"));
        // Same values again still counts as modified.
        assertEquals(1, c.update(KV, new String[] {"upd1"}, new String[] {"upd1", "new", "2"}, EQ));
        // Through an index opened with fewer columns, and to NULL.
        assertEquals(1, c.update(KV_V, new String[] {"upd1"}, new String[] {null}, EQ));
        assertEquals(List.of("upd1|\0|2"), kv("upd1"));
        // No such row.
        assertEquals(0, c.update(KV, new String[] {"upd-none"}, new String[] {"x", "y", "3"}, EQ));
    }

    @Test
    void updateRangeWithLimitAndOffset() throws Exception {
        for (int i = 0; i < 5; i++) {
            assertTrue(c.insert(KV, new String[] {"rng" + i, "v" + i, String.valueOf(i)}));
        }
        assertEquals(3, c.update(KV_V, new String[] {"rng1"}, new String[] {"changed"}, GE, 3, 0));
        assertEquals(2, c.update(KV_V, new String[] {"rng0"}, new String[] {"again"}, GE, 2, 3));
        assertEquals(List.of("rng0|v0|0", "rng1|changed|1", "rng2|changed|2", "rng3|again|3", "rng4|again|4"),
                kvFrom("rng0", 5));
    }

    @Test
    void modifyStatement() throws Exception {
        ModifyStatement st = c.createStatement(KV);
        st.setString(1, "stmt1");
        st.setString(2, "prepared");
        st.setInt(3, 42);
        assertTrue(st.insert());
        assertEquals(List.of("stmt1|prepared|42"), kv("stmt1"));
        st.setString(2, "updated");
        st.setLong(3, 43L);
        assertEquals(1, st.update(new String[] {"stmt1"}, EQ));
        assertEquals(List.of("stmt1|updated|43"), kv("stmt1"));
    }

    @Test
    void deleteOneAndRange() throws Exception {
        assertTrue(c.insert(KV, new String[] {"del1", "x", "1"}));
        assertEquals(1, c.delete(KV, new String[] {"del1"}));
        assertEquals(List.of(), kv("del1"));
        assertEquals(0, c.delete(KV, new String[] {"del1"}));
        for (int i = 0; i < 5; i++) {
            assertTrue(c.insert(KV, new String[] {"delr" + i, "v", String.valueOf(i)}));
        }
        assertEquals(2, c.delete(KV, new String[] {"delr0"}, GE, 2, 1));
        assertEquals(List.of("delr0", "delr3", "delr4"),
                Hsd.firstColumn(c.find(KV, new String[] {"delr0"}, GE, 3, 0)));
    }

    @Test
    void writesThroughASecondaryIndex() throws Exception {
        for (int i = 0; i < 4; i++) {
            assertTrue(c.insert(CONC, new String[] {String.valueOf(990_000 + i), "990", "w" + i}));
        }
        assertEquals(List.of("990000|990|w0", "990001|990|w1", "990002|990|w2", "990003|990|w3"),
                Hsd.rows(c.find(CONC, new String[] {"990"}, EQ, 10, 0), 3));
        assertEquals(2, c.update(CONC, new String[] {"990"},
                new String[] {"990000", "990", "u"}, EQ, 1, 0) + c.update(CONC, new String[] {"990", "990001"},
                new String[] {"990001", "990", "u"}, EQ, 1, 0));
        assertEquals(2, c.delete(CONC, new String[] {"990"}, EQ, 2, 2));
        assertEquals(List.of("990000|990|u", "990001|990|u"),
                Hsd.rows(c.find(CONC, new String[] {"990"}, EQ, 10, 0), 3));
    }

    @Test
    void modifiedCountOfTenOrMoreRows() throws Exception {
        for (int i = 10; i < 22; i++) {
            assertTrue(c.insert(KV, new String[] {"many" + i, "v", "0"}));
        }
        int n = c.update(KV_V, new String[] {"many10"}, new String[] {"all"}, GE, 12, 0);
        // hsd answers "0 1 12"; hs4j 0.1 reads only the first digit of the count
        // (ModifyCommand.decodeBody: data[0] - '0'), a client bug documented in
        // docs/compatibility.md. The rows themselves all changed:
        assertEquals(1, n);
        List<String> vs = new ArrayList<>();
        for (String row : Hsd.rows(c.find(KV, new String[] {"many10"}, GE, 12, 0), 3)) {
            vs.add(row.split("\\|")[1]);
        }
        assertEquals(12, vs.size());
        assertTrue(vs.stream().allMatch("all"::equals), vs.toString());
    }
}
